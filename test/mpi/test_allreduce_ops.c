/*
 * MPI_Allreduce on every predefined op and datatype, on user-defined ops and
 * on derived datatypes, against an independent reference, on whatever coll
 * component the job selected (tuned, han, strata...):
 *
 *   mpirun -np 4 test_allreduce_ops [--max-bytes N] [--large] [--quiet]
 *                                   [--only-comm world] [--coll NAME]
 *                                   [--nonblocking | --persistent]
 *
 * In this tree, e.g. with strata (or tuned, han) selected:
 *   source build/test/strata-test-env.sh && source test/lib.sh
 *   strata_mpirun_local 4 $(strata_coll_mca strata) build/test/mpi/test_allreduce_ops
 *
 *   --max-bytes N      no message above N bytes (K, M, G suffixes): larger
 *                      counts are cut to the largest prime that fits
 *   --large            also one MPI_INT and one MPI_DOUBLE sum of >= 64 MiB
 *                      on MPI_COMM_WORLD
 *   --quiet            print only the closing OK lines
 *   --only-comm world  only MPI_COMM_WORLD (no dup, splits, interleaving)
 *   --coll NAME        the collective: allreduce (the default), reduce,
 *                      reduce_scatter_block or reduce_scatter; the same
 *                      cases and references, each rank checking its part
 *                      of the reduced vector: the root the whole of it
 *                      (roots first, middle and last in turn; the others
 *                      pass rbuf NULL), every rank its block of
 *                      count/ranks elements, or of uneven counts (ranks
 *                      weighted 0, 1, 2, 0, 1, 2...: some get none).
 *                      MPI_IN_PLACE in each form the standard allows (at
 *                      the root; the input in rbuf).  The derived-datatype
 *                      phase is the allreduce's only.
 *   --nonblocking      the nonblocking form of the collective (MPI_Iallreduce,
 *                      MPI_Ireduce, ...) and MPI_Wait, every case the same;
 *                      each communicator takes one blocking MPI_Allreduce
 *                      when it is made (coll/strata sets a communicator up
 *                      only in a blocking call: before it, its nonblocking
 *                      calls go to the module below)
 *   --persistent       the persistent form (MPI_Allreduce_init, ...; MPI
 *                      4.0, Open MPI 5.0): each case's request made, started
 *                      and waited for twice (once where the input is rbuf,
 *                      in place, whose second start would reduce the first
 *                      result), then freed; as --nonblocking otherwise.
 *                      Without them in this MPI: exit 77
 *   --device           (test_allreduce_ops_device, built where CUDA is) the
 *                      same calls on device buffers: each variant's memory,
 *                      guards and poison included, is copied to a
 *                      cuMemAlloc'ed twin, MPI_Allreduce runs on the twin,
 *                      and the bytes come back for the same checks; exit 77
 *                      when no CUDA device can be had
 *
 * What it checks, on each communicator (MPI_COMM_WORLD, a dup of it, its
 * even and odd halves, all ranks but the last, its ranks in reverse order):
 *   - every predefined op with every predefined C datatype MPI-3.1 §5.9.2
 *     defines it for, at counts 0, 1, 3, 13, 1021 and ~300 KB of data;
 *   - a subset (SUM on int, double, float, long double; MAXLOC on
 *     MPI_DOUBLE_INT; BXOR on unsigned long long; LAND on MPI_C_BOOL; and
 *     a few more) at counts 2, 7, 12, 31, 4096, 65521, ~1 MiB and ~3 MiB
 *     (more chunks than strata has shared-memory slots);
 *   - every op on five types (signed char, unsigned, float, double, bool)
 *     one element below, at and above each size where coll/strata's default
 *     decision changes path (2, 8 and 16 KiB);
 *   - calls alternating small and large sizes, types and ops;
 *   - a commutative user op (int sum), two non-commutative ones (2x2 matrix
 *     product on a contiguous type of 4 ints, affine-map composition on
 *     MPI_2INT) whose result must follow MPI's rank order;
 *   - the commutative user op on contiguous, vector and resized-vector
 *     types of MPI_INT, whose gaps in the receive buffer must keep what they
 *     held (predefined ops are defined on predefined types only, §5.9.1).
 * Then calls interleaved across all those communicators.  Each case runs
 * with separate buffers, with MPI_IN_PLACE, and with rbuf right after sbuf
 * in one allocation (the alternating and interleaved calls take one of the
 * three in turn); sbuf must come back unchanged, and the bytes on both sides
 * of rbuf untouched.
 *
 * Each rank computes the reference alone: every input is a deterministic
 * function of (world rank, index, case), so a rank can generate every other
 * rank's input.  Integers are exact (inputs keep signed sums and products in
 * range; unsigned types wrap as C defines, and so does the reference).
 * Floating sums, min and max are exact too (inputs are multiples of 1/8);
 * floating and complex products allow a relative error of
 * ranks * 4 * epsilon of the type.  References are computed in 64-bit
 * integers or long double.  Inputs steer clear of two Open MPI 4.1 op bugs
 * (see int_input()), which are not the coll component's to fix.
 *
 * The first wrong value prints rank, communicator, case, index, expected and
 * got, then the program calls MPI_Abort(MPI_COMM_WORLD, 1).  At the end rank
 * 0 prints "test_allreduce_ops: OK: <comm> (<n> ranks): <N> cases" per
 * communicator, N counting checked MPI_Allreduce calls.
 *
 * One file of ~1600 lines on purpose: it is a program a user runs alone
 * against any MPI, and its type tables, input generators and references only
 * make sense together.
 */
#include <mpi.h>
#ifdef STRATA_TEST_DEVICE
#include "stest_cuda.h"
#include "stest_mpi.h"
#endif

#include <complex.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "test_allreduce_ops"

/* Data sizes of the count classes.  Counts are the largest prime of elements
 * that fits, so they never divide evenly among ranks, slices or chunks. */
#define MEDIUM_BYTES 300000L
#define MIB_BYTES (1L << 20)
#define BIG_BYTES (3L << 20)
#define LARGE_BYTES (64L << 20)

/* Bytes checked on each side of rbuf, filled with POISON, as are the parts
 * of rbuf that the call must write. */
#define GUARD_BYTES 64
#define POISON 0xA5

typedef enum { C_ALLREDUCE, C_REDUCE, C_RSB, C_RS, NCOLLS } coll_id_t;
static const char *const coll_names[NCOLLS] = {"allreduce", "reduce", "reduce_scatter_block",
                                               "reduce_scatter"};

static struct {
    long max_bytes; /* -1: no cap */
    bool large, quiet, only_world, device, nonblocking, persistent;
    coll_id_t coll;
} opt = {.max_bytes = -1};

static int world_rank, world_size;

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);

    if (p == NULL) {
        fprintf(stderr, PROG ": rank %d: out of memory (%zu bytes)\n", world_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static uint64_t make_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return mix64(mix64(mix64(mix64(a) + b) + c) + d);
}

/* The random bits behind input (world rank, index) of the case with `seed`. */
static uint64_t input_hash(uint64_t seed, int wrank, long i)
{
    return mix64(seed + (uint64_t)wrank * UINT64_C(0xd6e8feb86659fd93) +
                 (uint64_t)i * UINT64_C(0xa0761d6478bd642f));
}

/* A number in [0, n) from the high bits of h, without a division (which
 * would dominate the time the reference takes). */
static uint64_t uniform(uint64_t h, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)h * n) >> 64);
}

static uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static bool is_prime(long n)
{
    if (n < 2) return false;
    for (long d = 2; d * d <= n; d++) {
        if (n % d == 0) return false;
    }
    return true;
}

static long prev_prime(long n)
{
    while (n > 2 && !is_prime(n)) n--;
    return n;
}

static long next_prime(long n)
{
    while (!is_prime(n)) n++;
    return n;
}

/* ------------------------------------------------------------- datatypes */

typedef enum { K_SINT, K_UINT, K_FLOAT, K_BOOL, K_COMPLEX, K_BYTE, K_PAIR } kind_t;

/* The C type of a floating value, of a complex type's parts, or of the value
 * of a MAXLOC/MINLOC pair. */
typedef enum { VT_NONE, VT_FLOAT, VT_DOUBLE, VT_LDOUBLE, VT_SHORT, VT_INT, VT_LONG } vtype_t;

/* The pair types' layouts, as MPI-3.1 §5.9.4 defines them. */
typedef struct { float v; int i; } float_int_t;
typedef struct { double v; int i; } double_int_t;
typedef struct { long v; int i; } long_int_t;
typedef struct { int v; int i; } int_int_t;
typedef struct { short v; int i; } short_int_t;
typedef struct { long double v; int i; } ldouble_int_t;

typedef struct {
    const char *name;
    MPI_Datatype dt;
    kind_t kind;
    size_t size;    /* sizeof the C type: the stride in a buffer */
    vtype_t vt;     /* K_FLOAT, K_COMPLEX, K_PAIR */
    size_t idx_off; /* K_PAIR: offset of the int index */
    bool signed_minmax; /* see int_input() */
} type_desc_t;

#define INTEGER(dt, ctype, kind) {#dt, dt, kind, sizeof(ctype), VT_NONE, 0, false}
#define PAIR(dt, ctype, vt) {#dt, dt, K_PAIR, sizeof(ctype), vt, offsetof(ctype, i), false}

