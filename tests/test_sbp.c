/* AutoDDL's SBP mesh search (plan/sbp*.c): ring-collective costs (Table 2),
 * tiny chains costed by hand term by term on one and two link levels, the
 * n x n matmul's per-device volume against its closed form and its
 * p^(2/3) scaling (below every 2D mesh), the searches against each other on
 * AutoDDL's 4-layer MLP, repeated layers sharing a mesh, the memory limit,
 * and the plan-file group read back through its schema. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/schema.h"
#include "topo/collective_cost.h"
#include "plan/sbp.h"
#include "plan/sbp_search.h"
#include "plan/sbp_cost.h"
#include "tap.h"

static struct wp_sbp_mesh mesh(int n0, int n1, int n2, int g0, int g1, int g2)
{
    return (struct wp_sbp_mesh){{n0, n1, n2}, {g0, g1, g2}};
}

static int same_mesh(const struct wp_sbp_mesh *a, const struct wp_sbp_mesh *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

static void collectives(void)
{
    struct wp_link_cost l = {2e-6, 1e-9};
    /* Table 2 with g = 4, n = 1000 bytes */
    is_near(wp_collective_s(WP_COLL_ALLREDUCE, 4, 1000, &l), 6 * 2e-6 + 2 * 0.75 * 1000 * 1e-9, 1e-12,
            "AllReduce: 2(g-1) alpha + 2 (g-1)/g n beta");
    is_near(wp_collective_s(WP_COLL_ALLGATHER, 4, 1000, &l), 3 * 2e-6 + 750e-9, 1e-12,
            "AllGather: (g-1) alpha + (g-1)/g n beta");
    is_near(wp_collective_s(WP_COLL_REDUCE_SCATTER, 4, 1000, &l), 3 * 2e-6 + 750e-9, 1e-12,
            "ReduceScatter costs as AllGather");
    is_near(wp_collective_s(WP_COLL_ALLTOALL, 4, 1000, &l), 3 * 2e-6 + 750e-9, 1e-12, "AlltoAll likewise");
    is_near(wp_collective_s(WP_COLL_P2P, 1, 1000, &l), 2e-6 + 1000e-9, 1e-12, "a permutation: alpha + n beta");
    is_near(wp_collective_s(WP_COLL_ALLREDUCE, 1, 1000, &l), 0, 0, "a group of one costs nothing");
    is_near(wp_collective_sent_bytes(WP_COLL_ALLREDUCE, 8, 800), 1400, 1e-12, "AllReduce sends 2 (g-1)/g n");
}

/* p = 2 on one node: a single 4 x 6 x 8 layer, its three meshes by hand. */
static void two_devices(void)
{
    struct wp_sbp_layer layer = {"fc", 6, 8};
    struct wp_sbp_problem pr;
    wp_sbp_problem_default(&pr);
    pr.layers = &layer;
    pr.nlayers = 1;
    pr.batch = 4;
    pr.devices = 2;
    pr.gpus_per_node = 2;
    pr.intra = (struct wp_link_cost){1e-6, 1e-9};
    pr.inter = (struct wp_link_cost){1, 1}; /* unused: one node */
    const double a = 1e-6, b = 1e-9;
    struct wp_sbp_mesh dp = mesh(1, 1, 1, 2, 1, 1), mp = mesh(1, 1, 1, 1, 2, 1), ps = mesh(1, 1, 1, 1, 1, 2);
    struct wp_sbp_result r;
    struct wp_err err = {""};
    /* (2,1,1), data parallel: the input arrives as it is needed; AllReduce of
     * the 6 x 8 weight gradient, 4 bytes each: 2 alpha + 192 beta */
    ok(wp_sbp_evaluate(&pr, &dp, &r, &err) == 0, "evaluate (2,1,1): %s", err.msg);
    is_near(r.comm_s, 2 * a + 192 * b, 1e-12, "(2,1,1): weight sync only, 2 alpha + 192 beta");
    is_near(r.layers[0].weight_sync_s, r.comm_s, 1e-12, "(2,1,1): all of it is weight sync");
    is_near(r.sent_bytes, 192, 1e-12, "(2,1,1): sends 2 (1/2) 192 bytes");
    is_near(r.layers[0].weight_sync_sent_bytes, 192, 1e-12, "(2,1,1): all of them the weight gradient's");
    is_near(r.memory_bytes, 16 * 48 + 4 * 24 / 2.0, 1e-12, "(2,1,1): 16 B x 48 weights + 4 B x 12 inputs");
    wp_sbp_result_destroy(&r);
    /* (1,2,1): the batch-split input is already (S0:p0 p1, S1:p2): no
     * alltoall; gather the whole 4 x 6 input (96 bytes) over 2, both ways */
    ok(wp_sbp_evaluate(&pr, &mp, &r, &err) == 0, "evaluate (1,2,1): %s", err.msg);
    is_near(r.layers[0].alltoall_s, 0, 0, "(1,2,1): the input needs no alltoall (gather from rows)");
    is_int(r.layers[0].gather_from, WP_SBP_ROWS, "(1,2,1): the gather starts from rows");
    is_near(r.comm_s, 2 * (a + 48 * b), 1e-12, "(1,2,1): AllGather + ReduceScatter of 96 bytes");
    is_near(r.memory_bytes, 16 * 24 + 4 * 24, 1e-12, "(1,2,1): half the weights, the whole input");
    wp_sbp_result_destroy(&r);
    /* (1,1,2): alltoall of the 48-byte block over 2, and the partial 4 x 8
     * output (128 bytes) reduce-scattered, both ways */
    ok(wp_sbp_evaluate(&pr, &ps, &r, &err) == 0, "evaluate (1,1,2): %s", err.msg);
    is_near(r.layers[0].alltoall_s, 2 * (a + 24 * b), 1e-12, "(1,1,2): alltoall 2 (alpha + 24 beta)");
    is_near(r.layers[0].reduce_s, 2 * (a + 64 * b), 1e-12, "(1,1,2): reduce 2 (alpha + 64 beta)");
    is_near(r.sent_bytes, 48 + 128, 1e-12, "(1,1,2): sends 48 + 128 bytes");
    is_near(r.layers[0].weight_sync_sent_bytes, 0, 0, "(1,1,2): no weight gradient to sum");
    wp_sbp_result_destroy(&r);

    struct wp_sbp_search_opts o;
    wp_sbp_search_default(&o);
    o.kind = WP_SBP_EXHAUSTIVE;
    ok(wp_sbp_plan(&pr, &o, &r, &err) == 0, "exhaustive on p = 2: %s", err.msg);
    ok(same_mesh(&r.layers[0].mesh, &mp), "the cheapest is (1,2,1): 2 alpha + 96 beta");
    is_near(r.space, 3, 0, "three meshes of 2 devices");
    wp_sbp_result_destroy(&r);

    /* a free input: (1,2,1) gathers nothing either */
    pr.input = WP_SBP_INPUT_FREE;
    ok(wp_sbp_evaluate(&pr, &mp, &r, &err) == 0 && r.comm_s == 0, "free input: (1,2,1) communicates nothing");
    wp_sbp_result_destroy(&r);
}

