/* Lifetime and consistency of the cluster description (struct wp_cluster). */
#include "topo/cluster.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/strutil.h"

static const char *const link_kind_names[WP_LINK_KIND_COUNT] = {
    [WP_LINK_SELF] = "X",      [WP_LINK_NVLINK] = "NVLink", [WP_LINK_NVSWITCH] = "NVSwitch",
    [WP_LINK_XGMI] = "XGMI",   [WP_LINK_PIX] = "PIX",       [WP_LINK_PXB] = "PXB",
    [WP_LINK_PHB] = "PHB",     [WP_LINK_NODE] = "NODE",     [WP_LINK_SYS] = "SYS",
};

const char *wp_link_kind_name(enum wp_link_kind kind)
{
    return (unsigned)kind < WP_LINK_KIND_COUNT ? link_kind_names[kind] : "?";
}

int wp_link_kind_from_name(const char *name)
{
    for (int k = 0; k < WP_LINK_KIND_COUNT; k++)
        if (strcmp(link_kind_names[k], name) == 0)
            return k;
    return -1;
}

void wp_cluster_init(struct wp_cluster *c)
{
    memset(c, 0, sizeof *c);
    wp_strlcpy(c->launcher, "none", sizeof c->launcher);
}

void wp_node_type_destroy(struct wp_node_type *t)
{
    free(t->gpus);
    free(t->nics);
    free(t->link_kind);
    free(t->link_Bps);
    memset(t, 0, sizeof *t);
}

void wp_cluster_destroy(struct wp_cluster *c)
{
    for (int i = 0; i < c->ntypes; i++)
        wp_node_type_destroy(&c->types[i]);
    free(c->types);
    free(c->nodes);
    free(c->ranks);
    memset(c, 0, sizeof *c);
}

int wp_node_type_alloc(struct wp_node_type *t, int ngpus, int nnics, struct wp_err *err)
{
    t->ngpus = ngpus;
    t->nnics = nnics;
    size_t pairs = (size_t)ngpus * (size_t)ngpus;
    t->gpus = calloc(ngpus ? (size_t)ngpus : 1, sizeof *t->gpus);
    t->nics = calloc(nnics ? (size_t)nnics : 1, sizeof *t->nics);
    t->link_kind = calloc(pairs ? pairs : 1, sizeof *t->link_kind);
    t->link_Bps = calloc(pairs ? pairs : 1, sizeof *t->link_Bps);
    if (!t->gpus || !t->nics || !t->link_kind || !t->link_Bps)
        return wp_errorf(err, "out of memory for a node type with %d GPUs", ngpus);
    for (int i = 0; i < ngpus; i++)
        t->link_kind[(size_t)i * (size_t)ngpus + (size_t)i] = WP_LINK_SELF;
    return 0;
}