static const type_desc_t types[] = {
    INTEGER(MPI_INT, int, K_SINT),
    INTEGER(MPI_LONG, long, K_SINT),
    INTEGER(MPI_SHORT, short, K_SINT),
    INTEGER(MPI_UNSIGNED_SHORT, unsigned short, K_UINT),
    INTEGER(MPI_UNSIGNED, unsigned, K_UINT),
    {"MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, K_UINT, sizeof(unsigned long), VT_NONE, 0, true},
    INTEGER(MPI_LONG_LONG_INT, long long, K_SINT),
    INTEGER(MPI_UNSIGNED_LONG_LONG, unsigned long long, K_UINT),
    INTEGER(MPI_SIGNED_CHAR, signed char, K_SINT),
    INTEGER(MPI_UNSIGNED_CHAR, unsigned char, K_UINT),
    INTEGER(MPI_INT8_T, int8_t, K_SINT),
    INTEGER(MPI_INT16_T, int16_t, K_SINT),
    INTEGER(MPI_INT32_T, int32_t, K_SINT),
    INTEGER(MPI_INT64_T, int64_t, K_SINT),
    INTEGER(MPI_UINT8_T, uint8_t, K_UINT),
    INTEGER(MPI_UINT16_T, uint16_t, K_UINT),
    INTEGER(MPI_UINT32_T, uint32_t, K_UINT),
    INTEGER(MPI_UINT64_T, uint64_t, K_UINT),
    {"MPI_FLOAT", MPI_FLOAT, K_FLOAT, sizeof(float), VT_FLOAT, 0},
    {"MPI_DOUBLE", MPI_DOUBLE, K_FLOAT, sizeof(double), VT_DOUBLE, 0},
    {"MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, K_FLOAT, sizeof(long double), VT_LDOUBLE, 0},
    {"MPI_C_BOOL", MPI_C_BOOL, K_BOOL, sizeof(bool), VT_NONE, 0},
    {"MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, K_COMPLEX, sizeof(float complex), VT_FLOAT, 0},
    {"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, K_COMPLEX, sizeof(double complex),
     VT_DOUBLE, 0},
    {"MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX, K_COMPLEX,
     sizeof(long double complex), VT_LDOUBLE, 0},
    {"MPI_BYTE", MPI_BYTE, K_BYTE, 1, VT_NONE, 0},
    PAIR(MPI_FLOAT_INT, float_int_t, VT_FLOAT),
    PAIR(MPI_DOUBLE_INT, double_int_t, VT_DOUBLE),
    PAIR(MPI_LONG_INT, long_int_t, VT_LONG),
    PAIR(MPI_2INT, int_int_t, VT_INT),
    PAIR(MPI_SHORT_INT, short_int_t, VT_SHORT),
    PAIR(MPI_LONG_DOUBLE_INT, ldouble_int_t, VT_LDOUBLE),
};
#define NTYPES ((int)(sizeof(types) / sizeof(types[0])))

static const type_desc_t *find_type(const char *name)
{
    for (int t = 0; t < NTYPES; t++) {
        if (!strcmp(types[t].name, name)) return &types[t];
    }
    fprintf(stderr, PROG ": internal error: no type %s\n", name);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return NULL;
}

/* A wrong extent would make every case of the type fail for a reason that is
 * not the allreduce's; say so once instead. */
static void check_type_extents(void)
{
    for (int t = 0; t < NTYPES; t++) {
        MPI_Aint lb, extent;

        MPI_Type_get_extent(types[t].dt, &lb, &extent);
        if (lb != 0 || (size_t)extent != types[t].size) {
            fprintf(stderr, PROG ": FAIL: rank %d: %s has lb %ld extent %ld, sizeof %zu\n",
                    world_rank, types[t].name, (long)lb, (long)extent, types[t].size);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

static int int_bits(const type_desc_t *t)
{
    return (int)(8 * t->size);
}

static uint64_t int_mask(const type_desc_t *t)
{
    return t->size >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * t->size)) - 1;
}

/* The bit pattern `u` of a `bits`-wide two's complement integer, as a value. */
static int64_t sign_extend(uint64_t u, int bits)
{
    return bits >= 64 ? (int64_t)u : (int64_t)(u << (64 - bits)) >> (64 - bits);
}

static long double type_epsilon(vtype_t vt)
{
    switch (vt) {
    case VT_FLOAT: return FLT_EPSILON;
    case VT_DOUBLE: return DBL_EPSILON;
    default: return LDBL_EPSILON;
    }
}

/* ------------------------------------------------------------------- ops */

typedef enum {
    O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR,
    O_MAXLOC, O_MINLOC, O_NOPS
} op_id_t;

static const struct {
    const char *name;
    MPI_Op op;
} ops[O_NOPS] = {
    {"MPI_SUM", MPI_SUM},   {"MPI_PROD", MPI_PROD},     {"MPI_MIN", MPI_MIN},
    {"MPI_MAX", MPI_MAX},   {"MPI_LAND", MPI_LAND},     {"MPI_LOR", MPI_LOR},
    {"MPI_LXOR", MPI_LXOR}, {"MPI_BAND", MPI_BAND},     {"MPI_BOR", MPI_BOR},
    {"MPI_BXOR", MPI_BXOR}, {"MPI_MAXLOC", MPI_MAXLOC}, {"MPI_MINLOC", MPI_MINLOC},
};

/* MPI-3.1 §5.9.2: which groups of basic datatypes each op is defined for. */
static bool op_defined(op_id_t op, kind_t kind)
{
    switch (kind) {
    case K_SINT:
    case K_UINT: return op <= O_BXOR; /* C integer: all but the loc ops */
    case K_FLOAT: return op <= O_MAX;
    case K_BOOL: return op == O_LAND || op == O_LOR || op == O_LXOR;
    case K_COMPLEX: return op == O_SUM || op == O_PROD;
    case K_BYTE: return op == O_BAND || op == O_BOR || op == O_BXOR;
    case K_PAIR: return op == O_MAXLOC || op == O_MINLOC;
    }
    return false;
}

/* ----------------------------------------------------------------- cases */

typedef struct {
    MPI_Comm comm;
    const char *name;
    int stat; /* where its calls are counted: stat_size, stat_cases */
    int size, rank;
    int *wranks; /* world rank of each rank */
} comm_t;

/* A derived datatype of MPI_INT: which ints of each element carry data. */
typedef struct {
    const char *name;
    int ext_ints, ndata;
    int data[8]; /* offsets of the data ints, in ints */
    MPI_Datatype dt;
} layout_t;

/* A non-commutative user op on elements of `words` 32-bit integers. */
typedef struct {
    const char *name;
    int words;
    void (*gen)(uint64_t h, uint32_t *out);                           /* one input */
    void (*compose)(const uint32_t *x, const uint32_t *y, uint32_t *out); /* x o y */
    MPI_Op op;
    MPI_Datatype dt;
} noncomm_t;

typedef struct {
    char index[64], expected[160], got[160];
} mismatch_t;

typedef struct test_case test_case_t;
struct test_case {
    char what[96]; /* "<op>/<type>" in messages */
    MPI_Datatype dt;
    MPI_Op mpi_op;
    long count;
    size_t extent;
    uint64_t seed;
    int nranks;
    bool has_gaps;        /* rbuf holds bytes the call must leave alone */
    const type_desc_t *t; /* predefined and layout cases: the element type */
    op_id_t op;           /* ... and what the reference computes */
    long double tol;      /* relative error allowed; 0: exact */
    const layout_t *layout;
    const noncomm_t *nc;
    int root;                                      /* MPI_Reduce's (--coll reduce) */
    void (*fill)(const test_case_t *c, char *buf); /* this rank's input */
    bool (*check)(const test_case_t *c, const comm_t *cm, const char *rbuf, const char *before,
                  long i, mismatch_t *m); /* element i of the result */
};

typedef enum { SEPARATE, INPLACE, ADJACENT, NVARIANTS } variant_t;
/* the variant of the call in progress (coll_pcall: how many starts) */
static variant_t call_variant;
static const char *const variant_names[] = {"separate", "inplace", "adjacent"};
#define ALL_VARIANTS 7u

enum { S_WORLD, S_DUP, S_EVEN, S_ODD, S_MINUS_LAST, S_REVERSED, S_INTERLEAVED, NSTATS };
static const char *const stat_names[NSTATS] = {
    "MPI_COMM_WORLD", "dup(MPI_COMM_WORLD)", "split(even)", "split(odd)",
    "split(size-1)",  "reversed(MPI_COMM_WORLD)", "interleaved",
};
static int stat_size[NSTATS];
static long stat_cases[NSTATS];
static double mpi_seconds; /* inside MPI_Allreduce: the rest is the test's own work */

static void fail(const comm_t *cm, const test_case_t *c, variant_t v, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail(const comm_t *cm, const test_case_t *c, variant_t v, const char *fmt, ...)
{
    char detail[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    fprintf(stderr, PROG ": FAIL: rank %d comm %s case %s/count %ld/%s: %s\n", world_rank,
            cm->name, c->what, c->count, variant_names[v], detail);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* --------------------------------------------- predefined: inputs */

/* A value of any predefined type, wide enough to hold the exact reference. */
typedef struct {
    uint64_t u;            /* integers, bool, byte: bit pattern masked to the width */
    long double f;         /* floating types; the value of a pair */
    long double complex c; /* complex types */
    int idx;               /* the index of a pair */
} value_t;

static bool logical_input(op_id_t op, uint64_t h)
{
    switch (op) {
    case O_LAND: return h % 8 != 0; /* mostly true, or LAND would be all false */
    case O_LOR: return h % 8 == 0;  /* mostly false, or LOR would be all true */
    default: return h & 1;
    }
}

/* Signed products: most factors are +-1 (and a few 0); only world ranks 0-5
 * give factors up to max_factor, so a product has at most six such factors
 * and stays in range (2^6, 5^6, 31^6, 1000^6) on any communicator. */
static int64_t signed_prod_input(int bits, int wrank, uint64_t h)
{
    int64_t max_factor = bits == 8 ? 2 : bits == 16 ? 5 : bits == 32 ? 31 : 1000;
    unsigned r = (unsigned)(h % 32);
    int64_t f;

    if (r == 0) return 0;
    if (r < 20) return 1;
    if (r < 26 || wrank >= 6) return -1;
    f = 2 + (int64_t)uniform(h, (uint64_t)(max_factor - 1));
    return (h >> 40) & 1 ? -f : f;
}

/* The bit pattern of an integer input (C integer types and MPI_BYTE).
 *
 * Two Open MPI 4.1 bugs shape the unsigned inputs; with them a correct
 * allreduce would fail here whatever coll component runs it:
 *   - op/avx sums 8- and 16-bit integers with saturating instructions
 *     (open-mpi/ompi#8045), so those unsigned sums stay below the maximum
 *     instead of wrapping (32 and 64 bits do wrap);
 *   - up to 4.1.4 MPI_MIN/MPI_MAX compare MPI_UNSIGNED_LONG as signed
 *     (open-mpi/ompi#10525, #10648; fixed in 4.1.5), so its min/max inputs
 *     keep the top bit clear. */
static uint64_t int_input(const test_case_t *c, int wrank, uint64_t h)
{
    const type_desc_t *t = c->t;
    int bits = int_bits(t);
    bool is_signed = t->kind == K_SINT;
    uint64_t mask = int_mask(t), high = UINT64_C(1) << (bits - 1), r = h >> 8;

    switch (c->op) {
    case O_SUM:
        if (is_signed) {
            /* |values| <= max / ranks: the sum never overflows */
            uint64_t k = (high - 1) / (uint64_t)c->nranks;
            return (uint64_t)((int64_t)uniform(h, 2 * k + 1) - (int64_t)k) & mask;
        }
        if (bits <= 16) return uniform(h, mask / (uint64_t)c->nranks + 1); /* no wrap: ompi#8045 */
        return h & mask; /* unsigned sums wrap, as C defines, in MPI and reference alike */
    case O_PROD:
        if (is_signed) return (uint64_t)signed_prod_input(bits, wrank, h) & mask;
        return (r | ((h & 3) != 0)) & mask; /* mostly odd: low bits survive the product */
    case O_MIN:
    case O_MAX:
        if (t->signed_minmax) mask >>= 1; /* ompi#10525 */
        if (h % 16 == 0) return is_signed ? high : 0; /* the type's minimum */
        if (h % 16 == 1) return is_signed ? high - 1 : mask; /* ... and maximum */
        return r & mask;
    case O_LAND:
    case O_LOR:
    case O_LXOR:
        if (!logical_input(c->op, h)) return 0;
        /* true values whose low byte is 0 catch a test of one byte only */
        return ((h >> 8) % 4 == 0 || ((r >> 8) & mask) == 0) ? high : (r >> 8) & mask;
    case O_BAND: return (h | rotl64(h, 17)) & mask; /* 3/4 of the bits set */
    case O_BOR: return (h & rotl64(h, 17)) & mask;  /* 1/4 of the bits set */
    default: return h & mask;
    }
}

/* Round to the C type, so the reference sees what the buffer holds. */
static long double round_to(vtype_t vt, long double x)
{
    switch (vt) {
    case VT_FLOAT: return (float)x;
    case VT_DOUBLE: return (double)x;
    default: return x;
    }
}

static long double float_input(op_id_t op, uint64_t h)
{
    switch (op) {
    case O_SUM: /* multiples of 1/8 below 125: every partial sum is exact */
        return (long double)((int64_t)(h % 2001) - 1000) / 8;
    case O_PROD: { /* near 1, some negative: no overflow, rounding in every product */
        long double m = 1 + (long double)((int)(h % 64) - 32) / 128;
        return (h >> 8) % 5 == 0 ? -m : m;
    }
    default: /* MIN, MAX: few distinct values, so ties, and some far outside them */
        if (h % 16 == 0) return (h >> 8) & 1 ? -0x1p100L : 0x1p100L;
        return (long double)((int)((h >> 8) % 33) - 16) / 4;
    }
}

static long double complex complex_input(op_id_t op, uint64_t h)
{
    long double re, im;

    if (op == O_SUM) { /* multiples of 1/8: exact sums */
        re = (long double)((int64_t)(h % 2001) - 1000) / 8;
        im = (long double)((int64_t)((h >> 16) % 2001) - 1000) / 8;
    } else { /* modulus near 1, any angle */
        re = 1 + (long double)((int)(h % 32) - 16) / 64;
        im = (long double)((int)((h >> 8) % 32) - 16) / 64;
        if ((h >> 20) & 1) re = -re;
    }
    return re + im * I;
}

/* The input of an integer-like type (C integers, bool, byte): its bit pattern. */
static uint64_t int_input_at(const test_case_t *c, int wrank, long i)
{
    uint64_t h = input_hash(c->seed, wrank, i);

    return c->t->kind == K_BOOL ? logical_input(c->op, h) : int_input(c, wrank, h);
}

static bool is_int_like(const type_desc_t *t)
{
    return t->kind == K_SINT || t->kind == K_UINT || t->kind == K_BYTE || t->kind == K_BOOL;
}

static value_t input_value(const test_case_t *c, int wrank, long i)
{
    uint64_t h = input_hash(c->seed, wrank, i);
    value_t v = {0};

    switch (c->t->kind) {
    case K_SINT:
    case K_UINT:
    case K_BYTE: v.u = int_input(c, wrank, h); break;
    case K_BOOL: v.u = logical_input(c->op, h); break;
    case K_FLOAT: v.f = round_to(c->t->vt, float_input(c->op, h)); break;
    case K_COMPLEX: v.c = complex_input(c->op, h); break;
    case K_PAIR:
        /* Five values among four ranks: ties are common, and the index (not
         * the rank) must then decide: the lowest wins. */
        v.f = (long double)((int)(h % 5) - 2);
        v.idx = (int)((h >> 20) % 1000);
        break;
    }
    return v;
}

/* ------------------------------------ predefined: buffers and reference */

static void store_uint(char *e, size_t size, uint64_t u)
{
    uint8_t u8 = (uint8_t)u;
    uint16_t u16 = (uint16_t)u;
    uint32_t u32 = (uint32_t)u;

    switch (size) {
    case 1: memcpy(e, &u8, 1); break;
    case 2: memcpy(e, &u16, 2); break;
    case 4: memcpy(e, &u32, 4); break;
    default: memcpy(e, &u, 8); break;
    }
}

static uint64_t load_uint(const char *e, size_t size)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;

    switch (size) {
    case 1: memcpy(&u8, e, 1); return u8;
    case 2: memcpy(&u16, e, 2); return u16;
    case 4: memcpy(&u32, e, 4); return u32;
    default: memcpy(&u64, e, 8); return u64;
    }
}

static void store_scalar(char *e, vtype_t vt, long double x)
{
    switch (vt) {
    case VT_FLOAT: { float y = (float)x; memcpy(e, &y, sizeof(y)); break; }
    case VT_DOUBLE: { double y = (double)x; memcpy(e, &y, sizeof(y)); break; }
    case VT_SHORT: { short y = (short)x; memcpy(e, &y, sizeof(y)); break; }
    case VT_INT: { int y = (int)x; memcpy(e, &y, sizeof(y)); break; }
    case VT_LONG: { long y = (long)x; memcpy(e, &y, sizeof(y)); break; }
    default: /* x87 extended: 10 value bytes; the padding keeps the buffer's zeros,
              * so buffers compare with memcmp */
        memcpy(e, &x, LDBL_MANT_DIG == 64 ? 10 : sizeof(x));
        break;
    }
}

static long double load_scalar(const char *e, vtype_t vt)
{
    switch (vt) {
    case VT_FLOAT: { float y; memcpy(&y, e, sizeof(y)); return y; }
    case VT_DOUBLE: { double y; memcpy(&y, e, sizeof(y)); return y; }
    case VT_SHORT: { short y; memcpy(&y, e, sizeof(y)); return y; }
    case VT_INT: { int y; memcpy(&y, e, sizeof(y)); return y; }
    case VT_LONG: { long y; memcpy(&y, e, sizeof(y)); return (long double)y; }
    default: { long double y; memcpy(&y, e, sizeof(y)); return y; }
    }
}

static void store_complex(char *e, vtype_t vt, long double complex x)
{
    long double parts[2] = {creall(x), cimagl(x)};
    size_t part = vt == VT_FLOAT ? sizeof(float) : vt == VT_DOUBLE ? sizeof(double)
                                                                   : sizeof(long double);

    /* C11 §6.2.5: a complex is laid out as an array of two parts */
    store_scalar(e, vt, parts[0]);
    store_scalar(e + part, vt, parts[1]);
}

static long double complex load_complex(const char *e, vtype_t vt)
{
    size_t part = vt == VT_FLOAT ? sizeof(float) : vt == VT_DOUBLE ? sizeof(double)
                                                                   : sizeof(long double);

    return load_scalar(e, vt) + load_scalar(e + part, vt) * I;
}

static void store_value(const type_desc_t *t, char *buf, long i, const value_t *v)
{
    char *e = buf + (size_t)i * t->size;

    switch (t->kind) {
    case K_FLOAT: store_scalar(e, t->vt, v->f); break;
    case K_COMPLEX: store_complex(e, t->vt, v->c); break;
    case K_PAIR:
        store_scalar(e, t->vt, v->f);
        memcpy(e + t->idx_off, &v->idx, sizeof(int));
        break;
    default: store_uint(e, t->size, v->u); break;
    }
}

/* MPI_C_BOOL loads as its raw byte: anything but 0 or 1 is wrong. */
static value_t load_value(const type_desc_t *t, const char *buf, long i)
{
    const char *e = buf + (size_t)i * t->size;
    value_t v = {0};

    switch (t->kind) {
    case K_FLOAT: v.f = load_scalar(e, t->vt); break;
    case K_COMPLEX: v.c = load_complex(e, t->vt); break;
    case K_PAIR:
        v.f = load_scalar(e, t->vt);
        memcpy(&v.idx, e + t->idx_off, sizeof(int));
        break;
    default: v.u = load_uint(e, t->size); break;
    }
    return v;
}

/* a op b on integer bit patterns.  Sums and products of two's complement
 * patterns are the same for signed and unsigned types, and wrap in uint64_t
 * without undefined behaviour. */
static uint64_t combine_int(op_id_t op, const type_desc_t *t, uint64_t a, uint64_t b)
{
    int bits = int_bits(t);
    bool is_signed = t->kind == K_SINT;
    bool a_less = is_signed ? sign_extend(a, bits) < sign_extend(b, bits) : a < b;
    uint64_t r;

    switch (op) {
    case O_SUM: r = a + b; break;
    case O_PROD: r = a * b; break;
    case O_MIN: r = a_less ? a : b; break;
    case O_MAX: r = a_less ? b : a; break;
    case O_LAND: r = a && b; break;
    case O_LOR: r = a || b; break;
    case O_LXOR: r = !a != !b; break;
    case O_BAND: r = a & b; break;
    case O_BOR: r = a | b; break;
    default: r = a ^ b; break;
    }
    return r & int_mask(t);
}

static long double combine_float(op_id_t op, long double a, long double b)
{
    switch (op) {
    case O_SUM: return a + b;
    case O_PROD: return a * b;
    case O_MIN: return b < a ? b : a;
    default: return b > a ? b : a;
    }
}

/* MPI-3.1 §5.9.4: the better value wins; on a tie, the lower index. */
static void combine_loc(op_id_t op, value_t *acc, const value_t *v)
{
    bool better = op == O_MAXLOC ? v->f > acc->f : v->f < acc->f;

    if (better) {
        acc->f = v->f;
        acc->idx = v->idx;
    } else if (v->f == acc->f && v->idx < acc->idx) {
        acc->idx = v->idx;
    }
}

/* acc = acc op v, acc holding the lower ranks' result. */
static void combine(const test_case_t *c, value_t *acc, const value_t *v)
{
    switch (c->t->kind) {
    case K_FLOAT: acc->f = combine_float(c->op, acc->f, v->f); break;
    case K_COMPLEX: acc->c = c->op == O_SUM ? acc->c + v->c : acc->c * v->c; break;
    case K_PAIR: combine_loc(c->op, acc, v); break;
    default: acc->u = combine_int(c->op, c->t, acc->u, v->u); break;
    }
}

/* Element i of the result, from every rank's input, in rank order.  With one
 * rank that is the input unchanged (no op applied), as MPI defines.  Integer
 * types, most of the elements checked, take a lean path of their own. */
static uint64_t int_reference(const test_case_t *c, const comm_t *cm, long i)
{
    uint64_t acc = int_input_at(c, cm->wranks[0], i);

    for (int k = 1; k < cm->size; k++) {
        acc = combine_int(c->op, c->t, acc, int_input_at(c, cm->wranks[k], i));
    }
    return acc;
}

static value_t reference_value(const test_case_t *c, const comm_t *cm, long i)
{
    value_t acc;

    if (is_int_like(c->t)) {
        acc.u = int_reference(c, cm, i);
        return acc;
    }
    acc = input_value(c, cm->wranks[0], i);

    for (int k = 1; k < cm->size; k++) {
        value_t v = input_value(c, cm->wranks[k], i);

        combine(c, &acc, &v);
    }
    return acc;
}

static bool values_match(const test_case_t *c, const value_t *e, const value_t *g)
{
    switch (c->t->kind) {
    case K_FLOAT:
        return c->tol == 0 ? g->f == e->f : fabsl(g->f - e->f) <= c->tol * fabsl(e->f);
    case K_COMPLEX:
        return c->tol == 0 ? g->c == e->c : cabsl(g->c - e->c) <= c->tol * cabsl(e->c);
    case K_PAIR: return g->f == e->f && g->idx == e->idx;
    default: return g->u == e->u;
    }
}

static void format_value(const type_desc_t *t, const value_t *v, char *out, size_t len)
{
    switch (t->kind) {
    case K_SINT:
        snprintf(out, len, "%" PRId64 " (0x%" PRIx64 ")", sign_extend(v->u, int_bits(t)), v->u);
        break;
    case K_FLOAT: snprintf(out, len, "%.21Lg", v->f); break;
    case K_COMPLEX: snprintf(out, len, "(%.21Lg, %.21Lg)", creall(v->c), cimagl(v->c)); break;
    case K_PAIR: snprintf(out, len, "(%.21Lg, %d)", v->f, v->idx); break;
    default: snprintf(out, len, "%" PRIu64 " (0x%" PRIx64 ")", v->u, v->u); break;
    }
}

static void fill_predefined(const test_case_t *c, char *buf)
{
    if (is_int_like(c->t)) {
        for (long i = 0; i < c->count; i++) {
            store_uint(buf + (size_t)i * c->extent, c->extent, int_input_at(c, world_rank, i));
        }
        return;
    }
    memset(buf, 0, (size_t)c->count * c->extent); /* padding of pairs, long double */
    for (long i = 0; i < c->count; i++) {
        value_t v = input_value(c, world_rank, i);

        store_value(c->t, buf, i, &v);
    }
}

static bool check_predefined(const test_case_t *c, const comm_t *cm, const char *rbuf,
                             const char *before, long i, mismatch_t *m)
{
    value_t e, g;

    if (is_int_like(c->t)) {
        uint64_t expected = int_reference(c, cm, i);

        if (expected == load_uint(rbuf + (size_t)i * c->extent, c->extent)) return true;
    }
    e = reference_value(c, cm, i);
    g = load_value(c->t, rbuf, i);
    if (values_match(c, &e, &g)) return true;
    snprintf(m->index, sizeof(m->index), "%ld", i);
    format_value(c->t, &e, m->expected, sizeof(m->expected));
    format_value(c->t, &g, m->got, sizeof(m->got));
    if (c->tol != 0) {
        size_t n = strlen(m->expected);

        snprintf(m->expected + n, sizeof(m->expected) - n, " (rel. tolerance %.3Lg)", c->tol);
    }
    return false;
}

static test_case_t predefined_case(const comm_t *cm, const type_desc_t *t, op_id_t op, long count,
                                   uint64_t tag)
{
    test_case_t c = {0};

    snprintf(c.what, sizeof(c.what), "%s/%s", ops[op].name, t->name);
    c.dt = t->dt;
    c.mpi_op = ops[op].op;
    c.count = count;
    c.extent = t->size;
    c.nranks = cm->size;
    c.seed = make_seed(tag, (uint64_t)op, (uint64_t)(t - types), (uint64_t)count);
    c.t = t;
    c.op = op;
    if (op == O_PROD && (t->kind == K_FLOAT || t->kind == K_COMPLEX)) {
        c.tol = (long double)cm->size * 4 * type_epsilon(t->vt);
    }
    c.fill = fill_predefined;
    c.check = check_predefined;
    return c;
}

/* ------------------------------------------------ user-defined ops */

/* x o y for 2x2 matrices (row-major), wrapping mod 2^32. */
static void mat2_compose(const uint32_t *x, const uint32_t *y, uint32_t *out)
{
    out[0] = x[0] * y[0] + x[1] * y[2];
    out[1] = x[0] * y[1] + x[1] * y[3];
    out[2] = x[2] * y[0] + x[3] * y[2];
    out[3] = x[2] * y[1] + x[3] * y[3];
}

static void mat2_gen(uint64_t h, uint32_t *out)
{
    for (int j = 0; j < 4; j++) out[j] = (uint32_t)((int)((h >> (8 * j)) % 7) - 3);
}

/* (a, b) is x -> a x + b; x o y is "y first, then x", wrapping mod 2^32. */
static void affine_compose(const uint32_t *x, const uint32_t *y, uint32_t *out)
{
    out[0] = x[0] * y[0];
    out[1] = x[0] * y[1] + x[1];
}

static void affine_gen(uint64_t h, uint32_t *out)
{
    out[0] = (uint32_t)h | 1;
    out[1] = (uint32_t)(h >> 32);
}

/* MPI-3.1 §5.9.5: inoutvec[i] = invec[i] o inoutvec[i], invec from lower ranks. */
static void noncomm_apply(const noncomm_t *nc, void *in, void *inout, int len)
{
    const uint32_t *a = in;
    uint32_t *b = inout, r[4];

    for (int i = 0; i < len; i++) {
        nc->compose(a + (size_t)i * nc->words, b + (size_t)i * nc->words, r);
        memcpy(b + (size_t)i * nc->words, r, sizeof(uint32_t) * (size_t)nc->words);
    }
}

static noncomm_t mat2 = {"user_mat2_product(non-commutative)/contiguous(4,MPI_INT)", 4,
                         mat2_gen, mat2_compose};
static noncomm_t affine = {"user_affine_compose(non-commutative)/MPI_2INT", 2, affine_gen,
                           affine_compose};

static void user_mat2(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    noncomm_apply(&mat2, in, inout, *len);
}

static void user_affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    noncomm_apply(&affine, in, inout, *len);
}

static void fill_noncomm(const test_case_t *c, char *buf)
{
    uint32_t *w = (uint32_t *)buf;

    for (long i = 0; i < c->count; i++) {
        c->nc->gen(input_hash(c->seed, world_rank, i), w + (size_t)i * c->nc->words);
    }
}

static void format_words(const uint32_t *w, int n, char *out, size_t len)
{
    size_t used = 0;

    for (int j = 0; j < n && used < len; j++) {
        used += (size_t)snprintf(out + used, len - used, "%s%d", j ? " " : "[", (int32_t)w[j]);
    }
    if (used < len) snprintf(out + used, len - used, "]");
}

/* The ordered product input(r0) o input(r1) o ... in this communicator's rank order. */
static bool check_noncomm(const test_case_t *c, const comm_t *cm, const char *rbuf,
                          const char *before, long i, mismatch_t *m)
{
    const noncomm_t *nc = c->nc;
    uint32_t acc[4], v[4], r[4], got[4];

    nc->gen(input_hash(c->seed, cm->wranks[0], i), acc);
    for (int k = 1; k < cm->size; k++) {
        nc->gen(input_hash(c->seed, cm->wranks[k], i), v);
        nc->compose(acc, v, r);
        memcpy(acc, r, sizeof(r));
    }
    memcpy(got, rbuf + (size_t)i * c->extent, sizeof(uint32_t) * (size_t)nc->words);
    if (!memcmp(acc, got, sizeof(uint32_t) * (size_t)nc->words)) return true;
    snprintf(m->index, sizeof(m->index), "%ld", i);
    format_words(acc, nc->words, m->expected, sizeof(m->expected));
    format_words(got, nc->words, m->got, sizeof(m->got));
    return false;
}

static test_case_t noncomm_case(const comm_t *cm, const noncomm_t *nc, long count)
{
    test_case_t c = {0};

    snprintf(c.what, sizeof(c.what), "%s", nc->name);
    c.dt = nc->dt;
    c.mpi_op = nc->op;
    c.count = count;
    c.extent = sizeof(uint32_t) * (size_t)nc->words;
    c.nranks = cm->size;
    c.seed = make_seed(0x4e43, (uint64_t)nc->words, (uint64_t)count, 0);
    c.nc = nc;
    c.fill = fill_noncomm;
    c.check = check_noncomm;
    return c;
}

/* ---------------------------------------------- derived datatypes */

static MPI_Op user_sum_op;

static layout_t contig5 = {"contiguous(5,MPI_INT)", 5, 5, {0, 1, 2, 3, 4}};
/* 3 blocks of 2 ints, stride 5: ints 2-4 and 7-9 are gaps. */
static layout_t vector325 = {"vector(3,2,5,MPI_INT)", 12, 6, {0, 1, 5, 6, 10, 11}};
/* The same, resized to 14 ints: ints 12-13 are gaps too, between elements. */
static layout_t vector325r = {"resized(vector(3,2,5,MPI_INT),0,56)", 14, 6, {0, 1, 5, 6, 10, 11}};

static const layout_t *layout_of(MPI_Datatype dt)
{
    if (dt == contig5.dt) return &contig5;
    if (dt == vector325.dt) return &vector325;
    if (dt == vector325r.dt) return &vector325r;
    return NULL;
}

/* The commutative user op: elementwise int sum on MPI_INT or on a layout's
 * data ints.  MPI-3.1 §5.9.1 lets predefined ops work on predefined types
 * only (Open MPI rejects MPI_SUM on a contiguous type: MPI_ERR_OP), so the
 * derived types go through this op.  Gaps are not data: left alone. */
static void user_int_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const layout_t *l = layout_of(*dt);
    const int *a = in;
    int *b = inout;

    if (l == NULL) {
        for (int i = 0; i < *len; i++) b[i] += a[i];
        return;
    }
    for (long i = 0; i < *len; i++) {
        for (int k = 0; k < l->ndata; k++) {
            long at = i * l->ext_ints + l->data[k];

            b[at] += a[at];
        }
    }
}

static int layout_data_slot(const layout_t *l, int p)
{
    for (int k = 0; k < l->ndata; k++) {
        if (l->data[k] == p) return k;
    }
    return -1;
}

/* Data ints take MPI_INT sum inputs, numbered across elements; gaps hold
 * rank-specific junk that must not reach the result. */
static void fill_layout(const test_case_t *c, char *buf)
{
    const layout_t *l = c->layout;
    int *w = (int *)buf;

    for (long i = 0; i < c->count; i++) {
        for (int p = 0; p < l->ext_ints; p++) {
            int k = layout_data_slot(l, p);
            int v = (int)(0x6a700000 | world_rank);

            if (k >= 0) v = (int)sign_extend(input_value(c, world_rank, i * l->ndata + k).u, 32);
            w[i * l->ext_ints + p] = v;
        }
    }
}

static bool check_layout(const test_case_t *c, const comm_t *cm, const char *rbuf,
                         const char *before, long i, mismatch_t *m)
{
    const layout_t *l = c->layout;
    const int *got = (const int *)rbuf + i * l->ext_ints;

    for (int p = 0; p < l->ext_ints; p++) {
        int k = layout_data_slot(l, p);
        /* before is set whenever the layout has gaps */
        int expected = k >= 0 ? (int)sign_extend(reference_value(c, cm, i * l->ndata + k).u, 32)
                              : ((const int *)before)[i * l->ext_ints + p];

        if (got[p] != expected) {
            snprintf(m->index, sizeof(m->index), "%ld (int %d of the element, %s)", i, p,
                     k >= 0 ? "data" : "gap: must keep its value");
            snprintf(m->expected, sizeof(m->expected), "%d (0x%x)", expected, (unsigned)expected);
            snprintf(m->got, sizeof(m->got), "%d (0x%x)", got[p], (unsigned)got[p]);
            return false;
        }
    }
    return true;
}

static test_case_t layout_case(const comm_t *cm, const layout_t *l, long count)
{
    test_case_t c = predefined_case(cm, find_type("MPI_INT"), O_SUM, count, 0x4c59);

    snprintf(c.what, sizeof(c.what), "user_int_sum(commutative)/%s", l->name);
    c.dt = l->dt;
    c.mpi_op = user_sum_op;
    c.extent = sizeof(int) * (size_t)l->ext_ints;
    c.has_gaps = l->ndata < l->ext_ints;
    c.layout = l;
    c.fill = fill_layout;
    c.check = check_layout;
    return c;
}

static void create_user_types_and_ops(void)
{
    MPI_Datatype vec;

    MPI_Type_contiguous(5, MPI_INT, &contig5.dt);
    MPI_Type_vector(3, 2, 5, MPI_INT, &vector325.dt);
    MPI_Type_vector(3, 2, 5, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 14 * sizeof(int), &vector325r.dt);
    MPI_Type_free(&vec);
    MPI_Type_contiguous(4, MPI_INT, &mat2.dt);
    affine.dt = MPI_2INT;
    MPI_Type_commit(&contig5.dt);
    MPI_Type_commit(&vector325.dt);
    MPI_Type_commit(&vector325r.dt);
    MPI_Type_commit(&mat2.dt);
    MPI_Op_create(user_int_sum, 1, &user_sum_op);
    MPI_Op_create(user_mat2, 0, &mat2.op);
    MPI_Op_create(user_affine, 0, &affine.op);
}

static void free_user_types_and_ops(void)
{
    MPI_Type_free(&contig5.dt);
    MPI_Type_free(&vector325.dt);
    MPI_Type_free(&vector325r.dt);
    MPI_Type_free(&mat2.dt);
    MPI_Op_free(&user_sum_op);
    MPI_Op_free(&mat2.op);
    MPI_Op_free(&affine.op);
}

/* ---------------------------------------------------------- running */

/* --max-bytes: the largest prime count that fits (or what fits, below 2). */
static long capped_count(long count, size_t extent)
{
    long fit;

    if (opt.max_bytes < 0 || (size_t)count * extent <= (size_t)opt.max_bytes) return count;
    fit = (long)((size_t)opt.max_bytes / extent);
    return fit > 2 ? prev_prime(fit) : fit;
}

static long count_for_bytes(long bytes, size_t extent)
{
    return prev_prime(bytes / (long)extent);
}

static void check_untouched(const comm_t *cm, const test_case_t *c, variant_t v,
                            const unsigned char *p, size_t n, const char *what)
{
    for (size_t k = 0; k < n; k++) {
        if (p[k] != POISON) {
            fail(cm, c, v, "%s byte %zu changed: expected 0x%02x got 0x%02x", what, k, POISON,
                 p[k]);
        }
    }
}

static void check_sbuf(const comm_t *cm, const test_case_t *c, variant_t v,
                       const unsigned char *sbuf, const unsigned char *input, size_t bytes)
{
    if (!memcmp(sbuf, input, bytes)) return;
    for (size_t k = 0; k < bytes; k++) {
        if (sbuf[k] != input[k]) {
            fail(cm, c, v, "sbuf changed: byte %zu (element %zu) expected 0x%02x got 0x%02x", k,
                 k / c->extent, input[k], sbuf[k]);
        }
    }
}

static void verify_result(const comm_t *cm, const test_case_t *c, variant_t v, const char *rbuf,
                          const char *before)
{
    mismatch_t m;

    for (long i = 0; i < c->count; i++) {
        if (!c->check(c, cm, rbuf, before, i, &m)) {
            fail(cm, c, v, "index %s expected %s got %s", m.index, m.expected, m.got);
        }
    }
}

static int coll_call(const comm_t *cm, const test_case_t *c, const void *sbuf, void *rbuf,
                     const int *rcounts);

#ifdef STRATA_TEST_DEVICE
/* The call on device twins of the variant's memory (rbuf NULL stays NULL);
 * the bytes come back. */
static int device_call(const comm_t *cm, const test_case_t *c, variant_t v, char *block,
                       size_t block_bytes, char *sbuf, char *rbuf, size_t bytes, bool inplace,
                       bool no_rbuf, const int *rcounts)
{
    CUdeviceptr dblock, dsbuf = 0;
    char *drbuf, *dsb = NULL;
    int rc;

    dblock = stest_dev_dup(block, block_bytes);
    drbuf  = (char *)(uintptr_t)dblock + (rbuf - block);
    if (v == ADJACENT) {
        dsb = (char *)(uintptr_t)dblock + (sbuf - block);
    } else if (sbuf != NULL) {
        dsbuf = stest_dev_dup(sbuf, bytes);
        dsb = (char *)(uintptr_t)dsbuf;
    }
    call_variant = v;
    rc = coll_call(cm, c, inplace ? MPI_IN_PLACE : dsb, no_rbuf ? NULL : drbuf, rcounts);
    stest_dev_read_free(block, dblock, block_bytes);
    if (dsbuf != 0) {
        stest_dev_read_free(sbuf, dsbuf, bytes);
    }
    return rc;
}

/* 0 when a device is current, else the program skips (77). */
static int device_init(void)
{
    stest_dev_t dev;

    stest_mpi_init(world_rank, STEST_MPI_FAIL_FIRST);
    return stest_dev_open(0, &dev);
}
#else
static int device_call(const comm_t *cm, const test_case_t *c, variant_t v, char *block,
                       size_t block_bytes, char *sbuf, char *rbuf, size_t bytes, bool inplace,
                       bool no_rbuf, const int *rcounts)
{
    return MPI_ERR_OTHER; /* not reached: --device is refused without CUDA */
}
#endif

/* This rank's part of the reduced vector under --coll, [*lo, *hi), and the
 * elements of its rbuf (0: rbuf is NULL); rcounts (MPI_Reduce_scatter) is
 * filled for every rank. */
static void coll_part(const comm_t *cm, const test_case_t *c, variant_t v, int *rcounts, long *lo,
                      long *hi, long *rbuf_elems)
{
    long count = c->count, w = 0, left = count;

    *lo = 0;
    *hi = count;
    *rbuf_elems = count;
    switch (opt.coll) {
    case C_ALLREDUCE:
    case NCOLLS: break;
    case C_REDUCE:
        if (cm->rank != c->root) {
            *hi = 0;
            *rbuf_elems = 0;
        }
        break;
    case C_RSB:
        *lo = (count / cm->size) * cm->rank;
        *hi = *lo + count / cm->size;
        *rbuf_elems = (v == INPLACE) ? count : *hi - *lo;
        break;
    case C_RS:
        for (int r = 0; r < cm->size; r++) w += r % 3;
        for (int r = 0; r < cm->size; r++) {
            rcounts[r] = (w == 0) ? (int)count : (int)(count * (r % 3) / w);
            left -= rcounts[r];
        }
        for (int r = cm->size - 1; r >= 0 && left > 0; r--) {
            if (w == 0 || r % 3 != 0) {
                rcounts[r] += (int)left; /* the remainder to the last weighted rank */
                left = 0;
            }
        }
        *lo = 0;
        for (int r = 0; r < cm->rank; r++) *lo += rcounts[r];
        *hi = *lo + rcounts[cm->rank];
        *rbuf_elems = (v == INPLACE) ? count : *hi - *lo;
        break;
    }
}

#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
#define HAVE_PERSISTENT 1
/* The persistent form (--persistent): made, started and waited for twice
 * (once in place), freed. */
static int coll_pcall(const comm_t *cm, const test_case_t *c, const void *sbuf, void *rbuf,
                      const int *rcounts)
{
    MPI_Request req = MPI_REQUEST_NULL;
    /* the same number of starts on every rank: one for the in-place
     * variant, which at a reduce is in place at the root only */
    int rc, starts = (call_variant == INPLACE) ? 1 : 2;

    switch (opt.coll) {
    case C_REDUCE:
        rc = MPI_Reduce_init(sbuf, rbuf, (int)c->count, c->dt, c->mpi_op, c->root, cm->comm,
                             MPI_INFO_NULL, &req);
        break;
    case C_RSB:
        rc = MPI_Reduce_scatter_block_init(sbuf, rbuf, (int)(c->count / cm->size), c->dt, c->mpi_op,
                                           cm->comm, MPI_INFO_NULL, &req);
        break;
    case C_RS:
        rc = MPI_Reduce_scatter_init(sbuf, rbuf, rcounts, c->dt, c->mpi_op, cm->comm, MPI_INFO_NULL,
                                     &req);
        break;
    default:
        rc = MPI_Allreduce_init(sbuf, rbuf, (int)c->count, c->dt, c->mpi_op, cm->comm,
                                MPI_INFO_NULL, &req);
        break;
    }
    for (int i = 0; i < starts && rc == MPI_SUCCESS; i++) {
        rc = MPI_Start(&req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    if (req != MPI_REQUEST_NULL) MPI_Request_free(&req);
    return rc;
}
#else
#define HAVE_PERSISTENT 0
#endif

/* The nonblocking form, waited for at once (--nonblocking). */
static int coll_icall(const comm_t *cm, const test_case_t *c, const void *sbuf, void *rbuf,
                      const int *rcounts)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc;

    switch (opt.coll) {
    case C_REDUCE:
        rc = MPI_Ireduce(sbuf, rbuf, (int)c->count, c->dt, c->mpi_op, c->root, cm->comm, &req);
        break;
    case C_RSB:
        rc = MPI_Ireduce_scatter_block(sbuf, rbuf, (int)(c->count / cm->size), c->dt, c->mpi_op,
                                       cm->comm, &req);
        break;
    case C_RS:
        rc = MPI_Ireduce_scatter(sbuf, rbuf, rcounts, c->dt, c->mpi_op, cm->comm, &req);
        break;
    default:
        rc = MPI_Iallreduce(sbuf, rbuf, (int)c->count, c->dt, c->mpi_op, cm->comm, &req);
        break;
    }
    return (rc != MPI_SUCCESS) ? rc : MPI_Wait(&req, MPI_STATUS_IGNORE);
}

static int coll_call(const comm_t *cm, const test_case_t *c, const void *sbuf, void *rbuf,
                     const int *rcounts)
{
#if HAVE_PERSISTENT
    if (opt.persistent) return coll_pcall(cm, c, sbuf, rbuf, rcounts);
#endif
    if (opt.nonblocking) return coll_icall(cm, c, sbuf, rbuf, rcounts);
    switch (opt.coll) {
    case C_REDUCE:
        return MPI_Reduce(sbuf, rbuf, (int)c->count, c->dt, c->mpi_op, c->root, cm->comm);
    case C_RSB:
        return MPI_Reduce_scatter_block(sbuf, rbuf, (int)(c->count / cm->size), c->dt, c->mpi_op,
                                        cm->comm);
    case C_RS: return MPI_Reduce_scatter(sbuf, rbuf, rcounts, c->dt, c->mpi_op, cm->comm);
    default: return MPI_Allreduce(sbuf, rbuf, (int)c->count, c->dt, c->mpi_op, cm->comm);
    }
}

/* The check of elements [lo, hi) of the result, this rank's part at rbuf:
 * the checks index the whole vector, so the part is put at its place in
 * one (--coll other than allreduce; the derived types' gaps are the
 * allreduce's only). */
static void verify_part(const comm_t *cm, const test_case_t *c, variant_t v, const char *rbuf,
                        long lo, long hi)
{
    char *whole = xmalloc((size_t)c->count * c->extent + 1);
    mismatch_t m;

    memcpy(whole + (size_t)lo * c->extent, rbuf, (size_t)(hi - lo) * c->extent);
    for (long i = lo; i < hi; i++) {
        if (!c->check(c, cm, whole, NULL, i, &m)) {
            fail(cm, c, v, "index %s expected %s got %s", m.index, m.expected, m.got);
        }
    }
    free(whole);
}

/* One call.  Memory: [guard][rbuf][guard], or [guard][sbuf][rbuf][guard] for
 * ADJACENT.  A result identical to an already verified one of the same case
 * needs no second reference computation: the check depends on the bytes
 * alone (the reference is most of the test's time).  Under --coll, rbuf
 * holds this rank's part (the whole input where it is MPI_IN_PLACE). */
static void run_variant(const comm_t *cm, const test_case_t *c, variant_t v, const char *input,
                        char **verified)
{
    size_t bytes = (size_t)c->count * c->extent;
    int *rcounts = xmalloc(sizeof(int) * (size_t)cm->size);
    long lo, hi, rbuf_elems;
    size_t rbytes, part;
    /* MPI_Reduce: only the root may pass MPI_IN_PLACE */
    bool inplace = v == INPLACE && (opt.coll != C_REDUCE || cm->rank == c->root);
    size_t lead;
    char *block, *rbuf, *sbuf = NULL, *before = NULL;
    double t0;
    int rc;

    coll_part(cm, c, v, rcounts, &lo, &hi, &rbuf_elems);
    rbytes = (size_t)rbuf_elems * c->extent;
    part = (size_t)(hi - lo) * c->extent;
    lead = GUARD_BYTES + (v == ADJACENT ? bytes : 0);
    block = xmalloc(lead + rbytes + GUARD_BYTES);
    rbuf = block + lead;
    memset(block, POISON, lead + rbytes + GUARD_BYTES);
    if (v == SEPARATE || (v == INPLACE && !inplace)) sbuf = xmalloc(bytes);
    if (v == ADJACENT) sbuf = block + GUARD_BYTES;
    memcpy(inplace ? rbuf : sbuf, input, bytes);
    if (c->has_gaps) {
        before = xmalloc(bytes);
        memcpy(before, rbuf, bytes);
    }
    t0 = MPI_Wtime();
    if (opt.device) {
        rc = device_call(cm, c, v, block, lead + rbytes + GUARD_BYTES, sbuf, rbuf, bytes, inplace,
                         rbuf_elems == 0, rcounts);
    } else {
        call_variant = v;
        rc = coll_call(cm, c, inplace ? MPI_IN_PLACE : sbuf, rbuf_elems > 0 ? rbuf : NULL, rcounts);
    }
    mpi_seconds += MPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;

        MPI_Error_string(rc, msg, &len);
        fail(cm, c, v, "MPI_%s returned %d (%s)", coll_names[opt.coll], rc, msg);
    }
    check_untouched(cm, c, v, (unsigned char *)block, GUARD_BYTES, "guard before the buffers:");
    check_untouched(cm, c, v, (unsigned char *)rbuf + rbytes, GUARD_BYTES, "guard after rbuf:");
    if (!inplace) {
        check_sbuf(cm, c, v, (unsigned char *)sbuf, (const unsigned char *)input, bytes);
    }
    /* With gaps the check depends on `before` too, which differs per variant. */
    if (*verified == NULL || c->has_gaps || memcmp(rbuf, *verified, part) != 0) {
        if (opt.coll == C_ALLREDUCE) {
            verify_result(cm, c, v, rbuf, before);
        } else if (hi > lo) {
            verify_part(cm, c, v, rbuf, lo, hi);
        }
    }
    if (*verified == NULL) {
        *verified = xmalloc(part + 1);
        memcpy(*verified, rbuf, part);
    }
    stat_cases[cm->stat]++;
    if (v == SEPARATE || (v == INPLACE && !inplace)) free(sbuf);
    free(before);
    free(block);
    free(rcounts);
}

static void run_case(const comm_t *cm, const test_case_t *proto, unsigned variants)
{
    test_case_t c = *proto;
    char *input, *verified = NULL;
    const int roots[3] = {0, cm->size / 2, cm->size - 1};

    c.count = capped_count(c.count, c.extent);
    if (opt.coll == C_RSB) c.count -= c.count % cm->size; /* count/ranks each */
    c.root = roots[c.seed % 3];                           /* the same on every rank: the seed is */
    input = xmalloc((size_t)c.count * c.extent);
    c.fill(&c, input);
    for (int v = 0; v < NVARIANTS; v++) {
        if (variants & (1u << v)) run_variant(cm, &c, (variant_t)v, input, &verified);
    }
    free(verified);
    free(input);
}

static void run_predefined(const comm_t *cm, const char *type, op_id_t op, long count,
                           uint64_t tag, unsigned variants)
{
    test_case_t c = predefined_case(cm, find_type(type), op, count, tag);

    run_case(cm, &c, variants);
}

/* ----------------------------------------------------------- phases */

/* Every op with every type it is defined for. */
static void phase_matrix(const comm_t *cm)
{
    const long counts[] = {0, 1, 3, 13, 1021, -MEDIUM_BYTES}; /* < 0: bytes */

    for (int t = 0; t < NTYPES; t++) {
        for (int op = 0; op < O_NOPS; op++) {
            if (!op_defined((op_id_t)op, types[t].kind)) continue;
            for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
                long n = counts[k] < 0 ? count_for_bytes(-counts[k], types[t].size) : counts[k];
                test_case_t c = predefined_case(cm, &types[t], (op_id_t)op, n, 1);

                run_case(cm, &c, ALL_VARIANTS);
            }
        }
    }
}

/* Counts that are prime, even, powers of two; and ~1 MiB and ~3 MiB (more
 * chunks than strata has shared-memory slots) for a representative subset. */
static void phase_counts(const comm_t *cm)
{
    const long counts[] = {2, 7, 12, 31, 4096, 65521};
    const struct {
        const char *type;
        op_id_t op;
        bool big;
    } subset[] = {
        {"MPI_INT", O_SUM, true},          {"MPI_DOUBLE", O_SUM, true},
        {"MPI_FLOAT", O_SUM, true},        {"MPI_LONG_DOUBLE", O_SUM, true},
        {"MPI_DOUBLE_INT", O_MAXLOC, true}, {"MPI_UNSIGNED_LONG_LONG", O_BXOR, true},
        {"MPI_C_BOOL", O_LAND, true},      {"MPI_LONG_LONG_INT", O_MAX, false},
        {"MPI_FLOAT", O_PROD, false},      {"MPI_SHORT_INT", O_MINLOC, false},
    };

    for (size_t s = 0; s < sizeof(subset) / sizeof(subset[0]); s++) {
        const type_desc_t *t = find_type(subset[s].type);

        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            run_predefined(cm, subset[s].type, subset[s].op, counts[k], 2, ALL_VARIANTS);
        }
        if (subset[s].big) {
            run_predefined(cm, subset[s].type, subset[s].op, count_for_bytes(MIB_BYTES, t->size),
                           2, ALL_VARIANTS);
            run_predefined(cm, subset[s].type, subset[s].op, count_for_bytes(BIG_BYTES, t->size),
                           2, ALL_VARIANTS);
        }
    }
}

/* The sizes where coll/strata's default decision changes path, one element
 * below, at and above each, for every op on a signed and an unsigned
 * integer, a float, a double and a bool: 2 KiB (the logical ops' replicated
 * path on one node, node_small_max / 8), 8 KiB (small_max: the leader path
 * across nodes) and 16 KiB (node_small_max: the replicated path on one
 * node); see logic/coll_strata_decision.c. */
static void phase_crossovers(const comm_t *cm)
{
    const long crossovers[] = {2048, 8192, 16384};
    const char *names[] = {"MPI_SIGNED_CHAR", "MPI_UNSIGNED", "MPI_FLOAT", "MPI_DOUBLE",
                           "MPI_C_BOOL"};

    for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
        const type_desc_t *t = find_type(names[n]);

        for (int op = 0; op < O_NOPS; op++) {
            if (!op_defined((op_id_t)op, t->kind)) continue;
            for (size_t x = 0; x < sizeof(crossovers) / sizeof(crossovers[0]); x++) {
                long at = crossovers[x] / (long)t->size;

                for (long d = -1; d <= 1; d++) {
                    run_predefined(cm, names[n], (op_id_t)op, at + d, 300 + 10 * x + (d + 1),
                                   1u << ((n + x + (size_t)(d + 1)) % NVARIANTS));
                }
            }
        }
    }
}

/* Small and large calls in turn on one communicator, different types and
 * ops, fresh inputs each call: state kept from one call (chunk counters,
 * slots, cached sizes) must not leak into the next. */
static void phase_alternating(const comm_t *cm)
{
    const struct {
        const char *type;
        op_id_t op;
        long count; /* < 0: bytes */
    } seq[] = {
        {"MPI_INT", O_SUM, 13},           {"MPI_DOUBLE", O_SUM, -BIG_BYTES},
        {"MPI_INT", O_SUM, 1},            {"MPI_FLOAT", O_MAX, -MEDIUM_BYTES},
        {"MPI_DOUBLE_INT", O_MAXLOC, 7},  {"MPI_INT", O_SUM, -MIB_BYTES},
        {"MPI_UNSIGNED_LONG_LONG", O_BXOR, 0}, {"MPI_LONG_DOUBLE", O_SUM, -BIG_BYTES},
        {"MPI_SHORT", O_MIN, 3},          {"MPI_INT", O_SUM, 65521},
        {"MPI_C_BOOL", O_LAND, 1021},     {"MPI_DOUBLE", O_SUM, -MIB_BYTES},
        {"MPI_UNSIGNED_CHAR", O_BOR, 2},  {"MPI_INT", O_SUM, -MEDIUM_BYTES},
        {"MPI_INT", O_SUM, 1},
    };

    for (int rep = 0; rep < 2; rep++) {
        for (size_t s = 0; s < sizeof(seq) / sizeof(seq[0]); s++) {
            const type_desc_t *t = find_type(seq[s].type);
            long n = seq[s].count < 0 ? count_for_bytes(-seq[s].count, t->size) : seq[s].count;

            run_predefined(cm, seq[s].type, seq[s].op, n, 100 + 100 * (uint64_t)rep + s,
                           1u << ((s + (size_t)rep) % NVARIANTS));
        }
    }
}

static void phase_user_ops(const comm_t *cm)
{
    const long counts[] = {0, 1, 3, 13, 1021, 65521, -BIG_BYTES};

    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        long n = counts[k] < 0 ? count_for_bytes(-counts[k], sizeof(int)) : counts[k];
        test_case_t c = predefined_case(cm, find_type("MPI_INT"), O_SUM, n, 3);

        snprintf(c.what, sizeof(c.what), "user_int_sum(commutative)/MPI_INT");
        c.mpi_op = user_sum_op;
        run_case(cm, &c, ALL_VARIANTS);
    }
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        const noncomm_t *ncs[] = {&mat2, &affine};

        for (int j = 0; j < 2; j++) {
            size_t extent = sizeof(uint32_t) * (size_t)ncs[j]->words;
            long n = counts[k] < 0 ? count_for_bytes(-counts[k], extent) : counts[k];
            test_case_t c = noncomm_case(cm, ncs[j], n);

            run_case(cm, &c, ALL_VARIANTS);
        }
    }
}

