/*
 * coll/strata wire over a UCP worker of its own (coll_strata_wire.h): what
 * nonblocking calls between nodes send their exchanges on, so that the
 * progress thread can turn them whatever thread level the application
 * asked for.  Open MPI's pml takes no locks in an MPI_THREAD_SINGLE or
 * FUNNELED process: a second thread must not enter it.  This worker is
 * coll/strata's: its calls are serialized by `lock`, whichever thread makes
 * them (the progress thread, or the application's inside an MPI call).
 *
 * One context and worker per process, opened by the first communicator
 * that sets a wire up (UCX's settings as the environment gives them, the
 * transports that can wake a sleeping thread), closed at the component's
 * close.  Per communicator, at its set-up: the rail's members exchange
 * their workers' addresses over the rail communicator, connect to each
 * other and agree on an id that tags their messages:
 *
 *   tag = id (24 bits) | sender's rail rank (20 bits) | the exchange's tag (20 bits)
 *
 * and every receive names its sender exactly, so that messages of different
 * communicators, senders and slots never match each other.  Between two
 * members, UCP keeps a tag's messages in order, as the exchange needs.
 *
 * Endpoints: one per peer process (by its worker's address), made the
 * first time a rail needs it and kept for every later communicator until
 * the component closes, so a communicator's set-up costs two small
 * allgathers and an allreduce over its rail and its release nothing.
 *
 * Failures: an endpoint that reports an error (its peer died, the link
 * broke) marks that peer dead; a receive from it is cancelled and a send
 * to it completes in error, so the exchange fails and passes the news on
 * (coll_strata_xchg.c) instead of waiting for a message that is not coming.
 *
 * Sleeping: the progress thread sleeps on the node's doorbell; before it
 * does, mca_coll_strata_wire_ucp_watch hands the worker to the watcher
 * thread, which arms the worker and waits on its event file descriptor,
 * then wakes the progress thread.  An idle watcher waits on a futex word:
 * no CPU.
 */
#include "coll_strata_wire.h"

#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#include "ompi/constants.h"

#define MCA_COLL_STRATA_WIRE_SLOT_BITS   20
#define MCA_COLL_STRATA_WIRE_SENDER_BITS 20
#define MCA_COLL_STRATA_WIRE_ID_MASK     ((1u << 24) - 1)
/* Most the endpoints' flushes are waited for, all together, at the
 * component's close, before the rest are forced. */
#define MCA_COLL_STRATA_WIRE_CLOSE_S     2.0
/* Most the watcher waits on the event descriptor before it looks again. */
#define MCA_COLL_STRATA_WIRE_WATCH_MS    100

/* One exchange's state on this wire (per slot of the engine). */
typedef struct mca_coll_strata_wire_ucp_xs_t {
    ucp_tag_recv_info_t info;
    int recv_peer, send_peer;
    struct ompi_datatype_t *recv_dtype;
    bool recv_posted;         /* a receive of this step was posted */
    ucs_status_t recv_status; /* once complete */
    ucs_status_t send_status; /* once complete (UCS_OK before) */
} mca_coll_strata_wire_ucp_xs_t;

/* A peer process, by its worker's address: one endpoint per process for
 * every communicator (kept until the component closes; UCC keeps its
 * endpoints the same way), so that a communicator's set-up and release
 * cost no connection.  Entries never move once made. */
typedef struct mca_coll_strata_wire_ucp_peer_t {
    void *address;
    size_t len;
    ucp_ep_h ep;
    int dead; /* its endpoint reported an error */
} mca_coll_strata_wire_ucp_peer_t;

/* One engine's wire: its rail members' peers (NULL: this process). */
struct mca_coll_strata_wire_ucp_t {
    uint64_t id; /* agreed over the rail: the tags' top bits */
    int me, n;   /* rank and size of the rail */
    mca_coll_strata_wire_ucp_peer_t **peers;
    mca_coll_strata_wire_ucp_xs_t *xs;
    int nxs;
};

static struct {
    pthread_mutex_t lock; /* every call on the worker, and what follows */
    bool tried, open;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    int efd;
    uint32_t next_id; /* the next communicator's id, at least */
    /* the ids of this process's engines now (a tag's top bits) */
    uint64_t *live;
    int nlive, live_cap;
    /* the peers connected so far (mca_coll_strata_wire_ucp_peer_t) */
    mca_coll_strata_wire_ucp_peer_t **peers;
    int npeers, peers_cap;
    /* the watcher thread: `want` bumped when the progress thread sleeps */
    pthread_t watcher;
    bool watcher_running, stop;
    uint32_t want;
} mca_coll_strata_wire_ucp_g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .efd = -1,
};

