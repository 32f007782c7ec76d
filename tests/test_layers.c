/* Layer tables: every profile of shared/layer-profiles (counts and sums
 * checked against an independent scan of the raw text), chain contraction
 * on ResNet-50 and a hand-made graph, AmoebaNet's [a; b], errors with
 * file:line, the libconfig round trip and the analytic GPT-2 small table. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/layers.h"
#include "tap.h"
#include "util/read_file.h"

static char tmpdir[64];

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The profile directory, or NULL with the places tried in why. */
static const char *find_profiles(char *buf, size_t size, char *why, size_t whysize)
{
    const char *shared = getenv("WP_SHARED"), *src = getenv("WP_SRCDIR");
    char cand[4][200];
    int n = 0;
    if (shared) {
        snprintf(cand[n++], sizeof cand[0], "%.180s/layer-profiles", shared);
        snprintf(cand[n++], sizeof cand[0], "%.180s", shared);
    }
    if (src)
        snprintf(cand[n++], sizeof cand[0], "%.150s/../shared/layer-profiles", src);
    snprintf(cand[n++], sizeof cand[0], "../shared/layer-profiles");
    why[0] = '\0';
    for (int i = 0; i < n; i++) {
        char sub[600];
        snprintf(sub, sizeof sub, "%.256s/dapple-v100", cand[i]);
        if (is_dir(sub)) {
            snprintf(buf, size, "%.200s", cand[i]);
            return buf;
        }
        size_t l = strlen(why);
        snprintf(why + l, whysize - l, "%s%.256s", l ? ", " : "", cand[i]);
    }
    return NULL;
}

/* Independent scan of a profile: counts "nodeN -- " lines at a line
 * start and sums every number after each key, brackets included. */
struct scan {
    int nodes;
    double fwd_ms, bwd_ms, act, param;
};

static double sum_after(const char *text, const char *key)
{
    double s = 0;
    for (const char *p = strstr(text, key); p; p = strstr(p, key)) {
        p += strlen(key);
        const char *q = p;
        if (*q == '[') {
            q++;
            while (*q && *q != ']') {
                char *end;
                s += strtod(q, &end);
                q = end;
                while (*q == ';' || *q == ' ')
                    q++;
            }
        } else {
            s += strtod(q, NULL);
        }
    }
    return s;
}

static struct scan scan_text(const char *text)
{
    struct scan sc = {0, 0, 0, 0, 0};
    for (const char *p = text; p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, "node", 4) == 0 && strstr(p, " -- ") && strchr(p, '=') &&
            strchr(p, '=') < strchr(p, '\n'))
            sc.nodes++;
    }
    sc.fwd_ms = sum_after(text, "forward_compute_time=");
    sc.bwd_ms = sum_after(text, "backward_compute_time=");
    sc.act = sum_after(text, "activation_size=");
    sc.param = sum_after(text, "parameter_size=");
    return sc;
}

/* Node lines only (edges dropped): the reader then takes the lines as the
 * chain, one layer per node with its own activation. */
static char *nodes_only(const char *text)
{
    char *out = malloc(strlen(text) + 1), *o = out;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p + 1) : strlen(p);
        if (strncmp(p, "node", 4) == 0) {
            memcpy(o, p, len);
            o += len;
        }
        p += len;
    }
    *o = '\0';
    return out;
}

/* Layer counts after contraction at cut nodes, computed separately (a
 * Python scan of the same files: cut = no edge jumps over the node in a
 * topological order, virtual source/sink for several inputs/outputs). */
