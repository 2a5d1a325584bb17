/*
 * Strata's reduction kernels, compiled for the host, against Open MPI's own
 * op functions: every kernel of common/kernels/strata_reduce_kernels.cu,
 * 1 to 6 inputs, counts 1, 7 and 1021, every pointer 16-byte aligned (the
 * kernels' vector loads) and every pointer one element off it (element by
 * element), in place (dst = the last input) too, inputs that hit ties, zero and
 * nonzero truth values, random bits for the bitwise ops (no overflow: see
 * fill()).  The reference applies
 * MPI_Reduce_local in the kernels' documented order,
 *     dst = src[k-1]; dst = src[j] op dst for j = k-2 .. 0,
 * so floating-point results must match bit for bit; pairs compare value and
 * index.  Every kernel in the table must have been checked, and every
 * (op, type) below must have a kernel.  One process:
 *   mpirun -np 1 test_reduce_kernels [--device]
 * --device also runs every kernel on the GPU, from the fatbin embedded in
 * Strata (common/strata_kernels.c: cuModuleLoadData, cuLaunchKernel), on
 * device buffers, against the host-compiled kernel's result: on a GPU this
 * checks the machine code; on the CUDA stand-in, the loading and launching
 * (it runs the host-compiled kernels).  Exit 77 there when no device or no
 * embedded kernels (a build without nvcc).
 * Prints "test_reduce_kernels: N kernels, M checks passed", or the first
 * wrong element (kernel, inputs, index, expected and got bytes) and exits 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <common/strata_cuda.h>
#include <common/strata_kernels.h>

#include "stest_cuda.h"
#include "stest_mpi.h"

typedef enum { FILL_SMALL, FILL_BOOL, FILL_FLOAT, FILL_PAIR } fill_t;

typedef struct {
    const char *name; /* as in the kernel's name */
    MPI_Datatype type;
    size_t size;      /* one element */
    fill_t fill;
    size_t value_size; /* pairs: bytes of the value before the int index */
    size_t index_at;   /* pairs: offset of the index */
} ktype_t;

typedef struct {
    const char *name;
    MPI_Op op;
} kop_t;

static const kop_t ops[] = {
    {"sum", MPI_SUM},   {"prod", MPI_PROD}, {"min", MPI_MIN},   {"max", MPI_MAX},
    {"land", MPI_LAND}, {"lor", MPI_LOR},   {"lxor", MPI_LXOR}, {"band", MPI_BAND},
    {"bor", MPI_BOR},   {"bxor", MPI_BXOR}, {"maxloc", MPI_MAXLOC}, {"minloc", MPI_MINLOC},
};

static const char *const int_ops[] = {"sum", "prod", "min", "max", "land", "lor", "lxor",
                                      "band", "bor", "bxor", NULL};
static const char *const float_ops[] = {"sum", "prod", "min", "max", NULL};
static const char *const complex_ops[] = {"sum", "prod", NULL};
static const char *const bool_ops[] = {"land", "lor", "lxor", NULL};
static const char *const loc_ops[] = {"maxloc", "minloc", NULL};

static ktype_t types[] = {
    {"int8", 0, 1, FILL_SMALL, 0, 0},    {"uint8", 0, 1, FILL_SMALL, 0, 0},
    {"int16", 0, 2, FILL_SMALL, 0, 0},   {"uint16", 0, 2, FILL_SMALL, 0, 0},
    {"int32", 0, 4, FILL_SMALL, 0, 0},   {"uint32", 0, 4, FILL_SMALL, 0, 0},
    {"int64", 0, 8, FILL_SMALL, 0, 0},   {"uint64", 0, 8, FILL_SMALL, 0, 0},
    {"float", 0, 4, FILL_FLOAT, 0, 0},   {"double", 0, 8, FILL_FLOAT, 0, 0},
    {"cfloat", 0, 8, FILL_FLOAT, 0, 0},  {"cdouble", 0, 16, FILL_FLOAT, 0, 0},
    {"bool", 0, 1, FILL_BOOL, 0, 0},
    {"float_int", 0, sizeof(strata_float_int_t), FILL_PAIR, sizeof(float),
     offsetof(strata_float_int_t, i)},
    {"double_int", 0, sizeof(strata_double_int_t), FILL_PAIR, sizeof(double),
     offsetof(strata_double_int_t, i)},
    {"long_int", 0, sizeof(strata_long_int_t), FILL_PAIR, sizeof(long),
     offsetof(strata_long_int_t, i)},
    {"2int", 0, sizeof(strata_2int_t), FILL_PAIR, sizeof(int), offsetof(strata_2int_t, i)},
    {"short_int", 0, sizeof(strata_short_int_t), FILL_PAIR, sizeof(short),
     offsetof(strata_short_int_t, i)},
};

