/*
 * Unit test of coll/strata's pure logic: the allreduce decision function and
 * the partition arithmetic that cuts chunks into slices and ring blocks.
 *   test_decision
 * Prints each rule it checks; exits non-zero on the first wrong answer.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "coll_strata_decision.h"
#include "coll_strata_sched.h"

static int failures = 0;

#define CHECK(_cond, ...)                                 \
    do {                                                  \
        if (!(_cond)) {                                   \
            printf("test_decision: FAIL: " __VA_ARGS__); \
            printf(" (%s)\n", #_cond);                    \
            failures++;                                   \
        }                                                 \
    } while (0)

static const mca_coll_strata_decision_params_t defaults = {
    .algorithm = MCA_COLL_STRATA_ALG_AUTO,
    .inter_algorithm = MCA_COLL_STRATA_INTER_AUTO,
    .small_max = 4096,
    .node_small_max = 16384,
    .alpha = 5e-6, /* 5 us per message */
    .beta = 1e-10, /* 10 GB/s */
};

static mca_coll_strata_decision_t decide(const mca_coll_strata_decision_params_t *params,
                                         size_t bytes, int nnodes, int ppn_min, int ppn_max)
{
    mca_coll_strata_decision_input_t in = {
        .bytes = bytes, .nnodes = nnodes,
        .ppn_min = ppn_min, .ppn_max = ppn_max,
    };
    mca_coll_strata_decision_t out;

    mca_coll_strata_decide(params, &in, &out);
    return out;
}

static void test_auto_rules(void)
{
    mca_coll_strata_decision_t d;

    d = decide(&defaults, 8, 4, 2, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_LEADER && d.nslices == 1 &&
              d.inter == MCA_COLL_STRATA_INTER_RD,
          "8 B on 4x2: leader (one message per node), recursive doubling (2 messages, not 6)");
    d = decide(&defaults, 4096, 1, 4, 4);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_REPLICATED &&
          d.inter == MCA_COLL_STRATA_INTER_NONE, "4 KiB on one node: replicated, no inter-node phase");
    d = decide(&defaults, 16384, 1, 4, 4);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_REPLICATED,
          "16 KiB on one node: replicated (node_small_max)");
    d = decide(&defaults, 16385, 1, 4, 4);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL && d.nslices == 4,
          "one byte over node_small_max on one node: rail, 4 slices");
    {
        mca_coll_strata_decision_input_t in = {
            .bytes = 8192, .nnodes = 1, .ppn_min = 4, .ppn_max = 4, .slow_op = true};

        mca_coll_strata_decide(&defaults, &in, &d);
        CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL,
              "8 KiB of a logical op on one node: rail (small_max: every rank reducing every "
              "input in a plain loop costs more than the second phase)");
        in.bytes = 2048;
        mca_coll_strata_decide(&defaults, &in, &d);
        CHECK(d.algorithm == MCA_COLL_STRATA_ALG_REPLICATED,
              "2 KiB of a logical op on one node: replicated (node_small_max / 8)");
        in.bytes = 2049;
        mca_coll_strata_decide(&defaults, &in, &d);
        CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL,
              "one byte more of a logical op on one node: rail");
        in.nnodes = 2;
        in.bytes = 4096;
        mca_coll_strata_decide(&defaults, &in, &d);
        CHECK(d.algorithm == MCA_COLL_STRATA_ALG_LEADER,
              "4 KiB of a logical op on 2 nodes: leader, as any op (small_max)");
    }
    d = decide(&defaults, 8192, 2, 4, 4);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL,
          "8 KiB on 2 nodes: rail (small_max, not node_small_max)");
    d = decide(&defaults, 64, 3, 1, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_LEADER && d.nslices == 1, "64 B on 2+2+1: leader");
    d = decide(&defaults, 4097, 4, 2, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL && d.nslices == 2 &&
          d.inter == MCA_COLL_STRATA_INTER_RD, "4097 B on 4x2: rail, 2 slices, doubling");
    d = decide(&defaults, 2 << 20, 4, 2, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL && d.nslices == 2 &&
          d.inter == MCA_COLL_STRATA_INTER_RHD,
          "2 MiB on 4x2: rail, 2 slices, halving-doubling (the ring's bytes, 4 messages not 6)");
    d = decide(&defaults, 2 << 20, 3, 1, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL && d.nslices == 1,
          "uneven 2+2+1: one slice (every rail must span all nodes)");
    d = decide(&defaults, 2 << 20, 4, 1, 1);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_FALLBACK, "one rank per node falls back");
    d = decide(&defaults, 100000, 2, 2, 2);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_RD, "2 nodes: doubling (one message of the share)");
    d = decide(&defaults, 2 << 20, 3, 1, 1);
    d = decide(&defaults, 2 << 20, 3, 2, 2);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_RING,
          "1 MiB per rail on 3 nodes: ring (the fold of a non-power of two costs the share twice)");
    d = decide(&defaults, 64, 5, 2, 2);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_RD, "64 B on 5 nodes: doubling with the fold");
}

