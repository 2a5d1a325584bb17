/*
 * coll/strata network figures: the alpha and beta of the inter-node cost
 * model for one communicator, configured (coll_strata_allreduce_inter_*),
 * measured at set-up over the pml, or taken from an earlier measurement.
 */
#include "coll_strata_module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/mca/pml/pml.h"
#include "opal/mca/btl/base/base.h"

/*
 * The network figures of the cost model (coll_strata_allreduce_inter_*; 0
 * asks for a measurement).  The leaders of nodes 0 and 1 time round trips
 * over the pml on their rail; node 0's leader, comm rank 0, holds the
 * timings and broadcasts them over the whole communicator.  Every rank
 * decides each call's algorithm itself from these figures, so every rank
 * must hold bitwise the same ones: ranks deciding from figures of their own
 * could run different algorithms in one call, and hang.
 *
 * How a node's rails share its network is measured too, where the rails
 * run at once: after the leaders' measurement, local rank r of nodes 0 and
 * 1 time the two large sizes on rail r, every rail at the same time; the
 * slowest rail's beta against the leaders' alone gives the extra time per
 * further rail (0: each rail has a link of its own, 1: they share one).
 *
 * A process keeps the figures it was given, for later communicators.  Which
 * communicators a process took part in differs between processes (some may
 * have none), so at set-up comm rank 0 broadcasts its cache, never each
 * rank its own, and the leaders measure only when rank 0 has none: every
 * rank learns that from the same broadcast, so the decision to measure is
 * collective too.
 */
enum {
    MCA_COLL_STRATA_NET_VALID,     /* 1: the figures below hold a measurement */
    MCA_COLL_STRATA_NET_ALPHA,     /* seconds per message */
    MCA_COLL_STRATA_NET_BETA,      /* seconds per byte (follows alpha) */
    MCA_COLL_STRATA_NET_SMALL_RTT, /* what they were computed from, for verbose output */
    MCA_COLL_STRATA_NET_MID_RTT,
    MCA_COLL_STRATA_NET_LARGE_RTT,
    MCA_COLL_STRATA_NET_MS, /* the measurement's time on comm rank 0, all of it */
    /* the rails at once: beta of the slowest, how many, and the extra
     * share per further rail (0 when not measured: one rail per node) */
    MCA_COLL_STRATA_NET_RAILS_BETA,
    MCA_COLL_STRATA_NET_RAILS,
    MCA_COLL_STRATA_NET_RAIL_SHARE,
    /* the sender's CPU time per small message, in a burst */
    MCA_COLL_STRATA_NET_OVERHEAD,
    /* bytes the measurement sent from node 0 (leaders and rails) */
    MCA_COLL_STRATA_NET_BYTES,
    MCA_COLL_STRATA_NET_FIGURES
};

/*
 * The measurement's bounds.  Each timed phase (the leaders' large round
 * trips, the rails at once) stops repeating once it has taken
 * MCA_COLL_STRATA_NET_BUDGET_S with one timed repetition at least (3 at
 * most): on a fast network it repeats for the best of 3, on a slow one a
 * repetition is long enough to time well once.  The rails move messages
 * sized from the leaders' bandwidth, MCA_COLL_STRATA_NET_RAIL_S of one
 * rail's time for the larger (within [256 KiB, 1 MiB]), so a node with k
 * rails on a slow link sends k x about a MiB, not k x 5 MiB.  8 ms, not
 * less: a link shaped by a token bucket lets a burst through at full speed
 * (the test cluster's: 256 KB at 1 Gbit/s), and 2 ms of messages rode it
 * whole, so that two rails at once looked no slower than one.  Once
 * measured, the figures serve every later communicator of the job (rank
 * 0's cache, broadcast): the network between the same nodes has not
 * changed.  At 1 Gbit/s, 4 nodes x 2 ranks: about 5 MB from node 0 in 46 ms (it was
 * about 16 MB in 139 ms).
 */
#define MCA_COLL_STRATA_NET_BUDGET_S 0.010
#define MCA_COLL_STRATA_NET_RAIL_S   0.008

