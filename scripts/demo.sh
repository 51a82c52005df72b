#!/usr/bin/env bash
# The README's first command: install what is needed, build pathprof, compile
# the bundled example to wasm32-wasi, profile it and show its hot paths.
#
# pathprof is built in the dev profile, whose dependencies (wasmtime) are
# optimised (Cargo.toml: opt-level 2), the profile scripts/test.sh builds
# the tests in: whichever of the two runs second reuses the other's build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The time is README's measurement (an idle 2-core machine): keep them in step.
echo "demo.sh: building pathprof (a first build compiles wasmtime: most of the" \
    "9 min 27 s the whole demo took from a bare machine on 2 idle cores)" >&2
cargo build --locked -p pathprof
pathprof=target/debug/pathprof
out=target/demo
mkdir -p "$out"
# shellcheck source=scripts/wasi-env.sh
source scripts/wasi-env.sh
echo "demo.sh: compiling examples/demo.c to wasm32-wasi" >&2
"$WASI_CC" $WASI_CFLAGS -O2 -g examples/demo.c -o "$out/demo.wasm"
"$pathprof" stats "$out/demo.wasm" | head -n 20
echo "demo.sh: profiling it (instrument, compile, run)" >&2
"$pathprof" run "$out/demo.wasm" -o "$out/demo.profile" -- "Hello, path profiling world: 1 2 3!" 5
"$pathprof" report "$out/demo.profile" --top 10
