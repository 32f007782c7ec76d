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

#include "util/atomic_file.h"
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

int wp_slurm_have(const char *program)
{
    const char *path = getenv("PATH");
    if (!path || strchr(program, '/'))
        return strchr(program, '/') && access(program, X_OK) == 0;
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        char cand[4200];
        if (len > 0 && len < sizeof cand - 64) {
            snprintf(cand, sizeof cand, "%.*s/%s", (int)len, p, program);
            if (access(cand, X_OK) == 0)
                return 1;
        }
        p += len;
        if (*p == ':')
            p++;
    }
    return 0;
}

const char *wp_slurm_cluster_name(void)
{
    static char name[64];
    if (name[0])
        return name;
    wp_strlcpy(name, "-", sizeof name);
    char *argv[] = {"scontrol", "show", "config", NULL};
    char *out = NULL, errline[256];
    struct wp_err ignored;
    if (wp_slurm_exec(argv, &out, errline, sizeof errline, &ignored) == 0 && out) {
        const char *at = strstr(out, "\nClusterName");
        at = at ? at + 1 : strncmp(out, "ClusterName", 11) == 0 ? out : NULL;
        const char *eq = at ? strchr(at, '=') : NULL;
        if (eq && eq < at + 64) {
            eq += strspn(eq + 1, " ") + 1;
            size_t len = strcspn(eq, " \n");
            if (len > 0 && len < sizeof name) {
                memcpy(name, eq, len);
                name[len] = '\0';
            }
        }
    }
    free(out);
    return name;
}

/* The fields of a line "A|B|C|..." (or separated by spaces, as a stand-in
 * prints them), "" where the line has none. */
static void line_fields(char *line, char **f, int nf)
{
    char sep = strchr(line, '|') ? '|' : ' ';
    for (int i = 0; i < nf; i++)
        f[i] = "";
    char *p = line;
    for (int i = 0; i < nf && *p; i++) {
        while (sep == ' ' && *p == ' ')
            p++;
        f[i] = p;
        char *end = strchr(p, sep);
        if (!end)
            break;
        *end = '\0';
        p = end + 1;
    }
}

/* Whether recorded and reported are one: unknown on either side matches. */
static int same(const char *recorded, const char *reported)
{
    return !recorded[0] || strcmp(recorded, "-") == 0 || !reported[0] || strcmp(reported, "-") == 0 ||
           strcmp(recorded, reported) == 0;
}

/* Fills the jobs' states from lines of text, for the jobs of the same
 * identity still without one: squeue's "ID|STATE|REASON|SUBMIT" (reasons
 * 1) or sacct's "ID|STATE|SUBMIT|CLUSTER". */
static void match_lines(const char *text, struct wp_slurm_job *jobs, int n, const char *cluster_now, int reasons)
{
    const char *line = text;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[512];
        if (len < sizeof buf) {
            memcpy(buf, line, len);
            buf[len] = '\0';
            char *f[4];
            line_fields(buf, f, 4);
            f[1][strcspn(f[1], " +\r")] = '\0'; /* sacct's "CANCELLED by 0" */
            const char *reason = reasons ? f[2] : "", *submit = reasons ? f[3] : f[2];
            const char *cluster = !reasons && f[3][0] ? f[3] : cluster_now;
            for (int i = 0; i < n && f[1][0]; i++)
                if (strcmp(f[0], jobs[i].id) == 0 && !jobs[i].state[0] && same(jobs[i].submit, submit) &&
                    same(jobs[i].cluster, cluster)) {
                    wp_strlcpy(jobs[i].state, f[1], sizeof jobs[i].state);
                    wp_strlcpy(jobs[i].reason, strcmp(f[1], "PENDING") == 0 ? reason : "", sizeof jobs[i].reason);
                }
        }
        line = end ? end + 1 : NULL;
    }
}

/* The time Slurm took job id (squeue, else sacct), "-" when neither says. */
static void submit_time(const char *id, char *out, size_t size)
{
    char jobs[64];
    snprintf(jobs, sizeof jobs, "--jobs=%s", id);
    char *squeue[] = {"squeue", "--noheader", jobs, "--format=%V", NULL};
    char *sacct[] = {"sacct", "--noheader", "--parsable2", "--allocations", "--format=Submit", jobs, NULL};
    char *const *tries[] = {squeue, sacct};
    wp_strlcpy(out, "-", size);
    for (int t = 0; t < 2 && strcmp(out, "-") == 0; t++) {
        char *text = NULL, errline[256];
        struct wp_err ignored;
        if (wp_slurm_exec(tries[t], &text, errline, sizeof errline, &ignored) == 0 && text) {
            size_t len = strcspn(text, " \n|");
            if (len >= 19 && len < size && text[4] == '-' && text[10] == 'T') {
                memcpy(out, text, len);
                out[len] = '\0';
            }
        }
        free(text);
    }
}

