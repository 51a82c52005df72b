/* Shared by the benchmark drivers (ours, not third-party code): a
 * deterministic PRNG, a corpus generator with text, record and random
 * segments, a checksum, and the train/ref input selection.
 *
 * Every driver takes one argument, "train" or "ref", which picks the input
 * (seed, size, shape), like SPEC's train and ref workloads, and prints
 * checksums only, so that the harness can compare the output of an
 * instrumented run with the uninstrumented one byte for byte. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t bench_state = 88172645463325252ull;

static void bench_seed(uint64_t seed) { bench_state = seed * 2654435761ull + 1; }

/* xorshift64*: small, fast, the same on every platform. */
static uint64_t bench_rand(void) {
    bench_state ^= bench_state >> 12;
    bench_state ^= bench_state << 25;
    bench_state ^= bench_state >> 27;
    return bench_state * 2685821657736338717ull;
}

static uint32_t bench_below(uint32_t n) { return (uint32_t)(bench_rand() >> 33) % n; }

/* FNV-1a over a buffer, folded into a running hash. */
static uint64_t bench_hash(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* 1 when the n bytes at a and b are the same. Eight bytes at a time, so
 * that checking a round trip weighs little against the codec under test:
 * wasi-libc's memcmp compares byte by byte, and with it the check was most
 * of lz4's path executions (BENCHMARKS.md, round 10). */
static int bench_same(const void *a, const void *b, size_t n) {
    const unsigned char *p = a, *q = b;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, p + i, 8);
        memcpy(&y, q + i, 8);
        if (x != y) return 0;
    }
    for (; i < n; i++)
        if (p[i] != q[i]) return 0;
    return 1;
}

/* Shape of a generated corpus, in percent of segments. */
struct bench_shape {
    unsigned text_pct;   /* words from a skewed vocabulary */
    unsigned record_pct; /* fixed-layout records with small fields */
    /* the rest: random bytes (incompressible) */
};

static const char *const bench_words[] = {
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with",
    "be", "by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which",
    "but", "have", "an", "had", "they", "you", "were", "their", "one", "all", "we",
    "can", "her", "has", "there", "been", "if", "more", "when", "will", "would",
    "who", "so", "no", "path", "profile", "counter", "branch", "function", "loop",
    "compiler", "register", "memory", "instruction", "program", "benchmark",
};
#define BENCH_NWORDS (sizeof bench_words / sizeof bench_words[0])

static size_t bench_text(unsigned char *out, size_t n) {
    size_t i = 0;
    while (i < n) {
        /* skewed: low indices are much more frequent */
        uint32_t r = bench_below(BENCH_NWORDS);
        const char *w = bench_words[bench_below(r + 1)];
        size_t len = strlen(w);
        for (size_t k = 0; k < len && i < n; k++) out[i++] = (unsigned char)w[k];
        if (i < n) out[i++] = bench_below(12) == 0 ? '\n' : ' ';
    }
    return n;
}

static size_t bench_records(unsigned char *out, size_t n) {
    size_t i = 0;
    uint32_t id = bench_below(1000);
    while (i < n) {
        unsigned char rec[16];
        id += 1 + bench_below(3);
        memcpy(rec, &id, 4);
        uint32_t v = bench_below(100);
        memcpy(rec + 4, &v, 4);
        memset(rec + 8, bench_below(4), 8);
        for (size_t k = 0; k < sizeof rec && i < n; k++) out[i++] = rec[k];
    }
    return n;
}

static size_t bench_random(unsigned char *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = (unsigned char)(bench_rand() >> 56);
    return n;
}

/* Fills `out` with `n` bytes of segments of 1-16 KiB, mixed by `shape`. */
static void bench_corpus(unsigned char *out, size_t n, struct bench_shape shape) {
    size_t i = 0;
    while (i < n) {
        size_t seg = 1024 + bench_below(15 * 1024);
        if (seg > n - i) seg = n - i;
        unsigned kind = bench_below(100);
        if (kind < shape.text_pct) bench_text(out + i, seg);
        else if (kind < shape.text_pct + shape.record_pct) bench_records(out + i, seg);
        else bench_random(out + i, seg);
        i += seg;
    }
}

/* 1 for "ref", 0 for "train"; exits with a message otherwise. */
static int bench_input(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "ref") == 0) return 1;
    if (argc == 2 && strcmp(argv[1], "train") == 0) return 0;
    fprintf(stderr, "usage: %s train|ref\n", argc > 0 ? argv[0] : "driver");
    exit(2);
}

static void *bench_alloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(3);
    }
    return p;
}

static void bench_fail(const char *what) {
    fprintf(stderr, "driver failed: %s\n", what);
    exit(4);
}

#endif