/* The rail's tag: the pipeline's are 1 + slot, and it starts after set-up. */
#define MCA_COLL_STRATA_NET_TAG   0
/* A small message for alpha; for beta, two large ones whose difference the
 * link's bandwidth dominates from 1 Gbit/s (6.3 ms) to NDR (16 us against
 * 1-2 us of latency).  A difference, not one size against the small
 * message: what a large message costs once (a rendezvous handshake, a
 * token bucket's burst let through at the line's speed, TCP's window after
 * a pause) cancels out. */
#define MCA_COLL_STRATA_NET_SMALL 8
#define MCA_COLL_STRATA_NET_MID   ((size_t)256 * 1024)
#define MCA_COLL_STRATA_NET_LARGE ((size_t)1024 * 1024)

static double mca_coll_strata_network_cache[MCA_COLL_STRATA_NET_FIGURES];
static opal_mutex_t mca_coll_strata_network_cache_lock = OPAL_MUTEX_STATIC_INIT;

static void mca_coll_strata_network_cache_copy(double *dst, const double *src)
{
    OPAL_THREAD_LOCK(&mca_coll_strata_network_cache_lock);
    memcpy(dst, src, sizeof(mca_coll_strata_network_cache));
    OPAL_THREAD_UNLOCK(&mca_coll_strata_network_cache_lock);
}

/* One round trip on the rail: `bytes` of buf from node 0's leader (the
 * timer) to node 1's, a small message back.  A large message that goes one
 * way only costs half of a ping-pong's time on a slow link, and a shaped
 * link's token bucket (tc tbf) refills only during the small reply. */
static int mca_coll_strata_network_round_trip(struct ompi_communicator_t *rail, bool timer,
                                              char *buf, size_t bytes)
{
    char reply[MCA_COLL_STRATA_NET_SMALL] = {0};
    int rc;

    if (timer) {
        rc = MCA_PML_CALL(send(buf, bytes, MPI_BYTE, 1, MCA_COLL_STRATA_NET_TAG,
                               MCA_PML_BASE_SEND_STANDARD, rail));
        if (OMPI_SUCCESS == rc) {
            rc = MCA_PML_CALL(recv(reply, sizeof(reply), MPI_BYTE, 1, MCA_COLL_STRATA_NET_TAG, rail,
                                   MPI_STATUS_IGNORE));
        }
        return rc;
    }
    rc = MCA_PML_CALL(
        recv(buf, bytes, MPI_BYTE, 0, MCA_COLL_STRATA_NET_TAG, rail, MPI_STATUS_IGNORE));
    if (OMPI_SUCCESS == rc) {
        rc = MCA_PML_CALL(send(reply, sizeof(reply), MPI_BYTE, 0, MCA_COLL_STRATA_NET_TAG,
                               MCA_PML_BASE_SEND_STANDARD, rail));
    }
    return rc;
}

/* The shortest of `repeats` round trips of `bytes`, after `warmup` untimed
 * ones (the first messages open connections and grow windows). */
static int mca_coll_strata_network_time(struct ompi_communicator_t *rail, bool timer, char *buf,
                                        size_t bytes, int warmup, int repeats, double *best)
{
    int rc = OMPI_SUCCESS;

    for (int i = 0; i < warmup && OMPI_SUCCESS == rc; ++i) {
        rc = mca_coll_strata_network_round_trip(rail, timer, buf, bytes);
    }
    for (int i = 0; i < repeats && OMPI_SUCCESS == rc; ++i) {
        double start = mca_coll_strata_now(), t;

        rc = mca_coll_strata_network_round_trip(rail, timer, buf, bytes);
        t = mca_coll_strata_now() - start;
        *best = (0 == i || t < *best) ? t : *best;
    }
    return rc;
}

/* The timer's time per message of a burst of small sends (eager: each
 * returns once the pml holds its bytes), the shortest of 4 bursts after
 * one untimed: the CPU a message costs its sender, which no overlap of
 * exchanges hides (the cost model's overhead).  The peer's one reply ends
 * each burst, so that bursts do not pile up in its queue. */
