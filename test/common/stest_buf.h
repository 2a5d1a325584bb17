/*
 * A test buffer in one of the kinds of memory a GPU-aware transport must
 * tell apart, written and read back without the CPU touching device memory.
 */
#ifndef STEST_BUF_H
#define STEST_BUF_H

#include "stest_cuda.h"

typedef enum {
    STEST_MEM_HOST,    /* aligned_alloc, page-aligned */
    STEST_MEM_DEVICE,  /* cuMemAlloc */
    STEST_MEM_MANAGED, /* cuMemAllocManaged(CU_MEM_ATTACH_GLOBAL): the CPU reads it directly */
    STEST_MEM_VMM,     /* cuMemCreate exportable as a POSIX fd, mapped read-write */
    STEST_MEM_ASYNC,   /* cuMemAllocAsync on the device's stream, synchronised */
} stest_mem_t;

typedef struct stest_buf {
    stest_mem_t mem;
    void *ptr; /* the address the code under test sees */
    size_t len;
    const stest_dev_t *dev;
    size_t vmm_size; /* VMM: the mapped size, rounded to the granularity */
    CUmemGenericAllocationHandle vmm_handle;
} stest_buf_t;

/* `len` bytes (at least one allocated) of kind `mem`; `dev` is the device
 * for the device kinds (NULL for host memory). */
void stest_buf_alloc(stest_buf_t *b, stest_mem_t mem, size_t len, const stest_dev_t *dev);
void stest_buf_free(stest_buf_t *b);

/* Whether the CPU must go through the driver to read or write it. */
int stest_buf_on_device(const stest_buf_t *b);

/* b[off, off + n) from/to host memory; n == 0 does nothing. */
void stest_buf_write(stest_buf_t *b, size_t off, const void *src, size_t n);
void stest_buf_read(const stest_buf_t *b, size_t off, void *dst, size_t n);

#endif /* STEST_BUF_H */
