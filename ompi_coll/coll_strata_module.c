/*
 * coll/strata module: per-communicator query, enable, the fallback table and
 * the lazy set-up of strata's own algorithms.
 *
 * Open MPI stacks coll modules: each enabled module overwrites the function
 * pointers it implements, in priority order.  Strata is enabled after the
 * modules below it, so in module_enable it saves (and retains) the function
 * of every collective it installs as it stands then: the one that would
 * have run without strata.  A collective with nothing below it is not
 * installed.  Sub-communicators are never created here: doing so inside
 * comm_query/module_enable re-enters coll selection and deadlocks
 * MPI_Comm_dup.
 */
#include "coll_strata.h"
#include "colls/coll_strata_colls.h"
#include "staging/coll_strata_stage.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"

/*
 * The engine's view of the module below strata (engine/coll_strata_engine.h):
 * its set-up agreements through the saved functions, and the op functions
 * for host data.
 */
static int mca_coll_strata_module_below_allreduce(void *ctx, struct ompi_communicator_t *comm,
                                                  const void *sbuf, void *rbuf, int count,
                                                  struct ompi_datatype_t *dtype,
                                                  struct ompi_op_t *op)
{
    mca_coll_strata_module_t *module = ctx;

    return MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, sbuf, rbuf, count, dtype, op);
}

static int mca_coll_strata_module_below_allgather(void *ctx, struct ompi_communicator_t *comm,
                                                  const void *sbuf, int scount,
                                                  struct ompi_datatype_t *sdtype, void *rbuf,
                                                  int rcount, struct ompi_datatype_t *rdtype)
{
    mca_coll_strata_module_t *module = ctx;

    return MCA_COLL_STRATA_FALLBACK(module, allgather, comm, sbuf, scount, sdtype, rbuf, rcount,
                                    rdtype);
}

/*
 * dst = src op dst for n host elements.  PMPI_Reduce_local checks its
 * arguments, retains the op and the datatype, and reaches the op through
 * MPI_COMM_SELF's reduce_local, which is strata's own (it stages device
 * buffers): for host data strata calls the function below its own
 * directly, the same op function without the detour.
 */
static int mca_coll_strata_module_below_reduce_local(void *ctx, struct ompi_op_t *op,
                                                     const void *src, void *dst, int n,
                                                     struct ompi_datatype_t *dtype)
{
    mca_coll_base_comm_coll_t *self = ompi_mpi_comm_self.comm.c_coll;

    (void)ctx;
    if (OPAL_LIKELY(mca_coll_strata_reduce_local == self->coll_reduce_local)) {
        mca_coll_strata_module_t *m = (mca_coll_strata_module_t *)self->coll_reduce_local_module;

        return m->fallback.reduce_local(src, dst, n, dtype, op, m->fallback.reduce_local_module);
    }
    return PMPI_Reduce_local(src, dst, n, dtype, op);
}

static const mca_coll_strata_engine_below_t mca_coll_strata_module_below = {
    .allreduce = mca_coll_strata_module_below_allreduce,
    .allgather = mca_coll_strata_module_below_allgather,
    .reduce_local = mca_coll_strata_module_below_reduce_local,
};

static void mca_coll_strata_module_construct(mca_coll_strata_module_t *module)
{
    memset(&module->fallback, 0, sizeof(module->fallback));
    memset(&module->bounce, 0, sizeof(module->bounce));
    module->setup = MCA_COLL_STRATA_SETUP_NONE;
    /* until the first collective that reads them agrees them */
    module->settings = mca_coll_strata_component.settings;
    module->settings_agreed = false;
    module->decision = module->settings.decision;
    mca_coll_strata_engine_init(&module->engine, &mca_coll_strata_module_below, module,
                                mca_coll_strata_component.shm_dir,
                                mca_coll_strata_component.device_network);
    memset(module->ar_cache, 0, sizeof(module->ar_cache));
    module->compress_info = module->compress_agreed = MCA_COLL_STRATA_COMPRESS_UNSET;
    module->compress_epoch = module->compress_agreed_epoch = 0;
}

#define MCA_COLL_STRATA_FALLBACK_RELEASE(_coll) \
    if (NULL != module->fallback._coll##_module) { \
        OBJ_RELEASE(module->fallback._coll##_module); \
        module->fallback._coll##_module = NULL; \
    } \
    module->fallback._coll = NULL;

static void mca_coll_strata_module_forget(mca_coll_strata_module_t *module);

static void mca_coll_strata_module_destruct(mca_coll_strata_module_t *module)
{
    mca_coll_strata_module_forget(module);
    mca_coll_strata_engine_release(&module->engine);
    mca_coll_strata_stage_release(module);
    MCA_COLL_STRATA_FOREACH_COLL(MCA_COLL_STRATA_FALLBACK_RELEASE)
}

OBJ_CLASS_INSTANCE(mca_coll_strata_module_t, mca_coll_base_module_t,
                   mca_coll_strata_module_construct, mca_coll_strata_module_destruct);

int mca_coll_strata_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    mca_coll_strata_component_set_priority();
    return OMPI_SUCCESS;
}

