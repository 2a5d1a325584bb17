/*
 * strata_sim: predicts the time of coll/strata's allreduce on N nodes x k
 * ranks per node by replaying its exact schedules under a LogGP-style model.
 * Compiled straight from ompi_coll/logic/coll_strata_sched.c and
 * ompi_coll/logic/coll_strata_decision.c (no MPI), like the unit tests: the
 * decision (path, slices, inter-node algorithm) is the real decision
 * function's, and every message of the inter-node phase is the one
 * mca_coll_strata_sched_step gives, with its real size.
 *
 *   strata_sim [--params FILE] [--nodes LIST] [--ppn LIST] [--bytes LIST]
 *              [--alg LIST] [--path auto|rail|replicated|leader]
 *              [--L S] [--o S] [--G S_PER_BYTE] [--g S] [--rndv BYTES] [--nics N]
 *              [--copy-bw B_PER_S] [--reduce-bw B_PER_S] [--mem-bw B_PER_S]
 *              [--segment BYTES] [--slots N] [--elem BYTES] [--small-max BYTES]
 *              [--node-small-max BYTES]
 *              [--decide-alpha S] [--decide-beta S_PER_BYTE] [--decide-overhead S]
 *              [--decide-eager-max BYTES]
 *              [--decide-rail-share X]
 *              [--decide-nics N] [--decide-from-network]
 *              [--header]
 *   strata_sim --self-check
 * LIST: comma-separated values (sizes take k/m/g suffixes); every
 * combination is predicted.  --alg: auto (the decision function with
 * --decide-alpha/--decide-beta/--decide-overhead/--decide-eager-max, by
 * default coll/strata's defaults 5 us, 1.25 GB/s, none and all eager, or with
 * --decide-from-network the simulated network's own alpha = L + 2o, beta = G,
 * overhead o, eager limit --rndv and the rails sharing --nics NICs), ring,
 * doubling or
 * halving_doubling (forced, through the same decision function).
 * --params reads `key = value` lines with the option names (without --);
 * options after it override it.
 *
 * Output: CSV, one line per combination (--header prints the names):
 *   nodes,ppn,bytes,path,inter,slices,chunks,predicted_s,node_chunk_s,xchg_chunk_s,interval_s
 * node_chunk_s and xchg_chunk_s are a full chunk's node phases (copy in,
 * reduce, copy out) and inter-node exchange; interval_s the steady-state time
 * per further chunk.  A decision of `fallback` (one rank per node: the module
 * below strata runs) is printed as path fallback and modelled as strata's
 * rail path with one slice, which is what coll_strata_allreduce_algorithm=
 * rail runs; it is not the module below.
 *
 * The model.
 * Network, per message of m bytes from member s (clock t_s) to member d:
 *   - the sender spends o, then its link carries the bytes for m G' from
 *     max(t_s + o, the end of its previous message); the last byte arrives
 *     L later.  G' = G x ceil(rails / nics): the node's rails (one per slice)
 *     share its nics, and run in step, so each gets that share.
 *   - eager (m <= --rndv, or --rndv 0): the send completes after o (the
 *     data is buffered); rendezvous (m > --rndv): a request reaches d after
 *     o + L, d answers once it has posted its receive (at its step's start)
 *     after o, the answer takes o + L, then the data leaves after o and the
 *     send completes when its last byte has left.
 *   - the receive completes at max(t_d + o if d also sends, arrival) + o.
 *   - consecutive message starts of one member are at least g apart.
 * Each member's step ends when its send and its receive are complete, plus
 * the fold of the received block: m / reduce-bw when the vector is the
 * result (received op mine), m / reduce-bw + m / copy-bw when the result goes
 * through the scratch (mine op received), nothing when it is received
 * straight into the vector; its next step starts then, as in
 * engine/coll_strata_xchg.c.  A chunk's exchange time is the last member's end, all
 * members starting at 0: rails start together, and the rail carrying slice
 * 0 (the largest) is the one simulated.
 * Node, per chunk of c bytes and slice of s bytes on an owner rank (each
 * rank's rate is min(bw, mem-bw / k): the k ranks copy at the same time):
 *   copy in c / copy-bw; reduce of k inputs s / copy-bw + (k - 1) s /
 *   reduce-bw (node_host: the last input copied, the others folded in; k = 1
 *   a copy); copy out c / copy-bw.  The replicated path (small messages)
 *   gives each of the k owners the whole chunk to reduce and allreduce on its
 *   own rail (k rails of the whole message) and no copy out.
 * Pipeline: chunks of the segment size (rounded up to 64 bytes) go through
 * `slots` slots; chunk 0 costs its node phases + its exchange, and each later
 * chunk one interval = max(node phases + the owner's exchange CPU time (o per
 * message, folds), link occupancy (the busiest member's bytes x G'),
 * (node phases + exchange) / slots): the owner's CPU, the rail's link, and
 * the slots each bound how fast chunks can follow one another, since up to
 * `slots` chunks' exchanges are in flight at once (one per slot).  A partial
 * last chunk is simulated on its own.
 * Left out: contention at receivers (every schedule here receives one
 * message per step per member), switches and the network's topology (a
 * full-bisection network is assumed), noise and stragglers, the
 * replicated path's extra copy on uneven nodes, and the time ranks need to
 * notice flags in shared memory.
 *
 * --self-check cross-checks the simulator against closed forms: with zero
 * network costs the prediction is exactly the node phases, chunk by chunk;
 * with alpha-only costs (G = 0, alpha = L + 2o, free folds) a chunk's
 * exchange time is mca_coll_strata_inter_cost's formula for ring, rd and rhd
 * on 2..4096 members, and for ring and rhd on non-powers of two with their
 * fold (rd's fold-in overlaps the other pairs' first step here, so the
 * simulator finds up to one alpha less than the formula's two); with alpha
 * and beta, for counts divisible by n, too.  It prints what it checked and exits
 * 1 at the first difference.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_strata_decision.h"
#include "coll_strata_sched.h"

#define STRATA_SIM_MAX_LIST 64
#define STRATA_SIM_MAX_NODES (1 << 20)
#define STRATA_SIM_CACHE 256

typedef struct strata_sim_params_t {
    /* network */
    double L, o, G, g;
    size_t rndv; /* largest eager message, bytes (0: all eager) */
    int nics;    /* per node; the rails share them */
    /* node: per-rank rates, bytes/s, and the node's total memory bandwidth
     * (0: unlimited) */
    double copy_bw, reduce_bw, mem_bw;
    /* strata's settings */
    size_t segment, small_max, node_small_max, elem;
    int slots;
    /* the decision's cost model */
    double decide_alpha, decide_beta;
    double decide_overhead;   /* per message sent or received (coll/strata's measured one) */
    size_t decide_eager_max;  /* the pml's largest eager message (0: all eager) */
    double decide_rail_share; /* each further rail's extra share (coll/strata's measured one) */
    int decide_nics;          /* coll_strata_allreduce_inter_nics */
    int decide_from_network;
} strata_sim_params_t;

