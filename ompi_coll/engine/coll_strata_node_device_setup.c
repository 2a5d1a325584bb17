/*
 * coll/strata node area of device data: set-up, teardown and reaping.
 * Every local rank allocates its scratch (and, with a rail, the exchange's
 * receive region and staging blocks), exports it, maps its peers', and the
 * outcome is agreed over the communicator; a communicator that goes frees
 * its scratch once every peer has closed its mapping (see below).
 */
#include "coll_strata_node_device.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <common/strata_uct_probe.h>

#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/mca/pml/base/base.h"

/*
 * Freeing.  A rank's scratch is mapped by its node peers (local rank 0's
 * holds the result area every rank copies out of), and CUDA leaves freeing
 * exported memory before every importer closed it undefined; a rank that
 * returns from its last allreduce may free its communicator while a peer
 * still copies out.  So each rank first closes its own mappings of the
 * others' scratch (and finishes its stream), then frees its scratch only
 * once every local rank has done the same:
 *   - at set-up, where every local rank takes the same failure branch, a
 *     barrier of the node between the two;
 *   - when the communicator goes (no collective there: peers may free it
 *     much later), each rank says so in its device_closed flag in the
 *     node's segment; the last frees at once, the others keep their
 *     scratch, and the segment, on a retired list that every later
 *     communicator's creation and release, and the component's close,
 *     revisit (mca_coll_strata_node_device_reap).
 */
typedef struct mca_coll_strata_node_device_retired_t {
    struct mca_coll_strata_node_device_retired_t *next;
    int ordinal;
    CUdeviceptr scratch;
    mca_coll_strata_shm_t shm; /* owned: its flags say who closed */
} mca_coll_strata_node_device_retired_t;

static mca_coll_strata_node_device_retired_t *mca_coll_strata_node_device_retired = NULL;
static opal_mutex_t mca_coll_strata_node_device_retired_lock = OPAL_MUTEX_STATIC_INIT;

/* This rank's mappings of its peers' scratch, its stream and staging
 * blocks: everything but the scratch it exported. */
static void mca_coll_strata_node_device_close(mca_coll_strata_node_device_t *d)
{
    CUcontext saved;

    if (0 != strata_cuda_ctx_push(d->ordinal, &saved)) {
        mca_coll_strata_node_device_maps_close(d); /* (its closes fail: no context) */
        return;
    }
    if (NULL != d->stream) {
        (void)strata_cuda.cuStreamSynchronize(d->stream);
    }
    if (NULL != d->net) {
        (void)strata_cuda.cuStreamSynchronize(d->net);
        (void)strata_cuda.cuStreamDestroy(d->net);
        d->net = NULL;
    }
    if (NULL != d->legacy) {
        (void)strata_cuda.cuEventDestroy(d->legacy);
        d->legacy = NULL;
    }
    for (int i = 0; i < MCA_COLL_STRATA_SLOTS_MAX; ++i) {
        if (NULL != d->events[i]) {
            (void)strata_cuda.cuEventDestroy(d->events[i]);
            d->events[i] = NULL;
        }
        if (NULL != d->exchanged[i]) {
            (void)strata_cuda.cuEventDestroy(d->exchanged[i]);
            d->exchanged[i] = NULL;
        }
    }
    if (NULL != d->flags_host) {
        (void)strata_cuda.cuMemHostUnregister(d->flags_host);
        d->flags_host = NULL;
        d->flags_dev = 0;
    }
    for (int r = 0; NULL != d->peer && r < d->nranks; ++r) {
        if (0 != d->peer[r] && d->peer[r] != d->scratch) {
            (void)strata_cuda.cuIpcCloseMemHandle(d->peer[r]);
        }
        d->peer[r] = 0;
    }
    mca_coll_strata_node_device_maps_close(d);
    if (NULL != d->stage) {
        (void)strata_cuda.cuMemFreeHost(d->stage);
        d->stage = NULL;
    }
    if (NULL != d->stream) {
        (void)strata_cuda.cuStreamDestroy(d->stream);
        d->stream = NULL;
    }
    strata_cuda_ctx_pop(saved);
}

