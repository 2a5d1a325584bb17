/*
 * The one place that knows which UCX Strata is compiled against.
 *
 * A UCT component shares internal structures with libuct (uct_component_t,
 * uct_md_ops_t, uct_iface_ops_t, uct_iface_internal_ops_t, rkey unpack), and
 * those change between UCX releases.  Everything version-dependent is
 * spelled here, keyed on UCT_API (the UCT_VERNO_* version of the headers),
 * so the rest of ucx_tl/ is written once.  Built and tested: the series
 * the distributions ship, 1.12 (Ubuntu 22.04), 1.13 (Debian 12), 1.16
 * (Ubuntu 24.04), 1.18 (Debian 13, Fedora 43), 1.19 (Fedora 44), 1.20
 * (Ubuntu 26.04) and 1.22 (upstream).  Each difference is keyed on the
 * first release whose headers have it (read in UCX's trees), but the
 * releases between (1.14, 1.15, 1.17, 1.21) were never built, so they are
 * refused: another one fails at compile time until its differences are
 * checked here and it is tested.
 *
 * The internal ABI is per minor release, so the module also checks at load
 * time that the running UCX is the series it was built for
 * (strata_component.c).
 */
#ifndef UCT_STRATA_UCX_COMPAT_H
#define UCT_STRATA_UCX_COMPAT_H

#include <uct/api/version.h>
#include <uct/base/uct_component.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/arch/cpu.h>
#include <ucs/datastruct/callbackq.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucm/api/ucm.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

/* UCT_API is UCT_VERSION(major, minor) of the headers in use. */
#if (UCT_API != UCT_VERSION(1, 12)) && (UCT_API != UCT_VERSION(1, 13)) && \
    (UCT_API != UCT_VERSION(1, 16)) && (UCT_API != UCT_VERSION(1, 18)) && \
    (UCT_API != UCT_VERSION(1, 19)) && (UCT_API != UCT_VERSION(1, 20)) && \
    (UCT_API != UCT_VERSION(1, 22))
#error "Strata's UCX transport supports UCX 1.12, 1.13, 1.16, 1.18, 1.19, 1.20 and 1.22 " \
         "(their internal md/iface/rkey ABIs), not the UCX whose headers are in use: " \
         "check this UCX version's differences in ucx_tl/strata_ucx_compat.h, add them, " \
         "and test it"
#endif

/* ---- memory domain ---- */

/*
 * md query: UCX 1.13 fills uct_md_attr_t (capabilities under .cap); UCX
 * 1.14 passes uct_md_attr_v2_t, flat, with more memory type maps (cache,
 * dmabuf, non-blocking registration, GVA) and a registration alignment.
 * A domain states what it has in uct_strata_md_caps_t and
 * uct_strata_md_attr_fill() writes every field this UCX has (the v2 fields
 * are 1.18's; some came after 1.14): the maps a domain does not state are
 * empty.
 */
#if UCT_API >= UCT_VERSION(1, 14)
typedef uct_md_attr_v2_t uct_strata_md_attr_t;
#else
typedef uct_md_attr_t uct_strata_md_attr_t;
#endif

typedef struct uct_strata_md_caps {
    uint64_t flags;            /* UCT_MD_FLAG_* */
    uint64_t reg_mem_types;    /* memory types mem_reg accepts */
    uint64_t access_mem_types; /* memory types its transports can access */
    uint64_t detect_mem_types; /* memory types mem_query answers for */
    /* Memory types whose registrations UCP may keep in its registration
     * cache (UCX >= 1.14; UCP 1.18's protocols register a domain whose keys
     * they send only if it is cacheable for the buffer's memory type). */
    uint64_t cache_mem_types;
    size_t rkey_packed_size;
    ucs_linear_func_t reg_cost;
} uct_strata_md_caps_t;