static void phase_derived(const comm_t *cm)
{
    const long counts[] = {0, 1, 3, 13, 1021, -MEDIUM_BYTES};
    const layout_t *layouts[] = {&contig5, &vector325, &vector325r};

    for (int l = 0; l < 3; l++) {
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            size_t extent = sizeof(int) * (size_t)layouts[l]->ext_ints;
            long n = counts[k] < 0 ? count_for_bytes(-counts[k], extent) : counts[k];
            test_case_t c = layout_case(cm, layouts[l], n);

            run_case(cm, &c, ALL_VARIANTS);
        }
    }
}

static void phase_large(const comm_t *cm)
{
    const char *names[] = {"MPI_INT", "MPI_DOUBLE"};

    for (int k = 0; k < 2; k++) {
        const type_desc_t *t = find_type(names[k]);

        run_predefined(cm, names[k], O_SUM, next_prime(LARGE_BYTES / (long)t->size), 4,
                       (1u << SEPARATE) | (1u << INPLACE));
    }
}

static void run_phase(const comm_t *cm, const char *name, void (*phase)(const comm_t *))
{
    long before = stat_cases[cm->stat];
    double t0 = MPI_Wtime(), mpi0 = mpi_seconds;

    phase(cm);
    if (!opt.quiet && cm->rank == 0) {
        printf(PROG ": %s (%d ranks): %s: %ld cases, %.2f s (%.2f s in MPI_%s)\n", cm->name,
               cm->size, name, stat_cases[cm->stat] - before, MPI_Wtime() - t0, mpi_seconds - mpi0,
               coll_names[opt.coll]);
        fflush(stdout);
    }
}

