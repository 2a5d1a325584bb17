/*
 * coll/strata inter-node schedules (see coll_strata_sched.h).
 */
#include "coll_strata_sched.h"

#include "coll_strata_decision.h" /* mca_coll_strata_partition, _log2_floor, _log2_ceil */

static void mca_coll_strata_sched_none(mca_coll_strata_sched_step_t *step)
{
    step->send_peer = step->recv_peer = -1;
    step->send_off = step->send_count = step->recv_off = step->recv_count = 0;
    step->fold = MCA_COLL_STRATA_FOLD_NONE;
}

/* Elements of blocks [first, last) of `count` cut into `parts` blocks. */
static void mca_coll_strata_sched_blocks(size_t count, int parts, int first, int last, size_t *off,
                                         size_t *len)
{
    size_t end, n;

    mca_coll_strata_partition(count, parts, first, off, &n);
    if (last >= parts) {
        end = count;
    } else {
        mca_coll_strata_partition(count, parts, last, &end, &n);
    }
    *len = end - *off;
}

/* Elements of block b of the schedule's vector: its bounds, or the even cut. */
static void mca_coll_strata_sched_block(const mca_coll_strata_sched_t *sched, int b, size_t *off,
                                        size_t *len)
{
    if (NULL != sched->bounds) {
        *off = sched->bounds[b];
        *len = sched->bounds[b + 1] - sched->bounds[b];
    } else {
        mca_coll_strata_partition(sched->count, sched->n, b, off, len);
    }
}

static int mca_coll_strata_sched_mod(int a, int n)
{
    return (a % n + n) % n;
}

/* ---- ring: a reduce-scatter half and an allgather half ---- */

/* Step s of the ring's reduce-scatter, member r ending with block `ends`:
 * block ends - 1 - s goes on, block ends - 2 - s comes in and is folded;
 * after n - 1 steps member r holds block `ends` reduced over all. */
static void mca_coll_strata_sched_ring_rs(const mca_coll_strata_sched_t *sched, int r, int ends,
                                          int s, mca_coll_strata_sched_step_t *step)
{
    int n = sched->n;

    step->send_peer = (r + 1) % n;
    step->recv_peer = (r + n - 1) % n;
    mca_coll_strata_sched_block(sched, mca_coll_strata_sched_mod(ends - 1 - s, n), &step->send_off,
                                &step->send_count);
    mca_coll_strata_sched_block(sched, mca_coll_strata_sched_mod(ends - 2 - s, n), &step->recv_off,
                                &step->recv_count);
    /* block = received op block: the order the ring has always used */
    step->fold = MCA_COLL_STRATA_FOLD_RECV_FIRST;
}

/* Step s of the ring's allgather, member r starting with block `held`:
 * block held - s goes on, block held - s - 1 comes in. */
static void mca_coll_strata_sched_ring_ag(const mca_coll_strata_sched_t *sched, int r, int held,
                                          int s, mca_coll_strata_sched_step_t *step)
{
    int n = sched->n;

    step->send_peer = (r + 1) % n;
    step->recv_peer = (r + n - 1) % n;
    mca_coll_strata_sched_block(sched, mca_coll_strata_sched_mod(held - s, n), &step->send_off,
                                &step->send_count);
    mca_coll_strata_sched_block(sched, mca_coll_strata_sched_mod(held - s - 1, n), &step->recv_off,
                                &step->recv_count);
    step->fold = MCA_COLL_STRATA_FOLD_NONE;
}

static void mca_coll_strata_sched_ring(const mca_coll_strata_sched_t *sched, int r, int i,
                                       mca_coll_strata_sched_step_t *step)
{
    if (i < sched->n - 1) {
        mca_coll_strata_sched_ring_rs(sched, r, r + 1, i, step);
    } else {
        mca_coll_strata_sched_ring_ag(sched, r, r + 1, i - (sched->n - 1), step);
    }
}

/* ---- bcast trees ---- */

