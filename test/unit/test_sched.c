/*
 * Unit test of coll/strata's inter-node schedules (logic/coll_strata_sched.c): every
 * member of a rail of n = 1..33 members runs its steps of each algorithm
 * (the allreduces ring, rd, rhd; the allgather ring_ag; the bcasts binomial
 * and chain) in one process, messages delivered as the schedule says.
 *   test_sched
 * Checks, for counts 0..70 and a few larger ones:
 *   - every message a member sends at step i is received by its peer at
 *     step i, from it, with the same count (the executor's length-based
 *     error signal relies on it), within the vector;
 *   - allreduces: with a sum, every member ends with the sum of all inputs;
 *     with an operation that is neither commutative nor associative, every
 *     member ends with the same bits (the schedules' claim);
 *   - ring_ag, on blocks of uneven sizes (some empty) and on the even cut:
 *     every member ends with block m of member m's vector, for every m;
 *   - binomial and chain, from every root: every member ends with the
 *     root's vector;
 *   - ring_rs, on the same blocks and on one member's whole vector (a
 *     reduce): every member ends with its own block summed over all
 *     members (the other blocks are nobody's), and each member sends at
 *     most the vector less its own block;
 *   - the step counts (2(n-1); log2 p + 2; 2 log2 p + 2; n-1; ceil(log2 n);
 *     n-1; n-1).
 * Exits 1 at the first wrong value, naming algorithm, n, count, member.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_strata_sched.h"

#define MAX_N 33

static const char *const names[] = {"ring", "rd", "rhd", "ring_ag", "binomial", "chain", "ring_rs"};
static int failures;

#define FAIL(...)                                 \
    do {                                          \
        printf("test_sched: FAIL: " __VA_ARGS__); \
        printf("\n");                             \
        if (++failures > 10) exit(1);             \
    } while (0)

typedef uint64_t (*op_fn)(uint64_t a, uint64_t b);

static uint64_t op_sum(uint64_t a, uint64_t b)
{
    return a + b;
}

/* neither commutative nor associative: any difference in order shows */
static uint64_t op_mix(uint64_t a, uint64_t b)
{
    return a * 0x9e3779b97f4a7c15ull + (b ^ (b >> 7)) + 1;
}

static uint64_t input(int r, size_t j)
{
    return (uint64_t)(r + 1) * 1000003u + j * 7919u;
}

/* Runs the schedule with op; vec[r] ends with member r's result.  Returns
 * nonzero on a schedule mismatch (already reported). */
static size_t sent[MAX_N]; /* elements each member sent in the last run */

static int run(const mca_coll_strata_sched_t *sc, op_fn op, uint64_t **vec)
{
    static mca_coll_strata_sched_step_t steps[MAX_N];
    static uint64_t *msg[MAX_N];
    int n = sc->n, alg = sc->alg, nsteps = mca_coll_strata_sched_nsteps(sc);
    size_t count = sc->count;

    for (int r = 0; r < n; ++r) {
        for (size_t j = 0; j < count; ++j) vec[r][j] = input(r, j);
        sent[r] = 0;
    }
    for (int i = 0; i < nsteps; ++i) {
        for (int r = 0; r < n; ++r) {
            mca_coll_strata_sched_step(sc, r, i, &steps[r]);
        }
        /* sends first, from the state before the step */
        for (int r = 0; r < n; ++r) {
            const mca_coll_strata_sched_step_t *s = &steps[r], *d;

            msg[r] = NULL;
            if (s->send_peer < 0) continue;
            if (s->send_peer >= n || s->send_peer == r ||
                s->send_off + s->send_count > count) {
                FAIL("%s n=%d count=%zu step %d: member %d sends %zu at %zu to %d", names[alg], n,
                     count, i, r, s->send_count, s->send_off, s->send_peer);
                return 1;
            }
            d = &steps[s->send_peer];
            if (d->recv_peer != r || d->recv_count != s->send_count) {
                FAIL("%s n=%d count=%zu step %d: %d sends %zu to %d, which expects %zu from %d",
                     names[alg], n, count, i, r, s->send_count, s->send_peer, d->recv_count,
                     d->recv_peer);
                return 1;
            }
            msg[r] = malloc(sizeof(uint64_t) * (s->send_count + 1));
            sent[r] += s->send_count;
            memcpy(msg[r], vec[r] + s->send_off, sizeof(uint64_t) * s->send_count);
        }
        for (int r = 0; r < n; ++r) {
            const mca_coll_strata_sched_step_t *s = &steps[r];
            const uint64_t *in;

            if (s->recv_peer < 0) continue;
            if (s->recv_peer >= n || steps[s->recv_peer].send_peer != r ||
                s->recv_off + s->recv_count > count) {
                FAIL("%s n=%d count=%zu step %d: member %d expects %zu from %d, which does not "
                     "send it", names[alg], n, count, i, r, s->recv_count, s->recv_peer);
                return 1;
            }
            in = msg[s->recv_peer];
            for (size_t j = 0; j < s->recv_count; ++j) {
                uint64_t *x = &vec[r][s->recv_off + j];

                switch (s->fold) {
                case MCA_COLL_STRATA_FOLD_RECV_FIRST: *x = op(in[j], *x); break;
                case MCA_COLL_STRATA_FOLD_MINE_FIRST: *x = op(*x, in[j]); break;
                default: *x = in[j]; break;
                }
            }
        }
        for (int r = 0; r < n; ++r) free(msg[r]);
    }
    return 0;
}

