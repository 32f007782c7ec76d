/* Campaign files: expansion counts (cartesian product, zip groups, exclude
 * rules), weak and strong derivation, point ids, rejected values (shell
 * injection attempts, unknown keys) with file:line, and rendering (quoting,
 * #SBATCH lines, unknown placeholders), and a failed point's reason from
 * its run.log (the watchdog's chain of waits, srun, mpiexec with the map). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "campaign/campaign.h"
#include "campaign/failure.h"
#include "campaign/recovery.h"
#include "campaign/render.h"
#include "sched/schedule.h"
#include "tap.h"

static char model_path[4096];
static char dir[4096];

static const char *write_campaign(const char *name, const char *body)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s.cfg", dir, name);
    FILE *fp = fopen(path, "w");
    fprintf(fp, "format = \"wavepipe-campaign\";\nversion = 1;\nname = \"t\";\ntemplate = \"run-cpu\";\n"
                "model = \"%s\";\nsteps = 4;\n%s", model_path, body);
    fclose(fp);
    return path;
}

/* The failure reason of a run.log holding text. */
static const char *reason_of(const char *text)
{
    static char path[4200], reason[256];
    snprintf(path, sizeof path, "%s/run.log", dir);
    FILE *fp = fopen(path, "w");
    fputs(text, fp);
    fclose(fp);
    wp_point_failure_reason(path, reason, sizeof reason);
    return reason;
}

/* The failure kind and host of a run.log holding text. */
static struct wp_point_failure failure_of(const char *text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/run.log", dir);
    FILE *fp = fopen(path, "w");
    fputs(text, fp);
    fclose(fp);
    struct wp_point_failure f;
    wp_point_failure_read(path, &f);
    return f;
}

/* Lost or the run's own, and which node (recovery resubmits only a loss). */
static void failure_kinds(void)
{
    static const char map[] = "ranks on wpn1 (rank:pid): 0:100 1:101\nranks on wpn2 (rank:pid): 2:200 3:201\n";
    char log[2048];
    snprintf(log, sizeof log, "%ssrun: error: wpn2: task 2: Killed\n", map);
    struct wp_point_failure f = failure_of(log);
    ok(f.kind == WP_FAILURE_LOST && strcmp(f.host, "wpn2") == 0, "srun's Killed: lost, on wpn2 (%d, %s)", f.kind,
       f.host);
    snprintf(log, sizeof log, "%ssrun: error: wpn1: task 1: Segmentation fault (core dumped)\n", map);
    f = failure_of(log);
    ok(f.kind == WP_FAILURE_OWN && strcmp(f.host, "wpn1") == 0, "srun's Segmentation fault: the run's own (%d)",
       f.kind);
    snprintf(log, sizeof log, "%ssrun: error: wpn1: task 0: Aborted\n", map);
    ok(failure_of(log).kind == WP_FAILURE_OWN, "srun's Aborted: the run's own");
    snprintf(log, sizeof log,
             "%swavepipe run: rank 1 on wpn1: no progress for 2.0 s waiting on an MPI collective or message "
             "(watchdog limit 2.0 s); ending the job (a rank or its node lost?)\n",
             map);
    f = failure_of(log);
    ok(f.kind == WP_FAILURE_LOST && strcmp(f.host, "wpn2") == 0, "a silent node (watchdog): lost, wpn2 (%s)", f.host);
    snprintf(log, sizeof log,
             "%swavepipe run: rank 0 on wpn1: MPI failed waiting on a receive from rank 3 (on wpn2): Other MPI "
             "error; ending the job (a rank or its node lost?)\n",
             map);
    f = failure_of(log);
    ok(f.kind == WP_FAILURE_LOST && strcmp(f.host, "wpn2") == 0, "an MPI call failed on rank 3: lost, wpn2 (%s)",
       f.host);
    snprintf(log, sizeof log, "%s=   PID 201 RUNNING AT wpn2\n=   EXIT CODE: 9\n", map);
    f = failure_of(log);
    ok(f.kind == WP_FAILURE_LOST && strcmp(f.host, "wpn2") == 0, "mpiexec, exit code 9 (SIGKILL): lost, wpn2");
    snprintf(log, sizeof log, "%s=   PID 200 RUNNING AT wpn2\n=   EXIT CODE: 139\n", map);
    ok(failure_of(log).kind == WP_FAILURE_OWN, "mpiexec, exit code 139 (SIGSEGV): the run's own");
    snprintf(log, sizeof log, "%swavepipe run: --config x.cfg:3: unknown key 'lyers'\n", map);
    f = failure_of(log);
    ok(f.kind == WP_FAILURE_NONE && f.reason[0] == '\0', "bad input: no lost rank named");
}

