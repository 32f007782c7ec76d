/* Plans in and out: the plan file (libconfig "wavepipe-plan"), the CSV of
 * `wavepipe plan --format csv` and the readable summary. */
#include <stdlib.h>
#include <string.h>

#include "config/schema.h"
#include "plan/plan.h"
#include "util/strutil.h"
#include "util/units.h"

#define MIB (1024.0 * 1024.0)

void wp_plan_init(struct wp_plan *p)
{
    memset(p, 0, sizeof *p);
    p->acr = -1;
}

void wp_plan_destroy(struct wp_plan *p)
{
    for (int s = 0; s < p->nstages; s++)
        free(p->stages[s].devices);
    free(p->stages);
    free(p->kfkb);
    wp_plan_sbp_destroy(p);
    wp_plan_init(p);
}

void wp_plan_shape(const struct wp_plan *p, char *buf, size_t size)
{
    int straight = 1;
    for (int s = 0; s < p->nstages; s++)
        straight &= p->stages[s].replicas == 1;
    if (p->nstages == 1) {
        snprintf(buf, size, p->stages[0].replicas > 1 ? "DP" : "single");
        return;
    }
    if (straight) {
        snprintf(buf, size, "straight");
        return;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int s = 0; s < p->nstages && len + 1 < size; s++)
        len += (size_t)snprintf(buf + len, size - len, "%s%d", s ? ":" : "", p->stages[s].replicas);
}

void wp_plan_devices_list(const struct wp_plan_stage *st, int t, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < st->replicas * t && len + 1 < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%d:%d", i ? " " : "", st->devices[i].node,
                                st->devices[i].gpu);
}

/* "0:0-7 1:0-3": runs of consecutive GPUs of one node, for people. */
static void devices_compact(const struct wp_plan_stage *st, int t, char *buf, size_t size)
{
    size_t len = 0;
    int n = st->replicas * t;
    buf[0] = '\0';
    for (int i = 0; i < n && len + 1 < size;) {
        int j = i;
        while (j + 1 < n && st->devices[j + 1].node == st->devices[i].node &&
               st->devices[j + 1].gpu == st->devices[j].gpu + 1)
            j++;
        if (j > i)
            len += (size_t)snprintf(buf + len, size - len, "%s%d:%d-%d", i ? " " : "", st->devices[i].node,
                                    st->devices[i].gpu, st->devices[j].gpu);
        else
            len += (size_t)snprintf(buf + len, size - len, "%s%d:%d", i ? " " : "", st->devices[i].node,
                                    st->devices[i].gpu);
        i = j + 1;
    }
}

/* A stage's devices: replicas x t node:gpu pairs, each replica's t GPUs
 * consecutive on one node. */
static int parse_devices(const char *text, struct wp_plan_stage *st, int t, struct wp_err *err)
{
    int n = 0, want = st->replicas * t;
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        int node, gpu, used;
        if (sscanf(p, "%d:%d%n", &node, &gpu, &used) != 2 || node < 0 || gpu < 0)
            return wp_errorf(err, "devices '%s': expected node:gpu pairs separated by spaces", text);
        if (n >= want)
            return t > 1 ? wp_errorf(err, "devices '%s' lists more than the stage's %d replicas x %d GPUs", text,
                                     st->replicas, t)
                         : wp_errorf(err, "devices '%s' lists more than the stage's %d replicas", text, st->replicas);
        if (n % t && (node != st->devices[n - 1].node || gpu != st->devices[n - 1].gpu + 1))
            return wp_errorf(err, "devices '%s': the %d GPUs of a tensor group must be consecutive GPUs of one node "
                                  "(%d:%d follows %d:%d)", text, t, node, gpu, st->devices[n - 1].node,
                             st->devices[n - 1].gpu);
        st->devices[n++] = (struct wp_plan_device){node, gpu};
        p += used;
    }
    if (n != want)
        return t > 1 ? wp_errorf(err, "devices '%s' lists %d devices, the stage has %d replicas x %d GPUs", text, n,
                                 st->replicas, t)
                     : wp_errorf(err, "devices '%s' lists %d devices, the stage has %d replicas", text, n,
                                 st->replicas);
    return 0;
}

static void add_tensor(config_setting_t *parent, struct wp_plan_tensor g)
{
    config_setting_t *a = wp_cfg_add_array(parent, "tensor");
    config_setting_set_int_elem(a, -1, g.p1);
    config_setting_set_int_elem(a, -1, g.p2);
}