static void mca_coll_strata_node_device_free_scratch(int ordinal, CUdeviceptr scratch)
{
    CUcontext saved;

    if (0 != scratch && 0 == strata_cuda_ctx_push(ordinal, &saved)) {
        (void)strata_cuda.cuMemFree(scratch);
        strata_cuda_ctx_pop(saved);
    }
}

static bool mca_coll_strata_node_device_all_closed(const mca_coll_strata_shm_t *shm)
{
    for (int r = 0; r < shm->nranks; ++r) {
        if (0 == __atomic_load_n(&shm->flags[r].device_closed, __ATOMIC_ACQUIRE)) {
            return false;
        }
    }
    return true;
}

void mca_coll_strata_node_device_reap(double wait_s)
{
    mca_coll_strata_node_device_retired_t **at, *e;
    double waited = 0.0;

    OPAL_THREAD_LOCK(&mca_coll_strata_node_device_retired_lock);
    for (at = &mca_coll_strata_node_device_retired; NULL != (e = *at);) {
        while (!mca_coll_strata_node_device_all_closed(&e->shm) && waited < wait_s) {
            struct timespec ms = {0, 1000000};

            nanosleep(&ms, NULL);
            waited += 1e-3;
        }
        if (!mca_coll_strata_node_device_all_closed(&e->shm)) {
            at = &e->next;
            continue;
        }
        mca_coll_strata_node_device_free_scratch(e->ordinal, e->scratch);
        mca_coll_strata_shm_detach(&e->shm);
        *at = e->next;
        free(e);
    }
    if (wait_s > 0.0 && NULL != mca_coll_strata_node_device_retired) {
        /* peers gone without closing (killed): the process's exit frees it */
        MCA_COLL_STRATA_VERBOSE(10, "device scratch kept: a local rank never closed its mapping "
                                    "of it");
    }
    OPAL_THREAD_UNLOCK(&mca_coll_strata_node_device_retired_lock);
}

/* The set-up gave up after every local rank took part in the exchange:
 * all of them come here, also one that allocated nothing (d NULL, or no
 * peer table: no context), so the node's barrier orders every close before
 * every free.  A failed barrier leaves the scratch allocated (a peer may
 * still map it). */
static void mca_coll_strata_node_device_free_together(mca_coll_strata_node_device_t *d,
                                                      struct ompi_communicator_t *node_comm)
{
    bool allocated = (NULL != d) && (NULL != d->peer);

    if (allocated) {
        mca_coll_strata_node_device_close(d);
    }
    if (OMPI_SUCCESS ==
            node_comm->c_coll->coll_barrier(node_comm, node_comm->c_coll->coll_barrier_module) &&
        allocated) {
        mca_coll_strata_node_device_free_scratch(d->ordinal, d->scratch);
    }
    if (NULL != d) {
        free(d->peer);
        free(d);
    }
}

/* Can the pml in use take device buffers?  pml/ucx, with a UCP context
 * that kept Strata's gpu_copy domain (so it tells device memory from host
 * memory and copies it); ob1 and its BTLs read every buffer with the CPU. */
static bool mca_coll_strata_node_device_pml_carries(void)
{
    return 0 == strcmp(mca_pml_base_selected_component.pmlm_version.mca_component_name, "ucx") &&
           strata_uct_gpu_copy_domains() > 0;
}

/* Whether this rank's ring stages device blocks through pinned host memory
 * between nodes (else the pml takes them as they are).  Rank-local: a
 * message's bytes are the same either way. */
static bool mca_coll_strata_node_device_stages(const mca_coll_strata_engine_t *e,
                                               struct ompi_communicator_t *comm)
{
    bool warn, direct;

    direct = mca_coll_strata_decide_device_direct(e->device_network,
                                                  mca_coll_strata_node_device_pml_carries(), &warn);
    if (warn) {
        static bool warned = false;

        if (!warned) {
            warned = true;
            opal_output(0,
                        "coll:strata: warning: %s: coll_strata_allreduce_device_network is "
                        "direct, but pml/%s cannot carry device memory (it needs pml/ucx with "
                        "Strata's gpu_copy transport in UCX_TLS); device data between nodes is "
                        "staged through pinned host memory",
                        comm->c_name,
                        mca_pml_base_selected_component.pmlm_version.mca_component_name);
        }
    }
    MCA_COLL_STRATA_VERBOSE(10, "%s: native device allreduce between nodes: %s", comm->c_name,
                            direct ? "device buffers through the pml"
                                   : "staged through pinned host memory");
    return !direct;
}

