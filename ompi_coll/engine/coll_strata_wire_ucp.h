/*
 * coll/strata's UCP wire, the room's own declarations: the process's
 * worker and its peers (coll_strata_wire_ucp_setup.c: opened, connected,
 * agreed per rail, closed) and what the exchange's operations use of them
 * (coll_strata_wire_ucp.c: send, receive, test, the watcher).  Included by
 * those two files only.
 */
#ifndef MCA_COLL_STRATA_WIRE_UCP_H
#define MCA_COLL_STRATA_WIRE_UCP_H

#include "coll_strata_wire.h"

#include <pthread.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

#define MCA_COLL_STRATA_WIRE_SLOT_BITS   20
#define MCA_COLL_STRATA_WIRE_SENDER_BITS 20
#define MCA_COLL_STRATA_WIRE_ID_MASK     ((1u << 24) - 1)
/* Most the endpoints' flushes are waited for, all together, at the
 * component's close, before the rest are forced. */
#define MCA_COLL_STRATA_WIRE_CLOSE_S     2.0
/* Most the watcher waits on the event descriptor before it looks again. */
#define MCA_COLL_STRATA_WIRE_WATCH_MS    100

/* One exchange's state on this wire (per slot of the engine). */
typedef struct mca_coll_strata_wire_ucp_xs_t {
    ucp_tag_recv_info_t info;
    int recv_peer, send_peer;
    struct ompi_datatype_t *recv_dtype;
    bool recv_posted;         /* a receive of this step was posted */
    ucs_status_t recv_status; /* once complete */
    ucs_status_t send_status; /* once complete (UCS_OK before) */
} mca_coll_strata_wire_ucp_xs_t;

/* A peer process, by its worker's address: one endpoint per process for
 * every communicator (kept until the component closes; UCC keeps its
 * endpoints the same way), so that a communicator's set-up and release
 * cost no connection.  Entries never move once made. */
typedef struct mca_coll_strata_wire_ucp_peer_t {
    void *address;
    size_t len;
    ucp_ep_h ep;
    int dead; /* its endpoint reported an error */
} mca_coll_strata_wire_ucp_peer_t;

/* One engine's wire: its rail members' peers (NULL: this process). */
struct mca_coll_strata_wire_ucp_t {
    uint64_t id; /* agreed over the rail: the tags' top bits */
    int me, n;   /* rank and size of the rail */
    mca_coll_strata_wire_ucp_peer_t **peers;
    mca_coll_strata_wire_ucp_xs_t *xs;
    int nxs;
};

struct mca_coll_strata_wire_ucp_global_t {
    pthread_mutex_t lock; /* every call on the worker, and what follows */
    bool tried, open;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    int efd;
    uint32_t next_id; /* the next communicator's id, at least */
    /* the ids of this process's engines now (a tag's top bits) */
    uint64_t *live;
    int nlive, live_cap;
    /* the peers connected so far (mca_coll_strata_wire_ucp_peer_t) */
    mca_coll_strata_wire_ucp_peer_t **peers;
    int npeers, peers_cap;
    /* the watcher thread: `want` bumped when the progress thread sleeps */
    pthread_t watcher;
    bool watcher_running, stop;
    uint32_t want;
};

/* the process's worker and what goes with it (coll_strata_wire_ucp_setup.c) */
extern struct mca_coll_strata_wire_ucp_global_t mca_coll_strata_wire_ucp_g;

#define W mca_coll_strata_wire_ucp_g


/* coll_strata_wire_ucp.c: the watcher thread stopped (before the worker
 * closes) */
void mca_coll_strata_wire_ucp_watch_stop(void);

#endif /* MCA_COLL_STRATA_WIRE_UCP_H */