/* [p1, p2] of `tensor` in g, or dflt when absent. */
static int read_tensor(const config_setting_t *g, struct wp_plan_tensor dflt, struct wp_plan_tensor *out,
                       struct wp_err *err)
{
    const config_setting_t *a = config_setting_get_member(g, "tensor");
    *out = dflt;
    if (!a)
        return 0;
    if (config_setting_length(a) != 2)
        return wp_cfg_errorf(err, a, "tensor must be [p1, p2], the tensor group's two axes");
    *out = (struct wp_plan_tensor){config_setting_get_int_elem(a, 0), config_setting_get_int_elem(a, 1)};
    return 0;
}

int wp_plan_write(const char *path, const struct wp_plan *p, const struct wp_layer_table *layers,
                  struct wp_err *err)
{
    config_t cfg;
    config_init(&cfg);
    config_setting_t *root = config_root_setting(&cfg);
    char shape[256];
    wp_plan_shape(p, shape, sizeof shape);
    wp_cfg_add_string(root, "format", "wavepipe-plan");
    wp_cfg_add_int(root, "version", 1);
    wp_cfg_add_string(root, "model", p->model);
    wp_cfg_add_int(root, "layers", p->nlayers);
    wp_cfg_add_int(root, "profile_batch", p->profile_batch);
    wp_cfg_add_string(root, "cluster", p->hw.cluster);
    wp_cfg_add_string(root, "gpu", p->hw.gpu_model);
    wp_cfg_add_int(root, "nodes", p->hw.nodes);
    wp_cfg_add_int(root, "gpus_per_node", p->hw.gpus_per_node);
    wp_cfg_add_float(root, "memory_bytes", p->hw.memory_bytes);
    wp_cfg_add_int(root, "global_batch", p->global_batch);
    wp_cfg_add_int(root, "micro_batch", p->micro_batch);
    wp_cfg_add_int(root, "micro_batches", p->microbatches);
    /* the degrees of parallelism (per stage again below) */
    add_tensor(root, p->tensor);
    wp_cfg_add_int(root, "pipeline_stages", p->nstages / (p->chunks > 1 ? p->chunks : 1));
    config_setting_t *dp = wp_cfg_add_array(root, "data_parallel");
    int recomputing = 0;
    for (int s = 0; s < p->nstages; s++) {
        config_setting_set_int_elem(dp, -1, p->stages[s].replicas);
        recomputing |= p->stages[s].recompute;
    }
    wp_cfg_add_bool(root, "recompute", recomputing);
    if (p->sequence_parallel)
        wp_cfg_add_bool(root, "sequence_parallel", 1);
    if (p->distributed_optimizer)
        wp_cfg_add_bool(root, "distributed_optimizer", 1);
    config_setting_t *sched = wp_cfg_add_group(root, "schedule");
    wp_cfg_add_string(sched, "kind", p->chunks > 1 ? "interleaved" : "1f1b");
    if (p->chunks > 1)
        wp_cfg_add_int(sched, "chunks", p->chunks);
    char policy[2] = {p->policy, '\0'};
    wp_cfg_add_string(sched, "policy", policy);
    wp_cfg_add_string(root, "shape", shape);
    wp_cfg_add_float(root, "acr", p->acr);
    wp_cfg_add_float(root, "predicted_iter_s", p->predicted_iter_s);
    wp_cfg_add_float(root, "dapple_latency_s", p->latency.total_s);
    wp_cfg_add_int(root, "pivot_stage", p->latency.pivot / 2);
    wp_cfg_add_float(root, "peak_memory_bytes", p->peak_memory_bytes);
    config_setting_t *stages = wp_cfg_add_list(root, "stages");
    for (int s = 0; s < p->nstages; s++) {
        const struct wp_plan_stage *st = &p->stages[s];
        config_setting_t *g = config_setting_add(stages, NULL, CONFIG_TYPE_GROUP);
        char devs[65536];
        wp_plan_devices_list(st, wp_plan_tensor_size(p->tensor), devs, sizeof devs);
        wp_cfg_add_int(g, "first_layer", st->first_layer);
        wp_cfg_add_int(g, "last_layer", st->last_layer);
        if (layers) {
            wp_cfg_add_string(g, "first_name", layers->layers[st->first_layer].name);
            wp_cfg_add_string(g, "last_name", layers->layers[st->last_layer].name);
        }
        wp_cfg_add_int(g, "replicas", st->replicas);
        add_tensor(g, p->tensor);
        wp_cfg_add_bool(g, "recompute", st->recompute);
        if (st->selective)
            wp_cfg_add_bool(g, "recompute_selective", 1);
        wp_cfg_add_string(g, "placement", wp_place_policy_name(st->policy));
        wp_cfg_add_string(g, "devices", devs);
        wp_cfg_add_int(g, "slice", st->slice);
        wp_cfg_add_float(g, "forward_s", st->forward_s);
        wp_cfg_add_float(g, "backward_s", st->backward_s);
        wp_cfg_add_float(g, "send_s", st->send_s);
        wp_cfg_add_float(g, "allreduce_s", st->allreduce_s);
        wp_cfg_add_int(g, "inflight", st->inflight);
        wp_cfg_add_float(g, "memory_bytes", st->memory_bytes);
        if (p->sbp && p->sbp[s].planned)
            wp_sbp_config_add(g, &p->sbp[s].problem, &p->sbp[s].result);
    }
    if (p->nkfkb > 0) {
        config_setting_t *cands = wp_cfg_add_list(root, "kfkb");
        for (int i = 0; i < p->nkfkb; i++) {
            config_setting_t *g = config_setting_add(cands, NULL, CONFIG_TYPE_GROUP);
            wp_cfg_add_int(g, "k", p->kfkb[i].k);
            wp_cfg_add_int(g, "micro_batch", p->kfkb[i].micro_batch);
            wp_cfg_add_int(g, "micro_batches", p->kfkb[i].microbatches);
            wp_cfg_add_float(g, "predicted_iter_s", p->kfkb[i].predicted_iter_s);
            wp_cfg_add_float(g, "peak_memory_bytes", p->kfkb[i].peak_memory_bytes);
        }
    }
    int rc = wp_cfg_write_file(&cfg, path,
                               "wavepipe plan: stages as 0-based layer ranges of the layer table,\n"
                               "data-parallel replicas and devices (node:gpu) per stage; tensor = [p1, p2]\n"
                               "is each replica's tensor-parallel group (p1 splits the heads, axis 1, the\n"
                               "inner one; p2 the channels, axis 2; group rank j1 + p1 j2; a replica's\n"
                               "p1 p2 GPUs consecutive in devices); recompute: the stage runs its forward\n"
                               "again before each backward; the 1F1B schedule (interleaved: stage j\n"
                               "on the GPUs of stage j mod pipeline_stages) and its micro-batches\n"
                               "(micro_batch: samples of all replicas of a stage together), predicted\n"
                               "seconds per iteration and bytes per device; kfkb lists Ada-Grouper's\n"
                               "(k, micro-batch) candidates",
                               err);
    config_destroy(&cfg);
    return rc;
}

