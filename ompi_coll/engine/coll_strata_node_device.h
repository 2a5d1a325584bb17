/*
 * coll/strata engine: the node area of device data, its own declarations
 * (see coll_strata_node_device.c for what it is).  Its files:
 *   coll_strata_node_device.c         the primitives (copy, reduce,
 *                                     complete) and a call's run
 *   coll_strata_node_device_queue.c   the queue: stream memory operations
 *                                     on the node's flags, events between
 *                                     its two streams (queued driver)
 *   coll_strata_node_device_setup.c   set-up, teardown and the reaping of
 *                                     scratch that peers still map
 *   coll_strata_node_device_kernel.c  which kernel reduces an op on a
 *                                     datatype
 *   coll_strata_node_device_map.c     the direct path: the ranks' buffers
 *                                     told to each other and mapped (cached)
 *   coll_strata_node_device_none.c    a build without CUDA headers: none
 * Included by those files only.  May include: the engine's own
 * declarations, common/'s CUDA driver and kernels.
 */
#ifndef MCA_COLL_STRATA_NODE_DEVICE_H
#define MCA_COLL_STRATA_NODE_DEVICE_H

#include "coll_strata_engine_internal.h"

#include <common/strata_cuda.h>
#include <common/strata_kernels.h>

struct mca_coll_strata_node_device_t {
    mca_coll_strata_node_t super;
    int ordinal;
    CUstream stream; /* the pipeline's */
    /* the exchange between nodes' (never waits on a flag), and where copy,
     * reduce and complete() go now: one of the two */
    CUstream net, cur;
    int nslots, nranks, me;
    /* Queued calls (coll_strata_pipeline_queued.c, where super.queue is
     * set): the node's progress flags as the GPU addresses them (the
     * segment's flags registered with the driver, this process's mapping),
     * one event per slot marking a chunk's reduction on `stream`, and with
     * a rail one per slot marking the end of its exchange on `net`. */
    CUdeviceptr flags_dev;
    void *flags_host;
    CUevent events[MCA_COLL_STRATA_SLOTS_MAX];
    CUevent exchanged[MCA_COLL_STRATA_SLOTS_MAX];
    CUevent legacy;      /* the legacy default stream at the call's start */
    const char *coll;    /* the call in progress ("MPI_Allreduce"), for messages */
    CUdeviceptr scratch; /* this rank's */
    size_t scratch_bytes;
    CUdeviceptr *peer; /* every local rank's, as this process maps it */
    void *stage;       /* pinned host blocks of the ring, or NULL */
    /* no context could be made current for the call in progress: every
     * device operation of it fails at once (mca_coll_strata_node_device_allreduce) */
    bool no_context;
    /* the kernel of the call in progress (MPI requires one op and type) */
    struct ompi_op_t *op;
    struct ompi_datatype_t *dtype;
    CUfunction fn;
    /* the direct path (coll_strata_device_direct, agreed), and its
     * mappings of the peers' buffers (coll_strata_node_device_map.c) */
    bool direct;
    struct mca_coll_strata_node_device_maps_t *maps;
};

/* Most mappings of one peer's allocations the direct path keeps, and most
 * handles of this rank's own allocations it remembers. */
#define MCA_COLL_STRATA_DIRECT_MAPS    16
#define MCA_COLL_STRATA_DIRECT_EXPORTS 8

#define MCA_COLL_STRATA_DEV(_node) ((mca_coll_strata_node_device_t *)(_node))

/* coll_strata_node_device.c: the area's primitives and their statuses (a
 * failed driver call said once per call, naming it: MPI_ERR_OTHER; a
 * query's NOT_READY is not done, not failed) */
extern const mca_coll_strata_node_ops_t mca_coll_strata_node_device_ops;
int mca_coll_strata_node_device_status(mca_coll_strata_node_device_t *d, CUresult res,
                                       const char *what);
int mca_coll_strata_node_device_polled(mca_coll_strata_node_device_t *d, CUresult res,
                                       const char *what, bool *done);

/* coll_strata_node_device.c: one kernel, srcs reduced into each of dsts */
int mca_coll_strata_node_device_launch(mca_coll_strata_node_device_t *d, struct ompi_op_t *op,
                                       struct ompi_datatype_t *dtype, const void *const *srcs,
                                       int k, void *const *dsts, int ndst, size_t count);

/* coll_strata_node_device_map.c: the direct path (the node ops' direct and
 * reduce_to), its mappings made and closed (the device's context current) */
const mca_coll_strata_direct_t *
mca_coll_strata_node_device_direct(mca_coll_strata_node_t *node,
                                   const mca_coll_strata_pipeline_args_t *a, uint64_t serial);
int mca_coll_strata_node_device_reduce_to(mca_coll_strata_node_t *node, struct ompi_op_t *op,
                                          struct ompi_datatype_t *dtype, const void *const *srcs,
                                          int k, void *const *dsts, int ndst, size_t count);
int mca_coll_strata_node_device_maps_setup(mca_coll_strata_node_device_t *d);
void mca_coll_strata_node_device_maps_close(mca_coll_strata_node_device_t *d);

/* coll_strata_node_device_queue.c: the queue, and whether this rank can
 * use it (its events made, the node's flags registered with the driver) */
extern const mca_coll_strata_node_queue_ops_t mca_coll_strata_node_device_queue;
bool mca_coll_strata_node_device_queue_setup(mca_coll_strata_node_device_t *d,
                                             mca_coll_strata_shm_t *shm, CUdevice dev);

/* coll_strata_node_device_kernel.c: the kernels' names of an MPI datatype
 * and of an op (NULL where no kernel applies; op_name writes into buf) */
const char *mca_coll_strata_node_device_type_name(struct ompi_datatype_t *dtype);
const char *mca_coll_strata_node_device_op_name(struct ompi_op_t *op, char *buf, size_t len);

#endif /* MCA_COLL_STRATA_NODE_DEVICE_H */
