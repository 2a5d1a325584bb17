/*
 * MPIX_Query_cuda_support() as applications see it (issue: CUDA-aware
 * applications must see Strata): called directly, as C codes do, and
 * looked up with dlsym in libmpi, as Python's ctypes and other language
 * bindings do.  Every rank checks both answers against --expect; the
 * compile-time MPIX_CUDA_AWARE_SUPPORT of Open MPI's header is printed,
 * never changed.
 *
 *   test_cuda_query --expect 0|1
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif

#include <dlfcn.h>
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MPIX_CUDA_AWARE_SUPPORT
#define MPIX_CUDA_AWARE_SUPPORT -1 /* header without the cuda extension */
#endif

int main(int argc, char **argv)
{
    int expect = -1, rank, direct, by_dlsym = -1, ok, all_ok = 0;
    int (*fn)(void) = NULL;
    Dl_info info;
    void *libmpi;

    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--expect") && i + 1 < argc) expect = atoi(argv[++i]);
    }
    if (expect != 0 && expect != 1) {
        fprintf(stderr, "usage: test_cuda_query --expect 0|1\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    direct = MPIX_Query_cuda_support();
    /* ctypes.CDLL("libmpi.so.40").MPIX_Query_cuda_support: the library's
     * own symbol, whatever the application's references point at */
    if (0 != dladdr((void *)MPI_Init, &info) &&
        NULL != (libmpi = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD))) {
        fn = (int (*)(void))dlsym(libmpi, "MPIX_Query_cuda_support");
        if (NULL != fn) by_dlsym = fn();
        dlclose(libmpi);
    }
    ok = (direct == expect && by_dlsym == expect);
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    printf("rank %d: MPIX_CUDA_AWARE_SUPPORT %d (compile time), MPIX_Query_cuda_support() %d, "
           "through dlsym %d: %s\n",
           rank, MPIX_CUDA_AWARE_SUPPORT, direct, by_dlsym, ok ? "as expected" : "WRONG");
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
