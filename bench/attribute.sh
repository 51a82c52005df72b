#!/usr/bin/env bash
# Instructions executed by the JIT code of one suite program, per wasm
# function and per mode, under callgrind (deterministic, whatever the load
# on the machine). The engine publishes its code with a perf map
# (PATHPROF_JIT_PROFILER=perfmap); callgrind counts instructions per code
# address; this script maps those addresses to wasm functions and prints,
# per function, the added instructions of each mode over `none` and per
# path execution (from the path profile of the same train run).
#
#   bash bench/attribute.sh PROG [MODE...] [-- EXTRA RUN ARGS]
#
# PROG is a suite program (zlib, bzip2, zstd, lz4, sqlite, lua), built by
# `bash scripts/bench.sh` (or bench/build-suite.sh); MODEs default to
# "none edge path". Needs valgrind (apt-get install valgrind). Runs take
# 1-10 minutes each (callgrind is ~50x slower than native). Output goes to
# $CARGO_TARGET_DIR/attribute/PROG (default target/attribute/PROG).
set -euo pipefail
cd "$(dirname "$0")/.."
prog=${1:?usage: bench/attribute.sh PROG [MODE...] [-- EXTRA RUN ARGS]}
shift
modes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do modes+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#modes[@]} -gt 0 ] || modes=(none edge path)
target=${CARGO_TARGET_DIR:-target}
pathprof=$target/release/pathprof
wasm=$target/bench-wasm/$prog.wasm
train=$target/bench-results/$prog/path.train.json
out=$target/attribute/$prog
for f in "$pathprof" "$wasm"; do
  [ -e "$f" ] || { echo "attribute.sh: $f is missing; run scripts/bench.sh first" >&2; exit 1; }
done
command -v valgrind > /dev/null || { echo "attribute.sh: valgrind is not installed" >&2; exit 1; }
mkdir -p "$out"
[[ " ${modes[*]} " == *" path "* ]] || modes+=(path)   # the path profile gives path executions
for mode in "${modes[@]}"; do
  extra=()
  case $mode in ppp|residual) extra=(--interesting "$train") ;; esac
  echo "attribute.sh: $prog $mode (callgrind)..." >&2
  PATHPROF_JIT_PROFILER=perfmap valgrind --tool=callgrind --smc-check=all-non-file \
    --callgrind-out-file="$out/cg.$mode" "$pathprof" run --mode "$mode" "${extra[@]}" "$@" \
    -o "$out/profile.$mode.json" "$wasm" -- train > /dev/null 2> "$out/valgrind.$mode.err"
  pid=$(grep -o '^==[0-9]*==' "$out/valgrind.$mode.err" | head -1 | tr -d '=')
  cp "/tmp/perf-$pid.map" "$out/map.$mode"
  callgrind_annotate --inclusive=no --threshold=100 --auto=no "$out/cg.$mode" > "$out/annotate.$mode" 2> /dev/null
done
python3 - "$out" "${modes[@]}" <<'PY'
import bisect, collections, json, re, sys
out, modes = sys.argv[1], sys.argv[2:]

def per_function(mode):
    """Instructions of the JIT code per wasm function (perf map ranges)."""
    ranges = []
    for line in open(f"{out}/map.{mode}"):
        start, size, name = line.split(" ", 2)
        ranges.append((int(start, 16), int(size, 16), name.strip()))
    ranges.sort()
    starts = [r[0] for r in ranges]
    ir = collections.Counter()
    for line in open(f"{out}/annotate.{mode}"):
        m = re.match(r"\s*([\d,]+) .*\?\?\?:0x([0-9a-f]+)", line)
        if not m:
            continue
        addr = int(m.group(2), 16)
        i = bisect.bisect_right(starts, addr) - 1
        inside = i >= 0 and addr < ranges[i][0] + ranges[i][1]
        ir[ranges[i][2] if inside else "(outside wasm functions)"] += int(m.group(1).replace(",", ""))
    return ir

ir = {mode: per_function(mode) for mode in modes}
paths = {}
for f in json.load(open(f"{out}/profile.path.json"))["functions"]:
    counts = f["data"].get("counts") or {}
    n = sum(c for _, c in counts.get("paths", [])) + sum(counts.get("self_loops") or [])
    paths[f["name"]] = n
base = ir.get("none")
for mode in modes:
    total = sum(ir[mode].values())
    line = f"{mode}: {total} instructions of JIT code"
    if base and mode != "none":
        line += f", {100 * (total / sum(base.values()) - 1):+.1f} % over none"
    print(line)
if not base:
    sys.exit(0)
shown = [m for m in modes if m != "none"]
added = lambda m, f: ir[m][f] - base.get(f, 0)
total_path = sum(ir["path"].values()) - sum(base.values())
print()
print("| function | share of path's added | path executions (M) | none / path exec | "
      + " | ".join(f"`{m}` added / path exec" for m in shown) + " |")
print("|---|---|---|---|" + "---|" * len(shown))
for f in sorted(ir["path"], key=lambda f: -added("path", f))[:12]:
    n = paths.get(f, 0)
    if n == 0:
        continue
    cells = " | ".join(f"{added(m, f) / n:.1f}" for m in shown)
    print(f"| `{f[:40]}` | {100 * added('path', f) / total_path:.0f} % | {n / 1e6:.1f} | {base.get(f, 0) / n:.1f} | {cells} |")
PY