#define W mca_coll_strata_wire_ucp_g

static long mca_coll_strata_wire_ucp_futex(uint32_t *word, int op, uint32_t value)
{
    return syscall(SYS_futex, word, op, value, NULL, NULL, 0);
}

/* The process's context and worker, opened once (the lock held). */
static bool mca_coll_strata_wire_ucp_open(const char **why)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_config_t *config;
    ucs_status_t st;

    if (W.tried) {
        *why = W.open ? NULL : "coll/strata's UCP worker could not be opened";
        return W.open;
    }
    W.tried = true;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    if (UCS_OK != (st = ucp_config_read(NULL, NULL, &config))) {
        *why = "ucp_config_read failed";
        return false;
    }
    st = ucp_init(&params, config, &W.context);
    ucp_config_release(config);
    if (UCS_OK != st) {
        *why = "ucp_init failed";
        return false;
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED; /* `lock` serializes */
    if (UCS_OK != ucp_worker_create(W.context, &wparams, &W.worker)) {
        ucp_cleanup(W.context);
        *why = "ucp_worker_create failed";
        return false;
    }
    if (UCS_OK != ucp_worker_get_address(W.worker, &W.address, &W.address_len)) {
        ucp_worker_destroy(W.worker);
        ucp_cleanup(W.context);
        *why = "ucp_worker_get_address failed";
        return false;
    }
    if (UCS_OK != ucp_worker_get_efd(W.worker, &W.efd)) {
        W.efd = -1; /* the watcher then polls the worker every WATCH_MS */
    }
    W.open = true;
    *why = NULL;
    return true;
}

static void mca_coll_strata_wire_ucp_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    /* no output here: the progress thread may be the one in UCP, and
     * opal_output takes no locks in a single-threaded process; the calls
     * that exchange with the peer fail, and say so in the application's */
    (void)ep;
    (void)status;
    __atomic_store_n(&((mca_coll_strata_wire_ucp_peer_t *)arg)->dead, 1, __ATOMIC_RELEASE);
}

/* Every peer's endpoint closed (the component's close: the peers close
 * theirs at the same time): flushed, then forced once CLOSE_S have passed
 * for them all; the lock held. */
static void mca_coll_strata_wire_ucp_close_peers(void)
{
    double start = mca_coll_strata_now();

    for (int i = 0; i < W.npeers; ++i) {
        mca_coll_strata_wire_ucp_peer_t *peer = W.peers[i];
        bool late = mca_coll_strata_now() - start > MCA_COLL_STRATA_WIRE_CLOSE_S;
        ucp_request_param_t prm;
        ucs_status_ptr_t sp;

        memset(&prm, 0, sizeof(prm));
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        prm.flags = (late || __atomic_load_n(&peer->dead, __ATOMIC_ACQUIRE))
                        ? UCP_EP_CLOSE_FLAG_FORCE
                        : 0;
        sp = ucp_ep_close_nbx(peer->ep, &prm);
        while (UCS_PTR_IS_PTR(sp) && UCS_INPROGRESS == ucp_request_check_status(sp) &&
               mca_coll_strata_now() - start <= MCA_COLL_STRATA_WIRE_CLOSE_S) {
            (void)ucp_worker_progress(W.worker);
        }
        if (UCS_PTR_IS_PTR(sp)) {
            ucp_request_free(sp);
        }
        free(peer->address);
        free(peer);
    }
    free(W.peers);
    W.peers = NULL;
    W.npeers = W.peers_cap = 0;
}

/* The peer of worker address `addr` (len bytes), connected the first time
 * (the lock held); NULL when it cannot be. */