#define MCA_COLL_STRATA_NET_BURST 32
static int mca_coll_strata_network_time_burst(struct ompi_communicator_t *rail, bool timer,
                                              char *buf, double *per_msg)
{
    int rc = OMPI_SUCCESS;

    for (int i = 0; i < 5 && OMPI_SUCCESS == rc; ++i) {
        double start = mca_coll_strata_now(), t = 0.0;

        for (int j = 0; j < MCA_COLL_STRATA_NET_BURST && OMPI_SUCCESS == rc; ++j) {
            rc = timer
                     ? MCA_PML_CALL(send(buf, MCA_COLL_STRATA_NET_SMALL, MPI_BYTE, 1,
                                         MCA_COLL_STRATA_NET_TAG, MCA_PML_BASE_SEND_STANDARD, rail))
                     : MCA_PML_CALL(recv(buf, MCA_COLL_STRATA_NET_SMALL, MPI_BYTE, 0,
                                         MCA_COLL_STRATA_NET_TAG, rail, MPI_STATUS_IGNORE));
        }
        t = (mca_coll_strata_now() - start) / MCA_COLL_STRATA_NET_BURST;
        if (OMPI_SUCCESS == rc) {
            rc = timer ? MCA_PML_CALL(recv(buf, MCA_COLL_STRATA_NET_SMALL, MPI_BYTE, 1,
                                           MCA_COLL_STRATA_NET_TAG, rail, MPI_STATUS_IGNORE))
                       : MCA_PML_CALL(send(buf, MCA_COLL_STRATA_NET_SMALL, MPI_BYTE, 0,
                                           MCA_COLL_STRATA_NET_TAG, MCA_PML_BASE_SEND_STANDARD,
                                           rail));
        }
        if (i > 0) {
            *per_msg = (1 == i || t < *per_msg) ? t : *per_msg;
        }
    }
    return rc;
}

/* Before each pair of large round trips the timer says whether one
 * follows (go = 1) or the phase is over (0). */
static int mca_coll_strata_network_go(struct ompi_communicator_t *rail, bool timer, int *go)
{
    if (timer) {
        return MCA_PML_CALL(
            send(go, 1, MPI_INT, 1, MCA_COLL_STRATA_NET_TAG, MCA_PML_BASE_SEND_STANDARD, rail));
    }
    return MCA_PML_CALL(recv(go, 1, MPI_INT, 0, MCA_COLL_STRATA_NET_TAG, rail, MPI_STATUS_IGNORE));
}

/* The two large sizes in turn, so that each starts from the state the
 * other left (a drained token bucket, a window just used): one pair to warm
 * up, then timed pairs within the budget (see the top).  *bytes: what the
 * timer sent. */
static int mca_coll_strata_network_time_large(struct ompi_communicator_t *rail, bool timer,
                                              char *buf, double *mid_rtt, double *large_rtt,
                                              double *bytes)
{
    double start = mca_coll_strata_now();
    int rc = OMPI_SUCCESS, go = 1;

    for (int i = 0; i < 4 && OMPI_SUCCESS == rc; ++i) {
        double mid = 0.0, large = 0.0;

        if (timer) {
            go = (i < 2) || (mca_coll_strata_now() - start < MCA_COLL_STRATA_NET_BUDGET_S);
        }
        rc = mca_coll_strata_network_go(rail, timer, &go);
        if (OMPI_SUCCESS != rc || !go) {
            break;
        }
        if (1 == i) {
            start = mca_coll_strata_now(); /* the budget is for the timed pairs */
        }
        rc = mca_coll_strata_network_time(rail, timer, buf, MCA_COLL_STRATA_NET_MID, 0, 1, &mid);
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_strata_network_time(rail, timer, buf, MCA_COLL_STRATA_NET_LARGE, 0, 1,
                                              &large);
        }
        *bytes += (double)(MCA_COLL_STRATA_NET_MID + MCA_COLL_STRATA_NET_LARGE);
        if (i > 0) { /* the first pair warms up */
            *mid_rtt = (1 == i || mid < *mid_rtt) ? mid : *mid_rtt;
            *large_rtt = (1 == i || large < *large_rtt) ? large : *large_rtt;
        }
    }
    return rc;
}

