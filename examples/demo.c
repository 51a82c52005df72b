/* The bundled example of the README: a tiny text statistics program whose
 * paths depend on its input. `pathprof run` profiles it; `pathprof report`
 * shows which paths through classify() and main() were hot. */
#include <stdio.h>
#include <string.h>

enum kind { SPACE, DIGIT, UPPER, LOWER, PUNCT, OTHER };

static enum kind classify(int c) {
    if (c == ' ' || c == '\n' || c == '\t')
        return SPACE;
    if (c >= '0' && c <= '9')
        return DIGIT;
    if (c >= 'A' && c <= 'Z')
        return UPPER;
    if (c >= 'a' && c <= 'z')
        return LOWER;
    if (strchr(".,;:!?'\"-()", c))
        return PUNCT;
    return OTHER;
}

static unsigned hash_word(const char *w, int n) {
    unsigned h = 2166136261u;
    for (int i = 0; i < n; i++)
        h = (h ^ (unsigned char)w[i]) * 16777619u;
    return h;
}

int main(int argc, char **argv) {
    const char *text = argc > 1 ? argv[1]
        : "The quick brown fox jumps over the lazy dog, 3 times; then 42 more!";
    int rounds = argc > 2 ? argv[2][0] - '0' : 3;
    unsigned counts[6] = {0}, words = 0, digest = 0;
    for (int r = 0; r < rounds; r++) {
        int start = -1;
        for (int i = 0;; i++) {
            int c = (unsigned char)text[i];
            enum kind k = c ? classify(c) : SPACE;
            counts[k]++;
            int in_word = k == UPPER || k == LOWER || k == DIGIT;
            if (in_word && start < 0)
                start = i;
            else if (!in_word && start >= 0) {
                words++;
                digest ^= hash_word(text + start, i - start);
                start = -1;
            }
            if (!c)
                break;
        }
    }
    printf("words=%u digits=%u upper=%u lower=%u punct=%u digest=%08x\n", words, counts[DIGIT],
           counts[UPPER], counts[LOWER], counts[PUNCT], digest);
    return 0;
}
