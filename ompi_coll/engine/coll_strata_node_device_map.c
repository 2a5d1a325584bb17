/*
 * coll/strata node area of device data: the direct path's buffers.
 *
 * On the direct path (issue 45) a slice's owner reduces it from every
 * local rank's input buffer and writes the result into every local rank's
 * output buffer, where the application has them: each byte of the inputs
 * is read once and each byte of the outputs written once, the least any
 * allreduce moves (2kC for k ranks and C bytes), against (5k+1)C through
 * the scratch areas (copy in, reduce, copy out).  For that each rank maps
 * its peers' buffers with CUDA IPC, per call:
 *
 *   post     this rank writes its card in the node's segment (the handle
 *            of the allocation holding each buffer, and the buffer's offset
 *            in it), then stores card_serial: the call's first chunk
 *            serial + 1, the same number on every local rank
 *   collect  it waits (on its peers' hosts, never a GPU) until every local
 *            rank's card_serial says so, and reads their cards: the call
 *            runs direct only when every card is ok, which every rank reads
 *            alike, so all of them decide the same
 *   map      it opens each peer's allocations, through a cache
 *
 * A buffer that cannot be exported (memory from a stream-ordered pool, VMM
 * or managed memory: not legacy-IPC capable), an output that overlaps the
 * input elsewhere than on its own elements (an in-place reduce-scatter),
 * the setting
 * coll_strata_device_direct=0, or no context on any local rank: that
 * rank's card is not ok, and the node's ranks run the call through the
 * scratch areas, as before.
 *
 * The cache.  Opening a handle costs far more than a call's reduction of a
 * few megabytes, and applications call collectives on the same buffers
 * again and again: mappings are kept per peer, keyed by the whole handle.
 * CUDA gives a new allocation a new handle even at the same address (the
 * handle names the allocation, not the address), so a buffer freed and
 * allocated again is a miss, never read through the old mapping.  Mappings
 * are closed when the communicator goes, or, least recently used first,
 * when a peer has more than MCA_COLL_STRATA_DIRECT_MAPS.  The CUDA
 * documentation calls an exporter's cuMemFree of memory still open in
 * another process undefined; UCX's cuda_ipc cache keeps such mappings all
 * the same, relying on the driver keeping the memory until the last
 * importer closes it (opening per call would cost more than the call), and
 * so does this one, bounded (coll_strata_device_direct=0 avoids it;
 * docs/design.md).  The exporter keeps the
 * handles of its own recent allocations by buffer id (unique for the
 * process's life), so a repeated call costs one pointer query and no
 * cuIpcGetMemHandle.
 */
#include "coll_strata_node_device.h"
#include "coll_strata_pipeline.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <common/strata_mem.h>

#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

_Static_assert(MCA_COLL_STRATA_DIRECT_RANKS_MAX == STRATA_REDUCE_MAX_ALSO + 1,
               "the direct path writes one kernel output per local rank");
_Static_assert(sizeof(((mca_coll_strata_shm_card_t *)0)->in_handle) == CU_IPC_HANDLE_SIZE,
               "a card holds a CUDA IPC handle");

/* polls of a peer's card before each further one yields the core */
#define MCA_COLL_STRATA_DIRECT_SPINS 64

/* A mapped allocation of a peer's, and a handle of this rank's own. */
struct mca_coll_strata_direct_map {
    unsigned char handle[CU_IPC_HANDLE_SIZE];
    CUdeviceptr at; /* 0: unused */
    uint64_t used;  /* the call that last used it: the LRU order */
};

struct mca_coll_strata_direct_export {
    unsigned long long buffer_id; /* 0: unused */
    CUipcMemHandle handle;
};

struct mca_coll_strata_node_device_maps_t {
    /* per peer (local rank), its mapped allocations */
    struct mca_coll_strata_direct_map (*peer)[MCA_COLL_STRATA_DIRECT_MAPS];
    /* this rank's own recent allocations' handles */
    struct mca_coll_strata_direct_export exports[MCA_COLL_STRATA_DIRECT_EXPORTS];
    int next_export;
    uint64_t calls;
    mca_coll_strata_direct_t call; /* per local rank, the call's buffers */
};

