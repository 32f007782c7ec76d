/* The command-line edge: the subcommand table and the helpers every
 * subcommand uses to report usage errors the same way. */
#ifndef WP_CLI_H
#define WP_CLI_H

struct wp_command {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
};

/* Subcommands (one file each: cmd_<name>.c). argv[0] is the subcommand. */
int wp_cmd_topo(int argc, char **argv);
int wp_cmd_probe(int argc, char **argv);
int wp_cmd_calibrate(int argc, char **argv);
int wp_cmd_profile(int argc, char **argv);
int wp_cmd_plan(int argc, char **argv);
int wp_cmd_schedule(int argc, char **argv);
int wp_cmd_simulate(int argc, char **argv);
int wp_cmd_sbp(int argc, char **argv);
int wp_cmd_run(int argc, char **argv);
int wp_cmd_sweep(int argc, char **argv);
int wp_cmd_status(int argc, char **argv);
int wp_cmd_harvest(int argc, char **argv);

/* Prints "wavepipe CMD: message" and a hint to --help; returns 2. */
int wp_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a whole non-negative decimal int in [min, max]; -1 on error
 * (reported as a usage error naming option). */
int wp_parse_int_option(const char *command, const char *option, const char *text, int min,
                        int max, int *value);

/* --grad-overlap on|off (*overlap 1 or 0) and --grad-bucket-mb MB (in
 * bytes), as run, simulate and plan take them; -1 on error (reported as a
 * usage error). */
int wp_parse_grad_overlap(const char *command, const char *text, int *overlap);
int wp_parse_grad_bucket_mb(const char *command, const char *text, double *bytes);

/* Build configuration and library versions, one per line. */
void wp_print_versions(void);

#endif
