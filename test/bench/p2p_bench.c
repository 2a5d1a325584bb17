/*
 * MPI point-to-point benchmark, host and GPU buffers (2 ranks).
 *
 *   p2p_bench [--kinds LIST] [--alloc cumemalloc|vmm|async] [--lat-min N] [--lat-max N]
 *             [--bw-min N] [--bw-max N] [--lat-iters N] [--bw-iters N] [--warmup N]
 *             [--window W] [--bw-bytes N] [--no-lat] [--no-bw] [--memcpy-ref] [--gpu-app]
 *             [--host-pinned]
 *
 * Buffer kinds (--kinds, a comma list; default host-host,device-device,host-device):
 * the first word is rank 0's buffer, the second rank 1's (device-host too).
 *   latency    ping-pong, sizes --lat-min..--lat-max (8 B..64 KiB) in powers
 *              of two; one-way time = round trip / 2, averaged over
 *              --lat-iters (1000) after --warmup (10) untimed round trips
 *   bandwidth  rank 0 posts --window (16) MPI_Isend of the size, rank 1 the
 *              matching MPI_Irecv, then a 4-byte host ack: one iteration.
 *              Sizes --bw-min..--bw-max (4 KiB..256 MiB); iterations per size:
 *              --bw-iters (20), fewer where that would move more than
 *              --bw-bytes (4 GiB), at least 1; --warmup untimed iterations
 *              (at most 2 per size).  All messages of a window share one buffer.
 *   --memcpy-ref  rank 0 times local copies for the bandwidth sizes (window x
 *              iterations copies, wall clock until cuStreamSynchronize):
 *              cuMemcpyDtoDAsync between two buffers of its GPU, and
 *              cuMemcpyHtoDAsync/DtoHAsync from and to pinned and pageable
 *              host memory, so MPI bandwidth can be read as a fraction of
 *              the local limit (device-device of dtod, host-device of htod
 *              from pinned memory, device-host of dtoh to it); and the
 *              copy-engine round (--lat-iters times): an 8-byte pinned copy
 *              to the device and back, each synchronized, over 2.
 *   --host-pinned  host buffers from cuMemHostAlloc instead of malloc
 *   --gpu-app  each rank makes a CUDA context and holds a 1 MiB device
 *              buffer through the whole run, as a GPU application does; UCX's
 *              memory type cache then holds an entry, and UCP sends every
 *              buffer (host too) through its typed path.
 * Output on rank 0, CSV with a header; comment lines start with '#':
 *   kind,size,lat_us,bw_MBps,iters
 *   device-device/lat,8,2.51,3.19,1000       (lat_us one-way; bw = size / lat)
 *   device-device/bw,1048576,75.2,13943.1,20  (lat_us per message in a window)
 *   memcpy-dtod/bw,1048576,40.1,26149.2,20
 *   # ratio,device-device/bw,memcpy-dtod/bw,1048576,0.533
 * MB/s are 10^6 bytes per second.  Numbers taken with the CUDA stand-in
 * measure host memcpy, not a GPU: never quote them.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_KINDS 4
#define MAX_SIZES 64

typedef enum { ALLOC_CUMEMALLOC, ALLOC_VMM, ALLOC_ASYNC } alloc_mode_t;
static const char *alloc_names[] = {"cumemalloc", "vmm", "async"};

static struct {
    alloc_mode_t alloc;
    int kinds[MAX_KINDS][2]; /* per kind: rank 0's and rank 1's buffer is on the device */
    int num_kinds, lat_iters, bw_iters, warmup, window, lat, bw, memcpy_ref, gpu_app, host_pinned;
    size_t lat_min, lat_max, bw_min, bw_max, bw_bytes;
} opt = {.alloc = ALLOC_CUMEMALLOC, .lat_iters = 1000, .bw_iters = 20, .warmup = 10, .window = 16,
         .lat = 1, .bw = 1, .lat_min = 8, .lat_max = 64u << 10, .bw_min = 4u << 10, .bw_max = 256u << 20,
         .bw_bytes = 4ull << 30};

static struct {
    int rank;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    int cuda_ready;
} g;

typedef struct bench_buf {
    int on_device;
    void *ptr;
    size_t len, vmm_size;
    CUmemGenericAllocationHandle vmm_handle;
    int pinned; /* host, cuMemHostAlloc */
} bench_buf_t;

/* ---- CUDA ---- */

