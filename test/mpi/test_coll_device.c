/*
 * Every MPI collective, blocking and nonblocking, on device, host and managed
 * buffers, checked against a host reference computed from the known inputs:
 *
 *   mpirun -np N test_coll_device [--kinds LIST] [--counts LIST] [--max-count N]
 *                                 [--only LIST] [--quiet] [--timeout S]
 *                                 [--mode normal|deadlock|big|fault|repeat|realloc] [--count N]
 *                                 [--fresh] [--calls N] [--inplace] [--cuda]
 *
 * In this tree, e.g. on device buffers through Strata:
 *   source build/test/strata-test-env.sh && source test/lib.sh
 *   strata_mpirun_gpu 4 $(strata_coll_mca strata) build/test/mpi/test_coll_device --quiet
 *
 *   --kinds LIST   send/receive buffer kinds, comma-separated pairs of d (device,
 *                  cuMemAlloc), h (host, malloc), m (managed, cuMemAllocManaged),
 *                  a (device, cuMemAllocAsync from the default pool), v (device,
 *                  VMM: cuMemCreate and cuMemMap);
 *                  default dd,dh,hd,mm (dd in the other modes).  MPI_Bcast's
 *                  one buffer takes the first letter.
 *   --counts LIST  elements per rank block (default 0,1,7,31,1021,300000: the
 *                  last is over 1 MiB of MPI_INT); --max-count N drops larger ones
 *   --only LIST    only these collectives: allreduce, iallreduce, reduce, ...
 *                  barrier, ibarrier (names as in MPI, lower case, no MPI_)
 *   --quiet        one line per collective instead of one per check
 *   --timeout S    a check that takes longer prints "hang" and exits 1 (60)
 *   --cuda         open the device (a current context) even where every kind
 *                  is h, as a GPU application with host buffers does: the
 *                  library then asks the driver about every buffer
 *
 * --mode normal (default): for each collective of the table below and its
 * MPI_I* twin, each kind pair and count: MPI_INT (MPI_SUM where a reduction
 * is involved; allreduce and reduce also MPI_DOUBLE MPI_MAX and
 * MPI_UNSIGNED_CHAR MPI_BXOR); MPI_IN_PLACE wherever MPI allows it (at the
 * root only for rooted collectives); roots 0, size-1 and size/2; v-variants
 * with rank k's block holding count+k elements and a gap of 1 + k%3
 * elements before each block; alltoallv/w with per-peer counts
 * count + (src + 2*dst) % 3 (symmetric count + (src+dst) % 3 in place), and
 * gaps on both sides.  All of it on MPI_COMM_WORLD, then on
 * MPI_Comm_split(rank % 2, reversed by the key), whose sizes are odd with an
 * odd number of ranks.  Nonblocking calls are tested with MPI_Test three
 * times, then completed with MPI_Wait, then checked.
 *
 * Input element j of rank k in a call is a function of (k, j, call): the
 * send buffer holds element j at index j (an in-place buffer at index j of
 * the receive buffer), so every rank computes any rank's input, and a block
 * taken from a wrong offset or rank differs.  Data-movement values are
 * salt ^ k << 23 ^ j, distinct for j < 2^23; reduction inputs are small
 * enough that sums are exact.  Receive buffers are filled with poison
 * (0xA5 bytes, -1515870811 as an int) first; after the call every element
 * must equal the reference, the gaps between v-blocks and the 64-byte guard
 * after the buffer must keep the poison, and send buffers (guard included,
 * 0x5A bytes, so that a copy past the end shows) must be unchanged.
 * The CPU never touches device memory: buffers are written with cuMemcpyHtoD
 * and read with cuMemcpyDtoH (managed memory directly), so the program is
 * correct on a real GPU and under the CUDA stand-in, whose device memory
 * faults on a CPU access.
 *
 * --mode deadlock: MPI_Iallreduce, MPI_Ibcast (root 0), MPI_Iallgather on
 * MPI_COMM_WORLD at each count, each as "rank 0: start, MPI_Send to rank 1,
 * MPI_Wait; rank 1: MPI_Recv from rank 0, start, MPI_Wait; other ranks:
 * start, MPI_Wait", checked.  A start that waits for the other ranks hangs
 * (and the watchdog prints "hang").  Needs 2 ranks or more.
 *
 * --mode big: one MPI_Allreduce (MPI_INT, MPI_SUM) of --count elements
 * (default 64 Mi = 256 MiB), then the same MPI_IN_PLACE, checked in chunks
 * of 4 Mi elements; prints the time of each (the slowest rank's).  With
 * --fresh on a new duplicate of MPI_COMM_WORLD, so that the first of them
 * is that communicator's first collective.
 *
 * --mode repeat: --calls MPI_Allreduce (default 100) of --count MPI_INT
 * elements (default 2: 8 bytes) on the first --kinds pair, MPI_SUM, or
 * MPI_MAX in place with --inplace (the same result however many calls);
 * with --only bcast MPI_Bcast from rank 0 instead, with --only allgather
 * MPI_Allgather of --count elements per rank (--inplace: MPI_IN_PLACE);
 * the buffers are filled before the first call and checked after the last
 * only, so a run with twice the calls costs the GPU exactly the calls'
 * share more.  Rank 0 prints "rank R pid P" for every rank, so that the
 * lines the CUDA stand-in writes at exit (CUDA_STANDIN_COUNTS) can be
 * matched to ranks: test/mpi/tests.sh holds a call to a budget of GPU
 * operations that way.
 *
 * --mode realloc: --calls rounds (default 8) of: allocate a send and a
 * receive buffer of the first --kinds pair, MPI_Allreduce (MPI_INT,
 * MPI_SUM; --inplace: MPI_MAX in place) of --count elements (default 65536;
 * every third round a quarter more) with inputs new to the round, check,
 * free both.  Allocators hand a freed address out again, so a library that
 * keeps mappings of its peers' buffers must notice the new allocation
 * behind an old address: a mapping of the freed one reads the last round's
 * values.  Rank 0 prints how many rounds got an address again
 * ("realloc: N of M rounds reused an address").
 *
 * --mode fault: for a job run with the CUDA stand-in failing a copy entry
 * point the library uses (CUDA_STANDIN_FAIL=cuMemcpyDtoHAsync, say), with
 * MPI_ERRORS_RETURN: MPI_Allreduce, MPI_Bcast (root 0), MPI_Allgather and
 * MPI_Iallreduce + MPI_Wait of --count elements (default 65536) on device
 * buffers must not crash or hang, and must return an error (printed with
 * MPI_Error_string) on every rank whose own copies fail: with
 * cuMemcpyDtoHAsync failing, every rank that reads a device buffer (all of
 * them, but only the root of MPI_Bcast); with cuMemcpyHtoDAsync, every rank
 * that writes one (all but MPI_Bcast's root); with any other entry point,
 * at least one rank per call.  A rank whose copies worked may see
 * MPI_SUCCESS with undefined results, as after any error in an MPI
 * collective.  --only narrows the four calls.  Then a host-buffer
 * MPI_Allreduce on MPI_COMM_WORLD
 * must still be right.  The program fills and reads its own buffers with
 * the synchronous cuMemcpyHtoD/cuMemcpyDtoH, so only those two must not be
 * failed.  Buffers of failed calls are not freed: the library may still
 * hold work on them.
 *
 * Rank 0 prints one line per check ("allreduce dd count=7 root=- inplace=0:
 * ok", for its own result; a wrong value on another rank aborts the job).
 * The first wrong value prints "FAIL rank R: <collective> <kinds> count=N
 * root=R inplace=I index=J: expected X got Y (<which buffer>)" and calls
 * MPI_Abort(MPI_COMM_WORLD, 1).  <collective> names the type and op if not
 * MPI_INT/MPI_SUM (":double-max") and the communicator if not
 * MPI_COMM_WORLD ("@split").  At the end rank 0 prints
 * "test_coll_device: N checks passed" (N: checked calls, each split
 * communicator's counted once).  Exit 77 on all ranks: a kind needs CUDA
 * and there is no CUDA device.
 *
 * One file of ~1300 lines on purpose: one mpirun covers every collective;
 * the 17 collectives share one set of input, reference and check helpers,
 * each family of collectives is one short function in the table (colls[]),
 * and the four other modes reuse all of it.  Buffers of each memory kind
 * come from test/common/stest_buf.c.
 */
