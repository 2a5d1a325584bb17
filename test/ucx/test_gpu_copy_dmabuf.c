/*
 * dma-buf export by the gpu_copy memory domain (UCX >= 1.14), through UCT's
 * public API in one process: what UCP asks a dma-buf provider before it
 * registers device memory with a NIC (GPUDirect RDMA).
 *
 *   test_gpu_copy_dmabuf [--expect-no-fd]
 *
 *   attrs    the domain lists CUDA in dmabuf_mem_types
 *   fd       uct_md_mem_query(DMABUF_FD | DMABUF_OFFSET) at an unaligned
 *            address inside a cuMemAlloc'ed buffer: a descriptor, and the
 *            offset of the address in it; mmap'ed, the descriptor holds the
 *            buffer's bytes at that offset, and device writes made after the
 *            query (the memory itself, not a copy); the sys_dev is the
 *            device's PCI bus id
 *   fresh    two queries give two distinct descriptors, each usable alone;
 *            DMABUF_OFFSET alone makes no descriptor; none is leaked
 *   vmm      the same for a cuMemMap'ed range
 *   host     a host pointer: no dma-buf (an error status, or
 *            UCT_DMABUF_FD_INVALID)
 *   managed  managed memory: UCT_DMABUF_FD_INVALID (not in dmabuf_mem_types)
 * With --expect-no-fd (run with the driver's export failing, e.g.
 * CUDA_STANDIN_FAIL=cuMemGetHandleForAddressRange): every query succeeds
 * with UCT_DMABUF_FD_INVALID and the right offset, nothing crashes.
 *
 * The driver's own dma-buf descriptors cannot be mmap'ed by the CPU: on a
 * real GPU the byte checks are reported as not done (the stand-in's can).
 * Device memory is otherwise filled and read with cuMemcpyHtoD/DtoH only.
 * One line per check; the first wrong value prints the check, index,
 * expected and got, and exits 1.  Exit 77: UCX older than 1.14, no CUDA
 * device or no gpu_copy domain.
 *
 * Run (UCX before 1.22 loads the plugin only when preloaded):
 *   LD_PRELOAD=.../libuct_strata.so LD_LIBRARY_PATH=<libcuda.so.1 dir> ./test_gpu_copy_dmabuf
 */
#define _GNU_SOURCE
#include "stest_cuda.h"
#include "stest_fail.h"
#include "stest_pattern.h"
#include "stest_uct.h"

#include <uct/api/version.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

void stest_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stdout, "test_gpu_copy_dmabuf: FAIL: ");
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n");
    va_end(ap);
    exit(1);
}

#if UCT_API >= UCT_VERSION(1, 14)

#include <ucs/sys/topo/base/topo.h>
#include <uct/api/v2/uct_v2.h>

#define TEST_SIZE   (1024 * 1024 + 4096 + 77)
/* The address asked about: inside the buffer, not page-aligned. */
#define TEST_OFFSET (2 * 4096 + 123)

typedef struct test_ctx {
    stest_uct_t uct;
    stest_dev_t dev;
    int expect_fd; /* 0 with --expect-no-fd */
    int can_map;   /* the driver's dma-bufs can be mmap'ed (the stand-in's) */
    size_t page;
} test_ctx_t;

static int test_open_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *entry;
    int count = 0;

    if (dir == NULL) {
        stest_fail("opendir /proc/self/fd: %s", strerror(errno));
    }
    while ((entry = readdir(dir)) != NULL) {
        count += (entry->d_name[0] != '.');
    }
    closedir(dir);
    return count - 1; /* the directory's own */
}

static void test_attrs(test_ctx_t *t)
{
    uct_md_attr_v2_t attr = {.field_mask = UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES};

    STEST_UCS(uct_md_query_v2(t->uct.md, &attr));
    if (!(attr.dmabuf_mem_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA))) {
        stest_fail("attrs: dmabuf_mem_types 0x%llx lacks cuda",
                   (unsigned long long)attr.dmabuf_mem_types);
    }
    printf("attrs: dmabuf_mem_types lists cuda: ok\n");
}

