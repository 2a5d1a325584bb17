/*
 * The listeners of a device's primary context reset (see
 * gpu_base_device_reset.h).
 */
#include "gpu_base_device_reset.h"

#include <pthread.h>

static UCS_LIST_HEAD(uct_gpu_base_device_reset_listeners);
/* A listener joins when its state is first made, on whichever thread that
 * is, while another thread may reset a device: the walk and the joining
 * hold this lock. */
static pthread_mutex_t uct_gpu_base_device_reset_lock = PTHREAD_MUTEX_INITIALIZER;

void uct_gpu_base_device_reset_listen(uct_gpu_base_device_reset_listener_t *listener)
{
    pthread_mutex_lock(&uct_gpu_base_device_reset_lock);
    ucs_list_add_tail(&uct_gpu_base_device_reset_listeners, &listener->list);
    pthread_mutex_unlock(&uct_gpu_base_device_reset_lock);
}

void uct_gpu_base_device_reset_notify(int ordinal)
{
    uct_gpu_base_device_reset_listener_t *listener;

    pthread_mutex_lock(&uct_gpu_base_device_reset_lock);
    ucs_list_for_each(listener, &uct_gpu_base_device_reset_listeners, list) {
        listener->cb(listener->arg, ordinal);
    }
    pthread_mutex_unlock(&uct_gpu_base_device_reset_lock);
}