static mca_coll_strata_wire_ucp_peer_t *mca_coll_strata_wire_ucp_peer(const void *addr, size_t len)
{
    mca_coll_strata_wire_ucp_peer_t *peer;
    ucp_ep_params_t ep;

    for (int i = 0; i < W.npeers; ++i) {
        if (W.peers[i]->len == len && 0 == memcmp(W.peers[i]->address, addr, len)) {
            return W.peers[i];
        }
    }
    if (W.npeers == W.peers_cap) {
        int cap = W.peers_cap ? 2 * W.peers_cap : 16;
        mca_coll_strata_wire_ucp_peer_t **grown = realloc(W.peers, sizeof(*grown) * (size_t)cap);

        if (NULL == grown) {
            return NULL;
        }
        W.peers = grown;
        W.peers_cap = cap;
    }
    if (NULL == (peer = calloc(1, sizeof(*peer))) || NULL == (peer->address = malloc(len))) {
        free(peer);
        return NULL;
    }
    memcpy(peer->address, addr, len);
    peer->len = len;
    memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = (const ucp_address_t *)peer->address;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = mca_coll_strata_wire_ucp_ep_error;
    ep.err_handler.arg = peer;
    if (UCS_OK != ucp_ep_create(W.worker, &ep, &peer->ep)) {
        free(peer->address);
        free(peer);
        return NULL;
    }
    W.peers[W.npeers++] = peer;
    return peer;
}

static void mca_coll_strata_wire_ucp_free(struct mca_coll_strata_wire_ucp_t *w)
{
    if (NULL == w) {
        return;
    }
    free(w->peers);
    free(w->xs);
    free(w);
}

/* Every member's address length (-1: no worker) and id, over the rail. */
static int mca_coll_strata_wire_ucp_gather(struct ompi_communicator_t *rail, const void *mine,
                                           void *all, int n, struct ompi_datatype_t *dtype)
{
    return rail->c_coll->coll_allgather(mine, n, dtype, all, n, dtype, rail,
                                        rail->c_coll->coll_allgather_module);
}

/* Every other member's peer, from their gathered addresses (member i's at
 * addrs + i * stride, lens[i] bytes of it). */
static bool mca_coll_strata_wire_ucp_connect(struct mca_coll_strata_wire_ucp_t *w,
                                             const char *addrs, size_t stride,
                                             const int64_t *lens)
{
    bool ok = true;

    pthread_mutex_lock(&W.lock);
    for (int i = 0; ok && i < w->n; ++i) {
        if (i != w->me) {
            w->peers[i] = mca_coll_strata_wire_ucp_peer(addrs + (size_t)i * stride,
                                                        (size_t)lens[i]);
            ok = (NULL != w->peers[i]);
        }
    }
    pthread_mutex_unlock(&W.lock);
    return ok;
}

/* An allreduce of stack values over the rail (MPI_MAX): the steps of the
 * agreement below that every member takes whatever happened before. */
static bool mca_coll_strata_wire_ucp_max(struct ompi_communicator_t *rail, int64_t *v, int n)
{
    return OMPI_SUCCESS == rail->c_coll->coll_allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_MAX,
                                                        rail, rail->c_coll->coll_allreduce_module);
}

/* Whether `id` is an engine's of this process now (the lock held). */
static bool mca_coll_strata_wire_ucp_id_live(uint64_t id)
{
    for (int i = 0; i < W.nlive; ++i) {
        if (W.live[i] == id) {
            return true;
        }
    }
    return false;
}

/* Reserve `id` for an engine of this process (the lock held); false where it
 * is taken or there is no room to note it. */
static bool mca_coll_strata_wire_ucp_id_reserve(uint64_t id)
{
    if (mca_coll_strata_wire_ucp_id_live(id)) {
        return false;
    }
    if (W.nlive == W.live_cap) {
        int cap = W.live_cap ? 2 * W.live_cap : 16;
        uint64_t *grown = realloc(W.live, sizeof(*grown) * (size_t)cap);

        if (NULL == grown) {
            return false;
        }
        W.live = grown;
        W.live_cap = cap;
    }
    W.live[W.nlive++] = id;
    return true;
}

static void mca_coll_strata_wire_ucp_id_free(uint64_t id)
{
    pthread_mutex_lock(&W.lock);
    for (int i = 0; i < W.nlive; ++i) {
        if (W.live[i] == id) {
            W.live[i] = W.live[--W.nlive];
            break;
        }
    }
    pthread_mutex_unlock(&W.lock);
}

/* The rail's id: the largest of the members' proposals, reserved on every
 * member; where some member has it in use already (communicators set up at
 * once in threads of one process), all propose again above it.  Every
 * member takes the same steps: they decide from what they all reduced. */
