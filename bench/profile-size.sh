#!/usr/bin/env bash
# Profile size and reading time, binary against JSON (issue 28, point 5):
# each program's ref run in path, edge and PPP modes written both ways, the
# binary profile turned into JSON by `export --format profile` and compared byte for byte
# with the JSON one (the encodings hold the same profile), then
# `pathprof-bench profile-read` times reading each file.
#
#   bash bench/profile-size.sh [PROGRAM...]     # default: every program
#
# Needs the release binaries (cargo build --release -p pathprof -p
# pathprof-bench) and the suite (see BENCHMARKS.md, Reproduce); writes to
# target/profile-size-results.
set -euo pipefail
cd "$(dirname "$0")/.."
programs=("$@")
((${#programs[@]})) || programs=(zlib bzip2 zstd lz4 sqlite lua)
target="${CARGO_TARGET_DIR:-target}"
bin="$target/release/pathprof"
harness="$target/release/pathprof-bench"
suite="$target/bench-wasm"
out="$target/profile-size-results"
for b in "$bin" "$harness"; do
    [[ -x $b ]] || { echo "profile-size.sh: build first: cargo build --release -p pathprof -p pathprof-bench" >&2; exit 1; }
done
mkdir -p "$out"
files=()
for p in "${programs[@]}"; do
    [[ -f $suite/$p.wasm ]] || { echo "profile-size.sh: $suite/$p.wasm missing: bash bench/build-suite.sh $suite" >&2; exit 1; }
    "$bin" run -o "$out/$p.train.profile" "$suite/$p.wasm" -- train >/dev/null
    for mode in path edge ppp; do
        extra=()
        [[ $mode == ppp ]] && extra=(--interesting "$out/$p.train.profile")
        for ext in profile json; do
            "$bin" run --mode "$mode" "${extra[@]}" -o "$out/$p.$mode.$ext" "$suite/$p.wasm" -- ref >/dev/null
        done
        "$bin" export --format profile -o "$out/$p.$mode.back.json" "$out/$p.$mode.profile"
        cmp -s "$out/$p.$mode.back.json" "$out/$p.$mode.json" ||
            { echo "profile-size.sh: $p $mode: the binary profile is not the JSON one" >&2; exit 1; }
        files+=("$out/$p.$mode.profile" "$out/$p.$mode.json")
    done
done
"$harness" profile-read "${files[@]}"
