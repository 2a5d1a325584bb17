/*
 * Strata's adapter to the Open MPI it is built against (4.1.x and 5.0.x):
 * what coll/strata and hook/strata need of Open MPI that the installed
 * headers cannot give, and every difference between the two series.  Both
 * plugins include this file; nothing else in them tests OMPI_MAJOR_VERSION.
 *
 *                          Open MPI 4.1              Open MPI 5.0
 *   coll component         2.0.0 (module 2.3.0)      2.4.0 (module 2.4.0)
 *   nonblocking request    data: two objects         data: objects or vectors,
 *                                                    plus arrays freed at completion
 *   hook DSO post_opal     before pml selection      after pml selection
 *   coll/han               priority 0 (off)          priority 35 (on)
 *   component export       OMPI_MODULE_DECLSPEC      OMPI_DECLSPEC
 *   opal mutexes           opal/threads/mutex.h      opal/mca/threads/mutex.h
 *
 * Module enable/disable and comm->c_coll are the same in both: each calls
 * coll_module_enable before copying a module's functions in, and
 * coll_module_disable once per slot the module holds when a communicator
 * goes (mca_coll_base_comm_unselect).
 */
#ifndef MCA_COLL_STRATA_OMPI_H
#define MCA_COLL_STRATA_OMPI_H

#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>

#include "mpi.h"
#include "ompi/constants.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

#if OMPI_MAJOR_VERSION >= 5
#define MCA_COLL_STRATA_OMPI_5 1
#else
#define MCA_COLL_STRATA_OMPI_5 0
#endif

/* OPAL's threads moved into a framework (opal/mca/threads) in 5.0. */
#if MCA_COLL_STRATA_OMPI_5
#include "opal/mca/threads/mutex.h"
#else
#include "opal/threads/mutex.h"
#endif

/* Visibility of a component's structure, the one symbol a plugin exports
 * (it is built with -fvisibility=hidden): 5.0 has no OMPI_MODULE_DECLSPEC. */
#if MCA_COLL_STRATA_OMPI_5
#define MCA_STRATA_OMPI_COMPONENT_EXPORT OMPI_DECLSPEC
#else
#define MCA_STRATA_OMPI_COMPONENT_EXPORT OMPI_MODULE_DECLSPEC
#endif

/* The version of the coll component structure (ompi/mca/coll/coll.h). */
#if MCA_COLL_STRATA_OMPI_5
#define MCA_COLL_STRATA_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#else
#define MCA_COLL_STRATA_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#endif

/*
 * hook/strata must load libuct_strata into UCX before pml/ucx calls
 * ucp_init.  Open MPI 4.1 calls a DSO hook's mpi_init_top_post_opal before
 * pml selection; 5.0 calls it only after the pml is selected (instance
 * init), but opens the hook framework before the pml's, so there the load
 * happens in the component's open callback.
 */
#define MCA_HOOK_STRATA_LOAD_AT_OPEN MCA_COLL_STRATA_OMPI_5

/*
 * A nonblocking collective's request.  MPI_I* calls treat the request a coll
 * module returns as an ompi_coll_base_nbc_request_t: they keep the derived
 * datatypes and user ops of the call alive by storing them in its `data` and
 * chaining a completion callback (coll_base_util.c, ompi_coll_base_retain_*),
 * and they read the communicator from req_mpi_object.  That structure is
 * declared in coll/base/coll_base_util.h, which includes ompi/op/op.h, which
 * includes a Fortran header (ompi/mpi/fortran/base/fint_2_int.h) neither
 * Debian 12's nor Debian 13's development package ships.  So its layout is
 * restated here, and its class (exported by libmpi) is named for OBJ_NEW;
 * coll/strata compares the class's size with this one before it installs a
 * nonblocking collective.  Strata never touches `data`: Open MPI's
 * constructor and callbacks do.
 */
