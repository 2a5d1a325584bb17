/*
 * Strata's accelerator component for Open MPI 5.0 (ompi_accel/), every entry
 * point called through Open MPI's own table (opal_accelerator) after
 * MPI_Init selected it, checked against the driver:
 *   test_accel_api
 * Run with accelerator_cuda_strata_enable set, on 2 ranks: rank 1 also hands
 * rank 0 the address of device memory of its own (a pointer of another
 * process).  Checks, each one line "ok: ..." or "FAIL: ...":
 *  - the selected component is "cuda" (MPIX_Query_cuda_support's test);
 *  - pointer kinds: host (stack, heap, NULL) 0; device 1 with its device,
 *    interior pointers too; managed 1 with the unified-memory flag;
 *  - copies in every direction, synchronous and on a stream with an event,
 *    overlapping moves on the device, byte for byte through the driver;
 *  - allocation, address ranges, buffer ids (a new id for a buffer freed and
 *    allocated again), host registration, device, PCI and peer queries;
 *  - bad input gets an error code, never a crash: NULL and zero sizes, a
 *    freed device buffer, another process's device address, a range
 *    registered twice, an unregistration of what was never registered;
 *  - after the streams and events (Open MPI's set-up, where the component
 *    meets contexts) and the buffer ids (the data path, where it only looks
 *    them up), the rank's context, made after MPI_Init, has
 *    CU_CTX_SYNC_MEMOPS (cuCtxGetFlags), or has not with --ctx-flag off (run
 *    with accelerator_cuda_strata_ctx_sync_memops false).
 * Exit 0 when every check passed, 1 otherwise, 77 without a CUDA device.
 */
#define _GNU_SOURCE
#include "stest_cuda.h"
#include "stest_mpi.h"

#include <mpi.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/mca/accelerator/accelerator.h"
#include "opal/mca/accelerator/base/base.h"

#define N 4096

static int rank, failures;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    char line[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("rank %d: %s: %s\n", rank, ok ? "ok" : "FAIL", line);
    failures += !ok;
}

static void kinds(CUdeviceptr dev, CUdeviceptr managed)
{
    int stack_var = 0, dev_id = 7, rc;
    uint64_t flags = 99;
    void *heap = malloc(64);

    rc = opal_accelerator.check_addr(&stack_var, &dev_id, &flags);
    check(rc == 0 && dev_id == MCA_ACCELERATOR_NO_DEVICE_ID && flags == 0,
          "stack memory is host (%d)", rc);
    rc = opal_accelerator.check_addr(heap, &dev_id, &flags);
    check(rc == 0, "heap memory is host (%d)", rc);
    rc = opal_accelerator.check_addr(NULL, &dev_id, &flags);
    check(rc == 0, "NULL is host (%d)", rc);
    rc = opal_accelerator.check_addr((void *)dev, &dev_id, &flags);
    check(rc == 1 && dev_id == 0 && flags == 0, "device memory: %d, device %d, flags %llu", rc,
          dev_id, (unsigned long long)flags);
    rc = opal_accelerator.check_addr((void *)(dev + N - 1), &dev_id, &flags);
    check(rc == 1 && dev_id == 0, "the last byte of device memory: %d", rc);
    rc = opal_accelerator.check_addr((void *)managed, &dev_id, &flags);
    check(rc == 1 && (flags & MCA_ACCELERATOR_FLAGS_UNIFIED_MEMORY),
          "managed memory: %d, flags %llu", rc, (unsigned long long)flags);
    rc = opal_accelerator.check_addr(heap, NULL, &flags);
    check(rc < 0, "check_addr without dev_id: an error (%d)", rc);
    free(heap);
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = (unsigned char)(i * 131 + seed);
    }
}

