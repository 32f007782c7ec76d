/* Layer tables: profile text reader with chain contraction, libconfig
 * reader/writer, format detection (see layers.h). */
#include "plan/layers.h"

#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/schema.h"
#include "plan/gpu_model.h"
#include "util/read_file.h"
#include "util/strutil.h"

int wp_layer_contract_from_name(const char *name, enum wp_layer_contract *contract)
{
    static const char *const names[] = {"cuts", "frontier", "lines", "auto"};
    static const enum wp_layer_contract modes[] = {WP_CONTRACT_CUTS, WP_CONTRACT_FRONTIER, WP_CONTRACT_LINES,
                                                   WP_CONTRACT_AUTO};
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0) {
            *contract = modes[i];
            return 0;
        }
    return -1;
}

void wp_layer_table_init(struct wp_layer_table *t)
{
    memset(t, 0, sizeof *t);
    t->profile_batch = 1;
}

void wp_layer_table_destroy(struct wp_layer_table *t)
{
    free(t->layers);
    wp_layer_table_init(t);
}

int wp_layer_table_append(struct wp_layer_table *t, const struct wp_layer *layer, struct wp_err *err)
{
    struct wp_layer *l = realloc(t->layers, (size_t)(t->nlayers + 1) * sizeof *l);
    if (!l)
        return wp_errorf(err, "out of memory");
    t->layers = l;
    t->layers[t->nlayers++] = *layer;
    return 0;
}

/* Sum over the layers of the double member at offset in struct wp_layer. */
static double sum_member(const struct wp_layer_table *t, size_t offset)
{
    double s = 0;
    for (int i = 0; i < t->nlayers; i++)
        s += *(const double *)((const char *)&t->layers[i] + offset);
    return s;
}

double wp_layer_table_forward_s(const struct wp_layer_table *t)
{
    return sum_member(t, offsetof(struct wp_layer, forward_s));
}

double wp_layer_table_backward_s(const struct wp_layer_table *t)
{
    return sum_member(t, offsetof(struct wp_layer, backward_s));
}

double wp_layer_table_parameter_bytes(const struct wp_layer_table *t)
{
    return sum_member(t, offsetof(struct wp_layer, parameter_bytes));
}

double wp_layer_table_optimizer_bytes(const struct wp_layer_table *t)
{
    return sum_member(t, offsetof(struct wp_layer, optimizer_bytes));
}

double wp_adam_state_bytes_fp32(double parameter_bytes)
{
    return 2.0 * parameter_bytes;
}

double wp_layer_gradient_bytes(const struct wp_layer *l)
{
    return l->gradient_bytes > 0 ? l->gradient_bytes : l->parameter_bytes;
}

double wp_layer_state_bytes(const struct wp_layer *l)
{
    return l->parameter_bytes + wp_layer_gradient_bytes(l) + l->optimizer_bytes;
}

/* ---- profile text ---------------------------------------------------- */

struct pnode {
    char id[32];
    char name[WP_LAYER_NAME_MAX];
    double fwd_ms, bwd_ms, act, param;
    int line;
};

struct pedge {
    int from, to, line;
};

struct pgraph {
    struct pnode *nodes;
    int nnodes, capnodes;
    struct pedge *edges;
    int nedges, capedges;
    /* edge endpoints by id until resolved */
    char (*eids)[2][32];
};

static void pgraph_free(struct pgraph *g)
{
    free(g->nodes);
    free(g->edges);
    free(g->eids);
}

/* Parses a non-negative finite number at *p, advancing it. */
static int parse_number(const char **p, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(*p, &end);
    if (end == *p || errno == ERANGE || !isfinite(v))
        return -1;
    *p = end;
    *out = v;
    return 0;
}

/* Expects literal lit at *p. */
static int expect(const char **p, const char *lit)
{
    size_t n = strlen(lit);
    if (strncmp(*p, lit, n) != 0)
        return -1;
    *p += n;
    return 0;
}

