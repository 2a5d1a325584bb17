/*
 * coll/strata decision: which allreduce algorithm runs for one call.
 *
 * Pure logic with no Open MPI types, so the unit tests drive it directly and
 * a user can read every rule in one place (coll_strata_decision.c).  Every
 * input that differs between calls is identical on all ranks of a
 * communicator (count, datatype, op, topology), so every rank decides the
 * same; nothing rank-local (buffer addresses, MPI_IN_PLACE) may enter the
 * algorithm choice.  The one rank-local input, whether this rank's buffers
 * are device memory, chooses only how this rank feeds the algorithm (its
 * device path), never the algorithm itself: ranks may mix host and device
 * buffers in one call.  A device-native algorithm, which every rank must run
 * together, will need the ranks to agree on it first.
 */
#ifndef MCA_COLL_STRATA_DECISION_H
#define MCA_COLL_STRATA_DECISION_H

#include <stdbool.h>
#include <stddef.h>

#include "coll_strata_codec.h"

typedef enum {
    MCA_COLL_STRATA_ALG_AUTO = 0,
    MCA_COLL_STRATA_ALG_FALLBACK = 1,  /* the module below strata */
    MCA_COLL_STRATA_ALG_LEADER = 2,    /* reduce to one rank per node, leaders allreduce */
    MCA_COLL_STRATA_ALG_RAIL = 3,      /* reduce-scatter(node), allreduce(rails), allgather(node) */
    MCA_COLL_STRATA_ALG_REPLICATED = 4 /* every rail rank reduces all, allreduces on its rail */
} mca_coll_strata_alg_t;

typedef enum {
    MCA_COLL_STRATA_INTER_AUTO = 0,
    MCA_COLL_STRATA_INTER_NONE = 1, /* one node: no inter-node phase */
    MCA_COLL_STRATA_INTER_COLL = 2, /* the rail communicator's own allreduce (blocking) */
    MCA_COLL_STRATA_INTER_RING = 3, /* strata's ring, overlapping the chunks */
    MCA_COLL_STRATA_INTER_RD = 4,   /* strata's recursive doubling */
    MCA_COLL_STRATA_INTER_RHD = 5   /* strata's recursive halving + doubling */
} mca_coll_strata_inter_t;

/* One name per value, in value order: the MCA enums, verbose output and
 * ompi_info all read these tables. */
typedef struct mca_coll_strata_name_t {
    int value;
    const char *name;
} mca_coll_strata_name_t;

/* How a rank with device buffers feeds the algorithm. */
typedef enum {
    MCA_COLL_STRATA_DEVICE_NONE = 0,   /* host (or managed) buffers: used directly */
    MCA_COLL_STRATA_DEVICE_STAGED = 1, /* copied to pinned host memory and back */
    MCA_COLL_STRATA_DEVICE_NATIVE = 2  /* the pipeline on the GPUs (agreed by all ranks) */
} mca_coll_strata_device_path_t;

/* coll_strata_allreduce_device_algorithm */
typedef enum {
    MCA_COLL_STRATA_DEVICE_ALG_AUTO = 0,   /* native from device_native_min bytes */
    MCA_COLL_STRATA_DEVICE_ALG_STAGED = 1, /* always staged */
    MCA_COLL_STRATA_DEVICE_ALG_NATIVE = 2  /* native wherever it can run */
} mca_coll_strata_device_alg_t;

extern const mca_coll_strata_name_t mca_coll_strata_device_alg_table[];

/*
 * Whether a device allreduce of `bytes` should try the native path: a rule
 * on rank-independent inputs (the ranks then agree whether all of them can).
 */
bool mca_coll_strata_decide_try_native(int device_algorithm, size_t native_min, size_t bytes);

/* coll_strata_allreduce_device_network: how the native path's device data
 * crosses between nodes */
typedef enum {
    MCA_COLL_STRATA_DEVICE_NET_AUTO = 0, /* through the pml if it carries device memory */
    MCA_COLL_STRATA_DEVICE_NET_DIRECT =
        1, /* through the pml (staged, with a warning, if it cannot) */
    MCA_COLL_STRATA_DEVICE_NET_STAGED = 2 /* through pinned host memory */
} mca_coll_strata_device_net_t;

