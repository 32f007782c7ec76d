/* How the ranks of a training run share a node's cores: threads per rank,
 * the CBLAS's threads, denormals flushed, and the count of nodes. */
#ifndef WP_RUN_TRAIN_CORES_H
#define WP_RUN_TRAIN_CORES_H

/* Collective over MPI_COMM_WORLD. One thread per rank unless
 * OMP_NUM_THREADS says otherwise, the CBLAS with as many, denormals
 * flushed on every thread; rank 0 notes when ranks outnumber cores or the
 * CPU keeps denormals. *nodes_out gets the job's nodes. Returns the cores
 * the simulator shares among the ranks (a job on one node with more ranks
 * than cores), else 0. */
int wp_train_share_cores(int rank, int *nodes_out);

#endif
