/* Text summary of a cluster: node types with CPUs, GPUs (API, NUMA node,
 * nearest NIC, NVLink bandwidth), NICs, the GPU link matrix, the nodes and
 * ranks of a job, and the inter-node network. */
#include "topo/report.h"

#include <string.h>

#include "util/units.h"

/* Short link names for the matrix, like nvidia-smi topo -m. */
static const char *short_kind(enum wp_link_kind k)
{
    switch (k) {
    case WP_LINK_NVLINK: return "NVL";
    case WP_LINK_NVSWITCH: return "NVSW";
    default: return wp_link_kind_name(k);
    }
}

static void report_gpu_matrix(FILE *out, const struct wp_node_type *t)
{
    int n = t->ngpus;
    int uniform = 1;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b && (t->link_kind[a * n + b] != t->link_kind[1] || t->link_Bps[a * n + b] != t->link_Bps[1]))
                uniform = 0;
    fprintf(out, "  GPU interconnect from %s%s:\n", t->gpu_matrix,
            t->nvswitches ? " (NVSwitch ports merged)" : "");
    if (uniform) {
        char bw[32];
        fprintf(out, "    every GPU pair: %s, %s\n", wp_link_kind_name(t->link_kind[1]),
                t->link_Bps[1] > 0 ? wp_format_bandwidth(t->link_Bps[1], bw, sizeof bw) : "bandwidth unknown");
        return;
    }
    fprintf(out, "    %-4s", "");
    for (int b = 0; b < n; b++)
        fprintf(out, " %-5d", t->gpus[b].index);
    fprintf(out, "   GB/s:");
    for (int b = 0; b < n; b++)
        fprintf(out, " %5d", t->gpus[b].index);
    fputc('\n', out);
    for (int a = 0; a < n; a++) {
        fprintf(out, "    %-4d", t->gpus[a].index);
        for (int b = 0; b < n; b++)
            fprintf(out, " %-5s", short_kind(t->link_kind[a * n + b]));
        fprintf(out, "   %4d:", t->gpus[a].index);
        for (int b = 0; b < n; b++) {
            double GBps = t->link_Bps[a * n + b] / 1e9;
            if (a == b)
                fprintf(out, " %5s", "-");
            else if (GBps > 0)
                fprintf(out, " %5.4g", GBps);
            else
                fprintf(out, " %5s", "?");
        }
        fputc('\n', out);
    }
    fprintf(out, "    NVL = NVLink, NVSW = NVLink through NVSwitch, XGMI = Infinity Fabric; PCIe paths:\n"
                 "    PIX one switch, PXB several switches, PHB host bridge, NODE same NUMA node, SYS across sockets\n");
}