static inline void uct_strata_md_attr_fill(uct_strata_md_attr_t *md_attr,
                                           const uct_strata_md_caps_t *caps)
{
#if UCT_API >= UCT_VERSION(1, 14)
    md_attr->flags                     = caps->flags;
    md_attr->max_alloc                 = 0;
    md_attr->max_reg                   = ULONG_MAX;
    md_attr->reg_mem_types             = caps->reg_mem_types;
    md_attr->reg_nonblock_mem_types    = 0;
    md_attr->cache_mem_types           = caps->cache_mem_types;
#if UCT_API >= UCT_VERSION(1, 18)
    md_attr->gva_mem_types             = 0;
#endif
    md_attr->detect_mem_types          = caps->detect_mem_types;
    md_attr->alloc_mem_types           = 0;
    md_attr->access_mem_types          = caps->access_mem_types;
    md_attr->dmabuf_mem_types          = 0;
    md_attr->reg_cost                  = caps->reg_cost;
    md_attr->rkey_packed_size          = caps->rkey_packed_size;
    /* Nothing is exported for other domains to attach (mem_attach). */
    md_attr->exported_mkey_packed_size = 0;
    md_attr->reg_alignment             = 1;
#else
    md_attr->cap.flags            = caps->flags;
    md_attr->cap.max_alloc        = 0;
    md_attr->cap.max_reg          = ULONG_MAX;
    md_attr->cap.reg_mem_types    = caps->reg_mem_types;
    md_attr->cap.detect_mem_types = caps->detect_mem_types;
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->cap.access_mem_types = caps->access_mem_types;
    md_attr->reg_cost             = caps->reg_cost;
    md_attr->rkey_packed_size     = caps->rkey_packed_size;
#endif
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
}

/*
 * mem_reg: UCX 1.13 mem_reg(md, address, length, flags, memh_p); UCX 1.14
 * passes the flags (and a dma-buf, unused here) in a params struct.
 * UCT_STRATA_MEM_REG_FLAGS() is the UCT_MD_MEM_FLAG_* of the call, inside a
 * function declared with UCT_STRATA_MEM_REG_ARGS.
 */
#if UCT_API >= UCT_VERSION(1, 14)
#define UCT_STRATA_MEM_REG_ARGS \
    uct_md_h uct_md, void *address, size_t length, const uct_md_mem_reg_params_t *params, \
        uct_mem_h *memh_p
#define UCT_STRATA_MEM_REG_FLAGS() \
    ((uint64_t)UCT_MD_MEM_REG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0))
#else
#define UCT_STRATA_MEM_REG_ARGS \
    uct_md_h uct_md, void *address, size_t length, unsigned flags, uct_mem_h *memh_p
#define UCT_STRATA_MEM_REG_FLAGS() ((uint64_t)flags)
#endif

/* mem_dereg(md, params) with params->memh, in both. */
#define UCT_STRATA_MEM_DEREG_ARGS uct_md_h uct_md, const uct_md_mem_dereg_params_t *params
#define UCT_STRATA_MEM_DEREG_MEMH(_params) ((_params)->memh)

/* mkey_pack: UCX 1.13 adds the params, 1.16 the address and length of the
 * region packed. */
#if UCT_API >= UCT_VERSION(1, 16)
#define UCT_STRATA_MKEY_PACK_ARGS \
    uct_md_h uct_md, uct_mem_h memh, void *address, size_t length, \
        const uct_md_mkey_pack_params_t *params, void *rkey_buffer
#elif UCT_API >= UCT_VERSION(1, 13)
#define UCT_STRATA_MKEY_PACK_ARGS \
    uct_md_h uct_md, uct_mem_h memh, const uct_md_mkey_pack_params_t *params, void *rkey_buffer
#else
#define UCT_STRATA_MKEY_PACK_ARGS uct_md_h uct_md, uct_mem_h memh, void *rkey_buffer
#endif

/* mem_query's attributes: UCX 1.22 passes the v2 struct (the same field
 * bits, more fields). */
#if UCT_API >= UCT_VERSION(1, 22)
typedef uct_md_mem_attr_v2_t uct_strata_md_mem_attr_t;
#else
typedef uct_md_mem_attr_t uct_strata_md_mem_attr_t;
#endif

