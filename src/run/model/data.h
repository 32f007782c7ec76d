/* Training data: byte-level tokens (vocabulary 256) of a text corpus, or
 * synthetic tokens when asked, and the fixed batch rule any tool can
 * rebuild: in step i, sequence j of the global batch (B sequences of T
 * tokens) starts at token ((i*B + j)*T) mod (N - T - 1) of the N-token
 * corpus, and its targets are the next tokens. */
#ifndef WP_RUN_DATA_H
#define WP_RUN_DATA_H

#include <stddef.h>
#include "util/error.h"

struct wp_corpus {
    unsigned char *tokens;
    size_t ntokens;
    char source[4096];
};

/* Reads a text file as bytes; it must hold at least T + 2 of them. */
int wp_corpus_load(const char *path, int T, struct wp_corpus *c, struct wp_err *err);
/* n synthetic tokens below vocabulary from seed. */
int wp_corpus_synthetic(size_t n, int vocabulary, unsigned long long seed, struct wp_corpus *c, struct wp_err *err);
void wp_corpus_destroy(struct wp_corpus *c);

/* Fills inputs and targets (count sequences of T) with sequences
 * first .. first+count-1 of step's global batch of B sequences. */
void wp_corpus_batch(const struct wp_corpus *c, long step, int B, int T, int first, int count, int *inputs,
                     int *targets);

#endif
