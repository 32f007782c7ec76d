/* A chosen plan against data parallelism, a straight pipeline and even
 * splits into 2, 4, ... stages, each timed by the same cost model and by
 * the simulator, one line each; with a directory, every compared plan also
 * written there as a plan file, with a CSV of the comparison. */
#ifndef WP_PLAN_PLAN_COMPARE_H
#define WP_PLAN_PLAN_COMPARE_H

#include <stdio.h>

#include "plan/plan.h"

/* Prints the comparison of best (m at its point) on out. With dir (NULL:
 * none), creates it and writes DIR/chosen.cfg, data-parallel.cfg,
 * stages-N.cfg, ..., straight.cfg and DIR/compared.csv (plan, file, shape,
 * latency_s, simulated_s, fits; written whole or not at all). A plan that
 * cannot be written does not stop the others: every failure's message is
 * handed to report as it happens (the caller prints it). 0, or -1 when
 * something could not be written. */
int wp_plan_compare(FILE *out, const struct wp_plan_model *m, const struct wp_plan *best, const char *dir,
                    void (*report)(const char *message));

#endif
