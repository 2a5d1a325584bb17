/*
 * hook/strata's GOT redirection (ompi_hook/hook_strata_reloc.c), alone, on
 * this program's own references to libucp, as libmpi has them in Open MPI
 * 5.0: it takes ucp_dt_create_generic's address (a GLOB_DAT slot, which
 * its calls use too) and calls ucp_dt_destroy (a JUMP_SLOT, not yet bound
 * when redirected in the lazily bound build).  For each it redirects the
 * slots to a function of its own and checks:
 *   - calls (and the address taken) reach the replacement; libucp's
 *     definition, as dlsym finds it, is unchanged and still works;
 *   - the slots' pages have the protection they had: read-only (RELRO)
 *     pages are written by making them writable for the write alone (the
 *     GLOB_DAT slot; built with -z now, test_hook_reloc_now, the JUMP_SLOT
 *     too);
 *   - a second run finds the slots written already, and counts them;
 *   - a skipped object (the executable itself) is left alone, and so is
 *     every object but `only`'s when that is set;
 *   - redirecting back restores the original calls.
 * Prints "ok" lines and exits 0, or says what failed and exits 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "hook_strata_reloc.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

/* 1: built with -z now (test_hook_reloc_now) */
#ifndef STEST_BIND_NOW
#define STEST_BIND_NOW 0
#endif

typedef ucs_status_t (*create_fn_t)(const ucp_generic_dt_ops_t *, void *, ucp_datatype_t *);
typedef void (*destroy_fn_t)(ucp_datatype_t);

static int failures;
static create_fn_t libucp_create;
static destroy_fn_t libucp_destroy;
static int replacement_calls, replacement_destroy_calls;

#define CHECK(_cond, ...) \
    do { \
        if (_cond) { \
            printf("ok: " __VA_ARGS__); \
        } else { \
            printf("FAILED: " __VA_ARGS__); \
            ++failures; \
        } \
        printf("\n"); \
    } while (0)

static ucs_status_t replacement(const ucp_generic_dt_ops_t *ops, void *context,
                                ucp_datatype_t *datatype_p)
{
    ++replacement_calls;
    return libucp_create(ops, context, datatype_p);
}

static void replacement_destroy(ucp_datatype_t datatype)
{
    ++replacement_destroy_calls;
    libucp_destroy(datatype);
}

static void *start_pack(void *context, const void *buffer, size_t count) { return NULL; }
static void *start_unpack(void *context, void *buffer, size_t count) { return NULL; }
static size_t packed_size(void *state) { return 0; }
static size_t pack(void *state, size_t offset, void *dest, size_t max_length) { return 0; }
static ucs_status_t unpack(void *state, size_t offset, const void *src, size_t length)
{
    return UCS_OK;
}
static void finish(void *state) {}

static const ucp_generic_dt_ops_t ops = {start_pack, start_unpack, packed_size,
                                         pack,       unpack,       finish};

/* A call to ucp_dt_create_generic (through the slot of its address); the
 * datatype is destroyed by libucp's definition. */
__attribute__((noinline)) static ucs_status_t call_create(void)
{
    ucp_datatype_t dt;
    ucs_status_t status = ucp_dt_create_generic(&ops, NULL, &dt);

    if (status == UCS_OK) {
        libucp_destroy(dt);
    }
    return status;
}

/* A call to ucp_dt_destroy through its PLT slot (JUMP_SLOT): its address
 * is never taken here. */
__attribute__((noinline)) static int call_destroy(void)
{
    ucp_datatype_t dt;

    if (libucp_create(&ops, NULL, &dt) != UCS_OK) {
        return -1;
    }
    ucp_dt_destroy(dt);
    return 0;
}

/* The function's address as this program sees it (its GLOB_DAT slot). */
__attribute__((noinline)) static void *address_taken(void)
{
    void *volatile p = (void *)ucp_dt_create_generic;
    return p;
}

