/* A scenario's timed changes: parsing, and making them at an iteration
 * boundary (see changes.h). */
#include "run/adapt/changes.h"

#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "util/read_file.h"
#include "util/strutil.h"

extern char **environ;

#define WORD_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:*+-"

static int push(struct wp_changes *c, const struct wp_change *ch, struct wp_err *err)
{
    struct wp_change *v = realloc(c->v, (size_t)(c->n + 1) * sizeof *v);
    if (!v)
        return wp_errorf(err, "out of memory");
    c->v = v;
    c->v[c->n++] = *ch;
    return 0;
}

static int parse_line(const char *text, struct wp_change *ch, struct wp_err *err)
{
    char line[512];
    if (strlen(text) >= sizeof line)
        return wp_errorf(err, "line too long");
    wp_strlcpy(line, text, sizeof line);
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *words[2 + WP_CHANGE_ARGS_MAX];
    int n = 0;
    for (char *w = strtok(line, " \t\r"); w; w = strtok(NULL, " \t\r")) {
        if (n == 2 + WP_CHANGE_ARGS_MAX) /* the action's words and its arguments are full */
            return wp_errorf(err, "at most %d arguments after the action", WP_CHANGE_ARGS_MAX);
        if (strspn(w, WORD_CHARS) != strlen(w) || strlen(w) >= WP_CHANGE_WORD_MAX)
            return wp_errorf(err, "'%s' is not allowed: words of at most %d of [A-Za-z0-9._:*+-]", w,
                             WP_CHANGE_WORD_MAX - 1);
        words[n++] = w;
    }
    if (n == 0)
        return 0;
    memset(ch, 0, sizeof *ch);
    char *end;
    errno = 0;
    ch->iteration = strtol(words[0], &end, 10);
    if (errno || *end || end == words[0] || ch->iteration < 0)
        return wp_errorf(err, "'%s' is not an iteration (0 or more)", words[0]);
    if (n < 2)
        return wp_errorf(err, "an iteration without an action (e.g. '20 slow 1 2' or '20 rate 100mbit')");
    wp_strlcpy(ch->action, words[1], sizeof ch->action);
    if (strcmp(ch->action, "slow") == 0) {
        if (n != 4)
            return wp_errorf(err, "expected 'ITERATION slow RANK FACTOR' (RANK a number or *)");
        if (strcmp(words[2], "*") == 0) {
            ch->slow_rank = -1;
        } else {
            errno = 0;
            long r = strtol(words[2], &end, 10);
            if (errno || *end || end == words[2] || r < 0 || r > 1 << 20)
                return wp_errorf(err, "'%s' is neither a rank nor *", words[2]);
            ch->slow_rank = (int)r;
        }
        errno = 0;
        ch->slow_factor = strtod(words[3], &end);
        if (errno || *end || end == words[3] || !(ch->slow_factor > 0) || ch->slow_factor > 1e6)
            return wp_errorf(err, "the factor '%s' must be a number with 0 < FACTOR <= 1e6", words[3]);
        return 1;
    }
    if (!(ch->action[0] >= 'a' && ch->action[0] <= 'z'))
        return wp_errorf(err, "the action '%s' must start with a lower-case letter", ch->action);
    ch->nargs = n - 2;
    for (int i = 0; i < ch->nargs; i++)
        wp_strlcpy(ch->args[i], words[2 + i], sizeof ch->args[i]);
    return 1;
}

int wp_changes_add(struct wp_changes *c, const char *text, int line, struct wp_err *err)
{
    struct wp_change ch;
    int rc = parse_line(text, &ch, err);
    if (rc != 1)
        return rc;
    ch.line = line;
    if (c->n && ch.iteration < c->v[c->n - 1].iteration)
        return wp_errorf(err, "iteration %ld comes before the one above's %ld: list changes in order", ch.iteration,
                         c->v[c->n - 1].iteration);
    return push(c, &ch, err) ? -1 : 1;
}

int wp_changes_parse(const char *text, const char *name, struct wp_changes *c, struct wp_err *err)
{
    memset(c, 0, sizeof *c);
    wp_strlcpy(c->name, name, sizeof c->name);
    int lineno = 0;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[512];
        lineno++;
        if (len >= sizeof line) {
            wp_changes_free(c);
            return wp_errorf(err, "%s:%d: line too long", name, lineno);
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (eol ? 1 : 0);
        if (wp_changes_add(c, line, lineno, err) < 0) {
            wp_err_prefix(err, "%s:%d: ", name, lineno);
            wp_changes_free(c);
            return -1;
        }
    }
    return 0;
}

