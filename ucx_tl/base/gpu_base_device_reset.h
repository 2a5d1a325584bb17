/*
 * Who must hear that a device's primary context is about to be reset.
 *
 * cuDevicePrimaryCtxReset destroys everything of the primary context, and a
 * transport may hold state there that outlives any one interface (gpu_ipc's
 * process-wide cache of peers' mappings).  The driver hook that sees the
 * reset (../strata_memhooks.c) tells this list, and each transport that
 * keeps such state joins it: so the hooks and the transports know the list,
 * never each other, and gpu_copy (which starts the hooks) never reaches
 * into gpu_ipc.  It lives in base/, the layer both transports already
 * share, because it is theirs: the hooks only announce.
 */
#ifndef UCT_GPU_BASE_DEVICE_RESET_H
#define UCT_GPU_BASE_DEVICE_RESET_H

#include <ucs/datastruct/list.h>

typedef struct uct_gpu_base_device_reset_listener uct_gpu_base_device_reset_listener_t;

struct uct_gpu_base_device_reset_listener {
    ucs_list_link_t list;
    /* Device `ordinal`'s primary context is reset right after this returns:
     * drop what lives in it.  Runs on the thread that resets, before the
     * driver does; it must not reset a device or join the list itself. */
    void (*cb)(void *arg, int ordinal);
    void *arg;
};

/* Joins the list for the life of the module: the listener (cb and arg set)
 * is the caller's, and stays valid that long. */
void uct_gpu_base_device_reset_listen(uct_gpu_base_device_reset_listener_t *listener);

/* Device `ordinal`'s primary context is about to be reset: calls every
 * listener, in the order they joined. */
void uct_gpu_base_device_reset_notify(int ordinal);

#endif /* UCT_GPU_BASE_DEVICE_RESET_H */