static bool mca_coll_strata_wire_ucp_id(struct ompi_communicator_t *rail, uint64_t *id)
{
    for (int round = 0; round < 64; ++round) {
        int64_t v[2];
        bool mine;

        pthread_mutex_lock(&W.lock);
        while (mca_coll_strata_wire_ucp_id_live(W.next_id & MCA_COLL_STRATA_WIRE_ID_MASK)) {
            W.next_id++;
        }
        v[0] = (int64_t)(W.next_id & MCA_COLL_STRATA_WIRE_ID_MASK);
        pthread_mutex_unlock(&W.lock);
        v[1] = 0;
        if (!mca_coll_strata_wire_ucp_max(rail, v, 1)) {
            return false;
        }
        pthread_mutex_lock(&W.lock);
        mine = mca_coll_strata_wire_ucp_id_reserve((uint64_t)v[0]);
        W.next_id = (W.next_id > (uint32_t)v[0] + 1) ? W.next_id : (uint32_t)v[0] + 1;
        pthread_mutex_unlock(&W.lock);
        v[1] = mine ? 0 : 1;
        if (!mca_coll_strata_wire_ucp_max(rail, &v[1], 1)) {
            return false;
        }
        if (0 == v[1]) {
            *id = (uint64_t)v[0];
            return true;
        }
        if (mine) {
            mca_coll_strata_wire_ucp_id_free((uint64_t)v[0]);
        }
    }
    return false;
}

/*
 * The rail's agreement on the wire (see coll_strata_wire.h), *w set up on
 * success.  `able`: this member can take part (its worker opens, it has
 * memory).  Every member runs the same collectives in the same order on
 * every path, deciding each step from what they all reduced:
 *   1. an allreduce: whether every member can, the longest address;
 *   2. an allreduce: whether every member found memory for the addresses;
 *   3. two allgathers: the addresses' lengths and the addresses;
 *   4. an allreduce: whether every member connected to every other;
 *   5. the id (mca_coll_strata_wire_ucp_id).
 */
static bool mca_coll_strata_wire_ucp_agree(struct ompi_communicator_t *rail,
                                           struct mca_coll_strata_wire_ucp_t *w, bool able,
                                           const char **why)
{
    int n = ompi_comm_size(rail);
    int64_t v[2], mylen = 0, *lens = NULL;
    char *addrs = NULL, *own = NULL;
    size_t maxlen;
    bool ok;

    pthread_mutex_lock(&W.lock);
    able = able && mca_coll_strata_wire_ucp_open(why);
    mylen = able ? (int64_t)W.address_len : 0;
    pthread_mutex_unlock(&W.lock);
    v[0] = able ? 0 : 1; /* some member cannot */
    v[1] = mylen;
    if (!mca_coll_strata_wire_ucp_max(rail, v, 2) || 0 != v[0]) {
        *why = (NULL != *why) ? *why : "a rail member cannot open a UCP worker";
        return false;
    }
    maxlen = (size_t)v[1];
    lens = malloc(sizeof(int64_t) * (size_t)n);
    addrs = malloc(maxlen * (size_t)n);
    own = calloc(1, maxlen);
    v[0] = (NULL == lens || NULL == addrs || NULL == own) ? 1 : 0;
    if (!mca_coll_strata_wire_ucp_max(rail, v, 1) || 0 != v[0]) {
        *why = "a rail member has no memory for the addresses";
        free(lens);
        free(addrs);
        free(own);
        return false;
    }
    memcpy(own, W.address, W.address_len);
    ok = OMPI_SUCCESS == mca_coll_strata_wire_ucp_gather(rail, &mylen, lens, 1, MPI_INT64_T) &&
         OMPI_SUCCESS == mca_coll_strata_wire_ucp_gather(rail, own, addrs, (int)maxlen, MPI_BYTE);
    ok = ok && mca_coll_strata_wire_ucp_connect(w, addrs, maxlen, lens);
    free(lens);
    free(addrs);
    free(own);
    v[0] = ok ? 0 : 1;
    if (!mca_coll_strata_wire_ucp_max(rail, v, 1) || 0 != v[0]) {
        *why = "a rail member could not connect to the others";
        return false;
    }
    if (!mca_coll_strata_wire_ucp_id(rail, &w->id)) {
        *why = "the rail could not agree on an id";
        return false;
    }
    return true;
}

