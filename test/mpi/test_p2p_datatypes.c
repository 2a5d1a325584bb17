/*
 * Non-contiguous MPI datatypes on GPU buffers, point to point, checked
 * against Open MPI's own pack and unpack of host copies:
 *   test_p2p_datatypes [--types LIST] [--counts LIST] [--dirs LIST]
 *                      [--expect ok|recv-error|send-zeros] [--timeout S]
 *   test_p2p_datatypes --sparse MIB | --timed NAME [--max-peak-mib N] [--timeout S]
 *
 * Default: ranks paired i <-> i^1 exchange (MPI_Irecv, MPI_Isend, MPI_Wait
 * on each) every datatype of types[] below, counts 0, 1 and 3, in every
 * direction d->d, h->d, d->h, h->h (kinds of the sending and receiving
 * buffer).  The send buffer holds a pattern, the receive buffer poison;
 * afterwards every byte of the receive buffer's region, a guard either side
 * included, must equal the poison with MPI_Unpack(MPI_Pack(the partner's
 * pattern)) applied on the host: the data arrived, and the gaps between
 * runs kept their bytes.
 *
 * --expect recv-error: the device's receive copies fail (CUDA_STANDIN_FAIL):
 * every receive into device memory must end with an MPI error, every other
 * operation must succeed with the right bytes.  --expect send-zeros: reading
 * the device fails: every operation completes, and what a device buffer sent
 * arrives as zeros (gaps still untouched).  Both then check that
 * MPI_COMM_WORLD still works.
 *
 * --sparse MIB: a vector of 2 x 2 MPI_INT whose blocks lie MIB MiB apart (16
 * bytes of data), sent device to device from rank 0 to 1 and back, the
 * message arrived (MPI_Probe) before the receive starts.  Each rank prints
 * the time of its MPI_Send and MPI_Recv and the peak of its resident memory
 * over what it was before each (VmHWM, reset through /proc/self/clear_refs);
 * above --max-peak-mib (default 32) fails: the span must not be staged.
 * Only the bytes around the blocks are filled and checked.  --timed NAME:
 * the same for one element of the table's datatype NAME, every byte checked.
 *
 * Output: rank 0 prints one line per check ("vector count 3 d->d: ok"); the
 * first wrong byte prints rank, check, index, expected and got, and the job
 * aborts.  Exit 77 (all ranks): no CUDA device.
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
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GUARD     64
#define EXIT_SKIP STEST_EXIT_SKIP

static struct {
    const char *types, *counts, *dirs, *expect, *timed;
    int timeout;
    size_t sparse_mib, max_peak_mib;
} opt = {.counts = "0,1,3", .dirs = "d->d,h->d,d->h,h->h", .expect = "ok", .timeout = 60,
         .max_peak_mib = 32};

static struct {
    int rank, size, partner;
    stest_dev_t dev;
} g;

/* ---- datatypes ---- */

typedef struct gappy {
    char c;
    double d;
    int i[3];
    short s;
} gappy_t;

static MPI_Datatype type_vector(void)
{
    MPI_Datatype t;
    MPI_Type_vector(100, 3, 5, MPI_INT, &t);
    return t;
}

/* 4-byte runs 4 bytes apart: a send reads them in few copies */
static MPI_Datatype type_vector_dense(void)
{
    MPI_Datatype t;
    MPI_Type_vector(5000, 1, 2, MPI_INT, &t);
    return t;
}

/* runs longer than a UCX fragment, split across packs */
static MPI_Datatype type_vector_long_runs(void)
{
    MPI_Datatype t;
    MPI_Type_vector(4, 20000, 30000, MPI_BYTE, &t);
    return t;
}

/* 4 MiB of data in 2 KiB runs: a rendezvous message, many fragments */
static MPI_Datatype type_vector_4mib(void)
{
    MPI_Datatype t;
    MPI_Type_vector(2048, 512, 1024, MPI_INT, &t);
    return t;
}

/* a block far out first, then back to the start; one block empty */
static MPI_Datatype type_indexed(void)
{
    int lens[]  = {3, 2, 0, 5, 1};
    int disps[] = {1000, 0, 5, 7, 40};
    MPI_Datatype t;
    MPI_Type_indexed(5, lens, disps, MPI_DOUBLE, &t);
    return t;
}