static const struct wp_cfg_key stage_keys[] = {
    WP_KEY_RANGE("first_layer", WP_CFG_INT, 1, 0, 1e9),
    WP_KEY_RANGE("last_layer", WP_CFG_INT, 1, 0, 1e9),
    WP_KEY("first_name", WP_CFG_STRING, 0),
    WP_KEY("last_name", WP_CFG_STRING, 0),
    WP_KEY_RANGE("replicas", WP_CFG_INT, 1, 1, 1e7),
    WP_KEY_RANGE("tensor", WP_CFG_INT_ARRAY, 0, 1, 1e4),
    WP_KEY("recompute", WP_CFG_BOOL, 0),
    WP_KEY("recompute_selective", WP_CFG_BOOL, 0),
    WP_KEY("placement", WP_CFG_STRING, 0),
    WP_KEY("devices", WP_CFG_STRING, 1),
    WP_KEY_RANGE("slice", WP_CFG_INT, 0, 0, 1e9),
    WP_KEY_RANGE("forward_s", WP_CFG_FLOAT, 0, 0, 1e9),
    WP_KEY_RANGE("backward_s", WP_CFG_FLOAT, 0, 0, 1e9),
    WP_KEY_RANGE("send_s", WP_CFG_FLOAT, 0, 0, 1e9),
    WP_KEY_RANGE("allreduce_s", WP_CFG_FLOAT, 0, 0, 1e9),
    WP_KEY_RANGE("inflight", WP_CFG_INT, 0, 0, 1e9),
    WP_KEY_RANGE("memory_bytes", WP_CFG_FLOAT, 0, 0, 1e18),
    WP_KEY_GROUP("sbp", WP_CFG_GROUP, 0, wp_sbp_config_keys),
    WP_KEY_END};

static const struct wp_cfg_key sched_keys[] = {
    WP_KEY("kind", WP_CFG_STRING, 1),
    WP_KEY_RANGE("chunks", WP_CFG_INT, 0, 2, 1e4),
    WP_KEY("policy", WP_CFG_STRING, 1),
    WP_KEY_END};

static const struct wp_cfg_key kfkb_keys[] = {
    WP_KEY_RANGE("k", WP_CFG_INT, 1, 1, 1e6),
    WP_KEY_RANGE("micro_batch", WP_CFG_INT, 1, 1, 1e9),
    WP_KEY_RANGE("micro_batches", WP_CFG_INT, 1, 1, 1e9),
    WP_KEY_RANGE("predicted_iter_s", WP_CFG_FLOAT, 0, 0, 1e30),
    WP_KEY_RANGE("peak_memory_bytes", WP_CFG_FLOAT, 0, 0, 1e30),
    WP_KEY_END};

