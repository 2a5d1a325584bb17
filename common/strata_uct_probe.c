/*
 * The reading side of strata_uct_probe.h.  The module is found where it can
 * be loaded from: LD_PRELOAD or hook/strata (RTLD_GLOBAL: the default
 * namespace finds it), or UCX's own module loader (a local namespace: asked
 * by its soname, RTLD_NOLOAD, so nothing is loaded here).
 */
#include "strata_uct_probe.h"

#include <dlfcn.h>
#include <stddef.h>

int strata_uct_gpu_copy_domains(void)
{
    static const char *const names[] = {"libuct_strata.so", "libuct_strata.so.0"};
    strata_uct_probe_fn_t fn;

    fn = (strata_uct_probe_fn_t)dlsym(RTLD_DEFAULT, STRATA_UCT_PROBE_SYMBOL);
    for (size_t i = 0; NULL == fn && i < sizeof(names) / sizeof(names[0]); ++i) {
        void *handle = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD);

        if (NULL != handle) {
            fn = (strata_uct_probe_fn_t)dlsym(handle, STRATA_UCT_PROBE_SYMBOL);
            dlclose(handle); /* drops the reference NOLOAD took */
        }
    }
    return (NULL != fn) ? fn() : 0;
}