/* Binomial: at step i the members with virtual rank v < 2^i (rank relative
 * to the root) hold the vector and send it to v + 2^i. */
static void mca_coll_strata_sched_binomial(const mca_coll_strata_sched_t *sched, int r, int i,
                                           mca_coll_strata_sched_step_t *step)
{
    int n = sched->n, v = mca_coll_strata_sched_mod(r - sched->root, n), mask = 1 << i;

    if (v < mask && v + mask < n) {
        step->send_peer = (r + mask) % n;
        step->send_count = sched->count;
    } else if (v >= mask && v < 2 * mask) {
        step->recv_peer = mca_coll_strata_sched_mod(r - mask, n);
        step->recv_count = sched->count;
    }
}

/* Chain: at step i, virtual rank i sends to i + 1. */
static void mca_coll_strata_sched_chain(const mca_coll_strata_sched_t *sched, int r, int i,
                                        mca_coll_strata_sched_step_t *step)
{
    int n = sched->n, v = mca_coll_strata_sched_mod(r - sched->root, n);

    if (v == i) {
        step->send_peer = (r + 1) % n;
        step->send_count = sched->count;
    } else if (v == i + 1) {
        step->recv_peer = mca_coll_strata_sched_mod(r - 1, n);
        step->recv_count = sched->count;
    }
}

/* ---- the power-of-two core and its fold ---- */

/* Virtual rank among the p = 2^log2(n) core members, -1 for an extra one. */
static int mca_coll_strata_sched_vrank(int n, int r)
{
    int rem = n - (1 << mca_coll_strata_log2_floor(n));

    if (r < 2 * rem) {
        return (r % 2) ? r / 2 : -1;
    }
    return r - rem;
}

static int mca_coll_strata_sched_real(int n, int v)
{
    int rem = n - (1 << mca_coll_strata_log2_floor(n));

    return (v < rem) ? 2 * v + 1 : v + rem;
}

/* The extra members' vectors fold into their odd neighbours (first step),
 * and the results go back to them (last step). */
static void mca_coll_strata_sched_fold(int n, int r, size_t count, bool back,
                                       mca_coll_strata_sched_step_t *step)
{
    int rem = n - (1 << mca_coll_strata_log2_floor(n));

    mca_coll_strata_sched_none(step);
    if (r >= 2 * rem) {
        return;
    }
    if ((r % 2) == back) {
        /* even and first, or odd and last: send the whole vector */
        step->send_peer = back ? r - 1 : r + 1;
        step->send_count = count;
    } else {
        step->recv_peer = back ? r + 1 : r - 1;
        step->recv_count = count;
        /* the even (lower) member's vector first */
        step->fold = back ? MCA_COLL_STRATA_FOLD_NONE : MCA_COLL_STRATA_FOLD_RECV_FIRST;
    }
}

static void mca_coll_strata_sched_rd(const mca_coll_strata_sched_t *sched, int r, int i,
                                     mca_coll_strata_sched_step_t *step)
{
    int n = sched->n;
    size_t count = sched->count;
    int l = mca_coll_strata_log2_floor(n), v = mca_coll_strata_sched_vrank(n, r), pv;

    if (0 == i || l + 1 == i) {
        mca_coll_strata_sched_fold(n, r, count, 0 != i, step);
        return;
    }
    mca_coll_strata_sched_none(step);
    if (v < 0) {
        return;
    }
    pv = v ^ (1 << (i - 1));
    step->send_peer = step->recv_peer = mca_coll_strata_sched_real(n, pv);
    step->send_count = step->recv_count = count;
    /* both members fold the lower virtual rank's vector first */
    step->fold = (pv < v) ? MCA_COLL_STRATA_FOLD_RECV_FIRST : MCA_COLL_STRATA_FOLD_MINE_FIRST;
}

