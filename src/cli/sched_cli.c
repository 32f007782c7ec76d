/* Parsing of the schedule options, and the one place a command's schedule is
 * made from them: generated, or read from a file (see sched_cli.h). */
#include "cli/sched_cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum {
    OPT_KIND = 1000, OPT_RANKS, OPT_MICRO, OPT_K, OPT_WAVES, OPT_CHUNKS, OPT_POLICY, OPT_MAX_INFLIGHT,
    OPT_REPLICAS, OPT_STAGE_COSTS, OPT_FORMAT, OPT_VALIDATE, OPT_TF, OPT_TB, OPT_TW, OPT_TC, OPT_SCHEDULE_FILE,
    OPT_ORDER_SEARCH, OPT_DATA_PARALLEL
};

const struct option wp_sched_long_options[] = {
    {"kind", required_argument, NULL, OPT_KIND},
    {"ranks", required_argument, NULL, OPT_RANKS},
    {"micro-batches", required_argument, NULL, OPT_MICRO},
    {"k", required_argument, NULL, OPT_K},
    {"waves", required_argument, NULL, OPT_WAVES},
    {"chunks", required_argument, NULL, OPT_CHUNKS},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"max-inflight", required_argument, NULL, OPT_MAX_INFLIGHT},
    {"replicas", required_argument, NULL, OPT_REPLICAS},
    {"stage-costs", required_argument, NULL, OPT_STAGE_COSTS},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"validate", no_argument, NULL, OPT_VALIDATE},
    {"tf", required_argument, NULL, OPT_TF},
    {"tb", required_argument, NULL, OPT_TB},
    {"tw", required_argument, NULL, OPT_TW},
    {"tc", required_argument, NULL, OPT_TC},
    {"schedule-file", required_argument, NULL, OPT_SCHEDULE_FILE},
    {"order-search", required_argument, NULL, OPT_ORDER_SEARCH},
    {"data-parallel", required_argument, NULL, OPT_DATA_PARALLEL},
};
const int wp_sched_long_option_count = sizeof wp_sched_long_options / sizeof wp_sched_long_options[0];

int wp_sched_cli_long_options(const struct option *own, size_t nown, int with_kind, struct option *out,
                              size_t cap)
{
    size_t n = 0;
    for (int i = 0; i < wp_sched_long_option_count && n + 1 < cap; i++)
        if (with_kind || strcmp(wp_sched_long_options[i].name, "kind") != 0)
            out[n++] = wp_sched_long_options[i];
    for (size_t i = 0; i < nown && n + 1 < cap; i++)
        out[n++] = own[i];
    out[n] = (struct option){NULL, 0, NULL, 0};
    return (int)n;
}

void wp_sched_cli_init(struct wp_sched_cli *o)
{
    memset(o, 0, sizeof *o);
    wp_sched_params_default(&o->params);
    o->format = "text";
}

static int parse_seconds(const char *command, const char *option, const char *text, double min, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < min)
        return wp_usage_error(command, "%s '%s' must be a number >= %g", option, text, min);
    *out = v;
    return 0;
}

/* Comma-separated list of ints or numbers. */
static int parse_list(const char *command, const char *option, const char *text, int integers, int *ints,
                      double *nums, int *count)
{
    char copy[65536];
    if (strlen(text) >= sizeof copy)
        return wp_usage_error(command, "%s: list too long", option);
    strcpy(copy, text);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == WP_SCHED_MAX_STAGES)
            return wp_usage_error(command, "%s: at most %d entries", option, WP_SCHED_MAX_STAGES);
        char *end;
        errno = 0;
        if (integers) {
            long v = strtol(tok, &end, 10);
            if (errno || end == tok || *end || v < 1 || v > 1000000)
                return wp_usage_error(command, "%s: '%s' is not a count >= 1", option, tok);
            ints[n++] = (int)v;
        } else {
            double v = strtod(tok, &end);
            if (errno || end == tok || *end || !(v > 0) || !isfinite(v))
                return wp_usage_error(command, "%s: '%s' is not a positive number", option, tok);
            nums[n++] = v;
        }
    }
    if (n == 0)
        return wp_usage_error(command, "%s needs a comma-separated list", option);
    *count = n;
    return 0;
}

