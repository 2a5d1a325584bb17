/*
 * The wire formats of coll/strata's compression between nodes
 * (ompi_coll/logic/coll_strata_codec.c) against references written here
 * independently:
 *
 *   - rounding: every finite value of each format listed from its own bit
 *     layout (a decoder written from the formats' definitions, not the
 *     codec's), and the nearest one found by binary search, ties to the
 *     even code; beyond the largest finite value plus half its quantum, an
 *     infinity (scale 1 only: blocks are scaled below it);
 *   - pack then unpack of blocks: each element equals the reference
 *     rounding of x * 2^k, times 2^-k, with k computed here from the block's
 *     largest finite magnitude (frexp), for floats and doubles, counts 0 to
 *     several blocks and not a multiple of the block;
 *   - NaN and infinities survive with their sign, zeros keep their sign,
 *     no finite value becomes infinite (FLT_MAX, DBL_MAX, wide ranges),
 *     denormal inputs, accumulate adds in the destination's type, the
 *     sizes on the wire, the names.
 *
 *   test_codec [--seed N]     prints "test_codec: OK (N checks)"
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_strata_codec.h"

static long checks, failures;

#define CHECK(cond, ...) \
    do { \
        ++checks; \
        if (!(cond)) { \
            if (++failures <= 20) { \
                fprintf(stderr, "test_codec: FAIL: " __VA_ARGS__); \
                fputc('\n', stderr); \
            } \
        } \
    } while (0)

/* A format as its definition gives it: exponent and mantissa bits, bias. */
typedef struct {
    mca_coll_strata_codec_t codec;
    int ebits, mbits, bias;
    int emax; /* the scale's target exponent + 1 (coll_strata_codec.h) */
    int scaled;
    double *values; /* every finite non-negative value, by code */
    int nvalues;
} fmt_t;

static fmt_t fmts[] = {
    {MCA_COLL_STRATA_CODEC_BF16, 8, 7, 127, 127, 1, NULL, 0},
    {MCA_COLL_STRATA_CODEC_FP16, 5, 10, 15, 15, 1, NULL, 0},
    {MCA_COLL_STRATA_CODEC_FP8, 4, 3, 7, 7, 1, NULL, 0},
};

/* Code c (non-negative, exponent field not all ones) as a value. */
static double ref_value(const fmt_t *f, int c)
{
    int e = c >> f->mbits, m = c & ((1 << f->mbits) - 1);

    if (0 == e) {
        return (double)m * pow(2.0, 1 - f->bias - f->mbits);
    }
    return (1.0 + (double)m / (double)(1 << f->mbits)) * pow(2.0, e - f->bias);
}

static void ref_table(fmt_t *f)
{
    f->nvalues = ((1 << f->ebits) - 1) << f->mbits; /* codes below the all-ones exponent */
    f->values = malloc(sizeof(double) * (size_t)f->nvalues);
    for (int c = 0; c < f->nvalues; ++c) {
        f->values[c] = ref_value(f, c);
    }
}

/* x rounded to f by the table (x finite). */
static double ref_round(const fmt_t *f, double x)
{
    double a = fabs(x), top = f->values[f->nvalues - 1];
    double half_q = (top - f->values[f->nvalues - 2]) / 2;
    int lo = 0, hi = f->nvalues - 1, pick;

    if (a >= top + half_q) {
        return copysign(INFINITY, x);
    }
    if (a >= top) {
        return copysign(top, x);
    }
    while (hi - lo > 1) { /* values[lo] <= a < values[hi] */
        int mid = (lo + hi) / 2;

        if (f->values[mid] <= a) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if (a - f->values[lo] < f->values[hi] - a) {
        pick = lo;
    } else if (a - f->values[lo] > f->values[hi] - a) {
        pick = hi;
    } else {
        pick = (0 == (lo & 1)) ? lo : hi;
    }
    return copysign(f->values[pick], x);
}

static int ref_scale(const fmt_t *f, const double *x, size_t n)
{
    double m = 0.0;
    int e;

    if (!f->scaled) {
        return 0;
    }
    for (size_t i = 0; i < n; ++i) {
        if (isfinite(x[i]) && fabs(x[i]) > m) {
            m = fabs(x[i]);
        }
    }
    if (0.0 == m) {
        return 0;
    }
    (void)frexp(m, &e); /* m = f * 2^e, 0.5 <= f < 1: floor(log2 m) = e - 1 */
    /* one binade lower where the maximum would round up to 2^emax */
    return (ref_round(f, ldexp(m, (f->emax - 1) - (e - 1))) >= ldexp(1.0, f->emax))
               ? (f->emax - 1) - (e - 1) - 1
               : (f->emax - 1) - (e - 1);
}

static int same(double a, double b)
{
    if (isnan(a) || isnan(b)) {
        return isnan(a) && isnan(b) && signbit(a) == signbit(b);
    }
    return a == b && signbit(a) == signbit(b);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A value of wide range: sign, exponent in [-emin, emax], random mantissa. */
static double wide(int lo_exp, int hi_exp)
{
    uint64_t r = next_rand();
    double m = 1.0 + (double)(r >> 11) / 9007199254740992.0;
    int e = lo_exp + (int)(next_rand() % (uint64_t)(hi_exp - lo_exp + 1));

    return ((r & 1) ? -1.0 : 1.0) * ldexp(m, e);
}

/* Single values: the codec's rounding against the table's, scale 1, and
 * at the exact ties between neighbours and the overflow threshold. */
static void check_rounding(const fmt_t *f)
{
    const char *name = mca_coll_strata_codec_name(f->codec);

    for (int c = 0; c + 1 < f->nvalues; c += (f->nvalues > 4096) ? 7 : 1) {
        double a = f->values[c], b = f->values[c + 1], mid = a + (b - a) / 2;
        double probes[] = {a, b, mid, nextafter(mid, 0.0), nextafter(mid, INFINITY)};

        for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); ++p) {
            for (int s = 0; s < 2; ++s) {
                double x = s ? -probes[p] : probes[p];
                double got = mca_coll_strata_codec_round(f->codec, x, 0);

                CHECK(same(got, ref_round(f, x)), "%s: round(%a) = %a, reference %a", name, x, got,
                      ref_round(f, x));
            }
        }
    }
    for (int i = 0; i < 20000; ++i) {
        double x = wide(-160, 130);
        double got = mca_coll_strata_codec_round(f->codec, x, 0);

        CHECK(same(got, ref_round(f, x)), "%s: round(%a) = %a, reference %a", name, x, got,
              ref_round(f, x));
    }
}

