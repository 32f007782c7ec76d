/* Stages of consecutive layers of a layer table (see layer_stages.h). */
#include "plan/layer_stages.h"

#include <stdlib.h>
#include <string.h>

#include "util/strutil.h"

double wp_layer_grad_pass_s(const struct wp_layer_table *t, int layer, int split_backward)
{
    const struct wp_layer *l = &t->layers[layer];
    if (!split_backward)
        return l->backward_s;
    return t->weights_known ? l->weights_s : 0.5 * l->backward_s;
}

void wp_layer_stage_cost(const struct wp_layer_table *t, int first, int last, double nseq, int split_backward,
                         struct wp_layer_stage_cost *c)
{
    memset(c, 0, sizeof *c);
    double pb = t->profile_batch > 0 ? t->profile_batch : 1, scale = nseq / pb;
    double f = 0, b = 0, w = 0, opt = 0;
    for (int i = first; i <= last; i++) {
        const struct wp_layer *l = &t->layers[i];
        f += l->forward_s;
        b += l->backward_s;
        w += wp_layer_grad_pass_s(t, i, 1);
        opt += l->optimizer_s;
        c->parameter_bytes += l->parameter_bytes;
        c->activation_bytes += l->activation_bytes * scale;
    }
    c->forward_s = f * scale;
    c->backward_s = (split_backward ? b - w : b) * scale;
    c->weights_s = split_backward ? w * scale : 0;
    c->optimizer_s = opt; /* per step, whatever the batch */
    c->in_seq_bytes = first > 0 ? t->layers[first - 1].activation_bytes / pb : 0;
    c->out_seq_bytes = t->layers[last].activation_bytes / pb;
}

int wp_layer_stages_balanced(const struct wp_layer_table *t, int nstages, int *first, int *last, struct wp_err *err)
{
    int L = t->nlayers, S = nstages;
    if (S < 1 || L < S)
        return wp_errorf(err, "%s has %d layers, too few for %d stages", t->name, L, S);
    double *cum = malloc((size_t)(L + 1) * sizeof *cum);
    double *best = malloc((size_t)(S + 1) * (size_t)(L + 1) * sizeof *best); /* best[s][j]: j layers in s stages */
    int *cut = malloc((size_t)(S + 1) * (size_t)(L + 1) * sizeof *cut);
    if (!cum || !best || !cut) {
        free(cum);
        free(best);
        free(cut);
        return wp_errorf(err, "out of memory");
    }
    cum[0] = 0;
    for (int i = 0; i < L; i++)
        cum[i + 1] = cum[i] + t->layers[i].forward_s + t->layers[i].backward_s;
#define AT(a, s, j) a[(size_t)(s) * (size_t)(L + 1) + (size_t)(j)]
    for (int j = 0; j <= L; j++)
        AT(best, 1, j) = cum[j];
    for (int s = 2; s <= S; s++)
        for (int j = s; j <= L; j++) {
            AT(best, s, j) = -1;
            for (int i = s - 1; i < j; i++) { /* the last stage is layers [i, j) */
                double a = AT(best, s - 1, i), b = cum[j] - cum[i], v = a > b ? a : b;
                /* ties go to the later cut, so that equal layers split evenly from the front */
                if (AT(best, s, j) < 0 || v <= AT(best, s, j) * (1 + 1e-12)) {
                    AT(best, s, j) = v;
                    AT(cut, s, j) = i;
                }
            }
        }
    int j = L;
    for (int s = S; s >= 1; s--) {
        int i = s == 1 ? 0 : AT(cut, s, j);
        first[s - 1] = i;
        last[s - 1] = j - 1;
        j = i;
    }
#undef AT
    free(cum);
    free(best);
    free(cut);
    return 0;
}