static const struct wp_cfg_key plan_keys[] = {
    WP_KEY("format", WP_CFG_STRING, 1),
    WP_KEY_RANGE("version", WP_CFG_INT, 1, 1, 1),
    WP_KEY("model", WP_CFG_STRING, 1),
    WP_KEY_RANGE("layers", WP_CFG_INT, 1, 1, 1e9),
    WP_KEY_RANGE("profile_batch", WP_CFG_INT, 1, 1, 1e9),
    WP_KEY("cluster", WP_CFG_STRING, 0),
    WP_KEY("gpu", WP_CFG_STRING, 0),
    WP_KEY_RANGE("nodes", WP_CFG_INT, 1, 1, 1e7),
    WP_KEY_RANGE("gpus_per_node", WP_CFG_INT, 1, 1, 1e4),
    WP_KEY_RANGE("memory_bytes", WP_CFG_FLOAT, 0, 0, 1e18),
    WP_KEY_RANGE("global_batch", WP_CFG_INT, 1, 1, 1e9),
    WP_KEY_RANGE("micro_batch", WP_CFG_INT, 1, 1, 1e9),
    WP_KEY_RANGE("micro_batches", WP_CFG_INT, 1, 1, 1e9),
    WP_KEY_RANGE("tensor", WP_CFG_INT_ARRAY, 0, 1, 1e4),
    WP_KEY_RANGE("pipeline_stages", WP_CFG_INT, 0, 1, 1e9),
    WP_KEY_RANGE("data_parallel", WP_CFG_INT_ARRAY, 0, 1, 1e7),
    WP_KEY("recompute", WP_CFG_BOOL, 0),
    WP_KEY("sequence_parallel", WP_CFG_BOOL, 0),
    WP_KEY("distributed_optimizer", WP_CFG_BOOL, 0),
    WP_KEY_GROUP("schedule", WP_CFG_GROUP, 1, sched_keys),
    WP_KEY("shape", WP_CFG_STRING, 0),
    WP_KEY_RANGE("acr", WP_CFG_FLOAT, 0, -1, 1e9),
    WP_KEY_RANGE("predicted_iter_s", WP_CFG_FLOAT, 0, 0, 1e30),
    WP_KEY_RANGE("dapple_latency_s", WP_CFG_FLOAT, 0, 0, 1e30),
    WP_KEY_RANGE("pivot_stage", WP_CFG_INT, 0, 0, 1e9),
    WP_KEY_RANGE("peak_memory_bytes", WP_CFG_FLOAT, 0, 0, 1e30),
    WP_KEY_GROUP("stages", WP_CFG_GROUP_LIST, 1, stage_keys),
    WP_KEY_GROUP("kfkb", WP_CFG_GROUP_LIST, 0, kfkb_keys),
    WP_KEY_END};

