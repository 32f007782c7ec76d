/* The cluster description: node types (hardware of one kind of node: CPUs,
 * GPUs, NICs, GPU interconnect), the nodes and ranks of a job, and the
 * inter-node network. Every later command reads it from a libconfig file. */
#ifndef WP_TOPO_CLUSTER_H
#define WP_TOPO_CLUSTER_H

#include <stdint.h>
#include "util/error.h"

#define WP_NAME_MAX 64

/* How two GPUs of a node reach each other, best first; the PCIe classes are
 * those of `nvidia-smi topo -m`. */
enum wp_link_kind {
    WP_LINK_SELF,
    WP_LINK_NVLINK,   /* direct NVLink */
    WP_LINK_NVSWITCH, /* NVLink through NVSwitch */
    WP_LINK_XGMI,     /* AMD Infinity Fabric */
    WP_LINK_PIX,      /* at most one PCIe bridge */
    WP_LINK_PXB,      /* several PCIe bridges, no host bridge */
    WP_LINK_PHB,      /* through a PCIe host bridge */
    WP_LINK_NODE,     /* across host bridges within one NUMA node */
    WP_LINK_SYS,      /* across NUMA nodes / sockets */
    WP_LINK_KIND_COUNT
};

const char *wp_link_kind_name(enum wp_link_kind kind);
/* Returns -1 when name is not a link kind. */
int wp_link_kind_from_name(const char *name);

struct wp_gpu {
    int index;                    /* device index of the runtime (cudaN, rsmiN, nvmlN) */
    char model[96];
    char apis[64];                /* OS devices hwloc shows: "CUDA,NVML,OpenCL", or "PCI" */
    char os_names[96];            /* e.g. "cuda0,nvml0,opencl0d0" */
    char pci_busid[20];
    int numa_node;                /* OS index, -1 when the GPU is not local to one */
    int package;                  /* logical index, -1 when unknown */
    int nic;                      /* nearest NIC: index into node_type.nics, -1 if none */
    enum wp_link_kind nic_path;   /* PCIe path class GPU <-> nearest NIC */
    double pcie_Bps;              /* PCIe link bandwidth of the device, 0 if unknown */
    double nvlink_Bps;            /* sum of NVLink/XGMI bandwidth to GPUs, switches, CPUs */
    double cpu_link_Bps;          /* NVLink to a CPU (POWER), 0 if none */
    double memory_bytes;          /* device memory (CUDAGlobalMemorySize, RSMIVRAMSize), 0 if unknown */
};

struct wp_nic {
    char name[WP_NAME_MAX];       /* OpenFabrics name when present (mlx5_0), else netdev */
    char os_names[96];            /* all OS devices of the PCI function: "mlx5_0,ib0" */
    char kind[16];                /* "InfiniBand/RDMA", "Slingshot", "Ethernet", "EFA" */
    int fabric;                   /* a high-speed fabric NIC (RDMA or HSN), not management */
    char pci_busid[20];
    int numa_node;
    double pcie_Bps;
};

struct wp_node_type {
    char name[WP_NAME_MAX];
    char source[512];             /* where it came from: "live hwloc", "hwloc XML FILE" */
    int emulated;                 /* a recorded topology, not the machine we run on */
    int count;                    /* nodes of this type (for descriptions without hosts) */
    int packages, numa_nodes, cores, pus;
    uint64_t memory_bytes;
    int ngpus;
    struct wp_gpu *gpus;
    int nnics;
    struct wp_nic *nics;
    int nvswitches;
    char gpu_matrix[48];          /* "NVLinkBandwidth", "XGMIBandwidth" or "PCIe" */
    enum wp_link_kind *link_kind; /* ngpus x ngpus, row-major */
    double *link_Bps;             /* ngpus x ngpus; 0 on the diagonal */
};

struct wp_node {
    char host[WP_NAME_MAX];
    int type;                     /* index into cluster.types */
};

struct wp_rank {
    int rank;
    int node;                     /* index into cluster.nodes */
    int local_rank;
};

struct wp_network {
    int given;                    /* 0: nothing known about the inter-node network */
    char name[WP_NAME_MAX];
    double bandwidth_Bps;
    double latency_s;
    char source[32];              /* "user", "calibrated" */
};

struct wp_cluster {
    char name[WP_NAME_MAX];
    char launcher[32];            /* "none", "mpi", "pmix": how the nodes were found */
    int ntypes;
    struct wp_node_type *types;
    int nnodes;
    struct wp_node *nodes;
    int nranks;
    struct wp_rank *ranks;
    struct wp_network network;
    /* between ranks of one node where its node type gives no GPU links
     * (CPU nodes: the MPI library's shared memory); calibrate's intra-node
     * fit. given = 0: free (1 us, no bandwidth term) */
    struct wp_network intra_network;
};

void wp_cluster_init(struct wp_cluster *c);
void wp_cluster_destroy(struct wp_cluster *c);
void wp_node_type_destroy(struct wp_node_type *t);

/* Allocates the per-node-type arrays (gpus, nics, link matrices). */
int wp_node_type_alloc(struct wp_node_type *t, int ngpus, int nnics, struct wp_err *err);

/* Moves *t into the cluster (t is left empty); returns its index. If an
 * identical node type (same hardware, any name) is already there, t is
 * destroyed and that index returned. */
int wp_cluster_add_type(struct wp_cluster *c, struct wp_node_type *t, struct wp_err *err);
int wp_cluster_add_node(struct wp_cluster *c, const char *host, int type, struct wp_err *err);
int wp_cluster_add_rank(struct wp_cluster *c, int rank, int node, int local_rank,
                        struct wp_err *err);

/* Total nodes (sum of counts) and GPUs of the cluster. */
int wp_cluster_node_count(const struct wp_cluster *c);
int wp_cluster_gpu_count(const struct wp_cluster *c);

/* Consistency checks shared by every reader: indices in range, matrices
 * symmetric, ranks unique. */
int wp_cluster_check(const struct wp_cluster *c, struct wp_err *err);

#endif