static void test_comm(const comm_t *cm)
{
    run_phase(cm, "op x type matrix", phase_matrix);
    run_phase(cm, "counts", phase_counts);
    run_phase(cm, "crossovers", phase_crossovers);
    run_phase(cm, "alternating sizes", phase_alternating);
    run_phase(cm, "user ops", phase_user_ops);
    if (opt.coll == C_ALLREDUCE) run_phase(cm, "derived datatypes", phase_derived);
    if (opt.large && cm->comm == MPI_COMM_WORLD) run_phase(cm, ">= 64 MiB", phase_large);
}

/* Calls taking turns over every communicator this rank belongs to, sizes
 * alternating: one communicator's state must not disturb another's.  All
 * ranks walk the same list in the same order, so the collectives match. */
static void test_interleaved(comm_t *const *comms, int ncomms)
{
    const struct {
        const char *type;
        op_id_t op;
    } pick[] = {
        {"MPI_INT", O_SUM}, {"MPI_DOUBLE", O_SUM}, {"MPI_FLOAT", O_MAX},
        {"MPI_DOUBLE_INT", O_MAXLOC}, {"MPI_UNSIGNED", O_BXOR},
    };
    const long small[] = {1, 13, 1021};
    double t0 = MPI_Wtime();

    for (int step = 0; step < 12; step++) {
        for (int j = 0; j < ncomms; j++) {
            comm_t turn;
            const type_desc_t *t = find_type(pick[(step + j) % 5].type);
            long n;

            if (comms[j] == NULL) continue; /* not a member */
            turn = *comms[j];
            turn.stat = S_INTERLEAVED;
            n = (step + j) % 2 ? count_for_bytes(MEDIUM_BYTES, t->size) : small[step % 3];
            run_predefined(&turn, t->name, pick[(step + j) % 5].op, n, 1000 + (uint64_t)step,
                           1u << ((step + j) % NVARIANTS));
        }
    }
    stat_size[S_INTERLEAVED] = world_size;
    if (!opt.quiet && world_rank == 0) {
        printf(PROG ": interleaved: %ld cases, %.2f s\n", stat_cases[S_INTERLEAVED],
               MPI_Wtime() - t0);
        fflush(stdout);
    }
}