bool mca_coll_strata_wire_setup(mca_coll_strata_engine_t *e)
{
    struct ompi_communicator_t *rail = e->topo.rail_comm;
    struct mca_coll_strata_wire_ucp_t *w;
    const char *why = NULL;
    bool able;

    if (NULL == rail || e->nxchgs <= 0) {
        return false;
    }
    w = calloc(1, sizeof(*w));
    if (NULL != w) {
        w->me = ompi_comm_rank(rail);
        w->n = ompi_comm_size(rail);
        w->peers = calloc((size_t)w->n, sizeof(*w->peers));
        w->nxs = e->nxchgs;
        w->xs = calloc((size_t)w->nxs, sizeof(*w->xs));
    }
    /* a member without memory, or beyond the tag's fields, still takes
     * every step of the agreement (its peers are in it): it says it cannot */
    able = NULL != w && NULL != w->peers && NULL != w->xs &&
           (uint64_t)ompi_comm_size(rail) < (1u << MCA_COLL_STRATA_WIRE_SENDER_BITS) &&
           (uint64_t)e->nxchgs + 1 < (1u << MCA_COLL_STRATA_WIRE_SLOT_BITS);
    if (!able) {
        why = "no memory, or too many members or slots for the tag";
    }
    if (NULL == w || !mca_coll_strata_wire_ucp_agree(rail, w, able, &why)) {
        MCA_COLL_STRATA_VERBOSE(10,
                                "%s: no UCP wire (%s): its nonblocking calls progress inside "
                                "MPI calls only",
                                rail->c_name, (NULL != why) ? why : "no memory");
        mca_coll_strata_wire_ucp_free(w);
        return false;
    }
    e->wire_ucp = w;
    MCA_COLL_STRATA_VERBOSE(10, "%s: UCP wire set up (%d members, id %llu)", rail->c_name, w->n,
                            (unsigned long long)w->id);
    return true;
}

void mca_coll_strata_wire_ucp_release(mca_coll_strata_engine_t *e)
{
    if (NULL != e->wire_ucp) {
        mca_coll_strata_wire_ucp_id_free(e->wire_ucp->id);
    }
    mca_coll_strata_wire_ucp_free(e->wire_ucp);
    e->wire_ucp = NULL;
}

static uint64_t mca_coll_strata_wire_ucp_tag(const struct mca_coll_strata_wire_ucp_t *w, int sender,
                                             int tag)
{
    return (w->id << (MCA_COLL_STRATA_WIRE_SENDER_BITS + MCA_COLL_STRATA_WIRE_SLOT_BITS)) |
           ((uint64_t)sender << MCA_COLL_STRATA_WIRE_SLOT_BITS) | (uint64_t)tag;
}

static mca_coll_strata_wire_ucp_xs_t *mca_coll_strata_wire_ucp_xs(mca_coll_strata_xchg_t *x)
{
    return (mca_coll_strata_wire_ucp_xs_t *)x->wire_state;
}

static size_t mca_coll_strata_wire_ucp_bytes(struct ompi_datatype_t *dtype, size_t count)
{
    ptrdiff_t extent;

    ompi_datatype_type_extent(dtype, &extent);
    return count * (size_t)extent;
}

static int mca_coll_strata_wire_ucp_recv(mca_coll_strata_xchg_t *x, void *buf, size_t count,
                                         struct ompi_datatype_t *dtype, int peer)
{
    struct mca_coll_strata_wire_ucp_t *w = x->wire_ctx;
    mca_coll_strata_wire_ucp_xs_t *xs = mca_coll_strata_wire_ucp_xs(x);
    ucp_request_param_t prm;
    ucs_status_ptr_t sp;

    memset(&prm, 0, sizeof(prm));
    /* always a request: its test fills in what arrived */
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    prm.recv_info.tag_info = &xs->info;
    xs->info.length = 0;
    pthread_mutex_lock(&W.lock);
    sp = ucp_tag_recv_nbx(W.worker, buf, mca_coll_strata_wire_ucp_bytes(dtype, count),
                          mca_coll_strata_wire_ucp_tag(w, peer, x->tag), UINT64_MAX, &prm);
    pthread_mutex_unlock(&W.lock);
    if (UCS_PTR_IS_ERR(sp)) {
        x->reqs[0] = NULL;
        return OMPI_ERROR;
    }
    xs->recv_posted = true;
    xs->recv_peer = peer;
    xs->recv_dtype = dtype;
    xs->recv_status = UCS_PTR_IS_PTR(sp) ? UCS_INPROGRESS : UCS_OK;
    x->reqs[0] = UCS_PTR_IS_PTR(sp) ? sp : NULL;
    return OMPI_SUCCESS;
}

