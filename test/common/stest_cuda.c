#include "stest_cuda.h"

#include "stest_fail.h"
#include "stest_pattern.h"

#include <stdlib.h>
#include <string.h>

void stest_cu_check(CUresult res, const char *call, int line)
{
    const char *name = "?", *str = "?";

    if (res == CUDA_SUCCESS) {
        return;
    }
    cuGetErrorName(res, &name);
    cuGetErrorString(res, &str);
    stest_fail("%s (line %d): %s (%s)", call, line, name, str);
}

int stest_dev_open(int hint, stest_dev_t *d)
{
    memset(d, 0, sizeof(*d));
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&d->count) != CUDA_SUCCESS ||
        d->count == 0) {
        return -1;
    }
    d->index = hint % d->count;
    STEST_CU(cuDeviceGet(&d->dev, d->index));
    STEST_CU(cuDevicePrimaryCtxRetain(&d->ctx, d->dev));
    STEST_CU(cuCtxSetCurrent(d->ctx));
    STEST_CU(cuDeviceGetName(d->name, sizeof(d->name), d->dev));
    return 0;
}

void stest_dev_close(stest_dev_t *d)
{
    if (d->ctx != NULL) {
        cuDevicePrimaryCtxRelease(d->dev);
        d->ctx = NULL;
    }
}

void stest_dev_write(CUdeviceptr dst, const void *src, size_t n)
{
    if (n > 0) STEST_CU(cuMemcpyHtoD(dst, src, n));
}

void stest_dev_read(void *dst, CUdeviceptr src, size_t n)
{
    if (n > 0) STEST_CU(cuMemcpyDtoH(dst, src, n));
}

CUdeviceptr stest_dev_dup(const void *host, size_t n)
{
    CUdeviceptr d;

    STEST_CU(cuMemAlloc(&d, n ? n : 1));
    stest_dev_write(d, host, n);
    return d;
}

void stest_dev_read_free(void *dst, CUdeviceptr src, size_t n)
{
    stest_dev_read(dst, src, n);
    STEST_CU(cuMemFree(src));
}

static uint8_t *stest_dev_host_copy(size_t len)
{
    uint8_t *buf = malloc(len + 1);

    if (buf == NULL) stest_fail("cannot allocate %zu host bytes", len + 1);
    return buf;
}

void stest_dev_seq_fill(CUdeviceptr dev, size_t len, unsigned seed)
{
    uint8_t *buf = stest_dev_host_copy(len);

    stest_seq_fill(buf, len, seed);
    stest_dev_write(dev, buf, len);
    free(buf);
}

uint64_t stest_dev_seq_find_wrong(CUdeviceptr dev, size_t len, unsigned seed, size_t base,
                                  uint8_t *expected, uint8_t *got)
{
    uint8_t *buf = stest_dev_host_copy(len);
    uint64_t bad = 0;

    stest_dev_read(buf, dev, len);
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != stest_seq_byte(seed, base + i)) {
            *expected = stest_seq_byte(seed, base + i);
            *got      = buf[i];
            bad       = i + 1;
            break;
        }
    }
    free(buf);
    return bad;
}

void stest_dev_seq_check(const char *what, size_t size, CUdeviceptr dev, size_t len,
                         unsigned seed, size_t base)
{
    uint8_t *buf = stest_dev_host_copy(len);

    stest_dev_read(buf, dev, len);
    stest_seq_check(what, size, buf, len, seed, base);
    free(buf);
}