/* ---------------------------------------------------- communicators */

static comm_t *make_comm(MPI_Comm comm, int stat)
{
    comm_t *cm;

    if (comm == MPI_COMM_NULL) return NULL;
    cm = xmalloc(sizeof(*cm));
    cm->comm = comm;
    cm->name = stat_names[stat];
    cm->stat = stat;
    MPI_Comm_size(comm, &cm->size);
    MPI_Comm_rank(comm, &cm->rank);
    cm->wranks = xmalloc(sizeof(int) * (size_t)cm->size);
    MPI_Allgather(&world_rank, 1, MPI_INT, cm->wranks, 1, MPI_INT, comm);
    if (comm != MPI_COMM_WORLD) MPI_Comm_set_name(comm, cm->name); /* in coll verbose output */
    if (opt.nonblocking) {
        int one = 1, all = 0;

        /* a blocking call sets the communicator up (see --nonblocking) */
        MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, comm);
    }
    stat_size[stat] = cm->size;
    return cm;
}

static void free_comm(comm_t *cm)
{
    if (cm == NULL) return;
    if (cm->comm != MPI_COMM_WORLD) MPI_Comm_free(&cm->comm);
    free(cm->wranks);
    free(cm);
}

static void print_summary(void)
{
    int sizes[NSTATS];
    long cases[NSTATS];

    /* A rank outside a communicator counts 0; the members agree. */
    MPI_Reduce(stat_size, sizes, NSTATS, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(stat_cases, cases, NSTATS, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (world_rank != 0) return;
    for (int s = 0; s < NSTATS; s++) {
        if (sizes[s] > 0) {
            printf(PROG ": OK: %s (%d ranks): %ld cases\n", stat_names[s], sizes[s], cases[s]);
        }
    }
    fflush(stdout);
}

/* ----------------------------------------------------------- main */

static bool parse_bytes(const char *s, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (end == s || v < 0) return false;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    *out = v;
    return *end == '\0';
}

static bool parse_options(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
            if (!parse_bytes(argv[++i], &opt.max_bytes)) return false;
        } else if (!strcmp(argv[i], "--large")) {
            opt.large = true;
        } else if (!strcmp(argv[i], "--quiet")) {
            opt.quiet = true;
        } else if (!strcmp(argv[i], "--nonblocking")) {
            opt.nonblocking = true;
        } else if (!strcmp(argv[i], "--persistent")) {
            if (!HAVE_PERSISTENT) {
                fprintf(stderr, "test_allreduce_ops: no persistent collectives in this MPI\n");
                exit(77);
            }
            opt.nonblocking = opt.persistent = true;
#ifdef STRATA_TEST_DEVICE
        } else if (!strcmp(argv[i], "--device")) {
            opt.device = true;
#endif
        } else if (!strcmp(argv[i], "--coll") && i + 1 < argc) {
            int k;

            for (k = 0; k < NCOLLS && strcmp(argv[i + 1], coll_names[k]); k++) {
            }
            if (k == NCOLLS) return false;
            opt.coll = (coll_id_t)k;
            i++;
        } else if (!strcmp(argv[i], "--only-comm") && i + 1 < argc &&
                   !strcmp(argv[i + 1], "world")) {
            opt.only_world = true;
            i++;
        } else {
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    comm_t *world, *dup = NULL, *half = NULL, *minus_last = NULL, *reversed = NULL;
    MPI_Comm c;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (!parse_options(argc, argv)) {
        if (world_rank == 0) {
            fprintf(stderr, "usage: " PROG " [--max-bytes N[K|M|G]] [--large] [--quiet] "
                            "[--only-comm world] [--coll allreduce|reduce|"
                            "reduce_scatter_block|reduce_scatter]\n");
        }
        MPI_Finalize();
        return 2;
    }
#ifdef STRATA_TEST_DEVICE
    {
        int ok = !opt.device || device_init() == 0, all_ok = 0;

        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all_ok) {
            if (world_rank == 0) printf(PROG ": skip: no CUDA device\n");
            MPI_Finalize();
            return 77;
        }
    }
#endif
    /* Errors come back as return codes, so a failing call names its case. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check_type_extents();
    create_user_types_and_ops();

    world = make_comm(MPI_COMM_WORLD, S_WORLD);
    test_comm(world);
    if (!opt.only_world) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        dup = make_comm(c, S_DUP);
        test_comm(dup);

        MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &c);
        half = make_comm(c, world_rank % 2 ? S_ODD : S_EVEN);
        test_comm(half);

        /* All ranks but the last: an odd size whenever the world is even. */
        MPI_Comm_split(MPI_COMM_WORLD, world_rank == world_size - 1 && world_size > 1
                                           ? MPI_UNDEFINED : 0, world_rank, &c);
        minus_last = make_comm(c, S_MINUS_LAST);
        if (minus_last) test_comm(minus_last);

        /* Rank order reversed: the non-commutative ops must follow it. */
        MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &c);
        reversed = make_comm(c, S_REVERSED);
        test_comm(reversed);

        test_interleaved((comm_t *const[]){world, dup, half, minus_last, reversed}, 5);
    }
    print_summary();

    free_comm(reversed);
    free_comm(minus_last);
    free_comm(half);
    free_comm(dup);
    free_comm(world);
    free_user_types_and_ops();
    MPI_Finalize();
    return 0;
}