/* mem_query of `len` bytes at `address` with `fields`; the status. */
static ucs_status_t test_query(test_ctx_t *t, const void *address, size_t len, uint64_t fields,
                               uct_md_mem_attr_t *attr)
{
    memset(attr, 0, sizeof(*attr));
    attr->field_mask = fields;
    attr->dmabuf_fd = -2; /* neither a descriptor nor UCT_DMABUF_FD_INVALID */
    return uct_md_mem_query(t->uct.md, address, len, attr);
}

/* `view`[i] must be byte `first + i` of pattern `seed`, for `len` bytes. */
static void test_check_bytes(const char *what, const uint8_t *view, size_t len, unsigned seed,
                             size_t first)
{
    stest_seq_check(what, len, view, len, seed, first);
}

/* The descriptor, mmap'ed over [0, offset + len) rounded to pages; NULL
 * if the driver's dma-bufs cannot be mapped (reported). */
static uint8_t *test_map(test_ctx_t *t, const char *what, int fd, size_t map_len)
{
    void *p = mmap(NULL, map_len, PROT_READ, MAP_SHARED, fd, 0);

    if (p != MAP_FAILED) {
        return p;
    }
    if (t->can_map) {
        stest_fail("%s: mmap of dma-buf fd %d (%zu bytes): %s", what, fd, map_len, strerror(errno));
    }
    printf("%s: mmap of the driver's dma-buf: %s (not mappable by the CPU): bytes not compared\n",
           what, strerror(errno));
    return NULL;
}

/* The sys_dev must be the device's PCI bus id in UCX's topology. */
static void test_check_sys_dev(test_ctx_t *t, ucs_sys_device_t sys_dev)
{
    char want[32], got[32];

    STEST_CU(cuDeviceGetPCIBusId(want, sizeof(want), t->dev.dev));
    if ((sys_dev == UCS_SYS_DEVICE_ID_UNKNOWN) ||
        (ucs_topo_sys_device_bdf_name(sys_dev, got, sizeof(got)) == NULL)) {
        stest_fail("fd: sys_dev of device memory: expected %s got unknown (%u)", want,
                   (unsigned)sys_dev);
    }
    if (strcasecmp(want, got) != 0) {
        stest_fail("fd: sys_dev of device memory: expected %s got %s", want, got);
    }
    printf("fd: sys_dev %u is %s, the device's PCI bus id: ok\n", (unsigned)sys_dev, got);
}

/*
 * Asks about [base + offset, + len) of device memory `base` (whose
 * allocation or mapping starts at `alloc_base`, page-aligned) and checks
 * the answer: fd, offset, and through a mapping the bytes of pattern `seed`
 * the caller filled the whole range [alloc_base, base + size) with.
 * Returns the fd (the caller closes it) or UCT_DMABUF_FD_INVALID.
 */
static int test_fd_query(test_ctx_t *t, const char *what, CUdeviceptr alloc_base, CUdeviceptr ptr,
                         size_t len, unsigned seed)
{
    uint64_t fields = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE | UCT_MD_MEM_ATTR_FIELD_DMABUF_FD |
                      UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET;
    size_t expect_offset = ptr - alloc_base, map_len;
    uct_md_mem_attr_t attr;
    uint8_t *view;

    STEST_UCS(test_query(t, (void *)ptr, len, fields, &attr));
    if (attr.mem_type != UCS_MEMORY_TYPE_CUDA) {
        stest_fail("%s: mem_type: expected cuda got %s", what,
                   ucs_memory_type_names[attr.mem_type]);
    }
    if (attr.dmabuf_offset != expect_offset) {
        stest_fail("%s: dmabuf_offset: expected %zu got %zu", what, expect_offset,
                   attr.dmabuf_offset);
    }
    if (!t->expect_fd) {
        if (attr.dmabuf_fd != UCT_DMABUF_FD_INVALID) {
            stest_fail("%s: export failing: expected UCT_DMABUF_FD_INVALID got %d", what,
                       attr.dmabuf_fd);
        }
        printf("%s: export failing: UCT_DMABUF_FD_INVALID, offset %zu: ok\n", what,
               attr.dmabuf_offset);
        return UCT_DMABUF_FD_INVALID;
    }
    if ((attr.dmabuf_fd < 0) || (fcntl(attr.dmabuf_fd, F_GETFD) < 0)) {
        stest_fail("%s: dmabuf_fd: expected an open descriptor got %d", what, attr.dmabuf_fd);
    }
    map_len = (expect_offset + len + t->page - 1) / t->page * t->page;
    view = test_map(t, what, attr.dmabuf_fd, map_len);
    if (view != NULL) {
        test_check_bytes(what, view + expect_offset, len, seed, expect_offset);
        munmap(view, map_len);
        printf("%s: fd %d offset %zu holds the buffer's %zu bytes: ok\n", what, attr.dmabuf_fd,
               attr.dmabuf_offset, len);
    }
    return attr.dmabuf_fd;
}