extern const mca_coll_strata_name_t mca_coll_strata_device_net_table[];

/*
 * Whether this rank hands its device blocks to the pml itself (true) or
 * stages them through pinned host memory.  Rank-local: a message's bytes are
 * the same either way, so ranks may differ.  `pml_carries`: the pml in use
 * can take device buffers.  *warn is set when what was asked for cannot be
 * done (`direct` without a pml that can).
 */
bool mca_coll_strata_decide_device_direct(int device_net, bool pml_carries, bool *warn);


extern const mca_coll_strata_name_t mca_coll_strata_alg_table[];
extern const mca_coll_strata_name_t mca_coll_strata_inter_table[];

/* coll_strata_bcast_algorithm and coll_strata_allgather_algorithm: the
 * copy-only collectives on strata's pipeline (colls/coll_strata_copies.c) */
typedef enum {
    MCA_COLL_STRATA_COPY_AUTO = 0,     /* the pipeline from *_min bytes, the exchange by cost */
    MCA_COLL_STRATA_COPY_FALLBACK = 1, /* the module below strata */
    MCA_COLL_STRATA_COPY_BINOMIAL = 2, /* bcast: binomial tree between the nodes' leaders */
    MCA_COLL_STRATA_COPY_CHAIN = 3,    /* bcast: chain between the nodes' leaders */
    MCA_COLL_STRATA_COPY_RING = 4      /* allgather: ring between the nodes' leaders */
} mca_coll_strata_copy_alg_t;

extern const mca_coll_strata_name_t mca_coll_strata_bcast_alg_table[];
extern const mca_coll_strata_name_t mca_coll_strata_allgather_alg_table[];

/*
 * The bcast's exchange between nnodes node leaders when the vector takes
 * nchunks pipeline chunks (`setting`: coll_strata_bcast_algorithm).  Each
 * chunk is one exchange and up to `slots` are in flight.  Binomial: the
 * root sends each chunk ceil(log2 nnodes) times, so the vector leaves it
 * that many times; chain: every leader sends each chunk once, and the
 * last leader has the first chunk after nnodes - 1 hops.  So in chunk
 * times, binomial ~ nchunks * L, chain ~ nchunks + nnodes - 2: chain when
 * nchunks (L - 1) >= nnodes - 2 (a tie goes to the chain, which sends the
 * vector out of each node once; never for 2 nodes, where they are one).
 * Returns a coll_strata_sched.h algorithm.
 */
int mca_coll_strata_decide_bcast_sched(int setting, int nnodes, size_t nchunks);

/* The thresholds' defaults (coll_strata_allreduce_small_max and
 * _node_small_max), measured: docs/results/2026-11-24-cluster-small-messages
 * and 2026-11-24-small-messages-all-ops.  The simulator uses the same. */
#define MCA_COLL_STRATA_SMALL_MAX_DEFAULT      8192
#define MCA_COLL_STRATA_NODE_SMALL_MAX_DEFAULT 16384

/* How much more a byte of a logical op (MPI_LAND, MPI_LOR, MPI_LXOR) costs to
 * reduce on the host than a vectorized op's: 16 KiB of signed chars took 51
 * us with MPI_LXOR and 7.8 with MPI_SUM on 4 ranks (Open MPI's op/avx has no
 * logical kernels), so their one-node threshold is node_small_max / this. */
#define MCA_COLL_STRATA_SLOW_OP_COST 8

