/*
 * coll/strata comm: what a communicator runs with.  The module (one per
 * communicator strata is stacked on): the saved functions of the modules
 * below it and how to call them, the settings agreed across its ranks
 * (coll_strata_settings.c), the network figures of its cost model
 * (coll_strata_network.c), the lazy set-up of strata's own algorithms
 * (coll_strata_setup.c), the engine it drives and the staging buffer it
 * keeps.  The component (coll_strata.h, above) makes modules; colls/ and
 * staging/ (above too) run calls on them.
 *
 * May include: base/, engine/ and logic/'s interfaces, Open MPI's coll
 * framework.  Nothing of colls/, staging/ or the top (coll_strata.h).
 */
#ifndef MCA_COLL_STRATA_MODULE_H
#define MCA_COLL_STRATA_MODULE_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

#include "../base/coll_strata_log.h"
#include "../base/coll_strata_op.h"
#include "../base/coll_strata_settings.h"
#include "../engine/coll_strata_engine.h"
#include "../logic/coll_strata_logic.h"

BEGIN_C_DECLS

/*
 * Every collective strata installs, blocking then nonblocking.  One list, so
 * saving, installing and releasing the fallback cannot miss one.
 */
/* clang-format off */
#define MCA_COLL_STRATA_FOREACH_BLOCKING(_X) \
    _X(allgather) _X(allgatherv) _X(allreduce) _X(alltoall) _X(alltoallv) _X(alltoallw) \
    _X(bcast) _X(exscan) _X(gather) _X(gatherv) _X(reduce) _X(reduce_scatter) \
    _X(reduce_scatter_block) _X(scan) _X(scatter) _X(scatterv) _X(reduce_local)
#define MCA_COLL_STRATA_FOREACH_NONBLOCKING(_X) \
    _X(iallgather) _X(iallgatherv) _X(iallreduce) _X(ialltoall) _X(ialltoallv) \
    _X(ialltoallw) _X(ibcast) _X(iexscan) _X(igather) _X(igatherv) _X(ireduce) \
    _X(ireduce_scatter) _X(ireduce_scatter_block) _X(iscan) _X(iscatter) _X(iscatterv)
/* clang-format on */
#define MCA_COLL_STRATA_FOREACH_COLL(_X) \
    MCA_COLL_STRATA_FOREACH_BLOCKING(_X) MCA_COLL_STRATA_FOREACH_NONBLOCKING(_X)

#define MCA_COLL_STRATA_FALLBACK_FIELD(_coll) \
    mca_coll_base_module_##_coll##_fn_t _coll; \
    mca_coll_base_module_t *_coll##_module;

/*
 * The functions of the modules that ran before strata was stacked on top of
 * a communicator, saved (and retained) in module_enable: strata hands them
 * every call it does not run itself, and the host copies of staged calls.
 * None points back at strata.
 */
typedef struct mca_coll_strata_fallback_t {
    MCA_COLL_STRATA_FOREACH_COLL(MCA_COLL_STRATA_FALLBACK_FIELD)
} mca_coll_strata_fallback_t;

/*
 * Call the saved function of collective `_coll` on `_comm`: `...` are its
 * arguments before the communicator (IFALLBACK: nonblocking, the request
 * after it).  For the length of the call the communicator's slot of that
 * collective shows the module below strata, as if strata were not stacked:
 * a module that hands calls on by calling the communicator's own function
 * (coll/han does, when it declines a communicator) would otherwise call
 * strata again, and strata it, without end.  coll/han also replaces itself
 * in that slot, once, with the module below it, taking over the slot's
 * reference to itself; strata then adopts the replacement as its saved
 * function, as Open MPI would have done without strata.  Afterwards the
 * slot shows again what it showed before (strata, or a module stacked
 * above strata).  MPI allows one collective at a time per communicator, so
 * nobody else looks at the slot meanwhile.
 */
