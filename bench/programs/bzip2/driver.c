/* bzip2 benchmark driver: compress a generated corpus with several block
 * sizes, decompress it, check the round trip, print checksums. */
#include "../common.h"
#include "bzlib.h"

static void round_trip(char *in, unsigned n, int block, uint64_t *h) {
    unsigned cap = n + n / 100 + 600;
    char *z = bench_alloc(cap);
    char *back = bench_alloc(n);
    unsigned zn = cap;
    if (BZ2_bzBuffToBuffCompress(z, &zn, in, n, block, 0, 30) != BZ_OK) bench_fail("compress");
    unsigned bn = n;
    if (BZ2_bzBuffToBuffDecompress(back, &bn, z, zn, 0, 0) != BZ_OK || bn != n ||
        !bench_same(in, back, n))
        bench_fail("decompress round trip");
    *h = bench_hash(*h, (unsigned char *)z, zn);
    printf("block %d: %u -> %u\n", block, n, zn);
    free(z);
    free(back);
}

int main(int argc, char **argv) {
    int ref = bench_input(argc, argv);
    bench_seed(ref ? 4321 : 99);
    unsigned n = ref ? 9u << 20 : 1u << 20;
    struct bench_shape shape = ref ? (struct bench_shape){70, 25} : (struct bench_shape){50, 30};
    char *in = bench_alloc(n);
    bench_corpus((unsigned char *)in, n, shape);
    uint64_t h = 14695981039346656037ull;
    round_trip(in, n, 9, &h);
    round_trip(in, n / 2, ref ? 3 : 1, &h);
    printf("hash %016llx\n", (unsigned long long)h);
    free(in);
    return 0;
}