#define _GNU_SOURCE
#include "stest_buf.h"
#include "stest_fail.h"
#include "stest_mpi.h"
#include "stest_pattern.h"
#include "stest_watchdog.h"

#include <mpi.h>

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG       "test_coll_device"
#define EXIT_SKIP  STEST_EXIT_SKIP
#define GUARD      64 /* bytes after every buffer that must keep the poison */
#define POISON     0xA5
#define SEND_GUARD 0x5A /* after send buffers: copied past the end, it shows */
#define MAX_KINDS  9
#define MAX_COUNTS 16
#define BIG_CHUNK  ((size_t)4 << 20) /* elements per host chunk in --mode big */
#define TOKEN_TAG  4242

typedef enum {
    MODE_NORMAL,
    MODE_DEADLOCK,
    MODE_BIG,
    MODE_FAULT,
    MODE_REPEAT,
    MODE_REALLOC
} run_mode_t;
static const char *const mode_names[] = {"normal", "deadlock", "big", "fault", "repeat", "realloc"};

static struct {
    run_mode_t mode;
    char kinds[MAX_KINDS][3];
    int nkinds;
    long counts[MAX_COUNTS];
    int ncounts;
    long max_count, count; /* count: --mode big, fault and repeat; 0: their default */
    char only[512];        /* ",name,name," or empty */
    int quiet, timeout;
    int fresh; /* --mode big on a new communicator */
    long calls;  /* --mode repeat */
    int inplace; /* --mode repeat */
    int cuda;    /* --cuda */
} opt = {.max_count = LONG_MAX, .timeout = 60, .calls = 100};

static struct {
    int rank, size; /* in MPI_COMM_WORLD */
    int cuda;       /* a context is current */
    stest_dev_t dev;
    uint64_t calls;  /* checked calls so far, the same sequence on every rank of a communicator */
    long checks[2];  /* on MPI_COMM_WORLD, on the split communicator */
    int split_rank;
} g;

/* ---- element types, ops, checks ---- */

typedef enum { E_INT, E_DOUBLE, E_UCHAR } elem_t;
typedef enum { OP_NONE, OP_SUM, OP_MAX, OP_BXOR } op_t;

typedef struct red {
    const char *tag; /* in the check's name */
    elem_t elem;
    op_t op;         /* OP_NONE: a data-movement collective on MPI_INT */
} red_t;

static const red_t red_move = {"", E_INT, OP_NONE};
static const red_t red_sum = {"", E_INT, OP_SUM};
static const red_t red_double_max = {":double-max", E_DOUBLE, OP_MAX};
static const red_t red_uchar_bxor = {":uchar-bxor", E_UCHAR, OP_BXOR};
static const red_t red_int_max = {":max", E_INT, OP_MAX};

struct coll_desc;

typedef struct check {
    const struct coll_desc *coll;
    MPI_Comm comm;
    int rank, size; /* in comm */
    char skind, rkind;
    int count, root, inplace, nb;
    const red_t *red;
    size_t esize;
    uint64_t seed;
    char label[160]; /* "iallreduce:double-max@split dd count=7 root=- inplace=0" */
} check_t;

static MPI_Datatype check_type(const check_t *c)
{
    return c->red->elem == E_DOUBLE ? MPI_DOUBLE : c->red->elem == E_UCHAR ? MPI_UNSIGNED_CHAR : MPI_INT;
}

static MPI_Op check_op(const check_t *c)
{
    return c->red->op == OP_MAX ? MPI_MAX : c->red->op == OP_BXOR ? MPI_BXOR : MPI_SUM;
}

static size_t elem_size(elem_t e)
{
    return e == E_DOUBLE ? sizeof(double) : e == E_UCHAR ? 1 : sizeof(int);
}

/* ---- failing, the watchdog ---- */

static void mpi_fail(const check_t *c, const char *call, int rc) __attribute__((noreturn));
static void mpi_fail(const check_t *c, const char *call, int rc)
{
    char err[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, err, &len);
    stest_fail("%s: %s returned an error: %s", c->label, call, err);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) stest_fail("cannot allocate %zu host bytes", n);
    return p;
}

/* ---- CUDA and buffers ---- */

static int kinds_need_cuda(void)
{
    for (int i = 0; i < opt.nkinds; i++) {
        if (strpbrk(opt.kinds[i], "dm") != NULL) return 1;
    }
    return 0;
}

static int cuda_setup(void)
{
    if (stest_mpi_dev_open(&g.dev) != 0) return EXIT_SKIP;
    g.cuda = 1;
    if (g.rank == 0) printf("rank 0: device %d of %d: %s\n", g.dev.index, g.dev.count, g.dev.name);
    return 0;
}

typedef struct buf {
    stest_buf_t mem;      /* 'd': device, 'h': host, 'm': managed memory */
    size_t nelem, esize;  /* GUARD bytes more are allocated */
    unsigned char *image; /* a send buffer's contents, which the call must not change */
} buf_t;

static size_t buf_len(const buf_t *b) { return b->nelem * b->esize + GUARD; }

static void buf_alloc(buf_t *b, char kind, size_t nelem, size_t esize)
{
    memset(b, 0, sizeof(*b));
    b->nelem = nelem;
    b->esize = esize;
    stest_buf_alloc(&b->mem,
                    kind == 'h'   ? STEST_MEM_HOST
                    : kind == 'd' ? STEST_MEM_DEVICE
                    : kind == 'a' ? STEST_MEM_ASYNC
                    : kind == 'v' ? STEST_MEM_VMM
                                  : STEST_MEM_MANAGED,
                    buf_len(b), &g.dev);
}

static void buf_write(buf_t *b, size_t off, const void *src, size_t n)
{
    stest_buf_write(&b->mem, off, src, n);
}

static void buf_read(const buf_t *b, size_t off, void *dst, size_t n)
{
    stest_buf_read(&b->mem, off, dst, n);
}

static void buf_free(buf_t *b)
{
    if (b->mem.ptr == NULL) return;
    stest_buf_free(&b->mem);
    free(b->image);
    b->image = NULL;
}

/* ---- inputs and the reference ---- */

/* Input element j of rank `rank` (in the check's communicator). */
static void input_elem(const check_t *c, int rank, size_t j, void *dst)
{
    uint64_t h;

    if (c->red->op == OP_NONE) {
        uint32_t v = (uint32_t)c->seed ^ ((uint32_t)rank << 23) ^ (uint32_t)j;
        memcpy(dst, &v, sizeof(v));
        return;
    }
    h = stest_mix64(c->seed + (uint64_t)rank * UINT64_C(0xd6e8feb86659fd93) + (uint64_t)j * UINT64_C(0xa0761d6478bd642f));
    if (c->red->elem == E_INT) {
        /* |v| < 2^23: sums over fewer than 256 ranks stay in range */
        int v = (int)(h & 0xffffff) - 0x800000;
        memcpy(dst, &v, sizeof(v));
    } else if (c->red->elem == E_DOUBLE) {
        double v = (double)((int)(h & 0xfffff) - 0x80000) / 8.0;
        memcpy(dst, &v, sizeof(v));
    } else {
        *(unsigned char *)dst = (unsigned char)h;
    }
}

static void combine(const check_t *c, void *acc, const void *x)
{
    op_t op = c->red->op;

    if (c->red->elem == E_INT) {
        int a, b;
        memcpy(&a, acc, sizeof(a));
        memcpy(&b, x, sizeof(b));
        a = op == OP_SUM ? a + b : op == OP_MAX ? (a > b ? a : b) : a ^ b;
        memcpy(acc, &a, sizeof(a));
    } else if (c->red->elem == E_DOUBLE) {
        double a, b;
        memcpy(&a, acc, sizeof(a));
        memcpy(&b, x, sizeof(b));
        a = op == OP_SUM ? a + b : a > b ? a : b;
        memcpy(acc, &a, sizeof(a));
    } else {
        unsigned char *a = acc, b = *(const unsigned char *)x;
        *a = op == OP_SUM ? (unsigned char)(*a + b) : op == OP_MAX ? (*a > b ? *a : b) : (unsigned char)(*a ^ b);
    }
}

static void elem_str(const check_t *c, const void *p, char *out, size_t n)
{
    if (c->red->elem == E_INT) {
        int v;
        memcpy(&v, p, sizeof(v));
        snprintf(out, n, "%d", v);
    } else if (c->red->elem == E_DOUBLE) {
        double v;
        memcpy(&v, p, sizeof(v));
        snprintf(out, n, "%.17g", v);
    } else {
        snprintf(out, n, "0x%02x", *(const unsigned char *)p);
    }
}

