/* One node's CPUs, GPUs, NICs and GPU interconnect as hwloc sees them:
 * GPUs are PCI functions with CUDA/NVML/RSMI/OpenCL OS devices (or GPU-class
 * PCI functions alone), the interconnect comes from hwloc's NVLinkBandwidth
 * or XGMIBandwidth matrices (NVSwitch ports merged) and otherwise from the
 * PCIe path, and each GPU gets its NUMA node and nearest fabric NIC. */
#include "topo/discover.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/strutil.h"

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_VENDOR_AMD 0x1002

/* A GPU found in the tree, before sorting into runtime order. */
struct gpu_found {
    hwloc_obj_t pci;
    int api_rank;  /* which OS device names the runtime index: lower is better */
    int api_number;
    struct wp_gpu gpu;
};

static const char *obj_info(hwloc_obj_t obj, const char *name)
{
    const char *v = hwloc_obj_get_info_by_name(obj, name);
    return v ? v : "";
}

/* The API an OS device belongs to: its subtype, its Backend info, its name. */
static const char *osdev_api(hwloc_obj_t os)
{
    if (os->subtype && *os->subtype)
        return os->subtype;
    const char *backend = obj_info(os, "Backend");
    if (*backend)
        return backend;
    if (strncmp(os->name, "card", 4) == 0 || strncmp(os->name, "renderD", 7) == 0)
        return "DRM";
    return "unknown";
}

static int is_gpu_osdev(hwloc_obj_t os)
{
    if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name) /* hwloc names every one it finds; a damaged XML may not */
        return 0;
    hwloc_obj_osdev_type_t t = os->attr->osdev.type;
    return t == HWLOC_OBJ_OSDEV_GPU || t == HWLOC_OBJ_OSDEV_COPROC;
}

static int is_net_osdev(hwloc_obj_t os)
{
    if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name) /* hwloc names every one it finds; a damaged XML may not */
        return 0;
    hwloc_obj_osdev_type_t t = os->attr->osdev.type;
    return t == HWLOC_OBJ_OSDEV_NETWORK || t == HWLOC_OBJ_OSDEV_OPENFABRICS;
}

static int is_nvswitch(hwloc_obj_t pci)
{
    if (pci->subtype && strcmp(pci->subtype, "NVSwitch") == 0)
        return 1;
    return pci->attr->pcidev.vendor_id == PCI_VENDOR_NVIDIA && pci->attr->pcidev.class_id == 0x0680;
}

/* GPU-class PCI function of a GPU vendor (display, 3D, accelerator). */
static int is_gpu_class_pci(hwloc_obj_t pci)
{
    unsigned cls = pci->attr->pcidev.class_id;
    unsigned vendor = pci->attr->pcidev.vendor_id;
    int gpu_class = (cls >> 8) == 0x03 || cls == 0x1200;
    return gpu_class && (vendor == PCI_VENDOR_NVIDIA || vendor == PCI_VENDOR_AMD);
}

static void busid(hwloc_obj_t pci, char *buf, size_t len)
{
    snprintf(buf, len, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
             pci->attr->pcidev.dev, pci->attr->pcidev.func);
}

static void append_csv(char *dst, size_t len, const char *item)
{
    if (strstr(dst, item) && *item)
        return;
    if (*dst)
        strncat(dst, ",", len - strlen(dst) - 1);
    strncat(dst, item, len - strlen(dst) - 1);
}

/* Trailing number of a name ("cuda3" -> 3, "opencl0d5" -> 5), -1 if none. */
static int trailing_number(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || !isdigit((unsigned char)name[n - 1]))
        return -1;
    while (n > 0 && isdigit((unsigned char)name[n - 1]))
        n--;
    return atoi(name + n);
}

/* Lower ranks name the device index the CUDA/ROCm runtime uses. */
static int api_rank(const char *api)
{
    static const char *const order[] = {"CUDA", "RSMI", "NVML", "LevelZero", "OpenCL", "DRM"};
    for (int i = 0; i < 6; i++)
        if (strcmp(api, order[i]) == 0)
            return i;
    return 6;
}

/* NUMA node (OS index) local to an I/O object, -1 when its CPU-side parent
 * spans several NUMA nodes. */
static int numa_of(hwloc_topology_t topo, hwloc_obj_t io)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, io);
    if (!anc || !anc->nodeset || hwloc_bitmap_weight(anc->nodeset) != 1)
        return -1;
    int logical = hwloc_bitmap_first(anc->nodeset);
    hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(topo, (unsigned)logical);
    return numa ? (int)numa->os_index : logical;
}

