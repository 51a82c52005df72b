# Sourced by the scripts that compile C for wasm32-wasi: sets the compiler and
# the flags that target WASI with Debian's wasi-libc (installed by setup.sh).
#
#   source scripts/wasi-env.sh
#   "$WASI_CC" $WASI_CFLAGS -O2 -g prog.c -o prog.wasm
#
# Debian's wasi-libc uses the multiarch layout (/usr/include/wasm32-wasi,
# /usr/lib/wasm32-wasi), so the sysroot is /usr, not /usr/share/wasi-sysroot
# as with the upstream wasi-sdk. Each variable can be set beforehand to
# override it. WASI_CFLAGS is meant to be expanded unquoted (so this
# folder's path must have no spaces).
#
# `-B scripts/no-wasm-opt`: clang runs binaryen's wasm-opt after linking an
# optimised build whenever it finds one, which strips the name section and
# empties the line tables; this -B folder holds a wasm-opt that does nothing,
# found first, so the modules are the same whether binaryen is installed or
# not.
WASI_SYSROOT="${WASI_SYSROOT:-/usr}"
WASI_CC="${WASI_CC:-clang}"
WASI_NO_WASM_OPT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/no-wasm-opt"
WASI_CFLAGS="${WASI_CFLAGS:---target=wasm32-wasi --sysroot=$WASI_SYSROOT -B$WASI_NO_WASM_OPT}"
export WASI_SYSROOT WASI_CC WASI_CFLAGS WASI_NO_WASM_OPT