#define CU_CHECK(_call) cu_check((_call), #_call, __LINE__)

static void cu_check(CUresult res, const char *call, int line)
{
    const char *name = "?", *str = "?";
    if (res == CUDA_SUCCESS) return;
    cuGetErrorName(res, &name);
    cuGetErrorString(res, &str);
    fprintf(stderr, "p2p_bench: rank %d: %s (line %d): %s (%s)\n", g.rank, call, line, name, str);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* local_rank: this rank's index on its node, which picks its GPU. */
static void cuda_setup(int local_rank)
{
    int count;
    char name[128];

    CU_CHECK(cuInit(0));
    CU_CHECK(cuDeviceGetCount(&count));
    if (count == 0) {
        fprintf(stderr, "p2p_bench: rank %d: no CUDA device\n", g.rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CU_CHECK(cuDeviceGet(&g.dev, local_rank % count));
    CU_CHECK(cuDevicePrimaryCtxRetain(&g.ctx, g.dev));
    CU_CHECK(cuCtxSetCurrent(g.ctx));
    CU_CHECK(cuStreamCreate(&g.stream, CU_STREAM_NON_BLOCKING));
    CU_CHECK(cuDeviceGetName(name, sizeof(name), g.dev));
    printf("# rank %d: device %d of %d: %s, --alloc %s\n", g.rank, local_rank % count, count, name,
           alloc_names[opt.alloc]);
    g.cuda_ready = 1;
}

static void buf_alloc(bench_buf_t *b, int on_device, size_t len)
{
    CUdeviceptr d = 0;

    memset(b, 0, sizeof(*b));
    b->len = len ? len : 1;
    b->on_device = on_device;
    if (!on_device && opt.host_pinned && g.cuda_ready) {
        CU_CHECK(cuMemHostAlloc(&b->ptr, b->len, 0));
        b->pinned = 1;
        memset(b->ptr, 0, b->len);
        return;
    }
    if (!on_device) {
        b->ptr = aligned_alloc(4096, (b->len + 4095) / 4096 * 4096);
        if (b->ptr == NULL) {
            fprintf(stderr, "p2p_bench: cannot allocate %zu bytes\n", b->len);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(b->ptr, 0, b->len);
        return;
    }
    if (opt.alloc == ALLOC_VMM) {
        CUmemAllocationProp prop = {0};
        CUmemAccessDesc access = {0};
        size_t gran;
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = (int)g.dev;
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        CU_CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        b->vmm_size = (b->len + gran - 1) / gran * gran;
        CU_CHECK(cuMemCreate(&b->vmm_handle, b->vmm_size, &prop, 0));
        CU_CHECK(cuMemAddressReserve(&d, b->vmm_size, 0, 0, 0));
        CU_CHECK(cuMemMap(d, b->vmm_size, 0, b->vmm_handle, 0));
        access.location = prop.location;
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        CU_CHECK(cuMemSetAccess(d, b->vmm_size, &access, 1));
    } else if (opt.alloc == ALLOC_ASYNC) {
        CU_CHECK(cuMemAllocAsync(&d, b->len, g.stream));
        CU_CHECK(cuStreamSynchronize(g.stream));
    } else {
        CU_CHECK(cuMemAlloc(&d, b->len));
    }
    b->ptr = (void *)(uintptr_t)d;
}

static void buf_free(bench_buf_t *b)
{
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)b->ptr;

    if (b->pinned) {
        CU_CHECK(cuMemFreeHost(b->ptr));
    } else if (!b->on_device) {
        free(b->ptr);
    } else if (opt.alloc == ALLOC_VMM) {
        CU_CHECK(cuMemUnmap(d, b->vmm_size));
        CU_CHECK(cuMemRelease(b->vmm_handle));
        CU_CHECK(cuMemAddressFree(d, b->vmm_size));
    } else if (opt.alloc == ALLOC_ASYNC) {
        CU_CHECK(cuMemFreeAsync(d, g.stream));
        CU_CHECK(cuStreamSynchronize(g.stream));
    } else {
        CU_CHECK(cuMemFree(d));
    }
}

/* ---- measurements ---- */

static const char *kind_name(int k)
{
    static char name[32];
    snprintf(name, sizeof(name), "%s-%s", opt.kinds[k][0] ? "device" : "host", opt.kinds[k][1] ? "device" : "host");
    return name;
}

static void print_row(const char *kind, const char *test, size_t size, double us, int iters)
{
    printf("%s/%s,%zu,%.3f,%.1f,%d\n", kind, test, size, us, us > 0 ? (double)size / us : 0.0, iters);
}

static int bw_iters_for(size_t size)
{
    double per_iter = (double)size * opt.window;
    int iters = opt.bw_iters;
    if (per_iter * iters > (double)opt.bw_bytes) iters = (int)((double)opt.bw_bytes / per_iter);
    return iters < 1 ? 1 : iters;
}

static void run_latency(int k, void *buf)
{
    for (size_t size = opt.lat_min; size <= opt.lat_max; size *= 2) {
        int n = (int)size;
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int it = -opt.warmup; it < opt.lat_iters; it++) {
            if (it == 0) t0 = MPI_Wtime();
            if (g.rank == 0) {
                MPI_Send(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        if (g.rank == 0) {
            print_row(kind_name(k), "lat", size, (MPI_Wtime() - t0) * 1e6 / (2.0 * opt.lat_iters), opt.lat_iters);
        }
        if (size == 0) break;
    }
}

/* Returns the microseconds per message on rank 0 for every bandwidth size;
 * the caller keeps them for the ratio lines. */
static void run_bandwidth(int k, void *buf, double *us_out)
{
    MPI_Request *reqs = malloc(sizeof(*reqs) * (size_t)opt.window);
    int ack = 0, s = 0;

    for (size_t size = opt.bw_min; size <= opt.bw_max; size *= 2, s++) {
        int n = (int)size, iters = bw_iters_for(size), warmup = opt.warmup < 2 ? opt.warmup : 2;
        double t0 = 0, us;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int it = -warmup; it < iters; it++) {
            if (it == 0) t0 = MPI_Wtime();
            for (int w = 0; w < opt.window; w++) {
                if (g.rank == 0) MPI_Isend(buf, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &reqs[w]);
                else MPI_Irecv(buf, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &reqs[w]);
            }
            MPI_Waitall(opt.window, reqs, MPI_STATUSES_IGNORE);
            if (g.rank == 0) MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
        }
        us = (MPI_Wtime() - t0) * 1e6 / ((double)iters * opt.window);
        if (g.rank == 0) {
            print_row(kind_name(k), "bw", size, us, iters);
            us_out[s] = us;
        }
        if (size == 0) break;
    }
    free(reqs);
}

/* The copies --memcpy-ref times on rank 0: the limits the MPI figures are
 * read against, in the same run. */
typedef enum {
    REF_DTOD,        /* device to device: gpu_ipc's limit */
    REF_HTOD_PINNED, /* host to device from pinned memory: PCIe's */
    REF_HTOD_PAGEABLE,
    REF_DTOH_PINNED,
    REF_DTOH_PAGEABLE,
    REF_LAST
} ref_kind_t;
static const char *ref_names[REF_LAST] = {"memcpy-dtod", "memcpy-htod-pinned",
                                          "memcpy-htod-pageable", "memcpy-dtoh-pinned",
                                          "memcpy-dtoh-pageable"};

static void ref_copy(ref_kind_t r, void *host, CUdeviceptr a, CUdeviceptr b, size_t size)
{
    switch (r) {
    case REF_DTOD: CU_CHECK(cuMemcpyDtoDAsync(b, a, size, g.stream)); break;
    case REF_HTOD_PINNED:
    case REF_HTOD_PAGEABLE: CU_CHECK(cuMemcpyHtoDAsync(a, host, size, g.stream)); break;
    default: CU_CHECK(cuMemcpyDtoHAsync(host, a, size, g.stream)); break;
    }
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* Rank 0: each reference copy of each bandwidth size, window x iterations
 * copies queued back to back, wall clock until the stream is done. */
static void run_memcpy_ref(double us_out[REF_LAST][MAX_SIZES])
{
    bench_buf_t a, b;
    void *pinned, *pageable;

    buf_alloc(&a, 1, opt.bw_max);
    buf_alloc(&b, 1, opt.bw_max);
    CU_CHECK(cuMemHostAlloc(&pinned, opt.bw_max, 0));
    pageable = aligned_alloc(4096, (opt.bw_max + 4095) / 4096 * 4096);
    if (pageable == NULL) {
        fprintf(stderr, "p2p_bench: cannot allocate %zu bytes\n", opt.bw_max);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(pinned, 1, opt.bw_max);
    memset(pageable, 1, opt.bw_max);
    for (int r = 0; r < REF_LAST; r++) {
        void *host = (r == REF_HTOD_PAGEABLE || r == REF_DTOH_PAGEABLE) ? pageable : pinned;
        int s = 0;
        for (size_t size = opt.bw_min; size <= opt.bw_max && s < MAX_SIZES; size *= 2, s++) {
            int iters = bw_iters_for(size), copies = iters * opt.window;
            double t0;
            for (int w = 0; w < opt.window; w++)
                ref_copy((ref_kind_t)r, host, (CUdeviceptr)(uintptr_t)a.ptr,
                         (CUdeviceptr)(uintptr_t)b.ptr, size);
            CU_CHECK(cuStreamSynchronize(g.stream));
            t0 = now_us();
            for (int c = 0; c < copies; c++)
                ref_copy((ref_kind_t)r, host, (CUdeviceptr)(uintptr_t)a.ptr,
                         (CUdeviceptr)(uintptr_t)b.ptr, size);
            CU_CHECK(cuStreamSynchronize(g.stream));
            us_out[r][s] = (now_us() - t0) / copies;
            print_row(ref_names[r], "bw", size, us_out[r][s], iters);
            if (size == 0) break;
        }
    }
    /* The copy-engine round: an 8-byte copy from pinned memory to the device
     * and back, each synchronized, over 2: what one small message must pay
     * at least on copy engines. */
    {
        int n = opt.lat_iters;
        double t0 = now_us();
        for (int i = 0; i < n; i++) {
            CU_CHECK(cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)a.ptr, pinned, 8, g.stream));
            CU_CHECK(cuStreamSynchronize(g.stream));
            CU_CHECK(cuMemcpyDtoHAsync(pinned, (CUdeviceptr)(uintptr_t)a.ptr, 8, g.stream));
            CU_CHECK(cuStreamSynchronize(g.stream));
        }
        print_row("memcpy-ce-round", "lat", 8, (now_us() - t0) / (2.0 * n), n);
    }
    CU_CHECK(cuMemFreeHost(pinned));
    free(pageable);
    buf_free(&a);
    buf_free(&b);
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

static int parse_kinds(const char *list)
{
    char *copy = strdup(list), *tok, *save = NULL;
    opt.num_kinds = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL && opt.num_kinds < MAX_KINDS; tok = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(tok, '-');
        if (dash == NULL) goto bad;
        *dash = '\0';
        for (int side = 0; side < 2; side++) {
            const char *w = side ? dash + 1 : tok;
            if (strcmp(w, "host") && strcmp(w, "device")) goto bad;
            opt.kinds[opt.num_kinds][side] = !strcmp(w, "device");
        }
        opt.num_kinds++;
    }
    free(copy);
    return opt.num_kinds > 0 ? 0 : -1;
bad:
    free(copy);
    return -1;
}

static int parse_options(int argc, char **argv)
{
    parse_kinds("host-host,device-device,host-device");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        int takes = 1;
        if (!strcmp(a, "--kinds")) {
            if (parse_kinds(v) != 0) return -1;
        } else if (!strcmp(a, "--alloc")) {
            int m;
            for (m = 0; m < 3 && strcmp(v, alloc_names[m]); m++) {
            }
            if (m == 3) return -1;
            opt.alloc = (alloc_mode_t)m;
        } else if (!strcmp(a, "--lat-min")) opt.lat_min = parse_size(v);
        else if (!strcmp(a, "--lat-max")) opt.lat_max = parse_size(v);
        else if (!strcmp(a, "--bw-min")) opt.bw_min = parse_size(v);
        else if (!strcmp(a, "--bw-max")) opt.bw_max = parse_size(v);
        else if (!strcmp(a, "--bw-bytes")) opt.bw_bytes = parse_size(v);
        else if (!strcmp(a, "--lat-iters")) opt.lat_iters = atoi(v);
        else if (!strcmp(a, "--bw-iters")) opt.bw_iters = atoi(v);
        else if (!strcmp(a, "--warmup")) opt.warmup = atoi(v);
        else if (!strcmp(a, "--window")) opt.window = atoi(v);
        else {
            takes = 0;
            if (!strcmp(a, "--no-lat")) opt.lat = 0;
            else if (!strcmp(a, "--no-bw")) opt.bw = 0;
            else if (!strcmp(a, "--memcpy-ref")) opt.memcpy_ref = 1;
            else if (!strcmp(a, "--gpu-app")) opt.gpu_app = 1;
            else if (!strcmp(a, "--host-pinned")) opt.host_pinned = 1;
            else return -1;
        }
        i += takes;
    }
    if (opt.lat_iters < 1 || opt.bw_iters < 1 || opt.warmup < 0 || opt.window < 1 || opt.lat_min > opt.lat_max ||
        opt.bw_min > opt.bw_max || opt.bw_max > INT32_MAX || opt.lat_max > INT32_MAX) {
        return -1;
    }
    return 0;
}

/* Each MPI bandwidth over its limit in the same run: device-device over a
 * local dtod copy, host-device over a copy from pinned host memory. */
static void print_ratios(double mpi_us[MAX_KINDS][MAX_SIZES], double ref_us[REF_LAST][MAX_SIZES])
{
    for (int k = 0; k < opt.num_kinds && opt.bw; k++) {
        ref_kind_t r;
        int s = 0;
        if (opt.kinds[k][0] && opt.kinds[k][1]) r = REF_DTOD;
        else if (opt.kinds[k][1]) r = REF_HTOD_PINNED;
        else if (opt.kinds[k][0]) r = REF_DTOH_PINNED;
        else continue;
        for (size_t sz = opt.bw_min; sz <= opt.bw_max && s < MAX_SIZES; sz *= 2, s++) {
            printf("# ratio,%s/bw,%s/bw,%zu,%.3f\n", kind_name(k), ref_names[r], sz,
                   mpi_us[k][s] > 0 ? ref_us[r][s] / mpi_us[k][s] : 0.0);
        }
    }
}

int main(int argc, char **argv)
{
    static double mpi_us[MAX_KINDS][MAX_SIZES], ref_us[REF_LAST][MAX_SIZES];
    int size, need_cuda = 0, local_rank;
    MPI_Comm node;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse_options(argc, argv) != 0 || size != 2) {
        if (g.rank == 0) {
            fprintf(
                stderr,
                "usage: mpirun -np 2 p2p_bench [--kinds host-host,device-device,host-device,device-host]\n"
                "       [--alloc cumemalloc|vmm|async] [--lat-min N] [--lat-max N] [--bw-min N] [--bw-max N]\n"
                "       [--lat-iters N] [--bw-iters N] [--warmup N] [--window W] [--bw-bytes N]\n"
                "       [--no-lat] [--no-bw] [--memcpy-ref] [--gpu-app] [--host-pinned]\n");
        }
        MPI_Finalize();
        return 2;
    }
    for (int k = 0; k < opt.num_kinds; k++) {
        need_cuda |= opt.kinds[k][g.rank];
    }
    need_cuda |= opt.host_pinned;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    if (need_cuda || opt.gpu_app || (opt.memcpy_ref && g.rank == 0)) cuda_setup(local_rank);
    bench_buf_t held = {0};
    if (opt.gpu_app) buf_alloc(&held, 1, 1 << 20);
    if (g.rank == 0) {
        printf("# p2p_bench: window %d, lat-iters %d, bw-iters %d (max %zu bytes per size), warmup %d\n",
               opt.window, opt.lat_iters, opt.bw_iters, opt.bw_bytes, opt.warmup);
        printf("kind,size,lat_us,bw_MBps,iters\n");
    }
    for (int k = 0; k < opt.num_kinds; k++) {
        size_t max = opt.bw ? opt.bw_max : 0;
        bench_buf_t buf;
        if (opt.lat && opt.lat_max > max) max = opt.lat_max;
        buf_alloc(&buf, opt.kinds[k][g.rank], max);
        if (opt.lat) run_latency(k, buf.ptr);
        if (opt.bw) run_bandwidth(k, buf.ptr, mpi_us[k]);
        buf_free(&buf);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (opt.memcpy_ref && g.rank == 0) {
        run_memcpy_ref(ref_us);
        print_ratios(mpi_us, ref_us);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (opt.gpu_app) buf_free(&held);
    if (g.cuda_ready) CU_CHECK(cuStreamDestroy(g.stream));
    /* The context outlives MPI: the transport may hold resources in it. */
    MPI_Finalize();
    if (g.cuda_ready) cuDevicePrimaryCtxRelease(g.dev);
    return 0;
}
