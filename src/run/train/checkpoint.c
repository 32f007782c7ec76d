/* Saving and resuming checkpoints (see checkpoint.h). */
#include "run/train/checkpoint.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/train/checkpoint_dir.h"
#include "run/train/safetensors.h"
#include "run/model/stage_gpt2.h"
#include "run/comm/tensor_group.h"
#include "util/atomic_file.h"

/* The GPT-2 model of held stage h (checkpoints are refused for emulated runs). */
static struct wp_gpt2_stage *gpt2_of(const struct wp_interp *in, int h)
{
    return wp_stage_gpt2_model(&in->held[h].exec);
}

/* Stage of a block from the interpreter's held layouts: every rank knows the
 * partition through first/end of its own stages only, so the partition is
 * passed around once: block_stage[b]. */
static int *block_stages(const struct wp_interp *in)
{
    int L = in->cfg->model.layers, P = in->s->nranks;
    int *mine = malloc((size_t)L * sizeof *mine), *all = malloc((size_t)L * sizeof *all);
    if (!mine || !all) {
        free(mine);
        free(all);
        return NULL;
    }
    for (int b = 0; b < L; b++)
        mine[b] = -1;
    for (int h = 0; h < in->nheld; h++)
        for (int b = gpt2_of(in, h)->layout.first_block; b < gpt2_of(in, h)->layout.end_block; b++)
            mine[b] = in->held[h].stage;
    MPI_Allreduce(mine, all, L, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    free(mine);
    (void)P;
    return all;
}

static struct wp_held_stage *held(struct wp_interp *in, int stage)
{
    int h = in->local_of_stage[stage];
    return h >= 0 ? &in->held[h] : NULL;
}

static int write_config_json(const char *path, const struct wp_gpt2_config *g, struct wp_err *err)
{
    struct wp_atomic_file af;
    if (wp_atomic_open(&af, path, err))
        return -1;
    fprintf(af.fp,
            "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
            "  \"n_layer\": %d,\n  \"n_embd\": %d,\n  \"n_head\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n"
            "  \"vocab_size\": %d,\n  \"n_inner\": null,\n  \"layer_norm_epsilon\": 1e-05,\n"
            "  \"activation_function\": \"gelu_new\",\n  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n"
            "  \"attn_pdrop\": 0.0,\n  \"initializer_range\": 0.02,\n  \"tie_word_embeddings\": true,\n"
            "  \"scale_attn_weights\": true,\n  \"torch_dtype\": \"float32\"\n}\n",
            g->layers, g->channels, g->heads, g->max_positions, g->max_positions, g->vocabulary);
    return wp_atomic_commit(&af, err);
}

/* Where tensor i's pieces are: the world ranks of its holder's mesh that
 * hold its distinct pieces (axis 0's first: j0 = 0), with each piece's
 * shard; one rank and no shard without a mesh. Returns their count. */
static int piece_holders(const struct wp_gpt2_config *g, int i, int owner, const struct wp_tensor_group *tg,
                         int *world, struct wp_tp_shard *shard)
{
    if (!tg) {
        world[0] = owner;
        shard[0] = (struct wp_tp_shard){1, 1, 0, 0};
        return 1;
    }
    int p1 = tg->shard.p1, p2 = tg->shard.p2, t = tg->p0 * p1 * p2, n = 0;
    struct wp_tensor_desc d;
    wp_gpt2_tensor_desc(g, i, &d);
    for (int j2 = 0; j2 < p2; j2++)
        for (int j1 = 0; j1 < p1; j1++) {
            struct wp_tp_shard sh = {p1, p2, j1, j2};
            int whole = wp_gpt2_shard_numel(g, i, &sh) == d.numel;
            if (whole && n > 0)
                return n; /* a replicated tensor: lane 0's */
            world[n] = owner * t + j1 + p1 * j2;
            shard[n++] = sh;
        }
    return n;
}

int wp_checkpoint_save(struct wp_interp *in, const struct wp_tensor_group *tg, const char *dir, long steps_done,
                       const char *partition, int keep, struct wp_err *err)
{
    const struct wp_gpt2_config *g = &in->cfg->model;
    int rank, n = wp_gpt2_tensor_count(g->layers), rc = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *bstage = block_stages(in);
    if (!bstage)
        return wp_errorf(err, "out of memory");
    char partial[4400] = "";
    if (rank == 0)
        rc = wp_checkpoint_dir_begin(dir, steps_done, partial, sizeof partial, err);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc) {
        free(bstage);
        return rank == 0 ? -1 : wp_errorf(err, "rank 0 cannot create a checkpoint directory in %s", dir);
    }
    struct wp_st_tensor *model = NULL, *opt = NULL;
    float **values = NULL;
    if (rank == 0) {
        model = calloc((size_t)n, sizeof *model);
        opt = calloc((size_t)n * 2, sizeof *opt);
        values = calloc((size_t)n * 3, sizeof *values);
    }
    int most = tg ? tg->shard.p1 * tg->shard.p2 : 1;
    int *world = malloc((size_t)most * sizeof *world);
    struct wp_tp_shard *shard = malloc((size_t)most * sizeof *shard);
    if (!world || !shard)
        rc = wp_errorf(err, "out of memory");
    for (int i = 0; i < n && rc == 0; i++) {
        struct wp_tensor_desc d;
        wp_gpt2_tensor_desc(g, i, &d);
        int stage = d.block >= 0 ? bstage[d.block] : (d.role == WP_T_LNFW || d.role == WP_T_LNFB) ? in->s->nstages - 1 : 0;
        int owner = in->s->place[stage].ranks[0];
        float *buf = malloc(3 * d.numel * sizeof *buf), *piece = malloc(3 * d.numel * sizeof *piece);
        if (!buf || !piece) {
            free(buf);
            free(piece);
            rc = wp_errorf(err, "out of memory");
            break;
        }
        /* each piece (params, m, v) from its holder to rank 0, made whole there */
        int holders = piece_holders(g, i, owner, tg, world, shard);
        for (int k = 0; k < holders; k++) {
            size_t np = wp_gpt2_shard_numel(g, i, &shard[k]);
            if (world[k] == rank) {
                struct wp_held_stage *h = held(in, stage);
                struct wp_gpt2_stage *st = wp_stage_gpt2_model(&h->exec);
                long off = wp_stage_layout_find(&st->layout, i);
                in->k->to_host(piece, st->params + off, np * sizeof(float));
                in->k->to_host(piece + np, st->m + off, np * sizeof(float));
                in->k->to_host(piece + 2 * np, st->v + off, np * sizeof(float));
                if (rank != 0)
                    MPI_Send(piece, (int)(3 * np), MPI_FLOAT, 0, 7000 + i % 1000, MPI_COMM_WORLD);
            }
            if (rank == 0) {
                if (world[k] != 0)
                    MPI_Recv(piece, (int)(3 * np), MPI_FLOAT, world[k], 7000 + i % 1000, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                for (int part = 0; part < 3; part++)
                    wp_gpt2_shard_copy(g, i, &shard[k], buf + (size_t)part * d.numel, piece + (size_t)part * np, 0);
            }
        }
        free(piece);
        if (rank == 0) {
            struct wp_st_tensor *t = &model[i];
            snprintf(t->name, sizeof t->name, "%s", d.name);
            t->ndim = d.ndim;
            t->shape[0] = d.shape[0];
            t->shape[1] = d.shape[1];
            t->numel = d.numel;
            t->data = buf;
            for (int k = 0; k < 2; k++) {
                opt[2 * i + k] = *t;
                snprintf(opt[2 * i + k].name, sizeof opt[2 * i + k].name, "%s.%s", d.name, k ? "exp_avg_sq" : "exp_avg");
                opt[2 * i + k].data = buf + (size_t)(k + 1) * d.numel;
            }
            values[i] = buf;
        } else {
            free(buf);
        }
    }
    if (rank == 0 && rc == 0) {
        struct wp_st_metadata meta = {0};
        snprintf(meta.key[0], 64, "format");
        snprintf(meta.value[0], 256, "pt");
        snprintf(meta.key[1], 64, "wavepipe_steps_done");
        snprintf(meta.value[1], 256, "%ld", steps_done);
        snprintf(meta.key[2], 64, "wavepipe_seed");
        snprintf(meta.value[2], 256, "%llu", in->cfg->train.seed);
        meta.n = 3;
        if (partition && *partition) {
            snprintf(meta.key[3], 64, "wavepipe_partition");
            snprintf(meta.value[3], 256, "%s", partition);
            meta.n = 4;
        }
        char path[4500];
        snprintf(path, sizeof path, "%s/optimizer.safetensors", partial);
        rc = wp_safetensors_write(path, opt, 2 * n, &meta, err);
        snprintf(path, sizeof path, "%s/model.safetensors", partial);
        if (rc == 0)
            rc = wp_safetensors_write(path, model, n, &meta, err);
        snprintf(path, sizeof path, "%s/config.json", partial);
        if (rc == 0)
            rc = write_config_json(path, g, err);
        if (rc == 0)
            rc = wp_checkpoint_dir_commit(dir, steps_done, keep, err);
    }
    if (rank == 0 && rc && *partial) {
        char why[WP_ERR_MAX];
        snprintf(why, sizeof why, "%s", err->msg);
        wp_checkpoint_dir_abort(partial);
        wp_errorf(err, "%s (the save was dropped: %s/latest is still the previous checkpoint)", why, dir);
    }
    for (int i = 0; values && i < n; i++)
        free(values[i]);
    free(values);
    free(model);
    free(opt);
    free(bstage);
    free(world);
    free(shard);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc && rank != 0)
        wp_errorf(err, "rank 0 could not write the checkpoint %s", dir);
    return rc;
}