static int read_stages(const config_setting_t *root, struct wp_plan *p, struct wp_err *err)
{
    const config_setting_t *list = config_setting_get_member(root, "stages");
    int n = config_setting_length(list);
    if (n < 1)
        return wp_cfg_errorf(err, list, "a plan needs at least one stage");
    p->stages = calloc((size_t)n, sizeof *p->stages);
    if (!p->stages)
        return wp_errorf(err, "out of memory");
    p->nstages = n;
    int v = p->chunks > 1 ? p->chunks : 1;
    if (n % v)
        return wp_cfg_errorf(err, list, "%d stages do not make %d chunks of the pipeline", n, v);
    const config_setting_t *ps = config_setting_get_member(root, "pipeline_stages");
    if (ps && config_setting_get_int(ps) != n / v)
        return wp_cfg_errorf(err, ps, "pipeline_stages %d, but the plan lists %d stages (%d chunk%s)",
                             config_setting_get_int(ps), n, v, v == 1 ? "" : "s");
    const config_setting_t *dp = config_setting_get_member(root, "data_parallel");
    if (dp && config_setting_length(dp) != n)
        return wp_cfg_errorf(err, dp, "data_parallel lists %d stages' replicas, the plan has %d stages",
                             config_setting_length(dp), n);
    int next = 0, t = wp_plan_tensor_size(p->tensor);
    for (int s = 0; s < n; s++) {
        const config_setting_t *g = config_setting_get_elem(list, (unsigned)s);
        struct wp_plan_stage *st = &p->stages[s];
        struct wp_plan_tensor tensor;
        st->first_layer = wp_cfg_int(g, "first_layer", 0);
        st->last_layer = wp_cfg_int(g, "last_layer", 0);
        st->replicas = wp_cfg_int(g, "replicas", 1);
        st->recompute = wp_cfg_bool(g, "recompute", 0);
        st->selective = wp_cfg_bool(g, "recompute_selective", 0);
        if (st->recompute && st->selective)
            return wp_cfg_errorf(err, g, "stage %d recomputes its whole forward and its attention core: give one", s);
        if (read_tensor(g, p->tensor, &tensor, err))
            return -1;
        if (tensor.p1 != p->tensor.p1 || tensor.p2 != p->tensor.p2)
            return wp_cfg_errorf(err, config_setting_get_member(g, "tensor"),
                                 "stage %d's tensor group [%d, %d] is not the plan's [%d, %d] (one group shape for "
                                 "the whole pipeline)", s, tensor.p1, tensor.p2, p->tensor.p1, p->tensor.p2);
        if (dp && config_setting_get_int_elem(dp, s) != st->replicas)
            return wp_cfg_errorf(err, dp, "data_parallel gives stage %d %d replicas, the stage says %d", s,
                                 config_setting_get_int_elem(dp, s), st->replicas);
        if (st->first_layer != next || st->last_layer < st->first_layer || st->last_layer >= p->nlayers)
            return wp_cfg_errorf(err, g, "stage %d holds layers %d-%d; it must start at layer %d and end by layer %d",
                                 s, st->first_layer, st->last_layer, next, p->nlayers - 1);
        next = st->last_layer + 1;
        if (s < n / v)
            p->devices_used += st->replicas * t;
        st->devices = calloc((size_t)st->replicas * t, sizeof *st->devices);
        if (!st->devices)
            return wp_errorf(err, "out of memory");
        if (parse_devices(wp_cfg_string(g, "devices", ""), st, t, err))
            return wp_cfg_errorf(err, config_setting_get_member(g, "devices"), "%s", err->msg);
        st->slice = wp_cfg_int(g, "slice", 0);
        st->forward_s = wp_cfg_float(g, "forward_s", 0);
        st->backward_s = wp_cfg_float(g, "backward_s", 0);
        st->send_s = wp_cfg_float(g, "send_s", 0);
        st->allreduce_s = wp_cfg_float(g, "allreduce_s", 0);
        st->inflight = wp_cfg_int(g, "inflight", 0);
        st->memory_bytes = wp_cfg_float(g, "memory_bytes", 0);
    }
    if (next != p->nlayers)
        return wp_cfg_errorf(err, list, "the stages end at layer %d; the model has %d layers (0-%d)", next - 1,
                             p->nlayers, p->nlayers - 1);
    return 0;
}

static int read_kfkb(const config_setting_t *root, struct wp_plan *p, struct wp_err *err)
{
    const config_setting_t *list = config_setting_get_member(root, "kfkb");
    int n = list ? config_setting_length(list) : 0;
    if (n == 0)
        return 0;
    p->kfkb = calloc((size_t)n, sizeof *p->kfkb);
    if (!p->kfkb)
        return wp_errorf(err, "out of memory");
    p->nkfkb = n;
    for (int i = 0; i < n; i++) {
        const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
        p->kfkb[i].k = wp_cfg_int(g, "k", 1);
        p->kfkb[i].micro_batch = wp_cfg_int(g, "micro_batch", 1);
        p->kfkb[i].microbatches = wp_cfg_int(g, "micro_batches", 1);
        p->kfkb[i].predicted_iter_s = wp_cfg_float(g, "predicted_iter_s", 0);
        p->kfkb[i].peak_memory_bytes = wp_cfg_float(g, "peak_memory_bytes", 0);
    }
    return 0;
}

