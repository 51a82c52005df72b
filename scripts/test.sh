#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs what is missing,
# builds the C fixtures, runs every test of the workspace, and ends with one
# line totalling the test results of every test binary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build-c-fixtures.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --locked 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
total() { grep -E '^test result:' "$log" | grep -Eo "[0-9]+ $1" | awk '{s += $1} END {print s + 0}'; }
echo "$(total passed) passed, $(total failed) failed"
exit "$status"
