/* GPT-2 model and training settings, read from a libconfig file (e.g.
 * jobs/models/gpt-tiny.cfg) and checked: heads divide channels, sizes in
 * range. Command-line values override the file. */
#ifndef WP_RUN_GPT2_CONFIG_H
#define WP_RUN_GPT2_CONFIG_H

#include "kernels/precision.h"
#include "util/error.h"

struct wp_gpt2_config {
    int layers;          /* L transformer blocks */
    int channels;        /* C */
    int heads;           /* NH; divides C */
    int sequence_length; /* T of training sequences */
    int max_positions;   /* rows of wpe (>= T) */
    int vocabulary;      /* V: 256 for byte-level tokens */
};

struct wp_train_config {
    int global_batch;    /* sequences per step (all micro-batches, all replicas) */
    int micro_batches;   /* M per step */
    int steps;
    unsigned long long seed;
    float learning_rate, beta1, beta2, eps, weight_decay;
    char data[4096];     /* text corpus, byte-level tokens; empty: the shipped default */
    int synthetic_data;  /* random tokens instead of a corpus */
    enum wp_precision precision; /* the kernels' (kernels/kernels.h): fp32 (default), tf32 or bf16 */
};

struct wp_run_config {
    struct wp_gpt2_config model;
    struct wp_train_config train;
};

void wp_run_config_default(struct wp_run_config *c);
/* Reads path over the defaults; errors name file:line. */
int wp_run_config_read(const char *path, struct wp_run_config *c, struct wp_err *err);
/* Cross-field checks (heads divide channels, T <= max positions, ...). */
int wp_run_config_check(const struct wp_run_config *c, struct wp_err *err);

#endif
