/*
 * MPI_Comm_dup, a device allreduce, MPI_Comm_free, over and over: nothing of
 * what a communicator sets up (sub-communicators, the node's segment, the
 * device scratch and its CUDA IPC mappings, pinned buffers) may outlive it.
 *
 *   mpirun -np N test_coll_free_loop [--rounds R] [--count C] [--host]
 *
 * Each of R rounds (default 10000) duplicates MPI_COMM_WORLD, runs one
 * MPI_Allreduce (MPI_INT, MPI_SUM) of C elements (default 65536) on device
 * buffers (--host: host buffers) on the duplicate, checks it, and frees the
 * duplicate right away (a rank that returns first frees while its peers may
 * still copy out).  After a warm-up of 20 rounds, and at the end, every rank
 * (after a barrier and one more MPI_Comm_dup/MPI_Comm_free) counts its open
 * file descriptors, its mappings of device memory (the
 * CUDA stand-in's memfds in /proc/self/maps: its own allocations and the
 * IPC mappings of its peers'), its mappings of strata's segments, and its
 * resident memory.  The end must equal the warm-up in the first three, and
 * resident memory may grow by at most 16 MiB.  Prints the counts; exits 1
 * naming the first wrong value or growth.  Needs a CUDA driver (the
 * stand-in) unless --host.
 */
#include <cuda.h>
#include <dirent.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

typedef struct counts {
    long fds, device_maps, segment_maps, rss_kib;
} counts_t;

static long count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    long n = 0;

    if (NULL == d) {
        return -1;
    }
    while (NULL != (e = readdir(d))) {
        n += ('.' != e->d_name[0]);
    }
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

/* Counted once every rank has freed the last duplicate (the barrier) and
 * one more communicator was created, which lets strata free what a peer
 * still mapped when the duplicate went (its retired list). */
static void take_counts(counts_t *c)
{
    FILE *f;
    char line[512];
    long pages = 0, resident = 0;
    MPI_Comm tmp;

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_dup(MPI_COMM_WORLD, &tmp);
    MPI_Comm_free(&tmp);
    f = fopen("/proc/self/maps", "r");
    c->fds = count_fds();
    c->device_maps = c->segment_maps = 0;
    while (NULL != f && NULL != fgets(line, sizeof(line), f)) {
        c->device_maps += (NULL != strstr(line, "memfd:cuda_standin"));
        c->segment_maps += (NULL != strstr(line, "strata_coll."));
    }
    if (NULL != f) {
        fclose(f);
    }
    f = fopen("/proc/self/statm", "r");
    if (NULL != f && 2 == fscanf(f, "%ld %ld", &pages, &resident)) {
        c->rss_kib = resident * (sysconf(_SC_PAGESIZE) / 1024);
    }
    if (NULL != f) {
        fclose(f);
    }
}

static void check_cu(CUresult res, const char *what)
{
    if (CUDA_SUCCESS != res) {
        printf("test_coll_free_loop: FAIL rank %d: %s: CUresult %d\n", rank, what, (int)res);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long rounds = 10000, count = 65536;
    int host = 0, bad = 0, all_bad = 0;
    int *h_in, *h_out;
    void *in, *out;
    CUdeviceptr d_in = 0, d_out = 0;
    CUcontext ctx = NULL;
    CUdevice dev;
    counts_t warm = {0}, end = {0};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atol(argv[++i]);
        } else if (0 == strcmp(argv[i], "--count") && i + 1 < argc) {
            count = atol(argv[++i]);
        } else if (0 == strcmp(argv[i], "--host")) {
            host = 1;
        }
    }
    h_in = malloc(sizeof(int) * (size_t)count);
    h_out = malloc(sizeof(int) * (size_t)count);
    for (long i = 0; i < count; ++i) {
        h_in[i] = (int)((rank * 31 + i) % 977);
    }
    if (host) {
        in = h_in;
        out = malloc(sizeof(int) * (size_t)count);
    } else {
        check_cu(cuInit(0), "cuInit");
        check_cu(cuDeviceGet(&dev, 0), "cuDeviceGet");
        check_cu(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
        check_cu(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
        check_cu(cuMemAlloc(&d_in, sizeof(int) * (size_t)count), "cuMemAlloc");
        check_cu(cuMemAlloc(&d_out, sizeof(int) * (size_t)count), "cuMemAlloc");
        check_cu(cuMemcpyHtoD(d_in, h_in, sizeof(int) * (size_t)count), "cuMemcpyHtoD");
        in = (void *)(uintptr_t)d_in;
        out = (void *)(uintptr_t)d_out;
    }
    for (long r = 0; r < rounds && !bad; ++r) {
        MPI_Comm comm;
        int rc;

        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        rc = MPI_Allreduce(in, out, (int)count, MPI_INT, MPI_SUM, comm);
        MPI_Comm_free(&comm);
        if (MPI_SUCCESS != rc) {
            printf("test_coll_free_loop: FAIL rank %d: round %ld: MPI_Allreduce returned %d\n",
                   rank, r, rc);
            bad = 1;
            break;
        }
        /* every 97th round and the last, the values */
        if (0 == r % 97 || r == rounds - 1) {
            if (host) {
                memcpy(h_out, out, sizeof(int) * (size_t)count);
            } else {
                check_cu(cuMemcpyDtoH(h_out, d_out, sizeof(int) * (size_t)count), "cuMemcpyDtoH");
            }
            for (long i = 0; i < count; ++i) {
                long want = 0;

                for (int q = 0; q < size; ++q) {
                    want += (q * 31 + i) % 977;
                }
                if (h_out[i] != want) {
                    printf("test_coll_free_loop: FAIL rank %d: round %ld: element %ld is %d, "
                           "expected %ld\n",
                           rank, r, i, h_out[i], want);
                    bad = 1;
                    break;
                }
            }
        }
        if (19 == r) {
            take_counts(&warm);
        }
    }
    take_counts(&end);
    if (!bad && rounds > 20) {
        if (end.fds != warm.fds || end.device_maps != warm.device_maps ||
            end.segment_maps != warm.segment_maps || end.rss_kib - warm.rss_kib > 16384) {
            printf("test_coll_free_loop: FAIL rank %d: after round 20 / round %ld: %ld / %ld "
                   "file descriptors, %ld / %ld device memory mappings, %ld / %ld segment "
                   "mappings, %ld / %ld KiB resident\n",
                   rank, rounds, warm.fds, end.fds, warm.device_maps, end.device_maps,
                   warm.segment_maps, end.segment_maps, warm.rss_kib, end.rss_kib);
            bad = 1;
        }
    }
    if (0 == rank) {
        printf("test_coll_free_loop: rank 0 after round 20 / round %ld: %ld / %ld file "
               "descriptors, %ld / %ld device memory mappings, %ld / %ld segment mappings, "
               "%ld / %ld KiB resident\n",
               rounds, warm.fds, end.fds, warm.device_maps, end.device_maps, warm.segment_maps,
               end.segment_maps, warm.rss_kib, end.rss_kib);
    }
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!host) {
        cuMemFree(d_in);
        cuMemFree(d_out);
        cuDevicePrimaryCtxRelease(dev);
    } else {
        free(out);
    }
    free(h_in);
    free(h_out);
    if (0 == rank) {
        printf("test_coll_free_loop: %s: %ld rounds on %d ranks\n", all_bad ? "FAIL" : "ok", rounds,
               size);
    }
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
