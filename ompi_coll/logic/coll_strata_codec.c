/*
 * coll/strata wire formats (coll_strata_codec.h): rounding, the per-block
 * scale, and the bit layouts of bf16, fp16 and fp8 (E4M3, IEEE specials).
 *
 * One rounding routine serves every format: a value is rounded to the
 * format's quantum at its exponent (2^(E - mantissa bits), or the
 * subnormal quantum below the smallest normal exponent), to nearest, ties
 * to even, in whatever rounding mode the application set (so every node
 * rounds alike, and the fast path's bit arithmetic agrees with it); the
 * division and multiplication by a power of two are exact in double, so a
 * float or a double is rounded once, from its own value.  Encoding then
 * only takes apart a value that is already representable.
 */
#include "coll_strata_codec.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* A narrow format: stored mantissa bits, exponent range of its normal
 * numbers, its exponent field's bias, bytes per element (every format is
 * scaled per block: coll_strata_codec.h). */
typedef struct {
    int mant;
    int emin, emax;
    int bias;
    int bytes;
} mca_coll_strata_codec_fmt_t;

static const mca_coll_strata_codec_fmt_t mca_coll_strata_codec_fmts[] = {
    [MCA_COLL_STRATA_CODEC_BF16] = {.mant = 7, .emin = -126, .emax = 127, .bias = 127, .bytes = 2},
    [MCA_COLL_STRATA_CODEC_FP16] = {.mant = 10, .emin = -14, .emax = 15, .bias = 15, .bytes = 2},
    [MCA_COLL_STRATA_CODEC_FP8] = {.mant = 3, .emin = -6, .emax = 7, .bias = 7, .bytes = 1},
};

static const char *const mca_coll_strata_codec_names[] = {
    [MCA_COLL_STRATA_CODEC_NONE] = "none",
    [MCA_COLL_STRATA_CODEC_BF16] = "bf16",
    [MCA_COLL_STRATA_CODEC_FP16] = "fp16",
    [MCA_COLL_STRATA_CODEC_FP8] = "fp8",
};

const char *mca_coll_strata_codec_name(mca_coll_strata_codec_t codec)
{
    return (codec <= MCA_COLL_STRATA_CODEC_FP8) ? mca_coll_strata_codec_names[codec] : "?";
}

bool mca_coll_strata_codec_parse(const char *name, mca_coll_strata_codec_t *codec)
{
    for (int c = MCA_COLL_STRATA_CODEC_NONE; c <= MCA_COLL_STRATA_CODEC_FP8; ++c) {
        if (NULL != name && 0 == strcmp(name, mca_coll_strata_codec_names[c])) {
            *codec = (mca_coll_strata_codec_t)c;
            return true;
        }
    }
    return false;
}

static size_t mca_coll_strata_codec_blocks(size_t count)
{
    return (count + MCA_COLL_STRATA_CODEC_BLOCK - 1) / MCA_COLL_STRATA_CODEC_BLOCK;
}

size_t mca_coll_strata_codec_bytes(mca_coll_strata_codec_t codec, size_t count)
{
    const mca_coll_strata_codec_fmt_t *f = &mca_coll_strata_codec_fmts[codec];

    if (MCA_COLL_STRATA_CODEC_NONE == codec) {
        return 0;
    }
    return count * (size_t)f->bytes + 2 * mca_coll_strata_codec_blocks(count);
}

double mca_coll_strata_codec_ratio(mca_coll_strata_codec_t codec, size_t elem_bytes)
{
    size_t n = 64 * MCA_COLL_STRATA_CODEC_BLOCK;

    if (MCA_COLL_STRATA_CODEC_NONE == codec || 0 == elem_bytes) {
        return 1.0;
    }
    return (double)mca_coll_strata_codec_bytes(codec, n) / (double)(n * elem_bytes);
}

/* t to the nearest integer, ties to even, whatever rounding mode the
 * application set (floor is exact in every mode; so is t - floor(t) for
 * the magnitudes that reach here, below 2^53). */