#define IMG_AT(_c, _img, _i) ((_img) + (size_t)(_i) * (_c)->esize)

/* A host image of a buffer of nelem elements and its guard, all poison. */
static unsigned char *img_new(const check_t *c, size_t nelem)
{
    unsigned char *p = xmalloc(nelem * c->esize + GUARD);
    memset(p, POISON, nelem * c->esize + GUARD);
    return p;
}

/* img[at + i] = input element from + i of `rank`, for i < n. */
static void img_inputs(const check_t *c, unsigned char *img, size_t at, int rank, size_t from, size_t n)
{
    for (size_t i = 0; i < n; i++) input_elem(c, rank, from + i, IMG_AT(c, img, at + i));
}

/* img[at + i] = the op over ranks [lo, hi) of their input element from + i. */
static void img_reduced(const check_t *c, unsigned char *img, size_t at, int lo, int hi, size_t from, size_t n)
{
    unsigned char x[sizeof(double)];

    for (size_t i = 0; i < n; i++) {
        unsigned char *acc = IMG_AT(c, img, at + i);
        input_elem(c, lo, from + i, acc);
        for (int k = lo + 1; k < hi; k++) {
            input_elem(c, k, from + i, x);
            combine(c, acc, x);
        }
    }
}

/* Rank k's block holds counts[k] elements after a gap of 1 + k % 3 (no
 * gap at all with gapless); returns the extent. */
static size_t layout(const int *counts, int n, int gapless, int *displs)
{
    size_t at = 0;
    for (int k = 0; k < n; k++) {
        at += gapless ? 0 : (size_t)(1 + k % 3);
        displs[k] = (int)at;
        at += (size_t)counts[k];
    }
    return at;
}

/* ---- making and checking buffers ---- */

/* got[i] and expect[i] are element first + i of a buffer of nelem elements
 * followed by its guard; fails at the first difference outside [skip_lo, skip_hi). */
static void compare(const check_t *c, const unsigned char *got, const unsigned char *expect, size_t first, size_t n,
                    size_t nelem, size_t skip_lo, size_t skip_hi, const char *where)
{
    size_t es = c->esize;
    char want[48], have[48];

    if (skip_lo >= skip_hi && memcmp(got, expect, n * es) == 0) return;
    for (size_t i = 0; i < n; i++) {
        size_t idx = first + i;
        if ((idx >= skip_lo && idx < skip_hi) || memcmp(got + i * es, expect + i * es, es) == 0) continue;
        elem_str(c, expect + i * es, want, sizeof(want));
        elem_str(c, got + i * es, have, sizeof(have));
        stest_fail("%s index=%zu: expected %s got %s (%s%s)", c->label, idx, want, have, where,
             idx >= nelem ? ", guard after the buffer" : "");
    }
}

/* A send buffer of kind c->skind holding this rank's inputs 0..nelem-1,
 * and a guard unlike the receive buffers' poison. */
static void *send_buf(const check_t *c, buf_t *b, size_t nelem)
{
    buf_alloc(b, c->skind, nelem, c->esize);
    b->image = img_new(c, nelem);
    img_inputs(c, b->image, 0, c->rank, 0, nelem);
    memset(b->image + nelem * c->esize, SEND_GUARD, GUARD);
    buf_write(b, 0, b->image, buf_len(b));
    return b->mem.ptr;
}

/* A receive buffer of `kind` holding `pre` (poison, and an in-place call's
 * inputs); takes pre. */
static void *recv_buf(const check_t *c, buf_t *b, char kind, unsigned char *pre, size_t nelem)
{
    buf_alloc(b, kind, nelem, c->esize);
    buf_write(b, 0, pre, buf_len(b));
    free(pre);
    return b->mem.ptr;
}

/* b, and its guard, must hold `expect` but in [skip_lo, skip_hi); frees both. */
static void check_recv(const check_t *c, buf_t *b, unsigned char *expect, size_t skip_lo, size_t skip_hi)
{
    unsigned char *got = xmalloc(buf_len(b));

    buf_read(b, 0, got, buf_len(b));
    compare(c, got, expect, 0, b->nelem + GUARD / c->esize, b->nelem, skip_lo, skip_hi, "recvbuf");
    free(got);
    free(expect);
    buf_free(b);
}

/* A send buffer must come back unchanged; frees it. */
static void buf_done(const check_t *c, buf_t *b)
{
    if (b->mem.ptr != NULL && b->image != NULL) {
        unsigned char *got = xmalloc(buf_len(b));
        buf_read(b, 0, got, buf_len(b));
        compare(c, got, b->image, 0, b->nelem + GUARD / c->esize, b->nelem, 0, 0, "sendbuf, which must not change");
        free(got);
    }
    buf_free(b);
}

/* ---- calling ---- */

static void deadlock_send(void)
{
    int token = (int)g.calls;
    MPI_Send(&token, 1, MPI_INT, 1, TOKEN_TAG, MPI_COMM_WORLD);
}

static void deadlock_recv(const check_t *c)
{
    int token = -1;
    MPI_Recv(&token, 1, MPI_INT, 0, TOKEN_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (token != (int)g.calls) stest_fail("%s: token from rank 0: expected %d got %d", c->label, (int)g.calls, token);
}

/* After the call (or its start, with its request): the nonblocking twin is
 * tested a few times, then waited for. */
static void coll_complete(const check_t *c, int rc, MPI_Request *req)
{
    int done = 0;

    if (rc != MPI_SUCCESS) mpi_fail(c, "the call", rc);
    if (!c->nb) return;
    if (opt.mode == MODE_DEADLOCK) {
        if (c->rank == 0) deadlock_send();
    } else {
        for (int t = 0; t < 3 && !done; t++) {
            rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) mpi_fail(c, "MPI_Test", rc);
        }
    }
    if (!done && (rc = MPI_Wait(req, MPI_STATUS_IGNORE)) != MPI_SUCCESS) mpi_fail(c, "MPI_Wait", rc);
}

/* ---- the collectives ---- */

static void run_reduce_common(check_t *c, int all)
{
    size_t n = (size_t)c->count;
    int here = all || c->rank == c->root, rc;
    buf_t sb = {0}, rb = {0};
    void *s = MPI_IN_PLACE, *r = NULL;
    MPI_Request req;

    if (here) {
        unsigned char *pre = img_new(c, n);
        if (c->inplace) img_inputs(c, pre, 0, c->rank, 0, n);
        r = recv_buf(c, &rb, c->rkind, pre, n);
    }
    if (!(here && c->inplace)) s = send_buf(c, &sb, n);
    if (all) {
        rc = c->nb ? MPI_Iallreduce(s, r, c->count, check_type(c), check_op(c), c->comm, &req)
                   : MPI_Allreduce(s, r, c->count, check_type(c), check_op(c), c->comm);
    } else {
        rc = c->nb ? MPI_Ireduce(s, r, c->count, check_type(c), check_op(c), c->root, c->comm, &req)
                   : MPI_Reduce(s, r, c->count, check_type(c), check_op(c), c->root, c->comm);
    }
    coll_complete(c, rc, &req);
    if (here) {
        unsigned char *exp = img_new(c, n);
        img_reduced(c, exp, 0, 0, c->size, 0, n);
        check_recv(c, &rb, exp, 0, 0);
    }
    buf_done(c, &sb);
}

static void run_allreduce(check_t *c) { run_reduce_common(c, 1); }
static void run_reduce(check_t *c) { run_reduce_common(c, 0); }

static void run_bcast(check_t *c)
{
    size_t n = (size_t)c->count;
    int rc;
    buf_t b = {0};
    void *p;
    MPI_Request req;

    p = c->rank == c->root ? send_buf(c, &b, n) : recv_buf(c, &b, c->skind, img_new(c, n), n);
    rc = c->nb ? MPI_Ibcast(p, c->count, MPI_INT, c->root, c->comm, &req)
               : MPI_Bcast(p, c->count, MPI_INT, c->root, c->comm);
    coll_complete(c, rc, &req);
    if (c->rank == c->root) {
        buf_done(c, &b);
    } else {
        unsigned char *exp = img_new(c, n);
        img_inputs(c, exp, 0, c->root, 0, n);
        check_recv(c, &b, exp, 0, 0);
    }
}

