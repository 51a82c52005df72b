#!/usr/bin/env bash
# One line totalling the tests of a `cargo test` log: "N passed, N failed",
# followed by how many test binaries ended without a result line (a crash,
# or a build that failed) when some did.
#
# Usage: scripts/test-summary.sh LOG
set -euo pipefail
log=$1
total() { grep -E '^test result:' "$log" | grep -Eo "[0-9]+ $1" | awk '{s += $1} END {print s + 0}'; }
started=$(grep -cE '^ +Running ' "$log" || true)
finished=$(grep -cE '^test result:' "$log" || true)
line="$(total passed) passed, $(total failed) failed"
if ((started > finished)); then
    line="$line, $((started - finished)) of $started test binaries gave no result"
fi
echo "$line"