static int package_of(hwloc_topology_t topo, hwloc_obj_t io)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, io);
    hwloc_obj_t pkg = anc ? hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, anc) : NULL;
    if (!pkg && anc && anc->type == HWLOC_OBJ_PACKAGE)
        pkg = anc;
    return pkg ? (int)pkg->logical_index : -1;
}

static int is_host_bridge(hwloc_obj_t obj)
{
    return obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

/* Bridges strictly between obj and its ancestor top. */
static int bridges_below(hwloc_obj_t obj, hwloc_obj_t top)
{
    int n = 0;
    for (hwloc_obj_t o = obj->parent; o && o != top; o = o->parent)
        if (o->type == HWLOC_OBJ_BRIDGE)
            n++;
    return n;
}

/* Lowest common ancestor by parent links (hwloc's helper compares depths,
 * which are virtual for I/O objects). */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a; x; x = x->parent)
        for (hwloc_obj_t y = b; y; y = y->parent)
            if (x == y)
                return x;
    return NULL;
}

/* PCIe path class between two PCI functions, as nvidia-smi topo -m names it. */
static enum wp_link_kind pci_path(hwloc_topology_t topo, hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t common = common_ancestor(a, b);
    if (!common)
        return WP_LINK_SYS;
    if (common->type == HWLOC_OBJ_BRIDGE) {
        if (is_host_bridge(common))
            return WP_LINK_PHB;
        int depth = bridges_below(a, common);
        int depth_b = bridges_below(b, common);
        if (depth_b > depth)
            depth = depth_b;
        return depth <= 1 ? WP_LINK_PIX : WP_LINK_PXB;
    }
    if (common->type == HWLOC_OBJ_PCI_DEVICE)
        return WP_LINK_PIX;
    if (common->nodeset && hwloc_bitmap_weight(common->nodeset) == 1)
        return WP_LINK_NODE;
    int na = numa_of(topo, a), nb = numa_of(topo, b);
    return na >= 0 && na == nb ? WP_LINK_NODE : WP_LINK_SYS;
}

static double pcie_Bps(hwloc_obj_t pci)
{
    return (double)pci->attr->pcidev.linkspeed * 1e9;
}

static int cmp_gpu_found(const void *pa, const void *pb)
{
    const struct gpu_found *a = pa, *b = pb;
    if (a->api_rank != b->api_rank)
        return a->api_rank - b->api_rank;
    if (a->api_number != b->api_number)
        return a->api_number - b->api_number;
    return strcmp(a->gpu.pci_busid, b->gpu.pci_busid);
}

/* Describes GPU-class PCI functions and the OS devices below them. */
static int find_gpus(hwloc_topology_t topo, struct gpu_found **out, int *count,
                     struct wp_err *err)
{
    int cap = 8, n = 0;
    struct gpu_found *found = calloc((size_t)cap, sizeof *found);
    if (!found)
        return wp_errorf(err, "out of memory");
    for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, NULL); pci;
         pci = hwloc_get_next_pcidev(topo, pci)) {
        struct gpu_found f;
        memset(&f, 0, sizeof f);
        f.api_rank = 99;
        f.api_number = -1;
        int osdevs = 0;
        for (hwloc_obj_t os = pci->io_first_child; os; os = os->next_sibling) {
            if (!is_gpu_osdev(os))
                continue;
            const char *api = osdev_api(os);
            osdevs++;
            append_csv(f.gpu.apis, sizeof f.gpu.apis, api);
            append_csv(f.gpu.os_names, sizeof f.gpu.os_names, os->name);
            const char *model = obj_info(os, "GPUModel");
            if (*model && !f.gpu.model[0])
                wp_strlcpy(f.gpu.model, model, sizeof f.gpu.model);
            /* hwloc gives device memory in KiB */
            static const char *const memory_keys[] = {"CUDAGlobalMemorySize", "RSMIVRAMSize"};
            for (int k = 0; k < 2 && f.gpu.memory_bytes == 0; k++) {
                const char *kib = obj_info(os, memory_keys[k]);
                if (*kib)
                    f.gpu.memory_bytes = strtod(kib, NULL) * 1024.0;
            }
            int rank = api_rank(api);
            if (rank < f.api_rank) {
                f.api_rank = rank;
                f.api_number = trailing_number(os->name);
            }
        }
        if (osdevs == 0 && !is_gpu_class_pci(pci))
            continue;
        if (osdevs == 0)
            wp_strlcpy(f.gpu.apis, "PCI", sizeof f.gpu.apis);
        if (!f.gpu.model[0]) {
            const char *dev = obj_info(pci, "PCIDevice");
            if (*dev)
                wp_strlcpy(f.gpu.model, dev, sizeof f.gpu.model);
            else
                snprintf(f.gpu.model, sizeof f.gpu.model, "PCI %04x:%04x", pci->attr->pcidev.vendor_id,
                         pci->attr->pcidev.device_id);
        }
        f.pci = pci;
        busid(pci, f.gpu.pci_busid, sizeof f.gpu.pci_busid);
        f.gpu.numa_node = numa_of(topo, pci);
        f.gpu.package = package_of(topo, pci);
        f.gpu.pcie_Bps = pcie_Bps(pci);
        f.gpu.nic = -1;
        if (n == cap) {
            cap *= 2;
            struct gpu_found *grown = realloc(found, (size_t)cap * sizeof *found);
            if (!grown) {
                free(found);
                return wp_errorf(err, "out of memory");
            }
            found = grown;
        }
        found[n++] = f;
    }
    qsort(found, (size_t)n, sizeof *found, cmp_gpu_found);
    for (int i = 0; i < n; i++)
        found[i].gpu.index = i;
    *out = found;
    *count = n;
    return 0;
}

