/*
 * Redirecting other objects' references to a function (hook_strata_reloc.h).
 *
 * Each loaded object (dl_iterate_phdr) is read from its dynamic section:
 * the PLT relocations (DT_JMPREL, DT_PLTRELSZ, of the kind DT_PLTREL says)
 * and the others (DT_RELA, DT_RELASZ) name, through the dynamic symbol
 * table (DT_SYMTAB, DT_STRTAB, DT_STRSZ), the symbol each slot is for.
 * Every table and slot is checked to lie in one of the object's loaded
 * segments before it is read or written.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif

#include "hook_strata_reloc.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ELF64_R_SYM and the like for this word size (glibc keeps its own ELFW
 * to itself). */
#ifndef ELFW
#define ELFW(type) _ElfW(ELF, __ELF_NATIVE_CLASS, type)
#endif

#if defined(__x86_64__)
#define MCA_HOOK_STRATA_RELOC_JUMP_SLOT R_X86_64_JUMP_SLOT
#define MCA_HOOK_STRATA_RELOC_GLOB_DAT  R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define MCA_HOOK_STRATA_RELOC_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define MCA_HOOK_STRATA_RELOC_GLOB_DAT  R_AARCH64_GLOB_DAT
#endif

#ifdef MCA_HOOK_STRATA_RELOC_JUMP_SLOT

typedef struct mca_hook_strata_reloc_walk {
    mca_hook_strata_reloc_t *r;
    uintptr_t page_size;
    size_t name_len; /* of r->symbol, with its NUL */
    int failed;
} mca_hook_strata_reloc_walk_t;

/* One object, as its dynamic section describes it. */
typedef struct mca_hook_strata_reloc_object {
    const struct dl_phdr_info *info;
    const ElfW(Sym) * symtab;
    const char *strtab;
    size_t strsz;
    int marked;
} mca_hook_strata_reloc_object_t;

/* The object's loaded segment holding [addr, addr + len), NULL if none. */
static const ElfW(Phdr) *
    mca_hook_strata_reloc_segment(const struct dl_phdr_info *info, uintptr_t addr, size_t len)
{
    ElfW(Half) i;

    for (i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start      = info->dlpi_addr + ph->p_vaddr;

        if ((ph->p_type == PT_LOAD) && (addr >= start) && (addr - start <= ph->p_memsz) &&
            (len <= ph->p_memsz - (addr - start))) {
            return ph;
        }
    }
    return NULL;
}

static int mca_hook_strata_reloc_holds(const struct dl_phdr_info *info, const void *addr)
{
    return (addr != NULL) && (mca_hook_strata_reloc_segment(info, (uintptr_t)addr, 1) != NULL);
}

/* A pointer of the dynamic section: glibc rewrites them in place to
 * addresses, other loaders (and glibc, for the vDSO) leave offsets from the
 * load address; an offset is below that address. */
static uintptr_t mca_hook_strata_reloc_dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) value)
{
    return (value < info->dlpi_addr) ? info->dlpi_addr + value : value;
}

/* The protection the dynamic linker left on the page of `addr`: its
 * segment's, less write access once the page is in the RELRO part
 * (which the linker protects whole pages of, rounded down at both ends). */
static int mca_hook_strata_reloc_prot(const struct dl_phdr_info *info, const ElfW(Phdr) * seg,
                                      uintptr_t addr, uintptr_t page_size)
{
    int prot = ((seg->p_flags & PF_R) ? PROT_READ : 0) | ((seg->p_flags & PF_W) ? PROT_WRITE : 0) |
               ((seg->p_flags & PF_X) ? PROT_EXEC : 0);
    ElfW(Half) i;

    for (i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start      = (info->dlpi_addr + ph->p_vaddr) & ~(page_size - 1);
        uintptr_t end        = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(page_size - 1);

        if ((ph->p_type == PT_GNU_RELRO) && (addr >= start) && (addr < end)) {
            prot &= ~PROT_WRITE;
        }
    }
    return prot;
}