/* p = 4 as 2 nodes x 2 GPUs: two layers 16 -> 8 -> 4, batch 8, 2-byte
 * elements, every term by hand on its link level. */
static void two_nodes(void)
{
    struct wp_sbp_layer layers[2] = {{"a", 16, 8}, {"b", 8, 4}};
    struct wp_sbp_problem pr;
    wp_sbp_problem_default(&pr);
    pr.layers = layers;
    pr.nlayers = 2;
    pr.batch = 8;
    pr.devices = 4;
    pr.gpus_per_node = 2;
    pr.element_bytes = 2;
    const double ai = 1e-6, bi = 1e-10, ax = 1e-5, bx = 1e-9;
    pr.intra = (struct wp_link_cost){ai, bi};
    pr.inter = (struct wp_link_cost){ax, bx};
    /* a: p = (2,1,2), axis 0 within a node, axis 2 across nodes;
     * b: p = (2,2,1), axis 0 across nodes, axis 1 within */
    struct wp_sbp_mesh m[2] = {mesh(1, 1, 2, 2, 1, 1), mesh(2, 1, 1, 1, 2, 1)};
    struct wp_sbp_result r;
    struct wp_err err = {""};
    ok(wp_sbp_evaluate(&pr, m, &r, &err) == 0, "evaluate on 2 nodes x 2 GPUs: %s", err.msg);
    /* a: input (S0:(2,2)) to (S0:(1,2), S1:(2,1)): rows split 4 -> 2 across
     * nodes, AlltoAll over 2 of 2*8*16/4 = 64 bytes */
    is_near(r.layers[0].alltoall_s, 2 * (ax + 32 * bx), 1e-12, "a: alltoall across nodes, 2 (alpha' + 32 beta')");
    is_near(r.layers[0].gather_s, 0, 0, "a: p1 = 1, nothing to gather");
    /* partial 8/2 x 8 output = 64 bytes reduce-scattered over axis 2 (across nodes) */
    is_near(r.layers[0].reduce_s, 2 * (ax + 32 * bx), 1e-12, "a: reduce across nodes, 2 (alpha' + 32 beta')");
    /* 16 x 8 / 2 weights = 128 bytes allreduced over axis 0 (within a node) */
    is_near(r.layers[0].weight_sync_s, 2 * ai + 128 * bi, 1e-12, "a: weight sync in the node, 2 alpha + 128 beta");
    /* a reduced to rows, (S0:p0 p2) = 2 nodes x 2 GPUs, is b's (S0:p0 p1): the same split */
    is_near(r.layers[1].alltoall_s, 0, 0, "b: a reduced to rows is what b gathers from: no alltoall");
    is_int(r.layers[0].reduce_to, WP_SBP_ROWS, "a reduces to rows");
    is_int(r.layers[1].gather_from, WP_SBP_ROWS, "b gathers from rows");
    /* gather 8/2 x 8 = 64 bytes over axis 1 (within a node) */
    is_near(r.layers[1].gather_s, 2 * (ai + 32 * bi), 1e-12, "b: gather in the node, 2 (alpha + 32 beta)");
    is_near(r.layers[1].reduce_s, 0, 0, "b: p2 = 1, nothing to reduce");
    /* 8 x 4 / 2 weights = 32 bytes allreduced over axis 0 (across nodes) */
    is_near(r.layers[1].weight_sync_s, 2 * ax + 32 * bx, 1e-12, "b: weight sync across nodes, 2 alpha' + 32 beta'");
    double total = 4 * (ax + 32 * bx) + 2 * ai + 128 * bi + 2 * (ai + 32 * bi) + 2 * ax + 32 * bx;
    is_near(r.comm_s, total, 1e-12, "total: the sum of the terms above");
    is_near(r.sent_bytes, 64 + 64 + 128 + 64 + 32, 1e-12, "bytes sent per device");
    wp_sbp_result_destroy(&r);

    /* the four ways from a's output to b's input: reduce to cols (S0:(1,2))
     * or rows (S0:(2,2)); b gathering from cols (S0:(2,1)) or rows (S0:(2,2)) */
    int nodes, gpus;
    ok(wp_sbp_check_problem(&pr, &nodes, &gpus, &err) == 0 && nodes == 2 && gpus == 2, "2 nodes x 2 GPUs");
    /* b on p = (2,1,2) as nodes (1,1,2) GPUs (2,1,1) gathers from (S0:(1,2))
     * either way; from a = (2,2,1) on nodes (2,1,1) GPUs (1,2,1), reduced
     * (S0:(2,1)): the same 2 row blocks on other nodes, a permutation */
    struct wp_sbp_mesh from = mesh(2, 1, 1, 1, 2, 1), to = mesh(1, 1, 2, 2, 1, 1);
    struct wp_sbp_layer square[2] = {{"c", 8, 8}, {"d", 8, 8}};
    pr.layers = square;
    double sent = 0;
    double s = wp_sbp_alltoall_s(&pr, nodes, gpus, &from, 1, &to, NULL, NULL, &sent);
    is_near(s, 2 * (ax + 32 * bx), 1e-12, "same row split on other nodes: a permutation, 2 (alpha' + n beta')");
    is_near(sent, 64, 1e-12, "a permutation sends the whole 32-byte block both ways");
    /* from the batch-split input (S0:(2,2)) to p = (2,1,2) on nodes (2,1,1),
     * which gathers from (S0:(2,1)) either way: within the nodes */
    struct wp_sbp_mesh node_rows = mesh(2, 1, 1, 1, 1, 2);
    s = wp_sbp_alltoall_s(&pr, nodes, gpus, NULL, 0, &node_rows, NULL, NULL, NULL);
    is_near(s, 2 * (ai + 16 * bi), 1e-12, "rows 4 -> 2 on the same nodes: AlltoAll over 2 within the node");
}