/* One chunk's exchange on one rail. */
typedef struct strata_sim_xchg_t {
    double time;      /* the last member's end */
    double link_busy; /* the busiest member's bytes on its link x G' */
    double cpu_busy;  /* the busiest member's o per message and folds */
} strata_sim_xchg_t;

typedef struct strata_sim_result_t {
    const char *path;
    mca_coll_strata_inter_t inter;
    int slices;
    size_t chunks;
    double predicted, node_chunk, xchg_chunk, interval;
} strata_sim_result_t;

static const char *strata_sim_prog = "strata_sim";

static void strata_sim_die(const char *what, const char *value)
{
    fprintf(stderr, "%s: %s '%s' (see the comment at the top of test/sim/strata_sim.c)\n",
            strata_sim_prog, what, value);
    exit(2);
}

static double strata_sim_parse_double(const char *text)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(text, &end);
    if (errno || end == text || *end != '\0' || v < 0 || isnan(v)) {
        strata_sim_die("bad number", text);
    }
    return v;
}

static size_t strata_sim_parse_size(const char *text)
{
    char *end;
    double v = strtod(text, &end);

    switch (*end) {
    case 'k': case 'K': v *= 1024; ++end; break;
    case 'm': case 'M': v *= 1024 * 1024; ++end; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
    }
    if (end == text || *end != '\0' || v < 0) {
        strata_sim_die("bad size", text);
    }
    return (size_t)v;
}

/* ---- the exchange ---- */

typedef struct strata_sim_member_t {
    double t;         /* the member's clock: its current step's start */
    double next_t;    /* its step's end */
    double link_free; /* when its link has carried its last message */
    double last_send; /* start of its last message (for g) */
    double arrival;   /* when this step's message reaches its peer */
    double send_done;
    double cpu, bytes;
    mca_coll_strata_sched_step_t step;
} strata_sim_member_t;

static strata_sim_member_t *strata_sim_members;

