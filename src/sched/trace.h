/* Timelines of a schedule, predicted or measured: Chrome trace event JSON
 * (Perfetto, chrome://tracing) and an SVG with one row per rank. */
#ifndef WP_SCHED_TRACE_H
#define WP_SCHED_TRACE_H

#include "sched/simulate.h"

/* title goes into the SVG heading and the trace's metadata. */
int wp_trace_write_json(const char *path, const struct wp_sim_result *res, const char *title, struct wp_err *err);
int wp_trace_write_svg(const char *path, const struct wp_sim_result *res, const char *title, struct wp_err *err);

#endif
