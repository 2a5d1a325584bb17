/*
 * coll/strata's UCP wire, set up (coll_strata_wire_ucp.h): the process's
 * context and worker, opened by the first rail that needs them and closed
 * at the component's close; one endpoint per peer process, kept for every
 * communicator; and per communicator, the rail's agreement: every member
 * takes the same collectives in the same order on every path, deciding
 * each step from what they all reduced (see mca_coll_strata_wire_ucp_agree).
 */
#include "coll_strata_wire_ucp.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"

struct mca_coll_strata_wire_ucp_global_t mca_coll_strata_wire_ucp_g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .efd = -1,
};

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
        prm.flags =
            (late || __atomic_load_n(&peer->dead, __ATOMIC_ACQUIRE)) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
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
                                             const char *addrs, size_t stride, const int64_t *lens)
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

void mca_coll_strata_wire_ucp_finalize(void)
{
    mca_coll_strata_wire_ucp_watch_stop();
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
