/*
 * coll/strata base: the verbose stream and the fault injection of Strata's
 * tests (see coll_strata_log.h).
 */
#include "coll_strata_log.h"

#include <string.h>

mca_coll_strata_log_t mca_coll_strata_log = {
    .verbose = 0,
    .output = -1,
    .test_fail_steps = 0,
};

/* The steps by name, with what a message calls them, and whether they fail
 * once (later calls must work) or every time. */
static const struct {
    const char *name;
    unsigned bit;
    bool once;
    const char *what;
} mca_coll_strata_log_steps[] = {
    {"nodes", MCA_COLL_STRATA_TEST_FAIL_NODES, false, "the node exchange"},
    {"leaders", MCA_COLL_STRATA_TEST_FAIL_LEADERS, false, "the node leaders' exchange"},
    {"pipeline", MCA_COLL_STRATA_TEST_FAIL_PIPELINE, false, "the pipeline's allocations"},
    {"inter", MCA_COLL_STRATA_TEST_FAIL_INTER, true, "an inter-node phase"},
    {"context", MCA_COLL_STRATA_TEST_FAIL_CONTEXT, true, "the native allreduce's context switch"},
    {"copy_out", MCA_COLL_STRATA_TEST_FAIL_COPY_OUT, true,
     "the copies out of the result area of an allreduce"},
    {"isend", MCA_COLL_STRATA_TEST_FAIL_ISEND, true,
     "an inter-node exchange's send (as if the pml refused it)"},
    {"stage", MCA_COLL_STRATA_TEST_FAIL_STAGE, false, "the allocation of a staging buffer"},
    {"pack", MCA_COLL_STRATA_TEST_FAIL_PACK, true,
     "the allocation of a bcast's or allgather's packed image"},
    {"direct_export", MCA_COLL_STRATA_TEST_FAIL_EXPORT, false,
     "the export of this rank's buffers to the direct path"},
    {"direct_map", MCA_COLL_STRATA_TEST_FAIL_MAP, true,
     "the mapping of a peer's buffer on the direct path"},
};

#define MCA_COLL_STRATA_LOG_NSTEPS \
    (sizeof(mca_coll_strata_log_steps) / sizeof(mca_coll_strata_log_steps[0]))

void mca_coll_strata_log_parse_test_fail(const char *list)
{
    mca_coll_strata_log.test_fail_steps = 0;
    for (size_t i = 0; NULL != list && i < MCA_COLL_STRATA_LOG_NSTEPS; ++i) {
        const char *name = mca_coll_strata_log_steps[i].name;
        size_t len = strlen(name);

        for (const char *at = strstr(list, name); NULL != at; at = strstr(at + 1, name)) {
            if ((at == list || ',' == at[-1]) && ('\0' == at[len] || ',' == at[len])) {
                mca_coll_strata_log.test_fail_steps |= mca_coll_strata_log_steps[i].bit;
            }
        }
    }
}

bool mca_coll_strata_test_fail_now(unsigned step)
{
    const char *what = "an inter-node phase";

    for (size_t i = 0; i < MCA_COLL_STRATA_LOG_NSTEPS; ++i) {
        if (mca_coll_strata_log_steps[i].bit == step) {
            what = mca_coll_strata_log_steps[i].what;
            if (mca_coll_strata_log_steps[i].once) {
                mca_coll_strata_log.test_fail_steps &= ~step;
            }
        }
    }
    opal_output(0, "coll:strata: coll_strata_test_fail: failing %s on purpose", what);
    return true;
}
