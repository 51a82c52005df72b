# Sourced by the scripts that compile C for wasm32-wasi: sets the compiler and
# the flags that target WASI with Debian's wasi-libc (installed by setup.sh).
#
#   source scripts/wasi-env.sh
#   "$WASI_CC" $WASI_CFLAGS -O2 -g prog.c -o prog.wasm
#
# Debian's wasi-libc uses the multiarch layout (/usr/include/wasm32-wasi,
# /usr/lib/wasm32-wasi), so the sysroot is /usr, not /usr/share/wasi-sysroot
# as with the upstream wasi-sdk. Each variable can be set beforehand to
# override it. WASI_CFLAGS is meant to be expanded unquoted.
WASI_SYSROOT="${WASI_SYSROOT:-/usr}"
WASI_CC="${WASI_CC:-clang}"
WASI_CFLAGS="${WASI_CFLAGS:---target=wasm32-wasi --sysroot=$WASI_SYSROOT}"
export WASI_SYSROOT WASI_CC WASI_CFLAGS
