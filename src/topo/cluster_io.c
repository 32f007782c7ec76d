/* Reading and writing the cluster description (libconfig, schema-checked). */
#include "topo/cluster_io.h"

#include <libconfig.h>
#include <stdlib.h>
#include <string.h>

#include "config/schema.h"
#include "util/strutil.h"

#define CLUSTER_FORMAT "wavepipe-cluster"
#define CLUSTER_VERSION 1
#define MAX_GPUS 4096.0
#define MAX_COUNT 1000000.0

static const char *const launcher_choices[] = {"none", "mpi", "pmix", NULL};
static const char *const network_sources[] = {"user", "calibrated", NULL};

static const struct wp_cfg_key gpu_keys[] = {
    WP_KEY_RANGE("index", WP_CFG_INT, 1, 0, MAX_GPUS),
    WP_KEY("model", WP_CFG_STRING, 1),
    WP_KEY("apis", WP_CFG_STRING, 0),
    WP_KEY("os_names", WP_CFG_STRING, 0),
    WP_KEY("pci", WP_CFG_STRING, 0),
    WP_KEY_RANGE("numa", WP_CFG_INT, 0, -1, 65535),
    WP_KEY_RANGE("package", WP_CFG_INT, 0, -1, 65535),
    WP_KEY_RANGE("nic", WP_CFG_INT, 0, -1, 65535),
    WP_KEY("nic_path", WP_CFG_STRING, 0),
    WP_KEY_RANGE("pcie_Bps", WP_CFG_FLOAT, 0, 0, 1e15),
    WP_KEY_RANGE("nvlink_Bps", WP_CFG_FLOAT, 0, 0, 1e15),
    WP_KEY_RANGE("cpu_link_Bps", WP_CFG_FLOAT, 0, 0, 1e15),
    WP_KEY_RANGE("memory_bytes", WP_CFG_FLOAT, 0, 0, 1e18),
    WP_KEY_END};

static const struct wp_cfg_key nic_keys[] = {
    WP_KEY("name", WP_CFG_STRING, 1),
    WP_KEY("os_names", WP_CFG_STRING, 0),
    WP_KEY("kind", WP_CFG_STRING, 0),
    WP_KEY("fabric", WP_CFG_BOOL, 0),
    WP_KEY("pci", WP_CFG_STRING, 0),
    WP_KEY_RANGE("numa", WP_CFG_INT, 0, -1, 65535),
    WP_KEY_RANGE("pcie_Bps", WP_CFG_FLOAT, 0, 0, 1e15),
    WP_KEY_END};

static const struct wp_cfg_key node_type_keys[] = {
    WP_KEY("name", WP_CFG_STRING, 1),
    WP_KEY("source", WP_CFG_STRING, 0),
    WP_KEY("emulated", WP_CFG_BOOL, 0),
    WP_KEY_RANGE("count", WP_CFG_INT, 0, 1, MAX_COUNT),
    WP_KEY_RANGE("packages", WP_CFG_INT, 0, 0, 65536),
    WP_KEY_RANGE("numa_nodes", WP_CFG_INT, 0, 0, 65536),
    WP_KEY_RANGE("cores", WP_CFG_INT, 0, 0, 1e7),
    WP_KEY_RANGE("pus", WP_CFG_INT, 0, 0, 1e7),
    WP_KEY_RANGE("memory_bytes", WP_CFG_INT64, 0, 0, 9.2e18),
    WP_KEY_RANGE("nvswitches", WP_CFG_INT, 0, 0, 4096),
    WP_KEY("gpu_matrix", WP_CFG_STRING, 0),
    WP_KEY_GROUP("gpus", WP_CFG_GROUP_LIST, 0, gpu_keys),
    WP_KEY_GROUP("nics", WP_CFG_GROUP_LIST, 0, nic_keys),
    WP_KEY("link_kinds", WP_CFG_STRING_ARRAY, 0),
    {"link_Bps", WP_CFG_FLOAT_MATRIX, 0, 1, 0, 1e15, NULL, NULL},
    WP_KEY_END};

