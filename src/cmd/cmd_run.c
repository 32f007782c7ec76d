/* `wavepipe run`: train GPT-2 over MPI ranks by interpreting the schedule's
 * action lists (generated, or read with --schedule-file); one CSV row per
 * iteration, a measured timeline on request. */
#include <config.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef WP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "cli/cli.h"
#include "cmd/commands.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernel_times.h"
#include "util/atomic_file.h"
#include "run/adapt/adapt.h"
#include "run/adapt/changes.h"
#include "run/train/checkpoint.h"
#include "run/comm/comm_lanes.h"
#include "run/comm/comm_mpi.h"
#include "run/fault/rank_loss.h"
#include "run/fault/stop_signal.h"
#include "run/fault/watchdog.h"
#include "run/comm/tensor_group.h"
#include "run/core/interpreter.h"
#include "run/adapt/measure.h"
#include "plan/plan_ranks.h"
#include "run/adapt/repartition.h"
#include "run/model/stage_emulated.h"
#include "run/model/stage_gpt2.h"
#include "plan/layer_stages.h"
#include "sched/generate.h"
#include "sched/grad_overlap.h"
#include "sched/simulate.h"
#include "sched/trace.h"
#include "cli/sched_cli.h"
#include "util/csv_append.h"
#include "util/datadir.h"
#include "util/stats.h"
#include "util/strutil.h"

#define CMD "run"

enum { OPT_CONFIG = 3000, OPT_SCHEDULE, OPT_GLOBAL_BATCH, OPT_STEPS, OPT_SEED, OPT_DATA, OPT_RESULTS, OPT_TRACE,
       OPT_PARTITION, OPT_SYNTHETIC, OPT_SAVE, OPT_SAVE_EVERY, OPT_KEEP, OPT_RESUME, OPT_SVG, OPT_DEVICE, OPT_STAGES, OPT_TENSOR, OPT_MESH, OPT_PLAN,
       OPT_COMPUTE, OPT_LAYERS, OPT_SLOWDOWN, OPT_KERNEL_TIMES, OPT_CHANGES, OPT_CHANGES_HOOK, OPT_PROGRESS_US, OPT_WATCHDOG, OPT_MEASURE, OPT_ADAPT, OPT_ADAPT_EVERY,
       OPT_ADAPT_MAX_K, OPT_ADAPT_LOG, OPT_ADAPT_REPLAY, OPT_ADAPT_CANDIDATES, OPT_ADAPT_MIN_GAIN,
       OPT_ADAPT_HORIZON, OPT_GRAD_OVERLAP, OPT_GRAD_BUCKET_MB, OPT_RECOMPUTE };

static void usage(void)
{
    printf("Usage: mpiexec -n P wavepipe run --config FILE [--schedule KIND] [--k K] [--waves W]\n"
           "         [--chunks V] [--policy A|B] [--replicas r0,r1,...] [--micro-batches M]\n"
           "         [--global-batch G] [--steps N] [--seed N] [--data FILE] [--synthetic-data]\n"
           "         [--partition n0,n1,...] [--results FILE.csv] [--trace FILE.json]\n"
           "         [--save DIR [--save-every N] [--keep N]] [--resume DIR]\n"
           "         [--adapt k|partition|both [--adapt-every N] [--adapt-log FILE.csv]]\n"
           "       mpiexec -n P wavepipe run --config FILE --plan PLAN.cfg [--steps N] [...]\n"
           "       mpiexec -n P wavepipe run --config FILE --schedule-file SCHEDULE.csv [...]\n"
           "       mpiexec -n P wavepipe run --compute emulated --layers TABLE [--schedule KIND] [...]\n\n"
           "Trains the GPT-2 model of FILE (jobs/models/gpt-tiny.cfg) on P ranks: the\n"
           "schedule's generator makes one action list per rank and one interpreter runs\n"
           "them: activations and gradients cross stages with MPI_Isend/MPI_Irecv, each\n"
           "receive posted before the compute ahead of it, gradients accumulated over\n"
           "micro-batches, ALLREDUCE over a stage's replicas, AdamW at STEP. Command-line\n"
           "values override the file. Blocks are split evenly over the stages unless\n"
           "--partition gives each stage's block count.\n\n"
           "Options:\n"
           "  --config FILE          model and training settings (libconfig); a relative FILE\n"
           "                         (or --layers TABLE) not found from here is the installed\n"
           "                         one in PREFIX/share/wavepipe (jobs/models/gpt-tiny.cfg)\n"
           "  --schedule KIND        " WP_SCHED_KIND_LIST " (default 1f1b)\n"
           "  --schedule-file FILE   run the schedule in FILE instead (wavepipe's CSV, or PyTorch's\n"
           "                         compute-only CSV, see wavepipe schedule --help): its ranks (launch\n"
           "                         that many), stages (blocks split over them as for a generated\n"
           "                         schedule of that many stages, or --partition) and micro-batches\n"
           "                         (the file's, not the config's); not with --schedule, --plan,\n"
           "                         --stages or the generator options\n"
           "  --k, --waves, --chunks, --policy, --replicas, --micro-batches, --max-inflight,\n"
           "  --order-search         as for wavepipe schedule\n"
           "  --global-batch G       sequences per step\n"
           "  --steps N              optimizer steps\n"
           "  --seed N               initialisation seed\n"
           "  --data FILE            text corpus (bytes are tokens); default: the shipped corpus\n"
           "  --synthetic-data       random tokens instead of a corpus\n"
           "  --partition n0,n1,...  transformer blocks per stage\n"
           "  --tensor P1[xP2]       tensor parallelism: groups of P1 x P2 consecutive ranks split every\n"
           "                         block (AutoDDL's mesh: heads over P1, channels and the attention's\n"
           "                         sequences over P2; Megatron-LM's split is --tensor T); the schedule\n"
           "                         runs on P/(P1 P2) ranks, one per group, whose lanes talk lane to\n"
           "                         lane; the summary shows each collective's measured bytes beside\n"
           "                         the model's (plan/tp_block.h)\n"
           "  --mesh P0xP1xP2        AutoDDL's mesh per stage: --tensor P1xP2 in groups of P0 that split\n"
           "                         each slice's sequences (weights replicated, gradients summed over\n"
           "                         P0 before the step); the stages' replica counts must be equal\n"
           "  --stages S             S pipeline stages on P ranks: P/S data-parallel copies of the\n"
           "                         pipeline, each taking its share of every micro-batch, gradients\n"
           "                         allreduced per stage (gpipe, 1f1b, kfkb; same as --replicas r,r,..)\n"
           "  --plan PLAN.cfg        run a plan of wavepipe plan (from a layer table of this model:\n"
           "                         wavepipe profile --model FILE -o ...): its stages' blocks, replicas,\n"
           "                         micro-batches, global batch and 1F1B policy; the plan's devices\n"
           "                         (node:gpu) go to the ranks found there (the job's hosts in the order\n"
           "                         of their lowest rank, node-local rank = GPU); the stages it marks\n"
           "                         recompute do so, as --recompute\n"
           "  --recompute            every stage recomputes its forward before each backward (Megatron-LM's\n"
           "                         full recomputation): per micro-batch in flight it keeps the stage's\n"
           "                         boundaries only (input, output, their gradients, tokens, losses),\n"
           "                         and one micro-batch's activations for all; the backward runs the\n"
           "                         forward again from the input first, to the same bits. Not with\n"
           "                         schedules that split the backward (zb-*, dualpipev), --plan (its\n"
           "                         stages say) or --compute emulated\n"
           "  --results FILE.csv     append one row per iteration (header on the first line), ending\n"
           "                         with adapt, partition (units per stage the iteration ran),\n"
           "                         pause_s (a move after it), stage_compute_s (per stage F+B+W of\n"
           "                         one micro-batch) and link_bandwidth_Bps (per boundary, the\n"
           "                         slower direction; 0: none timed)\n"
           "  --kernel-times FILE.csv  where the compute went: per rank and kernel (the tied LM head's\n"
           "                         matmuls apart) calls, wall and process CPU seconds per step, the\n"
           "                         first step (warm-up) left out when there are more; rank 0 writes\n"
           "                         the file (columns rank,kernel,calls,wall_s,cpu_s)\n"
           "  --measure FILE.csv     append what every iteration measured, agreed over the ranks: per\n"
           "                         stage F, B, W and allreduce seconds; per stage boundary and\n"
           "                         direction (activation, gradient) the messages, their bytes, and\n"
           "                         the time from the send's post to the receive seen complete of\n"
           "                         those whose receive was posted first (timed; the others arrived\n"
           "                         unasked, their transfer hidden), on one timeline (clock offsets\n"
           "                         to rank 0 by ping-pong), and the bandwidth that gives. Columns\n"
           "                         " WP_MEASURE_CSV_HEADER "\n"
           "                         (a message's stage is its boundary's upper stage). A receive is\n"
           "                         seen complete during an emulated pass within --progress-us, and\n"
           "                         otherwise when the rank next looks: between real passes, the\n"
           "                         time includes what the receiver was computing\n"
           "  --trace FILE.json      the measured timeline of the last iteration (Chrome trace): every\n"
           "                         rank's passes, and its messages from the send's post to the receive\n"
           "                         seen complete, on one timeline (--measure's clock offsets), from\n"
           "                         the iteration's first event. With --adapt: from the start of the\n"
           "                         run's first iteration, every decision an instant event on a track\n"
           "                         'adapt decisions' (args: the --adapt-log columns), and otherData\n"
           "                         gives traced_iteration and traced_iteration_start_s\n"
           "  --svg FILE.svg         the same timeline as SVG, one row per rank\n"
           "  --device cpu|cuda      CPU kernels over MPI (default), or CUDA kernels over NCCL with one\n"
           "                         GPU per local rank (CUDA build)\n"
           "  --compute real|emulated\n"
           "                         real: the kernels compute GPT-2 (default). emulated: every F, B, W\n"
           "                         lasts what the --layers table says for the stage's layers at the\n"
           "                         slice's size (time per profile batch, scaled linearly), the optimizer\n"
           "                         step its optimizer_s, spent asleep as a GPU rank's host waits on its\n"
           "                         device; activations, gradients and allreduces are real messages of\n"
           "                         the table's sizes. No model, no loss (nan), no checkpoints. Rows,\n"
           "                         summary and traces say compute=emulated and name the table\n"
           "  --layers TABLE         emulated: a wavepipe-layers file (wavepipe profile) or a DAPPLE or\n"
           "                         PipeDream profile; --partition then counts its layers per stage\n"
           "                         (default: the split that balances F + B), and --config is optional\n"
           "                         (training settings only: global batch, micro-batches, steps)\n"
           "  --slowdown-file FILE   per-rank factors on the passes, re-read whenever the file changes\n"
           "                         (lines 'RANK FACTOR' or '* FACTOR'): a contended GPU. Emulated: the\n"
           "                         pass sleeps FACTOR times the table's time; real: a pass that took t\n"
           "                         is followed by (FACTOR - 1) t asleep\n"
           "  --changes FILE         a scenario: changes made at iteration boundaries, one a line,\n"
           "                         'ITERATION slow RANK|* FACTOR' (from ITERATION on, as --slowdown-file)\n"
           "                         or 'ITERATION ACTION [ARG...]' (rank 0 runs --changes-hook PROGRAM\n"
           "                         ACTION ARG... and waits; e.g. '20 rate 100mbit', '40 flow on' with\n"
           "                         tests/cluster/scenario-hook.sh on the test cluster). 0 is the start;\n"
           "                         a change's time is in no iteration's; a line 'change before iteration\n"
           "                         I: ...' per change; a resumed run makes the earlier ones again\n"
           "  --changes-hook PROGRAM what makes the changes --changes names other than slow (at most 120 s\n"
           "                         each; a hook that fails ends the run)\n"
           "  --grad-overlap on|off  on (default): a replicated stage sums its gradients in buckets started\n"
           "                         as its last backward of the step (W, or B) finishes their layers,\n"
           "                         non-blocking (MPI) or on a stream of their own (NCCL), the ALLREDUCE\n"
           "                         waiting only for what is still in flight (PyTorch DDP's buckets);\n"
           "                         off: one sum of all of them at the ALLREDUCE\n"
           "  --grad-bucket-mb MB    the buckets' size in MiB (default 25, DDP's): a bucket starts once\n"
           "                         its layers reach it\n"
           "  --progress-us N        emulated: while a pass waits and messages are in flight, wake every N\n"
           "                         microseconds to move them (default 200)\n"
           "  --adapt none|k|partition|both\n"
           "                         k: Ada-Grouper's online tuning (1f1b or kfkb runs). The candidates are\n"
           "                         kFkB plans for k = 1 .. --adapt-max-k (default 8), each with the\n"
           "                         largest micro-batch size that divides the global batch and holds\n"
           "                         on no rank more sequences' activations at once than the schedule\n"
           "                         the run starts with (the memory-limit curve). Every iteration's\n"
           "                         measurements (--measure) update the running plan's F, B, W and\n"
           "                         allreduce times per stage (moving average) and each link's time\n"
           "                         per sequence as measured now; every N iterations the simulator\n"
           "                         predicts each plan (a plan never run: compute scaled per sequence\n"
           "                         from the measured plan of the nearest micro-batch size, messages\n"
           "                         by their size) and the run switches, on every rank after the same\n"
           "                         iteration, to the fastest when it beats the running plan by more\n"
           "                         than --adapt-min-gain. The global batch never changes: a switch\n"
           "                         changes no parameter, and the losses are the static run's up to\n"
           "                         summation order. Each decision is a line 'adapt k after iteration I: ...'\n"
           "                         with every plan's prediction (* never measured)\n"
           "                         partition: AutoPipe's live re-partitioning (one stage a rank).\n"
           "                         Every N iterations each move of one boundary between neighbouring\n"
           "                         stages by 1-4 layers (GPT-2: blocks), and when none pays, of both\n"
           "                         boundaries of a stage at once, is predicted by the simulator:\n"
           "                         each stage's F, B, W a reference table's time for its new layers\n"
           "                         (emulated: --layers; real: GPT-2's analytic table) times its\n"
           "                         rank's measured speed against that table, the messages re-sized\n"
           "                         on the measured links. The best move is made when its gain over\n"
           "                         --adapt-horizon iterations beats the cost of switching (the moved\n"
           "                         layers' parameters and AdamW moments over the measured link, and\n"
           "                         the last move's pause) and is above 2 %%: at the iteration boundary\n"
           "                         the layers' state goes from their old rank to their new one (each\n"
           "                         replica of a replicated stage gets it), no other rank takes part,\n"
           "                         and the losses are the static run's. Each decision is a line\n"
           "                         'adapt partition after iteration I: move to|stay at n0:n1:...'\n"
           "                         with the ranks' speed factors and the reasons; a move says the\n"
           "                         bytes moved and the pause. Checkpoints record the partition, and\n"
           "                         --resume without --partition uses it. both: a move first, and\n"
           "                         when none is made, k. With --trace, every decision (switch, move\n"
           "                         or stay) is also an instant event of the trace\n"
           "  --adapt-horizon N      iterations a move's gain is counted over (default 50)\n"
           "  --adapt-candidates K:B,...\n"
           "                         the candidates instead: group size K with micro-batches of B\n"
           "                         sequences (the start plan is added); with --plan, the plan's kFkB\n"
           "                         candidates are the default\n"
           "  --adapt-every N        decide every N iterations (default 10)\n"
           "  --adapt-min-gain PCT   the arbiter's threshold: switch only for a predicted gain above PCT\n"
           "                         percent (default 10: the predictions of 1F1B against kFkB on\n"
           "                         unchanged links were measured up to 5 %% apart from the runs)\n"
           "  --adapt-log FILE.csv   append each decision:\n"
           "                         " WP_ADAPT_LOG_HEADER "\n"
           "  --adapt-replay FILE.csv\n"
           "                         make the switches of a decision log after the same iterations\n"
           "                         instead of tuning (to reproduce an adaptive run exactly)\n"
           "  --save DIR             checkpoint at the end (and every N steps with --save-every N, and\n"
           "                         when a stop signal ends the run early) into DIR/step-<steps>/:\n"
           "                         model.safetensors with Hugging Face GPT-2 names, config.json,\n"
           "                         optimizer.safetensors (AdamW moments); DIR/latest links to the newest\n"
           "                         whole one (swapped in one rename: a crash or a full disk mid-save\n"
           "                         leaves the previous one) and DIR/<file> to latest/<file>; --steps 0\n"
           "                         saves the initial weights\n"
           "  --keep N               keep the newest N step directories under DIR (default 0: all)\n"
           "  --resume DIR           continue from a checkpoint (DIR's latest, or one step directory):\n"
           "                         --steps is the total, rows continue the iteration numbers, the\n"
           "                         losses are those of an uninterrupted run\n"
           "  --watchdog-s S         end the job (MPI_Abort, exit status 69) when a wait for a message\n"
           "                         or a sum has not progressed for S seconds (default 6; 0: never):\n"
           "                         a rank, its node or its link lost. The limit is 12 S until the\n"
           "                         first iteration ends, then max(S, 2 x the longest iteration);\n"
           "                         a checkpoint save or a move of layers max(S, 60 s, 4 x the\n"
           "                         longest such pause); after a stop signal 2 iterations, at\n"
           "                         least 1 s. Compute is never timed.\n"
           "                         The message names the rank, the peer and their hosts; rank 0\n"
           "                         prints the ranks' hosts and process ids at the start (mpiexec\n"
           "                         and srun name a killed rank's process or task)\n"
           "  -h, --help             this text\n");
}

