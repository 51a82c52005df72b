/* zlib benchmark driver: deflate a generated corpus at several levels and
 * strategies, inflate it back, check the round trip, print checksums. */
#include "../common.h"
#include "zlib.h"

static void round_trip(const unsigned char *in, size_t n, int level, int strategy, uint64_t *h) {
    uLongf cap = compressBound(n);
    unsigned char *z = bench_alloc(cap);
    unsigned char *back = bench_alloc(n);
    z_stream s;
    memset(&s, 0, sizeof s);
    if (deflateInit2(&s, level, Z_DEFLATED, 15, 8, strategy) != Z_OK) bench_fail("deflateInit2");
    s.next_in = (Bytef *)in;
    s.avail_in = (uInt)n;
    s.next_out = z;
    s.avail_out = (uInt)cap;
    if (deflate(&s, Z_FINISH) != Z_STREAM_END) bench_fail("deflate");
    size_t zn = s.total_out;
    deflateEnd(&s);
    uLongf bn = n;
    if (uncompress(back, &bn, z, zn) != Z_OK || bn != n || !bench_same(in, back, n))
        bench_fail("inflate round trip");
    *h = bench_hash(*h, z, zn);
    printf("level %d strategy %d: %zu -> %zu crc32 %08lx\n", level, strategy, n, zn,
           (unsigned long)crc32(0, in, (uInt)n));
    free(z);
    free(back);
}

int main(int argc, char **argv) {
    int ref = bench_input(argc, argv);
    bench_seed(ref ? 1234 : 77);
    size_t n = ref ? 4u << 20 : 2u << 20;
    struct bench_shape shape = ref ? (struct bench_shape){60, 30} : (struct bench_shape){40, 40};
    unsigned char *in = bench_alloc(n);
    bench_corpus(in, n, shape);
    uint64_t h = 14695981039346656037ull;
    static const int levels[] = {1, 6, 9};
    for (int i = 0; i < 3; i++) round_trip(in, n, levels[i], Z_DEFAULT_STRATEGY, &h);
    round_trip(in, n / 2, 6, ref ? Z_FILTERED : Z_HUFFMAN_ONLY, &h);
    printf("hash %016llx\n", (unsigned long long)h);
    free(in);
    return 0;
}
