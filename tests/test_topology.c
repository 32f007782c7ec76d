/* Topology from recorded hwloc exports of real GPU servers: GPU counts,
 * GPU <-> NUMA <-> NIC locality and link bandwidths must come out as the
 * files say (each expected value is read off the XML, see the comments),
 * the cluster file must keep them, and a job's per-process reports must
 * assemble into nodes, ranks and deduplicated node types. */
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#include "topo/cluster_io.h"
#include "topo/discover.h"
#include "topo/job.h"

static int load(const char *name, struct wp_node_type *t)
{
    char path[4096];
    const char *dir = getenv("WP_FIXTURES");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/topology", name);
    struct wp_err err = {""};
    int rc = wp_discover_node(path, t, &err);
    ok(rc == 0, "%s loads (%s)", name, err.msg);
    if (rc)
        memset(t, 0, sizeof *t);
    return rc;
}

static double link_Bps(const struct wp_node_type *t, int a, int b)
{
    return t->link_Bps[a * t->ngpus + b];
}

static int link_kind(const struct wp_node_type *t, int a, int b)
{
    return t->link_kind[a * t->ngpus + b];
}

static const char *nic_of(const struct wp_node_type *t, int g)
{
    return t->gpus[g].nic >= 0 ? t->nics[t->gpus[g].nic].name : "(none)";
}

/* DGX-2H: 16 V100 as NVML CoProc devices, 12 NVSwitch PCI functions, each
 * GPU with six 25000 MB/s links in NVLinkBandwidth (one per switch of its
 * board); GPUs 0-7 under package/NUMA 0, 8-15 under 1; no NICs exported. */
static void test_dgx2(void)
{
    struct wp_node_type t;
    if (load("hwloc-nvidiaDGX2.xml", &t))
        return;
    is_int(t.ngpus, 16, "DGX-2: 16 GPUs");
    is_int(t.nvswitches, 12, "DGX-2: 12 NVSwitches");
    is_int(t.nnics, 0, "DGX-2: no NICs in the export");
    is_int(t.numa_nodes, 2, "DGX-2: 2 NUMA nodes");
    ok(t.emulated, "DGX-2: a recorded topology is marked emulated");
    is_str(t.gpu_matrix, "NVLinkBandwidth", "DGX-2: interconnect from NVLinkBandwidth");
    int numa_ok = 1, nvlink_ok = 1, pairs_ok = 1, api_ok = 1;
    for (int g = 0; g < 16; g++) {
        numa_ok &= t.gpus[g].numa_node == (g < 8 ? 0 : 1);
        nvlink_ok &= fabs(t.gpus[g].nvlink_Bps - 6 * 25000e6) < 1;
        api_ok &= strcmp(t.gpus[g].apis, "NVML") == 0;
        for (int h = 0; h < 16; h++)
            if (g != h)
                pairs_ok &= link_kind(&t, g, h) == WP_LINK_NVSWITCH && fabs(link_Bps(&t, g, h) - 150e9) < 1;
    }
    ok(numa_ok, "DGX-2: GPUs 0-7 on NUMA node 0, 8-15 on NUMA node 1");
    ok(nvlink_ok, "DGX-2: every GPU has 150 GB/s of NVLink (6 x 25 GB/s)");
    ok(api_ok, "DGX-2: GPUs seen as NVML OS devices");
    ok(pairs_ok, "DGX-2: every pair reaches through NVSwitch at 150 GB/s (switch ports merged)");
    is_str(t.gpus[0].model, "Tesla V100-SXM3-32GB-H", "DGX-2: GPU model from GPUModel");
    is_str(t.gpus[0].pci_busid, "0000:34:00.0", "DGX-2: nvml0 is 0000:34:00.0");
    wp_node_type_destroy(&t);
}

/* Dell XE8640 (HGX H100 4-GPU): cuda0..3 at 4e, 5f, cb, db; NUMA nodes 3, 1,
 * 7, 5 (SNC4, 8 NUMA nodes); NVLinkBandwidth 150000 MB/s between every pair;
 * mlx5_0 shares a switch with GPU 0, mlx5_2 with GPU 1, mlx5_3 with GPU 3;
 * GPU 2 has no NIC on its NUMA node, the nearest in its package is mlx5_3. */