/* The two ends of a rail tell each other whether they can take part (have
 * the large buffer), so that neither waits for a message not coming. */
static int mca_coll_strata_network_agree(struct ompi_communicator_t *rail, bool timer, int mine,
                                         int *theirs)
{
    int rc;

    if (timer) {
        rc = MCA_PML_CALL(
            send(&mine, 1, MPI_INT, 1, MCA_COLL_STRATA_NET_TAG, MCA_PML_BASE_SEND_STANDARD, rail));
        if (OMPI_SUCCESS == rc) {
            rc = MCA_PML_CALL(
                recv(theirs, 1, MPI_INT, 1, MCA_COLL_STRATA_NET_TAG, rail, MPI_STATUS_IGNORE));
        }
        return rc;
    }
    rc =
        MCA_PML_CALL(recv(theirs, 1, MPI_INT, 0, MCA_COLL_STRATA_NET_TAG, rail, MPI_STATUS_IGNORE));
    if (OMPI_SUCCESS == rc) {
        rc = MCA_PML_CALL(
            send(&mine, 1, MPI_INT, 0, MCA_COLL_STRATA_NET_TAG, MCA_PML_BASE_SEND_STANDARD, rail));
    }
    return rc;
}

/*
 * Run by the leaders of nodes 0 and 1 on their rail (ranks 0 and 1 of local
 * rank 0's rail, which every set-up node has); node 0's fills `figures`.
 * Each figure is the shortest round trip, of 32 small ones and of 3 of
 * each large size: the least disturbed, where the other ranks spinning in
 * the broadcast that follows share the cores (about 30 ms on a 1 Gbit/s
 * link, once per process).  The two first tell each other whether they
 * have the large buffer, so that neither waits for a message that is not
 * coming.
 */
static void mca_coll_strata_network_measure(mca_coll_strata_module_t *module, double *figures)
{
    struct ompi_communicator_t *rail = module->engine.topo.rail_comm;
    bool timer = (0 == module->engine.topo.node_index);
    char small[MCA_COLL_STRATA_NET_SMALL] = {0};
    char *large = calloc(1, MCA_COLL_STRATA_NET_LARGE);
    double start = mca_coll_strata_now(), small_rtt = 0.0, mid_rtt = 0.0, large_rtt = 0.0;
    double overhead = 0.0, bytes = 0.0;
    int mine = (NULL != large), theirs = 0, rc;

    rc = mca_coll_strata_network_agree(rail, timer, mine, &theirs);
    if (OMPI_SUCCESS == rc && mine && theirs) {
        rc = mca_coll_strata_network_time(rail, timer, small, sizeof(small), 8, 32, &small_rtt);
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_strata_network_time_burst(rail, timer, small, &overhead);
        }
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_strata_network_time_large(rail, timer, large, &mid_rtt, &large_rtt,
                                                    &bytes);
        }
        if (OMPI_SUCCESS == rc && timer) {
            mca_coll_strata_network_from_round_trips(
                small_rtt, mid_rtt, MCA_COLL_STRATA_NET_MID, large_rtt, MCA_COLL_STRATA_NET_LARGE,
                &figures[MCA_COLL_STRATA_NET_ALPHA], &figures[MCA_COLL_STRATA_NET_BETA]);
            figures[MCA_COLL_STRATA_NET_OVERHEAD] =
                mca_coll_strata_network_overhead(overhead, figures[MCA_COLL_STRATA_NET_ALPHA]);
            figures[MCA_COLL_STRATA_NET_SMALL_RTT] = small_rtt;
            figures[MCA_COLL_STRATA_NET_MID_RTT] = mid_rtt;
            figures[MCA_COLL_STRATA_NET_LARGE_RTT] = large_rtt;
            figures[MCA_COLL_STRATA_NET_MS] = (mca_coll_strata_now() - start) * 1e3;
            figures[MCA_COLL_STRATA_NET_BYTES] = bytes + 40.0 * MCA_COLL_STRATA_NET_SMALL +
                                                 5.0 * MCA_COLL_STRATA_NET_BURST *
                                                     MCA_COLL_STRATA_NET_SMALL;
            figures[MCA_COLL_STRATA_NET_VALID] = 1.0;
        }
    }
    free(large);
}