int wp_checkpoint_load(struct wp_interp *in, const char *dir, long *steps_done, struct wp_err *err)
{
    const struct wp_gpt2_config *g = &in->cfg->model;
    int rank, n = wp_gpt2_tensor_count(g->layers), rc = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct wp_st_file model, opt;
    memset(&model, 0, sizeof model);
    memset(&opt, 0, sizeof opt);
    long steps = 0;
    char msg[WP_ERR_MAX] = "", from[4400];
    if (rank == 0) {
        char note[WP_ERR_MAX], path[4500];
        rc = wp_checkpoint_dir_resolve(dir, from, sizeof from, note, sizeof note, err);
        if (rc == 0 && *note)
            fprintf(stderr, "wavepipe run: warning: %s\n", note);
        dir = from;
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        if (rc == 0)
            rc = wp_safetensors_read(path, &model, err);
        snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
        if (rc == 0)
            rc = wp_safetensors_read(path, &opt, err);
        const char *a = rc == 0 ? wp_safetensors_meta(&model, "wavepipe_steps_done") : NULL;
        const char *b = rc == 0 ? wp_safetensors_meta(&opt, "wavepipe_steps_done") : NULL;
        if (rc == 0 && (!a || !b || strcmp(a, b) != 0))
            rc = wp_errorf(err, "%s: model and optimizer files are from different steps (torn checkpoint)", dir);
        if (rc == 0)
            steps = atol(a);
        for (int i = 0; i < n && rc == 0; i++) {
            struct wp_tensor_desc d;
            wp_gpt2_tensor_desc(g, i, &d);
            const struct wp_st_tensor *t = wp_safetensors_find(&model, d.name);
            char mname[160];
            snprintf(mname, sizeof mname, "%s.exp_avg", d.name);
            if (!t || t->numel != d.numel || (d.ndim == 2 && (t->shape[0] != d.shape[0] || t->shape[1] != d.shape[1])))
                rc = wp_errorf(err, "%s/model.safetensors: %s is missing or has another shape than the model's", dir,
                               d.name);
            else if (!wp_safetensors_find(&opt, mname))
                rc = wp_errorf(err, "%s/optimizer.safetensors lacks %s", dir, mname);
        }
        if (rc)
            snprintf(msg, sizeof msg, "%s", err->msg);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(msg, sizeof msg, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rc) {
        wp_safetensors_free(&model);
        wp_safetensors_free(&opt);
        return wp_errorf(err, "%s", msg);
    }
    MPI_Bcast(&steps, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        struct wp_tensor_desc d;
        wp_gpt2_tensor_desc(g, i, &d);
        float *buf = malloc(3 * d.numel * sizeof *buf);
        if (!buf)
            MPI_Abort(MPI_COMM_WORLD, 1);
        if (rank == 0) {
            char name[160];
            wp_safetensors_values(&model, wp_safetensors_find(&model, d.name), buf);
            snprintf(name, sizeof name, "%s.exp_avg", d.name);
            wp_safetensors_values(&opt, wp_safetensors_find(&opt, name), buf + d.numel);
            snprintf(name, sizeof name, "%s.exp_avg_sq", d.name);
            wp_safetensors_values(&opt, wp_safetensors_find(&opt, name), buf + 2 * d.numel);
            /* a diverged run's checkpoint: training from it would only carry the NaN on */
            for (size_t e = 0; e < 3 * d.numel && rc == 0; e++)
                if (!isfinite(buf[e]))
                    rc = wp_errorf(err, "%s/%s: %s%s has a non-finite value (%g) at element %zu: not resuming from it",
                                   dir, e < d.numel ? "model.safetensors" : "optimizer.safetensors", d.name,
                                   e < d.numel ? "" : e < 2 * d.numel ? ".exp_avg" : ".exp_avg_sq", (double)buf[e],
                                   e % d.numel);
            if (rc)
                snprintf(msg, sizeof msg, "%s", err->msg);
        }
        MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (rc) {
            MPI_Bcast(msg, sizeof msg, MPI_CHAR, 0, MPI_COMM_WORLD);
            free(buf);
            wp_safetensors_free(&model);
            wp_safetensors_free(&opt);
            return wp_errorf(err, "%s", msg);
        }
        MPI_Bcast(buf, (int)(3 * d.numel), MPI_FLOAT, 0, MPI_COMM_WORLD);
        /* each holder takes its piece (the whole tensor without a mesh): any mesh resumes any */
        float *piece = malloc(d.numel * sizeof *piece);
        if (!piece)
            MPI_Abort(MPI_COMM_WORLD, 1);
        for (int h = 0; h < in->nheld; h++) {
            struct wp_gpt2_stage *st = gpt2_of(in, h);
            long off = wp_stage_layout_find(&st->layout, i);
            if (off < 0)
                continue;
            float *to[3] = {st->params + off, st->m + off, st->v + off};
            for (int part = 0; part < 3; part++) {
                size_t np = wp_gpt2_shard_copy(g, i, &st->layout.shard, buf + (size_t)part * d.numel, piece, 1);
                in->k->to_device(to[part], piece, np * sizeof(float));
            }
        }
        free(piece);
        free(buf);
    }
    for (int h = 0; h < in->nheld; h++) /* the weights the kernels read, from the master weights loaded */
        wp_gpt2_stage_weights_refresh(gpt2_of(in, h));
    wp_safetensors_free(&model);
    wp_safetensors_free(&opt);
    *steps_done = steps;
    return 0;
}

int wp_checkpoint_partition(const char *dir, char *buf, size_t size, struct wp_err *err)
{
    int rank, rc = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char text[256] = "";
    if (rank == 0) {
        struct wp_st_file model;
        memset(&model, 0, sizeof model);
        char from[4400], note[WP_ERR_MAX], path[4500];
        rc = wp_checkpoint_dir_resolve(dir, from, sizeof from, note, sizeof note, err);
        snprintf(path, sizeof path, "%s/model.safetensors", from);
        if (rc == 0)
            rc = wp_safetensors_read(path, &model, err);
        const char *p = rc == 0 ? wp_safetensors_meta(&model, "wavepipe_partition") : NULL;
        snprintf(text, sizeof text, "%s", p ? p : "");
        wp_safetensors_free(&model);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(text, sizeof text, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rc && rank != 0)
        wp_errorf(err, "rank 0 could not read the checkpoint %s", dir);
    snprintf(buf, size, "%s", text);
    return rc;
}
