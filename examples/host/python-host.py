"""A host of your own for a module written by `pathprof instrument`.

    pip install wasmtime
    python3 python-host.py MODULE.wasm EXPORT [INT_ARGS...] COUNTERS.bin

It instantiates the instrumented module with the `wasmtime` package from PyPI
(any engine with multi-memory would do), calls one export with integer
arguments, prints the results, and saves the bytes of the exported memory
`__pathprof_counters` for `pathprof collect`. The module here imports nothing;
a WASI command would also need `wasmtime.WasiConfig` and a linker.
"""
import sys

import wasmtime


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    module_path, export, *args, counters_path = argv[1:]
    config = wasmtime.Config()
    config.wasm_multi_memory = True
    engine = wasmtime.Engine(config)
    store = wasmtime.Store(engine)
    module = wasmtime.Module.from_file(engine, module_path)
    instance = wasmtime.Instance(store, module, [])
    exports = instance.exports(store)
    result = exports[export](store, *(int(a) for a in args))
    if result is not None:
        print(result)
    memory = exports["__pathprof_counters"]
    with open(counters_path, "wb") as out:
        out.write(memory.read(store, 0, memory.data_len(store)))


if __name__ == "__main__":
    main(sys.argv)
