/*
 * GPUDirect RDMA: can a NIC of this node read and write GPU memory, so that
 * device data between nodes need not pass through host memory?
 *
 * Two kernel paths exist.  The peer-memory API of MLNX_OFED, which NVIDIA's
 * nvidia_peermem (formerly nv_peer_mem) plugs into and which announces
 * itself in /sys/kernel/mm/memory_peers/nv_mem/; UCX 1.13 enables GPU
 * memory registration on its InfiniBand transports exactly when that file
 * exists (uct_ib_md_open_common).  And dma-buf: the GPU driver exports
 * device memory as a dma-buf, rdma-core registers it (ibv_reg_dmabuf_mr,
 * rdma-core 34+), UCX 1.14+ asks for it.  Strata itself moves device data
 * between nodes through host memory on either (README, "CUDA-aware MPI
 * with Strata").  Nothing here is needed for CUDA-aware MPI, so the worst
 * a line says is WARN: the pieces are facts (INFO when absent), and one
 * verdict line says what they mean together.
 */
#include "strata_config.h"
#include "strata_info.h"
#include "strata_cuda.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef STRATA_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

#define STRATA_INFO_NV_MEM_VERSION     "/sys/kernel/mm/memory_peers/nv_mem/version"
#define STRATA_INFO_NVIDIA_PEERMEM     "/sys/module/nvidia_peermem"
#define STRATA_INFO_SYSFS_INFINIBAND   "/sys/class/infiniband"

static void strata_info_rdma_add(strata_info_t *info, const char *name, int active)
{
    strata_info_rdma_dev_t *dev;

    if (info->num_rdma == STRATA_INFO_MAX_RDMA) {
        return;
    }
    dev = &info->rdma[info->num_rdma++];
    snprintf(dev->name, sizeof(dev->name), "%s", name);
    dev->active = active;
}

/* Appends "name (port 1 ACTIVE InfiniBand)" to a list. */
static void strata_info_rdma_describe(char *list, size_t max, const char *name, const char *ports)
{
    size_t used = strlen(list);

    if (used < max) {
        snprintf(list + used, max - used, "%s%s (%s)", (used > 0) ? ", " : "", name, ports);
    }
}

#ifdef STRATA_HAVE_VERBS
/* Port states as the provider reports them. */
static int strata_info_rdma_ports_verbs(struct ibv_device *device, char *ports, size_t max)
{
    struct ibv_device_attr dev_attr;
    struct ibv_port_attr port_attr;
    struct ibv_context *ctx;
    size_t used = 0;
    int active  = 0;
    uint8_t port;

    ctx = ibv_open_device(device);
    if (ctx == NULL) {
        snprintf(ports, max, "cannot open it");
        return 0;
    }
    if (ibv_query_device(ctx, &dev_attr) != 0) {
        dev_attr.phys_port_cnt = 0;
    }
    ports[0] = '\0';
    for (port = 1; (port <= dev_attr.phys_port_cnt) && (used < max); ++port) {
        if (ibv_query_port(ctx, port, &port_attr) != 0) {
            continue;
        }
        active |= (port_attr.state == IBV_PORT_ACTIVE);
        used += (size_t)snprintf(ports + used, max - used, "%sport %u %s %s",
                                 (used > 0) ? ", " : "", port,
                                 ibv_port_state_str(port_attr.state),
                                 (port_attr.link_layer == IBV_LINK_LAYER_ETHERNET)
                                         ? "Ethernet (RoCE)"
                                         : "InfiniBand");
    }
    ibv_close_device(ctx);
    return active;
}

static void strata_info_rdma_list(strata_info_t *info, char *list, size_t max)
{
    struct ibv_device **devices;
    char ports[256];
    int num = 0, i;

    devices = ibv_get_device_list(&num);
    if (devices == NULL) {
        return;
    }
    for (i = 0; i < num; ++i) {
        int active = strata_info_rdma_ports_verbs(devices[i], ports, sizeof(ports));

        strata_info_rdma_add(info, ibv_get_device_name(devices[i]), active);
        strata_info_rdma_describe(list, max, ibv_get_device_name(devices[i]), ports);
    }
    ibv_free_device_list(devices);
}
#else
/* Without verbs: the devices sysfs lists, a port counted up if its state
 * file says ACTIVE. */