/* Whether and how a point is submitted again after a loss (recovery.h). */
static void recovery_decisions(void)
{
    const struct wp_recovery_policy replan = {1, 2, 3}, none = {0, 1, 3};
    const char *usable[] = {"wpn1", "wpn2", "wpn3"};
    struct wp_point_failure lost = {WP_FAILURE_LOST, "wpn2", "task 2 on wpn2: Killed (srun)"};
    struct wp_point_failure own = {WP_FAILURE_OWN, "wpn1", "task 1 on wpn1: Segmentation fault (srun)"};
    struct wp_point_failure bad = {WP_FAILURE_NONE, "", ""};
    struct wp_recovery_chain chain = {0};
    struct wp_recovery_decision d;
    wp_recovery_decide(&replan, &lost, &chain, 3, usable, 3, &d);
    ok(d.resubmit && d.nodes == 2 && strcmp(d.exclude, "wpn2") == 0,
       "a lost node on 3 of 3: again on the 2 left, wpn2 excluded (%s)", d.why);
    wp_recovery_decide(&replan, &lost, &chain, 2, usable, 3, &d);
    ok(d.resubmit && d.nodes == 2 && strcmp(d.exclude, "wpn2") == 0, "on 2 of 3: the same size without it (%d)",
       d.nodes);
    wp_recovery_decide(&none, &lost, &chain, 3, usable, 3, &d);
    ok(!d.resubmit && strstr(d.why, "\"none\""), "recover = none: nothing (%s)", d.why);
    wp_recovery_decide(&replan, &own, &chain, 3, usable, 3, &d);
    ok(!d.resubmit && strstr(d.why, "own fault") && strstr(d.why, "Segmentation"), "a crash of the run: nothing (%s)",
       d.why);
    wp_recovery_decide(&replan, &bad, &chain, 3, usable, 3, &d);
    ok(!d.resubmit && strstr(d.why, "no lost rank"), "bad input (no loss in the log): nothing (%s)", d.why);
    wp_recovery_decide(&replan, &lost, &chain, 3, usable, 2, &d);
    ok(!d.resubmit && strstr(d.why, "min_nodes = 2"), "1 node left, min_nodes 2: nothing (%s)", d.why);

    /* the chain: appended whole, read back; a node lost twice stays out */
    char path[4200];
    snprintf(path, sizeof path, "%s/recoveries.txt", dir);
    remove(path);
    struct wp_err err = {""};
    wp_recovery_decide(&replan, &lost, &chain, 3, usable, 3, &d);
    ok(wp_recovery_append(path, &chain, "101", "9101", &lost, &d, &err) == 0, "the first recovery appended (%s)",
       err.msg);
    ok(wp_recovery_chain_read(path, &chain, &err) == 0 && chain.n == 1 && strcmp(chain.entries[0].lost, "wpn2") == 0 &&
           chain.entries[0].nodes == 2 && strcmp(chain.entries[0].job, "101") == 0 &&
           strcmp(chain.entries[0].next, "9101") == 0,
       "and read back: job 101 lost wpn2, again on 2 nodes as job 9101 (%s)", err.msg);
    struct wp_point_failure other = {WP_FAILURE_LOST, "wpn3", "wpn3 silent (ranks 4 5) (watchdog)"};
    wp_recovery_decide(&replan, &other, &chain, 2, usable, 3, &d);
    ok(d.resubmit && strcmp(d.exclude, "wpn3") == 0 && d.nodes == 2,
       "another node lost once: only it excluded, wpn2 (lost once) may serve again (%s, %d nodes)", d.exclude, d.nodes);
    wp_recovery_append(path, &chain, "102", "9102", &other, &d, &err);
    wp_recovery_chain_read(path, &chain, &err);
    wp_recovery_decide(&replan, &lost, &chain, 2, usable, 3, &d);
    ok(d.resubmit && strcmp(d.exclude, "wpn2") == 0 && d.nodes == 2,
       "wpn2 lost a second time: out; wpn3, lost once, back: again on wpn1 and wpn3 (%s)", d.why);
    const char *four[] = {"wpn1", "wpn2", "wpn3", "wpn4"};
    wp_recovery_append(path, &chain, "103", "9103", &lost, &d, &err);
    wp_recovery_chain_read(path, &chain, &err);
    wp_recovery_decide(&replan, &other, &chain, 2, four, 4, &d);
    ok(!d.resubmit && strstr(d.why, "max_recoveries = 3"), "three recoveries: no fourth (%s)", d.why);
    FILE *fp = fopen(path, "a");
    fputs("recovery=4x job=104 lost=wpn1 nodes=2 exclude=- next=- reason=r\n", fp);
    fclose(fp);
    ok(wp_recovery_chain_read(path, &chain, &err) != 0 && strstr(err.msg, "recoveries.txt:4:"),
       "a broken line: file:line (%s)", err.msg);
}

