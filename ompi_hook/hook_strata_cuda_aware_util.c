/*
 * The parts of hook_strata_cuda_aware.h that need neither Open MPI nor CUDA
 * (the unit test, test/mpi/test_hook_cuda_aware.c, compiles this file
 * alone): rewriting a "return 0" function to return 1, and UCX_TLS without
 * some names.
 */
#include "hook_strata_cuda_aware.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HOOK_STRATA_CA_WHY(_why, _max, ...) (snprintf((_why), (_max), __VA_ARGS__), -1)

#if defined(__x86_64__)
/* endbr64, on builds with -fcf-protection (Ubuntu's), comes first */
static const uint8_t hook_strata_ca_endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
static const uint8_t hook_strata_ca_ret0[]    = {0x31, 0xc0, 0xc3}; /* xor eax,eax; ret */
static const uint8_t hook_strata_ca_ret1[]    = {0xb8, 0x01, 0x00,
                                                 0x00, 0x00, 0xc3}; /* mov eax,1; ret */

/* The no-operation encodings assemblers pad between functions with (each
 * may carry 0x66 prefixes), and int3. */
static const struct {
    uint8_t len;
    uint8_t code[9];
} hook_strata_ca_nops[] = {
    {1, {0x90}},
    {1, {0xcc}},
    {3, {0x0f, 0x1f, 0x00}},
    {4, {0x0f, 0x1f, 0x40, 0x00}},
    {5, {0x0f, 0x1f, 0x44, 0x00, 0x00}},
    {7, {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00}},
    {8, {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {9, {0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}},
};

/* Length of the padding instruction at p (before `end`), 0 if it is not one. */
static size_t hook_strata_ca_nop_len(const uint8_t *p, const uint8_t *end)
{
    size_t prefixes = 0, i;

    while (p + prefixes < end && 0x66 == p[prefixes]) {
        prefixes++;
    }
    for (i = 0; i < sizeof(hook_strata_ca_nops) / sizeof(hook_strata_ca_nops[0]); i++) {
        if (p + prefixes + hook_strata_ca_nops[i].len <= end &&
            0 == memcmp(p + prefixes, hook_strata_ca_nops[i].code, hook_strata_ca_nops[i].len)) {
            return prefixes + hook_strata_ca_nops[i].len;
        }
    }
    return 0;
}

/* Where the "return 0" body starts, or NULL.  The longer "return 1" runs
 * over what follows it, so that must be alignment padding: nothing but
 * padding instructions up to the next 16-byte boundary (where the next
 * function starts), at least 3 bytes of it. */
static uint8_t *hook_strata_ca_locate(uint8_t *code, size_t *len, const uint8_t **with, char *why,
                                      size_t max)
{
    const uint8_t *p, *end;
    size_t n;

    if (0 == memcmp(code, hook_strata_ca_endbr64, sizeof(hook_strata_ca_endbr64))) {
        code += sizeof(hook_strata_ca_endbr64);
    }
    if (0 == memcmp(code, hook_strata_ca_ret1, sizeof(hook_strata_ca_ret1))) {
        *len = 0; /* returns 1 already */
        return code;
    }
    if (0 != memcmp(code, hook_strata_ca_ret0, sizeof(hook_strata_ca_ret0))) {
        snprintf(why, max, "its code is not 'return 0' (%02x %02x %02x)", code[0], code[1],
                 code[2]);
        return NULL;
    }
    p   = code + sizeof(hook_strata_ca_ret0);
    end = (const uint8_t *)(((uintptr_t)p + 15) & ~(uintptr_t)15);
    if (end < code + sizeof(hook_strata_ca_ret1)) {
        snprintf(why, max, "no room after its 'return 0' before the next function");
        return NULL;
    }
    for (; p < end; p += n) {
        n = hook_strata_ca_nop_len(p, end);
        if (0 == n) {
            snprintf(why, max, "its 'return 0' is followed by code, not padding (%02x at +%zu)", *p,
                     (size_t)(p - code));
            return NULL;
        }
    }
    *len  = sizeof(hook_strata_ca_ret1);
    *with = hook_strata_ca_ret1;
    return code;
}
#elif defined(__aarch64__)
static const uint32_t hook_strata_ca_ret0[] = {0x52800000, 0xd65f03c0}; /* mov w0,#0; ret */
static const uint32_t hook_strata_ca_ret1[] = {0x52800020};             /* mov w0,#1 */

static uint8_t *hook_strata_ca_locate(uint8_t *code, size_t *len, const uint8_t **with, char *why,
                                      size_t max)
{
    if (0 == memcmp(code, hook_strata_ca_ret1, sizeof(hook_strata_ca_ret1)) &&
        0 == memcmp(code + 4, &hook_strata_ca_ret0[1], 4)) {
        *len = 0;
        return code;
    }
    if (0 != memcmp(code, hook_strata_ca_ret0, sizeof(hook_strata_ca_ret0))) {
        snprintf(why, max, "its code is not 'return 0'");
        return NULL;
    }
    *len  = sizeof(hook_strata_ca_ret1);
    *with = (const uint8_t *)hook_strata_ca_ret1;
    return code;
}
#endif

/* Another thread may call the function meanwhile: what runs must be the old
 * code or the new, never a mix.  The bytes past the old `ret` (padding, never
 * run) go first; then the first 4 bytes, the instruction that changes, in
 * one aligned store. */
static void hook_strata_ca_write(uint8_t *code, const uint8_t *with, size_t len)
{
    uint32_t head;

    if (len < sizeof(head) || 0 != ((uintptr_t)code & (sizeof(head) - 1))) {
        memcpy(code, with, len);
        return;
    }
    memcpy(code + sizeof(head), with + sizeof(head), len - sizeof(head));
    memcpy(&head, with, sizeof(head));
    __atomic_store_n((uint32_t *)(void *)code, head, __ATOMIC_SEQ_CST);
}

int mca_hook_strata_cuda_aware_return_one(void *fn, char *why, size_t max)
{
#if defined(__x86_64__) || defined(__aarch64__)
    const uint8_t *with = NULL;
    uintptr_t page, first, last;
    uint8_t *code;
    size_t len;

    code = hook_strata_ca_locate((uint8_t *)fn, &len, &with, why, max);
    if (NULL == code) {
        return -1;
    }
    if (0 == len) {
        return 0;
    }
    page  = (uintptr_t)sysconf(_SC_PAGESIZE);
    first = (uintptr_t)code & ~(page - 1);
    last  = ((uintptr_t)code + len + page - 1) & ~(page - 1);
    /* Executable throughout: another thread may run code on the same page
     * meanwhile.  A system that forbids writable code (SELinux execmod)
     * refuses here, and the answer stays 0. */
    if (0 != mprotect((void *)first, last - first, PROT_READ | PROT_WRITE | PROT_EXEC)) {
        return HOOK_STRATA_CA_WHY(why, max, "its code page cannot be made writable (%m)");
    }
    hook_strata_ca_write(code, with, len);
    __builtin___clear_cache((char *)code, (char *)code + len);
    if (0 != mprotect((void *)first, last - first, PROT_READ | PROT_EXEC)) {
        return HOOK_STRATA_CA_WHY(why, max, "its code page's protection cannot be restored (%m)");
    }
    return 0;
#else
    return HOOK_STRATA_CA_WHY(why, max, "not supported on this processor (x86_64, aarch64 are)");
#endif
}

/* Is `name` (of length len) one of drop's comma-separated names? */
static int hook_strata_ca_listed(const char *drop, const char *name, size_t len)
{
    const char *p = drop, *comma;

    while (*p != '\0') {
        comma = strchr(p, ',');
        if (((NULL == comma) ? strlen(p) : (size_t)(comma - p)) == len &&
            0 == strncmp(p, name, len)) {
            return 1;
        }
        if (NULL == comma) {
            break;
        }
        p = comma + 1;
    }
    return 0;
}

int mca_hook_strata_cuda_aware_tls_names(const char *tls, const char *name)
{
    return hook_strata_ca_listed(tls, name, strlen(name));
}

int mca_hook_strata_cuda_aware_tls_without(const char *tls, const char *drop, char *out, size_t max)
{
    const char *p = tls, *comma;
    size_t len, used = 0;
    int removed = 0;

    if (strlen(tls) >= max) {
        return 0;
    }
    out[0] = '\0';
    if ('^' == tls[0]) {
        strcpy(out, tls); /* a list of what not to use: nothing to take out */
        return 0;
    }
    while (*p != '\0') {
        comma = strchr(p, ',');
        len   = (NULL == comma) ? strlen(p) : (size_t)(comma - p);
        if (hook_strata_ca_listed(drop, p, len)) {
            removed = 1;
        } else if (len > 0) {
            if (used > 0) {
                out[used++] = ',';
            }
            memcpy(out + used, p, len);
            used += len;
            out[used] = '\0';
        }
        if (NULL == comma) {
            break;
        }
        p = comma + 1;
    }
    if (!removed || 0 == used) {
        strcpy(out, tls);
        return 0;
    }
    return 1;
}
