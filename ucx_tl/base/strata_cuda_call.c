/*
 * Checking the CUDA driver's results (see strata_cuda_call.h).
 */
#include "strata_cuda_call.h"

#include <ucs/debug/log.h>

ucs_status_t uct_strata_cuda_check(CUresult res, const char *call, ucs_log_level_t level)
{
    char str[160];

    if (ucs_likely(res == CUDA_SUCCESS)) {
        return UCS_OK;
    }
    if (res == CUDA_ERROR_NOT_READY) {
        return UCS_INPROGRESS;
    }
    ucs_log(level, "%s failed: %s", call, strata_cuda_result_str(res, str, sizeof(str)));
    switch (res) {
    case CUDA_ERROR_OUT_OF_MEMORY:
        return UCS_ERR_NO_MEMORY;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
        return UCS_ERR_INVALID_PARAM;
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NOT_PERMITTED:
        return UCS_ERR_UNSUPPORTED;
    default:
        return UCS_ERR_IO_ERROR;
    }
}