static void failure_reasons(void)
{
    static const char map[] = "ranks on wpn1 (rank:pid): 0:100 1:101\nranks on wpn2 (rank:pid): 2:200 3:201\n";
    char log[2048];
    snprintf(log, sizeof log,
             "%sstep 3: loss 4.1, 0.1 s, bubble 0.5\n"
             "wavepipe run: rank 3 on wpn2: no progress for 2.0 s waiting on a sum over a group of ranks (limit 2.0 s, "
             "--watchdog-s); ending the job (a rank or its node lost?)\n"
             "wavepipe run: rank 0 on wpn1: no progress for 2.1 s waiting on a receive from rank 1 (on wpn1) (limit "
             "2.0 s, --watchdog-s); ending the job (a rank or its node lost?)\n"
             "wavepipe run: rank 1 on wpn1: no progress for 2.1 s waiting on a send to rank 2 (on wpn2) (limit 2.0 "
             "s, --watchdog-s); ending the job (a rank or its node lost?)\n",
             map);
    is_str(reason_of(log), "rank 2 on wpn2 silent: rank 1 on wpn1 waited 2.1 s on it (watchdog)",
           "watchdog: the rank waited on that reported no stall is the lost one");
    strcat(log, "srun: error: wpn1: task 0: Killed\n");
    is_str(reason_of(log), "rank 2 on wpn2 silent: rank 1 on wpn1 waited 2.1 s on it (watchdog)",
           "srun killing a rank after the watchdog spoke: a consequence, not the cause");
    snprintf(log, sizeof log,
             "%swavepipe run: rank 1 on wpn1: no progress for 2.0 s waiting on an MPI collective or message "
             "(watchdog limit 2.0 s); ending the job (a rank or its node lost?)\n"
             "wavepipe run: rank 0 on wpn1: no progress for 2.1 s waiting on a sum over a group of ranks (watchdog "
             "limit 2.0 s); ending the job (a rank or its node lost?)\n",
             map);
    is_str(reason_of(log),
           "wpn2 silent (ranks 2 3): rank 1 on wpn1 waited 2.0 s on an MPI collective or message (watchdog)",
           "watchdog on sums: the host none of whose ranks spoke");
    snprintf(log, sizeof log,
             "%ssrun: error: wpn1: tasks 0-1: Exited with exit code 69\nsrun: error: wpn2: task 2: Killed\n"
             "srun: error: wpn1: tasks 0-1: Killed\n",
             map);
    is_str(reason_of(log), "task 2 on wpn2: Killed (srun)", "srun: its first task line");
    snprintf(log, sizeof log,
             "%sstep 13: loss 4.2, 0.2 s, bubble 0.6\n"
             "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
             "wavepipe run: rank 0 on wpn1: MPI failed waiting on a sum over a group of ranks: Other MPI error; "
             "ending the job (a rank or its node lost?)\n"
             "srun: error: wpn2: tasks 2-3: Killed\n"
             "srun: error: wpn1: task 0: Exited with exit code 69\nsrun: error: wpn1: task 1: Killed\n",
             map);
    is_str(reason_of(log), "tasks 2-3 on wpn2: Killed (srun)",
           "srun aborted the step before the run spoke: its task line names the cause, though the run's MPI "
           "error is printed before it");
    snprintf(log, sizeof log,
             "%swavepipe run: rank 0 on wpn1: MPI failed waiting on a sum over a group of ranks: Other MPI error; "
             "ending the job (a rank or its node lost?)\n"
             "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
             "srun: error: wpn2: tasks 2-3: Killed\n",
             map);
    is_str(reason_of(log), "rank 0 on wpn1: MPI failed waiting on a sum over a group of ranks: Other MPI error; "
                           "ending the job (a rank or its node lost?)",
           "the run spoke before srun aborted the step: srun's kills are its consequence");
    snprintf(log, sizeof log,
             "%swavepipe run: rank 2 on wpn2: MPI failed waiting on a receive from rank 3 (on wpn2): Other MPI "
             "error, error stack:\ncopy_iovs(224).........: process_vm_readv failed (errno 3); ending the job (a "
             "rank or its node lost?)\n"
             "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
             "srun: error: wpn2: task 2: Exited with exit code 69\nsrun: error: wpn1: tasks 0-1: Killed\n"
             "srun: error: wpn2: task 3: Killed\n",
             map);
    is_str(reason_of(log), "task 3 on wpn2: Killed (srun)",
           "the rank a failed MPI call waited on, ended by a signal: the cause, though the run spoke first");
    snprintf(log, sizeof log, "%s=   PID 201 RUNNING AT wpn2\n=   EXIT CODE: 9\n", map);
    is_str(reason_of(log), "process 201 on wpn2 (rank 3) ended badly (mpiexec)", "mpiexec: the map gives the rank");
    ok(!wp_point_failure_reason("/nonexistent/run.log", log, sizeof log) && log[0] == '\0', "no log: no reason");
    snprintf(log, sizeof log, "%ssrun: error: wpn2: task 2: Killed\n%sstep 0: loss 4.1\n", map, map);
    is_str(reason_of(log), "", "a later run (requeued) without a failure: none from the earlier run");
}