static int mca_coll_strata_wire_ucp_send(mca_coll_strata_xchg_t *x, const void *buf, size_t count,
                                         struct ompi_datatype_t *dtype, int peer)
{
    struct mca_coll_strata_wire_ucp_t *w = x->wire_ctx;
    mca_coll_strata_wire_ucp_xs_t *xs = mca_coll_strata_wire_ucp_xs(x);
    ucp_request_param_t prm;
    ucs_status_ptr_t sp;

    memset(&prm, 0, sizeof(prm));
    x->reqs[1] = NULL;
    if (__atomic_load_n(&w->peers[peer]->dead, __ATOMIC_ACQUIRE)) {
        xs->send_status = UCS_ERR_UNREACHABLE; /* taken: it completes in error */
        return OMPI_SUCCESS;
    }
    pthread_mutex_lock(&W.lock);
    sp = ucp_tag_send_nbx(w->peers[peer]->ep, buf, mca_coll_strata_wire_ucp_bytes(dtype, count),
                          mca_coll_strata_wire_ucp_tag(w, w->me, x->tag), &prm);
    pthread_mutex_unlock(&W.lock);
    if (UCS_PTR_IS_ERR(sp)) {
        /* refused: the exchange posts it again, as the news of its
         * failure (coll_strata_xchg.c), until it is taken */
        return OMPI_ERR_TEMP_OUT_OF_RESOURCE;
    }
    xs->send_peer = peer;
    if (UCS_PTR_IS_PTR(sp)) {
        x->reqs[1] = sp;
    }
    return OMPI_SUCCESS;
}

/* Progress the worker until it has nothing more (the lock held); whether
 * it had anything. */
static bool mca_coll_strata_wire_ucp_drain(void)
{
    bool any = false;

    for (int i = 0; i < 64 && 0 != ucp_worker_progress(W.worker); ++i) {
        any = true;
    }
    return any;
}

static bool mca_coll_strata_wire_ucp_test(mca_coll_strata_xchg_t *x, int *rc, size_t *received)
{
    struct mca_coll_strata_wire_ucp_t *w = x->wire_ctx;
    mca_coll_strata_wire_ucp_xs_t *xs = mca_coll_strata_wire_ucp_xs(x);
    bool pending = false;

    pthread_mutex_lock(&W.lock);
    (void)mca_coll_strata_wire_ucp_drain();
    if (NULL != x->reqs[0]) {
        ucs_status_t st = ucp_tag_recv_request_test(x->reqs[0], &xs->info);

        if (UCS_INPROGRESS == st) {
            pending = true;
            if (__atomic_load_n(&w->peers[xs->recv_peer]->dead, __ATOMIC_ACQUIRE)) {
                ucp_request_cancel(W.worker, x->reqs[0]); /* completes CANCELED */
            }
        } else {
            xs->recv_status = st;
            ucp_request_free(x->reqs[0]);
            x->reqs[0] = NULL;
        }
    }
    if (NULL != x->reqs[1]) {
        ucs_status_t st = ucp_request_check_status(x->reqs[1]);

        if (UCS_INPROGRESS == st) {
            pending = true;
        } else {
            xs->send_status = st;
            ucp_request_free(x->reqs[1]);
            x->reqs[1] = NULL;
            if (UCS_OK != st) {
                /* nothing more reaches that peer on this endpoint: its
                 * receives fail (cancelled), as for a peer that died */
                __atomic_store_n(&w->peers[xs->send_peer]->dead, 1, __ATOMIC_RELEASE);
            }
        }
    }
    pthread_mutex_unlock(&W.lock);
    if (pending) {
        return false;
    }
    *rc = OMPI_SUCCESS;
    *received = 0;
    if (xs->recv_posted) {
        if (UCS_ERR_MESSAGE_TRUNCATED == xs->recv_status) {
            *received = SIZE_MAX; /* the news of a failure: longer than wanted */
        } else if (UCS_OK != xs->recv_status) {
            *rc = OMPI_ERROR;
        } else {
            /* bytes in the receive's elements, as the pml counts them */
            size_t size;
            ptrdiff_t extent;

            ompi_datatype_type_size(xs->recv_dtype, &size);
            ompi_datatype_type_extent(xs->recv_dtype, &extent);
            *received = (0 == xs->info.length % (size_t)extent)
                            ? xs->info.length / (size_t)extent * size
                            : SIZE_MAX;
        }
    }
    if (UCS_OK != xs->send_status) {
        *rc = OMPI_ERROR;
    }
    xs->recv_posted = false;
    xs->send_status = UCS_OK;
    return true;
}

