/*
 * MPI point-to-point with GPU buffers, checked byte by byte:
 *   test_p2p_device [--alloc cumemalloc|vmm|async|host] [--max-size N]
 *                   [--iters N] [--timeout S] [--noncontig]
 * Ranks are paired i <-> i^1 (an odd last rank stays idle).  For every
 * direction device->device, host->device, device->host (the kinds of the
 * sending and the receiving buffer) and every size 0..--max-size (default
 * 64 MiB), each pair runs MPI_Send/MPI_Recv both ways, MPI_Isend/MPI_Irecv +
 * MPI_Waitall, and MPI_Sendrecv, --iters times (default 2, so the second
 * round reuses buffers a transport may have mapped, with new contents).
 * Destinations are filled with poison first; every byte is checked through
 * cuMemcpyDtoH, including a guard after the message that must keep the
 * poison.  The CPU never touches device memory, so the program is correct on
 * a real GPU.  Rank 0 prints one line per check ("sendrecv d->d 4096: ok"); the
 * first wrong byte prints rank, check, size, index, expected and got, and the
 * job aborts.  A check that takes more than --timeout s (default 60) prints
 * "hang" and exits 1.
 *
 * --noncontig runs only a vector datatype (MPI_Type_vector of MPI_INT) on
 * device buffers.  Open MPI without CUDA support packs non-contiguous data on
 * the CPU, which may crash on device memory; with MPI_ERRORS_RETURN set,
 * this prints either "noncontig ...: works" (blocks right, gaps untouched)
 * or "noncontig ...: fails with an MPI error: <string>", and exits 0 in both
 * cases; a crash is the job's crash.
 *
 * Exit 77 (all ranks): no CUDA device, or the device lacks what --alloc needs.
 */
#define _GNU_SOURCE
#include "stest_buf.h"
#include "stest_fail.h"
#include "stest_mpi.h"
#include "stest_pattern.h"
#include "stest_watchdog.h"

#include <mpi.h>

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define GUARD     64
#define EXIT_SKIP STEST_EXIT_SKIP

typedef enum { ALLOC_CUMEMALLOC, ALLOC_VMM, ALLOC_ASYNC, ALLOC_HOST } alloc_mode_t;
typedef enum { MEM_HOST, MEM_DEVICE } mem_kind_t;
typedef stest_buf_t test_buf_t;
static const char *alloc_names[] = {"cumemalloc", "vmm", "async", "host"};

static struct {
    alloc_mode_t alloc;
    size_t max_size;
    int iters, timeout, noncontig;
} opt = {.alloc = ALLOC_CUMEMALLOC, .max_size = 64u << 20, .iters = 2, .timeout = 60};

static struct {
    int rank, size, partner;
    stest_dev_t dev;
    uint8_t *stage;
    size_t stage_len;
} g;

/* ---- CUDA and buffers ---- */

static int device_allocs(void) { return opt.alloc != ALLOC_HOST; }

static int cuda_setup(void)
{
    int have = 1, a = 1, b = 1;

    if (!device_allocs()) return 0;
    if (stest_mpi_dev_open(&g.dev) != 0) return EXIT_SKIP;
    printf("rank %d: device %d of %d: %s, --alloc %s\n", g.rank, g.dev.index, g.dev.count, g.dev.name,
           alloc_names[opt.alloc]);
    if (opt.alloc == ALLOC_VMM) {
        STEST_CU(cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, g.dev.dev));
        STEST_CU(cuDeviceGetAttribute(&b, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, g.dev.dev));
    } else if (opt.alloc == ALLOC_ASYNC) {
        STEST_CU(cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, g.dev.dev));
        if (a) STEST_CU(cuStreamCreate(&g.dev.stream, CU_STREAM_NON_BLOCKING));
    }
    have = a && b;
    if (!have) printf("rank %d: skip: the device does not support --alloc %s\n", g.rank, alloc_names[opt.alloc]);
    return have ? 0 : EXIT_SKIP;
}

/* A buffer of the sending or receiving kind: device memory as --alloc says. */
static void buf_alloc(test_buf_t *b, mem_kind_t kind, size_t len)
{
    static const stest_mem_t alloc_mem[] = {STEST_MEM_DEVICE, STEST_MEM_VMM, STEST_MEM_ASYNC, STEST_MEM_HOST};

    stest_buf_alloc(b, kind == MEM_DEVICE ? alloc_mem[opt.alloc] : STEST_MEM_HOST, len, &g.dev);
}

