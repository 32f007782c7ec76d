/* The reason a point's run failed, from run.log (failure.h). */
#include "campaign/failure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STALLS 64

struct stall {
    int rank, peer;
    char host[64], peer_host[64], what[64];
    double waited_s;
};

struct findings {
    char srun[256];   /* srun's first "task(s) R: ..." line of the last run, reworded */
    char srun_host[64], srun_what[64]; /* its host and what ended the task ("Killed") */
    int srun_first;   /* srun aborted the step before the run said anything: a task died first */
    char mpi[256];    /* the first "MPI failed" line */
    int mpi_peer;     /* the rank that line's call waited on, or -1 */
    char hydra[128];  /* "process N on HOST" */
    int hydra_pid;
    int hydra_exit;   /* the "EXIT CODE: N" after it, or -1 */
    struct stall stalls[MAX_STALLS];
    int nstalls;
    char map_host[64]; /* the map line of hydra's host, for the pid's rank */
    char map[2048];
};

static void forget(struct findings *f)
{
    memset(f, 0, sizeof *f);
    f->mpi_peer = -1;
    f->hydra_exit = -1;
}

/* Whether srun's task list ("3", "2-3", "0,2-3") holds task. */
static int task_list_holds(const char *list, int task)
{
    for (const char *p = list; *p >= '0' && *p <= '9';) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        if (task >= a && task <= b)
            return 1;
        if (*end != ',')
            break;
        p = end + 1;
    }
    return 0;
}

/* Whether an srun "task(s) LIST: ..." line's LIST holds task. */
static int srun_line_names(const char *tasks, int task)
{
    if (strncmp(tasks, "tasks ", 6) == 0)
        return task_list_holds(tasks + 6, task);
    return strncmp(tasks, "task ", 5) == 0 && task_list_holds(tasks + 5, task);
}

static void note_line(struct findings *f, const char *line)
{
    const char *at;
    char host[64], what[128];
    int rank, peer;
    double waited;
    if (strncmp(line, "ranks on ", 9) == 0 && strstr(line, "(rank:pid):")) {
        if (f->nstalls || f->srun[0] || f->mpi[0] || f->hydra[0]) /* a new run (requeued): its failure counts */
            forget(f);
        size_t len = strlen(f->map);
        snprintf(f->map + len, sizeof f->map - len, "%s\n", line);
    } else if (strncmp(line, "srun: Job step aborted", 22) == 0) {
        if (!f->nstalls && !f->mpi[0])
            f->srun_first = 1;
    } else if (!f->srun[0] && strncmp(line, "srun: error: ", 13) == 0 && (at = strstr(line, ": task")) != NULL &&
               !strstr(line, "Exited with exit code") &&
               ((!f->nstalls && !f->mpi[0]) || f->srun_first ||
                (!f->nstalls && f->mpi_peer >= 0 && srun_line_names(at + 2, f->mpi_peer)))) {
        /* A task ended by a signal is the cause: before the run said anything; after srun
         * aborted the step before the run said anything (the run's words then race srun's);
         * or where it is the rank the run's failed MPI call waited on. Otherwise srun kills
         * the ranks that are ending the job, and an exit code is theirs. srun may name a
         * node's tasks together ("tasks 2-3") when they end at once. */
        /* "srun: error: HOST: task R: Killed" */
        snprintf(host, sizeof host, "%.*s", (int)(at - line - 13), line + 13);
        const char *task = at + 2, *colon = strchr(task, ':');
        if (colon) {
            snprintf(f->srun, sizeof f->srun, "%.*s on %.63s:%.120s (srun)", (int)(colon - task), task, host,
                     colon + 1);
            snprintf(f->srun_host, sizeof f->srun_host, "%s", host);
            snprintf(f->srun_what, sizeof f->srun_what, "%s", colon + 1 + strspn(colon + 1, " "));
        }
    } else if (sscanf(line, "wavepipe run: rank %d on %63[^:]: no progress for %lf s waiting on %127[^(]", &rank,
                      host, &waited, what) == 4) {
        if (f->nstalls < MAX_STALLS) {
            struct stall *s = &f->stalls[f->nstalls++];
            s->rank = rank;
            s->waited_s = waited;
            snprintf(s->host, sizeof s->host, "%s", host);
            const char *r0 = strstr(what, " rank ");
            snprintf(s->what, sizeof s->what, "%.*s", r0 ? (int)(r0 - what) : (int)strlen(what), what);
            while (s->what[0] && s->what[strlen(s->what) - 1] == ' ')
                s->what[strlen(s->what) - 1] = '\0';
            s->peer = -1;
            const char *r = strstr(what, " rank ");
            if (r && sscanf(r, " rank %d", &peer) == 1 && (at = strstr(line, "(on ")) != NULL &&
                sscanf(at, "(on %63[^)])", s->peer_host) == 1)
                s->peer = peer;
        }
    } else if (!f->mpi[0] && strncmp(line, "wavepipe run: rank ", 19) == 0 && strstr(line, ": MPI failed")) {
        snprintf(f->mpi, sizeof f->mpi, "%.200s", line + 14);
        const char *r = strstr(line, " from rank ");
        if (!r)
            r = strstr(line, " to rank ");
        if (!r || sscanf(strstr(r, "rank "), "rank %d", &f->mpi_peer) != 1)
            f->mpi_peer = -1;
    } else if (!f->hydra[0] && (at = strstr(line, "PID ")) != NULL && strstr(line, " RUNNING AT ")) {
        int pid;
        if (sscanf(at, "PID %d RUNNING AT %63s", &pid, host) == 2) {
            f->hydra_exit = -1;
            f->hydra_pid = pid;
            snprintf(f->hydra, sizeof f->hydra, "process %d on %s", pid, host);
            snprintf(f->map_host, sizeof f->map_host, "%s", host);
        }
    } else if (f->hydra[0] && f->hydra_exit < 0 && (at = strstr(line, "EXIT CODE: ")) != NULL) {
        f->hydra_exit = atoi(at + 11);
    }
}

