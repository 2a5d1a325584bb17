/*
 * GPU-NIC locality, from hwloc's topology: for each GPU the nearest RDMA
 * device and the path between them (the classes nvidia-smi topo -m names
 * PIX/PXB, PHB, NODE, SYS).  GPUDirect RDMA across CPU sockets is slower
 * than staging through host memory on many machines, so that is a WARN.
 * Optional: without hwloc at build time the tool says it could not check.
 */
#include "strata_config.h"
#include "strata_info.h"

#include <stdio.h>
#include <string.h>

#ifdef STRATA_HAVE_HWLOC
#include <hwloc.h>

typedef enum strata_info_path {
    STRATA_INFO_PATH_SWITCH = 0, /* behind the same PCIe switch */
    STRATA_INFO_PATH_HOST_BRIDGE, /* through the same host bridge */
    STRATA_INFO_PATH_SOCKET,      /* through the CPU: one socket */
    STRATA_INFO_PATH_SYSTEM,      /* across CPU sockets */
} strata_info_path_t;

static const char *const strata_info_path_names[] = {
    [STRATA_INFO_PATH_SWITCH]      = "behind the same PCIe switch",
    [STRATA_INFO_PATH_HOST_BRIDGE] = "on the same PCIe host bridge",
    [STRATA_INFO_PATH_SOCKET]      = "through the CPU, same socket",
    [STRATA_INFO_PATH_SYSTEM]      = "across CPU sockets",
};

/* hwloc's own common-ancestor helper does not walk I/O objects. */
static hwloc_obj_t strata_info_topo_common(hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t p, q;

    for (p = a; p != NULL; p = p->parent) {
        for (q = b; q != NULL; q = q->parent) {
            if (p == q) {
                return p;
            }
        }
    }
    return NULL;
}

static strata_info_path_t strata_info_topo_path(hwloc_obj_t gpu, hwloc_obj_t nic)
{
    hwloc_obj_t common = strata_info_topo_common(gpu, nic);
    hwloc_obj_t p;

    if (common == NULL) {
        return STRATA_INFO_PATH_SYSTEM;
    }
    if ((common->type == HWLOC_OBJ_PCI_DEVICE) ||
        ((common->type == HWLOC_OBJ_BRIDGE) &&
         (common->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI))) {
        return STRATA_INFO_PATH_SWITCH;
    }
    if (common->type == HWLOC_OBJ_BRIDGE) {
        return STRATA_INFO_PATH_HOST_BRIDGE;
    }
    for (p = common; p != NULL; p = p->parent) {
        if (p->type == HWLOC_OBJ_PACKAGE) {
            return STRATA_INFO_PATH_SOCKET;
        }
    }
    return STRATA_INFO_PATH_SYSTEM;
}

/* The PCI device of RDMA device `name` (an OpenFabrics OS device). */
static hwloc_obj_t strata_info_topo_nic(hwloc_topology_t topo, const char *name)
{
    hwloc_obj_t osdev = NULL;

    while ((osdev = hwloc_get_next_osdev(topo, osdev)) != NULL) {
        if ((osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) && (osdev->name != NULL) &&
            !strcmp(osdev->name, name)) {
            return osdev->parent;
        }
    }
    return NULL;
}

static void strata_info_topo_gpu(strata_info_t *info, hwloc_topology_t topo, int ordinal)
{
    strata_info_path_t path, best = STRATA_INFO_PATH_SYSTEM;
    const char *best_name = NULL;
    hwloc_obj_t gpu, nic;
    char item[32];
    int i;

    snprintf(item, sizeof(item), "GPU %d locality", ordinal);
    gpu = hwloc_get_pcidev_by_busidstring(topo, info->gpus[ordinal].bus_id);
    if (gpu == NULL) {
        strata_info_line(info, STRATA_INFO_NOTE, item,
                         "not checked: hwloc does not know PCI device %s",
                         info->gpus[ordinal].bus_id);
        return;
    }
    for (i = 0; i < info->num_rdma; ++i) {
        nic = strata_info_topo_nic(topo, info->rdma[i].name);
        if (nic == NULL) {
            continue;
        }
        path = strata_info_topo_path(gpu, nic);
        if ((best_name == NULL) || (path < best)) {
            best      = path;
            best_name = info->rdma[i].name;
        }
    }
    if (best_name == NULL) {
        strata_info_line(info, STRATA_INFO_NOTE, item,
                         "not checked: hwloc places none of the RDMA devices on the PCI bus");
        return;
    }
    strata_info_line(info, (best == STRATA_INFO_PATH_SYSTEM) ? STRATA_INFO_WARN : STRATA_INFO_OK,
                     item, "nearest RDMA device %s, %s%s", best_name, strata_info_path_names[best],
                     (best == STRATA_INFO_PATH_SYSTEM)
                             ? ": traffic between this GPU and the network crosses the CPUs' "
                               "interconnect"
                             : "");
}

static void strata_info_topo_check(strata_info_t *info)
{
    hwloc_topology_t topo;
    int i;

    if (hwloc_topology_init(&topo) != 0) {
        strata_info_line(info, STRATA_INFO_NOTE, "GPU-NIC locality",
                         "not checked: hwloc_topology_init failed");
        return;
    }
    (void)hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        strata_info_line(info, STRATA_INFO_NOTE, "GPU-NIC locality",
                         "not checked: hwloc cannot read this node's topology");
        hwloc_topology_destroy(topo);
        return;
    }
    for (i = 0; i < info->num_gpus; ++i) {
        strata_info_topo_gpu(info, topo, i);
    }
    hwloc_topology_destroy(topo);
}
#endif

void strata_info_check_locality(strata_info_t *info)
{
    if ((info->num_rdma == 0) || (info->num_gpus == 0)) {
        strata_info_line(info, STRATA_INFO_NOTE, "GPU-NIC locality", "not checked: no %s",
                         (info->num_rdma == 0) ? "RDMA device" : "usable GPU");
        return;
    }
#ifdef STRATA_HAVE_HWLOC
    strata_info_topo_check(info);
#else
    strata_info_line(info, STRATA_INFO_NOTE, "GPU-NIC locality",
                     "could not check: this strata_info was built without hwloc "
                     "(install libhwloc-dev and reconfigure)");
#endif
}
