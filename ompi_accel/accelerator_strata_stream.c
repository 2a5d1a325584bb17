/*
 * accelerator/cuda (Strata): streams and events for Open MPI (pml/ob1
 * pipelines its device copies on them), and this component's own copy
 * stream per device.
 *
 * Open MPI frees a stream or event with OBJ_RELEASE, so each is an object
 * of a class of this file whose destructor returns the driver's handle.
 * Streams and events are made in the primary context of their device, the
 * context that stays whatever the application does with its own.  Making
 * them is Open MPI's set-up for a device, off the data path: there the
 * component meets the contexts in play, the caller's and the device's
 * primary one (flagged with CU_CTX_SYNC_MEMOPS and settled once:
 * common/strata_mem.h), which the per-buffer questions only look up.
 */
#include "ompi_accel/accelerator_strata.h"

#include <pthread.h>
#include <stdlib.h>

#include "opal/constants.h"
#include "opal/util/output.h"

#include "common/strata_mem.h"

/* The handle is calloc'ed: NULL until the driver made it, so one
 * OBJ_RELEASE undoes any stage of a failed create. */
static void accelerator_strata_stream_destruct(opal_accelerator_stream_t *stream)
{
    if (stream->stream != NULL && *(CUstream *)stream->stream != NULL) {
        (void)strata_cuda.cuStreamDestroy(*(CUstream *)stream->stream);
    }
    free(stream->stream);
    stream->stream = NULL;
}

static void accelerator_strata_event_destruct(opal_accelerator_event_t *event)
{
    if (event->event != NULL && *(CUevent *)event->event != NULL) {
        (void)strata_cuda.cuEventDestroy(*(CUevent *)event->event);
    }
    free(event->event);
    event->event = NULL;
}

typedef opal_accelerator_stream_t accelerator_strata_stream_t;
typedef opal_accelerator_event_t accelerator_strata_event_t;
OBJ_CLASS_DECLARATION(accelerator_strata_stream_t);
OBJ_CLASS_DECLARATION(accelerator_strata_event_t);
OBJ_CLASS_INSTANCE(accelerator_strata_stream_t, opal_accelerator_stream_t, NULL,
                   accelerator_strata_stream_destruct);
OBJ_CLASS_INSTANCE(accelerator_strata_event_t, opal_accelerator_event_t, NULL,
                   accelerator_strata_event_destruct);

/*
 * The device a stream or event for `dev_id` belongs to: that one, or with
 * MCA_ACCELERATOR_NO_DEVICE_ID the device of the thread's current context.
 * Without one there is no device paired with the thread yet: -1, and the
 * caller does without (pml/ob1 asks for its streams in MPI_Init, before an
 * application that picks its GPU after MPI_Init did so; making them on
 * device 0 would put a context on GPU 0 in every rank).
 */
static int accelerator_strata_object_device(int dev_id, const char *what)
{
    int dev = (dev_id >= 0) ? dev_id : strata_cuda_current_device(-1);

    if (dev < 0) {
        opal_output_verbose(10, accelerator_strata_output,
                            "accelerator:cuda (Strata): no %s made: no CUDA context is current "
                            "on this thread, so no device is paired with it yet",
                            what);
    }
    return dev;
}

int accelerator_strata_create_stream(int dev_id, opal_accelerator_stream_t **stream)
{
    accelerator_strata_stream_t *s;
    CUcontext saved;
    CUresult res;

    if (stream == NULL) {
        return OPAL_ERR_BAD_PARAM;
    }
    dev_id = accelerator_strata_object_device(dev_id, "stream");
    if (dev_id < 0) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    s = OBJ_NEW(accelerator_strata_stream_t);
    if (s == NULL) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    s->stream = calloc(1, sizeof(CUstream));
    if (s->stream == NULL) {
        OBJ_RELEASE(s);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    (void)strata_mem_sync_memops_ctx();
    if (accelerator_strata_ctx_push(dev_id, &saved, "a stream") != OPAL_SUCCESS) {
        OBJ_RELEASE(s);
        return OPAL_ERROR;
    }
    (void)strata_mem_sync_memops_ctx();
    res = strata_cuda.cuStreamCreate((CUstream *)s->stream, 0);
    accelerator_strata_ctx_pop(saved);
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report("cuStreamCreate", res, "a stream on device %d", dev_id);
        OBJ_RELEASE(s);
        return OPAL_ERROR;
    }
    *stream = s;
    return OPAL_SUCCESS;
}