static uint8_t *stage_get(size_t n)
{
    if (n > g.stage_len) {
        free(g.stage);
        g.stage = malloc(n);
        if (g.stage == NULL) stest_fail("cannot allocate %zu staging bytes", n);
        g.stage_len = n;
    }
    return g.stage;
}

/* ---- patterns ---- */

static uint64_t seed_of(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
    return stest_mix64(stest_mix64(stest_mix64(stest_mix64(stest_mix64(a) ^ b) ^ c) ^ d) ^ e);
}

/* Fills b[off, off + n) with the pattern's bytes off.. */
static void fill_pattern(test_buf_t *b, size_t off, size_t n, uint64_t seed)
{
    uint8_t *s = stage_get(n);
    if (n == 0) return;
    stest_hash_fill(s, n, seed, off);
    stest_buf_write(b, off, s, n);
}

/* Reads b[0, n) into the staging buffer. */
static const uint8_t *buf_contents(test_buf_t *b, size_t n)
{
    uint8_t *s = stage_get(n ? n : 1);
    if (n == 0) return s;
    stest_buf_read(b, 0, s, n);
    return s;
}

static void check_byte(const uint8_t *got, size_t i, uint64_t seed, const char *what, size_t size, const char *part)
{
    uint8_t want = stest_hash_byte(seed, i);
    if (got[i] != want) {
        stest_fail("%s size %zu: %s byte %zu: expected 0x%02x, got 0x%02x", what, size, part, i, want, got[i]);
    }
}

/* b[0, size) must be pattern `seed`, the guard after it pattern `poison`. */
static void check_recv(test_buf_t *b, size_t size, uint64_t seed, uint64_t poison, const char *what)
{
    static uint8_t *expect;
    static size_t expect_len;
    const uint8_t *got = buf_contents(b, size + GUARD);

    if (size > expect_len) {
        free(expect);
        expect = malloc(size);
        if (expect == NULL) stest_fail("cannot allocate %zu bytes", size);
        expect_len = size;
    }
    stest_hash_fill(expect, size, seed, 0);
    if (size > 0 && memcmp(got, expect, size) != 0) {
        for (size_t i = 0; i < size; i++) check_byte(got, i, seed, what, size, "message");
    }
    for (size_t i = size; i < size + GUARD; i++) check_byte(got, i, poison, what, size, "guard (after the message)");
}

/* ---- contiguous checks ---- */

typedef enum { M_SEND_RECV, M_NONBLOCKING, M_SENDRECV, M_COUNT } p2p_mode_t;
static const char *mode_names[] = {"send/recv", "isend/irecv", "sendrecv"};

static const struct { mem_kind_t src, dst; const char *name; } dirs[] = {
    {MEM_DEVICE, MEM_DEVICE, "d->d"},
    {MEM_HOST, MEM_DEVICE, "h->d"},
    {MEM_DEVICE, MEM_HOST, "d->h"},
};

/* The pattern rank `sender` sends in this round. */
static uint64_t round_seed(int mode, int d, size_t size, int it, int sender)
{
    return seed_of((uint64_t)mode, (uint64_t)d, size, (uint64_t)it, (uint64_t)sender);
}