/* a C struct's members: padding after c and after s */
static MPI_Datatype type_struct_gaps(void)
{
    int lens[]             = {1, 1, 3, 1};
    MPI_Aint disps[]       = {offsetof(gappy_t, c), offsetof(gappy_t, d), offsetof(gappy_t, i),
                              offsetof(gappy_t, s)};
    MPI_Datatype members[] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
    MPI_Datatype s, t;
    MPI_Type_create_struct(4, lens, disps, members, &s);
    MPI_Type_create_resized(s, 0, sizeof(gappy_t), &t);
    MPI_Type_free(&s);
    return t;
}

/* elements 80 bytes apart, each 4 x 2 of 3 MPI_INT: room between them */
static MPI_Datatype type_resized(void)
{
    MPI_Datatype v, t;
    MPI_Type_vector(4, 2, 3, MPI_INT, &v);
    MPI_Type_create_resized(v, -8, 80, &t);
    MPI_Type_free(&v);
    return t;
}

/* blocks at decreasing addresses */
static MPI_Datatype type_negative_stride(void)
{
    MPI_Datatype t;
    MPI_Type_create_hvector(50, 2, -24, MPI_INT, &t);
    return t;
}

/* elements at decreasing addresses: the second element lies below the first */
static MPI_Datatype type_negative_extent(void)
{
    MPI_Datatype c, t;
    MPI_Type_contiguous(3, MPI_INT, &c);
    MPI_Type_create_resized(c, 0, -20, &t);
    MPI_Type_free(&c);
    return t;
}

static const struct {
    const char *name;
    MPI_Datatype (*make)(void);
} types[] = {
    {"vector", type_vector},
    {"vector_dense", type_vector_dense},
    {"vector_long_runs", type_vector_long_runs},
    {"vector_4mib", type_vector_4mib},
    {"indexed", type_indexed},
    {"struct_gaps", type_struct_gaps},
    {"resized", type_resized},
    {"negative_stride", type_negative_stride},
    {"negative_extent", type_negative_extent},
};
#define NUM_TYPES (sizeof(types) / sizeof(types[0]))

/* The bytes `count` elements touch, relative to the buffer: [*lo, *hi). */
static void type_region(MPI_Datatype t, int count, MPI_Aint *lo, MPI_Aint *hi)
{
    MPI_Aint lb, extent, true_lb, true_extent, n = count > 0 ? count : 1;

    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Type_get_true_extent(t, &true_lb, &true_extent);
    *lo = true_lb + (extent < 0 ? (n - 1) * extent : 0);
    *hi = true_lb + true_extent + (extent > 0 ? (n - 1) * extent : 0);
}

/* ---- buffers ---- */

typedef struct test_buf {
    stest_buf_t mem; /* GUARD bytes before the region */
    size_t len;      /* region plus both guards */
    MPI_Aint lo;     /* the region starts at buffer + lo */
} test_buf_t;

static void *buf_ptr(const test_buf_t *b)
{
    return (char *)b->mem.ptr + GUARD - b->lo;
}

static void buf_alloc(test_buf_t *b, int on_device, MPI_Aint lo, MPI_Aint hi)
{
    b->lo  = lo;
    b->len = (size_t)(hi - lo) + 2 * GUARD;
    stest_buf_alloc(&b->mem, on_device ? STEST_MEM_DEVICE : STEST_MEM_HOST, b->len, &g.dev);
}

static void buf_free(test_buf_t *b)
{
    stest_buf_free(&b->mem);
}

static void buf_write(test_buf_t *b, size_t off, const void *src, size_t n)
{
    stest_buf_write(&b->mem, off, src, n);
}

static void buf_read(const test_buf_t *b, size_t off, void *dst, size_t n)
{
    stest_buf_read(&b->mem, off, dst, n);
}

/* ---- patterns ---- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) stest_fail("cannot allocate %zu bytes", n);
    return p;
}

/* ---- checks ---- */

static const char *dir_names[] = {"d->d", "h->d", "d->h", "h->h"};

static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p != NULL && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0')) return 1;
    }
    return 0;
}

static void mpi_error_string(int rc, char *err)
{
    int len = 0;
    MPI_Error_string(rc, err, &len);
}