/* One vector through pack and unpack, as float or double: each element as
 * the reference rounds it in its block's scale. */
static void check_vector(const fmt_t *f, const double *x, size_t n, int as_float)
{
    const char *name = mca_coll_strata_codec_name(f->codec);
    mca_coll_strata_codec_elem_t elem = as_float ? MCA_COLL_STRATA_CODEC_FLOAT
                                                 : MCA_COLL_STRATA_CODEC_DOUBLE;
    size_t esz = as_float ? sizeof(float) : sizeof(double);
    size_t wbytes = mca_coll_strata_codec_bytes(f->codec, n);
    size_t nblocks = (n + MCA_COLL_STRATA_CODEC_BLOCK - 1) / MCA_COLL_STRATA_CODEC_BLOCK;
    unsigned char *src = malloc(n * esz + 1), *dst = malloc(n * esz + 1),
                  *acc = malloc(n * esz + 1);
    unsigned char *wire = malloc(wbytes + 1);
    double *xin = malloc(sizeof(double) * (n + 1));

    CHECK(wbytes ==
              n * (f->codec == MCA_COLL_STRATA_CODEC_FP8 ? 1 : 2) + (f->scaled ? 2 * nblocks : 0),
          "%s: %zu elements take %zu bytes", name, n, wbytes);
    for (size_t i = 0; i < n; ++i) {
        if (as_float) {
            ((float *)src)[i] = (float)x[i];
            xin[i] = (double)((float *)src)[i];
            ((float *)acc)[i] = 1.5f;
        } else {
            ((double *)src)[i] = x[i];
            xin[i] = x[i];
            ((double *)acc)[i] = 1.5;
        }
    }
    mca_coll_strata_codec_pack(f->codec, elem, src, n, wire);
    mca_coll_strata_codec_unpack(f->codec, elem, wire, n, dst, 0);
    mca_coll_strata_codec_unpack(f->codec, elem, wire, n, acc, 1);
    {
        /* packed again, what was unpacked comes back the same bits (a ring
         * forwards what it received) */
        unsigned char *wire2 = malloc(wbytes + 1), *dst2 = malloc(n * esz + 1);

        mca_coll_strata_codec_pack(f->codec, elem, dst, n, wire2);
        mca_coll_strata_codec_unpack(f->codec, elem, wire2, n, dst2, 0);
        for (size_t i = 0; i < n; ++i) {
            double a = as_float ? (double)((float *)dst)[i] : ((double *)dst)[i];
            double b = as_float ? (double)((float *)dst2)[i] : ((double *)dst2)[i];

            CHECK(same(a, b),
                  "%s %s: element %zu of %zu: %a packed again after unpacking "
                  "became %a",
                  name, as_float ? "float" : "double", i, n, a, b);
        }
        free(wire2);
        free(dst2);
    }
    for (size_t lo = 0; lo < n; lo += MCA_COLL_STRATA_CODEC_BLOCK) {
        size_t bn = (n - lo < MCA_COLL_STRATA_CODEC_BLOCK) ? n - lo : MCA_COLL_STRATA_CODEC_BLOCK;
        int k = ref_scale(f, xin + lo, f->scaled ? bn : n - lo);

        for (size_t i = lo; i < lo + bn; ++i) {
            double want = isfinite(xin[i]) ? ldexp(ref_round(f, ldexp(xin[i], k)), -k) : xin[i];

            /* rounded past the type's largest value: the format's largest
             * value of the element's binade instead (coll_strata_codec.h) */
            if (f->scaled && isfinite(xin[i]) &&
                fabs(want) > (as_float ? (double)FLT_MAX : DBL_MAX)) {
                double below = 0, top;
                int e;

                (void)frexp(ldexp(xin[i], k), &e);
                top = ldexp(1.0, e); /* the next power of two above the scaled element */
                for (int c = 0; c < f->nvalues; ++c) {
                    if (f->values[c] < top) {
                        below = f->values[c];
                    }
                }
                want = copysign(ldexp(below, -k), xin[i]);
            }
            double got = as_float ? (double)((float *)dst)[i] : ((double *)dst)[i];
            double sum = as_float ? (double)((float *)acc)[i] : ((double *)acc)[i];
            double want_sum = as_float ? (double)(1.5f + (float)want) : 1.5 + want;

            if (as_float) {
                want = (double)(float)want;
            }
            CHECK(same(got, want), "%s %s: element %zu of %zu: %a became %a, reference %a (k %d)",
                  name, as_float ? "float" : "double", i, n, xin[i], got, want, k);
            CHECK(same(sum, want_sum), "%s: accumulate of element %zu: %a, want %a", name, i, sum,
                  want_sum);
            CHECK(!isfinite(xin[i]) || isfinite(got), "%s: finite %a became %a", name, xin[i], got);
        }
    }
    free(src);
    free(dst);
    free(acc);
    free(wire);
    free(xin);
}