/* gather, gatherv, allgather, allgatherv */
static void run_gather_common(check_t *c, int all, int v)
{
    int n = c->size, r = c->rank, here = all || r == c->root, rc;
    int *counts = xmalloc(sizeof(int) * (size_t)n), *displs = xmalloc(sizeof(int) * (size_t)n);
    size_t ext;
    buf_t sb = {0}, rb = {0};
    void *s = MPI_IN_PLACE, *rp = NULL;
    MPI_Request req;

    for (int k = 0; k < n; k++) counts[k] = c->count + (v ? k : 0);
    ext = layout(counts, n, !v, displs);
    if (here) {
        unsigned char *pre = img_new(c, ext);
        if (c->inplace) img_inputs(c, pre, (size_t)displs[r], r, (size_t)displs[r], (size_t)counts[r]);
        rp = recv_buf(c, &rb, c->rkind, pre, ext);
    }
    if (!(here && c->inplace)) s = send_buf(c, &sb, (size_t)counts[r]);
    if (all && v) {
        rc = c->nb ? MPI_Iallgatherv(s, counts[r], MPI_INT, rp, counts, displs, MPI_INT, c->comm, &req)
                   : MPI_Allgatherv(s, counts[r], MPI_INT, rp, counts, displs, MPI_INT, c->comm);
    } else if (all) {
        rc = c->nb ? MPI_Iallgather(s, c->count, MPI_INT, rp, c->count, MPI_INT, c->comm, &req)
                   : MPI_Allgather(s, c->count, MPI_INT, rp, c->count, MPI_INT, c->comm);
    } else if (v) {
        rc = c->nb ? MPI_Igatherv(s, counts[r], MPI_INT, rp, counts, displs, MPI_INT, c->root, c->comm, &req)
                   : MPI_Gatherv(s, counts[r], MPI_INT, rp, counts, displs, MPI_INT, c->root, c->comm);
    } else {
        rc = c->nb ? MPI_Igather(s, c->count, MPI_INT, rp, c->count, MPI_INT, c->root, c->comm, &req)
                   : MPI_Gather(s, c->count, MPI_INT, rp, c->count, MPI_INT, c->root, c->comm);
    }
    coll_complete(c, rc, &req);
    if (here) {
        unsigned char *exp = img_new(c, ext);
        for (int k = 0; k < n; k++) {
            int from_recvbuf = c->inplace && (all || k == c->root);
            img_inputs(c, exp, (size_t)displs[k], k, from_recvbuf ? (size_t)displs[k] : 0, (size_t)counts[k]);
        }
        check_recv(c, &rb, exp, 0, 0);
    }
    buf_done(c, &sb);
    free(counts);
    free(displs);
}

static void run_gather(check_t *c) { run_gather_common(c, 0, 0); }
static void run_gatherv(check_t *c) { run_gather_common(c, 0, 1); }
static void run_allgather(check_t *c) { run_gather_common(c, 1, 0); }
static void run_allgatherv(check_t *c) { run_gather_common(c, 1, 1); }

/* scatter, scatterv */
static void run_scatter_common(check_t *c, int v)
{
    int n = c->size, r = c->rank, root = c->root, rc;
    int *counts = xmalloc(sizeof(int) * (size_t)n), *displs = xmalloc(sizeof(int) * (size_t)n);
    size_t ext;
    buf_t sb = {0}, rb = {0};
    void *s = NULL, *rp = MPI_IN_PLACE;
    MPI_Request req;

    for (int k = 0; k < n; k++) counts[k] = c->count + (v ? k : 0);
    ext = layout(counts, n, !v, displs);
    if (r == root) s = send_buf(c, &sb, ext);
    if (!(r == root && c->inplace)) rp = recv_buf(c, &rb, c->rkind, img_new(c, (size_t)counts[r]), (size_t)counts[r]);
    if (v) {
        rc = c->nb ? MPI_Iscatterv(s, counts, displs, MPI_INT, rp, counts[r], MPI_INT, root, c->comm, &req)
                   : MPI_Scatterv(s, counts, displs, MPI_INT, rp, counts[r], MPI_INT, root, c->comm);
    } else {
        rc = c->nb ? MPI_Iscatter(s, c->count, MPI_INT, rp, c->count, MPI_INT, root, c->comm, &req)
                   : MPI_Scatter(s, c->count, MPI_INT, rp, c->count, MPI_INT, root, c->comm);
    }
    coll_complete(c, rc, &req);
    if (rb.mem.ptr != NULL) {
        unsigned char *exp = img_new(c, (size_t)counts[r]);
        img_inputs(c, exp, 0, root, (size_t)displs[r], (size_t)counts[r]);
        check_recv(c, &rb, exp, 0, 0);
    }
    buf_done(c, &sb);
    free(counts);
    free(displs);
}

static void run_scatter(check_t *c) { run_scatter_common(c, 0); }
static void run_scatterv(check_t *c) { run_scatter_common(c, 1); }

static void run_alltoall(check_t *c)
{
    size_t n = (size_t)c->count, tot = n * (size_t)c->size;
    int rc;
    buf_t sb = {0}, rb = {0};
    void *s = MPI_IN_PLACE, *rp;
    unsigned char *pre = img_new(c, tot), *exp;
    MPI_Request req;

    if (c->inplace) img_inputs(c, pre, 0, c->rank, 0, tot);
    else s = send_buf(c, &sb, tot);
    rp = recv_buf(c, &rb, c->rkind, pre, tot);
    rc = c->nb ? MPI_Ialltoall(s, c->count, MPI_INT, rp, c->count, MPI_INT, c->comm, &req)
               : MPI_Alltoall(s, c->count, MPI_INT, rp, c->count, MPI_INT, c->comm);
    coll_complete(c, rc, &req);
    exp = img_new(c, tot);
    for (int k = 0; k < c->size; k++) img_inputs(c, exp, (size_t)k * n, k, (size_t)c->rank * n, n);
    check_recv(c, &rb, exp, 0, 0);
    buf_done(c, &sb);
}

/* Elements src sends to dst in alltoallv/w: symmetric in place, where one
 * set of counts serves both directions. */
static int a2a_count(const check_t *c, int src, int dst)
{
    return c->count + (c->inplace ? (src + dst) % 3 : (src + 2 * dst) % 3);
}

/* Rank me's counts and displacements (in elements) on its send or receive
 * side.  Alltoallw on one rank has no gap: Open MPI 4.1's coll/self scales
 * alltoallw's byte displacements by the type's extent, so only 0 works. */
static size_t a2a_layout(const check_t *c, int me, int send, int w, int *counts, int *displs)
{
    for (int k = 0; k < c->size; k++) counts[k] = send ? a2a_count(c, me, k) : a2a_count(c, k, me);
    return layout(counts, c->size, w && c->size == 1, displs);
}

/* alltoallv, and alltoallw with byte displacements */
static void run_a2av_common(check_t *c, int w)
{
    int n = c->size, r = c->rank, rc;
    size_t ia = sizeof(int) * (size_t)n, sext, rext;
    int *sc = xmalloc(ia), *sd = xmalloc(ia), *rcn = xmalloc(ia), *rd = xmalloc(ia);
    int *pc = xmalloc(ia), *pd = xmalloc(ia); /* a peer's layout */
    MPI_Datatype *types = xmalloc(sizeof(MPI_Datatype) * (size_t)n);
    buf_t sb = {0}, rb = {0};
    void *s = MPI_IN_PLACE, *rp;
    unsigned char *pre, *exp;
    MPI_Request req;

    sext = a2a_layout(c, r, 1, w, sc, sd);
    rext = a2a_layout(c, r, 0, w, rcn, rd);
    pre = img_new(c, rext);
    if (c->inplace) {
        for (int k = 0; k < n; k++) img_inputs(c, pre, (size_t)rd[k], r, (size_t)rd[k], (size_t)rcn[k]);
    } else {
        s = send_buf(c, &sb, sext);
    }
    rp = recv_buf(c, &rb, c->rkind, pre, rext);
    if (w) {
        int *sdb = pc, *rdb = pd;
        for (int k = 0; k < n; k++) {
            sdb[k] = sd[k] * (int)sizeof(int);
            rdb[k] = rd[k] * (int)sizeof(int);
            types[k] = MPI_INT;
        }
        rc = c->nb ? MPI_Ialltoallw(s, sc, sdb, types, rp, rcn, rdb, types, c->comm, &req)
                   : MPI_Alltoallw(s, sc, sdb, types, rp, rcn, rdb, types, c->comm);
    } else {
        rc = c->nb ? MPI_Ialltoallv(s, sc, sd, MPI_INT, rp, rcn, rd, MPI_INT, c->comm, &req)
                   : MPI_Alltoallv(s, sc, sd, MPI_INT, rp, rcn, rd, MPI_INT, c->comm);
    }
    coll_complete(c, rc, &req);
    exp = img_new(c, rext);
    for (int src = 0; src < n; src++) {
        a2a_layout(c, src, !c->inplace, w, pc, pd);
        img_inputs(c, exp, (size_t)rd[src], src, (size_t)pd[r], (size_t)rcn[src]);
    }
    check_recv(c, &rb, exp, 0, 0);
    buf_done(c, &sb);
    free(sc), free(sd), free(rcn), free(rd), free(pc), free(pd), free(types);
}

