/*
 * Redirecting other objects' references to a function (hook_strata_dt.c).
 *
 * A call from one shared object to a function of another goes through a
 * slot of the caller's global offset table, which the dynamic linker fills
 * with the definition it found first (the relocation R_*_JUMP_SLOT; taking
 * the function's address, R_*_GLOB_DAT).  Symbol interposition can place a
 * definition before the others only when it is loaded before them; this
 * rewrites the slots themselves, in objects already loaded, so their calls
 * reach `replacement` whatever the order.  Objects loaded later still bind
 * the usual way.
 *
 * Neither Open MPI nor UCX is needed here: the unit test
 * (test/mpi/test_hook_reloc.c) compiles this file alone.
 */
#ifndef MCA_HOOK_STRATA_RELOC_H
#define MCA_HOOK_STRATA_RELOC_H

#include <stddef.h>

#define MCA_HOOK_STRATA_RELOC_SKIP 4

typedef struct mca_hook_strata_reloc {
    /* in */
    const char *symbol;
    void *replacement;
    /* objects left alone: those holding any of these addresses (NULL: unused) */
    const void *skip[MCA_HOOK_STRATA_RELOC_SKIP];
    /* if not NULL, the one object to patch: the one holding this address;
     * the others keep their bindings */
    const void *only;
    /* the object holding this address (NULL: none), counted apart in
     * patched_in_marked */
    const void *marked;
    /* called for each slot that now holds `replacement` (NULL: none);
     * object: the object's path as the dynamic linker has it ("" for the
     * executable); changed: 0 when the slot held it already.  It runs
     * inside dl_iterate_phdr: no dlopen, dlclose or dlsym there. */
    void (*report)(void *arg, const char *object, void *const *slot, int changed);
    void *arg;
    /* out */
    size_t patched;           /* slots holding `replacement` now */
    size_t patched_in_marked; /* of those, in the marked object */
    char error[256];          /* why -1 was returned */
} mca_hook_strata_reloc_t;

/* Points every JUMP_SLOT and GLOB_DAT relocation for r->symbol, in every
 * loaded object but the skipped ones (or in r->only's), at r->replacement.  A slot on a
 * read-only page (RELRO, -z now) is written with the page made writable for
 * the write alone, its protection restored after.  Returns r->patched, or
 * -1 with r->error set: a slot that could not be written (the slots before
 * it stay written), or a platform without support (x86_64 and aarch64
 * have it).  Objects stay loaded while it runs (dl_iterate_phdr holds
 * the dynamic linker's lock); other threads may call through the slots
 * meanwhile: each is one aligned store, so a call takes the old target or
 * the new. */
int mca_hook_strata_reloc_redirect(mca_hook_strata_reloc_t *r);

#endif /* MCA_HOOK_STRATA_RELOC_H */
