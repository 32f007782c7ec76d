/* `wavepipe run`: trains GPT-2 over MPI ranks by interpreting a schedule's
 * action lists. This file parses the options, prints the usage and calls
 * the training object (run/train/train.h), which does the rest. */
#include <config.h>
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/sched_cli.h"
#include "cmd/commands.h"
#include "run/train/train.h"
#include "util/datadir.h"

#define CMD "run"

enum { OPT_CONFIG = 3000, OPT_SCHEDULE, OPT_GLOBAL_BATCH, OPT_STEPS, OPT_SEED, OPT_DATA, OPT_RESULTS, OPT_TRACE,
       OPT_PARTITION, OPT_SYNTHETIC, OPT_SAVE, OPT_SAVE_EVERY, OPT_KEEP, OPT_RESUME, OPT_SVG, OPT_DEVICE, OPT_STAGES,
       OPT_TENSOR, OPT_MESH, OPT_PLAN, OPT_COMPUTE, OPT_LAYERS, OPT_SLOWDOWN, OPT_KERNEL_TIMES, OPT_CHANGES,
       OPT_CHANGES_HOOK, OPT_PROGRESS_US, OPT_WATCHDOG, OPT_MEASURE, OPT_ADAPT, OPT_ADAPT_EVERY, OPT_ADAPT_MAX_K,
       OPT_ADAPT_LOG, OPT_ADAPT_REPLAY, OPT_ADAPT_CANDIDATES, OPT_ADAPT_MIN_GAIN, OPT_ADAPT_HORIZON,
       OPT_GRAD_OVERLAP, OPT_GRAD_BUCKET_MB, OPT_RECOMPUTE, OPT_DILATE, OPT_SCALE_BYTES, OPT_PRECISION };

static const char usage_text[] =
    "Usage: mpiexec -n P wavepipe run --config FILE [--schedule KIND] [--k K] [--waves W]\n"
    "         [--chunks V] [--policy A|B] [--replicas r0,r1,...] [--stages S | --data-parallel D]\n"
    "         [--micro-batches M]\n"
    "         [--global-batch G] [--steps N] [--seed N] [--data FILE] [--synthetic-data]\n"
    "         [--precision fp32|tf32|bf16]\n"
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
    "  --k, --waves, --chunks, --policy, --replicas, --data-parallel, --micro-batches,\n"
    "  --max-inflight, --order-search\n"
    "                         as for wavepipe schedule (--data-parallel D: D data-parallel copies\n"
    "                         of the schedule's pipeline, each on P/D ranks, for every kind)\n"
    "  --global-batch G       sequences per step\n"
    "  --steps N              optimizer steps\n"
    "  --seed N               initialisation seed\n"
    "  --data FILE            text corpus (bytes are tokens); default: the shipped corpus\n"
    "  --synthetic-data       random tokens instead of a corpus\n"
    "  --precision P          the kernels' precision (default the config's train.precision, else\n"
    "                         fp32): fp32; tf32 (matrix products read their operands with 10\n"
    "                         mantissa bits, as TF32 tensor cores); bf16, as Megatron-LM's --bf16:\n"
    "                         activations and their gradients stored as bfloat16 values (rounded\n"
    "                         to nearest even), products summed in float32,\n"
    "                         LayerNorm, softmax and the loss computed in float32, weight\n"
    "                         gradients, float32 master weights and AdamW moments (checkpoints\n"
    "                         hold the master weights, float32)\n"
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
    "  --stages S             pipelines of S ranks on the P ranks: P/S data-parallel copies of\n"
    "                         the pipeline, each taking its share of every micro-batch, gradients\n"
    "                         allreduced per stage; the same as --data-parallel P/S, for every\n"
    "                         kind. S is the pipeline's stage count for gpipe, 1f1b and kfkb\n"
    "                         (there the same schedule as --replicas P/S,P/S,..); interleaved and\n"
    "                         bfs put V S stages on them, hanayo 2 W S, zb-v and dualpipev 2 S, chimera S\n"
    "                         in two directions. S must divide P (with --tensor, P counts groups)\n"
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
    "                         summary and traces say compute=emulated and name the table; rows\n"
    "                         add dilation, byte_scale (--dilate, --scale-bytes) and host_busy,\n"
    "                         the share of the host's processors busy in the iteration (/proc/stat),\n"
    "                         and the summary the same over the iterations after the first\n"
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
    "                         each; a hook that fails ends the run); emulated, it finds --dilate and\n"
    "                         --scale-bytes in WAVEPIPE_DILATION and WAVEPIPE_BYTE_SCALE\n"
    "  --grad-overlap on|off  on (default): a replicated stage sums its gradients in buckets started\n"
    "                         as its last backward of the step (W, or B) finishes their layers,\n"
    "                         non-blocking (MPI) or on a stream of their own (NCCL), the ALLREDUCE\n"
    "                         waiting only for what is still in flight (PyTorch DDP's buckets);\n"
    "                         off: one sum of all of them at the ALLREDUCE\n"
    "  --grad-bucket-mb MB    the buckets' size in MiB (default 25, DDP's): a bucket starts once\n"
    "                         its layers reach it\n"
    "  --progress-us N        emulated: while a pass waits and messages are in flight, wake every N\n"
    "                         microseconds to move them (default 200)\n"
    "  --dilate F             emulated: time dilation (time-warped emulation, DieCast): every pass,\n"
    "                         optimizer step and --progress-us wake-up lasts F times as long, so\n"
    "                         the host's own costs (polls, copies, MPI's software latency) shrink\n"
    "                         F times beside what is measured; every time the run reports (rows,\n"
    "                         summary, --measure, traces, what --adapt reads) is divided by F.\n"
    "                         Shape the links F times slower too (tests/cluster/vcluster.sh\n"
    "                         shape --dilate F). Rows say dilation=F (default 1)\n"
    "  --scale-bytes S        emulated: messages, sums and moved layers carry 1/S of the model's\n"
    "                         bytes (their contents do not matter without a model) over links\n"
    "                         shaped S times slower (vcluster.sh shape --scale-bytes S), so the\n"
    "                         host copies and sums S times less; reported bytes and bandwidths\n"
    "                         are the model's. Rows say byte_scale=S (default 1)\n"
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
    "                         the last move's pause) and is above 2 %: at the iteration boundary\n"
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
    "                         unchanged links were measured up to 5 % apart from the runs)\n"
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
    "                         least 1 s; dilated (--dilate F), F times S. Compute is never timed.\n"
    "                         The message names the rank, the peer and their hosts; rank 0\n"
    "                         prints the ranks' hosts and process ids at the start (mpiexec\n"
    "                         and srun name a killed rank's process or task)\n"
    "  -h, --help             this text\n";