#define NTYPES (sizeof(types) / sizeof(types[0]))

static void set_types(void)
{
    MPI_Datatype t[NTYPES] = {MPI_INT8_T, MPI_UINT8_T, MPI_INT16_T, MPI_UINT16_T,
                              MPI_INT32_T, MPI_UINT32_T, MPI_INT64_T, MPI_UINT64_T,
                              MPI_FLOAT, MPI_DOUBLE, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
                              MPI_C_BOOL, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT,
                              MPI_2INT, MPI_SHORT_INT};

    for (size_t i = 0; i < NTYPES; ++i) {
        types[i].type = t[i];
    }
}

static const char *const *ops_of(const ktype_t *t)
{
    if (t->fill == FILL_BOOL) return bool_ops;
    if (t->fill == FILL_PAIR) return loc_ops;
    if (!strcmp(t->name, "cfloat") || !strcmp(t->name, "cdouble")) return complex_ops;
    if (t->fill == FILL_FLOAT) return float_ops;
    return int_ops;
}

static MPI_Op op_of(const char *name)
{
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
        if (!strcmp(ops[i].name, name)) return ops[i].op;
    }
    return MPI_OP_NULL;
}

static unsigned long long rng = 88172645463325252ULL;

static unsigned long long next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Values that stay exact and hit ties: small integers (also signed, so
 * products and sums of small types wrap as C wraps them), random bits for
 * the bitwise ops, 0/1 truth values, quarter-integers for floats. */
static void fill(const ktype_t *t, const char *op, unsigned char *buf, size_t count)
{
    memset(buf, 0, t->size * count);
    for (size_t e = 0; e < count; ++e) {
        unsigned char *p = buf + e * t->size;
        long small = (long)(next_rand() % 7) - 3; /* pairs: ties in value, not in index */
        unsigned long long bits = next_rand();

        switch (t->fill) {
        case FILL_SMALL:
            if (!strcmp(op, "band") || !strcmp(op, "bor") || !strcmp(op, "bxor")) {
                memcpy(p, &bits, t->size);
            } else {
                /* in range for every type even after 6 inputs: Open MPI 4.1's
                 * op/avx saturates 8- and 16-bit sums where C (and the
                 * kernels) wrap (open-mpi/ompi#8045); MPI leaves overflow
                 * undefined, so neither is checked */
                int64_t v = ('u' == t->name[0]) ? (int64_t)(next_rand() % 3)
                                                : (int64_t)(next_rand() % 5) - 2;
                if (t->size == 1) { int8_t x = (int8_t)v; memcpy(p, &x, 1); }
                else if (t->size == 2) { int16_t x = (int16_t)v; memcpy(p, &x, 2); }
                else if (t->size == 4) { int32_t x = (int32_t)v; memcpy(p, &x, 4); }
                else { memcpy(p, &v, 8); }
            }
            break;
        case FILL_BOOL:
            p[0] = (unsigned char)(next_rand() & 1);
            break;
        case FILL_FLOAT: {
            int complex_type = !strcmp(t->name, "cfloat") || !strcmp(t->name, "cdouble");
            size_t w = (!strcmp(t->name, "float") || !strcmp(t->name, "cfloat")) ? 4 : 8;

            for (int part = 0; part < (complex_type ? 2 : 1); ++part) {
                double d = (double)((long)(next_rand() % 9) - 4) / 4.0;

                if (w == 4) {
                    float f = (float)d;
                    memcpy(p + part * 4, &f, 4);
                } else {
                    memcpy(p + part * 8, &d, 8);
                }
            }
            break;
        }
        case FILL_PAIR: {
            int idx = (int)(next_rand() % 4);

            if (t->value_size == sizeof(float) && !strcmp(t->name, "float_int")) { float f = (float)small; memcpy(p, &f, 4); }
            else if (t->value_size == sizeof(double)) { double d = (double)small; memcpy(p, &d, 8); }
            else if (t->value_size == sizeof(long)) { long l = small; memcpy(p, &l, sizeof(l)); }
            else if (t->value_size == sizeof(int)) { int i = (int)small; memcpy(p, &i, sizeof(i)); }
            else { short s = (short)small; memcpy(p, &s, sizeof(s)); }
            memcpy(p + t->index_at, &idx, sizeof(idx));
            break;
        }
        }
    }
}

