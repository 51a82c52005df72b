// A host for crates/cli/tests/legacy_exceptions.rs: runs one call of a
// module under node's V8, which has legacy exception handling (the embedded
// engine does not), and prints one JSON line: what the call returned (or
// the exception it ended with) and the trace events it made through
// `__pathprof.trace(func, edge)` (a per-edge traced module). With a third
// argument, writes the bytes of the exported counter memory there
// (`pathprof collect` reads them).
//
//   node v8-host.js MODULE EXPORT COUNTERS_OUT|- [I32 ARG...]
'use strict';
const fs = require('fs');

const [modulePath, exportName, countersOut, ...args] = process.argv.slice(2);
const trace = [];
const imports = {
  __pathprof: { trace: (func, edge) => { trace.push([func >>> 0, edge >>> 0]); } },
};

WebAssembly.instantiate(fs.readFileSync(modulePath), imports).then(({ instance }) => {
  const out = { trace };
  try {
    out.returned = instance.exports[exportName](...args.map(Number));
  } catch (e) {
    out.threw = e instanceof WebAssembly.Exception ? 'wasm exception' : String(e);
  }
  const counters = instance.exports.__pathprof_counters;
  if (countersOut !== '-' && counters) {
    fs.writeFileSync(countersOut, new Uint8Array(counters.buffer));
  }
  console.log(JSON.stringify(out));
}, (e) => {
  console.error(`v8-host.js: ${modulePath}: ${e.message}`);
  process.exit(2);
});