/* The protection of the page of addr in /proc/self/maps ("r--p"...), or "". */
static void page_perms(const void *addr, char perms[5])
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    uintptr_t lo, hi;

    perms[0] = '\0';
    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        if ((sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3) && ((uintptr_t)addr >= lo) &&
            ((uintptr_t)addr < hi)) {
            break;
        }
        perms[0] = '\0';
    }
    if (f != NULL) {
        fclose(f);
    }
}

#define MAX_SLOTS 16

typedef struct {
    void *const *slot[MAX_SLOTS];
    char perms_before[MAX_SLOTS][5];
    int n, changed, in_exe;
} seen_t;

static void report(void *arg, const char *object, void *const *slot, int changed)
{
    seen_t *seen = arg;

    printf("  slot %p of %s, %s\n", (void *)slot, object[0] ? object : "the executable",
           changed ? "written" : "held it already");
    if (seen->n < MAX_SLOTS) {
        seen->slot[seen->n++] = slot;
    }
    seen->changed += changed;
    seen->in_exe += (object[0] == '\0');
}

int main(void)
{
    void *ucp = dlopen("libucp.so.0", RTLD_NOW | RTLD_NOLOAD);
    mca_hook_strata_reloc_t r;
    seen_t seen = {0};
    char perms[5];
    int n, i, read_only = 0;

    libucp_create = (ucp != NULL) ? (create_fn_t)dlsym(ucp, "ucp_dt_create_generic") : NULL;
    libucp_destroy = (ucp != NULL) ? (destroy_fn_t)dlsym(ucp, "ucp_dt_destroy") : NULL;
    if ((libucp_create == NULL) || (libucp_destroy == NULL)) {
        printf("FAILED: libucp.so.0 or its ucp_dt_create_generic/ucp_dt_destroy not found\n");
        return 1;
    }

    /* A. ucp_dt_destroy's JUMP_SLOT, redirected before its first call */
    memset(&r, 0, sizeof(r));
    r.symbol = "ucp_dt_destroy";
    r.replacement = (void *)replacement_destroy;
    r.skip[0] = (const void *)libucp_destroy;
    r.marked = (const void *)main;
    r.report = report;
    r.arg = &seen;
    n = mca_hook_strata_reloc_redirect(&r);
    CHECK(n >= 1 && seen.in_exe == n && seen.changed == n,
          "ucp_dt_destroy: %d slot(s) of the executable written%s%s", n, r.error[0] ? ": " : "",
          r.error);
    for (i = 0; i < seen.n; ++i) {
        page_perms(seen.slot[i], perms);
        printf("  slot %p: page %s\n", (void *)seen.slot[i], perms);
        /* -z now: .got.plt is RELRO, read-only; lazily: written by ld.so */
        CHECK(strcmp(perms, STEST_BIND_NOW ? "r--p" : "rw-p") == 0,
              "slot %p's page is %s, as the loader left it", (void *)seen.slot[i],
              STEST_BIND_NOW ? "read-only" : "read-write");
    }
    CHECK(call_destroy() == 0 && replacement_destroy_calls == 1,
          "ucp_dt_destroy: a call reaches the replacement, which forwards to libucp");
    seen.n = seen.changed = seen.in_exe = 0;
    r.replacement = (void *)libucp_destroy;
    CHECK(mca_hook_strata_reloc_redirect(&r) == n && seen.changed == n && call_destroy() == 0 &&
              replacement_destroy_calls == 1,
          "ucp_dt_destroy: redirected back, calls reach libucp's definition");

    /* B. ucp_dt_create_generic's GLOB_DAT slot */
    seen.n = seen.changed = seen.in_exe = 0;
    CHECK(address_taken() == (void *)libucp_create, "before: the address taken is libucp's");
    CHECK(call_create() == UCS_OK && replacement_calls == 0,
          "before: a call reaches libucp's definition");
    r.symbol = "ucp_dt_create_generic";
    r.skip[0] = (const void *)libucp_create;

    /* 0. the slots as they are: "redirected" to what they hold already */
    r.replacement = (void *)libucp_create;
    n = mca_hook_strata_reloc_redirect(&r);
    CHECK(n >= 1 && seen.changed == 0, "%d slot(s) found holding libucp's definition", n);
    for (i = 0; i < seen.n; ++i) {
        page_perms(seen.slot[i], seen.perms_before[i]);
        printf("  slot %p: page %s\n", (void *)seen.slot[i], seen.perms_before[i]);
        read_only += (strcmp(seen.perms_before[i], "r--p") == 0);
    }
    CHECK(read_only >= 1, "%d slot(s) on a read-only page (RELRO)", read_only);

    /* 1. redirect: the executable's slots (libucp's own left alone) */
    seen.n = seen.changed = seen.in_exe = 0;
    r.replacement = (void *)replacement;
    CHECK(mca_hook_strata_reloc_redirect(&r) == n && r.patched == (size_t)n,
          "redirect returns the number of slots, %d", n);
    CHECK(r.patched_in_marked == (size_t)n && seen.in_exe == n,
          "they are the executable's, counted as the marked object's");
    CHECK(seen.changed == n, "each slot was written");
    CHECK(call_create() == UCS_OK && replacement_calls == 1,
          "after: a call reaches the replacement, which forwards to libucp");
    CHECK(address_taken() == (void *)replacement, "after: the address taken is the replacement");
    CHECK(dlsym(ucp, "ucp_dt_create_generic") == (void *)libucp_create &&
              dlsym(RTLD_DEFAULT, "ucp_dt_create_generic") == (void *)libucp_create,
          "dlsym still finds libucp's own definition");
    for (i = 0; i < seen.n; ++i) {
        page_perms(seen.slot[i], perms);
        CHECK(strcmp(perms, seen.perms_before[i]) == 0,
              "slot %p's page has its protection back (%s)", (void *)seen.slot[i], perms);
    }

    /* 2. again: the same slots, none written */
    seen.n = seen.changed = seen.in_exe = 0;
    CHECK(mca_hook_strata_reloc_redirect(&r) == n && seen.changed == 0,
          "a second redirect counts the same slots and writes none");

    /* 3. the executable skipped: nothing else refers to the symbol */
    seen.n = seen.changed = seen.in_exe = 0;
    r.skip[1] = (const void *)main;
    CHECK(mca_hook_strata_reloc_redirect(&r) == 0 && seen.in_exe == 0,
          "a skipped object is left alone");
    r.skip[1] = NULL;

    /* 3b. only another object patched (libc's, which does not refer to
     * the symbol): the executable keeps its bindings */
    seen.n = seen.changed = seen.in_exe = 0;
    r.only = (const void *)&fprintf;
    CHECK(mca_hook_strata_reloc_redirect(&r) == 0 && seen.in_exe == 0,
          "with `only` set, the other objects are left alone");
    r.only = NULL;

    /* 4. back to libucp's definition */
    seen.n = seen.changed = seen.in_exe = 0;
    r.replacement = (void *)libucp_create;
    CHECK(mca_hook_strata_reloc_redirect(&r) == n && seen.changed == n,
          "redirecting back writes the same slots");
    CHECK(call_create() == UCS_OK && replacement_calls == 1 &&
              address_taken() == (void *)libucp_create,
          "calls reach libucp's definition again");
    for (i = 0; i < seen.n; ++i) {
        page_perms(seen.slot[i], perms);
        CHECK(strcmp(perms, seen.perms_before[i]) == 0,
              "slot %p's page has its protection back (%s)", (void *)seen.slot[i], perms);
    }

    /* 5. a symbol nobody refers to, and bad arguments */
    r.symbol = "strata_no_such_symbol";
    CHECK(mca_hook_strata_reloc_redirect(&r) == 0, "an unknown symbol: no slot");
    r.replacement = NULL;
    CHECK(mca_hook_strata_reloc_redirect(&r) == -1 && r.error[0] != '\0',
          "no replacement: -1 with a reason (%s)", r.error);

    printf("%s\n", failures ? "test_hook_reloc: FAILED" : "test_hook_reloc: all ok");
    return failures ? 1 : 0;
}
