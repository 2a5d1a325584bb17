/*
 * coll/strata component: MCA parameters, open/close.
 *
 * Every parameter is registered here with a description and an info level, so
 * `ompi_info --param coll strata --level 9` documents all of them.
 */
#include "coll_strata.h"
#include "staging/coll_strata_stage.h"

#include <limits.h>

#include <string.h>

#include "ompi/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"

static int mca_coll_strata_component_register(void);
static int mca_coll_strata_component_open(void);
static int mca_coll_strata_component_close(void);

/* clang-format off */
mca_coll_strata_component_t mca_coll_strata_component = {
    .super = {
        .collm_version = {
            MCA_COLL_STRATA_BASE_VERSION,
            .mca_component_name = "strata",
            MCA_BASE_MAKE_VERSION(component, 0, 2, 0),
            .mca_open_component = mca_coll_strata_component_open,
            .mca_close_component = mca_coll_strata_component_close,
            .mca_register_component_params = mca_coll_strata_component_register,
        },
        .collm_data = {
            /* The component can run more than once in a process (several
             * communicators); it keeps no state that forbids a checkpoint. */
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = mca_coll_strata_init_query,
        .collm_comm_query = mca_coll_strata_comm_query,
    },
    .priority = 0,
    .priority_used = 0,
};
/* clang-format on */

/* coll_strata_progress's values (engine/coll_strata_engine.h) */
static const mca_coll_strata_name_t mca_coll_strata_progress_table[] = {
    {MCA_COLL_STRATA_PROGRESS_AUTO, "auto"},
    {MCA_COLL_STRATA_PROGRESS_THREAD, "thread"},
    {MCA_COLL_STRATA_PROGRESS_CALLS, "calls"},
    {0, NULL},
};

/* An MCA enum from one of the decision's name tables, less `skip` (a value
 * a user cannot ask for). */
static void mca_coll_strata_register_enum(const char *name, const char *help,
                                          const mca_coll_strata_name_t *table, int skip,
                                          int *storage)
{
    mca_base_component_t *c = &mca_coll_strata_component.super.collm_version;
    mca_base_var_enum_value_t values[16];
    mca_base_var_enum_t *e = NULL;
    int n = 0;

    for (; NULL != table->name && n < 15; ++table) {
        if (table->value != skip) {
            values[n].value = table->value;
            values[n].string = table->name;
            ++n;
        }
    }
    values[n].value = 0;
    values[n].string = NULL;
    (void)mca_base_var_enum_create(name, values, &e);
    (void)mca_base_component_var_register(c, name, help, MCA_BASE_VAR_TYPE_INT, e, 0, 0,
                                          OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, storage);
    if (NULL != e) {
        OBJ_RELEASE(e);
    }
}

static void mca_coll_strata_register_size(const char *name, const char *help, size_t *storage)
{
    mca_base_component_t *c = &mca_coll_strata_component.super.collm_version;

    (void)mca_base_component_var_register(c, name, help, MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0,
                                          OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, storage);
}

static void mca_coll_strata_register_int(const char *name, const char *help, int *storage)
{
    mca_base_component_t *c = &mca_coll_strata_component.super.collm_version;

    (void)mca_base_component_var_register(c, name, help, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0,
                                          OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, storage);
}

/* A figure of the inter-node cost model: 0 asks for a measurement, and
 * every rank must decide from the same one. */
static void mca_coll_strata_register_figure(const char *name, const char *help, double *storage)
{
    mca_base_component_t *c = &mca_coll_strata_component.super.collm_version;

    *storage = 0.0;
    (void)mca_base_component_var_register(c, name, help, MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0,
                                          OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, storage);
}

/* Algorithm choice and thresholds: the inputs of logic/coll_strata_decision.c. */
static void mca_coll_strata_register_decision(void)
{
    mca_coll_strata_decision_params_t *d = &mca_coll_strata_component.settings.decision;

    d->algorithm = MCA_COLL_STRATA_ALG_AUTO;
    mca_coll_strata_register_enum(
        "allreduce_algorithm",
        "MPI_Allreduce algorithm: auto (choose by size and topology), fallback (always the "
        "component below strata), leader (one rank per node reduces the node's data, the "
        "leaders allreduce, the others copy the result), rail (every local rank reduces a "
        "slice inside the node and allreduces it across nodes on its own rail), replicated "
        "(every local rank reduces all of the node's data and allreduces it on its own rail: "
        "no hand-back inside the node, for small messages)",
        mca_coll_strata_alg_table, -1, &d->algorithm);

    d->inter_algorithm = MCA_COLL_STRATA_INTER_AUTO;
    mca_coll_strata_register_enum(
        "allreduce_inter_algorithm",
        "Inter-node phase of the allreduce: auto (the cheapest of strata's ring, doubling and "
        "halving_doubling by a cost model from allreduce_inter_latency_us and "
        "allreduce_inter_bandwidth_gbs, per chunk and rail), ring (bandwidth-optimal, 2(N-1) "
        "messages), doubling (recursive doubling: log2 N messages of the whole share, for "
        "small messages), halving_doubling (reduce-scatter by recursive halving, allgather by "
        "doubling: 2 log2 N messages, bandwidth-optimal), coll (the rail communicator's own "
        "allreduce, from the component below strata; blocking, host data only). Node counts "
        "that are not powers of two fold the extra nodes in first (two more messages)",
        mca_coll_strata_inter_table, MCA_COLL_STRATA_INTER_NONE, &d->inter_algorithm);

    d->small_max = MCA_COLL_STRATA_SMALL_MAX_DEFAULT;
    mca_coll_strata_register_size(
        "allreduce_small_max",
        "On a communicator spanning nodes, messages up to this many bytes take the leader "
        "(latency) path when allreduce_algorithm is auto: one rank per node reduces and "
        "exchanges, one message per node; larger ones the rail path",
        &d->small_max);
    d->node_small_max = MCA_COLL_STRATA_NODE_SMALL_MAX_DEFAULT;
    mca_coll_strata_register_size(
        "allreduce_node_small_max",
        "On a communicator inside one node, messages up to this many bytes take the "
        "replicated (latency) path when allreduce_algorithm is auto: every rank reduces all "
        "the node's inputs itself (no second phase); larger ones are cut into one slice per "
        "rank. The logical ops (MPI_LAND, MPI_LOR, MPI_LXOR), whose host "
        "reduction is a plain loop, up to an eighth of it",
        &d->node_small_max);

    /* 0 (the defaults): measured once per process, at the set-up of the
     * first communicator spanning nodes (comm/coll_strata_network.c) */
    mca_coll_strata_register_figure(
        "allreduce_inter_latency_us",
        "The cost model's time of one message between nodes, in microseconds (alpha; "
        "NDR InfiniBand about 1-2, 100 GbE about 5-10, a 1 Gbit/s network tens). 0 (the "
        "default): measured over the pml between the leaders of the first two nodes when the "
        "first communicator spanning nodes sets up, then kept for the process (5 where it "
        "cannot be measured; verbosity 10 prints it), and not measured where "
        "allreduce_inter_algorithm forces strata's ring, doubling or halving_doubling; a "
        "positive value is used as it is, without measuring",
        &mca_coll_strata_component.settings.inter_latency_us);
    mca_coll_strata_register_figure(
        "allreduce_inter_bandwidth_gbs",
        "The cost model's bandwidth of one rail between nodes, in GB/s (1/beta; 100 GbE "
        "about 12, NDR 400 about 50, 1 Gbit/s about 0.12). 0 (the default): measured like "
        "allreduce_inter_latency_us, from 256 KiB and 1 MiB messages (1.25 where it cannot be "
        "measured); a positive value is used as it is, without measuring",
        &mca_coll_strata_component.settings.inter_bandwidth_gbs);
    mca_coll_strata_register_figure(
        "allreduce_inter_overhead_us",
        "The cost model's CPU time of one message between nodes for the rank sending it, and "
        "again for the one receiving it, in microseconds (part of "
        "allreduce_inter_latency_us; verbs about 0.3, TCP several): exchanges overlap in the "
        "pipeline, their overheads do not, so it decides for fewer, larger messages on long "
        "messages. 0 (the default): measured with allreduce_inter_latency_us (the sender's "
        "time per message of a burst of small ones; none assumed where it cannot be measured "
        "or latency and bandwidth are both configured); a positive value is used as it is",
        &mca_coll_strata_component.settings.inter_overhead_us);
    mca_coll_strata_component.settings.inter_eager_max = 0;
    (void)mca_base_component_var_register(
        &mca_coll_strata_component.super.collm_version, "allreduce_inter_eager_max",
        "The cost model's largest message the pml sends between nodes without a rendezvous "
        "(bytes; a larger one costs one more round trip): it keeps the exchanges whose "
        "messages are whole shares (doubling) from looking cheaper than they run. 0 (the "
        "default): with pml/ob1 the smallest eager limit of its BTLs between nodes, less "
        "64 bytes of headers; with another pml none known (every message eager: set it, e.g. "
        "to UCX's rendezvous threshold)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &mca_coll_strata_component.settings.inter_eager_max);
    mca_coll_strata_component.settings.decision.nics = 0;
    (void)mca_base_component_var_register(
        &mca_coll_strata_component.super.collm_version, "allreduce_inter_nics",
        "Network interfaces per node that the rails (one per local rank on the rail path) "
        "spread over, for the cost model: k rails on N NICs each get 1/ceil(k/N) of a rail's "
        "bandwidth (GPU nodes with a NIC per GPU: the GPUs per node; one NIC per node: 1). "
        "0 (the default): measured at set-up with the other figures, by running the first two "
        "nodes' rails at once, where the bandwidth is measured; independent rails where it is "
        "configured",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &mca_coll_strata_component.settings.decision.nics);
}

/* Pipeline and shared-memory sizing. */
static void mca_coll_strata_register_shm(void)
{
    mca_base_component_t *c = &mca_coll_strata_component.super.collm_version;

    mca_coll_strata_component.settings.segment_size = 128 * 1024;
    mca_coll_strata_register_size(
        "segment_size",
        "Bytes of one pipeline chunk: messages move through shared memory and across nodes "
        "in chunks of this size (rounded up to 64; 4096 to 16 MiB, a value outside replaced "
        "by the nearest bound, with a message). A rail's ring cuts its slice of a chunk into "
        "one block per node: keep blocks clear of just above the pml's eager limit (TCP: 64 "
        "KiB), where each message costs an extra round trip",
        &mca_coll_strata_component.settings.segment_size);

    mca_coll_strata_component.settings.device_segment_size = 8 << 20;
    mca_coll_strata_register_size(
        "device_segment_size",
        "Bytes of one chunk of the native device path (device buffers reduced, broadcast or "
        "gathered on the GPUs): each local rank's device scratch holds 2 x shm_slots chunks "
        "(3 x with a network), and each chunk costs the GPU a few stream operations, so "
        "chunks are far larger than on the host (64 KiB to 256 MiB)",
        &mca_coll_strata_component.settings.device_segment_size);

    mca_coll_strata_component.settings.shm_slots = 4;
    mca_coll_strata_register_int(
        "shm_slots",
        "Chunks in flight per communicator (1 to 64). Each node's segment holds shm_slots x "
        "(ranks on the node + 1) x segment_size bytes (2.5 MiB for 4 ranks by default)",
        &mca_coll_strata_component.settings.shm_slots);

    mca_coll_strata_component.shm_dir = "/dev/shm";
    (void)mca_base_component_var_register(
        c, "shm_dir",
        "Directory (a tmpfs) for the per-node shared-memory segments. Files are created "
        "0600 and unlinked once every local rank has mapped them; if one cannot be made, "
        "strata warns once and the communicator falls back to the component below it",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL,
        &mca_coll_strata_component.shm_dir);
}

/* Staging of device buffers (staging/coll_strata_stage.c). */
static void mca_coll_strata_register_stage(void)
{
    mca_base_component_t *c = &mca_coll_strata_component.super.collm_version;

    mca_coll_strata_component.settings.stage_max = MCA_COLL_STRATA_STAGE_MAX_DEFAULT;
    /* ALL_EQ: every rank is to use the same value (the ranks cut the same
     * collectives into the same pieces; comm/coll_strata_settings.c agrees it). */
    (void)mca_base_component_var_register(
        c, "stage_max",
        "Bytes of pinned host memory a communicator keeps for staging device buffers (grown "
        "on demand up to this, freed with the communicator). Reductions, scans and "
        "broadcasts whose data exceeds half of it run in pieces of that size on every rank "
        "(found by one small allreduce); other collectives, and a nonblocking call that "
        "finds the buffer in use, allocate what they need for the call. At least 64 KiB; "
        "where ranks differ, every rank of a communicator uses rank 0's value",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &mca_coll_strata_component.settings.stage_max);
}

/* The device allreduce: native (on the GPUs) or staged. */
static void mca_coll_strata_register_device(void)
{
    mca_coll_strata_component.settings.device_algorithm = MCA_COLL_STRATA_DEVICE_ALG_AUTO;
    mca_coll_strata_register_enum(
        "allreduce_device_algorithm",
        "MPI_Allreduce on device buffers: auto (on the GPUs from allreduce_device_native_min "
        "bytes where every local rank has a GPU of its own or the ranks sharing one run under "
        "MPS; staged through host memory below that, and where local ranks share a GPU "
        "without MPS: measured 15-26x faster there), staged (always "
        "through host memory), native "
        "(on the GPUs wherever it can run). The native path needs device buffers on every rank, "
        "more than one rank on some node, at most 16 ranks per node, a predefined commutative "
        "op and type a GPU reduces, and the CUDA driver loaded before the communicator's first "
        "allreduce; otherwise the call is staged",
        mca_coll_strata_device_alg_table, -1, &mca_coll_strata_component.settings.device_algorithm);

    mca_coll_strata_component.device_network = MCA_COLL_STRATA_DEVICE_NET_AUTO;
    mca_coll_strata_register_enum(
        "allreduce_device_network",
        "How the native device allreduce moves device data between nodes: direct (device "
        "buffers to the pml: pml/ucx with Strata's gpu_copy transport in UCX_TLS; GPUDirect "
        "RDMA where UCX can register GPU memory), staged (each message through pinned host "
        "memory, the reductions still on the GPU), auto (direct when the pml can carry device "
        "memory, else staged). A direct request the pml cannot honour is staged, with a "
        "warning",
        mca_coll_strata_device_net_table, -1, &mca_coll_strata_component.device_network);

    mca_coll_strata_component.progress = MCA_COLL_STRATA_PROGRESS_AUTO;
    mca_coll_strata_register_enum(
        "progress",
        "Progress of the nonblocking collectives strata runs on its pipeline: auto (a progress "
        "thread, started at the first nonblocking call it can advance, moves the calls while "
        "the application computes without calling MPI; it sleeps when nothing moves and costs "
        "no CPU when idle; across nodes their exchanges go on a UCP worker of strata's own, "
        "set up with each communicator, not on the pml), thread (the same, started when the "
        "first communicator is set up), calls (inside MPI calls only, as Open MPI's own "
        "nonblocking collectives; no UCP worker). The ranks of a communicator agree on its "
        "worker: one rank with calls makes the calls across nodes progress inside MPI calls "
        "on every rank",
        mca_coll_strata_progress_table, -1, &mca_coll_strata_component.progress);

    mca_coll_strata_component.settings.device_queue = 1;
    mca_coll_strata_register_int(
        "device_queue",
        "1: the native device path queues each call whole on the GPU, chunk hand-offs between "
        "the local ranks by stream memory operations (cuStreamWaitValue64/WriteValue64) on "
        "the node's flags, and the host waits once per call; 0: the host drives every chunk "
        "and waits for each step (slower; for drivers without stream memory operations, which "
        "are detected and fall back to it by themselves)",
        &mca_coll_strata_component.settings.device_queue);

    mca_coll_strata_component.settings.device_direct = 1;
    mca_coll_strata_register_int(
        "device_direct",
        "1: device collectives within one node read every local rank's input and write every "
        "local rank's output where the application has them (CUDA IPC mappings of the "
        "buffers, cached), each byte read once and written once, one kernel per rank per "
        "call; used where every local rank's buffers come from cuMemAlloc/cudaMalloc (legacy "
        "IPC) and the call is queued (coll_strata_device_queue 1); else, or 0: through the "
        "device scratch areas (each byte copied in, reduced and copied out)",
        &mca_coll_strata_component.settings.device_direct);

    /* Until measured on a GPU: where a node phase through IPC clearly beats
     * two PCIe copies plus CPU reductions. */
    mca_coll_strata_component.settings.device_native_min = 65536;
    mca_coll_strata_register_size(
        "allreduce_device_native_min",
        "Bytes from which a device allreduce runs on the GPUs when "
        "allreduce_device_algorithm is auto (a default not yet measured on a GPU)",
        &mca_coll_strata_component.settings.device_native_min);

    /* Measured (docs/results/2026-11-27-reductions): up to 2 KiB, back to
     * back, the module below's reduce lets non-roots return before the root
     * has the result, and runs 1.3-13x faster than the pipeline, which
     * holds every rank of the node until the chunk is published. */
    mca_coll_strata_component.settings.reduce_min = 4096;
    mca_coll_strata_register_size(
        "reduce_min",
        "Bytes from which MPI_Reduce (host and staged device buffers) runs on strata's "
        "hierarchical pipeline; smaller ones go to the module below strata",
        &mca_coll_strata_component.settings.reduce_min);
}

/* coll_strata_compress's values (logic/coll_strata_codec.h) */
static const mca_coll_strata_name_t mca_coll_strata_compress_table[] = {
    {MCA_COLL_STRATA_CODEC_NONE, "none"},
    {MCA_COLL_STRATA_CODEC_BF16, "bf16"},
    {MCA_COLL_STRATA_CODEC_FP16, "fp16"},
    {MCA_COLL_STRATA_CODEC_FP8, "fp8"},
    {0, NULL},
};

/* Compression between nodes (colls/coll_strata_reduction.c chooses it per
 * call; the exchange packs and widens: engine/coll_strata_xchg.c). */
static void mca_coll_strata_register_compress(void)
{
    mca_coll_strata_component.settings.compress = MCA_COLL_STRATA_CODEC_NONE;
    mca_coll_strata_register_enum(
        "compress",
        "The format float and double sums cross the network in between nodes, on "
        "communicators without the info key strata_compress (which overrides it per "
        "communicator): none (exact, the default), bf16 (bfloat16), fp16 (IEEE half after a "
        "power-of-two scale per block of 128), fp8 (E4M3 after the same scale). Inside a node "
        "every reduction stays exact; every rank gets the same result. For MPI_Allreduce, "
        "MPI_Reduce, MPI_Reduce_scatter(_block) and their nonblocking forms with MPI_SUM on "
        "contiguous MPI_FLOAT or MPI_DOUBLE on host buffers (and staged device ones); every "
        "other call stays exact",
        mca_coll_strata_compress_table, -1, &mca_coll_strata_component.settings.compress);
    mca_coll_strata_component.settings.compress_min = 65536;
    mca_coll_strata_register_size(
        "compress_min",
        "Bytes of a call's vector from which compression between nodes applies (smaller "
        "calls are bound by latency, not bytes: they stay exact)",
        &mca_coll_strata_component.settings.compress_min);
}

/* MPI_Bcast and MPI_Allgather on the pipeline (colls/coll_strata_copies.c). */
static void mca_coll_strata_register_copies(void)
{
    mca_coll_strata_component.settings.bcast_algorithm = MCA_COLL_STRATA_COPY_AUTO;
    mca_coll_strata_register_enum(
        "bcast_algorithm",
        "MPI_Bcast on strata's hierarchical pipeline: auto (from bcast_min bytes, where some "
        "node has more than one rank; the exchange between nodes by cost), fallback (always the "
        "module below strata), binomial or chain (the pipeline at every size, that tree between "
        "the nodes' leaders). Device buffers run on the GPUs as allreduce_device_algorithm says",
        mca_coll_strata_bcast_alg_table, -1, &mca_coll_strata_component.settings.bcast_algorithm);
    /* Measured (docs/results/2026-11-27-bcast-allgather, one node, 4
     * ranks): the pipeline's bcast takes ~3 us at every size up to 2 KiB,
     * tuned's and han's 3.4-4.4 from 512 B but 0.2-3 below it. */
    mca_coll_strata_component.settings.bcast_min = 512;
    mca_coll_strata_register_size("bcast_min",
                                  "Bytes from which MPI_Bcast runs on strata's pipeline when "
                                  "bcast_algorithm is auto; smaller ones go to the module below",
                                  &mca_coll_strata_component.settings.bcast_min);
    mca_coll_strata_component.settings.allgather_algorithm = MCA_COLL_STRATA_COPY_AUTO;
    mca_coll_strata_register_enum(
        "allgather_algorithm",
        "MPI_Allgather on strata's hierarchical pipeline: auto (from allgather_min bytes of the "
        "gathered vector, where some node has more than one rank), fallback (always the module "
        "below strata), ring (the pipeline at every size, a ring between the nodes' leaders). "
        "Device buffers run on the GPUs as allreduce_device_algorithm says",
        mca_coll_strata_allgather_alg_table, -1,
        &mca_coll_strata_component.settings.allgather_algorithm);
    /* Measured there: 0.59-0.62x tuned's allgather at every size, but
     * 1.2x han's below 256 B per rank (1 KiB gathered by 4 ranks). */
    mca_coll_strata_component.settings.allgather_min = 1024;
    mca_coll_strata_register_size(
        "allgather_min",
        "Bytes of the gathered vector (every rank's block) from which MPI_Allgather runs on "
        "strata's pipeline when allgather_algorithm is auto; smaller ones go to the module below",
        &mca_coll_strata_component.settings.allgather_min);
}

static int mca_coll_strata_component_register(void)
{
    mca_base_component_t *c = &mca_coll_strata_component.super.collm_version;
    int rc = mca_strata_ompi_version_check("coll/strata");

    if (OMPI_SUCCESS != rc) {
        return rc;
    }

    mca_coll_strata_component.priority = 0;
    (void)mca_base_component_var_register(
        c, "priority",
        "Priority of coll/strata. 0 (the default) switches it off; a positive value switches "
        "it on, and it then handles every collective that moves data: its own allreduce, "
        "device buffers staged through host memory, and the rest handed to the component "
        "below it. Switched on, strata runs at this value or at coll_han_priority + 1, "
        "whichever is higher, so that it is always stacked above coll/han "
        "(Open MPI 5.0 enables han by default, at 35); give a value above every other coll "
        "component's (e.g. 90, above tuned's 30) to be above those too",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_2, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_strata_component.priority);

    mca_coll_strata_log.verbose = 0;
    (void)mca_base_component_var_register(
        c, "verbose",
        "Verbosity of coll/strata: 0 silent, 10 one line per communicator (its topology, "
        "segment and the cost model's network figures), "
        "20 one line per collective call (the buffers' memory kinds, staged or not, which "
        "algorithm ran and why), "
        "30 every fallback decision",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_coll_strata_log.verbose);

    mca_coll_strata_register_decision();
    mca_coll_strata_register_shm();
    mca_coll_strata_register_stage();
    mca_coll_strata_register_device();
    mca_coll_strata_register_copies();
    mca_coll_strata_register_compress();

    mca_coll_strata_component.test_fail = "";
    (void)mca_base_component_var_register(
        c, "test_fail",
        "For Strata's own tests only: steps this process fails on purpose, comma-separated: "
        "nodes (the topology's node split and allocation), leaders (the exchange of node "
        "leaders, after the node split was agreed), pipeline (the pipeline's allocations), "
        "inter (its next inter-node phase, once), context (the next native device allreduce's "
        "context switch, once), copy_out (every copy out of the result area in the next "
        "allreduce that copies out, once), isend (the next send of an inter-node exchange is "
        "refused as by the pml, once), stage (every allocation of a buffer staging device "
        "data), pack (the next bcast's or allgather's packed image of a non-contiguous "
        "datatype, once), direct_export (this rank's buffers cannot be exported to the "
        "direct path, every call), direct_map (the mapping of a peer's buffer on the direct "
        "path fails, once). Set for one rank to check that the others return "
        "an error instead of hanging",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_coll_strata_component.test_fail);
    return OMPI_SUCCESS;
}

/* A size parameter outside [min, max]: said once, naming the parameter and
 * its range, then replaced by the nearest bound. */
static void mca_coll_strata_component_bound_size(const char *name, size_t *value, size_t min,
                                                 size_t max)
{
    size_t was = *value;

    if (was >= min && was <= max) {
        return;
    }
    *value = (was < min) ? min : max;
    opal_output(0, "coll:strata: coll_strata_%s = %zu is outside its range [%zu, %zu]; using %zu",
                name, was, min, max, *value);
}

static void mca_coll_strata_component_bound_int(const char *name, int *value, int min, int max)
{
    int was = *value;

    if (was >= min && was <= max) {
        return;
    }
    *value = (was < min) ? min : max;
    opal_output(0, "coll:strata: coll_strata_%s = %d is outside its range [%d, %d]; using %d",
                name, was, min, max, *value);
}

/* A figure of the cost model's network: finite, in [0, 1e6] (a NaN is
 * not), 0 meaning measured; anything else is replaced by 0. */
static void mca_coll_strata_component_bound_figure(const char *name, double *value)
{
    if (*value >= 0.0 && *value <= 1e6) {
        return;
    }
    opal_output(0, "coll:strata: coll_strata_%s = %g is outside [0, 1e6]; using 0 (measured)", name,
                *value);
    *value = 0.0;
}

/* The ranges registration cannot express (MCA sizes take any value): the
 * shared-memory layout and the staging arithmetic multiply these. */
static void mca_coll_strata_component_check(void)
{
    mca_coll_strata_component_t *c = &mca_coll_strata_component;

    /* a chunk is a pipeline unit: beyond 16 MiB it only costs shared memory */
    mca_coll_strata_component_bound_size("segment_size", &c->settings.segment_size, 4096,
                                         (size_t)16 << 20);
    mca_coll_strata_component_bound_size("device_segment_size", &c->settings.device_segment_size,
                                         (size_t)64 << 10, (size_t)256 << 20);
    mca_coll_strata_component_bound_int("shm_slots", &c->settings.shm_slots, 1,
                                        MCA_COLL_STRATA_SLOTS_MAX);
    mca_coll_strata_component_bound_size("stage_max", &c->settings.stage_max,
                                         MCA_COLL_STRATA_STAGE_MAX_MIN, (size_t)1 << 40);
    mca_coll_strata_component_bound_size("allreduce_small_max", &c->settings.decision.small_max, 0,
                                         (size_t)1 << 30);
    mca_coll_strata_component_bound_size("allreduce_node_small_max",
                                         &c->settings.decision.node_small_max, 0, (size_t)1 << 30);
    mca_coll_strata_component_bound_figure("allreduce_inter_latency_us",
                                           &c->settings.inter_latency_us);
    mca_coll_strata_component_bound_figure("allreduce_inter_bandwidth_gbs",
                                           &c->settings.inter_bandwidth_gbs);
    mca_coll_strata_component_bound_figure("allreduce_inter_overhead_us",
                                           &c->settings.inter_overhead_us);
    mca_coll_strata_component_bound_int("allreduce_inter_nics", &c->settings.decision.nics, 0,
                                        1024);
    mca_coll_strata_settings_derive(&c->settings);
}

/*
 * The priority comm_query answers (coll_strata_priority's help states the
 * rule): a switched-on strata that sat below coll/han would see han take
 * over allreduce, bcast, reduce, ... on top of it, device buffers
 * included.  Called once the coll components are registered, when han's
 * priority (if han is there at all) is known.
 */
void mca_coll_strata_component_set_priority(void)
{
    mca_coll_strata_component_t *c = &mca_coll_strata_component;
    int han = -1, index = mca_base_var_find("ompi", "coll", "han", "priority");
    const int *value = NULL;

    c->priority_used = c->priority;
    if (c->priority <= 0) {
        return;
    }
    if (index >= 0 && OPAL_SUCCESS == mca_base_var_get_value(index, &value, NULL, NULL) &&
        NULL != value) {
        han = *value;
    }
    /* Open MPI orders equal priorities arbitrarily: strictly above han,
     * whatever its value. */
    if ((han >= c->priority_used) && (han < INT_MAX)) {
        c->priority_used = han + 1;
    }
    MCA_COLL_STRATA_VERBOSE(10, "priority %d (coll_strata_priority %d, coll_han_priority %d)",
                            c->priority_used, c->priority, han);
}

static int mca_coll_strata_component_open(void)
{
    mca_coll_strata_component_check();
    mca_coll_strata_log_parse_test_fail(mca_coll_strata_component.test_fail);
    mca_coll_strata_progress_set_mode(mca_coll_strata_component.progress);
    mca_coll_strata_log.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_strata_log.output, mca_coll_strata_log.verbose);
    return OMPI_SUCCESS;
}

static int mca_coll_strata_component_close(void)
{
    mca_coll_strata_stage_req_finalize();
    mca_coll_strata_engine_finalize();
    if (mca_coll_strata_log.output >= 0) {
        opal_output_close(mca_coll_strata_log.output);
        mca_coll_strata_log.output = -1;
    }
    return OMPI_SUCCESS;
}