/* One line of the start's map ("ranks on HOST (rank:pid): 0:4711 1:4712"),
 * ending at '\n' or the text's end: its host into host and its ranks into
 * ranks (at most max); the rank count, or -1 when the line is not one. */
static int map_line(const char *line, char *host, size_t host_size, int *ranks, int max)
{
    size_t len = strcspn(line, "\n");
    const char *end = strstr(line, " (rank:pid):");
    if (strncmp(line, "ranks on ", 9) != 0 || !end || end > line + len)
        return -1;
    snprintf(host, host_size, "%.*s", (int)(end - line - 9), line + 9);
    int n = 0;
    for (const char *p = end + 12; p < line + len && n < max;) {
        int used = 0;
        if (sscanf(p, " %d:%*d%n", &ranks[n], &used) != 1 || used == 0)
            break;
        n++;
        p += used;
    }
    return n;
}

/* The map's lines one after another. */
#define FOR_MAP_LINES(line, map) \
    for (const char *line = (map); *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != '\0'))

enum { MAP_RANKS_MAX = 1024 };

/* The host the map puts rank on, into host ("" when it does not). */
static void host_of_rank(const struct findings *f, int rank, char *host, size_t size)
{
    int ranks[MAP_RANKS_MAX];
    char h[64];
    host[0] = '\0';
    FOR_MAP_LINES(line, f->map) {
        int n = map_line(line, h, sizeof h, ranks, MAP_RANKS_MAX);
        for (int i = 0; i < n; i++)
            if (ranks[i] == rank) {
                snprintf(host, size, "%s", h);
                return;
            }
    }
}

/* Whether a signal's name (srun's words) or number is a crash of the run
 * itself rather than a loss: SIGSEGV, SIGABRT, SIGFPE, SIGILL. */
static int crash_words(const char *what)
{
    return strstr(what, "Segmentation fault") || strstr(what, "Aborted") || strstr(what, "Floating point") ||
           strstr(what, "Illegal instruction");
}
static int crash_signal(int code)
{
    int sig = code > 128 ? code - 128 : code;
    return sig == 11 || sig == 6 || sig == 8 || sig == 4;
}

/* The rank the map gives process pid on host, or -1. */
static int rank_of_pid(const struct findings *f, int pid)
{
    char want[32];
    snprintf(want, sizeof want, ":%d", pid);
    for (const char *p = strstr(f->map, want); p; p = strstr(p + 1, want)) {
        char after = p[strlen(want)];
        if (after != ' ' && after != '\n' && after != '\0')
            continue;
        const char *start = p;
        while (start > f->map && start[-1] != ' ')
            start--;
        return atoi(start);
    }
    return -1;
}

