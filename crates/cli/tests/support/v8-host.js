// A host for crates/cli/tests/legacy_exceptions.rs: runs calls of modules
// under node's V8, which has legacy exception handling (the embedded engine
// only runs it translated), and prints JSON: what each call returned (or
// that it ended with a wasm exception, or how it failed otherwise) and the
// trace events it made through `__pathprof.trace(func, edge)` (a per-edge
// traced module). With a counters path other than `-`, writes the bytes of
// the exported counter memory there (`pathprof collect` reads them).
//
//   node v8-host.js MODULE EXPORT COUNTERS_OUT|- [I32 ARG...]   one call, one line
//   node v8-host.js --batch CALLS.json    [{module, export, arg}...], one line:
//                                          an array of {returned|threw}, no traces
'use strict';
const fs = require('fs');

// One call in a fresh instance.
async function run(modulePath, exportName, args, countersOut) {
  const trace = [];
  const imports = {
    __pathprof: { trace: (func, edge) => { trace.push([func >>> 0, edge >>> 0]); } },
  };
  const { instance } = await WebAssembly.instantiate(fs.readFileSync(modulePath), imports);
  const out = { trace };
  try {
    out.returned = instance.exports[exportName](...args.map(Number));
  } catch (e) {
    out.threw = e instanceof WebAssembly.Exception ? 'wasm exception' : String(e);
  }
  const counters = instance.exports.__pathprof_counters;
  if (countersOut && countersOut !== '-' && counters) {
    fs.writeFileSync(countersOut, new Uint8Array(counters.buffer));
  }
  return out;
}

async function main(argv) {
  if (argv[0] === '--batch') {
    const results = [];
    for (const c of JSON.parse(fs.readFileSync(argv[1], 'utf8'))) {
      const { returned, threw } = await run(c.module, c.export, [c.arg], null);
      results.push({ returned, threw });
    }
    console.log(JSON.stringify(results));
    return;
  }
  const [modulePath, exportName, countersOut, ...args] = argv;
  console.log(JSON.stringify(await run(modulePath, exportName, args, countersOut)));
}

main(process.argv.slice(2)).catch((e) => {
  console.error(`v8-host.js: ${e.message}`);
  process.exit(2);
});
