/*
 * coll/strata inter-node schedules: which messages a collective among the n
 * members of a rail exchanges, step by step.  Pure arithmetic (no MPI),
 * shared by the executor (engine/coll_strata_xchg.c), the unit test that runs every
 * schedule for many sizes in one process, and the simulator
 * (test/sim/), which replays exactly these steps under a network model.
 *
 * Member r's step i sends send_count elements at send_off of its vector to
 * send_peer and receives recv_count elements from recv_peer, either straight
 * into the vector at recv_off or into scratch and then folded into it.  A
 * peer of -1 means no such message; a step with neither is a no-op for that
 * member.  Every member has the same number of steps, and every message a
 * member sends at step i is the one its peer receives at its step i, with
 * the same count: the executor's error signalling relies on that.
 *
 *   ring   2(n-1) steps; reduce-scatter then allgather of n blocks
 *          (2(n-1) alpha + 2(n-1)/n m beta): bandwidth-optimal
 *   rd     recursive doubling: log2 p steps, the whole vector each
 *          (log2 p (alpha + m beta)): latency-optimal for small vectors
 *   rhd    reduce-scatter by recursive halving, allgather by recursive
 *          doubling, p blocks (2 log2 p alpha + 2(p-1)/p m beta)
 * rd and rhd work on p = the largest power of two <= n members: first the
 * n - p extra members (even ranks below 2(n-p)) fold their vector into
 * their odd neighbour, which takes part for both, and last get the result
 * back (two more steps, which members outside the fold skip).
 *
 * Results are identical on every member, bit for bit: in rd every pair
 * folds the lower virtual rank's partial result first (both members
 * compute the same value), and in ring and rhd each element is reduced by
 * one member only and then copied.
 *
 * The other collectives are halves of the same schedules, or trees:
 *   ring_rs   the reduce-scatter half of ring, member m ending with block
 *             m reduced over every member (blocks by bounds: the node
 *             regions of a reduce-scatter, or one member's whole vector
 *             for a reduce, where it is a chain); n-1 steps, each member
 *             sending every block but its own once
 *   ring_ag   the allgather half of ring: member m starts with block m
 *             (the blocks' bounds given: node regions of different sizes)
 *             and every member ends with all n; n-1 steps
 *   binomial  bcast from `root`: the holders double every step;
 *             ceil(log2 n) steps (latency-optimal)
 *   chain     bcast from `root` along root, root+1, ...: n-1 steps, each
 *             member sending the vector once (bandwidth-optimal once the
 *             pipeline keeps several chunks in flight)
 */
#ifndef MCA_COLL_STRATA_SCHED_H
#define MCA_COLL_STRATA_SCHED_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    MCA_COLL_STRATA_SCHED_RING = 0, /* allreduce */
    MCA_COLL_STRATA_SCHED_RD = 1,
    MCA_COLL_STRATA_SCHED_RHD = 2,
    MCA_COLL_STRATA_SCHED_RING_AG = 3,  /* allgather */
    MCA_COLL_STRATA_SCHED_BINOMIAL = 4, /* bcast */
    MCA_COLL_STRATA_SCHED_CHAIN = 5,
    MCA_COLL_STRATA_SCHED_RING_RS = 6, /* reduce-scatter, reduce */
    MCA_COLL_STRATA_SCHED_COUNT
} mca_coll_strata_sched_alg_t;

/* One exchange among n members of `count` elements.  root: the bcast's
 * source member.  bounds: ring_ag's and ring_rs's blocks, member m's elements
 * [bounds[m], bounds[m+1]) (n + 1 entries, bounds[n] == count); NULL cuts
 * the vector into n near-equal blocks, as the allreduces do. */
typedef struct mca_coll_strata_sched_t {
    mca_coll_strata_sched_alg_t alg;
    int n;
    int root;
    size_t count;
    const size_t *bounds;
} mca_coll_strata_sched_t;

typedef enum {
    MCA_COLL_STRATA_FOLD_NONE = 0,       /* received straight into the vector */
    MCA_COLL_STRATA_FOLD_RECV_FIRST = 1, /* vector = received op vector */
    MCA_COLL_STRATA_FOLD_MINE_FIRST = 2  /* vector = vector op received */
} mca_coll_strata_fold_t;

typedef struct mca_coll_strata_sched_step_t {
    int send_peer;
    size_t send_off, send_count;
    int recv_peer;
    size_t recv_off, recv_count;
    mca_coll_strata_fold_t fold;
} mca_coll_strata_sched_step_t;

/* Steps of the schedule (0 for n < 2). */
int mca_coll_strata_sched_nsteps(const mca_coll_strata_sched_t *sched);

/* Member r's step i of the schedule. */
void mca_coll_strata_sched_step(const mca_coll_strata_sched_t *sched, int r, int i,
                                mca_coll_strata_sched_step_t *step);

#endif /* MCA_COLL_STRATA_SCHED_H */
