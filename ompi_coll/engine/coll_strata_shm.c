/*
 * coll/strata shared-memory segment: one per node communicator.
 *
 * Local rank 0 creates a file in coll_strata_shm_dir (a tmpfs, /dev/shm by
 * default) with mode 0600 and allocates every page up front: a sparse file
 * on a full tmpfs would map fine and then kill the job with SIGBUS on first
 * touch, inside the user's MPI_Allreduce.  The name goes to the other local
 * ranks, they map it, the node agrees that everyone did, and rank 0 unlinks
 * it at once: from then on the memory lives only as long as the mappings, so
 * a killed job leaves nothing behind.
 *
 * The directory is usually shared with other users, so a name must not be
 * guessable (64 random bits: nobody can create it first and switch strata
 * off), and a peer checks that the file it opened is the one rank 0 created
 * (device, inode and owner come with the name: nobody can swap it in
 * between).
 *
 * Only a job killed between create and unlink can leave a file; its name
 * carries host, pid and pid namespace, and the next job on that host and in
 * that pid namespace removes such files of its user whose creator is dead.
 */
#include "coll_strata_engine_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ompi/constants.h"

#define MCA_COLL_STRATA_SHM_PREFIX        "strata_coll."
#define MCA_COLL_STRATA_SHM_ALIGN         4096
/* the random part of a name: 64 bits in hex */
#define MCA_COLL_STRATA_SHM_RANDOM_DIGITS 16

/*
 * What local rank 0 tells the others: did creation work, the file name, and
 * which file that name meant when rank 0 created it.
 */
