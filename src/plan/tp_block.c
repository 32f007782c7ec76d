/* A GPT-2 block's collectives on a tensor group (tp_block.h). */
#include "plan/tp_block.h"

#include <stdio.h>
#include <string.h>

#include "topo/collective_cost.h"

const char *wp_tp_call_name(enum wp_tp_call c)
{
    static const char *names[WP_TP_CALL_COUNT] = {"reducescatter", "allgather", "allgather_cols", "allreduce"};
    return c >= 0 && c < WP_TP_CALL_COUNT ? names[c] : "?";
}

/* The ring collective each call is. */
static const enum wp_collective kind[WP_TP_CALL_COUNT] = {WP_COLL_REDUCE_SCATTER, WP_COLL_ALLGATHER,
                                                          WP_COLL_ALLGATHER, WP_COLL_ALLREDUCE};

static void add(struct wp_tp_block_volume *v, enum wp_tp_call c, int n, double elements)
{
    if (v->group[c] <= 1)
        return; /* a group of one makes no call */
    v->calls[c] += n;
    v->elements[c] += n * elements;
    v->sent_elements[c] += n * wp_collective_sent_bytes(kind[c], v->group[c], elements);
}

/* The forward's calls: kind, count, and the vector in units of N C (the
 * count of N C / p1 or / p2 below). The backward makes each call's dual of
 * the same size: AllGather <-> ReduceScatter over the rows; the AllReduce
 * of a partial sum is the identity backward, and the replicated input's
 * dual is again an AllReduce over axis 1 and a column AllGather. */
static const struct {
    enum wp_tp_call call, dual;
    int n;
    double nc;   /* multiples of N C */
    int per_p;   /* 1: divided by p1, 2: by p2, 0: not */
} forward_calls[] = {
    {WP_TP_REDUCE_SCATTER_ROWS, WP_TP_ALL_GATHER_ROWS, 1, 3, 1}, /* QKV's output summed over axis 2 */
    {WP_TP_REDUCE_SCATTER_ROWS, WP_TP_ALL_GATHER_ROWS, 1, 4, 1}, /* the up-projection's */
    {WP_TP_ALL_GATHER_ROWS, WP_TP_REDUCE_SCATTER_ROWS, 1, 1, 1}, /* the attention output, for its projection */
    {WP_TP_ALL_GATHER_ROWS, WP_TP_REDUCE_SCATTER_ROWS, 1, 4, 1}, /* GELU's, for the down-projection */
    {WP_TP_ALL_REDUCE, WP_TP_ALL_REDUCE, 2, 1, 2},               /* the projections' partial sums */
    {WP_TP_ALL_GATHER_COLS, WP_TP_ALL_GATHER_COLS, 2, 1, 0},     /* the replicated residual */
};

/* Adds the forward's calls (dual 0) or their duals (dual 1). */
static void add_calls(struct wp_tp_block_volume *v, int p1, int p2, double n_rows, int channels, int dual)
{
    for (size_t i = 0; i < sizeof forward_calls / sizeof forward_calls[0]; i++) {
        double elements = forward_calls[i].nc * n_rows * channels;
        elements /= forward_calls[i].per_p == 1 ? p1 : forward_calls[i].per_p == 2 ? p2 : 1;
        add(v, dual ? forward_calls[i].dual : forward_calls[i].call, forward_calls[i].n, elements);
    }
}

void wp_tp_block_forward_volume(int p1, int p2, double n_rows, int channels, struct wp_tp_block_volume *v)
{
    memset(v, 0, sizeof *v);
    v->group[WP_TP_REDUCE_SCATTER_ROWS] = v->group[WP_TP_ALL_GATHER_ROWS] = v->group[WP_TP_ALL_GATHER_COLS] = p2;
    v->group[WP_TP_ALL_REDUCE] = p1;
    add_calls(v, p1, p2, n_rows, channels, 0);
}

void wp_tp_block_volume(int p1, int p2, double n_rows, int channels, struct wp_tp_block_volume *v)
{
    wp_tp_block_forward_volume(p1, p2, n_rows, channels, v);
    add_calls(v, p1, p2, n_rows, channels, 1);
}

double wp_tp_block_comm_s(int p1, int p2, double n_rows, int channels, double element_bytes,
                          const struct wp_link_cost *axis1, const struct wp_link_cost *axis2)
{
    struct wp_tp_block_volume v;
    wp_tp_block_volume(p1, p2, n_rows, channels, &v);
    double s = 0;
    for (int c = 0; c < WP_TP_CALL_COUNT; c++) {
        const struct wp_link_cost *link = c == WP_TP_ALL_REDUCE ? axis1 : axis2;
        s += v.calls[c] * wp_collective_messages(kind[c], v.group[c]) * link->alpha_s +
             v.sent_elements[c] * element_bytes * link->beta_s_per_byte;
    }
    return s;
}

double wp_tp_block_stored_bytes(int p1, int p2, double seqs, int seq_len, int channels, int heads,
                                double element_bytes)
{
    double t = (double)p1 * p2, sbh = seqs * seq_len * (double)channels;
    double scores = (double)heads * seq_len * (double)seq_len * seqs; /* a s^2 b */
    return element_bytes * (sbh * (2 + 2.0 / p2 + 5.0 / p1 + 7.0 / t) + 2 * scores / t) + 2 * sbh + scores / t;
}

double wp_tp_block_core_bytes(int p1, int p2, double seqs, int seq_len, int heads, double element_bytes)
{
    double scores = (double)heads * seq_len * (double)seq_len * seqs; /* a s^2 b */
    return (2 * element_bytes + 1) * scores / ((double)p1 * p2);
}

size_t wp_tp_block_param_floats(int p1, int p2, int channels)
{
    size_t C = (size_t)channels, t = (size_t)p1 * (size_t)p2;
    size_t ln = 4 * C;                             /* ln_1, ln_2 weight and bias */
    size_t qkv = 3 * C * C / t + 3 * C / (size_t)p1;
    size_t proj = C * C / t + C / (size_t)p2;
    size_t fc = 4 * C * C / t + 4 * C / (size_t)p1;
    size_t fcproj = 4 * C * C / t + C / (size_t)p2;
    return ln + qkv + proj + fc + fcproj;
}

int wp_tp_group_check(int p1, int p2, int heads, int channels, int seqs, char *why, size_t why_len)
{
    if (p1 < 1 || p2 < 1)
        snprintf(why, why_len, "a tensor group of %d x %d ranks", p1, p2);
    else if (heads % p1)
        snprintf(why, why_len, "axis 1 of %d does not divide the %d attention heads", p1, heads);
    else if (channels % p2 || (4 * channels / p1) % p2)
        snprintf(why, why_len, "axis 2 of %d does not divide the %d channels", p2, channels);
    else if (seqs % p2)
        snprintf(why, why_len, "axis 2 of %d does not divide the %d sequences of a slice", p2, seqs);
    else
        return 0;
    return -1;
}
