/*
 * Non-contiguous MPI datatypes on GPU buffers, for pml/ucx.
 *
 * Debian's Open MPI is built without CUDA.  pml/ucx hands a contiguous
 * buffer to UCX, which (with Strata's transports) handles device memory; a
 * non-contiguous datatype it hands over as a UCP "generic" datatype whose
 * pack/unpack callbacks run Open MPI's convertor, a CPU memcpy loop that
 * crashes on device memory.  hook/strata wraps those callbacks: when the
 * buffer is device memory, they copy the datatype's contiguous runs (as Open
 * MPI's convertor lists them) between the device and UCP's packed stream,
 * asynchronously with one wait per call; host memory bounded by
 * hook_strata_device_datatypes_chunk, whatever the span; a receive writes
 * the runs alone, never the gaps between them.  Host buffers go to Open
 * MPI's callbacks unchanged.
 *
 * pml/ucx's calls to ucp_dt_create_generic() / ucp_dt_destroy() reach the
 * definitions in hook_strata_dt.c, which forward to libucp's, in one of two
 * ways, chosen at run time.  Open MPI 4.1 opens components into the global
 * namespace, and the hook before pml/ucx: pml/ucx binds to the hook's
 * exported definitions (symbol interposition).  Open MPI 5.0 links pml/ucx
 * into libmpi, which links libucp, so libmpi's calls were bound to libucp
 * before the hook was loaded; the hook rewrites their GOT slots while it
 * opens, before pml selection (hook_strata_reloc.h).
 */
#ifndef MCA_HOOK_STRATA_DT_H
#define MCA_HOOK_STRATA_DT_H

/* Turns the device path on (hook_strata_device_datatypes) once the CUDA
 * driver could be opened; before that, and without a driver, calls pass
 * through. */
void mca_hook_strata_dt_enable(int verbose_output);

#endif /* MCA_HOOK_STRATA_DT_H */