/* One exchange of `bytes` each way on the rail, both ends sending at once
 * (the pattern of the rail path's steps); the time it took. */
static int mca_coll_strata_network_exchange(struct ompi_communicator_t *rail, int peer, char *out,
                                            char *in, size_t bytes, double *t)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    double start = mca_coll_strata_now();
    int rc;

    rc = MCA_PML_CALL(isend(out, bytes, MPI_BYTE, peer, MCA_COLL_STRATA_NET_TAG,
                            MCA_PML_BASE_SEND_STANDARD, rail, &req));
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = MCA_PML_CALL(
        recv(in, bytes, MPI_BYTE, peer, MCA_COLL_STRATA_NET_TAG, rail, MPI_STATUS_IGNORE));
    if (OMPI_SUCCESS == rc) {
        rc = ompi_request_wait(&req, MPI_STATUS_IGNORE);
    } else {
        (void)ompi_request_wait(&req, MPI_STATUS_IGNORE);
    }
    *t = mca_coll_strata_now() - start;
    return rc;
}

/*
 * The rails at once (collective over comm; see the top).  Local rank r of
 * nodes 0 and 1 exchange two sizes both ways on rail r, as the rail path's
 * steps do, every rail at the same time: each exchange starts when an
 * allreduce over comm ends (the one that also takes the longest time of the
 * exchange before, and carries comm rank 0's word: the larger size, and
 * whether to stop), and what counts is that longest time, the time the
 * node's rails together needed to move their bytes.  One rail alone takes
 * about the leaders' one-way time on a full-duplex link.  A small exchange
 * first opens the connections; then pairs (the smaller size, the larger)
 * within the budget (see the top).  Comm rank 0 gets the mean of each size
 * and sets the rail figures of `figures` if the leaders' measurement there
 * succeeded.
 */
static int mca_coll_strata_network_rails(mca_coll_strata_module_t *module,
                                         struct ompi_communicator_t *comm, double *figures)
{
    struct ompi_communicator_t *rail = module->engine.topo.rail_comm;
    int ppn = module->engine.topo.ppn_min, timer = (0 == module->engine.topo.node_index),
        theirs = 0;
    bool member = module->engine.topo.node_index < 2 && module->engine.topo.local_rank < ppn &&
                  NULL != rail;
    bool root = (0 == ompi_comm_rank(comm));
    char *bufs = member ? calloc(2, MCA_COLL_STRATA_NET_LARGE) : NULL;
    double start = mca_coll_strata_now(), timed_from = 0.0, alpha, beta = 0.0;
    double sum[2] = {0.0, 0.0}, mine[3], all[3] = {0.0, 0.0, 0.0};
    size_t sizes[2] = {MCA_COLL_STRATA_NET_MID, MCA_COLL_STRATA_NET_LARGE};
    int rc = OMPI_SUCCESS, xrc = OMPI_SUCCESS, pairs = 0;
    double t = 0.0;