static const struct wp_cfg_key node_keys[] = {
    WP_KEY("host", WP_CFG_STRING, 1),
    WP_KEY_RANGE("type", WP_CFG_INT, 1, 0, MAX_COUNT),
    WP_KEY_END};

static const struct wp_cfg_key rank_keys[] = {
    WP_KEY_RANGE("rank", WP_CFG_INT, 1, 0, 1e8),
    WP_KEY_RANGE("node", WP_CFG_INT, 1, 0, MAX_COUNT),
    WP_KEY_RANGE("local_rank", WP_CFG_INT, 1, 0, 1e6),
    WP_KEY_END};

static const struct wp_cfg_key network_keys[] = {
    WP_KEY("name", WP_CFG_STRING, 1),
    WP_KEY_RANGE("bandwidth_Bps", WP_CFG_FLOAT, 1, 1, 1e15),
    WP_KEY_RANGE("latency_s", WP_CFG_FLOAT, 1, 0, 10),
    WP_KEY_CHOICE("source", 0, network_sources),
    WP_KEY_END};

static const struct wp_cfg_key cluster_keys[] = {
    WP_KEY("format", WP_CFG_STRING, 1),
    WP_KEY_RANGE("version", WP_CFG_INT, 1, 1, CLUSTER_VERSION),
    WP_KEY("name", WP_CFG_STRING, 0),
    WP_KEY_CHOICE("launcher", 0, launcher_choices),
    WP_KEY_GROUP("node_types", WP_CFG_GROUP_LIST, 1, node_type_keys),
    WP_KEY_GROUP("nodes", WP_CFG_GROUP_LIST, 0, node_keys),
    WP_KEY_GROUP("ranks", WP_CFG_GROUP_LIST, 0, rank_keys),
    WP_KEY_GROUP("network", WP_CFG_GROUP, 0, network_keys),
    WP_KEY_GROUP("intra_node_network", WP_CFG_GROUP, 0, network_keys),
    WP_KEY_END};

/* A node-type text on its own (between ranks) is one group "node_type". */
static const struct wp_cfg_key node_type_text_keys[] = {
    WP_KEY_GROUP("node_type", WP_CFG_GROUP, 1, node_type_keys),
    WP_KEY_END};

/* ---- writing ---------------------------------------------------------------- */

