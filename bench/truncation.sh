#!/usr/bin/env bash
# Truncation guided by a prior profile (issue 27, point 17): each program's
# ref run in path mode truncated at N paths a function, without and with
# `--weights` from an edge profile of its train run, and the share of path
# executions that start or end at a cut (`report`'s truncation lines).
#
#   bash bench/truncation.sh [N] [PROGRAM...]     # default N = 65536, every program
#
# Needs the release binary and the suite (see BENCHMARKS.md, Reproduce);
# writes profiles and reports to target/truncation-results.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-65536}"
shift || true
programs=("$@")
((${#programs[@]})) || programs=(zlib bzip2 zstd lz4 sqlite lua)
bin="${CARGO_TARGET_DIR:-target}/release/pathprof"
suite="${CARGO_TARGET_DIR:-target}/bench-wasm"
out="${CARGO_TARGET_DIR:-target}/truncation-results"
[[ -x $bin ]] || { echo "truncation.sh: build first: cargo build --release -p pathprof --bin pathprof" >&2; exit 1; }
mkdir -p "$out"
cut_share() { # report -> "cut total" path executions
    awk '/^truncation: / {c = $2; t = $4} /path executions$/ && !t {t = $(NF-2)}
         END {printf "%d %d\n", c, t}' "$1"
}
printf '%-8s %12s %14s %14s\n' program executions "cut, unguided" "cut, guided"
for p in "${programs[@]}"; do
    [[ -f $suite/$p.wasm ]] || { echo "truncation.sh: $suite/$p.wasm missing: bash bench/build-suite.sh $suite" >&2; exit 1; }
    "$bin" run --mode edge -o "$out/$p.train.edge.json" "$suite/$p.wasm" -- train >/dev/null
    for how in unguided guided; do
        weights=()
        [[ $how == guided ]] && weights=(--weights "$out/$p.train.edge.json")
        "$bin" run --truncate-above "$n" "${weights[@]}" -o "$out/$p.ref.$how.json" "$suite/$p.wasm" -- ref >/dev/null
        "$bin" report "$out/$p.ref.$how.json" --top 0 >"$out/$p.ref.$how.txt"
    done
    read -r cu total < <(cut_share "$out/$p.ref.unguided.txt")
    read -r cg _ < <(cut_share "$out/$p.ref.guided.txt")
    awk -v p="$p" -v t="$total" -v a="$cu" -v b="$cg" \
        'BEGIN {printf "%-8s %12d %13.2f%% %13.2f%%\n", p, t, 100*a/(t?t:1), 100*b/(t?t:1)}'
done