static int strata_info_rdma_ports_sysfs(const char *name, char *ports, size_t max)
{
    char path[512], state[64];
    int port, active = 0;
    size_t used = 0;

    ports[0] = '\0';
    for (port = 1; port <= 8; ++port) {
        FILE *f;

        snprintf(path, sizeof(path), STRATA_INFO_SYSFS_INFINIBAND "/%s/ports/%d/state", name, port);
        f = fopen(path, "r");
        if (f == NULL) {
            break;
        }
        if (fgets(state, sizeof(state), f) != NULL) {
            state[strcspn(state, "\n")] = '\0';
            active |= (strstr(state, "ACTIVE") != NULL);
            used += (size_t)snprintf(ports + used, (used < max) ? max - used : 0, "%sport %d %s",
                                     (used > 0) ? ", " : "", port, state);
        }
        fclose(f);
    }
    return active;
}

static void strata_info_rdma_list(strata_info_t *info, char *list, size_t max)
{
    struct dirent *entry;
    char ports[256];
    DIR *dir;
    int active;

    dir = opendir(STRATA_INFO_SYSFS_INFINIBAND);
    if (dir == NULL) {
        return;
    }
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') {
            continue;
        }
        active = strata_info_rdma_ports_sysfs(entry->d_name, ports, sizeof(ports));
        strata_info_rdma_add(info, entry->d_name, active);
        strata_info_rdma_describe(list, max, entry->d_name, ports);
    }
    closedir(dir);
}
#endif

static void strata_info_check_rdma_devices(strata_info_t *info)
{
    char list[1024] = "";
    int i;

    strata_info_rdma_list(info, list, sizeof(list));
    for (i = 0; i < info->num_rdma; ++i) {
        info->rdma_up |= info->rdma[i].active;
    }
    if (info->num_rdma == 0) {
        strata_info_line(info, STRATA_INFO_NOTE, "RDMA devices",
                         "none (%s is empty or absent): jobs across nodes go over TCP",
                         STRATA_INFO_SYSFS_INFINIBAND);
        return;
    }
    strata_info_line(info, info->rdma_up ? STRATA_INFO_OK : STRATA_INFO_WARN,
                     "RDMA devices", "%s%s%s", list,
#ifdef STRATA_HAVE_VERBS
                     "",
#else
                     " (port states from sysfs: this strata_info was built without verbs)",
#endif
                     info->rdma_up ? "" : "; no port is up: TCP between nodes");
}

static int strata_info_check_peer_memory(strata_info_t *info)
{
    char version[64] = "";
    int nv_mem, peermem;
    FILE *f;

    f = fopen(STRATA_INFO_NV_MEM_VERSION, "r");
    nv_mem = (f != NULL);
    if (f != NULL) {
        if (fgets(version, sizeof(version), f) != NULL) {
            version[strcspn(version, "\n")] = '\0';
        }
        fclose(f);
    }
    peermem = (access(STRATA_INFO_NVIDIA_PEERMEM, F_OK) == 0);
    if (nv_mem) {
        strata_info_line(info, STRATA_INFO_OK, "peer memory",
                         "nv_mem %s (%s)%s", version, STRATA_INFO_NV_MEM_VERSION,
                         peermem ? ", nvidia_peermem loaded" : "");
    } else {
        strata_info_line(info, STRATA_INFO_NOTE, "peer memory",
                         "no %s (MLNX_OFED's peer memory with nvidia_peermem)%s",
                         STRATA_INFO_NV_MEM_VERSION,
                         peermem ? "; nvidia_peermem is loaded, but without MLNX_OFED's peer "
                                   "memory API UCX 1.13 does not see it"
                                 : "; nvidia_peermem not loaded");
    }
    return nv_mem;
}

