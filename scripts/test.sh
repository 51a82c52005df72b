#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs what is missing,
# builds the C fixtures, runs every test binary of the workspace (a failing
# one does not stop the others: --no-fail-fast), and ends with one line
# totalling the results of all of them (scripts/test-summary.sh).
#
# The tests build in the dev profile, as scripts/demo.sh does, so that
# whichever runs second reuses the other's build of wasmtime.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build-c-fixtures.sh
echo "test.sh: building and running every test binary (a first build compiles" \
    "wasmtime: about 10 minutes on 2 cores; after scripts/demo.sh, about 2)" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
bash scripts/test-summary.sh "$log"
exit "$status"
