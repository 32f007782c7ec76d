/* A layer table as people read it: one line per layer (times in ms, bytes)
 * and the totals, the way `wavepipe profile` prints the tables it makes. */
#ifndef WP_PLAN_LAYERS_REPORT_H
#define WP_PLAN_LAYERS_REPORT_H

#include <stdio.h>

#include "plan/layers.h"
#include "util/error.h"

/* The table's name, profile batch, source, layers and totals on out. */
void wp_layer_table_print(FILE *out, const struct wp_layer_table *t);

/* Prints the table; when path is not NULL, also writes it there
 * (wp_layer_table_write: atomically) and says so. 0, or -1 with err. */
int wp_layer_table_print_and_write(FILE *out, const struct wp_layer_table *t, const char *path, struct wp_err *err);

#endif