static void check_vectors(const fmt_t *f)
{
    static const size_t counts[] = {0, 1, 2, 127, 128, 129, 255, 256, 1000};
    double *x = malloc(sizeof(double) * 1000);

    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
        size_t n = counts[ci];

        for (int kind = 0; kind < 6; ++kind) {
            for (size_t i = 0; i < n; ++i) {
                switch (kind) {
                case 0: /* gradients: moderate range */ x[i] = wide(-20, 2); break;
                case 1: /* wide dynamic range inside a block */ x[i] = wide(-60, 60); break;
                case 2: /* cancellation: pairs of near-opposite values */
                    x[i] = (i & 1) ? -x[i - 1] * (1 + 1e-7) : wide(-3, 3);
                    break;
                case 3: /* specials among ordinary values */
                    x[i] = (i % 7 == 0)   ? NAN
                           : (i % 7 == 1) ? INFINITY
                           : (i % 7 == 2) ? -INFINITY
                           : (i % 7 == 3) ? -0.0
                           : (i % 7 == 4) ? 0.0
                                          : wide(-5, 5);
                    break;
                case 4: /* the types' limits: largest and denormal values */
                    x[i] = (i % 4 == 0)   ? FLT_MAX
                           : (i % 4 == 1) ? -FLT_MAX
                           : (i % 4 == 2) ? FLT_MIN / 8
                                          : wide(100, 127);
                    break;
                default: /* zeros only */ x[i] = (i & 1) ? -0.0 : 0.0; break;
                }
            }
            check_vector(f, x, n, 1);
            check_vector(f, x, n, 0);
        }
    }
    /* doubles beyond float's range: DBL_MAX and denormal doubles */
    for (size_t i = 0; i < 300; ++i) {
        x[i] = (i % 3 == 0) ? DBL_MAX : (i % 3 == 1) ? DBL_MIN / 1024 : wide(-1000, 1000);
    }
    check_vector(f, x, 300, 0);
    free(x);
}

int main(int argc, char **argv)
{
    mca_coll_strata_codec_t c;

    if (argc == 3 && 0 == strcmp(argv[1], "--seed")) {
        rng = strtoull(argv[2], NULL, 0) | 1;
    }
    for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); ++i) {
        ref_table(&fmts[i]);
        check_rounding(&fmts[i]);
        check_vectors(&fmts[i]);
    }
    CHECK(mca_coll_strata_codec_parse("fp8", &c) && MCA_COLL_STRATA_CODEC_FP8 == c, "parse fp8");
    CHECK(mca_coll_strata_codec_parse("none", &c) && MCA_COLL_STRATA_CODEC_NONE == c, "parse none");
    CHECK(!mca_coll_strata_codec_parse("fp4", &c) && !mca_coll_strata_codec_parse(NULL, &c),
          "unknown names refused");
    CHECK(0 == strcmp(mca_coll_strata_codec_name(MCA_COLL_STRATA_CODEC_BF16), "bf16"), "name");
    if (failures) {
        fprintf(stderr, "test_codec: %ld of %ld checks failed\n", failures, checks);
        return 1;
    }
    printf("test_codec: OK (%ld checks)\n", checks);
    return 0;
}