#define ARG(name, id) {name, required_argument, NULL, id}
#define FLAG(name, id) {name, no_argument, NULL, id}
static const struct option run_options[] = {
    ARG("config", OPT_CONFIG), ARG("schedule", OPT_SCHEDULE), ARG("global-batch", OPT_GLOBAL_BATCH),
    ARG("steps", OPT_STEPS), ARG("seed", OPT_SEED), ARG("data", OPT_DATA), FLAG("synthetic-data", OPT_SYNTHETIC),
    ARG("precision", OPT_PRECISION),
    ARG("results", OPT_RESULTS), ARG("trace", OPT_TRACE), ARG("svg", OPT_SVG), ARG("device", OPT_DEVICE),
    ARG("partition", OPT_PARTITION), ARG("stages", OPT_STAGES), ARG("tensor", OPT_TENSOR), ARG("mesh", OPT_MESH),
    ARG("plan", OPT_PLAN), ARG("save", OPT_SAVE), ARG("save-every", OPT_SAVE_EVERY), ARG("keep", OPT_KEEP),
    ARG("resume", OPT_RESUME), ARG("compute", OPT_COMPUTE), ARG("layers", OPT_LAYERS),
    ARG("slowdown-file", OPT_SLOWDOWN), ARG("kernel-times", OPT_KERNEL_TIMES), ARG("changes", OPT_CHANGES),
    ARG("changes-hook", OPT_CHANGES_HOOK), ARG("progress-us", OPT_PROGRESS_US), ARG("watchdog-s", OPT_WATCHDOG),
    ARG("grad-overlap", OPT_GRAD_OVERLAP), ARG("grad-bucket-mb", OPT_GRAD_BUCKET_MB),
    FLAG("recompute", OPT_RECOMPUTE), ARG("measure", OPT_MEASURE), ARG("dilate", OPT_DILATE),
    ARG("scale-bytes", OPT_SCALE_BYTES), ARG("adapt", OPT_ADAPT),
    ARG("adapt-every", OPT_ADAPT_EVERY), ARG("adapt-max-k", OPT_ADAPT_MAX_K), ARG("adapt-log", OPT_ADAPT_LOG),
    ARG("adapt-replay", OPT_ADAPT_REPLAY), ARG("adapt-candidates", OPT_ADAPT_CANDIDATES),
    ARG("adapt-min-gain", OPT_ADAPT_MIN_GAIN), ARG("adapt-horizon", OPT_ADAPT_HORIZON), FLAG("help", 'h'),
};