#define MCA_COLL_STRATA_BELOW(_mod, _coll, _comm, _invoke) \
    ({ \
        mca_coll_strata_module_t *_sm = (_mod); \
        mca_coll_base_comm_coll_t *_cc = (_comm)->c_coll; \
        __typeof__(_cc->coll_##_coll) _top = _cc->coll_##_coll; \
        mca_coll_base_module_t *_top_module = _cc->coll_##_coll##_module; \
        int _rc; \
        _cc->coll_##_coll = _sm->fallback._coll; \
        _cc->coll_##_coll##_module = _sm->fallback._coll##_module; \
        _rc = (_invoke); \
        if (OPAL_UNLIKELY(_cc->coll_##_coll##_module != _sm->fallback._coll##_module)) { \
            _sm->fallback._coll = _cc->coll_##_coll; \
            _sm->fallback._coll##_module = _cc->coll_##_coll##_module; \
        } \
        _cc->coll_##_coll = _top; \
        _cc->coll_##_coll##_module = _top_module; \
        _rc; \
    })

#define MCA_COLL_STRATA_FALLBACK(_mod, _coll, _comm, ...) \
    MCA_COLL_STRATA_BELOW(_mod, _coll, _comm, \
                          _sm->fallback._coll(__VA_ARGS__, (_comm), _sm->fallback._coll##_module))

#define MCA_COLL_STRATA_IFALLBACK(_mod, _coll, _comm, _request, ...) \
    MCA_COLL_STRATA_BELOW( \
        _mod, _coll, _comm, \
        _sm->fallback._coll(__VA_ARGS__, (_comm), (_request), _sm->fallback._coll##_module))

/* The pinned host buffer a communicator keeps for staging. */
typedef struct mca_coll_strata_bounce_cache_t {
    char *mem;
    size_t size;
    bool pinned; /* cuMemHostAlloc (else malloc: pinning failed) */
    bool busy;   /* lent to a call in progress (atomic) */
    int ordinal; /* device whose context allocated it */
} mca_coll_strata_bounce_cache_t;

/* The info key that chooses a communicator's compression between nodes
 * (coll_strata_compress's values; coll_strata_module.c subscribes to it). */
#define MCA_COLL_STRATA_INFO_COMPRESS "strata_compress"

/*
 * The allreduce decisions of the last few host calls, per (count, datatype,
 * op): what a code's loop of dot products and norms asks again and again
 * skips the argument checks and the cost model.  Only calls strata's checks
 * passed with a predefined datatype and op are kept: those objects are
 * static, so an address names the same thing for the whole run (a freed
 * user op's address may come back as another op).  Everything else the
 * decision reads is fixed once the communicator is set up.  Collectives on
 * one communicator are ordered by MPI, so no lock.  Direct-mapped by count.
 */
#define MCA_COLL_STRATA_AR_CACHE_SIZE 4

typedef struct mca_coll_strata_ar_cached_t {
    int count; /* 0: empty (a count of 0 never reaches a decision) */
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    mca_coll_strata_decision_t decision;
} mca_coll_strata_ar_cached_t;

typedef struct mca_coll_strata_module_t {
    mca_coll_base_module_t super;
    mca_coll_strata_fallback_t fallback;
    mca_coll_strata_bounce_cache_t bounce;
    mca_coll_strata_setup_state_t setup;
    /* the settings this communicator runs with, agreed across its ranks
     * (settings_agreed) at its first collective that reads one */
    mca_coll_strata_settings_t settings;
    bool settings_agreed;
    /* the settings' decision knobs, with the network figures this
     * communicator's cost model uses: configured, or measured at set-up
     * (bitwise the same on every rank: coll_strata_network.c) */
    mca_coll_strata_decision_params_t decision;
    /* the pipeline's state: topology, node areas, exchanges (engine/) */
    mca_coll_strata_engine_t engine;
    mca_coll_strata_ar_cached_t ar_cache[MCA_COLL_STRATA_AR_CACHE_SIZE];
    /* The info key strata_compress on this communicator, as this rank was
     * given it (MCA_COLL_STRATA_COMPRESS_* or a codec), and how many times
     * it was set: MPI_Comm_set_info is collective, so every rank counts
     * alike.  compress_agreed: the value every rank had at the last count
     * the ranks compared (colls/coll_strata_reduction.c), or
     * MCA_COLL_STRATA_COMPRESS_DIFFERS. */
    int compress_info;
    unsigned compress_epoch, compress_agreed_epoch;
    int compress_agreed;
} mca_coll_strata_module_t;

#define MCA_COLL_STRATA_COMPRESS_UNSET   (-1) /* no key: coll_strata_compress applies */
#define MCA_COLL_STRATA_COMPRESS_UNKNOWN (-2) /* not a format's name: exact */
#define MCA_COLL_STRATA_COMPRESS_DIFFERS (-3) /* the ranks were given different values: exact */

OBJ_CLASS_DECLARATION(mca_coll_strata_module_t);

/* coll_strata_settings.c: module->settings, agreed across comm (collective:
 * every rank calls it at the same collective, the first one on comm that
 * reads a setting; cheap once agreed).  Where ranks' values differ, rank 0
 * names the setting (once per process) and every rank takes rank 0's.
 * Returns an error only when the agreement's own allreduce failed (the
 * module then runs with this process's values). */
int mca_coll_strata_settings_agree(mca_coll_strata_module_t *module,
                                   struct ompi_communicator_t *comm);

static inline int mca_coll_strata_settings_ready(mca_coll_strata_module_t *module,
                                                 struct ompi_communicator_t *comm)
{
    return OPAL_LIKELY(module->settings_agreed) ? OMPI_SUCCESS
                                                : mca_coll_strata_settings_agree(module, comm);
}

/* coll_strata_settings.c: the figures derived from a settings' configured
 * ones (the decision's alpha, beta, gamma, overhead): after the component's
 * parameters are read, and after an agreement replaced some of them */
void mca_coll_strata_settings_derive(mca_coll_strata_settings_t *settings);

/* coll_strata_setup.c: true when strata's own algorithms may run on comm
 * (sets them up on first use; false while that set-up is in progress and
 * after it failed, which every rank agrees on). */
bool mca_coll_strata_module_ready(mca_coll_strata_module_t *module,
                                  struct ompi_communicator_t *comm, const char **why);

/* coll_strata_network.c: module->decision with the network figures of the
 * cost model (configured, measured or cached); part of the set-up, so
 * collective over comm.  Returns an error when a broadcast failed. */
int mca_coll_strata_network_setup(mca_coll_strata_module_t *module,
                                  struct ompi_communicator_t *comm);

END_C_DECLS

#endif /* MCA_COLL_STRATA_MODULE_H */