static void write_node_type(config_setting_t *g, const struct wp_node_type *t)
{
    wp_cfg_add_string(g, "name", t->name);
    wp_cfg_add_string(g, "source", t->source);
    wp_cfg_add_bool(g, "emulated", t->emulated);
    wp_cfg_add_int(g, "count", t->count);
    wp_cfg_add_int(g, "packages", t->packages);
    wp_cfg_add_int(g, "numa_nodes", t->numa_nodes);
    wp_cfg_add_int(g, "cores", t->cores);
    wp_cfg_add_int(g, "pus", t->pus);
    wp_cfg_add_int64(g, "memory_bytes", (long long)t->memory_bytes);
    wp_cfg_add_int(g, "nvswitches", t->nvswitches);
    wp_cfg_add_string(g, "gpu_matrix", t->gpu_matrix);
    config_setting_t *gpus = wp_cfg_add_list(g, "gpus");
    for (int i = 0; i < t->ngpus; i++) {
        const struct wp_gpu *gpu = &t->gpus[i];
        config_setting_t *e = config_setting_add(gpus, NULL, CONFIG_TYPE_GROUP);
        wp_cfg_add_int(e, "index", gpu->index);
        wp_cfg_add_string(e, "model", gpu->model);
        wp_cfg_add_string(e, "apis", gpu->apis);
        wp_cfg_add_string(e, "os_names", gpu->os_names);
        wp_cfg_add_string(e, "pci", gpu->pci_busid);
        wp_cfg_add_int(e, "numa", gpu->numa_node);
        wp_cfg_add_int(e, "package", gpu->package);
        wp_cfg_add_int(e, "nic", gpu->nic);
        wp_cfg_add_string(e, "nic_path", wp_link_kind_name(gpu->nic_path));
        wp_cfg_add_float(e, "pcie_Bps", gpu->pcie_Bps);
        wp_cfg_add_float(e, "nvlink_Bps", gpu->nvlink_Bps);
        wp_cfg_add_float(e, "cpu_link_Bps", gpu->cpu_link_Bps);
        if (gpu->memory_bytes > 0)
            wp_cfg_add_float(e, "memory_bytes", gpu->memory_bytes);
    }
    config_setting_t *nics = wp_cfg_add_list(g, "nics");
    for (int i = 0; i < t->nnics; i++) {
        const struct wp_nic *nic = &t->nics[i];
        config_setting_t *e = config_setting_add(nics, NULL, CONFIG_TYPE_GROUP);
        wp_cfg_add_string(e, "name", nic->name);
        wp_cfg_add_string(e, "os_names", nic->os_names);
        wp_cfg_add_string(e, "kind", nic->kind);
        wp_cfg_add_bool(e, "fabric", nic->fabric);
        wp_cfg_add_string(e, "pci", nic->pci_busid);
        wp_cfg_add_int(e, "numa", nic->numa_node);
        wp_cfg_add_float(e, "pcie_Bps", nic->pcie_Bps);
    }
    config_setting_t *kinds = wp_cfg_add_array(g, "link_kinds");
    config_setting_t *bps = wp_cfg_add_list(g, "link_Bps");
    for (int a = 0; a < t->ngpus; a++) {
        char row[4096] = "";
        config_setting_t *brow = config_setting_add(bps, NULL, CONFIG_TYPE_ARRAY);
        for (int b = 0; b < t->ngpus; b++) {
            if (b)
                strncat(row, " ", sizeof row - strlen(row) - 1);
            strncat(row, wp_link_kind_name(t->link_kind[a * t->ngpus + b]), sizeof row - strlen(row) - 1);
            wp_cfg_append_float(brow, t->link_Bps[a * t->ngpus + b]);
        }
        wp_cfg_append_string(kinds, row);
    }
}

static void add_network(config_setting_t *root, const char *key, const struct wp_network *n)
{
    if (!n->given)
        return;
    config_setting_t *net = wp_cfg_add_group(root, key);
    wp_cfg_add_string(net, "name", n->name);
    wp_cfg_add_float(net, "bandwidth_Bps", n->bandwidth_Bps);
    wp_cfg_add_float(net, "latency_s", n->latency_s);
    wp_cfg_add_string(net, "source", n->source);
}

static void read_network(const config_setting_t *net, struct wp_network *n)
{
    if (!net)
        return;
    n->given = 1;
    wp_strlcpy(n->name, wp_cfg_string(net, "name", ""), sizeof n->name);
    n->bandwidth_Bps = wp_cfg_float(net, "bandwidth_Bps", 0);
    n->latency_s = wp_cfg_float(net, "latency_s", 0);
    wp_strlcpy(n->source, wp_cfg_string(net, "source", "user"), sizeof n->source);
}

static void build_config(config_t *cfg, const struct wp_cluster *c)
{
    config_setting_t *root = config_root_setting(cfg);
    wp_cfg_add_string(root, "format", CLUSTER_FORMAT);
    wp_cfg_add_int(root, "version", CLUSTER_VERSION);
    wp_cfg_add_string(root, "name", c->name);
    wp_cfg_add_string(root, "launcher", c->launcher);
    config_setting_t *types = wp_cfg_add_list(root, "node_types");
    for (int i = 0; i < c->ntypes; i++)
        write_node_type(config_setting_add(types, NULL, CONFIG_TYPE_GROUP), &c->types[i]);
    if (c->nnodes) {
        config_setting_t *nodes = wp_cfg_add_list(root, "nodes");
        for (int i = 0; i < c->nnodes; i++) {
            config_setting_t *e = config_setting_add(nodes, NULL, CONFIG_TYPE_GROUP);
            wp_cfg_add_string(e, "host", c->nodes[i].host);
            wp_cfg_add_int(e, "type", c->nodes[i].type);
        }
    }
    if (c->nranks) {
        config_setting_t *ranks = wp_cfg_add_list(root, "ranks");
        for (int i = 0; i < c->nranks; i++) {
            config_setting_t *e = config_setting_add(ranks, NULL, CONFIG_TYPE_GROUP);
            wp_cfg_add_int(e, "rank", c->ranks[i].rank);
            wp_cfg_add_int(e, "node", c->ranks[i].node);
            wp_cfg_add_int(e, "local_rank", c->ranks[i].local_rank);
        }
    }
    add_network(root, "network", &c->network);
    add_network(root, "intra_node_network", &c->intra_network);
}