static void copies(CUdeviceptr a, CUdeviceptr b)
{
    unsigned char host[N], back[N], want[N];
    opal_accelerator_stream_t *stream = NULL;
    opal_accelerator_event_t *event = NULL;
    int rc, spins = 0;

    pattern(host, N, 1);
    rc = opal_accelerator.mem_copy(0, MCA_ACCELERATOR_NO_DEVICE_ID, (void *)a, host, N,
                                   MCA_ACCELERATOR_TRANSFER_HTOD);
    stest_dev_read(back, a, N);
    check(rc == OPAL_SUCCESS && memcmp(back, host, N) == 0, "mem_copy host->device");
    rc = opal_accelerator.mem_copy(MCA_ACCELERATOR_NO_DEVICE_ID, MCA_ACCELERATOR_NO_DEVICE_ID,
                                   (void *)b, (void *)a, N, MCA_ACCELERATOR_TRANSFER_UNSPEC);
    stest_dev_read(back, b, N);
    check(rc == OPAL_SUCCESS && memcmp(back, host, N) == 0,
          "mem_copy device->device (unspecified)");
    memset(back, 0, N);
    rc = opal_accelerator.mem_copy(MCA_ACCELERATOR_NO_DEVICE_ID, 0, back, (void *)b, N,
                                   MCA_ACCELERATOR_TRANSFER_DTOH);
    check(rc == OPAL_SUCCESS && memcmp(back, host, N) == 0, "mem_copy device->host");
    rc = opal_accelerator.mem_copy(0, 0, (void *)b, (void *)a, 0, MCA_ACCELERATOR_TRANSFER_DTOD);
    check(rc == OPAL_SUCCESS, "mem_copy of 0 bytes");

    /* Overlapping, on the device: b[16..] = b[0..N-16) */
    rc = opal_accelerator.mem_move(0, 0, (void *)(b + 16), (void *)b, N - 16,
                                   MCA_ACCELERATOR_TRANSFER_DTOD);
    memcpy(want, host, 16);
    memcpy(want + 16, host, N - 16);
    stest_dev_read(back, b, N);
    check(rc == OPAL_SUCCESS && memcmp(back, want, N) == 0,
          "mem_move of overlapping device ranges");

    rc = opal_accelerator.create_stream(MCA_ACCELERATOR_NO_DEVICE_ID, &stream);
    check(rc == OPAL_SUCCESS && stream != NULL, "create_stream");
    rc = opal_accelerator.create_event(MCA_ACCELERATOR_NO_DEVICE_ID, &event);
    check(rc == OPAL_SUCCESS && event != NULL, "create_event");
    if ((stream == NULL) || (event == NULL)) {
        return;
    }
    pattern(host, N, 2);
    rc = opal_accelerator.mem_copy_async(0, MCA_ACCELERATOR_NO_DEVICE_ID, (void *)a, host, N,
                                         stream, MCA_ACCELERATOR_TRANSFER_HTOD);
    check(rc == OPAL_SUCCESS, "mem_copy_async host->device");
    rc = opal_accelerator.record_event(MCA_ACCELERATOR_NO_DEVICE_ID, event, stream);
    check(rc == OPAL_SUCCESS, "record_event");
    do {
        rc = opal_accelerator.query_event(MCA_ACCELERATOR_NO_DEVICE_ID, event);
    } while ((rc == OPAL_ERR_RESOURCE_BUSY) && (++spins < 10000000));
    stest_dev_read(back, a, N);
    check(rc == OPAL_SUCCESS && memcmp(back, host, N) == 0,
          "the event completes, the copy is there (%d)", rc);
    rc = opal_accelerator.mem_copy_async(0, 0, (void *)a, host, N, NULL,
                                         MCA_ACCELERATOR_TRANSFER_HTOD);
    check(rc == OPAL_ERR_BAD_PARAM, "mem_copy_async without a stream: bad parameter (%d)", rc);
    rc = opal_accelerator.record_event(0, NULL, stream);
    check(rc == OPAL_ERR_BAD_PARAM, "record_event without an event: bad parameter (%d)", rc);
    OBJ_RELEASE(event);
    OBJ_RELEASE(stream);
}