static double mca_coll_strata_codec_rne(double t)
{
    double f = floor(t), d = t - f;

    /* (a zero keeps t's sign, as nearbyint's would) */
    if (d > 0.5 || (0.5 == d && 0.0 != fmod(f, 2.0))) {
        return copysign(f + 1.0, t);
    }
    return copysign(f, t);
}

/* x (finite, already scaled) rounded to the format: ties to even; beyond
 * the largest finite value, an infinity (codec_round only: a block's scale
 * keeps every element below it). */
static double mca_coll_strata_codec_round_fmt(const mca_coll_strata_codec_fmt_t *f, double x)
{
    int e;
    double q, r;

    if (0.0 == x) {
        return x;
    }
    e = ilogb(x);
    q = ldexp(1.0, ((e < f->emin) ? f->emin : e) - f->mant);
    r = mca_coll_strata_codec_rne(x / q) * q;
    if (fabs(r) > ldexp(2.0 - ldexp(1.0, -f->mant), f->emax)) {
        return copysign(INFINITY, x);
    }
    return r;
}

double mca_coll_strata_codec_round(mca_coll_strata_codec_t codec, double x, int scale_exp)
{
    if (MCA_COLL_STRATA_CODEC_NONE == codec || !isfinite(x)) {
        return x;
    }
    return ldexp(
        mca_coll_strata_codec_round_fmt(&mca_coll_strata_codec_fmts[codec], ldexp(x, scale_exp)),
        -scale_exp);
}

/* The bits of r, a value of the format (or an infinity or NaN). */
static uint32_t mca_coll_strata_codec_encode(const mca_coll_strata_codec_fmt_t *f, double r)
{
    uint32_t sign = signbit(r) ? 1u : 0u, top = (uint32_t)(f->bytes * 8 - 1);
    uint32_t exp_all = (1u << (top - (uint32_t)f->mant)) - 1; /* the exponent field's ones */
    double a = fabs(r);
    int e;

    if (isnan(r)) {
        return (sign << top) | (exp_all << f->mant) | (1u << (f->mant - 1));
    }
    if (isinf(r)) {
        return (sign << top) | (exp_all << f->mant);
    }
    if (0.0 == a) {
        return sign << top;
    }
    e = ilogb(a);
    if (e < f->emin) { /* subnormal: the mantissa counts the smallest quantum */
        return (sign << top) | (uint32_t)ldexp(a, f->mant - f->emin);
    }
    return (sign << top) | ((uint32_t)(e + f->bias) << f->mant) |
           ((uint32_t)ldexp(a, f->mant - e) - (1u << f->mant));
}

/*
 * The same rounding and encoding, fast, for a value in the format's normal
 * range: the double's own bits rounded to nearest even at the format's
 * mantissa (a carry moves the exponent up), then repacked.  Values outside
 * that range (the format's subnormals, zeros) take the general path above.
 */
static uint32_t mca_coll_strata_codec_encode_fast(const mca_coll_strata_codec_fmt_t *f, double y)
{
    uint64_t b, m, r;
    uint32_t top = (uint32_t)(f->bytes * 8 - 1);
    int e, shift = 52 - f->mant;

    memcpy(&b, &y, sizeof(b));
    e = (int)((b >> 52) & 0x7ff) - 1023;
    if (e < f->emin || e > f->emax) {
        return mca_coll_strata_codec_encode(f, mca_coll_strata_codec_round_fmt(f, y));
    }
    m = (b & ((1ull << 52) - 1)) | (1ull << 52);
    r = (m + (1ull << (shift - 1)) - 1 + ((m >> shift) & 1)) >> shift;
    if (r >> (f->mant + 1)) { /* rounded up to the next power of two */
        r >>= 1;
        if (++e > f->emax) {
            return mca_coll_strata_codec_encode(f, copysign(INFINITY, y));
        }
    }
    return ((uint32_t)(b >> 63) << top) | ((uint32_t)(e + f->bias) << f->mant) |
           ((uint32_t)r & ((1u << f->mant) - 1));
}

