/*
 * The CUDA driver for the test programs: a checked call, a device and its
 * primary context, and copies between host and device memory.  Device
 * memory is only ever touched through cuMemcpyHtoD/cuMemcpyDtoH, so the
 * programs are right on a real GPU and on the CUDA stand-in, whose device
 * memory faults on a CPU access.
 */
#ifndef STEST_CUDA_H
#define STEST_CUDA_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* A driver call that must succeed; else stest_fail names it, the line, and
 * the driver's error name and string. */
#define STEST_CU(_call) stest_cu_check((_call), #_call, __LINE__)

void stest_cu_check(CUresult res, const char *call, int line);

typedef struct stest_dev {
    CUdevice dev;
    CUcontext ctx;       /* the device's primary context, current */
    int index, count;    /* the device's ordinal, and how many there are */
    char name[128];
    CUstream stream;     /* for STEST_MEM_ASYNC buffers; 0 until a program makes one */
} stest_dev_t;

/* Device `hint` modulo the number of devices, its primary context retained
 * and made current.  0, or -1 (nothing done) when the driver does not
 * initialise or has no device; any later failure is stest_fail's. */
int stest_dev_open(int hint, stest_dev_t *d);

/* Releases what stest_dev_open retained. */
void stest_dev_close(stest_dev_t *d);

/* n bytes of host memory to device memory and back; n == 0 does nothing. */
void stest_dev_write(CUdeviceptr dst, const void *src, size_t n);
void stest_dev_read(void *dst, CUdeviceptr src, size_t n);

/* A cuMemAlloc'ed copy of host[0, n) (one byte allocated for n == 0). */
CUdeviceptr stest_dev_dup(const void *host, size_t n);

/* dst[0, n) = the device memory, which is then freed. */
void stest_dev_read_free(void *dst, CUdeviceptr src, size_t n);

/* stest_pattern.h's sequence pattern in device memory. */
void stest_dev_seq_fill(CUdeviceptr dev, size_t len, unsigned seed);

/* Index + 1 of the first byte of dev[0, len) that is not
 * stest_seq_byte(seed, base + i), with what it should be and is; or 0. */
uint64_t stest_dev_seq_find_wrong(CUdeviceptr dev, size_t len, unsigned seed, size_t base,
                                  uint8_t *expected, uint8_t *got);

/* dev[0, len) must hold the sequence from base on; else stest_fail. */
void stest_dev_seq_check(const char *what, size_t size, CUdeviceptr dev, size_t len,
                         unsigned seed, size_t base);

#endif /* STEST_CUDA_H */