struct expect {
    const char *file;
    int nodes, layers;
};
static const struct expect expected[] = {
    {"dapple-v100/amoeba-18-pbs-8.txt", 26, 2},
    {"dapple-v100/amoeba-36-pbs-1.txt", 44, 4},
    {"dapple-v100/amoeba-6-pbs-8-complicated.txt", 20, 2},
    {"dapple-v100/amoeba-6-pbs-8-simplified.txt", 14, 2},
    {"dapple-v100/bert-24-pbs-6.txt", 29, 3},
    {"dapple-v100/bert-48-pbs-2.txt", 53, 3},
    {"dapple-v100/gnmt-16-pbs-64.txt", 96, 4},
    {"dapple-v100/gnmt-32-pbs-64-simplified.txt", 67, 4},
    {"dapple-v100/gnmt-32-pbs-64.txt", 192, 4},
    {"dapple-v100/vgg-19-pbs-32.txt", 26, 26},
    {"dapple-v100/vgg16.txt", 41, 40},
    {"dapple-v100/xlnet-24-pbs-1.txt", 31, 3},
    {"dapple-v100/xlnet-36-pbs-1.txt", 43, 3},
    {"pipedream/alexnet.txt", 23, 22},
    {"pipedream/gnmt.txt", 48, 4},
    {"pipedream/inception_v3.txt", 326, 33},
    {"pipedream/resnet101.txt", 347, 74},
    {"pipedream/resnet50.txt", 177, 40},
    {"pipedream/vgg16.txt", 41, 40},
};

static const struct expect *find_expected(const char *file)
{
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (strcmp(expected[i].file, file) == 0)
            return &expected[i];
    return NULL;
}

static void check_profile(const char *dir, const char *rel)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    size_t len;
    char *text = wp_read_file(path, &len);
    if (!ok(text != NULL, "%s: readable", rel))
        return;
    struct scan sc = scan_text(text);
    struct wp_layer_table t;
    struct wp_err err = {""};
    int rc = wp_layer_table_read(&t, path, 0, WP_CONTRACT_CUTS, &err);
    if (!ok(rc == 0, "%s: read (%s)", rel, rc ? err.msg : t.source)) {
        free(text);
        return;
    }
    is_int(t.nnodes, sc.nodes, "%s: %d nodes before contraction", rel, sc.nodes);
    const struct expect *ex = find_expected(rel);
    if (ex) {
        is_int(t.nnodes, ex->nodes, "%s: node count as stated", rel);
        is_int(t.nlayers, ex->layers, "%s: %d layers after contraction", rel, ex->layers);
    } else {
        ok(0, "%s: a profile the test does not know (add it to expected[]); %d layers", rel, t.nlayers);
    }
    is_near(wp_layer_table_forward_s(&t), sc.fwd_ms / 1e3, 1e-9, "%s: sum of forward times %.3f ms", rel,
            sc.fwd_ms);
    is_near(wp_layer_table_backward_s(&t), sc.bwd_ms / 1e3, 1e-9, "%s: sum of backward times %.3f ms", rel,
            sc.bwd_ms);
    is_near(wp_layer_table_parameter_bytes(&t), sc.param, 1e-9, "%s: sum of parameter bytes %.0f", rel,
            sc.param);
    int pbs = 0;
    const char *s = strstr(rel, "pbs-");
    if (s)
        pbs = atoi(s + 4);
    is_int(t.profile_batch, pbs ? pbs : 1, "%s: profile batch %d", rel, pbs ? pbs : 1);
    is_int(t.profile_batch_assumed, pbs == 0, "%s: profile batch %s", rel, pbs ? "from the name" : "assumed");
    int monotone = 1;
    for (int i = 0; i < t.nlayers; i++)
        if (t.layers[i].forward_s < 0 || t.layers[i].backward_s < 0 || t.layers[i].activation_bytes < 0)
            monotone = 0;
    ok(monotone, "%s: no negative entries", rel);
    wp_layer_table_destroy(&t);

    /* all activation numbers (AmoebaNet's [a; b] summed) through the
     * edge-less chain of the same node lines */
    char *nodes = nodes_only(text);
    rc = wp_layer_table_parse_profile(&t, nodes, rel, 0, WP_CONTRACT_CUTS, &err);
    if (ok(rc == 0, "%s: node lines alone read as a chain", rel)) {
        is_int(t.nlayers, sc.nodes, "%s: chain of node lines has one layer per node", rel);
        double act = 0;
        for (int i = 0; i < t.nlayers; i++)
            act += t.layers[i].activation_bytes;
        is_near(act, sc.act, 1e-9, "%s: sum of activation bytes %.0f", rel, sc.act);
        wp_layer_table_destroy(&t);
    }
    free(nodes);
    free(text);
}

