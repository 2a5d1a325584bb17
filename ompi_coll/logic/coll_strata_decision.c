/*
 * coll/strata decision function (see coll_strata_decision.h).
 *
 * Device buffers (in->device) are staged through host memory and then run
 * the algorithm these rules choose for the host copies.  On the native path
 * (in->native: the pipeline on the GPUs, agreed by every rank) the same
 * rules choose, except that the inter-node phase is always one of strata's
 * own exchanges (never the rail's allreduce, which would read device memory
 * with the CPU) and the logical ops count as fast (the GPU has kernels).
 *
 * The rules, in order:
 *   1. A forced algorithm (coll_strata_allreduce_algorithm) wins, as far as
 *      the topology allows it.
 *   2. One rank on every node: there is no intra-node phase to save, so the
 *      module below strata runs.
 *   3. Inside one node, up to node_small_max bytes (measured 16 KiB; the
 *      logical ops, whose host reduction is a plain loop about 8 times
 *      slower per byte, up to an eighth of it:
 *      docs/results/2026-11-24-small-messages-all-ops), latency dominates:
 *      the replicated path.  Every rank reduces all the node's inputs from
 *      shared memory itself, so there is no second phase and no hand-back.
 *   4. Across nodes, up to small_max bytes: the leader path.  One rank per
 *      node reduces, the leaders allreduce, the others copy the result out:
 *      one message per node and step.  Replicated there would send one per
 *      rank with a rail, the same bytes k times over the node's link, and the
 *      rail path a second phase on the node.  On the namespace cluster the
 *      leader path was the fastest of the three up to 16 KiB on 2 nodes and
 *      up to 8 KiB on 4 (docs/results/2026-11-24-cluster-small-messages):
 *      the on-node hand-back costs less than the extra messages.
 *   5. Otherwise the rail algorithm: each chunk is cut into one slice per
 *      local rank (ppn_min slices, so that every rail spans all nodes), each
 *      slice crosses the network on its own rail.
 * Between nodes each chunk's share of a rail runs one of strata's
 * non-blocking exchanges (coll_strata_sched.c), the cheapest by an
 * alpha-beta cost model (mca_coll_strata_inter_cost) for the number of
 * nodes and the bytes per rail: recursive doubling for small shares (log2 N
 * messages), halving-doubling for medium ones, the ring for large ones
 * where N is not a power of two.  A message of several chunks keeps up to
 * `slots` exchanges in flight per rail: after the first chunk's, each
 * further chunk's exchange costs the most of its CPU (overhead per message,
 * folds), its link's bytes one way, and a `slots`th of a whole exchange.
 * The rail's own allreduce (coll) runs only when forced, and never on
 * device data.
 */
#include "coll_strata_decision.h"
#include "coll_strata_sched.h"

#include <string.h>

const mca_coll_strata_name_t mca_coll_strata_alg_table[] = {
    {MCA_COLL_STRATA_ALG_AUTO, "auto"},
    {MCA_COLL_STRATA_ALG_FALLBACK, "fallback"},
    {MCA_COLL_STRATA_ALG_LEADER, "leader"},
    {MCA_COLL_STRATA_ALG_RAIL, "rail"},
    {MCA_COLL_STRATA_ALG_REPLICATED, "replicated"},
    {0, NULL},
};

const mca_coll_strata_name_t mca_coll_strata_inter_table[] = {
    {MCA_COLL_STRATA_INTER_AUTO, "auto"},
    {MCA_COLL_STRATA_INTER_NONE, "none"},
    {MCA_COLL_STRATA_INTER_COLL, "coll"},
    {MCA_COLL_STRATA_INTER_RING, "ring"},
    {MCA_COLL_STRATA_INTER_RD, "doubling"},
    {MCA_COLL_STRATA_INTER_RHD, "halving_doubling"},
    {0, NULL},
};

static const char *mca_coll_strata_name_of(const mca_coll_strata_name_t *table, int value)
{
    for (; NULL != table->name; ++table) {
        if (table->value == value) {
            return table->name;
        }
    }
    return "unknown";
}

const char *mca_coll_strata_alg_name(mca_coll_strata_alg_t alg)
{
    return mca_coll_strata_name_of(mca_coll_strata_alg_table, (int)alg);
}

const char *mca_coll_strata_inter_name(mca_coll_strata_inter_t inter)
{
    return mca_coll_strata_name_of(mca_coll_strata_inter_table, (int)inter);
}