/*
 * md ops beyond those both have: mem_attach from UCX 1.14 (importing a
 * memory key another process exported; Strata's domains export none), and
 * is_sockaddr_accessible until UCX 1.15 (no sockaddr here).
 */
#if UCT_API >= UCT_VERSION(1, 14)
#define UCT_STRATA_MD_OPS_MEM_ATTACH \
    .mem_attach = (uct_md_mem_attach_func_t)ucs_empty_function_return_unsupported,
#else
#define UCT_STRATA_MD_OPS_MEM_ATTACH
#endif
#if UCT_API < UCT_VERSION(1, 16)
#define UCT_STRATA_MD_OPS_SOCKADDR \
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t)ucs_empty_function_return_zero,
#else
#define UCT_STRATA_MD_OPS_SOCKADDR
#endif
/* mem_elem_pack from UCX 1.22 (device-side memory elements: none here),
 * which libuct calls without a NULL check. */
#if UCT_API >= UCT_VERSION(1, 22)
#define UCT_STRATA_MD_OPS_MEM_ELEM_PACK \
    .mem_elem_pack = (uct_md_mem_elem_pack_func_t)ucs_empty_function_return_unsupported,
#else
#define UCT_STRATA_MD_OPS_MEM_ELEM_PACK
#endif
#define UCT_STRATA_MD_OPS_VERSIONED \
    UCT_STRATA_MD_OPS_MEM_ATTACH UCT_STRATA_MD_OPS_SOCKADDR UCT_STRATA_MD_OPS_MEM_ELEM_PACK

/*
 * The memory types a memory-type copy domain (gpu_copy) says it accesses
 * besides the GPU's: from UCX 1.19 host memory too, as UCX's cuda_copy
 * does.  1.19's memory-type endpoint takes its host lane from the
 * transports that access host memory (ucp_context_memaccess_tl_bitmap):
 * without it no worker could be created ("no copy across memory types").
 * Before 1.19 host stays out: it would offer gpu_copy for host-to-host RMA.
 */
#if UCT_API >= UCT_VERSION(1, 19)
#define UCT_STRATA_MTYPE_COPY_ACCESS_HOST UCS_BIT(UCS_MEMORY_TYPE_HOST)
#else
#define UCT_STRATA_MTYPE_COPY_ACCESS_HOST 0
#endif

/* ---- component ---- */

/* rkey_unpack(component, buffer, rkey_p, handle_p); UCX 1.19 adds params
 * after the buffer.  _PASS forwards the arguments to another unpack. */
#if UCT_API >= UCT_VERSION(1, 19)
#define UCT_STRATA_RKEY_UNPACK_ARGS \
    uct_component_t *component, const void *rkey_buffer, const uct_rkey_unpack_params_t *params, \
        uct_rkey_t *rkey_p, void **handle_p
#define UCT_STRATA_RKEY_UNPACK_PASS component, rkey_buffer, params, rkey_p, handle_p
#else
#define UCT_STRATA_RKEY_UNPACK_ARGS \
    uct_component_t *component, const void *rkey_buffer, uct_rkey_t *rkey_p, void **handle_p
#define UCT_STRATA_RKEY_UNPACK_PASS component, rkey_buffer, rkey_p, handle_p
#endif

/* UCX 1.12 has only UCT_TL_DEFINE, which registers from a constructor
 * (Strata registers when its component is queried, strata_component.c),
 * and declares uct_components_list inside a macro: 1.13's definitions. */
#if UCT_API < UCT_VERSION(1, 13)
#define UCT_TL_NAME(_name) uct_##_name##_tl
#define UCT_TL_DEFINE_ENTRY(_component, _name, _query_devices, _iface_class, _cfg_prefix, \
                            _cfg_table, _cfg_struct) \
    uct_tl_t UCT_TL_NAME(_name) = {.name          = #_name, \
                                   .query_devices = _query_devices, \
                                   .iface_open    = UCS_CLASS_NEW_FUNC_NAME(_iface_class), \
                                   .config        = {.name   = #_name " transport", \
                                                     .prefix = _cfg_prefix, \
                                                     .table  = _cfg_table, \
                                                     .size   = sizeof(_cfg_struct)}}