/* The cost model against the formulas it implements, and its choices as
 * the node count grows: doubling for small shares at any N, the ring never
 * for small shares at large N (2(N-1) messages). */
static void test_cost_model(void)
{
    const double a = defaults.alpha, b = defaults.beta;
    mca_coll_strata_decision_t d;

    CHECK(mca_coll_strata_inter_cost(&defaults, MCA_COLL_STRATA_INTER_RING, 4, 1000) ==
              6 * a + 1.5 * 1000 * b, "ring cost on 4 members\n");
    CHECK(mca_coll_strata_inter_cost(&defaults, MCA_COLL_STRATA_INTER_RD, 4, 1000) ==
              2 * (a + 1000 * b), "doubling cost on 4 members\n");
    CHECK(fabs(mca_coll_strata_inter_cost(&defaults, MCA_COLL_STRATA_INTER_RHD, 5, 1000) -
               (4 * a + 1.5 * 1000 * b + 2 * (a + 1000 * b))) < 1e-15,
          "halving-doubling cost on 5 members (fold included)\n");
    CHECK(mca_coll_strata_inter_cost(&defaults, MCA_COLL_STRATA_INTER_RING, 1, 1000) == 0.0,
          "one member costs nothing\n");
    for (int n = 2; n <= 4096; n *= 2) {
        d = decide(&defaults, 64, n, 2, 2);
        CHECK(d.inter == MCA_COLL_STRATA_INTER_RD, "64 B on %d nodes: doubling\n", n);
        d = decide(&defaults, 64, n + 1, 2, 2);
        CHECK(d.inter == MCA_COLL_STRATA_INTER_RD, "64 B on %d nodes: doubling\n", n + 1);
    }
    {
        mca_coll_strata_decision_params_t p = defaults;
        mca_coll_strata_decision_input_t in = {.bytes = 64 << 20, .nnodes = 512, .ppn_min = 2,
                                               .ppn_max = 2, .chunk_bytes = 128 << 10};

        mca_coll_strata_decide(&p, &in, &d);
        CHECK(d.inter == MCA_COLL_STRATA_INTER_RHD,
              "64 MiB on 512 nodes in 128 KiB chunks: halving-doubling per chunk (the ring's "
              "1022 messages per chunk cost more), got %s\n", mca_coll_strata_inter_name(d.inter));
    }
}

static void test_overrides(void)
{
    mca_coll_strata_decision_params_t p = defaults;
    mca_coll_strata_decision_t d;

    p.algorithm = MCA_COLL_STRATA_ALG_FALLBACK;
    d = decide(&p, 1 << 20, 4, 2, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_FALLBACK, "forced fallback");
    p.algorithm = MCA_COLL_STRATA_ALG_LEADER;
    d = decide(&p, 64 << 20, 4, 2, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_LEADER && d.nslices == 1, "forced leader, large");
    p.algorithm = MCA_COLL_STRATA_ALG_RAIL;
    d = decide(&p, 8, 4, 3, 4);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL && d.nslices == 3, "forced rail, small");
    d = decide(&p, 8, 4, 1, 1);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL && d.nslices == 1,
          "forced rail even with one rank per node");
    p.algorithm = MCA_COLL_STRATA_ALG_AUTO;
    p.inter_algorithm = MCA_COLL_STRATA_INTER_RING;
    d = decide(&p, 8, 4, 2, 2);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_RING, "forced ring for small messages");
    d = decide(&p, 8, 1, 2, 2);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_NONE, "no inter-node phase on one node, forced or not");
    p.inter_algorithm = MCA_COLL_STRATA_INTER_COLL;
    d = decide(&p, 64 << 20, 4, 2, 2);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_COLL, "forced coll for large messages");
    p = defaults;
    p.small_max = 1 << 20;
    d = decide(&p, 1 << 20, 4, 2, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_LEADER && d.inter == MCA_COLL_STRATA_INTER_RHD,
          "small_max raised: 1 MiB by the leaders, the whole of it on one rail "
          "(halving-doubling)");
    d = decide(&p, (1 << 20) + 1, 4, 2, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL, "one byte over small_max: rail");
    p = defaults;
    p.algorithm = MCA_COLL_STRATA_ALG_LEADER;
    d = decide(&p, 8, 4, 2, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_LEADER && d.nslices == 1 &&
          d.inter == MCA_COLL_STRATA_INTER_RD, "forced leader, small: one slice, doubling");
}