static int conflict(const char *command, const struct wp_sched_cli *o)
{
    return wp_usage_error(command, "--schedule-file FILE and %s: the file fixes the ranks, stages, micro-batches "
                                   "and order; the generator options (%s, --ranks, --micro-batches, --k, --waves, "
                                   "--chunks, --policy, --max-inflight, --order-search, --replicas, --data-parallel, "
                                   "--stage-costs%s) do not go with it",
                          o->generator_option, strcmp(command, "run") == 0 ? "--schedule" : "--kind",
                          strcmp(command, "run") == 0 ? ", --stages" : "");
}

int wp_sched_cli_generator_option(const char *command, const char *option, struct wp_sched_cli *o)
{
    if (!o->generator_option)
        o->generator_option = option;
    return o->schedule_file ? conflict(command, o) : 0;
}

/* The generator options of this family, by option code. */
static const char *generator_option_name(int opt)
{
    switch (opt) {
    case OPT_KIND: return "--kind";
    case OPT_RANKS: return "--ranks";
    case OPT_MICRO: return "--micro-batches";
    case OPT_K: return "--k";
    case OPT_WAVES: return "--waves";
    case OPT_CHUNKS: return "--chunks";
    case OPT_POLICY: return "--policy";
    case OPT_MAX_INFLIGHT: return "--max-inflight";
    case OPT_ORDER_SEARCH: return "--order-search";
    case OPT_REPLICAS: return "--replicas";
    case OPT_DATA_PARALLEL: return "--data-parallel";
    case OPT_STAGE_COSTS: return "--stage-costs";
    default: return NULL;
    }
}

