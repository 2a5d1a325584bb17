/*
 * dma-buf export by the gpu_copy domain: GPUDirect RDMA with UCX >= 1.14.
 *
 * UCP registers device memory with every domain that can take a dma-buf
 * (UCT_MD_FLAG_REG_DMABUF: the ib domain) once some domain lists CUDA in its
 * dmabuf_mem_types; for each registration it asks that domain's mem_query for
 * DMABUF_FD and DMABUF_OFFSET and hands both to the NIC's domain, which
 * closes nothing: UCP closes the fd after registering.  gpu_copy is that
 * provider: the fd comes from cuMemGetHandleForAddressRange over the
 * page-aligned whole allocation, a fresh one per query, and the offset is the
 * address's within it.  Where the driver cannot export, the fd is
 * UCT_DMABUF_FD_INVALID and the query still succeeds (the NIC then registers
 * the memory the ordinary way, or fails as it would without Strata).
 *
 * On UCX 1.13 (no dma-buf in UCT's API, strata_ucx_compat.h) these report
 * nothing and compile to nothing.
 */
#ifndef UCT_GPU_COPY_DMABUF_H
#define UCT_GPU_COPY_DMABUF_H

#include "../base/strata_md.h"

#if UCT_STRATA_HAVE_DMABUF

/* The memory types gpu_copy exports: CUDA when the driver has
 * cuMemGetHandleForAddressRange and every device reports
 * CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, else none. */
uint64_t uct_gpu_copy_dmabuf_mem_types(void);

/* The system device (PCI bus id in UCX's topology) of device `ordinal`, so
 * that UCP weighs the distance between the GPU and a NIC; unknown if the
 * driver does not say. */
ucs_sys_device_t uct_gpu_copy_dmabuf_sys_dev(int ordinal);

/* Fills the DMABUF_FD and DMABUF_OFFSET fields that mem_attr->field_mask
 * asks for, for `address` inside the memory `info` describes (device memory
 * the caller has already recognized).  The fd, when valid, is the caller's
 * to close. */
void uct_gpu_copy_dmabuf_mem_query(const void *address, const uct_strata_mem_info_t *info,
                                   uct_strata_md_mem_attr_t *mem_attr);

#else

static inline uint64_t uct_gpu_copy_dmabuf_mem_types(void)
{
    return 0;
}

static inline ucs_sys_device_t uct_gpu_copy_dmabuf_sys_dev(int ordinal)
{
    (void)ordinal;
    return UCS_SYS_DEVICE_ID_UNKNOWN;
}

static inline void uct_gpu_copy_dmabuf_mem_query(const void *address,
                                                 const uct_strata_mem_info_t *info,
                                                 uct_strata_md_mem_attr_t *mem_attr)
{
    (void)address;
    (void)info;
    (void)mem_attr;
}

#endif /* UCT_STRATA_HAVE_DMABUF */

#endif /* UCT_GPU_COPY_DMABUF_H */
