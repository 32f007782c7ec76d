/* Corpus loading and the batch rule. */
#include "run/model/data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/rng.h"
#include "util/read_file.h"
#include "util/strutil.h"

int wp_corpus_load(const char *path, int T, struct wp_corpus *c, struct wp_err *err)
{
    memset(c, 0, sizeof *c);
    size_t n = 0;
    unsigned char *buf = (unsigned char *)wp_read_file(path, &n);
    if (!buf)
        return wp_errorf(err, "cannot read the corpus %s: %s", path, strerror(errno));
    if (n < (size_t)T + 2) {
        free(buf);
        return wp_errorf(err, "the corpus %s has %zu bytes; sequences of %d tokens need at least %d", path, n, T,
                         T + 2);
    }
    c->tokens = buf;
    c->ntokens = n;
    wp_strlcpy(c->source, path, sizeof c->source);
    return 0;
}

int wp_corpus_synthetic(size_t n, int vocabulary, unsigned long long seed, struct wp_corpus *c, struct wp_err *err)
{
    memset(c, 0, sizeof *c);
    if (vocabulary > 256)
        return wp_errorf(err, "synthetic tokens are bytes: vocabulary %d > 256", vocabulary);
    c->tokens = malloc(n);
    if (!c->tokens)
        return wp_errorf(err, "out of memory");
    struct wp_rng rng;
    wp_rng_seed(&rng, seed, 0x5eedda7aULL);
    for (size_t i = 0; i < n; i++)
        c->tokens[i] = (unsigned char)(wp_rng_next(&rng) % (unsigned)vocabulary);
    c->ntokens = n;
    snprintf(c->source, sizeof c->source, "synthetic (%zu tokens, seed %llu)", n, seed);
    return 0;
}

void wp_corpus_destroy(struct wp_corpus *c)
{
    free(c->tokens);
    memset(c, 0, sizeof *c);
}

void wp_corpus_batch(const struct wp_corpus *c, long step, int B, int T, int first, int count, int *inputs,
                     int *targets)
{
    unsigned long long span = c->ntokens - (size_t)T - 1;
    for (int j = 0; j < count; j++) {
        unsigned long long seq = (unsigned long long)step * (unsigned long long)B + (unsigned long long)(first + j);
        size_t start = (size_t)((seq * (unsigned long long)T) % span);
        for (int t = 0; t < T; t++) {
            inputs[(size_t)j * T + t] = c->tokens[start + t];
            targets[(size_t)j * T + t] = c->tokens[start + t + 1];
        }
    }
}
