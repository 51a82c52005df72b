#!/usr/bin/env bash
# The README's first command: install what is needed, build pathprof, compile
# the bundled example to wasm32-wasi, profile it and show its hot paths.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked -q
out=target/demo
mkdir -p "$out"
# shellcheck source=scripts/wasi-env.sh
source scripts/wasi-env.sh
"$WASI_CC" $WASI_CFLAGS -O2 -g examples/demo.c -o "$out/demo.wasm"
./target/release/pathprof stats "$out/demo.wasm" | head -n 20
./target/release/pathprof run "$out/demo.wasm" -o "$out/demo.profile.json" -- "Hello, path profiling world: 1 2 3!" 5
./target/release/pathprof report "$out/demo.profile.json" --top 10