/* Device buffers change only this rank's device path, never the algorithm
 * (ranks may mix host and device buffers in one call). */
static void test_device_path(void)
{
    static const size_t sizes[] = {8, 4096, 4097, 2 << 20};
    static const int tops[][3] = {{1, 4, 4}, {4, 2, 2}, {3, 1, 2}, {2, 1, 1}};

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        for (size_t t = 0; t < sizeof(tops) / sizeof(tops[0]); ++t) {
            mca_coll_strata_decision_input_t in = {
                .bytes = sizes[i], .nnodes = tops[t][0],
                .ppn_min = tops[t][1], .ppn_max = tops[t][2],
            };
            mca_coll_strata_decision_t host, dev;

            mca_coll_strata_decide(&defaults, &in, &host);
            in.device = true;
            mca_coll_strata_decide(&defaults, &in, &dev);
            CHECK(host.device_path == MCA_COLL_STRATA_DEVICE_NONE &&
                      dev.device_path == MCA_COLL_STRATA_DEVICE_STAGED,
                  "%zu B on %dx%d: host buffers direct, device buffers staged", sizes[i],
                  tops[t][0], tops[t][2]);
            CHECK(host.algorithm == dev.algorithm && host.nslices == dev.nslices &&
                      host.inter == dev.inter,
                  "%zu B on %dx%d: the same algorithm for host and device buffers", sizes[i],
                  tops[t][0], tops[t][2]);
        }
    }
}

/* The native path (device data on every rank's GPU) across nodes runs one
 * of strata's exchanges between nodes, never the rail's own allreduce (a
 * host module's, which would read device memory with the CPU).  The
 * algorithm and slices are the host path's; inside one node there is no
 * inter-node phase. */
static void test_native(void)
{
    static const size_t sizes[] = {8, 4096, 65535, 65536, 2 << 20};
    static const int inters[] = {MCA_COLL_STRATA_INTER_AUTO, MCA_COLL_STRATA_INTER_COLL,
                                 MCA_COLL_STRATA_INTER_RING};
    static const int tops[][3] = {{2, 2, 2}, {2, 1, 3}, {5, 4, 4}, {1, 4, 4}};

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        for (size_t f = 0; f < sizeof(inters) / sizeof(inters[0]); ++f) {
            for (size_t t = 0; t < sizeof(tops) / sizeof(tops[0]); ++t) {
                mca_coll_strata_decision_params_t p = defaults;
                mca_coll_strata_decision_input_t in = {
                    .bytes = sizes[i], .nnodes = tops[t][0],
                    .ppn_min = tops[t][1], .ppn_max = tops[t][2],
                };
                mca_coll_strata_decision_t host, native;

                p.inter_algorithm = inters[f];
                mca_coll_strata_decide(&p, &in, &host);
                in.native = in.device = true;
                mca_coll_strata_decide(&p, &in, &native);
                /* never the rail's own allreduce; a forced strata exchange
                 * as forced, else the cost model's choice */
                CHECK((tops[t][0] == 1) ? native.inter == MCA_COLL_STRATA_INTER_NONE
                      : (inters[f] == MCA_COLL_STRATA_INTER_RING)
                          ? native.inter == MCA_COLL_STRATA_INTER_RING
                          : (native.inter != MCA_COLL_STRATA_INTER_COLL &&
                             native.inter != MCA_COLL_STRATA_INTER_NONE),
                      "native %zu B on %d node(s), inter forced %s: %s between nodes\n", sizes[i],
                      tops[t][0], mca_coll_strata_inter_name(inters[f]),
                      mca_coll_strata_inter_name(native.inter));
                CHECK(native.algorithm == host.algorithm && native.nslices == host.nslices,
                      "native %zu B on %d node(s): the host path's algorithm and slices\n",
                      sizes[i], tops[t][0]);
            }
        }
    }
}