static void mpi_check(int rc, const char *call, const char *what, size_t size)
{
    char err[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (rc == MPI_SUCCESS) return;
    MPI_Error_string(rc, err, &len);
    stest_fail("%s size %zu: %s: %s", what, size, call, err);
}

static void run_round(int mode, int d, size_t size, int it, test_buf_t *src, test_buf_t *dst)
{
    uint64_t mine = round_seed(mode, d, size, it, g.rank), theirs = round_seed(mode, d, size, it, g.partner);
    int count = (int)size, tag = mode * 16 + it, first = g.rank < g.partner;
    MPI_Request reqs[2];
    char what[96];

    snprintf(what, sizeof(what), "%s %s iter %d (rank %d <-> %d)", mode_names[mode], dirs[d].name, it, g.rank,
             g.partner);
    fill_pattern(src, 0, size + GUARD, mine);
    fill_pattern(dst, 0, size + GUARD, ~theirs);
    switch (mode) {
    case M_SEND_RECV:
        /* The lower rank sends first; each direction is checked. */
        for (int turn = 0; turn < 2; turn++) {
            if (first == !turn) {
                mpi_check(MPI_Send(src->ptr, count, MPI_BYTE, g.partner, tag, MPI_COMM_WORLD), "MPI_Send", what, size);
            } else {
                MPI_Status st;
                int got;
                mpi_check(MPI_Recv(dst->ptr, count, MPI_BYTE, g.partner, tag, MPI_COMM_WORLD, &st), "MPI_Recv", what,
                          size);
                MPI_Get_count(&st, MPI_BYTE, &got);
                if (got != count) stest_fail("%s size %zu: received %d bytes", what, size, got);
            }
        }
        break;
    case M_NONBLOCKING:
        mpi_check(MPI_Irecv(dst->ptr, count, MPI_BYTE, g.partner, tag, MPI_COMM_WORLD, &reqs[0]), "MPI_Irecv", what,
                  size);
        mpi_check(MPI_Isend(src->ptr, count, MPI_BYTE, g.partner, tag, MPI_COMM_WORLD, &reqs[1]), "MPI_Isend", what,
                  size);
        mpi_check(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall", what, size);
        break;
    default:
        mpi_check(MPI_Sendrecv(src->ptr, count, MPI_BYTE, g.partner, tag, dst->ptr, count, MPI_BYTE, g.partner, tag,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Sendrecv", what, size);
        break;
    }
    check_recv(dst, size, theirs, ~theirs, what);
}

static void run_contiguous(const size_t *sizes, int num_sizes)
{
    char what[96];

    for (int mode = 0; mode < M_COUNT; mode++) {
        for (int d = 0; d < 3; d++) {
            for (int s = 0; s < num_sizes; s++) {
                size_t size = sizes[s];
                snprintf(what, sizeof(what), "%s %s %zu", mode_names[mode], dirs[d].name, size);
                stest_watchdog_arm(g.rank, what, opt.timeout);
                if (g.partner >= 0) {
                    test_buf_t src, dst;
                    buf_alloc(&src, dirs[d].src, size + GUARD);
                    buf_alloc(&dst, dirs[d].dst, size + GUARD);
                    for (int it = 0; it < opt.iters; it++) run_round(mode, d, size, it, &src, &dst);
                    stest_buf_free(&src);
                    stest_buf_free(&dst);
                }
                MPI_Barrier(MPI_COMM_WORLD);
                alarm(0);
                if (g.rank == 0) printf("%s: ok\n", what);
            }
        }
    }
}

/* ---- non-contiguous ---- */

#define NC_BLOCK  3 /* ints per block */
#define NC_STRIDE 5 /* ints from one block's start to the next */

/* Returns 0 on success, else an MPI error code with its string in err. */
static int noncontig_exchange(int blocks, test_buf_t *src, test_buf_t *dst, char *err, int *timed_out)
{
    MPI_Datatype vec;
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int rc, done = 0, len;
    time_t deadline = time(NULL) + opt.timeout / 2;

    *timed_out = 0;
    MPI_Type_vector(blocks, NC_BLOCK, NC_STRIDE, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    rc = MPI_Irecv(dst->ptr, 1, vec, g.partner, 99, MPI_COMM_WORLD, &reqs[0]);
    if (rc == MPI_SUCCESS) rc = MPI_Isend(src->ptr, 1, vec, g.partner, 99, MPI_COMM_WORLD, &reqs[1]);
    while (rc == MPI_SUCCESS && !done) {
        rc = MPI_Testall(2, reqs, &done, MPI_STATUSES_IGNORE);
        if (!done && time(NULL) > deadline) {
            *timed_out = 1;
            break;
        }
    }
    MPI_Type_free(&vec);
    if (rc != MPI_SUCCESS || *timed_out) {
        if (rc != MPI_SUCCESS) MPI_Error_string(rc, err, &len);
        for (int i = 0; i < 2; i++) {
            if (reqs[i] != MPI_REQUEST_NULL) {
                MPI_Cancel(&reqs[i]);
                MPI_Request_free(&reqs[i]);
            }
        }
    }
    return rc;
}

static void noncontig_check(test_buf_t *dst, size_t extent, uint64_t seed, uint64_t poison, const char *what)
{
    const uint8_t *got = buf_contents(dst, extent + GUARD);
    for (size_t i = 0; i < extent + GUARD; i++) {
        size_t in_stride = (i / sizeof(int)) % NC_STRIDE;
        int in_block = i < extent && in_stride < NC_BLOCK;
        check_byte(got, i, in_block ? seed : poison, what, extent, in_block ? "block" : "gap");
    }
}

/*
 * Two receives into one device buffer whose vector types interleave: the
 * first takes the blocks, the second the gaps between them.  Each staged
 * receive holds the other's bytes in its span; neither may write them back.
 */
static int noncontig_interleaved(int blocks, test_buf_t *src, test_buf_t *dst, char *err)
{
    MPI_Datatype blocks_t, gaps_t;
    MPI_Request reqs[4];
    int rc, len;
    char *s = src->ptr, *d = dst->ptr;

    MPI_Type_vector(blocks, NC_BLOCK, NC_STRIDE, MPI_INT, &blocks_t);
    MPI_Type_vector(blocks - 1, NC_STRIDE - NC_BLOCK, NC_STRIDE, MPI_INT, &gaps_t);
    MPI_Type_commit(&blocks_t);
    MPI_Type_commit(&gaps_t);
    MPI_Irecv(d, 1, blocks_t, g.partner, 97, MPI_COMM_WORLD, &reqs[0]);
    MPI_Irecv(d + NC_BLOCK * sizeof(int), 1, gaps_t, g.partner, 98, MPI_COMM_WORLD, &reqs[1]);
    /* The gaps go first, so the receive that finishes last is the blocks'. */
    MPI_Isend(s + NC_BLOCK * sizeof(int), 1, gaps_t, g.partner, 98, MPI_COMM_WORLD, &reqs[2]);
    MPI_Isend(s, 1, blocks_t, g.partner, 97, MPI_COMM_WORLD, &reqs[3]);
    rc = MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
    MPI_Type_free(&blocks_t);
    MPI_Type_free(&gaps_t);
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, err, &len);
    return rc;
}

static int run_noncontig_interleaved(void)
{
    const int blocks = 1000;
    size_t extent    = ((size_t)(blocks - 1) * NC_STRIDE + NC_BLOCK) * sizeof(int);
    uint64_t mine    = seed_of(8, (uint64_t)blocks, 0, 0, (uint64_t)g.rank);
    uint64_t theirs  = seed_of(8, (uint64_t)blocks, 0, 0, (uint64_t)g.partner);
    char what[96], err[MPI_MAX_ERROR_STRING] = "";
    int rc = MPI_SUCCESS, any;

    snprintf(what, sizeof(what), "noncontig d->d two interleaved vector receives (%d blocks)", blocks);
    stest_watchdog_arm(g.rank, what, opt.timeout);
    if (g.partner >= 0) {
        test_buf_t src, dst;
        buf_alloc(&src, MEM_DEVICE, extent + GUARD);
        buf_alloc(&dst, MEM_DEVICE, extent + GUARD);
        fill_pattern(&src, 0, extent + GUARD, mine);
        fill_pattern(&dst, 0, extent + GUARD, ~theirs);
        rc = noncontig_interleaved(blocks, &src, &dst, err);
        if (rc == MPI_SUCCESS) {
            const uint8_t *got = buf_contents(&dst, extent + GUARD);
            for (size_t i = 0; i < extent + GUARD; i++) {
                check_byte(got, i, i < extent ? theirs : ~theirs, what, extent,
                           i < extent ? "data" : "guard");
            }
        } else {
            printf("rank %d: %s: MPI error: %s\n", g.rank, what, err);
        }
        stest_buf_free(&src);
        stest_buf_free(&dst);
    }
    MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    alarm(0);
    if (g.rank == 0) printf("%s: %s\n", what, any == MPI_SUCCESS ? "works" : "fails with an MPI error");
    return any != MPI_SUCCESS;
}

static int run_noncontig(void)
{
    static const int block_counts[] = {1, 100, 100000};
    char what[96], err[MPI_MAX_ERROR_STRING] = "";

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (unsigned c = 0; c < sizeof(block_counts) / sizeof(block_counts[0]); c++) {
        int blocks = block_counts[c], rc = MPI_SUCCESS, timed_out = 0, outcome = 0, any;
        size_t extent = ((size_t)(blocks - 1) * NC_STRIDE + NC_BLOCK) * sizeof(int);
        uint64_t mine = seed_of(7, (uint64_t)blocks, 0, 0, (uint64_t)g.rank);
        uint64_t theirs = seed_of(7, (uint64_t)blocks, 0, 0, (uint64_t)g.partner);

        snprintf(what, sizeof(what), "noncontig d->d vector(%d x %d of %d MPI_INT)", blocks, NC_BLOCK, NC_STRIDE);
        stest_watchdog_arm(g.rank, what, opt.timeout);
        if (g.partner >= 0) {
            test_buf_t src, dst;
            buf_alloc(&src, MEM_DEVICE, extent + GUARD);
            buf_alloc(&dst, MEM_DEVICE, extent + GUARD);
            fill_pattern(&src, 0, extent + GUARD, mine);
            fill_pattern(&dst, 0, extent + GUARD, ~theirs);
            rc = noncontig_exchange(blocks, &src, &dst, err, &timed_out);
            if (rc == MPI_SUCCESS && !timed_out) noncontig_check(&dst, extent, theirs, ~theirs, what);
            outcome = timed_out ? 2 : rc != MPI_SUCCESS ? 1 : 0;
            if (outcome == 1) printf("rank %d: %s: MPI error: %s\n", g.rank, what, err);
            if (outcome == 2) printf("rank %d: %s: no completion within %d s\n", g.rank, what, opt.timeout / 2);
            if (outcome == 0) {
                stest_buf_free(&src);
                stest_buf_free(&dst);
            }
        }
        MPI_Allreduce(&outcome, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        alarm(0);
        if (g.rank == 0) {
            if (any == 0) printf("%s: works\n", what);
            else printf("%s: fails with an MPI error%s\n", what, any == 2 ? " on one rank (its peer hung)" : "");
        }
        if (any != 0) return any;
    }
    return run_noncontig_interleaved();
}

/* ---- options, main ---- */

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    size_t mult = 1;
    if (!strncasecmp(end, "k", 1)) mult = 1u << 10;
    else if (!strncasecmp(end, "m", 1)) mult = 1u << 20;
    else if (!strncasecmp(end, "g", 1)) mult = 1u << 30;
    return (size_t)(v * (double)mult);
}

static void parse_options(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--alloc")) {
            for (opt.alloc = 0; opt.alloc <= ALLOC_HOST && strcmp(v, alloc_names[opt.alloc]); opt.alloc++) {
            }
            if (opt.alloc > ALLOC_HOST) goto usage;
            i++;
        } else if (!strcmp(a, "--max-size")) {
            opt.max_size = parse_size(v);
            i++;
        } else if (!strcmp(a, "--iters")) {
            opt.iters = atoi(v);
            i++;
        } else if (!strcmp(a, "--timeout")) {
            opt.timeout = atoi(v);
            i++;
        } else if (!strcmp(a, "--noncontig")) {
            opt.noncontig = 1;
        } else {
            goto usage;
        }
    }
    if (opt.iters >= 1 && opt.timeout >= 2) return;
usage:
    if (g.rank == 0) {
        fprintf(stderr, "usage: test_p2p_device [--alloc cumemalloc|vmm|async|host] [--max-size N] [--iters N]\n"
                        "       [--timeout S] [--noncontig]\n");
    }
    MPI_Finalize();
    exit(2);
}

int main(int argc, char **argv)
{
    static const size_t all_sizes[] = {0, 1, 7, 8, 63, 64, 4095, 4096, 8191, 65536, 65537,
                                       (1u << 20) + 3, 4u << 20, 16u << 20, 64u << 20};
    size_t sizes[sizeof(all_sizes) / sizeof(all_sizes[0])];
    int num_sizes = 0, skip, any_skip;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    setvbuf(stdout, NULL, _IOLBF, 0);
    stest_mpi_init(g.rank, STEST_MPI_FAIL_RANK_FIRST);
    stest_watchdog_init();
    parse_options(argc, argv);
    if (g.size < 2) {
        if (g.rank == 0) fprintf(stderr, "test_p2p_device: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    g.partner = (g.rank ^ 1) < g.size ? g.rank ^ 1 : -1;
    if (g.partner < 0) printf("rank %d: idle (odd number of ranks)\n", g.rank);

    skip = cuda_setup();
    MPI_Allreduce(&skip, &any_skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_skip) {
        MPI_Finalize();
        return EXIT_SKIP;
    }
    for (unsigned i = 0; i < sizeof(all_sizes) / sizeof(all_sizes[0]); i++) {
        if (all_sizes[i] <= opt.max_size) sizes[num_sizes++] = all_sizes[i];
    }
    if (opt.noncontig) {
        /* After an MPI error, buffers may still be in use by requests that
         * were cancelled: leave the context alone. */
        if (run_noncontig() != 0) {
            MPI_Finalize();
            return 0;
        }
    } else {
        run_contiguous(sizes, num_sizes);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g.rank == 0) printf("test_p2p_device: all checks passed\n");
    /* The context outlives MPI: the transport may still hold streams and
     * mappings in it until MPI_Finalize. */
    MPI_Finalize();
    if (device_allocs()) stest_dev_close(&g.dev);
    return 0;
}