/* The stall's peer that reported no stall itself: the lost rank. */
static const struct stall *silent_peer(const struct findings *f)
{
    for (int i = 0; i < f->nstalls; i++) {
        if (f->stalls[i].peer < 0)
            continue;
        int reported = 0;
        for (int j = 0; j < f->nstalls && !reported; j++)
            reported = f->stalls[j].rank == f->stalls[i].peer;
        if (!reported)
            return &f->stalls[i];
    }
    return NULL;
}

/* A host of the map none of whose ranks reported a stall (a node cut off:
 * its ranks' words never reach the log), with its ranks into ranks; NULL
 * when every host spoke. */
static const char *silent_host(const struct findings *f, char *host, size_t host_size, char *ranks,
                               size_t ranks_size)
{
    int r[MAP_RANKS_MAX];
    FOR_MAP_LINES(line, f->map) {
        int n = map_line(line, host, host_size, r, MAP_RANKS_MAX);
        if (n < 0)
            continue;
        int spoke = 0;
        for (int i = 0; i < f->nstalls && !spoke; i++)
            spoke = strcmp(f->stalls[i].host, host) == 0;
        if (spoke)
            continue;
        ranks[0] = '\0';
        for (int i = 0; i < n; i++) {
            size_t at = strlen(ranks);
            snprintf(ranks + at, ranks_size - at, "%s%d", at ? " " : "", r[i]);
        }
        return host;
    }
    return NULL;
}

/* The failure findings say (failure.h): its reason, kind and host. */
static void judge(const struct findings *f, struct wp_point_failure *out)
{
    const struct stall *s = silent_peer(f);
    char host[64], ranks[64];
    char *buf = out->reason;
    size_t size = sizeof out->reason;
    out->kind = WP_FAILURE_LOST;
    if (f->srun[0]) {
        snprintf(buf, size, "%s", f->srun);
        snprintf(out->host, sizeof out->host, "%s", f->srun_host);
        if (crash_words(f->srun_what))
            out->kind = WP_FAILURE_OWN;
    } else if (s) {
        snprintf(buf, size, "rank %d on %s silent: rank %d on %s waited %.1f s on it (watchdog)", s->peer,
                 s->peer_host, s->rank, s->host, s->waited_s);
        snprintf(out->host, sizeof out->host, "%s", s->peer_host);
    } else if (f->nstalls && silent_host(f, host, sizeof host, ranks, sizeof ranks)) {
        snprintf(buf, size, "%s silent (ranks %s): rank %d on %s waited %.1f s on %s (watchdog)", host, ranks,
                 f->stalls[0].rank, f->stalls[0].host, f->stalls[0].waited_s, f->stalls[0].what);
        snprintf(out->host, sizeof out->host, "%s", host);
    } else if (f->nstalls) {
        snprintf(buf, size, "rank %d on %s: no progress for %.1f s on %s (watchdog)", f->stalls[0].rank,
                 f->stalls[0].host, f->stalls[0].waited_s, f->stalls[0].what);
    } else if (f->mpi[0]) {
        snprintf(buf, size, "%s", f->mpi);
        if (f->mpi_peer >= 0)
            host_of_rank(f, f->mpi_peer, out->host, sizeof out->host);
    } else if (f->hydra[0]) {
        int rank = rank_of_pid(f, f->hydra_pid);
        if (rank >= 0)
            snprintf(buf, size, "%s (rank %d) ended badly (mpiexec)", f->hydra, rank);
        else
            snprintf(buf, size, "%s ended badly (mpiexec)", f->hydra);
        snprintf(out->host, sizeof out->host, "%s", f->map_host);
        if (f->hydra_exit >= 0 && crash_signal(f->hydra_exit))
            out->kind = WP_FAILURE_OWN;
    } else {
        out->kind = WP_FAILURE_NONE;
    }
}

void wp_point_failure_read(const char *run_log_path, struct wp_point_failure *out)
{
    memset(out, 0, sizeof *out);
    FILE *fp = fopen(run_log_path, "r");
    if (!fp)
        return;
    struct findings *f = calloc(1, sizeof *f);
    if (!f) {
        fclose(fp);
        return;
    }
    forget(f);
    char line[1024];
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        note_line(f, line);
    }
    fclose(fp);
    judge(f, out);
    free(f);
}

int wp_point_failure_reason(const char *run_log_path, char *buf, size_t size)
{
    struct wp_point_failure f;
    wp_point_failure_read(run_log_path, &f);
    snprintf(buf, size, "%s", f.reason);
    return buf[0] != '\0';
}
