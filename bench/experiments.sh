#!/usr/bin/env bash
# Tuning experiments of the lab notebook (docs/lab/): Ball-Larus overhead of
# `pathprof run --mode path` with different counter storage, on the suite's
# ref inputs. Run after scripts/bench.sh (it uses the modules it built):
#
#   bash bench/experiments.sh [RUNS]           # default 3 runs per variant
#
# Variants (`pathprof run` options, no rewriter change):
#   default              truncation (5.3) at the array limit: every function
#                        counts in an array of at most 65536 paths
#   hash                 --truncate-above 2^40: whole paths, hash tables for
#                        functions of more than 65536 paths
#   truncate-above=16384 truncation at 16384 paths (less counter memory)
#   truncate-above=262144 truncation at 2^18 paths (arrays up to 2 MiB)
# Prints, per program and variant, the median execute time over the median
# uninstrumented one, in the same interleaved fashion as the harness.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
pathprof="${PATHPROF:-$target/release/pathprof}"
wasm="$target/bench-wasm"
runs="${1:-3}"
programs="${BENCH_PROGRAMS:-bzip2 lz4 sqlite lua}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

VARIANTS=("none|--mode none" "default|--mode path" "hash|--mode path --truncate-above 1099511627776"
    "truncate-above=16384|--mode path --truncate-above 16384"
    "truncate-above=262144|--mode path --truncate-above 262144 --array-max 262144")

for p in $programs; do
    [[ -f "$wasm/$p.wasm" ]] || { echo "experiments.sh: $wasm/$p.wasm missing (run scripts/bench.sh)" >&2; exit 1; }
    for ((r = 0; r < runs; r++)); do
        for v in "${VARIANTS[@]}"; do
            name="${v%%|*}"
            # shellcheck disable=SC2086 # the variant's options are a list
            "$pathprof" run ${v#*|} --timings "$tmp/t.json" -o "$tmp/p.json" "$wasm/$p.wasm" -- ref >/dev/null
            python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["execute_s"])' "$tmp/t.json" >>"$tmp/$p.$name"
        done
    done
    python3 - "$tmp" "$p" "${VARIANTS[@]%%|*}" <<'PY'
import statistics, sys
tmp, prog, names = sys.argv[1], sys.argv[2], sys.argv[3:]
med = {n: statistics.median(float(x) for x in open(f"{tmp}/{prog}.{n}")) for n in names}
print(f"{prog:8} none {med['none']:.2f} s  " + "  ".join(
    f"{n} {100 * (med[n] / med['none'] - 1):+.1f} %" for n in names if n != "none"))
PY
done
