/*
 * Streams, events and the queue of asynchronous work.
 *
 * Work queued on a stream runs, in order, only at a completion point:
 * cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize, a query that
 * reports completion, or the device-wide synchronization of cuMemFree,
 * cuMemUnmap and cuIpcCloseMemHandle.  Queries first answer
 * CUDA_ERROR_NOT_READY CUDA_STANDIN_QUERY_DELAY times after each enqueue or
 * record, so pollers are exercised and a transport that reports completion
 * early sees stale data.  A query never blocks: it runs the work it can and
 * stops at a cuStreamWaitValue whose condition does not hold yet (answering
 * NOT_READY), as a GPU's host never waits on a query.
 *
 * Ordering between streams is kept with WAIT operations: cuStreamWaitEvent
 * queues one, and so does the legacy default stream's implicit
 * synchronization with blocking streams.  A WAIT runs the other stream's
 * work up to the recorded position first.  Positions only ever refer to work
 * queued earlier, so this never cycles.
 *
 * With CUDA_STANDIN_CONNECTIONS=N the streams share N hardware queues
 * (cuda_standin_hwq.c): an operation also runs only after everything queued
 * before it on its queue, by any stream, and one at a time per queue, so an
 * unmet cuStreamWaitValue holds up every stream of its queue.  That too
 * only ever waits for work queued earlier.
 */
#include "cuda_standin.h"

#include <string.h>

#define CUDA_STANDIN_STREAM_MAGIC 0x4d525453u /* "STRM" */
#define CUDA_STANDIN_EVENT_MAGIC  0x544e5645u /* "EVNT" */
#define CUDA_STANDIN_DEFAULT_STREAM_ID 1

struct CUstream_st {
    uint32_t magic;
    uint64_t id;       /* never reused: a destroyed stream's id finds nothing */
    CUcontext ctx;     /* NULL for the default stream: the caller's context */
    unsigned int flags;
    cuda_standin_op_t *head, *tail;
    uint64_t enqueued;  /* position of the last queued operation */
    uint64_t completed; /* position of the last operation run */
    /* a thread is running this stream's work (cuda_standin_stream_run_to),
     * and which: another waits until it is done, so that the stream's
     * operations still run one after the other while a wait lets the lock
     * go (cuda_standin_lock_pause) */
    int running;
    pthread_t runner;
    int query_delay;    /* NOT_READY answers left before cuStreamQuery runs the work */
    /* CUDA_STANDIN_CONNECTIONS: the hardware queue (NULL for the default
     * stream, whose work goes to queue 0 of the context it is queued in) */
    cuda_standin_hwq_t *hwq;
    struct CUstream_st *next;
};

struct CUevent_st {
    uint32_t magic;
    unsigned int flags;
    int recorded;
    uint64_t stream_id; /* the stream and position of the last record */
    uint64_t seq;
    int query_delay;
    struct CUevent_st *next;
};

/* 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD all name this one stream: it
 * keeps the legacy stream's implicit synchronization, which is the stricter
 * ordering of the two for code under test. */
static struct CUstream_st cuda_standin_default = {.magic = CUDA_STANDIN_STREAM_MAGIC,
                                                  .id    = CUDA_STANDIN_DEFAULT_STREAM_ID};
static struct CUstream_st *cuda_standin_streams; /* created, not destroyed */
static struct CUevent_st *cuda_standin_events;
static uint64_t cuda_standin_stream_last_id = CUDA_STANDIN_DEFAULT_STREAM_ID;

static CUresult cuda_standin_stream_run_to(cuda_standin_stream_t *stream, uint64_t seq);

cuda_standin_stream_t *cuda_standin_stream_default(void)
{
    return &cuda_standin_default;
}