static void run_alltoallv(check_t *c) { run_a2av_common(c, 0); }
static void run_alltoallw(check_t *c) { run_a2av_common(c, 1); }

/* reduce_scatter (rank k gets count + k elements), reduce_scatter_block */
static void run_rs_common(check_t *c, int block)
{
    int n = c->size, r = c->rank, rc;
    int *counts = xmalloc(sizeof(int) * (size_t)n);
    size_t total = 0, off = 0, rlen;
    buf_t sb = {0}, rb = {0};
    void *s = MPI_IN_PLACE, *rp;
    unsigned char *pre, *exp;
    MPI_Request req;

    for (int k = 0; k < n; k++) {
        counts[k] = c->count + (block ? 0 : k);
        off += k < r ? (size_t)counts[k] : 0;
        total += (size_t)counts[k];
    }
    /* In place, the input is the whole receive buffer and the result its first counts[r] elements. */
    rlen = c->inplace ? total : (size_t)counts[r];
    pre = img_new(c, rlen);
    if (c->inplace) img_inputs(c, pre, 0, r, 0, total);
    else s = send_buf(c, &sb, total);
    rp = recv_buf(c, &rb, c->rkind, pre, rlen);
    if (block) {
        rc = c->nb ? MPI_Ireduce_scatter_block(s, rp, c->count, check_type(c), check_op(c), c->comm, &req)
                   : MPI_Reduce_scatter_block(s, rp, c->count, check_type(c), check_op(c), c->comm);
    } else {
        rc = c->nb ? MPI_Ireduce_scatter(s, rp, counts, check_type(c), check_op(c), c->comm, &req)
                   : MPI_Reduce_scatter(s, rp, counts, check_type(c), check_op(c), c->comm);
    }
    coll_complete(c, rc, &req);
    exp = img_new(c, rlen);
    img_reduced(c, exp, 0, 0, n, off, (size_t)counts[r]);
    /* MPI leaves the rest of an in-place buffer undefined. */
    check_recv(c, &rb, exp, (size_t)counts[r], rlen);
    buf_done(c, &sb);
    free(counts);
}

static void run_reduce_scatter(check_t *c) { run_rs_common(c, 0); }
static void run_reduce_scatter_block(check_t *c) { run_rs_common(c, 1); }

static void run_scan_common(check_t *c, int ex)
{
    size_t n = (size_t)c->count;
    int r = c->rank, rc;
    buf_t sb = {0}, rb = {0};
    void *s = MPI_IN_PLACE, *rp;
    unsigned char *pre = img_new(c, n), *exp;
    MPI_Request req;

    if (c->inplace) img_inputs(c, pre, 0, r, 0, n);
    else s = send_buf(c, &sb, n);
    rp = recv_buf(c, &rb, c->rkind, pre, n);
    if (ex) {
        rc = c->nb ? MPI_Iexscan(s, rp, c->count, check_type(c), check_op(c), c->comm, &req)
                   : MPI_Exscan(s, rp, c->count, check_type(c), check_op(c), c->comm);
    } else {
        rc = c->nb ? MPI_Iscan(s, rp, c->count, check_type(c), check_op(c), c->comm, &req)
                   : MPI_Scan(s, rp, c->count, check_type(c), check_op(c), c->comm);
    }
    coll_complete(c, rc, &req);
    exp = img_new(c, n);
    if (!ex || r > 0) img_reduced(c, exp, 0, 0, ex ? r : r + 1, 0, n);
    /* Rank 0's MPI_Exscan result is undefined; its guard is still checked. */
    check_recv(c, &rb, exp, 0, ex && r == 0 ? n : 0);
    buf_done(c, &sb);
}

static void run_scan(check_t *c) { run_scan_common(c, 0); }
static void run_exscan(check_t *c) { run_scan_common(c, 1); }

static void run_barrier(check_t *c)
{
    MPI_Request req;
    int rc = c->nb ? MPI_Ibarrier(c->comm, &req) : MPI_Barrier(c->comm);
    coll_complete(c, rc, &req);
}

enum {
    F_ROOTED = 1,   /* roots 0, size-1, size/2 */
    F_INPLACE = 2,  /* also with MPI_IN_PLACE (at the root if rooted) */
    F_REDUCE = 4,   /* MPI_INT MPI_SUM */
    F_OPS = 8,      /* and MPI_DOUBLE MPI_MAX, MPI_UNSIGNED_CHAR MPI_BXOR */
    F_ONEBUF = 16,  /* one buffer, of the first kind */
    F_NOBUF = 32,   /* no buffer: once per communicator */
};

typedef struct coll_desc {
    const char *name; /* the nonblocking twin's is "i" name */
    void (*run)(check_t *c);
    unsigned flags;
} coll_desc_t;

static const coll_desc_t colls[] = {
    {"allreduce", run_allreduce, F_INPLACE | F_REDUCE | F_OPS},
    {"reduce", run_reduce, F_ROOTED | F_INPLACE | F_REDUCE | F_OPS},
    {"bcast", run_bcast, F_ROOTED | F_ONEBUF},
    {"allgather", run_allgather, F_INPLACE},
    {"allgatherv", run_allgatherv, F_INPLACE},
    {"gather", run_gather, F_ROOTED | F_INPLACE},
    {"gatherv", run_gatherv, F_ROOTED | F_INPLACE},
    {"scatter", run_scatter, F_ROOTED | F_INPLACE},
    {"scatterv", run_scatterv, F_ROOTED | F_INPLACE},
    {"alltoall", run_alltoall, F_INPLACE},
    {"alltoallv", run_alltoallv, F_INPLACE},
    {"alltoallw", run_alltoallw, F_INPLACE},
    {"reduce_scatter", run_reduce_scatter, F_INPLACE | F_REDUCE},
    {"reduce_scatter_block", run_reduce_scatter_block, F_INPLACE | F_REDUCE},
    {"scan", run_scan, F_INPLACE | F_REDUCE},
    {"exscan", run_exscan, F_INPLACE | F_REDUCE},
    {"barrier", run_barrier, F_NOBUF},
};
#define NUM_COLLS ((int)(sizeof(colls) / sizeof(colls[0])))

static const coll_desc_t *coll_find(const char *name)
{
    for (int i = 0; i < NUM_COLLS; i++) {
        if (!strcmp(colls[i].name, name)) return &colls[i];
    }
    return NULL;
}

/* ---- running checks ---- */

static const char *coll_name(const coll_desc_t *d, int nb, char *out, size_t n)
{
    snprintf(out, n, "%s%s", nb ? "i" : "", d->name);
    return out;
}

static int selected(const char *name)
{
    char key[64];
    if (opt.only[0] == '\0') return 1;
    snprintf(key, sizeof(key), ",%s,", name);
    return strstr(opt.only, key) != NULL;
}

