/*
 * The gpu_copy memory domain: detects CUDA memory (mem_query), so UCP
 * routes device buffers to memory-type endpoints of gpu_copy; it needs no
 * rkey and no registration, which keeps UCP's per-message staging cheap.
 * Its opening installs the allocation hooks that feed UCP's memory type
 * cache (strata_memhooks.h), and the count of open instances tells
 * coll/strata that UCX in this process detects device memory
 * (common/strata_uct_probe.h).
 */
#ifndef UCT_GPU_COPY_MD_H
#define UCT_GPU_COPY_MD_H

#include "../base/strata_md.h"

/* The whole packed key of the gpu_copy domain (it has nothing to say). */
#define UCT_GPU_COPY_KEY_MAGIC 0x59504353u /* "SCPY" in memory */

extern const uct_strata_md_desc_t uct_gpu_copy_md_desc;

#endif /* UCT_GPU_COPY_MD_H */
