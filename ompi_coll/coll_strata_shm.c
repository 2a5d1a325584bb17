/*
 * coll/strata shared-memory segment: one per node communicator.
 *
 * Local rank 0 creates a file in coll_strata_shm_dir (a tmpfs, /dev/shm by
 * default) with mode 0600 and allocates every page up front: a sparse file
 * on a full tmpfs would map fine and then kill the job with SIGBUS on first
 * touch, inside the user's MPI_Allreduce.  The name goes to the other local
 * ranks, they map it, the node agrees that everyone did, and rank 0 unlinks
 * it at once: from then on the memory lives only as long as the mappings, so
 * a killed job leaves nothing behind.  Only a job killed between create and
 * unlink can leave a file; its name carries host and pid, and the next job
 * on that host removes files whose creator is dead.
 */
#include "coll_strata.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ompi/constants.h"

#define MCA_COLL_STRATA_SHM_PREFIX "strata_coll."
#define MCA_COLL_STRATA_SHM_ALIGN 4096

/* What local rank 0 tells the others: did creation work, and the file name. */
typedef struct mca_coll_strata_shm_announce_t {
    int status;
    char path[PATH_MAX];
} mca_coll_strata_shm_announce_t;

/* The flags area, rounded up so the slots start page-aligned. */
static size_t mca_coll_strata_shm_flags_bytes(const mca_coll_strata_shm_t *shm)
{
    size_t bytes = (size_t)shm->nranks * sizeof(mca_coll_strata_shm_flags_t);

    return (bytes + MCA_COLL_STRATA_SHM_ALIGN - 1) & ~(size_t)(MCA_COLL_STRATA_SHM_ALIGN - 1);
}

/* The segment's size, or 0 when it does not fit a size_t. */
static size_t mca_coll_strata_shm_layout(const mca_coll_strata_shm_t *shm)
{
    size_t areas, bytes, total;

    if (__builtin_mul_overflow((size_t)shm->nslots, (size_t)shm->nranks + 1, &areas) ||
        __builtin_mul_overflow(areas, shm->slot_bytes, &bytes) ||
        __builtin_add_overflow(bytes, mca_coll_strata_shm_flags_bytes(shm), &total)) {
        return 0;
    }
    return total;
}

static void mca_coll_strata_shm_set_pointers(mca_coll_strata_shm_t *shm)
{
    shm->flags = (mca_coll_strata_shm_flags_t *)shm->base;
    shm->slots = (char *)shm->base + mca_coll_strata_shm_flags_bytes(shm);
}

/* Host name as it goes into a file name: no '/' or '.' surprises. */
static void mca_coll_strata_shm_hostname(char *buf, size_t len)
{
    if (0 != gethostname(buf, len)) {
        snprintf(buf, len, "unknown");
    }
    buf[len - 1] = '\0';
    for (char *p = buf; *p; ++p) {
        if (*p == '/' || *p == '.') {
            *p = '_';
        }
    }
}

/*
 * Remove segments of dead jobs on this host: prefix.<host>.<pid>.<n> whose
 * pid no longer exists, owned by us.  Live jobs' files are left alone (their
 * creator is alive and will unlink them in a moment).
 */
void mca_coll_strata_shm_cleanup_stale(const char *dir)
{
    char host[64], prefix[128], path[PATH_MAX];
    struct dirent *ent;
    struct stat st;
    DIR *d;

    mca_coll_strata_shm_hostname(host, sizeof(host));
    snprintf(prefix, sizeof(prefix), MCA_COLL_STRATA_SHM_PREFIX "%s.", host);
    d = opendir(dir);
    if (NULL == d) {
        return;
    }
    while (NULL != (ent = readdir(d))) {
        long pid;
        char *end;

        if (0 != strncmp(ent->d_name, prefix, strlen(prefix))) {
            continue;
        }
        pid = strtol(ent->d_name + strlen(prefix), &end, 10);
        if (pid <= 0 || *end != '.' || !(kill((pid_t)pid, 0) != 0 && errno == ESRCH)) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
        if (0 == stat(path, &st) && st.st_uid == geteuid() && 0 == unlink(path)) {
            MCA_COLL_STRATA_VERBOSE(10, "removed stale segment %s (pid %ld is gone)", path,
                                    pid);
        }
    }
    closedir(d);
}

