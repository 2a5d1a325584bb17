/*
 * Memory-type detection for a UCX built without CUDA (Debian's 1.13.1).
 *
 * UCP asks its memory type cache about every buffer; an address the cache
 * does not hold is taken for host memory.  That cache is filled by libucm
 * events (UCM_EVENT_MEM_TYPE_ALLOC/FREE), and a UCX without CUDA support has
 * nothing that sends them.  Strata patches the CUDA driver's allocation and
 * release entry points with libucm's exported "bistro" patcher and sends
 * the events itself, and registers an event installer so a cache created
 * later is given the allocations that already exist.  If the hooks cannot be
 * installed the cache is switched off (with a warning), and UCP then asks
 * the gpu_copy domain about each buffer instead: correct, but slower.
 */
#ifndef UCT_STRATA_MEMHOOKS_H
#define UCT_STRATA_MEMHOOKS_H

#include <ucs/config/types.h>
#include <ucs/type/status.h>

/*
 * Installs the hooks once per process (later calls return the first
 * outcome).  mode: UCS_NO -> do not install, disable the cache;
 * UCS_TRY -> install, or disable the cache with a warning; UCS_YES ->
 * install or fail.  scan: whether a memory type cache created later is told
 * of ranges that may hold memory the hooks do not see (UCS_CONFIG_AUTO: at
 * its creation if a CUDA context exists by then, else at the first device
 * allocation a hook reports).
 */
ucs_status_t uct_strata_memhooks_init(ucs_ternary_auto_value_t mode, ucs_on_off_auto_value_t scan);

/*
 * Joins libucm's list of event installers, so that a memory type cache made
 * later is given the allocations that exist.  Called when the module loads
 * (the component's registration), before any UCX context can walk the list
 * (libucm walks it without a lock); unregister when it unloads.
 */
void uct_strata_memhooks_register(void);
void uct_strata_memhooks_unregister(void);

/*
 * Around Strata's own calls of hooked entry points on the data path (gpu_ipc
 * mapping a peer's allocation): the hooks still report the mapping, but
 * meet no context there: no flag, no settling (the application writes
 * nothing through such a mapping, and cuCtxSetFlags takes the context's
 * lock: common/strata_mem.h).  Per thread; calls nest.
 */
void uct_strata_memhooks_own_call_enter(void);
void uct_strata_memhooks_own_call_leave(void);

/* Whether allocation hooks are active (for ucx_info / tests). */
int uct_strata_memhooks_active(void);

#endif /* UCT_STRATA_MEMHOOKS_H */