const mca_coll_strata_name_t mca_coll_strata_device_alg_table[] = {
    {MCA_COLL_STRATA_DEVICE_ALG_AUTO, "auto"},
    {MCA_COLL_STRATA_DEVICE_ALG_STAGED, "staged"},
    {MCA_COLL_STRATA_DEVICE_ALG_NATIVE, "native"},
    {0, NULL},
};

const char *mca_coll_strata_device_path_name(mca_coll_strata_device_path_t path)
{
    return (MCA_COLL_STRATA_DEVICE_STAGED == path)   ? "staged"
           : (MCA_COLL_STRATA_DEVICE_NATIVE == path) ? "native"
                                                     : "direct";
}

bool mca_coll_strata_decide_try_native(int device_algorithm, size_t native_min, size_t bytes)
{
    if (MCA_COLL_STRATA_DEVICE_ALG_STAGED == device_algorithm) {
        return false;
    }
    return MCA_COLL_STRATA_DEVICE_ALG_NATIVE == device_algorithm || bytes >= native_min;
}

const mca_coll_strata_name_t mca_coll_strata_bcast_alg_table[] = {
    {MCA_COLL_STRATA_COPY_AUTO, "auto"},
    {MCA_COLL_STRATA_COPY_FALLBACK, "fallback"},
    {MCA_COLL_STRATA_COPY_BINOMIAL, "binomial"},
    {MCA_COLL_STRATA_COPY_CHAIN, "chain"},
    {0, NULL},
};

const mca_coll_strata_name_t mca_coll_strata_allgather_alg_table[] = {
    {MCA_COLL_STRATA_COPY_AUTO, "auto"},
    {MCA_COLL_STRATA_COPY_FALLBACK, "fallback"},
    {MCA_COLL_STRATA_COPY_RING, "ring"},
    {0, NULL},
};

int mca_coll_strata_decide_bcast_sched(int setting, int nnodes, size_t nchunks)
{
    int l = mca_coll_strata_log2_ceil(nnodes);

    if (MCA_COLL_STRATA_COPY_BINOMIAL == setting || MCA_COLL_STRATA_COPY_CHAIN == setting) {
        return (MCA_COLL_STRATA_COPY_CHAIN == setting) ? MCA_COLL_STRATA_SCHED_CHAIN
                                                       : MCA_COLL_STRATA_SCHED_BINOMIAL;
    }
    return (nnodes > 2 && nchunks * (size_t)(l - 1) >= (size_t)(nnodes - 2))
               ? MCA_COLL_STRATA_SCHED_CHAIN
               : MCA_COLL_STRATA_SCHED_BINOMIAL;
}

const mca_coll_strata_name_t mca_coll_strata_device_net_table[] = {
    {MCA_COLL_STRATA_DEVICE_NET_AUTO, "auto"},
    {MCA_COLL_STRATA_DEVICE_NET_DIRECT, "direct"},
    {MCA_COLL_STRATA_DEVICE_NET_STAGED, "staged"},
    {0, NULL},
};

bool mca_coll_strata_decide_device_direct(int device_net, bool pml_carries, bool *warn)
{
    *warn = (MCA_COLL_STRATA_DEVICE_NET_DIRECT == device_net) && !pml_carries;
    return (MCA_COLL_STRATA_DEVICE_NET_STAGED != device_net) && pml_carries;
}

/*
 * alpha-beta costs (Thakur, Rabenseifner and Gropp 2005) of the schedules
 * of coll_strata_sched.c, m bytes among n members, p = 2^floor(log2 n):
 *   ring  2(n-1) alpha + 2(n-1)/n m beta
 *   rd    log2 p (alpha + m beta), + 2 (alpha + m beta) to fold n - p in
 *   rhd   2 log2 p alpha + 2(p-1)/p m beta, + the same fold
 * plus the folds, gamma per byte: ring (n-1)/n m, rd log2 p m (each step
 * folds the whole share), rhd (p-1)/p m, and the fold-in m more.
 */
/* What one member does in an exchange of m bytes among n: its steps (each
 * sends a message and receives its partner's, but the fold's two: one way
 * each), the messages it sends and receives (its CPU's), those of its
 * messages that go rendezvous (above eager_max), the bytes it sends in the
 * order its steps run, the most bytes its link carries in one direction,
 * and the bytes it folds in. */
typedef struct {
    double msgs, cpu_msgs, rndv_msgs, bytes, link_bytes, fold_bytes;
} mca_coll_strata_inter_load_t;

