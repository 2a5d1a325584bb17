/*
 * MPI's rules for nonblocking collectives, on whatever coll component the
 * job selected (coll/strata runs MPI_Iallreduce and the nonblocking
 * reductions on its pipeline once a blocking collective has set a
 * communicator up):
 *
 *   mpirun -np N test_icoll_rules [--quiet] [--timeout S]
 *
 * Every result is checked against the reduced vector computed here from
 * each rank's known input (integers, exact in int and double):
 *   - several calls outstanding on one communicator, of several sizes and
 *     collectives (MPI_Iallreduce, MPI_Ireduce, MPI_Ireduce_scatter_block,
 *     MPI_Ireduce_scatter with uneven counts), a blocking MPI_Allreduce
 *     started between them, completed by MPI_Waitall in reverse order;
 *   - calls outstanding on two communicators at once, completed in the
 *     other order than started;
 *   - MPI_Test until done, MPI_Testany, MPI_Waitsome;
 *   - count 0, MPI_IN_PLACE;
 *   - the pattern that deadlocks a blocking implementation (rank 0:
 *     MPI_Iallreduce, MPI_Send to rank 1, MPI_Wait; rank 1: MPI_Recv from
 *     rank 0, MPI_Iallreduce, MPI_Wait);
 *   - a communicator freed once its requests are done.
 * A watchdog (--timeout, default 120 s) aborts a hang instead of waiting.
 * Prints "test_icoll_rules: OK: N checks" on rank 0.
 */
#include <mpi.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "test_icoll_rules"

