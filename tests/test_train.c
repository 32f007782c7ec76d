/* The training object (run/train/train.h) driven without the command line,
 * on however many ranks it is launched with (1 in the unit tests, 2 in
 * tests/train_object.sh): the options' rules; a plain run of the demo GPT,
 * step by step; a forced move of layers between the stages at an iteration
 * boundary (on one rank, a move to the same blocks) whose losses are the
 * plain run's bit for bit; a stop request (SIGUSR1 on rank 0 alone) that
 * every rank obeys after the iteration, checkpointing and ending with
 * WP_EXIT_STOPPED; and the run resumed from that checkpoint, whose losses
 * are the plain run's. WP_TRAIN_LOSSES=FILE writes the plain run's losses
 * (%a, one a line); WP_TRAIN_REFERENCE=FILE compares them with a file so
 * written (the shell test compares 2 ranks with 1). Every check is agreed
 * over the ranks; rank 0 prints them. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/fault/stop_signal.h"
#include "run/train/train.h"
#include "tap.h"

#define STEPS 6

static int world_rank, world_size;

/* A check that holds on every rank, printed once. */
static int all_ok(int pass, const char *what)
{
    MPI_Allreduce(MPI_IN_PLACE, &pass, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (world_rank == 0)
        ok(pass, "%d rank%s: %s", world_size, world_size > 1 ? "s" : "", what);
    return pass;
}

static void demo_options(struct wp_train_options *o, int steps)
{
    wp_train_options_default(o);
    o->config = WP_SOURCE_DIR "/jobs/models/gpt-tiny.cfg";
    o->data = WP_SOURCE_DIR "/jobs/data/sonnets.txt"; /* the default corpus, which a test program cannot find */
    o->steps = steps;
    o->sched.microbatches = 4;
    o->micro_given = 1;
}

static void rules(void)
{
    struct wp_train_options o;
    char why[256];
    demo_options(&o, 1);
    all_ok(wp_train_options_check(&o, why, sizeof why) == 0, "the demo's options go together");
    o.emulated = 1;
    all_ok(wp_train_options_check(&o, why, sizeof why) == -1 && strstr(why, "--layers TABLE"),
           "emulated compute without a layer table is refused, saying --layers");
    demo_options(&o, 1);
    o.adapt.k = 1;
    o.kind_given = 1;
    o.sched.kind = WP_SCHED_HANAYO;
    all_ok(wp_train_options_check(&o, why, sizeof why) == -1 && strstr(why, "not hanayo"),
           "--adapt k on a hanayo run is refused, naming the kind");
    demo_options(&o, 1);
    o.watchdog_s = 6;
    all_ok(wp_train_options_watch_s(&o, 120) == 6, "an undilated run's watchdog waits --watchdog-s");
    o.emulated = 1;
    o.dilation = 4;
    all_ok(wp_train_options_watch_s(&o, 120) == 24, "a run dilated 4 times waits 4 times --watchdog-s");
    o.changes_hook = "hook.sh";
    all_ok(wp_train_options_watch_s(&o, 120) == 144, "and the changes hook's time on top, undilated");
    o.watchdog_s = 0;
    all_ok(wp_train_options_watch_s(&o, 120) == 0, "--watchdog-s 0 stays no watchdog, dilated or not");
}

/* Steps a run to its end, recording each step's loss; the last step's
 * return (1: none left), or -1. */
static int run_steps(struct wp_train *t, double *losses, struct wp_err *err)
{
    int rc;
    do {
        long step = t->step;
        rc = wp_train_step(t, err);
        if (rc >= 0 && step < STEPS)
            losses[step] = t->in.last_loss;
    } while (rc == 0);
    return rc;
}

static void plain(double *losses)
{
    struct wp_train_options o;
    struct wp_train t;
    struct wp_err err = {""};
    demo_options(&o, STEPS);
    int rc = wp_train_init(&t, &o, &err);
    if (rc)
        printf("# %s\n", err.msg);
    all_ok(rc == 0, "a plain 1f1b run starts");
    all_ok(t.setup.s.nstages == world_size && t.step == 0, "one stage a rank, at step 0");
    int first = rc == 0 ? wp_train_step(&t, &err) : -1;
    losses[0] = t.in.last_loss;
    all_ok(first == 0 && t.step == 1, "a step, and more to come");
    int last = rc == 0 ? run_steps(&t, losses, &err) : -1;
    all_ok(last == 1 && t.step == STEPS && t.done_steps == STEPS, "the steps run to the end, then none is left");
    all_ok(wp_train_step(&t, &err) == 1, "a step past the end runs nothing");
    int finite = 1;
    for (int i = 0; i < STEPS; i++)
        finite &= losses[i] > 0 && losses[i] < 10;
    all_ok(finite && losses[STEPS - 1] < losses[0], "the losses are finite and fall");
    all_ok(wp_train_finish(&t, 0, &err) == 0 && wp_train_exit_status(&t, 0) == 0, "the run finishes, exit status 0");
    wp_train_destroy(&t);
}

/* The plain run's losses against a file of them (WP_TRAIN_REFERENCE), or
 * into one (WP_TRAIN_LOSSES). */
static void reference(const double *losses)
{
    const char *out = getenv("WP_TRAIN_LOSSES"), *ref = getenv("WP_TRAIN_REFERENCE");
    if (out && world_rank == 0) {
        FILE *f = fopen(out, "w");
        for (int i = 0; f && i < STEPS; i++)
            fprintf(f, "%a\n", losses[i]);
        if (f)
            fclose(f);
    }
    if (!ref)
        return;
    FILE *f = fopen(ref, "r");
    int same = f != NULL;
    for (int i = 0; same && i < STEPS; i++) {
        double v;
        same = fscanf(f, "%la", &v) == 1 && v == losses[i];
    }
    if (f)
        fclose(f);
    all_ok(same, "the plain run's losses are bit for bit those of the reference run");
}

static void forced_move(const double *plain_losses)
{
    struct wp_train_options o;
    struct wp_train t;
    struct wp_err err = {""};
    demo_options(&o, STEPS);
    double losses[STEPS] = {0};
    int rc = wp_train_init(&t, &o, &err);
    for (int i = 0; rc == 0 && i < 2; i++) {
        rc = wp_train_step(&t, &err) < 0 ? -1 : 0;
        losses[i] = t.in.last_loss;
    }
    /* the first stage gives blocks to the next (one stage: keeps its 16) */
    int S = t.setup.s.nstages, count[2] = {16, 0};
    if (S == 2) {
        count[0] = 5;
        count[1] = 11;
    }
    double pause_s = -1;
    rc = rc == 0 ? wp_train_move_layers(&t, count, &pause_s, &err) : -1;
    all_ok(rc == 0 && pause_s >= 0, "a forced move of layers between iterations");
    all_ok(t.unit_count[0] == count[0] && t.setup.first[0] == 0 && t.setup.end[0] == count[0] &&
               (S == 1 || (t.setup.first[1] == count[0] && t.setup.end[1] == 16)),
           "the stages run the blocks moved to them");
    if (rc == 0)
        rc = run_steps(&t, losses, &err) == 1 ? 0 : -1;
    int same = rc == 0;
    for (int i = 0; same && i < STEPS; i++)
        same = losses[i] == plain_losses[i];
    all_ok(same, "the losses after the move are the plain run's, bit for bit");
    all_ok(rc == 0 && wp_train_finish(&t, 0, &err) == 0, "the moved run finishes");
    wp_train_destroy(&t);
}

static void stop_and_resume(const char *dir, const double *plain_losses)
{
    struct wp_train_options o;
    struct wp_train t;
    struct wp_err err = {""};
    demo_options(&o, STEPS);
    o.save = dir;
    int rc = wp_train_init(&t, &o, &err);
    for (int i = 0; rc == 0 && i < 2; i++)
        rc = wp_train_step(&t, &err);
    if (world_rank == 0)
        raise(SIGUSR1); /* as Slurm's warning before the time limit, on one rank */
    int stopped = rc == 0 ? wp_train_step(&t, &err) : -1;
    all_ok(stopped == 1 && t.stopped_by == SIGUSR1 && t.done_steps == 3 && t.step == 3,
           "a stop request on rank 0 stops every rank after the iteration it came in");
    all_ok(wp_train_finish(&t, 0, &err) == 0 && wp_train_exit_status(&t, 0) == WP_EXIT_STOPPED,
           "the stopped run finishes with exit status 75");
    wp_train_destroy(&t);
    char saved[4096];
    snprintf(saved, sizeof saved, "%s/step-00000003/model.safetensors", dir);
    all_ok(access(saved, R_OK) == 0, "its checkpoint holds the 3 steps done");

    demo_options(&o, STEPS);
    o.resume = dir;
    double losses[STEPS] = {0};
    rc = wp_train_init(&t, &o, &err);
    all_ok(rc == 0 && t.first_step == 3 && t.step == 3, "a new run resumes from the checkpoint after 3 steps");
    rc = rc == 0 && run_steps(&t, losses, &err) == 1 ? 0 : -1;
    int same = rc == 0;
    for (int i = 3; same && i < STEPS; i++)
        same = losses[i] == plain_losses[i];
    all_ok(same, "the resumed steps' losses are the plain run's, bit for bit");
    all_ok(rc == 0 && wp_train_finish(&t, 0, &err) == 0 && t.stopped_by == 0, "the resumed run finishes");
    wp_train_destroy(&t);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    char dir[] = "/tmp/wp-test-train.XXXXXX";
    if (world_rank == 0 && !mkdtemp(dir))
        dir[0] = '\0';
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    rules();
    double losses[STEPS] = {0};
    plain(losses);
    reference(losses);
    forced_move(losses);
    stop_and_resume(dir, losses);
    if (world_rank == 0) {
        char rm[64];
        snprintf(rm, sizeof rm, "rm -rf %s", dir);
        if (dir[0] && system(rm) != 0)
            printf("# could not remove %s\n", dir);
        printf("1..%d\n", tap.count);
    }
    int failed = tap.failed;
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed ? 1 : 0;
}
