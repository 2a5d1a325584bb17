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
 *   post     this rank writes its card in the node's segment (for each
 *            buffer its peers read or write: the handle of the allocation
 *            holding it, the allocation's addresses, the buffer's offset
 *            in it), then stores card_serial: the call's first chunk
 *            serial + 1, the same number on every local rank
 *   collect  it waits (on its peers' hosts, never a GPU) until every local
 *            rank's card_serial says so, and reads their cards: the call
 *            runs direct only when every card is ok, which every rank reads
 *            alike, so all of them decide the same
 *   map      it opens the peers' allocations it needs, through a cache,
 *            says in a second round (mapped_serial) whether all of them
 *            opened, and the call runs direct only where every rank's did:
 *            a mapping that fails costs a fallback, never the call
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
_Static_assert(sizeof(((mca_coll_strata_shm_buf_t *)0)->handle) == CU_IPC_HANDLE_SIZE,
               "a card holds a CUDA IPC handle");

/* polls of a peer's card before each further one yields the core */
#define MCA_COLL_STRATA_DIRECT_SPINS 64

/* A mapped allocation of a peer's, and a handle of this rank's own. */
struct mca_coll_strata_direct_map {
    unsigned char handle[CU_IPC_HANDLE_SIZE];
    uint64_t base, len; /* the allocation, at the exporter's addresses */
    CUdeviceptr at;     /* 0: unused */
    uint64_t used;      /* the call that last used it: the LRU order */
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
                                          size_t bytes, mca_coll_strata_shm_buf_t *out)
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
    memcpy(out->handle, &m->exports[i].handle, CU_IPC_HANDLE_SIZE);
    out->base = (uint64_t)info.base;
    out->len = (uint64_t)info.length;
    out->offset = (uint64_t)((uintptr_t)buf - info.base);
    return true;
}

static void mca_coll_strata_direct_unmap(struct mca_coll_strata_direct_map *e)
{
    (void)strata_cuda.cuIpcCloseMemHandle(e->at);
    e->at = 0;
}

/* Close peer r's mappings that this call does not use and that overlap
 * [base, base + len) of its addresses (all of them for len 0): a mapping
 * of an allocation the peer freed, whose addresses now hold another.
 * CUDA opens a peer's allocation at the peer's own addresses, so the new
 * one cannot be opened while the old one is mapped here
 * (CUDA_ERROR_ALREADY_MAPPED), and the old one's memory is held for
 * nothing. */
static void mca_coll_strata_direct_unmap_stale(struct mca_coll_strata_node_device_maps_t *m, int r,
                                               uint64_t base, uint64_t len)
{
    for (int i = 0; i < MCA_COLL_STRATA_DIRECT_MAPS; ++i) {
        struct mca_coll_strata_direct_map *e = &m->peer[r][i];

        if (0 != e->at && e->used != m->calls &&
            (0 == len || (e->base < base + len && base < e->base + e->len))) {
            mca_coll_strata_direct_unmap(e);
        }
    }
}