/* Whether a rank hands device blocks to the pml: only where it can carry
 * them, never when staging is forced; `direct` that cannot be honoured
 * warns. */
static void test_device_network(void)
{
    static const struct {
        int net;
        bool carries, direct, warn;
    } cases[] = {
        {MCA_COLL_STRATA_DEVICE_NET_AUTO, true, true, false},
        {MCA_COLL_STRATA_DEVICE_NET_AUTO, false, false, false},
        {MCA_COLL_STRATA_DEVICE_NET_DIRECT, true, true, false},
        {MCA_COLL_STRATA_DEVICE_NET_DIRECT, false, false, true},
        {MCA_COLL_STRATA_DEVICE_NET_STAGED, true, false, false},
        {MCA_COLL_STRATA_DEVICE_NET_STAGED, false, false, false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        bool warn = !cases[i].warn;
        bool direct = mca_coll_strata_decide_device_direct(cases[i].net, cases[i].carries, &warn);

        CHECK(direct == cases[i].direct && warn == cases[i].warn,
              "device network %d, pml %s device memory: direct %d warn %d\n", cases[i].net,
              cases[i].carries ? "carries" : "cannot carry", direct, warn);
    }
    CHECK(!mca_coll_strata_decide_try_native(MCA_COLL_STRATA_DEVICE_ALG_STAGED, 0, 1 << 30),
          "staged forced: never native\n");
    CHECK(mca_coll_strata_decide_try_native(MCA_COLL_STRATA_DEVICE_ALG_NATIVE, 1 << 20, 8),
          "native forced: native below the threshold\n");
    CHECK(!mca_coll_strata_decide_try_native(MCA_COLL_STRATA_DEVICE_ALG_AUTO, 65536, 65535) &&
              mca_coll_strata_decide_try_native(MCA_COLL_STRATA_DEVICE_ALG_AUTO, 65536, 65536),
          "auto: native from the threshold\n");
}

/* The bcast's exchange between node leaders: binomial for two nodes (the
 * same messages) and for one chunk on more; the chain once it is no slower
 * in chunk times (nchunks + N - 2 <= nchunks * ceil(log2 N)); forced
 * settings win.  Measured on 4x2 nodes at 1 Gbit/s: binomial 2.01x the
 * bytes bound and 3x the chain's time at 2 chunks, where they tie here. */
static void test_bcast_sched(void)
{
    static const struct {
        int setting, nnodes;
        size_t nchunks;
        int sched;
    } cases[] = {
        {MCA_COLL_STRATA_COPY_AUTO, 2, 1, MCA_COLL_STRATA_SCHED_BINOMIAL},
        {MCA_COLL_STRATA_COPY_AUTO, 2, 1000, MCA_COLL_STRATA_SCHED_BINOMIAL},
        {MCA_COLL_STRATA_COPY_AUTO, 3, 1, MCA_COLL_STRATA_SCHED_CHAIN}, /* 2 hops either way */
        {MCA_COLL_STRATA_COPY_AUTO, 4, 1, MCA_COLL_STRATA_SCHED_BINOMIAL},
        {MCA_COLL_STRATA_COPY_AUTO, 4, 2, MCA_COLL_STRATA_SCHED_CHAIN},
        {MCA_COLL_STRATA_COPY_AUTO, 16, 3, MCA_COLL_STRATA_SCHED_BINOMIAL}, /* 17 vs 12 */
        {MCA_COLL_STRATA_COPY_AUTO, 16, 5, MCA_COLL_STRATA_SCHED_CHAIN},    /* 19 vs 20 */
        {MCA_COLL_STRATA_COPY_BINOMIAL, 16, 1000, MCA_COLL_STRATA_SCHED_BINOMIAL},
        {MCA_COLL_STRATA_COPY_CHAIN, 16, 1, MCA_COLL_STRATA_SCHED_CHAIN},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        int got = mca_coll_strata_decide_bcast_sched(cases[i].setting, cases[i].nnodes,
                                                     cases[i].nchunks);

        CHECK(got == cases[i].sched,
              "bcast setting %d, %d nodes, %zu chunks: schedule %d, "
              "expected %d\n",
              cases[i].setting, cases[i].nnodes, cases[i].nchunks, got, cases[i].sched);
    }
}

/* An input without a topology (every count zero) never divides by zero,
 * whatever is forced. */
static void test_empty_topology(void)
{
    for (int alg = MCA_COLL_STRATA_ALG_AUTO; alg <= MCA_COLL_STRATA_ALG_REPLICATED; ++alg) {
        mca_coll_strata_decision_params_t p = defaults;
        mca_coll_strata_decision_input_t in = {.bytes = 1 << 20, .device = true};
        mca_coll_strata_decision_t d;

        p.algorithm = alg;
        p.inter_algorithm = MCA_COLL_STRATA_INTER_AUTO;
        mca_coll_strata_decide(&p, &in, &d);
        CHECK(d.nslices >= 1 && d.device_path == MCA_COLL_STRATA_DEVICE_STAGED,
              "forced %s without a topology: %d slice(s), staged", mca_coll_strata_alg_name(alg),
              d.nslices);
    }
}

/* Every split must tile [0, total) with parts differing by at most one. */
static void test_partition(void)
{
    for (size_t total = 0; total <= 300; ++total) {
        for (int parts = 1; parts <= 17; ++parts) {
            size_t expect_offset = 0, min = (size_t)-1, max = 0;

            for (int i = 0; i < parts; ++i) {
                size_t offset, count;

                mca_coll_strata_partition(total, parts, i, &offset, &count);
                CHECK(offset == expect_offset, "partition(%zu, %d) part %d offset %zu, expected %zu",
                      total, parts, i, offset, expect_offset);
                expect_offset = offset + count;
                min = count < min ? count : min;
                max = count > max ? count : max;
            }
            CHECK(expect_offset == total, "partition(%zu, %d) covers %zu", total, parts,
                  expect_offset);
            CHECK(max - min <= 1, "partition(%zu, %d) parts %zu..%zu", total, parts, min, max);
        }
    }
}

/* The rails of a node sharing its network: the share function, the extra
 * share from measured betas, and the decision it moves. */
static void test_rail_share(void)
{
    mca_coll_strata_decision_params_t p = defaults;
    mca_coll_strata_decision_t d;

    CHECK(mca_coll_strata_rail_share(&p, 1) == 1.0 && mca_coll_strata_rail_share(&p, 8) == 1.0,
          "no extra share: independent rails\n");
    p.rail_share_extra = 1.0;
    CHECK(mca_coll_strata_rail_share(&p, 1) == 1.0 && mca_coll_strata_rail_share(&p, 4) == 4.0,
          "a shared link: 4 rails, each a quarter\n");
    p.rail_share_extra = 0.5;
    CHECK(mca_coll_strata_rail_share(&p, 3) == 2.0, "half shared: 3 rails, 2x\n");
    p.nics = 4;
    CHECK(mca_coll_strata_rail_share(&p, 4) == 1.0 && mca_coll_strata_rail_share(&p, 8) == 2.0 &&
              mca_coll_strata_rail_share(&p, 5) == 2.0,
          "configured NICs win: ceil(rails / nics)\n");

    CHECK(fabs(mca_coll_strata_network_rail_share_extra(8e-9, 16e-9, 2) - 1.0) < 1e-12 &&
              fabs(mca_coll_strata_network_rail_share_extra(8e-9, 8e-9, 4)) < 1e-12 &&
              fabs(mca_coll_strata_network_rail_share_extra(8e-9, 20e-9, 4) - 0.5) < 1e-12,
          "extra share from betas: shared 1, own links 0, between 0.5\n");
    CHECK(mca_coll_strata_network_rail_share_extra(8e-9, 64e-9, 2) == 1.0 &&
              mca_coll_strata_network_rail_share_extra(8e-9, 4e-9, 2) == 0.0 &&
              mca_coll_strata_network_rail_share_extra(8e-9, NAN, 2) == 0.0 &&
              mca_coll_strata_network_rail_share_extra(0.0, 8e-9, 2) == 0.0 &&
              mca_coll_strata_network_rail_share_extra(8e-9, 16e-9, 1) == 0.0,
          "extra share clamped to [0, 1]; NaN, no beta or one rail: 0\n");

    /* 1 Gbit/s, 20 us; 14000 B on 4 nodes x 2 runs the rail path, 7000 B a
     * rail: doubling (2 alpha + 2 m beta) beats halving-doubling (4 alpha +
     * 1.5 m beta) below about 9300 B a rail on its own link, and only
     * below about 4800 B when the two rails share one (beta doubled). */
    p = defaults;
    p.alpha = 20e-6;
    p.beta = 8e-9;
    p.gamma = 1.0 / 4e9;
    d = decide(&p, 14000, 4, 2, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL && d.inter == MCA_COLL_STRATA_INTER_RD,
          "7000 B a rail, own links: doubling\n");
    p.rail_share_extra = 1.0;
    d = decide(&p, 14000, 4, 2, 2);
    CHECK(d.algorithm == MCA_COLL_STRATA_ALG_RAIL && d.inter == MCA_COLL_STRATA_INTER_RHD,
          "7000 B a rail, one shared link: halving-doubling\n");
    /* the leader path runs one rail: no sharing, whatever the figure */
    p.algorithm = MCA_COLL_STRATA_ALG_LEADER;
    d = decide(&p, 7000, 4, 2, 2);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_RD, "leader path, 7000 B: doubling, shared or not\n");
    p.nics = 2;
    p.algorithm = MCA_COLL_STRATA_ALG_AUTO;
    d = decide(&p, 14000, 4, 2, 2);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_RD, "two NICs for two rails: doubling again\n");
}