typedef struct mca_coll_strata_decision_params_t {
    int algorithm;         /* mca_coll_strata_alg_t; AUTO lets the rules below choose */
    int inter_algorithm;   /* mca_coll_strata_inter_t */
    size_t small_max;      /* bytes up to which the small-message (replicated) path runs */
    size_t node_small_max; /* the same on a communicator inside one node */
    /* the network between nodes, for the cost model of the inter-node phase:
     * alpha, seconds per message; beta, seconds per byte */
    double alpha;
    double beta;     /* of one rail alone */
    double gamma;    /* seconds per byte a member folds in (its reductions) */
    double overhead; /* seconds of a member's CPU per message it sends or receives */
    /* the largest message the pml sends eagerly (0: every one); a larger one
     * first takes a request and an answer, one more round trip */
    size_t eager_max;
    /* How a node's rails share its network (mca_coll_strata_rail_share):
     * nics > 0 (coll_strata_allreduce_inter_nics), the rails spread over
     * that many NICs; otherwise each rail more running at once adds
     * rail_share_extra to the time a byte takes (measured at set-up: 0 for
     * rails with NICs of their own, 1 for rails sharing one link). */
    int nics;
    double rail_share_extra;
} mca_coll_strata_decision_params_t;

/*
 * How many times longer a byte takes on one of `rails` rails of a node
 * running at once than on one rail alone: ceil(rails / nics) with nics > 0,
 * else 1 + rail_share_extra (rails - 1); 1 for one rail.
 */
double mca_coll_strata_rail_share(const mca_coll_strata_decision_params_t *params, int rails);

/*
 * The network between nodes, for the cost model: configured
 * (coll_strata_allreduce_inter_latency_us, _bandwidth_gbs; 0: measured at
 * communicator set-up) or measured (comm/coll_strata_network.c).  The fallback
 * figures stand in where a figure is to be measured but cannot be (one
 * node, a failed measurement).  They err towards the bandwidth-optimal
 * schedules: a bandwidth set too high makes doubling (which sends log2 N
 * shares, not 2(N-1)/N) run where it costs bytes; one set too low only
 * costs a few latencies on small messages, where doubling wins anyway.
 */
#define MCA_COLL_STRATA_NET_LATENCY_US_FALLBACK    5.0
#define MCA_COLL_STRATA_NET_BANDWIDTH_GBS_FALLBACK 1.25
/* Measured figures are clamped to these: alpha 0.1 us to 10 ms, bandwidth
 * 10 MB/s to 1000 GB/s (beta, seconds per byte, the inverse). */
#define MCA_COLL_STRATA_NET_ALPHA_MIN              1e-7
#define MCA_COLL_STRATA_NET_ALPHA_MAX              1e-2
#define MCA_COLL_STRATA_NET_BETA_MIN               1e-12
#define MCA_COLL_STRATA_NET_BETA_MAX               1e-7

/*
 * alpha and beta from timed round trips (seconds) between two nodes: a small
 * message there and back (small_rtt: two latencies), and mid_bytes and
 * large_bytes there with the same small message back (the bytes' time on
 * the link, plus whatever a large message costs once).  alpha = small_rtt /
 * 2, beta = (large_rtt - mid_rtt) / (large_bytes - mid_bytes), each clamped
 * to the range above (a NaN to its minimum).
 */
void mca_coll_strata_network_from_round_trips(double small_rtt, double mid_rtt, size_t mid_bytes,
                                              double large_rtt, size_t large_bytes, double *alpha,
                                              double *beta);

/*
 * The extra share per further rail (mca_coll_strata_decision_params_t's
 * rail_share_extra) from one rail's beta alone and the slowest of `rails`
 * rails' beta at once: (rails_beta / beta - 1) / (rails - 1), within [0, 1]
 * (0 for a NaN or fewer than two rails).
 */
double mca_coll_strata_network_rail_share_extra(double beta, double rails_beta, int rails);

/* The cost model's overhead from the measured time per message of a burst
 * of small sends: within [0, alpha] (a message's overhead is part of its
 * latency; a NaN becomes 0). */
double mca_coll_strata_network_overhead(double per_msg, double alpha);

/*
 * params->alpha and ->beta from the configured figures (microseconds, GB/s;
 * a positive one is used as it is), else from `measured` (alpha, beta; NULL
 * when there is none), else the fallback figures.
 */
void mca_coll_strata_network_params(double latency_us, double bandwidth_gbs, const double *measured,
                                    mca_coll_strata_decision_params_t *params);

