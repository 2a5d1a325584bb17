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
#include "coll_strata_wire_ucp.h"

#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ompi/constants.h"

static long mca_coll_strata_wire_ucp_futex(uint32_t *word, int op, uint32_t value)
{
    return syscall(SYS_futex, word, op, value, NULL, NULL, 0);
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

void mca_coll_strata_wire_ucp_watch_stop(void)
{
    if (W.watcher_running) {
        __atomic_store_n(&W.stop, true, __ATOMIC_RELEASE);
        __atomic_add_fetch(&W.want, 1, __ATOMIC_RELEASE);
        (void)mca_coll_strata_wire_ucp_futex(&W.want, FUTEX_WAKE_PRIVATE, 1);
        pthread_join(W.watcher, NULL);
        W.watcher_running = false;
    }
}