/* (a) one n x n x n matmul: the chosen mesh's volume, its closed form and its scaling. */
#define NP 7
static void cube_scaling(void)
{
    const int n = 3 * 16384; /* splits by every mesh axis of the p below */
    const int ps[NP] = {8, 24, 64, 96, 512, 1536, 4096};
    struct wp_sbp_layer layer = {"square", n, n};
    struct wp_sbp_problem pr;
    wp_sbp_problem_default(&pr);
    pr.layers = &layer;
    pr.nlayers = 1;
    pr.batch = n;
    pr.inter = (struct wp_link_cost){0, 1e-10}; /* one device per node: every axis on the network */
    struct wp_sbp_search_opts o;
    wp_sbp_search_default(&o);
    o.kind = WP_SBP_EXHAUSTIVE;
    double logp[NP], log3d[NP], log2d[NP];
    int below_2d = 1, closed = 1;
    for (int i = 0; i < NP; i++) {
        int p = ps[i];
        pr.devices = p;
        struct wp_sbp_result r;
        struct wp_err err = {""};
        if (wp_sbp_plan(&pr, &o, &r, &err)) {
            ok(0, "p = %d: %s", p, err.msg);
            return;
        }
        const struct wp_sbp_mesh *m = &r.layers[0].mesh;
        double p0 = wp_sbp_mesh_axis(m, 0), p1 = wp_sbp_mesh_axis(m, 1), p2 = wp_sbp_mesh_axis(m, 2);
        double want = 2.0 * 4 * n * (double)n / p * (p0 + p1 + p2 - 3 + (p2 - 1) / p2);
        if (fabs(r.sent_bytes - want) > 1e-9 * want)
            closed = 0;
        /* the best mesh with one axis 1, costed by the library */
        double best_2d = INFINITY;
        for (int a = 1; a <= p; a++) {
            if (p % a)
                continue;
            struct wp_sbp_mesh flat[3] = {mesh(a, p / a, 1, 1, 1, 1), mesh(a, 1, p / a, 1, 1, 1),
                                          mesh(1, a, p / a, 1, 1, 1)};
            for (int k = 0; k < 3; k++) {
                struct wp_sbp_result r2;
                if (wp_sbp_evaluate(&pr, &flat[k], &r2, &err) == 0 && r2.sent_bytes < best_2d)
                    best_2d = r2.sent_bytes;
                wp_sbp_result_destroy(&r2);
            }
        }
        printf("# p = %4d: mesh (%2.0f,%2.0f,%2.0f), %.4g bytes per device; best 2D %.4g (ratio %.3f)\n", p, p0,
               p1, p2, r.sent_bytes, best_2d, r.sent_bytes / best_2d);
        if (p >= 64 && !(r.sent_bytes < best_2d))
            below_2d = 0;
        logp[i] = log(p);
        log3d[i] = log(r.sent_bytes);
        log2d[i] = log(best_2d);
        wp_sbp_result_destroy(&r);
    }
    ok(closed, "every chosen mesh sends 2 e n^2/p (p0 + p1 + p2 - 3 + (p2-1)/p2) bytes");
    ok(below_2d, "3D below the best 2D mesh for every p >= 64");
    /* least-squares slopes of log(volume) over log(p) */
    double slope[2][2];
    for (int which = 0; which < 2; which++)
        for (int from = 0; from < 2; from++) {
            const double *y = which ? log2d : log3d;
            int first = from ? 2 : 0; /* from p = 64, or from p = 8 */
            double mx = 0, my = 0, sxy = 0, sxx = 0;
            int cnt = NP - first;
            for (int i = first; i < NP; i++) {
                mx += logp[i] / cnt;
                my += y[i] / cnt;
            }
            for (int i = first; i < NP; i++) {
                sxy += (logp[i] - mx) * (y[i] - my);
                sxx += (logp[i] - mx) * (logp[i] - mx);
            }
            slope[which][from] = -sxy / sxx;
        }
    ok(slope[0][1] >= 0.60 && slope[0][1] <= 0.73,
       "volume ~ n^2/p^%.3f from p = 64 to 4096 (2/3 expected; within 0.60-0.73)", slope[0][1]);
    /* with p = 8 and 24 the rings' (g-1)/g on groups of 2-4 pull it down */
    ok(slope[0][0] >= 0.55 && slope[0][0] < slope[0][1],
       "from p = 8: exponent %.3f, lower while groups are small", slope[0][0]);
    ok(slope[1][1] >= 0.40 && slope[1][1] <= 0.52, "the best 2D mesh: n^2/p^%.3f (1/2 expected)", slope[1][1]);
}