/* wp_slurm_exec, an exit status other than 0 an error naming the program. */
static int exec_ok(char *const argv[], char **out, struct wp_err *err)
{
    char errline[512];
    int rc = wp_slurm_exec(argv, out, errline, sizeof errline, err);
    if (rc < 0)
        return -1;
    if (rc != 0) {
        free(*out);
        *out = NULL;
        return wp_errorf(err, "%s failed (exit status %d): %s", argv[0], rc, errline);
    }
    return 0;
}

/* Runs sbatch --parsable with argv's options and script (argv ends with
 * them, NULL-terminated); the job's id, cluster and submit time into job. */
static int submit(char *const argv[], const char *script, struct wp_slurm_job *job, struct wp_err *err)
{
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
    if (len == 0 || len >= sizeof job->id) {
        wp_errorf(err, "sbatch %s printed no job id (\"%.60s\")", script, out ? out : "");
        free(out);
        return -1;
    }
    memcpy(job->id, out, len);
    job->id[len] = '\0';
    free(out);
    wp_strlcpy(job->cluster, wp_slurm_cluster_name(), sizeof job->cluster);
    submit_time(job->id, job->submit, sizeof job->submit);
    job->state[0] = job->reason[0] = '\0';
    return 0;
}

/* sbatch --parsable OPTS.. --chdir=DIR SCRIPT (nopts options). */
static int sbatch_with(char *const *opts, int nopts, const char *script, const char *chdir_to,
                       struct wp_slurm_job *job, struct wp_err *err)
{
    char dir[4200];
    char *argv[8];
    int n = 0;
    argv[n++] = "sbatch";
    argv[n++] = "--parsable";
    for (int i = 0; i < nopts && n < 5; i++)
        argv[n++] = opts[i];
    snprintf(dir, sizeof dir, "--chdir=%s", chdir_to);
    argv[n++] = dir;
    argv[n++] = (char *)script;
    argv[n] = NULL;
    return submit(argv, script, job, err);
}

int wp_slurm_sbatch(const char *script, const char *chdir_to, const char *dependency, struct wp_slurm_job *job,
                    struct wp_err *err)
{
    char dep[128];
    char *opts[2];
    int n = 0;
    if (dependency && *dependency) {
        snprintf(dep, sizeof dep, "--dependency=%s", dependency);
        opts[n++] = "--kill-on-invalid-dep=yes";
        opts[n++] = dep;
    }
    return sbatch_with(opts, n, script, chdir_to, job, err);
}

int wp_slurm_sbatch_resized(const char *script, const char *chdir_to, int nodes, const char *exclude,
                            struct wp_slurm_job *job, struct wp_err *err)
{
    char nodes_opt[32], exclude_opt[1100];
    char *opts[2];
    int n = 0;
    snprintf(nodes_opt, sizeof nodes_opt, "--nodes=%d", nodes);
    opts[n++] = nodes_opt;
    if (exclude && *exclude) {
        snprintf(exclude_opt, sizeof exclude_opt, "--exclude=%s", exclude);
        opts[n++] = exclude_opt;
    }
    return sbatch_with(opts, n, script, chdir_to, job, err);
}

int wp_slurm_usable_nodes(const char *partition, char ***names, int *n, struct wp_err *err)
{
    char part[128];
    char *argv[10];
    int k = 0;
    argv[k++] = "sinfo";
    argv[k++] = "--noheader";
    argv[k++] = "--Node";
    argv[k++] = "--states=idle,allocated,mixed,completing";
    argv[k++] = "--format=%N";
    if (partition && *partition) {
        snprintf(part, sizeof part, "--partition=%s", partition);
        argv[k++] = part;
    }
    argv[k] = NULL;
    char *out = NULL;
    if (exec_ok(argv, &out, err))
        return -1;
    *names = NULL;
    *n = 0;
    int cap = 0;
    for (char *line = out ? strtok(out, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        line[strcspn(line, " ")] = '\0';
        int seen = !*line; /* a node in two partitions is listed twice */
        for (int i = 0; i < *n && !seen; i++)
            seen = strcmp((*names)[i], line) == 0;
        if (seen)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **grown = realloc(*names, (size_t)cap * sizeof *grown);
            if (!grown)
                break;
            *names = grown;
        }
        if (!((*names)[*n] = strdup(line)))
            break;
        (*n)++;
    }
    free(out);
    return 0;
}