static void describe_nic(hwloc_obj_t pci, struct wp_nic *nic)
{
    char netdev[WP_NAME_MAX] = "", fabric_dev[WP_NAME_MAX] = "";
    for (hwloc_obj_t os = pci->io_first_child; os; os = os->next_sibling) {
        if (!is_net_osdev(os))
            continue;
        append_csv(nic->os_names, sizeof nic->os_names, os->name);
        if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !fabric_dev[0])
            wp_strlcpy(fabric_dev, os->name, sizeof fabric_dev);
        else if (!netdev[0])
            wp_strlcpy(netdev, os->name, sizeof netdev);
    }
    wp_strlcpy(nic->name, fabric_dev[0] ? fabric_dev : netdev, sizeof nic->name);
    if (strncmp(fabric_dev, "rdmap", 5) == 0 || strncmp(fabric_dev, "efa", 3) == 0) {
        wp_strlcpy(nic->kind, "EFA", sizeof nic->kind);
        nic->fabric = 1;
    } else if (fabric_dev[0]) {
        wp_strlcpy(nic->kind, strncmp(netdev, "ib", 2) == 0 ? "InfiniBand" : "RDMA", sizeof nic->kind);
        nic->fabric = 1;
    } else if (strncmp(netdev, "hsi", 3) == 0) {
        wp_strlcpy(nic->kind, "Slingshot", sizeof nic->kind);
        nic->fabric = 1;
    } else if (strncmp(netdev, "ib", 2) == 0) {
        wp_strlcpy(nic->kind, "IPoIB", sizeof nic->kind);
        nic->fabric = 1;
    } else {
        wp_strlcpy(nic->kind, "Ethernet", sizeof nic->kind);
    }
    busid(pci, nic->pci_busid, sizeof nic->pci_busid);
    nic->pcie_Bps = pcie_Bps(pci);
}

static int has_net_osdev(hwloc_obj_t pci)
{
    for (hwloc_obj_t os = pci->io_first_child; os; os = os->next_sibling)
        if (is_net_osdev(os))
            return 1;
    return 0;
}

/* The PCI function that owns a distance-matrix object (OS device or PCI). */
static hwloc_obj_t owning_pci(hwloc_obj_t obj)
{
    while (obj && obj->type == HWLOC_OBJ_OS_DEVICE)
        obj = obj->parent;
    return obj && obj->type == HWLOC_OBJ_PCI_DEVICE ? obj : NULL;
}

static int gpu_of_obj(const struct gpu_found *found, int n, hwloc_obj_t obj)
{
    hwloc_obj_t pci = owning_pci(obj);
    for (int i = 0; pci && i < n; i++)
        if (found[i].pci == pci)
            return i;
    return -1;
}

static int is_cpu_side(hwloc_obj_t obj)
{
    return obj->type == HWLOC_OBJ_PACKAGE || obj->type == HWLOC_OBJ_NUMANODE ||
           obj->type == HWLOC_OBJ_MACHINE || obj->type == HWLOC_OBJ_GROUP;
}

