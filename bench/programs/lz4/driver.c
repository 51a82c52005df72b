/* lz4 benchmark driver: compress a generated corpus with the fast and the HC
 * compressors, decompress it, check the round trip, print checksums. */
#include "../common.h"
#include "lz4.h"
#include "lz4hc.h"

/* Decompresses z; compares with the input only when `verify`: decompressing
 * the same block again gives the same bytes, and the comparison is the
 * driver's work, not lz4's. */
static void check(const char *in, const char *z, int zn, int n, int verify, const char *what) {
    char *back = bench_alloc((size_t)n);
    int bn = LZ4_decompress_safe(z, back, zn, n);
    if (bn != n || (verify && !bench_same(in, back, (size_t)n))) bench_fail("decompress round trip");
    printf("%s: %d -> %d\n", what, n, zn);
    free(back);
}

int main(int argc, char **argv) {
    int ref = bench_input(argc, argv);
    bench_seed(ref ? 777 : 3);
    int n = ref ? 32 << 20 : 8 << 20;
    struct bench_shape shape = ref ? (struct bench_shape){50, 40} : (struct bench_shape){30, 50};
    char *in = bench_alloc((size_t)n);
    bench_corpus((unsigned char *)in, (size_t)n, shape);
    int cap = LZ4_compressBound(n);
    char *z = bench_alloc((size_t)cap);
    uint64_t h = 14695981039346656037ull;
    for (int accel = 1; accel <= 8; accel *= 2) {
        int zn = LZ4_compress_fast(in, z, n, cap, accel);
        if (zn <= 0) bench_fail("LZ4_compress_fast");
        h = bench_hash(h, (const unsigned char *)z, (size_t)zn);
        check(in, z, zn, n, 1, "fast");
        for (int r = 0; r < 3; r++) check(in, z, zn, n, 0, "again");
    }
    int part = n / 4;
    int zn = LZ4_compress_HC(in, z, part, cap, ref ? 9 : 4);
    if (zn <= 0) bench_fail("LZ4_compress_HC");
    h = bench_hash(h, (const unsigned char *)z, (size_t)zn);
    check(in, z, zn, part, 1, "hc");
    printf("hash %016llx\n", (unsigned long long)h);
    free(in);
    free(z);
    return 0;
}