typedef struct mca_coll_strata_nbc_request_t {
    ompi_request_t super;
    union {
        ompi_request_complete_fn_t req_complete_cb;
        ompi_request_free_fn_t req_free;
    } cb;
    void *req_complete_cb_data;
#if MCA_COLL_STRATA_OMPI_5
    struct {
        union {
            void *objs[2]; /* op/datatype, two datatypes */
            struct {
                void *stypes, *rtypes;
                int scount, rcount;
            } vecs;
        } refcounted;
        /* OMPI_REQ_NB_RELEASE_ARRAYS: temporary arrays freed at completion */
        void *release_arrays[7];
    } data;
#else
    union {
        void *objs[2]; /* op/datatype, two datatypes, or two datatype vectors */
    } data;
#endif
} mca_coll_strata_nbc_request_t;

/* OBJ_CLASS(ompi_coll_base_nbc_request_t) */
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;

/*
 * Open MPI checks only the MCA base version when it loads a DSO component:
 * a plugin built against another Open MPI's headers loads, and then misreads
 * its structures.  So each Strata plugin compares, when it registers, the
 * Open MPI it runs in (libmpi's own version, valid before MPI_Init) with the
 * headers it was built against (the same version configure recorded as
 * STRATA_BUILT_OMPI_VERSION), major and minor, and refuses to register
 * otherwise.  Open MPI then unloads it and the job runs without it.
 *
 * STRATA_TEST_OMPI_RUNNING_VERSION ("major.minor.release"), a knob for
 * Strata's own tests only, stands in for the running version.
 */
#define MCA_STRATA_OMPI_STR2(_x) #_x
#define MCA_STRATA_OMPI_STR(_x)  MCA_STRATA_OMPI_STR2(_x)
#define MCA_STRATA_OMPI_BUILT_VERSION \
    MCA_STRATA_OMPI_STR(OMPI_MAJOR_VERSION) \
    "." MCA_STRATA_OMPI_STR(OMPI_MINOR_VERSION) "." MCA_STRATA_OMPI_STR(OMPI_RELEASE_VERSION)
#define MCA_STRATA_OMPI_TEST_VERSION_ENV "STRATA_TEST_OMPI_RUNNING_VERSION"

/* OMPI_SUCCESS, or (after saying why, naming both versions)
 * OMPI_ERR_NOT_AVAILABLE: Open MPI's cue to drop the component without a
 * message of its own.  `plugin` is "coll/strata" or "hook/strata". */
static inline int mca_strata_ompi_version_check(const char *plugin)
{
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    const char *running = getenv(MCA_STRATA_OMPI_TEST_VERSION_ENV);
    int major = -1, minor = -1, release = -1, len = 0;

    if (NULL != running && '\0' != running[0]) {
        (void)sscanf(running, "%d.%d.%d", &major, &minor, &release);
    } else {
        /* MPI allows this call before MPI_Init; PMPI_: not a tool's wrapper */
        if (MPI_SUCCESS == PMPI_Get_library_version(library, &len)) {
            (void)sscanf(library, "Open MPI v%d.%d.%d", &major, &minor, &release);
        }
        running = library;
    }
    if (OMPI_MAJOR_VERSION == major && OMPI_MINOR_VERSION == minor) {
        return OMPI_SUCCESS;
    }
    if (major < 0 || minor < 0) {
        opal_output(0,
                    "%s: built for Open MPI %s, but cannot tell which Open MPI this "
                    "process runs (\"%.60s\"): %s is not registered and the job runs "
                    "without it",
                    plugin, MCA_STRATA_OMPI_BUILT_VERSION, running, plugin);
    } else {
        opal_output(0,
                    "%s: built for Open MPI %s, but this process runs Open MPI %d.%d.%d: "
                    "%s is not registered and the job runs without it (rebuild Strata "
                    "against this Open MPI)",
                    plugin, MCA_STRATA_OMPI_BUILT_VERSION, major, minor, release < 0 ? 0 : release,
                    plugin);
    }
    return OMPI_ERR_NOT_AVAILABLE;
}

#endif /* MCA_COLL_STRATA_OMPI_H */