int wp_cluster_write(const struct wp_cluster *c, const char *path, struct wp_err *err)
{
    config_t cfg;
    config_init(&cfg);
    build_config(&cfg, c);
    int rc = wp_cfg_write_file(&cfg, path,
                               "wavepipe cluster description: node types (hwloc), the nodes and\n"
                               "ranks of the job that found them, and the inter-node network.\n"
                               "Bandwidths in bytes/s, latencies in seconds. Read it back with\n"
                               "`wavepipe topo --cluster FILE`.",
                               err);
    config_destroy(&cfg);
    return rc;
}

char *wp_node_type_to_text(const struct wp_node_type *t)
{
    config_t cfg;
    config_init(&cfg);
    write_node_type(wp_cfg_add_group(config_root_setting(&cfg), "node_type"), t);
    char *text = wp_cfg_write_text(&cfg);
    config_destroy(&cfg);
    return text;
}

/* ---- reading ---------------------------------------------------------------- */

static int read_link_matrix(const config_setting_t *g, struct wp_node_type *t, struct wp_err *err)
{
    const config_setting_t *kinds = config_setting_get_member(g, "link_kinds");
    const config_setting_t *bps = config_setting_get_member(g, "link_Bps");
    int n = t->ngpus;
    if (n == 0)
        return 0;
    if (!kinds || !bps)
        return wp_cfg_errorf(err, g, "node type '%s' has %d GPUs but no link_kinds/link_Bps matrix",
                             t->name, n);
    if (config_setting_length(kinds) != n || config_setting_length(bps) != n)
        return wp_cfg_errorf(err, kinds, "link_kinds and link_Bps need %d rows (one per GPU)", n);
    for (int a = 0; a < n; a++) {
        const config_setting_t *brow = config_setting_get_elem(bps, (unsigned)a);
        if (config_setting_length(brow) != n)
            return wp_cfg_errorf(err, brow, "row %d of link_Bps has %d entries, expected %d", a,
                                 config_setting_length(brow), n);
        char row[4096];
        wp_strlcpy(row, config_setting_get_string_elem(kinds, (unsigned)a), sizeof row);
        char *save = NULL, *tok = strtok_r(row, " ", &save);
        for (int b = 0; b < n; b++, tok = strtok_r(NULL, " ", &save)) {
            int kind = tok ? wp_link_kind_from_name(tok) : -1;
            if (kind < 0)
                return wp_cfg_errorf(err, kinds,
                                     "row %d of link_kinds: entry %d is '%s', expected one of X, "
                                     "NVLink, NVSwitch, XGMI, PIX, PXB, PHB, NODE, SYS",
                                     a, b, tok ? tok : "(missing)");
            t->link_kind[a * n + b] = (enum wp_link_kind)kind;
            t->link_Bps[a * n + b] = wp_cfg_number_elem(brow, b);
        }
        if (tok)
            return wp_cfg_errorf(err, kinds, "row %d of link_kinds has more than %d entries", a, n);
    }
    return 0;
}