    if (member) {
        xrc = mca_coll_strata_network_agree(rail, timer, NULL != bufs, &theirs);
    }
    member = member && NULL != bufs && theirs && OMPI_SUCCESS == xrc;
    /* the larger size, from the leaders' beta (comm rank 0's), 4 KiB whole */
    if (root && 0.0 != figures[MCA_COLL_STRATA_NET_VALID] &&
        figures[MCA_COLL_STRATA_NET_BETA] > 0.0) {
        double want = MCA_COLL_STRATA_NET_RAIL_S / figures[MCA_COLL_STRATA_NET_BETA];

        want = (want < MCA_COLL_STRATA_NET_MID)     ? MCA_COLL_STRATA_NET_MID
               : (want > MCA_COLL_STRATA_NET_LARGE) ? MCA_COLL_STRATA_NET_LARGE
                                                    : want;
        sizes[1] = ((size_t)want + 4095) & ~(size_t)4095;
    }
    /* exchange j: 0 opens the connections, odd ones the smaller size, even
     * ones the larger; allreduce j starts exchange j and ends j - 1 */
    for (int j = 0;; ++j) {
        mine[0] = t;
        mine[1] = 0.0;
        mine[2] = root ? (double)sizes[1] : 0.0;
        if (root && 1 == j % 2) {
            /* exchange j would begin a pair; (j - 1) / 2 pairs end with
             * this allreduce: another one? */
            int done = (j - 1) / 2;
            bool spent = done >= 1 &&
                         mca_coll_strata_now() - timed_from >= MCA_COLL_STRATA_NET_BUDGET_S;

            mine[1] = (done >= 3 || spent) ? 1.0 : 0.0;
        }
        rc = MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, mine, all, 3, MPI_DOUBLE, MPI_MAX);
        if (OMPI_SUCCESS != rc) {
            break;
        }
        sizes[1] = (size_t)all[2];
        sizes[0] = sizes[1] / 4;
        if (j >= 2) {
            sum[j % 2 ? 1 : 0] += all[0]; /* exchange j - 1's longest time */
            pairs += (0 == j % 2) ? 0 : 1;
        }
        if (1 == j) {
            timed_from = mca_coll_strata_now();
        }
        if (all[1] > 0.0) {
            break;
        }
        t = 0.0;
        if (member && OMPI_SUCCESS == xrc) {
            size_t bytes = (0 == j) ? MCA_COLL_STRATA_NET_SMALL : sizes[(j % 2) ? 0 : 1];

            xrc = mca_coll_strata_network_exchange(rail, timer ? 1 : 0, bufs,
                                                   bufs + MCA_COLL_STRATA_NET_LARGE, bytes, &t);
            if (root) {
                figures[MCA_COLL_STRATA_NET_BYTES] += (double)bytes * ppn;
            }
        }
    }
    free(bufs);
    if (OMPI_SUCCESS != rc || !root || 0.0 == figures[MCA_COLL_STRATA_NET_VALID] || pairs < 1 ||
        !(sum[0] > 0.0) || !(sum[1] > 0.0)) {
        return rc;
    }
    /* only beta is wanted here */
    mca_coll_strata_network_from_round_trips(0.0, sum[0] / pairs, sizes[0], sum[1] / pairs,
                                             sizes[1], &alpha, &beta);
    figures[MCA_COLL_STRATA_NET_RAILS_BETA] = beta;
    figures[MCA_COLL_STRATA_NET_RAILS] = ppn;
    figures[MCA_COLL_STRATA_NET_RAIL_SHARE] =
        mca_coll_strata_network_rail_share_extra(figures[MCA_COLL_STRATA_NET_BETA], beta, ppn);
    figures[MCA_COLL_STRATA_NET_MS] += (mca_coll_strata_now() - start) * 1e3;
    return rc;
}

/* A pml header's room in a BTL's eager limit (ob1's match header and the
 * BTL's own, with room to spare): a message this close to the limit is
 * counted as rendezvous. */
#define MCA_COLL_STRATA_NET_EAGER_HEADERS 64

/*
 * The largest message the pml sends eagerly between nodes, for the cost
 * model's rendezvous round trips (decision.eager_max, 0: every one):
 * configured (coll_strata_allreduce_inter_eager_max), else with pml/ob1 the
 * smallest eager limit of its BTLs between nodes (not self or shared
 * memory), else none known.  Each rank's own: BTLs size theirs from the
 * hardware they find (btl/uct from its interface, btl/openib from its
 * device), so mca_coll_strata_network_setup agrees on the smallest.
 */