struct run_cli {
    struct wp_sched_cli sched;   /* the schedule options run shares with schedule and simulate */
    struct wp_train_options train;
    int adapt_given[2 * 64];     /* --adapt-candidates */
    char shipped_config[PATH_MAX], shipped_layers[PATH_MAX]; /* relative names found installed (util/datadir.h) */
};

static int parse_choice(int opt, const char *arg, struct run_cli *c)
{
    struct wp_train_options *t = &c->train;
    int i;
    switch (opt) {
    case OPT_SCHEDULE:
        t->kind_given = 1;
        return wp_sched_cli_schedule_option(CMD, arg, &c->sched);
    case OPT_SEED: return wp_parse_seed_option(CMD, "--seed", arg, &t->seed) ? 2 : 0;
    case OPT_DEVICE:
        if (wp_parse_choice_option(CMD, "--device", arg, (const char *const[]){"cpu", "cuda", NULL}, &i))
            return 2;
#ifndef WP_HAVE_CUDA
        if (i == 1)
            return wp_usage_error(CMD, "--device cuda: this build has no CUDA (configure --with-cuda)");
#endif
        t->device = arg;
        return 0;
    case OPT_COMPUTE:
        if (wp_parse_choice_option(CMD, "--compute", arg, (const char *const[]){"real", "emulated", NULL}, &i))
            return 2;
        t->emulated = i == 1;
        return 0;
    case OPT_ADAPT: /* none, k, partition or both: two bits */
        if (wp_parse_choice_option(CMD, "--adapt", arg, (const char *const[]){"none", "k", "partition", "both", NULL},
                                   &i))
            return 2;
        t->adapt.k = i & 1;
        t->adapt.partition = (i & 2) != 0;
        return 0;
    case OPT_ADAPT_MIN_GAIN:
        return wp_parse_percent_option(CMD, "--adapt-min-gain", arg, 1000, &t->adapt.min_gain) ? 2 : 0;
    default:
        return 1;
    }
}

