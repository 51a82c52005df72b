#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs what is missing,
# builds the C fixtures, runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build-c-fixtures.sh
cargo test --workspace --locked 2>&1
