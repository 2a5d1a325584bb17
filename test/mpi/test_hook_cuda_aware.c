/*
 * hook/strata's CUDA-aware helpers alone (ompi_hook/hook_strata_cuda_aware_util.c):
 * UCX_TLS without Strata's transports, and "return 0" rewritten to
 * "return 1" in a function of this program's own code (compiled with
 * -O2: `xor %eax,%eax; ret` and padding, as Open MPI 4.1's
 * MPIX_Query_cuda_support), a function that does more left alone.
 */
#include "hook_strata_cuda_aware.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static int failures;

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            printf("FAIL: " __VA_ARGS__); \
            printf("\n"); \
            failures++; \
        } \
    } while (0)

__attribute__((noinline, aligned(16))) int probe_return_zero(void) { return 0; }

static volatile int probe_state = 7;
__attribute__((noinline, aligned(16))) int probe_does_more(void) { return probe_state > 3; }

static void check_tls(const char *tls, const char *want, int removed)
{
    char out[256];
    int r = mca_hook_strata_cuda_aware_tls_without(tls, "gpu_copy,gpu_ipc", out, sizeof(out));

    CHECK(r == removed && 0 == strcmp(out, want), "UCX_TLS '%s' -> '%s' (%d), expected '%s' (%d)",
          tls, out, r, want, removed);
}

#if defined(__x86_64__)
/* One case of hand-made machine code at `offset` in a page (never run):
 * rewritten (want 0, the bytes then "mov $1,%eax; ret") or refused (-1). */
static void check_bytes(const char *what, size_t offset, const uint8_t *code, size_t len, int want)
{
    static const uint8_t ret1[] = {0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3};
    uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t skip = (code[0] == 0xf3) ? 4 : 0;
    char why[160] = "";
    int rc;

    memset(page, 0xcc, 4096);
    memcpy(page + offset, code, len);
    rc = mca_hook_strata_cuda_aware_return_one(page + offset, why, sizeof(why));
    CHECK(rc == want, "%s: rc %d, expected %d (%s)", what, rc, want, why);
    if (0 == want) {
        CHECK(0 == memcmp(page + offset + skip, ret1, sizeof(ret1)), "%s: not rewritten", what);
    } else {
        CHECK(0 == memcmp(page + offset, code, len), "%s: changed although refused", what);
        printf("%s: refused: %s\n", what, why);
    }
    munmap(page, 4096);
}

static void check_x86_64_bytes(void)
{
    /* Open MPI 4.1.4's, as Debian 12 ships it */
    static const uint8_t debian[] = {0x31, 0xc0, 0xc3, 0x66, 0x2e, 0x0f, 0x1f, 0x84,
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x1f, 0x00};
    static const uint8_t cet[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x31, 0xc0, 0xc3, 0x66,
                                  0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00};
    static const uint8_t then_code[] = {0x31, 0xc0, 0xc3, 0x48, 0x89, 0xe5, 0x90, 0x90};
    static const uint8_t other[] = {0x8b, 0x05, 0x00, 0x00, 0x00, 0x00, 0xc3};

    check_bytes("return 0 and padding", 0, debian, sizeof(debian), 0);
    check_bytes("endbr64, return 0 and padding", 16, cet, sizeof(cet), 0);
    check_bytes("return 0, then code", 32, then_code, sizeof(then_code), -1);
    check_bytes("return 0, 2 bytes before the next function", 48 + 11, debian, 5, -1);
    check_bytes("a load and return", 64, other, sizeof(other), -1);
}
#endif

int main(void)
{
    int (*volatile zero)(void) = probe_return_zero;
    int (*volatile more)(void) = probe_does_more;
    char why[160];
    int rc;

#if defined(__x86_64__)
    check_x86_64_bytes();
#endif
    check_tls("self,sm,gpu_copy,gpu_ipc", "self,sm", 1);
    check_tls("gpu_ipc,self,sm,gpu_copy", "self,sm", 1);
    check_tls("self,sm,rc,gpu_copy", "self,sm,rc", 1);
    check_tls("self,sm,tcp", "self,sm,tcp", 0);
    check_tls("^gpu_copy", "^gpu_copy", 0);                       /* a negated list stays */
    check_tls("gpu_copy,gpu_ipc", "gpu_copy,gpu_ipc", 0);         /* nothing would be left */
    check_tls("self,,gpu_copy_x,gpu_copy", "self,gpu_copy_x", 1); /* names, not prefixes */
    CHECK(mca_hook_strata_cuda_aware_tls_names("self,sm,gpu_copy,gpu_ipc", "gpu_copy") &&
              !mca_hook_strata_cuda_aware_tls_names("self,sm,rc,gpu_copy_x", "gpu_copy"),
          "tls_names");

    CHECK(0 == zero(), "probe_return_zero() before");
    rc = mca_hook_strata_cuda_aware_return_one((void *)probe_return_zero, why, sizeof(why));
#if defined(__x86_64__) || defined(__aarch64__)
    CHECK(0 == rc, "rewriting 'return 0' failed: %s", why);
    CHECK(1 == zero(), "probe_return_zero() after the rewrite returns %d", zero());
    rc = mca_hook_strata_cuda_aware_return_one((void *)probe_return_zero, why, sizeof(why));
    CHECK(0 == rc && 1 == zero(), "a second rewrite: %d (%s)", rc, why);
#endif
    rc = mca_hook_strata_cuda_aware_return_one((void *)probe_does_more, why, sizeof(why));
    CHECK(-1 == rc && 1 == more(), "a function that does more was rewritten (rc %d)", rc);
    printf("rewrite of other code refused: %s\n", why);
    if (0 == failures) printf("test_hook_cuda_aware: all checks passed\n");
    return failures ? 1 : 0;
}