/* The fold of m received bytes (see the top). */
static double strata_sim_fold(mca_coll_strata_fold_t fold, double m, double copy_bw,
                              double reduce_bw)
{
    switch (fold) {
    case MCA_COLL_STRATA_FOLD_RECV_FIRST:
        return m / reduce_bw;
    case MCA_COLL_STRATA_FOLD_MINE_FIRST:
        return m / reduce_bw + m / copy_bw;
    default:
        return 0.0;
    }
}

static void strata_sim_send(const strata_sim_params_t *p, double G, strata_sim_member_t *mem,
                            int r, double elem)
{
    strata_sim_member_t *s = &mem[r];
    const strata_sim_member_t *d = &mem[s->step.send_peer];
    double m = (double)s->step.send_count * elem;
    double start = s->t, data;

    if (s->last_send > -1.0 && start < s->last_send + p->g) {
        start = s->last_send + p->g;
    }
    s->last_send = start;
    s->cpu += p->o;
    s->bytes += m;
    if (p->rndv > 0 && m > (double)p->rndv) {
        /* request, answer once the receiver has posted, then the data */
        double answer = fmax(start + p->o + p->L, d->t) + p->o;

        data = answer + p->o + p->L + p->o;
        s->cpu += p->o;
        data = fmax(data, s->link_free);
        s->link_free = data + m * G;
        s->send_done = s->link_free;
    } else {
        data = fmax(start + p->o, s->link_free);
        s->link_free = data + m * G;
        s->send_done = start + p->o;
    }
    s->arrival = s->link_free + p->L;
}

static void strata_sim_exchange(const strata_sim_params_t *p, double G, double copy_bw,
                                double reduce_bw, mca_coll_strata_sched_alg_t alg, int n,
                                size_t count, strata_sim_xchg_t *out)
{
    strata_sim_member_t *mem = strata_sim_members;
    mca_coll_strata_sched_t sched = {.alg = alg, .n = n, .count = count};
    int nsteps = mca_coll_strata_sched_nsteps(&sched);
    double elem = (double)p->elem;

    memset(out, 0, sizeof(*out));
    for (int r = 0; r < n; ++r) {
        mem[r] = (strata_sim_member_t){.last_send = -2.0};
    }
    for (int i = 0; i < nsteps; ++i) {
        for (int r = 0; r < n; ++r) {
            mca_coll_strata_sched_step(&sched, r, i, &mem[r].step);
        }
        for (int r = 0; r < n; ++r) {
            if (mem[r].step.send_peer >= 0) {
                strata_sim_send(p, G, mem, r, elem);
            }
        }
        for (int r = 0; r < n; ++r) {
            strata_sim_member_t *me = &mem[r];
            bool sends = me->step.send_peer >= 0;
            double end = sends ? me->send_done : me->t;

            if (me->step.recv_peer >= 0) {
                double m = (double)me->step.recv_count * elem;
                double fold = strata_sim_fold(me->step.fold, m, copy_bw, reduce_bw);
                double done = fmax(me->t + (sends ? p->o : 0.0), mem[me->step.recv_peer].arrival) +
                              p->o;

                end = fmax(end, done) + fold;
                me->cpu += p->o + fold;
            }
            me->next_t = end;
        }
        for (int r = 0; r < n; ++r) {
            mem[r].t = mem[r].next_t;
        }
    }
    for (int r = 0; r < n; ++r) {
        out->time = fmax(out->time, mem[r].t);
        out->cpu_busy = fmax(out->cpu_busy, mem[r].cpu);
        out->link_busy = fmax(out->link_busy, mem[r].bytes * G);
    }
}

/* Exchanges repeat across sizes (every full chunk is the same): keep them. */
static struct {
    mca_coll_strata_sched_alg_t alg;
    int n;
    size_t count;
    double G, copy_bw, reduce_bw;
    strata_sim_xchg_t x;
} strata_sim_cache[STRATA_SIM_CACHE];
static int strata_sim_ncached;

