/*
 * MPI_Bcast and MPI_Allgather against an independent reference, on whatever
 * coll component runs them (coll/strata's pipeline, or tuned for the
 * test's own check).
 *   test_copy_colls [--coll bcast|allgather] [--quiet] [--large]
 *                   [--device | --mixed] [--only-comm world] [--nonblocking | --persistent]
 *   --nonblocking  MPI_Ibcast and MPI_Iallgather, each waited for at once;
 *              every communicator takes one blocking MPI_Allreduce first
 *              (coll/strata sets a communicator up only in a blocking call)
 *   --persistent  MPI_Bcast_init and MPI_Allgather_init (MPI 4.0, Open MPI
 *              5.0), each request started and waited for twice, then freed;
 *              as --nonblocking otherwise; without them in this MPI: exit 77
 *   --device   (test_copy_colls_device, built where CUDA is) every buffer
 *              is a cuMemAlloc'ed twin of the host one; the bytes come back
 *              for the same checks; exit 77 when no CUDA device can be had
 *   --mixed    the same, on the even ranks of MPI_COMM_WORLD only (host
 *              buffers on the odd ones)
 *
 * The reference is point-to-point: after each call, the root sends its
 * buffer (MPI_Bcast), or every rank its block (MPI_Allgather), with the
 * same datatypes and counts to every rank, which receives it into a copy
 * of its receive buffer as it was before the call.  The collective's
 * buffer must then equal that copy byte for byte, gaps of the datatype and
 * guard bytes on both sides included; the send buffers must come back
 * unchanged.  Data and the buffers' prior contents are different random
 * bytes on every rank and every case.
 *
 * Cases, on MPI_COMM_WORLD, a dup, its odd-numbered ranks (an odd size
 * where world is even), all ranks but the last, and its ranks in reverse
 * order (node order unlike rank order):
 *   - every predefined C datatype, contiguous and not (MPI_SHORT_INT and
 *     MPI_LONG_DOUBLE_INT have gaps), at counts 0, 1, 3, 13, 1021 and
 *     about 300 KB;
 *   - MPI_INT and MPI_DOUBLE at counts one element below, at and above a
 *     chunk (128 KiB, the default coll_strata_segment_size; for allgather
 *     the gathered chunk) and five chunks (more than its four slots);
 *   - derived types: contiguous, vector with gaps, resized;
 *   - ranks describing one message differently (MPI_INT x 2n at some ranks,
 *     a contiguous pair of MPI_INT x n at others): MPI allows it whenever
 *     the type signatures match;
 *   - MPI_Bcast from roots first, middle and last;
 *   - MPI_Allgather with MPI_IN_PLACE, and with separate buffers.
 * --large adds 3 MiB and 16 MiB (MPI_Bcast) and 8 MiB gathered.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef STRATA_TEST_DEVICE
#include "stest_cuda.h"
#include "stest_mpi.h"
#endif

#define PROG  "test_copy_colls"
#define GUARD 64
#define CHUNK (128 * 1024)

#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
#define HAVE_PERSISTENT 1
/* A persistent request just made (rc its making's): started and waited for
 * twice (the second start must give the same bytes), then freed. */
static int started_twice(int rc, MPI_Request *req)
{
    for (int i = 0; i < 2 && rc == MPI_SUCCESS; i++) {
        rc = MPI_Start(req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    }
    if (*req != MPI_REQUEST_NULL) MPI_Request_free(req);
    return rc;
}
#else
#define HAVE_PERSISTENT 0
#endif

static struct {
    bool bcast, allgather, quiet, large, device, mixed, world_only, nonblocking, persistent;
} opt = {true, true, false, false, false, false, false, false};

static int world_rank, world_size;
static long ncases;

static void die(const char *what, MPI_Comm comm, int rc)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;

    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "rank %d: FAIL: %s: %d (%s)\n", world_rank, what, rc, msg);
    MPI_Abort(comm, 1);
}

