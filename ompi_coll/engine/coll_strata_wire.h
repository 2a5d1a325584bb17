/*
 * coll/strata wires: how an exchange's messages travel between the members
 * of a rail (coll_strata_xchg.c posts and tests them, never waits).
 *
 *   pml  (coll_strata_wire_pml.c)  Open MPI's pml on the rail communicator:
 *        what blocking calls use, and every call where there is no other.
 *   ucp  (coll_strata_wire_ucp.c)  a UCP worker of coll/strata's own, one
 *        per process, its addresses exchanged over the rail when a
 *        communicator is set up: what nonblocking calls between nodes use,
 *        so that the progress thread may turn them in a process whose pml
 *        takes no locks (MPI_THREAD_SINGLE, FUNNELED).  Built where UCX is;
 *        its worker calls are serialized by a lock of its own
 *        (docs/design.md, "Progress without MPI calls").
 *
 * The two never carry messages of the same call, and every rail member
 * chooses the same one for a call (blocking: pml; nonblocking: ucp where
 * the rail agreed to set it up), so a slot's messages on each wire are
 * sent and received in schedule order, as the exchange needs.
 */
#ifndef MCA_COLL_STRATA_WIRE_H
#define MCA_COLL_STRATA_WIRE_H

#include "coll_strata_engine_internal.h"

typedef struct mca_coll_strata_wire_ops_t {
    const char *name;
    /* Post the step's receive (up to `count` elements of `dtype` from rail
     * rank `peer`, into `buf`) or its send; an error status means refused,
     * nothing posted.  `dtype`: the exchange's, or MPI_BYTE for packed
     * (compressed) blocks. */
    int (*recv)(mca_coll_strata_xchg_t *x, void *buf, size_t count, struct ompi_datatype_t *dtype,
                int peer);
    int (*send)(mca_coll_strata_xchg_t *x, const void *buf, size_t count,
                struct ompi_datatype_t *dtype, int peer);
    /* Whether both of the step's messages are complete (a posted one not
     * yet: false).  Then every request is freed, *rc is the first error of
     * either and *received the bytes the receive took, counted as the
     * receive's datatype counts them (SIZE_MAX: more came than it had room
     * for, the news of a failure). */
    bool (*test)(mca_coll_strata_xchg_t *x, int *rc, size_t *received);
} mca_coll_strata_wire_ops_t;

extern const mca_coll_strata_wire_ops_t mca_coll_strata_wire_pml;

/* The ucp wire (coll_strata_wire_ucp.c; without UCX,
 * coll_strata_wire_none.c: never set up).
 *
 * mca_coll_strata_wire_setup (coll_strata_engine.h): collective over the engine's rail (every member calls it, in the
 * communicator's set-up, after its topology): opens the process's worker
 * the first time, exchanges addresses, connects to the rail's members and
 * agrees that every member could; false (and nothing kept) where one could
 * not, with the reason at verbosity 10: the engine's nonblocking calls then
 * use the pml and progress inside MPI calls.  release: the engine's
 * endpoints closed (before the engine is released).  ops: the table, or
 * NULL where the engine has no ucp wire. */
void mca_coll_strata_wire_ucp_release(mca_coll_strata_engine_t *e);
/* The exchange of `slot` on the engine's ucp wire (there must be one). */
void mca_coll_strata_wire_ucp_bind(mca_coll_strata_engine_t *e, mca_coll_strata_xchg_t *x,
                                   int slot);
/* The progress thread is about to sleep while a call waits on the ucp
 * wire: until a message arrives, the wire's watcher thread waits on the
 * worker's event file descriptor and then rings
 * mca_coll_strata_progress_wake (no lost wake-up: it arms the worker first,
 * and one that had events pending rings at once).  false: the worker had
 * something to do just now, the caller looks again before it sleeps. */
bool mca_coll_strata_wire_ucp_watch(void);
/* The process's worker closed (the component's close, after the progress
 * thread stopped and every engine was released). */
void mca_coll_strata_wire_ucp_finalize(void);

/* coll_strata_progress.c: wake the progress thread wherever it sleeps */
void mca_coll_strata_progress_wake(void);

#endif /* MCA_COLL_STRATA_WIRE_H */