static void strata_sim_exchange_cached(const strata_sim_params_t *p, double G, double copy_bw,
                                       double reduce_bw, mca_coll_strata_sched_alg_t alg, int n,
                                       size_t count, strata_sim_xchg_t *out)
{
    for (int i = 0; i < strata_sim_ncached; ++i) {
        if (strata_sim_cache[i].alg == alg && strata_sim_cache[i].n == n &&
            strata_sim_cache[i].count == count && strata_sim_cache[i].G == G &&
            strata_sim_cache[i].copy_bw == copy_bw && strata_sim_cache[i].reduce_bw == reduce_bw) {
            *out = strata_sim_cache[i].x;
            return;
        }
    }
    strata_sim_exchange(p, G, copy_bw, reduce_bw, alg, n, count, out);
    if (strata_sim_ncached < STRATA_SIM_CACHE) {
        strata_sim_cache[strata_sim_ncached].alg = alg;
        strata_sim_cache[strata_sim_ncached].n = n;
        strata_sim_cache[strata_sim_ncached].count = count;
        strata_sim_cache[strata_sim_ncached].G = G;
        strata_sim_cache[strata_sim_ncached].copy_bw = copy_bw;
        strata_sim_cache[strata_sim_ncached].reduce_bw = reduce_bw;
        strata_sim_cache[strata_sim_ncached].x = *out;
        strata_sim_ncached++;
    }
}

/* ---- one allreduce ---- */

static mca_coll_strata_sched_alg_t strata_sim_sched_alg(mca_coll_strata_inter_t inter)
{
    return (MCA_COLL_STRATA_INTER_RD == inter)    ? MCA_COLL_STRATA_SCHED_RD
           : (MCA_COLL_STRATA_INTER_RHD == inter) ? MCA_COLL_STRATA_SCHED_RHD
                                                  : MCA_COLL_STRATA_SCHED_RING;
}

typedef struct strata_sim_chunk_t {
    double node, xchg, interval;
} strata_sim_chunk_t;

/* Chunk of `elems` elements: its node phases, exchange and steady-state
 * interval (see the top). */
static void strata_sim_chunk(const strata_sim_params_t *p, int nnodes, int k, int slices,
                             bool replicated, mca_coll_strata_inter_t inter, size_t elems,
                             strata_sim_chunk_t *out)
{
    double copy_bw = p->copy_bw, reduce_bw = p->reduce_bw, e = (double)p->elem;
    double c = (double)elems * e, s, copy_out;
    int rails = replicated ? k : slices, share = (rails + p->nics - 1) / p->nics;
    size_t off, slice_elems;
    strata_sim_xchg_t x = {0};

    if (p->mem_bw > 0) {
        copy_bw = fmin(copy_bw, p->mem_bw / k);
        reduce_bw = fmin(reduce_bw, p->mem_bw / k);
    }
    if (replicated) {
        slice_elems = elems;
        copy_out = 0.0;
    } else {
        mca_coll_strata_partition(elems, slices, 0, &off, &slice_elems);
        copy_out = c / copy_bw;
    }
    s = (double)slice_elems * e;
    out->node = c / copy_bw + s / copy_bw + (k - 1) * s / reduce_bw + copy_out;
    if (MCA_COLL_STRATA_INTER_NONE != inter && nnodes > 1) {
        strata_sim_exchange_cached(p, p->G * share, copy_bw, reduce_bw,
                                   strata_sim_sched_alg(inter), nnodes, slice_elems, &x);
    }
    out->xchg = x.time;
    out->interval = fmax(fmax(out->node + x.cpu_busy, x.link_busy),
                         (out->node + x.time) / p->slots);
}

static void strata_sim_decide(const strata_sim_params_t *p, int path, int inter_alg, int nnodes,
                              int k, size_t bytes, size_t slot_bytes,
                              mca_coll_strata_decision_t *d)
{
    mca_coll_strata_decision_params_t dp = {
        .algorithm = path,
        .inter_algorithm = inter_alg,
        .small_max = p->small_max,
        .node_small_max = p->node_small_max,
        .alpha = p->decide_alpha,
        .beta = p->decide_beta,
        .gamma = 1.0 / 4e9, /* coll/strata's */
        .nics = p->decide_nics,
        .rail_share_extra = p->decide_rail_share,
        .overhead = p->decide_overhead,
        .eager_max = p->decide_eager_max,
    };
    mca_coll_strata_decision_input_t in = {
        .bytes = bytes,
        .nnodes = nnodes,
        .ppn_min = k,
        .ppn_max = k,
        .chunk_bytes = slot_bytes,
        .slots = p->slots,
    };

    if (p->decide_from_network) {
        /* one rail's figures; the decision shares the nics among the rails
         * a path runs at once, as the replay does */
        dp.alpha = p->L + 2 * p->o;
        dp.beta = p->G;
        dp.gamma = 1.0 / p->reduce_bw;
        dp.overhead = p->o;
        dp.eager_max = p->rndv;
        dp.nics = p->nics;
    }
    mca_coll_strata_decide(&dp, &in, d);
}