static void mca_coll_strata_node_device_maps_free(struct mca_coll_strata_node_device_maps_t *m)
{
    if (NULL != m) {
        free(m->peer);
        free(m->call.in);
        free(m->call.out);
        free(m->call.lo);
        free(m->call.hi);
        free(m);
    }
}

int mca_coll_strata_node_device_maps_setup(mca_coll_strata_node_device_t *d)
{
    struct mca_coll_strata_node_device_maps_t *m = calloc(1, sizeof(*m));
    size_t k = (size_t)d->nranks;

    if (NULL == m || NULL == (m->peer = calloc(k, sizeof(*m->peer))) ||
        NULL == (m->call.in = calloc(k, sizeof(*m->call.in))) ||
        NULL == (m->call.out = calloc(k, sizeof(*m->call.out))) ||
        NULL == (m->call.lo = calloc(k, sizeof(*m->call.lo))) ||
        NULL == (m->call.hi = calloc(k, sizeof(*m->call.hi)))) {
        mca_coll_strata_node_device_maps_free(m);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    d->maps = m;
    return OMPI_SUCCESS;
}

/* Every mapping closed (the device's context current). */
void mca_coll_strata_node_device_maps_close(mca_coll_strata_node_device_t *d)
{
    struct mca_coll_strata_node_device_maps_t *m = d->maps;

    if (NULL == m) {
        return;
    }
    for (int r = 0; r < d->nranks; ++r) {
        for (int i = 0; i < MCA_COLL_STRATA_DIRECT_MAPS; ++i) {
            if (0 != m->peer[r][i].at) {
                (void)strata_cuda.cuIpcCloseMemHandle(m->peer[r][i].at);
            }
        }
    }
    mca_coll_strata_node_device_maps_free(m);
    d->maps = NULL;
}

/* The handle of the allocation holding [buf, buf + bytes) and buf's offset
 * in it; false where it cannot be exported. */
static bool mca_coll_strata_direct_export(mca_coll_strata_node_device_t *d, const void *buf,
                                          size_t bytes, unsigned char *handle, uint64_t *offset)
{
    struct mca_coll_strata_node_device_maps_t *m = d->maps;
    strata_mem_info_t info;
    CUipcMemHandle h;
    int i;

    if (mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_EXPORT) ||
        0 != strata_mem_query(buf, &info) || STRATA_MEM_DEVICE != info.kind || !info.legacy_ipc ||
        0 == info.buffer_id || (uintptr_t)buf < info.base ||
        (uintptr_t)buf + bytes > info.base + info.length) {
        return false;
    }
    for (i = 0; i < MCA_COLL_STRATA_DIRECT_EXPORTS && m->exports[i].buffer_id != info.buffer_id;
         ++i) {
    }
    if (i == MCA_COLL_STRATA_DIRECT_EXPORTS) {
        if (CUDA_SUCCESS != strata_cuda.cuIpcGetMemHandle(&h, (CUdeviceptr)info.base)) {
            return false;
        }
        i = m->next_export;
        m->next_export = (i + 1) % MCA_COLL_STRATA_DIRECT_EXPORTS;
        m->exports[i].buffer_id = info.buffer_id;
        m->exports[i].handle = h;
    }
    memcpy(handle, &m->exports[i].handle, CU_IPC_HANDLE_SIZE);
    *offset = (uint64_t)((uintptr_t)buf - info.base);
    return true;
}

/* Peer r's allocation of `handle`, mapped here (cached); 0 where it cannot
 * be (said once per call, naming the driver's error). */
