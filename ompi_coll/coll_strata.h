/*
 * coll/strata: topology-aware collectives for Open MPI 4.1 and 5.0 (the
 * differences: base/coll_strata_ompi.h).
 *
 * Declares the component: its MCA parameters' storage, comm_query and the
 * module's enabling.  The component is off by default (priority 0 makes
 * comm_query decline), so an installed Strata changes nothing until a job
 * asks for it with --mca coll_strata_priority <n>.
 *
 * Once on, strata owns every collective that moves data (blocking and
 * nonblocking; barriers stay with the module below it).  Each entry
 * classifies its buffers first: host and managed buffers go where they
 * went before (strata's own algorithms, or the saved module below
 * strata), device buffers run on the GPUs where every rank can, or are
 * staged through pinned host memory around that same path, so a device
 * pointer never reaches code that reads memory with the CPU (Debian's Open
 * MPI has no CUDA support).
 *
 * The component is built of rooms, a folder each, each with one interface
 * header (docs/design.md, "Where things are in coll/strata"), from the top
 * down; a room includes only rooms below it:
 *   ./        the component (coll_strata_component.c: MCA parameters) and
 *             the module's life (coll_strata_module.c: comm_query,
 *             module_enable, saving the functions below strata)
 *   colls/    the collectives' entry points and each call's decision:
 *             coll_strata_colls.h
 *   staging/  the call's buffers classified, any collective on device
 *             buffers through pinned host memory, and the staged
 *             nonblocking requests: coll_strata_stage.h
 *   comm/     what a communicator runs with: the module, its agreed
 *             settings, its network figures, its lazy set-up:
 *             coll_strata_module.h
 *   engine/   the pipeline, its node areas (host, device), the exchange
 *             between nodes, the shared-memory segment, the topology:
 *             coll_strata_engine.h
 *   base/     what every room may use: verbose messages, fault injection,
 *             op names, the settings' type, and coll/strata's part of the
 *             adapter to Open MPI 4.1 and 5.0 (coll_strata_ompi.h; the
 *             part every plugin shares: ompi_common/strata_ompi.h)
 *   logic/    pure logic, no Open MPI: schedules, decision, cost model:
 *             coll_strata_logic.h
 */
#ifndef MCA_COLL_STRATA_H
#define MCA_COLL_STRATA_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

#include "base/coll_strata_ompi.h"
#include "comm/coll_strata_module.h"

BEGIN_C_DECLS

typedef struct mca_coll_strata_component_t {
    mca_coll_base_component_t super;
    /* MCA parameters (coll_strata_*) */
    int priority;
    /* the priority comm_query answers: `priority` raised above coll/han's
     * (mca_coll_strata_init_query) */
    int priority_used;
    /* the settings every rank of a communicator must share (each module
     * runs with its agreed copy, mca_coll_strata_module_t.settings) */
    mca_coll_strata_settings_t settings;
    /* directory of the shared-memory files (a tmpfs) */
    char *shm_dir;
    /* native device allreduce between nodes: MCA_COLL_STRATA_DEVICE_NET_* */
    int device_network;
    /* nonblocking calls' progress: MCA_COLL_STRATA_PROGRESS_* (coll_strata_progress) */
    int progress;
    /* for tests: steps this process fails on purpose (coll_strata_test_fail,
     * parsed into base/coll_strata_log.h's bits when the component opens);
     * coll_strata_verbose is stored there too */
    char *test_fail;
} mca_coll_strata_component_t;


MCA_STRATA_OMPI_COMPONENT_EXPORT extern mca_coll_strata_component_t mca_coll_strata_component;

/* coll_strata_component.c: priority_used from coll_strata_priority and
 * coll/han's priority */
void mca_coll_strata_component_set_priority(void);

/* coll_strata_module.c */
int mca_coll_strata_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_strata_comm_query(struct ompi_communicator_t *comm,
                                                   int *priority);

END_C_DECLS

#endif /* MCA_COLL_STRATA_H */
