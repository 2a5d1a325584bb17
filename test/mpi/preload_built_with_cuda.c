/*
 * Preloaded into MPI ranks by mpi_accel_steps_aside (test/mpi/tests.sh):
 * makes this process's Open MPI 5.0 say it was built with CUDA support
 * (libopen-pal's opal_built_with_cuda_support, fixed at Open MPI's build and
 * not settable by any parameter), as a distribution's CUDA build would.
 * Strata's accelerator component must then step aside with a line and the
 * null component run.  Set in a constructor, before MPI_Init reads it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>

__attribute__((constructor)) static void preload_built_with_cuda(void)
{
    bool *built = dlsym(RTLD_DEFAULT, "opal_built_with_cuda_support");

    if (built == NULL) {
        fprintf(stderr, "preload_built_with_cuda: opal_built_with_cuda_support not found\n");
        return;
    }
    *built = true;
}
