/*
 * Strata's reduction kernels (see strata_reduce.h): every predefined MPI op
 * a GPU can apply to every element type it applies to.
 *
 *   integers (8, 16, 32, 64 bits, signed and unsigned)
 *                  sum prod min max land lor lxor band bor bxor
 *   float, double  sum prod min max
 *   complex float and double
 *                  sum prod
 *   bool (C_BOOL)  land lor lxor
 *   float_int, double_int, long_int, 2int, short_int
 *                  maxloc minloc
 * (MPI's long double types are left to the host.)
 *
 * The op x type matrix comes from one list (STRATA_REDUCE_KERNELS); one
 * loop body serves every kernel.  The file is C as well as CUDA: nvcc builds
 * the fatbin coll/strata loads, and strata_reduce_host.c compiles it for the
 * host with stand-ins for __global__ and the thread indices.
 */
#include "strata_reduce.h"

#ifdef __CUDACC__
#define STRATA_KERNEL       extern "C" __global__ void
#define STRATA_DEVICE       static __device__ __forceinline__
#define STRATA_THREAD_FIRST ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x)
#define STRATA_THREAD_STEP  ((unsigned long long)gridDim.x * blockDim.x)
typedef unsigned char strata_bool_t;
#else
#include <stddef.h>
#include <stdint.h>
#define STRATA_KERNEL       static void
#define STRATA_DEVICE       static inline
#define STRATA_THREAD_FIRST 0ULL /* the host runs the whole grid's work in one call */
#define STRATA_THREAD_STEP  1ULL
typedef unsigned char strata_bool_t;
#endif

#ifdef __CUDACC__
typedef signed char strata_i8;
typedef unsigned char strata_u8;
typedef short strata_i16;
typedef unsigned short strata_u16;
typedef int strata_i32;
typedef unsigned int strata_u32;
typedef long long strata_i64;
typedef unsigned long long strata_u64;
#else
typedef int8_t strata_i8;
typedef uint8_t strata_u8;
typedef int16_t strata_i16;
typedef uint16_t strata_u16;
typedef int32_t strata_i32;
typedef uint32_t strata_u32;
typedef int64_t strata_i64;
typedef uint64_t strata_u64;
#endif

/* ---- element functions: a op b ---- */
#define STRATA_SUM(a, b)  ((a) + (b))
#define STRATA_PROD(a, b) ((a) * (b))
#define STRATA_MIN(a, b)  (((a) < (b)) ? (a) : (b))
#define STRATA_MAX(a, b)  (((a) > (b)) ? (a) : (b))
#define STRATA_LAND(a, b) ((a) && (b))
#define STRATA_LOR(a, b)  ((a) || (b))
#define STRATA_LXOR(a, b) ((!(a)) != (!(b)))
#define STRATA_BAND(a, b) ((a) & (b))
#define STRATA_BOR(a, b)  ((a) | (b))
#define STRATA_BXOR(a, b) ((a) ^ (b))

STRATA_DEVICE strata_cfloat_t strata_csum_f(strata_cfloat_t a, strata_cfloat_t b)
{
    strata_cfloat_t r = {a.re + b.re, a.im + b.im};
    return r;
}

STRATA_DEVICE strata_cfloat_t strata_cprod_f(strata_cfloat_t a, strata_cfloat_t b)
{
    strata_cfloat_t r = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    return r;
}

STRATA_DEVICE strata_cdouble_t strata_csum_d(strata_cdouble_t a, strata_cdouble_t b)
{
    strata_cdouble_t r = {a.re + b.re, a.im + b.im};
    return r;
}

STRATA_DEVICE strata_cdouble_t strata_cprod_d(strata_cdouble_t a, strata_cdouble_t b)
{
    strata_cdouble_t r = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    return r;
}