/* 1 when a message of `bytes` goes rendezvous */
static double mca_coll_strata_rndv(double bytes, size_t eager_max)
{
    return (eager_max > 0 && bytes > (double)eager_max) ? 1.0 : 0.0;
}

static void mca_coll_strata_inter_load(mca_coll_strata_inter_t inter, int n, size_t bytes,
                                       size_t eager_max, mca_coll_strata_inter_load_t *load)
{
    double m = (double)bytes;
    int l = mca_coll_strata_log2_floor(n), p = 1 << l, fold = (n > p) ? 2 : 0;

    memset(load, 0, sizeof(*load));
    if (n < 2) {
        return;
    }
    switch (inter) {
    case MCA_COLL_STRATA_INTER_RD:
        /* every step sends and folds the whole share */
        load->msgs = l + fold;
        load->rndv_msgs = load->msgs * mca_coll_strata_rndv(m, eager_max);
        load->bytes = (l + fold) * m;
        load->link_bytes = (l + fold / 2) * m;
        load->fold_bytes = (l + fold / 2) * m;
        break;
    case MCA_COLL_STRATA_INTER_RHD:
        /* step k of the halving (and of the doubling) sends m / 2^k; the
         * fold the whole share */
        load->msgs = 2.0 * l + fold;
        load->rndv_msgs = fold * mca_coll_strata_rndv(m, eager_max);
        for (int k = 1; k <= l; ++k) {
            load->rndv_msgs += 2.0 * mca_coll_strata_rndv(m / (1 << k), eager_max);
        }
        load->bytes = (2.0 * (p - 1) / p + fold) * m;
        load->link_bytes = (2.0 * (p - 1) / p + fold / 2) * m;
        load->fold_bytes = ((double)(p - 1) / p + fold / 2) * m;
        break;
    default:
        load->msgs = 2.0 * (n - 1);
        load->rndv_msgs = load->msgs * mca_coll_strata_rndv(m / n, eager_max);
        load->bytes = 2.0 * (n - 1) / n * m;
        load->link_bytes = load->bytes;
        load->fold_bytes = (double)(n - 1) / n * m;
        break;
    }
    load->cpu_msgs = 2.0 * (load->msgs - fold) + fold;
}

/* A rendezvous message is three on the wire: the request, the answer, the
 * data; and two more for the CPU of each end. */
static double mca_coll_strata_inter_msgs(const mca_coll_strata_inter_load_t *load)
{
    return load->msgs + 2.0 * load->rndv_msgs;
}

/* One exchange, alone: its steps' latencies, bytes and folds in turn. */
static double mca_coll_strata_inter_cost_of(const mca_coll_strata_decision_params_t *params,
                                            const mca_coll_strata_inter_load_t *load)
{
    return mca_coll_strata_inter_msgs(load) * params->alpha + load->bytes * params->beta +
           load->fold_bytes * params->gamma;
}

double mca_coll_strata_inter_cost(const mca_coll_strata_decision_params_t *params,
                                  mca_coll_strata_inter_t inter, int n, size_t bytes)
{
    mca_coll_strata_inter_load_t load;

    mca_coll_strata_inter_load(inter, n, bytes, params->eager_max, &load);
    return mca_coll_strata_inter_cost_of(params, &load);
}

static double mca_coll_strata_max(double a, double b)
{
    return (a > b) ? a : b;
}

/*
 * A message of several chunks keeps up to `slots` exchanges in flight on a
 * rail.  The first chunk's exchange costs it in full; each further chunk
 * follows after the longest of what bounds how fast they can follow one
 * another: the member's CPU (overhead per message sent and received, and
 * its folds), its link (the bytes of one direction), and the slots (up to
 * `slots` whole exchanges at once).
 */
static double mca_coll_strata_inter_cost_pipelined(const mca_coll_strata_decision_params_t *params,
                                                   mca_coll_strata_inter_t inter, int n,
                                                   size_t share, int slots, size_t chunks)
{
    mca_coll_strata_inter_load_t load;
    double one, next;

    mca_coll_strata_inter_load(inter, n, share, params->eager_max, &load);
    one = mca_coll_strata_inter_cost_of(params, &load);
    if (chunks <= 1) {
        return one;
    }
    next = one / ((slots > 1) ? slots : 1);
    next = mca_coll_strata_max(next, (load.cpu_msgs + 2.0 * load.rndv_msgs) * params->overhead +
                                         load.fold_bytes * params->gamma);
    next = mca_coll_strata_max(next, load.link_bytes * params->beta);
    return one + (double)(chunks - 1) * next;
}