static int strata_info_check_dmabuf(strata_info_t *info)
{
    void *verbs = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    int rdma_core, gpu = 0, i, supported;
    char gpus[256] = "";
    size_t used = 0;
    CUdevice dev;

    rdma_core = (verbs != NULL) && (dlsym(verbs, "ibv_reg_dmabuf_mr") != NULL);
    if (verbs == NULL) {
        strata_info_line(info, STRATA_INFO_NOTE, "dma-buf (rdma-core)",
                         "libibverbs.so.1 not loadable: %s", dlerror());
    } else {
        strata_info_line(info, rdma_core ? STRATA_INFO_OK : STRATA_INFO_NOTE,
                         "dma-buf (rdma-core)", "libibverbs.so.1 %s ibv_reg_dmabuf_mr",
                         rdma_core ? "exports" : "is older than rdma-core 34: no");
    }
    for (i = 0; i < info->num_gpus; ++i) {
        supported = 0;
        if ((strata_cuda.cuDeviceGet(&dev, i) == CUDA_SUCCESS) &&
            (strata_cuda.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
                                              dev) == CUDA_SUCCESS) &&
            supported && (used < sizeof(gpus))) {
            used += (size_t)snprintf(gpus + used, sizeof(gpus) - used, "%s%d",
                                     (used > 0) ? "," : "", i);
            gpu = 1;
        }
    }
    if (info->num_gpus > 0) {
        strata_info_line(info, gpu ? STRATA_INFO_OK : STRATA_INFO_NOTE,
                         "dma-buf (GPU)", gpu ? "GPU %s can export memory as dma-buf"
                                              : "the driver reports no GPU that exports dma-buf%s",
                         gpu ? gpus : " (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)");
    }
    return rdma_core && gpu;
}

/* The verdict: what happens to device data between nodes. */
static void strata_info_check_gpudirect(strata_info_t *info, int nv_mem, int dmabuf)
{
    const unsigned *v = info->ucx_version;
    int ucx_dmabuf    = (v[0] > 1) || ((v[0] == 1) && (v[1] >= 14));

    if (!info->rdma_up) {
        strata_info_line(info, STRATA_INFO_NOTE, "GPUDirect RDMA",
                         "no RDMA port up: device data between nodes is staged through host "
                         "memory over TCP");
        return;
    }
    if (nv_mem) {
        strata_info_line(info, STRATA_INFO_OK, "GPUDirect RDMA",
                         "UCX's InfiniBand transports register GPU memory through nv_mem "
                         "(UCX_IB_GPU_DIRECT_RDMA=try); not yet tested with Strata");
        return;
    }
    if (!info->ucx_loaded) {
        strata_info_line(info, STRATA_INFO_WARN, "GPUDirect RDMA",
                         "no nv_mem, and UCX did not load (see Versions)");
        return;
    }
    if (!ucx_dmabuf) {
        strata_info_line(info, STRATA_INFO_WARN, "GPUDirect RDMA",
                         "not available: UCX %u.%u.%u cannot register GPU memory through dma-buf "
                         "(UCX 1.14+ can), so it needs the peer-memory stack (MLNX_OFED with "
                         "nvidia_peermem: nv_mem), absent here. Device data between nodes is "
                         "staged through host memory",
                         v[0], v[1], v[2]);
        return;
    }
    if (!dmabuf) {
        strata_info_line(info, STRATA_INFO_WARN, "GPUDirect RDMA",
                         "not available: UCX %u.%u and Strata's gpu_copy domain register GPU "
                         "memory through dma-buf, but rdma-core or the GPU driver here cannot "
                         "(see the dma-buf lines). Device data between nodes is staged through "
                         "host memory",
                         v[0], v[1]);
        return;
    }
    strata_info_line(info, STRATA_INFO_OK, "GPUDirect RDMA",
                     "UCX %u.%u registers GPU memory with the NIC through dma-buf, which "
                     "Strata's gpu_copy domain exports (rdma-core and GPU can); not yet "
                     "measured on a GPU cluster",
                     v[0], v[1]);
}

void strata_info_check_rdma(strata_info_t *info)
{
    int nv_mem, dmabuf;

    strata_info_section(info, "GPUDirect RDMA");
    strata_info_check_rdma_devices(info);
    nv_mem = strata_info_check_peer_memory(info);
    dmabuf = strata_info_check_dmabuf(info);
    strata_info_check_gpudirect(info, nv_mem, dmabuf);
    strata_info_check_locality(info);
}