int wp_changes_load(const char *path, struct wp_changes *c, struct wp_err *err)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t n = 0;
    char *text = NULL;
    long len = -1;
    if (rank == 0 && (text = wp_read_file(path, &n)) != NULL)
        len = (long)n;
    MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (len < 0) {
        memset(c, 0, sizeof *c);
        return wp_errorf(err, "cannot read the changes file %s", path);
    }
    if (rank != 0 && !(text = malloc((size_t)len + 1)))
        MPI_Abort(MPI_COMM_WORLD, 1); /* the others would wait in the broadcast */
    MPI_Bcast(text, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
    text[len] = '\0';
    int rc = wp_changes_parse(text, path, c, err);
    free(text);
    return rc;
}

void wp_changes_free(struct wp_changes *c)
{
    free(c->v);
    c->v = NULL;
    c->n = 0;
}

int wp_changes_need_hook(const struct wp_changes *c)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->v[i].action, "slow") != 0)
            return 1;
    return 0;
}

int wp_changes_slow(const struct wp_changes *c)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->v[i].action, "slow") == 0)
            return 1;
    return 0;
}

int wp_changes_max_rank(const struct wp_changes *c)
{
    int max = -1;
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->v[i].action, "slow") == 0 && c->v[i].slow_rank > max)
            max = c->v[i].slow_rank;
    return max;
}

void wp_change_text(const struct wp_change *ch, char *buf, size_t size)
{
    if (strcmp(ch->action, "slow") == 0) {
        if (ch->slow_rank < 0)
            snprintf(buf, size, "slow * %g", ch->slow_factor);
        else
            snprintf(buf, size, "slow %d %g", ch->slow_rank, ch->slow_factor);
        return;
    }
    size_t len = (size_t)snprintf(buf, size, "%s", ch->action);
    for (int i = 0; i < ch->nargs && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, " %s", ch->args[i]);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs `hook ACTION ARG...` (its output the run's), waits at most timeout_s. */
static int run_hook(const char *hook, const struct wp_change *ch, const char *name, double timeout_s,
                    double *took_s, struct wp_err *err)
{
    char *argv[2 + WP_CHANGE_ARGS_MAX + 1];
    int n = 0;
    argv[n++] = (char *)hook;
    argv[n++] = (char *)ch->action;
    for (int i = 0; i < ch->nargs; i++)
        argv[n++] = (char *)ch->args[i];
    argv[n] = NULL;
    char iteration[32];
    snprintf(iteration, sizeof iteration, "%ld", ch->iteration);
    setenv("WAVEPIPE_CHANGE_ITERATION", iteration, 1); /* for the hook's own log */
    fflush(stdout);
    fflush(stderr);
    double t0 = now_s();
    pid_t pid;
    int rc = posix_spawnp(&pid, hook, NULL, NULL, argv, environ);
    if (rc != 0)
        return wp_errorf(err, "%s:%d: cannot run the hook %s: %s", name, ch->line, hook, strerror(rc));
    int wstatus = 0;
    for (;;) {
        pid_t w = waitpid(pid, &wstatus, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return wp_errorf(err, "%s:%d: waiting for the hook %s: %s", name, ch->line, hook, strerror(errno));
        if (now_s() - t0 > timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &wstatus, 0);
            return wp_errorf(err, "%s:%d: the hook %s %s ran past %.0f s and was killed", name, ch->line, hook,
                             ch->action, timeout_s);
        }
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    *took_s = now_s() - t0;
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
        return 0;
    char text[400];
    wp_change_text(ch, text, sizeof text);
    if (WIFEXITED(wstatus))
        return wp_errorf(err, "%s:%d: the hook %s failed on '%s' (exit status %d)", name, ch->line, hook, text,
                         WEXITSTATUS(wstatus));
    return wp_errorf(err, "%s:%d: the hook %s ended by signal %d on '%s'", name, ch->line, hook,
                     WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0, text);
}

int wp_changes_apply(const struct wp_changes *c, long after_iteration, long up_to_iteration, int rank,
                     const char *hook, double timeout_s, struct wp_slowdown *slow, struct wp_err *err)
{
    for (int i = 0; i < c->n; i++) {
        const struct wp_change *ch = &c->v[i];
        if (ch->iteration <= after_iteration || ch->iteration > up_to_iteration)
            continue;
        char text[400];
        wp_change_text(ch, text, sizeof text);
        if (strcmp(ch->action, "slow") == 0) {
            if (slow && (ch->slow_rank < 0 || ch->slow_rank == rank))
                slow->factor = ch->slow_factor;
            if (rank == 0)
                printf("change before iteration %ld: %s (%s passes %g times as long)\n", ch->iteration, text,
                       ch->slow_rank < 0 ? "every rank's" : "one rank's", ch->slow_factor);
            continue;
        }
        if (rank != 0)
            continue;
        double took_s = 0;
        if (!hook)
            return wp_errorf(err, "%s:%d: '%s' needs --changes-hook PROGRAM", c->name, ch->line, text);
        if (run_hook(hook, ch, c->name, timeout_s, &took_s, err))
            return -1;
        printf("change before iteration %ld: %s (by %s in %.3f s)\n", ch->iteration, text, hook, took_s);
    }
    fflush(stdout);
    return 0;
}