extern ucs_list_link_t uct_components_list;
#endif

/*
 * uct_component_t fields beyond those both have: md_vfs_init (the plugin
 * has nothing to add to UCX's virtual file system) and, from UCX 1.16,
 * rkey_compare, which libuct calls without a NULL check.  An unpacked key
 * is compared as its value, as UCX's own transports do: gpu_ipc's is the
 * address of its unpacked key, gpu_copy's is UCT_INVALID_RKEY.
 */
#if UCT_API >= UCT_VERSION(1, 16)
#define UCT_STRATA_COMPONENT_VERSIONED \
    .rkey_compare = uct_base_rkey_compare, \
    .md_vfs_init  = (uct_component_md_vfs_init_func_t)ucs_empty_function,
#else
#define UCT_STRATA_COMPONENT_VERSIONED \
    .md_vfs_init = (uct_component_md_vfs_init_func_t)ucs_empty_function,
#endif

/* ---- interface ---- */

/* ep_invalidate, an internal op from UCX 1.13 (no endpoint to invalidate
 * here). */
#if UCT_API >= UCT_VERSION(1, 13)
#define UCT_STRATA_IFACE_OPS_EP_INVALIDATE \
    .ep_invalidate = (uct_ep_invalidate_func_t)ucs_empty_function_return_unsupported,
#else
#define UCT_STRATA_IFACE_OPS_EP_INVALIDATE
#endif

/* A keepalive check's arguments: UCX 1.22 drops the completion. */
#if UCT_API >= UCT_VERSION(1, 22)
#define UCT_STRATA_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp) UCT_EP_KEEPALIVE_CHECK_PARAM(_flags)
#else
#define UCT_STRATA_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp) \
    UCT_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp)
#endif

/*
 * Reachability.  A transport writes one check,
 *   int NAME(uct_iface_h iface, const uct_device_addr_t *dev_addr,
 *            const uct_iface_addr_t *iface_addr, char *reason, size_t max);
 * which says why not in `reason` (with uct_strata_reachable_reason(); it may
 * be NULL), and UCT_STRATA_IFACE_IS_REACHABLE_DEFINE(NAME) makes the entry
 * points this UCX calls: UCX 1.13's iface_is_reachable(iface, dev_addr,
 * iface_addr); from UCX 1.16, internal iface_is_reachable_v2(iface, params),
 * whose params may ask for the reason (ucx_info, UCX_LOG_LEVEL=diag) and a
 * scope (DEVICE: the same device too), behind libuct's
 * uct_base_iface_is_reachable.  Put
 *   .iface_is_reachable = UCT_STRATA_IFACE_IS_REACHABLE_OP(NAME)
 * in the iface ops and UCT_STRATA_IFACE_INTERNAL_OPS_VERSIONED(NAME, ...)
 * in the internal ops.
 */
typedef int (*uct_strata_iface_reachable_func_t)(uct_iface_h tl_iface,
                                                 const uct_device_addr_t *dev_addr,
                                                 const uct_iface_addr_t *iface_addr, char *reason,
                                                 size_t max);

static inline void uct_strata_reachable_reason(char *reason, size_t max, const char *fmt, ...)
    UCS_F_PRINTF(3, 4);