static void test_hgx_h100(void)
{
    struct wp_node_type t;
    if (load("flux-ipa20-hgx-h100.xml", &t))
        return;
    is_int(t.ngpus, 4, "HGX H100: 4 GPUs");
    is_int(t.numa_nodes, 8, "HGX H100: 8 NUMA nodes (SNC4)");
    is_int(t.nnics, 6, "HGX H100: 6 NICs");
    static const int numa[4] = {3, 1, 7, 5};
    static const char *const nic[4] = {"mlx5_0", "mlx5_2", "mlx5_3", "mlx5_3"};
    static const int path[4] = {WP_LINK_PIX, WP_LINK_PIX, WP_LINK_SYS, WP_LINK_PIX};
    static const char *const bus[4] = {"0000:4e:00.0", "0000:5f:00.0", "0000:cb:00.0", "0000:db:00.0"};
    for (int g = 0; g < 4; g++) {
        is_int(t.gpus[g].numa_node, numa[g], "HGX H100: GPU %d on NUMA node %d", g, numa[g]);
        is_str(nic_of(&t, g), nic[g], "HGX H100: GPU %d nearest NIC %s", g, nic[g]);
        is_int(t.gpus[g].nic_path, path[g], "HGX H100: GPU %d to NIC path class", g);
        is_str(t.gpus[g].pci_busid, bus[g], "HGX H100: cuda%d at %s", g, bus[g]);
        is_near(t.gpus[g].nvlink_Bps, 450e9, 1e-12, "HGX H100: GPU %d has 3 x 150 GB/s NVLink", g);
        is_near(t.gpus[g].pcie_Bps, 63.015385e9, 1e-6, "HGX H100: GPU %d PCIe Gen5 x16 63.02 GB/s", g);
        has_substr(t.gpus[g].apis, "CUDA", "HGX H100: GPU %d seen as CUDA", g);
    }
    is_int(link_kind(&t, 0, 3), WP_LINK_NVLINK, "HGX H100: GPUs 0-3 linked directly by NVLink");
    is_near(link_Bps(&t, 1, 2), 150e9, 1e-12, "HGX H100: GPUs 1-2 at 150 GB/s");
    int mgmt = 0;
    for (int i = 0; i < t.nnics; i++)
        mgmt += !t.nics[i].fabric;
    is_int(mgmt, 2, "HGX H100: the two eno* ports are management Ethernet");
    wp_node_type_destroy(&t);
}

/* HPE Cray EX235A (Frontier class): 8 MI250X GCDs as RSMI devices whose
 * numbering is not PCI order (rsmi0 = c1, rsmi4 = d1); XGMIBandwidth 100000
 * MB/s between every pair; rsmi0/1 on NUMA 3 beside hsi0, 2/3 on 1 beside
 * hsi1, 4/5 on 0 beside hsi2, 6/7 on 2 beside hsi3 (Slingshot). */
static void test_tioga(void)
{
    struct wp_node_type t;
    if (load("mpibind-eas-tioga.xml", &t))
        return;
    is_int(t.ngpus, 8, "Frontier-class: 8 GCDs");
    is_str(t.gpu_matrix, "XGMIBandwidth", "Frontier-class: interconnect from XGMIBandwidth");
    static const int numa[8] = {3, 3, 1, 1, 0, 0, 2, 2};
    static const char *const nic[8] = {"hsi0", "hsi0", "hsi1", "hsi1", "hsi2", "hsi2", "hsi3", "hsi3"};
    for (int g = 0; g < 8; g++) {
        is_int(t.gpus[g].numa_node, numa[g], "Frontier-class: rsmi%d on NUMA node %d", g, numa[g]);
        is_str(nic_of(&t, g), nic[g], "Frontier-class: rsmi%d nearest NIC %s", g, nic[g]);
        is_near(t.gpus[g].nvlink_Bps, 700e9, 1e-12, "Frontier-class: rsmi%d has 7 x 100 GB/s XGMI", g);
    }
    is_str(t.gpus[0].pci_busid, "0000:c1:00.0", "Frontier-class: rsmi0 is c1:00.0");
    is_str(t.gpus[4].pci_busid, "0000:d1:00.0", "Frontier-class: rsmi4 is d1:00.0 (runtime order, not PCI order)");
    is_str(t.gpus[0].apis, "RSMI", "Frontier-class: GPUs seen as RSMI");
    is_int(link_kind(&t, 0, 7), WP_LINK_XGMI, "Frontier-class: GCDs 0-7 over XGMI");
    is_near(link_Bps(&t, 2, 5), 100e9, 1e-12, "Frontier-class: GCDs 2-5 at 100 GB/s");
    int slingshot = 0;
    for (int i = 0; i < t.nnics; i++)
        slingshot += strcmp(t.nics[i].kind, "Slingshot") == 0;
    is_int(slingshot, 4, "Frontier-class: 4 Slingshot NICs");
    wp_node_type_destroy(&t);
}