/* This rank's part: scratch, stream, handle, and with a rail the ring's
 * receive region (and its staging blocks); `why` says what failed. */
static int mca_coll_strata_node_device_alloc(mca_coll_strata_node_device_t *d,
                                             mca_coll_strata_engine_t *e,
                                             struct ompi_communicator_t *comm,
                                             CUipcMemHandle *handle, char *why, size_t why_len)
{
    bool rail = NULL != e->topo.rail_comm;
    size_t region = (size_t)d->nslots * d->super.slot_bytes;
    char str[160];
    CUresult res;

    d->scratch_bytes = (rail ? 3 : 2) * region;
    res = strata_cuda.cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
    d->cur = d->stream;
    if (CUDA_SUCCESS == res) {
        res = strata_cuda.cuEventCreate(&d->legacy, CU_EVENT_DISABLE_TIMING);
    }
    if (CUDA_SUCCESS == res && rail) {
        res = strata_cuda.cuStreamCreate(&d->net, CU_STREAM_NON_BLOCKING);
    }
    if (CUDA_SUCCESS == res) {
        res = strata_cuda.cuMemAlloc(&d->scratch, d->scratch_bytes);
    }
    if (CUDA_SUCCESS == res) {
        res = strata_cuda.cuIpcGetMemHandle(handle, d->scratch);
    }
    if (CUDA_SUCCESS != res) {
        snprintf(why, why_len, "device scratch of %zu bytes: %s", d->scratch_bytes,
                 strata_cuda_result_str(res, str, sizeof(str)));
        return OMPI_ERROR;
    }
    if (!rail) {
        return OMPI_SUCCESS;
    }
    d->super.inter_recv = (char *)(uintptr_t)(d->scratch + 2 * region);
    d->super.inter_slot_bytes = d->super.slot_bytes;
    if (mca_coll_strata_node_device_stages(e, comm)) {
        res = strata_cuda.cuMemHostAlloc(&d->stage, 2 * region, 0);
        if (CUDA_SUCCESS != res) {
            d->stage = NULL;
            snprintf(why, why_len, "pinned host memory of %zu bytes for the inter-node phase: %s",
                     2 * region, strata_cuda_result_str(res, str, sizeof(str)));
            return OMPI_ERROR;
        }
        d->super.inter_stage = d->stage;
    }
    return OMPI_SUCCESS;
}

/* What each local rank tells its peers: its scratch's handle, whether it
 * has one (a rank whose allocation failed sends ok = 0), which GPU it is
 * (by UUID: ordinals differ between processes that see different
 * devices), whether that GPU runs under MPS, and whether it can queue. */
typedef struct mca_coll_strata_node_device_card_t {
    CUipcMemHandle handle;
    CUuuid uuid;
    int ok;
    int mps;
    int queued;
} mca_coll_strata_node_device_card_t;

/* Whether another local rank runs on this rank's GPU without MPS.  Ranks
 * sharing a GPU without MPS take turns on it, each in its own context, and
 * the native path hands every chunk from one process's GPU work to
 * another's: measured on an H200 (docs/results/2026-11-26-gpu-h200), about
 * 750 us per chunk whatever its size, 15-26x slower than staging through
 * host memory with 2 and 4 ranks on the GPU.  So auto stays staged there.
 * Under MPS (CU_DEVICE_ATTRIBUTE_MPS_ENABLED on both) the ranks' work runs
 * side by side, as with one rank per GPU: native. */
static bool mca_coll_strata_node_device_shared(int me, int k,
                                               const mca_coll_strata_node_device_card_t *cards)
{
    for (int r = 0; r < k; ++r) {
        if (r != me && 0 == memcmp(&cards[r].uuid, &cards[me].uuid, sizeof(cards[me].uuid)) &&
            !(cards[r].mps && cards[me].mps)) {
            return true;
        }
    }
    return false;
}