static CUdeviceptr mca_coll_strata_direct_import(mca_coll_strata_node_device_t *d, int r,
                                                 const unsigned char *handle)
{
    struct mca_coll_strata_node_device_maps_t *m = d->maps;
    struct mca_coll_strata_direct_map *slot = NULL;
    CUipcMemHandle h;
    CUresult res;

    for (int i = 0; i < MCA_COLL_STRATA_DIRECT_MAPS; ++i) {
        struct mca_coll_strata_direct_map *e = &m->peer[r][i];

        if (0 != e->at && 0 == memcmp(e->handle, handle, CU_IPC_HANDLE_SIZE)) {
            e->used = m->calls;
            return e->at;
        }
    }
    /* not mapped yet: into a free entry, else in place of the least
     * recently used one that this call does not use */
    for (int i = 0; i < MCA_COLL_STRATA_DIRECT_MAPS; ++i) {
        struct mca_coll_strata_direct_map *e = &m->peer[r][i];

        if (0 == e->at) {
            slot = e;
            break;
        }
        if (e->used != m->calls && (NULL == slot || e->used < slot->used)) {
            slot = e;
        }
    }
    if (NULL == slot) {
        return 0; /* every mapping is this call's: not reached with two buffers a call */
    }
    if (0 != slot->at) {
        (void)strata_cuda.cuIpcCloseMemHandle(slot->at);
        slot->at = 0;
    }
    memcpy(&h, handle, sizeof(h));
    res = mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_MAP)
              ? CUDA_ERROR_INVALID_HANDLE
              : strata_cuda.cuIpcOpenMemHandle(&slot->at, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (CUDA_SUCCESS != res) {
        slot->at = 0;
        (void)mca_coll_strata_node_device_status(d, res, "cuIpcOpenMemHandle (a peer's buffer)");
        return 0;
    }
    memcpy(slot->handle, handle, CU_IPC_HANDLE_SIZE);
    slot->used = m->calls;
    return slot->at;
}

/* Whether owners may write this rank's output while others still read its
 * input: the two apart, or the output the input's own elements (an
 * in-place allreduce: each element is read before it is written, by the
 * one owner of it).  An in-place reduce-scatter's output is the start of
 * the buffer its input fills: another owner would read elements its block
 * has already overwritten. */
static bool mca_coll_strata_direct_apart(const mca_coll_strata_pipeline_args_t *a, ptrdiff_t extent,
                                         size_t out_bytes)
{
    uintptr_t in = (uintptr_t)a->sbuf, out = (uintptr_t)a->out;
    size_t in_bytes = a->count * (size_t)extent;
    /* where this rank's own input is in its output: an allgather's block
     * at its place, else the window's first element */
    size_t own = (MCA_COLL_STRATA_PIPE_ALLGATHER == a->kind)
                     ? (size_t)ompi_comm_rank(a->comm) * in_bytes
                     : a->out_lo * (size_t)extent;

    return NULL == a->out || 0 == out_bytes || out + out_bytes <= in || in + in_bytes <= out ||
           out + own == in;
}

/* The bytes of this rank's output: an allgather's every block, else its
 * window (none: no output, a reduce's ranks but its root, a bcast's root). */
static size_t mca_coll_strata_direct_out_bytes(const mca_coll_strata_pipeline_args_t *a,
                                               ptrdiff_t extent)
{
    if (NULL == a->out || a->out_hi <= a->out_lo) {
        return 0;
    }
    if (MCA_COLL_STRATA_PIPE_ALLGATHER == a->kind) {
        return a->count * (size_t)extent * (size_t)ompi_comm_size(a->comm);
    }
    return (a->out_hi - a->out_lo) * (size_t)extent;
}