static void strata_sim_predict(const strata_sim_params_t *p, int path, int inter_alg, int nnodes,
                               int k, size_t bytes, strata_sim_result_t *res)
{
    size_t slot_bytes = (p->segment + 63) & ~(size_t)63;
    size_t chunk_elems = slot_bytes / p->elem, count = bytes / p->elem, last;
    mca_coll_strata_decision_t d;
    strata_sim_chunk_t full, tail;
    bool replicated;

    strata_sim_decide(p, path, inter_alg, nnodes, k, bytes, slot_bytes, &d);
    res->path = mca_coll_strata_alg_name(d.algorithm);
    if (MCA_COLL_STRATA_ALG_FALLBACK == d.algorithm) {
        /* modelled as the rail path with one slice (see the top) */
        strata_sim_decide(p, MCA_COLL_STRATA_ALG_RAIL, inter_alg, nnodes, k, bytes, slot_bytes,
                          &d);
    }
    replicated = MCA_COLL_STRATA_ALG_REPLICATED == d.algorithm;
    res->inter = d.inter;
    res->slices = d.nslices;
    res->chunks = (count + chunk_elems - 1) / chunk_elems;
    res->predicted = res->node_chunk = res->xchg_chunk = res->interval = 0.0;
    if (0 == count) {
        return;
    }
    strata_sim_chunk(p, nnodes, k, d.nslices, replicated, d.inter,
                     (count < chunk_elems) ? count : chunk_elems, &full);
    res->node_chunk = full.node;
    res->xchg_chunk = full.xchg;
    res->interval = full.interval;
    res->predicted = full.node + full.xchg;
    if (res->chunks > 1) {
        last = count - (res->chunks - 1) * chunk_elems;
        tail = full;
        if (last != chunk_elems) {
            strata_sim_chunk(p, nnodes, k, d.nslices, replicated, d.inter, last, &tail);
        }
        res->predicted += (double)(res->chunks - 2) * full.interval + tail.interval;
    }
}

/* ---- options ---- */

typedef struct strata_sim_lists_t {
    int nodes[STRATA_SIM_MAX_LIST], ppn[STRATA_SIM_MAX_LIST], algs[STRATA_SIM_MAX_LIST];
    size_t bytes[STRATA_SIM_MAX_LIST];
    int nnodes, nppn, nalgs, nbytes;
    int path;
    int header;
} strata_sim_lists_t;

static int strata_sim_inter_of(const char *name)
{
    static const struct {
        const char *name;
        int inter;
    } names[] = {{"auto", MCA_COLL_STRATA_INTER_AUTO},
                 {"ring", MCA_COLL_STRATA_INTER_RING},
                 {"doubling", MCA_COLL_STRATA_INTER_RD},
                 {"rd", MCA_COLL_STRATA_INTER_RD},
                 {"halving_doubling", MCA_COLL_STRATA_INTER_RHD},
                 {"rhd", MCA_COLL_STRATA_INTER_RHD}};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        if (!strcmp(names[i].name, name)) {
            return names[i].inter;
        }
    }
    strata_sim_die("unknown inter-node algorithm (auto, ring, doubling, halving_doubling)", name);
    return 0;
}

static int strata_sim_path_of(const char *name)
{
    if (!strcmp(name, "auto")) return MCA_COLL_STRATA_ALG_AUTO;
    if (!strcmp(name, "rail")) return MCA_COLL_STRATA_ALG_RAIL;
    if (!strcmp(name, "replicated")) return MCA_COLL_STRATA_ALG_REPLICATED;
    if (!strcmp(name, "leader")) return MCA_COLL_STRATA_ALG_LEADER;
    strata_sim_die("unknown path (auto, rail, replicated, leader)", name);
    return 0;
}

/* Splits a comma list; `kind` 0 int, 1 size, 2 algorithm. */
static int strata_sim_parse_list(const char *text, int kind, int *ints, size_t *sizes)
{
    char buf[4096], *save = NULL, *tok;
    int n = 0;

    if (strlen(text) >= sizeof(buf)) strata_sim_die("list too long", text);
    strcpy(buf, text);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == STRATA_SIM_MAX_LIST) strata_sim_die("more than 64 values in", text);
        if (0 == kind) {
            char *end;
            long v = strtol(tok, &end, 10);

            if (*end || v < 1 || v > STRATA_SIM_MAX_NODES) strata_sim_die("bad count", tok);
            ints[n] = (int)v;
        } else if (1 == kind) {
            sizes[n] = strata_sim_parse_size(tok);
        } else {
            ints[n] = strata_sim_inter_of(tok);
        }
        ++n;
    }
    if (0 == n) strata_sim_die("empty list", text);
    return n;
}