static int read_node_type(const config_setting_t *g, struct wp_node_type *t, struct wp_err *err)
{
    memset(t, 0, sizeof *t);
    const config_setting_t *gpus = config_setting_get_member(g, "gpus");
    const config_setting_t *nics = config_setting_get_member(g, "nics");
    int ngpus = gpus ? config_setting_length(gpus) : 0;
    int nnics = nics ? config_setting_length(nics) : 0;
    if (wp_node_type_alloc(t, ngpus, nnics, err))
        return -1;
    wp_strlcpy(t->name, wp_cfg_string(g, "name", ""), sizeof t->name);
    wp_strlcpy(t->source, wp_cfg_string(g, "source", "cluster file"), sizeof t->source);
    t->emulated = wp_cfg_bool(g, "emulated", 0);
    t->count = wp_cfg_int(g, "count", 1);
    t->packages = wp_cfg_int(g, "packages", 0);
    t->numa_nodes = wp_cfg_int(g, "numa_nodes", 0);
    t->cores = wp_cfg_int(g, "cores", 0);
    t->pus = wp_cfg_int(g, "pus", 0);
    t->memory_bytes = (uint64_t)wp_cfg_int64(g, "memory_bytes", 0);
    t->nvswitches = wp_cfg_int(g, "nvswitches", 0);
    wp_strlcpy(t->gpu_matrix, wp_cfg_string(g, "gpu_matrix", "PCIe"), sizeof t->gpu_matrix);
    for (int i = 0; i < ngpus; i++) {
        const config_setting_t *e = config_setting_get_elem(gpus, (unsigned)i);
        struct wp_gpu *gpu = &t->gpus[i];
        gpu->index = wp_cfg_int(e, "index", i);
        wp_strlcpy(gpu->model, wp_cfg_string(e, "model", ""), sizeof gpu->model);
        wp_strlcpy(gpu->apis, wp_cfg_string(e, "apis", ""), sizeof gpu->apis);
        wp_strlcpy(gpu->os_names, wp_cfg_string(e, "os_names", ""), sizeof gpu->os_names);
        wp_strlcpy(gpu->pci_busid, wp_cfg_string(e, "pci", ""), sizeof gpu->pci_busid);
        gpu->numa_node = wp_cfg_int(e, "numa", -1);
        gpu->package = wp_cfg_int(e, "package", -1);
        gpu->nic = wp_cfg_int(e, "nic", -1);
        int path = wp_link_kind_from_name(wp_cfg_string(e, "nic_path", "SYS"));
        if (path < 0)
            return wp_cfg_errorf(err, config_setting_get_member(e, "nic_path"),
                                 "nic_path '%s' is not a PCIe path class (PIX, PXB, PHB, NODE, SYS)",
                                 wp_cfg_string(e, "nic_path", ""));
        gpu->nic_path = (enum wp_link_kind)path;
        if (gpu->nic >= nnics)
            return wp_cfg_errorf(err, config_setting_get_member(e, "nic"),
                                 "GPU %d names NIC %d, but node type '%s' has %d NICs", gpu->index,
                                 gpu->nic, t->name, nnics);
        gpu->pcie_Bps = wp_cfg_float(e, "pcie_Bps", 0);
        gpu->nvlink_Bps = wp_cfg_float(e, "nvlink_Bps", 0);
        gpu->cpu_link_Bps = wp_cfg_float(e, "cpu_link_Bps", 0);
        gpu->memory_bytes = wp_cfg_float(e, "memory_bytes", 0);
    }
    for (int i = 0; i < nnics; i++) {
        const config_setting_t *e = config_setting_get_elem(nics, (unsigned)i);
        struct wp_nic *nic = &t->nics[i];
        wp_strlcpy(nic->name, wp_cfg_string(e, "name", ""), sizeof nic->name);
        wp_strlcpy(nic->os_names, wp_cfg_string(e, "os_names", nic->name), sizeof nic->os_names);
        wp_strlcpy(nic->kind, wp_cfg_string(e, "kind", "Ethernet"), sizeof nic->kind);
        nic->fabric = wp_cfg_bool(e, "fabric", 0);
        wp_strlcpy(nic->pci_busid, wp_cfg_string(e, "pci", ""), sizeof nic->pci_busid);
        nic->numa_node = wp_cfg_int(e, "numa", -1);
        nic->pcie_Bps = wp_cfg_float(e, "pcie_Bps", 0);
    }
    return read_link_matrix(g, t, err);
}