static int is_node_id(const char *s, size_t n)
{
    if (n < 5 || n >= 32 || strncmp(s, "node", 4) != 0)
        return 0;
    for (size_t i = 4; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

static int parse_node_line(struct pgraph *g, const char *line, const char *path, int lineno,
                           struct wp_err *err)
{
    static const char usage[] = "expected 'nodeN -- NAME -- forward_compute_time=MS, "
                                "backward_compute_time=MS, activation_size=BYTES, parameter_size=BYTES'";
    const char *sep = strstr(line, " -- ");
    const char *fields = strstr(line, " -- forward_compute_time=");
    if (!sep || !fields || fields <= sep || !is_node_id(line, (size_t)(sep - line)))
        return wp_errorf(err, "%s:%d: malformed node line: %s", path, lineno, usage);
    struct pnode n;
    memset(&n, 0, sizeof n);
    n.line = lineno;
    memcpy(n.id, line, (size_t)(sep - line));
    size_t namelen = (size_t)(fields - (sep + 4));
    if (namelen >= sizeof n.name)
        namelen = sizeof n.name - 1;
    memcpy(n.name, sep + 4, namelen);
    const char *p = fields + 4;
    static const char *const keys[] = {"forward_compute_time=", ", backward_compute_time=",
                                       ", activation_size=", ", parameter_size="};
    double *vals[] = {&n.fwd_ms, &n.bwd_ms, &n.act, &n.param};
    for (int k = 0; k < 4; k++) {
        if (expect(&p, keys[k]))
            return wp_errorf(err, "%s:%d: malformed node line at '%.20s': %s", path, lineno, p, usage);
        const char *key = keys[k][0] == ',' ? keys[k] + 2 : keys[k];
        int keylen = (int)strlen(key) - 1;
        if (k == 2 && *p == '[') {
            /* [a; b; ...]: the outputs of a multi-output node, summed */
            p++;
            double sum = 0;
            for (;;) {
                double v;
                while (*p == ' ')
                    p++;
                if (parse_number(&p, &v))
                    return wp_errorf(err, "%s:%d: malformed %.*s list at '%.20s'", path, lineno, keylen,
                                     key, p);
                if (v < 0)
                    return wp_errorf(err, "%s:%d: negative %.*s %g", path, lineno, keylen, key, v);
                sum += v;
                while (*p == ' ')
                    p++;
                if (*p == ';') {
                    p++;
                    continue;
                }
                if (*p == ']') {
                    p++;
                    break;
                }
                return wp_errorf(err, "%s:%d: malformed %.*s list at '%.20s' (want '[a; b]')", path,
                                 lineno, keylen, key, p);
            }
            n.act = sum;
            continue;
        }
        if (parse_number(&p, vals[k]))
            return wp_errorf(err, "%s:%d: malformed %.*s at '%.20s': not a number", path, lineno, keylen,
                             key, p);
        if (*vals[k] < 0)
            return wp_errorf(err, "%s:%d: negative %.*s %g", path, lineno, keylen, key, *vals[k]);
    }
    if (*p != '\0')
        return wp_errorf(err, "%s:%d: malformed node line: trailing '%.20s'", path, lineno, p);
    for (int i = 0; i < g->nnodes; i++)
        if (strcmp(g->nodes[i].id, n.id) == 0)
            return wp_errorf(err, "%s:%d: duplicate node %s (first at line %d)", path, lineno, n.id,
                             g->nodes[i].line);
    if (g->nnodes == g->capnodes) {
        int cap = g->capnodes ? 2 * g->capnodes : 64;
        struct pnode *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            return wp_errorf(err, "out of memory");
        g->nodes = nn;
        g->capnodes = cap;
    }
    g->nodes[g->nnodes++] = n;
    return 0;
}

static int parse_edge_line(struct pgraph *g, const char *line, const char *path, int lineno,
                           struct wp_err *err)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *sep = strstr(p, " -- ");
    if (!sep || !is_node_id(p, (size_t)(sep - p)) || !is_node_id(sep + 4, strlen(sep + 4)))
        return wp_errorf(err, "%s:%d: malformed edge line: expected '<TAB>nodeA -- nodeB'", path, lineno);
    if (g->nedges == g->capedges) {
        int cap = g->capedges ? 2 * g->capedges : 64;
        struct pedge *ne = realloc(g->edges, (size_t)cap * sizeof *ne);
        char(*nid)[2][32] = realloc(g->eids, (size_t)cap * sizeof *nid);
        if (ne)
            g->edges = ne;
        if (nid)
            g->eids = nid;
        if (!ne || !nid)
            return wp_errorf(err, "out of memory");
        g->capedges = cap;
    }
    struct pedge *e = &g->edges[g->nedges];
    e->line = lineno;
    e->from = e->to = -1;
    memcpy(g->eids[g->nedges][0], p, (size_t)(sep - p));
    g->eids[g->nedges][0][sep - p] = '\0';
    wp_strlcpy(g->eids[g->nedges][1], sep + 4, 32);
    g->nedges++;
    return 0;
}

static int find_node(const struct pgraph *g, const char *id)
{
    for (int i = 0; i < g->nnodes; i++)
        if (strcmp(g->nodes[i].id, id) == 0)
            return i;
    return -1;
}

static int parse_profile_text(struct pgraph *g, const char *text, const char *path, struct wp_err *err)
{
    int lineno = 0;
    const char *p = text;
    char buf[4096];
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        lineno++;
        if (len >= sizeof buf)
            return wp_errorf(err, "%s:%d: line too long", path, lineno);
        memcpy(buf, p, len);
        buf[len] = '\0';
        p += len + (eol ? 1 : 0);
        while (len > 0 && isspace((unsigned char)buf[len - 1]))
            buf[--len] = '\0';
        if (len == 0)
            continue;
        int rc;
        if (strncmp(buf, "node", 4) == 0)
            rc = parse_node_line(g, buf, path, lineno, err);
        else if (buf[0] == ' ' || buf[0] == '\t')
            rc = parse_edge_line(g, buf, path, lineno, err);
        else
            rc = wp_errorf(err, "%s:%d: malformed line: neither 'nodeN -- NAME -- ...' nor an edge "
                                "'<TAB>nodeA -- nodeB'", path, lineno);
        if (rc)
            return rc;
    }
    if (g->nnodes == 0)
        return wp_errorf(err, "%s: no node lines", path);
    for (int i = 0; i < g->nedges; i++) {
        struct pedge *e = &g->edges[i];
        e->from = find_node(g, g->eids[i][0]);
        e->to = find_node(g, g->eids[i][1]);
        if (e->from < 0 || e->to < 0)
            return wp_errorf(err, "%s:%d: edge names unknown node %s", path, e->line,
                             g->eids[i][e->from < 0 ? 0 : 1]);
    }
    return 0;
}