static inline void uct_strata_reachable_reason(char *reason, size_t max, const char *fmt, ...)
{
    va_list ap;

    if ((reason == NULL) || (max == 0)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(reason, max, fmt, ap);
    va_end(ap);
}

/*
 * Whether a peer's uct_iface_local_addr_ns_t device address is this host and
 * PID namespace (uct_iface_local_is_reachable, which from UCX 1.18 takes the
 * is_reachable params for its reason).
 */
static inline int uct_strata_iface_local_is_reachable(const uct_device_addr_t *dev_addr,
                                                      ucs_sys_namespace_type_t sys_ns_type,
                                                      char *reason, size_t max)
{
#if UCT_API >= UCT_VERSION(1, 18)
    uct_iface_is_reachable_params_t params = {.field_mask = 0};

    if ((reason != NULL) && (max > 0)) {
        params.field_mask = UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING |
                            UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH;
        params.info_string        = reason;
        params.info_string_length = max;
    }
    return uct_iface_local_is_reachable((uct_iface_local_addr_ns_t *)dev_addr, sys_ns_type,
                                        &params);
#else
    if (!uct_iface_local_is_reachable((uct_iface_local_addr_ns_t *)dev_addr, sys_ns_type)) {
        uct_strata_reachable_reason(reason, max, "another host or PID namespace");
        return 0;
    }
    return 1;
#endif
}

/*
 * Whether an endpoint is connected to the peer at these addresses (NULL:
 * not given).  A transport writes
 *   int NAME(uct_ep_h ep, const uct_device_addr_t *dev_addr,
 *            const uct_iface_addr_t *iface_addr);
 * and UCT_STRATA_EP_IS_CONNECTED_DEFINE(NAME) makes UCX 1.16's internal
 * ep_is_connected(ep, params) of it, which UCP calls without a NULL check
 * when a peer's address arrives again (wireup).  UCX 1.13 does not ask.
 *
 * The internal ops grew one entry at a time (ep_connect_to_ep_v2 in 1.14,
 * iface_is_reachable_v2 in 1.15, ep_is_connected and libuct's
 * uct_base_iface_is_reachable and params helpers in 1.16): they are
 * written together from 1.16.
 */
typedef int (*uct_strata_ep_connected_func_t)(uct_ep_h tl_ep, const uct_device_addr_t *dev_addr,
                                              const uct_iface_addr_t *iface_addr);

#if UCT_API >= UCT_VERSION(1, 16)

static inline int uct_strata_iface_is_reachable_v2(uct_iface_h tl_iface,
                                                   const uct_iface_is_reachable_params_t *params,
                                                   uct_strata_iface_reachable_func_t check)
{
    char *reason = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params, info_string, INFO_STRING,
                                   NULL);
    size_t max   = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params, info_string_length,
                                   INFO_STRING_LENGTH, 0);

    if (!uct_iface_is_reachable_params_addrs_valid(params) ||
        !check(tl_iface, params->device_addr, params->iface_addr, reason, max)) {
        return 0;
    }
    return uct_iface_scope_is_reachable(tl_iface, params);
}

static inline int uct_strata_ep_is_connected_v2(uct_ep_h tl_ep,
                                                const uct_ep_is_connected_params_t *params,
                                                uct_strata_ep_connected_func_t check)
{
    return check(tl_ep,
                 UCS_PARAM_VALUE(UCT_EP_IS_CONNECTED_FIELD, params, device_addr, DEVICE_ADDR, NULL),
                 UCS_PARAM_VALUE(UCT_EP_IS_CONNECTED_FIELD, params, iface_addr, IFACE_ADDR, NULL));
}

#define UCT_STRATA_IFACE_IS_REACHABLE_DEFINE(_check) \
    static int _check##_v2(const uct_iface_h tl_iface, \
                           const uct_iface_is_reachable_params_t *params) \
    { \
        return uct_strata_iface_is_reachable_v2(tl_iface, params, _check); \
    }
#define UCT_STRATA_IFACE_IS_REACHABLE_OP(_check) uct_base_iface_is_reachable
#define UCT_STRATA_EP_IS_CONNECTED_DEFINE(_check) \
    static int _check##_v2(uct_ep_h tl_ep, const uct_ep_is_connected_params_t *params) \
    { \
        return uct_strata_ep_is_connected_v2(tl_ep, params, _check); \
    }
