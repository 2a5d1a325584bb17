/*
 * coll/strata base: the settings a communicator runs with, the one type
 * every room reads them through (the component holds this process's
 * values, each module its agreed copy: comm/coll_strata_settings.c).
 *
 * May include: logic/'s interface.  Nothing else of ompi_coll.
 */
#ifndef MCA_COLL_STRATA_SETTINGS_H
#define MCA_COLL_STRATA_SETTINGS_H

#include <stddef.h>

#include "../logic/coll_strata_logic.h"

/*
 * The coll_strata settings that shape what a rank sends or which collectives
 * it calls: ranks deciding from different values would run different
 * exchanges and wait for each other.  The component holds this process's
 * values (MCA parameters); every communicator runs with its own copy,
 * agreed across its ranks at its first collective that reads one
 * (comm/coll_strata_settings.c): rank 0's value of each, where they differ.
 */
typedef struct mca_coll_strata_settings_t {
    /* decision knobs: algorithm overrides and thresholds (and the derived
     * network figures, alpha/beta/overhead, from the three below) */
    mca_coll_strata_decision_params_t decision;
    /* the inter-node cost model's network (0: measured at set-up) */
    double inter_latency_us;
    double inter_bandwidth_gbs;
    double inter_overhead_us; /* decision.overhead; 0: measured with alpha */
    size_t inter_eager_max;   /* decision.eager_max; 0: from the pml */
    /* bytes of one pipeline chunk (the whole vector moves chunk by chunk) */
    size_t segment_size;
    /* the same on the GPUs (the native device path's chunks, in device
     * memory: HBM wants far larger pieces than host shared memory) */
    size_t device_segment_size;
    /* chunks in flight per communicator (shared-memory slots) */
    int shm_slots;
    /* bytes of pinned host memory a communicator keeps for staging device
     * buffers; larger reductions and broadcasts run in pieces */
    size_t stage_max;
    /* device allreduce: MCA_COLL_STRATA_DEVICE_ALG_*, and the bytes from
     * which `auto` runs it on the GPUs */
    int device_algorithm;
    size_t device_native_min;
    /* 1: native device calls queued whole on the GPU; 0: the host drives */
    int device_queue;
    /* 1: device calls within a node read and write the ranks' buffers
     * directly (CUDA IPC), where every rank's can be exported; 0: through
     * the device scratch areas */
    int device_direct;
    /* bytes from which MPI_Reduce runs on strata's pipeline (below, the
     * module below strata: its tree lets non-roots return at once) */
    size_t reduce_min;
    /* MPI_Bcast and MPI_Allgather on strata's pipeline: MCA_COLL_STRATA_COPY_*,
     * and the bytes (the vector; the gathered vector) from which `auto`
     * runs them there */
    int bcast_algorithm;
    size_t bcast_min;
    int allgather_algorithm;
    size_t allgather_min;
    /* compression between nodes on communicators without the info key
     * strata_compress (MCA_COLL_STRATA_CODEC_*), and the bytes from which
     * it applies */
    int compress;
    size_t compress_min;
} mca_coll_strata_settings_t;

/* Bytes of one chunk of the native device path: device_segment_size
 * rounded up to 64, the device node area's slot (known to the decisions
 * before the area is set up). */
static inline size_t mca_coll_strata_device_chunk_bytes(const mca_coll_strata_settings_t *s)
{
    return (s->device_segment_size + 63) & ~(size_t)63;
}

#endif /* MCA_COLL_STRATA_SETTINGS_H */
