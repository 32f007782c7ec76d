/* Unit tests of configuration parsing: the schema checker on every kind of
 * setting, and cluster files, good and bad (each bad file must give one
 * error naming its file and line). */
#include <stdlib.h>
#include <unistd.h>

#include "config/schema.h"
#include "tap.h"
#include "topo/cluster_io.h"

static char path_buf[4096];

static const char *fixture(const char *name)
{
    const char *dir = getenv("WP_SRCDIR");
    snprintf(path_buf, sizeof path_buf, "%s/tests/config/%s", dir ? dir : ".", name);
    return path_buf;
}

/* ---- the schema checker on its own ------------------------------------------- */

static const char *const colours[] = {"red", "green", "blue", NULL};
static const struct wp_cfg_key point_keys[] = {
    WP_KEY_RANGE("x", WP_CFG_FLOAT, 1, -10, 10),
    WP_KEY_RANGE("y", WP_CFG_FLOAT, 1, -10, 10),
    WP_KEY_END};
static const struct wp_cfg_key demo_keys[] = {
    WP_KEY_RANGE("layers", WP_CFG_INT, 1, 1, 1024),
    WP_KEY("verbose", WP_CFG_BOOL, 0),
    WP_KEY_CHOICE("colour", 0, colours),
    WP_KEY_RANGE("sizes", WP_CFG_INT_ARRAY, 0, 1, 100),
    WP_KEY("names", WP_CFG_STRING_ARRAY, 0),
    WP_KEY_GROUP("origin", WP_CFG_GROUP, 0, point_keys),
    WP_KEY_GROUP("points", WP_CFG_GROUP_LIST, 0, point_keys),
    {"matrix", WP_CFG_FLOAT_MATRIX, 0, 1, 0, 1, NULL, NULL},
    WP_KEY_END};

static void expect_text_error(const char *text, const char *fragment, const char *what)
{
    config_t cfg;
    config_init(&cfg);
    struct wp_err err = {""};
    ok(wp_cfg_read_text(&cfg, text, "demo.cfg", demo_keys, &err) == -1, "%s is rejected", what);
    has_substr(err.msg, fragment, "%s: message", what);
    config_destroy(&cfg);
}

static void test_schema(void)
{
    config_t cfg;
    config_init(&cfg);
    struct wp_err err = {""};
    int rc = wp_cfg_read_text(&cfg,
                              "layers = 12;\nverbose = true;\ncolour = \"green\";\n"
                              "sizes = [1, 2, 3];\nnames = [\"a\", \"b\"];\n"
                              "origin = { x = 0; y = 1.5; };\n"
                              "points = ( { x = 1; y = 2; }, { x = -3.5; y = 4; } );\n"
                              "matrix = ( [0.5, 1.0], [0.0, 0.25] );\n",
                              "demo.cfg", demo_keys, &err);
    ok(rc == 0, "a good file passes (%s)", err.msg);
    is_int(wp_cfg_int(config_root_setting(&cfg), "layers", 0), 12, "int lookup");
    is_near(wp_cfg_float(config_lookup(&cfg, "origin"), "y", 0), 1.5, 0, "float lookup in a group");
    is_near(wp_cfg_float(config_lookup(&cfg, "origin"), "x", 9), 0, 0, "an int accepted where a number is expected");
    is_str(wp_cfg_string(config_root_setting(&cfg), "colour", ""), "green", "string lookup");
    is_int(wp_cfg_int(config_root_setting(&cfg), "absent", 42), 42, "default for an absent key");
    config_destroy(&cfg);

    expect_text_error("layers = 0;\n", "demo.cfg:1: 'layers' = 0 is out of range [1, 1024]", "int below range");
    expect_text_error("\nlayers = 2000;\n", "demo.cfg:2: 'layers' = 2000 is out of range", "int above range");
    expect_text_error("layers = 1.5;\n", "'layers' must be an integer", "float for an int");
    expect_text_error("layers = 2;\nlayres = 3;\n", "demo.cfg:2: unknown key 'layres' in demo.cfg; did you mean 'layers'?",
                      "unknown key with a suggestion");
    expect_text_error("layers = 2;\nquux = 3;\n", "unknown key 'quux' in demo.cfg", "unknown key without a suggestion");
    expect_text_error("verbose = true;\n", "lacks the required key 'layers'", "missing required key");
    expect_text_error("layers = 2;\ncolour = \"gren\";\n",
                      "'colour' = \"gren\" is not one of: red, green, blue; did you mean \"green\"?", "bad choice");
    expect_text_error("layers = 2;\nsizes = [1, 200];\n", "'sizes[1]' = 200 is out of range [1, 100]", "array element range");
    expect_text_error("layers = 2;\nsizes = [1.5];\n", "element 0 of 'sizes' must be an integer", "array element type");
    expect_text_error("layers = 2;\norigin = { x = 1; };\n", "origin lacks the required key 'y'", "nested required key");
    expect_text_error("layers = 2;\norigin = { x = 1; y = 2; z = 3; };\n", "unknown key 'z' in origin",
                      "nested unknown key");
    expect_text_error("layers = 2;\npoints = ( { x = 1; y = 20; } );\n", "'y' = 20 is out of range [-10, 10]",
                      "range inside a list of groups");
    expect_text_error("layers = 2;\npoints = ( 3 );\n", "element 0 of 'points' must be a group", "list of non-groups");
    expect_text_error("layers = 2;\nmatrix = ( [0.5], 7 );\n", "row 1 of 'matrix' must be an array", "matrix row type");
    expect_text_error("layers = 2;\nmatrix = ( [0.5, 2.0] );\n", "'matrix[1]' = 2 is out of range [0, 1]", "matrix range");
    expect_text_error("layers = 2;\nverbose = = true;\n", "demo.cfg:2: syntax error", "syntax error");
}

