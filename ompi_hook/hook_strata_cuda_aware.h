/*
 * hook/strata and the CUDA-aware launch line (config/cuda-aware.conf):
 *   - on a node without a usable CUDA driver, the line must run quietly on
 *     the host transports: Strata's GPU transports are taken out of
 *     UCX_TLS before UCX reads it (UCX warns about every named transport
 *     it cannot find);
 *   - where Strata's path is really active (a driver with a device, the UCT
 *     module loaded, pml/ucx the only pml), the application's
 *     MPIX_Query_cuda_support() answers 1: Open MPI 4.1 built without CUDA
 *     compiles it to "return 0", which is rewritten to "return 1" in
 *     libmpi itself, so that every caller sees it (direct calls, dlsym,
 *     ctypes).  docs/design.md, "CUDA-awareness visible to applications",
 *     says why that is safe and what it touches.
 */
#ifndef MCA_HOOK_STRATA_CUDA_AWARE_H
#define MCA_HOOK_STRATA_CUDA_AWARE_H

#include <stddef.h>

/* Whether a CUDA driver with at least one device is usable.  Without one,
 * removes gpu_copy and gpu_ipc from a UCX_TLS that lists them (and other
 * transports), with one line at verbosity 10.  Returns 1 if usable. */
int mca_hook_strata_cuda_aware_probe(int output);

/* Makes MPIX_Query_cuda_support() answer 1 when `pml` (the pml MCA
 * setting) selects pml/ucx alone; a line at verbosity 10 says what was done
 * or why not.  Call only with the driver usable and the UCT module loaded. */
void mca_hook_strata_cuda_aware_answer(int output, const char *pml);

/* Open MPI 5.0, whose answer is the selected accelerator component's name:
 * when it is Strata's ("cuda") but pml/ucx carries the job without Strata's
 * UCX path (`ucx_ready` false: module not loaded or no driver; or no
 * gpu_copy in UCX_TLS), makes the answer 0.  A line at verbosity 10 says
 * what the answer is and why. */
void mca_hook_strata_cuda_aware_answer_accel(int output, const char *pml, int ucx_ready);

/*
 * The rewrite itself, kept apart from Open MPI for the unit test: makes the
 * function at `fn`, whose machine code must be exactly a "return 0" (x86_64:
 * [endbr64] xor %eax,%eax; ret, followed by alignment padding; aarch64:
 * mov w0, #0; ret), return 1.  Returns 0 on success (or if it returns 1
 * already), -1 with `why` set (code not recognised, page not writable).
 */
int mca_hook_strata_cuda_aware_return_one(void *fn, char *why, size_t max);

/* UCX_TLS value `tls` without `drop`'s comma-separated names, into out;
 * returns 1 if something was removed, 0 if out equals tls (a negated list,
 * "^...", none of the names, or nothing would be left). */
int mca_hook_strata_cuda_aware_tls_without(const char *tls, const char *drop, char *out,
                                           size_t max);

/* Whether the comma-separated list `tls` holds `name`. */
int mca_hook_strata_cuda_aware_tls_names(const char *tls, const char *name);

#endif /* MCA_HOOK_STRATA_CUDA_AWARE_H */