/* What rank `from` sends in this check, and the receive buffer's poison. */
static uint64_t case_seed(unsigned t, int count, int d, int from)
{
    return stest_mix64(stest_mix64(stest_mix64((uint64_t)t * 131 + (uint64_t)count) ^ (uint64_t)d) ^ (uint64_t)from);
}

/* The receive buffer as it must be: poison, with the partner's data
 * unpacked into it on the host (zeros for data a failed read could not
 * deliver). */
static char *expected_recv(MPI_Datatype t, int count, const test_buf_t *rb, uint64_t src_seed,
                           uint64_t poison, int zeros)
{
    char *src = xmalloc(rb->len), *want = xmalloc(rb->len), *packed;
    int size, pos = 0;

    stest_hash_fill((uint8_t *)src, rb->len, src_seed, 0);
    stest_hash_fill((uint8_t *)want, rb->len, poison, 0);
    MPI_Pack_size(count, t, MPI_COMM_SELF, &size);
    packed = xmalloc((size_t)size);
    MPI_Pack(src + GUARD - rb->lo, count, t, packed, size, &pos, MPI_COMM_SELF);
    if (zeros) memset(packed, 0, (size_t)pos);
    size = pos;
    pos  = 0;
    MPI_Unpack(packed, size, &pos, want + GUARD - rb->lo, count, t, MPI_COMM_SELF);
    free(packed);
    free(src);
    return want;
}

static void check_recv(MPI_Datatype t, int count, const test_buf_t *rb, uint64_t src_seed,
                       uint64_t poison, int zeros, const char *what)
{
    char *want = expected_recv(t, count, rb, src_seed, poison, zeros), *got = xmalloc(rb->len),
         *before = xmalloc(rb->len);

    buf_read(rb, 0, got, rb->len);
    stest_hash_fill((uint8_t *)before, rb->len, poison, 0);
    for (size_t i = 0; i < rb->len; i++) {
        if (got[i] != want[i]) {
            stest_fail("%s: receive buffer byte %zd (%s): expected 0x%02x, got 0x%02x", what,
                 (ptrdiff_t)i - GUARD + rb->lo, want[i] == before[i] ? "gap, must keep its byte" : "data",
                 (unsigned char)want[i], (unsigned char)got[i]);
        }
    }
    free(before);
    free(got);
    free(want);
}

/* One exchange with the partner, checked. */
static void run_case(unsigned t, MPI_Datatype type, int count, int d, const char *what)
{
    int send_dev = d == 0 || d == 2, recv_dev = d == 0 || d == 1;
    int want_recv_error = !strcmp(opt.expect, "recv-error") && recv_dev;
    int zeros           = !strcmp(opt.expect, "send-zeros") && send_dev;
    uint64_t mine = case_seed(t, count, d, g.rank), theirs = case_seed(t, count, d, g.partner);
    char err[MPI_MAX_ERROR_STRING], *fill;
    MPI_Request rreq, sreq;
    test_buf_t sb, rb;
    MPI_Aint lo, hi;
    int rc_recv, rc_send;

    type_region(type, count, &lo, &hi);
    buf_alloc(&sb, send_dev, lo, hi);
    buf_alloc(&rb, recv_dev, lo, hi);
    fill = xmalloc(sb.len);
    stest_hash_fill((uint8_t *)fill, sb.len, mine, 0);
    buf_write(&sb, 0, fill, sb.len);
    stest_hash_fill((uint8_t *)fill, rb.len, ~theirs, 0);
    buf_write(&rb, 0, fill, rb.len);
    free(fill);

    rc_recv = MPI_Irecv(buf_ptr(&rb), count, type, g.partner, (int)t, MPI_COMM_WORLD, &rreq);
    rc_send = MPI_Isend(buf_ptr(&sb), count, type, g.partner, (int)t, MPI_COMM_WORLD, &sreq);
    if (rc_recv != MPI_SUCCESS || rc_send != MPI_SUCCESS) stest_fail("%s: MPI_Irecv/MPI_Isend failed", what);
    rc_send = MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    rc_recv = MPI_Wait(&rreq, MPI_STATUS_IGNORE);
    if (rc_send != MPI_SUCCESS) {
        mpi_error_string(rc_send, err);
        stest_fail("%s: the send failed: %s", what, err);
    }
    if (want_recv_error && count > 0) {
        if (rc_recv == MPI_SUCCESS) stest_fail("%s: the receive succeeded, expected an MPI error", what);
        mpi_error_string(rc_recv, err);
        if (g.rank == 0) printf("%s: the receive fails with an MPI error: %s\n", what, err);
    } else if (rc_recv != MPI_SUCCESS) {
        mpi_error_string(rc_recv, err);
        stest_fail("%s: the receive failed: %s", what, err);
    } else {
        check_recv(type, count, &rb, theirs, ~theirs, zeros, what);
    }
    buf_free(&sb);
    buf_free(&rb);
}

