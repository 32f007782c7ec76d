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

/* A seed: a whole decimal integer >= 0; -1 on error (a usage error). */
int wp_parse_seed_option(const char *command, const char *option, const char *text, long long *value);

/* --grad-overlap on|off (*overlap 1 or 0) and --grad-bucket-mb MB (in
 * bytes), as run, simulate and plan take them; -1 on error (reported as a
 * usage error). */
int wp_parse_grad_overlap(const char *command, const char *text, int *overlap);
int wp_parse_grad_bucket_mb(const char *command, const char *text, double *bytes);

/* One of choices (NULL-terminated) into *index; -1 on error (a usage error
 * "OPTION must be a, b or c"). */
int wp_parse_choice_option(const char *command, const char *option, const char *text, const char *const *choices,
                           int *index);

/* A percentage from 0 to max_pct as a fraction (5 -> 0.05); -1 on error. */
int wp_parse_percent_option(const char *command, const char *option, const char *text, double max_pct,
                            double *fraction);

/* A real number from min to max (a factor such as --dilate F); -1 on
 * error (a usage error naming option). */
int wp_parse_factor_option(const char *command, const char *option, const char *text, double min, double max,
                           double *value);

/* A mesh of devices: "P0xP1xP2" (factors 3) or "P1[xP2]" (factors 2, then
 * mesh 1 x P1 x P2), each factor 1..4096 and their product at most 4096;
 * -1 on error (reported as a usage error naming option). */
int wp_parse_mesh_option(const char *command, const char *option, const char *text, int factors, int mesh[3]);

/* Comma-separated pairs "A:B,..." of positive integers, at most max, into
 * pairs[2 i], pairs[2 i + 1] and *n; -1 on error (a usage error saying
 * they must be `what`). */
int wp_parse_pairs_option(const char *command, const char *option, const char *text, const char *what, int max,
                          int *pairs, int *n);

/* Build configuration and library versions, one per line. */
void wp_print_versions(void);

#endif