/* One `key value` setting, from the command line or a parameter file. */
static int strata_sim_set(strata_sim_params_t *p, strata_sim_lists_t *l, const char *key,
                          const char *value);

static void strata_sim_read_params(strata_sim_params_t *p, strata_sim_lists_t *l,
                                   const char *file)
{
    char line[512];
    FILE *f = fopen(file, "r");

    if (NULL == f) strata_sim_die("cannot open parameter file", file);
    while (fgets(line, sizeof(line), f)) {
        char *key = line, *eq, *value, *end;

        line[strcspn(line, "#\n")] = '\0';
        while (*key == ' ' || *key == '\t') ++key;
        if ('\0' == *key) continue;
        eq = strchr(key, '=');
        if (NULL == eq) strata_sim_die("parameter line without '='", key);
        *eq = '\0';
        value = eq + 1;
        while (*value == ' ' || *value == '\t') ++value;
        for (end = eq; end > key && (end[-1] == ' ' || end[-1] == '\t'); --end) end[-1] = '\0';
        for (end = value + strlen(value); end > value && (end[-1] == ' ' || end[-1] == '\t');
             --end) {
            end[-1] = '\0';
        }
        if (!strcmp(key, "name")) continue;
        if (!strata_sim_set(p, l, key, value)) strata_sim_die("unknown parameter", key);
    }
    fclose(f);
}

static int strata_sim_set(strata_sim_params_t *p, strata_sim_lists_t *l, const char *key,
                          const char *value)
{
    if (!strcmp(key, "params")) strata_sim_read_params(p, l, value);
    else if (!strcmp(key, "nodes")) l->nnodes = strata_sim_parse_list(value, 0, l->nodes, NULL);
    else if (!strcmp(key, "ppn")) l->nppn = strata_sim_parse_list(value, 0, l->ppn, NULL);
    else if (!strcmp(key, "bytes")) l->nbytes = strata_sim_parse_list(value, 1, NULL, l->bytes);
    else if (!strcmp(key, "alg")) l->nalgs = strata_sim_parse_list(value, 2, l->algs, NULL);
    else if (!strcmp(key, "path")) l->path = strata_sim_path_of(value);
    else if (!strcmp(key, "L")) p->L = strata_sim_parse_double(value);
    else if (!strcmp(key, "o")) p->o = strata_sim_parse_double(value);
    else if (!strcmp(key, "G")) p->G = strata_sim_parse_double(value);
    else if (!strcmp(key, "g")) p->g = strata_sim_parse_double(value);
    else if (!strcmp(key, "rndv")) p->rndv = strata_sim_parse_size(value);
    else if (!strcmp(key, "nics")) p->nics = (int)strata_sim_parse_size(value);
    else if (!strcmp(key, "copy-bw")) p->copy_bw = strata_sim_parse_double(value);
    else if (!strcmp(key, "reduce-bw")) p->reduce_bw = strata_sim_parse_double(value);
    else if (!strcmp(key, "mem-bw")) p->mem_bw = strata_sim_parse_double(value);
    else if (!strcmp(key, "segment")) p->segment = strata_sim_parse_size(value);
    else if (!strcmp(key, "slots")) p->slots = (int)strata_sim_parse_size(value);
    else if (!strcmp(key, "elem")) p->elem = strata_sim_parse_size(value);
    else if (!strcmp(key, "small-max")) p->small_max = strata_sim_parse_size(value);
    else if (!strcmp(key, "node-small-max")) p->node_small_max = strata_sim_parse_size(value);
    else if (!strcmp(key, "decide-alpha")) p->decide_alpha = strata_sim_parse_double(value);
    else if (!strcmp(key, "decide-beta")) p->decide_beta = strata_sim_parse_double(value);
    else if (!strcmp(key, "decide-overhead")) p->decide_overhead = strata_sim_parse_double(value);
    else if (!strcmp(key, "decide-eager-max")) p->decide_eager_max = strata_sim_parse_size(value);
    else if (!strcmp(key, "decide-rail-share"))
        p->decide_rail_share = strata_sim_parse_double(value);
    else if (!strcmp(key, "decide-nics")) p->decide_nics = (int)strata_sim_parse_double(value);
    else return 0;
    return 1;
}