int wp_plan_read(const char *path, struct wp_plan *p, struct wp_err *err)
{
    wp_plan_init(p);
    config_t cfg;
    config_init(&cfg);
    int rc = wp_cfg_read_file(&cfg, path, plan_keys, err);
    if (rc == 0) {
        const config_setting_t *root = config_root_setting(&cfg);
        const config_setting_t *sched = config_setting_get_member(root, "schedule");
        const char *policy = wp_cfg_string(sched, "policy", "A");
        if (strcmp(wp_cfg_string(root, "format", ""), "wavepipe-plan") != 0)
            rc = wp_cfg_errorf(err, config_setting_get_member(root, "format"), "format must be \"wavepipe-plan\"");
        else if (strcmp(wp_cfg_string(sched, "kind", ""), "1f1b") != 0 &&
                 strcmp(wp_cfg_string(sched, "kind", ""), "interleaved") != 0)
            rc = wp_cfg_errorf(err, config_setting_get_member(sched, "kind"),
                               "the plan's schedule must be 1f1b or interleaved");
        else if ((strcmp(wp_cfg_string(sched, "kind", ""), "interleaved") == 0) !=
                 (config_setting_get_member(sched, "chunks") != NULL))
            rc = wp_cfg_errorf(err, sched, "an interleaved schedule needs chunks (and only it has them)");
        else if (strcmp(policy, "A") != 0 && strcmp(policy, "B") != 0)
            rc = wp_cfg_errorf(err, config_setting_get_member(sched, "policy"), "policy must be \"A\" or \"B\"");
        if (rc == 0) {
            wp_strlcpy(p->model, wp_cfg_string(root, "model", ""), sizeof p->model);
            p->nlayers = wp_cfg_int(root, "layers", 1);
            p->profile_batch = wp_cfg_int(root, "profile_batch", 1);
            wp_strlcpy(p->hw.cluster, wp_cfg_string(root, "cluster", ""), sizeof p->hw.cluster);
            wp_strlcpy(p->hw.gpu_model, wp_cfg_string(root, "gpu", ""), sizeof p->hw.gpu_model);
            p->hw.nodes = wp_cfg_int(root, "nodes", 1);
            p->hw.gpus_per_node = wp_cfg_int(root, "gpus_per_node", 1);
            p->hw.memory_bytes = wp_cfg_float(root, "memory_bytes", 0);
            p->global_batch = wp_cfg_int(root, "global_batch", 1);
            p->micro_batch = wp_cfg_int(root, "micro_batch", 1);
            p->microbatches = wp_cfg_int(root, "micro_batches", 1);
            p->policy = policy[0];
            p->chunks = wp_cfg_int(sched, "chunks", 1);
            p->acr = wp_cfg_float(root, "acr", -1);
            p->predicted_iter_s = wp_cfg_float(root, "predicted_iter_s", 0);
            p->peak_memory_bytes = wp_cfg_float(root, "peak_memory_bytes", 0);
            p->sequence_parallel = wp_cfg_bool(root, "sequence_parallel", 0);
            p->distributed_optimizer = wp_cfg_bool(root, "distributed_optimizer", 0);
            rc = read_tensor(root, (struct wp_plan_tensor){1, 1}, &p->tensor, err);
            if (rc == 0 && p->hw.gpus_per_node % wp_plan_tensor_size(p->tensor))
                rc = wp_cfg_errorf(err, config_setting_get_member(root, "tensor"),
                                   "a tensor group of %d x %d GPUs does not divide a node's %d GPUs", p->tensor.p1,
                                   p->tensor.p2, p->hw.gpus_per_node);
            if (rc == 0)
                rc = read_stages(root, p, err);
        }
        if (rc == 0)
            rc = read_kfkb(root, p, err);
        if (rc == 0) {
            /* every GPU in one stage of the pipeline; an interleaved plan's
             * stage j on the GPUs of stage j mod P */
            int t = wp_plan_tensor_size(p->tensor), P = p->nstages / (p->chunks > 1 ? p->chunks : 1);
            for (int s = 0; s < p->nstages && rc == 0; s++)
                for (int i = 0; i < p->stages[s].replicas * t && rc == 0; i++) {
                    const struct wp_plan_device *d = &p->stages[s].devices[i];
                    const struct wp_plan_stage *home = &p->stages[s % P];
                    if (d->node >= p->hw.nodes || d->gpu >= p->hw.gpus_per_node)
                        rc = wp_errorf(err, "%s: stage %d device %d:%d is outside the plan's %d nodes x %d GPUs",
                                       path, s, d->node, d->gpu, p->hw.nodes, p->hw.gpus_per_node);
                    else if (s >= P && (home->replicas != p->stages[s].replicas || home->devices[i].node != d->node ||
                                        home->devices[i].gpu != d->gpu))
                        rc = wp_errorf(err, "%s: stage %d of an interleaved plan must run on stage %d's devices", path,
                                       s, s % P);
                    for (int u = 0; u <= s && rc == 0 && s < P; u++)
                        for (int j = 0; j < (u == s ? i : p->stages[u].replicas * t) && rc == 0; j++)
                            if (p->stages[u].devices[j].node == d->node && p->stages[u].devices[j].gpu == d->gpu)
                                rc = wp_errorf(err, "%s: device %d:%d is given to stage %d and to stage %d", path,
                                               d->node, d->gpu, u, s);
                }
        }
    }
    config_destroy(&cfg);
    if (rc)
        wp_plan_destroy(p);
    return rc;
}

