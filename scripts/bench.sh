#!/usr/bin/env bash
# The benchmark harness of issue 4, in one command (see BENCHMARKS.md):
# installs the toolchain if missing, builds pathprof and the harness, fetches
# and builds the suite (bench/build-suite.sh), measures it
# (`pathprof-bench run`) and renders the tables of BENCHMARKS.md and
# docs/bench-overhead.svg (`pathprof-bench render`).
#
#   bash scripts/bench.sh                          # every mode, 7 runs
#   bash scripts/bench.sh --modes none,edge,path   # a subset of the modes
#   bash scripts/bench.sh --runs 9 --programs zlib,lua
#
# Arguments are passed to `pathprof-bench run`. Results (raw JSON, profiles)
# go to $CARGO_TARGET_DIR/bench-results (default target/bench-results).
# BENCH_SKIP_RENDER=1 leaves BENCHMARKS.md and the chart untouched.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

bash scripts/setup.sh
cargo build --release --quiet -p pathprof -p pathprof-bench
bash bench/build-suite.sh "$CARGO_TARGET_DIR/bench-wasm"

results="$CARGO_TARGET_DIR/bench-results"
"$CARGO_TARGET_DIR/release/pathprof-bench" run \
    --pathprof "$CARGO_TARGET_DIR/release/pathprof" \
    --wasm-dir "$CARGO_TARGET_DIR/bench-wasm" \
    --results "$results" "$@"

if [[ "${BENCH_SKIP_RENDER:-0}" != 1 ]]; then
    "$CARGO_TARGET_DIR/release/pathprof-bench" render "$results/results.json" \
        --markdown BENCHMARKS.md --svg docs/bench-overhead.svg
fi