/* Map every peer's scratch from the node's cards. */
static int mca_coll_strata_node_device_map(mca_coll_strata_node_device_t *d, int me,
                                           const mca_coll_strata_node_device_card_t *cards,
                                           char *why, size_t why_len)
{
    char str[160];

    for (int r = 0; r < d->nranks; ++r) {
        CUresult res;

        if (r == me) {
            d->peer[r] = d->scratch;
            continue;
        }
        if (!cards[r].ok) {
            snprintf(why, why_len, "local rank %d could not set up its device scratch", r);
            return OMPI_ERROR;
        }
        res = strata_cuda.cuIpcOpenMemHandle(&d->peer[r], cards[r].handle,
                                             CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        if (CUDA_SUCCESS != res) {
            d->peer[r] = 0;
            snprintf(why, why_len, "cannot map local rank %d's device scratch: %s", r,
                     strata_cuda_result_str(res, str, sizeof(str)));
            return OMPI_ERROR;
        }
    }
    return OMPI_SUCCESS;
}

int mca_coll_strata_node_device_setup(mca_coll_strata_engine_t *e,
                                      const mca_coll_strata_settings_t *s,
                                      struct ompi_communicator_t *comm, int ordinal)
{
    struct ompi_communicator_t *node_comm = e->topo.node_comm;
    mca_coll_strata_node_device_t *d = calloc(1, sizeof(*d));
    int k = e->topo.local_size, me = e->topo.local_rank, ok = 0, all_ok = 0, rc;
    int agree[2], all[2] = {0, 0};
    /* k <= STRATA_REDUCE_MAX_SRCS: the native path was agreed for it */
    mca_coll_strata_node_device_card_t mine, cards[k];
    char why[256] = "";
    CUcontext saved;
    CUdevice dev;
    CUfunction copy_fn; /* only resolved: the direct path's copies need it */

    memset(&mine, 0, sizeof(mine));
    if (NULL == d || 0 != strata_cuda_ctx_push(ordinal, &saved)) {
        snprintf(why, sizeof(why), "out of memory, or no CUDA context for device %d", ordinal);
    } else {
        d->super.ops = &mca_coll_strata_node_device_ops;
        d->super.shm = &e->shm;
        d->ordinal = ordinal;
        /* chunks sized for device memory, not for host shared memory */
        d->super.slot_bytes = mca_coll_strata_device_chunk_bytes(s);
        d->nslots = e->shm.nslots;
        d->nranks = k;
        d->me = me;
        d->peer = calloc((size_t)k, sizeof(*d->peer));
        ok = (NULL != d->peer) && (OMPI_SUCCESS == mca_coll_strata_node_device_alloc(
                                                       d, e, comm, &mine.handle, why, sizeof(why)));
        if (ok && (CUDA_SUCCESS != strata_cuda.cuDeviceGet(&dev, ordinal) ||
                   CUDA_SUCCESS != strata_cuda.cuDeviceGetUuid(&mine.uuid, dev))) {
            snprintf(why, sizeof(why), "no UUID for device %d", ordinal);
            ok = 0;
        }
        if (ok) {
            (void)strata_cuda.cuDeviceGetAttribute(&mine.mps, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, dev);
            mine.queued = s->device_queue &&
                          mca_coll_strata_node_device_queue_setup(d, &e->shm, dev);
            /* the direct path runs queued, and copies with a kernel (a
             * one-input bor on bytes); without them, or its maps, the card
             * of every call says no (agreed per call) */
            d->direct = s->device_direct && mine.queued &&
                        CUDA_SUCCESS ==
                            strata_kernels_function(ordinal, "bor", "uint8", &copy_fn) &&
                        OMPI_SUCCESS == mca_coll_strata_node_device_maps_setup(d);
        }
        strata_cuda_ctx_pop(saved);
    }
    mine.ok = ok;
    /* Every local rank reaches the exchange, whatever failed. */
    rc = node_comm->c_coll->coll_allgather(&mine, sizeof(mine), MPI_BYTE, cards, sizeof(mine),
                                           MPI_BYTE, node_comm,
                                           node_comm->c_coll->coll_allgather_module);
    if (ok && OMPI_SUCCESS == rc && 0 == strata_cuda_ctx_push(ordinal, &saved)) {
        ok = (OMPI_SUCCESS == mca_coll_strata_node_device_map(d, me, cards, why, sizeof(why)));
        strata_cuda_ctx_pop(saved);
    } else {
        ok = 0;
    }
    /* One agreement for all: [0] 0 failed somewhere, 1 ready but some
     * node's ranks share a GPU without MPS, 2 ready (one rank per GPU, or
     * MPS); [1] every rank can queue whole calls.  Queueing is agreed over
     * comm, though only a node's ranks meet in its flags: one rule, the
     * same everywhere. */
    if (ok) {
        ok = mca_coll_strata_node_device_shared(me, k, cards) ? 1 : 2;
    }
    agree[0] = ok;
    agree[1] = ok && mine.queued;
    rc = e->below->allreduce(e->below_ctx, comm, agree, all, 2, MPI_INT, MPI_MIN);
    all_ok = all[0];
    if (OMPI_SUCCESS == rc && 1 == all_ok &&
        MCA_COLL_STRATA_DEVICE_ALG_AUTO == s->device_algorithm) {
        MCA_COLL_STRATA_VERBOSE(10,
                                "%s: local ranks share a GPU: device allreduce staged "
                                "(allreduce_device_algorithm=native runs it on the GPU anyway)",
                                comm->c_name);
        mca_coll_strata_node_device_free_together(d, node_comm);
        return OMPI_ERR_NOT_SUPPORTED;
    }
    if (OMPI_SUCCESS != rc || !all_ok) {
        static bool warned = false;

        if ('\0' != why[0] && !warned) {
            warned = true;
            opal_output(0,
                        "coll:strata: warning: %s: %s; device allreduce on this communicator "
                        "is staged through host memory",
                        comm->c_name, why);
        }
        mca_coll_strata_node_device_free_together(d, node_comm);
        return OMPI_ERROR;
    }
    if (all[1]) { /* the GPUs coordinate the chunks, the host waits once per call */
        d->super.queue = &mca_coll_strata_node_device_queue;
    }
    e->node_device = d;
    MCA_COLL_STRATA_VERBOSE(10,
                            "%s: device scratch of %zu bytes on device %d, mapped by %d "
                            "local rank(s); %s",
                            comm->c_name, d->scratch_bytes, ordinal, k,
                            all[1] ? "each call queued on the GPU, one host wait"
                                   : "the host drives every chunk");
    return OMPI_SUCCESS;
}

void mca_coll_strata_node_device_release(mca_coll_strata_engine_t *e)
{
    mca_coll_strata_node_device_t *d = e->node_device;
    mca_coll_strata_node_device_retired_t *r;

    if (NULL == d) {
        return;
    }
    e->node_device = NULL;
    mca_coll_strata_node_device_close(d);
    __atomic_store_n(&e->shm.flags[e->topo.local_rank].device_closed, 1, __ATOMIC_RELEASE);
    r = mca_coll_strata_node_device_all_closed(&e->shm) ? NULL : calloc(1, sizeof(*r));
    if (NULL == r) {
        /* the last to close (or out of memory: then as before) */
        mca_coll_strata_node_device_free_scratch(d->ordinal, d->scratch);
    } else {
        r->ordinal = d->ordinal;
        r->scratch = d->scratch;
        r->shm = e->shm; /* the segment stays mapped with it */
        memset(&e->shm, 0, sizeof(e->shm));
        OPAL_THREAD_LOCK(&mca_coll_strata_node_device_retired_lock);
        r->next = mca_coll_strata_node_device_retired;
        mca_coll_strata_node_device_retired = r;
        OPAL_THREAD_UNLOCK(&mca_coll_strata_node_device_retired_lock);
    }
    free(d->peer);
    free(d);
    mca_coll_strata_node_device_reap(0.0);
}
