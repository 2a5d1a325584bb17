/*
 * coll/strata pipeline, driven by the host: for every chunk the host checks
 * the node's progress flags, issues a stage (coll_strata_pipeline_steps.c),
 * waits for it (the node area's complete()), and stores the flag that
 * announces it.  The node area of host data, and device data where the GPU
 * cannot wait on the flags.  In turn, round after round: copy in, reduce,
 * publish what the exchanges between nodes finished, copy out; a round in
 * which nothing moved progresses the pml and, past the engine's spin
 * budget, yields the core.
 */
#include "coll_strata_pipeline.h"

#include <sched.h>

#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

/* Most idle polls of the pipeline before each further one also yields the
 * core (the budget adapts per communicator, see below). */
#define MCA_COLL_STRATA_PIPELINE_SPINS 64

static void mca_coll_strata_pipeline_copy_in(mca_coll_strata_pipeline_t *p, bool *moved)
{
    uint64_t c = p->next_in, g = p->base + c;
    mca_coll_strata_shm_flags_t *mine = &p->shm->flags[p->me];
    int rc;

    /* The input area of the slot is free once every owner reduced the chunk
     * nslots before; the result area once every rank copied it out (which
     * implies the first). */
    if (c >= p->nchunks || !mca_coll_strata_pipeline_reached(
                               p->shm, mca_coll_strata_pipeline_in_gate(p), p->shm->nranks,
                               mca_coll_strata_pipeline_reuse_mark(p, g))) {
        return;
    }
    rc = mca_coll_strata_pipeline_issue_in(p, c);
    if (OMPI_SUCCESS == rc && p->copies_in) {
        rc = p->node->ops->complete(p->node);
    }
    mca_coll_strata_pipeline_note(p, c, MCA_COLL_STRATA_PART_INPUT, rc);
    mca_coll_strata_flag_announce(p->shm, &mine->copied_in, g + 1);
    if (!p->owner) {
        mca_coll_strata_flag_announce(p->shm, &mine->reduced, g + 1);
    }
    p->next_in++;
    *moved = true;
}

static void mca_coll_strata_pipeline_reduce(mca_coll_strata_pipeline_t *p, bool *moved)
{
    mca_coll_strata_shm_t *shm = p->shm;
    uint64_t c = p->next_reduce, g = p->base + c;
    int k = shm->nranks, rc;
    bool inputs_failed;
    size_t len;
    char *dst;

    if (c >= p->next_in ||
        !mca_coll_strata_pipeline_reached(shm, MCA_COLL_STRATA_FLAG(copied_in), k, g + 1) ||
        !mca_coll_strata_pipeline_reached(shm, MCA_COLL_STRATA_FLAG(copied_out), k,
                                          mca_coll_strata_pipeline_reuse_mark(p, g))) {
        return;
    }
    inputs_failed = mca_coll_strata_pipeline_peer_failed(p, k, MCA_COLL_STRATA_PART_INPUT, c);
    rc = mca_coll_strata_pipeline_issue_reduce(p, c, &dst, &len);
    if (OMPI_SUCCESS == rc && MCA_COLL_STRATA_PIPE_REDUCE == p->kind) {
        rc = p->node->ops->complete(p->node);
    }
    mca_coll_strata_pipeline_note(p, c, MCA_COLL_STRATA_PART_RESULT, rc);
    mca_coll_strata_flag_announce(shm, &shm->flags[p->me].reduced, g + 1);
    p->next_reduce++;
    *moved = true;
    mca_coll_strata_pipeline_inter_start(p, c, dst, len, inputs_failed || OMPI_SUCCESS != rc);
}

static void mca_coll_strata_pipeline_publish(mca_coll_strata_pipeline_t *p, bool *moved)
{
    if (mca_coll_strata_pipeline_publish_exchanged(p)) {
        *moved = true;
    }
}

static void mca_coll_strata_pipeline_copy_out(mca_coll_strata_pipeline_t *p, bool *moved)
{
    uint64_t c = p->next_out, g = p->base + c;
    size_t lo, hi;
    int rc;

    if (p->private_result) {
        /* The result is already in rbuf once this rank published it. */
        if (c >= p->next_publish) {
            return;
        }
    } else if (c >= p->next_in ||
               !mca_coll_strata_pipeline_reached(p->shm, MCA_COLL_STRATA_FLAG(published),
                                                 p->result_owners, g + 1)) {
        return;
    } else {
        /* Only the ranks whose part of the result is in this chunk depend
         * on it (all of them for MPI_Allreduce); the others still wait for
         * it, so that the result area's reuse rule holds. */
        mca_coll_strata_pipeline_window(p, c, &lo, &hi);
        if (lo < hi &&
            mca_coll_strata_pipeline_peer_failed(p, p->result_owners, MCA_COLL_STRATA_PART_RESULT,
                                                 c) &&
            OMPI_SUCCESS == p->node_error) {
            p->peer_failed = true;
            p->node_error = MPI_ERR_OTHER;
        }
        rc = mca_coll_strata_pipeline_issue_out(p, c);
        if (OMPI_SUCCESS == rc && mca_coll_strata_pipeline_has_out(p, lo, hi)) {
            rc = p->node->ops->complete(p->node);
        }
        mca_coll_strata_pipeline_note(p, c, MCA_COLL_STRATA_PART_OWN, rc);
    }
    mca_coll_strata_flag_announce(p->shm, &p->shm->flags[p->me].copied_out, g + 1);
    p->next_out++;
    *moved = true;
}

/* One turn of the host's round: every step that can move now, moves
 * (*moved: something did).  Never waits: the host driver turns until the
 * call is done, the nonblocking driver once per progress. */
void mca_coll_strata_pipeline_host_turn(mca_coll_strata_pipeline_t *p, bool *moved)
{
    mca_coll_strata_pipeline_copy_in(p, moved);
    if (p->owner) {
        mca_coll_strata_pipeline_reduce(p, moved);
        mca_coll_strata_pipeline_publish(p, moved);
    }
    mca_coll_strata_pipeline_copy_out(p, moved);
}

/* The host drives every chunk: each stage waits for its flags, issues its
 * work, waits for it, and announces it (see the top). */
void mca_coll_strata_pipeline_driver_host(mca_coll_strata_pipeline_t *p)
{
    unsigned idle = 0;
    bool yielded = false;

    while (p->next_out < p->nchunks) {
        bool moved = false;

        mca_coll_strata_pipeline_host_turn(p, &moved);
        if (moved) {
            idle = 0;
            continue;
        }
        /* Nothing moved: progress the pml; after a few idle polls give the
         * core away too, since ranks often oversubscribe cores (without
         * Open MPI knowing, e.g. namespace nodes sharing a machine) and a
         * spinning rank would starve the one it waits for.  The polls first:
         * a peer that is about to arrive is not worth a system call. */
        opal_progress();
        if (++idle > p->e->spin_budget) {
            mca_coll_strata_shm_watch(p->shm); /* a peer that died */
            sched_yield();
            yielded = true;
        }
    }
    /* Waits that outlast the polls mean the peers need this core (or are
     * far): poll less next time; waits the polls cover, poll more, up to
     * MCA_COLL_STRATA_PIPELINE_SPINS. */
    if (yielded) {
        p->e->spin_budget /= 2;
    } else if (p->e->spin_budget < MCA_COLL_STRATA_PIPELINE_SPINS) {
        p->e->spin_budget = (2 * p->e->spin_budget + 1 < MCA_COLL_STRATA_PIPELINE_SPINS)
                                ? 2 * p->e->spin_budget + 1
                                : MCA_COLL_STRATA_PIPELINE_SPINS;
    }
}