static void memory(void)
{
    void *p = NULL, *base = NULL, *q = NULL;
    opal_accelerator_buffer_id_t id1 = 0, id2 = 0;
    unsigned char host[64];
    size_t size = 0;
    char *reg;
    int rc;

    rc = opal_accelerator.mem_alloc(0, &p, N);
    check(rc == OPAL_SUCCESS && p != NULL, "mem_alloc");
    rc = opal_accelerator.get_address_range(0, (char *)p + 100, &base, &size);
    check(rc == OPAL_SUCCESS && base == p && size >= N, "get_address_range of an interior pointer");
    rc = opal_accelerator.get_buffer_id(0, p, &id1);
    check(rc == OPAL_SUCCESS, "get_buffer_id");
    rc = opal_accelerator.mem_release(0, p);
    check(rc == OPAL_SUCCESS, "mem_release");

    /* p is freed now: every use is an error, none a crash */
    rc = opal_accelerator.get_address_range(0, p, &base, &size);
    check(rc < 0, "get_address_range of a freed buffer: an error (%d)", rc);
    rc = opal_accelerator.get_buffer_id(0, p, &id2);
    check(rc < 0, "get_buffer_id of a freed buffer: an error (%d)", rc);
    rc = opal_accelerator.mem_copy(MCA_ACCELERATOR_NO_DEVICE_ID, 0, host, p, sizeof(host),
                                   MCA_ACCELERATOR_TRANSFER_DTOH);
    check(rc < 0, "mem_copy from a freed buffer: an error (%d)", rc);
    rc = opal_accelerator.mem_release(0, p);
    check(rc < 0, "mem_release of a freed buffer: an error (%d)", rc);

    rc = opal_accelerator.mem_alloc(0, &q, N);
    rc = (rc == OPAL_SUCCESS) ? opal_accelerator.get_buffer_id(0, q, &id2) : rc;
    check(rc == OPAL_SUCCESS && id2 != id1, "a buffer allocated again has a new id (%llu, %llu%s)",
          (unsigned long long)id1, (unsigned long long)id2, (q == p) ? ", same address" : "");
    (void)opal_accelerator.mem_release(0, q);

    rc = opal_accelerator.mem_alloc(0, &q, 0);
    check(rc == OPAL_ERR_BAD_PARAM, "mem_alloc of 0 bytes: bad parameter (%d)", rc);
    rc = opal_accelerator.mem_release(0, NULL);
    check(rc == OPAL_SUCCESS, "mem_release(NULL) does nothing");
    rc = opal_accelerator.get_address_range(0, host, &base, &size);
    check(rc < 0, "get_address_range of host memory: an error (%d)", rc);

    reg = malloc(3 * 4096);
    rc = opal_accelerator.host_register(0, reg, 3 * 4096);
    check(rc == OPAL_SUCCESS, "host_register");
    rc = opal_accelerator.host_register(0, reg + 4096, 4096);
    check(rc < 0, "host_register of a registered range: an error (%d)", rc);
    rc = opal_accelerator.host_unregister(0, reg);
    check(rc == OPAL_SUCCESS, "host_unregister");
    rc = opal_accelerator.host_unregister(0, reg);
    check(rc < 0, "host_unregister of what is not registered: an error (%d)", rc);
    rc = opal_accelerator.host_register(0, NULL, 4096);
    check(rc == OPAL_ERR_BAD_PARAM, "host_register(NULL): bad parameter (%d)", rc);
    free(reg);
}

/* What the streams and events (strata_mem_sync_memops_ctx) left on the context. */
static void ctx_flag(int expected)
{
    unsigned flags = 0;

    STEST_CU(cuCtxGetFlags(&flags));
    check(!!(flags & CU_CTX_SYNC_MEMOPS) == expected,
          "CU_CTX_SYNC_MEMOPS on the context: %d, expected %d", !!(flags & CU_CTX_SYNC_MEMOPS),
          expected);
}