/* value within [min, max]; a NaN becomes min */
static double mca_coll_strata_network_clamp(double value, double min, double max)
{
    return !(value >= min) ? min : (value > max) ? max : value;
}

void mca_coll_strata_network_from_round_trips(double small_rtt, double mid_rtt, size_t mid_bytes,
                                              double large_rtt, size_t large_bytes, double *alpha,
                                              double *beta)
{
    double bytes = (large_bytes > mid_bytes) ? (double)(large_bytes - mid_bytes) : 1.0;

    *alpha = mca_coll_strata_network_clamp(small_rtt / 2.0, MCA_COLL_STRATA_NET_ALPHA_MIN,
                                           MCA_COLL_STRATA_NET_ALPHA_MAX);
    /* a large round trip no longer than the middle one (noise, or a link
     * faster than the timer sees): the fastest link the clamp allows */
    *beta = mca_coll_strata_network_clamp(
        (large_rtt - mid_rtt) / bytes, MCA_COLL_STRATA_NET_BETA_MIN, MCA_COLL_STRATA_NET_BETA_MAX);
}

double mca_coll_strata_network_rail_share_extra(double beta, double rails_beta, int rails)
{
    if (rails < 2 || !(beta > 0.0)) {
        return 0.0;
    }
    return mca_coll_strata_network_clamp((rails_beta / beta - 1.0) / (rails - 1), 0.0, 1.0);
}

void mca_coll_strata_network_params(double latency_us, double bandwidth_gbs, const double *measured,
                                    mca_coll_strata_decision_params_t *params)
{
    params->alpha = (latency_us > 0.0)   ? latency_us * 1e-6
                    : (NULL != measured) ? measured[0]
                                         : MCA_COLL_STRATA_NET_LATENCY_US_FALLBACK * 1e-6;
    params->beta = (bandwidth_gbs > 0.0) ? 1.0 / (bandwidth_gbs * 1e9)
                   : (NULL != measured)  ? measured[1]
                                         : 1.0 / (MCA_COLL_STRATA_NET_BANDWIDTH_GBS_FALLBACK * 1e9);
}

double mca_coll_strata_network_overhead(double per_msg, double alpha)
{
    /* a message's overhead is part of its latency */
    return mca_coll_strata_network_clamp(per_msg, 0.0, alpha);
}

double mca_coll_strata_rail_share(const mca_coll_strata_decision_params_t *params, int rails)
{
    if (rails <= 1) {
        return 1.0;
    }
    if (params->nics > 0) {
        return (double)((rails + params->nics - 1) / params->nics);
    }
    return 1.0 + params->rail_share_extra * (rails - 1);
}

/* nslices: the slices a chunk is cut into (each rail's share of it);
 * rails: the rails of a node that exchange at once, sharing its network. */
static mca_coll_strata_inter_t
mca_coll_strata_decide_inter(const mca_coll_strata_decision_params_t *params,
                             const mca_coll_strata_decision_input_t *in, int nslices, int rails,
                             const char **reason)
{
    static const mca_coll_strata_inter_t candidates[] = {
        MCA_COLL_STRATA_INTER_RING, MCA_COLL_STRATA_INTER_RHD, MCA_COLL_STRATA_INTER_RD};
    bool chunked = in->chunk_bytes > 0 && in->chunk_bytes < in->bytes;
    size_t chunk = chunked ? in->chunk_bytes : in->bytes;
    size_t per_rail = chunk / (size_t)((nslices > 0) ? nslices : 1);
    size_t chunks = chunked ? (in->bytes + chunk - 1) / chunk : 1;
    mca_coll_strata_inter_t best = MCA_COLL_STRATA_INTER_RING;
    mca_coll_strata_decision_params_t shared = *params;
    double best_cost = 0.0;

    if (in->nnodes == 1) {
        return MCA_COLL_STRATA_INTER_NONE;
    }
    if (params->inter_algorithm == MCA_COLL_STRATA_INTER_RING ||
        params->inter_algorithm == MCA_COLL_STRATA_INTER_RD ||
        params->inter_algorithm == MCA_COLL_STRATA_INTER_RHD ||
        (params->inter_algorithm == MCA_COLL_STRATA_INTER_COLL && !in->native)) {
        *reason = "inter-node algorithm forced by coll_strata_allreduce_inter_algorithm";
        return (mca_coll_strata_inter_t)params->inter_algorithm;
    }
    /* Strata's own exchanges only: they overlap the pipeline's chunks, and
     * on the native path the rail's own allreduce (a host module's) would
     * read device memory with the CPU.  Cheapest by the cost model, per
     * chunk's exchange, each rail's bytes at the bandwidth it gets beside
     * the node's other rails; ties go to the ring, then halving-doubling. */
    shared.beta *= mca_coll_strata_rail_share(params, rails);
    /* compressed: fewer bytes cross (the codec's own time is a few ns an
     * element on the host, below the network's at these rates) */
    if (in->wire_ratio > 0.0 && in->wire_ratio < 1.0) {
        shared.beta *= in->wire_ratio;
    }
    for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); ++i) {
        double cost = mca_coll_strata_inter_cost_pipelined(&shared, candidates[i], in->nnodes,
                                                           per_rail, in->slots, chunks);

        if (0 == i || cost < best_cost) {
            best = candidates[i];
            best_cost = cost;
        }
    }
    return best;
}

