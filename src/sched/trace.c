/* Chrome trace JSON and SVG timelines from simulator (or runtime) events.
 * Compute blocks are coloured by pass (F green, B orange, W purple,
 * ALLREDUCE grey) and carry their micro-batch number; transfers are drawn
 * as thin bars under the sender's row. Marks (a run's adaptive decisions)
 * are instant events of the JSON, on their own track. */
#include "sched/trace.h"

#include <string.h>

#include "util/atomic_file.h"
#include "util/json.h"

static const char *event_name(const struct wp_sim_event *e, char *buf, size_t len)
{
    if (e->op == WP_OP_ALLREDUCE)
        snprintf(buf, len, "ALLREDUCE s%d", e->stage);
    else if (wp_op_is_compute(e->op))
        snprintf(buf, len, "%s%d s%d", wp_op_name(e->op), e->microbatch, e->stage);
    else
        snprintf(buf, len, "%s%d s%d->%d", e->op == WP_OP_SEND_ACT ? "act" : "grad", e->microbatch, e->stage, e->peer);
    return buf;
}

int wp_trace_write_json_marked(const char *path, const struct wp_sim_result *res, const char *title,
                               const struct wp_trace_marks *marks, struct wp_err *err)
{
    struct wp_atomic_file af;
    if (wp_atomic_open(&af, path, err))
        return -1;
    FILE *f = af.fp;
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"title\":");
    wp_json_write_string(f, title);
    if (marks && marks->other_json)
        fprintf(f, ",%s", marks->other_json);
    fprintf(f, "},\"traceEvents\":[\n");
    const char *sep = ""; /* before every event but the first */
    for (int r = 0; r < res->nranks; r++) {
        fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{\"name\":\"rank %d\"}},\n",
                sep, 2 * r, r);
        fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{\"name\":\"rank %d sends\"}}",
                2 * r + 1, r);
        sep = ",\n";
    }
    if (marks && marks->track) { /* the marks' track after the ranks' */
        fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{\"name\":", sep,
                2 * res->nranks);
        wp_json_write_string(f, marks->track);
        fprintf(f, "}}");
        sep = ",\n";
    }
    for (int i = 0; marks && i < marks->nmarks; i++) {
        const struct wp_trace_mark *m = &marks->marks[i];
        fprintf(f, "%s{\"name\":", sep);
        wp_json_write_string(f, m->name);
        fprintf(f, ",\"cat\":\"mark\",\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"args\":{%s}}",
                2 * res->nranks, m->t_s * 1e6, m->args_json ? m->args_json : "");
        sep = ",\n";
    }
    char name[96];
    for (long i = 0; i < res->nevents; i++) {
        const struct wp_sim_event *e = &res->events[i];
        int comm = wp_op_is_send(e->op);
        fprintf(f,
                "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"stage\":%d,\"microbatch\":%d}}",
                sep, event_name(e, name, sizeof name), wp_op_name(e->op), 2 * e->rank + comm, e->start * 1e6,
                (e->end - e->start) * 1e6, e->stage, e->microbatch);
        sep = ",\n";
    }
    fprintf(f, "\n]}\n");
    return wp_atomic_commit(&af, err);
}

int wp_trace_write_json(const char *path, const struct wp_sim_result *res, const char *title, struct wp_err *err)
{
    return wp_trace_write_json_marked(path, res, title, NULL, err);
}

static const char *colour(int op)
{
    switch (op) {
    case WP_OP_F: return "#4caf50";
    case WP_OP_B: return "#ff9800";
    case WP_OP_W: return "#9c27b0";
    case WP_OP_ALLREDUCE: return "#9e9e9e";
    case WP_OP_SEND_ACT: return "#2196f3";
    default: return "#e91e63";
    }
}

int wp_trace_write_svg(const char *path, const struct wp_sim_result *res, const char *title, struct wp_err *err)
{
    const double left = 70, row = 34, bar = 22, top = 50;
    double span = res->makespan > 0 ? res->makespan : 1;
    /* wide enough that the shortest compute block can carry its number
     * (at least 1200 px, at most 8000 px) */
    double shortest = span;
    for (long i = 0; i < res->nevents; i++)
        if (wp_op_is_compute(res->events[i].op) && res->events[i].end - res->events[i].start > 0 &&
            res->events[i].end - res->events[i].start < shortest)
            shortest = res->events[i].end - res->events[i].start;
    double width = left + 20 + 14.0 * span / shortest;
    width = width < 1200 ? 1200 : width > 8000 ? 8000 : width;
    double scale = (width - left - 20) / span;
    double height = top + row * res->nranks + 60;
    struct wp_atomic_file af;
    if (wp_atomic_open(&af, path, err))
        return -1;
    FILE *f = af.fp;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n",
            width, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"10\" y=\"22\" font-size=\"15\">%s</text>\n", title);
    fprintf(f, "<text x=\"10\" y=\"40\" font-size=\"11\" fill=\"#555\">makespan %.4g s, bubble ratio %.4f, "
               "F green, B orange, W purple, ALLREDUCE grey; thin bars: activations (blue) and gradients (pink) in "
               "flight</text>\n",
            res->makespan, res->bubble_ratio);
    for (int r = 0; r < res->nranks; r++) {
        double y = top + r * row;
        fprintf(f, "<text x=\"8\" y=\"%.1f\" font-size=\"12\">rank %d</text>\n", y + bar * 0.7, r);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f4f4f4\"/>\n", left, y,
                span * scale, bar);
    }
    for (long i = 0; i < res->nevents; i++) {
        const struct wp_sim_event *e = &res->events[i];
        double x = left + e->start * scale, w = (e->end - e->start) * scale;
        double y = top + e->rank * row;
        if (wp_op_is_send(e->op)) {
            fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"3\" fill=\"%s\" opacity=\"0.7\"/>\n", x,
                    y + bar + 2, w > 0.5 ? w : 0.5, colour(e->op));
            continue;
        }
        fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" stroke=\"white\" "
                   "stroke-width=\"0.5\"><title>%s stage %d micro-batch %d: %.4g-%.4g s</title></rect>\n",
                x, y, w, bar, colour(e->op), wp_op_name(e->op), e->stage, e->microbatch, e->start, e->end);
        if (e->microbatch >= 0 && w >= 9)
            fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"middle\" fill=\"white\">%d</text>\n",
                    x + w / 2, y + bar * 0.7, w >= 16 ? 11 : 8, e->microbatch);
    }
    double axis_y = top + row * res->nranks + 15;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", left, axis_y,
            left + span * scale, axis_y);
    for (int i = 0; i <= 10; i++) {
        double x = left + span * scale * i / 10;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x, axis_y, x, axis_y + 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%.3g</text>\n", x, axis_y + 16,
                span * i / 10);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">time (s)</text>\n",
            left + span * scale / 2, axis_y + 32);
    fprintf(f, "</svg>\n");
    return wp_atomic_commit(&af, err);
}