static void strata_sim_defaults(strata_sim_params_t *p, strata_sim_lists_t *l)
{
    /* coll/strata's defaults (coll_strata_component.c) and a 100 GbE-like
     * network; a parameter file or the options replace them */
    *p = (strata_sim_params_t){.L = 5e-6,
                               .o = 1e-6,
                               .G = 1.0 / 12.5e9,
                               .g = 0.0,
                               .rndv = 0,
                               .nics = 1,
                               .copy_bw = 10e9,
                               .reduce_bw = 5e9,
                               .mem_bw = 0.0,
                               .segment = 128 * 1024,
                               .small_max = MCA_COLL_STRATA_SMALL_MAX_DEFAULT,
                               .node_small_max = MCA_COLL_STRATA_NODE_SMALL_MAX_DEFAULT,
                               .elem = 4,
                               .slots = 4,
                               .decide_alpha = 5e-6,
                               .decide_beta = 1.0 / 1.25e9};
    memset(l, 0, sizeof(*l));
    l->nodes[0] = 4;
    l->ppn[0] = 2;
    l->bytes[0] = 1 << 20;
    l->algs[0] = MCA_COLL_STRATA_INTER_AUTO;
    l->nnodes = l->nppn = l->nbytes = l->nalgs = 1;
    l->path = MCA_COLL_STRATA_ALG_AUTO;
}

/* ---- self-check ---- */

static int strata_sim_failures;

static void strata_sim_expect(double got, double want, const char *what, int n, size_t bytes)
{
    double tol = 1e-9 * fmax(fabs(want), 1e-6);

    if (fabs(got - want) > tol) {
        printf("strata_sim: FAIL: %s, n=%d, %zu bytes: got %.12g s, expected %.12g s\n", what, n,
               bytes, got, want);
        if (++strata_sim_failures > 10) exit(1);
    }
}

/* Zero network costs: the prediction is the node phases, chunk by chunk,
 * and the folds of received blocks (memory work on the node too): on a ring
 * of n members each member folds n - 1 blocks of slice / n. */
static int strata_sim_check_node_only(void)
{
    static const int ks[] = {1, 2, 4, 8};
    static const size_t sizes[] = {4096, 131072, 1 << 20, 5 * 131072 + 8192};
    const int n = 16;
    int checked = 0;

    for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ++ki) {
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
            strata_sim_params_t p;
            strata_sim_lists_t l;
            strata_sim_result_t res;
            int k = ks[ki];
            double want = 0.0, cb = 8e9, rb = 3e9;
            size_t chunk = 131072, left = sizes[si], first;

            strata_sim_defaults(&p, &l);
            p.L = p.o = p.G = p.g = 0.0;
            p.copy_bw = cb;
            p.reduce_bw = rb;
            /* independent closed form; the sizes split evenly into k
             * slices of n blocks */
            while (left > 0) {
                size_t c = (left < chunk) ? left : chunk;
                double slice = (double)c / k;

                want += c / cb + slice / cb + (k - 1) * slice / rb + c / cb;
                want += (n - 1) * slice / n / rb;
                left -= c;
            }
            strata_sim_predict(&p, MCA_COLL_STRATA_ALG_RAIL, MCA_COLL_STRATA_INTER_RING, n, k,
                               sizes[si], &res);
            strata_sim_expect(res.predicted, want,
                              "zero network costs: the node phases and folds", n, sizes[si]);
            first = (sizes[si] < chunk) ? sizes[si] : chunk;
            strata_sim_expect(res.xchg_chunk, (n - 1) * (double)first / k / n / rb,
                              "zero network costs: the exchange is its folds", n, sizes[si]);
            ++checked;
        }
    }
    return checked;
}