/* A message of many chunks: each further chunk's exchange costs the most
 * of the member's CPU (overhead per message sent and received, folds), its
 * link's bytes one way, and a slots-th of a whole exchange.  On 6 nodes x 4
 * at 100 GbE (7 us, 12.5 GB/s, one NIC), 2 MiB in 128 KiB chunks, 32 KiB a
 * rail and chunk: the ring's 10 steps a chunk (20 messages sent and
 * received) are cheapest while they overlap freely, halving-doubling's 6
 * (10 messages with the fold's two) once each message costs 2 us of CPU,
 * doubling's 4 (6 messages, but 4 whole shares) at 3.5 us. */
static void test_pipelined(void)
{
    mca_coll_strata_decision_params_t p = defaults;
    mca_coll_strata_decision_input_t in = {.bytes = 2 << 20,
                                           .nnodes = 6,
                                           .ppn_min = 4,
                                           .ppn_max = 4,
                                           .chunk_bytes = 128 << 10,
                                           .slots = 4};
    mca_coll_strata_decision_t d;

    p.alpha = 7e-6;
    p.beta = 8e-11;
    p.gamma = 1.0 / 4e9;
    p.nics = 1;
    mca_coll_strata_decide(&p, &in, &d);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_RING, "no overhead: the ring, got %s\n",
          mca_coll_strata_inter_name(d.inter));
    p.overhead = 2e-6;
    mca_coll_strata_decide(&p, &in, &d);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_RHD, "2 us a message: halving-doubling, got %s\n",
          mca_coll_strata_inter_name(d.inter));
    p.overhead = 3.5e-6;
    mca_coll_strata_decide(&p, &in, &d);
    CHECK(d.inter == MCA_COLL_STRATA_INTER_RD, "3.5 us a message: doubling, got %s\n",
          mca_coll_strata_inter_name(d.inter));
    /* one chunk pays its exchange in full (overhead is inside alpha), for
     * every size: the overhead does not move the decision */
    for (in.bytes = 1024; in.bytes <= (128 << 10); in.bytes += 1024) {
        mca_coll_strata_decision_t d0;

        p.overhead = 0.0;
        mca_coll_strata_decide(&p, &in, &d0);
        p.overhead = 3e-6;
        mca_coll_strata_decide(&p, &in, &d);
        CHECK(d.inter == d0.inter, "one chunk of %zu B: %s with overhead, %s without\n", in.bytes,
              mca_coll_strata_inter_name(d.inter), mca_coll_strata_inter_name(d0.inter));
    }

    CHECK(mca_coll_strata_network_overhead(2e-6, 10e-6) == 2e-6 &&
              mca_coll_strata_network_overhead(20e-6, 10e-6) == 10e-6 &&
              mca_coll_strata_network_overhead(-1.0, 10e-6) == 0.0 &&
              mca_coll_strata_network_overhead(NAN, 10e-6) == 0.0,
          "measured overhead within [0, alpha]; NaN 0\n");
}

