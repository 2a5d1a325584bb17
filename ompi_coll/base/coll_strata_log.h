/*
 * coll/strata base: what every room may use and that belongs to none of
 * them: the verbose messages and the fault injection of Strata's tests
 * (coll_strata_test_fail).  The component fills it when it opens
 * (coll_strata_component.c); the rooms only read it, so none of them needs
 * the component to print a line or to fail a step on purpose.
 *
 * May include: Open MPI's output.  Nothing of ompi_coll.
 */
#ifndef MCA_COLL_STRATA_LOG_H
#define MCA_COLL_STRATA_LOG_H

#include "ompi_config.h"

#include <stdbool.h>

#include "opal/util/output.h"

BEGIN_C_DECLS

typedef struct mca_coll_strata_log_t {
    int verbose;              /* coll_strata_verbose */
    int output;               /* opal_output stream the verbose messages go to */
    unsigned test_fail_steps; /* coll_strata_test_fail, MCA_COLL_STRATA_TEST_FAIL_* bits */
} mca_coll_strata_log_t;

extern mca_coll_strata_log_t mca_coll_strata_log;

/* The arguments (names looked up for the message) are evaluated only when
 * the message is wanted: per-call messages sit on the fast path. */
#define MCA_COLL_STRATA_VERBOSE(_level, ...) \
    do { \
        if (OPAL_UNLIKELY(mca_coll_strata_log.verbose >= (_level))) { \
            opal_output_verbose((_level), mca_coll_strata_log.output, \
                                "coll:strata: " __VA_ARGS__); \
        } \
    } while (0)

/* Fault injection for tests (coll_strata_test_fail): true when this
 * process is to fail `step` now (the steps marked "once" only the first
 * time). */
#define MCA_COLL_STRATA_TEST_FAIL_NODES    0x1u   /* the topology's node exchange */
#define MCA_COLL_STRATA_TEST_FAIL_PIPELINE 0x2u   /* the pipeline's allocations */
#define MCA_COLL_STRATA_TEST_FAIL_INTER    0x4u   /* the next inter-node phase (once) */
#define MCA_COLL_STRATA_TEST_FAIL_LEADERS  0x8u   /* the node leaders' exchange */
#define MCA_COLL_STRATA_TEST_FAIL_CONTEXT  0x10u  /* the native call's context switch (once) */
#define MCA_COLL_STRATA_TEST_FAIL_COPY_OUT 0x20u  /* the next call's copies out (once) */
#define MCA_COLL_STRATA_TEST_FAIL_ISEND    0x40u  /* the exchange's next isend, refused (once) */
#define MCA_COLL_STRATA_TEST_FAIL_STAGE    0x80u  /* every staging buffer's allocation */
#define MCA_COLL_STRATA_TEST_FAIL_PACK     0x100u /* a bcast's or allgather's packed image (once) */
#define MCA_COLL_STRATA_TEST_FAIL_EXPORT \
    0x200u                                   /* the direct path: this rank's buffers (every call) */
#define MCA_COLL_STRATA_TEST_FAIL_MAP 0x400u /* the direct path: a peer's buffer mapped (once) */

/* coll_strata_test_fail's comma-separated names as bits, into
 * mca_coll_strata_log.test_fail_steps (an unknown name is ignored) */
void mca_coll_strata_log_parse_test_fail(const char *list);
bool mca_coll_strata_test_fail_now(unsigned step);

static inline bool mca_coll_strata_test_fail(unsigned step)
{
    return OPAL_UNLIKELY(0 != (mca_coll_strata_log.test_fail_steps & step)) &&
           mca_coll_strata_test_fail_now(step);
}

END_C_DECLS

#endif /* MCA_COLL_STRATA_LOG_H */
