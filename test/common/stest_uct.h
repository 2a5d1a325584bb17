/*
 * The UCT harness of the transport tests (test/ucx/test_gpu_*_uct): the
 * strata component, a memory domain and its transport's first device, a
 * worker, interfaces and endpoints, zero-copy operations with a completion
 * that counts its calls, and progress until one is done.  Failures go to
 * stest_fail, named after the UCT call and its status.
 */
#ifndef STEST_UCT_H
#define STEST_UCT_H

#include <ucs/async/async_fwd.h>
#include <uct/api/uct.h>

#include <stddef.h>
#include <stdint.h>

/* A UCT call that must return UCS_OK. */
#define STEST_UCS(_call) stest_ucs_check((_call), #_call)

/* A status that must be `_expected`. */
#define STEST_EXPECT_STATUS(_what, _expected, _got) \
    stest_ucs_expect((_what), (_expected), (_got))

void stest_ucs_check(ucs_status_t status, const char *call);
void stest_ucs_expect(const char *what, ucs_status_t expected, ucs_status_t got);

typedef struct stest_uct {
    uct_component_h component;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_md_h md;
    char dev_name[UCT_DEVICE_NAME_MAX]; /* the transport's first device */
} stest_uct_t;

/* The UCT component `name` (strata's is "strata"); 0 if UCX has none. */
int stest_uct_find_component(stest_uct_t *u, const char *name);

/* Opens memory domain `md_name` of the component with `settings` (NAME,
 * VALUE pairs, NULL-terminated, or NULL) and returns uct_md_open's status. */
ucs_status_t stest_uct_md_open(stest_uct_t *u, const char *md_name, const char **settings);

/* The memory domain's first device of transport `tl_name` into dev_name;
 * 0 if it has none. */
int stest_uct_find_device(stest_uct_t *u, const char *tl_name);

void stest_uct_worker_create(stest_uct_t *u);
void stest_uct_worker_destroy(stest_uct_t *u);

/* An interface of `tl_name` on dev_name, with `settings` as in md_open and,
 * when err_handler is not NULL, that error handler; progress enabled. */
uct_iface_h stest_uct_iface_open(stest_uct_t *u, const char *tl_name, const char **settings,
                                 uct_error_handler_t err_handler, void *err_arg);

/* The interface's device and interface addresses into buffers of `max`
 * bytes each (the rest zero); longer addresses fail. */
void stest_uct_iface_addresses(uct_iface_h iface, uint8_t *dev_addr, uint8_t *iface_addr,
                               size_t max);

/* An endpoint of `iface` to the interface at these addresses. */
ucs_status_t stest_uct_ep_create(uct_iface_h iface, const uint8_t *dev_addr,
                                 const uint8_t *iface_addr, uct_ep_h *ep_p);

typedef struct stest_uct_comp {
    uct_completion_t super; /* first: the callback casts back */
    int calls;
    int order;              /* this completion's place among all completions so far */
    ucs_status_t status;
} stest_uct_comp_t;

/* Ready for one operation; the callback is stest_uct_comp_cb. */
void stest_uct_comp_init(stest_uct_comp_t *comp);
void stest_uct_comp_cb(uct_completion_t *self);

/* One-entry zero-copy operations between `buffer` (local, no memory
 * handle) and remote address `remote`, completing into `comp`. */
ucs_status_t stest_uct_put_zcopy(uct_ep_h ep, const void *buffer, size_t len, uint64_t remote,
                                 uct_rkey_t rkey, stest_uct_comp_t *comp);
ucs_status_t stest_uct_get_zcopy(uct_ep_h ep, void *buffer, size_t len, uint64_t remote,
                                 uct_rkey_t rkey, stest_uct_comp_t *comp);

/* Progresses the worker until *flag is set; a bound on the calls turns a
 * hang into a failure. */
void stest_uct_progress_until(const stest_uct_t *u, const int *flag, const char *what);

/* Waits for an operation that returned `status`: UCS_OK is done, an error
 * fails, UCS_INPROGRESS must end in exactly one successful completion. */
void stest_uct_wait(const stest_uct_t *u, ucs_status_t status, stest_uct_comp_t *comp,
                    const char *what);

#endif /* STEST_UCT_H */