/*
 * Internal ops of the device API (UCX 1.20: iface_query_v2, the device
 * endpoint and, in 1.20 only, memory elements; 1.22: scatter-gather put),
 * which libuct calls without a NULL check; 1.22's protocol selection asks
 * iface_query_v2 of every transport.  libuct's base query, and no device
 * endpoints.
 */
#if UCT_API >= UCT_VERSION(1, 20)
#define UCT_STRATA_IFACE_OPS_DEVICE_API_1_20 \
    .iface_query_v2   = uct_iface_base_query_v2, \
    .ep_get_device_ep = (uct_ep_get_device_ep_func_t)ucs_empty_function_return_unsupported,
#else
#define UCT_STRATA_IFACE_OPS_DEVICE_API_1_20
#endif
#if UCT_API == UCT_VERSION(1, 20)
#define UCT_STRATA_IFACE_OPS_DEVICE_API \
    UCT_STRATA_IFACE_OPS_DEVICE_API_1_20.iface_mem_element_pack = \
        (uct_iface_mem_element_pack_func_t)ucs_empty_function_return_unsupported,
#elif UCT_API >= UCT_VERSION(1, 22)
#define UCT_STRATA_IFACE_OPS_DEVICE_API \
    UCT_STRATA_IFACE_OPS_DEVICE_API_1_20.ep_put_sgl_zcopy = \
        (uct_ep_put_sgl_zcopy_func_t)ucs_empty_function_return_unsupported,
#else
#define UCT_STRATA_IFACE_OPS_DEVICE_API
#endif

/* Both transports are connected to an interface, never to an endpoint. */
#define UCT_STRATA_IFACE_INTERNAL_OPS_VERSIONED(_is_reachable, _ep_is_connected) \
    UCT_STRATA_IFACE_OPS_EP_INVALIDATE.ep_connect_to_ep_v2 = \
        (uct_ep_connect_to_ep_v2_func_t)ucs_empty_function_return_unsupported, \
    .iface_is_reachable_v2 = _is_reachable##_v2, .ep_is_connected = _ep_is_connected##_v2, \
    UCT_STRATA_IFACE_OPS_DEVICE_API

#else /* UCX 1.13 */

#define UCT_STRATA_IFACE_IS_REACHABLE_DEFINE(_check) \
    static int _check##_v1(const uct_iface_h tl_iface, const uct_device_addr_t *dev_addr, \
                           const uct_iface_addr_t *iface_addr) \
    { \
        return _check(tl_iface, dev_addr, iface_addr, NULL, 0); \
    }
#define UCT_STRATA_IFACE_IS_REACHABLE_OP(_check) _check##_v1
/* Nothing calls it here; the reference keeps the check compiled and used. */
#define UCT_STRATA_EP_IS_CONNECTED_DEFINE(_check) \
    static inline uct_strata_ep_connected_func_t _check##_unused_before_ucx_1_16(void) \
    { \
        return _check; \
    }
#define UCT_STRATA_IFACE_INTERNAL_OPS_VERSIONED(_is_reachable, _ep_is_connected) \
    UCT_STRATA_IFACE_OPS_EP_INVALIDATE

#endif

/*
 * Whether UCP can wait for a memory-type copy the transport refuses
 * (UCS_ERR_NO_RESOURCE from put/get zcopy on a memory-type endpoint, as
 * gpu_copy is).  UCX 1.13's default protocols queue the refused copy with
 * pending_add.  The protocol layer that is the default from UCX 1.16 copies
 * rendezvous fragments through the memory-type endpoint with no pending
 * path (src/ucp/rndv/rndv_mtype.inl asserts that the copy was taken), so
 * there a transport used for such copies must take every one.  UCX 1.13's
 * own new protocols, opt-in with UCX_PROTO_ENABLE=y, assert the same: a
 * transport cannot ask UCP which protocols a context runs, so the
 * environment decides there (a UCX_PROTO_ENABLE set in a ucx.conf file only
 * is not seen; the assertion then names rndv_mtype).
 */