/* c names its collective, communicator, kinds, count, root, inplace, red and nb. */
static void run_check(check_t *c, int comm_index)
{
    char name[48], kinds[3] = {c->skind, c->rkind, 0}, root[16] = "-";
    const char *comm_tag = comm_index ? "@split" : "";

    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    c->esize = elem_size(c->red->elem);
    c->seed = stest_mix64(++g.calls * 2 + (uint64_t)comm_index);
    coll_name(c->coll, c->nb, name, sizeof(name));
    if (c->coll->flags & F_ONEBUF) kinds[1] = '\0';
    if (c->coll->flags & F_ROOTED) snprintf(root, sizeof(root), "%d", c->root);
    if (c->coll->flags & F_NOBUF) snprintf(c->label, sizeof(c->label), "%s%s", name, comm_tag);
    else snprintf(c->label, sizeof(c->label), "%s%s%s %s count=%d root=%s inplace=%d", name, c->red->tag, comm_tag,
                  kinds, c->count, root, c->inplace);
    stest_watchdog_arm(g.rank, c->label, opt.timeout);
    if (opt.mode == MODE_DEADLOCK && c->rank == 1) deadlock_recv(c);
    c->coll->run(c);
    alarm(0);
    g.checks[comm_index]++;
    if (!opt.quiet && g.rank == 0) printf("%s: ok\n", c->label);
}

/* Every variant of one collective (blocking or not) on comm. */
static void run_coll(const coll_desc_t *d, int nb, MPI_Comm comm, int comm_index)
{
    const red_t *reds[] = {&red_move, &red_sum, &red_double_max, &red_uchar_bxor};
    int size, roots[3] = {0}, nroots = 0, first_red = 0, nreds = 1, last_inplace = !!(d->flags & F_INPLACE);
    check_t c = {.coll = d, .comm = comm, .nb = nb, .root = -1};

    MPI_Comm_size(comm, &size);
    if (d->flags & F_NOBUF) {
        c.skind = c.rkind = '-';
        c.red = &red_move;
        run_check(&c, comm_index);
        return;
    }
    if (d->flags & F_ROOTED) {
        const int cand[3] = {0, size - 1, size / 2};
        for (int i = 0; i < 3; i++) {
            int dup = 0;
            for (int j = 0; j < nroots; j++) dup |= roots[j] == cand[i];
            if (!dup) roots[nroots++] = cand[i];
        }
    } else {
        roots[nroots++] = -1;
    }
    if (d->flags & F_REDUCE) first_red = 1;
    if (d->flags & F_OPS) nreds = 3;
    for (int k = 0; k < opt.nkinds; k++) {
        int seen = 0;
        for (int j = 0; j < k && (d->flags & F_ONEBUF); j++) seen |= opt.kinds[j][0] == opt.kinds[k][0];
        if (seen) continue;
        c.skind = opt.kinds[k][0];
        c.rkind = opt.kinds[k][1];
        for (int n = 0; n < opt.ncounts; n++) {
            c.count = (int)opt.counts[n];
            for (int rd = first_red; rd < first_red + nreds; rd++) {
                c.red = reds[rd];
                for (int rt = 0; rt < nroots; rt++) {
                    c.root = roots[rt];
                    for (c.inplace = 0; c.inplace <= last_inplace; c.inplace++) run_check(&c, comm_index);
                }
            }
        }
    }
}

static void run_comm(MPI_Comm comm, int comm_index)
{
    char name[48];

    for (int i = 0; i < NUM_COLLS; i++) {
        for (int nb = 0; nb < 2; nb++) {
            long before = g.checks[comm_index];
            if (!selected(coll_name(&colls[i], nb, name, sizeof(name)))) continue;
            run_coll(&colls[i], nb, comm, comm_index);
            if (opt.quiet && g.rank == 0) {
                printf("%s%s: %ld checks ok\n", name, comm_index ? "@split" : "", g.checks[comm_index] - before);
            }
        }
    }
}

static void run_normal(void)
{
    MPI_Comm split;
    int split_size;

    MPI_Comm_split(MPI_COMM_WORLD, g.rank % 2, g.size - g.rank, &split);
    MPI_Comm_set_errhandler(split, MPI_ERRORS_RETURN);
    MPI_Comm_size(split, &split_size);
    MPI_Comm_rank(split, &g.split_rank);
    run_comm(MPI_COMM_WORLD, 0);
    if (g.rank == 0) {
        printf("@split: the ranks of MPI_COMM_WORLD with the same rank %% 2, in reverse order (rank 0's: %d ranks)\n",
               split_size);
    }
    run_comm(split, 1);
    MPI_Comm_free(&split);
}

/* Rank 0 of MPI_COMM_WORLD starts, sends to rank 1, then waits; rank 1
 * receives before it starts (deadlock_send, deadlock_recv). */
static void run_deadlock(void)
{
    static const char *const names[] = {"allreduce", "bcast", "allgather"};

    for (int i = 0; i < 3; i++) {
        const coll_desc_t *d = coll_find(names[i]);
        for (int k = 0; k < opt.nkinds; k++) {
            for (int n = 0; n < opt.ncounts; n++) {
                check_t c = {.coll = d, .comm = MPI_COMM_WORLD, .nb = 1, .root = 0, .red = &red_move};
                c.skind = opt.kinds[k][0];
                c.rkind = opt.kinds[k][1];
                c.count = (int)opt.counts[n];
                if (d->flags & F_REDUCE) c.red = &red_sum;
                run_check(&c, 0);
            }
        }
    }
}

/* ---- --mode big ---- */

typedef enum { BIG_POISON, BIG_INPUTS, BIG_REDUCED } big_content_t;

/* Elements [first, first + n) of what the buffer should hold. */
static void big_image(const check_t *c, big_content_t what, size_t first, size_t n, unsigned char *img)
{
    if (what == BIG_POISON) memset(img, POISON, n * c->esize);
    else if (what == BIG_INPUTS) img_inputs(c, img, 0, c->rank, first, n);
    else img_reduced(c, img, 0, 0, c->size, first, n);
}

static void big_fill(const check_t *c, buf_t *b, big_content_t what, int guard_byte)
{
    unsigned char *img = xmalloc(BIG_CHUNK * c->esize), guard[GUARD];

    for (size_t at = 0; at < b->nelem; at += BIG_CHUNK) {
        size_t n = b->nelem - at < BIG_CHUNK ? b->nelem - at : BIG_CHUNK;
        big_image(c, what, at, n, img);
        buf_write(b, at * c->esize, img, n * c->esize);
    }
    memset(guard, guard_byte, GUARD);
    buf_write(b, b->nelem * c->esize, guard, GUARD);
    free(img);
}

static void big_check(const check_t *c, buf_t *b, big_content_t what, int guard_byte, const char *where)
{
    unsigned char *img = xmalloc(BIG_CHUNK * c->esize + GUARD), *got = xmalloc(BIG_CHUNK * c->esize + GUARD);

    for (size_t at = 0; at < b->nelem; at += BIG_CHUNK) {
        size_t n = b->nelem - at < BIG_CHUNK ? b->nelem - at : BIG_CHUNK;
        big_image(c, what, at, n, img);
        buf_read(b, at * c->esize, got, n * c->esize);
        compare(c, got, img, at, n, b->nelem, 0, 0, where);
    }
    memset(img, guard_byte, GUARD);
    buf_read(b, b->nelem * c->esize, got, GUARD);
    compare(c, got, img, b->nelem, GUARD / c->esize, b->nelem, 0, 0, where);
    free(img);
    free(got);
}

static void run_big(void)
{
    check_t c = {.coll = coll_find("allreduce"), .comm = MPI_COMM_WORLD, .red = &red_sum, .root = -1};
    long count = opt.count ? opt.count : 64L << 20;
    buf_t sb, rb;

    if (opt.fresh) MPI_Comm_dup(MPI_COMM_WORLD, &c.comm);
    c.skind = opt.kinds[0][0];
    c.rkind = opt.kinds[0][1];
    c.count = (int)count;
    c.rank = g.rank;
    c.size = g.size;
    c.esize = sizeof(int);
    c.seed = stest_mix64(++g.calls);
    buf_alloc(&sb, c.skind, (size_t)count, c.esize);
    buf_alloc(&rb, c.rkind, (size_t)count, c.esize);
    big_fill(&c, &sb, BIG_INPUTS, SEND_GUARD);
    for (c.inplace = 0; c.inplace < 2; c.inplace++) {
        double t, tmax;
        int rc;
        snprintf(c.label, sizeof(c.label), "allreduce %c%c count=%d root=- inplace=%d", c.skind, c.rkind, c.count,
                 c.inplace);
        big_fill(&c, &rb, c.inplace ? BIG_INPUTS : BIG_POISON, POISON);
        MPI_Barrier(MPI_COMM_WORLD);
        stest_watchdog_arm(g.rank, c.label, opt.timeout);
        t = MPI_Wtime();
        rc = MPI_Allreduce(c.inplace ? MPI_IN_PLACE : sb.mem.ptr, rb.mem.ptr, c.count, MPI_INT, MPI_SUM, c.comm);
        t = MPI_Wtime() - t;
        alarm(0);
        if (rc != MPI_SUCCESS) mpi_fail(&c, "the call", rc);
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        big_check(&c, &rb, BIG_REDUCED, POISON, "recvbuf");
        if (!c.inplace) big_check(&c, &sb, BIG_INPUTS, SEND_GUARD, "sendbuf, which must not change");
        g.checks[0]++;
        MPI_Barrier(MPI_COMM_WORLD);
        if (g.rank == 0) {
            printf("%s: ok, %.3f s (%.2f GB/s of data per rank)\n", c.label, tmax,
                   (double)count * sizeof(int) / tmax / 1e9);
        }
    }
    buf_free(&sb);
    buf_free(&rb);
    if (opt.fresh) MPI_Comm_free(&c.comm);
}