static int profile_tests(void)
{
    char dirbuf[256], why[2048];
    const char *dir = find_profiles(dirbuf, sizeof dirbuf, why, sizeof why);
    if (!dir) {
        tap.count++;
        printf("ok %d # SKIP layer-profiles not found (tried %s; set WP_SHARED)\n", tap.count, why);
        return 0;
    }
    int nfiles = 0;
    static const char *const subs[] = {"dapple-v100", "pipedream"};
    for (int s = 0; s < 2; s++) {
        char sub[800];
        snprintf(sub, sizeof sub, "%s/%s", dir, subs[s]);
        struct dirent **list;
        int n = scandir(sub, &list, NULL, alphasort);
        ok(n > 0, "%s listed", sub);
        for (int i = 0; i < n; i++) {
            size_t l = strlen(list[i]->d_name);
            if (l > 4 && strcmp(list[i]->d_name + l - 4, ".txt") == 0) {
                char rel[600];
                snprintf(rel, sizeof rel, "%s/%s", subs[s], list[i]->d_name);
                check_profile(dir, rel);
                nfiles++;
            }
            free(list[i]);
        }
        if (n > 0)
            free(list);
    }
    is_int(nfiles, (int)(sizeof expected / sizeof expected[0]), "every profile file read");

    /* ResNet-50: 177 nodes (the "177 layers" is the node count);
     * contracted it is a chain of 40: 5 stem layers (input, conv, bn,
     * relu, maxpool), 16 bottleneck blocks as two layers each (the region
     * of the block's branches ending in its add, then the relu), and 3
     * head layers (avgpool, view, fc). */
    char path[900];
    snprintf(path, sizeof path, "%s/pipedream/resnet50.txt", dir);
    struct wp_layer_table t;
    struct wp_err err = {""};
    if (ok(wp_layer_table_read_profile(&t, path, 0, WP_CONTRACT_CUTS, &err) == 0, "resnet50 read")) {
        is_int(t.nnodes, 177, "resnet50: 177 nodes before contraction");
        is_int(t.nlayers, 40, "resnet50: 40 layers after contraction (5 stem + 2 x 16 blocks + 3 head)");
        int adds = 0, relus = 0;
        for (int i = 5; i < 37; i++) {
            if (strstr(t.layers[i].name, "Add") || strstr(t.layers[i].name, "add"))
                adds++;
            if (strstr(t.layers[i].name, "ReLU"))
                relus++;
        }
        is_int(adds, 16, "resnet50: 16 block regions end in the residual add");
        is_int(relus, 16, "resnet50: each followed by its ReLU");
        printf("# resnet50 layer 6: %s (%.3f ms forward)\n", t.layers[5].name, t.layers[5].forward_s * 1e3);

        /* round trip through wavepipe's own format */
        char out[512];
        snprintf(out, sizeof out, "%s/resnet50.layers.cfg", tmpdir);
        ok(wp_layer_table_write(out, &t, &err) == 0, "resnet50 written as wavepipe-layers (%s)", err.msg);
        struct wp_layer_table u;
        if (ok(wp_layer_table_read(&u, out, 0, WP_CONTRACT_CUTS, &err) == 0, "wavepipe-layers read back, format detected (%s)",
               err.msg)) {
            is_int(u.nlayers, t.nlayers, "round trip: layer count");
            is_int(u.profile_batch, t.profile_batch, "round trip: profile batch");
            is_int(u.profile_batch_assumed, 1, "round trip: batch still marked assumed");
            is_int(u.nnodes, 177, "round trip: node count");
            is_str(u.name, "resnet50", "round trip: name");
            int same = 1;
            for (int i = 0; i < t.nlayers && i < u.nlayers; i++) {
                const struct wp_layer *a = &t.layers[i], *b = &u.layers[i];
                if (strcmp(a->name, b->name) || fabs(a->forward_s - b->forward_s) > 1e-9 * a->forward_s ||
                    fabs(a->backward_s - b->backward_s) > 1e-9 * a->backward_s ||
                    fabs(a->activation_bytes - b->activation_bytes) > 1e-9 * a->activation_bytes ||
                    fabs(a->parameter_bytes - b->parameter_bytes) > 1e-9 * a->parameter_bytes ||
                    fabs(a->optimizer_bytes - b->optimizer_bytes) > 1e-9 * a->optimizer_bytes) {
                    printf("# layer %d differs: %s %.17g vs %s %.17g\n", i, a->name, a->forward_s, b->name,
                           b->forward_s);
                    same = 0;
                }
            }
            ok(same, "round trip: every layer equal (relative 1e-9)");
            wp_layer_table_destroy(&u);
        }
        wp_layer_table_destroy(&t);
    }

    /* the caller's batch where the name has none */
    snprintf(path, sizeof path, "%s/pipedream/vgg16.txt", dir);
    if (ok(wp_layer_table_read(&t, path, 64, WP_CONTRACT_CUTS, &err) == 0, "vgg16 read with a given batch")) {
        is_int(t.profile_batch, 64, "vgg16: caller's profile batch");
        has_substr(t.source, "given by the caller", "vgg16: source says where the batch came from");
        wp_layer_table_destroy(&t);
    }
    /* the frontier alternative keeps every node */
    snprintf(path, sizeof path, "%s/dapple-v100/bert-48-pbs-2.txt", dir);
    if (ok(wp_layer_table_read_profile(&t, path, 0, WP_CONTRACT_FRONTIER, &err) == 0, "bert-48 frontier")) {
        is_int(t.nlayers, 53, "bert-48 frontier: one layer per node");
        wp_layer_table_destroy(&t);
    }
    return 0;
}