/* The network figures from round trips, their clamps, and which figure
 * wins: configured, measured, fallback. */
static void test_network(void)
{
    mca_coll_strata_decision_params_t p = defaults;
    const double measured[2] = {30e-6, 8e-9};
    double a, b;

    /* 1 Gbit/s: 60 us there and back, 256 KiB more takes 2.1 ms, 1 MiB 8.4 */
    mca_coll_strata_network_from_round_trips(60e-6, 60e-6 + 262144 * 8e-9, 262144,
                                             60e-6 + 1048576 * 8e-9, 1048576, &a, &b);
    CHECK(fabs(a - 30e-6) < 1e-15 && fabs(b - 8e-9) < 1e-18,
          "1 Gbit/s round trips: alpha 30 us, beta 8 ns/B, got %g %g\n", a, b);
    /* a token bucket lets the first 256 KB through at the line's speed: the
     * difference of the two large sizes still gives the rate */
    mca_coll_strata_network_from_round_trips(60e-6, 60e-6 + 4000 * 8e-9, 262144,
                                             60e-6 + (1048576 - 258144) * 8e-9, 1048576, &a, &b);
    CHECK(fabs(b - 8e-9) < 1e-18, "1 Gbit/s behind a 256 KB burst: beta 8 ns/B, got %g\n", b);
    mca_coll_strata_network_from_round_trips(4e-6, 4e-6 + 262144 / 50e9, 262144,
                                             4e-6 + 1048576 / 50e9, 1048576, &a, &b);
    CHECK(fabs(a - 2e-6) < 1e-15 && fabs(1.0 / b - 50e9) < 1e3,
          "NDR round trips: alpha 2 us, 50 GB/s, got %g %g\n", a, 1.0 / b);
    mca_coll_strata_network_from_round_trips(10e-6, 30e-6, 262144, 29e-6, 1048576, &a, &b);
    CHECK(b == MCA_COLL_STRATA_NET_BETA_MIN,
          "a large round trip shorter than the middle one: the fastest link, got %g\n", b);
    mca_coll_strata_network_from_round_trips(1e-9, 0.0, 1, 1.0, 2, &a, &b);
    CHECK(a == MCA_COLL_STRATA_NET_ALPHA_MIN && b == MCA_COLL_STRATA_NET_BETA_MAX,
          "clamped to the sane ranges, got %g %g\n", a, b);
    mca_coll_strata_network_from_round_trips(NAN, NAN, 0, NAN, 0, &a, &b);
    CHECK(a == MCA_COLL_STRATA_NET_ALPHA_MIN && b == MCA_COLL_STRATA_NET_BETA_MIN,
          "NaN round trips clamp to the minimum, got %g %g\n", a, b);
    mca_coll_strata_network_from_round_trips(60e-6, 1e-3, 1048576, 2e-3, 1048576, &a, &b);
    CHECK(b == MCA_COLL_STRATA_NET_BETA_MAX, "equal sizes: no division by zero, got %g\n", b);

    mca_coll_strata_network_params(20.0, 12.5, measured, &p);
    CHECK(fabs(p.alpha - 20e-6) < 1e-15 && fabs(p.beta - 1.0 / 12.5e9) < 1e-20,
          "configured figures win over measured\n");
    mca_coll_strata_network_params(0.0, 0.0, measured, &p);
    CHECK(p.alpha == measured[0] && p.beta == measured[1], "0: the measured figures\n");
    mca_coll_strata_network_params(7.0, 0.0, measured, &p);
    CHECK(fabs(p.alpha - 7e-6) < 1e-15 && p.beta == measured[1],
          "latency configured, bandwidth measured\n");
    mca_coll_strata_network_params(0.0, 0.0, NULL, &p);
    CHECK(p.alpha == MCA_COLL_STRATA_NET_LATENCY_US_FALLBACK * 1e-6 &&
              p.beta == 1.0 / (MCA_COLL_STRATA_NET_BANDWIDTH_GBS_FALLBACK * 1e9),
          "nothing measured: the fallback figures\n");

    /* what the cluster needs: 32 KiB on 4 nodes x 2, 1 Gbit/s */
    p = defaults;
    p.alpha = measured[0];
    p.beta = measured[1];
    CHECK(decide(&p, 32768, 4, 2, 2).inter == MCA_COLL_STRATA_INTER_RHD,
          "32 KiB on 4x2 at 1 Gbit/s, 30 us: halving-doubling\n");
}

