/* A campaign point's recovery after a lost node (recovery.h). */
#include "campaign/recovery.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "campaign/slurm.h"

/* The value of key=VALUE in a chain line (up to the next space; reason= to
 * the end), into out; 0 when the line lacks it. */
static int field(const char *line, const char *key, char *out, size_t size)
{
    size_t klen = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += klen) {
        if ((p != line && p[-1] != ' ') || p[klen] != '=')
            continue;
        const char *v = p + klen + 1;
        size_t n = strcmp(key, "reason") == 0 ? strlen(v) : strcspn(v, " ");
        snprintf(out, size, "%.*s", (int)n, v);
        return 1;
    }
    return 0;
}

static int parse_line(const char *path, int lineno, const char *line, struct wp_recovery_entry *e, struct wp_err *err)
{
    char index[16], nodes[16];
    if (!field(line, "recovery", index, sizeof index) || !field(line, "job", e->job, sizeof e->job) ||
        !field(line, "lost", e->lost, sizeof e->lost) || !field(line, "nodes", nodes, sizeof nodes) ||
        !field(line, "exclude", e->exclude, sizeof e->exclude) || !field(line, "next", e->next, sizeof e->next))
        return wp_errorf(err, "%s:%d: not a recovery line (recovery=N job=J lost=HOST nodes=K exclude=H,.. "
                              "next=J2 reason=TEXT)",
                         path, lineno);
    char *end_index, *end_nodes;
    e->index = (int)strtol(index, &end_index, 10);
    e->nodes = (int)strtol(nodes, &end_nodes, 10);
    if (e->index < 1 || e->nodes < 1 || *end_index || *end_nodes)
        return wp_errorf(err, "%s:%d: recovery and nodes must be whole numbers from 1", path, lineno);
    if (strcmp(e->lost, "-") == 0)
        e->lost[0] = '\0';
    if (strcmp(e->exclude, "-") == 0)
        e->exclude[0] = '\0';
    if (strcmp(e->next, "-") == 0)
        e->next[0] = '\0';
    return 0;
}

int wp_recovery_chain_read(const char *path, struct wp_recovery_chain *c, struct wp_err *err)
{
    memset(c, 0, sizeof *c);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return errno == ENOENT ? 0 : wp_errorf(err, "%s: %s", path, strerror(errno));
    char line[2048];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, fp)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (!line[0])
            continue;
        if (c->n == WP_RECOVERY_MAX)
            rc = wp_errorf(err, "%s:%d: more than %d recoveries", path, lineno, WP_RECOVERY_MAX);
        else
            rc = parse_line(path, lineno, line, &c->entries[c->n++], err);
    }
    fclose(fp);
    return rc;
}

/* Whether the comma-separated list holds host. */
static int list_holds(const char *list, const char *host)
{
    size_t n = strlen(host);
    for (const char *p = list; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        if (strcspn(p, ",") == n && strncmp(p, host, n) == 0)
            return 1;
    }
    return 0;
}

static void list_add(char *list, size_t size, const char *host)
{
    if (!host[0] || list_holds(list, host))
        return;
    size_t len = strlen(list);
    snprintf(list + len, size - len, "%s%s", len ? "," : "", host);
}

/* How often the chain and this failure lost host. */
static int times_lost(const struct wp_recovery_chain *c, const struct wp_point_failure *f, const char *host)
{
    int n = strcmp(f->host, host) == 0;
    for (int i = 0; i < c->n; i++)
        n += strcmp(c->entries[i].lost, host) == 0;
    return n;
}

void wp_recovery_decide(const struct wp_recovery_policy *p, const struct wp_point_failure *f,
                        const struct wp_recovery_chain *c, int nodes_now, const char *const *usable, int nusable,
                        struct wp_recovery_decision *d)
{
    memset(d, 0, sizeof *d);
    if (!p->replan) {
        snprintf(d->why, sizeof d->why, "no new job: the campaign's recover is \"none\"");
        return;
    }
    if (f->kind != WP_FAILURE_LOST) {
        snprintf(d->why, sizeof d->why, "no new job: the run failed by its own fault (%.180s)",
                 f->kind == WP_FAILURE_OWN ? f->reason : "no lost rank or node in its log");
        return;
    }
    if (c->n >= p->max_recoveries) {
        snprintf(d->why, sizeof d->why, "no new job: recovered %d times already (max_recoveries = %d)", c->n,
                 p->max_recoveries);
        return;
    }
    /* the lost node, and every node lost twice in the chain */
    list_add(d->exclude, sizeof d->exclude, f->host);
    for (int i = 0; i < c->n; i++)
        if (times_lost(c, f, c->entries[i].lost) >= 2)
            list_add(d->exclude, sizeof d->exclude, c->entries[i].lost);
    int left = 0;
    for (int i = 0; i < nusable; i++)
        left += !list_holds(d->exclude, usable[i]);
    d->nodes = left < nodes_now ? left : nodes_now;
    if (d->nodes < p->min_nodes || d->nodes < 1) {
        snprintf(d->why, sizeof d->why, "no new job: %d usable nodes without %.120s, fewer than min_nodes = %d",
                 left, d->exclude[0] ? d->exclude : "the lost one", p->min_nodes);
        d->nodes = 0;
        return;
    }
    d->resubmit = 1;
    snprintf(d->why, sizeof d->why, "a new job on %d node%s%s%.80s (was %d): %.120s", d->nodes,
             d->nodes == 1 ? "" : "s",
             d->exclude[0] ? " without " : "", d->exclude, nodes_now, f->reason);
}