static int log2_floor(int n)
{
    int l = 0;

    while ((2 << l) <= n) ++l;
    return l;
}

static int expected_steps(int alg, int n)
{
    int l = log2_floor(n);

    if (n < 2) return 0;
    switch (alg) {
    case MCA_COLL_STRATA_SCHED_RING: return 2 * (n - 1);
    case MCA_COLL_STRATA_SCHED_RD: return l + 2;
    case MCA_COLL_STRATA_SCHED_RHD: return 2 * l + 2;
    case MCA_COLL_STRATA_SCHED_BINOMIAL: return ((1 << l) < n) ? l + 1 : l;
    case MCA_COLL_STRATA_SCHED_RING_RS: return n - 1;
    default: return n - 1;
    }
}

static void check_allreduce(const mca_coll_strata_sched_t *sc, uint64_t **vec)
{
    int n = sc->n;
    size_t count = sc->count;

    if (run(sc, op_sum, vec)) return;
    for (int r = 0; r < n; ++r) {
        for (size_t j = 0; j < count; ++j) {
            uint64_t sum = 0;

            for (int q = 0; q < n; ++q) sum += input(q, j);
            if (vec[r][j] != sum) {
                FAIL("%s n=%d count=%zu: member %d element %zu is %llu, expected the sum %llu",
                     names[sc->alg], n, count, r, j, (unsigned long long)vec[r][j],
                     (unsigned long long)sum);
                return;
            }
        }
    }
    if (run(sc, op_mix, vec)) return;
    for (int r = 1; r < n; ++r) {
        if (count && memcmp(vec[r], vec[0], sizeof(uint64_t) * count)) {
            FAIL("%s n=%d count=%zu: member %d's result differs from member 0's (a "
                 "non-commutative op folded in different orders)",
                 names[sc->alg], n, count, r);
            return;
        }
    }
}

/* Each member's own block (owner[j] == member) must hold the sum over all
 * members; nobody sends more than the vector less its own block. */
static void check_rs(const mca_coll_strata_sched_t *sc, uint64_t **vec, const int *owner)
{
    if (run(sc, op_sum, vec)) return;
    for (int r = 0; r < sc->n; ++r) {
        size_t own = 0;

        for (size_t j = 0; j < sc->count; ++j) {
            uint64_t sum = 0;

            if (owner[j] != r) continue;
            ++own;
            for (int q = 0; q < sc->n; ++q) sum += input(q, j);
            if (vec[r][j] != sum) {
                FAIL("ring_rs n=%d count=%zu: member %d's element %zu is %llu, expected the sum "
                     "%llu",
                     sc->n, sc->count, r, j, (unsigned long long)vec[r][j],
                     (unsigned long long)sum);
                return;
            }
        }
        if (sc->n > 1 && sent[r] > sc->count - own) {
            FAIL("ring_rs n=%d count=%zu: member %d sent %zu elements, more than the %zu not its "
                 "own",
                 sc->n, sc->count, r, sent[r], sc->count - own);
            return;
        }
    }
}