/* IBM POWER8 Minsky: 4 P100; NVLinkBandwidth pairs GPU0-GPU1 and GPU2-GPU3
 * at 40000 MB/s, and each GPU at 40000 MB/s to its CPU package; GPUs 0, 1
 * on NUMA 0, GPUs 2, 3 on NUMA 1. */
static void test_power8(void)
{
    struct wp_node_type t;
    if (load("hwloc-power8gpudistances.xml", &t))
        return;
    is_int(t.ngpus, 4, "POWER8: 4 GPUs");
    for (int g = 0; g < 4; g++) {
        is_int(t.gpus[g].numa_node, g < 2 ? 0 : 1, "POWER8: GPU %d NUMA node", g);
        is_near(t.gpus[g].cpu_link_Bps, 40e9, 1e-12, "POWER8: GPU %d has 40 GB/s NVLink to the CPU", g);
        is_near(t.gpus[g].nvlink_Bps, 80e9, 1e-12, "POWER8: GPU %d has 80 GB/s NVLink in all", g);
    }
    is_int(link_kind(&t, 0, 1), WP_LINK_NVLINK, "POWER8: GPUs 0-1 NVLink");
    is_near(link_Bps(&t, 2, 3), 40e9, 1e-12, "POWER8: GPUs 2-3 at 40 GB/s");
    is_int(link_kind(&t, 0, 2), WP_LINK_SYS, "POWER8: GPUs 0-2 cross the sockets");
    wp_node_type_destroy(&t);
}

/* AWS g4dn.metal: 8 T4 on PCIe only (PCIe Gen3 x16, 15.753846 GB/s), 0-3
 * on NUMA 0 and 4-7 on NUMA 1; one EFA (rdmap197s0) and eth0 on NUMA 1. */
static void test_g4dn(void)
{
    struct wp_node_type t;
    if (load("mpibind-g4dnmetal.xml", &t))
        return;
    is_int(t.ngpus, 8, "g4dn: 8 GPUs");
    is_str(t.gpu_matrix, "PCIe", "g4dn: no NVLink matrix, interconnect from the PCIe path");
    for (int g = 0; g < 8; g++) {
        is_int(t.gpus[g].numa_node, g < 4 ? 0 : 1, "g4dn: GPU %d NUMA node", g);
        is_str(nic_of(&t, g), "rdmap197s0", "g4dn: GPU %d nearest NIC is the EFA", g);
        is_int(t.gpus[g].nic_path, g < 4 ? WP_LINK_SYS : WP_LINK_NODE, "g4dn: GPU %d NIC path", g);
        is_near(t.gpus[g].nvlink_Bps, 0, 0, "g4dn: GPU %d has no NVLink", g);
    }
    is_int(link_kind(&t, 0, 1), WP_LINK_PHB, "g4dn: GPUs 0-1 share a host bridge");
    is_int(link_kind(&t, 0, 2), WP_LINK_NODE, "g4dn: GPUs 0-2 on one NUMA node");
    is_int(link_kind(&t, 3, 4), WP_LINK_SYS, "g4dn: GPUs 3-4 across sockets");
    is_near(link_Bps(&t, 0, 5), 15.753846e9, 1e-6, "g4dn: PCIe pair bandwidth 15.75 GB/s");
    is_str(t.nics[0].kind, "EFA", "g4dn: the EFA is recognised");
    wp_node_type_destroy(&t);
}