int wp_recovery_append(const char *path, const struct wp_recovery_chain *c, const char *job, const char *next,
                       const struct wp_point_failure *f, const struct wp_recovery_decision *d, struct wp_err *err)
{
    char line[2048];
    int n = snprintf(line, sizeof line, "recovery=%d job=%s lost=%s nodes=%d exclude=%s next=%s reason=%s\n",
                     c->n + 1, job && job[0] ? job : "-", f->host[0] ? f->host : "-", d->nodes,
                     d->exclude[0] ? d->exclude : "-", next && next[0] ? next : "-", f->reason);
    if (n < 0 || (size_t)n >= sizeof line)
        return wp_errorf(err, "%s: the recovery line is too long", path);
    /* one write of the whole line with O_APPEND: a reader sees it whole or not at all */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        return wp_errorf(err, "%s: %s", path, strerror(errno));
    ssize_t w = write(fd, line, (size_t)n);
    int rc = w == n ? 0 : wp_errorf(err, "%s: %s", path, w < 0 ? strerror(errno) : "short write");
    if (close(fd) && rc == 0)
        rc = wp_errorf(err, "%s: %s", path, strerror(errno));
    return rc;
}

/* The usable nodes: rq's list, or sinfo's. */
static int usable_nodes(const struct wp_recovery_request *rq, char ***names, int *n, struct wp_err *err)
{
    if (!rq->usable)
        return wp_slurm_usable_nodes(rq->partition, names, n, err);
    *n = 0;
    *names = calloc(strlen(rq->usable) / 2 + 2, sizeof **names);
    if (!*names)
        return wp_errorf(err, "out of memory");
    for (const char *p = rq->usable; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ','))
        if (strcspn(p, ",") && !((*names)[(*n)++] = strndup(p, strcspn(p, ","))))
            return wp_errorf(err, "out of memory");
    return 0;
}

/* Submits the point's job again as decided; the job into jobids. */
static int resubmit(const struct wp_recovery_request *rq, const struct wp_recovery_decision *d,
                    struct wp_slurm_job *job, struct wp_err *err)
{
    char script[4200];
    snprintf(script, sizeof script, "%s/job.sbatch", rq->point_dir);
    memset(job, 0, sizeof *job);
    snprintf(job->step, sizeof job->step, "run");
    if (wp_slurm_sbatch_resized(script, rq->point_dir, d->nodes, d->exclude, job, err))
        return -1;
    return wp_slurm_append_jobs(rq->point_dir, job, 1, err);
}

int wp_recovery_run(const struct wp_recovery_request *rq, FILE *out, int *resubmitted, struct wp_err *err)
{
    char path[4200];
    *resubmitted = 0;
    struct wp_point_failure f;
    snprintf(path, sizeof path, "%s/run.log", rq->point_dir);
    wp_point_failure_read(path, &f);
    struct wp_recovery_chain *chain = malloc(sizeof *chain);
    if (!chain)
        return wp_errorf(err, "out of memory");
    snprintf(path, sizeof path, "%s/recoveries.txt", rq->point_dir);
    char **names = NULL;
    int nnames = 0, rc = wp_recovery_chain_read(path, chain, err);
    if (rc == 0 && rq->policy.replan && f.kind == WP_FAILURE_LOST)
        rc = usable_nodes(rq, &names, &nnames, err);
    struct wp_recovery_decision d;
    if (rc == 0) {
        wp_recovery_decide(&rq->policy, &f, chain, rq->nodes, (const char *const *)names, nnames, &d);
        fprintf(out, "recover: job %s: %s%s\n", rq->job && rq->job[0] ? rq->job : "-", d.why,
                rq->dry_run && d.resubmit ? " (dry run: nothing submitted)" : "");
    }
    struct wp_slurm_job job;
    if (rc == 0 && d.resubmit && !rq->dry_run) {
        rc = resubmit(rq, &d, &job, err);
        if (rc == 0)
            rc = wp_recovery_append(path, chain, rq->job, job.id, &f, &d, err);
        if (rc == 0) {
            fprintf(out, "recover: submitted job %s (recovery %d of at most %d)\n", job.id, chain->n + 1,
                    rq->policy.max_recoveries);
            *resubmitted = 1;
        }
    }
    for (int i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    free(chain);
    return rc;
}
