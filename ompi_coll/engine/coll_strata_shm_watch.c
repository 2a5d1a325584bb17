/*
 * coll/strata engine: the node's ranks watched for death.
 *
 * Every wait of the pipeline on the node is a load of a peer's counter in
 * the shared segment.  A peer whose process is gone (killed, crashed, out
 * of memory) never stores it again, and without a watch its node's other
 * ranks would wait forever: in MPI_Wait, in a blocking call, and in the
 * progress thread.  Open MPI 4.1 and 5.0 kill the whole job when a process
 * dies, except where the job runs with recovery on (mpirun
 * --enable-recovery, or ULFM); there the survivors must return an error.
 *
 * So a rank whose wait finds nothing moved looks whether its local peers
 * are alive, at most every MCA_COLL_STRATA_SHM_WATCH_S: kill(pid, 0) on
 * each pid recorded in the segment, where the peer's pid namespace is
 * this rank's (in another, the number names another process: containers
 * sharing /dev/shm).  A dead peer's record is marked dead first, then its
 * counters are stored far ahead of any call's (release: whoever reads
 * such a counter sees the mark): every wait for it passes, on the host and
 * in the GPUs' stream waits alike, every part it owed reads as failed
 * (mca_coll_strata_pipeline_peer_failed and the queued driver's node
 * check), its direct-path card says no, its device scratch counts as
 * closed.  Then every call runs to its end with an error on this node, and
 * its exchanges carry the failure to the other nodes, whose rail partners
 * of the dead rank also see its endpoints fail.  Any survivor may mark a
 * peer; the stores are the same from each.
 */
#include "coll_strata_pipeline.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include "../base/coll_strata_log.h"

/* How often (seconds) a waiting rank looks whether its local peers live */
#define MCA_COLL_STRATA_SHM_WATCH_S 0.1

/* A dead rank's counters: beyond any chunk serial, still a positive
 * distance ahead of any value a GPU's stream wait compares them with */
#define MCA_COLL_STRATA_SHM_DEAD_COUNT (UINT64_C(1) << 62)

void mca_coll_strata_shm_watch_self(mca_coll_strata_shm_t *shm, int me)
{
    mca_coll_strata_shm_flags_t *mine = &shm->flags[me];

    shm->me = me;
    shm->next_watch_s = 0;
    __atomic_store_n(&mine->pidns, (uint64_t)mca_coll_strata_shm_pidns(), __ATOMIC_RELAXED);
    __atomic_store_n(&mine->pid, (uint64_t)getpid(), __ATOMIC_RELEASE);
}

bool mca_coll_strata_shm_dead(const mca_coll_strata_shm_t *shm, int r)
{
    return 0 != __atomic_load_n(&shm->flags[r].dead, __ATOMIC_ACQUIRE);
}

/* Whether local rank r's process is known gone: recorded, in this pid
 * namespace, and no such process (a zombie still counts as alive until its
 * parent reaps it, which Open MPI's daemon does at once). */
static bool mca_coll_strata_shm_gone(const mca_coll_strata_shm_t *shm, int r)
{
    const mca_coll_strata_shm_flags_t *f = &shm->flags[r];
    uint64_t pid = __atomic_load_n(&f->pid, __ATOMIC_ACQUIRE);
    uint64_t ns = __atomic_load_n(&f->pidns, __ATOMIC_RELAXED);
    uint64_t mine = __atomic_load_n(&shm->flags[shm->me].pidns, __ATOMIC_RELAXED);

    if (0 == pid || 0 == ns || ns != mine) {
        return false; /* not recorded yet, or not a pid this process can ask about */
    }
    return 0 != kill((pid_t)pid, 0) && ESRCH == errno;
}

/* Local rank r is dead: its mark, then its counters ahead of every call
 * (see the top). */
static void mca_coll_strata_shm_bury(mca_coll_strata_shm_t *shm, int r)
{
    mca_coll_strata_shm_flags_t *f = &shm->flags[r];
    uint64_t *counters[] = {
        &f->copied_in,      &f->copied_in_queued,  &f->reduced,
        &f->reduced_queued, &f->published,         &f->published_queued,
        &f->copied_out,     &f->copied_out_queued, &f->call_done,
    };
    uint32_t alive = 0;

    if (__atomic_compare_exchange_n(&f->dead, &alive, 1, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED)) {
        opal_output(0,
                    "coll:strata: local rank %d of this node (pid %llu) is gone: every "
                    "collective on its communicators now fails on this node, and its exchanges "
                    "tell the other nodes",
                    r, (unsigned long long)__atomic_load_n(&f->pid, __ATOMIC_RELAXED));
    }
    __atomic_store_n(&f->card.ok, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&f->card.mapped, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&f->device_closed, 1, __ATOMIC_RELEASE);
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); ++i) {
        __atomic_store_n(counters[i], MCA_COLL_STRATA_SHM_DEAD_COUNT, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&f->card_serial, MCA_COLL_STRATA_SHM_DEAD_COUNT, __ATOMIC_RELEASE);
    __atomic_store_n(&f->mapped_serial, MCA_COLL_STRATA_SHM_DEAD_COUNT, __ATOMIC_RELEASE);
}

void mca_coll_strata_shm_watch(mca_coll_strata_shm_t *shm)
{
    double now = mca_coll_strata_now(), next;

    __atomic_load(&shm->next_watch_s, &next, __ATOMIC_RELAXED);
    if (NULL == shm->flags || now < next) {
        return;
    }
    next = now + MCA_COLL_STRATA_SHM_WATCH_S;
    __atomic_store(&shm->next_watch_s, &next, __ATOMIC_RELAXED);
    for (int r = 0; r < shm->nranks; ++r) {
        if (r != shm->me && !mca_coll_strata_shm_dead(shm, r) && mca_coll_strata_shm_gone(shm, r)) {
            mca_coll_strata_shm_bury(shm, r);
            mca_coll_strata_progress_ring(shm); /* progress threads asleep on it */
        }
    }
}