/* Topological order by Kahn's algorithm, ready nodes taken by smallest
 * index (order of the node lines). order[] gets nnodes entries. */
static int topo_order(const struct pgraph *g, const int *succ_start, const int *succ, int *order,
                      const char *path, struct wp_err *err)
{
    int n = g->nnodes;
    int *indeg = calloc((size_t)n, sizeof *indeg);
    int *heap = malloc((size_t)n * sizeof *heap);
    if (!indeg || !heap) {
        free(indeg);
        free(heap);
        return wp_errorf(err, "out of memory");
    }
    for (int i = 0; i < g->nedges; i++)
        indeg[g->edges[i].to]++;
    int hn = 0, done = 0;
    for (int v = 0; v < n; v++)
        if (indeg[v] == 0)
            heap[hn++] = v; /* increasing: already a heap */
    while (hn > 0) {
        int v = heap[0];
        heap[0] = heap[--hn];
        for (int i = 0;;) { /* sift down */
            int c = 2 * i + 1;
            if (c >= hn)
                break;
            if (c + 1 < hn && heap[c + 1] < heap[c])
                c++;
            if (heap[i] <= heap[c])
                break;
            int tmp = heap[i];
            heap[i] = heap[c];
            heap[c] = tmp;
            i = c;
        }
        order[done++] = v;
        for (int k = succ_start[v]; k < succ_start[v + 1]; k++) {
            int w = succ[k];
            if (--indeg[w] == 0) {
                int i = hn++;
                heap[i] = w;
                while (i > 0 && heap[(i - 1) / 2] > heap[i]) { /* sift up */
                    int par = (i - 1) / 2, tmp = heap[i];
                    heap[i] = heap[par];
                    heap[par] = tmp;
                    i = par;
                }
            }
        }
    }
    int rc = 0;
    if (done < n) {
        /* Every node left has a predecessor left; walking back n steps
         * from any of them lands on a cycle. */
        int v = -1;
        for (int i = 0; i < n && v < 0; i++)
            if (indeg[i] > 0)
                v = i;
        int line = 0, from = v;
        for (int step = 0; step <= n; step++)
            for (int i = 0; i < g->nedges; i++)
                if (g->edges[i].to == v && indeg[g->edges[i].from] > 0) {
                    from = g->edges[i].from;
                    line = g->edges[i].line;
                    v = from;
                    break;
                }
        /* v is on a cycle; report the edge into it from the cycle */
        for (int i = 0; i < g->nedges; i++)
            if (g->edges[i].to == v && indeg[g->edges[i].from] > 0) {
                from = g->edges[i].from;
                line = g->edges[i].line;
                break;
            }
        rc = wp_errorf(err, "%s:%d: the graph has a cycle (through the edge %s -- %s)", path, line,
                       g->nodes[from].id, g->nodes[v].id);
    }
    free(indeg);
    free(heap);
    return rc;
}