struct run_options {
    struct wp_sched_cli sched;
    const char *config, *data, *results, *trace, *svg, *partition, *save, *resume, *device, *plan_path;
    const char *layers_path, *slowdown_path, *measure, *kernel_times;
    const char *changes_path, *changes_hook; /* --changes, --changes-hook */
    struct wp_adapt_options adapt;
    int adapt_given[2 * 64];
    int emulated, progress_us;
    int watchdog_s;           /* --watchdog-s (run/fault/watchdog.h) */
    int grad_overlap;         /* --grad-overlap on (1) or off */
    int recompute;            /* --recompute: every stage */
    double grad_bucket_bytes; /* --grad-bucket-mb */
    struct wp_layer_table table; /* emulated: the layer table */
    struct wp_plan plan;
    char plan_partition[4096];
    char resumed_partition[256];
    char shipped_config[PATH_MAX], shipped_layers[PATH_MAX]; /* relative names found installed (util/datadir.h) */
    int global_batch, steps, synthetic, kind_given, save_every, keep, stages;
    int mesh[3]; /* --mesh P0xP1xP2 (--tensor P1xP2: 1 x P1 x P2): each stage's mesh (1 x 1 x 1: none) */
    long long seed;
};

static int parse(int argc, char **argv, struct run_options *o)
{
    static const struct option own[] = {
        {"config", required_argument, NULL, OPT_CONFIG},
        {"schedule", required_argument, NULL, OPT_SCHEDULE},
        {"global-batch", required_argument, NULL, OPT_GLOBAL_BATCH},
        {"steps", required_argument, NULL, OPT_STEPS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"data", required_argument, NULL, OPT_DATA},
        {"synthetic-data", no_argument, NULL, OPT_SYNTHETIC},
        {"results", required_argument, NULL, OPT_RESULTS},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"svg", required_argument, NULL, OPT_SVG},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"partition", required_argument, NULL, OPT_PARTITION},
        {"stages", required_argument, NULL, OPT_STAGES},
        {"tensor", required_argument, NULL, OPT_TENSOR},
        {"mesh", required_argument, NULL, OPT_MESH},
        {"plan", required_argument, NULL, OPT_PLAN},
        {"save", required_argument, NULL, OPT_SAVE},
        {"save-every", required_argument, NULL, OPT_SAVE_EVERY},
        {"keep", required_argument, NULL, OPT_KEEP},
        {"resume", required_argument, NULL, OPT_RESUME},
        {"compute", required_argument, NULL, OPT_COMPUTE},
        {"layers", required_argument, NULL, OPT_LAYERS},
        {"slowdown-file", required_argument, NULL, OPT_SLOWDOWN},
        {"kernel-times", required_argument, NULL, OPT_KERNEL_TIMES},
        {"changes", required_argument, NULL, OPT_CHANGES},
        {"changes-hook", required_argument, NULL, OPT_CHANGES_HOOK},
        {"progress-us", required_argument, NULL, OPT_PROGRESS_US},
        {"watchdog-s", required_argument, NULL, OPT_WATCHDOG},
        {"grad-overlap", required_argument, NULL, OPT_GRAD_OVERLAP},
        {"grad-bucket-mb", required_argument, NULL, OPT_GRAD_BUCKET_MB},
        {"recompute", no_argument, NULL, OPT_RECOMPUTE},
        {"measure", required_argument, NULL, OPT_MEASURE},
        {"adapt", required_argument, NULL, OPT_ADAPT},
        {"adapt-every", required_argument, NULL, OPT_ADAPT_EVERY},
        {"adapt-max-k", required_argument, NULL, OPT_ADAPT_MAX_K},
        {"adapt-log", required_argument, NULL, OPT_ADAPT_LOG},
        {"adapt-replay", required_argument, NULL, OPT_ADAPT_REPLAY},
        {"adapt-candidates", required_argument, NULL, OPT_ADAPT_CANDIDATES},
        {"adapt-min-gain", required_argument, NULL, OPT_ADAPT_MIN_GAIN},
        {"adapt-horizon", required_argument, NULL, OPT_ADAPT_HORIZON},
        {"help", no_argument, NULL, 'h'},
    };
    struct option longopts[64];
    int n = 0;
    for (int i = 0; i < wp_sched_long_option_count; i++)
        if (strcmp(wp_sched_long_options[i].name, "kind") != 0)
            longopts[n++] = wp_sched_long_options[i];
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        longopts[n++] = own[i];
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    memset(o, 0, sizeof *o);
    o->mesh[0] = o->mesh[1] = o->mesh[2] = 1;
    wp_sched_cli_init(&o->sched);
    o->global_batch = o->steps = -1;
    o->seed = -1;
    o->progress_us = 200;
    o->watchdog_s = 6;
    o->grad_overlap = 1;
    o->grad_bucket_bytes = WP_GRAD_BUCKET_BYTES_DEFAULT;
    o->adapt.every = 10;
    o->adapt.max_k = 8;
    o->adapt.min_gain = 0.10;
    o->adapt.horizon = 50;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': usage(); return 1;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        case '?': return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        case OPT_CONFIG: o->config = wp_data_input(optarg, o->shipped_config, sizeof o->shipped_config); break;
        case OPT_SCHEDULE: {
            int k = wp_sched_kind_from_name(optarg);
            if (k < 0 || !wp_sched_kind_generated((enum wp_sched_kind)k))
                return wp_usage_error(CMD, "unknown --schedule '%s' (" WP_SCHED_KIND_LIST "%s)", optarg,
                                      k == WP_SCHED_FILE ? "; a schedule file is run with --schedule-file FILE" : "");
            if (wp_sched_cli_generator_option(CMD, "--schedule", &o->sched))
                return 2;
            o->sched.params.kind = (enum wp_sched_kind)k;
            o->kind_given = 1;
            break;
        }
        case OPT_GLOBAL_BATCH:
            if (wp_parse_int_option(CMD, "--global-batch", optarg, 1, 1 << 20, &o->global_batch))
                return 2;
            break;
        case OPT_STEPS:
            if (wp_parse_int_option(CMD, "--steps", optarg, 0, 1 << 30, &o->steps))
                return 2;
            break;
        case OPT_SEED: {
            char *end;
            o->seed = strtoll(optarg, &end, 10);
            if (end == optarg || *end || o->seed < 0)
                return wp_usage_error(CMD, "--seed '%s' must be an integer >= 0", optarg);
            break;
        }
        case OPT_DATA: o->data = optarg; break;
        case OPT_SYNTHETIC: o->synthetic = 1; break;
        case OPT_RESULTS: o->results = optarg; break;
        case OPT_TRACE: o->trace = optarg; break;
        case OPT_SVG: o->svg = optarg; break;
        case OPT_DEVICE:
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "cuda") != 0)
                return wp_usage_error(CMD, "--device must be cpu or cuda");
#ifndef WP_HAVE_CUDA
            if (strcmp(optarg, "cuda") == 0)
                return wp_usage_error(CMD, "--device cuda: this build has no CUDA (configure --with-cuda)");