static void report_node_type(FILE *out, const struct wp_cluster *c, int ti)
{
    const struct wp_node_type *t = &c->types[ti];
    char buf[32];
    fprintf(out, "node type %d \"%s\" x %d: %s\n", ti, t->name, t->count, t->source);
    fprintf(out, "  %d packages, %d NUMA nodes, %d cores, %d PUs, %s memory\n", t->packages,
            t->numa_nodes, t->cores, t->pus, wp_format_bytes((double)t->memory_bytes, buf, sizeof buf));
    fprintf(out, "  %d GPUs, %d NVSwitches, %d NICs\n", t->ngpus, t->nvswitches, t->nnics);
    if (t->ngpus) {
        fprintf(out, "  %-4s %-34s %-16s %-13s %-5s %-18s %-11s %s\n", "GPU", "model", "seen as",
                "PCI", "NUMA", "nearest NIC", "PCIe", "NVLink/XGMI");
        for (int g = 0; g < t->ngpus; g++) {
            const struct wp_gpu *gpu = &t->gpus[g];
            char numa[16], nic[WP_NAME_MAX + 16], pcie[32], nvl[96];
            if (gpu->numa_node >= 0)
                snprintf(numa, sizeof numa, "%d", gpu->numa_node);
            else
                snprintf(numa, sizeof numa, "-");
            if (gpu->nic >= 0)
                snprintf(nic, sizeof nic, "%s (%s)", t->nics[gpu->nic].name, wp_link_kind_name(gpu->nic_path));
            else
                snprintf(nic, sizeof nic, "-");
            if (gpu->pcie_Bps > 0)
                wp_format_bandwidth(gpu->pcie_Bps, pcie, sizeof pcie);
            else
                snprintf(pcie, sizeof pcie, "?");
            if (gpu->nvlink_Bps > 0) {
                wp_format_bandwidth(gpu->nvlink_Bps, nvl, sizeof nvl);
                if (gpu->cpu_link_Bps > 0) {
                    char cpu[32];
                    size_t len = strlen(nvl);
                    snprintf(nvl + len, sizeof nvl - len, " (%s to CPU)",
                             wp_format_bandwidth(gpu->cpu_link_Bps, cpu, sizeof cpu));
                }
            } else {
                snprintf(nvl, sizeof nvl, "-");
            }
            fprintf(out, "  %-4d %-34.34s %-16.16s %-13s %-5s %-18s %-11s %s\n", gpu->index, gpu->model,
                    gpu->apis, gpu->pci_busid, numa, nic, pcie, nvl);
        }
    }
    if (t->nnics) {
        fprintf(out, "  %-4s %-12s %-20s %-11s %-13s %-5s %s\n", "NIC", "name", "OS devices", "kind",
                "PCI", "NUMA", "PCIe");
        for (int i = 0; i < t->nnics; i++) {
            const struct wp_nic *nic = &t->nics[i];
            char numa[16], pcie[32];
            if (nic->numa_node >= 0)
                snprintf(numa, sizeof numa, "%d", nic->numa_node);
            else
                snprintf(numa, sizeof numa, "-");
            if (nic->pcie_Bps > 0)
                wp_format_bandwidth(nic->pcie_Bps, pcie, sizeof pcie);
            else
                snprintf(pcie, sizeof pcie, "?");
            fprintf(out, "  %-4d %-12s %-20.20s %-11s %-13s %-5s %s%s\n", i, nic->name, nic->os_names,
                    nic->kind, nic->pci_busid, numa, pcie, nic->fabric ? "" : " (not a fabric NIC)");
        }
    }
    if (t->ngpus > 1)
        report_gpu_matrix(out, t);
}

void wp_cluster_report(FILE *out, const struct wp_cluster *c)
{
    fprintf(out, "cluster \"%s\": %d node type%s, %d node%s, %d GPU%s\n", c->name, c->ntypes,
            c->ntypes == 1 ? "" : "s", wp_cluster_node_count(c), wp_cluster_node_count(c) == 1 ? "" : "s",
            wp_cluster_gpu_count(c), wp_cluster_gpu_count(c) == 1 ? "" : "s");
    for (int i = 0; i < c->ntypes; i++)
        report_node_type(out, c, i);
    if (c->nnodes) {
        fprintf(out, "nodes of the job (found through %s):\n", c->launcher);
        fprintf(out, "  %-20s %-5s %-6s %s\n", "host", "type", "ranks", "rank list (local rank)");
        for (int n = 0; n < c->nnodes; n++) {
            int count = 0;
            for (int r = 0; r < c->nranks; r++)
                count += c->ranks[r].node == n;
            fprintf(out, "  %-20s %-5d %-6d", c->nodes[n].host, c->nodes[n].type, count);
            for (int r = 0; r < c->nranks; r++)
                if (c->ranks[r].node == n)
                    fprintf(out, " %d(%d)", c->ranks[r].rank, c->ranks[r].local_rank);
            fputc('\n', out);
        }
    }
    if (c->network.given) {
        char bw[32], lat[32];
        fprintf(out, "inter-node network \"%s\": %s, latency %s (%s)\n", c->network.name,
                wp_format_bandwidth(c->network.bandwidth_Bps, bw, sizeof bw),
                wp_format_time(c->network.latency_s, lat, sizeof lat),
                strcmp(c->network.source, "user") == 0 ? "given by the user, not measured"
                                                       : c->network.source);
    } else if (wp_cluster_node_count(c) > 1) {
        fprintf(out, "inter-node network: not given (pass --network NAME,BANDWIDTH,LATENCY, "
                     "or measure it with wavepipe calibrate)\n");
    }
    if (c->intra_network.given) {
        char bw[32], lat[32];
        fprintf(out, "intra-node link between ranks (nodes without GPU links) \"%s\": %s, latency %s (%s)\n",
                c->intra_network.name, wp_format_bandwidth(c->intra_network.bandwidth_Bps, bw, sizeof bw),
                wp_format_time(c->intra_network.latency_s, lat, sizeof lat), c->intra_network.source);
    }
}
