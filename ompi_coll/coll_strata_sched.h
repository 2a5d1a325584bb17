/*
 * coll/strata inter-node schedules: which messages an allreduce among the n
 * members of a rail exchanges, step by step.  Pure arithmetic (no MPI),
 * shared by the executor (coll_strata_xchg.c), the unit test that runs every
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
 */
#ifndef MCA_COLL_STRATA_SCHED_H
#define MCA_COLL_STRATA_SCHED_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    MCA_COLL_STRATA_SCHED_RING = 0,
    MCA_COLL_STRATA_SCHED_RD = 1,
    MCA_COLL_STRATA_SCHED_RHD = 2
} mca_coll_strata_sched_alg_t;

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

/* Steps of alg among n members (0 for n < 2). */
int mca_coll_strata_sched_nsteps(mca_coll_strata_sched_alg_t alg, int n);

/* Member r's step i of an allreduce of count elements among n members. */
void mca_coll_strata_sched_step(mca_coll_strata_sched_alg_t alg, int n, int r, size_t count,
                                int i, mca_coll_strata_sched_step_t *step);

#endif /* MCA_COLL_STRATA_SCHED_H */
