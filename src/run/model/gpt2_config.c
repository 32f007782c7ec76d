/* Reading and checking GPT-2 run configurations. */
#include "run/model/gpt2_config.h"

#include <libconfig.h>
#include <string.h>

#include "config/schema.h"
#include "util/strutil.h"

static const struct wp_cfg_key model_keys[] = {
    WP_KEY_RANGE("layers", WP_CFG_INT, 1, 1, 1024),
    WP_KEY_RANGE("channels", WP_CFG_INT, 1, 1, 65536),
    WP_KEY_RANGE("heads", WP_CFG_INT, 1, 1, 1024),
    WP_KEY_RANGE("sequence_length", WP_CFG_INT, 1, 1, 65536),
    WP_KEY_RANGE("max_positions", WP_CFG_INT, 0, 1, 65536),
    WP_KEY_RANGE("vocabulary", WP_CFG_INT, 0, 2, 1 << 20),
    WP_KEY_END};

static const struct wp_cfg_key train_keys[] = {
    WP_KEY_RANGE("global_batch", WP_CFG_INT, 0, 1, 1 << 20),
    WP_KEY_RANGE("micro_batches", WP_CFG_INT, 0, 1, 1 << 16),
    WP_KEY_RANGE("steps", WP_CFG_INT, 0, 0, 1 << 30),
    WP_KEY_RANGE("seed", WP_CFG_INT64, 0, 0, 9.2e18),
    WP_KEY_RANGE("learning_rate", WP_CFG_FLOAT, 0, 0, 10),
    WP_KEY_RANGE("beta1", WP_CFG_FLOAT, 0, 0, 0.999999),
    WP_KEY_RANGE("beta2", WP_CFG_FLOAT, 0, 0, 0.999999),
    WP_KEY_RANGE("eps", WP_CFG_FLOAT, 0, 1e-30, 1),
    WP_KEY_RANGE("weight_decay", WP_CFG_FLOAT, 0, 0, 10),
    WP_KEY("data", WP_CFG_STRING, 0),
    WP_KEY("synthetic_data", WP_CFG_BOOL, 0),
    WP_KEY("precision", WP_CFG_STRING, 0),
    WP_KEY_END};

static const struct wp_cfg_key file_keys[] = {
    WP_KEY_GROUP("model", WP_CFG_GROUP, 1, model_keys),
    WP_KEY_GROUP("train", WP_CFG_GROUP, 0, train_keys),
    WP_KEY_END};

void wp_run_config_default(struct wp_run_config *c)
{
    memset(c, 0, sizeof *c);
    c->model = (struct wp_gpt2_config){16, 64, 4, 64, 64, 256};
    c->train.global_batch = 8;
    c->train.micro_batches = 4;
    c->train.steps = 10;
    c->train.seed = 1337;
    c->train.learning_rate = 1e-3f;
    c->train.beta1 = 0.9f;
    c->train.beta2 = 0.95f;
    c->train.eps = 1e-8f;
    c->train.weight_decay = 0.0f;
}

int wp_run_config_read(const char *path, struct wp_run_config *c, struct wp_err *err)
{
    config_t cfg;
    config_init(&cfg);
    int rc = wp_cfg_read_file(&cfg, path, file_keys, err);
    if (rc && config_error_type(&cfg) == CONFIG_ERR_PARSE) { /* not libconfig at all: say what is expected */
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len, " (a model file is libconfig, as jobs/models/gpt-tiny.cfg: "
                                                        "model = { layers = 16; channels = 64; ... }; train = { ... };)");
    }
    if (rc == 0) {
        const config_setting_t *m = config_lookup(&cfg, "model");
        struct wp_gpt2_config *g = &c->model;
        g->layers = wp_cfg_int(m, "layers", g->layers);
        g->channels = wp_cfg_int(m, "channels", g->channels);
        g->heads = wp_cfg_int(m, "heads", g->heads);
        g->sequence_length = wp_cfg_int(m, "sequence_length", g->sequence_length);
        g->max_positions = wp_cfg_int(m, "max_positions", g->sequence_length);
        g->vocabulary = wp_cfg_int(m, "vocabulary", g->vocabulary);
        const config_setting_t *t = config_lookup(&cfg, "train");
        if (t) {
            struct wp_train_config *tr = &c->train;
            tr->global_batch = wp_cfg_int(t, "global_batch", tr->global_batch);
            tr->micro_batches = wp_cfg_int(t, "micro_batches", tr->micro_batches);
            tr->steps = wp_cfg_int(t, "steps", tr->steps);
            tr->seed = (unsigned long long)wp_cfg_int64(t, "seed", (long long)tr->seed);
            tr->learning_rate = (float)wp_cfg_float(t, "learning_rate", tr->learning_rate);
            tr->beta1 = (float)wp_cfg_float(t, "beta1", tr->beta1);
            tr->beta2 = (float)wp_cfg_float(t, "beta2", tr->beta2);
            tr->eps = (float)wp_cfg_float(t, "eps", tr->eps);
            tr->weight_decay = (float)wp_cfg_float(t, "weight_decay", tr->weight_decay);
            tr->synthetic_data = wp_cfg_bool(t, "synthetic_data", tr->synthetic_data);
            const char *data = wp_cfg_string(t, "data", NULL);
            if (data)
                wp_strlcpy(tr->data, data, sizeof tr->data);
            const config_setting_t *pr = config_setting_get_member(t, "precision");
            int p = pr ? wp_precision_parse(config_setting_get_string(pr)) : (int)tr->precision;
            if (p < 0)
                rc = wp_cfg_errorf(err, pr, "precision \"%s\": expected one of %s", config_setting_get_string(pr),
                                   wp_precision_names());
            tr->precision = (enum wp_precision)(p < 0 ? 0 : p);
        }
        if (rc == 0 && wp_run_config_check(c, err))
            rc = wp_err_prefix(err, "%s: ", path);
    }
    config_destroy(&cfg);
    return rc;
}

int wp_run_config_check(const struct wp_run_config *c, struct wp_err *err)
{
    const struct wp_gpt2_config *g = &c->model;
    if (g->channels % g->heads)
        return wp_errorf(err, "heads (%d) must divide channels (%d)", g->heads, g->channels);
    if (g->max_positions < g->sequence_length)
        return wp_errorf(err, "sequence_length %d exceeds max_positions %d", g->sequence_length, g->max_positions);
    const struct wp_train_config *t = &c->train;
    if (t->global_batch % t->micro_batches)
        return wp_errorf(err, "global batch %d cannot be split into %d micro-batches", t->global_batch,
                         t->micro_batches);
    return 0;
}