#endif
            o->device = optarg;
            break;
        case OPT_PARTITION: o->partition = optarg; break;
        case OPT_PLAN: o->plan_path = optarg; break;
        case OPT_STAGES:
            if (wp_parse_int_option(CMD, "--stages", optarg, 1, WP_SCHED_MAX_STAGES, &o->stages) ||
                wp_sched_cli_generator_option(CMD, "--stages", &o->sched))
                return 2;
            break;
        case OPT_TENSOR:
        case OPT_MESH: {
            /* P1[xP2] or P0xP1xP2: up to 3 factors */
            long f[3] = {1, 1, 1};
            int nf = 0;
            char *x = optarg;
            while (nf < 3) {
                char *end = NULL;
                f[nf++] = strtol(x, &end, 10);
                if (end == x || (*end && *end != 'x' && *end != 'X') || f[nf - 1] < 1 || f[nf - 1] > 4096)
                    return wp_usage_error(CMD, "%s takes %s, not %s", opt == OPT_MESH ? "--mesh" : "--tensor",
                                          opt == OPT_MESH ? "P0xP1xP2" : "P1 or P1xP2", optarg);
                if (!*end)
                    break;
                x = end + 1;
            }
            int want = opt == OPT_MESH ? 3 : 2, xs = 0;
            for (const char *q = optarg; *q; q++)
                xs += *q == 'x' || *q == 'X';
            if (xs >= nf || (opt == OPT_MESH && nf != 3) || (opt == OPT_TENSOR && nf > 2) || f[0] * f[1] * f[2] > 4096)
                return wp_usage_error(CMD, "%s takes %s, not %s", opt == OPT_MESH ? "--mesh" : "--tensor",
                                      opt == OPT_MESH ? "P0xP1xP2" : "P1 or P1xP2", optarg);
            for (int i = 0; i < 3; i++)
                o->mesh[i] = want == 3 ? (int)f[i] : i == 0 ? 1 : (int)f[i - 1];
            break;
        }
        case OPT_COMPUTE:
            if (strcmp(optarg, "real") != 0 && strcmp(optarg, "emulated") != 0)
                return wp_usage_error(CMD, "--compute must be real or emulated");
            o->emulated = strcmp(optarg, "emulated") == 0;
            break;
        case OPT_LAYERS: o->layers_path = wp_data_input(optarg, o->shipped_layers, sizeof o->shipped_layers); break;
        case OPT_SLOWDOWN: o->slowdown_path = optarg; break;
        case OPT_CHANGES: o->changes_path = optarg; break;
        case OPT_CHANGES_HOOK: o->changes_hook = optarg; break;
        case OPT_MEASURE: o->measure = optarg; break;
        case OPT_KERNEL_TIMES: o->kernel_times = optarg; break;
        case OPT_ADAPT: {
            int both = strcmp(optarg, "both") == 0;
            if (!both && strcmp(optarg, "none") != 0 && strcmp(optarg, "k") != 0 && strcmp(optarg, "partition") != 0)
                return wp_usage_error(CMD, "--adapt must be none, k, partition or both");
            o->adapt.k = both || strcmp(optarg, "k") == 0;
            o->adapt.partition = both || strcmp(optarg, "partition") == 0;
            break;
        }
        case OPT_ADAPT_HORIZON: {
            int h;
            if (wp_parse_int_option(CMD, "--adapt-horizon", optarg, 1, 1 << 30, &h))
                return 2;
            o->adapt.horizon = h;
            break;
        }
        case OPT_ADAPT_EVERY:
            if (wp_parse_int_option(CMD, "--adapt-every", optarg, 1, 1 << 30, &o->adapt.every))
                return 2;
            break;
        case OPT_ADAPT_MAX_K:
            if (wp_parse_int_option(CMD, "--adapt-max-k", optarg, 1, 64, &o->adapt.max_k))
                return 2;
            break;
        case OPT_ADAPT_LOG: o->adapt.log_path = optarg; break;
        case OPT_ADAPT_MIN_GAIN: {
            char *end;
            double pct = strtod(optarg, &end);
            if (end == optarg || *end || !(pct >= 0 && pct <= 1000))
                return wp_usage_error(CMD, "--adapt-min-gain '%s' must be a percentage from 0 to 1000", optarg);
            o->adapt.min_gain = pct / 100;
            break;
        }
        case OPT_ADAPT_REPLAY: o->adapt.replay_path = optarg; break;
        case OPT_ADAPT_CANDIDATES: {
            int ngiven = 0, used = 0;
            const char *c = optarg;
            while (*c && ngiven < 64) {
                int k, b;
                if (sscanf(c, "%d:%d%n", &k, &b, &used) != 2 || k < 1 || b < 1)
                    break;
                o->adapt_given[2 * ngiven] = k;
                o->adapt_given[2 * ngiven + 1] = b;
                ngiven++;
                c += used;
                if (*c != ',')
                    break;
                c++;
            }
            if (ngiven == 0 || *c)
                return wp_usage_error(CMD, "--adapt-candidates '%s' must be K:B pairs (group size : micro-batch size) "
                                           "separated by commas, at most 64", optarg);
            o->adapt.given = o->adapt_given;
            o->adapt.ngiven = ngiven;
            break;
        }
        case OPT_GRAD_OVERLAP:
            if (wp_parse_grad_overlap(CMD, optarg, &o->grad_overlap))
                return 2;
            break;
        case OPT_RECOMPUTE: o->recompute = 1; break;
        case OPT_GRAD_BUCKET_MB:
            if (wp_parse_grad_bucket_mb(CMD, optarg, &o->grad_bucket_bytes))
                return 2;
            break;
        case OPT_PROGRESS_US:
            if (wp_parse_int_option(CMD, "--progress-us", optarg, 1, 1000000, &o->progress_us))
                return 2;
            break;
        case OPT_WATCHDOG:
            if (wp_parse_int_option(CMD, "--watchdog-s", optarg, 0, 86400, &o->watchdog_s))
                return 2;
            break;
        case OPT_SAVE: o->save = optarg; break;
        case OPT_RESUME: o->resume = optarg; break;
        case OPT_SAVE_EVERY:
            if (wp_parse_int_option(CMD, "--save-every", optarg, 1, 1 << 30, &o->save_every))
                return 2;
            break;
        case OPT_KEEP:
            if (wp_parse_int_option(CMD, "--keep", optarg, 0, 1 << 20, &o->keep))
                return 2;
            break;
        default:
            if (wp_sched_cli_option(CMD, opt, optarg, &o->sched) == 2)
                return 2;
        }
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (o->emulated && !o->layers_path)
        return wp_usage_error(CMD, "--compute emulated needs --layers TABLE (wavepipe profile -o TABLE, or a "
                                   "DAPPLE profile such as profiles/dapple-v100/bert-48-pbs-2.txt)");
    if (!o->emulated && o->layers_path)
        return wp_usage_error(CMD, "--layers goes with --compute emulated");
    if (o->emulated && o->recompute)
        return wp_usage_error(CMD, "--recompute recomputes GPT-2's forward: not with --compute emulated");
    if (o->plan_path && o->recompute)
        return wp_usage_error(CMD, "--plan marks the stages that recompute (wavepipe plan --recompute): not "
                                   "--recompute with it");
    if (o->emulated && (o->save || o->resume || o->data || o->synthetic || o->device))
        return wp_usage_error(CMD, "--compute emulated computes no model: --save, --resume, --data, "
                                   "--synthetic-data and --device do not apply");
    if (!o->config && !o->emulated)
        return wp_usage_error(CMD, "--config FILE is required (e.g. jobs/models/gpt-tiny.cfg)");
    if (o->changes_hook && !o->changes_path)
        return wp_usage_error(CMD, "--changes-hook goes with --changes FILE");
    if (o->save_every && !o->save)
        return wp_usage_error(CMD, "--save-every needs --save DIR");
    if (o->keep && !o->save)
        return wp_usage_error(CMD, "--keep needs --save DIR");
    if (!o->adapt.k && !o->adapt.partition && (o->adapt.log_path || o->adapt.replay_path))
        return wp_usage_error(CMD, "--adapt-log and --adapt-replay go with --adapt k, partition or both");
    if (o->adapt.k && o->sched.schedule_file)
        return wp_usage_error(CMD, "--adapt k makes kFkB plans: not with --schedule-file");
    if (o->adapt.k && o->kind_given && o->sched.params.kind != WP_SCHED_1F1B && o->sched.params.kind != WP_SCHED_KFKB)
        return wp_usage_error(CMD, "--adapt k tunes 1f1b and kfkb runs, not %s",
                              wp_sched_kind_name(o->sched.params.kind));
    if (o->plan_path && o->sched.schedule_file)
        return wp_usage_error(CMD, "--plan and --schedule-file both give the schedule: give one");
    if (o->mesh[0] * o->mesh[1] * o->mesh[2] > 1 && (o->emulated || o->adapt.k || o->adapt.partition))
        return wp_usage_error(CMD, "--tensor and --mesh split GPT-2's blocks computed for real: not yet with "
                                   "--compute emulated or --adapt");
    if (o->mesh[0] * o->mesh[1] * o->mesh[2] > 1 && o->plan_path)
        return wp_usage_error(CMD, "--plan gives the tensor group (its `tensor`): not --tensor or --mesh with it");
    if (o->plan_path && (o->kind_given || o->partition || o->stages || o->sched.params.nreplicas ||
                         o->sched.micro_given || o->global_batch > 0))
        return wp_usage_error(CMD, "--plan sets the schedule, partition, replicas, micro-batches and global batch; "
                                   "give none of those with it");
    return 0;
}

/* The settings a plan fixes, checked against the model and the job. */
static int apply_plan(struct run_options *o, struct wp_run_config *cfg, int P, struct wp_err *err)
{
    struct wp_plan *pl = &o->plan; /* read by wp_cmd_run, whose ranks P its tensor group sets */
    int L = cfg->model.layers, t = wp_plan_tensor_size(pl->tensor);
    int interleaved = pl->chunks > 1;
    for (int s = 0; interleaved && s < pl->nstages; s++)
        if (pl->stages[s].replicas != 1)
            return wp_errorf(err, "%s interleaves %d chunks per GPU over replicated stages (stage %d has %d "
                                  "replicas); the runtime's interleaved schedule runs one replica per stage",
                             o->plan_path, pl->chunks, s, pl->stages[s].replicas);
    for (int s = 0; s < pl->nstages && o->emulated; s++)
        if (pl->stages[s].recompute)
            return wp_errorf(err, "%s: stage %d recomputes its forward, which emulated stages do not: plan with "
                                  "--recompute never", o->plan_path, s);
    if (t > 1 && o->emulated)
        return wp_errorf(err, "%s splits blocks over tensor groups of %d: not with --compute emulated yet",
                         o->plan_path, t);
    if (o->emulated && pl->nlayers != o->table.nlayers)
        return wp_errorf(err, "%s is for %s, a table of %d layers; --layers %s has %d", o->plan_path, pl->model,
                         pl->nlayers, o->layers_path, o->table.nlayers);
    if (!o->emulated && pl->nlayers != L + 2)
        return wp_errorf(err, "%s is for %s, a table of %d layers; %s has %d blocks, whose table has %d (embedding, "
                              "blocks, head): plan from `wavepipe profile --model %s -o LAYERS.cfg`",
                         o->plan_path, pl->model, pl->nlayers, o->config, L, L + 2, o->config);
    if (pl->nstages > WP_SCHED_MAX_STAGES)
        return wp_errorf(err, "%s has %d stages; the runtime takes at most %d", o->plan_path, pl->nstages,
                         WP_SCHED_MAX_STAGES);
    if (pl->devices_used != P * t)
        return wp_errorf(err, "%s places its stages on %d devices: launch %d ranks (mpiexec -n %d), not %d",
                         o->plan_path, pl->devices_used, pl->devices_used, pl->devices_used, P * t);
    size_t len = 0;
    o->plan_partition[0] = '\0';
    for (int s = 0; s < pl->nstages; s++) {
        /* emulated: the plan's layers of the table; real: table layer 0 is the
         * embedding, 1..L the blocks, L + 1 the head */
        int a = o->emulated || pl->stages[s].first_layer >= 1 ? pl->stages[s].first_layer : 1;
        int b = o->emulated || pl->stages[s].last_layer <= L ? pl->stages[s].last_layer : L;
        if (b < a)
            return wp_errorf(err, "%s: stage %d (layers %d-%d) holds no transformer block; the runtime keeps the "
                                  "embedding and the head with the first and last block",
                             o->plan_path, s, pl->stages[s].first_layer, pl->stages[s].last_layer);
        len += (size_t)snprintf(o->plan_partition + len, sizeof o->plan_partition - len, "%s%d", s ? "," : "",
                                b - a + 1);
        o->sched.replicas[s] = pl->stages[s].replicas;
    }
    o->partition = o->plan_partition;
    struct wp_sched_params *p = &o->sched.params;
    p->kind = WP_SCHED_1F1B;
    p->policy = pl->policy;
    p->nreplicas = pl->nstages;
    p->replicas = o->sched.replicas;
    p->microbatches = pl->microbatches;
    if (interleaved) { /* Megatron-LM's order: virtual stage j on the ranks of stage j mod P, as the plan's */
        p->kind = WP_SCHED_INTERLEAVED;
        p->chunks = pl->chunks;
        p->nreplicas = 0;
        p->replicas = NULL;
    }
    o->sched.micro_given = 1;
    cfg->train.global_batch = pl->global_batch;
    return 0;
}

/* Blocks per stage: even, or the user's partition. */
static int partition(const char *spec, int L, int S, int *first, int *end, struct wp_err *err)
{
    if (L < S)
        return wp_errorf(err, "the model has %d blocks but the schedule has %d stages (more stages than layers)", L,
                         S);
    if (!spec) {
        for (int s = 0; s < S; s++) {
            first[s] = (int)((long)s * L / S);
            end[s] = (int)((long)(s + 1) * L / S);
        }
        return 0;
    }
    char copy[4096];
    wp_strlcpy(copy, spec, sizeof copy);
    int s = 0, next = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save), s++) {
        int n = atoi(tok);
        if (s >= S || n < 1)
            return wp_errorf(err, "--partition '%s' must give %d block counts >= 1", spec, S);
        first[s] = next;
        next += n;
        end[s] = next;
    }
    if (s != S || next != L)
        return wp_errorf(err, "--partition '%s' must give %d stages adding up to %d blocks", spec, S, L);
    return 0;
}

#define RESULTS_HEADER_BASE                                                                                \
    "timestamp,schedule,ranks,nodes,stages,replicas,waves,k,chunks,micro_batches,micro_batch_size,global_batch," \
    "iteration,iter_time_s,samples_per_s,tokens_per_s,bubble_ratio,peak_activation_bytes,loss"
/* every row ends with what adapted and what the iteration measured, so that
 * adaptive and static runs compare from the rows alone (issue 12) */
#define RESULTS_HEADER_ADAPT ",adapt,partition,pause_s,stage_compute_s,link_bandwidth_Bps"
#define RESULTS_HEADER RESULTS_HEADER_BASE RESULTS_HEADER_ADAPT
/* emulated rows add how compute was done and the layer table before them */
#define RESULTS_HEADER_EMULATED RESULTS_HEADER_BASE ",compute,layer_table" RESULTS_HEADER_ADAPT

