/*
 * What UCP (UCX >= 1.14) makes of gpu_copy's dma-buf export, in one
 * process, with the transports of UCX_TLS:
 *
 *   test_ucp_dmabuf
 *
 *   provider   ucp_init: the context's dma-buf provider for CUDA memory is
 *              gpu_copy (the first domain listing CUDA in dmabuf_mem_types),
 *              so UCP would register CUDA memory with every domain that
 *              takes dma-bufs (UCT_MD_FLAG_REG_DMABUF: the ib domain)
 *   consumers  the domains that take dma-bufs and those CUDA memory is
 *              registered with, as UCP computed them; printed, not required:
 *              without an RDMA device there are none
 *   mem_map    ucp_mem_map of cuMemAlloc'ed memory: UCP detects CUDA
 *
 * UCP keeps the provider in its context (ucp_context_t, an internal
 * structure): this program reads it from UCX's own headers, so it is built
 * for the exact UCX it runs with.  What it cannot check: that a NIC's domain
 * registers the fd (no RDMA device here).
 * Exit 0 pass, 1 fail (the check, expected, got), 77: UCX older than 1.14,
 * no CUDA device.
 */
#define _GNU_SOURCE
#include "stest_cuda.h"
#include "stest_fail.h"

#include <uct/api/version.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void stest_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stdout, "test_ucp_dmabuf: FAIL: ");
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n");
    va_end(ap);
    exit(1);
}

#if UCT_API >= UCT_VERSION(1, 14)

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_context.h>

static void test_ucs(ucs_status_t status, const char *call)
{
    if (status != UCS_OK) {
        stest_fail("%s: %s", call, ucs_status_string(status));
    }
}

/* "name, name" of the domains in `map`, or "none". */
static const char *test_md_names(ucp_context_h context, ucp_md_map_t map, char *buf, size_t max)
{
    ucp_md_index_t md_index;
    size_t len = 0;

    buf[0] = '\0';
    for (md_index = 0; md_index < context->num_mds; ++md_index) {
        if ((map & UCS_BIT(md_index)) && (len < max)) {
            len += (size_t)snprintf(buf + len, max - len, "%s%s", (len > 0) ? ", " : "",
                                    context->tl_mds[md_index].rsc.md_name);
        }
    }
    return (len > 0) ? buf : "none";
}

static void test_provider(ucp_context_h context)
{
    ucp_md_index_t provider = context->dmabuf_mds[UCS_MEMORY_TYPE_CUDA];
    char names[256];

    if (provider == UCP_NULL_RESOURCE) {
        stest_fail("provider: expected gpu_copy got none (is gpu_copy in UCX_TLS?)");
    }
    if (strcmp(context->tl_mds[provider].rsc.md_name, "gpu_copy") != 0) {
        stest_fail("provider: expected gpu_copy got %s", context->tl_mds[provider].rsc.md_name);
    }
    printf("provider: UCP's dma-buf provider for cuda memory is md %d, gpu_copy: ok\n",
           (int)provider);
    printf("consumers: domains taking dma-bufs: %s\n",
           test_md_names(context, context->dmabuf_reg_md_map, names, sizeof(names)));
    printf("consumers: cuda memory is registered with: %s\n",
           test_md_names(context, context->reg_md_map[UCS_MEMORY_TYPE_CUDA], names, sizeof(names)));
    if ((context->reg_md_map[UCS_MEMORY_TYPE_CUDA] & context->dmabuf_reg_md_map) !=
        context->dmabuf_reg_md_map) {
        stest_fail("consumers: a domain taking dma-bufs is not in cuda's registration map");
    }
}

static void test_mem_map(ucp_context_h context)
{
    ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE};
    ucp_mem_map_params_t params;
    const size_t size = 1 << 20;
    CUdeviceptr ptr;
    ucp_mem_h memh;

    STEST_CU(cuMemAlloc(&ptr, size));
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = (void *)ptr;
    params.length = size;
    test_ucs(ucp_mem_map(context, &params, &memh), "ucp_mem_map");
    test_ucs(ucp_mem_query(memh, &attr), "ucp_mem_query");
    if (attr.mem_type != UCS_MEMORY_TYPE_CUDA) {
        stest_fail("mem_map: memory type: expected cuda got %s",
                   ucs_memory_type_names[attr.mem_type]);
    }
    test_ucs(ucp_mem_unmap(context, memh), "ucp_mem_unmap");
    STEST_CU(cuMemFree(ptr));
    printf("mem_map: ucp_mem_map of cuMemAlloc memory: cuda: ok\n");
}

int main(void)
{
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features = UCP_FEATURE_TAG | UCP_FEATURE_RMA};
    ucp_context_h context;
    stest_dev_t dev;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (stest_dev_open(0, &dev) != 0) {
        printf("test_ucp_dmabuf: SKIP: no CUDA device\n");
        return 77;
    }
    test_ucs(ucp_init(&params, NULL, &context), "ucp_init");
    printf("UCX %s, UCX_TLS=%s\n", UCT_VERNO_STRING,
           (getenv("UCX_TLS") != NULL) ? getenv("UCX_TLS") : "(all)");
    test_provider(context);
    test_mem_map(context);
    ucp_cleanup(context);
    stest_dev_close(&dev);
    printf("test_ucp_dmabuf: all checks passed\n");
    return 0;
}

#else /* UCX 1.13: no dma-buf in UCT's API */

int main(void)
{
    printf("test_ucp_dmabuf: SKIP: UCX %s has no dma-buf in UCT's API (1.14 or newer)\n",
           UCT_VERNO_STRING);
    return 77;
}

#endif