static void region_name(char *dst, size_t size, const struct pnode *first, const struct pnode *last)
{
    char buf[256]; /* truncated into dst on purpose: names are for people */
    if (first == last)
        snprintf(buf, sizeof buf, "%s %s", last->id, last->name);
    else
        snprintf(buf, sizeof buf, "%s..%s %s", first->id, last->id, last->name);
    wp_strlcpy(dst, buf, size);
}

static int contract(struct wp_layer_table *t, const struct pgraph *g, enum wp_layer_contract mode,
                    const char *path, struct wp_err *err)
{
    int n = g->nnodes, rc = 0;
    int *succ_start = calloc((size_t)n + 1, sizeof(int));
    int *succ = malloc((size_t)(g->nedges ? g->nedges : 1) * sizeof(int));
    int *order = malloc((size_t)n * sizeof(int));
    int *pos = malloc((size_t)n * sizeof(int));
    int *fill = calloc((size_t)n + 1, sizeof(int));
    double *drop = calloc((size_t)n + 1, sizeof(double));
    if (!succ_start || !succ || !order || !pos || !fill || !drop) {
        rc = wp_errorf(err, "out of memory");
        goto out;
    }
    for (int i = 0; i < g->nedges; i++)
        succ_start[g->edges[i].from + 1]++;
    for (int v = 0; v < n; v++)
        succ_start[v + 1] += succ_start[v];
    for (int i = 0; i < g->nedges; i++) {
        int a = g->edges[i].from;
        succ[succ_start[a] + fill[a]++] = g->edges[i].to;
    }
    if (mode == WP_CONTRACT_LINES) {
        for (int i = 0; i < g->nedges; i++)
            if (g->edges[i].from >= g->edges[i].to) { /* the first edge edges_follow_lines() refuses */
                rc = wp_errorf(err, "%s:%d: edge %s -- %s points backwards in line order: the node lines are not a chain",
                               path, g->edges[i].line, g->nodes[g->edges[i].from].id, g->nodes[g->edges[i].to].id);
                goto out;
            }
        for (int i = 0; i < n; i++)
            order[i] = i;
    } else if ((rc = topo_order(g, succ_start, succ, order, path, err))) {
        goto out;
    }
    for (int i = 0; i < n; i++)
        pos[order[i]] = i;

    /* no edges at all, or asked for: the node lines are the chain, in order */
    int chain_by_lines = g->nedges == 0 || mode == WP_CONTRACT_LINES;
    int first = -1;
    double fwd = 0, bwd = 0, param = 0, frontier = 0;
    int reach = -1; /* furthest position reached by an edge from before */
    for (int i = 0; i < n; i++) {
        int v = order[i];
        const struct pnode *nd = &g->nodes[v];
        int cut = chain_by_lines || reach <= i;
        int last_use = chain_by_lines ? (i + 1 < n ? i + 1 : -1) : -1;
        for (int k = succ_start[v]; k < succ_start[v + 1]; k++) {
            if (pos[succ[k]] > reach)
                reach = pos[succ[k]];
            if (pos[succ[k]] > last_use)
                last_use = pos[succ[k]];
        }
        if (first < 0)
            first = v;
        fwd += nd->fwd_ms;
        bwd += nd->bwd_ms;
        param += nd->param;
        struct wp_layer l;
        memset(&l, 0, sizeof l);
        if (mode == WP_CONTRACT_FRONTIER) {
            frontier -= drop[i];
            if (last_use > i) {
                frontier += nd->act;
                drop[last_use] += nd->act;
            }
            l.activation_bytes = i == n - 1 ? nd->act : frontier;
        } else if (!cut && i < n - 1) {
            continue;
        } else {
            l.activation_bytes = nd->act;
        }
        region_name(l.name, sizeof l.name, &g->nodes[first], nd);
        l.forward_s = fwd / 1e3;
        l.backward_s = bwd / 1e3;
        l.parameter_bytes = param;
        l.optimizer_bytes = wp_adam_state_bytes_fp32(param);
        if ((rc = wp_layer_table_append(t, &l, err)))
            goto out;
        first = -1;
        fwd = bwd = param = 0;
    }
out:
    free(succ_start);
    free(succ);
    free(order);
    free(pos);
    free(fill);
    free(drop);
    return rc;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* N from "pbs-N" in the base name, or 0. */
static int batch_from_name(const char *path)
{
    const char *s = strstr(base_name(path), "pbs-");
    if (!s || !isdigit((unsigned char)s[4]))
        return 0;
    long v = strtol(s + 4, NULL, 10);
    return v > 0 && v < 1000000000 ? (int)v : 0;
}

/* 1 when every edge goes from an earlier node line to a later one. */
static int edges_follow_lines(const struct pgraph *g)
{
    for (int i = 0; i < g->nedges; i++)
        if (g->edges[i].from >= g->edges[i].to)
            return 0;
    return 1;
}

int wp_layer_table_parse_profile(struct wp_layer_table *t, const char *text, const char *name,
                                 int default_batch, enum wp_layer_contract contract_mode,
                                 struct wp_err *err)
{
    wp_layer_table_init(t);
    struct pgraph g;
    memset(&g, 0, sizeof g);
    int rc = parse_profile_text(&g, text, name, err);
    if (rc == 0 && contract_mode == WP_CONTRACT_AUTO)
        contract_mode = edges_follow_lines(&g) ? WP_CONTRACT_LINES : WP_CONTRACT_CUTS;
    if (rc == 0)
        rc = contract(t, &g, contract_mode, name, err);
    if (rc == 0) {
        const char *b = base_name(name);
        size_t len = strlen(b);
        if (len > 4 && strcmp(b + len - 4, ".txt") == 0)
            len -= 4;
        if (len >= sizeof t->name)
            len = sizeof t->name - 1;
        memcpy(t->name, b, len);
        t->name[len] = '\0';
        t->nnodes = g.nnodes;
        int pbs = batch_from_name(name);
        t->profile_batch = pbs ? pbs : default_batch > 0 ? default_batch : 1;
        t->profile_batch_assumed = pbs == 0;
        snprintf(t->source, sizeof t->source, "profile %s: %d nodes, %d edges, %d layers (%s)%s%s", name,
                 g.nnodes, g.nedges, t->nlayers,
                 contract_mode == WP_CONTRACT_FRONTIER ? "frontier"
                 : contract_mode == WP_CONTRACT_LINES  ? "node lines as the chain"
                                                       : "contracted at cut nodes",
                 pbs ? "" : "; profile batch not in the file name, ",
                 pbs ? "" : default_batch > 0 ? "given by the caller" : "assumed 1");
    } else {
        wp_layer_table_destroy(t);
    }
    pgraph_free(&g);
    return rc;
}

int wp_layer_table_read_profile(struct wp_layer_table *t, const char *path, int default_batch,
                                enum wp_layer_contract contract_mode, struct wp_err *err)
{
    wp_layer_table_init(t);
    size_t len;
    char *text = wp_read_file(path, &len);
    if (!text)
        return wp_errorf(err, "%s: %s", path, strerror(errno));
    if (strlen(text) != len) {
        free(text);
        return wp_errorf(err, "%s: not a text file (NUL byte)", path);
    }
    int rc = wp_layer_table_parse_profile(t, text, path, default_batch, contract_mode, err);
    free(text);
    return rc;
}

/* ---- libconfig format ---------------------------------------------- */

static const struct wp_cfg_key layer_keys[] = {
    WP_KEY("name", WP_CFG_STRING, 1),
    WP_KEY_RANGE("forward_s", WP_CFG_FLOAT, 1, 0, 1e9),
    WP_KEY_RANGE("backward_s", WP_CFG_FLOAT, 1, 0, 1e9),
    WP_KEY_RANGE("activation_bytes", WP_CFG_FLOAT, 1, 0, 1e18),
    WP_KEY_RANGE("parameter_bytes", WP_CFG_FLOAT, 1, 0, 1e18),
    WP_KEY_RANGE("gradient_bytes", WP_CFG_FLOAT, 0, 0, 1e18),
    WP_KEY_RANGE("optimizer_bytes", WP_CFG_FLOAT, 0, 0, 1e18),
    WP_KEY_RANGE("weights_s", WP_CFG_FLOAT, 0, 0, 1e9),
    WP_KEY_RANGE("optimizer_s", WP_CFG_FLOAT, 0, 0, 1e9),
    WP_KEY_RANGE("forward_flops", WP_CFG_FLOAT, 0, 0, 1e30),
    WP_KEY_RANGE("block_channels", WP_CFG_INT, 0, 1, 1e9),
    WP_KEY_RANGE("block_heads", WP_CFG_INT, 0, 1, 1e9),
    WP_KEY_RANGE("block_seq_len", WP_CFG_INT, 0, 1, 1e9),
    WP_KEY_RANGE("block_element_bytes", WP_CFG_FLOAT, 0, 0.125, 64),
    WP_KEY("vocab_parallel", WP_CFG_BOOL, 0),
    WP_KEY_END};

static const struct wp_cfg_key table_keys[] = {
    WP_KEY("format", WP_CFG_STRING, 1),
    WP_KEY_RANGE("version", WP_CFG_INT, 1, 1, 1),
    WP_KEY("name", WP_CFG_STRING, 1),
    WP_KEY_RANGE("profile_batch", WP_CFG_INT, 1, 1, 1e9),
    WP_KEY("profile_batch_assumed", WP_CFG_BOOL, 0),
    WP_KEY_RANGE("nodes", WP_CFG_INT, 0, 0, 2e9),
    WP_KEY("source", WP_CFG_STRING, 0),
    WP_KEY("gpu", WP_CFG_STRING, 0),
    WP_KEY("attention", WP_CFG_STRING, 0),
    WP_KEY("precision", WP_CFG_STRING, 0),
    WP_KEY_GROUP("layers", WP_CFG_GROUP_LIST, 1, layer_keys),
    WP_KEY_END};

int wp_layer_table_write(const char *path, const struct wp_layer_table *t, struct wp_err *err)
{
    config_t cfg;
    config_init(&cfg);
    config_setting_t *root = config_root_setting(&cfg);
    wp_cfg_add_string(root, "format", "wavepipe-layers");
    wp_cfg_add_int(root, "version", 1);
    wp_cfg_add_string(root, "name", t->name);
    wp_cfg_add_int(root, "profile_batch", t->profile_batch);
    wp_cfg_add_bool(root, "profile_batch_assumed", t->profile_batch_assumed);
    wp_cfg_add_int(root, "nodes", t->nnodes);
    wp_cfg_add_string(root, "source", t->source);
    if (t->gpu[0]) {
        wp_cfg_add_string(root, "gpu", t->gpu);
        wp_cfg_add_string(root, "attention", t->flash_attention ? "flash" : "unfused");
        wp_cfg_add_string(root, "precision", wp_precision_name(t->precision));
    }
    config_setting_t *layers = wp_cfg_add_list(root, "layers");
    for (int i = 0; i < t->nlayers; i++) {
        const struct wp_layer *l = &t->layers[i];
        config_setting_t *g = config_setting_add(layers, NULL, CONFIG_TYPE_GROUP);
        wp_cfg_add_string(g, "name", l->name);
        wp_cfg_add_float(g, "forward_s", l->forward_s);
        wp_cfg_add_float(g, "backward_s", l->backward_s);
        wp_cfg_add_float(g, "activation_bytes", l->activation_bytes);
        wp_cfg_add_float(g, "parameter_bytes", l->parameter_bytes);
        if (l->gradient_bytes > 0)
            wp_cfg_add_float(g, "gradient_bytes", l->gradient_bytes);
        wp_cfg_add_float(g, "optimizer_bytes", l->optimizer_bytes);
        if (t->weights_known)
            wp_cfg_add_float(g, "weights_s", l->weights_s);
        if (l->optimizer_s > 0)
            wp_cfg_add_float(g, "optimizer_s", l->optimizer_s);
        if (l->forward_flops > 0)
            wp_cfg_add_float(g, "forward_flops", l->forward_flops);
        if (l->vocab_parallel)
            wp_cfg_add_bool(g, "vocab_parallel", 1);
        if (l->block.channels > 0) {
            wp_cfg_add_int(g, "block_channels", l->block.channels);
            wp_cfg_add_int(g, "block_heads", l->block.heads);
            wp_cfg_add_int(g, "block_seq_len", l->block.seq_len);
            wp_cfg_add_float(g, "block_element_bytes", l->block.element_bytes);
        }
    }
    int rc = wp_cfg_write_file(&cfg, path,
                               "wavepipe layer table: per layer, seconds for one micro-batch of\n"
                               "profile_batch, output activation, parameter and optimizer-state bytes",
                               err);
    config_destroy(&cfg);
    return rc;
}

/* A transformer block's shape: all four keys or none. */
static int read_block(const config_setting_t *g, struct wp_layer_block *b, struct wp_err *err)
{
    static const char *const keys[] = {"block_channels", "block_heads", "block_seq_len", "block_element_bytes"};
    int given = 0;
    for (int k = 0; k < 4; k++)
        given += config_setting_get_member(g, keys[k]) != NULL;
    if (given == 0)
        return 0;
    if (given < 4)
        return wp_cfg_errorf(err, g, "a transformer block needs all of block_channels, block_heads, block_seq_len "
                                     "and block_element_bytes (%d of 4 given)", given);
    *b = (struct wp_layer_block){wp_cfg_int(g, "block_channels", 0), wp_cfg_int(g, "block_heads", 0),
                                 wp_cfg_int(g, "block_seq_len", 0), wp_cfg_float(g, "block_element_bytes", 0)};
    if (b->channels % b->heads)
        return wp_cfg_errorf(err, config_setting_get_member(g, "block_heads"), "%d heads do not divide %d channels",
                             b->heads, b->channels);
    return 0;
}

/* The GPU whose model timed the table, and its attention kernel. */
static int read_timing(const config_setting_t *root, struct wp_layer_table *t, struct wp_err *err)
{
    const config_setting_t *gpu = config_setting_get_member(root, "gpu"),
                           *attention = config_setting_get_member(root, "attention");
    if (!gpu && !attention)
        return 0;
    if (!gpu)
        return wp_cfg_errorf(err, attention, "attention is the modelled GPU's: give gpu too");
    const struct wp_gpu_spec *g = wp_gpu_spec_find(config_setting_get_string(gpu));
    if (!g)
    {
        char known[256];
        wp_gpu_spec_names(known, sizeof known);
        return wp_cfg_errorf(err, gpu, "no model of the GPU '%s' (known: %s)", config_setting_get_string(gpu), known);
    }
    wp_strlcpy(t->gpu, g->name, sizeof t->gpu);
    const char *kind = attention ? config_setting_get_string(attention) : "unfused";
    if (strcmp(kind, "flash") != 0 && strcmp(kind, "unfused") != 0)
        return wp_cfg_errorf(err, attention, "attention must be \"unfused\" or \"flash\", not \"%s\"", kind);
    t->flash_attention = strcmp(kind, "flash") == 0;
    if (t->flash_attention && g->flash_forward_efficiency <= 0)
        return wp_cfg_errorf(err, attention, "the %s has no FlashAttention kernel", g->name);
    return 0;
}

/* The precision a GPU's model timed the blocks in: given (and then its
 * element bytes the blocks'), or bf16 for 2-byte blocks and tf32 for
 * others (what the GPU model priced before tables named it). */
static int read_precision(const config_setting_t *root, struct wp_layer_table *t, struct wp_err *err)
{
    const config_setting_t *key = config_setting_get_member(root, "precision");
    if (key && !t->gpu[0])
        return wp_cfg_errorf(err, key, "precision is the modelled GPU's: give gpu too");
    if (!t->gpu[0])
        return 0;
    const struct wp_layer_block *block = NULL;
    for (int i = 0; i < t->nlayers && !block; i++)
        block = t->layers[i].block.channels > 0 ? &t->layers[i].block : NULL;
    if (!key) {
        t->precision = block && block->element_bytes == 2 ? WP_PRECISION_BF16 : WP_PRECISION_TF32;
        return 0;
    }
    int p = wp_precision_parse(config_setting_get_string(key));
    if (p < 0)
        return wp_cfg_errorf(err, key, "precision \"%s\": expected one of %s", config_setting_get_string(key),
                             wp_precision_names());
    t->precision = (enum wp_precision)p;
    int bytes = wp_precision_bytes(t->precision).activation;
    for (int i = 0; i < t->nlayers; i++)
        if (t->layers[i].block.channels > 0 && t->layers[i].block.element_bytes != bytes)
            return wp_cfg_errorf(err, key, "precision %s keeps %d-byte activations, but layer %s's "
                                           "block_element_bytes is %g",
                                 wp_precision_name(t->precision), bytes, t->layers[i].name,
                                 t->layers[i].block.element_bytes);
    return 0;
}

int wp_layer_table_read_config(struct wp_layer_table *t, const char *path, struct wp_err *err)
{
    wp_layer_table_init(t);
    config_t cfg;
    config_init(&cfg);
    int rc = wp_cfg_read_file(&cfg, path, table_keys, err);
    if (rc == 0) {
        const config_setting_t *root = config_root_setting(&cfg);
        if (strcmp(wp_cfg_string(root, "format", ""), "wavepipe-layers") != 0)
            rc = wp_cfg_errorf(err, config_setting_get_member(root, "format"),
                               "format must be \"wavepipe-layers\"");
        const char *name = wp_cfg_string(root, "name", "");
        if (rc == 0 && strlen(name) >= sizeof t->name)
            rc = wp_cfg_errorf(err, config_setting_get_member(root, "name"), "name longer than %zu characters",
                               sizeof t->name - 1);
        wp_strlcpy(t->name, name, sizeof t->name);
        wp_strlcpy(t->source, wp_cfg_string(root, "source", path), sizeof t->source);
        t->profile_batch = wp_cfg_int(root, "profile_batch", 1);
        t->profile_batch_assumed = wp_cfg_bool(root, "profile_batch_assumed", 0);
        if (rc == 0)
            rc = read_timing(root, t, err);
        const config_setting_t *layers = config_setting_get_member(root, "layers");
        int n = config_setting_length(layers), weights_given = 0;
        if (rc == 0 && n == 0)
            rc = wp_cfg_errorf(err, layers, "layers is empty");
        for (int i = 0; rc == 0 && i < n; i++) {
            const config_setting_t *g = config_setting_get_elem(layers, (unsigned)i);
            struct wp_layer l;
            memset(&l, 0, sizeof l);
            const char *ln = wp_cfg_string(g, "name", "");
            if (strlen(ln) >= sizeof l.name) {
                rc = wp_cfg_errorf(err, config_setting_get_member(g, "name"),
                                   "layer name longer than %zu characters", sizeof l.name - 1);
                break;
            }
            wp_strlcpy(l.name, ln, sizeof l.name);
            l.forward_s = wp_cfg_float(g, "forward_s", 0);
            l.backward_s = wp_cfg_float(g, "backward_s", 0);
            l.activation_bytes = wp_cfg_float(g, "activation_bytes", 0);
            l.parameter_bytes = wp_cfg_float(g, "parameter_bytes", 0);
            l.gradient_bytes = wp_cfg_float(g, "gradient_bytes", 0);
            l.optimizer_bytes = config_setting_get_member(g, "optimizer_bytes")
                                    ? wp_cfg_float(g, "optimizer_bytes", 0)
                                    : wp_adam_state_bytes_fp32(l.parameter_bytes);
            l.optimizer_s = wp_cfg_float(g, "optimizer_s", 0);
            l.forward_flops = wp_cfg_float(g, "forward_flops", 0);
            l.vocab_parallel = wp_cfg_bool(g, "vocab_parallel", 0);
            if (rc == 0)
                rc = read_block(g, &l.block, err);
            int has_w = config_setting_get_member(g, "weights_s") != NULL;
            l.weights_s = has_w ? wp_cfg_float(g, "weights_s", 0) : 0;
            if (has_w && l.weights_s > l.backward_s)
                rc = wp_cfg_errorf(err, config_setting_get_member(g, "weights_s"),
                                   "weights_s %g is more than the layer's backward_s %g (it is a part of it)",
                                   l.weights_s, l.backward_s);
            weights_given += has_w;
            if (rc == 0)
                rc = wp_layer_table_append(t, &l, err);
        }
        t->weights_known = rc == 0 && weights_given == n;
        if (rc == 0 && weights_given > 0 && weights_given < n)
            rc = wp_cfg_errorf(err, layers, "weights_s is given for %d of %d layers: give it for all or none",
                               weights_given, n);
        t->nnodes = wp_cfg_int(root, "nodes", t->nlayers);
        if (rc == 0)
            rc = read_precision(root, t, err);
    }
    config_destroy(&cfg);
    if (rc)
        wp_layer_table_destroy(t);
    return rc;
}

/* 1 when the text's first setting (after blanks and comments) is
 * "format", the start of a libconfig layer table. */
static int looks_like_config(const char *s)
{
    for (;;) {
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '#' || (s[0] == '/' && s[1] == '/')) {
            s = strchr(s, '\n');
            if (!s)
                return 0;
        } else if (s[0] == '/' && s[1] == '*') {
            s = strstr(s + 2, "*/");
            if (!s)
                return 0;
            s += 2;
        } else {
            break;
        }
    }
    return strncmp(s, "format", 6) == 0 && !isalnum((unsigned char)s[6]) && s[6] != '_';
}

int wp_layer_table_read(struct wp_layer_table *t, const char *path, int default_batch,
                        enum wp_layer_contract contract, struct wp_err *err)
{
    wp_layer_table_init(t);
    size_t len;
    char *text = wp_read_file(path, &len);
    if (!text)
        return wp_errorf(err, "%s: %s", path, strerror(errno));
    int rc;
    if (looks_like_config(text))
        rc = wp_layer_table_read_config(t, path, err);
    else if (strlen(text) != len)
        rc = wp_errorf(err, "%s: not a text file (NUL byte)", path);
    else
        rc = wp_layer_table_parse_profile(t, text, path, default_batch, contract, err);
    free(text);
    return rc;
}