int accelerator_strata_create_event(int dev_id, opal_accelerator_event_t **event)
{
    accelerator_strata_event_t *e;
    CUcontext saved;
    CUresult res;

    if (event == NULL) {
        return OPAL_ERR_BAD_PARAM;
    }
    dev_id = accelerator_strata_object_device(dev_id, "event");
    if (dev_id < 0) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    e = OBJ_NEW(accelerator_strata_event_t);
    if (e == NULL) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    e->event = calloc(1, sizeof(CUevent));
    if (e->event == NULL) {
        OBJ_RELEASE(e);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    (void)strata_mem_sync_memops_ctx();
    if (accelerator_strata_ctx_push(dev_id, &saved, "an event") != OPAL_SUCCESS) {
        OBJ_RELEASE(e);
        return OPAL_ERROR;
    }
    (void)strata_mem_sync_memops_ctx();
    res = strata_cuda.cuEventCreate((CUevent *)e->event, CU_EVENT_DISABLE_TIMING);
    accelerator_strata_ctx_pop(saved);
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report("cuEventCreate", res, "an event on device %d", dev_id);
        OBJ_RELEASE(e);
        return OPAL_ERROR;
    }
    *event = e;
    return OPAL_SUCCESS;
}

int accelerator_strata_record_event(int dev_id, opal_accelerator_event_t *event,
                                    opal_accelerator_stream_t *stream)
{
    CUresult res;

    (void)dev_id;
    if ((event == NULL) || (event->event == NULL) || (stream == NULL) || (stream->stream == NULL)) {
        return OPAL_ERR_BAD_PARAM;
    }
    res = strata_cuda.cuEventRecord(*(CUevent *)event->event, *(CUstream *)stream->stream);
    if (res != CUDA_SUCCESS) {
        accelerator_strata_report("cuEventRecord", res, "event %p", (void *)event);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

int accelerator_strata_query_event(int dev_id, opal_accelerator_event_t *event)
{
    CUresult res;

    (void)dev_id;
    if ((event == NULL) || (event->event == NULL)) {
        return OPAL_ERR_BAD_PARAM;
    }
    res = strata_cuda.cuEventQuery(*(CUevent *)event->event);
    if (res == CUDA_SUCCESS) {
        return OPAL_SUCCESS;
    }
    if (res == CUDA_ERROR_NOT_READY) {
        return OPAL_ERR_RESOURCE_BUSY;
    }
    accelerator_strata_report("cuEventQuery", res, "event %p", (void *)event);
    return OPAL_ERROR;
}

/* --- the copies' own streams: one per device, made on first use --- */

#define ACCELERATOR_STRATA_MAX_DEVICES 64

static CUstream accelerator_strata_copy_streams[ACCELERATOR_STRATA_MAX_DEVICES];
static pthread_mutex_t accelerator_strata_copy_lock = PTHREAD_MUTEX_INITIALIZER;

/* With the device's context current (accelerator_strata_ctx_push). */
CUstream accelerator_strata_copy_stream(int dev_id)
{
    CUstream stream;
    CUresult res;
    int slot = dev_id; /* a copy's device: never negative (copy_device) */

    if ((slot < 0) || (slot >= ACCELERATOR_STRATA_MAX_DEVICES)) {
        opal_output(0,
                    "accelerator:cuda (Strata): device %d is beyond the %d this component serves",
                    slot, ACCELERATOR_STRATA_MAX_DEVICES);
        return NULL;
    }
    stream = __atomic_load_n(&accelerator_strata_copy_streams[slot], __ATOMIC_ACQUIRE);
    if (stream != NULL) {
        return stream;
    }
    pthread_mutex_lock(&accelerator_strata_copy_lock);
    stream = accelerator_strata_copy_streams[slot];
    if (stream == NULL) {
        res = strata_cuda.cuStreamCreate(&stream, 0);
        if (res == CUDA_SUCCESS) {
            __atomic_store_n(&accelerator_strata_copy_streams[slot], stream, __ATOMIC_RELEASE);
        } else {
            accelerator_strata_report("cuStreamCreate", res, "the copy stream of device %d", slot);
            stream = NULL;
        }
    }
    pthread_mutex_unlock(&accelerator_strata_copy_lock);
    return stream;
}

void accelerator_strata_streams_fini(void)
{
    int i;

    pthread_mutex_lock(&accelerator_strata_copy_lock);
    for (i = 0; i < ACCELERATOR_STRATA_MAX_DEVICES; i++) {
        if (accelerator_strata_copy_streams[i] != NULL) {
            (void)strata_cuda.cuStreamDestroy(accelerator_strata_copy_streams[i]);
            accelerator_strata_copy_streams[i] = NULL;
        }
    }
    pthread_mutex_unlock(&accelerator_strata_copy_lock);
}
