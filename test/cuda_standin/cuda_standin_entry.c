/*
 * Exported entry points that UCX's libucm can patch.
 *
 * Strata (like UCX's own CUDA memory hooks) installs hooks on the driver's
 * allocation functions with ucm_bistro_patch.  The patch overwrites the first
 * 5 bytes of the function (a near jmp to the hook) or 12 bytes (movabs+jmp
 * %rax) and, so that the hook can call the original, relocates the
 * instructions it overwrote into a trampoline.  Its x86-64 decoder knows only
 * a few prologue instructions (push/pop %reg, mov %rsp,%rbp, sub $imm32,%rsp,
 * mov $imm32,%reg, ...) and refuses anything else; what gcc emits at the
 * start of a function usually is something else (endbr64, a mov of an
 * argument, a stack-protector load).
 *
 * So each of these symbols is a stub whose first 15 bytes are three
 * "push %rbp; mov %rsp,%rbp; pop %rbp" groups (55 48 89 e5 5d): decodable,
 * without effect, and cut by both patch sizes at instruction boundaries the
 * decoder reaches (5, and 14 >= 12).  Then a direct jmp to the C
 * implementation, a hidden symbol of this library: no PLT, nothing else to
 * relocate.  The stubs carry no endbr64 (the decoder would refuse it), so an
 * IBT-enforcing build of the stand-in could not call them indirectly.
 */
#include "cuda_standin.h"

#define CUDA_STANDIN_ENTRY_NOP_GROUP "push %rbp\n\tmov %rsp, %rbp\n\tpop %rbp\n\t"

#define CUDA_STANDIN_ENTRY_ASM(_symbol, _impl) \
    __asm__(".pushsection .text\n\t" \
            ".globl " #_symbol "\n\t" \
            ".type " #_symbol ", @function\n\t" \
            ".p2align 4\n" \
            #_symbol ":\n\t" \
            CUDA_STANDIN_ENTRY_NOP_GROUP \
            CUDA_STANDIN_ENTRY_NOP_GROUP \
            CUDA_STANDIN_ENTRY_NOP_GROUP \
            "jmp " #_impl "\n\t" \
            ".size " #_symbol ", . - " #_symbol "\n\t" \
            ".popsection");

/* _name expands to the versioned symbol cuda.h maps it to (cuMemAlloc_v2);
 * pasted, it names the implementation (cuda_standin_patchable_cuMemAlloc). */
#define CUDA_STANDIN_ENTRY_STUB(_name) \
    CUDA_STANDIN_ENTRY_ASM(_name, cuda_standin_patchable_##_name)

CUDA_STANDIN_PATCHABLE_APIS(CUDA_STANDIN_ENTRY_STUB)