/* Reads and expands; returns the number of points or -1 (message in err). */
static int expand(const char *name, const char *body, struct wp_campaign *c, struct wp_campaign_point **pts,
                  struct wp_err *err)
{
    int n = 0;
    *pts = NULL;
    if (wp_campaign_read(write_campaign(name, body), c, err) || wp_campaign_expand(c, pts, &n, err))
        return -1;
    return n;
}

int main(void)
{
    const char *src = getenv("WP_SRCDIR");
    snprintf(model_path, sizeof model_path, "%s/jobs/models/gpt-tiny.cfg", src ? src : ".");
    snprintf(dir, sizeof dir, "tests/out/test_campaign.%d", (int)getpid());
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    if (system(cmd) != 0)
        return 1;
    struct wp_campaign c;
    struct wp_campaign_point *p = NULL;
    struct wp_err err = {{0}};

    int n = expand("cart", "scaling = \"strong\"; global_batch = 16;\n"
                   "axes = { schedule = [\"1f1b\", \"gpipe\"]; micro_batches = [2, 4, 8]; nodes = [1, 2]; };\n",
                   &c, &p, &err);
    is_int(n, 12, "cartesian product: 2 x 3 x 2 = 12 points (%s)", err.msg);
    if (n > 0) {
        is_str(p[0].point.id, "p000-1f1b-m2-n1-r0", "first id");
        is_str(p[11].point.id, "p011-gpipe-m8-n2-r0", "last id: the last axis turns fastest");
        is_int(p[11].global_batch, 16, "strong: global batch fixed");
        is_int(p[11].layers, 16, "strong: the model's layers");
        is_str(wp_point_axis(&p[5].point, "nodes"), "2", "nodes axis in point.cfg");
        is_str(p[5].point.axis_name[0], "schedule", "axes in the campaign's order");
    }
    free(p);

    n = expand("zip", "scaling = \"strong\"; global_batch = 16; repetitions = 2;\n"
               "axes = { nodes = [1, 1, 2]; ranks_per_node = [2, 4, 4]; micro_batches = [4, 8]; };\n"
               "zip = ( [\"nodes\", \"ranks_per_node\"] );\n", &c, &p, &err);
    is_int(n, 12, "zip: 3 pairs x 2 micro-batch counts x 2 repetitions = 12 (%s)", err.msg);
    if (n > 0) {
        is_int(p[2].nodes * p[2].ranks_per_node, 2, "zipped pair 0: 1 x 2");
        is_int(p[4].ranks_per_node, 4, "zipped pair 1: 1 x 4");
        is_int(p[1].point.repetition, 1, "repetitions are separate points");
        is_str(p[1].point.id, "p000-n1-g2-m4-r1", "repetition in the id");
    }
    free(p);

    n = expand("excl", "scaling = \"weak\"; global_batch_per_node = 4; layers_per_node = 8;\n"
               "axes = { schedule = [\"1f1b\", \"kfkb\", \"hanayo\"]; k = [1, 2]; waves = [1, 2]; nodes = [1, 2]; micro_batches = [2]; };\n"
               "exclude = ( { schedule = \"kfkb\"; k = 1; }, { schedule = \"!kfkb\"; k = \"!1\"; },\n"
               "            { schedule = \"!hanayo\"; waves = \"!1\"; } );\n", &c, &p, &err);
    is_int(n, 8, "exclude: 1f1b x1, kfkb (k=2) x1, hanayo x2 waves, each on 2 node counts = 8 (%s)", err.msg);
    if (n > 0) {
        is_int(p[1].global_batch, 8, "weak: global batch 4 per node x 2 nodes");
        is_int(p[1].layers, 16, "weak: 8 layers per node x 2 nodes");
        is_str(wp_point_axis(&p[1].point, "global_batch"), "8", "global_batch axis written");
        is_str(wp_point_axis(&p[1].point, "layers"), "16", "layers axis written");
        is_str(p[2].schedule, "kfkb", "kfkb point kept");
        is_int(p[2].k, 2, "with k = 2");
    }
    free(p);

    /* one list of kinds: every kind `wavepipe run --schedule` takes is a
     * campaign's schedule (on 2 ranks, 8 micro-batches: every kind fits) */
    for (int k = 0; k < WP_SCHED_KIND_COUNT; k++) {
        if (!wp_sched_kind_generated((enum wp_sched_kind)k))
            continue;
        char body[512];
        snprintf(body, sizeof body, "scaling = \"strong\"; global_batch = 8;\n"
                 "axes = { schedule = [\"%s\"]; ranks_per_node = [2]; micro_batches = [8]; };\n",
                 wp_sched_kind_name((enum wp_sched_kind)k));
        err.msg[0] = '\0';
        n = expand("kinds", body, &c, &p, &err);
        ok(n == 1 && strcmp(p[0].schedule, wp_sched_kind_name((enum wp_sched_kind)k)) == 0,
           "schedule \"%s\" (a kind run takes) is a campaign's: %s", wp_sched_kind_name((enum wp_sched_kind)k),
           err.msg);
        free(p);
    }
    n = expand("file", "scaling = \"strong\"; global_batch = 8;\naxes = { schedule = [\"file\"]; };\n", &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "unknown schedule \"file\"") && strstr(err.msg, WP_SCHED_KIND_LIST),
       "a kind run does not generate is refused with run's list: %s", err.msg);
    free(p);
    n = expand("dpv", "scaling = \"strong\"; global_batch = 4;\n"
               "axes = { schedule = [\"dualpipev\"]; ranks_per_node = [2]; micro_batches = [2]; };\n", &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "point p000") && strstr(err.msg, "dualpipev needs at least as many micro-batches"),
       "the generator's refusal names the point: %s", err.msg);
    free(p);

    /* axis data_parallel: run --data-parallel D for every kind, D dividing
     * the ranks and each micro-batch; the id says dpD; the rules of the
     * kind hold for a copy's ranks */
    err.msg[0] = '\0';
    n = expand("dp", "scaling = \"strong\"; global_batch = 16;\n"
               "axes = { schedule = [\"hanayo\", \"chimera\"]; data_parallel = [1, 2]; ranks_per_node = [4]; "
               "micro_batches = [4]; };\n", &c, &p, &err);
    is_int(n, 4, "data_parallel: 2 schedules x 2 = 4 points (%s)", err.msg);
    if (n == 4) {
        is_int(p[1].data_parallel, 2, "hanayo in 2 copies");
        is_str(p[1].point.id, "p001-hanayo-dp2-n1-r0", "the id says dp2");
        is_str(wp_point_axis(&p[1].point, "data_parallel"), "2", "point.cfg records the axis");
        is_int(p[0].data_parallel, 1, "and 1 is one pipeline");
        struct wp_render_input in = {&c, &p[3], "/r/t/p003", "/w", "run"};
        char *text = NULL;
        if (wp_render_text("@RUN_ARGS@\n", "dp.sbatch", &in, &text, &err) == 0)
            has_substr(text, "--schedule 'chimera' --data-parallel '2' --micro-batches '4'", "run gets --data-parallel");
        free(text);
        in.point = &p[2];
        if (wp_render_text("@RUN_ARGS@\n", "dp.sbatch", &in, &text, &err) == 0)
            ok(!strstr(text, "--data-parallel"), "one pipeline: no --data-parallel");
        free(text);
    }
    free(p);

    /* recovery settings: read, defaults, and refused where Slurm cannot resubmit */
    err.msg[0] = '\0';
    n = expand("recover", "scaling = \"strong\"; global_batch = 8;\nrecover = \"replan\"; min_nodes = 2; "
               "max_recoveries = 5;\naxes = { nodes = [3]; };\n", &c, &p, &err);
    ok(n == 1 && c.recovery.replan && c.recovery.min_nodes == 2 && c.recovery.max_recoveries == 5,
       "recover = replan, min_nodes 2, max_recoveries 5 read (%s)", err.msg);
    if (n == 1) { /* what the run step's finish_step passes to wavepipe recover */
        struct wp_render_input in = {&c, &p[0], "/r/t/p000", "/w", "run"};
        char *text = NULL;
        if (wp_render_text("@RECOVER@ @MIN_NODES@ @MAX_RECOVERIES@ @PARTITION@\n", "rec.sbatch", &in, &text, &err) ==
            0)
            is_str(text, "'1' '2' '5' ''\n", "the recovery placeholders");
        free(text);
    }
    free(p);
    n = expand("norecover", "scaling = \"strong\"; global_batch = 8;\naxes = { nodes = [3]; };\n", &c, &p, &err);
    ok(n == 1 && !c.recovery.replan && c.recovery.min_nodes == 1 && c.recovery.max_recoveries == 3,
       "by default no recovery (min_nodes 1, max_recoveries 3)");
    free(p);
    n = expand("recover-mpiexec", "scaling = \"strong\"; global_batch = 8;\nlauncher = \"mpiexec\";\n"
               "recover = \"replan\";\naxes = { nodes = [1]; };\n", &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "recover-mpiexec.cfg:") && strstr(err.msg, "needs launcher \"srun\""),
       "recover = replan with mpiexec: refused at file:line (%s)", err.msg);
    n = expand("recover-bad", "scaling = \"strong\"; global_batch = 8;\nrecover = \"always\";\n"
               "axes = { nodes = [1]; };\n", &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "recover-bad.cfg:") && strstr(err.msg, "replan"), "recover = always: refused (%s)",
       err.msg);

    /* the breadth-first kind on the schedule axis takes the chunks axis,
     * as interleaved does, and any micro-batch count */
    err.msg[0] = '\0';
    n = expand("bfs", "scaling = \"strong\"; global_batch = 12;\n"
               "axes = { schedule = [\"bfs\", \"interleaved\"]; chunks = [2]; ranks_per_node = [2]; "
               "micro_batches = [4]; };\n", &c, &p, &err);
    is_int(n, 2, "bfs and interleaved with chunks 2: 2 points (%s)", err.msg);
    if (n == 2) {
        struct wp_render_input in = {&c, &p[0], "/r/t/p000", "/w", "run"};
        char *text = NULL;
        if (wp_render_text("@RUN_ARGS@\n", "bfs.sbatch", &in, &text, &err) == 0)
            has_substr(text, "--schedule 'bfs' --chunks '2'", "bfs gets --chunks");
        free(text);
    }
    free(p);
    static const char *const dp_refused[][3] = {
        {"zb-v\"]; data_parallel = [3]; ranks_per_node = [4]", "12",
         "point p000-n1-r0: --data-parallel 3 does not divide the 4 ranks"},
        {"chimera\"]; data_parallel = [2]; ranks_per_node = [6]", "16", "chimera in 2 data-parallel copies of 3 ranks"},
        {"1f1b\"]; data_parallel = [2]; ranks_per_node = [4]", "12",
         "a micro-batch of 3 sequences cannot be split evenly over 2 data-parallel copies"},
    };
    for (size_t i = 0; i < sizeof dp_refused / sizeof dp_refused[0]; i++) {
        char body[512];
        snprintf(body, sizeof body, "scaling = \"strong\"; global_batch = %s;\naxes = { schedule = [\"%s; "
                 "micro_batches = [4]; };\n", dp_refused[i][1], dp_refused[i][0]);
        n = expand("dpbad", body, &c, &p, &err);
        ok(n < 0 && strstr(err.msg, dp_refused[i][2]), "data_parallel refused, naming the point: %s", err.msg);
        free(p);
    }

    /* injection attempts and bad values: rejected with file:line */
    static const char *const evil[] = {"$(touch x)", "`touch x`", "; rm -rf ~", "a\\nb", "x'y", NULL};
    for (int i = 0; evil[i]; i++) {
        char body[512];
        snprintf(body, sizeof body, "scaling = \"weak\"; global_batch_per_node = 4;\n"
                 "slurm = { partition = \"%s\"; };\naxes = { nodes = [1]; };\n", evil[i]);
        err.msg[0] = '\0';
        n = expand("evil", body, &c, &p, &err);
        ok(n < 0 && strstr(err.msg, "evil.cfg:8:") && strstr(err.msg, "is not allowed"),
           "partition %s rejected: %s", evil[i], err.msg);
        free(p);
    }
    n = expand("evil2", "scaling = \"weak\"; global_batch_per_node = 4;\naxes = { schedule = [\"1f1b; rm -rf ~\"]; };\n",
               &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "evil2.cfg:8:"), "a schedule with shell syntax is rejected: %s", err.msg);
    free(p);
    n = expand("evil3", "scaling = \"weak\"; global_batch_per_node = 4;\nslurm = { extra = [\"--exclusive; reboot\"]; };\n"
               "axes = { nodes = [1]; };\n", &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "evil3.cfg:8:"), "an extra #SBATCH option with shell syntax is rejected: %s", err.msg);
    free(p);
    n = expand("typo", "scaling = \"weak\"; global_batch_per_node = 4;\naxes = { wavez = [1]; };\n", &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "typo.cfg:8:") && strstr(err.msg, "waves"), "unknown axis named with nearest: %s", err.msg);
    free(p);
    n = expand("range", "scaling = \"weak\"; global_batch_per_node = 4;\naxes = { nodes = [0]; };\n", &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "range.cfg:8:"), "nodes = 0 out of range: %s", err.msg);
    free(p);
    n = expand("mix", "scaling = \"strong\"; global_batch_per_node = 4;\naxes = { nodes = [1]; };\n", &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "strong scaling needs 'global_batch'"), "strong without global_batch: %s", err.msg);
    free(p);
    n = expand("zipbad", "scaling = \"weak\"; global_batch_per_node = 4;\naxes = { nodes = [1, 2]; ranks_per_node = [1]; };\n"
               "zip = ( [\"nodes\", \"ranks_per_node\"] );\n", &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "as many values"), "zip of unequal axes: %s", err.msg);
    free(p);
    n = expand("split", "scaling = \"strong\"; global_batch = 6;\naxes = { micro_batches = [4]; };\n", &c, &p, &err);
    ok(n < 0 && strstr(err.msg, "cannot be split"), "a batch that does not split is an error naming the point: %s", err.msg);
    free(p);

    /* rendering */
    n = expand("render", "scaling = \"strong\"; global_batch = 8;\nslurm = { partition = \"wp\"; account = \"proj-1\"; };\n"
               "axes = { schedule = [\"kfkb\"]; k = [2]; nodes = [2]; ranks_per_node = [3]; };\n", &c, &p, &err);
    is_int(n, 1, "render campaign (%s)", err.msg);
    if (n == 1) {
        struct wp_render_input in = {&c, &p[0], "/r/t/p000", "/opt/wave pipe/it's", "run"};
        char *s = NULL;
        int rc = wp_render_text("#!/bin/bash\n@SBATCH@\nW=@WAVEPIPE@\n@MPI_LAUNCH@ x @RUN_ARGS@ me@@host a@b\n", "t.sbatch",
                                &in, &s, &err);
        is_int(rc, 0, "render (%s)", err.msg);
        if (rc == 0) {
            has_substr(s, "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=3\n", "nodes and tasks per node");
            has_substr(s, "#SBATCH --account=proj-1\n", "account when given");
            ok(!strstr(s, "--qos") && !strstr(s, "--constraint") && !strstr(s, "--gpus"), "no optional lines not given");
            has_substr(s, "W='/opt/wave pipe/it'\\''s'\n", "values single-quoted with the '\\'' escape");
            has_substr(s, "srun --mpi=pmi2 --kill-on-bad-exit=1 x  --schedule 'kfkb' --k '2'",
                       "launcher (a lost task ends the step) and quoted run options");
            has_substr(s, "me@host a@b", "@@ and a lone @ stay literal");
            ok(!strstr(s, "--watchdog-s"), "no --watchdog-s without watchdog_s (the run's default)");
        }
        free(s);
        c.watchdog_s = 5;
        rc = wp_render_text("@RUN_ARGS@\n", "w.sbatch", &in, &s, &err);
        if (rc == 0)
            has_substr(s, "--watchdog-s '5'", "watchdog_s: run --watchdog-s");
        free(s);
        c.watchdog_s = 0;
        err.msg[0] = '\0';
        rc = wp_render_text("#!/bin/bash\n\necho @NOPE@\n", "bad.sbatch", &in, &s, &err);
        ok(rc != 0 && strstr(err.msg, "bad.sbatch:3: unknown placeholder @NOPE@"), "unknown placeholder: %s", err.msg);
        strcpy(c.launcher, "mpiexec");
        rc = wp_render_text("@MPI_LAUNCH@\n", "m.sbatch", &in, &s, &err);
        if (rc == 0)
            is_str(s, "mpiexec -n 6 -ppn 3\n", "mpiexec when the campaign says so");
        free(s);
    }
    free(p);
    failure_reasons();
    failure_kinds();
    recovery_decisions();
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return tap_done();
}