void mca_coll_strata_decide_compressed(const mca_coll_strata_decision_params_t *params,
                                       const mca_coll_strata_decision_input_t *in,
                                       mca_coll_strata_decision_t *out)
{
    const char *reason = out->reason;
    mca_coll_strata_inter_t inter = mca_coll_strata_decide_inter(
        params, in, (MCA_COLL_STRATA_ALG_REPLICATED == out->algorithm) ? 1 : out->nslices,
        out->nslices, &reason);

    if (MCA_COLL_STRATA_INTER_RING == inter || MCA_COLL_STRATA_INTER_RD == inter ||
        MCA_COLL_STRATA_INTER_RHD == inter) {
        out->inter = inter;
    }
}

/* The only device path so far: the host algorithm runs on pinned host
 * copies.  A native one plugs in here, after the ranks agree on it. */
mca_coll_strata_device_path_t mca_coll_strata_decide_device_path(bool device)
{
    return device ? MCA_COLL_STRATA_DEVICE_STAGED : MCA_COLL_STRATA_DEVICE_NONE;
}

void mca_coll_strata_decide(const mca_coll_strata_decision_params_t *params,
                            const mca_coll_strata_decision_input_t *in,
                            mca_coll_strata_decision_t *out)
{
    mca_coll_strata_alg_t alg = (mca_coll_strata_alg_t)params->algorithm;

    out->nslices = 1;
    out->inter = MCA_COLL_STRATA_INTER_NONE;
    out->device_path = mca_coll_strata_decide_device_path(in->device);
    out->codec = MCA_COLL_STRATA_CODEC_NONE;

    if (alg == MCA_COLL_STRATA_ALG_FALLBACK) {
        out->algorithm = alg;
        out->reason = "forced by coll_strata_allreduce_algorithm";
        return;
    }
    if (alg == MCA_COLL_STRATA_ALG_LEADER || alg == MCA_COLL_STRATA_ALG_RAIL ||
        alg == MCA_COLL_STRATA_ALG_REPLICATED) {
        out->reason = "forced by coll_strata_allreduce_algorithm";
    } else if (in->ppn_max == 1) {
        out->algorithm = MCA_COLL_STRATA_ALG_FALLBACK;
        out->reason = "one rank per node: no intra-node phase to save";
        return;
    } else if (1 == in->nnodes &&
               in->bytes <= (in->slow_op ? params->node_small_max / MCA_COLL_STRATA_SLOW_OP_COST
                                         : params->node_small_max)) {
        alg = MCA_COLL_STRATA_ALG_REPLICATED;
        out->reason = in->slow_op ? "small message (<= coll_strata_allreduce_node_small_max / 8 "
                                    "for a logical op): latency path"
                                  : "small message (<= coll_strata_allreduce_node_small_max): "
                                    "latency path";
    } else if (1 < in->nnodes && in->bytes <= params->small_max) {
        alg = MCA_COLL_STRATA_ALG_LEADER;
        out->reason = "small message across nodes (<= coll_strata_allreduce_small_max): one "
                      "message per node, latency path";
    } else {
        alg = MCA_COLL_STRATA_ALG_RAIL;
        out->reason = "large message: one slice per rail";
    }

    out->algorithm = alg;
    out->nslices = (alg == MCA_COLL_STRATA_ALG_LEADER || in->ppn_min < 1) ? 1 : in->ppn_min;
    /* Replicated rails each carry the whole message, not a slice of it;
     * every path runs its nslices rails at once. */
    out->inter = mca_coll_strata_decide_inter(
        params, in, (alg == MCA_COLL_STRATA_ALG_REPLICATED) ? 1 : out->nslices, out->nslices,
        &out->reason);
}