/* splitmix64: the bytes of a case on a rank */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void fill(char *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; ++i) p[i] = (char)(mix(seed + i / 8) >> (8 * (i % 8)));
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) {
        fprintf(stderr, "rank %d: FAIL: out of memory (%zu bytes)\n", world_rank, n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* ---------------------------------------------------------------- device */

static bool on_device(void) { return opt.device || (opt.mixed && world_rank % 2 == 0); }

#ifdef STRATA_TEST_DEVICE
/* The call on a device twin of [block, block + bytes): the bytes come back. */
static char *twin(char *block, size_t bytes, CUdeviceptr *d)
{
    *d = stest_dev_dup(block, bytes);
    return (char *)(uintptr_t)*d;
}

static void back(char *block, size_t bytes, CUdeviceptr d) { stest_dev_read_free(block, d, bytes); }
#else
static char *twin(char *block, size_t bytes, uintptr_t *d)
{
    *d = 0;
    return block;
}

static void back(char *block, size_t bytes, uintptr_t d) {}
#endif

/* -------------------------------------------------------------- datatypes */

typedef struct {
    const char *name;
    MPI_Datatype type;
} dtype_t;

static dtype_t types[64];
static int ntypes;

static void add_type(const char *name, MPI_Datatype t)
{
    types[ntypes].name = name;
    types[ntypes++].type = t;
}

#define T(_t) add_type(#_t, _t)
static void make_types(void)
{
    MPI_Datatype contig, vec, resized;

    T(MPI_CHAR);
    T(MPI_SIGNED_CHAR);
    T(MPI_UNSIGNED_CHAR);
    T(MPI_BYTE);
    T(MPI_WCHAR);
    T(MPI_SHORT);
    T(MPI_UNSIGNED_SHORT);
    T(MPI_INT);
    T(MPI_UNSIGNED);
    T(MPI_LONG);
    T(MPI_UNSIGNED_LONG);
    T(MPI_LONG_LONG_INT);
    T(MPI_UNSIGNED_LONG_LONG);
    T(MPI_FLOAT);
    T(MPI_DOUBLE);
    T(MPI_LONG_DOUBLE);
    T(MPI_C_BOOL);
    T(MPI_INT8_T);
    T(MPI_INT16_T);
    T(MPI_INT32_T);
    T(MPI_INT64_T);
    T(MPI_UINT8_T);
    T(MPI_UINT16_T);
    T(MPI_UINT32_T);
    T(MPI_UINT64_T);
    T(MPI_C_FLOAT_COMPLEX);
    T(MPI_C_DOUBLE_COMPLEX);
    T(MPI_C_LONG_DOUBLE_COMPLEX);
    T(MPI_FLOAT_INT);
    T(MPI_DOUBLE_INT);
    T(MPI_LONG_INT);
    T(MPI_2INT);
    T(MPI_SHORT_INT);
    T(MPI_LONG_DOUBLE_INT);
    T(MPI_AINT);
    T(MPI_OFFSET);
    T(MPI_COUNT);
    MPI_Type_contiguous(3, MPI_INT, &contig);
    MPI_Type_commit(&contig);
    add_type("contiguous(3, MPI_INT)", contig);
    MPI_Type_vector(2, 3, 5, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    add_type("vector(2, 3, 5, MPI_DOUBLE)", vec);
    MPI_Type_create_resized(MPI_INT, 0, 12, &resized);
    MPI_Type_commit(&resized);
    add_type("resized(MPI_INT, 12)", resized);
}
#undef T

static dtype_t *find_type(const char *name)
{
    for (int t = 0; t < ntypes; ++t) {
        if (!strcmp(types[t].name, name)) return &types[t];
    }
    fprintf(stderr, "no type %s\n", name);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return NULL;
}

/* Bytes count x type spans from its start (lb 0 for every type here). */
static size_t span(MPI_Datatype t, long count)
{
    MPI_Aint lb, extent, tlb, textent;

    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Type_get_true_extent(t, &tlb, &textent);
    return count ? (size_t)(extent * (count - 1) + tlb + textent) : 0;
}

/* ------------------------------------------------------------ the checks */

typedef struct {
    MPI_Comm comm;
    const char *name;
    int size, rank;
} comm_t;

static uint64_t seed_of(const comm_t *cm, uint64_t c, int rank, int what)
{
    return mix(c * 1000003ull + (uint64_t)rank * 7919ull + (uint64_t)what * 104729ull);
}

static void report(const comm_t *cm, const char *coll, const char *type, long count, int root,
                   const char *what, const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        if (a[i] != b[i]) {
            fprintf(stderr,
                    "rank %d: FAIL: %s on %s (%d ranks) %s x %ld root %d: %s: byte %zu of %zu "
                    "is 0x%02x, expected 0x%02x\n",
                    world_rank, coll, cm->name, cm->size, type, count, root, what, i, n,
                    (unsigned char)a[i], (unsigned char)b[i]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

/* MPI_Bcast of count x t from root; ranks whose rank is odd describe it
 * as count / k x alt when alt is given (count a multiple of k). */
static void check_bcast(const comm_t *cm, const dtype_t *t, long count, int root, MPI_Datatype alt,
                        int k, uint64_t c)
{
    bool use_alt = alt != MPI_DATATYPE_NULL && cm->rank % 2 == 1;
    MPI_Datatype mt = use_alt ? alt : t->type;
    long mcount = use_alt ? count / k : count;
    size_t bytes = span(mt, mcount), all = bytes + 2 * GUARD;
    char *buf = xmalloc(all), *ref = xmalloc(all), *dbuf;
#ifdef STRATA_TEST_DEVICE
    CUdeviceptr d = 0;
#else
    uintptr_t d = 0;
#endif
    int rc;

    fill(buf, all, seed_of(cm, c, cm->rank, 0));
    memcpy(ref, buf, all);
    dbuf = on_device() ? twin(buf, all, &d) : buf;
    if (opt.persistent) {
#if HAVE_PERSISTENT
        MPI_Request req = MPI_REQUEST_NULL;

        rc = MPI_Bcast_init(dbuf + GUARD, (int)mcount, mt, root, cm->comm, MPI_INFO_NULL, &req);
        rc = started_twice(rc, &req);
#else
        rc = MPI_ERR_OTHER; /* (not reached: refused in main) */
#endif
    } else if (opt.nonblocking) {
        MPI_Request req;

        rc = MPI_Ibcast(dbuf + GUARD, (int)mcount, mt, root, cm->comm, &req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        rc = MPI_Bcast(dbuf + GUARD, (int)mcount, mt, root, cm->comm);
    }
    if (on_device()) back(buf, all, d);
    if (rc != MPI_SUCCESS) die("MPI_Bcast", cm->comm, rc);
    /* the reference: the root's buffer to every other rank, point to point */
    if (cm->rank == root) {
        for (int q = 0; q < cm->size; ++q) {
            if (q != root) MPI_Send(ref + GUARD, (int)mcount, mt, q, 7, cm->comm);
        }
    } else {
        MPI_Recv(ref + GUARD, (int)mcount, mt, root, 7, cm->comm, MPI_STATUS_IGNORE);
    }
    report(cm, "MPI_Bcast", use_alt ? "(its alternative type)" : t->name, count, root,
           cm->rank == root ? "the root's buffer changed" : "the received buffer", buf, ref, all);
    free(buf);
    free(ref);
    ncases++;
}

/* MPI_Allgather of count x t per rank (count / k x alt at odd ranks, as
 * above); inplace: MPI_IN_PLACE. */
static void check_allgather(const comm_t *cm, const dtype_t *t, long count, bool inplace,
                            MPI_Datatype alt, int k, uint64_t c)
{
    bool use_alt = alt != MPI_DATATYPE_NULL && cm->rank % 2 == 1;
    MPI_Datatype mt = use_alt ? alt : t->type;
    long mcount = use_alt ? count / k : count;
    MPI_Aint lb, extent;
    size_t sbytes = span(mt, mcount), rbytes = span(mt, mcount * cm->size);
    size_t sall = sbytes + 2 * GUARD, rall = rbytes + 2 * GUARD;
    char *sbuf = xmalloc(sall), *rbuf = xmalloc(rall), *ref = xmalloc(rall), *sref = xmalloc(sall);
    char *dsbuf = sbuf, *drbuf = rbuf;
#ifdef STRATA_TEST_DEVICE
    CUdeviceptr ds = 0, dr = 0;
#else
    uintptr_t ds = 0, dr = 0;
#endif
    MPI_Request *reqs = xmalloc(sizeof(MPI_Request) * 2 * (size_t)cm->size);
    int rc, nreq = 0;

    MPI_Type_get_extent(mt, &lb, &extent);
    fill(sbuf, sall, seed_of(cm, c, cm->rank, 1));
    fill(rbuf, rall, seed_of(cm, c, cm->rank, 2));
    if (inplace) {
        /* this rank's block is in rbuf already */
        memcpy(rbuf + GUARD + cm->rank * mcount * extent, sbuf + GUARD, sbytes);
    }
    memcpy(ref, rbuf, rall);
    memcpy(sref, sbuf, sall);
    if (on_device()) {
        dsbuf = twin(sbuf, sall, &ds);
        drbuf = twin(rbuf, rall, &dr);
    }
    if (opt.persistent) {
#if HAVE_PERSISTENT
        MPI_Request req = MPI_REQUEST_NULL;

        rc = MPI_Allgather_init(inplace ? MPI_IN_PLACE : dsbuf + GUARD, (int)mcount, mt,
                                drbuf + GUARD, (int)mcount, mt, cm->comm, MPI_INFO_NULL, &req);
        rc = started_twice(rc, &req);
#else
        rc = MPI_ERR_OTHER; /* (not reached: refused in main) */
#endif
    } else if (opt.nonblocking) {
        MPI_Request req;

        rc = MPI_Iallgather(inplace ? MPI_IN_PLACE : dsbuf + GUARD, (int)mcount, mt, drbuf + GUARD,
                            (int)mcount, mt, cm->comm, &req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        rc = MPI_Allgather(inplace ? MPI_IN_PLACE : dsbuf + GUARD, (int)mcount, mt, drbuf + GUARD,
                           (int)mcount, mt, cm->comm);
    }
    if (on_device()) {
        back(sbuf, sall, ds);
        back(rbuf, rall, dr);
    }
    if (rc != MPI_SUCCESS) die("MPI_Allgather", cm->comm, rc);
    /* the reference: every rank's block to every rank, point to point (a
     * rank's own block through itself too) */
    for (int q = 0; q < cm->size; ++q) {
        MPI_Irecv(ref + GUARD + q * mcount * extent, (int)mcount, mt, q, 9, cm->comm,
                  &reqs[nreq++]);
    }
    for (int q = 0; q < cm->size; ++q) {
        MPI_Isend(sref + GUARD, (int)mcount, mt, q, 9, cm->comm, &reqs[nreq++]);
    }
    MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);
    report(cm, "MPI_Allgather", use_alt ? "(its alternative type)" : t->name, count, -1,
           inplace ? "rbuf (MPI_IN_PLACE)" : "rbuf", rbuf, ref, rall);
    if (!inplace) report(cm, "MPI_Allgather", t->name, count, -1, "sbuf changed", sbuf, sref, sall);
    free(reqs);
    free(sbuf);
    free(rbuf);
    free(ref);
    free(sref);
    ncases++;
}

/* --------------------------------------------------------------- the runs */

static long for_bytes(const dtype_t *t, size_t bytes)
{
    int size;

    MPI_Type_size(t->type, &size);
    return (long)(bytes / (size_t)size);
}

static void run_comm(const comm_t *cm)
{
    const long counts[] = {0, 1, 3, 13, 1021, -300 * 1024};
    const int roots[] = {0, cm->size / 2, cm->size - 1};
    MPI_Datatype pair;
    uint64_t c = 0;
    double t0 = MPI_Wtime();

    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    for (int t = 0; t < ntypes; ++t) {
        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); ++i) {
            long n = counts[i] < 0 ? for_bytes(&types[t], (size_t)-counts[i]) : counts[i];

            if (opt.bcast)
                check_bcast(cm, &types[t], n, roots[(t + i) % 3], MPI_DATATYPE_NULL, 1, c++);
            if (opt.allgather) {
                long per = counts[i] < 0 ? n / cm->size : n;

                check_allgather(cm, &types[t], per, (t + i) % 2, MPI_DATATYPE_NULL, 1, c++);
            }
        }
    }
    /* chunk boundaries, more chunks than slots */
    for (int w = 0; w < 2; ++w) {
        const dtype_t *t = find_type(w ? "MPI_DOUBLE" : "MPI_INT");
        long e = for_bytes(t, CHUNK), ea = for_bytes(t, CHUNK / (size_t)cm->size);
        const long at[] = {e - 1, e, e + 1, 5 * e + 3};
        const long at_ag[] = {ea - 1, ea, ea + 1, 5 * ea + 3};

        for (int i = 0; i < 4; ++i) {
            for (int r = 0; r < 3; ++r) {
                if (opt.bcast) check_bcast(cm, t, at[i], roots[r], MPI_DATATYPE_NULL, 1, c++);
            }
            if (opt.allgather) {
                check_allgather(cm, t, at_ag[i], false, MPI_DATATYPE_NULL, 1, c++);
                check_allgather(cm, t, at_ag[i], true, MPI_DATATYPE_NULL, 1, c++);
            }
        }
    }
    /* one message, two descriptions */
    {
        const long n[] = {2, 2 * 1021, 2 * 40000};

        for (int i = 0; i < 3; ++i) {
            if (opt.bcast) check_bcast(cm, find_type("MPI_INT"), n[i], roots[i], pair, 2, c++);
            if (opt.allgather) check_allgather(cm, find_type("MPI_INT"), n[i], i % 2, pair, 2, c++);
        }
    }
    if (opt.large) {
        const dtype_t *t = find_type("MPI_FLOAT");

        if (opt.bcast) {
            check_bcast(cm, t, for_bytes(t, 3 << 20), 0, MPI_DATATYPE_NULL, 1, c++);
            check_bcast(cm, t, for_bytes(t, 16 << 20) + 1, cm->size - 1, MPI_DATATYPE_NULL, 1, c++);
        }
        if (opt.allgather)
            check_allgather(cm, t, for_bytes(t, (8 << 20) / cm->size), false, MPI_DATATYPE_NULL, 1,
                            c++);
    }
    MPI_Type_free(&pair);
    if (!opt.quiet && cm->rank == 0) {
        printf(PROG ": %s (%d ranks): %llu cases, %.2f s\n", cm->name, cm->size,
               (unsigned long long)c, MPI_Wtime() - t0);
        fflush(stdout);
    }
}

static bool make_comm(MPI_Comm comm, const char *name, comm_t *cm)
{
    if (comm == MPI_COMM_NULL) return false;
    cm->comm = comm;
    cm->name = name;
    MPI_Comm_size(comm, &cm->size);
    MPI_Comm_rank(comm, &cm->rank);
    if (comm != MPI_COMM_WORLD) MPI_Comm_set_name(comm, (char *)name);
    if (opt.nonblocking) {
        int one = 1, all = 0;

        MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, comm); /* sets it up (--nonblocking) */
    }
    return true;
}

int main(int argc, char **argv)
{
    MPI_Comm subs[4];
    const char *names[4] = {"dup", "odd ranks", "all but the last", "reversed"};
    comm_t cm;
    long total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--coll") && i + 1 < argc) {
            opt.bcast = !strcmp(argv[i + 1], "bcast");
            opt.allgather = !strcmp(argv[i + 1], "allgather");
            ++i;
        } else if (!strcmp(argv[i], "--quiet")) {
            opt.quiet = true;
        } else if (!strcmp(argv[i], "--large")) {
            opt.large = true;
        } else if (!strcmp(argv[i], "--device")) {
            opt.device = true;
        } else if (!strcmp(argv[i], "--mixed")) {
            opt.mixed = true;
        } else if (!strcmp(argv[i], "--nonblocking")) {
            opt.nonblocking = true;
        } else if (!strcmp(argv[i], "--persistent")) {
            if (!HAVE_PERSISTENT) {
                fprintf(stderr, PROG ": no persistent collectives in this MPI\n");
                MPI_Finalize();
                return 77;
            }
            opt.nonblocking = opt.persistent = true;
        } else if (!strcmp(argv[i], "--only-comm") && i + 1 < argc &&
                   !strcmp(argv[i + 1], "world")) {
            opt.world_only = true;
            ++i;
        } else {
            if (world_rank == 0) {
                fprintf(
                    stderr,
                    "usage: " PROG " [--coll bcast|allgather] [--quiet] [--large] "
                    "[--device | --mixed] [--only-comm world] [--nonblocking | --persistent]\n");
            }
            MPI_Finalize();
            return 2;
        }
    }
    if (opt.device || opt.mixed) {
#ifdef STRATA_TEST_DEVICE
        stest_dev_t dev;
        int mine, all;

        stest_mpi_init(world_rank, STEST_MPI_FAIL_RANK_FIRST);
        /* collective (the local rank): every rank, whatever its buffers */
        mine = stest_mpi_dev_open(&dev) == 0 || !on_device();
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all) {
            MPI_Finalize();
            return 77;
        }
#else
        if (world_rank == 0) fprintf(stderr, PROG ": --device needs test_copy_colls_device\n");
        MPI_Finalize();
        return 2;
#endif
    }
    make_types();
    if (make_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD", &cm)) run_comm(&cm);
    if (!opt.world_only) {
        MPI_Comm_dup(MPI_COMM_WORLD, &subs[0]);
        MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2 ? 1 : MPI_UNDEFINED, world_rank, &subs[1]);
        MPI_Comm_split(MPI_COMM_WORLD, world_rank < world_size - 1 ? 0 : MPI_UNDEFINED, world_rank,
                       &subs[2]);
        MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &subs[3]);
        for (int i = 0; i < 4; ++i) {
            if (make_comm(subs[i], names[i], &cm) && cm.size > 0) {
                run_comm(&cm);
                MPI_Comm_free(&subs[i]);
            }
        }
    }
    MPI_Reduce(&ncases, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (world_rank == 0) {
        printf(PROG ": OK: %ld checks on %d ranks%s%s\n", total, world_size,
               opt.device ? ", device buffers" : "",
               opt.mixed ? ", device buffers on even ranks" : "");
    }
    MPI_Finalize();
    return 0;
}