/* Member `owner(j)`'s input must be at element j of every member. */
static void check_copy(const mca_coll_strata_sched_t *sc, uint64_t **vec, const int *owner)
{
    if (run(sc, op_sum, vec)) return;
    for (int r = 0; r < sc->n; ++r) {
        for (size_t j = 0; j < sc->count; ++j) {
            if (vec[r][j] != input(owner[j], j)) {
                FAIL("%s n=%d count=%zu root=%d: member %d element %zu came from the wrong "
                     "member (or none): %llu, expected member %d's %llu",
                     names[sc->alg], sc->n, sc->count, sc->root, r, j,
                     (unsigned long long)vec[r][j], owner[j],
                     (unsigned long long)input(owner[j], j));
                return;
            }
        }
    }
}

int main(void)
{
    static const size_t big[] = {127, 128, 129, 1000, 4099};
    static int owner[4100];
    size_t bounds[MAX_N + 1];
    uint64_t *vec[MAX_N];
    size_t checked = 0;

    for (int r = 0; r < MAX_N; ++r) vec[r] = malloc(sizeof(uint64_t) * 4100);
    for (int alg = 0; alg < MCA_COLL_STRATA_SCHED_COUNT; ++alg) {
        for (int n = 1; n <= MAX_N; ++n) {
            mca_coll_strata_sched_t sc = {.alg = alg, .n = n};

            if (mca_coll_strata_sched_nsteps(&sc) != expected_steps(alg, n)) {
                FAIL("%s n=%d: %d steps, expected %d", names[alg], n,
                     mca_coll_strata_sched_nsteps(&sc), expected_steps(alg, n));
            }
            for (size_t ci = 0; ci < 71 + sizeof(big) / sizeof(big[0]); ++ci) {
                sc.count = (ci < 71) ? ci : big[ci - 71];
                sc.bounds = NULL;
                switch (alg) {
                case MCA_COLL_STRATA_SCHED_RING_RS:
                case MCA_COLL_STRATA_SCHED_RING_AG:
                    /* the even cut, then blocks of 0, 1, 2, 0, 1, 2... units
                     * (a node region: ranks x elements) scaled to the count */
                    for (int pass = 0; pass < 2; ++pass) {
                        size_t unit = sc.count / (size_t)n + 1, off = 0;

                        if (pass == 1) {
                            for (int m = 0; m < n; ++m) {
                                bounds[m] = off;
                                off += (size_t)(m % 3) * unit;
                            }
                            bounds[n] = off;
                            sc.count = off;
                            sc.bounds = bounds;
                        }
                        if (sc.count > 4099) break;
                        for (int m = 0; m < n; ++m) {
                            size_t lo, len;

                            if (sc.bounds) {
                                lo = bounds[m];
                                len = bounds[m + 1] - lo;
                            } else {
                                size_t base = sc.count / (size_t)n, extra = sc.count % (size_t)n;

                                /* the first count % n blocks one longer */
                                lo = base * (size_t)m + ((size_t)m < extra ? (size_t)m : extra);
                                len = base + ((size_t)m < extra ? 1 : 0);
                            }
                            for (size_t j = lo; j < lo + len; ++j) owner[j] = m;
                        }
                        if (alg == MCA_COLL_STRATA_SCHED_RING_AG) {
                            check_copy(&sc, vec, owner);
                        } else {
                            check_rs(&sc, vec, owner);
                        }
                    }
                    if (alg == MCA_COLL_STRATA_SCHED_RING_RS && n > 1) {
                        /* a reduce: the last member's block is the whole vector */
                        sc.count = (ci < 71) ? ci : big[ci - 71];
                        for (int m = 0; m <= n; ++m) bounds[m] = (m == n) ? sc.count : 0;
                        sc.bounds = bounds;
                        for (size_t j = 0; j < sc.count; ++j) owner[j] = n - 1;
                        check_rs(&sc, vec, owner);
                    }
                    break;
                case MCA_COLL_STRATA_SCHED_BINOMIAL:
                case MCA_COLL_STRATA_SCHED_CHAIN:
                    for (sc.root = 0; sc.root < n; ++sc.root) {
                        for (size_t j = 0; j < sc.count; ++j) owner[j] = sc.root;
                        check_copy(&sc, vec, owner);
                    }
                    sc.root = 0;
                    break;
                default: check_allreduce(&sc, vec); break;
                }
                ++checked;
            }
        }
    }
    printf("test_sched: %s: ring, rd, rhd, ring_ag, binomial, chain and ring_rs on 1..%d members, "
           "%zu (algorithm, n, count) cases: messages matched, sums right, results bitwise "
           "identical, every block from its owner, reduce-scatter blocks at their owners\n",
           failures ? "FAIL" : "OK", MAX_N, checked);
    return failures ? 1 : 0;
}