/* alpha (and beta) only: a chunk's exchange is the cost model's formula. */
static int strata_sim_check_formula(bool with_beta)
{
    static const mca_coll_strata_inter_t inters[] = {
        MCA_COLL_STRATA_INTER_RING, MCA_COLL_STRATA_INTER_RD, MCA_COLL_STRATA_INTER_RHD};
    static const int extra[] = {3, 5, 6, 7, 12, 100, 1000};
    int checked = 0;

    for (int v = 0; v < 2; ++v) {
        for (int idx = 0; idx < 12 + (with_beta ? 0 : 7); ++idx) {
            int n = (idx < 12) ? (2 << idx) : extra[idx - 12];

            for (size_t a = 0; a < 3; ++a) {
                strata_sim_params_t p;
                strata_sim_lists_t l;
                strata_sim_xchg_t x;
                mca_coll_strata_decision_params_t dp = {.alpha = 7e-6, .beta = 0.0};
                /* a count every schedule splits evenly (n divides it, and
                 * n is p = 2^l here when beta counts) */
                size_t count = (size_t)n * 48, bytes = count * 4;
                mca_coll_strata_sched_alg_t alg = strata_sim_sched_alg(inters[a]);

                /* rd on a non-power of two: the simulator overlaps the
                 * fold-in with the other pairs' first step, which the
                 * formula counts in full (up to one alpha less): left out */
                if (idx >= 12 && MCA_COLL_STRATA_INTER_RD == inters[a]) {
                    continue;
                }

                strata_sim_defaults(&p, &l);
                /* alpha = L + 2o, either all latency or part overhead */
                p.o = v ? 1.5e-6 : 0.0;
                p.L = 7e-6 - 2 * p.o;
                p.G = with_beta ? 1.0 / 3e9 : 0.0;
                p.copy_bw = p.reduce_bw = INFINITY;
                dp.beta = p.G;
                strata_sim_exchange(&p, p.G, p.copy_bw, p.reduce_bw, alg, n, count, &x);
                strata_sim_expect(x.time, mca_coll_strata_inter_cost(&dp, inters[a], n, bytes),
                                  mca_coll_strata_inter_name(inters[a]), n, bytes);
                ++checked;
            }
        }
    }
    return checked;
}

static int strata_sim_self_check(void)
{
    int node_only = strata_sim_check_node_only();
    int alpha = strata_sim_check_formula(false);
    int alpha_beta = strata_sim_check_formula(true);

    printf("strata_sim: %s: zero network costs predict exactly the node phases (%d cases: k = "
           "1..8, partial chunks); alpha-only exchanges equal mca_coll_strata_inter_cost for "
           "ring, doubling and halving_doubling on 2..4096 members, ring and halving_doubling "
           "on non-powers of two with their fold (%d cases, alpha all latency or L + 2o); alpha-beta with even splits on "
           "powers of two (%d cases)\n",
           strata_sim_failures ? "FAIL" : "OK", node_only, alpha, alpha_beta);
    return strata_sim_failures ? 1 : 0;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    strata_sim_params_t p;
    strata_sim_lists_t l;
    int maxn = 0;

    strata_sim_defaults(&p, &l);
    strata_sim_members = calloc(4096, sizeof(*strata_sim_members));
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];

        if (!strcmp(a, "--self-check")) {
            return strata_sim_self_check();
        } else if (!strcmp(a, "--header")) {
            l.header = 1;
        } else if (!strcmp(a, "--decide-from-network")) {
            p.decide_from_network = 1;
        } else if (!strncmp(a, "--", 2) && i + 1 < argc) {
            if (!strata_sim_set(&p, &l, a + 2, argv[i + 1])) strata_sim_die("unknown option", a);
            ++i;
        } else {
            strata_sim_die("unknown or incomplete option", a);
        }
    }
    if (p.elem < 1 || p.slots < 1 || p.nics < 1 || p.segment < p.elem || !(p.copy_bw > 0) ||
        !(p.reduce_bw > 0)) {
        strata_sim_die("bad settings: elem, slots, nics, segment, copy-bw and reduce-bw must be "
                       "positive; segment at least one element", "");
    }
    for (int i = 0; i < l.nnodes; ++i) maxn = (l.nodes[i] > maxn) ? l.nodes[i] : maxn;
    free(strata_sim_members);
    strata_sim_members = calloc((size_t)maxn, sizeof(*strata_sim_members));
    if (NULL == strata_sim_members) strata_sim_die("out of memory for nodes", "");
    if (l.header) {
        printf("nodes,ppn,bytes,path,inter,slices,chunks,predicted_s,node_chunk_s,xchg_chunk_s,"
               "interval_s\n");
    }
    for (int ni = 0; ni < l.nnodes; ++ni) {
        for (int ki = 0; ki < l.nppn; ++ki) {
            for (int ai = 0; ai < l.nalgs; ++ai) {
                for (int bi = 0; bi < l.nbytes; ++bi) {
                    strata_sim_result_t r;

                    strata_sim_predict(&p, l.path, l.algs[ai], l.nodes[ni], l.ppn[ki],
                                       l.bytes[bi], &r);
                    printf("%d,%d,%zu,%s,%s,%d,%zu,%.9g,%.9g,%.9g,%.9g\n", l.nodes[ni],
                           l.ppn[ki], l.bytes[bi], r.path, mca_coll_strata_inter_name(r.inter),
                           r.slices, r.chunks, r.predicted, r.node_chunk, r.xchg_chunk,
                           r.interval);
                }
            }
        }
    }
    free(strata_sim_members);
    return 0;
}
