/*
 * Strata's adapter to the Open MPI it is built against (4.1.x and 5.0.x),
 * the part every Strata plugin of Open MPI shares: coll/strata, hook/strata
 * and accelerator/cuda include it, as Open MPI's own components share code
 * through ompi/mca/common/.  Header-only, so each plugin stays one object
 * with nothing to link.  Nothing else in the plugins tests
 * OMPI_MAJOR_VERSION: they test MCA_STRATA_OMPI_5.
 *
 * The differences between the two series, and where each is met (a
 * plugin's own stay with it):
 *   - the component export: OMPI_MODULE_DECLSPEC in 4.1, OMPI_DECLSPEC in
 *     5.0 (here);
 *   - coll/strata's: the coll component and module versions, the layout of a
 *     nonblocking collective's request, where OPAL's mutexes are declared
 *     (ompi_coll/base/coll_strata_ompi.h); coll/han on by default in 5.0, which
 *     coll/strata stacks itself above (coll_strata_component.c);
 *   - hook/strata's: 5.0 calls a DSO hook's post-opal hook only after pml
 *     selection, so there the UCT module is loaded at open
 *     (ompi_hook/hook_strata.h);
 *   - 4.1 has no accelerator framework: accelerator/cuda (ompi_accel/) is
 *     built for 5.0 only.
 */
#ifndef MCA_STRATA_OMPI_H
#define MCA_STRATA_OMPI_H

#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>

#include "mpi.h"
#include "ompi/constants.h"
#include "opal/util/output.h"

#if OMPI_MAJOR_VERSION >= 5
#define MCA_STRATA_OMPI_5 1
#else
#define MCA_STRATA_OMPI_5 0
#endif

/* Visibility of a component's structure, the one symbol a plugin exports
 * (it is built with -fvisibility=hidden): 5.0 has no OMPI_MODULE_DECLSPEC. */
#if MCA_STRATA_OMPI_5
#define MCA_STRATA_OMPI_COMPONENT_EXPORT OMPI_DECLSPEC
#else
#define MCA_STRATA_OMPI_COMPONENT_EXPORT OMPI_MODULE_DECLSPEC
#endif

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
 * message of its own.  `plugin` names the plugin in that message
 * ("coll/strata", "hook/strata", "accelerator/cuda (Strata)"). */
static inline int mca_strata_ompi_version_check(const char *plugin)
{
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    const char *running                          = getenv(MCA_STRATA_OMPI_TEST_VERSION_ENV);
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

#endif /* MCA_STRATA_OMPI_H */