void wp_plan_print_csv(FILE *out, const struct wp_plan *p)
{
    fprintf(out, "stage,first_layer,last_layer,replicas,devices,predicted_iter_s\n");
    for (int s = 0; s < p->nstages; s++) {
        const struct wp_plan_stage *st = &p->stages[s];
        char devs[65536];
        wp_plan_devices_list(st, wp_plan_tensor_size(p->tensor), devs, sizeof devs);
        fprintf(out, "%d,%d,%d,%d,%s,%.6g\n", s, st->first_layer, st->last_layer, st->replicas, devs,
                p->predicted_iter_s);
    }
}

/* The degrees of parallelism as Megatron-LM names them, and what the time
 * means per GPU. */
static void print_degrees(FILE *out, const struct wp_plan *p, const char *shape)
{
    int t = wp_plan_tensor_size(p->tensor), widest = 0, recomputing = 0, selective = 0, same = 1;
    for (int s = 0; s < p->nstages; s++) {
        if (p->stages[s].replicas > p->stages[widest].replicas)
            widest = s;
        recomputing += p->stages[s].recompute;
        selective += p->stages[s].selective;
        same &= p->stages[s].replicas == p->stages[0].replicas;
    }
    char dp[300];
    if (same)
        snprintf(dp, sizeof dp, "%d", p->stages[0].replicas);
    else
        snprintf(dp, sizeof dp, "%.256s per stage", shape);
    int v = p->chunks > 1 ? p->chunks : 1;
    char interleaved[64] = "";
    if (v > 1)
        snprintf(interleaved, sizeof interleaved, " (interleaved: %d virtual stages per GPU)", v);
    fprintf(out, "Megatron-LM's terms: TP %d (tensor group %d x %d: p1 = %d splits the heads, p2 = %d the channels), "
                 "PP %d%s, DP %s, micro-batch size %d, global batch %d (%d micro-batch%s); activation recomputation ",
            t, p->tensor.p1, p->tensor.p2, p->tensor.p1, p->tensor.p2, p->nstages / v, interleaved, dp,
            p->stages[widest].slice, p->global_batch, p->microbatches, p->microbatches == 1 ? "" : "es");
    if (recomputing == 0 && selective == 0)
        fprintf(out, "on no stage");
    if (recomputing)
        fprintf(out, "on %d of %d stage%s (the whole forward)", recomputing, p->nstages, p->nstages == 1 ? "" : "s");
    if (selective)
        fprintf(out, "%son %d of %d stage%s (selective: the blocks' attention core)", recomputing ? ", " : "",
                selective, p->nstages, p->nstages == 1 ? "" : "s");
    fprintf(out, "%s%s\n", p->sequence_parallel ? "; sequence parallel" : "",
            p->distributed_optimizer ? "; distributed optimizer (optimizer state sharded over each stage's "
                                       "replicas)" : "");
    char mem[32], peak[32];
    wp_format_bytes(p->hw.memory_bytes, mem, sizeof mem);
    wp_format_bytes(p->peak_memory_bytes, peak, sizeof peak);
    fprintf(out, "predicted %.4f s per iteration", p->predicted_iter_s);
    if (p->model_flops > 0 && p->predicted_iter_s > 0 && p->devices_used > 0)
        fprintf(out, ": %.4g TFLOP/s per GPU of model FLOPs (the layer table's forward + backward, 3 x forward; "
                     "recomputation not counted)",
                p->model_flops / p->predicted_iter_s / p->devices_used / 1e12);
    else
        fprintf(out, " (the layer table gives no FLOPs: no TFLOP/s)");
    fprintf(out, "; at most %s per GPU of %s\n", peak, mem);
}