#define P(id, name, f, b, a, p)                                                                          \
    id " -- " name " -- forward_compute_time=" #f ", backward_compute_time=" #b ", activation_size=" #a \
       ", parameter_size=" #p "\n"

static void hand_made_graph(void)
{
    /* n1 -> n2 -> {n3, n4} -> n5 -> n6 -> n7, and n5 -> n7 skipping n6.
     * Cuts: n1, n2, n5, n7 (n3/n4 bypass each other, n5 -> n7 jumps n6).
     * Layers: [n1] [n2] [n3 n4 n5] [n6 n7]. Node lines shuffled. */
    const char *text = P("node7", "loss", 1, 1, 5, 0) P("node3", "a", 1, 1, 7, 1) P("node1", "in", 1, 0, 10, 0)
        P("node5", "add", 1, 1, 30, 0) P("node2", "conv", 2, 3, 20, 5) P("node6", "fc", 1, 2, 40, 3)
            P("node4", "b", 2, 2, 8, 2) "\tnode1 -- node2\n\tnode2 -- node3\n\tnode2 -- node4\n"
                                          "\tnode3 -- node5\n\tnode4 -- node5\n\tnode5 -- node6\n"
                                          "  node6 -- node7\n \tnode5 -- node7\n";
    struct wp_layer_table t;
    struct wp_err err = {""};
    if (!ok(wp_layer_table_parse_profile(&t, text, "hand.txt", 0, WP_CONTRACT_CUTS, &err) == 0,
            "hand-made graph read (%s)", err.msg))
        return;
    is_int(t.nnodes, 7, "hand-made: 7 nodes");
    is_int(t.nlayers, 4, "hand-made: contracted to 4 layers");
    if (t.nlayers == 4) {
        is_str(t.layers[0].name, "node1 in", "layer 1 is the input");
        is_str(t.layers[1].name, "node2 conv", "layer 2 is conv");
        is_near(t.layers[1].activation_bytes, 20, 0, "layer 2 activation");
        is_near(t.layers[2].forward_s, 4e-3, 1e-12, "layer 3 = n3+n4+n5 forward 4 ms");
        is_near(t.layers[2].backward_s, 4e-3, 1e-12, "layer 3 backward 4 ms");
        is_near(t.layers[2].parameter_bytes, 3, 0, "layer 3 parameters 1+2+0");
        is_near(t.layers[2].activation_bytes, 30, 0, "layer 3 activation = output of its cut n5");
        has_substr(t.layers[2].name, "add", "layer 3 named after its cut");
        is_near(t.layers[3].forward_s, 2e-3, 1e-12, "layer 4 = n6+n7 forward 2 ms");
        is_near(t.layers[3].backward_s, 3e-3, 1e-12, "layer 4 backward 3 ms");
        is_near(t.layers[3].parameter_bytes, 3, 0, "layer 4 parameters");
        is_near(t.layers[3].activation_bytes, 5, 0, "layer 4 activation = loss output");
    }
    is_int(t.profile_batch, 1, "no pbs in the name: batch 1");
    is_int(t.profile_batch_assumed, 1, "and marked assumed");
    has_substr(t.source, "assumed 1", "source says so");
    wp_layer_table_destroy(&t);

    /* frontier mode: every node, boundary bytes of all live outputs.
     * Topological order by line: n1 n2 n3 n4 n5 n6 n7 (n3 before n4 since
     * its line comes first). After n3: n2's output is still needed by n4,
     * so 20 + 7; after n6: n5 (for n7) and n6 = 70. */
    if (ok(wp_layer_table_parse_profile(&t, text, "hand.txt", 0, WP_CONTRACT_FRONTIER, &err) == 0,
           "hand-made frontier read")) {
        is_int(t.nlayers, 7, "frontier: 7 layers");
        if (t.nlayers == 7) {
            is_str(t.layers[2].name, "node3 a", "frontier: third is n3");
            is_near(t.layers[2].activation_bytes, 27, 0, "frontier after n3: n2 + n3 = 27");
            is_near(t.layers[3].activation_bytes, 15, 0, "frontier after n4: n3 + n4 = 15");
            is_near(t.layers[5].activation_bytes, 70, 0, "frontier after n6: n5 + n6 = 70");
            is_near(t.layers[6].activation_bytes, 5, 0, "frontier: last layer its own output");
        }
        wp_layer_table_destroy(&t);
    }

    /* AmoebaNet-style [a; b] and a pbs name */
    const char *amoeba = "node1 -- Input -- forward_compute_time=0.61, backward_compute_time=0.00, "
                         "activation_size=4816896, parameter_size=0\n"
                         "node2 -- stem -- forward_compute_time=0.40, backward_compute_time=0.56, "
                         "activation_size=[37850112; 12616704], parameter_size=3456\n"
                         "\tnode1 -- node2\n";
    if (ok(wp_layer_table_parse_profile(&t, amoeba, "dir/amoeba-x-pbs-8.txt", 0, WP_CONTRACT_CUTS, &err) == 0,
           "amoeba snippet read (%s)", err.msg)) {
        is_near(t.layers[1].activation_bytes, 37850112.0 + 12616704.0, 0, "[a; b] summed: 50466816");
        is_int(t.profile_batch, 8, "pbs-8 from the name");
        is_str(t.name, "amoeba-x-pbs-8", "name is the base name");
        wp_layer_table_destroy(&t);
    }
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void expect_error(const char *file, const char *text, const char *want1, const char *want2)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, file);
    write_text(path, text);
    struct wp_layer_table t;
    struct wp_err err = {""};
    int rc = wp_layer_table_read(&t, path, 0, WP_CONTRACT_CUTS, &err);
    ok(rc == -1, "%s rejected", file);
    char where[600];
    snprintf(where, sizeof where, "%s%s", path, want1);
    has_substr(err.msg, where, "%s: error names file:line", file);
    has_substr(err.msg, want2, "%s: error says what", file);
    if (rc == 0)
        wp_layer_table_destroy(&t);
}

