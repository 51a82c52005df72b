#!/usr/bin/env bash
# The memcmp loop of docs/lab/ ("What a hot loop costs") under each
# mode: CPU time of the running thread, RUNS runs each (default 5), the modes
# interleaved.
# Usage: bash bench/micro/run.sh [PATHPROF]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pathprof=${1:-$here/../../target/release/pathprof}
runs=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=scripts/wasi-env.sh
source "$here/../../scripts/wasi-env.sh"
# shellcheck disable=SC2086 # WASI_CFLAGS is a list of flags
"$WASI_CC" $WASI_CFLAGS -O2 "$here/memcmp_loop.c" -o "$tmp/memcmp_loop.wasm"
declare -A times
for _ in $(seq "$runs"); do
    for mode in none edge path; do
        "$pathprof" run --mode "$mode" --timings "$tmp/t.json" -o "$tmp/p.json" \
            "$tmp/memcmp_loop.wasm" >/dev/null
        t=$(sed -n 's/.*"execute_cpu_s": *\([0-9.]*\).*/\1/p' "$tmp/t.json")
        times[$mode]+=" $(printf '%.3f' "$t")"
    done
done
for mode in none edge path; do echo "memcmp loop, $mode:${times[$mode]} s"; done
