/* The comparison of a chosen plan with the baselines (see plan_compare.h). */
#include "plan/plan_compare.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plan/plan_search.h"

/* Where the compared plans go (a directory), or nothing. */
struct compare_out {
    const char *dir;
    const struct wp_layer_table *layers;
    FILE *csv;
    int failed;
    void (*report)(const char *message);
};

/* The cost model's and the simulator's time of a plan, on one line; with a
 * directory, the plan also goes to DIR/NAME.cfg and a row to compared.csv. */
static void compare_line(FILE *out, const struct wp_plan_model *m, const char *label, const char *name,
                         const struct wp_plan *p, struct compare_out *co)
{
    char shape[256];
    wp_plan_shape(p, shape, sizeof shape);
    double sim = 0;
    struct wp_err err;
    int simulated = wp_plan_simulate(m, p, 1, 0, &sim, NULL, &err) == 0;
    fprintf(out, "  %-22s %-16s L %9.4f s   simulated %9.4f s%s\n", label, shape, p->latency.total_s,
            simulated ? sim : 0.0, p->fits ? "" : "   (does not fit in memory)");
    if (!co->csv)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.cfg", co->dir, name);
    if (wp_plan_write(path, p, co->layers, &err)) {
        co->report(err.msg);
        co->failed = 1;
        return;
    }
    fprintf(co->csv, "%s,%s,%s,%.6f,%.6f,%d\n", name, path, shape, p->latency.total_s, simulated ? sim : -1.0,
            p->fits);
}

/* Data parallelism and even splits into 2, 4, ... stages (the last one
 * stage per GPU), on one line each. */
static void compare_baselines(FILE *out, const struct wp_plan_model *m, struct compare_out *co)
{
    int N = m->layers->nlayers, G = wp_plan_model_groups(m);
    struct wp_plan p;
    struct wp_err err;
    int one = N, all = G;
    wp_plan_init(&p);
    if (wp_plan_fixed(m, 1, &one, &all, &p, &err) == 0)
        compare_line(out, m, "data parallel", "data-parallel", &p, co);
    wp_plan_destroy(&p);
    int S = N < G ? N : G;
    int *counts = calloc((size_t)S, sizeof *counts), *reps = calloc((size_t)S, sizeof *reps);
    for (int stages = 2; counts && reps && stages <= S; stages *= 2) {
        if (G % stages)
            continue;
        for (int s = 0; s < stages; s++) {
            counts[s] = (int)((long)(s + 1) * N / stages) - (int)((long)s * N / stages);
            reps[s] = G / stages;
        }
        char label[64], name[64];
        snprintf(label, sizeof label, stages == G ? "straight, even layers" : "%d even stages", stages);
        snprintf(name, sizeof name, stages == G ? "straight" : "stages-%d", stages);
        wp_plan_init(&p);
        if (wp_plan_fixed(m, stages, counts, reps, &p, &err) == 0)
            compare_line(out, m, label, name, &p, co);
        wp_plan_destroy(&p);
    }
    free(counts);
    free(reps);
}

int wp_plan_compare(FILE *out, const struct wp_plan_model *m, const struct wp_plan *best, const char *dir,
                    void (*report)(const char *message))
{
    struct compare_out co = {dir, m->layers, NULL, 0, report};
    char csv_path[4096], tmp_path[4200], msg[4400]; /* a message naming a path, whatever its length */
    if (dir) {
        if (mkdir(dir, 0777) && errno != EEXIST) {
            snprintf(msg, sizeof msg, "%s: %s", dir, strerror(errno));
            report(msg);
            return -1;
        }
        snprintf(csv_path, sizeof csv_path, "%s/compared.csv", dir);
        snprintf(tmp_path, sizeof tmp_path, "%s.tmp", csv_path);
        if (!(co.csv = fopen(tmp_path, "w"))) {
            snprintf(msg, sizeof msg, "%s: %s", tmp_path, strerror(errno));
            report(msg);
            return -1;
        }
        fprintf(co.csv, "plan,file,shape,latency_s,simulated_s,fits\n");
    }
    int t = wp_plan_tensor_size(m->point.tensor);
    fprintf(out, "\ncompared (the same cost model, and the simulator on the plan's stage costs");
    if (t > 1)
        fprintf(out, "; replicas are tensor groups of %d x %d GPUs as in the plan", m->point.tensor.p1,
                m->point.tensor.p2);
    fprintf(out, "):\n");
    compare_line(out, m, "chosen", "chosen", best, &co);
    compare_baselines(out, m, &co);
    if (!co.csv)
        return 0;
    if (fclose(co.csv) || co.failed || rename(tmp_path, csv_path)) {
        if (!co.failed) {
            snprintf(msg, sizeof msg, "%s: %s", csv_path, strerror(errno));
            report(msg);
        }
        remove(tmp_path);
        return -1;
    }
    fprintf(out, "wrote the compared plans and %s\n", csv_path);
    return 0;
}
