/* Live re-partitioning between iterations (see repartition.h). */
#include "run/adapt/repartition.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "run/comm/comm_mpi.h"

#define WP_MOVE_TAG 9000 /* above every stage boundary's tags (2 x 4096 + 1) */

static int overlap(int a0, int a1, int b0, int b1, int *lo, int *hi)
{
    *lo = a0 > b0 ? a0 : b0;
    *hi = a1 < b1 ? a1 : b1;
    return *hi > *lo;
}

/* One transfer of this rank: layers [lo, hi) to or from peer. */
struct move {
    int peer, lo, hi;
    float *buf;
    size_t floats;
    MPI_Request req;
};

int wp_interp_repartition(struct wp_interp *in, const int *old_lo, const int *old_hi, const int *new_lo,
                          const int *new_hi, wp_stage_make_fn make, void *make_ctx, double *moved_bytes,
                          struct wp_err *err)
{
    const struct wp_schedule *s = in->s;
    int S = s->nstages;
    *moved_bytes = 0;
    if (in->nheld > 1)
        return wp_errorf(err, "re-partitioning needs one stage a rank (rank %d holds %d)", in->rank, in->nheld);
    int *holders = malloc((size_t)2 * s->nranks * sizeof *holders), *others = holders ? holders + s->nranks : NULL;
    /* at most one receive per other stage, one send per rank of the others */
    struct move *sends = calloc((size_t)s->nranks, sizeof *sends), *recvs = calloc((size_t)S, sizeof *recvs);
    if (!holders || !sends || !recvs) {
        free(holders);
        free(sends);
        free(recvs);
        return wp_errorf(err, "out of memory");
    }
    int nsend = 0, nrecv = 0, rc = 0;
    struct wp_held_stage *h = in->nheld ? &in->held[0] : NULL;
    int st = h ? h->stage : -1;
    int changed = h && (old_lo[st] != new_lo[st] || old_hi[st] != new_hi[st]);
    struct wp_stage_exec fresh = {0};
    if (changed) {
        const struct wp_stage_place *pl = &s->place[st];
        struct wp_stage_request rq = {st, S, in->mb_sequences / pl->nreplicas, h->exec.nslots, s->split_backward,
                                      pl->ncopies * pl->nreplicas > 1, &in->progress, &h->reducer.hook};
        if (make(make_ctx, &rq, &fresh, err))
            rc = -1;
        if (rc == 0 && (!h->exec.ops->layers_state || !fresh.ops->set_layers_state || !fresh.ops->adopt))
            rc = wp_errorf(err, "the %s stages cannot move layers", h->exec.ops->name);
    }
    if (h) {
        int me = -1, nme = wp_stage_holders_sorted(s, st, holders);
        for (int i = 0; i < nme; i++)
            if (holders[i] == in->rank)
                me = i;
        for (int o = 0; o < S && rc == 0; o++) {
            if (o == st)
                continue;
            int lo, hi, n = wp_stage_holders_sorted(s, o, others);
            /* layers of stage o that this stage holds from now on: from o's holder me mod n */
            if (changed && overlap(old_lo[o], old_hi[o], new_lo[st], new_hi[st], &lo, &hi))
                recvs[nrecv++] = (struct move){others[me % n], lo, hi, NULL, 0, MPI_REQUEST_NULL};
            /* layers of this stage that o holds from now on: to each of o's holders whose i mod nme is me */
            if (overlap(old_lo[st], old_hi[st], new_lo[o], new_hi[o], &lo, &hi))
                for (int i = 0; i < n; i++)
                    if (i % nme == me)
                        sends[nsend++] = (struct move){others[i], lo, hi, NULL, 0, MPI_REQUEST_NULL};
        }
    }
    /* post every receive, then every send, then wait: no order between ranks can block */
    for (int i = 0; i < nrecv && rc == 0; i++) {
        struct move *m = &recvs[i];
        m->floats = fresh.ops->layers_state(fresh.impl, m->lo, m->hi, NULL);
        m->buf = malloc((m->floats ? m->floats : 1) * sizeof(float));
        if (!m->buf)
            rc = wp_errorf(err, "out of memory for %zu floats of moving layers", m->floats);
        else if (MPI_Irecv(m->buf, (int)m->floats, MPI_FLOAT, m->peer, WP_MOVE_TAG, MPI_COMM_WORLD, &m->req) !=
                 MPI_SUCCESS)
            rc = wp_errorf(err, "rank %d: posting the receive of layers %d-%d from rank %d failed", in->rank, m->lo,
                           m->hi - 1, m->peer);
    }
    for (int i = 0; i < nsend && rc == 0; i++) {
        struct move *m = &sends[i];
        m->floats = h->exec.ops->layers_state(h->exec.impl, m->lo, m->hi, NULL);
        m->buf = malloc((m->floats ? m->floats : 1) * sizeof(float));
        if (!m->buf) {
            rc = wp_errorf(err, "out of memory for %zu floats of moving layers", m->floats);
            break;
        }
        h->exec.ops->layers_state(h->exec.impl, m->lo, m->hi, m->buf);
        if (MPI_Isend(m->buf, (int)m->floats, MPI_FLOAT, m->peer, WP_MOVE_TAG, MPI_COMM_WORLD, &m->req) !=
            MPI_SUCCESS)
            rc = wp_errorf(err, "rank %d: sending layers %d-%d to rank %d failed", in->rank, m->lo, m->hi - 1,
                           m->peer);
        *moved_bytes += (double)m->floats * sizeof(float);
    }
    /* what the stage keeps (its layers that stay, GPT-2's embedding or
     * head), copied over locally while the messages move */
    if (rc == 0 && changed)
        rc = fresh.ops->adopt(fresh.impl, h->exec.impl, err);
    for (int i = 0; i < nrecv; i++) {
        struct move *m = &recvs[i];
        if (m->req != MPI_REQUEST_NULL && wp_comm_mpi_wait(MPI_SUCCESS, &m->req) == 0 && rc == 0)
            fresh.ops->set_layers_state(fresh.impl, m->lo, m->hi, m->buf);
        free(m->buf);
    }
    for (int i = 0; i < nsend; i++) {
        if (sends[i].req != MPI_REQUEST_NULL)
            wp_comm_mpi_wait(MPI_SUCCESS, &sends[i].req);
        free(sends[i].buf);
    }
    if (changed) {
        if (rc == 0) {
            h->exec.ops->destroy(h->exec.impl);
            h->exec = fresh;
        } else if (fresh.ops) {
            fresh.ops->destroy(fresh.impl);
        }
    }
    free(holders);
    free(sends);
    free(recvs);
    return rc;
}
