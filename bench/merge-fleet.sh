#!/usr/bin/env bash
# Merging a fleet's profiles (issue 32): N copies of SQLite's path profile of
# the ref run (0.8 MB each, binary) merged from a directory by
# `pathprof merge`, with its wall time and peak memory; the merged counts
# are checked to be N times the one profile's.
#
#   bash bench/merge-fleet.sh [N]      # default 10000 (about 8 GB of files)
#
# Needs the release binary and the suite (see BENCHMARKS.md, Reproduce);
# the copies go to target/merge-fleet and are removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000}"
target="${CARGO_TARGET_DIR:-target}"
bin="$target/release/pathprof"
suite="$target/bench-wasm"
dir="$target/merge-fleet"
[[ -x $bin ]] || { echo "merge-fleet.sh: build first: cargo build --release -p pathprof --bin pathprof" >&2; exit 1; }
[[ -f $suite/sqlite.wasm ]] || { echo "merge-fleet.sh: $suite/sqlite.wasm missing: bash bench/build-suite.sh $suite" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$dir/fleet"
trap 'rm -rf "$dir"' EXIT
"$bin" run -o "$dir/one.profile" "$suite/sqlite.wasm" -- ref >/dev/null
for ((i = 0; i < n; i++)); do cp "$dir/one.profile" "$dir/fleet/$i.profile"; done
echo "merge-fleet.sh: $n profiles of $(stat -c %s "$dir/one.profile") bytes; merging" >&2
/usr/bin/time -f "%e s wall, %U s user, %M KB peak RSS" "$bin" merge "$dir/fleet" -o "$dir/merged.profile"
# The merged profile, as JSON, must hold n times every count of the one.
"$bin" export --format profile -o "$dir/one.json" "$dir/one.profile"
"$bin" export --format profile -o "$dir/merged.json" "$dir/merged.profile"
python3 - "$dir/one.json" "$dir/merged.json" "$n" <<'PY'
import json, sys
one, merged, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
assert merged["runs"] == n * one["runs"], (merged["runs"], one["runs"])
for a, b in zip(one["functions"], merged["functions"]):
    ca, cb = a["data"].get("counts"), b["data"].get("counts")
    if ca:
        assert [[p, c * n] for p, c in ca["paths"]] == cb["paths"], a["func_index"]
print(f"merge-fleet.sh: the merged counts are {n} times the one profile's")
PY