/* One option of run's own: 0 when taken, 1 when not one of them, 2 after a usage error. */
static int parse_option(int opt, const char *arg, struct run_cli *c)
{
    struct wp_train_options *t = &c->train;
    int horizon;
    switch (opt) {
    case OPT_CONFIG: t->config = wp_data_input(arg, c->shipped_config, sizeof c->shipped_config); return 0;
    case OPT_GLOBAL_BATCH: return wp_parse_int_option(CMD, "--global-batch", arg, 1, 1 << 20, &t->global_batch) ? 2 : 0;
    case OPT_STEPS: return wp_parse_int_option(CMD, "--steps", arg, 0, 1 << 30, &t->steps) ? 2 : 0;
    case OPT_DATA: t->data = arg; return 0;
    case OPT_SYNTHETIC: t->synthetic = 1; return 0;
    case OPT_PRECISION:
        if ((t->precision = wp_precision_parse(arg)) < 0)
            return wp_usage_error(CMD, "--precision '%s': expected one of %s", arg, wp_precision_names());
        return 0;
    case OPT_RESULTS: t->results = arg; return 0;
    case OPT_TRACE: t->trace = arg; return 0;
    case OPT_SVG: t->svg = arg; return 0;
    case OPT_PARTITION: t->partition = arg; return 0;
    case OPT_PLAN: t->plan_path = arg; return 0;
    case OPT_STAGES:
        return wp_parse_int_option(CMD, "--stages", arg, 1, WP_SCHED_MAX_STAGES, &t->stages) ||
                       wp_sched_cli_generator_option(CMD, "--stages", &c->sched) ? 2 : 0;
    case OPT_TENSOR: return wp_parse_mesh_option(CMD, "--tensor", arg, 2, t->mesh) ? 2 : 0;
    case OPT_MESH: return wp_parse_mesh_option(CMD, "--mesh", arg, 3, t->mesh) ? 2 : 0;
    case OPT_LAYERS: t->layers_path = wp_data_input(arg, c->shipped_layers, sizeof c->shipped_layers); return 0;
    case OPT_SLOWDOWN: t->slowdown_path = arg; return 0;
    case OPT_CHANGES: t->changes_path = arg; return 0;
    case OPT_CHANGES_HOOK: t->changes_hook = arg; return 0;
    case OPT_MEASURE: t->measure = arg; return 0;
    case OPT_KERNEL_TIMES: t->kernel_times = arg; return 0;
    case OPT_ADAPT_HORIZON:
        if (wp_parse_int_option(CMD, "--adapt-horizon", arg, 1, 1 << 30, &horizon))
            return 2;
        t->adapt.horizon = horizon;
        return 0;
    case OPT_ADAPT_EVERY: return wp_parse_int_option(CMD, "--adapt-every", arg, 1, 1 << 30, &t->adapt.every) ? 2 : 0;
    case OPT_ADAPT_MAX_K: return wp_parse_int_option(CMD, "--adapt-max-k", arg, 1, 64, &t->adapt.max_k) ? 2 : 0;
    case OPT_ADAPT_LOG: t->adapt.log_path = arg; return 0;
    case OPT_ADAPT_REPLAY: t->adapt.replay_path = arg; return 0;
    case OPT_ADAPT_CANDIDATES:
        if (wp_parse_pairs_option(CMD, "--adapt-candidates", arg, "K:B pairs (group size : micro-batch size)", 64,
                                  c->adapt_given, &t->adapt.ngiven))
            return 2;
        t->adapt.given = c->adapt_given;
        return 0;
    case OPT_GRAD_OVERLAP: return wp_parse_grad_overlap(CMD, arg, &t->grad_overlap) ? 2 : 0;
    case OPT_RECOMPUTE: t->recompute = 1; return 0;
    case OPT_GRAD_BUCKET_MB: return wp_parse_grad_bucket_mb(CMD, arg, &t->grad_bucket_bytes) ? 2 : 0;
    case OPT_DILATE: return wp_parse_factor_option(CMD, "--dilate", arg, 1, 1000, &t->dilation) ? 2 : 0;
    case OPT_SCALE_BYTES: return wp_parse_factor_option(CMD, "--scale-bytes", arg, 1, 1e6, &t->byte_scale) ? 2 : 0;
    case OPT_PROGRESS_US: return wp_parse_int_option(CMD, "--progress-us", arg, 1, 1000000, &t->progress_us) ? 2 : 0;
    case OPT_WATCHDOG: return wp_parse_int_option(CMD, "--watchdog-s", arg, 0, 86400, &t->watchdog_s) ? 2 : 0;
    case OPT_SAVE: t->save = arg; return 0;
    case OPT_RESUME: t->resume = arg; return 0;
    case OPT_SAVE_EVERY: return wp_parse_int_option(CMD, "--save-every", arg, 1, 1 << 30, &t->save_every) ? 2 : 0;
    case OPT_KEEP: return wp_parse_int_option(CMD, "--keep", arg, 0, 1 << 20, &t->keep) ? 2 : 0;
    default: return parse_choice(opt, arg, c);
    }
}

/* 0, 1 after --help, 2 after a usage error. */
static int parse(int argc, char **argv, struct run_cli *c)
{
    struct option longopts[128];
    wp_sched_cli_long_options(run_options, sizeof run_options / sizeof run_options[0], 0, longopts, 128);
    memset(c, 0, sizeof *c);
    wp_sched_cli_init(&c->sched);
    wp_train_options_default(&c->train);
    opterr = 0;
    int opt, rc;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(usage_text, stdout);
            return 1;
        }
        if (opt == ':')
            return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        if (opt == '?')
            return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        if ((rc = parse_option(opt, optarg, c)) == 1 && wp_sched_cli_option(CMD, opt, optarg, &c->sched) == 2)
            return 2;
        if (rc == 2)
            return 2;
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    struct wp_train_options *t = &c->train;
    t->sched = c->sched.params;
    t->micro_given = c->sched.micro_given;
    t->schedule_file = c->sched.schedule_file;
    char why[256];
    return wp_train_options_check(t, why, sizeof why) ? wp_usage_error(CMD, "%s", why) : 0;
}

int wp_cmd_run(int argc, char **argv)
{
    struct run_cli c;
    int rc = parse(argc, argv, &c);
    if (rc)
        return rc == 1 ? 0 : rc;
    MPI_Init(&argc, &argv);
    struct wp_train t;
    struct wp_err err = {""};
    int status = wp_train_init(&t, &c.train, &err);
    if (status == 0)
        status = wp_train_run(&t, &err);
    if (status && t.rank == 0 && err.msg[0])
        wp_err_print(CMD, &err);
    int exit_status = wp_train_exit_status(&t, status);
    wp_train_destroy(&t);
    MPI_Finalize();
    return exit_status;
}
