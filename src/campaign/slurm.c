/* sbatch, squeue and sacct through fork/exec, without a shell. */
#include "campaign/slurm.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/strutil.h"

int wp_slurm_exec(char *const argv[], char **out, char *errline, size_t errsize, struct wp_err *err)
{
    if (out)
        *out = NULL;
    if (errline && errsize)
        errline[0] = '\0';
    int po[2], pe[2];
    if (pipe(po) != 0)
        return wp_errorf(err, "pipe: %s", strerror(errno));
    if (pipe(pe) != 0) {
        close(po[0]);
        close(po[1]);
        return wp_errorf(err, "pipe: %s", strerror(errno));
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
        return wp_errorf(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[4096];
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            char **b = i == 0 ? &obuf : &ebuf;
            size_t *len = i == 0 ? &olen : &elen;
            if (*len < (1u << 24)) {
                char *nb = realloc(*b, *len + (size_t)n + 1);
                if (nb) {
                    memcpy(nb + *len, chunk, (size_t)n);
                    *len += (size_t)n;
                    nb[*len] = '\0';
                    *b = nb;
                }
            }
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (errline && errsize && ebuf) {
        size_t n = strcspn(ebuf, "\n");
        if (n >= errsize)
            n = errsize - 1;
        memcpy(errline, ebuf, n);
        errline[n] = '\0';
    }
    free(ebuf);
    if (out)
        *out = obuf;
    else
        free(obuf);
    if (WIFEXITED(status)) {
        if (WEXITSTATUS(status) == 127 && errline && strncmp(errline, "cannot run ", 11) == 0) {
            wp_errorf(err, "%s", errline);
            if (out) {
                free(*out);
                *out = NULL;
            }
            return -1;
        }
        return WEXITSTATUS(status);
    }
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int wp_slurm_sbatch(const char *script, const char *chdir_to, const char *dependency, char *jobid,
                    size_t size, struct wp_err *err)
{
    char dep[128], dir[4200];
    char *argv[8];
    int n = 0;
    argv[n++] = "sbatch";
    argv[n++] = "--parsable";
    if (dependency && *dependency) {
        snprintf(dep, sizeof dep, "--dependency=%s", dependency);
        argv[n++] = dep;
    }
    snprintf(dir, sizeof dir, "--chdir=%s", chdir_to);
    argv[n++] = dir;
    argv[n++] = (char *)script;
    argv[n] = NULL;
    char *out = NULL, errline[512];
    int rc = wp_slurm_exec(argv, &out, errline, sizeof errline, err);
    if (rc < 0)
        return -1;
    if (rc != 0) {
        free(out);
        return wp_errorf(err, "sbatch %s failed (exit status %d): %s", script, rc, errline);
    }
    /* --parsable: "jobid" or "jobid;cluster" */
    size_t len = out ? strspn(out, "0123456789_") : 0;
    if (len == 0 || len >= size) {
        wp_errorf(err, "sbatch %s printed no job id (\"%.60s\")", script, out ? out : "");
        free(out);
        return -1;
    }
    memcpy(jobid, out, len);
    jobid[len] = '\0';
    free(out);
    return 0;
}

/* Fills states from "ID STATE" lines of text for the ids asked about. */
static void match_lines(const char *text, const char *const *ids, int n, char (*states)[WP_SLURM_STATE_MAX])
{
    const char *line = text;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[256];
        if (len < sizeof buf) {
            memcpy(buf, line, len);
            buf[len] = '\0';
            char *sep = strpbrk(buf, " |");
            if (sep) {
                *sep = '\0';
                char *st = sep + 1;
                st[strcspn(st, " |+\r")] = '\0';
                for (int i = 0; i < n; i++)
                    if (strcmp(buf, ids[i]) == 0 && !states[i][0])
                        wp_strlcpy(states[i], st, WP_SLURM_STATE_MAX);
            }
        }
        line = end ? end + 1 : NULL;
    }
}

int wp_slurm_states(const char *const *ids, int n, char (*states)[WP_SLURM_STATE_MAX], int *have_sacct,
                    struct wp_err *err)
{
    for (int i = 0; i < n; i++)
        states[i][0] = '\0';
    *have_sacct = 0;
    if (n == 0)
        return 0;
    char *squeue[] = {"squeue", "--noheader", "--format=%i %T", NULL};
    char *out = NULL, errline[512];
    int rc = wp_slurm_exec(squeue, &out, errline, sizeof errline, err);
    if (rc < 0)
        return -1;
    if (rc != 0) {
        free(out);
        return wp_errorf(err, "squeue failed (exit status %d): %s", rc, errline);
    }
    match_lines(out ? out : "", ids, n, states);
    free(out);
    int missing = 0;
    for (int i = 0; i < n; i++)
        missing |= !states[i][0];
    if (!missing)
        return 0;
    /* jobs that left the queue: sacct, when accounting is there */
    size_t cap = (size_t)n * (WP_SLURM_ID_MAX + 1) + 8;
    char *list = calloc(1, cap);
    if (!list)
        return wp_errorf(err, "out of memory");
    for (int i = 0; i < n; i++) {
        if (states[i][0])
            continue;
        if (list[0])
            strcat(list, ",");
        strncat(list, ids[i], WP_SLURM_ID_MAX);
    }
    char *sacct[] = {"sacct", "--noheader", "--parsable2", "--allocations", "--format=JobID,State", "--jobs", list,
                     NULL};
    struct wp_err ignored;
    rc = wp_slurm_exec(sacct, &out, errline, sizeof errline, &ignored);
    if (rc == 0) {
        *have_sacct = 1;
        match_lines(out ? out : "", ids, n, states);
    }
    free(out);
    free(list);
    return 0;
}

int wp_slurm_read_jobids(const char *dir, char (*steps)[16], char (*ids)[WP_SLURM_ID_MAX], int max)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/jobids", dir);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, fp)) {
        char step[16], id[WP_SLURM_ID_MAX];
        if (sscanf(line, "%15s %31s", step, id) != 2)
            continue;
        if (n == max) { /* keep the latest */
            memmove(steps, steps + 1, (size_t)(max - 1) * sizeof *steps);
            memmove(ids, ids + 1, (size_t)(max - 1) * sizeof *ids);
            n--;
        }
        wp_strlcpy(steps[n], step, sizeof steps[n]);
        wp_strlcpy(ids[n], id, sizeof ids[n]);
        n++;
    }
    fclose(fp);
    return n;
}
