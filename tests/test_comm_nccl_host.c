/* The NCCL backend (src/run/comm/comm_nccl.c, built unchanged against the host
 * emulation of tests/cuda_host, whose NCCL runs over MPI) against the MPI
 * backend on any number of ranks (tests/mpi_comm_nccl_host.sh runs 2 and 4):
 * the same messages, sums, gathers and scatters of the same data give the
 * same bytes. The data are multiples of 1/64 below 1 in magnitude, so every
 * sum is exact in any order. Then calibrate's NCCL backend
 * (src/topo/calibrate_nccl.c) runs each of its operations, under the
 * emulation's checks of every NCCL call. Every rank checks; rank 0 writes
 * the TAP. */
#include <config.h>

#include <mpi.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "run/comm/comm.h"
#include "tap.h"
#include "topo/calibrate_mpi.h"
#include "topo/collective_cost.h"

extern const struct wp_comm_ops wp_comm_nccl; /* run/comm/comm.h declares it in the CUDA build only */

static int rank, size;
static struct wp_comm *mpi_c, *nccl_c;

/* One TAP line on rank 0: passes when it passed on every rank. */
static void agree(int pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void agree(int pass, const char *fmt, ...)
{
    int all = 0;
    MPI_Allreduce(&pass, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (rank == 0)
        ok(all, "%s", what);
}

static float value(int r, size_t i, int salt)
{
    return (float)((int)((i * 7 + (size_t)r * 13 + (size_t)salt * 5) % 64) - 32) / 64.0f;
}

static float *host_values(size_t n, int r, int salt)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = value(r, i, salt);
    return h;
}

static float *device_copy(const float *h, size_t n)
{
    float *d = NULL;
    if (cudaMalloc((void **)&d, n * sizeof *d) != cudaSuccess ||
        cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice) != cudaSuccess) {
        printf("Bail out! cudaMalloc\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return d;
}

/* the device array d (n) equals the host array h */
static int same_on_device(const float *d, const float *h, size_t n)
{
    float *back = malloc((n ? n : 1) * sizeof *back);
    cudaMemcpy(back, d, n * sizeof *back, cudaMemcpyDeviceToHost);
    const int same = memcmp(back, h, n * sizeof *back) == 0;
    free(back);
    return same;
}

/* ---- point to point -------------------------------------------------------------- */
/* Two messages in a row to the next rank and from the one before, in a ring
 * (to itself on one rank): each arrives whole and in order. */
static void test_ring(void)
{
    const size_t n = 1000;
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    float *first = host_values(n, rank, 1), *second = host_values(n, rank, 2);
    float *mpi_in1 = calloc(n, sizeof(float)), *mpi_in2 = calloc(n, sizeof(float));
    float *d_first = device_copy(first, n), *d_second = device_copy(second, n);
    float *d_in1 = device_copy(mpi_in1, n), *d_in2 = device_copy(mpi_in2, n);

    struct wp_comm_request r[4];
    wp_comm_mpi.irecv(mpi_c, mpi_in1, n * sizeof(float), prev, 1, &r[0]);
    wp_comm_mpi.irecv(mpi_c, mpi_in2, n * sizeof(float), prev, 1, &r[1]);
    wp_comm_mpi.isend(mpi_c, first, n * sizeof(float), next, 1, &r[2]);
    wp_comm_mpi.isend(mpi_c, second, n * sizeof(float), next, 1, &r[3]);
    for (int i = 0; i < 4; i++)
        wp_comm_wait(&wp_comm_mpi, mpi_c, &r[i]);

    int rc = 0;
    rc |= wp_comm_nccl.isend(nccl_c, d_first, n * sizeof(float), next, 1, &r[0]);
    rc |= wp_comm_nccl.isend(nccl_c, d_second, n * sizeof(float), next, 1, &r[1]);
    rc |= wp_comm_nccl.irecv(nccl_c, d_in1, n * sizeof(float), prev, 1, &r[2]);
    rc |= wp_comm_nccl.irecv(nccl_c, d_in2, n * sizeof(float), prev, 1, &r[3]);
    for (int i = 3; i >= 0; i--) /* waited for in another order than sent */
        rc |= wp_comm_wait(&wp_comm_nccl, nccl_c, &r[i]);

    float *want1 = host_values(n, prev, 1), *want2 = host_values(n, prev, 2);
    agree(memcmp(mpi_in1, want1, n * sizeof(float)) == 0 && memcmp(mpi_in2, want2, n * sizeof(float)) == 0,
          "%d ranks: MPI ring, two messages per peer, arrive in order", size);
    agree(rc == 0 && same_on_device(d_in1, mpi_in1, n) && same_on_device(d_in2, mpi_in2, n),
          "%d ranks: NCCL ring (per-peer streams after compute) delivers what MPI does", size);
    float *all[] = {first, second, mpi_in1, mpi_in2, want1, want2};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    float *devices[] = {d_first, d_second, d_in1, d_in2};
    for (size_t i = 0; i < sizeof devices / sizeof *devices; i++)
        cudaFree(devices[i]);
}

/* ---- groups ------------------------------------------------------------------------- */
/* every rank in order, or this rank's pair {r | 1, r & ~1} listed high
 * first (alone on one rank, or when the pair's other rank is missing) */
static int group_of(int pairs, int *ranks)
{
    if (!pairs) {
        for (int r = 0; r < size; r++)
            ranks[r] = r;
        return size;
    }
    const int high = rank | 1, low = rank & ~1;
    if (high >= size) {
        ranks[0] = rank;
        return 1;
    }
    ranks[0] = high;
    ranks[1] = low;
    return 2;
}

static const char *group_name(int pairs)
{
    return pairs ? "pairs listed high rank first" : "all ranks";
}

static void test_allreduce(void)
{
    const size_t n = 1003;
    int ranks[64];
    for (int pairs = 0; pairs < 2; pairs++) {
        const int nranks = group_of(pairs, ranks);
        float *h = host_values(n, rank, 3);
        float *d = device_copy(h, n);
        const int mpi_rc = wp_comm_mpi.allreduce_sum(mpi_c, h, n, ranks, nranks);
        const int nccl_rc = wp_comm_nccl.allreduce_sum(nccl_c, d, n, ranks, nranks);
        agree(mpi_rc == 0 && nccl_rc == 0 && same_on_device(d, h, n), "%d ranks, %s: allreduce_sum of %zu floats",
              size, group_name(pairs), n);
        free(h);
        cudaFree(d);
    }
}

static void test_allgather_reduce_scatter(void)
{
    const size_t n = 37;
    int ranks[64];
    for (int pairs = 0; pairs < 2; pairs++) {
        const int nranks = group_of(pairs, ranks);
        const size_t total = n * (size_t)nranks;
        float *piece = host_values(n, rank, 4), *gathered = calloc(total, sizeof(float));
        float *d_piece = device_copy(piece, n), *d_gathered = device_copy(gathered, total);
        int rc = wp_comm_mpi.allgather(mpi_c, piece, gathered, n, ranks, nranks);
        rc |= wp_comm_nccl.allgather(nccl_c, d_piece, d_gathered, n, ranks, nranks);
        int in_order = 1;
        for (int k = 0; k < nranks; k++)
            for (size_t i = 0; i < n; i++)
                in_order &= gathered[(size_t)k * n + i] == value(ranks[k], i, 4);
        agree(rc == 0 && in_order && same_on_device(d_gathered, gathered, total),
              "%d ranks, %s: allgather of %zu floats each, in list order", size, group_name(pairs), n);

        float *whole = host_values(total, rank, 5), *mine = calloc(n, sizeof(float));
        float *d_whole = device_copy(whole, total), *d_mine = device_copy(mine, n);
        rc = wp_comm_mpi.reduce_scatter_sum(mpi_c, whole, mine, n, ranks, nranks);
        rc |= wp_comm_nccl.reduce_scatter_sum(nccl_c, d_whole, d_mine, n, ranks, nranks);
        agree(rc == 0 && same_on_device(d_mine, mine, n), "%d ranks, %s: reduce_scatter_sum, %zu floats each",
              size, group_name(pairs), n);
        free(piece);
        free(gathered);
        free(whole);
        free(mine);
        float *devices[] = {d_piece, d_gathered, d_whole, d_mine};
        for (size_t i = 0; i < sizeof devices / sizeof *devices; i++)
            cudaFree(devices[i]);
    }
}

/* Two gradient channels open, a sum started on each, waited for in reverse. */
static void test_channels(void)
{
    const size_t n = 517;
    int ranks[64];
    const int nranks = group_of(0, ranks);
    float *h[2], *d[2];
    struct wp_comm_request mr[2], nr[2];
    int rc = 0;
    for (int ch = 0; ch < 2; ch++) {
        rc |= wp_comm_mpi.open_channel(mpi_c, ranks, nranks, ch);
        rc |= wp_comm_nccl.open_channel(nccl_c, ranks, nranks, ch);
    }
    for (int ch = 0; ch < 2; ch++) {
        h[ch] = host_values(n, rank, 6 + ch);
        d[ch] = device_copy(h[ch], n);
        rc |= wp_comm_mpi.iallreduce_sum(mpi_c, h[ch], n, ranks, nranks, ch, &mr[ch]);
        rc |= wp_comm_nccl.iallreduce_sum(nccl_c, d[ch], n, ranks, nranks, ch, &nr[ch]);
    }
    for (int ch = 1; ch >= 0; ch--) {
        rc |= wp_comm_wait(&wp_comm_mpi, mpi_c, &mr[ch]);
        rc |= wp_comm_wait(&wp_comm_nccl, nccl_c, &nr[ch]);
    }
    agree(rc == 0 && same_on_device(d[0], h[0], n) && same_on_device(d[1], h[1], n),
          "%d ranks: iallreduce_sum on two channels' own streams", size);
    for (int ch = 0; ch < 2; ch++) {
        free(h[ch]);
        cudaFree(d[ch]);
    }
}

static void test_double_and_barrier(void)
{
    double m[3] = {rank, 0.5, -rank}, g[3] = {rank, 0.5, -rank};
    const int rc = wp_comm_mpi.allreduce_double(mpi_c, m, 3) | wp_comm_nccl.allreduce_double(nccl_c, g, 3);
    agree(rc == 0 && memcmp(m, g, sizeof m) == 0 && g[1] == 0.5 * size, "%d ranks: allreduce_double", size);
    wp_comm_nccl.barrier(nccl_c);
    agree(1, "%d ranks: barrier returns", size);
}

/* Every operation of calibrate's sweep at two sizes over all ranks (p2p
 * between the first two): each NCCL call passes the emulation's checks and
 * completes. */
static void test_calibrate_backend(void)
{
    const size_t max_bytes = (size_t)4096 * (size_t)size * 4;
    void *ctx = NULL;
    int opened = wp_calib_nccl.open(&ctx, MPI_COMM_WORLD, rank, size, max_bytes) == 0;
    agree(opened, "%d ranks: calibrate's NCCL backend opens a communicator and its buffers", size);
    if (!opened)
        return;
    for (int coll = 0; coll < WP_COLL_COUNT; coll++) {
        if (coll == WP_COLL_P2P && size < 2)
            continue;
        for (size_t bytes = 4096 * (size_t)size; bytes <= max_bytes; bytes *= 4)
            wp_calib_nccl.run(ctx, (enum wp_collective)coll, bytes);
        agree(1, "%d ranks: calibrate's NCCL %s at %zu and %zu bytes", size,
              wp_collective_name((enum wp_collective)coll), 4096 * (size_t)size, max_bytes);
    }
    wp_calib_nccl.close(ctx);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64) {
        printf("Bail out! at most 64 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    struct wp_err err = {{0}};
    if (wp_host_nccl_bootstrap(MPI_COMM_WORLD) != ncclSuccess || wp_comm_mpi.init(&mpi_c, &err) != 0 ||
        wp_comm_nccl.init(&nccl_c, &err) != 0) {
        printf("Bail out! backend initialisation: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    agree(wp_comm_nccl.rank(nccl_c) == rank && wp_comm_nccl.size(nccl_c) == size,
          "%d ranks: the NCCL backend's rank and size are MPI's", size);
    test_ring();
    test_allreduce();
    test_allgather_reduce_scatter();
    test_channels();
    test_double_and_barrier();
    test_calibrate_backend();
    wp_comm_nccl.destroy(nccl_c);
    wp_comm_mpi.destroy(mpi_c);
    const int rc = rank == 0 ? tap_done() : 0;
    MPI_Finalize();
    return rc;
}