int wp_sched_cli_option(const char *command, int opt, const char *arg, struct wp_sched_cli *o)
{
    struct wp_sched_params *p = &o->params;
    if (generator_option_name(opt) && wp_sched_cli_generator_option(command, generator_option_name(opt), o))
        return 2;
    switch (opt) {
    case OPT_SCHEDULE_FILE:
        o->schedule_file = arg;
        return o->generator_option ? conflict(command, o) : 0;
    case OPT_KIND:
        if (strcmp(arg, "all") == 0) {
            o->all_kinds = 1;
            return 0;
        }
        if (wp_sched_kind_from_name(arg) < 0 || !wp_sched_kind_generated(wp_sched_kind_from_name(arg)))
            return wp_usage_error(command, "unknown --kind '%s' (" WP_SCHED_KIND_LIST "%s%s)",
                                  arg, strcmp(command, "simulate") == 0 ? ", all" : "",
                                  wp_sched_kind_from_name(arg) == WP_SCHED_FILE ? "; a schedule of kind file is read "
                                                                                  "with --schedule-file FILE" : "");
        p->kind = (enum wp_sched_kind)wp_sched_kind_from_name(arg);
        return 0;
    case OPT_RANKS: return wp_parse_int_option(command, "--ranks", arg, 1, 1 << 20, &p->ranks) ? 2 : 0;
    case OPT_MICRO:
        o->micro_given = 1;
        return wp_parse_int_option(command, "--micro-batches", arg, 1, 1 << 24, &p->microbatches) ? 2 : 0;
    case OPT_K: return wp_parse_int_option(command, "--k", arg, 1, 1 << 24, &p->k) ? 2 : 0;
    case OPT_WAVES: return wp_parse_int_option(command, "--waves", arg, 1, 4096, &p->waves) ? 2 : 0;
    case OPT_CHUNKS: return wp_parse_int_option(command, "--chunks", arg, 1, 4096, &p->chunks) ? 2 : 0;
    case OPT_MAX_INFLIGHT:
        return wp_parse_int_option(command, "--max-inflight", arg, 1, 1 << 24, &p->max_inflight) ? 2 : 0;
    case OPT_ORDER_SEARCH: {
        int steps;
        if (wp_parse_int_option(command, "--order-search", arg, 0, 1 << 30, &steps))
            return 2;
        p->order_search = steps;
        return 0;
    }
    case OPT_POLICY:
        if ((arg[0] != 'A' && arg[0] != 'B') || arg[1])
            return wp_usage_error(command, "--policy must be A or B (DAPPLE's warm-up policies)");
        p->policy = arg[0];
        return 0;
    case OPT_REPLICAS:
        if (parse_list(command, "--replicas", arg, 1, o->replicas, NULL, &p->nreplicas))
            return 2;
        p->replicas = o->replicas;
        return 0;
    case OPT_DATA_PARALLEL:
        return wp_parse_int_option(command, "--data-parallel", arg, 1, 1 << 20, &p->data_parallel) ? 2 : 0;
    case OPT_STAGE_COSTS:
        if (parse_list(command, "--stage-costs", arg, 0, NULL, o->stage_costs, &p->nstage_costs))
            return 2;
        p->stage_cost_scale = o->stage_costs;
        return 0;
    case OPT_FORMAT:
        if (strcmp(arg, "text") != 0 && strcmp(arg, "csv") != 0 &&
            (strcmp(arg, "torch-csv") != 0 || strcmp(command, "schedule") != 0))
            return wp_usage_error(command, "--format must be text or csv%s",
                                  strcmp(command, "schedule") == 0 ? " or torch-csv" : "");
        o->format = arg;
        return 0;
    case OPT_VALIDATE: o->validate = 1; return 0;
    case OPT_TF: return parse_seconds(command, "--tf", arg, 1e-300, &p->tf) ? 2 : 0;
    case OPT_TB: return parse_seconds(command, "--tb", arg, 1e-300, &p->tb) ? 2 : 0;
    case OPT_TW: o->tw_given = 1; return parse_seconds(command, "--tw", arg, 0, &p->tw) ? 2 : 0;
    case OPT_TC: o->tc_given = 1; return parse_seconds(command, "--tc", arg, 0, &p->tc) ? 2 : 0;
    default: return 1;
    }
}

int wp_sched_cli_schedule_option(const char *command, const char *arg, struct wp_sched_cli *o)
{
    int k = wp_sched_kind_from_name(arg);
    if (k < 0 || !wp_sched_kind_generated((enum wp_sched_kind)k))
        return wp_usage_error(command, "unknown --schedule '%s' (" WP_SCHED_KIND_LIST "%s)", arg,
                              k == WP_SCHED_FILE ? "; a schedule file is run with --schedule-file FILE" : "");
    if (wp_sched_cli_generator_option(command, "--schedule", o))
        return 2;
    o->params.kind = (enum wp_sched_kind)k;
    return 0;
}