static size_t mca_coll_strata_network_eager_max(const mca_coll_strata_settings_t *c, char *source,
                                                size_t len)
{
    const char *pml = mca_pml_base_selected_component.pmlm_version.mca_component_name;
    mca_btl_base_selected_module_t *sm;
    size_t eager = 0;

    if (c->inter_eager_max > 0) {
        snprintf(source, len, "configured");
        return c->inter_eager_max;
    }
    snprintf(source, len, "pml %.32s: not known, all eager", pml);
    if (0 != strcmp(pml, "ob1")) {
        return 0;
    }
    OPAL_LIST_FOREACH(sm, &mca_btl_base_modules_initialized, mca_btl_base_selected_module_t) {
        const char *name = sm->btl_component->btl_version.mca_component_name;
        size_t limit = sm->btl_module->btl_eager_limit;

        if (0 == strcmp(name, "self") || 0 == strcmp(name, "vader") || 0 == strcmp(name, "sm") ||
            0 == strcmp(name, "smcuda") || limit <= MCA_COLL_STRATA_NET_EAGER_HEADERS) {
            continue;
        }
        if (0 == eager || limit - MCA_COLL_STRATA_NET_EAGER_HEADERS < eager) {
            eager = limit - MCA_COLL_STRATA_NET_EAGER_HEADERS;
            snprintf(source, len, "pml ob1, btl %.32s", name);
        }
    }
    return eager;
}

/* Whether any decision can read the network figures: not when strata always
 * hands allreduce on, or when the inter-node exchange is forced (`coll`
 * still needs them: the native path then picks among strata's own). */
static bool mca_coll_strata_network_needed(const mca_coll_strata_decision_params_t *d)
{
    return MCA_COLL_STRATA_ALG_FALLBACK != d->algorithm &&
           (MCA_COLL_STRATA_INTER_AUTO == d->inter_algorithm ||
            MCA_COLL_STRATA_INTER_COLL == d->inter_algorithm);
}

/*
 * module->decision: the communicator's settings', with the network figures to be
 * measured (coll_strata_allreduce_inter_* = 0) taken from rank 0's cache or
 * a measurement, or the fallback figures where there is none (one node, a
 * failed measurement).  Collective over comm when more than one node shares
 * it (every rank knows the node count); an error means a broadcast failed.
 */
int mca_coll_strata_network_setup(mca_coll_strata_module_t *module,
                                  struct ompi_communicator_t *comm)
{
    const mca_coll_strata_settings_t *c = &module->settings;
    double figures[MCA_COLL_STRATA_NET_FIGURES] = {0};
    char rtts[224] = "", rails[128] = "", eager_source[128];
    const char *source, *rails_source, *overhead_source = "none assumed";
    bool measure_all, measure_rails;
    int rc;