/* MPI_MAXLOC/MINLOC: the larger (smaller) value; on a tie the smaller index. */
#define STRATA_LOC_FUNCS(_tname, _type) \
    STRATA_DEVICE _type strata_maxloc_##_tname(_type a, _type b) \
    { \
        return (a.v > b.v || (a.v == b.v && a.i < b.i)) ? a : b; \
    } \
    STRATA_DEVICE _type strata_minloc_##_tname(_type a, _type b) \
    { \
        return (a.v < b.v || (a.v == b.v && a.i < b.i)) ? a : b; \
    }

STRATA_LOC_FUNCS(float_int, strata_float_int_t)
STRATA_LOC_FUNCS(double_int, strata_double_int_t)
STRATA_LOC_FUNCS(long_int, strata_long_int_t)
STRATA_LOC_FUNCS(2int, strata_2int_t)
STRATA_LOC_FUNCS(short_int, strata_short_int_t)

/* ---- the op x type matrix: _X(op, type name, C type, a op b) ---- */
#define STRATA_REDUCE_INT_OPS(_X, _t, _c) \
    _X(sum, _t, _c, STRATA_SUM) _X(prod, _t, _c, STRATA_PROD) _X(min, _t, _c, STRATA_MIN) \
    _X(max, _t, _c, STRATA_MAX) _X(land, _t, _c, STRATA_LAND) _X(lor, _t, _c, STRATA_LOR) \
    _X(lxor, _t, _c, STRATA_LXOR) _X(band, _t, _c, STRATA_BAND) _X(bor, _t, _c, STRATA_BOR) \
    _X(bxor, _t, _c, STRATA_BXOR)
#define STRATA_REDUCE_FLOAT_OPS(_X, _t, _c) \
    _X(sum, _t, _c, STRATA_SUM) _X(prod, _t, _c, STRATA_PROD) _X(min, _t, _c, STRATA_MIN) \
    _X(max, _t, _c, STRATA_MAX)