/* ---- --mode fault ---- */

static void run_fault(void)
{
    static const char *const names[] = {"allreduce", "bcast", "allgather", "iallreduce"};
    const char *failing = getenv("CUDA_STANDIN_FAIL");
    check_t c = {.comm = MPI_COMM_WORLD, .red = &red_move, .root = 0};

    c.skind = opt.kinds[0][0];
    c.rkind = opt.kinds[0][1];
    c.count = (int)(opt.count ? opt.count : 65536);
    c.rank = g.rank;
    c.size = g.size;
    c.esize = sizeof(int);
    if (g.rank == 0) printf("CUDA_STANDIN_FAIL=%s\n", failing ? failing : "(not set)");
    for (int i = 0; i < 4; i++) {
        size_t n = (size_t)c.count;

        if (!selected(names[i])) continue; /* --only narrows the calls */
        buf_t sb = {0}, rb = {0};
        MPI_Request req;
        char err[MPI_MAX_ERROR_STRING];
        int rc, len = 0, allowed;

        c.seed = stest_mix64(++g.calls);
        snprintf(c.label, sizeof(c.label), "fault %s %c%c count=%d root=%s", names[i], c.skind, c.rkind, c.count,
                 i == 1 ? "0" : "-");
        stest_watchdog_arm(g.rank, c.label, opt.timeout);
        if (i == 1) {
            void *p = g.rank == 0 ? send_buf(&c, &sb, n) : recv_buf(&c, &sb, c.skind, img_new(&c, n), n);
            rc = MPI_Bcast(p, c.count, MPI_INT, 0, c.comm);
        } else {
            void *s = send_buf(&c, &sb, n);
            void *r = recv_buf(&c, &rb, c.rkind, img_new(&c, i == 2 ? n * (size_t)g.size : n),
                               i == 2 ? n * (size_t)g.size : n);
            if (i == 0) rc = MPI_Allreduce(s, r, c.count, MPI_INT, MPI_SUM, c.comm);
            else if (i == 2) rc = MPI_Allgather(s, c.count, MPI_INT, r, c.count, MPI_INT, c.comm);
            else if ((rc = MPI_Iallreduce(s, r, c.count, MPI_INT, MPI_SUM, c.comm, &req)) == MPI_SUCCESS)
                rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        alarm(0);
        {
            int reads = i != 1 || g.rank == 0, writes = i != 1 || g.rank != 0;
            int failed = rc != MPI_SUCCESS, any = 0;

            if (failing != NULL && strstr(failing, "DtoHAsync") != NULL) allowed = !reads;
            else if (failing != NULL && strstr(failing, "HtoDAsync") != NULL) allowed = !writes;
            else allowed = 1;
            MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (!any) stest_fail("%s: no rank returned an error", c.label);
        }
        if (rc == MPI_SUCCESS && !allowed) stest_fail("%s: returned MPI_SUCCESS, expected an error", c.label);
        if (rc == MPI_SUCCESS) {
            printf("rank %d: %s: MPI_SUCCESS (its own copies worked)\n", g.rank, c.label);
            buf_done(&c, &sb);
            continue;
        }
        MPI_Error_string(rc, err, &len);
        printf("rank %d: %s: error as expected: %s\n", g.rank, c.label, err);
        g.checks[0] += g.rank == 0;
        /* sb and rb stay allocated: the failed call may still hold work on them. */
    }
    c.coll = coll_find("allreduce");
    c.red = &red_sum;
    c.skind = c.rkind = 'h';
    c.root = -1;
    c.count = 1021;
    MPI_Barrier(MPI_COMM_WORLD);
    run_check(&c, 0);
    if (g.rank == 0) printf("host-buffer MPI_Allreduce after the errors: ok\n");
}

/* ---- --mode repeat ---- */

/* Which collective --mode repeat calls: --only allreduce (default), bcast
 * (root 0) or allgather (--count elements per rank). */
static const char *repeat_coll(void)
{
    if (opt.only[0] == '\0') return "allreduce"; /* selected() takes every name then */
    if (selected("bcast")) return "bcast";
    if (selected("allgather")) return "allgather";
    return "allreduce";
}

static void run_repeat(void)
{
    const char *name = repeat_coll();
    int bcast = !strcmp(name, "bcast"), allgather = !strcmp(name, "allgather");
    check_t c = {.coll = coll_find(name), .comm = MPI_COMM_WORLD, .root = bcast ? 0 : -1};
    size_t n = (size_t)(opt.count ? opt.count : 2);
    size_t rn = allgather ? n * (size_t)g.size : n; /* the receive buffer's elements */
    int *pids = xmalloc(sizeof(int) * (size_t)g.size), pid = (int)getpid();
    buf_t sb = {0}, rb = {0};
    unsigned char *pre, *exp;
    void *s = MPI_IN_PLACE;

    c.skind = opt.kinds[0][0];
    c.rkind = opt.kinds[0][1];
    c.count = (int)n;
    c.rank = g.rank;
    c.size = g.size;
    c.inplace = opt.inplace && !bcast;
    c.red = c.inplace ? &red_int_max : &red_sum;
    c.esize = sizeof(int);
    c.seed = stest_mix64(++g.calls);
    snprintf(c.label, sizeof(c.label), "repeat %s%s %c%c count=%d inplace=%d calls=%ld", name,
             allgather || bcast ? "" : c.red->tag, c.skind, c.rkind, c.count, c.inplace, opt.calls);
    MPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (g.rank == 0) {
        for (int k = 0; k < g.size; k++) printf("rank %d pid %d\n", k, pids[k]);
    }
    free(pids);
    pre = img_new(&c, rn);
    if (bcast && c.rank == 0) img_inputs(&c, pre, 0, 0, 0, n); /* the root's buffer: its input */
    if (c.inplace && allgather) img_inputs(&c, pre, (size_t)c.rank * n, c.rank, 0, n);
    if (c.inplace && !allgather) img_inputs(&c, pre, 0, c.rank, 0, n);
    recv_buf(&c, &rb, c.rkind, pre, rn);
    if (!c.inplace && !bcast) s = send_buf(&c, &sb, n);
    stest_watchdog_arm(g.rank, c.label, opt.timeout);
    for (long i = 0; i < opt.calls; i++) {
        int rc = bcast ? MPI_Bcast(rb.mem.ptr, c.count, MPI_INT, 0, c.comm)
                 : allgather
                     ? MPI_Allgather(s, c.count, MPI_INT, rb.mem.ptr, c.count, MPI_INT, c.comm)
                     : MPI_Allreduce(s, rb.mem.ptr, c.count, MPI_INT, check_op(&c), c.comm);
        if (rc != MPI_SUCCESS) mpi_fail(&c, "the call", rc);
    }
    alarm(0);
    /* the reference, from the inputs: independent of the path */
    exp = img_new(&c, rn);
    if (bcast) {
        img_inputs(&c, exp, 0, 0, 0, n);
    } else if (allgather) {
        for (int k = 0; k < c.size; k++) img_inputs(&c, exp, (size_t)k * n, k, 0, n);
    } else {
        img_reduced(&c, exp, 0, 0, c.size, 0, n);
    }
    check_recv(&c, &rb, exp, 0, 0);
    buf_done(&c, &sb);
    g.checks[0]++;
    MPI_Barrier(MPI_COMM_WORLD);
    if (g.rank == 0) printf("%s: ok\n", c.label);
}

/* ---- --mode realloc ---- */

static void run_realloc(void)
{
    long rounds = (opt.calls > 0 && opt.calls != 100) ? opt.calls : 8, reused = 0;
    size_t base = (size_t)(opt.count ? opt.count : 65536);
    uintptr_t last_s = 0, last_r = 0;

    for (long i = 0; i < rounds; i++) {
        size_t n = (i % 3 == 2) ? base + base / 4 : base;
        check_t c = {.coll = coll_find("allreduce"), .comm = MPI_COMM_WORLD, .root = -1};
        buf_t sb = {0}, rb = {0};
        unsigned char *pre, *exp;
        void *s = MPI_IN_PLACE;
        int rc, again;

        c.skind = opt.kinds[0][0];
        c.rkind = opt.kinds[0][1];
        c.count = (int)n;
        c.rank = g.rank;
        c.size = g.size;
        c.inplace = opt.inplace;
        c.red = c.inplace ? &red_int_max : &red_sum;
        c.esize = sizeof(int);
        c.seed = stest_mix64(++g.calls); /* inputs new to the round */
        snprintf(c.label, sizeof(c.label), "realloc round %ld %s %c%c count=%d inplace=%d", i,
                 c.red->tag, c.skind, c.rkind, c.count, c.inplace);
        pre = img_new(&c, n);
        if (c.inplace) img_inputs(&c, pre, 0, c.rank, 0, n);
        recv_buf(&c, &rb, c.rkind, pre, n);
        if (!c.inplace) s = send_buf(&c, &sb, n);
        again = (uintptr_t)rb.mem.ptr == last_r || (!c.inplace && (uintptr_t)sb.mem.ptr == last_s);
        last_r = (uintptr_t)rb.mem.ptr;
        last_s = (uintptr_t)sb.mem.ptr;
        stest_watchdog_arm(g.rank, c.label, opt.timeout);
        rc = MPI_Allreduce(s, rb.mem.ptr, c.count, MPI_INT, check_op(&c), c.comm);
        alarm(0);
        if (rc != MPI_SUCCESS) mpi_fail(&c, "the call", rc);
        exp = img_new(&c, n);
        img_reduced(&c, exp, 0, 0, c.size, 0, n);
        check_recv(&c, &rb, exp, 0, 0); /* frees rb */
        buf_done(&c, &sb);
        MPI_Allreduce(MPI_IN_PLACE, &again, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        reused += again;
        g.checks[0]++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g.rank == 0) {
        printf("realloc: %ld of %ld rounds reused an address\n", reused, rounds);
        printf("realloc %c%c count=%zu inplace=%d rounds=%ld: ok\n", opt.kinds[0][0],
               opt.kinds[0][1], base, opt.inplace, rounds);
    }
}

/* ---- options, main ---- */

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
    if (g.rank == 0) {
        fprintf(stderr,
                "usage: " PROG " [--kinds dd,dh,hd,hh,mm,...] [--counts N,N,...] [--max-count N]\n"
                "       [--only allreduce,iallreduce,...] [--quiet] [--timeout S]\n"
                "       [--mode normal|deadlock|big|fault|repeat] [--count N] [--fresh]\n"
                "       [--calls N] [--inplace] [--cuda]\n");
    }
    MPI_Finalize();
    exit(2);
}

static void parse_kinds(const char *v)
{
    char tmp[64], *save = NULL;

    snprintf(tmp, sizeof(tmp), "%s", v);
    opt.nkinds = 0;
    for (char *t = strtok_r(tmp, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        if (strlen(t) != 2 || !strchr("dhmav", t[0]) || !strchr("dhmav", t[1]) ||
            opt.nkinds == MAX_KINDS)
            usage();
        memcpy(opt.kinds[opt.nkinds++], t, 3);
    }
    if (opt.nkinds == 0) usage();
}

static void parse_counts(const char *v)
{
    char tmp[256], *save = NULL, *end;

    snprintf(tmp, sizeof(tmp), "%s", v);
    opt.ncounts = 0;
    for (char *t = strtok_r(tmp, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        long n = strtol(t, &end, 10);
        if (*end != '\0' || n < 0 || n > INT_MAX / 4 || opt.ncounts == MAX_COUNTS) usage();
        opt.counts[opt.ncounts++] = n;
    }
}

static void parse_only(const char *v)
{
    char tmp[sizeof(opt.only)], *save = NULL;

    snprintf(tmp, sizeof(tmp), "%s", v);
    snprintf(opt.only, sizeof(opt.only), ",%s,", v);
    for (char *t = strtok_r(tmp, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        if (coll_find(t) == NULL && (t[0] != 'i' || coll_find(t + 1) == NULL)) {
            if (g.rank == 0) fprintf(stderr, PROG ": unknown collective '%s'\n", t);
            usage();
        }
    }
}

static void parse_options(int argc, char **argv)
{
    static const long default_counts[] = {0, 1, 7, 31, 1021, 300000};
    int have_kinds = 0, n = 0;

    opt.ncounts = (int)(sizeof(default_counts) / sizeof(default_counts[0]));
    memcpy(opt.counts, default_counts, sizeof(default_counts));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quiet")) {
            opt.quiet = 1;
            continue;
        }
        if (!strcmp(a, "--fresh")) {
            opt.fresh = 1;
            continue;
        }
        if (!strcmp(a, "--inplace")) {
            opt.inplace = 1;
            continue;
        }
        if (!strcmp(a, "--cuda")) {
            opt.cuda = 1;
            continue;
        }
        if (v == NULL) usage();
        i++;
        if (!strcmp(a, "--kinds")) parse_kinds(v), have_kinds = 1;
        else if (!strcmp(a, "--counts")) parse_counts(v);
        else if (!strcmp(a, "--max-count")) opt.max_count = strtol(v, NULL, 10);
        else if (!strcmp(a, "--only")) parse_only(v);
        else if (!strcmp(a, "--timeout")) opt.timeout = atoi(v);
        else if (!strcmp(a, "--count")) opt.count = strtol(v, NULL, 10);
        else if (!strcmp(a, "--calls")) opt.calls = strtol(v, NULL, 10);
        else if (!strcmp(a, "--mode")) {
            for (opt.mode = MODE_NORMAL;
                 opt.mode <= MODE_REALLOC && strcmp(v, mode_names[opt.mode]); opt.mode++) {
            }
            if (opt.mode > MODE_REALLOC) usage();
        } else {
            usage();
        }
    }
    if (!have_kinds) parse_kinds(opt.mode == MODE_NORMAL ? "dd,dh,hd,mm" : "dd");
    for (int i = 0; i < opt.ncounts; i++) {
        if (opt.counts[i] <= opt.max_count) opt.counts[n++] = opt.counts[i];
    }
    opt.ncounts = n;
    if (opt.timeout < 1 || opt.count < 0 || opt.count > INT_MAX || opt.calls < 1) usage();
}

int main(int argc, char **argv)
{
    int skip = 0, any_skip;
    long mine, total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    stest_mpi_init(g.rank, STEST_MPI_FAIL_FIRST);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    setvbuf(stdout, NULL, _IOLBF, 0);
    stest_watchdog_init();
    parse_options(argc, argv);
    if (opt.mode == MODE_DEADLOCK && g.size < 2) {
        if (g.rank == 0) fprintf(stderr, PROG ": --mode deadlock needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    if (opt.cuda || kinds_need_cuda()) skip = cuda_setup();
    MPI_Allreduce(&skip, &any_skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_skip) {
        MPI_Finalize();
        return EXIT_SKIP;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (opt.mode == MODE_NORMAL) run_normal();
    else if (opt.mode == MODE_DEADLOCK) run_deadlock();
    else if (opt.mode == MODE_BIG) run_big();
    else if (opt.mode == MODE_REPEAT) run_repeat();
    else if (opt.mode == MODE_REALLOC) run_realloc();
    else run_fault();

    /* Each split communicator's checks count once: its rank 0 reports them. */
    mine = (g.rank == 0 ? g.checks[0] : 0) + (g.split_rank == 0 ? g.checks[1] : 0);
    MPI_Reduce(&mine, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g.rank == 0) printf(PROG ": %ld checks passed\n", total);
    /* The context outlives MPI: the library may hold streams and mappings in
     * it until MPI_Finalize. */
    MPI_Finalize();
    if (g.cuda) stest_dev_close(&g.dev);
    return 0;
}