static const strata_reduce_host_kernel_t *find_kernel(const char *op, const char *type)
{
    char name[96];

    snprintf(name, sizeof(name), "strata_reduce_%s_%s", op, type);
    for (const strata_reduce_host_kernel_t *k = strata_reduce_host_kernels; k->name; ++k) {
        if (!strcmp(k->name, name)) return k;
    }
    return NULL;
}

static int same_element(const ktype_t *t, const unsigned char *a, const unsigned char *b)
{
    if (t->fill == FILL_PAIR) {
        return !memcmp(a, b, t->value_size) && !memcmp(a + t->index_at, b + t->index_at, sizeof(int));
    }
    return !memcmp(a, b, t->size);
}

/* ---- the GPU side (--device) ---- */

static struct {
    int on;
    CUstream stream;
    CUdeviceptr src[6], dst;
} dev;

#define DEV_BYTES (16 * 1022) /* the largest case, one element off */

static int device_setup(void)
{
    stest_dev_t d;

    if (stest_dev_open(0, &d) != 0 || !strata_kernels_available()) {
        return -1;
    }
    for (int i = 0; i < 6; ++i) {
        if (cuMemAlloc(&dev.src[i], DEV_BYTES) != CUDA_SUCCESS) return -1;
    }
    if (cuMemAlloc(&dev.dst, DEV_BYTES) != CUDA_SUCCESS ||
        cuStreamCreate(&dev.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        return -1;
    }
    return 0;
}

/* The kernel `op`/`type` on the GPU over the host inputs; result in `out`. */
static int device_run(const char *op, const char *type, unsigned char *const *src, int nsrc,
                      size_t count, size_t size, size_t shift, int in_place, unsigned char *out)
{
    strata_reduce_args_t a;
    CUfunction fn;
    CUresult res;

    memset(&a, 0, sizeof(a));
    res = strata_kernels_function(0, op, type, &fn);
    for (int j = 0; j < nsrc && res == CUDA_SUCCESS; ++j) {
        res = cuMemcpyHtoD(dev.src[j] + shift, src[j], size * count);
        a.src[j] = (const void *)(uintptr_t)(dev.src[j] + shift);
    }
    /* The pageable copies may land after they return, and the kernel's
     * stream is non-blocking: wait for them (the driver's rule). */
    if (res == CUDA_SUCCESS) res = cuCtxSynchronize();
    a.dst = in_place ? (void *)a.src[nsrc - 1] : (void *)(uintptr_t)(dev.dst + shift);
    a.count = count;
    a.nsrc = nsrc;
    if (res == CUDA_SUCCESS) res = strata_kernels_reduce(fn, &a, dev.stream);
    if (res == CUDA_SUCCESS) res = cuStreamSynchronize(dev.stream);
    if (res == CUDA_SUCCESS) res = cuMemcpyDtoH(out, (CUdeviceptr)(uintptr_t)a.dst, size * count);
    if (res != CUDA_SUCCESS) {
        const char *name = "?";

        cuGetErrorName(res, &name);
        printf("FAIL: strata_reduce_%s_%s on the device: %s\n", op, type, name);
        return -1;
    }
    return 0;
}

static void dump(const char *what, const unsigned char *p, size_t n)
{
    printf(" %s", what);
    for (size_t i = 0; i < n; ++i) printf("%02x", p[i]);
}

int main(int argc, char **argv)
{
    static const size_t counts[] = {1, 7, 1021};
    size_t checked_kernels = 0, checks = 0, table = 0;
    unsigned char *src_base[6], *src[6], *ref, *saved, *out_base, *out, *also_base[2], *outs[3];
    int nout;

    MPI_Init(&argc, &argv);
    stest_mpi_init(0, STEST_MPI_FAIL_FIRST);
    set_types();
    dev.on = (argc > 1 && !strcmp(argv[1], "--device"));
    if (dev.on && device_setup() != 0) {
        printf("test_reduce_kernels: skip: no CUDA device, or this build embeds no kernels\n");
        MPI_Finalize();
        return 77;
    }
    /* 16-byte aligned (malloc's), so that base + one element is not */
    for (int i = 0; i < 6; ++i) src_base[i] = aligned_alloc(16, 16 * 1022);
    ref = malloc(16 * 1021);
    saved = malloc(16 * 1021);
    out_base = aligned_alloc(16, 16 * 1022);
    for (int o = 0; o < 2; ++o) also_base[o] = aligned_alloc(16, 16 * 1022);
    for (const strata_reduce_host_kernel_t *k = strata_reduce_host_kernels; k->name; ++k) ++table;

    for (size_t ti = 0; ti < NTYPES; ++ti) {
        const ktype_t *t = &types[ti];

        for (const char *const *op = ops_of(t); *op != NULL; ++op) {
            const strata_reduce_host_kernel_t *k = find_kernel(*op, t->name);

            if (k == NULL || k->elem_size != t->size) {
                printf("FAIL: no kernel strata_reduce_%s_%s of %zu-byte elements\n", *op, t->name,
                       t->size);
                return 1;
            }
            /* variant: bit 0 every pointer one element off 16-byte
             * alignment, bit 1 in place (dst = the last input), bit 2
             * two more outputs (also[]; in place: the first inputs, as a
             * node's ranks' buffers of an in-place direct allreduce) */
            for (int variant = 0; variant < 8; ++variant)
                for (int nsrc = 1; nsrc <= 6; ++nsrc) {
                    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
                        size_t count = counts[ci], shift = (variant & 1) ? t->size : 0;
                        int in_place = (variant & 2) != 0;
                        strata_reduce_args_t a;

                        memset(&a, 0, sizeof(a));
                        for (int j = 0; j < nsrc; ++j) {
                            src[j] = src_base[j] + shift;
                            fill(t, *op, src[j], count);
                            a.src[j] = src[j];
                        }
                        out = out_base + shift;
                        memcpy(ref, src[nsrc - 1], t->size * count);
                        for (int j = nsrc - 2; j >= 0; --j) {
                            MPI_Reduce_local(src[j], ref, (int)count, t->type, op_of(*op));
                        }
                        memcpy(saved, src[nsrc - 1], t->size * count);
                        if (in_place) {
                            out = src[nsrc - 1];
                        } else {
                            memset(out, 0, t->size * count);
                        }
                        a.dst = out;
                        a.count = count;
                        a.nsrc = nsrc;
                        nout = 1;
                        outs[0] = out;
                        if (variant & 4) {
                            if (in_place && nsrc < 3) {
                                continue; /* no two other inputs to write to */
                            }
                            for (int o = 0; o < 2; ++o) {
                                a.also[o] = outs[1 + o] = in_place ? src[o] : also_base[o] + shift;
                                if (!in_place) memset(outs[1 + o], 0, t->size * count);
                            }
                            a.nalso = 2;
                            nout = 3;
                        }
                        k->fn(a);
                        for (int o = 1; o < nout; ++o) {
                            if (memcmp(outs[o], out, t->size * count) != 0) {
                                printf("FAIL: %s, %d inputs, count %zu%s: output %d differs from "
                                       "the first\n",
                                       k->name, nsrc, count, in_place ? ", in place" : "", o);
                                return 1;
                            }
                        }
                        /* (the GPU's run below checks the one-output kernel) */
                        for (int side = 0; side < ((dev.on && !(variant & 4)) ? 2 : 1); ++side) {
                            if (side == 1) {
                                /* the GPU against the host-compiled kernel */
                                memcpy(ref, out, t->size * count);
                                if (in_place) {
                                    /* the host run overwrote the last input */
                                    memcpy(src[nsrc - 1], saved, t->size * count);
                                }
                                out = out_base + shift;
                                if (device_run(*op, t->name, src, nsrc, count, t->size, shift,
                                               in_place, out) != 0) {
                                    return 1;
                                }
                            }
                            for (size_t e = 0; e < count; ++e) {
                                if (!same_element(t, out + e * t->size, ref + e * t->size)) {
                                    printf("FAIL: %s%s, %d inputs, count %zu, index %zu:", k->name,
                                           side ? " on the device" : "", nsrc, count, e);
                                    for (int j = 0; j < nsrc; ++j)
                                        dump("in", src[j] + e * t->size, t->size);
                                    dump("expected", ref + e * t->size, t->size);
                                    dump("got", out + e * t->size, t->size);
                                    printf("\n");
                                    return 1;
                                }
                            }
                            ++checks;
                        }
                    }
                }
            ++checked_kernels;
        }
    }
    if (checked_kernels != table) {
        printf("FAIL: the kernel table has %zu kernels, %zu were checked\n", table, checked_kernels);
        return 1;
    }
    printf("test_reduce_kernels: %zu kernels, %zu checks passed%s\n", checked_kernels, checks,
           dev.on ? " (host-compiled against Open MPI, device against host-compiled)" : "");
    MPI_Finalize();
    return 0;
}
