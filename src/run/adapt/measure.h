/* What a run measures every iteration, for a tuner and for the user
 * (issue 12: the inputs of Ada-Grouper's and AutoPipe's predictors):
 *  - per stage and pass (F, B, W): the compute seconds;
 *  - per stage: the seconds of its gradient ALLREDUCE;
 *  - per stage boundary (between stage b and b+1) and direction
 *    (activations down, gradients up): the messages' bytes, and how long a
 *    message took from its send being posted to its receive being seen
 *    complete, over the messages whose receive was posted before the send
 *    (the others arrived before anyone asked: their transfer was hidden and
 *    is not timed), hence the achieved bandwidth.
 * Each rank adds what it saw into sums; at the iteration's end every rank
 * sends its sends' post times to their receivers (one all-to-all of a
 * double per message), which pair them with their receives in channel
 * order, and one allreduce of a few doubles per stage agrees the sums;
 * both over MPI, waited for as messages are (polling and sleeping).
 * Message times are on one timeline (clock_offset.h). A receive is seen
 * complete during an emulated pass within --progress-us, otherwise when
 * the rank next looks. */
#ifndef WP_RUN_MEASURE_H
#define WP_RUN_MEASURE_H

#include <mpi.h>

#include "sched/schedule.h"
#include "util/error.h"

enum { WP_MEASURE_ACT, WP_MEASURE_GRAD }; /* message directions */

/* Sums over one iteration, indexed per stage (compute) or per boundary. */
struct wp_measure {
    int nstages;
    double *sums;   /* the flat block the allreduce agrees (layout in measure.c) */
    int nsums;
    MPI_Comm messages_comm; /* whose rank r runs the schedule's rank r: MPI_COMM_WORLD (wp_measure_init),
                             * or a tensor group's lanes 0 (the other lanes measure nothing) */
};

int wp_measure_init(struct wp_measure *m, int nstages, struct wp_err *err);
void wp_measure_destroy(struct wp_measure *m);
void wp_measure_reset(struct wp_measure *m);

/* op: WP_OP_F, WP_OP_B, WP_OP_W or WP_OP_ALLREDUCE */
void wp_measure_compute(struct wp_measure *m, int op, int stage, double seconds);

/* The iteration's messages of rank's list: per action, when the send or
 * receive was posted, when a receive was seen complete, a receive's bytes
 * (common timeline). Collective over m->messages_comm: the post times of the
 * sends go to their receivers, which add every message into the sums and,
 * when sent_s is given, write there per receive its send's post time. */
int wp_measure_messages(struct wp_measure *m, const struct wp_schedule *s, int rank, const double *posted_s,
                        const double *done_s, const double *bytes, double *sent_s, struct wp_err *err);

/* Sums over every rank (every rank calls it at the same boundary; MPI,
 * waiting without spinning). */
int wp_measure_agree(struct wp_measure *m, struct wp_err *err);

/* After agreeing: the means. Counts are 0 where nothing ran. */
struct wp_measure_pass {
    double count, mean_s;
};
struct wp_measure_link {
    double count, timed;  /* messages, and those timed (receive posted first) */
    double mean_s, bytes, bandwidth_Bps; /* over the timed; mean bytes a message; 0 when none was timed */
};
struct wp_measure_pass wp_measure_pass_of(const struct wp_measure *m, int op, int stage);
struct wp_measure_link wp_measure_link_of(const struct wp_measure *m, int boundary, int dir);

/* The header and one iteration's rows of the tidy measurement CSV
 * (what is F, B, W, allreduce, activation or gradient; stage is the
 * boundary's upper stage for messages; timed and bandwidth_Bps are empty
 * for passes), written into buf; the length, or -1 when it does not fit. */
#define WP_MEASURE_CSV_HEADER "iteration,what,stage,count,mean_s,bytes,timed,bandwidth_Bps"
int wp_measure_csv_rows(const struct wp_measure *m, long iteration, char *buf, size_t size);

#endif
