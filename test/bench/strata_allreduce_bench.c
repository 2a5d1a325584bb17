/*
 * MPI_Allreduce benchmark (and the other collectives strata's pipeline runs).
 *
 *   strata_allreduce_bench [--min BYTES] [--max BYTES] [--iters N] [--iters-large N] [--warmup N]
 *                          [--buffer host|device] [--netdev IFACE] [--label TEXT]
 *                          [--coll allreduce|bcast|allgather|reduce|reduce_scatter_block]
 *
 * --coll (default allreduce): the collective timed.  A size is the vector
 * (allreduce, bcast from rank 0, reduce to rank 0) or each rank's block
 * (allgather, reduce_scatter_block: the whole vector is size x ranks).
 *
 * For each size (powers of two from --min to --max, in bytes of MPI_FLOAT), it
 * runs --warmup untimed calls, then --iters timed calls (--iters-large for
 * sizes of 1 MiB and more, where a call takes long enough to need fewer).  Each timed call is
 * fenced by a barrier and its time is the slowest rank's; min, median and max
 * over the calls are reported.  With --netdev, local rank 0 of every node reads
 * that interface's byte counters around the timed calls, so the output says
 * how many bytes each node sent and received per allreduce (inside a
 * namespace node the interface is its eth0).
 *
 * Output: one line per size on rank 0,
 *   RESULT,<label>,<bytes>,<iters>,<min_us>,<median_us>,<max_us>,<tx_per_call>,<rx_per_call>
 * tx/rx are the largest per-node values, -1 without --netdev.
 *
 * --buffer device allocates with the CUDA driver API, opened with dlopen so
 * that the benchmark builds and runs without CUDA; it fails with a clear
 * message where no driver is present.  Per size it also measures the
 * device's own limit: rank 0 copies the message device to device
 * (cuMemcpyDtoD, --iters times, the other ranks wait in a barrier) and
 * prints the median time of one copy,
 *   LIMIT,<label>,<bytes>,<copy_us>
 * A copy reads and writes every byte, so HBM moves 2n bytes in copy_us; an
 * allreduce that must move m bytes through HBM needs at least
 * m / (2n / copy_us) (test/bench/allreduce_bench.py turns it into the limit
 * of k ranks sharing one GPU, m = (3k+1)n).
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t min_bytes, max_bytes;
    int iters, iters_large, warmup, device;
    const char *netdev, *label, *coll;
} bench_opts_t;

/* One call of o->coll on count floats (per rank's block where the
 * collective has blocks). */
