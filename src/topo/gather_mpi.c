/* Gathering node descriptions over MPI: local rank 0 of each node (from
 * MPI_Comm_split_type) describes it with hwloc; rank 0 assembles the job. */
#include "topo/gather_mpi.h"

#include <stdlib.h>
#include <string.h>

#include "topo/cluster_io.h"
#include "topo/discover.h"
#include "topo/job.h"
#include "util/strutil.h"

/* Fixed-size part of each rank's report. */
struct rank_report {
    int local_rank;
    int failed;              /* text holds an error message instead of a node */
    char host[WP_NAME_MAX];
};

int wp_gather_cluster_mpi(MPI_Comm comm, struct wp_cluster *c, struct wp_err *err)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm local;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    struct rank_report mine;
    memset(&mine, 0, sizeof mine);
    MPI_Comm_rank(local, &mine.local_rank);
    MPI_Comm_free(&local);
    char host[MPI_MAX_PROCESSOR_NAME];
    int host_len = 0;
    MPI_Get_processor_name(host, &host_len);
    wp_strlcpy(mine.host, host, sizeof mine.host);

    char *text = NULL;
    if (mine.local_rank == 0) {
        struct wp_node_type t;
        struct wp_err local_err;
        if (wp_discover_node(NULL, &t, &local_err) == 0) {
            text = wp_node_type_to_text(&t);
            wp_node_type_destroy(&t);
        } else {
            mine.failed = 1;
            text = strdup(local_err.msg);
        }
    }
    int text_len = text ? (int)strlen(text) + 1 : 0;

    struct rank_report *reports = NULL;
    int *lens = NULL, *displs = NULL;
    char *texts = NULL;
    if (rank == 0) {
        reports = calloc((size_t)size, sizeof *reports);
        lens = calloc((size_t)size, sizeof *lens);
        displs = calloc((size_t)size, sizeof *displs);
    }
    MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, reports, (int)sizeof mine, MPI_BYTE, 0, comm);
    MPI_Gather(&text_len, 1, MPI_INT, lens, 1, MPI_INT, 0, comm);
    int total = 0;
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            displs[r] = total;
            total += lens[r];
        }
        texts = malloc(total ? (size_t)total : 1);
    }
    MPI_Gatherv(text, text_len, MPI_CHAR, texts, lens, displs, MPI_CHAR, 0, comm);
    free(text);

    int status = 0;
    if (rank == 0) {
        struct wp_job_proc *procs = calloc((size_t)size, sizeof *procs);
        for (int r = 0; r < size && status == 0; r++) {
            procs[r].rank = r;
            procs[r].local_rank = reports[r].local_rank;
            wp_strlcpy(procs[r].host, reports[r].host, sizeof procs[r].host);
            procs[r].node_text = lens[r] ? texts + displs[r] : NULL;
            if (reports[r].failed)
                status = wp_errorf(err, "rank %d on %s could not describe its node: %s", r,
                                   reports[r].host, texts + displs[r]);
        }
        if (status == 0)
            status = wp_cluster_from_job(c, procs, size, "mpi", err);
        free(procs);
        free(reports);
        free(lens);
        free(displs);
        free(texts);
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, comm);
    if (status && rank != 0)
        wp_errorf(err, "rank 0 could not assemble the cluster");
    return status;
}