#if UCT_API >= UCT_VERSION(1, 16)
#define UCT_STRATA_MTYPE_COPY_CAN_REFUSE() 0
#define UCT_STRATA_MTYPE_COPY_WHY          ""
#else
static inline int uct_strata_env_yes(const char *name)
{
    const char *v = getenv(name);

    return (v != NULL) && ((strcasecmp(v, "y") == 0) || (strcasecmp(v, "yes") == 0) ||
                           (strcasecmp(v, "on") == 0) || (strcasecmp(v, "1") == 0) ||
                           (strcasecmp(v, "true") == 0));
}
#define UCT_STRATA_MTYPE_COPY_CAN_REFUSE() (!uct_strata_env_yes("UCX_PROTO_ENABLE"))
#define UCT_STRATA_MTYPE_COPY_WHY          " and UCX_PROTO_ENABLE=y"
#endif

/*
 * Whether gpu_ipc registers host memory by default (UCX_STRATA_IPC_HOST=auto).
 * UCX 1.12/1.13's default rendezvous has no pipeline for a host sender and a
 * device receiver without such a lane (rndv.c: the receiver's get and get
 * pipeline pick lanes for the receive buffer's memory type, so no shared
 * memory lane qualifies, and the RTR it then sends carries no key): the data
 * goes as active-message fragments, each unpacked with a synchronous
 * put_short.  From 1.16 the protocols pipeline host<->device rendezvous
 * through host fragments and the memory-type endpoint (rndv_mtype.inl).
 */
#if UCT_API >= UCT_VERSION(1, 16)
#define UCT_STRATA_IPC_HOST_DEFAULT 0
#else
#define UCT_STRATA_IPC_HOST_DEFAULT 1
#endif

/*
 * estimate_perf's fields beyond those every release has, for a transport
 * with bandwidth `bandwidth`: from UCX 1.13 max_inflight_eps (no limit),
 * 1.17 flags (none), 1.19 path_bandwidth (UCP divides by it: the same as
 * the bandwidth, one path, as libuct's base estimate answers).
 */
static inline void uct_strata_perf_attr_versioned(uct_perf_attr_t *perf_attr,
                                                  uct_ppn_bandwidth_t bandwidth)
{
#if UCT_API >= UCT_VERSION(1, 13)
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS) {
        perf_attr->max_inflight_eps = SIZE_MAX;
    }
#endif
#if UCT_API >= UCT_VERSION(1, 17)
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_FLAGS) {
        perf_attr->flags = 0;
    }
#endif
#if UCT_API >= UCT_VERSION(1, 19)
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH) {
        perf_attr->path_bandwidth = bandwidth;
    }
#endif
    (void)bandwidth;
}

/* ---- UCS ---- */

/* ucs_queue_is_empty() takes a const queue from UCX 1.13. */
static inline int uct_strata_queue_is_empty(const ucs_queue_head_t *queue)
{
#if UCT_API >= UCT_VERSION(1, 13)
    return ucs_queue_is_empty(queue);
#else
    return ucs_queue_is_empty((ucs_queue_head_t *)queue);
#endif
}

/* A setting of type UCS_CONFIG_TYPE_BW left at "auto": UCX 1.14 renames the
 * test (the value is the same). */
#if UCT_API >= UCT_VERSION(1, 14)
#define UCT_STRATA_CONFIG_BW_IS_AUTO(_value) UCS_CONFIG_DBL_IS_AUTO(_value)
#else
#define UCT_STRATA_CONFIG_BW_IS_AUTO(_value) UCS_CONFIG_BW_IS_AUTO(_value)
#endif

/*
 * A callback the worker's progress runs once, and its removal before it ran
 * (the callbacks for which pred(elem, arg) holds).  UCX 1.13 has ONESHOT
 * flagged callbacks and ucs_callbackq_remove_if(); UCX 1.16 keeps one-shot
 * callbacks apart, by a key that removal names.
 */
