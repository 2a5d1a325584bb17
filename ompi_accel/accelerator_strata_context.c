/*
 * accelerator/cuda (Strata): what every group of entry points shares (the
 * component's output stream, the error line of a failed driver call, and
 * making a device's context current around driver calls), kept apart from
 * the component so that the entry points' files depend on it and the
 * component on them, never back.
 */
#include "ompi_accel/accelerator_strata.h"

#include <stdarg.h>
#include <stdio.h>

#include "opal/constants.h"
#include "opal/util/output.h"

#include "common/strata_cuda.h"

/* Opened and closed with the component (accelerator_strata_component.c). */
int accelerator_strata_output = -1;

void accelerator_strata_report(const char *call, CUresult res, const char *what, ...)
{
    char result[160], line[512];
    va_list ap;

    va_start(ap, what);
    vsnprintf(line, sizeof(line), what, ap);
    va_end(ap);
    opal_output(0, "accelerator:cuda (Strata): %s failed: %s (%s)", call,
                strata_cuda_result_str(res, result, sizeof(result)), line);
}

int accelerator_strata_ctx_push(int dev_id, CUcontext *saved, const char *what)
{
    if (strata_cuda_ctx_push(dev_id, saved) != 0) {
        opal_output(0,
                    "accelerator:cuda (Strata): no CUDA context for device %d could be made "
                    "current (%s)",
                    dev_id, what);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

void accelerator_strata_ctx_pop(CUcontext saved)
{
    strata_cuda_ctx_pop(saved);
}