/* AutoDDL 4.6's MLP: widths 32768, 16384, 4096, 2048, 512. */
static struct wp_sbp_layer mlp_layers[4] = {
    {"fc0", 32768, 16384}, {"fc1", 16384, 4096}, {"fc2", 4096, 2048}, {"fc3", 2048, 512}};

static void mlp_problem(struct wp_sbp_problem *pr, int devices, int gpus_per_node)
{
    wp_sbp_problem_default(pr);
    pr->layers = mlp_layers;
    pr->nlayers = 4;
    pr->batch = 8192;
    pr->devices = devices;
    pr->gpus_per_node = gpus_per_node;
    pr->element_bytes = 2;
    pr->intra = (struct wp_link_cost){3e-6, 1 / 150e9};  /* NVLink-class */
    pr->inter = (struct wp_link_cost){15e-6, 1 / 12.5e9}; /* 100 Gbit/s */
}

static int same_plan(const struct wp_sbp_result *a, const struct wp_sbp_result *b)
{
    for (int l = 0; l < a->nlayers; l++)
        if (!same_mesh(&a->layers[l].mesh, &b->layers[l].mesh))
            return 0;
    return 1;
}

/* (b), (c): coordinate descent and Metropolis-Hastings reach the exhaustive optimum. */
static void mlp_searches(void)
{
    const int cases[][2] = {{8, 8}, {32, 8}, {64, 8}, {128, 1}, {256, 4}, {1024, 8}, {4096, 1}, {4096, 8}};
    int start_above = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wp_sbp_problem pr;
        mlp_problem(&pr, cases[i][0], cases[i][1]);
        struct wp_sbp_search_opts o;
        wp_sbp_search_default(&o);
        struct wp_sbp_result ex, cd, mh, start;
        struct wp_err err = {""};
        o.kind = WP_SBP_EXHAUSTIVE;
        int rc = wp_sbp_plan(&pr, &o, &ex, &err);
        ok(rc == 0, "p = %d, G = %d: exhaustive %s", pr.devices, pr.gpus_per_node, err.msg);
        if (rc)
            continue;
        o.kind = WP_SBP_COORDINATE_DESCENT;
        ok(wp_sbp_plan(&pr, &o, &cd, &err) == 0, "cd: %s", err.msg);
        o.kind = WP_SBP_METROPOLIS;
        ok(wp_sbp_plan(&pr, &o, &mh, &err) == 0, "mh: %s", err.msg);
        o.iterations = 0; /* the start both searches share: each class's cheapest own cost */
        ok(wp_sbp_plan(&pr, &o, &start, &err) == 0, "the start: %s", err.msg);
        start_above += start.comm_s > ex.comm_s * (1 + 1e-9);
        printf("# p = %d, G = %d: %.4g strategies; optimum %.6g s (exhaustive costed %.4g), start %.6g s, "
               "cd %.6g s, mh %.6g s\n",
               pr.devices, pr.gpus_per_node, ex.space, ex.comm_s, ex.costed, start.comm_s, cd.comm_s, mh.comm_s);
        for (int l = 0; l < 4; l++) {
            const struct wp_sbp_mesh *m = &ex.layers[l].mesh;
            printf("#   %s: (%d,%d,%d) nodes (%d,%d,%d)\n", pr.layers[l].name, wp_sbp_mesh_axis(m, 0),
                   wp_sbp_mesh_axis(m, 1), wp_sbp_mesh_axis(m, 2), m->nodes[0], m->nodes[1], m->nodes[2]);
        }
        is_near(cd.comm_s, ex.comm_s, 1e-9, "p = %d, G = %d: coordinate descent finds the optimum %.6g s",
                pr.devices, pr.gpus_per_node, ex.comm_s);
        is_near(mh.comm_s, ex.comm_s, 1e-9, "p = %d, G = %d: Metropolis-Hastings finds it too", pr.devices,
                pr.gpus_per_node);
        ok(cd.costed < ex.space, "cd costed %.4g single-layer changes, fewer than the %.4g strategies", cd.costed,
           ex.space);
        wp_sbp_result_destroy(&cd);
        wp_sbp_result_destroy(&mh);
        wp_sbp_result_destroy(&ex);
        wp_sbp_result_destroy(&start);
    }
    ok(start_above >= 3, "in %d of these the start is not the optimum: the searches move", start_above);
}