static void error_tests(void)
{
    expect_error("malformed.txt",
                 P("node1", "in", 1, 0, 10, 0) "node2 -- x -- forward_compute_time=abc, backward_compute_time=1, "
                                               "activation_size=1, parameter_size=1\n",
                 ":2:", "forward_compute_time");
    expect_error("garbage.txt", P("node1", "in", 1, 0, 10, 0) "\n\nhello world\n", ":4:", "malformed line");
    expect_error("missing.txt", "node1 -- in -- forward_compute_time=1, backward_compute_time=1\n", ":1:",
                 "malformed");
    expect_error("negative.txt", P("node1", "in", 1, 0, 10, 0) P("node2", "c", 1, -2.5, 10, 0), ":2:",
                 "negative backward_compute_time -2.5");
    expect_error("negative-list.txt", P("node1", "in", 1, 0, [3; -4], 0), ":1:", "negative activation_size");
    expect_error("unknown.txt", P("node1", "in", 1, 0, 10, 0) P("node2", "c", 1, 1, 10, 0) "\tnode1 -- node2\n"
                                                                                           "\tnode2 -- node9\n",
                 ":4:", "unknown node node9");
    expect_error("cycle.txt",
                 P("node1", "in", 1, 0, 10, 0) P("node2", "c", 1, 1, 10, 0) P("node3", "d", 1, 1, 10, 0)
                     "\tnode1 -- node2\n\tnode2 -- node3\n\tnode3 -- node2\n",
                 ":", "cycle");
    expect_error("duplicate.txt", P("node1", "in", 1, 0, 10, 0) P("node1", "c", 1, 1, 10, 0), ":2:",
                 "duplicate node node1");
    expect_error("bad-edge.txt", P("node1", "in", 1, 0, 10, 0) "\tnode1 -> node2\n", ":2:",
                 "malformed edge line");
    /* libconfig format: unknown key with the nearest name, ranges */
    expect_error("typo.cfg",
                 "format = \"wavepipe-layers\";\nversion = 1;\nname = \"m\";\nprofile_batch = 2;\n"
                 "layers = (\n  { name = \"a\"; forward_s = 0.1; backward_s = 0.2;\n"
                 "    activation_bytes = 10.0; parameter_bytes = 4.0; forward_ss = 1.0; }\n);\n",
                 ":7:", "forward_s");
    expect_error("range.cfg",
                 "# comment first\nformat = \"wavepipe-layers\";\nversion = 1;\nname = \"m\";\nprofile_batch = 2;\n"
                 "layers = (\n  { name = \"a\"; forward_s = 0.1; backward_s = 0.2;\n"
                 "    activation_bytes = -10.0; parameter_bytes = 4.0; }\n);\n",
                 ":8:", "activation_bytes");
    expect_error("batch.cfg",
                 "format = \"wavepipe-layers\";\nversion = 1;\nname = \"m\";\nprofile_batch = 0;\n"
                 "layers = ( { name = \"a\"; forward_s = 0.1; backward_s = 0.2; activation_bytes = 1; "
                 "parameter_bytes = 4; } );\n",
                 ":4:", "profile_batch");
    expect_error("wrongformat.cfg",
                 "format = \"wavepipe-point\";\nversion = 1;\nname = \"m\";\nprofile_batch = 1;\n"
                 "layers = ( { name = \"a\"; forward_s = 0.1; backward_s = 0.2; activation_bytes = 1; "
                 "parameter_bytes = 4; } );\n",
                 ":1:", "wavepipe-layers");

    /* a small hand-written table reads, integers accepted for floats */
    char path[512];
    snprintf(path, sizeof path, "%s/ok.cfg", tmpdir);
    write_text(path, "// hand-written\nformat = \"wavepipe-layers\";\nversion = 1;\nname = \"m\";\n"
                     "profile_batch = 3;\nlayers = ( { name = \"a\"; forward_s = 1; backward_s = 2; "
                     "activation_bytes = 10; parameter_bytes = 4; },\n { name = \"b\"; forward_s = 0.5; "
                     "backward_s = 1.0; activation_bytes = 0.0; parameter_bytes = 8e9; } );\n");
    struct wp_layer_table t;
    struct wp_err err = {""};
    if (ok(wp_layer_table_read(&t, path, 0, WP_CONTRACT_CUTS, &err) == 0, "hand-written wavepipe-layers read (%s)", err.msg)) {
        is_int(t.nlayers, 2, "two layers");
        is_int(t.profile_batch, 3, "batch 3");
        is_near(t.layers[0].backward_s, 2, 0, "integer accepted for a float");
        is_near(t.layers[1].parameter_bytes, 8e9, 0, "8e9 parameter bytes");
        is_near(t.layers[1].optimizer_bytes, 16e9, 0, "optimizer state not given: AdamW float32, 2 x 8e9");
        wp_layer_table_destroy(&t);
    }
}

