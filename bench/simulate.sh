#!/usr/bin/env bash
# The hardware path profiler of Vaswani's thesis (ch. 5), simulated on the
# benchmark suite's train inputs (issue 30, "Measured"; BENCHMARKS.md,
# "Hardware path profiler (simulated)").
#
#   bash bench/simulate.sh [all|singles|sweep|caches|speed] [PROGRAMS...]
#
# `singles` runs everything but the sweep, `sweep` only the sweep (the two
# can run side by side on two cores), `caches` only the two cache-miss
# metrics, `speed` only the default configuration (the simulator's speed,
# issue 30's 50 M events/s per core); the default is all, on the whole suite.
#
# Needs a release pathprof and the suite:
#   cargo build --release -p pathprof --bin pathprof
#   bash bench/build-suite.sh target/bench-wasm
# Raw JSON goes to $CARGO_TARGET_DIR/sim-results (default target/sim-results),
# the sweep charts to docs/sim-sweep-NAME.svg; the tables of BENCHMARKS.md
# are printed by bench/simulate-tables.py over the raw JSON (`--raw`: one
# line per run). A sweep's JSON holds 144 exact and hardware profiles:
# about 125 MB for sqlite.
#
# Per program, each a run of its own (every run executes the program once
# and feeds its branch stream to the configurations):
#   none        uninstrumented run (`pathprof run --mode none`), for the
#               time ratio
#   default     the default configuration (512 x 4 xor LFU, BL paths,
#               frequency, queue 4): the simulator's speed
#   frequency   512 x 4 xor LFU, BL paths, path frequency, queues 0..8
#   instructions, mispredictions: the same with that metric per path
#   l1_misses, l2_misses: the same with the data-cache model's misses per
#               path (the run records its loads and stores)
#   loop, call  extended paths across one backward branch / one call
#   space_saving, frequent: the replacement policies that compete with LFU
#   sweep       the 144 configurations of --sweep, with the chart, without
#               dynamic overlap (it would double the cost of a back)
# Dynamic overlap: windows of $WINDOW instructions (default 10 M; the
# thesis' 100 M is longer than most train runs here).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
pathprof="$target/release/pathprof"
wasm="$target/bench-wasm"
out="$target/sim-results"
window="${WINDOW:-10000000}"
mkdir -p "$out"
[[ -x "$pathprof" ]] || { echo "simulate.sh: build $pathprof first" >&2; exit 1; }

what=all
case "${1:-}" in
    all | singles | sweep | caches | speed)
        what="$1"
        shift
        ;;
esac
programs=("$@")
[[ ${#programs[@]} -gt 0 ]] || programs=(sqlite lua bzip2 zstd lz4 zlib)

for p in space_saving frequent; do
    printf '[hpt]\nreplacement = "%s"\n' "$p" >"$out/$p.toml"
done
echo 'dynamic_overlap = false' >"$out/sweep.toml"

# sim NAME PROG ARGS...: one simulated run, its JSON and its process time.
sim() {
    local name="$1" prog="$2"
    shift 2
    echo "  $name" >&2
    /usr/bin/time -f '%e %U %S %M' -o "$out/$prog-$name.time" \
        "$pathprof" simulate "$wasm/$prog.wasm" --window "$window" --json \
        -o "$out/$prog-$name.json" "$@" -- train >/dev/null
}

singles() {
    local prog="$1"
    /usr/bin/time -f '%e %U %S %M' -o "$out/$prog-none.time" \
        "$pathprof" run --mode none --timings "$out/$prog-none.json" \
        -o /dev/null "$wasm/$prog.wasm" -- train >/dev/null
    sim default "$prog"
    sim frequency "$prog" --queue 0,1,2,3,4,5,6,7,8
    for p in space_saving frequent; do
        sim "$p" "$prog" --config "$out/$p.toml"
    done
    sim mispredictions "$prog" --metric mispredictions
    for p in space_saving frequent; do
        sim "$p-mispredictions" "$prog" --config "$out/$p.toml" --metric mispredictions
    done
    sim instructions "$prog" --metric instructions
    caches "$prog"
    sim loop "$prog" --path-type extended-loop --max-extension 1
    sim call "$prog" --path-type extended-call --max-extension 1
}

caches() {
    sim l1_misses "$1" --metric l1-misses
    sim l2_misses "$1" --metric l2-misses
}

for prog in "${programs[@]}"; do
    echo "$prog" >&2
    if [[ $what == caches ]]; then
        caches "$prog"
        continue
    fi
    if [[ $what == speed ]]; then
        sim default "$prog"
        continue
    fi
    [[ $what == sweep ]] || singles "$prog"
    [[ $what == singles ]] ||
        sim sweep "$prog" --config "$out/sweep.toml" --sweep --chart "docs/sim-sweep-$prog.svg"
done
python3 bench/simulate-tables.py "$out"