#define STRATA_REDUCE_LOC_OPS(_X, _t, _c) \
    _X(maxloc, _t, _c, strata_maxloc_##_t) _X(minloc, _t, _c, strata_minloc_##_t)

#define STRATA_REDUCE_KERNELS(_X) \
    STRATA_REDUCE_INT_OPS(_X, int8, strata_i8) \
    STRATA_REDUCE_INT_OPS(_X, uint8, strata_u8) \
    STRATA_REDUCE_INT_OPS(_X, int16, strata_i16) \
    STRATA_REDUCE_INT_OPS(_X, uint16, strata_u16) \
    STRATA_REDUCE_INT_OPS(_X, int32, strata_i32) \
    STRATA_REDUCE_INT_OPS(_X, uint32, strata_u32) \
    STRATA_REDUCE_INT_OPS(_X, int64, strata_i64) \
    STRATA_REDUCE_INT_OPS(_X, uint64, strata_u64) \
    STRATA_REDUCE_FLOAT_OPS(_X, float, float) \
    STRATA_REDUCE_FLOAT_OPS(_X, double, double) \
    _X(sum, cfloat, strata_cfloat_t, strata_csum_f) _X(prod, cfloat, strata_cfloat_t, strata_cprod_f) \
    _X(sum, cdouble, strata_cdouble_t, strata_csum_d) \
    _X(prod, cdouble, strata_cdouble_t, strata_cprod_d) \
    _X(land, bool, strata_bool_t, STRATA_LAND) _X(lor, bool, strata_bool_t, STRATA_LOR) \
    _X(lxor, bool, strata_bool_t, STRATA_LXOR) \
    STRATA_REDUCE_LOC_OPS(_X, float_int, strata_float_int_t) \
    STRATA_REDUCE_LOC_OPS(_X, double_int, strata_double_int_t) \
    STRATA_REDUCE_LOC_OPS(_X, long_int, strata_long_int_t) \
    STRATA_REDUCE_LOC_OPS(_X, 2int, strata_2int_t) \
    STRATA_REDUCE_LOC_OPS(_X, short_int, strata_short_int_t)

/* ---- 16-byte loads ----
 * Elements smaller than 16 bytes are read and written 16 bytes at a time
 * (one 128-bit load per input per thread: a GPU moves memory best so) when
 * every pointer of the call is 16-byte aligned; the remainder, and calls
 * with an unaligned pointer (a slice starting mid-vector), go element by
 * element.  Each element is combined in the same order either way, so the
 * results are identical bit for bit. */
#ifdef __CUDACC__
typedef uint4 strata_vec16_t;
#else
typedef struct {
    strata_u64 w[2];
} __attribute__((aligned(16))) strata_vec16_t;
#endif

STRATA_DEVICE int strata_reduce_aligned16(const strata_reduce_args_t *a)
{
    unsigned long long bits = (unsigned long long)(size_t)a->dst;

    for (int j = 0; j < a->nsrc; ++j) {
        bits |= (unsigned long long)(size_t)a->src[j];
    }
    for (int j = 0; j < a->nalso; ++j) {
        bits |= (unsigned long long)(size_t)a->also[j];
    }
    return (bits & 15ULL) == 0;
}

/* elements per 16-byte vector: 1 where vectors do not help or fit */
#define STRATA_VEC_ELEMS(_type) \
    ((sizeof(_type) < 16 && 16 % sizeof(_type) == 0) ? 16 / sizeof(_type) : 1)

/* One pass over all inputs per element: each input is read once. */
#define STRATA_REDUCE_KERNEL(_op, _tname, _type, _combine) \
    STRATA_KERNEL strata_reduce_##_op##_##_tname(strata_reduce_args_t a) \
    { \
        const unsigned long long v = STRATA_VEC_ELEMS(_type); \
        unsigned long long nvec    = 0; \
        if (v > 1 && strata_reduce_aligned16(&a)) { \
            nvec = a.count / v; \
            for (unsigned long long i = STRATA_THREAD_FIRST; i < nvec; i += STRATA_THREAD_STEP) { \
                union { \
                    strata_vec16_t vec; \
                    _type e[16 / sizeof(_type)]; \
                } acc, in; \
                acc.vec = ((const strata_vec16_t *)a.src[a.nsrc - 1])[i]; \
                for (int j = a.nsrc - 2; j >= 0; --j) { \
                    in.vec = ((const strata_vec16_t *)a.src[j])[i]; \
                    for (unsigned long long e = 0; e < v; ++e) { \
                        acc.e[e] = (_type)_combine(in.e[e], acc.e[e]); \
                    } \
                } \
                ((strata_vec16_t *)a.dst)[i] = acc.vec; \
                for (int o = 0; o < a.nalso; ++o) { \
                    ((strata_vec16_t *)a.also[o])[i] = acc.vec; \
                } \
            } \
        } \
        for (unsigned long long i = nvec * v + STRATA_THREAD_FIRST; i < a.count; \
             i += STRATA_THREAD_STEP) { \
            _type acc = ((const _type *)a.src[a.nsrc - 1])[i]; \
            for (int j = a.nsrc - 2; j >= 0; --j) { \
                acc = (_type)_combine(((const _type *)a.src[j])[i], acc); \
            } \
            ((_type *)a.dst)[i] = acc; \
            for (int o = 0; o < a.nalso; ++o) { \
                ((_type *)a.also[o])[i] = acc; \
            } \
        } \
    }

STRATA_REDUCE_KERNELS(STRATA_REDUCE_KERNEL)

#ifndef __CUDACC__
#define STRATA_REDUCE_HOST_ENTRY(_op, _tname, _type, _combine) \
    {"strata_reduce_" #_op "_" #_tname, strata_reduce_##_op##_##_tname, sizeof(_type)},

const strata_reduce_host_kernel_t strata_reduce_host_kernels[] = {
    STRATA_REDUCE_KERNELS(STRATA_REDUCE_HOST_ENTRY){NULL, NULL, 0},
};
#endif