/* Points one slot at the replacement: 0, or -1 with r->error set. */
static int mca_hook_strata_reloc_write(mca_hook_strata_reloc_walk_t *w,
                                       const mca_hook_strata_reloc_object_t *o, void **slot,
                                       const ElfW(Phdr) * seg)
{
    mca_hook_strata_reloc_t *r = w->r;
    const char *name = (o->info->dlpi_name[0] != '\0') ? o->info->dlpi_name : "the executable";
    uintptr_t page   = (uintptr_t)slot & ~(w->page_size - 1);
    int changed      = 0, prot;

    if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) != r->replacement) {
        prot = mca_hook_strata_reloc_prot(o->info, seg, (uintptr_t)slot, w->page_size);
        if (!(prot & PROT_WRITE) &&
            (mprotect((void *)page, w->page_size, prot | PROT_WRITE) != 0)) {
            snprintf(r->error, sizeof(r->error),
                     "cannot make the page of %s's slot for %s (%p) writable: mprotect: %s", name,
                     r->symbol, (void *)slot, strerror(errno));
            return -1;
        }
        /* one aligned store: a concurrent call takes the old or the new */
        __atomic_store_n(slot, r->replacement, __ATOMIC_RELEASE);
        changed = 1;
        if (!(prot & PROT_WRITE) && (mprotect((void *)page, w->page_size, prot) != 0)) {
            snprintf(r->error, sizeof(r->error),
                     "redirected %s's slot for %s (%p), but cannot make its page read-only "
                     "again: mprotect: %s",
                     name, r->symbol, (void *)slot, strerror(errno));
            return -1;
        }
    }
    ++r->patched;
    if (o->marked) {
        ++r->patched_in_marked;
    }
    if (r->report != NULL) {
        r->report(r->arg, o->info->dlpi_name, slot, changed);
    }
    return 0;
}

/* The relocations [relocs, relocs + bytes) of the object: 0, or -1. */
static int mca_hook_strata_reloc_table(mca_hook_strata_reloc_walk_t *w,
                                       const mca_hook_strata_reloc_object_t *o, uintptr_t relocs,
                                       size_t bytes)
{
    const ElfW(Rela) *rel = (const ElfW(Rela) *)relocs;
    size_t i, n = bytes / sizeof(*rel);

    if ((n == 0) || (mca_hook_strata_reloc_segment(o->info, relocs, bytes) == NULL)) {
        return 0;
    }
    for (i = 0; i < n; ++i) {
        size_t type = ELFW(R_TYPE)(rel[i].r_info), index = ELFW(R_SYM)(rel[i].r_info);
        const ElfW(Sym) *sym = o->symtab + index;
        uintptr_t slot       = o->info->dlpi_addr + rel[i].r_offset;
        const ElfW(Phdr) * seg;

        if (((type != MCA_HOOK_STRATA_RELOC_JUMP_SLOT) &&
             (type != MCA_HOOK_STRATA_RELOC_GLOB_DAT)) ||
            (index == 0) ||
            (mca_hook_strata_reloc_segment(o->info, (uintptr_t)sym, sizeof(*sym)) == NULL) ||
            (sym->st_name >= o->strsz) || (o->strsz - sym->st_name < w->name_len) ||
            (memcmp(o->strtab + sym->st_name, w->r->symbol, w->name_len) != 0) ||
            (slot % sizeof(void *) != 0) ||
            ((seg = mca_hook_strata_reloc_segment(o->info, slot, sizeof(void *))) == NULL)) {
            continue;
        }
        if (mca_hook_strata_reloc_write(w, o, (void **)slot, seg) != 0) {
            return -1;
        }
    }
    return 0;
}