static int same_number(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* Same hardware: what placement and cost models see, names and sources aside. */
static int same_hardware(const struct wp_node_type *a, const struct wp_node_type *b)
{
    if (a->packages != b->packages || a->numa_nodes != b->numa_nodes || a->cores != b->cores ||
        a->pus != b->pus || a->memory_bytes != b->memory_bytes || a->ngpus != b->ngpus ||
        a->nnics != b->nnics || a->nvswitches != b->nvswitches ||
        strcmp(a->gpu_matrix, b->gpu_matrix) != 0 || a->emulated != b->emulated)
        return 0;
    for (int i = 0; i < a->ngpus; i++) {
        const struct wp_gpu *x = &a->gpus[i], *y = &b->gpus[i];
        if (x->index != y->index || strcmp(x->model, y->model) || strcmp(x->pci_busid, y->pci_busid) ||
            x->numa_node != y->numa_node || x->nic != y->nic || x->nic_path != y->nic_path ||
            !same_number(x->nvlink_Bps, y->nvlink_Bps) || !same_number(x->pcie_Bps, y->pcie_Bps))
            return 0;
    }
    for (int i = 0; i < a->nnics; i++)
        if (strcmp(a->nics[i].name, b->nics[i].name) || a->nics[i].numa_node != b->nics[i].numa_node)
            return 0;
    for (size_t p = 0; p < (size_t)a->ngpus * (size_t)a->ngpus; p++)
        if (a->link_kind[p] != b->link_kind[p] || !same_number(a->link_Bps[p], b->link_Bps[p]))
            return 0;
    return 1;
}

int wp_cluster_add_type(struct wp_cluster *c, struct wp_node_type *t, struct wp_err *err)
{
    for (int i = 0; i < c->ntypes; i++) {
        if (same_hardware(&c->types[i], t)) {
            c->types[i].count += t->count;
            wp_node_type_destroy(t);
            return i;
        }
    }
    struct wp_node_type *grown = realloc(c->types, (size_t)(c->ntypes + 1) * sizeof *grown);
    if (!grown)
        return wp_errorf(err, "out of memory");
    c->types = grown;
    c->types[c->ntypes] = *t;
    memset(t, 0, sizeof *t);
    return c->ntypes++;
}

int wp_cluster_add_node(struct wp_cluster *c, const char *host, int type, struct wp_err *err)
{
    struct wp_node *grown = realloc(c->nodes, (size_t)(c->nnodes + 1) * sizeof *grown);
    if (!grown)
        return wp_errorf(err, "out of memory");
    c->nodes = grown;
    memset(&c->nodes[c->nnodes], 0, sizeof c->nodes[c->nnodes]);
    wp_strlcpy(c->nodes[c->nnodes].host, host, sizeof c->nodes[c->nnodes].host);
    c->nodes[c->nnodes].type = type;
    return c->nnodes++;
}

int wp_cluster_add_rank(struct wp_cluster *c, int rank, int node, int local_rank,
                        struct wp_err *err)
{
    struct wp_rank *grown = realloc(c->ranks, (size_t)(c->nranks + 1) * sizeof *grown);
    if (!grown)
        return wp_errorf(err, "out of memory");
    c->ranks = grown;
    c->ranks[c->nranks] = (struct wp_rank){rank, node, local_rank};
    return c->nranks++;
}

int wp_cluster_node_count(const struct wp_cluster *c)
{
    int n = 0;
    for (int i = 0; i < c->ntypes; i++)
        n += c->types[i].count;
    return n;
}

int wp_cluster_gpu_count(const struct wp_cluster *c)
{
    int n = 0;
    for (int i = 0; i < c->ntypes; i++)
        n += c->types[i].count * c->types[i].ngpus;
    return n;
}

int wp_cluster_check(const struct wp_cluster *c, struct wp_err *err)
{
    if (c->ntypes == 0)
        return wp_errorf(err, "the cluster has no node types");
    for (int ti = 0; ti < c->ntypes; ti++) {
        const struct wp_node_type *t = &c->types[ti];
        if (t->count < 1)
            return wp_errorf(err, "node type '%s' has count %d (must be >= 1)", t->name, t->count);
        for (int g = 0; g < t->ngpus; g++) {
            const struct wp_gpu *gpu = &t->gpus[g];
            if (gpu->nic >= t->nnics)
                return wp_errorf(err, "node type '%s': GPU %d names NIC %d, but the node has %d NICs",
                                 t->name, gpu->index, gpu->nic, t->nnics);
            for (int h = 0; h < g; h++)
                if (t->gpus[h].index == gpu->index)
                    return wp_errorf(err, "node type '%s': GPU index %d appears twice", t->name,
                                     gpu->index);
            for (int h = 0; h < t->ngpus; h++) {
                size_t gh = (size_t)g * (size_t)t->ngpus + (size_t)h;
                size_t hg = (size_t)h * (size_t)t->ngpus + (size_t)g;
                if ((g == h) != (t->link_kind[gh] == WP_LINK_SELF))
                    return wp_errorf(err, "node type '%s': link kind of GPUs %d-%d is %s", t->name,
                                     g, h, wp_link_kind_name(t->link_kind[gh]));
                if (t->link_kind[gh] != t->link_kind[hg] || !same_number(t->link_Bps[gh], t->link_Bps[hg]))
                    return wp_errorf(err, "node type '%s': GPU link matrix is not symmetric at %d-%d",
                                     t->name, g, h);
            }
        }
    }
    for (int n = 0; n < c->nnodes; n++) {
        if (c->nodes[n].type < 0 || c->nodes[n].type >= c->ntypes)
            return wp_errorf(err, "node '%s' names node type %d of %d", c->nodes[n].host,
                             c->nodes[n].type, c->ntypes);
        for (int m = 0; m < n; m++)
            if (strcmp(c->nodes[m].host, c->nodes[n].host) == 0)
                return wp_errorf(err, "node '%s' is listed twice", c->nodes[n].host);
    }
    for (int r = 0; r < c->nranks; r++) {
        const struct wp_rank *rk = &c->ranks[r];
        if (rk->node < 0 || rk->node >= c->nnodes)
            return wp_errorf(err, "rank %d is on node %d, but the cluster lists %d nodes", rk->rank,
                             rk->node, c->nnodes);
        if (rk->rank != r)
            return wp_errorf(err, "ranks must be listed in order: entry %d is rank %d", r, rk->rank);
    }
    const struct wp_network *nets[2] = {&c->network, &c->intra_network};
    for (int i = 0; i < 2; i++)
        if (nets[i]->given && (nets[i]->bandwidth_Bps <= 0 || nets[i]->latency_s < 0))
            return wp_errorf(err, "network '%s' needs a positive bandwidth and a latency >= 0", nets[i]->name);
    return 0;
}
