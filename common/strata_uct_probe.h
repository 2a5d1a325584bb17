/*
 * Does UCX in this process tell GPU memory from host memory?
 *
 * UCP keeps a memory domain only when it selected one of its transports
 * (UCX_TLS), and only a kept domain detects memory types.  Strata's UCT
 * module counts its open gpu_copy domains and exports the count under
 * STRATA_UCT_PROBE_SYMBOL; any other plugin in the process (coll/strata,
 * deciding whether its pml can carry device buffers) reads it without
 * linking the module: nonzero means some UCP context detects CUDA memory
 * and copies it through gpu_copy.
 */
#ifndef STRATA_UCT_PROBE_H
#define STRATA_UCT_PROBE_H

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_UCT_PROBE_SYMBOL "uct_strata_gpu_copy_domains_open"

typedef int (*strata_uct_probe_fn_t)(void);

/* Open gpu_copy domains in this process: 0 when the module is not loaded. */
int strata_uct_gpu_copy_domains(void);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_UCT_PROBE_H */
