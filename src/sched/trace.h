/* Timelines of a schedule, predicted or measured: Chrome trace event JSON
 * (Perfetto, chrome://tracing) and an SVG with one row per rank. */
#ifndef WP_SCHED_TRACE_H
#define WP_SCHED_TRACE_H

#include "sched/simulate.h"

/* A moment on the timeline (wavepipe run --adapt: a decision), written as
 * a Chrome trace instant event of global scope on the marks' own track. */
struct wp_trace_mark {
    double t_s;            /* on the events' timeline */
    const char *name;      /* escaped when written */
    const char *args_json; /* the members of its "args" object, already JSON; NULL: none */
};

/* What a trace may carry beside the events. */
struct wp_trace_marks {
    const struct wp_trace_mark *marks;
    int nmarks;
    const char *track;      /* the marks' track name */
    const char *other_json; /* more members of otherData, already JSON; NULL: none */
};

/* title goes into the SVG heading and the trace's metadata. */
int wp_trace_write_json(const char *path, const struct wp_sim_result *res, const char *title, struct wp_err *err);
/* The same with marks (NULL: none, the same file as wp_trace_write_json). */
int wp_trace_write_json_marked(const char *path, const struct wp_sim_result *res, const char *title,
                               const struct wp_trace_marks *marks, struct wp_err *err);
int wp_trace_write_svg(const char *path, const struct wp_sim_result *res, const char *title, struct wp_err *err);

#endif
