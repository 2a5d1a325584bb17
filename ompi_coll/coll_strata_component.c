/*
 * coll/strata component: MCA parameters, open/close.
 *
 * Every parameter is registered here with a description and an info level, so
 * `ompi_info --param coll strata --level 9` documents all of them.
 */
#include "coll_strata.h"

#include "ompi/constants.h"
#include "opal/mca/base/mca_base_var.h"

static int mca_coll_strata_component_register(void);
static int mca_coll_strata_component_open(void);
static int mca_coll_strata_component_close(void);

mca_coll_strata_component_t mca_coll_strata_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "strata",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = mca_coll_strata_component_open,
            .mca_close_component = mca_coll_strata_component_close,
            .mca_register_component_params = mca_coll_strata_component_register,
        },
        .collm_data = {
            /* The component can run more than once in a process (several
             * communicators); it keeps no state that forbids a checkpoint. */
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = mca_coll_strata_init_query,
        .collm_comm_query = mca_coll_strata_comm_query,
    },
    .priority = 0,
    .verbose = 0,
    .output = -1,
};

static int mca_coll_strata_component_register(void)
{
    mca_base_component_t *c = &mca_coll_strata_component.super.collm_version;

    mca_coll_strata_component.priority = 0;
    (void)mca_base_component_var_register(
        c, "priority",
        "Priority of coll/strata. 0 (the default) switches it off; a value above the "
        "other coll components' (e.g. 90, above tuned's 30) makes it handle the "
        "collectives it implements and hand the rest to the component below it",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_2, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_strata_component.priority);

    mca_coll_strata_component.verbose = 0;
    (void)mca_base_component_var_register(
        c, "verbose",
        "Verbosity of coll/strata: 0 silent, 10 one line per communicator, "
        "20 one line per collective call (which algorithm ran and why), "
        "30 every fallback decision",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_coll_strata_component.verbose);

    return OMPI_SUCCESS;
}

static int mca_coll_strata_component_open(void)
{
    mca_coll_strata_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_strata_component.output,
                              mca_coll_strata_component.verbose);
    return OMPI_SUCCESS;
}

static int mca_coll_strata_component_close(void)
{
    if (mca_coll_strata_component.output >= 0) {
        opal_output_close(mca_coll_strata_component.output);
        mca_coll_strata_component.output = -1;
    }
    return OMPI_SUCCESS;
}
