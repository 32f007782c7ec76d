/* Ending a job whose rank or node is lost (rank_loss.h): the host map, the
 * MPI error handler and the watchdog's expiry. The handler's state is the
 * process's (MPI calls a handler with no context of ours): the map of the
 * one job this process belongs to. */
#include "run/fault/rank_loss.h"
#include "run/fault/watchdog.h"

#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Seconds MPI_Abort gets to end the job before this rank ends itself (a
 * launcher that cannot be reached: the rank's own node cut off). */
#define WP_ABORT_GRACE_S 5
/* Seconds a stalled rank waits between its message and ending the job: the
 * other stalled ranks say what they wait on too, and the chain of waits
 * points at the lost rank (the one nobody hears from). */
#define WP_STALL_CHORUS_US 500000

static const struct wp_rank_loss *the_job;
static MPI_Errhandler handler = MPI_ERRHANDLER_NULL;

const char *wp_rank_loss_host(const struct wp_rank_loss *rl, int rank)
{
    return rl && rank >= 0 && rank < rl->size ? rl->hosts[rank] : "?";
}

/* " with rank P (on HOST)" for a wait with a peer, "" without. */
static void peer_text(const struct wp_rank_loss *rl, int peer, char *buf, size_t size)
{
    if (peer >= 0)
        snprintf(buf, size, " rank %d (on %s)", peer, wp_rank_loss_host(rl, peer));
    else
        buf[0] = '\0';
}

static _Noreturn void end_job(void)
{
    fflush(NULL);
    alarm(WP_ABORT_GRACE_S);
    MPI_Abort(MPI_COMM_WORLD, WP_EXIT_RANK_LOST);
    _exit(WP_EXIT_RANK_LOST);
}

static void on_mpi_error(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    const struct wp_rank_loss *rl = the_job;
    char text[MPI_MAX_ERROR_STRING] = "", peer[WP_HOST_NAME_MAX + 32];
    int len = 0, peer_rank;
    MPI_Error_string(*code, text, &len);
    const char *what = wp_watchdog_waiting_on(&peer_rank);
    peer_text(rl, peer_rank, peer, sizeof peer);
    fprintf(stderr, "wavepipe run: rank %d on %s: MPI failed%s%s%s: %.300s; ending the job (a rank or its node lost?)\n",
            rl ? rl->rank : -1, wp_rank_loss_host(rl, rl ? rl->rank : -1), what ? " waiting on " : "",
            what ? what : "", peer, text);
    end_job();
}

static void on_stall(void *ctx, const char *what, int peer_rank, double stalled_s)
{
    const struct wp_rank_loss *rl = ctx;
    char peer[WP_HOST_NAME_MAX + 32];
    peer_text(rl, peer_rank, peer, sizeof peer);
    fprintf(stderr,
            "wavepipe run: rank %d on %s: no progress for %.1f s waiting on %s%s (watchdog limit %.1f s); "
            "ending the job (a rank or its node lost?)\n",
            rl->rank, wp_rank_loss_host(rl, rl->rank), stalled_s, what, peer, wp_watchdog_limit_s());
    fflush(stderr);
    usleep(WP_STALL_CHORUS_US);
    end_job();
}

int wp_rank_loss_init(struct wp_rank_loss *rl, struct wp_err *err)
{
    memset(rl, 0, sizeof *rl);
    MPI_Comm_rank(MPI_COMM_WORLD, &rl->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &rl->size);
    rl->hosts = calloc((size_t)rl->size, sizeof *rl->hosts);
    rl->pids = calloc((size_t)rl->size, sizeof *rl->pids);
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    MPI_Get_processor_name(name, &len);
    char mine[WP_HOST_NAME_MAX] = "";
    snprintf(mine, sizeof mine, "%s", name);
    int pid = (int)getpid(), ok = rl->hosts && rl->pids;
    /* every rank calls the gathers, whatever its memory, so none waits alone */
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        wp_rank_loss_destroy(rl);
        return wp_errorf(err, "out of memory for the map of %d ranks' hosts", rl->size);
    }
    MPI_Allgather(mine, WP_HOST_NAME_MAX, MPI_CHAR, rl->hosts, WP_HOST_NAME_MAX, MPI_CHAR, MPI_COMM_WORLD);
    MPI_Allgather(&pid, 1, MPI_INT, rl->pids, 1, MPI_INT, MPI_COMM_WORLD);
    the_job = rl;
    if (MPI_Comm_create_errhandler(on_mpi_error, &handler) != MPI_SUCCESS ||
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler) != MPI_SUCCESS)
        return wp_errorf(err, "cannot install an MPI error handler");
    return 0;
}

int wp_rank_loss_watch(struct wp_rank_loss *rl, double watchdog_s, struct wp_err *err)
{
    if (wp_watchdog_start(watchdog_s, on_stall, rl))
        return wp_errorf(err, "cannot start the watchdog thread");
    return 0;
}

void wp_rank_loss_print_map(const struct wp_rank_loss *rl, FILE *out)
{
    for (int r = 0; r < rl->size; r++) {
        int first = 1; /* the host's first rank: its line */
        for (int q = 0; q < r && first; q++)
            first = strcmp(rl->hosts[q], rl->hosts[r]) != 0;
        if (!first)
            continue;
        fprintf(out, "ranks on %s (rank:pid):", rl->hosts[r]);
        for (int q = r; q < rl->size; q++)
            if (strcmp(rl->hosts[q], rl->hosts[r]) == 0)
                fprintf(out, " %d:%d", q, rl->pids[q]);
        fputc('\n', out);
    }
    fflush(out);
}

void wp_rank_loss_destroy(struct wp_rank_loss *rl)
{
    wp_watchdog_stop();
    if (handler != MPI_ERRHANDLER_NULL) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        MPI_Errhandler_free(&handler);
    }
    if (the_job == rl)
        the_job = NULL;
    free(rl->hosts);
    free(rl->pids);
    rl->hosts = NULL;
    rl->pids = NULL;
}