static void mca_coll_strata_sched_rhd(const mca_coll_strata_sched_t *sched, int r, int i,
                                      mca_coll_strata_sched_step_t *step)
{
    int n = sched->n;
    size_t count = sched->count;
    int l = mca_coll_strata_log2_floor(n), p = 1 << l, v = mca_coll_strata_sched_vrank(n, r);
    int m, pv, base, keep, give;

    if (0 == i || 2 * l + 1 == i) {
        mca_coll_strata_sched_fold(n, r, count, 0 != i, step);
        return;
    }
    mca_coll_strata_sched_none(step);
    if (v < 0) {
        return;
    }
    if (i <= l) {
        /* reduce-scatter, recursive halving: the range of 2m blocks this
         * member holds splits; it keeps the half its bit m says */
        m = p >> i;
        pv = v ^ m;
        base = v & ~(2 * m - 1);
        keep = (v & m) ? base + m : base;
        give = (v & m) ? base : base + m;
        mca_coll_strata_sched_blocks(count, p, give, give + m, &step->send_off, &step->send_count);
        mca_coll_strata_sched_blocks(count, p, keep, keep + m, &step->recv_off, &step->recv_count);
        step->fold = (pv < v) ? MCA_COLL_STRATA_FOLD_RECV_FIRST : MCA_COLL_STRATA_FOLD_MINE_FIRST;
    } else {
        /* allgather, recursive doubling: exchange the m blocks each holds */
        m = 1 << (i - l - 1);
        pv = v ^ m;
        mca_coll_strata_sched_blocks(count, p, v & ~(m - 1), (v & ~(m - 1)) + m, &step->send_off,
                                     &step->send_count);
        mca_coll_strata_sched_blocks(count, p, pv & ~(m - 1), (pv & ~(m - 1)) + m, &step->recv_off,
                                     &step->recv_count);
    }
    step->send_peer = step->recv_peer = mca_coll_strata_sched_real(n, pv);
}

int mca_coll_strata_sched_nsteps(const mca_coll_strata_sched_t *sched)
{
    int n = sched->n;

    if (n < 2) {
        return 0;
    }
    switch (sched->alg) {
    case MCA_COLL_STRATA_SCHED_RD:
        return mca_coll_strata_log2_floor(n) + 2;
    case MCA_COLL_STRATA_SCHED_RHD:
        return 2 * mca_coll_strata_log2_floor(n) + 2;
    case MCA_COLL_STRATA_SCHED_RING_AG:
    case MCA_COLL_STRATA_SCHED_RING_RS:
    case MCA_COLL_STRATA_SCHED_CHAIN:
        return n - 1;
    case MCA_COLL_STRATA_SCHED_BINOMIAL:
        return mca_coll_strata_log2_ceil(n);
    default:
        return 2 * (n - 1);
    }
}

void mca_coll_strata_sched_step(const mca_coll_strata_sched_t *sched, int r, int i,
                                mca_coll_strata_sched_step_t *step)
{
    mca_coll_strata_sched_none(step);
    switch (sched->alg) {
    case MCA_COLL_STRATA_SCHED_RD:
        mca_coll_strata_sched_rd(sched, r, i, step);
        break;
    case MCA_COLL_STRATA_SCHED_RHD:
        mca_coll_strata_sched_rhd(sched, r, i, step);
        break;
    case MCA_COLL_STRATA_SCHED_RING_AG:
        mca_coll_strata_sched_ring_ag(sched, r, r, i, step);
        break;
    case MCA_COLL_STRATA_SCHED_RING_RS:
        mca_coll_strata_sched_ring_rs(sched, r, r, i, step);
        break;
    case MCA_COLL_STRATA_SCHED_BINOMIAL:
        mca_coll_strata_sched_binomial(sched, r, i, step);
        break;
    case MCA_COLL_STRATA_SCHED_CHAIN:
        mca_coll_strata_sched_chain(sched, r, i, step);
        break;
    default:
        mca_coll_strata_sched_ring(sched, r, i, step);
        break;
    }
}