static void run_cases(void)
{
    char what[128], counts[64], *c, *save;
    int checks = 0;

    for (unsigned t = 0; t < NUM_TYPES; t++) {
        MPI_Datatype type;
        if (opt.types && !listed(opt.types, types[t].name)) continue;
        type = types[t].make();
        MPI_Type_commit(&type);
        snprintf(counts, sizeof(counts), "%s", opt.counts);
        for (c = strtok_r(counts, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
            int count = atoi(c);
            for (int d = 0; d < 4; d++) {
                if (!listed(opt.dirs, dir_names[d])) continue;
                snprintf(what, sizeof(what), "%s count %d %s", types[t].name, count, dir_names[d]);
                stest_watchdog_arm(g.rank, what, opt.timeout);
                if (g.partner >= 0) run_case(t, type, count, d, what);
                MPI_Barrier(MPI_COMM_WORLD);
                alarm(0);
                if (g.rank == 0) printf("%s: ok\n", what);
                checks++;
            }
        }
        MPI_Type_free(&type);
    }
    if (g.rank == 0) printf("test_p2p_datatypes: %d checks passed (--expect %s)\n", checks, opt.expect);
}

/* ---- a sparse span ---- */

static size_t status_kib(const char *key)
{
    char line[256];
    size_t kib = 0, n = strlen(key);
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof(line), f)) {
        if (!strncmp(line, key, n)) kib = strtoul(line + n, NULL, 10);
    }
    if (f) fclose(f);
    return kib;
}