/* Every mesh of `devices` as nodes x gpus that fits layer l of pr, into out. */
static int all_meshes(const struct wp_sbp_problem *pr, int l, int nodes, int gpus, struct wp_sbp_mesh *out, int max)
{
    int n = 0;
    for (int n0 = 1; n0 <= nodes; n0++)
        for (int n1 = 1; n1 <= nodes; n1++)
            for (int g0 = 1; g0 <= gpus; g0++)
                for (int g1 = 1; g1 <= gpus; g1++) {
                    if (nodes % (n0 * n1) || gpus % (g0 * g1))
                        continue;
                    struct wp_sbp_mesh m = mesh(n0, n1, nodes / n0 / n1, g0, g1, gpus / g0 / g1);
                    int p0 = wp_sbp_mesh_axis(&m, 0), p1 = wp_sbp_mesh_axis(&m, 1), p2 = wp_sbp_mesh_axis(&m, 2);
                    if (n < max && pr->batch % p0 == 0 && pr->layers[l].n_out % p1 == 0 &&
                        pr->layers[l].n_in % p2 == 0)
                        out[n++] = m;
                }
    return n;
}

/* The exhaustive search's bounds lose nothing: against every strategy of
 * 8 devices on 4 nodes x 2 GPUs costed one by one, with and without a
 * memory limit. */
