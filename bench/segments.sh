#!/usr/bin/env bash
# Interprocedural residual profiling on the suite (issue 31, thesis Table 3.2):
# each program's depth-K path segments recorded on its train and ref inputs
# (`pathprof run --segments K`), and the ref segments no train run took.
#
#   bash bench/segments.sh [K] [PROGRAM...]     # default K = 1, every program
#
# Needs the release binary and the suite (see BENCHMARKS.md, Reproduce);
# writes profiles, times and residual reports to target/segments-results.
set -euo pipefail
cd "$(dirname "$0")/.."
k="${1:-1}"
shift || true
programs=("$@")
((${#programs[@]})) || programs=(zlib bzip2 zstd lz4 sqlite lua)
bin="${CARGO_TARGET_DIR:-target}/release/pathprof"
suite="${CARGO_TARGET_DIR:-target}/bench-wasm"
out="${CARGO_TARGET_DIR:-target}/segments-results"
[[ -x $bin ]] || { echo "segments.sh: build first: cargo build --release -p pathprof --bin pathprof" >&2; exit 1; }
mkdir -p "$out"
for p in "${programs[@]}"; do
    [[ -f $suite/$p.wasm ]] || { echo "segments.sh: $suite/$p.wasm missing: bash bench/build-suite.sh $suite" >&2; exit 1; }
    for input in train ref; do
        /usr/bin/time -f "$p $input wall %e s, peak RSS %M KB" -a -o "$out/times.txt" \
            "$bin" run --segments "$k" -o "$out/$p.$input.k$k.json" "$suite/$p.wasm" -- "$input" >/dev/null
    done
    "$bin" residual-report "$out/$p.ref.k$k.json" --tested "$out/$p.train.k$k.json" --top 10 >"$out/$p.residual.k$k.txt"
    head -1 "$out/$p.residual.k$k.txt"
done
