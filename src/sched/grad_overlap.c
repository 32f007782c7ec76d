/* The timing of gradient buckets overlapped with the backward (see
 * grad_overlap.h). */
#include "sched/grad_overlap.h"

#include <string.h>

/* an even split cuts the gradient into at most this many pieces of the cap
 * (larger ones beyond: a cap of bytes against gigabytes is no model of a run) */
#define WP_GRAD_EVEN_PIECES_MAX (1 << 20)

double wp_hier_allreduce_s(const void *hier, double bytes)
{
    const struct wp_hier_allreduce *h = hier;
    return wp_allreduce_lanes_s(h->nodes, h->per_node, h->lanes, bytes, &h->intra, &h->inter);
}

/* The bucket chain so far: buckets sum one after another, each once ready. */
struct chain {
    const struct wp_bucket_cost *cost;
    struct wp_grad_overlap *out;
};

static void start(struct chain *c, double ready_s, double bytes)
{
    struct wp_grad_overlap *o = c->out;
    double at = o->nbuckets && o->end_s > ready_s ? o->end_s : ready_s;
    double seconds = c->cost->seconds(c->cost->ctx, bytes);
    if (c->cost->start)
        at = c->cost->start(c->cost->start_ctx, at, &seconds);
    if (o->nbuckets++ == 0)
        o->first_start_s = at;
    o->end_s = at + seconds;
}

void wp_grad_overlap_time(double pass_s, double total_bytes, const struct wp_grad_layers *layers,
                          double bucket_bytes, const struct wp_bucket_cost *cost, struct wp_grad_overlap *out)
{
    memset(out, 0, sizeof *out);
    struct chain c = {cost, out};
    double open = 0; /* bytes final but not yet started */
    if (layers && layers->nlayers > 0) {
        int n = layers->nlayers;
        const double *p = layers->cum_pass, *b = layers->cum_bytes;
        double whole = p[n] - p[0];
        for (int l = n - 1; l >= 0; l--) { /* the last layer's gradient is final first */
            open += b[l + 1] - b[l];
            if (wp_grad_bucket_full(open, bucket_bytes)) {
                start(&c, whole > 0 ? pass_s * (p[n] - p[l]) / whole : pass_s, open);
                open = 0;
            }
        }
    } else if (total_bytes > 0 && bucket_bytes > 0) {
        double piece = bucket_bytes;
        if (total_bytes / piece > WP_GRAD_EVEN_PIECES_MAX)
            piece = total_bytes / WP_GRAD_EVEN_PIECES_MAX;
        long full = (long)(total_bytes / piece * (1 + 1e-12)); /* 3 x cap is 3 pieces, whatever the rounding */
        for (long i = 1; i <= full; i++)
            start(&c, pass_s * (double)i * piece / total_bytes, piece);
        open = total_bytes - (double)full * piece;
        if (open < 1e-9 * total_bytes)
            open = 0;
    } else {
        open = total_bytes;
    }
    if (open > 0) /* the rest, at the pass's end */
        start(&c, pass_s, open);
    out->exposed_s = out->end_s > pass_s ? out->end_s - pass_s : 0;
}