static int read_cluster(const config_t *cfg, const char *path, struct wp_cluster *c,
                        struct wp_err *err)
{
    const config_setting_t *root = config_root_setting(cfg);
    const char *format = wp_cfg_string(root, "format", "");
    if (strcmp(format, CLUSTER_FORMAT) != 0)
        return wp_cfg_errorf(err, config_setting_get_member(root, "format"),
                             "format is \"%s\", expected \"%s\"", format, CLUSTER_FORMAT);
    wp_strlcpy(c->name, wp_cfg_string(root, "name", ""), sizeof c->name);
    wp_strlcpy(c->launcher, wp_cfg_string(root, "launcher", "none"), sizeof c->launcher);
    const config_setting_t *types = config_setting_get_member(root, "node_types");
    if (config_setting_length(types) == 0)
        return wp_cfg_errorf(err, types, "node_types is empty: a cluster needs at least one node type");
    c->types = calloc((size_t)config_setting_length(types), sizeof *c->types);
    if (!c->types)
        return wp_errorf(err, "out of memory");
    for (int i = 0; i < config_setting_length(types); i++) {
        if (read_node_type(config_setting_get_elem(types, (unsigned)i), &c->types[i], err)) {
            wp_node_type_destroy(&c->types[i]);
            return -1;
        }
        c->ntypes++;
    }
    const config_setting_t *nodes = config_setting_get_member(root, "nodes");
    for (int i = 0; nodes && i < config_setting_length(nodes); i++) {
        const config_setting_t *e = config_setting_get_elem(nodes, (unsigned)i);
        int type = wp_cfg_int(e, "type", 0);
        if (type >= c->ntypes)
            return wp_cfg_errorf(err, config_setting_get_member(e, "type"),
                                 "node '%s' has type %d, but there are %d node types",
                                 wp_cfg_string(e, "host", ""), type, c->ntypes);
        if (wp_cluster_add_node(c, wp_cfg_string(e, "host", ""), type, err) < 0)
            return -1;
    }
    const config_setting_t *ranks = config_setting_get_member(root, "ranks");
    for (int i = 0; ranks && i < config_setting_length(ranks); i++) {
        const config_setting_t *e = config_setting_get_elem(ranks, (unsigned)i);
        int node = wp_cfg_int(e, "node", 0);
        if (node >= c->nnodes)
            return wp_cfg_errorf(err, config_setting_get_member(e, "node"),
                                 "rank %d is on node %d, but the file lists %d nodes",
                                 wp_cfg_int(e, "rank", 0), node, c->nnodes);
        if (wp_cluster_add_rank(c, wp_cfg_int(e, "rank", 0), node, wp_cfg_int(e, "local_rank", 0), err) < 0)
            return -1;
    }
    read_network(config_setting_get_member(root, "network"), &c->network);
    read_network(config_setting_get_member(root, "intra_node_network"), &c->intra_network);
    if (wp_cluster_check(c, err))
        return wp_err_prefix(err, "%s: ", path);
    return 0;
}

int wp_cluster_read(const char *path, struct wp_cluster *c, struct wp_err *err)
{
    config_t cfg;
    config_init(&cfg);
    wp_cluster_init(c);
    int rc = wp_cfg_read_file(&cfg, path, cluster_keys, err);
    if (rc == 0)
        rc = read_cluster(&cfg, path, c, err);
    config_destroy(&cfg);
    if (rc)
        wp_cluster_destroy(c);
    return rc;
}

int wp_node_type_from_text(const char *text, const char *origin, struct wp_node_type *t,
                           struct wp_err *err)
{
    config_t cfg;
    config_init(&cfg);
    int rc = wp_cfg_read_text(&cfg, text, origin, node_type_text_keys, err);
    if (rc == 0) {
        rc = read_node_type(config_lookup(&cfg, "node_type"), t, err);
        if (rc)
            wp_node_type_destroy(t);
    }
    config_destroy(&cfg);
    return rc;
}
