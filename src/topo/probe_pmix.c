/* The PMIx exchange of `wavepipe probe`: PMIx_Put of each node's
 * description by its local rank 0, PMIx_Commit, PMIx_Fence with data
 * collection, then rank 0 reads PMIX_JOB_SIZE, PMIX_NUM_NODES, and per
 * process PMIX_HOSTNAME, PMIX_NODEID, PMIX_LOCAL_RANK, and checks every
 * node's PMIX_LOCAL_PEERS against the processes found on it. Slurm's PMIx
 * server answers those per-process keys only about the asking process
 * itself, so each process reads its own and publishes them. */
#include "topo/probe_pmix.h"

#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/cluster_io.h"
#include "topo/discover.h"
#include "topo/job.h"
#include "util/strutil.h"

#define KEY_NODE "wavepipe.node"     /* node description text, or "!error" */
#define KEY_PEERS "wavepipe.peers"   /* PMIX_LOCAL_PEERS as the node saw it */
#define KEY_PROC "wavepipe.proc"     /* "HOST LOCAL_RANK NODEID" from the process's own PMIx */

int wp_pmix_launched(void)
{
    const char *ns = getenv("PMIX_NAMESPACE");
    return ns && *ns;
}

static int get_uint(const pmix_proc_t *proc, const char *key, unsigned *out)
{
    pmix_value_t *val = NULL;
    if (PMIx_Get(proc, key, NULL, 0, &val) != PMIX_SUCCESS || !val)
        return -1;
    int rc = 0;
    switch (val->type) {
    case PMIX_UINT32: *out = val->data.uint32; break;
    case PMIX_UINT16: *out = val->data.uint16; break;
    case PMIX_INT: *out = (unsigned)val->data.integer; break;
    case PMIX_PROC_RANK: *out = val->data.rank; break;
    default: rc = -1;
    }
    PMIX_VALUE_RELEASE(val);
    return rc;
}

/* String value of key for proc into buf; -1 if absent. */
static int get_string(const pmix_proc_t *proc, const char *key, char *buf, size_t len)
{
    pmix_value_t *val = NULL;
    if (PMIx_Get(proc, key, NULL, 0, &val) != PMIX_SUCCESS || !val)
        return -1;
    int rc = -1;
    if (val->type == PMIX_STRING && val->data.string) {
        wp_strlcpy(buf, val->data.string, len);
        rc = 0;
    }
    PMIX_VALUE_RELEASE(val);
    return rc;
}

/* malloc'ed string value of key for proc, NULL if absent. */
static char *get_string_dup(const pmix_proc_t *proc, const char *key)
{
    pmix_value_t *val = NULL;
    if (PMIx_Get(proc, key, NULL, 0, &val) != PMIX_SUCCESS || !val)
        return NULL;
    char *s = val->type == PMIX_STRING && val->data.string ? strdup(val->data.string) : NULL;
    PMIX_VALUE_RELEASE(val);
    return s;
}

static int put_string(const char *key, const char *value)
{
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_STRING;
    v.data.string = (char *)value;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    return rc == PMIX_SUCCESS ? 0 : -1;
}

/* Publishes this process's contribution; returns 0 or -1 with err. */
static int publish(const pmix_proc_t *me, struct wp_err *err)
{
    unsigned local_rank = 0, node_id = 0;
    char host[WP_NAME_MAX];
    if (get_uint(me, PMIX_LOCAL_RANK, &local_rank) || get_uint(me, PMIX_NODEID, &node_id) ||
        get_string(me, PMIX_HOSTNAME, host, sizeof host))
        return wp_errorf(err, "PMIx gives rank %u no PMIX_LOCAL_RANK, PMIX_NODEID or PMIX_HOSTNAME", me->rank);
    char proc[WP_NAME_MAX + 32];
    snprintf(proc, sizeof proc, "%s %u %u", host, local_rank, node_id);
    if (put_string(KEY_PROC, proc))
        return wp_errorf(err, "PMIx_Put failed on rank %u", me->rank);
    if (local_rank != 0)
        return 0;
    pmix_proc_t wildcard;
    PMIX_LOAD_PROCID(&wildcard, me->nspace, PMIX_RANK_WILDCARD);
    char peers[4096] = "";
    get_string(&wildcard, PMIX_LOCAL_PEERS, peers, sizeof peers);
    struct wp_node_type t;
    struct wp_err local_err;
    char *text;
    if (wp_discover_node(NULL, &t, &local_err) == 0) {
        text = wp_node_type_to_text(&t);
        wp_node_type_destroy(&t);
    } else {
        size_t n = strlen(local_err.msg) + 2;
        text = malloc(n);
        if (text)
            snprintf(text, n, "!%s", local_err.msg);
    }
    int rc = text && put_string(KEY_NODE, text) == 0 && put_string(KEY_PEERS, peers) == 0 ? 0 : -1;
    free(text);
    return rc ? wp_errorf(err, "PMIx_Put failed on rank %u", me->rank) : 0;
}

