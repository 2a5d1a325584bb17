/*
 * Strata's reduction kernels: what the launching side and the kernels
 * share (common/kernels/strata_reduce_kernels.cu).
 *
 * One kernel per op and element type, named strata_reduce_<op>_<type>, e.g.
 * strata_reduce_sum_float.  Each reads element i of nsrc inputs in one pass
 * and writes
 *     dst[i] = src[0][i] op (src[1][i] op (... op src[nsrc-1][i]))
 * (the order coll/strata's host reductions use: the same result on every
 * path), and the same value to also[0..nalso-1][i].  dst may be
 * src[nsrc-1]; an output may be an input (each element is read from every
 * input before it is written).  Launch any grid: a kernel strides over
 * all `count` elements with the whole grid.
 *
 * Plain C, so that the same source compiles for the host: the CUDA stand-in
 * runs these very functions when a test launches a kernel.
 */
#ifndef STRATA_REDUCE_H
#define STRATA_REDUCE_H

#define STRATA_REDUCE_MAX_SRCS 16
/* Most outputs beside dst: a node's ranks, each written its copy of the
 * result straight from the reduction (the direct path reads every input
 * once and writes every output once). */
#define STRATA_REDUCE_MAX_ALSO 7

/* The kernel's one parameter, passed by value. */
typedef struct strata_reduce_args {
    const void *src[STRATA_REDUCE_MAX_SRCS];
    void *dst;
    /* the same result also written to these nalso outputs (0: dst only);
     * an output may be an input (in place: read before it is written) */
    void *also[STRATA_REDUCE_MAX_ALSO];
    unsigned long long count; /* elements */
    int nsrc;                 /* 1 .. STRATA_REDUCE_MAX_SRCS */
    int nalso;                /* 0 .. STRATA_REDUCE_MAX_ALSO */
} strata_reduce_args_t;

/* Element types the kernels know, by the name in the kernel's name.  The
 * pair types are MPI's MAXLOC/MINLOC pairs, laid out as C lays out
 * struct { value; int index; }. */
typedef struct strata_cfloat {
    float re, im;
} strata_cfloat_t;
typedef struct strata_cdouble {
    double re, im;
} strata_cdouble_t;
typedef struct strata_float_int {
    float v;
    int i;
} strata_float_int_t;
typedef struct strata_double_int {
    double v;
    int i;
} strata_double_int_t;
typedef struct strata_long_int {
    long v;
    int i;
} strata_long_int_t;
typedef struct strata_2int {
    int v;
    int i;
} strata_2int_t;
typedef struct strata_short_int {
    short v;
    int i;
} strata_short_int_t;

/* A host-compiled kernel (common/kernels/strata_reduce_host.c), for the
 * CUDA stand-in: name, function, bytes of one element. */
typedef struct strata_reduce_host_kernel {
    const char *name;
    void (*fn)(strata_reduce_args_t args);
    unsigned elem_size;
} strata_reduce_host_kernel_t;

#ifndef __CUDACC__
/* The host-compiled kernels, ending with a NULL name. */
extern const strata_reduce_host_kernel_t strata_reduce_host_kernels[];
#endif

#endif /* STRATA_REDUCE_H */
