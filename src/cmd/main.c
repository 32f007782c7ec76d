/* wavepipe: plans, runs and measures pipeline- and hybrid-parallel training
 * on GPU clusters. This file only dispatches to the subcommands. */
#include <config.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cmd/commands.h"

static const struct wp_command commands[] = {
    {"topo", "describe a cluster: this machine, recorded hwloc XML, or every node of a job",
     wp_cmd_topo},
    {"probe", "describe every node of a Slurm allocation as a PMIx client (srun --mpi=pmix)",
     wp_cmd_probe},
    {"calibrate", "time p2p messages and collectives over MPI; fit latency and bandwidth per link level",
     wp_cmd_calibrate},
    {"profile", "the planner's layer table: GPT-2 layers timed with the runtime kernels, or converted",
     wp_cmd_profile},
    {"plan", "DAPPLE's planner: partition, replication and placement of a model on a cluster",
     wp_cmd_plan},
    {"schedule", "generate a pipeline schedule as action lists, and validate it", wp_cmd_schedule},
    {"sbp", "AutoDDL's SBP search: a 3D device mesh per matmul layer, its communication", wp_cmd_sbp},
    {"simulate", "time a schedule with the discrete-event simulator; timelines as JSON and SVG",
     wp_cmd_simulate},
    {"run", "train GPT-2 over MPI ranks by interpreting a schedule's action lists", wp_cmd_run},
    {"sweep", "render (and submit with sbatch) every point of a campaign", wp_cmd_sweep},
    {"status", "show each point of a campaign: pending, running, done, failed", wp_cmd_status},
    {"recover", "after a lost node: a campaign point submitted again without it (job scripts run it)",
     wp_cmd_recover},
    {"harvest", "gather a campaign's results into one CSV, scaling efficiencies and plots", wp_cmd_harvest},
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: wavepipe COMMAND [OPTIONS]\n"
            "       wavepipe --help | --version\n\n"
            "wavepipe plans, runs and measures pipeline- and hybrid-parallel training of\n"
            "large models on GPU clusters run by Slurm. Each command reads files and\n"
            "writes files (see 'wavepipe COMMAND --help').\n\n"
            "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nFiles: cluster descriptions and all other inputs are libconfig files;\n"
                 "errors name the file and line. Report: %s\n",
            PACKAGE_STRING);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        wp_print_versions();
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "wavepipe: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
