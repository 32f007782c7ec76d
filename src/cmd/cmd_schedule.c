/* `wavepipe schedule`: generate a pipeline schedule (or read one from a
 * file), print its action lists (text, CSV rank,step,op,stage,microbatch,peer
 * or PyTorch's compute-only CSV), optionally check it with the validator. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cmd/commands.h"
#include "sched/schedule_file.h"
#include "sched/validate.h"
#include "cli/sched_cli.h"

#define CMD "schedule"

static void usage(void)
{
    printf("Usage: wavepipe schedule --kind KIND --ranks P --micro-batches M [options]\n"
           "       wavepipe schedule --schedule-file FILE.csv [--format F] [--validate]\n\n"
           "Generates a pipeline schedule as one action list per rank: F, B, W compute,\n"
           "SEND_ACT/RECV_ACT, SEND_GRAD/RECV_GRAD, ALLREDUCE, STEP, each with its stage,\n"
           "micro-batch and peer. --format csv prints rank,step,op,stage,microbatch,peer;\n"
           "--format torch-csv the compute actions as torch.distributed.pipelining reads\n"
           "them (PipelineScheduleMulti._load_csv): a row per rank, cells 0F3 (stage 0,\n"
           "forward, micro-batch 3), 0B3 (backward; 0I3 and 0W3 where it is split), empty\n"
           "cells where the rank waits in lock step. --schedule-file reads either CSV.\n"
           "--validate checks that every (stage, micro-batch) has its F, B (and W) once in\n"
           "dependency order, that every send has one matching receive in channel order,\n"
           "that a lock-step run cannot deadlock, and that each rank's peak of held\n"
           "activations is within the schedule's bound; a broken list is named by rank,\n"
           "step and action.\n\n");
    wp_sched_cli_help();
    printf("  -h, --help              this text\n\n"
           "Examples:\n"
           "  wavepipe schedule --kind hanayo --ranks 4 --micro-batches 8 --waves 2 --validate\n"
           "  wavepipe schedule --kind zb-v --ranks 8 --data-parallel 2 --micro-batches 4 --validate\n");
}

int wp_cmd_schedule(int argc, char **argv)
{
    static const struct option own[] = {{"help", no_argument, NULL, 'h'}};
    struct option longopts[64];
    wp_sched_cli_long_options(own, 1, 1, longopts, 64);
    struct wp_sched_cli o;
    wp_sched_cli_init(&o);
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            usage();
            return 0;
        }
        if (opt == ':')
            return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        if (opt == '?')
            return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        int rc = wp_sched_cli_option(CMD, opt, optarg, &o);
        if (rc == 2)
            return 2;
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (o.all_kinds)
        return wp_usage_error(CMD, "--kind all is for wavepipe simulate");
    struct wp_schedule s;
    struct wp_err err;
    if (wp_sched_cli_make(&o, &s, &err)) {
        wp_err_print(CMD, &err);
        return 1;
    }
    int status = 0;
    struct wp_validation v;
    if (o.validate && wp_schedule_validate(&s, &v, &err)) {
        wp_err_print(CMD, &err);
        status = 1;
    }
    if (strcmp(o.format, "csv") == 0) {
        wp_schedule_write_csv(stdout, &s);
    } else if (strcmp(o.format, "torch-csv") == 0) {
        struct wp_err werr;
        if (wp_schedule_write_torch_csv(stdout, &s, &werr)) {
            wp_err_print(CMD, &werr);
            status = 1;
        }
    } else {
        int copies = s.params.data_parallel > 1 ? s.params.data_parallel : 1;
        printf("%s: %d ranks, %d stages, %d micro-batches", wp_sched_kind_name(s.params.kind), s.nranks, s.nstages,
               s.nmicro);
        if (copies > 1)
            printf(", %d data-parallel copies of %d ranks (replica j of rank r is rank r*%d+j)", copies,
                   s.nranks / copies, copies);
        printf("\n");
        wp_schedule_write_text(stdout, &s);
    }
    if (o.validate && status == 0) {
        FILE *report = strcmp(o.format, "text") != 0 ? stderr : stdout;
        fprintf(report, "valid: %ld actions, %ld messages; peak activations per rank:", v.actions, v.messages);
        for (int r = 0; r < s.nranks; r++)
            fprintf(report, " %.4g", v.peak_activations[r]);
        fprintf(report, "\n");
    }
    if (o.validate && v.peak_activations)
        wp_validation_destroy(&v);
    wp_schedule_destroy(&s);
    return status;
}