/* Compression: the exchange chosen for a compressed call is the one the
 * cost model picks for the bytes that cross (ratio times the message),
 * over node counts and sizes; a forced exchange stays; the algorithm and
 * slices are kept. */
static void test_compressed(void)
{
    static const double ratios[] = {0.5039, 0.2539, 0.127};
    int changed = 0;

    for (int nnodes = 2; nnodes <= 64; nnodes = nnodes * 2 + (nnodes == 4)) {
        for (size_t bytes = 16384; bytes <= (256u << 20); bytes *= 4) {
            for (size_t r = 0; r < sizeof(ratios) / sizeof(ratios[0]); ++r) {
                mca_coll_strata_decision_input_t in = {
                    .bytes = bytes,
                    .nnodes = nnodes,
                    .ppn_min = 2,
                    .ppn_max = 2,
                    .wire_ratio = ratios[r],
                };
                mca_coll_strata_decision_t d = decide(&defaults, bytes, nnodes, 2, 2), before = d;
                mca_coll_strata_decision_t fewer =
                    decide(&defaults, (size_t)((double)bytes * ratios[r]), nnodes, 2, 2);

                d.codec = MCA_COLL_STRATA_CODEC_BF16;
                mca_coll_strata_decide_compressed(&defaults, &in, &d);
                CHECK(d.algorithm == before.algorithm && d.nslices == before.nslices,
                      "%zu B on %d nodes compressed: algorithm and slices kept", bytes, nnodes);
                if (before.algorithm == fewer.algorithm) {
                    CHECK(d.inter == fewer.inter,
                          "%zu B on %d nodes at ratio %.3f: the exchange for %zu bytes (%s), "
                          "not %s",
                          bytes, nnodes, ratios[r], (size_t)((double)bytes * ratios[r]),
                          mca_coll_strata_inter_name(fewer.inter),
                          mca_coll_strata_inter_name(d.inter));
                }
                changed += d.inter != before.inter;
            }
        }
    }
    CHECK(changed > 0, "compression changes the exchange somewhere (the model sees the bytes)");
    {
        mca_coll_strata_decision_params_t forced = defaults;
        mca_coll_strata_decision_input_t in = {
            .bytes = 1 << 20, .nnodes = 8, .ppn_min = 2, .ppn_max = 2, .wire_ratio = 0.25};
        mca_coll_strata_decision_t d;

        forced.inter_algorithm = MCA_COLL_STRATA_INTER_RING;
        mca_coll_strata_decide(&forced, &in, &d);
        mca_coll_strata_decide_compressed(&forced, &in, &d);
        CHECK(d.inter == MCA_COLL_STRATA_INTER_RING, "a forced exchange stays when compressed");
    }
}

int main(void)
{
    test_auto_rules();
    test_compressed();
    test_overrides();
    test_cost_model();
    test_device_path();
    test_native();
    test_device_network();
    test_empty_topology();
    test_partition();
    test_network();
    test_rail_share();
    test_pipelined();
    test_bcast_sched();
    printf("test_decision: %s: decision rules, overrides, device paths, network figures, "
           "bcast schedules, partitions of 0..300 "
           "into 1..17\n",
           failures ? "FAIL" : "OK");
    return failures ? 1 : 0;
}