static int mca_coll_strata_shm_create(mca_coll_strata_shm_t *shm, const char *dir,
                                      char *path, size_t path_len, char *why, size_t why_len)
{
    static unsigned serial = 0;
    struct stat st;
    char host[64];
    int fd, rc;

    mca_coll_strata_shm_cleanup_stale(dir);
    mca_coll_strata_shm_hostname(host, sizeof(host));
    snprintf(path, path_len, "%s/" MCA_COLL_STRATA_SHM_PREFIX "%s.%ld.%u", dir, host,
             (long)getpid(), serial++);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(why, why_len, "cannot create %s: %s", path, strerror(errno));
        path[0] = '\0'; /* not ours: nobody may unlink it */
        return OMPI_ERROR;
    }
    if (0 == fstat(fd, &st)) {
        MCA_COLL_STRATA_VERBOSE(10, "created %s (mode %04o, %zu bytes)", path,
                                (unsigned)(st.st_mode & 07777), shm->size);
    }
    rc = posix_fallocate(fd, 0, (off_t)shm->size);
    if (0 != rc) {
        snprintf(why, why_len, "cannot allocate %zu bytes in %s: %s", shm->size, dir,
                 strerror(rc));
        goto err_unlink;
    }
    shm->base = mmap(NULL, shm->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (MAP_FAILED == shm->base) {
        shm->base = NULL;
        snprintf(why, why_len, "cannot map %s: %s", path, strerror(errno));
        goto err_unlink;
    }
    close(fd);
    return OMPI_SUCCESS;

err_unlink:
    unlink(path);
    path[0] = '\0';
    close(fd);
    return OMPI_ERROR;
}

static int mca_coll_strata_shm_open(mca_coll_strata_shm_t *shm, const char *path, char *why,
                                    size_t why_len)
{
    struct stat st;
    int fd;

    fd = open(path, O_RDWR);
    if (fd < 0) {
        snprintf(why, why_len, "cannot open %s: %s", path, strerror(errno));
        return OMPI_ERROR;
    }
    if (0 != fstat(fd, &st) || (size_t)st.st_size != shm->size) {
        snprintf(why, why_len, "%s has the wrong size", path);
        close(fd);
        return OMPI_ERROR;
    }
    shm->base = mmap(NULL, shm->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (MAP_FAILED == shm->base) {
        shm->base = NULL;
        snprintf(why, why_len, "cannot map %s: %s", path, strerror(errno));
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/*
 * Collective over node_comm.  Returns OMPI_SUCCESS on every local rank or an
 * error on every local rank (with `why` filled where the failure happened).
 */
int mca_coll_strata_shm_attach(mca_coll_strata_shm_t *shm,
                               struct ompi_communicator_t *node_comm, size_t slot_bytes,
                               int nslots, const char *dir, char *why, size_t why_len)
{
    mca_coll_strata_shm_announce_t *announce;
    int rank = ompi_comm_rank(node_comm);
    int ok, all_ok, rc;

    shm->base = NULL;
    shm->nranks = ompi_comm_size(node_comm);
    shm->nslots = nslots;
    shm->slot_bytes = slot_bytes;
    shm->size = mca_coll_strata_shm_layout(shm);
    if (0 == shm->size) {
        /* the same on every local rank: all leave here, none waits below */
        snprintf(why, why_len, "a segment of %d slots x %d areas x %zu bytes does not fit in "
                 "memory's address range", nslots, shm->nranks + 1, slot_bytes);
        return OMPI_ERR_BAD_PARAM;
    }

    announce = calloc(1, sizeof(*announce));
    if (NULL == announce) {
        snprintf(why, why_len, "out of memory");
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (0 == rank) {
        announce->status = mca_coll_strata_shm_create(shm, dir, announce->path,
                                                      sizeof(announce->path), why, why_len);
    }
    rc = node_comm->c_coll->coll_bcast(announce, sizeof(*announce), MPI_BYTE, 0, node_comm,
                                       node_comm->c_coll->coll_bcast_module);
    if (OMPI_SUCCESS != rc) {
        snprintf(why, why_len, "broadcast of the segment name failed (%d)", rc);
        goto out;
    }
    if (0 != rank && OMPI_SUCCESS == announce->status) {
        announce->status = mca_coll_strata_shm_open(shm, announce->path, why, why_len);
    }
    /* A rank that merely learns of another's failure leaves `why` empty:
     * only the rank that hit the problem reports it. */

    /* Everyone mapped it (or someone failed): unlink, and agree on the outcome. */
    ok = (OMPI_SUCCESS == announce->status) ? 1 : 0;
    rc = node_comm->c_coll->coll_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node_comm,
                                           node_comm->c_coll->coll_allreduce_module);
    if (0 == rank && '\0' != announce->path[0]) {
        unlink(announce->path);
    }
    if (OMPI_SUCCESS != rc) {
        snprintf(why, why_len, "agreement on the segment failed (%d)", rc);
    } else if (!all_ok) {
        rc = OMPI_ERROR;
    } else {
        mca_coll_strata_shm_set_pointers(shm);
        MCA_COLL_STRATA_VERBOSE(10, "%s: segment of %zu bytes (%d slots of %zu bytes) mapped",
                                node_comm->c_name, shm->size, nslots, slot_bytes);
    }

out:
    free(announce);
    if (OMPI_SUCCESS != rc) {
        mca_coll_strata_shm_detach(shm);
    }
    return rc;
}

void mca_coll_strata_shm_detach(mca_coll_strata_shm_t *shm)
{
    if (NULL != shm->base) {
        munmap(shm->base, shm->size);
    }
    shm->base = NULL;
    shm->flags = NULL;
    shm->slots = NULL;
}