/* Resets the peak to the current size; 0 if the kernel cannot. */
static int peak_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    int ok  = f && fputs("5", f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    return ok;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define WINDOW 4096

/* The two windows of a sparse buffer, around its blocks at 0 and stride:
 * where each starts in the allocation, and where its block lies in it. */
static size_t window_at(int w, size_t stride) { return w == 0 ? 0 : GUARD + stride - WINDOW / 2; }
static size_t window_block(int w) { return w == 0 ? GUARD : WINDOW / 2; }

static void sparse_fill(test_buf_t *b, size_t stride, uint64_t seed)
{
    char *p = xmalloc(WINDOW);

    for (int w = 0; w < 2; w++) {
        stest_hash_fill((uint8_t *)p, WINDOW, seed + (uint64_t)w * 977, 0);
        buf_write(b, window_at(w, stride), p, WINDOW);
    }
    free(p);
}

/* The receive buffer's windows: its poison, with the partner's 2 x 8 bytes. */
static void sparse_check(const test_buf_t *rb, size_t stride, uint64_t poison, uint64_t src_seed,
                         const char *what)
{
    char *want = xmalloc(WINDOW), *src = xmalloc(WINDOW), *got = xmalloc(WINDOW);

    for (int w = 0; w < 2; w++) {
        size_t at = window_block(w);
        stest_hash_fill((uint8_t *)want, WINDOW, poison + (uint64_t)w * 977, 0);
        stest_hash_fill((uint8_t *)src, WINDOW, src_seed + (uint64_t)w * 977, 0);
        memcpy(want + at, src + at, 2 * sizeof(int));
        buf_read(rb, window_at(w, stride), got, WINDOW);
        for (size_t i = 0; i < WINDOW; i++) {
            if (got[i] != want[i]) {
                stest_fail("%s: receive buffer byte %zd (%s): expected 0x%02x, got 0x%02x", what,
                     (ptrdiff_t)(window_at(w, stride) + i) - GUARD,
                     i >= at && i < at + 2 * sizeof(int) ? "data" : "gap, must keep its byte",
                     (unsigned char)want[i], (unsigned char)got[i]);
            }
        }
    }
    free(want);
    free(src);
    free(got);
}

/* One message from `sender` to the other rank: the caller's time in its
 * MPI call and peak memory over its resident size before. */
static void one_way(MPI_Datatype type, int sender, test_buf_t *sb, test_buf_t *rb, double *secs,
                    size_t *peak_kib)
{
    MPI_Status st;
    size_t rss, hwm;
    double t0;
    int rc;

    MPI_Barrier(MPI_COMM_WORLD);
    if (!peak_reset()) stest_fail("cannot reset the peak memory (/proc/self/clear_refs)");
    rss = status_kib("VmRSS:");
    if (g.rank == sender) {
        t0    = now();
        rc    = MPI_Send(buf_ptr(sb), 1, type, g.partner, 5, MPI_COMM_WORLD);
        *secs = now() - t0;
        if (rc != MPI_SUCCESS) stest_fail("one way: MPI_Send failed");
    } else {
        /* the message is here: the receive's time is its own work */
        MPI_Probe(g.partner, 5, MPI_COMM_WORLD, &st);
        t0    = now();
        rc    = MPI_Recv(buf_ptr(rb), 1, type, g.partner, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        *secs = now() - t0;
        if (rc != MPI_SUCCESS) stest_fail("one way: MPI_Recv failed");
    }
    /* The kernel's RSS counters are per-thread caches synced lazily: the
     * peak can read a little below the size read before; that is no
     * growth, not a huge unsigned one. */
    hwm = status_kib("VmHWM:");
    *peak_kib = (hwm > rss) ? hwm - rss : 0;
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Rank 0 sends to rank 1, then back: each rank's send and receive figures,
 * judged against --max-peak-mib. */
static void both_ways(MPI_Datatype type, test_buf_t *sb, test_buf_t *rb, const char *what)
{
    size_t peak[2] = {0, 0};
    double secs[2] = {0, 0};

    for (int sender = 0; sender < 2; sender++) {
        int role = g.rank == sender ? 0 : 1; /* 0: sends, 1: receives */
        one_way(type, sender, sb, rb, &secs[role], &peak[role]);
    }
    printf("rank %d: %s: send %.3f ms, peak +%.1f MiB; receive %.3f ms, peak +%.1f MiB\n", g.rank,
           what, 1e3 * secs[0], (double)peak[0] / 1024, 1e3 * secs[1], (double)peak[1] / 1024);
    for (int role = 0; role < 2; role++) {
        if (peak[role] > opt.max_peak_mib << 10) {
            stest_fail("%s: the %s raised the peak memory by %.1f MiB (limit %zu MiB): the span was staged",
                 what, role ? "receive" : "send", (double)peak[role] / 1024, opt.max_peak_mib);
        }
    }
}

static void run_sparse(void)
{
    size_t stride   = opt.sparse_mib << 20;
    uint64_t mine   = stest_mix64(42 + (uint64_t)g.rank), theirs = stest_mix64(42 + (uint64_t)g.partner);
    MPI_Datatype vec;
    test_buf_t sb, rb;
    char what[96];

    snprintf(what, sizeof(what), "sparse: 16 bytes over %zu MiB d->d", opt.sparse_mib);
    stest_watchdog_arm(g.rank, what, opt.timeout);
    MPI_Type_vector(2, 2, (int)(stride / sizeof(int)), MPI_INT, &vec);
    MPI_Type_commit(&vec);
    buf_alloc(&sb, 1, 0, (MPI_Aint)(stride + WINDOW));
    buf_alloc(&rb, 1, 0, (MPI_Aint)(stride + WINDOW));
    sparse_fill(&sb, stride, mine);
    sparse_fill(&rb, stride, ~mine);
    both_ways(vec, &sb, &rb, what);
    sparse_check(&rb, stride, ~mine, theirs, what);
    MPI_Barrier(MPI_COMM_WORLD);
    alarm(0);
    if (g.rank == 0) printf("%s: ok\n", what);
    buf_free(&sb);
    buf_free(&rb);
    MPI_Type_free(&vec);
}

/* --timed NAME: one element of a datatype of the table, d->d, both ways. */
static void run_timed(void)
{
    unsigned t;
    uint64_t mine, theirs;
    MPI_Datatype type;
    test_buf_t sb, rb;
    MPI_Aint lo, hi;
    char what[96], *fill;

    for (t = 0; t < NUM_TYPES && strcmp(types[t].name, opt.timed); t++) {
    }
    if (t == NUM_TYPES) stest_fail("--timed: no datatype named %s", opt.timed);
    mine   = case_seed(t, 1, 0, g.rank);
    theirs = case_seed(t, 1, 0, g.partner);
    snprintf(what, sizeof(what), "%s count 1 d->d one way", opt.timed);
    stest_watchdog_arm(g.rank, what, opt.timeout);
    type = types[t].make();
    MPI_Type_commit(&type);
    type_region(type, 1, &lo, &hi);
    buf_alloc(&sb, 1, lo, hi);
    buf_alloc(&rb, 1, lo, hi);
    fill = xmalloc(sb.len);
    stest_hash_fill((uint8_t *)fill, sb.len, mine, 0);
    buf_write(&sb, 0, fill, sb.len);
    stest_hash_fill((uint8_t *)fill, rb.len, ~mine, 0);
    buf_write(&rb, 0, fill, rb.len);
    free(fill);
    both_ways(type, &sb, &rb, what);
    check_recv(type, 1, &rb, theirs, ~mine, 0, what);
    MPI_Barrier(MPI_COMM_WORLD);
    alarm(0);
    if (g.rank == 0) printf("%s: ok\n", what);
    buf_free(&sb);
    buf_free(&rb);
    MPI_Type_free(&type);
}

/* ---- after a failure: the communicator still works ---- */

static void check_world_works(void)
{
    int one = 1, sum = 0;

    if (MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS || sum != g.size) {
        stest_fail("MPI_COMM_WORLD no longer works: allreduce gave %d, expected %d", sum, g.size);
    }
    if (g.rank == 0) printf("MPI_COMM_WORLD still works\n");
}

/* ---- options, main ---- */

static void parse_options(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) goto usage;
        if (!strcmp(a, "--types")) opt.types = v;
        else if (!strcmp(a, "--counts")) opt.counts = v;
        else if (!strcmp(a, "--dirs")) opt.dirs = v;
        else if (!strcmp(a, "--expect")) opt.expect = v;
        else if (!strcmp(a, "--timeout")) opt.timeout = atoi(v);
        else if (!strcmp(a, "--sparse")) opt.sparse_mib = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--timed")) opt.timed = v;
        else if (!strcmp(a, "--max-peak-mib")) opt.max_peak_mib = strtoul(v, NULL, 10);
        else goto usage;
        i++;
    }
    if (opt.timeout >= 1 && (!strcmp(opt.expect, "ok") || !strcmp(opt.expect, "recv-error") ||
                             !strcmp(opt.expect, "send-zeros"))) {
        return;
    }
usage:
    if (g.rank == 0) {
        fprintf(stderr, "usage: test_p2p_datatypes [--types LIST] [--counts LIST] [--dirs LIST]\n"
                        "         [--expect ok|recv-error|send-zeros] [--timeout S]\n"
                        "       test_p2p_datatypes --sparse MIB|--timed NAME [--max-peak-mib N] [--timeout S]\n");
    }
    MPI_Finalize();
    exit(2);
}

int main(int argc, char **argv)
{
    int skip, any_skip;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    setvbuf(stdout, NULL, _IOLBF, 0);
    stest_mpi_init(g.rank, STEST_MPI_FAIL_RANK_FIRST);
    stest_watchdog_init();
    parse_options(argc, argv);
    if (g.size < 2 || ((opt.sparse_mib > 0 || opt.timed) && g.size != 2)) {
        if (g.rank == 0) fprintf(stderr, "test_p2p_datatypes: needs 2 ranks (--sparse, --timed: exactly 2)\n");
        MPI_Finalize();
        return 2;
    }
    g.partner = (g.rank ^ 1) < g.size ? g.rank ^ 1 : -1;
    skip      = stest_mpi_dev_open(&g.dev);
    MPI_Allreduce(&skip, &any_skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_skip) {
        MPI_Finalize();
        return EXIT_SKIP;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (opt.sparse_mib > 0) run_sparse();
    else if (opt.timed) run_timed();
    else run_cases();
    if (strcmp(opt.expect, "ok")) check_world_works();
    MPI_Finalize();
    stest_dev_close(&g.dev);
    return 0;
}