/* Fills links and per-GPU NVLink totals from one bandwidth matrix (MB/s). */
static void apply_bandwidth_matrix(hwloc_topology_t topo, const char *name,
                                   struct gpu_found *found, struct wp_node_type *t)
{
    unsigned nr = 1;
    struct hwloc_distances_s *d = NULL;
    if (hwloc_distances_get_by_name(topo, name, &nr, &d, 0) != 0 || nr == 0)
        return;
    int n = t->ngpus;
    enum wp_link_kind direct_kind = strcmp(name, "XGMIBandwidth") == 0 ? WP_LINK_XGMI : WP_LINK_NVLINK;
    int has_switch = 0;
    for (unsigned i = 0; i < d->nbobjs; i++) {
        hwloc_obj_t oi = d->objs[i];
        if (oi->type == HWLOC_OBJ_PCI_DEVICE && is_nvswitch(oi))
            has_switch = 1;
        int gi = gpu_of_obj(found, n, oi);
        if (gi < 0)
            continue;
        for (unsigned j = 0; j < d->nbobjs; j++) {
            if (j == i)
                continue;
            double Bps = (double)d->values[i * d->nbobjs + j] * 1e6;
            if (Bps <= 0)
                continue;
            t->gpus[gi].nvlink_Bps += Bps;
            if (is_cpu_side(d->objs[j]))
                t->gpus[gi].cpu_link_Bps += Bps;
            int gj = gpu_of_obj(found, n, d->objs[j]);
            if (gj >= 0 && gj != gi) {
                t->link_kind[gi * n + gj] = direct_kind;
                t->link_Bps[gi * n + gj] = Bps;
            }
        }
    }
    if (has_switch &&
        hwloc_distances_transform(topo, d, HWLOC_DISTANCES_TRANSFORM_MERGE_SWITCH_PORTS, NULL, 0) == 0 &&
        hwloc_distances_transform(topo, d, HWLOC_DISTANCES_TRANSFORM_TRANSITIVE_CLOSURE, NULL, 0) == 0) {
        for (unsigned i = 0; i < d->nbobjs; i++) {
            int gi = gpu_of_obj(found, n, d->objs[i]);
            for (unsigned j = 0; gi >= 0 && j < d->nbobjs; j++) {
                int gj = gpu_of_obj(found, n, d->objs[j]);
                double Bps = (double)d->values[i * d->nbobjs + j] * 1e6;
                if (gj < 0 || gj == gi || Bps <= 0 || t->link_kind[gi * n + gj] == direct_kind)
                    continue;
                t->link_kind[gi * n + gj] = WP_LINK_NVSWITCH;
                t->link_Bps[gi * n + gj] = Bps;
            }
        }
    }
    wp_strlcpy(t->gpu_matrix, name, sizeof t->gpu_matrix);
    hwloc_distances_release(topo, d);
}

/* hwloc's XML import crashes on some damaged files (hwloc 2.9.0: SEGV in
 * its bitmap code under hwloc_topology_load; `lstopo --input` does too,
 * tests/fuzz/README.md): a child process loads the file first, so that such
 * a file is one clear error here instead of a crash. Only XML goes this way
 * (the --xml path, a single process: no MPI to fork under). */
static int xml_survives_hwloc(const char *xml_path, struct wp_err *err)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 0; /* no child to spare: load it in this process as before */
    if (pid == 0) {
        /* die of the fault quietly: the parent says it (a library's handler, UCX's, would print a backtrace) */
        static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
        for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
            signal(faults[i], SIG_DFL);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO);
        hwloc_topology_t t;
        int ok = hwloc_topology_init(&t) == 0;
        if (ok) {
            hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
            ok = hwloc_topology_set_xml(t, xml_path) == 0 && hwloc_topology_load(t) == 0;
            hwloc_topology_destroy(t);
        }
        _exit(ok ? 0 : 1);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 0;
    if (WIFSIGNALED(st))
        return wp_errorf(err, "%s: hwloc crashed reading it (signal %d): a damaged XML export? (`lstopo --input %s` "
                         "reads it the same way)", xml_path, WTERMSIG(st), xml_path);
    return 0; /* loaded, or refused: the load below says how */
}

static int load_topology(hwloc_topology_t *topo, const char *xml_path, struct wp_err *err)
{
    if (xml_path && access(xml_path, R_OK) == 0 && xml_survives_hwloc(xml_path, err))
        return -1;
    if (hwloc_topology_init(topo) != 0)
        return wp_errorf(err, "hwloc_topology_init failed");
    hwloc_topology_set_io_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (xml_path) {
        if (access(xml_path, R_OK) != 0) {
            int saved = errno;
            hwloc_topology_destroy(*topo);
            return wp_errorf(err, "cannot read %s: %s", xml_path, strerror(saved));
        }
        if (hwloc_topology_set_xml(*topo, xml_path) != 0) {
            hwloc_topology_destroy(*topo);
            return wp_errorf(err, "%s: not an hwloc XML export", xml_path);
        }
    }
    if (hwloc_topology_load(*topo) != 0) {
        hwloc_topology_destroy(*topo);
        return wp_errorf(err, "%s: hwloc could not load the topology",
                         xml_path ? xml_path : "this machine");
    }
    return 0;
}