static void devices(void)
{
    opal_accelerator_pci_attr_t pci;
    int dev_id = -2, access = -1, rc;

    rc = opal_accelerator.get_device(&dev_id);
    check(rc == OPAL_SUCCESS && dev_id == 0, "get_device: %d", dev_id);
    memset(&pci, 0xff, sizeof(pci));
    rc = opal_accelerator.get_device_pci_attr(0, &pci);
    check(rc == OPAL_SUCCESS && pci.bus_id != 0xff, "get_device_pci_attr: %04x:%02x:%02x.%x",
          pci.domain_id, pci.bus_id, pci.device_id, pci.function_id);
    rc = opal_accelerator.get_device_pci_attr(1000, &pci);
    check(rc < 0, "get_device_pci_attr of device 1000: an error (%d)", rc);
    rc = opal_accelerator.device_can_access_peer(&access, 0, 0);
    check(rc == OPAL_SUCCESS && access == 0, "a device is not its own peer (%d)", access);
    rc = opal_accelerator.device_can_access_peer(&access, 0, 1000);
    check(rc < 0, "device_can_access_peer with device 1000: an error (%d)", rc);
}

/* Rank 1's device address, unmapped in rank 0: check_addr calls it host
 * (the driver does not know it), a copy from it is an error. */
static void foreign(CUdeviceptr own_far)
{
    unsigned long long addr = own_far;
    unsigned char host[64];
    int dev_id, rc;
    uint64_t flags;

    MPI_Bcast(&addr, 1, MPI_UNSIGNED_LONG_LONG, 1, MPI_COMM_WORLD);
    if (rank != 0) {
        return;
    }
    rc = opal_accelerator.check_addr((void *)(uintptr_t)addr, &dev_id, &flags);
    check(rc == 0, "another process's device address is not device memory here (%d)", rc);
    rc = opal_accelerator.mem_copy(MCA_ACCELERATOR_NO_DEVICE_ID, 0, host, (void *)(uintptr_t)addr,
                                   sizeof(host), MCA_ACCELERATOR_TRANSFER_DTOH);
    check(rc < 0, "mem_copy from another process's device address: an error (%d)", rc);
}

int main(int argc, char **argv)
{
    CUdeviceptr a = 0, b = 0, managed = 0, far = 0, spacer = 0;
    stest_dev_t d;
    int size, rc, all = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    stest_mpi_init(rank, STEST_MPI_FAIL_RANK_FIRST);
    rc = stest_mpi_dev_open(&d);
    if (rc != 0) {
        MPI_Finalize();
        return rc;
    }
    check(strcmp(opal_accelerator_base_selected_component.base_version.mca_component_name,
                 "cuda") == 0,
          "the selected accelerator component is '%s'",
          opal_accelerator_base_selected_component.base_version.mca_component_name);
    STEST_CU(cuMemAlloc(&a, N));
    STEST_CU(cuMemAlloc(&b, N));
    STEST_CU(cuMemAllocManaged(&managed, N, CU_MEM_ATTACH_GLOBAL));
    if (rank == 1) {
        /* far beyond anything rank 0 allocates */
        STEST_CU(cuMemAlloc(&spacer, 64u << 20));
        STEST_CU(cuMemAlloc(&far, N));
    }
    kinds(a, managed);
    copies(a, b);
    memory();
    ctx_flag((argc > 2) && !strcmp(argv[1], "--ctx-flag") && !strcmp(argv[2], "off") ? 0 : 1);
    devices();
    if (size >= 2) {
        foreign(far);
    }
    STEST_CU(cuMemFree(a));
    STEST_CU(cuMemFree(b));
    STEST_CU(cuMemFree(managed));
    if (far != 0) {
        STEST_CU(cuMemFree(far));
        STEST_CU(cuMemFree(spacer));
    }
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("test_accel_api: %s (%d failed)\n", (all == 0) ? "all checks passed" : "FAILED",
               all);
    }
    MPI_Finalize();
    return (all == 0) ? 0 : 1;
}
