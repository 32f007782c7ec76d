/* DAPPLE's table V as data and its plans on wavepipe's costs
 * (bench/dapple_table5.h). */
#include "bench/dapple_table5.h"

#include <stdio.h>
#include <string.h>

/* Table V: plan, split position (blocks of the first stage) and ACR. */
const struct dapple_case dapple_cases[] = {
    {"pipedream/resnet50.txt", "auto", "Conv", 128, 2048, 'a', "DP", 0, -1},
    {"pipedream/resnet50.txt", "auto", "Conv", 128, 2048, 'b', "DP", 0, -1},
    {"pipedream/resnet50.txt", "auto", "Conv", 128, 2048, 'c', "DP", 0, -1},
    {"dapple-v100/vgg-19-pbs-32.txt", "auto", "Conv2d|FC|Prediction", 0, 2048, 'a', "DP", 0, -1},
    {"dapple-v100/vgg-19-pbs-32.txt", "auto", "Conv2d|FC|Prediction", 0, 2048, 'b', "DP", 0, -1},
    {"dapple-v100/vgg-19-pbs-32.txt", "auto", "Conv2d|FC|Prediction", 0, 2048, 'c', "15:1", 13, 0.40},
    {"dapple-v100/gnmt-16-pbs-64.txt", "frontier", "LSTM|RecurrentAttention", 0, 1024, 'a', "8:8", 9, 0.10},
    {"dapple-v100/gnmt-16-pbs-64.txt", "frontier", "LSTM|RecurrentAttention", 0, 1024, 'b', "8:8", 9, 0.10},
    {"dapple-v100/gnmt-16-pbs-64.txt", "frontier", "LSTM|RecurrentAttention", 0, 1024, 'c', "straight", 0, 3.75},
    {"dapple-v100/bert-48-pbs-2.txt", "auto", "layer_", 0, 64, 'a', "8:8", 23, 0.06},
    {"dapple-v100/bert-48-pbs-2.txt", "auto", "layer_", 0, 64, 'b', "straight", 0, 0.50},
    {"dapple-v100/bert-48-pbs-2.txt", "auto", "layer_", 0, 64, 'c', "straight", 0, 1.25},
    {"dapple-v100/xlnet-36-pbs-1.txt", "auto", "Layer_", 0, 128, 'a', "8:8", 18, 0.03},
    {"dapple-v100/xlnet-36-pbs-1.txt", "auto", "Layer_", 0, 128, 'b', "8:8", 18, 0.03},
    {"dapple-v100/xlnet-36-pbs-1.txt", "auto", "Layer_", 0, 128, 'c', "straight", 0, 0.67},
    {"dapple-v100/amoeba-36-pbs-1.txt", "auto", "cell_|!stem|!reduction", 0, 128, 'a', "8:8", 24, 0.18},
    {"dapple-v100/amoeba-36-pbs-1.txt", "auto", "cell_|!stem|!reduction", 0, 128, 'b', "11:5", 27, 0.14},
    {"dapple-v100/amoeba-36-pbs-1.txt", "auto", "cell_|!stem|!reduction", 0, 128, 'c', "11:5", 27, 0.35},
};
const int dapple_ncases = (int)(sizeof dapple_cases / sizeof dapple_cases[0]);

const char *dapple_model_name(const struct dapple_case *c)
{
    static const struct {
        const char *prefix, *name;
    } names[] = {{"pipedream/resnet50", "ResNet-50"}, {"dapple-v100/vgg-19", "VGG-19"},
                 {"dapple-v100/gnmt-16", "GNMT-16"},  {"dapple-v100/bert-48", "BERT-48"},
                 {"dapple-v100/xlnet-36", "XLNet-36"}, {"dapple-v100/amoeba-36", "AmoebaNet-36"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(c->file, names[i].prefix, strlen(names[i].prefix)) == 0)
            return names[i].name;
    return c->file;
}

/* A layer counts when its name holds one of block's "|"-separated
 * substrings and none of those written "!x". */
static int is_block(const char *name, const char *block)
{
    char alt[128];
    int hit = 0;
    snprintf(alt, sizeof alt, "%s", block);
    for (char *save = NULL, *tok = strtok_r(alt, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
        if (tok[0] == '!') {
            if (strstr(name, tok + 1))
                return 0;
        } else if (strstr(name, tok)) {
            hit = 1;
        }
    }
    return hit;
}

int dapple_blocks_in(const struct wp_layer_table *t, const char *block, int first, int last)
{
    int n = 0;
    for (int i = first; i <= last; i++)
        n += is_block(t->layers[i].name, block);
    return n;
}

/* The layer index after which `blocks` blocks have passed. */
static int layer_after_blocks(const struct wp_layer_table *t, const char *block, int blocks)
{
    int n = 0;
    for (int i = 0; i < t->nlayers; i++)
        if (is_block(t->layers[i].name, block) && ++n == blocks)
            return i;
    return t->nlayers - 1;
}

int dapple_paper_plan(const struct wp_plan_model *m, const struct dapple_case *c, struct wp_plan *p,
                      struct wp_err *err)
{
    const struct wp_layer_table *t = m->layers;
    int G = wp_plan_hw_devices(&m->hw), counts[64], reps[64];
    if (strcmp(c->paper, "DP") == 0) {
        counts[0] = t->nlayers;
        reps[0] = G;
        return wp_plan_fixed(m, 1, counts, reps, p, err);
    }
    if (strcmp(c->paper, "straight") == 0) {
        if (G > 64)
            return wp_errorf(err, "a straight pipeline of %d stages: at most 64 here", G);
        int total = dapple_blocks_in(t, c->block, 0, t->nlayers - 1), prev = -1;
        for (int s = 0; s < G; s++) {
            int end = s + 1 < G ? layer_after_blocks(t, c->block, (int)((long)(s + 1) * total / G)) : t->nlayers - 1;
            if (end <= prev)
                end = prev + 1;
            counts[s] = end - prev;
            reps[s] = 1;
            prev = end;
        }
        return wp_plan_fixed(m, G, counts, reps, p, err);
    }
    if (sscanf(c->paper, "%d:%d", &reps[0], &reps[1]) != 2)
        return wp_errorf(err, "the plan '%s' is neither DP, straight nor P:Q", c->paper);
    int cut = layer_after_blocks(t, c->block, c->split);
    counts[0] = cut + 1;
    counts[1] = t->nlayers - cut - 1;
    return wp_plan_fixed(m, 2, counts, reps, p, err);
}

int dapple_load(const char *srcdir, const struct dapple_case *c, int devices, struct wp_layer_table *t,
                struct wp_plan_hw *hw, struct wp_err *err)
{
    char path[1024], cluster_path[1024];
    snprintf(path, sizeof path, "%s/profiles/%s", srcdir, c->file);
    snprintf(cluster_path, sizeof cluster_path, "%s/topology/dapple-config-%c.cfg", srcdir, c->config);
    enum wp_layer_contract contract;
    if (wp_layer_contract_from_name(c->contract, &contract))
        return wp_errorf(err, "%s: unknown contraction '%s'", c->file, c->contract);
    if (wp_layer_table_read(t, path, c->profile_batch, contract, err))
        return -1;
    struct wp_cluster cl;
    wp_cluster_init(&cl);
    int rc = wp_cluster_read(cluster_path, &cl, err) || wp_plan_hw_from_cluster(hw, &cl, devices, 0, err) ? -1 : 0;
    wp_cluster_destroy(&cl);
    if (rc)
        wp_layer_table_destroy(t);
    return rc;
}
