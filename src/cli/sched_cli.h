/* Command-line options shared by the commands that make schedules
 * (`schedule`, `simulate`, `run`): kind, ranks, micro-batches, k, waves,
 * chunks, policy, replicas, stage costs, the cost model, or a schedule file
 * instead of the generator options; and making the schedule they describe. */
#ifndef WP_SCHED_CLI_H
#define WP_SCHED_CLI_H

#include <getopt.h>
#include "sched/generate.h"
#include "sched/schedule.h" /* WP_SCHED_MAX_STAGES */
#include "sched/simulate.h"

struct wp_sched_cli {
    struct wp_sched_params params;
    int all_kinds;                     /* --kind all */
    int replicas[WP_SCHED_MAX_STAGES];
    double stage_costs[WP_SCHED_MAX_STAGES];
    const char *format;                /* "text", "csv" or (schedule) "torch-csv" */
    int validate;
    int tc_given, tw_given, micro_given;
    const char *schedule_file;         /* --schedule-file: read, not generated */
    const char *generator_option;      /* the first generator option given, for the conflict */
};

/* The long options of the schedule family; index of the first free slot is
 * returned through *count so that commands can append their own. */
extern const struct option wp_sched_long_options[];
extern const int wp_sched_long_option_count;

/* The table getopt_long takes: the schedule family's options (--kind only
 * with with_kind), then a command's own, then the terminating zeros; at
 * most cap entries in all. Returns the count before the terminator. */
int wp_sched_cli_long_options(const struct option *own, size_t nown, int with_kind, struct option *out,
                              size_t cap);

void wp_sched_cli_init(struct wp_sched_cli *o);
/* Handles one option returned by getopt_long; returns 0 when handled, 1
 * when the option is not one of the shared ones, 2 after a usage error. */
int wp_sched_cli_option(const char *command, int opt, const char *arg, struct wp_sched_cli *o);
/* Records that a generator option (such as run's --schedule) was given: 2
 * after a usage error when --schedule-file was given too, else 0. */
int wp_sched_cli_generator_option(const char *command, const char *option, struct wp_sched_cli *o);
/* run's --schedule KIND: a kind the generator makes (not a file), and a
 * generator option; 0, or 2 after a usage error. */
int wp_sched_cli_schedule_option(const char *command, const char *arg, struct wp_sched_cli *o);
/* The option help shared by the commands. */
void wp_sched_cli_help(void);

/* The schedule the options describe: read from --schedule-file (and
 * validated), or generated. */
int wp_sched_cli_make(const struct wp_sched_cli *o, struct wp_schedule *s, struct wp_err *err);

#endif