int wp_layer_stages_from_counts(const struct wp_layer_table *t, const int *count, int n, const char *spec,
                                int nstages, int *first, int *last, struct wp_err *err)
{
    int next = 0;
    for (int s = 0; s < n; s++) {
        if (s >= nstages || count[s] < 1)
            return wp_errorf(err, "--partition '%s' must give %d layer counts >= 1", spec, nstages);
        first[s] = next;
        next += count[s];
        last[s] = next - 1;
    }
    if (n != nstages || next != t->nlayers)
        return wp_errorf(err, "--partition '%s' must give %d stages adding up to the %d layers of %s", spec,
                         nstages, t->nlayers, t->name);
    return 0;
}

int wp_layer_stages_parse(const struct wp_layer_table *t, const char *spec, int nstages, int *first, int *last,
                          struct wp_err *err)
{
    char copy[4096];
    wp_strlcpy(copy, spec, sizeof copy);
    int n = 0, *count = malloc((size_t)(nstages + 1) * sizeof *count);
    if (!count)
        return wp_errorf(err, "out of memory");
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save), n++) {
        char *end;
        long v = strtol(tok, &end, 10);
        if (n >= nstages || v < 1 || *end) {
            free(count);
            return wp_errorf(err, "--partition '%s' must give %d layer counts >= 1", spec, nstages);
        }
        count[n] = (int)v;
    }
    int rc = wp_layer_stages_from_counts(t, count, n, spec, nstages, first, last, err);
    free(count);
    return rc;
}

int wp_layer_stage_arrays_make(const struct wp_layer_table *t, const struct wp_schedule *s, int global_batch,
                               const int *first, const int *last, struct wp_layer_stage_arrays *a, struct wp_err *err)
{
    int S = s->nstages;
    memset(a, 0, sizeof *a);
    double *all = calloc((size_t)S * 6, sizeof *all);
    if (!all)
        return wp_errorf(err, "out of memory");
    *a = (struct wp_layer_stage_arrays){all, all + S, all + 2 * S, all + 3 * S, all + 4 * S, all + 5 * S,
                                        NULL, NULL};
    a->grad_layers = calloc((size_t)S, sizeof *a->grad_layers);
    size_t sums = 0;
    for (int st = 0; st < S; st++)
        sums += 2 * (size_t)(last[st] - first[st] + 2);
    a->grad_cum = malloc(sums * sizeof *a->grad_cum);
    if (!a->grad_layers || !a->grad_cum) {
        wp_layer_stage_arrays_free(a);
        return wp_errorf(err, "out of memory");
    }
    double *cum = a->grad_cum;
    for (int st = 0; st < S; st++) { /* layers [first, last]: last - first + 2 running sums of each */
        int n = last[st] - first[st] + 1;
        double *pass = cum, *bytes = cum + n + 1;
        pass[0] = bytes[0] = 0;
        for (int i = 0; i < n; i++) {
            pass[i + 1] = pass[i] + wp_layer_grad_pass_s(t, first[st] + i, s->split_backward);
            bytes[i + 1] = bytes[i] + t->layers[first[st] + i].parameter_bytes;
        }
        a->grad_layers[st] = (struct wp_grad_layers){n, pass, bytes};
        cum += 2 * (n + 1);
    }
    double mb = (double)global_batch / s->nmicro;
    for (int st = 0; st < S; st++) {
        struct wp_layer_stage_cost c;
        wp_layer_stage_cost(t, first[st], last[st], mb / s->place[st].nreplicas, s->split_backward, &c);
        a->forward_s[st] = c.forward_s;
        a->backward_s[st] = c.backward_s;
        a->weights_s[st] = c.weights_s;
        a->step_s[st] = c.optimizer_s;
        a->boundary_bytes[st] = c.out_seq_bytes * mb;
        a->gradient_bytes[st] = c.parameter_bytes;
    }
    return 0;
}

void wp_layer_stage_arrays_free(struct wp_layer_stage_arrays *a)
{
    free(a->forward_s);
    free(a->grad_layers);
    free(a->grad_cum);
    memset(a, 0, sizeof *a);
}