CUresult cuda_standin_stream_get(CUstream handle, cuda_standin_stream_t **stream_p)
{
    struct CUstream_st *s;

    if ((handle == NULL) || (handle == CU_STREAM_LEGACY) || (handle == CU_STREAM_PER_THREAD)) {
        *stream_p = &cuda_standin_default;
        return CUDA_SUCCESS;
    }
    for (s = cuda_standin_streams; s != NULL; s = s->next) {
        if (s == handle) {
            *stream_p = s;
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_INVALID_HANDLE, "%p is not a stream", (void *)handle);
}

static cuda_standin_stream_t *cuda_standin_stream_by_id(uint64_t id)
{
    struct CUstream_st *s;

    if (id == CUDA_STANDIN_DEFAULT_STREAM_ID) {
        return &cuda_standin_default;
    }
    for (s = cuda_standin_streams; s != NULL; s = s->next) {
        if (s->id == id) {
            return s;
        }
    }
    return NULL;
}

int cuda_standin_stream_device(cuda_standin_stream_t *stream)
{
    CUcontext ctx = (stream->ctx != NULL) ? stream->ctx : cuda_standin_ctx_current();

    return (ctx != NULL) ? ctx->device : 0;
}

static int cuda_standin_stream_pending(const cuda_standin_stream_t *stream)
{
    return stream->completed < stream->enqueued;
}

static int cuda_standin_stream_blocking(const cuda_standin_stream_t *stream)
{
    return !(stream->flags & CU_STREAM_NON_BLOCKING);
}

/* --- Queueing --- */

static CUresult cuda_standin_stream_push(cuda_standin_stream_t *stream, const cuda_standin_op_t *op)
{
    cuda_standin_op_t *node = malloc(sizeof(*node));

    if (node == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *node      = *op;
    node->seq  = stream->enqueued + 1;
    node->next = NULL;
    if (cuda_standin_hwq_enabled()) {
        cuda_standin_hwq_t *hwq = (stream->hwq != NULL)
                                      ? stream->hwq
                                      : cuda_standin_hwq_for_default(cuda_standin_ctx_current());
        CUresult status         = (hwq != NULL) ? cuda_standin_hwq_push(hwq, stream, node)
                                                : CUDA_ERROR_OUT_OF_MEMORY;

        if (status != CUDA_SUCCESS) {
            free(node);
            return status;
        }
    }
    stream->enqueued = node->seq;
    if (stream->tail != NULL) {
        stream->tail->next = node;
    } else {
        stream->head = node;
    }
    stream->tail        = node;
    stream->query_delay = cuda_standin_config.query_delay;
    return CUDA_SUCCESS;
}

static CUresult cuda_standin_stream_push_wait(cuda_standin_stream_t *stream,
                                              const cuda_standin_stream_t *other)
{
    cuda_standin_op_t wait = {.kind        = CUDA_STANDIN_OP_WAIT,
                              .wait_stream = other->id,
                              .wait_seq    = other->enqueued};

    return cuda_standin_stream_push(stream, &wait);
}

/* The legacy default stream waits for all earlier work of blocking streams,
 * and blocking streams wait for its earlier work. */
static CUresult cuda_standin_stream_push_implicit_waits(cuda_standin_stream_t *stream)
{
    struct CUstream_st *s;
    CUresult status = CUDA_SUCCESS;

    if (stream != &cuda_standin_default) {
        if (cuda_standin_stream_blocking(stream) &&
            cuda_standin_stream_pending(&cuda_standin_default)) {
            status = cuda_standin_stream_push_wait(stream, &cuda_standin_default);
        }
        return status;
    }
    for (s = cuda_standin_streams; (s != NULL) && (status == CUDA_SUCCESS); s = s->next) {
        if (cuda_standin_stream_blocking(s) && cuda_standin_stream_pending(s)) {
            status = cuda_standin_stream_push_wait(stream, s);
        }
    }
    return status;
}

CUresult cuda_standin_stream_enqueue(cuda_standin_stream_t *stream, const cuda_standin_op_t *op)
{
    CUresult status = cuda_standin_stream_push_implicit_waits(stream);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    return cuda_standin_stream_push(stream, op);
}

/* --- Running queued work --- */

static void cuda_standin_stream_run_op(const cuda_standin_op_t *op)
{
    cuda_standin_stream_t *other;

    switch (op->kind) {
    case CUDA_STANDIN_OP_COPY:
        (void)cuda_standin_copy_run(op);
        break;
    case CUDA_STANDIN_OP_MEMSET:
        (void)cuda_standin_memset_run(op);
        break;
    case CUDA_STANDIN_OP_KERNEL:
        cuda_standin_kernel_run(op);
        break;
    case CUDA_STANDIN_OP_FREE:
        if (cuda_standin_mem_free_base(op->dst) != CUDA_SUCCESS) {
            cuda_standin_fault(CUDA_ERROR_ILLEGAL_ADDRESS, "cuMemFreeAsync of 0x%lx: not allocated",
                               (unsigned long)op->dst);
        }
        break;
    case CUDA_STANDIN_OP_WAIT:
        other = cuda_standin_stream_by_id(op->wait_stream);
        if (other != NULL) {
            (void)cuda_standin_stream_run_to(other, op->wait_seq);
        }
        break;
    case CUDA_STANDIN_OP_WAIT_VALUE:
    case CUDA_STANDIN_OP_WRITE_VALUE:
        cuda_standin_memop_run(op);
        break;
    case CUDA_STANDIN_OP_MARKER:
        break;
    }
}

/* --- Running queued work on hardware queues (CUDA_STANDIN_CONNECTIONS) --- */

/* Another thread runs an operation of the stream or of op's queue. */
static int cuda_standin_stream_queue_busy(const cuda_standin_stream_t *stream,
                                          const cuda_standin_op_t *op)
{
    return (stream->running && !pthread_equal(stream->runner, pthread_self())) ||
           cuda_standin_hwq_busy(op->hwq);
}

/* MPS: another process's wait ahead of op on the shared queue holds it up;
 * one that does for CUDA_STANDIN_WAIT_VALUE_MS faults as an unmet wait of
 * this process would (and after a fault nothing is held up any more). */
static int cuda_standin_stream_queue_foreign(const cuda_standin_op_t *op, uint64_t *since_ms)
{
    uint64_t now;
    pid_t pid;

    if ((cuda_standin_sticky_error() != CUDA_SUCCESS) || !cuda_standin_hwq_foreign(op, &pid)) {
        *since_ms = 0;
        return 0;
    }
    now = cuda_standin_memop_now_ms();
    if (*since_ms == 0) {
        *since_ms = now;
    } else if (now - *since_ms > (uint64_t)cuda_standin_config.wait_value_ms) {
        cuda_standin_fault(CUDA_ERROR_LAUNCH_TIMEOUT,
                           "hardware queue %u held up by a cuStreamWaitValue of process %d "
                           "for %d ms (CUDA_STANDIN_WAIT_VALUE_MS)",
                           cuda_standin_hwq_index(op->hwq), (int)pid,
                           cuda_standin_config.wait_value_ms);
        return 0;
    }
    return 1;
}

static int cuda_standin_stream_run_queued(cuda_standin_stream_t *stream, uint64_t seq, int poll);

/* Whether op would block now: a wait not met, or a WAIT on work that
 * cannot run now (which runs what it can of that work). */
static int cuda_standin_stream_queue_would_block(const cuda_standin_op_t *op)
{
    cuda_standin_stream_t *other;

    if (op->kind == CUDA_STANDIN_OP_WAIT_VALUE) {
        return !cuda_standin_memop_ready(op);
    }
    if (op->kind == CUDA_STANDIN_OP_WAIT) {
        other = cuda_standin_stream_by_id(op->wait_stream);
        return (other != NULL) && cuda_standin_stream_run_queued(other, op->wait_seq, 1);
    }
    return 0;
}

/* The stream's work up to seq, each operation after the earlier ones of
 * its hardware queue (whichever stream queued them), run with its stream
 * and queue taken: an operation that waits holds both.  `poll` (a query,
 * the seeded order): where that would block, stop and return 1 instead,
 * with what could run run. */
static int cuda_standin_stream_run_queued(cuda_standin_stream_t *stream, uint64_t seq, int poll)
{
    const struct timespec pause = {0, 20000};
    uint64_t since_ms           = 0, earlier_seq;
    cuda_standin_stream_t *earlier;
    cuda_standin_op_t *op;
    int nested_stream, nested_queue;

    while ((stream->head != NULL) && (stream->completed < seq)) {
        op = stream->head;
        if (cuda_standin_stream_queue_busy(stream, op)) {
            if (poll) {
                return 1;
            }
            cuda_standin_lock_pause(&pause);
            continue;
        }
        if (cuda_standin_hwq_earlier(op, &earlier, &earlier_seq)) {
            if (cuda_standin_stream_run_queued(earlier, earlier_seq, poll)) {
                return 1;
            }
            continue;
        }
        if (cuda_standin_stream_queue_foreign(op, &since_ms) ||
            (poll && cuda_standin_stream_queue_would_block(op))) {
            if (poll) {
                return 1;
            }
            cuda_standin_lock_pause(&pause);
            continue;
        }
        nested_stream   = stream->running;
        stream->running = 1;
        stream->runner  = pthread_self();
        nested_queue    = cuda_standin_hwq_take(op->hwq);
        stream->head    = op->next;
        if (stream->head == NULL) {
            stream->tail = NULL;
        }
        cuda_standin_stream_run_op(op);
        stream->completed = op->seq;
        cuda_standin_hwq_release(op->hwq, nested_queue);
        cuda_standin_hwq_done(op);
        stream->running = nested_stream;
        cuda_standin_op_release(op);
        free(op);
    }
    return 0;
}

/* The operation leaves the queue before it runs, so that a WAIT running
 * another stream that waits on this one finds this stream consistent. */
static CUresult cuda_standin_stream_run_to(cuda_standin_stream_t *stream, uint64_t seq)
{
    const struct timespec pause = {0, 20000};
    pthread_t self              = pthread_self();
    int mine                    = stream->running && pthread_equal(stream->runner, self);
    cuda_standin_op_t *op;

    if (cuda_standin_hwq_enabled()) {
        (void)cuda_standin_stream_run_queued(stream, seq, 0);
        return cuda_standin_sticky_error();
    }

    while (stream->running && !mine) {
        cuda_standin_lock_pause(&pause);
    }
    stream->running = 1;
    stream->runner  = self;
    while ((stream->head != NULL) && (stream->completed < seq)) {
        op           = stream->head;
        stream->head = op->next;
        if (stream->head == NULL) {
            stream->tail = NULL;
        }
        cuda_standin_stream_run_op(op);
        stream->completed = op->seq;
        cuda_standin_op_release(op);
        free(op);
    }
    stream->running = mine; /* a nested run of this thread's leaves it running */
    return cuda_standin_sticky_error();
}

/* What a query does: run the stream up to position seq as far as it can
 * go without blocking.  A GPU never makes the host wait on a query, and a
 * stream parked on a cuStreamWaitValue whose condition does not hold yet
 * is simply not done: NOT_READY, with the work before it run. */
static CUresult cuda_standin_stream_run_ready(cuda_standin_stream_t *stream, uint64_t seq)
{
    if (cuda_standin_hwq_enabled()) {
        int blocked     = cuda_standin_stream_run_queued(stream, seq, 1);
        CUresult status = cuda_standin_sticky_error();

        return ((status == CUDA_SUCCESS) && blocked) ? CUDA_ERROR_NOT_READY : status;
    }
    if (stream->running && !pthread_equal(stream->runner, pthread_self()) &&
        (stream->completed < seq)) {
        return CUDA_ERROR_NOT_READY; /* another thread is running it, maybe waiting */
    }
    while ((stream->head != NULL) && (stream->completed < seq)) {
        if ((stream->head->kind == CUDA_STANDIN_OP_WAIT_VALUE) &&
            !cuda_standin_memop_ready(stream->head)) {
            CUresult status = cuda_standin_sticky_error();

            return (status != CUDA_SUCCESS) ? status : CUDA_ERROR_NOT_READY;
        }
        (void)cuda_standin_stream_run_to(stream, stream->head->seq);
    }
    return cuda_standin_sticky_error();
}

CUresult cuda_standin_stream_finish(cuda_standin_stream_t *stream)
{
    return cuda_standin_stream_run_to(stream, stream->enqueued);
}

CUresult cuda_standin_stream_finish_all(void)
{
    struct CUstream_st *s;

    for (s = cuda_standin_streams; s != NULL; s = s->next) {
        (void)cuda_standin_stream_finish(s);
    }
    return cuda_standin_stream_finish(&cuda_standin_default);
}

/* --- Adversarial order (CUDA_STANDIN_ORDER=seed:N) ---
 * A GPU runs queued work whenever it gets to it, not at the host's
 * completion points: in this mode one call in four first runs the head
 * operation of a randomly chosen stream that has work, so work lands at
 * seeded, varying times and independent streams complete in varying order.
 * Each stream still runs in order, and a WAIT still runs what it waits for
 * first.  A WAIT_VALUE whose condition does not hold yet is left alone. */

static uint64_t cuda_standin_order_state;

static uint32_t cuda_standin_order_next(void)
{
    uint64_t x = cuda_standin_order_state;

    if (x == 0) {
        x = 0x9e3779b97f4a7c15ull ^ ((uint64_t)cuda_standin_config.order_seed << 17) ^
            (uint64_t)cuda_standin_pid();
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    cuda_standin_order_state = x;
    return (uint32_t)(x >> 32);
}

void cuda_standin_stream_progress_random(void)
{
    cuda_standin_stream_t *candidates[64];
    struct CUstream_st *s;
    size_t n = 0;

    if ((cuda_standin_order_next() & 3) != 0) {
        return;
    }
    if (cuda_standin_stream_pending(&cuda_standin_default)) {
        candidates[n++] = &cuda_standin_default;
    }
    for (s = cuda_standin_streams; (s != NULL) && (n < 64); s = s->next) {
        if (cuda_standin_stream_pending(s)) {
            candidates[n++] = s;
        }
    }
    if (n == 0) {
        return;
    }
    s = candidates[cuda_standin_order_next() % n];
    if (cuda_standin_hwq_enabled()) {
        (void)cuda_standin_stream_run_queued(s, s->head->seq, 1);
        return;
    }
    if ((s->head != NULL) && (s->head->kind != CUDA_STANDIN_OP_WAIT) &&
        cuda_standin_memop_ready(s->head)) {
        (void)cuda_standin_stream_run_to(s, s->head->seq);
    }
}

/* --- Streams --- */

static CUresult cuda_standin_stream_create(CUstream *phstream, unsigned int flags)
{
    struct CUstream_st *s;

    if ((phstream == NULL) || ((flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0)) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "flags 0x%x", flags);
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    s->magic = CUDA_STANDIN_STREAM_MAGIC;
    s->ctx   = cuda_standin_ctx_current();
    if (cuda_standin_hwq_enabled() && ((s->hwq = cuda_standin_hwq_for_stream(s->ctx)) == NULL)) {
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    s->id                = ++cuda_standin_stream_last_id;
    s->flags             = flags;
    s->next              = cuda_standin_streams;
    cuda_standin_streams = s;
    *phstream            = s;
    cuda_standin_note("stream %p flags 0x%x", (void *)s, flags);
    if (s->hwq != NULL) {
        cuda_standin_note("hardware queue %u", cuda_standin_hwq_index(s->hwq));
    }
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    CUDA_STANDIN_CALL(cuStreamCreate, CUDA_STANDIN_IN_CTX,
                      cuda_standin_stream_create(phStream, Flags));
}

/* The driver lets queued work finish after cuStreamDestroy returns; here it
 * finishes now, which nothing can tell apart. */
static CUresult cuda_standin_stream_destroy(CUstream hstream)
{
    struct CUstream_st **ps;

    for (ps = &cuda_standin_streams; *ps != NULL; ps = &(*ps)->next) {
        if (*ps == hstream) {
            (void)cuda_standin_stream_finish(hstream);
            *ps = hstream->next;
            free(hstream);
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_INVALID_HANDLE, "%p is not a created stream",
                              (void *)hstream);
}

CUresult cuStreamDestroy(CUstream hStream)
{
    CUDA_STANDIN_CALL(cuStreamDestroy, CUDA_STANDIN_IN_CTX, cuda_standin_stream_destroy(hStream));
}

static CUresult cuda_standin_stream_synchronize(CUstream hstream)
{
    cuda_standin_stream_t *stream = NULL;
    CUresult status = cuda_standin_stream_get(hstream, &stream);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    cuda_standin_count(CUDA_STANDIN_COUNT_WAIT);
    return cuda_standin_stream_finish(stream);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    CUDA_STANDIN_CALL(cuStreamSynchronize, CUDA_STANDIN_IN_CTX,
                      cuda_standin_stream_synchronize(hStream));
}

static CUresult cuda_standin_stream_query(CUstream hstream)
{
    cuda_standin_stream_t *stream = NULL;
    CUresult status = cuda_standin_stream_get(hstream, &stream);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!cuda_standin_stream_pending(stream)) {
        return cuda_standin_sticky_error();
    }
    if (stream->query_delay > 0) {
        --stream->query_delay;
        return CUDA_ERROR_NOT_READY;
    }
    return cuda_standin_stream_run_ready(stream, stream->enqueued);
}

CUresult cuStreamQuery(CUstream hStream)
{
    CUDA_STANDIN_CALL(cuStreamQuery, CUDA_STANDIN_IN_CTX, cuda_standin_stream_query(hStream));
}

/* --- Events --- */

static CUresult cuda_standin_event_get(CUevent handle, struct CUevent_st **event_p)
{
    struct CUevent_st *e;

    for (e = cuda_standin_events; e != NULL; e = e->next) {
        if (e == handle) {
            *event_p = e;
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_INVALID_HANDLE, "%p is not an event", (void *)handle);
}

/* Never recorded, or its stream ran past the record (or is gone). */
static int cuda_standin_event_done(const struct CUevent_st *event)
{
    cuda_standin_stream_t *stream = NULL;

    if (!event->recorded) {
        return 1;
    }
    stream = cuda_standin_stream_by_id(event->stream_id);
    return (stream == NULL) || (stream->completed >= event->seq);
}

static CUresult cuda_standin_event_create(CUevent *phevent, unsigned int flags)
{
    const unsigned valid = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    struct CUevent_st *e;

    if ((phevent == NULL) || ((flags & ~valid) != 0) ||
        ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "flags 0x%x", flags);
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e->magic            = CUDA_STANDIN_EVENT_MAGIC;
    e->flags            = flags;
    e->next             = cuda_standin_events;
    cuda_standin_events = e;
    *phevent            = e;
    return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUDA_STANDIN_CALL(cuEventCreate, CUDA_STANDIN_IN_CTX,
                      cuda_standin_event_create(phEvent, Flags));
}

static CUresult cuda_standin_event_destroy(CUevent hevent)
{
    struct CUevent_st **pe;

    for (pe = &cuda_standin_events; *pe != NULL; pe = &(*pe)->next) {
        if (*pe == hevent) {
            *pe = hevent->next;
            free(hevent);
            return CUDA_SUCCESS;
        }
    }
    return cuda_standin_error(CUDA_ERROR_INVALID_HANDLE, "%p is not an event", (void *)hevent);
}

CUresult cuEventDestroy(CUevent hEvent)
{
    CUDA_STANDIN_CALL(cuEventDestroy, CUDA_STANDIN_IN_CTX, cuda_standin_event_destroy(hEvent));
}

/* The event captures the stream's position: a marker queued after all its
 * earlier work (and, on the default stream, the implicit waits). */
static CUresult cuda_standin_event_record(CUevent hevent, CUstream hstream)
{
    const cuda_standin_op_t marker = {.kind = CUDA_STANDIN_OP_MARKER};
    cuda_standin_stream_t *stream = NULL;
    struct CUevent_st *event = NULL;
    CUresult status;

    status = cuda_standin_event_get(hevent, &event);
    if (status == CUDA_SUCCESS) {
        status = cuda_standin_stream_get(hstream, &stream);
    }
    if (status == CUDA_SUCCESS) {
        status = cuda_standin_stream_enqueue(stream, &marker);
    }
    if (status != CUDA_SUCCESS) {
        return status;
    }
    event->recorded    = 1;
    event->stream_id   = stream->id;
    event->seq         = stream->enqueued;
    event->query_delay = cuda_standin_config.query_delay;
    cuda_standin_note("event %p at stream %p position %llu", (void *)event, (void *)hstream,
                      (unsigned long long)event->seq);
    return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    CUDA_STANDIN_CALL(cuEventRecord, CUDA_STANDIN_IN_CTX,
                      cuda_standin_event_record(hEvent, hStream));
}

static CUresult cuda_standin_event_finish(struct CUevent_st *event)
{
    cuda_standin_stream_t *stream = NULL;

    if (cuda_standin_event_done(event)) {
        return cuda_standin_sticky_error();
    }
    stream = cuda_standin_stream_by_id(event->stream_id);
    return cuda_standin_stream_run_to(stream, event->seq);
}

static CUresult cuda_standin_event_query(CUevent hevent)
{
    struct CUevent_st *event = NULL;
    CUresult status = cuda_standin_event_get(hevent, &event);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!cuda_standin_event_done(event) && (event->query_delay > 0)) {
        --event->query_delay;
        return CUDA_ERROR_NOT_READY;
    }
    if (!cuda_standin_event_done(event)) {
        cuda_standin_stream_t *stream = cuda_standin_stream_by_id(event->stream_id);

        if (stream != NULL) {
            return cuda_standin_stream_run_ready(stream, event->seq);
        }
    }
    return cuda_standin_event_finish(event);
}

CUresult cuEventQuery(CUevent hEvent)
{
    CUDA_STANDIN_CALL(cuEventQuery, CUDA_STANDIN_IN_CTX, cuda_standin_event_query(hEvent));
}

static CUresult cuda_standin_event_synchronize(CUevent hevent)
{
    struct CUevent_st *event = NULL;
    CUresult status = cuda_standin_event_get(hevent, &event);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    cuda_standin_count(CUDA_STANDIN_COUNT_WAIT);
    return cuda_standin_event_finish(event);
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    CUDA_STANDIN_CALL(cuEventSynchronize, CUDA_STANDIN_IN_CTX,
                      cuda_standin_event_synchronize(hEvent));
}

/* Later work of the stream waits for the event's position as of now. */
static CUresult cuda_standin_stream_wait_event(CUstream hstream, CUevent hevent, unsigned int flags)
{
    cuda_standin_op_t wait = {.kind = CUDA_STANDIN_OP_WAIT};
    cuda_standin_stream_t *stream = NULL;
    struct CUevent_st *event = NULL;
    CUresult status;

    if ((flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL) != 0) {
        return cuda_standin_error(CUDA_ERROR_INVALID_VALUE, "flags 0x%x", flags);
    }
    status = cuda_standin_stream_get(hstream, &stream);
    if (status == CUDA_SUCCESS) {
        status = cuda_standin_event_get(hevent, &event);
    }
    if ((status != CUDA_SUCCESS) || cuda_standin_event_done(event)) {
        return status;
    }
    wait.wait_stream = event->stream_id;
    wait.wait_seq    = event->seq;
    return cuda_standin_stream_enqueue(stream, &wait);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    CUDA_STANDIN_CALL(cuStreamWaitEvent, CUDA_STANDIN_IN_CTX,
                      cuda_standin_stream_wait_event(hStream, hEvent, Flags));
}

static CUresult cuda_standin_ctx_synchronize(void)
{
    cuda_standin_count(CUDA_STANDIN_COUNT_WAIT);
    return cuda_standin_stream_finish_all();
}

CUresult cuCtxSynchronize(void)
{
    CUDA_STANDIN_CALL(cuCtxSynchronize, CUDA_STANDIN_IN_CTX, cuda_standin_ctx_synchronize());
}

/* --- Fork child: queued work belongs to the parent. --- */

static void cuda_standin_stream_drop_ops(cuda_standin_stream_t *stream)
{
    cuda_standin_op_t *op;

    while (stream->head != NULL) {
        op           = stream->head;
        stream->head = op->next;
        cuda_standin_op_release(op);
        free(op);
    }
    stream->tail = NULL;
}

void cuda_standin_stream_forget(void)
{
    struct CUstream_st *s;
    struct CUevent_st *e;

    while (cuda_standin_streams != NULL) {
        s                    = cuda_standin_streams;
        cuda_standin_streams = s->next;
        cuda_standin_stream_drop_ops(s);
        free(s);
    }
    while (cuda_standin_events != NULL) {
        e                   = cuda_standin_events;
        cuda_standin_events = e->next;
        free(e);
    }
    cuda_standin_stream_drop_ops(&cuda_standin_default);
    cuda_standin_hwq_forget();
    cuda_standin_default.enqueued    = 0;
    cuda_standin_default.completed   = 0;
    cuda_standin_default.query_delay = 0;
}