static void bench_call(const bench_opts_t *o, void *sbuf, void *rbuf, int count)
{
    if (!strcmp(o->coll, "bcast")) {
        MPI_Bcast(rbuf, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    } else if (!strcmp(o->coll, "allgather")) {
        MPI_Allgather(sbuf, count, MPI_FLOAT, rbuf, count, MPI_FLOAT, MPI_COMM_WORLD);
    } else if (!strcmp(o->coll, "reduce")) {
        MPI_Reduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    } else if (!strcmp(o->coll, "reduce_scatter_block")) {
        MPI_Reduce_scatter_block(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Allreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
}

/* ---- device buffers through the CUDA driver, loaded at run time ---- */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_ctx_retain_fn)(void **, int);
typedef int (*cu_ctx_set_fn)(void *);
typedef int (*cu_mem_alloc_fn)(uint64_t *, size_t);
typedef int (*cu_mem_free_fn)(uint64_t);
typedef int (*cu_memcpy_htod_fn)(uint64_t, const void *, size_t);
typedef int (*cu_memcpy_dtod_fn)(uint64_t, uint64_t, size_t);
typedef int (*cu_ctx_synchronize_fn)(void);

static struct {
    cu_mem_alloc_fn mem_alloc;
    cu_mem_free_fn mem_free;
    cu_memcpy_htod_fn memcpy_htod;
    cu_memcpy_dtod_fn memcpy_dtod;
    cu_ctx_synchronize_fn ctx_synchronize;
} bench_cuda;

static int bench_cuda_open(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    cu_init_fn init;
    cu_device_get_fn device_get;
    cu_ctx_retain_fn ctx_retain;
    cu_ctx_set_fn ctx_set;
    void *ctx;
    int dev;

    if (lib == NULL) {
        fprintf(stderr, "strata_allreduce_bench: --buffer device needs the CUDA driver: %s\n", dlerror());
        return -1;
    }
    init = (cu_init_fn)dlsym(lib, "cuInit");
    device_get = (cu_device_get_fn)dlsym(lib, "cuDeviceGet");
    ctx_retain = (cu_ctx_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
    ctx_set = (cu_ctx_set_fn)dlsym(lib, "cuCtxSetCurrent");
    bench_cuda.mem_alloc = (cu_mem_alloc_fn)dlsym(lib, "cuMemAlloc_v2");
    bench_cuda.mem_free = (cu_mem_free_fn)dlsym(lib, "cuMemFree_v2");
    bench_cuda.memcpy_htod = (cu_memcpy_htod_fn)dlsym(lib, "cuMemcpyHtoD_v2");
    bench_cuda.memcpy_dtod = (cu_memcpy_dtod_fn)dlsym(lib, "cuMemcpyDtoD_v2");
    bench_cuda.ctx_synchronize = (cu_ctx_synchronize_fn)dlsym(lib, "cuCtxSynchronize");
    if (!init || !device_get || !ctx_retain || !ctx_set || !bench_cuda.mem_alloc ||
        !bench_cuda.mem_free || !bench_cuda.memcpy_htod || !bench_cuda.memcpy_dtod ||
        !bench_cuda.ctx_synchronize) {
        fprintf(stderr, "strata_allreduce_bench: libcuda.so.1 lacks a driver entry point it needs\n");
        return -1;
    }
    if (init(0) || device_get(&dev, 0) || ctx_retain(&ctx, dev) || ctx_set(ctx)) {
        fprintf(stderr, "strata_allreduce_bench: no usable CUDA device (cuInit/cuDeviceGet failed)\n");
        return -1;
    }
    return 0;
}

static void *bench_alloc(const bench_opts_t *o, size_t bytes, const float *init)
{
    if (!o->device) {
        float *p = malloc(bytes);
        if (p) memcpy(p, init, bytes);
        return p;
    }
    uint64_t dptr = 0;
    if (bench_cuda.mem_alloc(&dptr, bytes) || bench_cuda.memcpy_htod(dptr, init, bytes)) return NULL;
    return (void *)(uintptr_t)dptr;
}

static void bench_free(const bench_opts_t *o, void *p)
{
    if (o->device) bench_cuda.mem_free((uint64_t)(uintptr_t)p);
    else free(p);
}

/* ---- interface counters ---- */
static long long bench_read_counter(const char *dev, const char *what)
{
    char path[256];
    long long v = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s", dev, what);
    f = fopen(path, "r");
    if (f == NULL) return -1;
    if (fscanf(f, "%lld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The device's limit (see the top): rank 0 times device-to-device copies
 * of the message while the other ranks wait. */
static void bench_copy_limit(const bench_opts_t *o, size_t bytes, void *src, void *dst, int rank,
                             int iters)
{
    double *times = malloc(sizeof(double) * (size_t)iters);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && times != NULL) {
        int i, failed = 0;

        for (i = 0; i < iters && !failed; i++) {
            double t0 = MPI_Wtime();

            failed = bench_cuda.memcpy_dtod((uint64_t)(uintptr_t)dst, (uint64_t)(uintptr_t)src,
                                            bytes) ||
                     bench_cuda.ctx_synchronize();
            times[i] = MPI_Wtime() - t0;
        }
        if (!failed) {
            qsort(times, (size_t)iters, sizeof(double), cmp_double);
            printf("LIMIT,%s,%zu,%.3f\n", o->label, bytes, times[iters / 2] * 1e6);
            fflush(stdout);
        }
    }
    free(times);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void bench_size(const bench_opts_t *o, size_t bytes, MPI_Comm node_comm, int rank)
{
    int count = (int)(bytes / sizeof(float)), node_rank, i, size;
    int iters = (bytes >= (1u << 20)) ? o->iters_large : o->iters;
    double *times = malloc(sizeof(double) * (size_t)iters);
    long long c0[2] = {-1, -1}, c1[2] = {-1, -1}, per_call[2], max_per_call[2];
    size_t sbytes = bytes, rbytes = bytes, all;
    float *init;
    void *sbuf, *rbuf;

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!strcmp(o->coll, "allgather")) rbytes *= (size_t)size;
    if (!strcmp(o->coll, "reduce_scatter_block")) sbytes *= (size_t)size;
    all = (sbytes > rbytes) ? sbytes : rbytes;
    init = malloc(all ? all : 1);
    for (i = 0; i < (int)(all / sizeof(float)); i++) init[i] = (float)((rank + i) % 17);
    sbuf = bench_alloc(o, sbytes ? sbytes : 1, init);
    rbuf = bench_alloc(o, rbytes ? rbytes : 1, init);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "strata_allreduce_bench: rank %d: cannot allocate 2 x %zu bytes\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (o->device) bench_copy_limit(o, bytes, sbuf, rbuf, rank, iters);
    for (i = 0; i < o->warmup; i++) bench_call(o, sbuf, rbuf, count);

    MPI_Comm_rank(node_comm, &node_rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (o->netdev && node_rank == 0) {
        c0[0] = bench_read_counter(o->netdev, "tx_bytes");
        c0[1] = bench_read_counter(o->netdev, "rx_bytes");
    }
    for (i = 0; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        bench_call(o, sbuf, rbuf, count);
        times[i] = MPI_Wtime() - t0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (o->netdev && node_rank == 0) {
        c1[0] = bench_read_counter(o->netdev, "tx_bytes");
        c1[1] = bench_read_counter(o->netdev, "rx_bytes");
    }
    /* The barriers' own traffic is counted too; it is a few hundred bytes per
     * call, small beside the message sizes where bytes matter. */
    for (i = 0; i < 2; i++) per_call[i] = (c0[i] >= 0 && c1[i] >= 0) ? (c1[i] - c0[i]) / iters : -1;
    MPI_Reduce(per_call, max_per_call, 2, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, times, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(times, (size_t)iters, sizeof(double), cmp_double);
        double median = (iters % 2) ? times[iters / 2]
                                       : 0.5 * (times[iters / 2 - 1] + times[iters / 2]);
        printf("RESULT,%s,%zu,%d,%.3f,%.3f,%.3f,%lld,%lld\n", o->label, bytes, iters,
               times[0] * 1e6, median * 1e6, times[iters - 1] * 1e6, max_per_call[0],
               max_per_call[1]);
        fflush(stdout);
    }
    bench_free(o, sbuf);
    bench_free(o, rbuf);
    free(init);
    free(times);
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    bench_opts_t o = {.min_bytes = 8,
                      .max_bytes = 64 << 20,
                      .iters = 50,
                      .iters_large = 0,
                      .warmup = 5,
                      .device = 0,
                      .netdev = NULL,
                      .label = "allreduce",
                      .coll = "allreduce"};
    int rank, size, i;
    MPI_Comm node_comm;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--min")) o.min_bytes = parse_size(argv[i + 1]);
        else if (!strcmp(argv[i], "--max")) o.max_bytes = parse_size(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters")) o.iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters-large")) o.iters_large = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) o.warmup = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--buffer")) o.device = !strcmp(argv[i + 1], "device");
        else if (!strcmp(argv[i], "--netdev")) o.netdev = argv[i + 1];
        else if (!strcmp(argv[i], "--label")) o.label = argv[i + 1];
        else if (!strcmp(argv[i], "--coll")) o.coll = argv[i + 1];
        else {
            if (rank == 0) fprintf(stderr, "strata_allreduce_bench: unknown option '%s'\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (o.iters_large == 0) o.iters_large = o.iters;
    if (strcmp(o.coll, "allreduce") && strcmp(o.coll, "bcast") && strcmp(o.coll, "allgather") &&
        strcmp(o.coll, "reduce") && strcmp(o.coll, "reduce_scatter_block")) {
        if (rank == 0) fprintf(stderr, "strata_allreduce_bench: unknown --coll '%s'\n", o.coll);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (i < argc || o.iters < 1 || o.iters_large < 1 || o.min_bytes < sizeof(float) || o.max_bytes < o.min_bytes) {
        if (rank == 0) fprintf(stderr, "strata_allreduce_bench: bad arguments (see the comment at the top of the source)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (o.device && bench_cuda_open() != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm);
    if (rank == 0) {
        printf(
            "# strata_allreduce_bench: MPI_%s, %d ranks, %s buffers, %d iterations (%d from 1 MiB; +%d warm-up), MPI_FLOAT MPI_SUM\n",
            o.coll, size, o.device ? "device" : "host", o.iters, o.iters_large, o.warmup);
    }
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
        bench_size(&o, bytes, node_comm, rank);
    }
    MPI_Comm_free(&node_comm);
    MPI_Finalize();
    return 0;
}