/* LLNL Lassen (AC922): 4 V100 without an NVLink matrix in the export; GPUs
 * 0, 1 on NUMA 0 near mlx5_0, GPUs 2, 3 on NUMA 8 near mlx5_2. */
static void test_lassen(void)
{
    struct wp_node_type t;
    if (load("mpibind-coral-lassen.xml", &t))
        return;
    is_int(t.ngpus, 4, "Lassen: 4 GPUs");
    static const int numa[4] = {0, 0, 8, 8};
    static const char *const nic[4] = {"mlx5_0", "mlx5_0", "mlx5_2", "mlx5_2"};
    for (int g = 0; g < 4; g++) {
        is_int(t.gpus[g].numa_node, numa[g], "Lassen: GPU %d NUMA node %d", g, numa[g]);
        is_str(nic_of(&t, g), nic[g], "Lassen: GPU %d nearest NIC %s", g, nic[g]);
    }
    is_int(link_kind(&t, 0, 1), WP_LINK_PIX, "Lassen: GPUs 0-1 behind one switch");
    is_int(link_kind(&t, 1, 2), WP_LINK_SYS, "Lassen: GPUs 1-2 across sockets");
    wp_node_type_destroy(&t);
}

/* A 2-socket Xeon with a K40m (cuda0), an AMD GPU (card0, opencl0d1) and two
 * Tesla M2075 that hwloc shows only as PCI functions (class 0302). */
static void test_pci_only_gpus(void)
{
    struct wp_node_type t;
    if (load("hwloc-32em64t-2n8c2t-pci-normalio.xml", &t))
        return;
    is_int(t.ngpus, 4, "mixed node: 4 GPUs, PCI-only ones included");
    int pci_only = 0;
    for (int g = 0; g < t.ngpus; g++)
        pci_only += strcmp(t.gpus[g].apis, "PCI") == 0;
    is_int(pci_only, 2, "mixed node: 2 GPUs seen only as PCI devices");
    is_str(t.gpus[0].model, "Tesla K40m", "mixed node: cuda0 (the K40m) is GPU 0");
    has_substr(t.gpus[0].apis, "CUDA", "mixed node: GPU 0 seen as CUDA");
    has_substr(t.gpus[1].apis, "OpenCL", "mixed node: the AMD GPU seen as OpenCL");
    is_str(t.nics[2].kind, "InfiniBand", "mixed node: mlx5_0/ib0 is InfiniBand");
    wp_node_type_destroy(&t);
}

/* Two node types with counts, written and read back unchanged. */
static void test_cluster_round_trip(void)
{
    struct wp_cluster c;
    struct wp_err err = {""};
    wp_cluster_init(&c);
    struct wp_node_type t;
    if (load("hwloc-nvidiaDGX2.xml", &t))
        return;
    t.count = 2;
    is_int(wp_cluster_add_type(&c, &t, &err), 0, "first type added");
    if (load("flux-ipa20-hgx-h100.xml", &t))
        return;
    t.count = 3;
    is_int(wp_cluster_add_type(&c, &t, &err), 1, "second type added");
    if (load("hwloc-nvidiaDGX2.xml", &t))
        return;
    is_int(wp_cluster_add_type(&c, &t, &err), 0, "same hardware again joins the first type");
    is_int(wp_cluster_node_count(&c), 6, "2 + 3 + 1 nodes");
    is_int(wp_cluster_gpu_count(&c), 3 * 16 + 3 * 4, "GPUs of all nodes");
    ok(wp_cluster_check(&c, &err) == 0, "consistent (%s)", err.msg);

    char path[] = "/tmp/wp-topo-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    ok(wp_cluster_write(&c, path, &err) == 0, "written (%s)", err.msg);
    struct wp_cluster back;
    ok(wp_cluster_read(path, &back, &err) == 0, "read back (%s)", err.msg);
    if (back.ntypes == 2) {
        const struct wp_node_type *a = &c.types[1], *b = &back.types[1];
        int same = a->ngpus == b->ngpus && a->nnics == b->nnics && a->numa_nodes == b->numa_nodes;
        for (int g = 0; same && g < a->ngpus; g++)
            same = a->gpus[g].numa_node == b->gpus[g].numa_node && a->gpus[g].nic == b->gpus[g].nic &&
                   a->gpus[g].nic_path == b->gpus[g].nic_path && a->gpus[g].nvlink_Bps == b->gpus[g].nvlink_Bps &&
                   strcmp(a->gpus[g].pci_busid, b->gpus[g].pci_busid) == 0;
        for (int p = 0; same && p < a->ngpus * a->ngpus; p++)
            same = a->link_kind[p] == b->link_kind[p] && a->link_Bps[p] == b->link_Bps[p];
        ok(same, "HGX H100 type identical after the round trip");
        is_int(back.types[0].nvswitches, 12, "NVSwitch count kept");
        is_int(back.types[1].count, 3, "node count kept");
    } else {
        ok(0, "two node types read back (got %d)", back.ntypes);
    }
    unlink(path);
    wp_cluster_destroy(&back);
    wp_cluster_destroy(&c);
}