typedef struct mca_coll_strata_decision_input_t {
    size_t bytes; /* message bytes: count * extent */
    int nnodes;
    int ppn_min;
    int ppn_max;
    bool device;        /* this rank's buffers include device memory (rank-local) */
    bool native;        /* every rank's data is on its GPU: the native path (agreed) */
    bool slow_op;       /* the op's host reduction is a plain loop (logical ops): on one
                       * node the replicated path, which reduces every input on every
                       * rank, stops paying sooner (MCA_COLL_STRATA_SLOW_OP_COST) */
    size_t chunk_bytes; /* the pipeline's chunk: each chunk has its own exchange (0: all) */
    int slots;          /* chunks in flight (exchanges overlapping on a rail) */
    /* bytes between nodes per byte of the message: compression's
     * (mca_coll_strata_codec_ratio; 0 or 1: none) */
    double wire_ratio;
} mca_coll_strata_decision_input_t;

typedef struct mca_coll_strata_decision_t {
    mca_coll_strata_alg_t algorithm;
    mca_coll_strata_inter_t inter;
    int nslices; /* rails used: slices each chunk is split into */
    mca_coll_strata_device_path_t device_path;
    const char *reason; /* static text for verbose output */
    /* the format the exchange between nodes sends in (set per call by the
     * caller, after the decision: the communicator's choice, the call's
     * type and op; coll_strata_codec.h) */
    mca_coll_strata_codec_t codec;
} mca_coll_strata_decision_t;

void mca_coll_strata_decide(const mca_coll_strata_decision_params_t *params,
                            const mca_coll_strata_decision_input_t *in,
                            mca_coll_strata_decision_t *out);

/* A call that crosses between nodes compressed (out->codec set, in->wire_ratio
 * its ratio): the exchange chosen again for the fewer bytes, the algorithm
 * and slices kept (a forced exchange stays). */
void mca_coll_strata_decide_compressed(const mca_coll_strata_decision_params_t *params,
                                       const mca_coll_strata_decision_input_t *in,
                                       mca_coll_strata_decision_t *out);

/* How this rank's buffers reach the algorithm (rank-local). */
mca_coll_strata_device_path_t mca_coll_strata_decide_device_path(bool device);

const char *mca_coll_strata_alg_name(mca_coll_strata_alg_t alg);

/* The cost model's time (seconds) of an allreduce of `bytes` among n
 * members by an inter-node algorithm (ring, rd or rhd); the simulator
 * replays the same schedules step by step. */
double mca_coll_strata_inter_cost(const mca_coll_strata_decision_params_t *params,
                                  mca_coll_strata_inter_t inter, int n, size_t bytes);
const char *mca_coll_strata_inter_name(mca_coll_strata_inter_t inter);
const char *mca_coll_strata_device_path_name(mca_coll_strata_device_path_t path);

/*
 * Split `total` items into `parts` nearly equal consecutive parts; part
 * `index` starts at *offset and holds *count items (the first total % parts
 * parts hold one more).  Used for slices of a chunk and blocks of a ring.
 */
/* floor(log2 n) for n >= 1: the power-of-two core of n members is 2^this
 * (the schedules of coll_strata_sched.c and their costs share it). */
static inline int mca_coll_strata_log2_floor(int n)
{
    int l = 0;

    while ((2 << l) <= n) {
        ++l;
    }
    return l;
}

/* ceil(log2 n) for n >= 1: the steps of a binomial tree over n members */
static inline int mca_coll_strata_log2_ceil(int n)
{
    int l = mca_coll_strata_log2_floor(n);

    return ((1 << l) < n) ? l + 1 : l;
}

static inline void mca_coll_strata_partition(size_t total, int parts, int index, size_t *offset,
                                             size_t *count)
{
    size_t base = total / (size_t)parts;
    size_t extra = total % (size_t)parts;
    size_t i = (size_t)index;

    *count = base + (i < extra ? 1 : 0);
    *offset = i * base + (i < extra ? i : extra);
}

#endif /* MCA_COLL_STRATA_DECISION_H */
