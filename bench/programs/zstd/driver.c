/* zstd benchmark driver: compress a generated corpus at several levels,
 * decompress it, check the round trip, print checksums. */
#include "../common.h"
#include "zstd.h"

static void round_trip(const unsigned char *in, size_t n, int level, uint64_t *h) {
    size_t cap = ZSTD_compressBound(n);
    unsigned char *z = bench_alloc(cap);
    unsigned char *back = bench_alloc(n);
    size_t zn = ZSTD_compress(z, cap, in, n, level);
    if (ZSTD_isError(zn)) bench_fail(ZSTD_getErrorName(zn));
    size_t bn = ZSTD_decompress(back, n, z, zn);
    if (ZSTD_isError(bn) || bn != n || !bench_same(in, back, n)) bench_fail("decompress round trip");
    *h = bench_hash(*h, z, zn);
    printf("level %d: %zu -> %zu\n", level, n, zn);
    free(z);
    free(back);
}

int main(int argc, char **argv) {
    int ref = bench_input(argc, argv);
    bench_seed(ref ? 2024 : 5);
    size_t n = ref ? 16u << 20 : 3u << 20;
    struct bench_shape shape = ref ? (struct bench_shape){55, 35} : (struct bench_shape){35, 45};
    unsigned char *in = bench_alloc(n);
    bench_corpus(in, n, shape);
    uint64_t h = 14695981039346656037ull;
    static const int levels[] = {1, 3, 9, -5};
    for (int i = 0; i < 4; i++) round_trip(in, n, levels[i], &h);
    printf("hash %016llx\n", (unsigned long long)h);
    free(in);
    return 0;
}