void wp_sched_cli_help(void)
{
    printf("Schedule options:\n"
           "  --kind KIND             " WP_SCHED_KIND_LIST "\n"
           "  --ranks P               ranks in all (default 4): one pipeline, or with --data-parallel D\n"
           "                          D copies of a pipeline of P/D ranks\n"
           "  --micro-batches M       micro-batches per iteration (default 8)\n"
           "  --k K                   kfkb: micro-batches per group (k = 1 is 1f1b, k = M is gpipe)\n"
           "  --waves W               hanayo: waves; the model is cut into 2 W P stages\n"
           "  --chunks V              interleaved and bfs: model chunks per rank, stage c P + r on\n"
           "                          rank r (interleaved needs M a multiple of P)\n"
           "  --policy A|B            1f1b/kfkb warm-up: A K_i = min(S-i, D), B K_i = min(2(S-i)-1, D)\n"
           "  --max-inflight D        micro-batches that fit in memory (default: no limit; P for chimera,\n"
           "                          hanayo and the zero-bubble kinds); hanayo given more than P also\n"
           "                          tries steady-state orders, which reach the interleaved bound\n"
           "                          M (tf+tb) + (P-1)(tf+tb)/2W from M = 2P on with D = 2 W P\n"
           "  --order-search N        hanayo: then N steps of hill climbing over every rank's order\n"
           "                          (a pass moved a few places, kept when the memory bound holds and\n"
           "                          the makespan at the given costs does not grow; seeded, so the same\n"
           "                          N gives the same schedule); about 1e5-1e6 steps for M = 4P-8P, P = 4\n"
           "  --replicas r0,r1,...    ranks per stage (DAPPLE replication; gpipe, 1f1b, kfkb);\n"
           "                          they must add up to --ranks (with --data-parallel D, to P/D:\n"
           "                          each copy's), and set the number of stages\n"
           "  --data-parallel D       D data-parallel copies of the pipeline, any kind (default 1):\n"
           "                          the kind's schedule on P/D ranks, its rank r run by ranks\n"
           "                          r D .. r D + D-1 (replica j talks to replica j), each replica\n"
           "                          taking the j-th D-th of every micro-batch and a stage's\n"
           "                          gradients summed over its holders at ALLREDUCE; D must divide\n"
           "                          P, and the kind's rules hold for P/D (for gpipe, 1f1b and kfkb\n"
           "                          the same schedule as --replicas D,D,..)\n"
           "  --stage-costs c0,c1,... relative cost of each stage (default: all equal)\n"
           "  --tf TF --tb TB --tw TW forward, backward, weight-gradient seconds of one micro-batch\n"
           "                          through 1/P of the model (defaults 1, 2, 0); a backward that is\n"
           "                          not split costs TB + TW (zb-h1, zb-v and dualpipev split it).\n"
           "                          chimera and hanayo orders are searched with these costs\n"
           "                          (list scheduling, and for one wave the V-shaped 1F1B): the\n"
           "                          one the simulator times fastest at --tc and costs wins\n"
           "  --tc TC                 seconds per point-to-point message (default 0)\n"
           "  --format text|csv       output format (wavepipe schedule: also torch-csv, the schedule in\n"
           "                          the compute-only CSV of PyTorch's torch.distributed.pipelining)\n"
           "  --validate              check the schedule (see wavepipe schedule --help)\n"
           "  --schedule-file FILE    read the schedule instead of generating it: wavepipe's CSV (as\n"
           "                          --format csv writes it) or PyTorch's compute-only CSV (a row per\n"
           "                          rank, cells like 0F3, 1B0, 1I0, 1W0); ranks, stages, micro-batches\n"
           "                          and placement come from the file (not with --kind, --ranks,\n"
           "                          --micro-batches or the other generator options), a list of compute\n"
           "                          actions only gets its sends and receives, and it is validated\n"
           "Chimera needs an even P; interleaved needs M a multiple of P; dualpipev M >= 2P; the\n"
           "others take any M. zb-v and dualpipev cut the model into 2P stages in a V (stages r\n"
           "and 2P-1-r on rank r). bfs is breadth-first over the chunks (Lamy-Poirier 2023, PyTorch's\n"
           "ScheduleLoopedBFS): every micro-batch's forward through chunk 0, then chunk 1, ...;\n"
           "then the backwards, last chunk first; it holds all M.\n"
           "With --data-parallel D, P in these rules (and in --waves,\n"
           "--chunks and --max-inflight) is a copy's P/D ranks; costs stay per 1/P of the model\n"
           "for all P ranks, so a replica's pass of 1/D of a micro-batch costs what it does\n"
           "without copies (the simulated makespan of D copies is one pipeline's at P/D).\n");
}

int wp_sched_cli_make(const struct wp_sched_cli *o, struct wp_schedule *s, struct wp_err *err)
{
    return wp_schedule_make(&o->params, o->schedule_file, s, err);
}
