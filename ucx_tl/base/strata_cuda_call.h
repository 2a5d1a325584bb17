/*
 * The one way Strata's transports call the CUDA driver: through
 * strata_cuda (common/strata_cuda.h, the driver opened at run time) and
 * this check, which logs a failure with the call's text and the driver's
 * error name and description and turns the result into a ucs_status_t, as
 * UCX's own CUDA transports do with theirs.
 */
#ifndef UCT_STRATA_CUDA_CALL_H
#define UCT_STRATA_CUDA_CALL_H

#include <common/strata_cuda.h>
#include <ucs/config/types.h>
#include <ucs/type/status.h>

/*
 * Evaluates to UCS_OK, UCS_INPROGRESS for CUDA_ERROR_NOT_READY, or an error
 * status after logging at `level`.  The level is a parameter because some
 * failures are expected (a pointer that is not CUDA memory) and must stay
 * quiet.
 */
ucs_status_t uct_strata_cuda_check(CUresult res, const char *call, ucs_log_level_t level);
#define UCT_STRATA_CUDA_CALL(_level, _call) uct_strata_cuda_check((_call), #_call, (_level))
#define UCT_STRATA_CUDA(_call)              UCT_STRATA_CUDA_CALL(UCS_LOG_LEVEL_ERROR, _call)

#endif /* UCT_STRATA_CUDA_CALL_H */