static void name_and_source(const char *xml_path, struct wp_node_type *t)
{
    const char *env_xml = getenv("HWLOC_XMLFILE");
    const char *xml = xml_path ? xml_path : (env_xml && *env_xml ? env_xml : NULL);
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    if (xml) {
        const char *base = strrchr(xml, '/');
        base = base ? base + 1 : xml;
        wp_strlcpy(t->name, base, sizeof t->name);
        char *dot = strstr(t->name, ".xml");
        if (dot)
            *dot = '\0';
        snprintf(t->source, sizeof t->source, "hwloc XML %s%s (recorded topology, emulated)", xml,
                 xml_path ? "" : " via HWLOC_XMLFILE");
        t->emulated = 1;
    } else {
        wp_strlcpy(t->name, host, sizeof t->name);
        snprintf(t->source, sizeof t->source, "live hwloc on %s", host);
    }
}

int wp_discover_node(const char *xml_path, struct wp_node_type *t, struct wp_err *err)
{
    hwloc_topology_t topo;
    memset(t, 0, sizeof *t);
    if (load_topology(&topo, xml_path, err))
        return -1;
    name_and_source(xml_path, t);
    t->count = 1;
    t->packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    t->numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    t->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    t->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    t->memory_bytes = hwloc_get_root_obj(topo)->total_memory;

    struct gpu_found *found = NULL;
    int ngpus = 0, nnics = 0;
    if (find_gpus(topo, &found, &ngpus, err)) {
        hwloc_topology_destroy(topo);
        return -1;
    }
    for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, NULL); pci; pci = hwloc_get_next_pcidev(topo, pci)) {
        if (is_nvswitch(pci))
            t->nvswitches++;
        else if (has_net_osdev(pci))
            nnics++;
    }
    hwloc_obj_t *nic_pci = calloc((size_t)nnics + 1, sizeof *nic_pci);
    if (!nic_pci || wp_node_type_alloc(t, ngpus, nnics, err)) {
        free(nic_pci);
        free(found);
        hwloc_topology_destroy(topo);
        return nic_pci ? -1 : wp_errorf(err, "out of memory");
    }
    int k = 0;
    for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, NULL); pci; pci = hwloc_get_next_pcidev(topo, pci)) {
        if (is_nvswitch(pci) || !has_net_osdev(pci))
            continue;
        describe_nic(pci, &t->nics[k]);
        t->nics[k].numa_node = numa_of(topo, pci);
        nic_pci[k++] = pci;
    }
    int any_fabric = 0;
    for (int i = 0; i < nnics; i++)
        any_fabric |= t->nics[i].fabric;
    for (int g = 0; g < ngpus; g++) {
        t->gpus[g] = found[g].gpu;
        /* Nearest NIC: the shortest PCIe path, among fabric NICs when the node
         * has any (a management Ethernet port is not where traffic goes). */
        int best = -1, best_distance = 1 << 30;
        for (int i = 0; i < nnics; i++) {
            if (any_fabric && !t->nics[i].fabric)
                continue;
            /* Ties between equal path classes go to a NIC in the same package. */
            enum wp_link_kind path = pci_path(topo, found[g].pci, nic_pci[i]);
            int distance = 2 * (int)path + (package_of(topo, nic_pci[i]) != found[g].gpu.package);
            if (distance < best_distance) {
                best_distance = distance;
                best = i;
            }
        }
        t->gpus[g].nic = best;
        t->gpus[g].nic_path = best >= 0 ? (enum wp_link_kind)(best_distance / 2) : WP_LINK_SYS;
    }
    for (int a = 0; a < ngpus; a++) {
        for (int b = 0; b < ngpus; b++) {
            if (a == b)
                continue;
            t->link_kind[a * ngpus + b] = pci_path(topo, found[a].pci, found[b].pci);
            double bw = found[a].gpu.pcie_Bps < found[b].gpu.pcie_Bps ? found[a].gpu.pcie_Bps
                                                                      : found[b].gpu.pcie_Bps;
            t->link_Bps[a * ngpus + b] = bw;
        }
    }
    wp_strlcpy(t->gpu_matrix, "PCIe", sizeof t->gpu_matrix);
    if (ngpus > 0) {
        apply_bandwidth_matrix(topo, "NVLinkBandwidth", found, t);
        apply_bandwidth_matrix(topo, "XGMIBandwidth", found, t);
    }
    free(nic_pci);
    free(found);
    hwloc_topology_destroy(topo);
    return 0;
}