/* Device writes after the query show through the descriptor. */
static void test_fd_live(test_ctx_t *t, int fd, CUdeviceptr alloc_base, CUdeviceptr ptr, size_t len)
{
    size_t offset = ptr - alloc_base;
    size_t map_len = (offset + len + t->page - 1) / t->page * t->page;
    uint8_t *view;

    if ((fd < 0) || !t->can_map) {
        return;
    }
    stest_dev_seq_fill(ptr, len, 17);
    view = test_map(t, "live", fd, map_len);
    test_check_bytes("live: device writes after the query", view + offset, len, 17, 0);
    munmap(view, map_len);
    printf("live: device writes made after the query show through the fd: ok\n");
}

static void test_fd(test_ctx_t *t)
{
    uint64_t fields = UCT_MD_MEM_ATTR_FIELD_SYS_DEV | UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS;
    int fds0 = test_open_fds();
    CUdeviceptr base, ptr;
    uct_md_mem_attr_t attr;
    int fd, fd2;

    STEST_CU(cuMemAlloc(&base, TEST_SIZE));
    stest_dev_seq_fill(base, TEST_SIZE, 5);
    ptr = base + TEST_OFFSET;

    STEST_UCS(test_query(t, (void *)ptr, 1000, fields, &attr));
    if (attr.base_address != (void *)base) {
        stest_fail("fd: base_address: expected %p got %p", (void *)base, attr.base_address);
    }
    test_check_sys_dev(t, attr.sys_dev);

    fd = test_fd_query(t, "fd", base, ptr, TEST_SIZE - TEST_OFFSET, 5);
    fd2 = test_fd_query(t, "fresh", base, ptr + 1, 4096, 5);
    if (t->expect_fd) {
        if (fd2 == fd) {
            stest_fail("fresh: a second query: expected a new descriptor got fd %d again", fd);
        }
        close(fd);
        printf("fresh: a second query gave fd %d, the first was %d: ok\n", fd2, fd);
        test_fd_live(t, fd2, base, ptr, 4096);
        close(fd2);
    }

    STEST_UCS(test_query(t, (void *)ptr, 1000, UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET, &attr));
    if ((attr.dmabuf_offset != TEST_OFFSET) || (attr.dmabuf_fd != -2)) {
        stest_fail("fresh: DMABUF_OFFSET alone: expected offset %d, fd untouched, got %zu, fd %d",
                   TEST_OFFSET, attr.dmabuf_offset, attr.dmabuf_fd);
    }
    STEST_CU(cuMemFree(base));
    if (test_open_fds() != fds0) {
        stest_fail("fresh: open descriptors: expected %d got %d (a descriptor leaked)", fds0,
                   test_open_fds());
    }
    printf("fresh: DMABUF_OFFSET alone makes no descriptor; none leaked: ok\n");
}