static int mca_hook_strata_reloc_visit(struct dl_phdr_info *info, size_t size, void *data)
{
    mca_hook_strata_reloc_walk_t *w  = data;
    mca_hook_strata_reloc_object_t o = {info, NULL, NULL, 0, 0};
    uintptr_t jmprel = 0, rela = 0, symtab = 0, strtab = 0;
    size_t pltrelsz = 0, relasz = 0, i;
    ElfW(Sxword) pltrel  = DT_RELA;
    const ElfW(Dyn) *dyn = NULL;

    if ((w->r->only != NULL) && !mca_hook_strata_reloc_holds(info, w->r->only)) {
        return 0;
    }
    for (i = 0; i < MCA_HOOK_STRATA_RELOC_SKIP; ++i) {
        if (mca_hook_strata_reloc_holds(info, w->r->skip[i])) {
            return 0;
        }
    }
    for (i = 0; i < info->dlpi_phnum; ++i) {
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        }
    }
    if (dyn == NULL) {
        return 0;
    }
    for (; dyn->d_tag != DT_NULL; ++dyn) {
        switch (dyn->d_tag) {
        case DT_JMPREL:
            jmprel = mca_hook_strata_reloc_dyn_ptr(info, dyn->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            pltrelsz = dyn->d_un.d_val;
            break;
        case DT_PLTREL:
            pltrel = dyn->d_un.d_val;
            break;
        case DT_RELA:
            rela = mca_hook_strata_reloc_dyn_ptr(info, dyn->d_un.d_ptr);
            break;
        case DT_RELASZ:
            relasz = dyn->d_un.d_val;
            break;
        case DT_SYMTAB:
            symtab = mca_hook_strata_reloc_dyn_ptr(info, dyn->d_un.d_ptr);
            break;
        case DT_STRTAB:
            strtab = mca_hook_strata_reloc_dyn_ptr(info, dyn->d_un.d_ptr);
            break;
        case DT_STRSZ:
            o.strsz = dyn->d_un.d_val;
            break;
        }
    }
    if ((symtab == 0) || (strtab == 0) ||
        (mca_hook_strata_reloc_segment(info, strtab, o.strsz) == NULL)) {
        return 0;
    }
    o.symtab = (const ElfW(Sym) *)symtab;
    o.strtab = (const char *)strtab;
    o.marked = mca_hook_strata_reloc_holds(info, w->r->marked);
    /* x86_64 and aarch64 relocate with addends (Rela) only */
    if ((pltrel == DT_RELA) && (jmprel != 0) &&
        /* some linkers count the PLT relocations in DT_RELASZ too */
        !((jmprel >= rela) && (jmprel - rela < relasz) && (pltrelsz <= relasz - (jmprel - rela))) &&
        (mca_hook_strata_reloc_table(w, &o, jmprel, pltrelsz) != 0)) {
        w->failed = 1;
        return 1;
    }
    if ((rela != 0) && (mca_hook_strata_reloc_table(w, &o, rela, relasz) != 0)) {
        w->failed = 1;
        return 1;
    }
    return 0;
}

int mca_hook_strata_reloc_redirect(mca_hook_strata_reloc_t *r)
{
    mca_hook_strata_reloc_walk_t w = {r, 4096, 0, 0};
    long page                      = sysconf(_SC_PAGESIZE);

    r->patched           = 0;
    r->patched_in_marked = 0;
    r->error[0]          = '\0';
    if ((r->symbol == NULL) || (r->symbol[0] == '\0') || (r->replacement == NULL)) {
        snprintf(r->error, sizeof(r->error), "no symbol or no replacement given");
        return -1;
    }
    if (page > 0) {
        w.page_size = (uintptr_t)page;
    }
    w.name_len = strlen(r->symbol) + 1;
    (void)dl_iterate_phdr(mca_hook_strata_reloc_visit, &w);
    return w.failed ? -1 : (int)r->patched;
}

#else /* no relocation types for this platform */

int mca_hook_strata_reloc_redirect(mca_hook_strata_reloc_t *r)
{
    r->patched           = 0;
    r->patched_in_marked = 0;
    snprintf(r->error, sizeof(r->error),
             "redirecting %s is implemented for x86_64 and aarch64 only",
             (r->symbol != NULL) ? r->symbol : "a symbol");
    return -1;
}

#endif
