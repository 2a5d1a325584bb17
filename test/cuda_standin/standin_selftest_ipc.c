/*
 * standin_selftest, the groups with a second process: legacy IPC between the
 * test and a forked child, and VMM allocations exported as a file descriptor
 * that crosses to the child over a socket (SCM_RIGHTS).
 *
 * A forked child starts without driver state (the stand-in drops it at
 * fork), so it calls cuInit and sets a context like any other process.
 */
#define _GNU_SOURCE
#include "standin_selftest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ST_IPC_SIZE ((size_t)(1 << 20) + 100)

static unsigned int st_attr_uint(CUpointer_attribute attr, CUdeviceptr ptr)
{
    unsigned int value = 0x5555;

    ST_OK(cuPointerGetAttribute(&value, attr, ptr));
    return value;
}

static unsigned long long st_attr_u64(CUpointer_attribute attr, CUdeviceptr ptr)
{
    unsigned long long value = 0x5555;

    ST_OK(cuPointerGetAttribute(&value, attr, ptr));
    return value;
}

/* --- Legacy IPC --- */

/* In the child: map the parent's allocation, check what it holds, write
 * into it, and exercise the open/close rules. */
static void st_ipc_child(CUipcMemHandle handle, unsigned long long parent_id)
{
    unsigned char *buf = malloc(ST_IPC_SIZE);
    CUipcMemHandle again;
    CUdeviceptr p = 0, p2 = 0, base = 0;
    size_t range  = 0;

    st_ctx_setup(0);
    ST_OK(cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    ST_EQ("imported: MEMORY_TYPE", st_attr_uint(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 8),
          CU_MEMORYTYPE_DEVICE);
    ST_TRUE("imported: a buffer id of its own",
            st_attr_u64(CU_POINTER_ATTRIBUTE_BUFFER_ID, p) != parent_id);
    ST_EQ("imported: IS_LEGACY_CUDA_IPC_CAPABLE",
          st_attr_uint(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p), 0);
    ST_EQ("imported: RANGE_START_ADDR",
          st_attr_u64(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 99), p);
    ST_EQ("imported: RANGE_SIZE", st_attr_u64(CU_POINTER_ATTRIBUTE_RANGE_SIZE, p), ST_IPC_SIZE);
    ST_OK(cuMemGetAddressRange(&base, &range, p + 10));
    ST_EQ("imported: cuMemGetAddressRange base", base, p);
    ST_EQ("imported: cuMemGetAddressRange size", range, ST_IPC_SIZE);

    ST_OK(cuMemcpyDtoH(buf, p, ST_IPC_SIZE));
    st_check_pattern("child reads the parent's bytes", buf, ST_IPC_SIZE, 30, 0);
    st_fill(buf, 5000, 31, 1000);
    ST_OK(cuMemcpyHtoD(p + 1000, buf, 5000));

    /* opened again: the same mapping, counted; the first close keeps it */
    ST_OK(cuIpcOpenMemHandle(&p2, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    ST_EQ("opened again: the same pointer", p2, p);
    ST_OK(cuIpcCloseMemHandle(p2));
    ST_OK(cuMemcpyDtoH(buf, p, 1));
    ST_CU(cuIpcGetMemHandle(&again, p), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuIpcCloseMemHandle(p + 1), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuIpcCloseMemHandle(p));
    ST_CU(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemcpyDtoH(buf, p, 1), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuIpcOpenMemHandle(&p2, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    ST_OK(cuIpcCloseMemHandle(p2));
    free(buf);
}

/* In the child: the stale handle is refused, the fresh one works. */
static void st_ipc_child_stale(CUipcMemHandle stale, CUipcMemHandle fresh)
{
    unsigned char *buf = malloc(ST_IPC_SIZE);
    CUdeviceptr p      = 0;

    st_ctx_setup(0);
    ST_CU(cuIpcOpenMemHandle(&p, stale, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
          CUDA_ERROR_INVALID_HANDLE);
    ST_OK(cuIpcOpenMemHandle(&p, fresh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    ST_OK(cuMemcpyDtoH(buf, p, ST_IPC_SIZE));
    st_check_pattern("child reads the re-allocated buffer", buf, ST_IPC_SIZE, 32, 0);
    ST_OK(cuIpcCloseMemHandle(p));
    free(buf);
}

static void st_test_ipc_share(void)
{
    unsigned char *buf = malloc(ST_IPC_SIZE);
    CUdeviceptr d = st_alloc(ST_IPC_SIZE), p;
    CUipcMemHandle handle;
    unsigned long long id;
    pid_t pid;

    st_group_begin("legacy IPC: a forked child reads and writes the parent's memory");
    id = st_buffer_id(d);
    st_fill(buf, ST_IPC_SIZE, 30, 0);
    ST_OK(cuMemcpyHtoD(d, buf, ST_IPC_SIZE));
    /* From pageable memory the copy may land after it returns: another
     * process sees it once this one synchronized. */
    ST_OK(cuCtxSynchronize());
    ST_OK(cuIpcGetMemHandle(&handle, d + 4096)); /* any pointer inside names the whole */
    ST_CU(cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
          CUDA_ERROR_INVALID_CONTEXT);
    pid = st_fork();
    if (pid == 0) {
        free(buf);
        st_checks = 0;
        st_ipc_child(handle, id);
        st_child_done();
    }
    st_expect_child_ok("IPC child", pid);
    ST_OK(cuMemcpyDtoH(buf, d, ST_IPC_SIZE));
    st_check_pattern("parent: bytes before the child's write", buf, 1000, 30, 0);
    st_check_pattern("parent sees the child's write", buf + 1000, 5000, 31, 1000);
    st_check_pattern("parent: bytes after the child's write", buf + 6000, ST_IPC_SIZE - 6000, 30,
                     6000);
    ST_OK(cuMemFree(d));
    free(buf);
    st_group_end();
}

static void st_test_ipc_stale(void)
{
    unsigned char *buf = malloc(ST_IPC_SIZE);
    CUipcMemHandle stale, fresh;
    CUdeviceptr d = st_alloc(ST_IPC_SIZE), d2;
    unsigned long long id;
    pid_t pid;

    st_group_begin("legacy IPC: the handle of a freed allocation is refused");
    ST_OK(cuIpcGetMemHandle(&stale, d));
    id = st_buffer_id(d);
    ST_OK(cuMemFree(d));
    d2 = st_alloc(ST_IPC_SIZE);
    ST_EQ("re-allocation at the freed address", d2, d);
    ST_TRUE("re-allocation has a new buffer id", st_buffer_id(d2) != id);
    st_fill(buf, ST_IPC_SIZE, 32, 0);
    ST_OK(cuMemcpyHtoD(d2, buf, ST_IPC_SIZE));
    ST_OK(cuCtxSynchronize());
    ST_OK(cuIpcGetMemHandle(&fresh, d2));
    pid = st_fork();
    if (pid == 0) {
        free(buf);
        st_checks = 0;
        st_ipc_child_stale(stale, fresh);
        st_child_done();
    }
    st_expect_child_ok("IPC child with a stale handle", pid);
    ST_OK(cuMemFree(d2));
    free(buf);
    st_group_end();
}

void st_test_ipc(void)
{
    st_test_ipc_share();
    st_test_ipc_stale();
}

/* --- VMM --- */

static CUmemAllocationProp st_vmm_prop(unsigned handle_types)
{
    CUmemAllocationProp prop;

    memset(&prop, 0, sizeof(prop));
    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id          = 0;
    prop.requestedHandleTypes = (CUmemAllocationHandleType)handle_types;
    return prop;
}

static void st_vmm_grant(CUdeviceptr va, size_t size)
{
    CUmemAccessDesc access;

    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id   = 0;
    access.flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ST_OK(cuMemSetAccess(va, size, &access, 1));
}

static void st_send_fd(int sock, int fd)
{
    char byte = 'F', control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&byte, 1};
    struct msghdr msg;
    struct cmsghdr *cmsg;

    memset(&msg, 0, sizeof(msg));
    memset(control, 0, sizeof(control));
    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = control;
    msg.msg_controllen = sizeof(control);
    cmsg               = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level   = SOL_SOCKET;
    cmsg->cmsg_type    = SCM_RIGHTS;
    cmsg->cmsg_len     = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
    if (sendmsg(sock, &msg, 0) != 1) {
        st_fail("sendmsg of fd %d failed", fd);
    }
}

static int st_recv_fd(int sock)
{
    char byte, control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&byte, 1};
    struct msghdr msg;
    struct cmsghdr *cmsg;
    int fd;

    memset(&msg, 0, sizeof(msg));
    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = control;
    msg.msg_controllen = sizeof(control);
    if (recvmsg(sock, &msg, 0) != 1) {
        st_fail("recvmsg failed");
    }
    cmsg = CMSG_FIRSTHDR(&msg);
    if ((cmsg == NULL) || (cmsg->cmsg_type != SCM_RIGHTS)) {
        st_fail("no file descriptor in the message");
    }
    memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
    return fd;
}

typedef struct st_vmm {
    size_t gran;
    CUmemGenericAllocationHandle exportable, local;
    CUdeviceptr va; /* 4 granules reserved: exportable (2), local (1), free (1) */
} st_vmm_t;

static void st_vmm_attributes(const st_vmm_t *v)
{
    CUdeviceptr base = 0;
    CUcontext ctx    = (CUcontext)1;
    size_t range     = 0;

    ST_EQ("VMM: MEMORY_TYPE", st_attr_uint(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, v->va),
          CU_MEMORYTYPE_DEVICE);
    ST_EQ("VMM: IS_LEGACY_CUDA_IPC_CAPABLE",
          st_attr_uint(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, v->va), 0);
    ST_EQ("VMM: ALLOWED_HANDLE_TYPES",
          st_attr_uint(CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, v->va),
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ST_EQ("VMM: RANGE_START_ADDR is the reservation",
          st_attr_u64(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, v->va + 100), v->va);
    ST_EQ("VMM: RANGE_SIZE is the reservation", st_attr_u64(CU_POINTER_ATTRIBUTE_RANGE_SIZE, v->va),
          4 * v->gran);
    ST_EQ("VMM: MAPPING_SIZE", st_attr_u64(CU_POINTER_ATTRIBUTE_MAPPING_SIZE, v->va), 2 * v->gran);
    ST_EQ("VMM: MAPPED", st_attr_uint(CU_POINTER_ATTRIBUTE_MAPPED, v->va), 1);
    ST_EQ("VMM: MAPPED in the unmapped part of the reservation",
          st_attr_uint(CU_POINTER_ATTRIBUTE_MAPPED, v->va + 3 * v->gran), 0);
    ST_OK(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, v->va));
    ST_EQ("VMM: CONTEXT", (uintptr_t)ctx, 0);
    ST_OK(cuMemGetAddressRange(&base, &range, v->va + 5));
    ST_EQ("VMM: cuMemGetAddressRange base is the mapping", base, v->va);
    ST_EQ("VMM: cuMemGetAddressRange size is the mapping", range, 2 * v->gran);
}

static void st_vmm_handles(const st_vmm_t *v)
{
    CUmemGenericAllocationHandle retained = 0;
    CUmemAllocationProp prop;
    CUipcMemHandle ipc;
    int fd = -1;

    ST_OK(cuMemRetainAllocationHandle(&retained, (void *)(uintptr_t)(v->va + 100)));
    ST_EQ("cuMemRetainAllocationHandle", retained, v->exportable);
    ST_OK(cuMemRelease(retained));
    ST_OK(cuMemGetAllocationPropertiesFromHandle(&prop, v->exportable));
    ST_EQ("properties: requestedHandleTypes", prop.requestedHandleTypes,
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ST_CU(cuIpcGetMemHandle(&ipc, v->va), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemExportToShareableHandle(&fd, v->local, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
          CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemAddressFree(v->va, 4 * v->gran), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    ST_CU(cuMemUnmap(v->va, v->gran), CUDA_ERROR_INVALID_VALUE);           /* half a mapping */
}

static void st_vmm_setup(st_vmm_t *v)
{
    CUmemAllocationProp prop = st_vmm_prop(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemAllocationProp none = st_vmm_prop(CU_MEM_HANDLE_TYPE_NONE);
    unsigned char buf[200], host[16];

    ST_OK(cuMemGetAllocationGranularity(&v->gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    ST_EQ("granularity", v->gran, 2u << 20);
    ST_CU(cuMemCreate(&v->exportable, v->gran + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemCreate(&v->exportable, 2 * v->gran, &prop, 0));
    ST_OK(cuMemCreate(&v->local, v->gran, &none, 0));
    ST_OK(cuMemAddressReserve(&v->va, 4 * v->gran, 0, 0, 0));
    ST_EQ("reservation alignment", v->va % v->gran, 0);
    ST_OK(cuMemMap(v->va, 2 * v->gran, 0, v->exportable, 0));
    ST_CU(cuMemMap(v->va, 2 * v->gran, 0, v->exportable, 0), CUDA_ERROR_INVALID_VALUE);
    ST_CU(cuMemMap(v->va + 2 * v->gran, v->gran, v->gran, v->exportable, 0),
          CUDA_ERROR_INVALID_VALUE); /* offset must be 0 */
    ST_CU(cuMemcpyHtoD(v->va, host, sizeof(host)), CUDA_ERROR_INVALID_VALUE); /* no access yet */
    st_vmm_grant(v->va, 2 * v->gran);
    ST_OK(cuMemMap(v->va + 2 * v->gran, v->gran, 0, v->local, 0));
    st_vmm_grant(v->va + 2 * v->gran, v->gran);

    st_fill(buf, sizeof(buf), 41, 0);
    ST_OK(cuMemcpyHtoD(v->va + 2 * v->gran - 100, buf, sizeof(buf))); /* spans both mappings */
    memset(buf, 0, sizeof(buf));
    ST_OK(cuMemcpyDtoH(buf, v->va + 2 * v->gran - 100, sizeof(buf)));
    st_check_pattern("a copy across two adjacent mappings", buf, sizeof(buf), 41, 0);
}

static void st_vmm_child(int sock, size_t gran)
{
    unsigned char *buf = malloc(2 * gran);
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    int fd;

    st_ctx_setup(0);
    fd = st_recv_fd(sock);
    ST_OK(cuMemImportFromShareableHandle(&handle, (void *)(uintptr_t)fd,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    ST_OK(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0));
    ST_OK(cuMemMap(va, 2 * gran, 0, handle, 0));
    st_vmm_grant(va, 2 * gran);
    ST_OK(cuMemcpyDtoH(buf, va, 2 * gran - 100));
    st_check_pattern("child reads the exported memory", buf, 2 * gran - 100, 40, 0);
    st_fill(buf, 8192, 42, 4096);
    ST_OK(cuMemcpyHtoD(va + 4096, buf, 8192));
    ST_OK(cuMemUnmap(va, 2 * gran));
    ST_OK(cuMemRelease(handle));
    ST_OK(cuMemAddressFree(va, 2 * gran));
    free(buf);
}

static void st_test_vmm_local(st_vmm_t *v)
{
    unsigned char *buf;
    pid_t pid;

    st_group_begin("VMM: create, reserve, map, access rights, attributes");
    st_vmm_setup(v);
    buf = malloc(2 * v->gran);
    st_fill(buf, 2 * v->gran - 100, 40, 0);
    ST_OK(cuMemcpyHtoD(v->va, buf, 2 * v->gran - 100));
    ST_OK(cuCtxSynchronize()); /* landed, for the child of the next group */
    st_vmm_attributes(v);
    st_vmm_handles(v);
    pid = st_fork();
    if (pid == 0) {
        (void)*(volatile char *)(uintptr_t)v->va;
        _exit(0);
    }
    st_expect_child_signal("CPU load from VMM-mapped memory", pid, SIGSEGV);
    free(buf);
    st_group_end();
}

static void st_test_vmm_export(st_vmm_t *v)
{
    unsigned char buf[8192];
    int sv[2], fd = -1;
    pid_t pid;

    st_group_begin("VMM: an fd over SCM_RIGHTS, imported and mapped in a child");
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        st_fail("socketpair failed");
    }
    pid = st_fork();
    if (pid == 0) {
        close(sv[0]);
        st_checks = 0;
        st_vmm_child(sv[1], v->gran);
        st_child_done();
    }
    close(sv[1]);
    ST_OK(cuMemExportToShareableHandle(&fd, v->exportable,
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    st_send_fd(sv[0], fd);
    close(fd);
    close(sv[0]);
    st_expect_child_ok("VMM child", pid);
    ST_OK(cuMemcpyDtoH(buf, v->va + 4096, sizeof(buf)));
    st_check_pattern("parent sees the child's write", buf, sizeof(buf), 42, 4096);

    ST_OK(cuMemUnmap(v->va, 3 * v->gran)); /* both mappings at once */
    ST_OK(cuMemRelease(v->exportable));
    ST_OK(cuMemRelease(v->local));
    ST_CU(cuMemRelease(v->local), CUDA_ERROR_INVALID_VALUE);
    ST_OK(cuMemAddressFree(v->va, 4 * v->gran));
    st_group_end();
}

void st_test_vmm(void)
{
    st_vmm_t v;

    memset(&v, 0, sizeof(v));
    st_test_vmm_local(&v);
    st_test_vmm_export(&v);
}
