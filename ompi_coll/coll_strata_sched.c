/*
 * coll/strata inter-node schedules (see coll_strata_sched.h).
 */
#include "coll_strata_sched.h"

#include "coll_strata_decision.h" /* mca_coll_strata_partition, _log2_floor */

static void mca_coll_strata_sched_none(mca_coll_strata_sched_step_t *step)
{
    step->send_peer = step->recv_peer = -1;
    step->send_off = step->send_count = step->recv_off = step->recv_count = 0;
    step->fold = MCA_COLL_STRATA_FOLD_NONE;
}

/* Elements of blocks [first, last) of `count` cut into `parts` blocks. */
static void mca_coll_strata_sched_blocks(size_t count, int parts, int first, int last,
                                         size_t *off, size_t *len)
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

/* ---- ring ---- */

static void mca_coll_strata_sched_ring(int n, int r, size_t count, int i,
                                       mca_coll_strata_sched_step_t *step)
{
    int scatter = i < n - 1;
    int s = scatter ? i : i - (n - 1);
    int send_block = ((scatter ? r - s : r + 1 - s) % n + n) % n;
    int recv_block = ((scatter ? r - s - 1 : r - s) % n + n) % n;

    step->send_peer = (r + 1) % n;
    step->recv_peer = (r + n - 1) % n;
    mca_coll_strata_partition(count, n, send_block, &step->send_off, &step->send_count);
    mca_coll_strata_partition(count, n, recv_block, &step->recv_off, &step->recv_count);
    /* block = received op block: the order the ring has always used */
    step->fold = scatter ? MCA_COLL_STRATA_FOLD_RECV_FIRST : MCA_COLL_STRATA_FOLD_NONE;
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

static void mca_coll_strata_sched_rd(int n, int r, size_t count, int i,
                                     mca_coll_strata_sched_step_t *step)
{
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

static void mca_coll_strata_sched_rhd(int n, int r, size_t count, int i,
                                      mca_coll_strata_sched_step_t *step)
{
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
        mca_coll_strata_sched_blocks(count, p, give, give + m, &step->send_off,
                                     &step->send_count);
        mca_coll_strata_sched_blocks(count, p, keep, keep + m, &step->recv_off,
                                     &step->recv_count);
        step->fold = (pv < v) ? MCA_COLL_STRATA_FOLD_RECV_FIRST : MCA_COLL_STRATA_FOLD_MINE_FIRST;
    } else {
        /* allgather, recursive doubling: exchange the m blocks each holds */
        m = 1 << (i - l - 1);
        pv = v ^ m;
        mca_coll_strata_sched_blocks(count, p, v & ~(m - 1), (v & ~(m - 1)) + m,
                                     &step->send_off, &step->send_count);
        mca_coll_strata_sched_blocks(count, p, pv & ~(m - 1), (pv & ~(m - 1)) + m,
                                     &step->recv_off, &step->recv_count);
    }
    step->send_peer = step->recv_peer = mca_coll_strata_sched_real(n, pv);
}

int mca_coll_strata_sched_nsteps(mca_coll_strata_sched_alg_t alg, int n)
{
    if (n < 2) {
        return 0;
    }
    switch (alg) {
    case MCA_COLL_STRATA_SCHED_RD:
        return mca_coll_strata_log2_floor(n) + 2;
    case MCA_COLL_STRATA_SCHED_RHD:
        return 2 * mca_coll_strata_log2_floor(n) + 2;
    default:
        return 2 * (n - 1);
    }
}

void mca_coll_strata_sched_step(mca_coll_strata_sched_alg_t alg, int n, int r, size_t count,
                                int i, mca_coll_strata_sched_step_t *step)
{
    switch (alg) {
    case MCA_COLL_STRATA_SCHED_RD:
        mca_coll_strata_sched_rd(n, r, count, i, step);
        break;
    case MCA_COLL_STRATA_SCHED_RHD:
        mca_coll_strata_sched_rhd(n, r, count, i, step);
        break;
    default:
        mca_coll_strata_sched_ring(n, r, count, i, step);
        break;
    }
}