static void exhaustive_is_exact(void)
{
    struct wp_sbp_problem pr;
    mlp_problem(&pr, 8, 2);
    pr.batch = 65536;
    struct wp_sbp_mesh m[4][64];
    int count[4];
    for (int l = 0; l < 4; l++)
        count[l] = all_meshes(&pr, l, 4, 2, m[l], 64);
    is_int(count[0] * count[1] * count[2] * count[3], 18 * 18 * 18 * 18, "18 meshes a layer: 6 node x 3 GPU splits");
    double least = 0;
    struct wp_err err0 = {""};
    ok(wp_sbp_min_memory_bytes(&pr, &least, &err0) == 0, "least memory: %s", err0.msg);
    for (int limited = 0; limited < 2; limited++) {
        pr.memory_limit_bytes = limited ? 1.5 * least : 0;
        double best = INFINITY;
        struct wp_sbp_mesh chain[4];
        for (int i = 0; i < count[0] * count[1] * count[2] * count[3]; i++) {
            int k = i;
            for (int l = 0; l < 4; l++) {
                chain[l] = m[l][k % count[l]];
                k /= count[l];
            }
            struct wp_sbp_result r;
            struct wp_err err;
            if (wp_sbp_evaluate(&pr, chain, &r, &err) == 0 &&
                (!limited || r.memory_bytes <= pr.memory_limit_bytes) && r.comm_s < best)
                best = r.comm_s;
            wp_sbp_result_destroy(&r);
        }
        struct wp_sbp_search_opts o;
        wp_sbp_search_default(&o);
        o.kind = WP_SBP_EXHAUSTIVE;
        struct wp_sbp_result ex;
        struct wp_err err = {""};
        ok(wp_sbp_plan(&pr, &o, &ex, &err) == 0 && isfinite(best), "exhaustive: %s", err.msg);
        is_near(ex.comm_s, best, 1e-12, "%s: exhaustive finds the least of all 104,976 strategies, %.6g s",
                limited ? "limit 1.5 x the least memory" : "no memory limit", best);
        if (limited)
            ok(ex.memory_bytes <= pr.memory_limit_bytes, "within the limit");
        wp_sbp_result_destroy(&ex);
    }
}

/* Deterministic: the same seed, the same plan. */
static void seeded(void)
{
    struct wp_sbp_problem pr;
    mlp_problem(&pr, 4096, 8);
    struct wp_sbp_search_opts o;
    wp_sbp_search_default(&o);
    o.kind = WP_SBP_METROPOLIS;
    o.seed = 7;
    o.iterations = 2000;
    struct wp_sbp_result a, b;
    struct wp_err err = {""};
    ok(wp_sbp_plan(&pr, &o, &a, &err) == 0 && wp_sbp_plan(&pr, &o, &b, &err) == 0, "mh twice: %s", err.msg);
    ok(same_plan(&a, &b) && a.comm_s == b.comm_s, "the same seed gives the same chain's result");
    wp_sbp_result_destroy(&a);
    wp_sbp_result_destroy(&b);
    o.kind = WP_SBP_EXHAUSTIVE;
    o.exhaustive_max = 1000;
    ok(wp_sbp_plan(&pr, &o, &a, &err) == -1, "exhaustive stops at its limit (550^4 strategies, 1000 costed)");
    has_substr(err.msg, "use coordinate descent (cd) or Metropolis-Hastings (mh)", "and says what to use");
}

/* Repeated layers share a mesh: a transformer-like 4096 -> 16384 -> 4096 x 3. */
static void repeated(void)
{
    struct wp_sbp_layer chain[6];
    for (int i = 0; i < 6; i++) {
        snprintf(chain[i].name, sizeof chain[i].name, "%s%d", i % 2 ? "down" : "up", i / 2);
        chain[i].n_in = i % 2 ? 16384 : 4096;
        chain[i].n_out = i % 2 ? 4096 : 16384;
    }
    struct wp_sbp_problem pr;
    mlp_problem(&pr, 64, 8);
    pr.layers = chain;
    pr.nlayers = 6;
    struct wp_sbp_search_opts o;
    wp_sbp_search_default(&o);
    o.kind = WP_SBP_EXHAUSTIVE;
    struct wp_sbp_result ex, cd;
    struct wp_err err = {""};
    ok(wp_sbp_plan(&pr, &o, &ex, &err) == 0, "six layers of two shapes: %s", err.msg);
    is_int(ex.nclasses, 2, "two classes");
    is_near(ex.space, 100.0 * 100.0, 0, "100 meshes per class (10 node x 10 GPU factorisations), squared");
    int shared = 1;
    for (int l = 2; l < 6; l++)
        shared &= same_mesh(&ex.layers[l].mesh, &ex.layers[l % 2].mesh) && ex.layers[l].layer_class == l % 2;
    ok(shared, "every up layer has one mesh, every down layer another");
    o.kind = WP_SBP_COORDINATE_DESCENT;
    ok(wp_sbp_plan(&pr, &o, &cd, &err) == 0, "cd: %s", err.msg);
    is_near(cd.comm_s, ex.comm_s, 1e-9, "coordinate descent agrees");
    /* the total is what wp_sbp_evaluate gives for those meshes: the pair
     * up -> down is counted three times, down -> up twice */
    struct wp_sbp_mesh m[6];
    for (int l = 0; l < 6; l++)
        m[l] = ex.layers[l].mesh;
    struct wp_sbp_result ev;
    ok(wp_sbp_evaluate(&pr, m, &ev, &err) == 0, "evaluate: %s", err.msg);
    is_near(ev.comm_s, ex.comm_s, 1e-12, "the search's total is the evaluated chain's");
    wp_sbp_result_destroy(&ev);
    wp_sbp_result_destroy(&cd);
    wp_sbp_result_destroy(&ex);
}

