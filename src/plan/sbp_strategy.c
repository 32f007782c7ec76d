/* Named and written-out SBP strategies as meshes per layer (see
 * sbp_strategy.h): Megatron's 1D split, data parallelism, P0xP1xP2@N0xN1xN2. */
#include "plan/sbp_strategy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/sbp_cost.h"

void wp_sbp_mesh_format(const struct wp_sbp_mesh *m, char *buf, size_t size)
{
    snprintf(buf, size, "%dx%dx%d@%dx%dx%d", wp_sbp_mesh_axis(m, 0), wp_sbp_mesh_axis(m, 1), wp_sbp_mesh_axis(m, 2),
             m->nodes[0], m->nodes[1], m->nodes[2]);
}

/* Every axis of a on one axis: the N nodes and G GPUs all on axis k. */
static struct wp_sbp_mesh one_axis(int k, int nodes, int gpus)
{
    struct wp_sbp_mesh m = {{1, 1, 1}, {1, 1, 1}};
    m.nodes[k] = nodes;
    m.gpus[k] = gpus;
    return m;
}

/* "AxBxC" into v; 0 on success. *end is past the text read. */
static int parse_triple(const char *text, int v[3], const char **end)
{
    const char *p = text;
    for (int k = 0; k < 3; k++) {
        char *e;
        long x = strtol(p, &e, 10);
        if (e == p || x < 1 || x > 1 << 24)
            return -1;
        v[k] = (int)x;
        p = e;
        if (k < 2) {
            if (*p != 'x')
                return -1;
            p++;
        }
    }
    *end = p;
    return 0;
}

/* One mesh of the list: its P, and the nodes per axis when @ gives them,
 * else the only split of N nodes x G GPUs it has. */
static int parse_mesh(const char *text, size_t len, int nodes, int gpus, struct wp_sbp_mesh *m, struct wp_err *err)
{
    char buf[96];
    if (len >= sizeof buf)
        return wp_errorf(err, "mesh '%.*s...' is too long", 40, text);
    memcpy(buf, text, len);
    buf[len] = '\0';
    int p[3], n[3];
    const char *end;
    int ok = parse_triple(buf, p, &end) == 0;
    int have_nodes = ok && *end == '@';
    if (have_nodes)
        ok = parse_triple(end + 1, n, &end) == 0;
    if (!ok || *end)
        return wp_errorf(err, "mesh '%s' must be P0xP1xP2 or P0xP1xP2@N0xN1xN2 (e.g. 2x2x2@2x1x1)", buf);
    if ((long long)p[0] * p[1] * p[2] != (long long)nodes * gpus)
        return wp_errorf(err, "mesh '%s' has %lld devices, not %d (%d nodes x %d GPUs)", buf,
                         (long long)p[0] * p[1] * p[2], nodes * gpus, nodes, gpus);
    int found = 0;
    struct wp_sbp_mesh first = {{0}, {0}}, second = {{0}, {0}};
    for (int n0 = 1; n0 <= nodes; n0++)
        for (int n1 = 1; n0 * n1 <= nodes; n1++) {
            if (nodes % (n0 * n1))
                continue;
            int cand[3] = {n0, n1, nodes / (n0 * n1)};
            int fits = 1;
            for (int k = 0; k < 3 && fits; k++)
                fits = p[k] % cand[k] == 0 && (!have_nodes || cand[k] == n[k]);
            if (!fits)
                continue;
            struct wp_sbp_mesh c;
            for (int k = 0; k < 3; k++) {
                c.nodes[k] = cand[k];
                c.gpus[k] = p[k] / cand[k];
            }
            if (c.gpus[0] * c.gpus[1] * c.gpus[2] != gpus)
                continue;
            if (found++ == 0)
                first = c;
            else if (found == 2)
                second = c;
        }
    if (found == 0)
        return wp_errorf(err, "mesh '%s' does not split as %d nodes x %d GPUs (each axis Pk = Nk x Gk)", buf, nodes,
                         gpus);
    if (found > 1) {
        char a[64], b[64];
        wp_sbp_mesh_format(&first, a, sizeof a);
        wp_sbp_mesh_format(&second, b, sizeof b);
        return wp_errorf(err, "mesh '%s' splits over %d nodes x %d GPUs in %d ways: give the nodes per axis (%s, %s, ...)",
                         buf, nodes, gpus, found, a, b);
    }
    *m = first;
    return 0;
}

int wp_sbp_strategy_meshes(const struct wp_sbp_problem *pr, const char *spec, struct wp_sbp_mesh *meshes,
                           struct wp_err *err)
{
    int nodes, gpus;
    if (wp_sbp_check_problem(pr, &nodes, &gpus, err))
        return -1;
    if (strcmp(spec, "megatron") == 0) {
        for (int l = 0; l < pr->nlayers; l++)
            meshes[l] = one_axis(l % 2 == 0 ? 1 : 2, nodes, gpus);
        return 0;
    }
    if (strcmp(spec, "dp") == 0) {
        for (int l = 0; l < pr->nlayers; l++)
            meshes[l] = one_axis(0, nodes, gpus);
        return 0;
    }
    int given = 0;
    for (const char *p = spec; given < pr->nlayers;) {
        size_t len = strcspn(p, ",");
        if (parse_mesh(p, len, nodes, gpus, &meshes[given], err))
            return -1;
        given++;
        if (p[len] == '\0')
            break;
        p += len + 1;
        if (given == pr->nlayers)
            return wp_errorf(err, "strategy '%s' gives more meshes than the %d layers", spec, pr->nlayers);
    }
    for (int l = given; l < pr->nlayers; l++)
        meshes[l] = meshes[l % given];
    return 0;
}
