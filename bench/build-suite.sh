#!/usr/bin/env bash
# Fetches the third-party C sources of the benchmark suite from crates.io
# (the -sys crates that vendor them; never committed here), and builds each
# program with its driver (bench/programs/NAME/driver.c, ours) for
# wasm32-wasi with Debian's clang.
#
#   bash bench/build-suite.sh OUT_DIR     # writes OUT_DIR/NAME.wasm
#
# The crates are pinned to exact versions so that every run of the harness
# measures the same code. The throwaway Cargo project that fetches them lives
# in $CARGO_TARGET_DIR/bench-fetch (or target/bench-fetch).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="${1:?usage: build-suite.sh OUT_DIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# shellcheck source=scripts/wasi-env.sh
source "$root/scripts/wasi-env.sh"

die() {
    echo "build-suite.sh: $*" >&2
    exit 1
}

# crate name, exact version: what the suite is built from.
CRATES=(
    "libz-sys 1.1.31"
    "bzip2-sys 0.1.13+1.0.8"
    "zstd-sys 2.1.2+zstd.1.5.7"
    "lz4-sys 1.11.1+lz4-1.10.0"
    "libsqlite3-sys 0.39.1"
    "lua-src 551.1.0"
)

fetch_dir="${CARGO_TARGET_DIR:-$root/target}/bench-fetch"

# Writes the throwaway project, runs `cargo fetch`, and prints
# "name<TAB>source dir" lines from `cargo metadata`.
fetch() {
    mkdir -p "$fetch_dir/src"
    {
        printf '[package]\nname = "bench-fetch"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[workspace]\n\n[dependencies]\n'
        for c in "${CRATES[@]}"; do
            read -r name version <<<"$c"
            printf '%s = "=%s"\n' "$name" "$version"
        done
    } >"$fetch_dir/Cargo.toml"
    echo 'fn main() {}' >"$fetch_dir/src/main.rs"
    (cd "$fetch_dir" && cargo fetch --quiet) || die "cargo fetch of the suite's crates failed (in $fetch_dir)"
    (cd "$fetch_dir" && cargo metadata --format-version 1 --offline) | python3 -c '
import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    print(p["name"] + "\t" + os.path.dirname(p["manifest_path"]))
' >"$fetch_dir/sources.tsv" || die "cargo metadata failed (in $fetch_dir)"
}

# The source dir of a fetched crate.
src_of() {
    local dir
    dir=$(awk -F'\t' -v n="$1" '$1 == n { print $2 }' "$fetch_dir/sources.tsv")
    [[ -d "$dir" ]] || die "crate $1 was not fetched (see $fetch_dir/sources.tsv)"
    echo "$dir"
}

# cc_wasm OUT.wasm ARGS...: compile and link one program, quietly unless it fails.
cc_wasm() {
    local target="$1"
    shift
    # shellcheck disable=SC2086 # WASI_CFLAGS is a list of flags
    if ! "$WASI_CC" $WASI_CFLAGS -O2 -w "$@" -o "$target.tmp" >"$target.log" 2>&1; then
        cat "$target.log" >&2
        die "building $(basename "$target") failed (compiler output above)"
    fi
    mv "$target.tmp" "$target"
    echo "built $target ($(stat -c %s "$target") bytes)"
}

build_zlib() {
    local z
    z="$(src_of libz-sys)/src/zlib"
    cc_wasm "$out/zlib.wasm" -I"$z" "$here/programs/zlib/driver.c" \
        "$z"/{adler32,compress,crc32,deflate,infback,inffast,inflate,inftrees,trees,uncompr,zutil}.c
}

build_bzip2() {
    local b
    b="$(src_of bzip2-sys)/bzip2-1.0.8"
    cc_wasm "$out/bzip2.wasm" -I"$b" "$here/programs/bzip2/driver.c" \
        "$b"/{blocksort,huffman,crctable,randtable,compress,decompress,bzlib}.c
}

build_zstd() {
    local l
    l="$(src_of zstd-sys)/zstd/lib"
    cc_wasm "$out/zstd.wasm" -DZSTD_DISABLE_ASM -DZSTD_LEGACY_SUPPORT=0 -I"$l" -I"$l/common" \
        "$here/programs/zstd/driver.c" "$l"/common/*.c "$l"/compress/*.c "$l"/decompress/*.c
}

build_lz4() {
    local l
    l="$(src_of lz4-sys)/liblz4/lib"
    cc_wasm "$out/lz4.wasm" -I"$l" "$here/programs/lz4/driver.c" "$l/lz4.c" "$l/lz4hc.c"
}

# SQLite on WASI: no threads, no extensions, no WAL (no shared memory), and
# wasi-libc's emulations of mmap, getpid, signals and process clocks, as
# libsqlite3-sys's own build.rs does for wasm32-wasi. The database is in memory.
build_sqlite() {
    local s
    s="$(src_of libsqlite3-sys)/sqlite3"
    cc_wasm "$out/sqlite.wasm" -I"$s" -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION \
        -DSQLITE_OMIT_WAL -DSQLITE_OMIT_SHARED_CACHE -DSQLITE_OMIT_RANDOMNESS -DLONGDOUBLE_TYPE=double \
        -D_WASI_EMULATED_MMAN -D_WASI_EMULATED_GETPID -D_WASI_EMULATED_SIGNAL \
        -D_WASI_EMULATED_PROCESS_CLOCKS "$here/programs/sqlite/driver.c" "$s/sqlite3.c" \
        -lwasi-emulated-mman -lwasi-emulated-getpid -lwasi-emulated-signal \
        -lwasi-emulated-process-clocks
}

# Lua 5.4 without setjmp/longjmp (absent from wasi-libc without exception
# handling): errors abort (see programs/lua/driver.c); a fixed string-hash
# seed instead of time() so that every run executes the same paths; no
# io/os/package libraries (linit.c, liolib.c, loslib.c, loadlib.c left out).
build_lua() {
    local l files=()
    l="$(src_of lua-src)/lua-5.4.9"
    for f in "$l"/*.c; do
        case "$(basename "$f")" in
        lua.c | luac.c | linit.c | liolib.c | loslib.c | loadlib.c) ;;
        *) files+=("$f") ;;
        esac
    done
    cc_wasm "$out/lua.wasm" -I"$here/programs/lua/shim" -I"$l" -D_WASI_EMULATED_SIGNAL \
        '-DLUAI_THROW(L,c)=abort()' '-DLUAI_TRY(L,c,a)=a' -Dluai_jmpbuf=int \
        '-Dluai_makeseed(L)=0x5eed' "$here/programs/lua/driver.c" "${files[@]}" -lwasi-emulated-signal
}

PROGRAMS=(zlib bzip2 zstd lz4 sqlite lua)

fetch
only="${BENCH_PROGRAMS:-${PROGRAMS[*]}}"
for p in $only; do
    "build_$p"
done