int wp_slurm_cancel(const char *id, struct wp_err *err)
{
    char *argv[] = {"scancel", (char *)id, NULL};
    char errline[512];
    int rc = wp_slurm_exec(argv, NULL, errline, sizeof errline, err);
    if (rc < 0)
        return -1;
    return rc ? wp_errorf(err, "scancel %s failed (exit status %d): %s", id, rc, errline) : 0;
}

int wp_slurm_states(struct wp_slurm_job *jobs, int n, int *have_sacct, struct wp_err *err)
{
    for (int i = 0; i < n; i++)
        jobs[i].state[0] = jobs[i].reason[0] = '\0';
    *have_sacct = 0;
    if (n == 0)
        return 0;
    const char *cluster = wp_slurm_cluster_name();
    char *squeue[] = {"squeue", "--noheader", "--format=%i|%T|%r|%V", NULL};
    char *out = NULL;
    if (exec_ok(squeue, &out, err))
        return -1;
    match_lines(out ? out : "", jobs, n, cluster, 1);
    free(out);
    int missing = 0;
    for (int i = 0; i < n; i++)
        missing |= !jobs[i].state[0];
    if (!missing)
        return 0;
    /* jobs that left the queue: sacct, when accounting is there */
    size_t cap = (size_t)n * (WP_SLURM_ID_MAX + 1) + 8;
    char *list = calloc(1, cap);
    if (!list)
        return wp_errorf(err, "out of memory");
    for (int i = 0; i < n; i++) {
        if (jobs[i].state[0])
            continue;
        if (list[0])
            strcat(list, ",");
        strncat(list, jobs[i].id, WP_SLURM_ID_MAX);
    }
    char *sacct[] = {"sacct", "--noheader", "--parsable2", "--allocations", "--format=JobID,State,Submit,Cluster",
                     "--jobs", list, NULL};
    struct wp_err ignored;
    out = NULL;
    if (exec_ok(sacct, &out, &ignored) == 0) {
        *have_sacct = 1;
        match_lines(out ? out : "", jobs, n, cluster, 0);
    }
    free(out);
    free(list);
    return 0;
}

int wp_slurm_read_jobs(const char *dir, struct wp_slurm_job *jobs, int max)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/jobids", dir);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, fp)) {
        struct wp_slurm_job j;
        memset(&j, 0, sizeof j);
        int got = sscanf(line, "%15s %31s %63s %31s", j.step, j.id, j.cluster, j.submit);
        if (got < 2)
            continue;
        if (got < 4)
            wp_strlcpy(j.submit, "-", sizeof j.submit);
        if (got < 3)
            wp_strlcpy(j.cluster, "-", sizeof j.cluster);
        if (n == max) { /* keep the latest */
            memmove(jobs, jobs + 1, (size_t)(max - 1) * sizeof *jobs);
            n--;
        }
        jobs[n++] = j;
    }
    fclose(fp);
    return n;
}

int wp_slurm_append_jobs(const char *dir, const struct wp_slurm_job *jobs, int n, struct wp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/jobids", dir);
    char *old = NULL;
    size_t len = 0;
    FILE *fp = fopen(path, "r");
    if (fp) {
        FILE *mem = open_memstream(&old, &len);
        char chunk[4096];
        size_t got;
        while (mem && (got = fread(chunk, 1, sizeof chunk, fp)) > 0)
            fwrite(chunk, 1, got, mem);
        if (mem)
            fclose(mem);
        fclose(fp);
    }
    struct wp_atomic_file af;
    int rc = wp_atomic_open(&af, path, err);
    if (rc == 0) {
        if (old)
            fwrite(old, 1, len, af.fp);
        for (int i = 0; i < n; i++)
            fprintf(af.fp, "%s %s %s %s\n", jobs[i].step, jobs[i].id, jobs[i].cluster[0] ? jobs[i].cluster : "-",
                    jobs[i].submit[0] ? jobs[i].submit : "-");
        rc = wp_atomic_commit(&af, err);
    }
    free(old);
    return rc;
}