    module->decision = c->decision;
    module->decision.eager_max = mca_coll_strata_network_eager_max(c, eager_source,
                                                                   sizeof(eager_source));
    if (module->engine.topo.nnodes >= 2 && mca_coll_strata_network_needed(&c->decision)) {
        /* every rank decides alike only with the same limit: the smallest
         * (0, none known, if any rank knows none) */
        uint64_t eager = module->decision.eager_max;

        rc = MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, MPI_IN_PLACE, &eager, 1,
                                      MPI_UINT64_T, MPI_MIN);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        module->decision.eager_max = (size_t)eager;
    }
    if (c->inter_latency_us > 0.0 && c->inter_bandwidth_gbs > 0.0) {
        source = "configured";
    } else if (module->engine.topo.nnodes < 2) {
        source = "fallback: one node";
    } else if (!mca_coll_strata_network_needed(&c->decision)) {
        /* the same on every rank: agreed settings (coll_strata_settings.c) */
        source = "fallback: not needed, coll_strata_allreduce_(inter_)algorithm forced";
    } else {
        if (0 == ompi_comm_rank(comm)) {
            mca_coll_strata_network_cache_copy(figures, mca_coll_strata_network_cache);
        }
        rc = MCA_COLL_STRATA_FALLBACK(module, bcast, comm, figures, MCA_COLL_STRATA_NET_FIGURES,
                                      MPI_DOUBLE, 0);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        source = rails_source = "cached: rank 0's";
        /* Every rank decides alike: from the broadcast figures, the
         * topology and an ALL_EQ parameter.  The rails are measured with
         * the rest, or later if the figures came from a communicator with
         * one rank on some node (no rails to time then). */
        measure_all = (0.0 == figures[MCA_COLL_STRATA_NET_VALID]);
        measure_rails = module->engine.topo.ppn_min > 1 && 0 == c->decision.nics &&
                        (measure_all || figures[MCA_COLL_STRATA_NET_RAILS] < 2.0);
        if (measure_all || measure_rails) {
            if (measure_all && 0 == module->engine.topo.local_rank &&
                module->engine.topo.node_index < 2) {
                mca_coll_strata_network_measure(module, figures);
            }
            if (measure_rails) {
                rc = mca_coll_strata_network_rails(module, comm, figures);
                if (OMPI_SUCCESS != rc) {
                    return rc;
                }
                rails_source = "measured";
            }
            rc = MCA_COLL_STRATA_FALLBACK(module, bcast, comm, figures, MCA_COLL_STRATA_NET_FIGURES,
                                          MPI_DOUBLE, 0);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
            if (measure_all) {
                source = rails_source = (0.0 != figures[MCA_COLL_STRATA_NET_VALID])
                                            ? "measured"
                                            : "fallback: not measured";
            }
        }
        if (0.0 != figures[MCA_COLL_STRATA_NET_VALID]) {
            mca_coll_strata_network_cache_copy(mca_coll_strata_network_cache, figures);
            mca_coll_strata_network_params(c->inter_latency_us, c->inter_bandwidth_gbs,
                                           &figures[MCA_COLL_STRATA_NET_ALPHA], &module->decision);
            if (!(c->inter_overhead_us > 0.0)) {
                /* within the alpha in use, which may be configured */
                module->decision.overhead = mca_coll_strata_network_overhead(
                    figures[MCA_COLL_STRATA_NET_OVERHEAD], module->decision.alpha);
                overhead_source = source;
            }
            if (figures[MCA_COLL_STRATA_NET_RAILS] > 1.0) {
                module->decision.rail_share_extra = figures[MCA_COLL_STRATA_NET_RAIL_SHARE];
                snprintf(rails, sizeof(rails), " (%s: %d rails at once, %.4f GB/s each)",
                         rails_source, (int)figures[MCA_COLL_STRATA_NET_RAILS],
                         1e-9 / figures[MCA_COLL_STRATA_NET_RAILS_BETA]);
            }
            snprintf(rtts, sizeof(rtts),
                     "; round trips between nodes 0 and 1: %d B %.1f us, %zu KiB %.1f us, "
                     "%zu KiB %.1f us, %.1f ms and %.0f KiB from node 0 in all",
                     MCA_COLL_STRATA_NET_SMALL, figures[MCA_COLL_STRATA_NET_SMALL_RTT] * 1e6,
                     MCA_COLL_STRATA_NET_MID >> 10, figures[MCA_COLL_STRATA_NET_MID_RTT] * 1e6,
                     MCA_COLL_STRATA_NET_LARGE >> 10, figures[MCA_COLL_STRATA_NET_LARGE_RTT] * 1e6,
                     figures[MCA_COLL_STRATA_NET_MS], figures[MCA_COLL_STRATA_NET_BYTES] / 1024.0);
        }
    }
    if (module->decision.nics > 0) {
        snprintf(rails, sizeof(rails), " (coll_strata_allreduce_inter_nics %d)",
                 module->decision.nics);
    } else if ('\0' == rails[0]) {
        snprintf(rails, sizeof(rails), " (not measured: rails independent)");
    }
    MCA_COLL_STRATA_VERBOSE(
        10,
        "%s: cost model: alpha %.3f us (%s), bandwidth %.4f GB/s (%s), "
        "overhead %.3f us per message (%s), eager up to %zu B (%s), each further rail adds "
        "%.3f%s%s",
        comm->c_name, module->decision.alpha * 1e6,
        (c->inter_latency_us > 0.0) ? "configured" : source, 1e-9 / module->decision.beta,
        (c->inter_bandwidth_gbs > 0.0) ? "configured" : source, module->decision.overhead * 1e6,
        (c->inter_overhead_us > 0.0) ? "configured" : overhead_source, module->decision.eager_max,
        eager_source, mca_coll_strata_rail_share(&module->decision, 2) - 1.0, rails, rtts);
    return OMPI_SUCCESS;
}
