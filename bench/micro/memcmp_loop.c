/* wasi-libc's memcmp loop, 40 compares of 16 MiB (640 M iterations): the
 * hot loop BENCHMARKS.md studies ("What a hot loop costs"). Built for
 * wasm32-wasi by bench/micro/run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static int byte_memcmp(const void *vl, const void *vr, size_t n) {
    const unsigned char *l = vl, *r = vr;
    for (; n && *l == *r; n--, l++, r++)
        ;
    return n ? *l - *r : 0;
}

int main(void) {
    size_t n = 16 << 20;
    char *a = malloc(n), *b = malloc(n);
    memset(a, 1, n);
    memset(b, 1, n);
    int s = 0;
    for (int i = 0; i < 40; i++) {
        b[n - 1 - i] = 2;
        s += byte_memcmp(a, b, n);
        b[n - 1 - i] = 1;
    }
    printf("%d\n", s);
    return 0;
}