/* The assembly used by MPI (topo) and PMIx (probe): 3 hosts, 2 ranks each,
 * two of one hardware and one of another, reports from local rank 0 only. */
static void test_job_assembly(void)
{
    struct wp_node_type dgx, hgx;
    if (load("hwloc-nvidiaDGX2.xml", &dgx) || load("flux-ipa20-hgx-h100.xml", &hgx))
        return;
    char *dgx_text = wp_node_type_to_text(&dgx);
    char *hgx_text = wp_node_type_to_text(&hgx);
    struct wp_job_proc procs[6] = {
        {0, 0, "n1", dgx_text}, {1, 1, "n1", NULL}, {2, 0, "n2", hgx_text},
        {3, 1, "n2", NULL},     {4, 1, "n3", NULL}, {5, 0, "n3", dgx_text},
    };
    struct wp_cluster c;
    struct wp_err err = {""};
    wp_cluster_init(&c);
    ok(wp_cluster_from_job(&c, procs, 6, "mpi", &err) == 0, "job assembles (%s)", err.msg);
    is_int(c.nnodes, 3, "three nodes");
    is_int(c.ntypes, 2, "two node types (n1 and n3 have the same hardware)");
    is_int(c.types[0].count, 2, "two nodes of the DGX-2 type");
    is_int(c.nodes[2].type, 0, "n3 is a DGX-2");
    is_int(c.nodes[1].type, 1, "n2 is an HGX H100");
    is_int(c.nranks, 6, "six ranks");
    is_int(c.ranks[4].node, 2, "rank 4 on n3");
    is_int(c.ranks[4].local_rank, 1, "rank 4 is local rank 1");
    wp_cluster_destroy(&c);

    procs[2].node_text = NULL;
    wp_cluster_init(&c);
    ok(wp_cluster_from_job(&c, procs, 6, "mpi", &err) == -1, "a node nobody described is an error");
    has_substr(err.msg, "no process on node n2 described its hardware", "the node is named");
    wp_cluster_destroy(&c);
    free(dgx_text);
    free(hgx_text);
    wp_node_type_destroy(&dgx);
    wp_node_type_destroy(&hgx);
}

static void test_bad_xml(void)
{
    struct wp_node_type t;
    struct wp_err err = {""};
    ok(wp_discover_node("/nonexistent/machine.xml", &t, &err) == -1, "missing XML rejected");
    has_substr(err.msg, "cannot read /nonexistent/machine.xml", "missing XML named");
    const char *dir = getenv("WP_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/config/good-two-nodes.cfg", dir ? dir : ".");
    ok(wp_discover_node(path, &t, &err) == -1, "a file that is not hwloc XML is rejected");
    has_substr(err.msg, "not an hwloc XML export", "and said so");
}

int main(void)
{
    test_dgx2();
    test_hgx_h100();
    test_tioga();
    test_power8();
    test_g4dn();
    test_lassen();
    test_pci_only_gpus();
    test_cluster_round_trip();
    test_job_assembly();
    test_bad_xml();
    return tap_done();
}