static double mca_coll_strata_codec_decode(const mca_coll_strata_codec_fmt_t *f, uint32_t bits)
{
    uint32_t top = (uint32_t)(f->bytes * 8 - 1);
    uint32_t exp_all = (1u << (top - (uint32_t)f->mant)) - 1;
    uint32_t mant = bits & ((1u << f->mant) - 1), ex = (bits >> f->mant) & exp_all;
    double v;

    if (ex == exp_all) {
        v = (0 == mant) ? INFINITY : NAN;
    } else if (0 == ex) {
        v = ldexp((double)mant, f->emin - f->mant);
    } else {
        v = ldexp((double)(mant | (1u << f->mant)), (int)ex - f->bias - f->mant);
    }
    return ((bits >> top) & 1u) ? -v : v;
}

/* decode, fast, for the format's normal numbers: the bits moved into a
 * float's (every value of the three formats is a float); the others
 * (subnormals, zeros, infinities, NaN) through the general decoder. */
static double mca_coll_strata_codec_decode_fast(const mca_coll_strata_codec_fmt_t *f, uint32_t bits)
{
    uint32_t top = (uint32_t)(f->bytes * 8 - 1);
    uint32_t exp_all = (1u << (top - (uint32_t)f->mant)) - 1;
    uint32_t ex = (bits >> f->mant) & exp_all, u;
    float v;

    if (0 == ex || ex == exp_all) {
        return mca_coll_strata_codec_decode(f, bits);
    }
    u = (((bits >> top) & 1u) << 31) | ((ex - (uint32_t)f->bias + 127u) << 23) |
        ((bits & ((1u << f->mant) - 1)) << (23 - f->mant));
    memcpy(&v, &u, sizeof(v));
    return (double)v;
}

static double mca_coll_strata_codec_load(mca_coll_strata_codec_elem_t elem, const void *p, size_t i)
{
    return (MCA_COLL_STRATA_CODEC_FLOAT == elem) ? (double)((const float *)p)[i]
                                                 : ((const double *)p)[i];
}

static void mca_coll_strata_codec_store(mca_coll_strata_codec_elem_t elem, void *p, size_t i,
                                        double v, bool accumulate)
{
    if (MCA_COLL_STRATA_CODEC_FLOAT == elem) {
        float *d = (float *)p;

        d[i] = accumulate ? d[i] + (float)v : (float)v;
    } else {
        double *d = (double *)p;

        d[i] = accumulate ? d[i] + v : v;
    }
}

/* The block's scale: 2^k bringing its largest finite magnitude to
 * [2^(emax-1), 2^emax), where rounding cannot pass the largest finite
 * value; one binade lower where that magnitude would round up to 2^emax,
 * so that a block packed again after it was unpacked (a ring forwards
 * what it received) gets the same scale and keeps the same bits; 0 for a
 * block without a finite nonzero value. */
static double mca_coll_strata_codec_max(mca_coll_strata_codec_elem_t elem)
{
    return (MCA_COLL_STRATA_CODEC_FLOAT == elem) ? (double)FLT_MAX : DBL_MAX;
}

static int mca_coll_strata_codec_scale(const mca_coll_strata_codec_fmt_t *f,
                                       mca_coll_strata_codec_elem_t elem, const void *src,
                                       size_t lo, size_t n)
{
    double m = 0.0;
    int k;

    for (size_t i = lo; i < lo + n; ++i) {
        double a = fabs(mca_coll_strata_codec_load(elem, src, i));

        if (isfinite(a) && a > m) {
            m = a;
        }
    }
    if (0.0 == m) {
        return 0;
    }
    k = (f->emax - 1) - ilogb(m);
    return (mca_coll_strata_codec_round_fmt(f, ldexp(m, k)) >= ldexp(1.0, f->emax)) ? k - 1 : k;
}

