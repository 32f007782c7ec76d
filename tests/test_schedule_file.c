/* Schedule files (--schedule-file): every kind through wavepipe's CSV and
 * back gives the same action lists and placement; the kinds with one rank
 * per stage through PyTorch's compute-only CSV and back give the same compute
 * order and makespan; a 1F1B typed by hand as a PyTorch user writes it takes
 * (M+P-1)(tf+tb); and bad files fail with file:line and cell, replicated or
 * two-rank stages, mixed B and I/W, a missing backward (the validator's rank,
 * step and action), an unreadable file. */
#include <stdlib.h>
#include <unistd.h>

#include "sched/generate.h"
#include "sched/schedule_file.h"
#include "sched/simulate.h"
#include "sched/validate.h"
#include "sched_params.h"
#include "tap.h"

static char dir[] = "/tmp/wp-schedule-file-XXXXXX";

static const char *path_of(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static const char *write_text(const char *name, const char *text)
{
    const char *path = path_of(name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

/* Writes s in wavepipe's CSV (torch 0) or PyTorch's (torch 1); 0 on success. */
static int write_schedule(const char *name, const struct wp_schedule *s, int torch, struct wp_err *err)
{
    FILE *f = fopen(path_of(name), "w");
    if (!f)
        return wp_errorf(err, "cannot write %s", path_of(name));
    int rc = 0;
    if (torch)
        rc = wp_schedule_write_torch_csv(f, s, err);
    else
        wp_schedule_write_csv(f, s);
    fclose(f);
    return rc;
}

/* Settings that give every kind something to vary: groups of 2, 2 waves,
 * 2 chunks, a W pass. */
static struct wp_sched_params file_params(enum wp_sched_kind kind, int P, int M)
{
    struct wp_sched_params p = params(kind, P, M);
    p.k = 2;
    p.waves = 2;
    p.chunks = 2;
    p.tw = 0.5;
    return p;
}

static int same_action(const struct wp_action *x, const struct wp_action *y)
{
    return x->op == y->op && x->stage == y->stage && x->microbatch == y->microbatch && x->peer == y->peer;
}

/* Same shape, placement and action lists. */
static int same_schedule(const struct wp_schedule *a, const struct wp_schedule *b)
{
    if (a->nranks != b->nranks || a->nstages != b->nstages || a->nmicro != b->nmicro ||
        a->split_backward != b->split_backward)
        return 0;
    for (int st = 0; st < a->nstages; st++) {
        const struct wp_stage_place *x = &a->place[st], *y = &b->place[st];
        if (x->ncopies != y->ncopies || x->nreplicas != y->nreplicas)
            return 0;
        for (int i = 0; i < x->ncopies * x->nreplicas; i++)
            if (x->ranks[i] != y->ranks[i])
                return 0;
    }
    for (int m = 0; m < a->nmicro; m++)
        if (a->mb_copy[m] != b->mb_copy[m])
            return 0;
    for (int r = 0; r < a->nranks; r++) {
        if (a->lists[r].count != b->lists[r].count)
            return 0;
        for (int i = 0; i < a->lists[r].count; i++)
            if (!same_action(&a->lists[r].actions[i], &b->lists[r].actions[i]))
                return 0;
    }
    return 1;
}

/* Same compute actions in the same order on every rank. */
static int same_compute_order(const struct wp_schedule *a, const struct wp_schedule *b)
{
    if (a->nranks != b->nranks)
        return 0;
    for (int r = 0; r < a->nranks; r++) {
        int i = 0, j = 0;
        const struct wp_action_list *x = &a->lists[r], *y = &b->lists[r];
        for (;;) {
            while (i < x->count && !wp_op_is_compute(x->actions[i].op))
                i++;
            while (j < y->count && !wp_op_is_compute(y->actions[j].op))
                j++;
            if (i == x->count || j == y->count)
                break;
            if (!same_action(&x->actions[i++], &y->actions[j++]))
                return 0;
        }
        if (i != x->count || j != y->count)
            return 0;
    }
    return 1;
}

static double makespan(const struct wp_schedule *s, double tf, double tb, double tw)
{
    struct wp_cost_model cost;
    wp_cost_model_default(&cost);
    cost.tf = tf;
    cost.tb = tb;
    cost.tw = tw;
    struct wp_sim_result res;
    struct wp_err err;
    if (wp_simulate(s, &cost, &res, &err))
        return -1;
    double t = res.makespan;
    wp_sim_result_destroy(&res);
    return t;
}

static void test_wavepipe_round_trips(void)
{
    for (int kind = 0; kind < WP_SCHED_KIND_COUNT; kind++) {
        if (!wp_sched_kind_generated((enum wp_sched_kind)kind))
            continue;
        struct wp_sched_params p = file_params(kind, 4, 8);
        struct wp_schedule g, f;
        struct wp_err err = {""};
        const char *name = wp_sched_kind_name((enum wp_sched_kind)kind);
        if (wp_schedule_generate(&p, &g, &err)) {
            ok(0, "%s generates (%s)", name, err.msg);
            continue;
        }
        int rc = write_schedule("w.csv", &g, 0, &err) || wp_schedule_load(path_of("w.csv"), &p, &f, &err);
        if (!ok(rc == 0, "%s: generated, written as wavepipe CSV, loaded%s%s", name, rc ? ": " : "", rc ? err.msg : "")) {
            wp_schedule_destroy(&g);
            continue;
        }
        ok(same_schedule(&g, &f), "%s: the same placement and action lists after the round trip", name);
        is_str(wp_sched_kind_name(f.params.kind), "file", "%s: the loaded schedule's kind is file", name);
        is_near(makespan(&f, 1, 2, 0.5), makespan(&g, 1, 2, 0.5), 1e-12, "%s: the same simulated makespan", name);
        wp_schedule_destroy(&f);
        wp_schedule_destroy(&g);
    }
}

static void test_torch_round_trips(void)
{
    static const enum wp_sched_kind kinds[] = {WP_SCHED_GPIPE, WP_SCHED_1F1B, WP_SCHED_KFKB, WP_SCHED_INTERLEAVED,
                                               WP_SCHED_HANAYO, WP_SCHED_ZBH1,  WP_SCHED_ZBV,  WP_SCHED_DUALPIPEV};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        struct wp_sched_params p = file_params(kinds[i], 4, 8);
        struct wp_schedule g, f;
        struct wp_err err = {""};
        const char *name = wp_sched_kind_name(kinds[i]);
        if (wp_schedule_generate(&p, &g, &err)) {
            ok(0, "%s generates (%s)", name, err.msg);
            continue;
        }
        int rc = write_schedule("t.csv", &g, 1, &err) || wp_schedule_load(path_of("t.csv"), &p, &f, &err);
        if (!ok(rc == 0, "%s: generated, written as PyTorch CSV, loaded%s%s", name, rc ? ": " : "", rc ? err.msg : "")) {
            wp_schedule_destroy(&g);
            continue;
        }
        ok(same_compute_order(&g, &f), "%s: the same compute order on every rank", name);
        is_int(f.split_backward, g.split_backward, "%s: %s backward", name, g.split_backward ? "a split (I/W)" : "a full (B)");
        is_near(makespan(&f, 1, 2, 0.5), makespan(&g, 1, 2, 0.5), 1e-12, "%s: the same simulated makespan (%g)", name,
                makespan(&g, 1, 2, 0.5));
        ok(same_schedule(&g, &f), "%s: with the communication added, the generator's very action lists", name);
        wp_schedule_destroy(&f);
        wp_schedule_destroy(&g);
    }

    /* the lock-step grid PipelineScheduleMulti runs: 1F1B on 2 ranks */
    struct wp_sched_params p = file_params(WP_SCHED_1F1B, 2, 4);
    struct wp_schedule g;
    struct wp_err err = {""};
    char text[256] = "";
    if (wp_schedule_generate(&p, &g, &err) == 0) {
        FILE *mem = fmemopen(text, sizeof text - 1, "w");
        ok(wp_schedule_write_torch_csv(mem, &g, &err) == 0, "1f1b on 2 ranks written as PyTorch CSV");
        fclose(mem);
        is_str(text, "0F0,0F1,,0B0,0F2,0B1,0F3,0B2,,0B3\n,1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3\n",
               "each action one step after what it needs from the other rank, empty cells between");
        wp_schedule_destroy(&g);
    }
    p = file_params(WP_SCHED_CHIMERA, 4, 8);
    if (wp_schedule_generate(&p, &g, &err) == 0) {
        ok(write_schedule("c.csv", &g, 1, &err) == -1, "chimera (each stage on 2 ranks) is not written as PyTorch CSV");
        has_substr(err.msg, "PyTorch's schedules run each stage on one rank; this chimera schedule has stage 0 on 2 "
                            "ranks", "and says why");
        wp_schedule_destroy(&g);
    }
}

/* 1F1B on 2 ranks and 4 micro-batches as a PyTorch user types it (csv.writer
 * ends lines with \r\n; an empty cell is a step without action). */
static const char *const hand_1f1b[] = {
    "0F0,0F1,0B0,0F2,0B1,0F3,0B2,0B3\r\n",
    ",1F0,1B0,1F1, 1B1 ,1F2,1B2,1F3,1B3\r\n",
};

static void test_hand_written(void)
{
    char text[512];
    snprintf(text, sizeof text, "%s%s", hand_1f1b[0], hand_1f1b[1]);
    struct wp_sched_params p;
    wp_sched_params_default(&p);
    p.tf = 1.5;
    p.tb = 2.5;
    struct wp_schedule s;
    struct wp_err err = {""};
    int rc = wp_schedule_load(write_text("hand.csv", text), &p, &s, &err);
    if (!ok(rc == 0, "a hand-written 1F1B loads%s%s", rc ? ": " : "", rc ? err.msg : ""))
        return;
    is_int(s.nranks, 2, "2 rows: 2 ranks");
    is_int(s.nstages, 2, "stages 0 and 1: 2 stages");
    is_int(s.nmicro, 4, "micro-batches 0 to 3: 4");
    is_int(s.split_backward, 0, "B: the backward is not split");
    ok(s.place[0].ranks[0] == 0 && s.place[1].ranks[0] == 1, "stage 0 on rank 0, stage 1 on rank 1");
    is_near(makespan(&s, p.tf, p.tb, 0), (4 + 2 - 1) * (p.tf + p.tb), 1e-12, "makespan (M+P-1)(tf+tb) = %g",
            (4 + 2 - 1) * (p.tf + p.tb));
    struct wp_validation v;
    if (wp_schedule_validate(&s, &v, &err) == 0) {
        ok(v.peak_activations[0] == 2 && v.peak_activations[1] == 1, "peaks reported: 2 on rank 0, 1 on rank 1");
        wp_validation_destroy(&v);
    }
    ok(s.activation_bound[0] == 4 && s.activation_bound[1] == 4,
       "no promised bound: each rank's bound is all M micro-batches of its stages");
    wp_schedule_destroy(&s);

    /* zero bubble by hand: I and W */
    const char *zb = "0F0,0F1,,0I0,0I1,0W0,0W1\n,1F0,1I0,1F1,1I1,1W0,1W1\n";
    rc = wp_schedule_load(write_text("zb.csv", zb), &p, &s, &err);
    if (!ok(rc == 0, "a hand-written split backward loads%s%s", rc ? ": " : "", rc ? err.msg : ""))
        return;
    is_int(s.split_backward, 1, "I and W: the backward is split");
    int ops[8], n = 0;
    for (int i = 0; i < s.lists[0].count && n < 8; i++)
        if (wp_op_is_compute(s.lists[0].actions[i].op))
            ops[n++] = s.lists[0].actions[i].op;
    ok(n == 6 && ops[2] == WP_OP_B && ops[3] == WP_OP_B && ops[4] == WP_OP_W,
       "PyTorch's I is wavepipe's B (the input gradient), W stays W");
    wp_schedule_destroy(&s);
}

/* Loading text fails with a message that contains fragment. */
static void expect_error(const char *what, const char *text, const char *fragment)
{
    struct wp_sched_params p;
    wp_sched_params_default(&p);
    struct wp_schedule s;
    struct wp_err err = {""};
    ok(wp_schedule_load(write_text("bad.csv", text), &p, &s, &err) == -1, "rejected: %s", what);
    has_substr(err.msg, fragment, "%s: the message names it", what);
}

static void test_errors(void)
{
    expect_error("an unknown cell", "0F0,0X1\n", "bad.csv:1: cell 2 '0X1' (rank 0) is not an action such as 0F3");
    expect_error("a cell without micro-batch", "0F0,0B0\n1F\n", "bad.csv:2: cell 1 '1F' (rank 1) is not an action");
    expect_error("PyTorch's communication action", "0F0,0SEND_F0,0B0\n,1RECV_F0,1F0,1B0\n",
                 "bad.csv:1: cell 2 '0SEND_F0' (rank 0) is one of PyTorch's communication, FSDP or overlap actions");
    expect_error("PyTorch's overlapped F and B", "0F0,(0F1;0B0)OVERLAP_F_B\n", "cell 2 '(0F1;0B0)OVERLAP_F_B'");
    expect_error("a stage on two ranks", "0F0,0B0\n0F1,0B1\n",
                 "bad.csv:2: cell 1 (0F1) puts stage 0 on rank 1, but ");
    expect_error("a stage on two ranks (the first place)", "0F0,0B0\n0F1,0B1\n",
                 "bad.csv:1: cell 1 (0F0) on rank 0: PyTorch's schedules run each stage on one rank");
    expect_error("B and I/W for the same stage", "0F0,0F1,0B0,0I1,0W1\n",
                 "bad.csv:1: cell 3 (0B0) is a full backward (B) and ");
    expect_error("B and I/W for the same stage (the split one)", "0F0,0F1,0B0,0I1,0W1\n",
                 "bad.csv:1: cell 4 (0I1) a split one (I/W), of the same stage: wavepipe splits the backward of every "
                 "stage or of none");
    expect_error("a stage numbered past a gap", "0F0,0B0,2F0,2B0\n", "stage 1 has no compute action");
    expect_error("a blank row (a rank without action)", "0F0,1F0,1B0,0B0\n\n", "bad.csv:2: rank 1 has no action");
    expect_error("a wavepipe rank without action", "rank,step,op,stage,microbatch,peer\n1,0,F,0,0,\n1,1,B,0,0,\n",
                 "bad.csv: rank 0 has no action, below the highest rank, 1");

    /* the hand-written 1F1B without rank 1's last backward */
    char text[512];
    snprintf(text, sizeof text, "%s%s", hand_1f1b[0], ",1F0,1B0,1F1,1B1,1F2,1B2,1F3\n");
    expect_error("a missing backward (the validator's rank, step and action)", text,
                 "bad.csv (with the sends, receives and STEPs wavepipe adds to compute-only lists): rank 0 step 14: "
                 "RECV_GRAD stage 0 micro-batch 3 from rank 1 has no matching send");
    snprintf(text, sizeof text, "%s%s", "0F0,0F1,0B0,0F2,0B1,0F3,0B2\n", hand_1f1b[1]);
    expect_error("a missing backward of the first stage", text, "rank 1 step 15: SEND_GRAD stage 1 micro-batch 3 to "
                                                                "rank 0 is never received");

    expect_error("a wavepipe row out of step", "rank,step,op,stage,microbatch,peer\n0,0,F,0,0,\n0,2,B,0,0,\n",
                 "bad.csv:3: rank 0 step 2, but its next step is 1");
    expect_error("an unknown wavepipe op", "rank,step,op,stage,microbatch,peer\n0,0,FWD,0,0,\n",
                 "bad.csv:2: unknown op 'FWD'");
    expect_error("a wavepipe row of 5 fields", "rank,step,op,stage,microbatch,peer\n0,0,F,0,0\n",
                 "bad.csv:2: fewer than 6 fields");
    expect_error("a send without peer", "rank,step,op,stage,microbatch,peer\n0,0,F,0,0,\n0,1,SEND_ACT,0,0,\n",
                 "bad.csv:3: peer '' is not an integer");
    expect_error("an empty file", "", "bad.csv: empty file");

    /* a replicated stage (DAPPLE) cannot be read back */
    struct wp_sched_params p = file_params(WP_SCHED_1F1B, 3, 4);
    static const int replicas[] = {2, 1};
    p.nreplicas = 2;
    p.replicas = replicas;
    struct wp_schedule g, s;
    struct wp_err err = {""};
    if (wp_schedule_generate(&p, &g, &err) == 0) {
        write_schedule("rep.csv", &g, 0, &err);
        ok(wp_schedule_load(path_of("rep.csv"), &p, &s, &err) == -1, "rejected: a replicated stage");
        has_substr(err.msg, "is on rank 1, but", "the two ranks are named");
        has_substr(err.msg, "replicated stages cannot be read from a file", "and why");
        wp_schedule_destroy(&g);
    }

    /* Chimera with one micro-batch (it goes down): the second copy of every
     * stage runs none */
    p = file_params(WP_SCHED_CHIMERA, 4, 1);
    if (wp_schedule_generate(&p, &g, &err) == 0) {
        write_schedule("rep.csv", &g, 0, &err);
        ok(wp_schedule_load(path_of("rep.csv"), &p, &s, &err) == -1, "rejected: a copy of a stage without compute");
        has_substr(err.msg, ": ALLREDUCE stage 3 on rank 0, which runs no F, B or W of the stage",
                   "the first such action is named");
        wp_schedule_destroy(&g);
    }

    ok(wp_schedule_load(path_of("no-such-file.csv"), &p, &s, &err) == -1, "rejected: an unreadable file");
    has_substr(err.msg, "cannot read schedule file", "the message says so");
    has_substr(err.msg, "no-such-file.csv: No such file or directory", "naming the file and the reason");

    p.kind = WP_SCHED_FILE;
    p.nreplicas = 0;
    ok(wp_schedule_generate(&p, &g, &err) == -1, "kind file is not generated");
    has_substr(err.msg, "read from a file (--schedule-file)", "and says where it comes from");
}

int main(void)
{
    if (!mkdtemp(dir)) {
        ok(0, "temporary directory");
        return tap_done();
    }
    test_wavepipe_round_trips();
    test_torch_round_trips();
    test_hand_written();
    test_errors();
    static const char *const names[] = {"w.csv", "t.csv", "c.csv", "hand.csv", "zb.csv", "bad.csv", "rep.csv"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(path_of(names[i]));
    rmdir(dir);
    return tap_done();
}
