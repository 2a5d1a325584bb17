/*
 * LD_PRELOAD shim for mpi_strata_shm_swapped_file (test/mpi/tests.sh).  It
 * plays another process that, in a directory it may write to, swaps the file
 * behind a coll/strata segment name between local rank 0's create and a
 * peer's open: before an open() without O_CREAT of a strata_coll.* name it
 * puts another file at that name, of the same size and owner
 * (STRATA_TEST_SWAP=file), or a symlink to such a file (=symlink).  The peer
 * must refuse what it opened.  Prints what it did; a test that sees no such
 * line swapped nothing and proves nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int (*preload_open_fn_t)(const char *path, int flags, ...);

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);

/* The same size and owner as `path`: only its inode tells it apart. */
static int preload_shm_swap_make_other(const char *path, const char *other, off_t size)
{
    preload_open_fn_t real_open = (preload_open_fn_t)dlsym(RTLD_NEXT, "open");
    int fd = real_open(other, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

    if (fd < 0 || 0 != ftruncate(fd, size)) {
        fprintf(stderr, "preload_shm_swap: FAIL: cannot make %s for %s\n", other, path);
        return -1;
    }
    close(fd);
    return 0;
}

static void preload_shm_swap(const char *path, int flags)
{
    const char *mode = getenv("STRATA_TEST_SWAP"), *base = strrchr(path, '/');
    char other[4096], link[4096];
    struct stat st;

    base = (NULL != base) ? base + 1 : path;
    if (NULL == mode || (flags & O_CREAT) || 0 != strncmp(base, "strata_coll.", 12) ||
        0 != lstat(path, &st) || !S_ISREG(st.st_mode)) {
        return;
    }
    snprintf(other, sizeof(other), "%s.other", path);
    if (0 != preload_shm_swap_make_other(path, other, st.st_size)) {
        return;
    }
    if (0 == strcmp(mode, "symlink")) {
        snprintf(link, sizeof(link), "%s.link", path);
        if (0 != symlink(other, link) || 0 != rename(link, path)) {
            fprintf(stderr, "preload_shm_swap: FAIL: cannot put a symlink at %s\n", path);
            return;
        }
        fprintf(stderr, "preload_shm_swap: put a symlink to %s (%lld bytes) at %s\n", other,
                (long long)st.st_size, path);
    } else {
        if (0 != rename(other, path)) {
            fprintf(stderr, "preload_shm_swap: FAIL: cannot rename %s to %s\n", other, path);
            return;
        }
        fprintf(stderr, "preload_shm_swap: put another file (%lld bytes) at %s\n",
                (long long)st.st_size, path);
    }
}

static int preload_shm_swap_open(const char *symbol, const char *path, int flags, mode_t mode)
{
    preload_open_fn_t real_open = (preload_open_fn_t)dlsym(RTLD_NEXT, symbol);

    preload_shm_swap(path, flags);
    return real_open(path, flags, mode);
}

/* The mode argument is there only with O_CREAT or O_TMPFILE. */
#define PRELOAD_SHM_SWAP_MODE(_flags, _mode) \
    do { \
        if (((_flags) & O_CREAT) || ((_flags) & O_TMPFILE) == O_TMPFILE) { \
            va_list ap; \
            va_start(ap, _flags); \
            _mode = (mode_t)va_arg(ap, int); \
            va_end(ap); \
        } \
    } while (0)

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;

    PRELOAD_SHM_SWAP_MODE(flags, mode);
    return preload_shm_swap_open("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;

    PRELOAD_SHM_SWAP_MODE(flags, mode);
    return preload_shm_swap_open("open64", path, flags, mode);
}

/* _FORTIFY_SOURCE's checked open without O_CREAT: plain open, checked. */
int __open_2(const char *path, int flags)
{
    return preload_shm_swap_open("open", path, flags, 0);
}

int __open64_2(const char *path, int flags)
{
    return preload_shm_swap_open("open64", path, flags, 0);
}