/* Rows of real and emulated compute do not share a file, nor do rows
 * without the adapt columns (an older wavepipe's) and rows with them. */
static const char *results_header(int emulated)
{
    return emulated ? RESULTS_HEADER_EMULATED : RESULTS_HEADER;
}

/* The columns of RESULTS_HEADER_ADAPT (leading comma and newline included)
 * into buf: which tuner ran; the units per stage the iteration ran
 * (partition, as wp_adapt_partition_text joins them); the pause of a move
 * after it; per stage the agreed mean F + B + W seconds of one micro-batch
 * slice (a pass that did not run counts 0); per boundary the achieved
 * bandwidth of the slower direction, 0 where no message was timed. The
 * length, or -1 when buf is too small. */
static int adapt_columns(const struct wp_adapt_options *adapt, const char *partition, double pause_s,
                         const struct wp_measure *m, char *buf, size_t size)
{
    const char *mode = adapt->k && adapt->partition ? "both" : adapt->k ? "k" : adapt->partition ? "partition" : "none";
    size_t at = 0;
    int n = snprintf(buf, size, ",%s,%s,%.6f,", mode, partition, pause_s);
    for (int st = 0; n >= 0 && (at += (size_t)n) < size && st < m->nstages; st++) {
        double s = 0;
        for (int op = WP_OP_F; op <= WP_OP_W; op++)
            s += wp_measure_pass_of(m, op, st).mean_s;
        n = snprintf(buf + at, size - at, "%s%.6g", st ? ":" : "", s);
    }
    if (n < 0 || at >= size)
        return -1;
    n = snprintf(buf + at, size - at, ",");
    for (int b = 0; n >= 0 && (at += (size_t)n) < size && b + 1 < m->nstages; b++) {
        double slower = 0;
        for (int dir = WP_MEASURE_ACT; dir <= WP_MEASURE_GRAD; dir++) {
            struct wp_measure_link l = wp_measure_link_of(m, b, dir);
            if (l.timed > 0 && l.bandwidth_Bps > 0 && (slower == 0 || l.bandwidth_Bps < slower))
                slower = l.bandwidth_Bps;
        }
        n = snprintf(buf + at, size - at, "%s%.6g", b ? ":" : "", slower);
    }
    if (n < 0 || at >= size)
        return -1;
    n = snprintf(buf + at, size - at, "\n");
    return n < 0 || (at += (size_t)n) >= size ? -1 : (int)at;
}

static const char *results_kind(int emulated)
{
    return emulated ? "emulated compute rows" : "real compute rows";
}

static int count_nodes(void)
{
    MPI_Comm local;
    int rank, lrank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_free(&local);
    int leader = lrank == 0;
    MPI_Allreduce(&leader, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return n;
}

/* --kernel-times: every rank's rows (kernel_times.h) gathered to rank 0,
 * which writes them (temporary name, then renamed). */
static int write_kernel_times(const char *path, int rank, int P, long steps, struct wp_err *err)
{
    char *mine = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&mine, &len);
    if (mem) {
        wp_kernel_times_write(mem, rank, steps, 0);
        fclose(mem);
    }
    int n = mine ? (int)len : 0, *lens = rank == 0 ? calloc((size_t)P, sizeof *lens) : NULL;
    int *offs = rank == 0 ? calloc((size_t)P, sizeof *offs) : NULL;
    MPI_Gather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    for (int r = 0; rank == 0 && lens && offs && r < P; r++) {
        offs[r] = (int)total;
        total += (size_t)lens[r];
    }
    char *all = rank == 0 ? malloc(total + 1) : NULL;
    MPI_Gatherv(mine, n, MPI_CHAR, all, lens, offs, MPI_CHAR, 0, MPI_COMM_WORLD);
    int rc = 0;
    if (rank == 0) {
        struct wp_atomic_file af;
        if (!all || !lens || !offs)
            rc = wp_errorf(err, "out of memory");
        else if ((rc = wp_atomic_open(&af, path, err)) == 0) {
            fprintf(af.fp, "rank,kernel,calls,wall_s,cpu_s\n");
            fwrite(all, 1, total, af.fp);
            rc = wp_atomic_commit(&af, err);
        }
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(mine);
    free(all);
    free(lens);
    free(offs);
    if (rc == 0)
        return 0;
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", rank == 0 && err->msg[0] ? err->msg : "rank 0 cannot write it");
    return wp_errorf(err, "--kernel-times: %s", why);
}

/* One thread per rank unless OMP_NUM_THREADS says otherwise: with several
 * ranks per node, threads of busy-waiting OpenMP barriers steal the cores
 * the ranks compute on (measured here: a 2-thread rank ran its step 20x
 * slower on a loaded 2-core node). The CBLAS gets as many threads as OpenMP
 * (the matrix products are most of a step; kernels/cpu/blas_library.c). Denormals are flushed on every
 * thread (kernels/cpu/fp_env.c). Rank 0 says when ranks outnumber cores. */
static int share_cores(int rank, int *nodes_out)
{
    MPI_Comm local;
    int lsize;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &lsize);
    MPI_Comm_free(&local);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = 1;
#ifdef _OPENMP
    if (!getenv("OMP_NUM_THREADS"))
        omp_set_num_threads(1);
    threads = omp_get_max_threads();
#endif
    int flushing = wp_cpu_flush_denormals();
    wp_cpu_blas_set_threads(threads);
    if (rank == 0 && !flushing)
        printf("note: this CPU keeps denormal floats (no FTZ/DAZ here): steps with tiny values run slower\n");
    if (rank == 0 && lsize > cores)
        printf("note: %d ranks share %ld cores on this node; waiting ranks poll and sleep instead of spinning, "
               "and timings include the sharing\n",
               lsize, cores);
    int nodes = count_nodes();
    *nodes_out = nodes;
    /* the simulator shares cores only for a job on one node */
    return nodes == 1 && lsize > cores ? (int)cores : 0;
}


/* Measured against simulated. Real compute: the simulator replays the
 * schedule with each stage's measured mean F, B and W work of the last step
 * (the CPU time of each compute; communication free) on the node's cores when
 * the ranks share them. Emulated: with the layer table's costs, the very
 * durations the ranks slept (communication free). Either way measured /
 * simulated iteration time is the runtime's overhead. The measured iteration
 * is the median over the steps after the first (the last step when only one
 * or two ran). */
struct run_summary {
    int P, rank, shared_cores;
    int speaks;      /* 0 on a tensor group's lanes other than 0: their sums are lane 0's again */
    const int *mesh; /* --mesh p0 x p1 x p2 (1 x 1 x 1: none) */
    double peak_bytes, median_iter_s;
    const struct wp_layer_stage_arrays *table; /* emulated: its costs; NULL for real compute */
    const char *table_name;
};

