/*
 * The gpu_ipc transport: zero-copy put/get between processes of one node,
 * device to device, through peer allocations mapped by the gpu_ipc domain.
 *
 * A put or get is one cuMemcpyDtoDAsync on one of the interface's queues
 * (streams of the base interface, base/gpu_base_iface.h), followed by an
 * event; the base's progress completes operations in issue order per
 * stream when their events have fired.  Each endpoint is
 * given one stream (round-robin over MAX_STREAMS at creation), so transfers
 * to different peers overlap while an endpoint's own operations stay in
 * order, which is what lets an endpoint flush by queueing a marker behind
 * them.
 */
#ifndef UCT_GPU_IPC_IFACE_H
#define UCT_GPU_IPC_IFACE_H

#include "../base/gpu_base_iface.h"
#include "gpu_ipc_cache.h"
#include "gpu_ipc_detour.h"
#include "gpu_ipc_stage.h"

#define UCT_GPU_IPC_TL_NAME         "gpu_ipc"
#define UCT_GPU_IPC_MAX_STREAMS_CAP 64

typedef struct uct_gpu_ipc_iface_config {
    uct_gpu_base_iface_config_t super;
    unsigned max_streams;
    double bandwidth; /* "auto" (UCT_STRATA_CONFIG_BW_IS_AUTO): estimated from the GPU links */
    double latency;
    double overhead;
    size_t bounce_size;    /* UCX_GPU_IPC_BOUNCE_SIZE */
    unsigned bounce_count; /* UCX_GPU_IPC_BOUNCE_COUNT */
    size_t shared_detour;  /* UCX_GPU_IPC_SHARED_DETOUR */
} uct_gpu_ipc_iface_config_t;

/* A copy in flight, or an endpoint flush marker. */
typedef struct uct_gpu_ipc_op {
    uct_gpu_base_op_t super;
    /* The peer mapping a copy reads or writes, referenced until its event
     * has fired: the rkey may be released, and the cache may evict, while
     * the copy runs.  NULL for flush markers. */
    uct_gpu_ipc_cache_entry_t *mapping;
    /* A copy on the detour (gpu_ipc_detour.h): its slot + 1, released at
     * completion; 0 for the others. */
    unsigned detour_held;
    struct uct_gpu_ipc_detour *detour;
} uct_gpu_ipc_op_t;

typedef struct uct_gpu_ipc_iface {
    uct_gpu_base_iface_t super; /* queues[MAX_STREAMS] */
    unsigned next_stream;       /* for the next endpoint */
    struct {
        double bandwidth;
        double latency;
        double overhead;
    } config;
    uct_gpu_ipc_stage_t stage;   /* copies to and from peers' host memory */
    uct_gpu_ipc_detour_t detour; /* small copies within a GPU shared without MPS */
    int mps;                     /* the device's contexts are shared through MPS */
    int host_keys;               /* the domain registers host memory (IPC_HOST) */
} uct_gpu_ipc_iface_t;

/* The transport, for the component to register. */
extern uct_tl_t UCT_TL_NAME(gpu_ipc);

#endif /* UCT_GPU_IPC_IFACE_H */
