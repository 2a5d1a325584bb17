#!/usr/bin/env python3
"""A real client of CUDA-aware MPI: mpi4py with CuPy arrays (device memory)
doing Allreduce, Bcast, Allgather and Alltoall through Debian's Open MPI with
Strata, every value checked against NumPy; then Allreduce times by size.

  mpirun -np N [Strata's CUDA-aware settings] python3 test/gpu/mpi4py_coll.py [--times]

mpi4py hands CuPy arrays to MPI as device pointers (__cuda_array_interface__).
Prints "mpi4py_coll: N checks passed" on rank 0 and, with --times, one line
per size: TIME,<bytes>,<median_us> (the slowest rank, 20 calls after 5
untimed ones).  Exit 77 when mpi4py or CuPy is missing, or when mpi4py is not
built against the Open MPI this job runs (its library version is printed).
"""

import sys
import time

try:
    from mpi4py import MPI
    import cupy as cp
    import numpy as np
except ImportError as e:  # the machine lacks a piece: not a failure of Strata
    print("mpi4py_coll: skip: %s" % e)
    sys.exit(77)


def fail(comm, what, got, expect):
    bad = np.flatnonzero(got != expect)
    i = int(bad[0])
    print("FAIL rank %d: %s index=%d: expected %r got %r" % (comm.rank, what, i, expect[i], got[i]),
          flush=True)
    comm.Abort(1)


def check(comm, what, dev, expect):
    got = cp.asnumpy(dev)
    if not np.array_equal(got, expect):
        fail(comm, what, got, expect)


def run_checks(comm):
    r, n, checks = comm.rank, comm.size, 0
    for count in (1, 7, 4099, 1 << 20):
        base = np.arange(count, dtype=np.float64)
        a = cp.asarray(base + r)
        b = cp.empty_like(a)
        cp.cuda.runtime.deviceSynchronize()
        comm.Allreduce(a, b, op=MPI.SUM)
        check(comm, "Allreduce count=%d" % count, b, base * n + n * (n - 1) / 2)
        comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)
        check(comm, "Allreduce in place count=%d" % count, a, base * n + n * (n - 1) / 2)

        c = cp.asarray(base + r)
        cp.cuda.runtime.deviceSynchronize()
        comm.Bcast(c, root=n - 1)
        check(comm, "Bcast count=%d" % count, c, base + (n - 1))

        g = cp.empty(count * n, dtype=cp.float64)
        comm.Allgather(cp.asarray(base + r), g)
        check(comm, "Allgather count=%d" % count, g, np.concatenate([base + k for k in range(n)]))

        s = cp.asarray(np.concatenate([base + 1000 * r + j for j in range(n)]))
        t = cp.empty_like(s)
        cp.cuda.runtime.deviceSynchronize()
        comm.Alltoall(s, t)
        check(comm, "Alltoall count=%d" % count, t, np.concatenate([base + 1000 * k + r for k in range(n)]))
        checks += 5
    return checks


def run_times(comm):
    nbytes = 8
    while nbytes <= 64 << 20:
        a = cp.ones(nbytes // 4, dtype=cp.float32)
        b = cp.empty_like(a)
        cp.cuda.runtime.deviceSynchronize()
        for _ in range(5):
            comm.Allreduce(a, b, op=MPI.SUM)
        times = []
        for _ in range(20):
            comm.Barrier()
            t0 = time.perf_counter()
            comm.Allreduce(a, b, op=MPI.SUM)
            times.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
        if comm.rank == 0:
            print("TIME,%d,%.2f" % (nbytes, sorted(times)[len(times) // 2] * 1e6), flush=True)
        nbytes *= 4


def main():
    comm = MPI.COMM_WORLD
    version = MPI.Get_library_version().splitlines()[0]
    if comm.rank == 0:
        print("mpi4py_coll: %s, mpi4py %s, CuPy %s" % (version, __import__("mpi4py").__version__,
                                                        cp.__version__), flush=True)
    if "Open MPI" not in version:
        if comm.rank == 0:
            print("mpi4py_coll: skip: mpi4py is built against another MPI")
        return 77
    checks = run_checks(comm)
    if comm.rank == 0:
        print("mpi4py_coll: %d checks passed" % (checks * comm.size), flush=True)
    if "--times" in sys.argv[1:]:
        run_times(comm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