/* ---- cluster files -------------------------------------------------------------- */

struct bad_file {
    const char *name;
    int line;
    const char *fragment;
};

static const struct bad_file bad_files[] = {
    {"bad-syntax.cfg", 5, "syntax error"},
    {"bad-unknown-key.cfg", 6, "unknown key 'bandwith_Bps' in network; did you mean 'bandwidth_Bps'?"},
    {"bad-range.cfg", 5, "'count' = 0 is out of range [1, 1e+06]"},
    {"bad-type.cfg", 5, "'cores' must be an integer"},
    {"bad-missing.cfg", 0, "lacks the required key 'node_types'"},
    {"bad-format.cfg", 1, "format is \"wavepipe-plan\", expected \"wavepipe-cluster\""},
    {"bad-matrix.cfg", 8, "row 1 of link_Bps has 1 entries, expected 2"},
    {"bad-nic.cfg", 6, "GPU 0 names NIC 3, but node type 'x' has 1 NICs"},
    {"bad-choice.cfg", 3, "'launcher' = \"pmi\" is not one of: none, mpi, pmix; did you mean \"pmix\"?"},
    {"bad-rank-node.cfg", 6, "rank 1 is on node 5, but the file lists 1 nodes"},
    {"bad-link-kind.cfg", 6, "row 0 of link_kinds: entry 1 is 'NVLINK'"},
    {"bad-bignum.cfg", 5, "'cores' = 99999999999 does not fit a 32-bit integer"},
};

static void test_bad_cluster_files(void)
{
    for (size_t i = 0; i < sizeof bad_files / sizeof bad_files[0]; i++) {
        const struct bad_file *b = &bad_files[i];
        struct wp_cluster c;
        struct wp_err err = {""};
        const char *path = fixture(b->name);
        ok(wp_cluster_read(path, &c, &err) == -1, "%s is rejected", b->name);
        char where[4200];
        snprintf(where, sizeof where, "%s:%d: ", path, b->line);
        ok(strncmp(err.msg, where, strlen(where)) == 0, "%s: error starts with file:line (%s)", b->name, err.msg);
        has_substr(err.msg, b->fragment, "%s: error says what is wrong", b->name);
        ok(strchr(err.msg, '\n') == NULL, "%s: one line", b->name);
    }
    /* Checks across settings (not of one setting) name the file. */
    struct wp_cluster c;
    struct wp_err err = {""};
    ok(wp_cluster_read(fixture("bad-asymmetric.cfg"), &c, &err) == -1, "asymmetric link matrix rejected");
    has_substr(err.msg, "bad-asymmetric.cfg: node type 'x': GPU link matrix is not symmetric at 0-1",
               "asymmetric matrix: message names the file and the pair");
    ok(wp_cluster_read(fixture("does-not-exist.cfg"), &c, &err) == -1, "missing file rejected");
    has_substr(err.msg, "cannot read", "missing file: message");
    has_substr(err.msg, "No such file or directory", "missing file: reason");
}

static void test_good_cluster_file(void)
{
    struct wp_cluster c;
    struct wp_err err = {""};
    if (!ok(wp_cluster_read(fixture("good-two-nodes.cfg"), &c, &err) == 0, "good file reads (%s)", err.msg))
        return;
    is_int(c.ntypes, 1, "one node type");
    is_int(wp_cluster_node_count(&c), 2, "two nodes");
    is_int(wp_cluster_gpu_count(&c), 4, "four GPUs in all");
    is_int(c.nranks, 4, "four ranks");
    is_int(c.ranks[3].node, 1, "rank 3 on the second node");
    is_str(c.nodes[1].host, "n2", "second host");
    is_int(c.types[0].gpus[1].nic_path, WP_LINK_PHB, "GPU 1 reaches its NIC through a host bridge");
    is_int(c.types[0].link_kind[1], WP_LINK_PHB, "link kind 0-1");
    is_near(c.types[0].link_Bps[1], 15.75e9, 1e-12, "link bandwidth 0-1");
    ok(c.network.given, "network present");
    is_near(c.network.bandwidth_Bps, 12.5e9, 1e-12, "network bandwidth");
    is_near(c.network.latency_s, 2e-6, 1e-12, "network latency");
    is_int((long long)c.types[0].memory_bytes, 68719476736LL, "64-bit memory size");

    /* Writing and reading back gives the same description. */
    char out[] = "/tmp/wp-config-XXXXXX";
    int fd = mkstemp(out);
    ok(fd >= 0, "temporary file");
    close(fd);
    ok(wp_cluster_write(&c, out, &err) == 0, "write (%s)", err.msg);
    struct wp_cluster back;
    ok(wp_cluster_read(out, &back, &err) == 0, "read back (%s)", err.msg);
    is_int(back.nranks, c.nranks, "ranks survive the round trip");
    is_str(back.network.name, "ib-edr", "network name survives");
    is_near(back.types[0].link_Bps[2], c.types[0].link_Bps[2], 0, "link bandwidth survives exactly");
    is_near(back.types[0].gpus[0].pcie_Bps, 15.75e9, 0, "PCIe bandwidth survives exactly");
    is_int((long long)back.types[0].memory_bytes, 68719476736LL, "memory survives");
    unlink(out);
    wp_cluster_destroy(&back);
    wp_cluster_destroy(&c);
}

int main(void)
{
    test_schema();
    test_bad_cluster_files();
    test_good_cluster_file();
    return tap_done();
}