/* This rank's card for the call (see the top). */
static void mca_coll_strata_direct_post(mca_coll_strata_node_device_t *d,
                                        const mca_coll_strata_pipeline_args_t *a, uint64_t serial)
{
    mca_coll_strata_shm_flags_t *mine = &d->super.shm->flags[d->me];
    mca_coll_strata_shm_card_t *card = &mine->card;
    size_t bytes, out_bytes;
    ptrdiff_t extent;

    ompi_datatype_type_extent(a->dtype, &extent);
    bytes = a->count * (size_t)extent;
    out_bytes = mca_coll_strata_direct_out_bytes(a, extent);
    card->out_lo = a->out_lo;
    card->out_hi = (0 != out_bytes) ? a->out_hi : a->out_lo;
    card->ok =
        d->direct && !d->no_context && NULL != d->maps && NULL != a->sbuf &&
        mca_coll_strata_direct_apart(a, extent, out_bytes) &&
        mca_coll_strata_direct_export(d, a->sbuf, bytes, card->in_handle, &card->in_offset) &&
        (0 == out_bytes ||
         mca_coll_strata_direct_export(d, a->out, out_bytes, card->out_handle, &card->out_offset));
    __atomic_store_n(&mine->card_serial, serial + 1, __ATOMIC_RELEASE);
}

/* Whether every local rank's card for the call is there and ok. */
static bool mca_coll_strata_direct_collect(mca_coll_strata_node_device_t *d, uint64_t serial)
{
    mca_coll_strata_shm_t *shm = d->super.shm;
    bool ok = true;

    for (int r = 0; r < d->nranks; ++r) {
        unsigned idle = 0;

        while (__atomic_load_n(&shm->flags[r].card_serial, __ATOMIC_ACQUIRE) != serial + 1) {
            opal_progress();
            if (++idle > MCA_COLL_STRATA_DIRECT_SPINS) {
                sched_yield();
            }
        }
        ok = ok && shm->flags[r].card.ok;
    }
    return ok;
}

const mca_coll_strata_direct_t *
mca_coll_strata_node_device_direct(mca_coll_strata_node_t *node,
                                   const mca_coll_strata_pipeline_args_t *a, uint64_t serial)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);
    struct mca_coll_strata_node_device_maps_t *m = d->maps;
    const mca_coll_strata_shm_t *shm = node->shm;

    mca_coll_strata_direct_post(d, a, serial);
    if (!mca_coll_strata_direct_collect(d, serial)) {
        return NULL;
    }
    /* every card is ok, so this rank has its maps too */
    m->calls++;
    for (int r = 0; r < d->nranks; ++r) {
        const mca_coll_strata_shm_card_t *card = &shm->flags[r].card;
        bool window = card->out_hi > card->out_lo;
        CUdeviceptr at;

        m->call.lo[r] = card->out_lo;
        m->call.hi[r] = card->out_hi;
        if (r == d->me) {
            m->call.in[r] = (char *)a->sbuf;
            m->call.out[r] = window ? (char *)a->out : NULL;
            continue;
        }
        /* a peer this rank cannot map: its pointers stay NULL, and this
         * rank's reduction fails (every rank then learns it) */
        at = mca_coll_strata_direct_import(d, r, card->in_handle);
        m->call.in[r] = (0 != at) ? (char *)(uintptr_t)(at + card->in_offset) : NULL;
        at = window ? mca_coll_strata_direct_import(d, r, card->out_handle) : 0;
        m->call.out[r] = (0 != at) ? (char *)(uintptr_t)(at + card->out_offset) : NULL;
    }
    return &m->call;
}

/* dsts[0..ndst) = srcs[0] op (... op srcs[k-1]), one kernel. */
int mca_coll_strata_node_device_reduce_to(mca_coll_strata_node_t *node, struct ompi_op_t *op,
                                          struct ompi_datatype_t *dtype, const void *const *srcs,
                                          int k, void *const *dsts, int ndst, size_t count)
{
    for (int i = 0; i < k; ++i) {
        if (NULL == srcs[i]) {
            return MPI_ERR_OTHER; /* a peer's buffer this rank could not map */
        }
    }
    for (int i = 0; i < ndst; ++i) {
        if (NULL == dsts[i]) {
            return MPI_ERR_OTHER;
        }
    }
    return mca_coll_strata_node_device_launch(MCA_COLL_STRATA_DEV(node), op, dtype, srcs, k, dsts,
                                              ndst, count);
}