/* Save what runs below strata for one collective; with nothing there (or
 * only strata itself), strata does not install that collective either. */
#define MCA_COLL_STRATA_FALLBACK_SAVE(_coll) \
    if (NULL != comm->c_coll->coll_##_coll && NULL != comm->c_coll->coll_##_coll##_module && \
        base != comm->c_coll->coll_##_coll##_module) { \
        module->fallback._coll = comm->c_coll->coll_##_coll; \
        module->fallback._coll##_module = comm->c_coll->coll_##_coll##_module; \
        OBJ_RETAIN(module->fallback._coll##_module); \
    } else { \
        module->super.coll_##_coll = NULL; \
        MCA_COLL_STRATA_VERBOSE(10, "%s: no " #_coll " below strata; not installing it", \
                                comm->c_name); \
    }

/*
 * The info key strata_compress (compression between nodes on this
 * communicator: none, bf16, fp16, fp8).  Open MPI keeps a key that
 * MPI_Comm_set_info gives only where a component subscribed to it: then
 * MPI_Comm_get_info returns it as set.  The callback notes the value in
 * the communicator's module (found through the list below: the callback
 * is given only the communicator) and counts the setting; the ranks
 * compare their values at the next call that could compress
 * (colls/coll_strata_reduction.c).  An unknown value is reported here, by
 * the communicator's rank 0, and kept; its calls stay exact.  No value
 * (""): the key stays unset, coll_strata_compress applies.
 */
typedef struct mca_coll_strata_module_entry_t {
    struct ompi_communicator_t *comm;
    mca_coll_strata_module_t *module;
    struct mca_coll_strata_module_entry_t *next;
} mca_coll_strata_module_entry_t;

static struct {
    pthread_mutex_t lock;
    mca_coll_strata_module_entry_t *head;
} mca_coll_strata_modules = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void mca_coll_strata_module_remember(mca_coll_strata_module_t *module,
                                            struct ompi_communicator_t *comm)
{
    mca_coll_strata_module_entry_t *e = malloc(sizeof(*e));

    if (NULL == e) {
        return; /* the key then never reaches this module: its calls stay exact */
    }
    e->comm = comm;
    e->module = module;
    pthread_mutex_lock(&mca_coll_strata_modules.lock);
    e->next = mca_coll_strata_modules.head;
    mca_coll_strata_modules.head = e;
    pthread_mutex_unlock(&mca_coll_strata_modules.lock);
}

static void mca_coll_strata_module_forget(mca_coll_strata_module_t *module)
{
    mca_coll_strata_module_entry_t **link, *e;

    pthread_mutex_lock(&mca_coll_strata_modules.lock);
    for (link = &mca_coll_strata_modules.head; NULL != (e = *link);) {
        if (e->module == module) {
            *link = e->next;
            free(e);
        } else {
            link = &e->next;
        }
    }
    pthread_mutex_unlock(&mca_coll_strata_modules.lock);
}

static mca_coll_strata_info_str_t
mca_coll_strata_module_compress_info(opal_infosubscriber_t *obj, mca_coll_strata_info_str_t key,
                                     mca_coll_strata_info_str_t value)
{
    struct ompi_communicator_t *comm = (struct ompi_communicator_t *)obj;
    mca_coll_strata_codec_t codec = MCA_COLL_STRATA_CODEC_NONE;
    int noted = MCA_COLL_STRATA_COMPRESS_UNSET;

    if (NULL != value && '\0' != value[0]) {
        noted = mca_coll_strata_codec_parse(value, &codec) ? (int)codec
                                                           : MCA_COLL_STRATA_COMPRESS_UNKNOWN;
        if (MCA_COLL_STRATA_COMPRESS_UNKNOWN == noted && 0 == ompi_comm_rank(comm)) {
            opal_output(0,
                        "coll:strata: warning: %s: info key %s=\"%s\" is not none, bf16, fp16 or "
                        "fp8: its calls stay exact",
                        comm->c_name, key, value);
        }
    }
    pthread_mutex_lock(&mca_coll_strata_modules.lock);
    for (mca_coll_strata_module_entry_t *e = mca_coll_strata_modules.head; NULL != e; e = e->next) {
        if (e->comm == comm) {
            e->module->compress_info = noted;
            __atomic_add_fetch(&e->module->compress_epoch, 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&mca_coll_strata_modules.lock);
    return (MCA_COLL_STRATA_COMPRESS_UNSET == noted) ? NULL : value;
}

static int mca_coll_strata_module_enable(mca_coll_base_module_t *base,
                                         struct ompi_communicator_t *comm)
{
    mca_coll_strata_module_t *module = (mca_coll_strata_module_t *)base;
    static char compress_key[] = MCA_COLL_STRATA_INFO_COMPRESS, unset[] = "";

    MCA_COLL_STRATA_FOREACH_COLL(MCA_COLL_STRATA_FALLBACK_SAVE)
    /* set-up and pieces agree through the first two; set-up hands the
     * network figures round with the third */
    if (NULL == module->fallback.allreduce || NULL == module->fallback.allgather ||
        NULL == module->fallback.bcast) {
        MCA_COLL_STRATA_VERBOSE(10,
                                "%s: no allreduce/allgather/bcast below strata to build on; "
                                "not enabling",
                                comm->c_name);
        return OMPI_ERROR;
    }
    mca_coll_strata_module_remember(module, comm);
    (void)opal_infosubscribe_subscribe(&comm->super, compress_key, unset,
                                       mca_coll_strata_module_compress_info);
    return OMPI_SUCCESS;
}

/*
 * The communicator is going (mca_coll_base_comm_unselect, once for every slot
 * strata holds): let go of the modules below strata now rather than when
 * strata's own last reference goes, so that no module is kept alive by
 * another one past its communicator.  The destructor releases whatever is
 * left, for a module that was never enabled.
 */
static int mca_coll_strata_module_disable(mca_coll_base_module_t *base,
                                          struct ompi_communicator_t *comm)
{
    mca_coll_strata_module_t *module = (mca_coll_strata_module_t *)base;

    mca_coll_strata_module_forget(module);
    MCA_COLL_STRATA_FOREACH_COLL(MCA_COLL_STRATA_FALLBACK_RELEASE)
    return OMPI_SUCCESS;
}

#define MCA_COLL_STRATA_INSTALL(_coll) module->super.coll_##_coll = mca_coll_strata_##_coll;

mca_coll_base_module_t *mca_coll_strata_comm_query(struct ompi_communicator_t *comm,
                                                   int *priority)
{
    mca_coll_strata_module_t *module;

    *priority = mca_coll_strata_component.priority_used;
    if (*priority <= 0) {
        MCA_COLL_STRATA_VERBOSE(30, "%s: priority %d, switched off", comm->c_name,
                                *priority);
        return NULL;
    }
    /* One-rank communicators too: device buffers on MPI_COMM_SELF need
     * staging as much as anywhere. */
    if (OMPI_COMM_IS_INTER(comm)) {
        MCA_COLL_STRATA_VERBOSE(30, "%s: intercommunicator, not handled", comm->c_name);
        return NULL;
    }

    /* what communicators freed earlier could not free yet */
    mca_coll_strata_node_device_reap(0.0);
    module = OBJ_NEW(mca_coll_strata_module_t);
    if (NULL == module) {
        return NULL;
    }
    module->super.coll_module_enable = mca_coll_strata_module_enable;
    module->super.coll_module_disable = mca_coll_strata_module_disable;
    MCA_COLL_STRATA_FOREACH_BLOCKING(MCA_COLL_STRATA_INSTALL)
    if (mca_coll_strata_stage_req_layout_ok()) {
        MCA_COLL_STRATA_FOREACH_NONBLOCKING(MCA_COLL_STRATA_INSTALL)
#if OMPI_MAJOR_VERSION >= 5
        /* the persistent forms of what the pipeline runs (the others stay
         * with the module below: Open MPI fills what strata leaves empty) */
        MCA_COLL_STRATA_INSTALL(allreduce_init)
        MCA_COLL_STRATA_INSTALL(reduce_init)
        MCA_COLL_STRATA_INSTALL(reduce_scatter_block_init)
        MCA_COLL_STRATA_INSTALL(reduce_scatter_init)
        MCA_COLL_STRATA_INSTALL(bcast_init)
        MCA_COLL_STRATA_INSTALL(allgather_init)
#endif
    } else {
        static bool warned = false;

        if (!warned) {
            warned = true;
            opal_output(0, "coll:strata: warning: this Open MPI's nonblocking collective "
                        "request is not the one strata was built for; nonblocking collectives "
                        "are left to the component below strata (no device buffers there)");
        }
    }

    MCA_COLL_STRATA_VERBOSE(10, "%s: selected for %d ranks (priority %d)",
                            comm->c_name, ompi_comm_size(comm), *priority);
    return &module->super;
}