static void test_vmm(test_ctx_t *t)
{
    CUmemGenericAllocationHandle handle;
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    CUdeviceptr va;
    size_t gran;
    int fd;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = t->dev.index;
    memset(&access, 0, sizeof(access));
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

    if (cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
        CUDA_SUCCESS) {
        printf("vmm: the driver has no VMM: not checked\n");
        return;
    }
    STEST_CU(cuMemCreate(&handle, gran, &prop, 0));
    STEST_CU(cuMemAddressReserve(&va, gran, 0, 0, 0));
    STEST_CU(cuMemMap(va, gran, 0, handle, 0));
    STEST_CU(cuMemSetAccess(va, gran, &access, 1));
    stest_dev_seq_fill(va, gran, 7);
    fd = test_fd_query(t, "vmm", va, va + 4096 + 5, gran - 4096 - 5, 7);
    if (fd >= 0) {
        close(fd);
    }
    STEST_CU(cuMemUnmap(va, gran));
    STEST_CU(cuMemRelease(handle));
    STEST_CU(cuMemAddressFree(va, gran));
}

static void test_host(test_ctx_t *t)
{
    uint64_t fields = UCT_MD_MEM_ATTR_FIELD_DMABUF_FD | UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET;
    static char host[8192];
    uct_md_mem_attr_t attr;
    ucs_status_t status;

    status = test_query(t, host + 100, 1000, fields, &attr);
    if ((status == UCS_OK) && (attr.dmabuf_fd != UCT_DMABUF_FD_INVALID)) {
        stest_fail("host: a host pointer: expected no dma-buf got fd %d", attr.dmabuf_fd);
    }
    printf("host: a host pointer gets no dma-buf (%s%s): ok\n", ucs_status_string(status),
           (status == UCS_OK) ? ", UCT_DMABUF_FD_INVALID" : "");
}

static void test_managed(test_ctx_t *t)
{
    uint64_t fields = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE | UCT_MD_MEM_ATTR_FIELD_DMABUF_FD;
    uct_md_mem_attr_t attr;
    CUdeviceptr managed;

    STEST_CU(cuMemAllocManaged(&managed, 65536, CU_MEM_ATTACH_GLOBAL));
    STEST_UCS(test_query(t, (void *)managed, 65536, fields, &attr));
    if ((attr.mem_type != UCS_MEMORY_TYPE_CUDA_MANAGED) ||
        (attr.dmabuf_fd != UCT_DMABUF_FD_INVALID)) {
        stest_fail("managed: expected cuda-managed, UCT_DMABUF_FD_INVALID got %s, fd %d",
                   ucs_memory_type_names[attr.mem_type], attr.dmabuf_fd);
    }
    STEST_CU(cuMemFree(managed));
    printf("managed: cuda-managed memory gets UCT_DMABUF_FD_INVALID: ok\n");
}

int main(int argc, char **argv)
{
    test_ctx_t t;

    memset(&t, 0, sizeof(t));
    t.expect_fd = 1;
    if ((argc == 2) && !strcmp(argv[1], "--expect-no-fd")) {
        t.expect_fd = 0;
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [--expect-no-fd]\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    t.page = (size_t)sysconf(_SC_PAGESIZE);
    if (stest_dev_open(0, &t.dev) != 0) {
        printf("test_gpu_copy_dmabuf: SKIP: no CUDA device\n");
        return 77;
    }
    t.can_map = (strstr(t.dev.name, "stand-in") != NULL);
    stest_uct_worker_create(&t.uct);
    if (!stest_uct_find_component(&t.uct, "strata")) {
        printf("test_gpu_copy_dmabuf: SKIP: no UCT component 'strata' (LD_PRELOAD "
               "libuct_strata.so)\n");
        return 77;
    }
    STEST_UCS(stest_uct_md_open(&t.uct, "gpu_copy", NULL));
    printf("gpu_copy on %s (%s), UCX %s\n", t.dev.name, t.can_map ? "stand-in" : "a real driver",
           UCT_VERNO_STRING);

    test_attrs(&t);
    test_fd(&t);
    test_vmm(&t);
    test_host(&t);
    test_managed(&t);

    uct_md_close(t.uct.md);
    stest_uct_worker_destroy(&t.uct);
    stest_dev_close(&t.dev);
    printf("test_gpu_copy_dmabuf: all checks passed\n");
    return 0;
}

#else /* UCX 1.13: no dma-buf in UCT's API */

int main(void)
{
    printf("test_gpu_copy_dmabuf: SKIP: UCX %s has no dma-buf in UCT's API (1.14 or newer)\n",
           UCT_VERNO_STRING);
    return 77;
}

#endif