void wp_plan_print_text(FILE *out, const struct wp_plan *p, const struct wp_layer_table *layers)
{
    char shape[256];
    wp_plan_shape(p, shape, sizeof shape);
    char mem[32], peak[32];
    wp_format_bytes(p->hw.memory_bytes, mem, sizeof mem);
    wp_format_bytes(p->peak_memory_bytes, peak, sizeof peak);
    fprintf(out, "plan for %s (%d layers, profile batch %d) on %s: %d node%s x %d %s, %s each%s\n", p->model,
            p->nlayers, p->profile_batch, p->hw.cluster, p->hw.nodes, p->hw.nodes == 1 ? "" : "s",
            p->hw.gpus_per_node, p->hw.gpu_model, mem,
            p->hw.memory_from_model ? " (from the model name)" : "");
    if (layers && layers->gpu[0])
        fprintf(out, "layer times modelled for the %s (per-operation model from its spec sheet and microbenchmarks, "
                     "attention %s): not measured\n", layers->gpu, layers->flash_attention ? "flash" : "unfused");
    fprintf(out, "global batch %d: %d micro-batch%s of %d, 1F1B with warm-up policy %c", p->global_batch,
            p->microbatches, p->microbatches == 1 ? "" : "es", p->micro_batch, p->policy);
    if (p->acr >= 0)
        fprintf(out, " (activation communication ratio %.2f)", p->acr);
    fprintf(out, "\n");
    char chunks[64] = "";
    if (p->chunks > 1)
        snprintf(chunks, sizeof chunks, " (%d stages x %d interleaved chunks)", p->nstages / p->chunks, p->chunks);
    fprintf(out, "plan %s: %d stage%s%s on %d GPUs; predicted %.4f s per iteration%s; at most %s per GPU\n", shape,
            p->nstages, p->nstages == 1 ? "" : "s", chunks, p->devices_used, p->predicted_iter_s,
            p->simulated_iter_s >= 0 ? " (simulated)" : " (DAPPLE's L)", peak);
    print_degrees(out, p, shape);
    fprintf(out, "DAPPLE's L %.4f s = warm-up %.4f + steady %.4f + ending %.4f, pivot stage %d\n", p->latency.total_s,
            p->latency.warmup_s, p->latency.steady_s, p->latency.ending_s, p->latency.pivot / 2);
    fprintf(out, "\n%-5s  %-9s  %-36s  %8s  %-9s  %9s  %9s  %9s  %12s  %8s  %-9s  %s\n", "stage", "layers", "names",
            "replicas", "placement", "F ms", "B ms", "send ms", "allreduce ms", "mem MiB", "recompute",
            "devices (node:gpu)");
    for (int s = 0; s < p->nstages; s++) {
        const struct wp_plan_stage *st = &p->stages[s];
        char range[32], names[160], devs[4096];
        snprintf(range, sizeof range, "%d-%d", st->first_layer, st->last_layer);
        if (layers)
            snprintf(names, sizeof names, "%.17s .. %.17s", layers->layers[st->first_layer].name,
                     layers->layers[st->last_layer].name);
        else
            names[0] = '\0';
        devices_compact(st, wp_plan_tensor_size(p->tensor), devs, sizeof devs);
        fprintf(out, "%-5d  %-9s  %-36s  %8d  %-9s  %9.3f  %9.3f  %9.3f  %12.3f  %8.1f  %-9s  %s\n", s, range, names,
                st->replicas, wp_place_policy_name(st->policy), st->forward_s * 1e3, st->backward_s * 1e3,
                st->send_s * 1e3, st->allreduce_s * 1e3, st->memory_bytes / MIB,
                st->recompute ? "full" : st->selective ? "selective" : "no", devs);
    }
    for (int s = 0; p->sbp && s < p->nstages; s++) {
        const struct wp_plan_sbp *sb = &p->sbp[s];
        if (s == 0)
            fprintf(out, "\nSBP meshes (AutoDDL) for the blocks' MLP matmuls of each replicated stage:\n");
        if (!sb->planned) {
            if (sb->why[0])
                fprintf(out, "  stage %d: stays data parallel (%s)\n", s, sb->why);
            continue;
        }
        const struct wp_sbp_layer_cost *fc = &sb->result.layers[0], *pr = &sb->result.layers[1];
        fprintf(out, "  stage %d on %d GPUs: fc mesh %dx%dx%d, proj mesh %dx%dx%d: %.3f ms of communication for "
                     "one micro-batch's forward and backward, weight allreduce included (as data parallelism: "
                     "%.3f ms)\n",
                s, sb->problem.devices, wp_sbp_mesh_axis(&fc->mesh, 0), wp_sbp_mesh_axis(&fc->mesh, 1),
                wp_sbp_mesh_axis(&fc->mesh, 2), wp_sbp_mesh_axis(&pr->mesh, 0), wp_sbp_mesh_axis(&pr->mesh, 1),
                wp_sbp_mesh_axis(&pr->mesh, 2), sb->result.comm_s * 1e3, sb->dp_comm_s * 1e3);
    }
    if (p->nkfkb > 0) {
        fprintf(out, "\nkFkB candidates (Ada-Grouper 4.2: for each k the largest micro-batch that fits):\n");
        fprintf(out, "%4s  %11s  %13s  %16s  %8s\n", "k", "micro_batch", "micro_batches", "predicted_iter_s",
                "mem MiB");
        for (int i = 0; i < p->nkfkb; i++)
            fprintf(out, "%4d  %11d  %13d  %16.4f  %8.2f\n", p->kfkb[i].k, p->kfkb[i].micro_batch,
                    p->kfkb[i].microbatches, p->kfkb[i].predicted_iter_s, p->kfkb[i].peak_memory_bytes / MIB);
    }
}
