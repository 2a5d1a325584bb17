/*
 * The memory domains of component "strata".
 *
 * One component, two memory domains, as UCX's own CUDA support has:
 *  - "gpu_copy" detects and answers for CUDA memory (mem_query), so UCP
 *    routes device buffers to memory-type endpoints; it needs no rkey and no
 *    registration, which keeps UCP's per-message staging cheap.
 *  - "gpu_ipc" registers device memory for access by other processes on the
 *    node: its rkey carries an IPC handle of the whole allocation.
 * Splitting them matters to UCP: a memory domain that needs rkeys makes UCP
 * register and pack a key around every staged copy.
 */
#ifndef UCT_STRATA_MD_H
#define UCT_STRATA_MD_H

#include "strata_cuda_call.h"
#include "../strata_ucx_compat.h"

#include <uct/base/uct_iface.h>

#include <common/strata_cuda.h>
#include <common/strata_mem.h>
#include <ucs/config/types.h>

#define UCT_STRATA_COMPONENT_NAME "strata"
#define UCT_STRATA_MD_NAME_COPY   "gpu_copy"
#define UCT_STRATA_MD_NAME_IPC    "gpu_ipc"

typedef enum uct_strata_md_kind {
    UCT_STRATA_MD_COPY,
    UCT_STRATA_MD_IPC,
} uct_strata_md_kind_t;

/* Settings of the component (UCX_STRATA_*), shared by both domains. */
typedef struct uct_strata_md_config {
    uct_md_config_t super;
    ucs_ternary_auto_value_t memtype_hooks; /* UCX_STRATA_MEMTYPE_HOOKS */
    ucs_on_off_auto_value_t memtype_scan;   /* UCX_STRATA_MEMTYPE_SCAN */
    unsigned ipc_cache_size;                /* UCX_STRATA_IPC_CACHE_SIZE */
    int ipc_legacy;                         /* UCX_STRATA_IPC_LEGACY */
    int ipc_vmm;                            /* UCX_STRATA_IPC_VMM */
    ucs_on_off_auto_value_t ipc_host;       /* UCX_STRATA_IPC_HOST */
    int copy_pin_host;                      /* UCX_STRATA_COPY_PIN_HOST */
    int ctx_sync_memops;                    /* UCX_STRATA_CTX_SYNC_MEMOPS */
} uct_strata_md_config_t;

typedef struct uct_strata_md {
    uct_md_t super;
    uct_strata_md_kind_t kind;
    struct {
        unsigned ipc_cache_size;
        int ipc_legacy;
        int ipc_vmm;
        int ipc_host;      /* gpu_ipc registers host memory (resolved: 0 or 1) */
        int copy_pin_host; /* gpu_copy page-locks host registrations */
    } config;
} uct_strata_md_t;

/* One domain of the component: what opening it adds to the shared part. */
typedef struct uct_strata_md_desc {
    const char *name;
    uct_strata_md_kind_t kind;
    uct_md_ops_t *ops;
    /* Applies the settings to the new domain; NULL: nothing to do. */
    ucs_status_t (*init)(uct_strata_md_t *md, const uct_strata_md_config_t *config);
} uct_strata_md_desc_t;

extern uct_component_t uct_strata_component;
extern ucs_config_field_t uct_strata_md_config_table[];

/* Opens the domain `desc` describes (the component picks it by name). */
ucs_status_t uct_strata_md_open(const uct_strata_md_desc_t *desc, uct_component_t *component,
                                const uct_md_config_t *uct_config, uct_md_h *md_p);
/* Frees a domain; its ops' close, after what the domain itself releases. */
void uct_strata_md_close(uct_md_h uct_md);

/* What the driver says about a pointer, in the terms UCP needs. */
typedef struct uct_strata_mem_info {
    ucs_memory_type_t mem_type;   /* CUDA, CUDA_MANAGED, or HOST if unknown */
    CUdeviceptr base;             /* start of the allocation or VMM mapping */
    size_t length;                /* its length */
    unsigned long long buffer_id; /* tells a freed and reused address apart */
    int ordinal;                  /* device ordinal, -1 if not device memory */
    int legacy_ipc;               /* cuIpcGetMemHandle can export it */
    int from_pool;                /* stream-ordered (cudaMallocAsync) memory */
    int spans;                    /* the range runs past base+length (not exportable) */
    strata_mem_info_t mem;        /* the answer all this was read from */
} uct_strata_mem_info_t;

/*
 * Asks the driver about [address, address+length).  Returns UCS_OK with
 * mem_type HOST for memory the driver does not know; for device memory
 * whose range runs past its allocation or mapping, sets info->spans.
 */
ucs_status_t uct_strata_mem_info_get(const void *address, size_t length,
                                     uct_strata_mem_info_t *info);

/* The device ordinal of an interface opened on "gpu<N>" (as
 * uct_strata_query_gpu_devices() names them), with an error naming tl_name
 * for anything else. */
ucs_status_t uct_strata_iface_device(const uct_iface_params_t *params, const char *tl_name,
                                     int *ordinal_p);

/* Device resource descriptor list with one entry per GPU, named "gpu<N>",
 * on a domain of `kind` (each transport works with one domain); none on the
 * other. */
ucs_status_t uct_strata_query_gpu_devices(uct_md_h uct_md, uct_strata_md_kind_t kind,
                                          uct_tl_device_resource_t **devices_p,
                                          unsigned *num_devices_p);

#endif /* UCT_STRATA_MD_H */
