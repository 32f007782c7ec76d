/* The command-line edge: the helpers every subcommand uses to parse its
 * options and report usage errors the same way, and --version's text. */
#ifndef WP_CLI_H
#define WP_CLI_H

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