static inline void uct_strata_oneshot_add(ucs_callbackq_t *cbq, void *key, ucs_callback_t cb,
                                          void *arg)
{
#if UCT_API >= UCT_VERSION(1, 16)
    ucs_callbackq_add_oneshot(cbq, key, cb, arg);
#else
    (void)key;
    ucs_callbackq_add_safe(cbq, cb, arg, UCS_CALLBACKQ_FLAG_ONESHOT);
#endif
}

static inline void uct_strata_oneshot_remove(ucs_callbackq_t *cbq, void *key,
                                             ucs_callbackq_predicate_t pred, void *arg)
{
#if UCT_API >= UCT_VERSION(1, 16)
    ucs_callbackq_remove_oneshot(cbq, key, pred, arg);
#else
    (void)key;
    ucs_callbackq_remove_if(cbq, pred, arg);
#endif
}

/*
 * A memory pool of `elem_size` elements aligned to a cache line, unbounded:
 * UCX 1.13 ucs_mpool_init() takes the settings as arguments, UCX 1.14 as a
 * ucs_mpool_params_t.
 */
static inline ucs_status_t uct_strata_mpool_init(ucs_mpool_t *mp, size_t elem_size,
                                                 unsigned elems_per_chunk, ucs_mpool_ops_t *ops,
                                                 const char *name)
{
#if UCT_API >= UCT_VERSION(1, 14)
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.elem_size       = elem_size;
    params.alignment       = UCS_SYS_CACHE_LINE_SIZE;
    params.elems_per_chunk = elems_per_chunk;
    params.max_elems       = UINT_MAX;
    params.ops             = ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
#else
    return ucs_mpool_init(mp, 0, elem_size, 0, UCS_SYS_CACHE_LINE_SIZE, elems_per_chunk, UINT_MAX,
                          ops, name);
#endif
}

/*
 * A memory-type event for UCX's memory type cache: UCX 1.22 adds the
 * system device and memory flags, which UCP matches against each domain's
 * required flags (an uninitialized value makes NIC registration of GPU
 * memory erratic).  As UCX's own CUDA hooks: the device unknown, a known
 * allocation registrable, a range of unknown type to be detected (0).
 */
static inline void uct_strata_memtype_event_init(ucm_event_t *event, void *address, size_t size,
                                                 ucs_memory_type_t mem_type)
{
    event->mem_type.address  = address;
    event->mem_type.size     = size;
    event->mem_type.mem_type = mem_type;
#if UCT_API >= UCT_VERSION(1, 22)
    event->mem_type.sys_dev   = UCS_SYS_DEVICE_ID_UNKNOWN;
    event->mem_type.mem_flags = (mem_type == UCS_MEMORY_TYPE_UNKNOWN) ? 0 :
                                                                        UCS_MEM_FLAG_REGISTRABLE;
#endif
}

/* ---- dma-buf export by gpu_copy (gpu_copy/gpu_copy_dmabuf.c) ----
 * UCX >= 1.14 registers device memory with a NIC through dma-buf: a domain
 * lists the memory types it exports in its md attributes' dmabuf_mem_types
 * and mem_query answers DMABUF_FD/DMABUF_OFFSET.  UCX 1.13 has neither field;
 * there the dma-buf code compiles to nothing.  Used after
 * uct_strata_md_attr_fill(), which leaves dmabuf_mem_types empty. */
#if UCT_API >= UCT_VERSION(1, 14)
#define UCT_STRATA_HAVE_DMABUF 1
#define UCT_STRATA_MD_ATTR_SET_DMABUF_MEM_TYPES(_md_attr, _mem_types) \
    ((_md_attr)->dmabuf_mem_types = (_mem_types))
#else
#define UCT_STRATA_HAVE_DMABUF 0
#define UCT_STRATA_MD_ATTR_SET_DMABUF_MEM_TYPES(_md_attr, _mem_types) \
    ((void)(_md_attr), (void)(_mem_types))
#endif
/* ---- end of the dma-buf block ---- */

#endif /* UCT_STRATA_UCX_COMPAT_H */
