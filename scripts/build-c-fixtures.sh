#!/usr/bin/env bash
# Builds the C fixture programs tests/fixtures/c/*.c:
#
#   OUTDIR/NAME.O0.wasm   clang --target=wasm32-wasi -O0 -g
#   OUTDIR/NAME.O2.wasm   clang --target=wasm32-wasi -O2 -g
#                         (plus the flags of a first line `// wasm-cflags: ...`)
#   OUTDIR/NAME.native    gcc -O2 for the host: the tests' independent oracle
#
# Usage: scripts/build-c-fixtures.sh [OUTDIR]   (default tests/fixtures/c/build)
#
# Rebuilds an output only when it is missing or older than its source (or
# these scripts). Run scripts/setup.sh first to install the compilers.
# The wasm compiler and flags come from scripts/wasi-env.sh (WASI_CC,
# WASI_CFLAGS, WASI_SYSROOT; sysroot /usr, Debian's wasi-libc layout); the
# host compiler is HOST_CC (default gcc).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src_dir="$root/tests/fixtures/c"
out_dir="${1:-$src_dir/build}"
# shellcheck source=scripts/wasi-env.sh
source "$root/scripts/wasi-env.sh"
HOST_CC="${HOST_CC:-gcc}"
self="${BASH_SOURCE[0]}"
env_script="$root/scripts/wasi-env.sh"

die() {
    echo "build-c-fixtures.sh: $*" >&2
    exit 1
}

command -v "$WASI_CC" >/dev/null ||
    die "$WASI_CC not found: run scripts/setup.sh to install clang, lld and wasi-libc"
command -v "$HOST_CC" >/dev/null ||
    die "$HOST_CC not found: run scripts/setup.sh to install it"

mkdir -p "$out_dir"

WARN=(-Wall -Wextra -Werror=implicit-function-declaration -Werror=return-type)

# up_to_date OUT SRC: OUT exists and is newer than SRC and these scripts.
up_to_date() {
    [[ -f "$1" && "$1" -nt "$2" && "$1" -nt "$self" && "$1" -nt "$env_script" ]]
}

# build OUT SRC COMMAND...: runs COMMAND (which writes OUT) unless up to date;
# writes to a temporary file first so an interrupted build leaves no output.
build() {
    local out=$1 src=$2
    shift 2
    up_to_date "$out" "$src" && return 0
    local tmp="$out.tmp.$$"
    if ! "$@" -o "$tmp"; then
        rm -f "$tmp"
        die "failed to build $out from $src"
    fi
    mv -f "$tmp" "$out"
}

shopt -s nullglob
sources=("$src_dir"/*.c)
((${#sources[@]} > 0)) || die "no C sources in $src_dir"

for src in "${sources[@]}"; do
    name=$(basename "$src" .c)
    # A source's own wasm flags: a first line `// wasm-cflags: FLAGS`.
    extra=$(sed -n '1s|^// wasm-cflags: ||p' "$src")
    for opt in O0 O2; do
        # shellcheck disable=SC2086 # WASI_CFLAGS and extra are lists of flags
        build "$out_dir/$name.$opt.wasm" "$src" \
            "$WASI_CC" $WASI_CFLAGS $extra "-$opt" -g \
            "${WARN[@]}" "$src"
    done
    build "$out_dir/$name.native" "$src" "$HOST_CC" -O2 "${WARN[@]}" "$src"
done