typedef struct mca_coll_strata_shm_announce_t {
    int status;
    uid_t uid;
    dev_t dev;
    ino_t ino;
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
 * This process's pid namespace (the inode of /proc/self/ns/pid), or 0 when
 * it cannot be told.  A pid in a name means something only in the namespace
 * it came from: containers that share /dev/shm but not their pid namespace
 * each have a process 1234, and one's may be dead while the other's lives.
 */
unsigned long mca_coll_strata_shm_pidns(void)
{
    struct stat st;

    return (0 == stat("/proc/self/ns/pid", &st)) ? (unsigned long)st.st_ino : 0;
}

/* Reads the decimal number at *p and moves past it; false when there is none. */
static bool mca_coll_strata_shm_parse_number(const char **p, unsigned long *value)
{
    char *end;

    if (!isdigit((unsigned char)**p)) {
        return false;
    }
    errno = 0;
    *value = strtoul(*p, &end, 10);
    *p = end;
    return 0 == errno;
}

/*
 * True when `name` is exactly a name strata makes on this host in this pid
 * namespace, <host_prefix><pid>.<pidns>.<serial>.<16 hex digits>; *pid is
 * its creator.  Any other file in the directory is none of strata's business.
 */
static bool mca_coll_strata_shm_name_is_ours(const char *name, const char *host_prefix,
                                             unsigned long pidns, pid_t *pid)
{
    size_t prefix_len = strlen(host_prefix);
    unsigned long creator, ns, serial;
    const char *p;

    if (0 != strncmp(name, host_prefix, prefix_len)) {
        return false;
    }
    p = name + prefix_len;
    if (!mca_coll_strata_shm_parse_number(&p, &creator) || '.' != *p++ ||
        !mca_coll_strata_shm_parse_number(&p, &ns) || '.' != *p++ ||
        !mca_coll_strata_shm_parse_number(&p, &serial) || '.' != *p++ ||
        MCA_COLL_STRATA_SHM_RANDOM_DIGITS != strspn(p, "0123456789abcdef") ||
        '\0' != p[MCA_COLL_STRATA_SHM_RANDOM_DIGITS]) {
        return false;
    }
    if (ns != pidns || 0 == creator || creator > INT_MAX) {
        return false;
    }
    *pid = (pid_t)creator;
    return true;
}

/*
 * A file of dir (an open directory) that this process may remove: a name of
 * ours whose creator is dead, and a regular file of our own.  lstat, not
 * stat: through a symlink, root would judge the target and unlink another
 * user's link.
 */
static bool mca_coll_strata_shm_is_stale(int dir_fd, const char *name, const char *host_prefix,
                                         unsigned long pidns, pid_t *pid)
{
    struct stat st;

    if (!mca_coll_strata_shm_name_is_ours(name, host_prefix, pidns, pid) ||
        !(0 != kill(*pid, 0) && ESRCH == errno)) {
        return false;
    }
    return 0 == fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
           st.st_uid == geteuid();
}

/*
 * Remove segments of dead jobs on this host (see is_stale).  Live jobs'
 * files are left alone: their creator is alive and will unlink them in a
 * moment.
 */
void mca_coll_strata_shm_cleanup_stale(const char *dir)
{
    unsigned long pidns = mca_coll_strata_shm_pidns();
    char host[64], host_prefix[128];
    struct dirent *ent;
    pid_t pid;
    DIR *d;

    if (0 == pidns) {
        return; /* whose pids the names carry cannot be told: touch nothing */
    }
    mca_coll_strata_shm_hostname(host, sizeof(host));
    snprintf(host_prefix, sizeof(host_prefix), MCA_COLL_STRATA_SHM_PREFIX "%s.", host);
    d = opendir(dir);
    if (NULL == d) {
        return;
    }
    while (NULL != (ent = readdir(d))) {
        if (mca_coll_strata_shm_is_stale(dirfd(d), ent->d_name, host_prefix, pidns, &pid) &&
            0 == unlinkat(dirfd(d), ent->d_name, 0)) {
            MCA_COLL_STRATA_VERBOSE(10, "removed stale segment %s/%s (pid %ld is gone)", dir,
                                    ent->d_name, (long)pid);
        }
    }
    closedir(d);
}

/*
 * A new segment name in dir: host, pid and pid namespace (for the stale
 * cleanup), a serial (communicators set up at once by several threads), and
 * 64 random bits, so that no other user can create the name first or aim it
 * elsewhere.
 */
static int mca_coll_strata_shm_name(char *path, size_t path_len, const char *dir, char *why,
                                    size_t why_len)
{
    static unsigned serial = 0;
    uint64_t random_bits;
    char host[64];
    ssize_t got;
    int len;

    do {
        got = getrandom(&random_bits, sizeof(random_bits), 0);
    } while (got < 0 && EINTR == errno);
    if (got != (ssize_t)sizeof(random_bits)) {
        snprintf(why, why_len, "cannot get random bits for a segment name: %s",
                 got < 0 ? strerror(errno) : "short read");
        return OMPI_ERROR;
    }
    mca_coll_strata_shm_hostname(host, sizeof(host));
    len = snprintf(path, path_len, "%s/" MCA_COLL_STRATA_SHM_PREFIX "%s.%ld.%lu.%u.%0*" PRIx64, dir,
                   host, (long)getpid(), mca_coll_strata_shm_pidns(),
                   __atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED),
                   MCA_COLL_STRATA_SHM_RANDOM_DIGITS, random_bits);
    if (len < 0 || (size_t)len >= path_len) {
        snprintf(why, why_len, "coll_strata_shm_dir %s is too long a path", dir);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/* Local rank 0: the segment file, sized and mapped; `announce` says which. */
static int mca_coll_strata_shm_create(mca_coll_strata_shm_t *shm, const char *dir,
                                      mca_coll_strata_shm_announce_t *announce, char *why,
                                      size_t why_len)
{
    char *path = announce->path;
    struct stat st;
    int fd, rc;

    mca_coll_strata_shm_cleanup_stale(dir);
    if (OMPI_SUCCESS != mca_coll_strata_shm_name(path, sizeof(announce->path), dir, why, why_len)) {
        path[0] = '\0';
        return OMPI_ERROR;
    }
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, why_len, "cannot create %s: %s", path, strerror(errno));
        path[0] = '\0'; /* not ours: nobody may unlink it */
        return OMPI_ERROR;
    }
    if (0 != fstat(fd, &st)) {
        snprintf(why, why_len, "cannot stat %s: %s", path, strerror(errno));
        goto err_unlink;
    }
    announce->uid = st.st_uid;
    announce->dev = st.st_dev;
    announce->ino = st.st_ino;
    MCA_COLL_STRATA_VERBOSE(10, "created %s (mode %04o, %zu bytes)", path,
                            (unsigned)(st.st_mode & 07777), shm->size);
    rc = posix_fallocate(fd, 0, (off_t)shm->size);
    if (0 != rc) {
        snprintf(why, why_len, "cannot allocate %zu bytes in %s: %s", shm->size, dir, strerror(rc));
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

/*
 * Whether the file a peer opened (st) is the one local rank 0 created, at
 * the size it gave it.  Where others may write to the directory, the name
 * can have been made to point to another file since rank 0 created it;
 * mapping that would share the job's data with its owner, or leave this
 * rank alone with a segment nobody else writes.
 */
static int mca_coll_strata_shm_check_file(const struct stat *st,
                                          const mca_coll_strata_shm_announce_t *announce,
                                          size_t size, char *why, size_t why_len)
{
    if (!S_ISREG(st->st_mode) || st->st_dev != announce->dev || st->st_ino != announce->ino ||
        st->st_uid != announce->uid) {
        snprintf(why, why_len,
                 "%s is not the file local rank 0 created (inode %lu owner %ld, "
                 "expected inode %lu owner %ld); refusing it",
                 announce->path, (unsigned long)st->st_ino, (long)st->st_uid,
                 (unsigned long)announce->ino, (long)announce->uid);
        return OMPI_ERROR;
    }
    if ((size_t)st->st_size != size) {
        snprintf(why, why_len, "%s has the wrong size", announce->path);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/* The other local ranks: map the file rank 0 announced, and only that one. */
static int mca_coll_strata_shm_open(mca_coll_strata_shm_t *shm,
                                    const mca_coll_strata_shm_announce_t *announce, char *why,
                                    size_t why_len)
{
    struct stat st;
    int fd;

    fd = open(announce->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_len, "cannot open %s: %s", announce->path, strerror(errno));
        return OMPI_ERROR;
    }
    if (0 != fstat(fd, &st)) {
        snprintf(why, why_len, "cannot stat %s: %s", announce->path, strerror(errno));
        close(fd);
        return OMPI_ERROR;
    }
    if (OMPI_SUCCESS != mca_coll_strata_shm_check_file(&st, announce, shm->size, why, why_len)) {
        close(fd);
        return OMPI_ERROR;
    }
    shm->base = mmap(NULL, shm->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (MAP_FAILED == shm->base) {
        shm->base = NULL;
        snprintf(why, why_len, "cannot map %s: %s", announce->path, strerror(errno));
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/*
 * Local rank 0, once the node has agreed: remove the name, if it still
 * names the file rank 0 created (if another file was put there, that file
 * is its owner's; rank 0's own has no name left to remove).
 */
static void mca_coll_strata_shm_unlink(const mca_coll_strata_shm_announce_t *announce)
{
    struct stat st;

    if ('\0' != announce->path[0] && 0 == lstat(announce->path, &st) &&
        st.st_dev == announce->dev && st.st_ino == announce->ino) {
        unlink(announce->path);
    }
}

/*
 * Collective over node_comm.  Returns OMPI_SUCCESS on every local rank or an
 * error on every local rank (with `why` filled where the failure happened).
 * Every local rank takes part in the broadcast and then the agreement,
 * whatever failed before (also one that is not `willing`): a rank that
 * skipped the agreement would leave the others waiting in it.  Nothing here
 * allocates before the agreement, so nothing can fail on one rank alone.
 */
int mca_coll_strata_shm_attach(mca_coll_strata_shm_t *shm, struct ompi_communicator_t *node_comm,
                               bool willing, size_t slot_bytes, int nslots, const char *dir,
                               char *why, size_t why_len)
{
    mca_coll_strata_shm_announce_t announce_buf = {.status = OMPI_ERROR};
    mca_coll_strata_shm_announce_t *announce = &announce_buf;
    int rank = ompi_comm_rank(node_comm);
    int ok, all_ok, rc, bcast_rc;

    shm->base = NULL;
    shm->nranks = ompi_comm_size(node_comm);
    shm->nslots = nslots;
    shm->slot_bytes = slot_bytes;
    shm->size = mca_coll_strata_shm_layout(shm);
    if (0 == shm->size) {
        /* the same on every local rank: all leave here, none waits below */
        snprintf(why, why_len,
                 "a segment of %d slots x %d areas x %zu bytes does not fit in "
                 "memory's address range",
                 nslots, shm->nranks + 1, slot_bytes);
        return OMPI_ERR_BAD_PARAM;
    }

    if (0 == rank && willing) {
        announce->status = mca_coll_strata_shm_create(shm, dir, announce, why, why_len);
    }
    bcast_rc = node_comm->c_coll->coll_bcast(announce, sizeof(*announce), MPI_BYTE, 0, node_comm,
                                             node_comm->c_coll->coll_bcast_module);
    if (OMPI_SUCCESS != bcast_rc) {
        if ('\0' == why[0]) { /* rank 0's own failure, if any, says more */
            snprintf(why, why_len, "broadcast of the segment name failed (%d)", bcast_rc);
        }
        ok = 0;
    } else {
        if (0 != rank && willing && OMPI_SUCCESS == announce->status) {
            announce->status = mca_coll_strata_shm_open(shm, announce, why, why_len);
        }
        /* A rank that merely learns of another's failure leaves `why` empty:
         * only the rank that hit the problem reports it. */
        ok = (willing && OMPI_SUCCESS == announce->status) ? 1 : 0;
    }

    /* Everyone mapped it (or someone failed): unlink, and agree on the outcome. */
    rc = node_comm->c_coll->coll_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node_comm,
                                           node_comm->c_coll->coll_allreduce_module);
    if (0 == rank) {
        mca_coll_strata_shm_unlink(announce);
    }
    if (OMPI_SUCCESS != bcast_rc) {
        rc = bcast_rc;
    } else if (OMPI_SUCCESS != rc) {
        snprintf(why, why_len, "agreement on the segment failed (%d)", rc);
    } else if (!all_ok) {
        rc = OMPI_ERROR;
    } else {
        mca_coll_strata_shm_set_pointers(shm);
        mca_coll_strata_shm_watch_self(shm, rank);
        MCA_COLL_STRATA_VERBOSE(10, "%s: segment of %zu bytes (%d slots of %zu bytes) mapped",
                                node_comm->c_name, shm->size, nslots, slot_bytes);
    }

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
