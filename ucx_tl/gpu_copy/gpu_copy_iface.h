/*
 * gpu_copy: copies between host and GPU memory inside one process.
 *
 * UCP 1.13 moves device buffers through "memory type" endpoints: a loopback
 * endpoint on a transport whose memory domain can access CUDA memory.  It
 * packs and unpacks with put_short/get_short and runs the rendezvous
 * pipeline's host-fragment copies with put_zcopy/get_zcopy.  gpu_copy is that
 * transport for Strata's "gpu_copy" memory domain.
 *
 * Short operations copy synchronously on their own stream.  Zero-copy
 * operations are queued on one stream per direction of the base interface
 * (base/gpu_base_iface.h), each followed by an event from its pool; its
 * progress completes them in the order they were posted on each queue.
 * With UCX >= 1.16, and 1.13 with UCX_PROTO_ENABLE=y, whose protocols
 * cannot wait for a refused copy (UCT_STRATA_MTYPE_COPY_CAN_REFUSE()), no
 * copy is refused: there UCX_GPU_COPY_MAX_EVENTS is a soft limit.
 */
#ifndef UCT_GPU_COPY_IFACE_H
#define UCT_GPU_COPY_IFACE_H

#include "../base/gpu_base_iface.h"

#define UCT_GPU_COPY_TL_NAME "gpu_copy"

/*
 * Queues (streams) are kept per direction so that a large host-to-device
 * copy does not hold back a device-to-host copy of the other half of a
 * pipeline (the copy engines run the two directions in parallel).  The
 * index is (source is GPU memory) << 1 | (destination is GPU memory).
 */
typedef enum uct_gpu_copy_dir {
    UCT_GPU_COPY_DIR_H2H,
    UCT_GPU_COPY_DIR_H2D,
    UCT_GPU_COPY_DIR_D2H,
    UCT_GPU_COPY_DIR_D2D,
    UCT_GPU_COPY_DIR_LAST
} uct_gpu_copy_dir_t;

/* Identifies the process: gpu_copy reaches only memory of its own process. */
typedef struct uct_gpu_copy_iface_addr {
    uint64_t process_id;
} UCS_S_PACKED uct_gpu_copy_iface_addr_t;

/* Identifies the host (ucs_get_system_id()). */
typedef struct uct_gpu_copy_device_addr {
    uint64_t system_id;
} UCS_S_PACKED uct_gpu_copy_device_addr_t;

typedef struct uct_gpu_copy_iface_config {
    uct_gpu_base_iface_config_t super;
    double bandwidth;
    double d2d_bandwidth;
    double latency;
    size_t short_bounce; /* UCX_GPU_COPY_SHORT_BOUNCE */
} uct_gpu_copy_iface_config_t;

typedef struct uct_gpu_copy_iface {
    uct_gpu_base_iface_t super; /* queues[uct_gpu_copy_dir_t] */
    uint64_t process_id;
    CUstream short_stream;
    /* Pinned staging for short copies (config.short_bounce bytes, allocated
     * at the first one): the host side of UCP's packing is its own pageable
     * message buffer, which the driver would stage on every copy. */
    void *short_bounce;
    struct {
        double bandwidth;
        double d2d_bandwidth;
        double latency;
        size_t short_bounce;
    } config;
} uct_gpu_copy_iface_t;

/* The transport, for the component to register. */
extern uct_tl_t UCT_TL_NAME(gpu_copy);

#endif /* UCT_GPU_COPY_IFACE_H */