static int max_replicas(const struct wp_sbp_result *r)
{
    int most = 0;
    for (int l = 0; l < r->nlayers; l++)
        if (wp_sbp_mesh_axis(&r->layers[l].mesh, 0) > most)
            most = wp_sbp_mesh_axis(&r->layers[l].mesh, 0);
    return most;
}

/* Weight copies on average, weighted by the layers' weights. */
static double mean_replicas(const struct wp_sbp_problem *pr, const struct wp_sbp_result *r)
{
    double copies = 0, weights = 0;
    for (int l = 0; l < r->nlayers; l++) {
        double w = (double)pr->layers[l].n_in * pr->layers[l].n_out;
        copies += w * wp_sbp_mesh_axis(&r->layers[l].mesh, 0);
        weights += w;
    }
    return copies / weights;
}

static void print_meshes(const char *what, const struct wp_sbp_problem *pr, const struct wp_sbp_result *r)
{
    printf("# %s: %.6g s, %.4g bytes per device:", what, r->comm_s, r->memory_bytes);
    for (int l = 0; l < r->nlayers; l++) {
        const struct wp_sbp_mesh *m = &r->layers[l].mesh;
        printf(" %s (%d,%d,%d)", pr->layers[l].name, wp_sbp_mesh_axis(m, 0), wp_sbp_mesh_axis(m, 1),
               wp_sbp_mesh_axis(m, 2));
    }
    printf("\n");
}

/* (d) the memory limit bounds replication; an impossible one says what fits. */
static void memory_limit(void)
{
    struct wp_sbp_problem pr;
    mlp_problem(&pr, 64, 8);
    pr.batch = 65536; /* a large batch: replicating weights saves moving activations */
    struct wp_sbp_search_opts o;
    wp_sbp_search_default(&o);
    o.kind = WP_SBP_EXHAUSTIVE;
    struct wp_sbp_result free_r, tight, cd;
    struct wp_err err = {""};
    ok(wp_sbp_plan(&pr, &o, &free_r, &err) == 0, "no limit: %s", err.msg);
    double least;
    ok(wp_sbp_min_memory_bytes(&pr, &least, &err) == 0, "least memory: %s", err.msg);
    /* weights 32768*16384 + 16384*4096 + 4096*2048 + 2048*512 = 613,416,960
     * at 16 B over 64 devices, at least; at most what mesh (1,1,64) needs:
     * those and the inputs 4 B x 65536 x (32768 + 16384 + 4096 + 2048) / 64 */
    double weights = 613416960.0 * 16 / 64, inputs = 4 * 65536.0 * 55296 / 64;
    ok(least >= weights && least <= weights + inputs, "least memory %.0f: every weight once (%.0f) and inputs",
       least, weights);
    print_meshes("no limit", &pr, &free_r);
    pr.memory_limit_bytes = 2 * least;
    ok(free_r.memory_bytes > pr.memory_limit_bytes, "unlimited, the plan needs %.4g bytes, over twice the least",
       free_r.memory_bytes);
    ok(wp_sbp_plan(&pr, &o, &tight, &err) == 0, "limit of twice the least: %s", err.msg);
    ok(tight.memory_bytes <= pr.memory_limit_bytes, "the plan fits: %.4g bytes", tight.memory_bytes);
    print_meshes("twice the least", &pr, &tight);
    ok(mean_replicas(&pr, &tight) < mean_replicas(&pr, &free_r),
       "weights replicated %.3g times on average (weighted by size), from %.3g", mean_replicas(&pr, &tight),
       mean_replicas(&pr, &free_r));
    ok(wp_sbp_mesh_axis(&tight.layers[0].mesh, 0) < wp_sbp_mesh_axis(&free_r.layers[0].mesh, 0),
       "the largest layer's p0 bounded: %d from %d", wp_sbp_mesh_axis(&tight.layers[0].mesh, 0),
       wp_sbp_mesh_axis(&free_r.layers[0].mesh, 0));
    ok(tight.comm_s >= free_r.comm_s, "and it communicates no less (%.6g s against %.6g s)", tight.comm_s,
       free_r.comm_s);
    o.kind = WP_SBP_COORDINATE_DESCENT;
    ok(wp_sbp_plan(&pr, &o, &cd, &err) == 0 && cd.memory_bytes <= pr.memory_limit_bytes, "cd within the limit");
    is_near(cd.comm_s, tight.comm_s, 1e-9, "cd finds the limited optimum");
    wp_sbp_result_destroy(&cd);
    o.kind = WP_SBP_METROPOLIS;
    ok(wp_sbp_plan(&pr, &o, &cd, &err) == 0 && cd.memory_bytes <= pr.memory_limit_bytes, "mh within the limit");
    wp_sbp_result_destroy(&cd);
    wp_sbp_result_destroy(&tight);
    wp_sbp_result_destroy(&free_r);

    pr.memory_limit_bytes = least;
    o.kind = WP_SBP_EXHAUSTIVE;
    ok(wp_sbp_plan(&pr, &o, &tight, &err) == 0, "a limit of exactly the least fits: %s", err.msg);
    is_int(max_replicas(&tight), 1, "with no weight replicated");
    wp_sbp_result_destroy(&tight);
    pr.memory_limit_bytes = least * 0.99;
    ok(wp_sbp_plan(&pr, &o, &tight, &err) == -1, "1%% below the least: refused");
    char want[64];
    snprintf(want, sizeof want, "(%.0f bytes", least);
    has_substr(err.msg, "the smallest memory that fits is", "the message gives the smallest memory that fits");
    has_substr(err.msg, want, "exactly");
}

