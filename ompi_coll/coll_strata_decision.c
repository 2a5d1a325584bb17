/*
 * coll/strata decision function (see coll_strata_decision.h).
 *
 * Device buffers (in->device) are staged through host memory and then run
 * the algorithm these rules choose for the host copies.  On the native path
 * (in->native: the pipeline on the GPUs, agreed by every rank) the same
 * rules choose, except that the inter-node phase is always strata's ring.
 *
 * The rules, in order:
 *   1. A forced algorithm (coll_strata_allreduce_algorithm) wins, as far as
 *      the topology allows it.
 *   2. One rank on every node: there is no intra-node phase to save, so the
 *      module below strata runs.
 *   3. Up to small_max bytes, latency dominates: the replicated path.  Every
 *      local rank that has a rail (ppn_min of them per node) reduces the
 *      whole node's data from shared memory and allreduces it on its own
 *      rail, so no rank waits for a leader to hand the result back; ranks
 *      beyond ppn_min on uneven nodes copy local rank 0's result.  The
 *      leader path (one rank per node reduces, the leaders allreduce, the
 *      others copy out) moves fewer bytes but adds that hand-back; it runs
 *      only when forced.
 *   4. Otherwise the rail algorithm: each chunk is cut into one slice per
 *      local rank (ppn_min slices, so that every rail spans all nodes), each
 *      slice crosses the network on its own rail.  Between nodes the ring
 *      runs when a rail's share is at least ring_min bytes (bandwidth-optimal
 *      and overlapping the chunks), the rail communicator's own allreduce
 *      (recursive doubling in tuned) below that.
 */
#include "coll_strata_decision.h"

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

static mca_coll_strata_inter_t
mca_coll_strata_decide_inter(const mca_coll_strata_decision_params_t *params,
                             const mca_coll_strata_decision_input_t *in, int nslices,
                             const char **reason)
{
    size_t per_rail = in->bytes / (size_t)((nslices > 0) ? nslices : 1);

    if (in->nnodes == 1) {
        return MCA_COLL_STRATA_INTER_NONE;
    }
    if (in->native) {
        /* The rail's own allreduce is a host module's: it would read device
         * memory with the CPU.  Strata's ring moves device data (through
         * the pml or staged) and reduces it on the GPU.  (The reason stays
         * the algorithm's: nothing else is possible here.) */
        return MCA_COLL_STRATA_INTER_RING;
    }
    if (params->inter_algorithm == MCA_COLL_STRATA_INTER_COLL ||
        params->inter_algorithm == MCA_COLL_STRATA_INTER_RING) {
        *reason = "inter-node algorithm forced by coll_strata_allreduce_inter_algorithm";
        return (mca_coll_strata_inter_t)params->inter_algorithm;
    }
    return (per_rail >= params->ring_min) ? MCA_COLL_STRATA_INTER_RING
                                          : MCA_COLL_STRATA_INTER_COLL;
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
    } else if (in->bytes <= params->small_max) {
        alg = MCA_COLL_STRATA_ALG_REPLICATED;
        out->reason = "small message (<= coll_strata_allreduce_small_max): latency path";
    } else {
        alg = MCA_COLL_STRATA_ALG_RAIL;
        out->reason = "large message: one slice per rail";
    }

    out->algorithm = alg;
    out->nslices = (alg == MCA_COLL_STRATA_ALG_LEADER || in->ppn_min < 1) ? 1 : in->ppn_min;
    /* Replicated rails each carry the whole message, not a slice of it. */
    out->inter = mca_coll_strata_decide_inter(
        params, in, (alg == MCA_COLL_STRATA_ALG_REPLICATED) ? 1 : out->nslices, &out->reason);
}