static int rank, size;
static long checks;
static bool quiet;

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);

    if (p == NULL) {
        fprintf(stderr, PROG ": rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static void on_alarm(int sig)
{
    (void)sig;
    fprintf(stderr, PROG ": rank %d: timed out (a hang)\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* rank r's element i, and the sum over the ranks of comm (size n) */
static int input(int r, long i) { return 7 * r + (int)(i % 1000) - 300; }
static long summed(int n, long i) { return 7L * n * (n - 1) / 2 + (long)n * (i % 1000 - 300); }

static void fail(const char *what, long i, double got, long want)
{
    fprintf(stderr, PROG ": rank %d: %s: element %ld is %.0f, expected %ld\n", rank, what, i, got,
            want);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* One outstanding call and what its result must be. */
typedef enum { K_ALLREDUCE, K_REDUCE, K_RSB, K_RS } kind_t;
typedef struct {
    const char *what;
    kind_t kind;
    MPI_Comm comm;
    int crank, csize, root;
    long count; /* of the reduced vector */
    bool dbl, inplace;
    void *sbuf, *rbuf;
    int *rcounts;
    long lo, hi; /* this rank's part */
    MPI_Request req;
} call_t;

static int weight(int r) { return r % 3; } /* uneven blocks: some get none */

static void call_start(call_t *c, const char *what, kind_t kind, MPI_Comm comm, long count,
                       bool dbl, bool inplace)
{
    MPI_Datatype dt = dbl ? MPI_DOUBLE : MPI_INT;
    size_t el = dbl ? sizeof(double) : sizeof(int);
    long total = 0;

    memset(c, 0, sizeof(*c));
    c->what = what;
    c->kind = kind;
    c->comm = comm;
    MPI_Comm_rank(comm, &c->crank);
    MPI_Comm_size(comm, &c->csize);
    c->root = c->csize / 2;
    c->dbl = dbl;
    c->inplace = inplace && kind != K_RS && kind != K_RSB;
    if (kind == K_RSB) count -= count % c->csize;
    c->count = count;
    c->lo = 0;
    c->hi = count;
    if (kind == K_RSB) {
        c->lo = c->crank * (count / c->csize);
        c->hi = c->lo + count / c->csize;
    } else if (kind == K_RS) {
        c->rcounts = xmalloc(sizeof(int) * (size_t)c->csize);
        for (int r = 0; r < c->csize; r++) total += weight(r);
        for (int r = 0, at = 0; r < c->csize; r++) {
            c->rcounts[r] = (total == 0) ? 0 : (int)(count * weight(r) / total);
            if (r == c->csize - 1) c->rcounts[r] = (int)(count - at);
            if (r == c->crank) {
                c->lo = at;
                c->hi = at + c->rcounts[r];
            }
            at += c->rcounts[r];
        }
    } else if (kind == K_REDUCE && c->crank != c->root) {
        c->lo = c->hi = 0;
    }
    c->sbuf = xmalloc((size_t)count * el);
    c->rbuf = xmalloc((size_t)count * el);
    for (long i = 0; i < count; i++) {
        if (dbl) ((double *)c->sbuf)[i] = input(c->crank, i);
        else ((int *)c->sbuf)[i] = input(c->crank, i);
    }
    memset(c->rbuf, 0xA5, (size_t)count * el);
    if (c->inplace) memcpy(c->rbuf, c->sbuf, (size_t)count * el);
    const void *s = c->inplace ? MPI_IN_PLACE : c->sbuf;
    switch (kind) {
    case K_ALLREDUCE: MPI_Iallreduce(s, c->rbuf, (int)count, dt, MPI_SUM, comm, &c->req); break;
    case K_REDUCE:
        if (c->inplace && c->crank != c->root) s = c->sbuf; /* in place at the root only */
        MPI_Ireduce(s, c->rbuf, (int)count, dt, MPI_SUM, c->root, comm, &c->req);
        break;
    case K_RSB:
        MPI_Ireduce_scatter_block(c->sbuf, c->rbuf, (int)(count / c->csize), dt, MPI_SUM, comm,
                                  &c->req);
        break;
    case K_RS: MPI_Ireduce_scatter(c->sbuf, c->rbuf, c->rcounts, dt, MPI_SUM, comm, &c->req); break;
    }
}

/* After completion: this rank's part against the reference, the input
 * unchanged where it was not the output. */
static void call_check(call_t *c)
{
    long off = (c->kind == K_RSB || c->kind == K_RS) ? c->lo : 0;

    for (long i = c->lo; i < c->hi; i++) {
        double got = c->dbl ? ((double *)c->rbuf)[i - off] : ((int *)c->rbuf)[i - off];

        if (got != (double)summed(c->csize, i)) fail(c->what, i, got, summed(c->csize, i));
    }
    if (!c->inplace) {
        for (long i = 0; i < c->count; i++) {
            double got = c->dbl ? ((double *)c->sbuf)[i] : ((int *)c->sbuf)[i];

            if (got != input(c->crank, i)) {
                fprintf(stderr, PROG ": rank %d: %s: the input changed at %ld\n", rank, c->what, i);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
    }
    free(c->sbuf);
    free(c->rbuf);
    free(c->rcounts);
    checks++;
}

static void say(const char *phase)
{
    if (!quiet && rank == 0) printf(PROG ": %s: ok\n", phase);
}

/* A blocking allreduce of one int: sets a communicator up for coll/strata
 * (and checks it). */
static void blocking_one(MPI_Comm comm, int csize)
{
    int one = 1, all = 0;

    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, comm);
    if (all != csize) {
        fprintf(stderr, PROG ": rank %d: blocking allreduce: %d, expected %d\n", rank, all, csize);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    checks++;
}

static void phase_outstanding(MPI_Comm comm)
{
    static const long counts[] = {1, 1000, 65536, 300007, 786432};
    enum { N = 8 };
    call_t c[N];
    MPI_Request reqs[N];
    int csize, n = 0;

    MPI_Comm_size(comm, &csize);
    call_start(&c[n++], "iallreduce int", K_ALLREDUCE, comm, counts[3], false, false);
    call_start(&c[n++], "iallreduce double in place", K_ALLREDUCE, comm, counts[4], true, true);
    call_start(&c[n++], "ireduce int", K_REDUCE, comm, counts[2], false, false);
    call_start(&c[n++], "iallreduce 1", K_ALLREDUCE, comm, counts[0], true, false);
    /* a blocking collective between the starts, in the same order on every rank */
    blocking_one(comm, csize);
    call_start(&c[n++], "ireduce_scatter_block", K_RSB, comm, counts[4], false, false);
    call_start(&c[n++], "ireduce_scatter uneven", K_RS, comm, counts[3], true, false);
    call_start(&c[n++], "ireduce in place", K_REDUCE, comm, counts[1], true, true);
    call_start(&c[n++], "iallreduce count 0", K_ALLREDUCE, comm, 0, false, false);
    for (int i = 0; i < n; i++) reqs[n - 1 - i] = c[i].req;
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < n; i++) call_check(&c[i]);
    say("several outstanding on one communicator, a blocking call between");
}

static void phase_two_comms(MPI_Comm a, MPI_Comm b)
{
    call_t ca, cb;
    int bsize;

    MPI_Comm_size(b, &bsize);
    call_start(&ca, "iallreduce on A", K_ALLREDUCE, a, 400000, false, false);
    call_start(&cb, "iallreduce on B", K_ALLREDUCE, b, 250000, true, false);
    blocking_one(b, bsize);
    MPI_Wait(&cb.req, MPI_STATUS_IGNORE);
    MPI_Wait(&ca.req, MPI_STATUS_IGNORE);
    call_check(&ca);
    call_check(&cb);
    say("outstanding on two communicators, completed in the other order");
}

static void phase_test_family(MPI_Comm comm)
{
    call_t c[3];
    MPI_Request reqs[3];
    int flag = 0, index, outcount, indices[3], done = 0;
    long polls = 0;

    call_start(&c[0], "iallreduce tested", K_ALLREDUCE, comm, 500000, false, false);
    while (!flag) {
        MPI_Test(&c[0].req, &flag, MPI_STATUS_IGNORE);
        polls++;
    }
    call_check(&c[0]);
    for (int i = 0; i < 3; i++) {
        call_start(&c[i], "iallreduce testany/waitsome", K_ALLREDUCE, comm, 100000 * (i + 1),
                   i == 1, false);
        reqs[i] = c[i].req;
    }
    flag = 0;
    while (!flag) MPI_Testany(3, reqs, &index, &flag, MPI_STATUS_IGNORE);
    done = 1;
    while (done < 3) {
        MPI_Waitsome(3, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
        if (outcount != MPI_UNDEFINED) done += outcount;
    }
    for (int i = 0; i < 3; i++) call_check(&c[i]);
    (void)polls;
    say("MPI_Test, MPI_Testany, MPI_Waitsome");
}

/* rank 0: Iallreduce, Send to 1, Wait; rank 1: Recv from 0, Iallreduce,
 * Wait: a start that waited for its peers would hang here. */
static void phase_no_deadlock(MPI_Comm comm)
{
    call_t c;
    int token = 42, got = 0;

    if (size < 2) return;
    if (rank == 1) {
        MPI_Recv(&got, 1, MPI_INT, 0, 7, comm, MPI_STATUS_IGNORE);
        if (got != token) {
            fprintf(stderr, PROG ": rank 1: received %d, expected %d\n", got, token);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    call_start(&c, "iallreduce before a send", K_ALLREDUCE, comm, 300000, false, false);
    if (rank == 0) MPI_Send(&token, 1, MPI_INT, 1, 7, comm);
    MPI_Wait(&c.req, MPI_STATUS_IGNORE);
    call_check(&c);
    say("the pattern that deadlocks a blocking implementation");
}

static void phase_freed_comm(MPI_Comm parent)
{
    MPI_Comm dup;
    call_t c;
    int dsize;

    MPI_Comm_dup(parent, &dup);
    MPI_Comm_size(dup, &dsize);
    blocking_one(dup, dsize);
    call_start(&c, "iallreduce on a communicator freed after it", K_ALLREDUCE, dup, 200000, true,
               false);
    MPI_Wait(&c.req, MPI_STATUS_IGNORE);
    MPI_Comm_free(&dup);
    call_check(&c);
    say("a communicator freed once its requests are done");
}

int main(int argc, char **argv)
{
    int timeout = 120;
    MPI_Comm dup, half;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quiet")) quiet = true;
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout = atoi(argv[++i]);
        else {
            if (rank == 0) fprintf(stderr, "usage: " PROG " [--quiet] [--timeout S]\n");
            MPI_Finalize();
            return 2;
        }
    }
    signal(SIGALRM, on_alarm);
    alarm((unsigned)timeout);

    /* coll/strata runs nonblocking calls only on communicators a blocking
     * call set up: before it, the module below runs them (checked too) */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    phase_freed_comm(MPI_COMM_WORLD);
    {
        call_t c;

        call_start(&c, "iallreduce before any blocking call", K_ALLREDUCE, dup, 300000, false,
                   false);
        MPI_Wait(&c.req, MPI_STATUS_IGNORE);
        call_check(&c);
    }
    blocking_one(MPI_COMM_WORLD, size);
    blocking_one(dup, size);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    {
        int hsize;

        MPI_Comm_size(half, &hsize);
        blocking_one(half, hsize);
    }
    phase_outstanding(MPI_COMM_WORLD);
    phase_outstanding(half);
    phase_two_comms(MPI_COMM_WORLD, dup);
    phase_two_comms(half, MPI_COMM_WORLD);
    phase_test_family(MPI_COMM_WORLD);
    phase_no_deadlock(MPI_COMM_WORLD);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    {
        long all = 0;

        MPI_Reduce(&checks, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) printf(PROG ": OK: %ld checks\n", all);
    }
    MPI_Finalize();
    return 0;
}