static CUresult mca_coll_strata_direct_open(struct mca_coll_strata_direct_map *slot,
                                            const mca_coll_strata_shm_buf_t *b)
{
    CUipcMemHandle h;

    if (mca_coll_strata_test_fail(MCA_COLL_STRATA_TEST_FAIL_MAP)) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    memcpy(&h, b->handle, sizeof(h));
    return strata_cuda.cuIpcOpenMemHandle(&slot->at, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
}

/* Peer r's buffer `b`, mapped here (cached): its address here, or NULL
 * where it cannot be (said, naming the driver's error). */
static char *mca_coll_strata_direct_import(mca_coll_strata_node_device_t *d, int r,
                                           const mca_coll_strata_shm_buf_t *b)
{
    struct mca_coll_strata_node_device_maps_t *m = d->maps;
    struct mca_coll_strata_direct_map *slot = NULL;
    CUresult res;

    for (int i = 0; i < MCA_COLL_STRATA_DIRECT_MAPS; ++i) {
        struct mca_coll_strata_direct_map *e = &m->peer[r][i];

        if (0 != e->at && 0 == memcmp(e->handle, b->handle, CU_IPC_HANDLE_SIZE)) {
            e->used = m->calls;
            return (char *)(uintptr_t)(e->at + b->offset);
        }
    }
    mca_coll_strata_direct_unmap_stale(m, r, b->base, b->len);
    /* into a free entry, else in place of the least recently used one
     * that this call does not use */
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
        return NULL; /* every mapping is this call's: not reached with two buffers a call */
    }
    if (0 != slot->at) {
        mca_coll_strata_direct_unmap(slot);
    }
    res = mca_coll_strata_direct_open(slot, b);
    if (CUDA_ERROR_ALREADY_MAPPED == res) {
        /* something of the peer's at those addresses still mapped here (a
         * range the card did not say): every idle mapping of the peer goes */
        mca_coll_strata_direct_unmap_stale(m, r, 0, 0);
        res = mca_coll_strata_direct_open(slot, b);
    }
    if (CUDA_SUCCESS != res) {
        slot->at = 0;
        (void)mca_coll_strata_node_device_status(d, res, "cuIpcOpenMemHandle (a peer's buffer)");
        return NULL;
    }
    memcpy(slot->handle, b->handle, CU_IPC_HANDLE_SIZE);
    slot->base = b->base;
    slot->len = b->len;
    slot->used = m->calls;
    return (char *)(uintptr_t)(slot->at + b->offset);
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

/* Whether the node's other ranks read this rank's input: every input of a
 * reduction, a bcast's root's; an allgather's block is copied out by its
 * own rank. */
static bool mca_coll_strata_direct_in_read(const mca_coll_strata_pipeline_args_t *a)
{
    switch (a->kind) {
    case MCA_COLL_STRATA_PIPE_BCAST:
        return ompi_comm_rank(a->comm) == a->root;
    case MCA_COLL_STRATA_PIPE_ALLGATHER:
        return false;
    default:
        return true;
    }
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
    card->in_read = mca_coll_strata_direct_in_read(a);
    card->ok = d->direct && !d->no_context && NULL != d->maps && NULL != a->sbuf &&
               mca_coll_strata_direct_apart(a, extent, out_bytes) &&
               (!card->in_read || mca_coll_strata_direct_export(d, a->sbuf, bytes, &card->in)) &&
               (0 == out_bytes || mca_coll_strata_direct_export(d, a->out, out_bytes, &card->out));
    __atomic_store_n(&mine->card_serial, serial + 1, __ATOMIC_RELEASE);
}

/* Wait until every local rank's word at `field` (an offset into the
 * flags) reached `value` (it only grows): a wait on the peers' hosts,
 * never on a GPU. */
static void mca_coll_strata_direct_await(mca_coll_strata_shm_t *shm, size_t field, uint64_t value)
{
    unsigned idle = 0;

    while (!mca_coll_strata_pipeline_reached(shm, field, shm->nranks, value)) {
        opal_progress();
        if (++idle > MCA_COLL_STRATA_DIRECT_SPINS) {
            mca_coll_strata_shm_watch(shm); /* a peer that died */
            sched_yield();
        }
    }
}

/* Every peer's buffers this rank reads or writes, mapped; whether all
 * were. */
static bool mca_coll_strata_direct_map_peers(mca_coll_strata_node_device_t *d,
                                             const mca_coll_strata_pipeline_args_t *a)
{
    struct mca_coll_strata_node_device_maps_t *m = d->maps;
    const mca_coll_strata_shm_t *shm = d->super.shm;
    bool ok = true;

    m->calls++;
    for (int r = 0; r < d->nranks; ++r) {
        const mca_coll_strata_shm_card_t *card = &shm->flags[r].card;
        bool window = card->out_hi > card->out_lo;

        m->call.lo[r] = card->out_lo;
        m->call.hi[r] = card->out_hi;
        if (r == d->me) {
            m->call.in[r] = (char *)a->sbuf;
            m->call.out[r] = window ? (char *)a->out : NULL;
            continue;
        }
        m->call.in[r] = card->in_read ? mca_coll_strata_direct_import(d, r, &card->in) : NULL;
        m->call.out[r] = window ? mca_coll_strata_direct_import(d, r, &card->out) : NULL;
        ok = ok && (!card->in_read || NULL != m->call.in[r]) && (!window || NULL != m->call.out[r]);
    }
    return ok;
}

const mca_coll_strata_direct_t *
mca_coll_strata_node_device_direct(mca_coll_strata_node_t *node,
                                   const mca_coll_strata_pipeline_args_t *a, uint64_t serial)
{
    mca_coll_strata_node_device_t *d = MCA_COLL_STRATA_DEV(node);
    mca_coll_strata_shm_t *shm = node->shm;
    mca_coll_strata_shm_flags_t *mine = &shm->flags[d->me];
    bool all = true;

    mca_coll_strata_direct_post(d, a, serial);
    mca_coll_strata_direct_await(shm, offsetof(mca_coll_strata_shm_flags_t, card_serial),
                                 serial + 1);
    for (int r = 0; r < d->nranks; ++r) {
        all = all && shm->flags[r].card.ok;
    }
    if (!all) {
        return NULL; /* every rank read the same cards */
    }
    /* Second round: a rank that could not map a peer's buffer says so,
     * and the call goes through the scratch on every rank. */
    mine->card.mapped = mca_coll_strata_direct_map_peers(d, a);
    __atomic_store_n(&mine->mapped_serial, serial + 1, __ATOMIC_RELEASE);
    mca_coll_strata_direct_await(shm, offsetof(mca_coll_strata_shm_flags_t, mapped_serial),
                                 serial + 1);
    for (int r = 0; r < d->nranks; ++r) {
        all = all && shm->flags[r].card.mapped;
    }
    return all ? &d->maps->call : NULL;
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
