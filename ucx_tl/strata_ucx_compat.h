/*
 * The one place that knows which UCX Strata is compiled against.
 *
 * A UCT component shares internal structures with libuct (uct_component_t,
 * uct_md_ops_t, uct_iface_ops_t, rkey unpack), and those change between
 * UCX releases.  Everything version-dependent is spelled here, keyed on
 * UCT_API (the UCT_VERNO_* version of the headers), so the rest of ucx_tl/ is written once.  Built and tested:
 * UCX 1.13.1 (Debian 12).  Other versions fail at compile time with a clear
 * message until their differences are added here and tested.
 */
#ifndef UCT_STRATA_UCX_COMPAT_H
#define UCT_STRATA_UCX_COMPAT_H

#include <uct/api/version.h>
#include <uct/base/uct_component.h>
#include <uct/base/uct_md.h>

/* UCT_API is UCT_VERSION(major, minor) of the headers in use. */
#if (UCT_API < UCT_VERSION(1, 13)) || (UCT_API >= UCT_VERSION(1, 14))
#  error "Strata's UCX transport is written for UCX 1.13 (its internal md/iface/rkey ABI); " \
         "add this UCX version's differences to ucx_tl/strata_ucx_compat.h"
#endif

/*
 * UCX 1.13: rkey_unpack(component, buffer, rkey_p, handle_p); later
 * versions pass a params struct.  Strata's unpack functions use this form.
 */
#define UCT_STRATA_RKEY_UNPACK_ARGS \
    uct_component_t *component, const void *rkey_buffer, uct_rkey_t *rkey_p, void **handle_p

/* UCX 1.13: mem_reg(md, address, length, flags, memh_p). */
#define UCT_STRATA_MEM_REG_ARGS \
    uct_md_h uct_md, void *address, size_t length, unsigned flags, uct_mem_h *memh_p

/* UCX 1.13: mem_dereg(md, params) with params->memh. */
#define UCT_STRATA_MEM_DEREG_ARGS uct_md_h uct_md, const uct_md_mem_dereg_params_t *params
#define UCT_STRATA_MEM_DEREG_MEMH(_params) ((_params)->memh)

/* UCX 1.13: mkey_pack(md, memh, params, rkey_buffer). */
#define UCT_STRATA_MKEY_PACK_ARGS \
    uct_md_h uct_md, uct_mem_h memh, const uct_md_mkey_pack_params_t *params, void *rkey_buffer

/* UCX 1.13's uct_component_t has md_vfs_init; the plugin has nothing to add
 * to UCX's virtual file system. */
#define UCT_STRATA_COMPONENT_VFS_INIT \
    .md_vfs_init = (uct_component_md_vfs_init_func_t)ucs_empty_function,

#endif /* UCT_STRATA_UCX_COMPAT_H */