/* Does the comma-separated rank list peers hold exactly the ranks whose
 * host is host? */
static int peers_match(const char *peers, const struct wp_job_proc *procs, int n, const char *host)
{
    int listed = 0;
    char copy[4096];
    wp_strlcpy(copy, peers, sizeof copy);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int r = atoi(tok);
        if (r < 0 || r >= n || strcmp(procs[r].host, host) != 0)
            return 0;
        listed++;
    }
    int on_host = 0;
    for (int r = 0; r < n; r++)
        on_host += strcmp(procs[r].host, host) == 0;
    return listed == on_host;
}

static int assemble(const pmix_proc_t *me, struct wp_cluster *c, struct wp_err *err)
{
    pmix_proc_t wildcard;
    PMIX_LOAD_PROCID(&wildcard, me->nspace, PMIX_RANK_WILDCARD);
    unsigned size = 0, num_nodes = 0;
    if (get_uint(&wildcard, PMIX_JOB_SIZE, &size) || size == 0)
        return wp_errorf(err, "PMIx gives no PMIX_JOB_SIZE");
    if (get_uint(&wildcard, PMIX_NUM_NODES, &num_nodes))
        return wp_errorf(err, "PMIx gives no PMIX_NUM_NODES");
    struct wp_job_proc *procs = calloc(size, sizeof *procs);
    char **texts = calloc(size, sizeof *texts);
    char **peers = calloc(size, sizeof *peers);
    unsigned *node_ids = calloc(size, sizeof *node_ids);
    int status = procs && texts && peers && node_ids ? 0 : wp_errorf(err, "out of memory");
    for (unsigned r = 0; r < size && status == 0; r++) {
        pmix_proc_t p;
        PMIX_LOAD_PROCID(&p, me->nspace, r);
        unsigned local_rank = 0;
        procs[r].rank = (int)r;
        char proc[WP_NAME_MAX + 32] = "";
        if (get_string(&p, KEY_PROC, proc, sizeof proc) ||
            sscanf(proc, "%63s %u %u", procs[r].host, &local_rank, &node_ids[r]) != 3) {
            status = wp_errorf(err, "rank %u published no PMIX_HOSTNAME/PMIX_LOCAL_RANK/PMIX_NODEID", r);
            break;
        }
        procs[r].local_rank = (int)local_rank;
        if (local_rank != 0)
            continue;
        texts[r] = get_string_dup(&p, KEY_NODE);
        peers[r] = get_string_dup(&p, KEY_PEERS);
        if (!texts[r])
            status = wp_errorf(err, "rank %u (local rank 0 on %s) published no node description", r,
                               procs[r].host);
        else if (texts[r][0] == '!')
            status = wp_errorf(err, "rank %u on %s could not describe its node: %s", r, procs[r].host,
                               texts[r] + 1);
        procs[r].node_text = texts[r];
    }
    for (unsigned r = 0; r < size && status == 0; r++) {
        for (unsigned q = 0; q < size; q++)
            if ((strcmp(procs[r].host, procs[q].host) == 0) != (node_ids[r] == node_ids[q]))
                status = wp_errorf(err, "PMIX_NODEID of ranks %u and %u disagrees with their hostnames", r, q);
        if (status == 0 && peers[r] && peers[r][0] && !peers_match(peers[r], procs, (int)size, procs[r].host))
            status = wp_errorf(err, "PMIX_LOCAL_PEERS on %s (%s) does not match the ranks PMIx places there",
                               procs[r].host, peers[r]);
    }
    if (status == 0)
        status = wp_cluster_from_job(c, procs, (int)size, "pmix", err);
    if (status == 0 && (unsigned)c->nnodes != num_nodes)
        status = wp_errorf(err, "PMIX_NUM_NODES is %u, but the processes are on %d nodes", num_nodes,
                           c->nnodes);
    for (unsigned r = 0; texts && peers && r < size; r++) {
        free(texts[r]);
        free(peers[r]);
    }
    free(texts);
    free(peers);
    free(procs);
    free(node_ids);
    return status;
}

int wp_probe_cluster_pmix(struct wp_cluster *c, int *is_root, struct wp_err *err)
{
    pmix_proc_t me;
    *is_root = 0;
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS)
        return wp_errorf(err, "PMIx_Init failed: %s", PMIx_Error_string(rc));
    *is_root = me.rank == 0;
    int status = publish(&me, err);
    if (PMIx_Commit() != PMIX_SUCCESS && status == 0)
        status = wp_errorf(err, "PMIx_Commit failed");
    pmix_info_t info;
    bool collect = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    pmix_proc_t wildcard;
    PMIX_LOAD_PROCID(&wildcard, me.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Fence(&wildcard, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS && status == 0)
        status = wp_errorf(err, "PMIx_Fence failed: %s", PMIx_Error_string(rc));
    if (status == 0 && *is_root)
        status = assemble(&me, c, err);
    PMIx_Finalize(NULL, 0);
    return status;
}