static void gpt2_tests(void)
{
    struct wp_gpt_shape m = {12, 768, 12, 1024, 50257, 1, WP_PRECISION_FP32};
    is_near(wp_gpt_block_params(&m), 7087872, 0, "GPT-2 small block: 12*768^2 + 13*768 = 7087872");
    is_near(wp_gpt_total_params(&m), 124439808, 0, "GPT-2 small: 124,439,808 parameters (HF count)");
    /* 2*1024*12*768^2 = 14495514624; 4*1024^2*768 = 3221225472 */
    is_near(wp_gpt_block_forward_flops(&m), 17716740096.0, 0, "GPT-2 small block forward FLOPs, b=1");
    struct wp_layer_table t;
    struct wp_err err = {""};
    if (!ok(wp_layer_table_gpt(&t, &m, 1e12, &err) == 0, "GPT-2 small table (%s)", err.msg))
        return;
    is_int(t.nlayers, 14, "embedding + 12 blocks + head");
    is_near(wp_layer_table_parameter_bytes(&t), 4.0 * 124439808, 0, "parameter bytes 4 x 124,439,808");
    is_near(t.layers[1].forward_s, 0.017716740096, 1e-12, "block forward 17.7 ms at 1 TFLOP/s");
    is_near(t.layers[1].backward_s, 0.035433480192, 1e-12, "block backward twice that");
    is_near(t.layers[1].activation_bytes, 1024.0 * 768 * 4, 0, "block boundary b*T*C*4 = 3 MiB");
    is_near(t.layers[0].parameter_bytes, 4.0 * (50257 * 768 + 1024 * 768), 0, "embedding wte + wpe");
    /* 2*1024*768*50257 = 79047426048 */
    is_near(t.layers[13].forward_s, 0.079047426048, 1e-12, "LM head forward 79.0 ms at 1 TFLOP/s");
    is_near(t.layers[13].parameter_bytes, 4.0 * 2 * 768, 0, "head parameters: final LayerNorm only (tied)");
    is_near(wp_layer_table_optimizer_bytes(&t), 8.0 * 124439808, 0, "AdamW m and v: 8 x 124,439,808 bytes");
    is_near(t.layers[13].activation_bytes, 0, 0, "head ends the chain");
    wp_layer_table_destroy(&t);

    struct wp_gpt_shape m8 = {12, 768, 12, 1024, 50257, 8, WP_PRECISION_BF16};
    if (ok(wp_layer_table_gpt(&t, &m8, 1e12, &err) == 0, "b=8, 2-byte elements")) {
        is_near(t.layers[1].forward_s, 8 * 0.017716740096, 1e-12, "FLOPs linear in b");
        is_near(t.layers[1].activation_bytes, 8.0 * 1024 * 768 * 2, 0, "boundary b*T*C*2");
        is_near(wp_layer_table_parameter_bytes(&t), 2.0 * 124439808, 0, "2-byte parameters");
        is_near(wp_layer_table_optimizer_bytes(&t), 12.0 * 124439808, 0,
                "optimizer state float32: the moments and the master weights (Megatron-LM's mixed precision)");
        double grads = 0;
        for (int i = 0; i < t.nlayers; i++)
            grads += wp_layer_gradient_bytes(&t.layers[i]);
        is_near(grads, 4.0 * 124439808, 0, "gradients float32");
        is_int(t.profile_batch, 8, "profile batch is b");
        wp_layer_table_destroy(&t);
    }
    struct wp_gpt_shape bad = {12, 768, 7, 1024, 50257, 1, WP_PRECISION_FP32};
    ok(wp_layer_table_gpt(&t, &bad, 1e12, &err) == -1, "7 heads do not divide 768");
    has_substr(err.msg, "heads", "error names heads");
}