static void bad_input(void)
{
    struct wp_sbp_layer broken[2] = {{"x", 8, 16}, {"y", 8, 4}};
    struct wp_sbp_problem pr;
    wp_sbp_problem_default(&pr);
    pr.layers = broken;
    pr.nlayers = 2;
    pr.devices = 4;
    struct wp_sbp_search_opts o;
    wp_sbp_search_default(&o);
    struct wp_sbp_result r;
    struct wp_err err = {""};
    ok(wp_sbp_plan(&pr, &o, &r, &err) == -1, "a chain whose widths do not follow is refused");
    has_substr(err.msg, "layer y: n_in 8 is not the previous layer's n_out 16", "naming the layer");
    broken[1].n_in = 16;
    pr.devices = 12;
    pr.gpus_per_node = 8;
    ok(wp_sbp_plan(&pr, &o, &r, &err) == -1, "12 devices are not nodes of 8");
    has_substr(err.msg, "12 devices are not whole nodes of 8 GPUs", "so it says");
    pr.devices = 7;
    pr.gpus_per_node = 1;
    ok(wp_sbp_plan(&pr, &o, &r, &err) == -1, "7 devices cannot split batch 1, 8 or 16");
    has_substr(err.msg, "no mesh of 7 devices", "so it says");
    pr.devices = 4;
    struct wp_sbp_mesh m[2] = {mesh(1, 1, 1, 4, 1, 1), mesh(2, 2, 1, 1, 1, 1)};
    ok(wp_sbp_evaluate(&pr, m, &r, &err) == -1, "evaluate: the mesh of 4 GPUs on one node of 1 is refused");
    has_substr(err.msg, "layer x: mesh nodes [1, 1, 1] x GPUs [4, 1, 1] is not 4 nodes x 1 GPUs", "naming it");
}

/* The plan file's group parses and passes its schema, values kept. */
static void config_group(void)
{
    struct wp_sbp_problem pr;
    mlp_problem(&pr, 64, 8);
    struct wp_sbp_search_opts o;
    wp_sbp_search_default(&o);
    struct wp_sbp_result r;
    struct wp_err err = {""};
    ok(wp_sbp_plan(&pr, &o, &r, &err) == 0, "cd on the MLP: %s", err.msg);
    char *text = wp_sbp_config_text(&pr, &r);
    ok(text != NULL, "the group as text");
    printf("# %.*s\n", 120, text ? text : "");
    const struct wp_cfg_key root[] = {WP_KEY_GROUP("sbp", WP_CFG_GROUP, 1, wp_sbp_config_keys), WP_KEY_END};
    config_t cfg;
    config_init(&cfg);
    ok(text && wp_cfg_read_text(&cfg, text, "sbp.cfg", root, &err) == 0, "it reads back through its schema: %s",
       err.msg);
    const config_setting_t *sbp = config_lookup(&cfg, "sbp");
    const config_setting_t *layers = sbp ? config_setting_get_member(sbp, "layers") : NULL;
    is_int(layers ? config_setting_length(layers) : -1, 4, "four layers");
    is_str(wp_cfg_string(sbp, "search", ""), "cd", "search = \"cd\"");
    is_near(wp_cfg_float(sbp, "comm_s", 0), r.comm_s, 1e-6, "comm_s kept");
    int meshes_kept = layers != NULL;
    for (int l = 0; layers && l < 4; l++) {
        const config_setting_t *g = config_setting_get_elem(layers, (unsigned)l);
        const config_setting_t *mesh_a = config_setting_get_member(g, "mesh");
        for (int k = 0; k < 3; k++)
            meshes_kept &= (int)wp_cfg_number_elem(mesh_a, k) == wp_sbp_mesh_axis(&r.layers[l].mesh, k);
        meshes_kept &= strcmp(wp_cfg_string(g, "name", ""), mlp_layers[l].name) == 0;
    }
    ok(meshes_kept, "every layer's name and mesh kept");
    config_destroy(&cfg);
    free(text);
    wp_sbp_result_destroy(&r);
}

int main(void)
{
    collectives();
    two_devices();
    two_nodes();
    cube_scaling();
    mlp_searches();
    exhaustive_is_exact();
    seeded();
    repeated();
    memory_limit();
    bad_input();
    config_group();
    return tap_done();
}
