/* `wavepipe recover`: run by a campaign point's job script when its run
 * failed and the campaign says recover = "replan": whether the run lost a
 * node, and if so the point submitted again without it
 * (campaign/recovery.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "campaign/recovery.h"
#include "cli/cli.h"
#include "cmd/commands.h"

#define CMD "recover"

static void usage(void)
{
    printf("Usage: wavepipe recover POINT_DIR --nodes N [--job ID] [--partition P]\n"
           "         [--min-nodes N] [--max-recoveries N] [--usable H1,H2,..] [--dry-run]\n\n"
           "Run by a campaign point's job script (templates/run-step.sh) after its run\n"
           "failed, where the campaign says recover = \"replan\". Reads the point's\n"
           "run.log: a lost rank or node (a task killed, a node gone silent, an MPI\n"
           "call failed on a peer) is recovered; a crash of the run itself or a run\n"
           "that failed on its input is not. A recovered point is submitted again\n"
           "(sbatch POINT_DIR/job.sbatch) without the lost node and without every node\n"
           "lost twice in its chain, on as many nodes as it had when the partition's\n"
           "usable nodes allow, else on fewer, never below --min-nodes; its job goes\n"
           "into jobids and a line into recoveries.txt (the chain `wavepipe status`\n"
           "shows). The job resumes from the point's newest checkpoint on a new plan\n"
           "for the nodes it gets. Prints one line \"recover: ...\" saying what it\n"
           "decided and why; exit status 0 when it resubmitted, 3 when it decided\n"
           "not to, 1 on an error.\n\n"
           "Options:\n"
           "  --nodes N           the nodes the failed job ran on\n"
           "  --job ID            the failed job's id (default: $SLURM_JOB_ID)\n"
           "  --partition P       where to look for usable nodes (default: every partition)\n"
           "  --min-nodes N       never on fewer nodes (default 1)\n"
           "  --max-recoveries N  at most this many recoveries of the point (default 3)\n"
           "  --usable LIST       the usable nodes instead of asking sinfo\n"
           "  --dry-run           decide and say so; submit and write nothing\n"
           "  -h, --help          this text\n");
}

int wp_cmd_recover(int argc, char **argv)
{
    enum { OPT_NODES = 1000, OPT_JOB, OPT_PARTITION, OPT_MIN_NODES, OPT_MAX, OPT_USABLE, OPT_DRY_RUN };
    static const struct option longopts[] = {{"nodes", required_argument, NULL, OPT_NODES},
                                             {"job", required_argument, NULL, OPT_JOB},
                                             {"partition", required_argument, NULL, OPT_PARTITION},
                                             {"min-nodes", required_argument, NULL, OPT_MIN_NODES},
                                             {"max-recoveries", required_argument, NULL, OPT_MAX},
                                             {"usable", required_argument, NULL, OPT_USABLE},
                                             {"dry-run", no_argument, NULL, OPT_DRY_RUN},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct wp_recovery_request rq = {NULL, getenv("SLURM_JOB_ID"), 0, "", NULL, {1, 1, 3}, 0};
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_NODES:
            if (wp_parse_int_option(CMD, "--nodes", optarg, 1, 100000, &rq.nodes))
                return 2;
            break;
        case OPT_JOB: rq.job = optarg; break;
        case OPT_PARTITION: rq.partition = optarg; break;
        case OPT_MIN_NODES:
            if (wp_parse_int_option(CMD, "--min-nodes", optarg, 1, 100000, &rq.policy.min_nodes))
                return 2;
            break;
        case OPT_MAX:
            if (wp_parse_int_option(CMD, "--max-recoveries", optarg, 0, 1000, &rq.policy.max_recoveries))
                return 2;
            break;
        case OPT_USABLE: rq.usable = optarg; break;
        case OPT_DRY_RUN: rq.dry_run = 1; break;
        case 'h': usage(); return 0;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        default: return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return wp_usage_error(CMD, "no point directory given");
    rq.point_dir = argv[optind++];
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (rq.nodes < 1)
        return wp_usage_error(CMD, "--nodes N (the nodes the failed job ran on) is required");
    struct wp_err err = {{0}};
    int resubmitted = 0;
    if (wp_recovery_run(&rq, stdout, &resubmitted, &err)) {
        wp_err_print(CMD, &err);
        return 1;
    }
    return resubmitted || rq.dry_run ? 0 : 3;
}