static const mca_coll_strata_wire_ops_t mca_coll_strata_wire_ucp = {
    .name = "ucp wire",
    .recv = mca_coll_strata_wire_ucp_recv,
    .send = mca_coll_strata_wire_ucp_send,
    .test = mca_coll_strata_wire_ucp_test,
};

void mca_coll_strata_wire_ucp_bind(mca_coll_strata_engine_t *e, mca_coll_strata_xchg_t *x, int slot)
{
    x->wire = &mca_coll_strata_wire_ucp;
    x->wire_ctx = e->wire_ucp;
    x->wire_state = &e->wire_ucp->xs[slot];
    e->wire_ucp->xs[slot].send_status = UCS_OK;
    e->wire_ucp->xs[slot].recv_posted = false;
}

static void *mca_coll_strata_wire_ucp_watcher(void *arg)
{
    uint32_t seen = 0;

    (void)arg;
    for (;;) {
        uint32_t want = __atomic_load_n(&W.want, __ATOMIC_ACQUIRE);
        ucs_status_t st;

        if (__atomic_load_n(&W.stop, __ATOMIC_ACQUIRE)) {
            break;
        }
        if (want == seen) {
            (void)mca_coll_strata_wire_ucp_futex(&W.want, FUTEX_WAIT_PRIVATE, seen);
            continue;
        }
        seen = want;
        pthread_mutex_lock(&W.lock);
        st = (W.efd >= 0) ? ucp_worker_arm(W.worker) : UCS_ERR_UNSUPPORTED;
        pthread_mutex_unlock(&W.lock);
        if (UCS_OK == st || UCS_ERR_UNSUPPORTED == st) {
            struct pollfd pfd = {.fd = W.efd, .events = POLLIN};

            /* a message, or WATCH_MS: then the progress thread looks */
            (void)poll(&pfd, (W.efd >= 0) ? 1 : 0, MCA_COLL_STRATA_WIRE_WATCH_MS);
        }
        /* UCS_ERR_BUSY: events came after the progress thread's last look */
        if (!__atomic_load_n(&W.stop, __ATOMIC_ACQUIRE)) {
            mca_coll_strata_progress_wake();
        }
    }
    return NULL;
}

bool mca_coll_strata_wire_ucp_watch(void)
{
    bool had;

    pthread_mutex_lock(&W.lock);
    if (!W.open) {
        pthread_mutex_unlock(&W.lock);
        return true;
    }
    /* what came since the caller's last look: the caller looks again */
    had = mca_coll_strata_wire_ucp_drain();
    if (!had && !W.watcher_running) {
        W.stop = false;
        W.watcher_running =
            (0 == pthread_create(&W.watcher, NULL, mca_coll_strata_wire_ucp_watcher, NULL));
    }
    pthread_mutex_unlock(&W.lock);
    if (had) {
        return false;
    }
    __atomic_add_fetch(&W.want, 1, __ATOMIC_RELEASE);
    (void)mca_coll_strata_wire_ucp_futex(&W.want, FUTEX_WAKE_PRIVATE, 1);
    return true;
}

void mca_coll_strata_wire_ucp_finalize(void)
{
    if (W.watcher_running) {
        __atomic_store_n(&W.stop, true, __ATOMIC_RELEASE);
        __atomic_add_fetch(&W.want, 1, __ATOMIC_RELEASE);
        (void)mca_coll_strata_wire_ucp_futex(&W.want, FUTEX_WAKE_PRIVATE, 1);
        pthread_join(W.watcher, NULL);
        W.watcher_running = false;
    }
    if (W.open) {
        pthread_mutex_lock(&W.lock);
        mca_coll_strata_wire_ucp_close_peers();
        pthread_mutex_unlock(&W.lock);
        ucp_worker_release_address(W.worker, W.address);
        ucp_worker_destroy(W.worker);
        ucp_cleanup(W.context);
        W.open = false;
    }
    W.tried = false;
}
