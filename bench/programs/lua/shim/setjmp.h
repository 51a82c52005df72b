/* Stand-in for <setjmp.h>, which wasi-libc does not provide without the
 * exception-handling proposal: Lua's ldo.c includes it, but the benchmark
 * build defines LUAI_THROW/LUAI_TRY/luai_jmpbuf so that nothing here is used. */
#ifndef BENCH_SHIM_SETJMP_H
#define BENCH_SHIM_SETJMP_H
typedef int jmp_buf[1];
#endif