static void summarize(const struct wp_interp *in, const struct wp_schedule *s, const struct run_summary *rs)
{
    int S = s->nstages, P = rs->P;
    double *sums = calloc((size_t)S * 6 + 2, sizeof *sums); /* F, B, W seconds and counts per stage */
    if (!sums)
        return;
    for (long i = 0; rs->speaks && i < in->timing.nevents; i++) {
        int op = in->timing.events[i].op, st = in->timing.events[i].stage;
        if (op > WP_OP_W)
            continue;
        sums[st * 6 + op] += in->timing.events[i].cpu;
        sums[st * 6 + 3 + op] += 1;
    }
    sums[S * 6] = rs->speaks ? in->timing.busy_s : 0;
    sums[S * 6 + 1] = in->timing.iter_s;
    MPI_Allreduce(MPI_IN_PLACE, sums, S * 6 + 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &sums[S * 6 + 1], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double *f = rs->rank == 0 ? malloc((size_t)S * 3 * sizeof *f) : NULL;
    if (f) {
        for (int st = 0; st < S; st++)
            for (int op = 0; op < 3; op++)
                f[op * S + st] = sums[st * 6 + 3 + op] > 0 ? sums[st * 6 + op] / sums[st * 6 + 3 + op] : 0;
        struct wp_cost_model cost;
        wp_cost_model_default(&cost);
        if (rs->table) {
            cost.stage_f = rs->table->forward_s;
            cost.stage_b = rs->table->backward_s;
            cost.stage_w = rs->table->weights_s;
            cost.stage_step_s = rs->table->step_s;
        } else {
            cost.stage_f = f;
            cost.stage_b = f + S;
            cost.stage_w = f + 2 * S;
            cost.cores = rs->shared_cores;
        }
        struct wp_sim_result res;
        struct wp_err err;
        double last = sums[S * 6 + 1], iter = rs->median_iter_s > 0 ? rs->median_iter_s : last;
        double measured_bubble = last > 0 ? 1.0 - sums[S * 6] / (P * last) : 0;
        if (wp_simulate(s, &cost, &res, &err) == 0) {
            char what[1200];
            if (rs->table)
                snprintf(what, sizeof what, "compute=emulated from %s, simulated with the table's costs",
                         rs->table_name);
            else
                snprintf(what, sizeof what, "compute=real, simulated with the measured work per stage%s",
                         rs->shared_cores ? " on the node's shared cores" : "");
            char ranks[96];
            int t = rs->mesh[0] * rs->mesh[1] * rs->mesh[2];
            if (t > 1)
                snprintf(ranks, sizeof ranks, "%d (%d schedule ranks x mesh %dx%dx%d)", P * t, P, rs->mesh[0],
                         rs->mesh[1], rs->mesh[2]);
            else
                snprintf(ranks, sizeof ranks, "%d", P);
            printf("summary: schedule %s, ranks %s, stages %d, micro-batches %d: %.3f samples/s, bubble ratio "
                   "measured %.3f simulated %.3f, iteration measured %.4f s simulated %.4f s (overhead %.2f; %s, "
                   "messages%s free), peak activation memory %.2f MiB, loss %.6f\n",
                   wp_sched_kind_name(s->params.kind), ranks, S, s->nmicro, in->global_batch / iter, measured_bubble,
                   res.bubble_ratio, iter, res.makespan, res.makespan > 0 ? iter / res.makespan : 0, what,
                   t > 1 ? " and the mesh's collectives" : "",
                   rs->peak_bytes / 1048576.0, in->last_loss);
            wp_sim_result_destroy(&res);
        }
        free(f);
    }
    free(sums);
}

/* The last step's bytes by kind, as this rank handed them to the comm
 * table (run/core/interpreter.h, run/comm/tensor_group.h), against the cost model's
 * volumes: a message carries its micro-batch's share of the more
 * replicated of its two stages, b T C floats (DAPPLE's split and concat),
 * over a mesh's axis 0 too; a replicated stage sums its gradients, the
 * planner's parameter count (plan/tp_block.h per block, the embeddings and
 * the head); the tied embedding V C; a mesh's blocks plan/tp_block.h's
 * collectives (a recomputing stage's forward ones again per backward).
 * Rank 0 prints its own and whether every rank's agree exactly. */
static void comm_bytes_summary(const struct wp_interp *in, const struct wp_tensor_group *tg,
                               const struct wp_schedule *s, const struct wp_gpt2_config *g, int rank)
{
    int p0 = tg ? tg->p0 : 1, p1 = tg ? tg->shard.p1 : 1, p2 = tg ? tg->shard.p2 : 1;
    double C = g->channels, T = g->sequence_length, V = g->vocabulary;
    struct wp_tp_block_volume model, v;
    memset(&model, 0, sizeof model);
    double send_model = 0, grad_model = 0, tied_model = 0, axis0_model = 0, boundary_model = 0;
    long sends = 0, grad_sums = 0, tied_sums = 0, axis0_calls = 0, boundary_calls = 0;
    const struct wp_action_list *l = &s->lists[in->rank];
    for (int i = 0; i < l->count; i++) {
        const struct wp_action *a = &l->actions[i];
        if (!wp_op_is_send(a->op))
            continue;
        int other = a->op == WP_OP_SEND_ACT ? a->stage + 1 : a->stage - 1;
        int r = s->place[a->stage].nreplicas > s->place[other].nreplicas ? s->place[a->stage].nreplicas
                                                                           : s->place[other].nreplicas;
        sends++;
        send_model += (double)in->mb_sequences / r / p0 / (p1 * p2) * T * C * 4; /* a lane's column block */
    }
    int tied_here = 0;
    for (int h = 0; h < in->nheld; h++) {
        const struct wp_gpt2_stage *st = wp_stage_gpt2_model(&in->held[h].exec);
        if (!st)
            continue;
        int stage = in->held[h].stage, forwards = 0, backwards = 0, allreduces = 0;
        int nblocks = st->layout.end_block - st->layout.first_block;
        for (int i = 0; i < l->count; i++) {
            forwards += l->actions[i].op == WP_OP_F && l->actions[i].stage == stage;
            backwards += l->actions[i].op == WP_OP_B && l->actions[i].stage == stage;
            allreduces += l->actions[i].op == WP_OP_ALLREDUCE && l->actions[i].stage == stage;
        }
        if (p1 * p2 > 1) { /* the boundaries' gathers: the input before F, the output's gradient before B */
            int gathers = (st->layout.has_embedding ? 0 : forwards) + (st->layout.has_head ? 0 : backwards);
            boundary_calls += gathers;
            boundary_model += (double)gathers * st->B * T * C;
        }
        double params = (double)nblocks * wp_tp_block_param_floats(p1, p2, g->channels) +
                        (st->layout.has_embedding ? V * C + (double)g->max_positions * C : 0) +
                        (st->layout.has_head ? 2 * C + V * C : 0);
        if (s->place[stage].nreplicas * s->place[stage].ncopies > 1) {
            grad_sums += allreduces;
            grad_model += allreduces * params * 4;
        }
        tied_here |= s->nstages > 1 && (stage == 0 || stage == s->nstages - 1);
        if (tg) {
            wp_tp_block_volume(p1, p2, (double)st->B * T, g->channels, &v);
            struct wp_tp_block_volume again; /* a recomputing stage's forward before each backward */
            wp_tp_block_forward_volume(p1, p2, (double)st->B * T, g->channels, &again);
            int recomputed = st->recompute ? backwards : 0;
            for (int c = 0; c < WP_TP_CALL_COUNT; c++) {
                model.calls[c] += forwards * nblocks * v.calls[c] + recomputed * nblocks * again.calls[c];
                model.elements[c] += (double)forwards * nblocks * v.elements[c] +
                                     (double)recomputed * nblocks * again.elements[c];
            }
            if (p0 > 1) {
                axis0_calls++;
                axis0_model += params;
            }
        }
    }
    if (tied_here) { /* summed between ranks when the two ends' holders are not one rank */
        int *holders = malloc((size_t)2 * s->nranks * sizeof *holders), distinct = 0;
        int n0 = holders ? wp_stage_holders_sorted(s, 0, holders) : 0;
        int n1 = holders ? wp_stage_holders_sorted(s, s->nstages - 1, holders + n0) : 0;
        for (int i = 1; i < n0 + n1; i++)
            distinct |= holders[i] != holders[0];
        free(holders);
        tied_sums = distinct;
        tied_model = distinct ? V * C * 4 : 0;
    }
    int agree = sends == in->bytes.sends && send_model == in->bytes.send_bytes && grad_sums == in->bytes.grad_sums &&
                grad_model == in->bytes.grad_sum_bytes && tied_sums == in->bytes.tied_sums &&
                tied_model == in->bytes.tied_sum_bytes;
    for (int c = 0; tg && c < WP_TP_CALL_COUNT; c++)
        agree &= model.calls[c] == tg->calls[c] && model.elements[c] == tg->elements[c];
    agree &= !tg || (axis0_calls == tg->axis0_calls && axis0_model == tg->axis0_elements &&
                     boundary_calls == tg->boundary_calls && boundary_model == tg->boundary_elements);
    MPI_Allreduce(MPI_IN_PLACE, &agree, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    printf("bytes: rank 0 in the last step, measured (model), each call's whole vector: p2p %ld sends %.0f B "
           "(%ld, %.0f B); gradient sums %ld calls %.0f B (%ld, %.0f B); tied embedding %ld calls %.0f B (%ld, "
           "%.0f B)",
           in->bytes.sends, in->bytes.send_bytes, sends, send_model, in->bytes.grad_sums, in->bytes.grad_sum_bytes,
           grad_sums, grad_model, in->bytes.tied_sums, in->bytes.tied_sum_bytes, tied_sums, tied_model);
    if (tg) {
        printf("; mesh %dx%dx%d: axis-0 gradient sum %ld calls %.0f B (%ld, %.0f B); boundary gathers %ld calls "
               "%.0f B (%ld, %.0f B)",
               p0, p1, p2, tg->axis0_calls, 4 * tg->axis0_elements, axis0_calls, 4 * axis0_model, tg->boundary_calls,
               4 * tg->boundary_elements, boundary_calls, 4 * boundary_model);
        for (int c = 0; c < WP_TP_CALL_COUNT; c++)
            printf("; %s %ld calls %.0f B (%d, %.0f B)", wp_tp_call_name(c), tg->calls[c], 4 * tg->elements[c],
                   model.calls[c], 4 * model.elements[c]);
    }
    printf("; every rank's equal to the model: %s\n", agree ? "yes" : "NO");
}

/* The settings, checked; a schedule file is read here (into *s), as it fixes
 * the micro-batches. A generated schedule is made afterwards. */
static int setup(struct run_options *o, struct wp_run_config *cfg, int P, struct wp_schedule *s, struct wp_err *err)
{
    wp_run_config_default(cfg);
    if (o->config && wp_run_config_read(o->config, cfg, err))
        return -1;
    if (o->emulated && wp_layer_table_read(&o->table, o->layers_path, 0, WP_CONTRACT_AUTO, err))
        return -1;
    struct wp_train_config *t = &cfg->train;
    if (o->global_batch > 0)
        t->global_batch = o->global_batch;
    if (o->steps >= 0)
        t->steps = o->steps;
    if (o->seed >= 0)
        t->seed = (unsigned long long)o->seed;
    if (o->data)
        wp_strlcpy(t->data, o->data, sizeof t->data);
    if (o->synthetic)
        t->synthetic_data = 1;
    if (o->plan_path && apply_plan(o, cfg, P, err))
        return -1;
    struct wp_sched_params *p = &o->sched.params;
    if (o->sched.schedule_file) {
        if (wp_sched_cli_make(&o->sched, s, err))
            return -1;
        if (s->nranks != P)
            return wp_errorf(err, "%s is a schedule of %d ranks: launch %d (mpiexec -n %d), not %d",
                             o->sched.schedule_file, s->nranks, s->nranks, s->nranks, P);
        p->microbatches = s->nmicro;
        o->sched.micro_given = 1;
    }
    if (o->sched.micro_given)
        t->micro_batches = p->microbatches;
    p->microbatches = t->micro_batches;
    /* emulated without a model file: micro-batches of the table's profile batch */
    if (o->emulated && !o->config && o->global_batch <= 0 && !o->plan_path)
        t->global_batch = t->micro_batches * o->table.profile_batch;
    p->ranks = P;
    if (o->stages) {
        /* data-parallel pipelines: every stage replicated P/S times; replica j
         * of each stage talks to replica j of the next, so the copies run
         * apart and meet only at the gradient allreduce */
        if (p->nreplicas)
            return wp_errorf(err, "give --stages or --replicas, not both");
        if (P % o->stages)
            return wp_errorf(err, "--stages %d does not divide the %d ranks into pipeline copies", o->stages, P);
        if (p->kind != WP_SCHED_GPIPE && p->kind != WP_SCHED_1F1B && p->kind != WP_SCHED_KFKB && o->stages != P)
            return wp_errorf(err, "data-parallel copies (--stages %d < %d ranks) are made for gpipe, 1f1b and kfkb",
                             o->stages, P);
        if (o->stages < P) {
            for (int st = 0; st < o->stages; st++)
                o->sched.replicas[st] = P / o->stages;
            p->nreplicas = o->stages;
            p->replicas = o->sched.replicas;
        }
    }
    return wp_run_config_check(cfg, err);
}

/* --adapt: the trace's place in the run (rank 0's). */
struct run_timeline {
    const struct wp_adapt *adapt; /* its decisions; NULL: the trace is the iteration alone */
    const struct wp_clock *clock; /* MPI_Wtime to the common timeline */
    double run_start_s;           /* the run's first iteration's start, on the common timeline */
    long traced_iteration;
};

/* One instant event per decision of --adapt, on the run's timeline (the
 * common one less run_origin_s); their args are allocated (NULL: none). */
static struct wp_trace_mark *decision_marks(const struct run_timeline *tl, double run_origin_s)
{
    const struct wp_adapt *a = tl->adapt;
    struct wp_trace_mark *marks = calloc((size_t)(a->ndecisions ? a->ndecisions : 1), sizeof *marks);
    for (int i = 0; marks && i < a->ndecisions; i++) {
        const struct wp_adapt_decision *d = &a->decisions[i];
        int is_k = strcmp(d->adapt, "k") == 0;
        size_t args_len = wp_adapt_decision_json(d, NULL, 0) + 1;
        char *args = malloc(args_len);
        if (args)
            wp_adapt_decision_json(d, args, args_len);
        marks[i].t_s = d->decided_wtime_s - tl->clock->offset_s - tl->clock->origin_s - run_origin_s;
        marks[i].name = is_k ? (d->switched ? "adapt k: switch" : "adapt k: stay")
                             : (d->switched ? "adapt partition: move" : "adapt partition: stay");
        marks[i].args_json = args;
    }
    return marks;
}

/* The measured timeline of the last step, gathered into rank 0's trace
 * and SVG on the common clock: every rank's computes, and the messages it
 * received, from the send's post (sent_s, per action) to the receive seen
 * complete, drawn as the sender's, the way the simulator draws transfers.
 * Both count from the iteration's first event; with --adapt (tl->adapt)
 * the trace counts from the run's start instead and marks its decisions. */
static void write_measured_trace(const struct wp_interp *pin, const struct wp_schedule *sched, const double *msg_sent_s,
                                 const struct run_options *o, const struct run_timeline *tl, int world_rank,
                                 int world_P, int lane)
{
    struct wp_err err = {""};
    enum { FIELDS = 7 }; /* rank, op, stage, mb, peer, start, end */
    int rank = pin->rank, P = sched->nranks; /* the schedule's (a tensor group's lane 0 draws it) */
    const struct wp_action_list *l = &sched->lists[rank];
    long n = lane == 0 ? pin->timing.nevents : 0, nmsg = 0;
    if (lane != 0)
        msg_sent_s = NULL;
    for (int i = 0; msg_sent_s && i < l->count; i++)
        nmsg += wp_op_is_recv(l->actions[i].op);
    double *mine = malloc((size_t)(n + nmsg + 1) * FIELDS * sizeof *mine);
    long nev = 0;
    for (long i = 0; mine && i < n; i++, nev++) {
        double *e = mine + FIELDS * nev;
        e[0] = rank;
        e[1] = pin->timing.events[i].op;
        e[2] = pin->timing.events[i].stage;
        e[3] = pin->timing.events[i].mb;
        e[4] = -1;
        e[5] = pin->timing.start_s + pin->timing.events[i].start;
        e[6] = pin->timing.start_s + pin->timing.events[i].end;
    }
    for (int i = 0; mine && msg_sent_s && i < l->count; i++) {
        const struct wp_action *a = &l->actions[i];
        if (!wp_op_is_recv(a->op))
            continue;
        int act = a->op == WP_OP_RECV_ACT;
        double *e = mine + FIELDS * nev++;
        e[0] = a->peer;
        e[1] = act ? WP_OP_SEND_ACT : WP_OP_SEND_GRAD;
        e[2] = act ? a->stage - 1 : a->stage + 1;
        e[3] = a->microbatch;
        e[4] = rank;
        e[5] = msg_sent_s[i];
        e[6] = pin->msg_done_s[i];
    }
    int count = (int)(FIELDS * nev), *counts = NULL, *displs = NULL;
    double *all = NULL;
    if (world_rank == 0) {
        counts = calloc((size_t)world_P, sizeof *counts);
        displs = calloc((size_t)world_P, sizeof *displs);
    }
    MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int total = 0;
    if (world_rank == 0) {
        for (int r = 0; r < world_P; r++) {
            displs[r] = total;
            total += counts[r];
        }
        all = malloc((size_t)(total ? total : 1) * sizeof *all);
    }
    MPI_Gatherv(mine, count, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (world_rank == 0) {
        struct wp_sim_result res;
        memset(&res, 0, sizeof res);
        res.nranks = P;
        res.events = calloc((size_t)(total / FIELDS + 1), sizeof *res.events);
        double origin = INFINITY; /* the first event starts the timeline */
        for (int i = 0; i + FIELDS <= total; i += FIELDS)
            origin = all[i + 5] < origin ? all[i + 5] : origin;
        for (int i = 0; res.events && i + FIELDS <= total; i += FIELDS) {
            struct wp_sim_event *e = &res.events[res.nevents++];
            *e = (struct wp_sim_event){(int)all[i], (int8_t)all[i + 1], (int)all[i + 2], (int)all[i + 3],
                                       (int)all[i + 4], all[i + 5] - origin, all[i + 6] - origin};
            if (e->end > res.makespan)
                res.makespan = e->end;
        }
        char title[128];
        snprintf(title, sizeof title, "%s, P=%d, M=%d (measured)", wp_sched_kind_name(sched->params.kind), P,
                 sched->nmicro);
        int rc = o->svg ? wp_trace_write_svg(o->svg, &res, title, &err) : 0;
        if (rc == 0 && o->trace && !tl->adapt) {
            rc = wp_trace_write_json(o->trace, &res, title, &err);
        } else if (rc == 0 && o->trace) {
            /* the run's start is the origin: the iteration after the decisions */
            double run_origin_s = tl->run_start_s < origin ? tl->run_start_s : origin;
            double iteration_at_s = isfinite(origin) ? origin - run_origin_s : 0;
            for (long i = 0; i < res.nevents; i++) {
                res.events[i].start += iteration_at_s;
                res.events[i].end += iteration_at_s;
            }
            res.makespan += iteration_at_s;
            struct wp_trace_mark *marks = decision_marks(tl, run_origin_s);
            char other[160];
            snprintf(other, sizeof other, "\"traced_iteration\":%ld,\"traced_iteration_start_s\":%.6f",
                     tl->traced_iteration, iteration_at_s);
            struct wp_trace_marks extra = {marks, marks ? tl->adapt->ndecisions : 0, "adapt decisions", other};
            rc = wp_trace_write_json_marked(o->trace, &res, title, &extra, &err);
            for (int i = 0; marks && i < tl->adapt->ndecisions; i++)
                free((void *)marks[i].args_json);
            free(marks);
        }
        if (rc)
            wp_err_print(CMD, &err);
        free(res.events);
    }
    free(mine);
    free(all);
    free(counts);
    free(displs);
}

/* The tuner's plans: the run's schedule settings with another k and
 * micro-batch count, on the ranks the run's schedule uses. */
struct plan_maker {
    struct wp_sched_params params;
    const int *rank_map; /* --plan: its devices' ranks, or NULL */
};

static int make_plan(void *ctx, int k, int nmicro, struct wp_schedule *out, struct wp_err *err)
{
    const struct plan_maker *pm = ctx;
    struct wp_sched_params p = pm->params;
    p.kind = k > 1 ? WP_SCHED_KFKB : WP_SCHED_1F1B;
    p.k = k;
    p.microbatches = nmicro;
    if (wp_schedule_generate(&p, out, err))
        return -1;
    return pm->rank_map ? wp_schedule_rename_ranks(out, pm->rank_map, err) : 0;
}

/* Activation memory: the slots a rank needs at once (the schedule's peak
 * of micro-batches in flight, plus the one being received ahead) and what
 * its stages keep once (a recomputing stage's work slot), the most of any
 * rank (collective). */
static double activation_peak_bytes(const struct wp_interp *in)
{
    double peak = 0;
    for (int h = 0; h < in->nheld; h++)
        peak += (double)in->held[h].exec.nslots * in->held[h].exec.slot_bytes + in->held[h].exec.work_bytes;
    MPI_Allreduce(MPI_IN_PLACE, &peak, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return peak;
}

/* The stages that recompute their forward before each backward (--recompute:
 * all; --plan: those it marks) into *out, NULL when none; checked against
 * the schedule, and rank 0 says which. */
static int recompute_stages(const struct run_options *o, const struct wp_schedule *s, int rank, int **out,
                            struct wp_err *err)
{
    int S = s->nstages, n = 0;
    *out = NULL;
    if (!o->recompute && !o->plan_path)
        return 0;
    int *marked = calloc((size_t)S, sizeof *marked);
    if (!marked)
        return wp_errorf(err, "out of memory");
    for (int st = 0; st < S; st++) { /* a plan's stages are the schedule's (virtual ones when interleaved) */
        marked[st] = o->recompute || (st < o->plan.nstages && o->plan.stages[st].recompute);
        n += marked[st];
    }
    if (n == 0) {
        free(marked);
        return 0;
    }
    *out = marked;
    if (wp_gpt2_stage_modes_check(s->split_backward, 1, err))
        return wp_err_prefix(err, "%s %s: ", o->sched.schedule_file ? "schedule file" : "schedule",
                             o->sched.schedule_file ? o->sched.schedule_file : wp_sched_kind_name(s->params.kind));
    if (rank != 0)
        return 0;
    if (n == S) {
        printf("recompute: all %d stages run their forward again before each backward, keeping per micro-batch "
               "in flight only their boundaries (%s)\n", S, o->recompute ? "--recompute" : "the plan's");
        return 0;
    }
    printf("recompute: stage%s", n > 1 ? "s" : "");
    for (int st = 0, said = 0; st < S; st++)
        if (marked[st])
            printf("%s %d", said++ ? "," : "", st);
    printf(" of %d run their forward again before each backward, keeping per micro-batch in flight only their "
           "boundaries (the plan's)\n", S);
    return 0;
}

/* Blocks per stage as a checkpoint records them (real compute only). */
static const char *partition_text(const int *count, int nstages, int emulated, char *buf, size_t size)
{
    if (emulated || !count)
        return NULL;
    wp_adapt_partition_text(count, nstages, buf, size);
    return buf;
}

/* A move of --adapt partition: the stages' ranges become count's (first
 * and end are what the stage kinds' contexts read: blocks [first, end), or
 * emulated the table's layers [first, end]), the layers' state moves
 * (repartition.h); *pause_s is how long the job stood (the slowest rank). */
static int move_layers(struct wp_interp *in, const struct run_options *o, int *first, int *end, const int *count,
                       wp_stage_make_fn make, void *make_ctx, int rank, double *pause_s, struct wp_err *err)
{
    int S = in->s->nstages, inclusive = o->emulated;
    int *lo = malloc((size_t)4 * S * sizeof *lo);
    if (!lo)
        return wp_errorf(err, "out of memory");
    int *hi = lo + S, *new_lo = lo + 2 * S, *new_hi = lo + 3 * S, next = first[0];
    for (int st = 0; st < S; st++) {
        lo[st] = first[st];
        hi[st] = end[st] + inclusive;
        new_lo[st] = next;
        new_hi[st] = next += count[st];
        first[st] = new_lo[st];
        end[st] = new_hi[st] - inclusive;
    }
    double t0 = MPI_Wtime(), bytes = 0;
    wp_watchdog_pause_begin("a move of layers"); /* large transfers: the watchdog's pause limit */
    int rc = wp_interp_repartition(in, lo, hi, new_lo, new_hi, make, make_ctx, &bytes, err);
    wp_watchdog_pause_end();
    double took[2] = {MPI_Wtime() - t0, bytes};
    MPI_Allreduce(MPI_IN_PLACE, &took[0], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &took[1], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *pause_s = took[0];
    if (rc == 0 && rank == 0)
        printf("adapt partition: moved %.2f MiB of parameters and AdamW moments between ranks in %.3f s\n",
               took[1] / 1048576, took[0]);
    free(lo);
    return rc;
}

/* wp_checkpoint_save under the watchdog's limit for pauses (watchdog.h) */
static int watched_checkpoint_save(struct wp_interp *in, const struct wp_tensor_group *tg, const char *dir,
                                   long steps_done, const char *partition, int keep, struct wp_err *err)
{
    wp_watchdog_pause_begin("a checkpoint save");
    int rc = wp_checkpoint_save(in, tg, dir, steps_done, partition, keep, err);
    wp_watchdog_pause_end();
    return rc;
}

int wp_cmd_run(int argc, char **argv)
{
    struct run_options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    MPI_Init(&argc, &argv);
    wp_stop_signals_install();
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    /* a lost rank or node ends the job with a message naming it (rank_loss.h) */
    struct wp_rank_loss rank_loss;
    struct wp_err loss_err = {""};
    if (wp_rank_loss_init(&rank_loss, &loss_err)) {
        wp_err_print(CMD, &loss_err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* with tensor groups the schedule has one rank per group: srank, run by
     * every lane of the group (comm_lanes.h); a plan gives its group */
    struct wp_err plan_err = {""};
    int plan_status = o.plan_path ? wp_plan_read(o.plan_path, &o.plan, &plan_err) : 0;
    if (o.plan_path && plan_status == 0) {
        o.mesh[1] = o.plan.tensor.p1;
        o.mesh[2] = o.plan.tensor.p2;
    }
    int tensor = o.mesh[0] * o.mesh[1] * o.mesh[2], lane = rank % tensor, srank = rank / tensor, world_P = P;
    int nodes = 1;
    int shared_cores = share_cores(rank, &nodes);
    struct wp_err err = {""};
    struct wp_run_config cfg;
    struct wp_schedule s;
    memset(&s, 0, sizeof s);
    struct wp_corpus corpus;
    memset(&corpus, 0, sizeof corpus);
    int *first = NULL, *end = NULL, *rank_map = NULL, *recompute = NULL;
    /* Everything that can be wrong with the settings is found before any
     * rank computes, identically on every rank. */
    int status = plan_status ? wp_errorf(&err, "%s", plan_err.msg)
                 : P % tensor ? wp_errorf(&err, "mesh %dx%dx%d: groups of %d ranks do not divide the %d ranks",
                                          o.mesh[0], o.mesh[1], o.mesh[2], tensor, P)
                              : 0;
    if (status == 0)
        P = P / tensor; /* from here on, the schedule's ranks */
    if (status == 0)
        status = setup(&o, &cfg, P, &s, &err);
    if (status == 0 && o.mesh[0] > 1)
        for (int st = 1; st < s.nstages && status == 0; st++)
            if (s.place[st].nreplicas != s.place[0].nreplicas)
                status = wp_errorf(&err, "--mesh %dx%dx%d: stages of different replica counts (%d, %d) would trade "
                                         "pieces of sequences; give every stage the same",
                                   o.mesh[0], o.mesh[1], o.mesh[2], s.place[0].nreplicas, s.place[st].nreplicas);
    if (status == 0 && tensor > 1) {
        char why[160];
        if (wp_tp_group_check(o.mesh[1], o.mesh[2], cfg.model.heads, cfg.model.channels, o.mesh[2], why,
                              sizeof why))
            status = wp_errorf(&err, "mesh %dx%dx%d: %s", o.mesh[0], o.mesh[1], o.mesh[2], why);
    }
    if (status == 0 && o.measure)
        status = wp_csv_check_header(o.measure, WP_MEASURE_CSV_HEADER, "measurement rows", "--measure", &err);
    if (status == 0 && o.results)
        status = wp_csv_check_header(o.results, results_header(o.emulated), results_kind(o.emulated), "--results", &err);
    if (status == 0 && !o.sched.schedule_file)
        status = wp_sched_cli_make(&o.sched, &s, &err);
    if (status == 0 && o.sched.schedule_file && rank == 0)
        printf("schedule file %s: %d ranks, %d stages, %d micro-batches%s\n", o.sched.schedule_file, s.nranks,
               s.nstages, s.nmicro, s.split_backward ? ", backward split into B and W" : "");
    if (status == 0 && o.plan_path) {
        /* the plan's r-th device is schedule rank r: move it to the rank on that device */
        int *to = rank_map = malloc((size_t)P * sizeof *to);
        status = to ? wp_plan_rank_map(&o.plan, to, &err) : wp_errorf(&err, "out of memory");
        if (status == 0)
            status = wp_schedule_rename_ranks(&s, to, &err);
        if (status == 0 && rank == 0) {
            char shape[256];
            wp_plan_shape(&o.plan, shape, sizeof shape);
            char group[64] = "";
            if (tensor > 1)
                snprintf(group, sizeof group, ", tensor groups of %dx%d", o.plan.tensor.p1, o.plan.tensor.p2);
            printf("plan %s: %s, %d stages%s, blocks per stage %s, %d micro-batches of %d, policy %c, predicted %.4f s "
                   "per iteration on %s\n",
                   o.plan_path, shape, o.plan.nstages, group, o.plan_partition, o.plan.microbatches,
                   o.plan.micro_batch, o.plan.policy, o.plan.predicted_iter_s, o.plan.hw.cluster);
            int moved = 0;
            for (int r = 0; r < P; r++)
                moved += to[r] != r;
            if (moved)
                printf("plan: %d of %d ranks run another place of the schedule than their rank number, as the "
                       "plan's devices ask\n", moved, P);
        }
    }
    if (status == 0) {
        first = malloc((size_t)s.nstages * sizeof *first);
        end = malloc((size_t)s.nstages * sizeof *end);
        if (!first || !end)
            status = wp_errorf(&err, "out of memory");
        else if (!o.emulated) {
            /* resuming without --partition: the checkpoint's partition, when it has as many stages */
            char recorded[256] = "";
            if (o.resume && !o.partition && (status = wp_checkpoint_partition(o.resume, recorded, sizeof recorded,
                                                                              &err)) == 0 && recorded[0]) {
                int colons = 0;
                wp_strlcpy(o.resumed_partition, recorded, sizeof o.resumed_partition);
                for (char *c = o.resumed_partition; *c; c++)
                    if (*c == ':') {
                        *c = ',';
                        colons++;
                    }
                if (colons + 1 == s.nstages) {
                    o.partition = o.resumed_partition;
                    if (rank == 0)
                        printf("resuming with the partition %s recorded (blocks per stage)\n", recorded);
                } else if (rank == 0) {
                    printf("the checkpoint's partition %s is of %d stages, this run has %d: blocks split evenly\n",
                           recorded, colons + 1, s.nstages);
                }
            }
            if (status == 0)
                status = partition(o.partition, cfg.model.layers, s.nstages, first, end, &err);
        }
        else if (o.partition) /* emulated: first and end hold each stage's first and last layer */
            status = wp_layer_stages_parse(&o.table, o.partition, s.nstages, first, end, &err);
        else
            status = wp_layer_stages_balanced(&o.table, s.nstages, first, end, &err);
    }
    if (status == 0 && !o.emulated)
        status = recompute_stages(&o, &s, rank, &recompute, &err);
    if (status == 0 && !o.emulated) {
        if (cfg.train.synthetic_data)
            status = wp_corpus_synthetic(1 << 20, cfg.model.vocabulary, cfg.train.seed, &corpus, &err);
        else {
            char shipped[PATH_MAX]; /* the demo corpus, installed or in the source tree */
            if (!cfg.train.data[0])
                wp_data_path("jobs/data/sonnets.txt", shipped, sizeof shipped);
            status = wp_corpus_load(cfg.train.data[0] ? cfg.train.data : shipped, cfg.model.sequence_length, &corpus,
                                    &err);
        }
        if (status == 0 && !cfg.train.synthetic_data && cfg.model.vocabulary < 256)
            status = wp_errorf(&err, "byte-level tokens need vocabulary 256 (the model has %d)", cfg.model.vocabulary);
    }
    /* --changes: every rank holds the scenario (its slow changes are its own) */
    struct wp_changes changes = {0};
    if (status == 0 && o.changes_path && (status = wp_changes_load(o.changes_path, &changes, &err)) == 0) {
        if (wp_changes_max_rank(&changes) >= world_P)
            status = wp_errorf(&err, "%s: slows rank %d of a run of %d ranks", o.changes_path,
                               wp_changes_max_rank(&changes), world_P);
        else if (wp_changes_need_hook(&changes) && !o.changes_hook)
            status = wp_errorf(&err, "%s: changes other than slow need --changes-hook PROGRAM", o.changes_path);
        else if (wp_changes_slow(&changes) && o.slowdown_path)
            status = wp_errorf(&err, "%s slows ranks, and so does --slowdown-file: give one of them", o.changes_path);
    }
    if (status) {
        if (rank == 0)
            wp_err_print(CMD, &err);
        wp_changes_free(&changes);
        wp_corpus_destroy(&corpus); /* read before a later settings error */
        wp_schedule_destroy(&s);
        wp_plan_destroy(&o.plan);
        wp_layer_table_destroy(&o.table);
        free(first);
        free(end);
        free(rank_map);
        free(recompute);
        wp_rank_loss_destroy(&rank_loss);
        MPI_Finalize();
        return 1;
    }
    struct wp_comm *comm = NULL;
    struct wp_interp in;
    memset(&in, 0, sizeof in);
    const struct wp_kernel_ops *kernels = &wp_kernels_cpu;
    const struct wp_comm_ops *cops = &wp_comm_mpi;
#ifdef WP_HAVE_CUDA
    if (o.device && strcmp(o.device, "cuda") == 0) {
        int ndev = 0, lrank;
        MPI_Comm local;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
        MPI_Comm_rank(local, &lrank);
        MPI_Comm_free(&local);
        if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
            status = wp_errorf(&err, "--device cuda: rank %d sees no CUDA device", rank);
        else
            cudaSetDevice(lrank % ndev);
        kernels = &wp_kernels_cuda;
        cops = &wp_comm_nccl;
    }
#endif
    if (o.kernel_times)
        kernels = wp_kernels_timed(kernels);
    if (status == 0)
        status = cops->init(&comm, &err);
    /* --tensor: the group's collectives on the backend, the interpreter's
     * messages and sums on this lane (the schedule's ranks) */
    struct wp_tensor_group tgroup;
    memset(&tgroup, 0, sizeof tgroup);
    const struct wp_comm_ops *interp_cops = cops;
    struct wp_comm *interp_comm = comm;
    if (status == 0 && tensor > 1) {
        status = wp_tensor_group_init(&tgroup, o.mesh[0], o.mesh[1], o.mesh[2], rank, cops, comm, kernels, &err);
        if (status == 0)
            status = wp_comm_lanes_make(cops, comm, tensor, lane, &interp_comm, &err);
        if (status == 0)
            interp_cops = &wp_comm_lanes;
    }
    struct wp_slowdown slowdown;
    wp_slowdown_init(&slowdown, o.slowdown_path, rank);
    int slowed = o.slowdown_path || wp_changes_slow(&changes);
    struct wp_stage_gpt2_ctx gpt2_ctx = {kernels, &cfg, &corpus, first, end, slowed ? &slowdown : NULL,
                                         1e-6 * o.progress_us, tensor > 1 ? &tgroup : NULL, recompute};
    struct wp_stage_emulated_ctx emu_ctx = {&o.table, first, end, &slowdown, 1e-6 * o.progress_us};
    float dloss = 1.0f / ((float)cfg.train.global_batch * (float)cfg.model.sequence_length);
    if (status == 0 && o.emulated)
        status = wp_interp_init(&in, &s, srank, kernels, interp_cops, interp_comm, cfg.train.global_batch, dloss,
                                wp_stage_emulated_make, &emu_ctx, &err);
    else if (status == 0)
        status = wp_interp_init(&in, &s, srank, kernels, interp_cops, interp_comm, cfg.train.global_batch, dloss,
                                wp_stage_gpt2_make, &gpt2_ctx, &err);
    in.cfg = o.emulated ? NULL : &cfg;
    if (status == 0)
        wp_interp_set_grad_overlap(&in, o.grad_overlap, o.grad_bucket_bytes);
    int any = status != 0;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
        if (status)
            wp_err_print(CMD, &err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    in.record_events = 1; /* the last step's timeline feeds the summary's simulation */
    /* every iteration measures (measure.h): one timeline for message times */
    struct wp_clock clock;
    struct wp_measure measure = {0};
    if (wp_clock_estimate(&clock, MPI_COMM_WORLD, 8) || wp_measure_init(&measure, s.nstages, &err)) {
        wp_err_print(CMD, err.msg[0] ? &err : &(struct wp_err){"estimating the ranks' clock offsets failed"});
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* a tensor group's lane 0 measures for its schedule rank: its lanes 0 exchange the messages' times */
    MPI_Comm lanes0 = MPI_COMM_NULL;
    if (tensor > 1) {
        MPI_Comm_split(MPI_COMM_WORLD, lane == 0 ? 0 : MPI_UNDEFINED, rank, &lanes0);
        measure.messages_comm = lanes0;
    }
    in.measure = lane == 0 ? &measure : NULL;
    in.clock = &clock;
    /* --adapt k: the plans, made alike on every rank; run_s the one running */
    const struct wp_schedule *run_s = &s;
    struct wp_adapt adapt;
    memset(&adapt, 0, sizeof adapt);
    struct plan_maker maker = {s.params, rank_map};
    if (o.adapt.k && !o.adapt.ngiven && o.plan_path && o.plan.nkfkb > 0) { /* the planner's curve */
        int *kb = malloc((size_t)2 * o.plan.nkfkb * sizeof *kb);
        for (int i = 0; kb && i < o.plan.nkfkb; i++) {
            kb[2 * i] = o.plan.kfkb[i].k;
            kb[2 * i + 1] = o.plan.kfkb[i].micro_batch;
        }
        o.adapt.given = kb;
        o.adapt.ngiven = kb ? o.plan.nkfkb : 0;
    }
    /* --adapt partition: the units moved (blocks, or the table's layers) and
     * the reference costs of the layers (real: GPT-2's analytic table at one
     * sequence; the rank's measured speed against it is what counts) */
    struct wp_layer_table ref_table;
    wp_layer_table_init(&ref_table);
    int *unit_count = calloc((size_t)s.nstages, sizeof *unit_count);
    for (int st = 0; unit_count && st < s.nstages; st++)
        unit_count[st] = o.emulated ? end[st] - first[st] + 1 : end[st] - first[st];
    if (o.adapt.k || o.adapt.partition) {
        int start_k = s.params.kind == WP_SCHED_KFKB ? s.params.k : 1;
        int bad = unit_count ? 0 : wp_errorf(&err, "out of memory");
        if (bad == 0 && o.adapt.partition && in.nheld > 1)
            bad = wp_errorf(&err, "--adapt partition moves layers between ranks that hold one stage each; rank %d "
                                  "holds %d (%s)",
                            rank, in.nheld, wp_sched_kind_name(s.params.kind));
        if (bad == 0 && o.adapt.partition && !o.emulated) {
            struct wp_gpt_shape shape = {cfg.model.layers, cfg.model.channels, cfg.model.heads,
                                         cfg.model.sequence_length, cfg.model.vocabulary, 1, 4, 4};
            bad = wp_layer_table_gpt(&ref_table, &shape, 1e9, &err);
        }
        struct wp_adapt_units units = {o.emulated ? &o.table : &ref_table, o.emulated ? 0 : 1, o.emulated ? 0 : 1,
                                       o.emulated ? 0 : 1, unit_count};
        if (bad == 0)
            bad = wp_adapt_init(&adapt, &o.adapt, &s, start_k, cfg.train.global_batch, &units, srank, make_plan,
                                &maker, &err);
        if (o.adapt.k)
            adapt.tune.cores = o.emulated ? 0 : shared_cores; /* emulated passes sleep: no core is shared */
        if (bad) /* said before any rank can end the job */
            wp_err_print(CMD, &err);
        int any_bad = bad != 0;
        MPI_Allreduce(MPI_IN_PLACE, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any_bad) { /* every rank ends below, no step taken, everything freed: no abort that could
                        * swallow the message, which is said */
            status = -1;
            err.msg[0] = '\0';
        }
        if (!any_bad && rank == 0 && o.adapt.k) {
            printf("adapt k: every %d iterations, candidates", o.adapt.every);
            for (int i = 0; i < adapt.tune.nplans; i++)
                printf(" k=%d b=%d (M=%d)%s", adapt.tune.plans[i].k, adapt.tune.plans[i].micro_batch,
                       adapt.tune.plans[i].nmicro, i == adapt.tune.current ? " [start]" : "");
            printf("%s\n", o.adapt.replay_path ? "; switches replayed from the log" : "");
        }
        if (!any_bad && rank == 0 && o.adapt.partition) {
            char text[512];
            wp_adapt_partition_text(unit_count, s.nstages, text, sizeof text);
            printf("adapt partition: every %d iterations, %s per stage %s, moves of one boundary (or both of a "
                   "stage) by up to %d, a gain counted over %.0f iterations%s\n",
                   o.adapt.every, o.emulated ? "layers" : "blocks", text, adapt.parts.max_shift, o.adapt.horizon,
                   o.adapt.replay_path ? "; moves replayed from the log" : "");
        }
    }
    size_t measure_cap = (size_t)(6 * s.nstages + 1) * 128;
    /* per action: the send time paired with each receive (the trace's transfers) */
    double *msg_sent_s = calloc((size_t)(s.lists[srank].count ? s.lists[srank].count : 1), sizeof *msg_sent_s);
    long msg_sent_cap = s.lists[srank].count ? s.lists[srank].count : 1;
    char *measure_rows = rank == 0 && o.measure ? malloc(measure_cap) : NULL;
    long first_step = 0;
    if (o.resume && status == 0) {
        /* a checkpoint that does not load ends the run below, no step taken, everything freed */
        status = wp_checkpoint_load(&in, o.resume, &first_step, &err);
        if (status == 0 && rank == 0)
            printf("resumed from %s after %ld steps\n", o.resume, first_step);
    }
    /* --changes: the start's (and, resumed, every earlier one) before the first iteration */
    const double hook_timeout_s = 120;
    if (changes.n && status == 0) {
        if (wp_changes_apply(&changes, -1, first_step, rank, rank == 0 ? o.changes_hook : NULL, hook_timeout_s,
                             &slowdown, &err))
            status = -1; /* rank 0's hook: said at the end */
        MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    char replicas[256] = "";
    for (int st = 0; st < s.nstages && strlen(replicas) < sizeof replicas - 8; st++)
        snprintf(replicas + strlen(replicas), sizeof replicas - strlen(replicas), "%s%d", st ? ":" : "",
                 s.place[st].nreplicas * s.place[st].ncopies);
    int replicated = 0;
    for (int st = 0; st < s.nstages; st++)
        replicated |= s.place[st].nreplicas * s.place[st].ncopies > 1;
    if (rank == 0 && replicated && o.grad_overlap)
        printf("gradients: replicated stages sum theirs in buckets of %.3g MiB started as the backward finishes "
               "their layers (--grad-overlap on)\n",
               o.grad_bucket_bytes / 1048576);
    else if (rank == 0 && replicated)
        printf("gradients: replicated stages sum theirs at the ALLREDUCE, all at once (--grad-overlap off)\n");
    double peak_bytes = activation_peak_bytes(&in);
    /* how compute is done, in every row (emulated) and the summary */
    struct wp_layer_stage_arrays table_costs = {0};
    char compute_cols[700] = "";
    if (o.emulated) {
        char name[512];
        wp_strlcpy(name, o.layers_path, sizeof name);
        wp_csv_field(name, '_');
        snprintf(compute_cols, sizeof compute_cols, "emulated,%s", name);
        if (wp_layer_stage_arrays_make(&o.table, &s, cfg.train.global_batch, first, end, &table_costs, &err)) {
            if (rank == 0)
                wp_err_print(CMD, &err);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (rank == 0)
            printf("compute=emulated: each pass sleeps what %s (%s, profile batch %d) says for its stage's layers; "
                   "messages are real\n",
                   o.layers_path, o.table.name, o.table.profile_batch);
    }
    char ptext[4096]; /* the blocks per stage a checkpoint records */
    long nsteps = cfg.train.steps > first_step ? cfg.train.steps - first_step : 0;
    double *iters = calloc((size_t)(nsteps ? nsteps : 1), sizeof *iters);
    double *measure_s = calloc((size_t)(nsteps ? nsteps : 1), sizeof *measure_s); /* pairing and agreeing */
    /* a row: its fixed columns, compute_cols and the adapt columns (per stage) */
    size_t row_cap = 1024 + sizeof compute_cols + (size_t)s.nstages * 48;
    char *row = rank == 0 ? malloc(row_cap) : NULL;
    char *ran_partition = malloc((size_t)s.nstages * 12 + 1);
    if ((rank == 0 && !row) || !ran_partition || !unit_count) {
        wp_err_print(CMD, &(struct wp_err){"out of memory"});
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double run_start_s = 0; /* rank 0's first iteration's start: the adaptive trace's origin */
    long done_steps = cfg.train.steps > first_step ? cfg.train.steps : first_step; /* less when a signal stops it */
    int stopped_by = 0;
    if (rank == 0)
        wp_rank_loss_print_map(&rank_loss, stdout);
    /* rank 0's --changes-hook runs while the other ranks wait on it */
    double watch_s = o.watchdog_s && o.changes_hook ? o.watchdog_s + hook_timeout_s : o.watchdog_s;
    if (wp_rank_loss_watch(&rank_loss, watch_s, &loss_err)) {
        wp_err_print(CMD, &loss_err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long step = first_step; step < cfg.train.steps && status == 0; step++) {
        double loss_sum = 0;
        /* the units per stage this iteration runs on, before a move after it */
        wp_adapt_partition_text(unit_count, s.nstages, ran_partition, (size_t)s.nstages * 12 + 1);
        wp_measure_reset(&measure);
        if (tensor > 1)
            wp_tensor_group_reset(&tgroup);
        status = wp_interp_step(&in, step, &loss_sum, &err);
        if (step == first_step)
            run_start_s = in.timing.start_s;
        if (o.kernel_times && step == first_step && cfg.train.steps - first_step > 1)
            wp_kernel_times_reset(); /* the first step warms up */
        /* a tensor group's lanes run the same list: its lane 0 speaks for the schedule rank */
        double sums[3] = {loss_sum, lane == 0 ? in.timing.busy_s : 0, 0};
        double iter = in.timing.iter_s;
        /* waited for as messages are, under the watchdog */
        MPI_Request sums_req, iter_req;
        wp_comm_mpi_wait(MPI_Iallreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &sums_req),
                         &sums_req);
        wp_comm_mpi_wait(MPI_Iallreduce(MPI_IN_PLACE, &iter, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &iter_req),
                         &iter_req);
        wp_watchdog_iteration_end(iter);
        /* after the ranks met above, so that its time is its own */
        double measure_t0 = MPI_Wtime();
        if (((lane == 0 && wp_measure_messages(&measure, run_s, srank, in.msg_posted_s, in.msg_done_s, in.msg_bytes,
                                               msg_sent_s, status ? NULL : &err)) ||
             wp_measure_agree(&measure, status ? NULL : &err)) &&
            status == 0)
            status = -1;
        /* --adapt: the tuner sees the agreed measurements; a new plan runs from the next step */
        const struct wp_schedule *next = NULL;
        int moved = 0;
        if ((o.adapt.k || o.adapt.partition) &&
            wp_adapt_iteration(&adapt, &measure, step, step + 1 == cfg.train.steps, &next, &moved, unit_count,
                               status ? NULL : &err) &&
            status == 0)
            status = -1;
        if (measure_s)
            measure_s[step - first_step] = MPI_Wtime() - measure_t0;
        const struct wp_schedule *ran = run_s; /* this step's row */
        double ran_peak_bytes = peak_bytes;
        double pause_s = 0; /* this row's: the job stood after the iteration to move layers */
        if (moved) { /* live: the layers' state moves between neighbours, the job goes on */
            if (move_layers(&in, &o, first, end, unit_count, o.emulated ? wp_stage_emulated_make : wp_stage_gpt2_make,
                            o.emulated ? (void *)&emu_ctx : (void *)&gpt2_ctx, rank, &pause_s, &err)) {
                wp_err_print(CMD, &err);
                MPI_Abort(MPI_COMM_WORLD, 1); /* a rank half way between two partitions cannot go on */
            }
            wp_adapt_moved(&adapt, unit_count, pause_s);
            peak_bytes = activation_peak_bytes(&in);
            wp_layer_stage_arrays_free(&table_costs);
            if (o.emulated &&
                wp_layer_stage_arrays_make(&o.table, run_s, cfg.train.global_batch, first, end, &table_costs, &err))
                status = -1;
        }
        if (next) {
            if (wp_interp_reschedule(&in, next, &err) == 0) {
                run_s = next;
                peak_bytes = activation_peak_bytes(&in);
                if (next->lists[srank].count > msg_sent_cap) {
                    msg_sent_cap = next->lists[srank].count;
                    free(msg_sent_s);
                    msg_sent_s = calloc((size_t)msg_sent_cap, sizeof *msg_sent_s);
                }
                wp_layer_stage_arrays_free(&table_costs);
                if (o.emulated &&
                    wp_layer_stage_arrays_make(&o.table, run_s, cfg.train.global_batch, first, end, &table_costs, &err))
                    status = -1;
            } else {
                wp_err_print(CMD, &err);
                MPI_Abort(MPI_COMM_WORLD, 1); /* a rank half way between two plans cannot go on */
            }
        }
        double loss = o.emulated ? NAN : sums[0] / ((double)cfg.train.global_batch * cfg.model.sequence_length);
        in.last_loss = loss;
        if (iters)
            iters[step - first_step] = iter;
        double bubble = iter > 0 ? 1.0 - sums[1] / (P * iter) : 0;
        /* rank 0 appends the rows (a shared file system may stall for a while) and runs the
         * --changes hook while the others wait on the status below: a pause, not a lost rank */
        wp_watchdog_pause_begin("rank 0 writing the results rows");
        if (rank == 0) {
            time_t now = time(NULL);
            char stamp[32];
            strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
            int G = cfg.train.global_batch;
            /* emulated: no tokens (the table has none), no loss */
            double tokens = o.emulated ? 0 : (double)G * cfg.model.sequence_length / iter;
            const struct wp_sched_params *p = &ran->params;
            int k = p->kind == WP_SCHED_KFKB ? p->k : p->kind == WP_SCHED_GPIPE ? ran->nmicro : 1;
            int row_len = snprintf(row, row_cap, "%s,%s,%d,%d,%d,%s,%d,%d,%d,%d,%d,%d,%ld,%.6f,%.3f,%.1f,%.4f,%.0f,%.9g%s%s",
                     stamp, wp_sched_kind_name(p->kind), world_P, nodes, ran->nstages, replicas,
                     p->kind == WP_SCHED_HANAYO ? p->waves : 1, k, p->kind == WP_SCHED_INTERLEAVED ? p->chunks : 1,
                     ran->nmicro, G / ran->nmicro, G, step, iter, G / iter, tokens, bubble, ran_peak_bytes, loss,
                     o.emulated ? "," : "", compute_cols);
            int tail = row_len < 0 || (size_t)row_len >= row_cap
                           ? -1
                           : adapt_columns(&o.adapt, ran_partition, pause_s, &measure, row + row_len, row_cap - (size_t)row_len);
            if (isatty(STDOUT_FILENO)) /* a progress line on a terminal, one line per step in logs */
                printf("\rstep %ld/%d: loss %.6f, %.3f s/step, %.1f samples/s, about %.0f s left   %s", step + 1,
                       cfg.train.steps, loss, iter, G / iter, iter * (double)(cfg.train.steps - step - 1),
                       step + 1 == cfg.train.steps ? "\n" : "");
            else
                printf("step %ld: loss %.9g, %.3f s, bubble %.3f\n", step, loss, iter, bubble);
            fflush(stdout);
            if (o.results && tail < 0)
                status = wp_errorf(&err, "the results row of step %ld does not fit", step);
            else if (o.results && wp_csv_append(o.results, results_header(o.emulated), results_kind(o.emulated),
                                                  "--results", row, (size_t)(row_len + tail), &err))
                status = -1; /* said at the end */
            if (status == 0 && o.measure) {
                int len = measure_rows ? wp_measure_csv_rows(&measure, step, measure_rows, measure_cap) : -1;
                if (len < 0 || wp_csv_append(o.measure, WP_MEASURE_CSV_HEADER, "measurement rows", "--measure",
                                             measure_rows, (size_t)len, &err))
                    status = len < 0 ? wp_errorf(&err, "the measurement rows of step %ld do not fit", step) : -1;
            }
        }
        /* --changes before the next iteration: rank 0's hook ends before the broadcast below lets any rank on */
        if (status == 0 && changes.n && step + 1 < cfg.train.steps &&
            wp_changes_apply(&changes, step, step + 1, rank, rank == 0 ? o.changes_hook : NULL, hook_timeout_s,
                             &slowdown, &err))
            status = -1;
        MPI_Request status_req;
        wp_comm_mpi_wait(MPI_Ibcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD, &status_req), &status_req);
        wp_watchdog_pause_end();
        /* a stop signal on any rank (Slurm's time-limit warning or SIGTERM, ^C): this iteration's row is
         * written; checkpoint below and stop (stop_signal.h) */
        int stop_sig = wp_stop_signal();
        MPI_Request stop_req;
        wp_comm_mpi_wait(MPI_Iallreduce(MPI_IN_PLACE, &stop_sig, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &stop_req),
                         &stop_req);
        if (status == 0 && stop_sig && step + 1 < cfg.train.steps) {
            stopped_by = stop_sig;
            done_steps = step + 1;
            break;
        }
        if (status == 0 && o.save && o.save_every && (step + 1) % o.save_every == 0 && step + 1 < cfg.train.steps)
            status = watched_checkpoint_save(&in, tensor > 1 ? &tgroup : NULL, o.save, step + 1,
                                        partition_text(unit_count, s.nstages, o.emulated, ptext, sizeof ptext), o.keep,
                                        &err);
    }
    if (status == 0 && o.save) {
        status = watched_checkpoint_save(&in, tensor > 1 ? &tgroup : NULL, o.save, done_steps,
                                    partition_text(unit_count, s.nstages, o.emulated, ptext, sizeof ptext), o.keep,
                                    &err);
        if (status == 0 && rank == 0)
            printf("saved %s/step-%08ld (%s/latest)\n", o.save, done_steps, o.save);
    }
    if (status == 0 && cfg.train.steps > first_step)
    {
        double median = 0;
        long ran = done_steps - first_step;
        long n = ran > 2 ? ran - 1 : 0; /* the steps after the first */
        if (iters && n > 0)
            median = wp_stat3_sorted(iters + 1, (size_t)n).median;
        struct run_summary rs = {P, rank, shared_cores, lane == 0, o.mesh, peak_bytes, median,
                                 o.emulated ? &table_costs : NULL, o.layers_path};
        summarize(&in, run_s, &rs);
        if (!o.emulated)
            comm_bytes_summary(&in, tensor > 1 ? &tgroup : NULL, run_s, &cfg.model, rank);
        if (rank == 0 && measure_s && n > 0 && median > 0) {
            double mean = 0; /* before sorting: the decisions' cost shows in the mean */
            for (long i = 1; i <= n; i++)
                mean += measure_s[i] / (double)n;
            double cost = wp_stat3_sorted(measure_s + 1, (size_t)n).median;
            printf("measuring%s: %.3f ms per iteration to pair the messages' times and agree the sums%s (median, "
                   "%.2f %% of the iteration; mean %.3f ms, %.2f %%; a rank the machine holds back shows here)\n",
                   o.adapt.k ? " and tuning" : "", 1e3 * cost, o.adapt.k ? ", and every N to decide" : "",
                   100 * cost / median, 1e3 * mean, 100 * mean / median);
        }
    }
    if (status == 0 && o.kernel_times) {
        long timed = cfg.train.steps - first_step > 1 ? cfg.train.steps - first_step - 1 : 1;
        status = write_kernel_times(o.kernel_times, rank, world_P, timed, &err);
    }
    if (status == 0 && (o.trace || o.svg)) {
        struct run_timeline tl = {(o.adapt.k || o.adapt.partition) && nsteps > 0 ? &adapt : NULL, &clock, run_start_s,
                                  cfg.train.steps - 1};
        write_measured_trace(&in, run_s, msg_sent_s, &o, &tl, rank, world_P, lane);
    }
    free(iters);
    free(row);
    free(ran_partition);
    free(measure_rows);
    free(msg_sent_s);
    free(measure_s);
    wp_measure_destroy(&measure);
    wp_adapt_destroy(&adapt);
    wp_layer_table_destroy(&ref_table);
    free(unit_count);
    if (o.adapt.given && o.adapt.given != o.adapt_given)
        free((void *)o.adapt.given);
    free(rank_map);
    wp_layer_stage_arrays_free(&table_costs);
    wp_changes_free(&changes);
    if (status && rank == 0 && err.msg[0])
        wp_err_print(CMD, &err);
    wp_interp_destroy(&in);
    if (lanes0 != MPI_COMM_NULL)
        MPI_Comm_free(&lanes0);
    if (interp_comm != comm)
        wp_comm_lanes.destroy(interp_comm);
    if (tensor > 1)
        wp_tensor_group_destroy(&tgroup);
    cops->destroy(comm);
    wp_corpus_destroy(&corpus);
    wp_schedule_destroy(&s);
    wp_plan_destroy(&o.plan);
    wp_layer_table_destroy(&o.table);
    free(first);
    free(end);
    free(recompute);
    wp_rank_loss_destroy(&rank_loss);
    MPI_Finalize();
    if (status == 0 && stopped_by) {
        if (rank == 0)
            printf("stopped by signal %d after %ld of %d steps%s%s: exit status %d; resume with --resume and the "
                   "same --steps\n",
                   stopped_by, done_steps, cfg.train.steps, o.save ? ", checkpoint in " : "", o.save ? o.save : "",
                   WP_EXIT_STOPPED);
        return WP_EXIT_STOPPED;
    }
    return status ? 1 : 0;
}
