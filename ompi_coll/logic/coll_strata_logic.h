/*
 * coll/strata pure logic: the room of what Strata decides and schedules
 * without Open MPI state, so that the unit tests (test/unit/) and the scale
 * simulator (test/sim/) compile these sources as they are and drive them
 * directly:
 *   coll_strata_decision.h  which algorithm runs for a call, the alpha-beta
 *                           cost model of the exchanges between nodes, the
 *                           network's figures from timed round trips, and
 *                           the arithmetic of slices, blocks and trees
 *   coll_strata_sched.h     the schedules between nodes (ring, recursive
 *                           doubling, halving-doubling, their halves, the
 *                           bcast trees): member r's step i
 *   coll_strata_codec.h     the wire formats of compression between nodes
 *                           (bf16, fp16, fp8 with per-block scales)
 * This header is the room's interface: the other rooms include it, not the
 * three above.
 *
 * May include: the C library only; nothing of Open MPI and no other room.
 */
#ifndef MCA_COLL_STRATA_LOGIC_H
#define MCA_COLL_STRATA_LOGIC_H

#include "coll_strata_decision.h"
#include "coll_strata_sched.h"
#include "coll_strata_codec.h"

#endif /* MCA_COLL_STRATA_LOGIC_H */