static void mca_coll_strata_codec_put(uint8_t *w, int bytes, uint32_t bits)
{
    if (1 == bytes) {
        *w = (uint8_t)bits;
    } else {
        uint16_t b = (uint16_t)bits;

        memcpy(w, &b, 2);
    }
}

static uint32_t mca_coll_strata_codec_get(const uint8_t *w, int bytes)
{
    uint16_t b;

    if (1 == bytes) {
        return *w;
    }
    memcpy(&b, w, 2);
    return b;
}

void mca_coll_strata_codec_pack(mca_coll_strata_codec_t codec, mca_coll_strata_codec_elem_t elem,
                                const void *src, size_t count, void *wire)
{
    const mca_coll_strata_codec_fmt_t *f = &mca_coll_strata_codec_fmts[codec];
    uint8_t *w = wire;

    for (size_t lo = 0; lo < count; lo += MCA_COLL_STRATA_CODEC_BLOCK) {
        size_t n = (count - lo < MCA_COLL_STRATA_CODEC_BLOCK) ? count - lo
                                                              : MCA_COLL_STRATA_CODEC_BLOCK;
        int k = mca_coll_strata_codec_scale(f, elem, src, lo, n);
        int16_t k16 = (int16_t)k;

        memcpy(w, &k16, 2);
        w += 2;
        double up = ldexp(1.0, k), tmax = mca_coll_strata_codec_max(elem);
        bool fast = k > -1000 && k < 1000; /* 2^k a normal double */

        for (size_t i = lo; i < lo + n; ++i) {
            double x = mca_coll_strata_codec_load(elem, src, i);
            uint32_t bits;

            if (!isfinite(x)) {
                bits = mca_coll_strata_codec_encode(f, x);
            } else if (fast && fabs(x) < tmax * 0.5) {
                /* (x * 2^k is exact in double: k stays within the range
                 * that keeps it there, see the scale) */
                bits = mca_coll_strata_codec_encode_fast(f, x * up);
            } else {
                double r = mca_coll_strata_codec_round_fmt(f, ldexp(x, k));

                /* a value rounded up past its own type's largest finite
                 * value (FLT_MAX rounds up to 2^128) takes the format's
                 * largest value of its own binade instead */
                if (fabs(ldexp(r, -k)) > tmax) {
                    r = copysign(ldexp(2.0 - ldexp(1.0, -f->mant), ilogb(ldexp(x, k))), x);
                }
                bits = mca_coll_strata_codec_encode(f, r);
            }
            mca_coll_strata_codec_put(w, f->bytes, bits);
            w += f->bytes;
        }
    }
}

void mca_coll_strata_codec_unpack(mca_coll_strata_codec_t codec, mca_coll_strata_codec_elem_t elem,
                                  const void *wire, size_t count, void *dst, bool accumulate)
{
    const mca_coll_strata_codec_fmt_t *f = &mca_coll_strata_codec_fmts[codec];
    const uint8_t *w = wire;

    for (size_t lo = 0; lo < count; lo += MCA_COLL_STRATA_CODEC_BLOCK) {
        size_t n = (count - lo < MCA_COLL_STRATA_CODEC_BLOCK) ? count - lo
                                                              : MCA_COLL_STRATA_CODEC_BLOCK;
        int16_t k16;
        int k;

        memcpy(&k16, w, 2);
        k = k16;
        w += 2;
        double down = ldexp(1.0, -k);
        bool fast = k > -1000 && k < 1000; /* 2^-k a normal double: the product rounds once */

        for (size_t i = lo; i < lo + n; ++i) {
            double v = mca_coll_strata_codec_decode_fast(f, mca_coll_strata_codec_get(w, f->bytes));

            v = !isfinite(v) ? v : fast ? v * down : ldexp(v, -k);
            mca_coll_strata_codec_store(elem, dst, i, v, accumulate);
            w += f->bytes;
        }
    }
}