/* DAPPLE's profiles read as chains of their node lines: BERT-48 keeps its
 * 53 nodes as layers (contracting at cuts leaves 3), with the same totals;
 * a node file whose edges point backwards is refused with file:line. */
static void line_order_tests(const char *dir)
{
    const char *text = "node1 -- a -- forward_compute_time=1.00, backward_compute_time=2.00, activation_size=8, parameter_size=4\n"
                       "node2 -- b -- forward_compute_time=1.00, backward_compute_time=2.00, activation_size=8, parameter_size=4\n"
                       "\tnode2 -- node1\n";
    struct wp_layer_table t;
    struct wp_err err = {""};
    wp_layer_table_init(&t);
    ok(wp_layer_table_parse_profile(&t, text, "back.txt", 0, WP_CONTRACT_LINES, &err) == -1,
       "line order: an edge pointing backwards is refused");
    has_substr(err.msg, "back.txt:3: edge node2 -- node1 points backwards", "with file:line");
    wp_layer_table_destroy(&t);
    if (!dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/dapple-v100/bert-48-pbs-2.txt", dir);
    struct wp_layer_table cuts, lines;
    wp_layer_table_init(&cuts);
    wp_layer_table_init(&lines);
    if (wp_layer_table_read_profile(&cuts, path, 0, WP_CONTRACT_CUTS, &err) == 0 &&
        wp_layer_table_read_profile(&lines, path, 0, WP_CONTRACT_LINES, &err) == 0) {
        is_int(lines.nlayers, 53, "bert-48 as node lines: 53 layers (cut contraction: %d)", cuts.nlayers);
        is_near(wp_layer_table_forward_s(&lines), wp_layer_table_forward_s(&cuts), 1e-12,
                "bert-48: the same forward total either way");
        is_near(wp_layer_table_parameter_bytes(&lines), wp_layer_table_parameter_bytes(&cuts), 1e-12,
                "bert-48: the same parameter bytes either way");
    } else {
        ok(0, "bert-48 reads (%s)", err.msg);
    }
    wp_layer_table_destroy(&cuts);
    wp_layer_table_destroy(&lines);

    /* auto: node lines where every edge points forward, else cuts */
    static const struct {
        const char *rel;
        int layers;
    } autos[] = {{"dapple-v100/bert-48-pbs-2.txt", 53}, {"pipedream/resnet50.txt", 40}};
    for (size_t i = 0; i < sizeof autos / sizeof autos[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, autos[i].rel);
        struct wp_layer_table a;
        if (ok(wp_layer_table_read(&a, path, 0, WP_CONTRACT_AUTO, &err) == 0, "auto reads %s", autos[i].rel)) {
            is_int(a.nlayers, autos[i].layers, "auto: %s has %d layers", autos[i].rel, autos[i].layers);
            is_near(wp_layer_table_optimizer_bytes(&a), 2 * wp_layer_table_parameter_bytes(&a), 0,
                    "%s: optimizer state twice the parameters", autos[i].rel);
            wp_layer_table_destroy(&a);
        }
    }
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/wp-test-layers-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        printf("1..0 # SKIP cannot make a temporary directory\n");
        return 0;
    }
    hand_made_graph();
    error_tests();
    gpt2_tests();
    profile_tests();
    {
        char dirbuf[256], why[2048];
        line_order_tests(find_profiles(dirbuf, sizeof dirbuf, why, sizeof why));
    }
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", tmpdir);
    return tap_done();
}
