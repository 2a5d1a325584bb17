#!/usr/bin/env bash
# The demo: an MPI job on a 2-node namespace cluster (2 ranks per node).
#   1. the job sees two hosts, two ranks each (MPI_COMM_TYPE_SHARED);
#   2. MPI_Allreduce checked against a reference with Open MPI's default
#      (coll/tuned) and with coll/strata switched on and verbose, so every
#      call it takes is shown (coll/han is left to the benchmark: Open MPI
#      4.1.4's han crashes on this check program across nodes, see
#      docs/results/README.md);
#   3. a short allreduce benchmark of tuned vs han vs strata with the bytes
#      each node sent per call;
#   4. the compressed allreduce (info key strata_compress, or
#      coll_strata_compress) beside the exact one: time and bytes per node,
#      and the compressed results checked within their bound;
#   5. Strata's UCX module loaded into the MPI job by hook/strata;
#   6. device buffers through Open MPI's pml/ucx with Strata's transports,
#      on one node, with the CUDA stand-in when there is no GPU.
# Usage: test/demo.sh BUILDDIR   (as root; quickstart.sh demo runs it)
set -euo pipefail

BUILDDIR=$(cd "${1:?usage: demo.sh BUILDDIR}" && pwd)
. "$BUILDDIR/test/strata-test-env.sh"
. "$STRATA_SRCDIR/test/lib.sh"
T="$BUILDDIR/test"

if [ -z "${STRATA_CLUSTER:-}" ]; then
    "$STRATA_CLUSTER_SH" down --all
    exec "$STRATA_CLUSTER_SH" run --nodes 2 --rate 1gbit -- "$0" "$@"
fi

step() { printf '\n=== %s\n' "$*"; }
# demo_job ARGS...: mpirun over both nodes, two ranks on each
demo_job() { strata_mpirun_cluster -np 4 --map-by ppr:2:node "$@"; }

step "1. Two nodes, two ranks each (cluster '$STRATA_CLUSTER', links shaped to 1 Gbit/s)"
demo_job "$T/mpi/test_topology" --nodes 2 --ppn 2

step "2. MPI_Allreduce checked against a reference: coll/tuned"
demo_job $(strata_coll_mca tuned) \
    "$T/mpi/test_allreduce_basic" --max-count 65536
step "2. MPI_Allreduce checked against a reference: coll/strata (--mca coll_strata_priority 90, verbose)"
echo "(coll/strata's hierarchical allreduce: verbosity 20 names the algorithm of each call and why;"
echo " the smallest counts go to the module below strata while it builds its sub-communicators)"
demo_job $(strata_coll_mca strata) --mca coll_strata_verbose 20 \
    "$T/mpi/test_allreduce_basic" --max-count 16 >"$BUILDDIR/demo-strata-verbose.log" 2>&1
grep -m 6 -E "coll:strata" "$BUILDDIR/demo-strata-verbose.log"
echo "(all $(grep -c 'coll:strata: allreduce' "$BUILDDIR/demo-strata-verbose.log") lines: $BUILDDIR/demo-strata-verbose.log)"
demo_job $(strata_coll_mca strata) \
    "$T/mpi/test_allreduce_basic" --max-count 65536

step "3. Allreduce benchmark, tuned vs han vs strata, bytes per node per call"
python3 "$STRATA_SRCDIR/test/bench/allreduce_bench.py" --inside-cluster --builddir "$BUILDDIR" \
    --configs tuned,han,strata --nodes 2 --ppn 2 --rate 1gbit --min 4K --max 1M --iters 10 \
    --warmup 2 --rounds 1 --out "$BUILDDIR/demo-bench" | grep -E '^\||^- setup'
# What strata ran at each size, as its verbosity names it (never a text that
# could drift from the code): one call per size on this cluster.
demo_job $(strata_coll_mca strata) --mca coll_strata_verbose 20 \
    "$T/bench/strata_allreduce_bench" --min 4096 --max 1048576 --iters 1 --warmup 0 \
    >"$BUILDDIR/demo-strata-paths.log" 2>&1
echo "(what strata ran, per size, from its verbosity 20 on rank 0:"
sed -n 's/.*\[[^]]*:\([0-9]*\)\] coll:strata: allreduce MPI_COMM_WORLD count=\([0-9]*\) MPI_FLOAT MPI_SUM host->host: \([a-z_]*\), [0-9]* slice(s), inter-node \([a-z_]*\).*/\1 \2 \3 \4/p' \
    "$BUILDDIR/demo-strata-paths.log" | awk '
        !pid { pid = $1 } $1 == pid && !seen[$2]++ {
            printf " %8d B: %s, between nodes %s\n", $2 * 4, $3, $4 }'
echo " a few short calls on a shared 2-core machine are noisy, the recorded comparison is in"
echo " docs/results/; table and plot: $BUILDDIR/demo-bench/results.md, plot.png)"

step "4. Compression between nodes: exact vs bf16 vs fp8 (--mca coll_strata_compress, or the info key strata_compress)"
echo "(at 1 Gbit/s every exact algorithm sits at the link's bound from 128 KiB: fewer bytes is"
echo " what moves that line; inside each node the reduction stays exact)"
python3 "$STRATA_SRCDIR/test/bench/allreduce_bench.py" --inside-cluster --builddir "$BUILDDIR" \
    --configs strata,strata-bf16,strata-fp8 --nodes 2 --ppn 2 --rate 1gbit --min 256K --max 4M \
    --iters 5 --warmup 1 --rounds 1 --out "$BUILDDIR/demo-compress" | grep -E '^\||^- setup'
echo "(the compressed results against an exact reference, within the bound of docs/design.md:)"
for f in bf16 fp8; do
    demo_job $(strata_coll_mca strata) --mca coll_strata_compress_min 0 "$T/mpi/test_compress" --format "$f" --nodes 2 \
        --max-count 4099 --expect-lossy | grep "test_compress"
done

step "5. Strata's UCX module loaded into an MPI job by hook/strata"
strata_mpirun_cluster -np 2 --map-by ppr:1:node --mca hook_strata_load_uct 1 \
    --mca hook_strata_uct_module "$STRATA_UCT_MODULE" "$T/mpi/uct_components_mpi" --expect strata \
    | grep "OK"

step "6. Device buffers through pml/ucx with gpu_copy and gpu_ipc (one node)"
if [ -f "$STRATA_CUDA_LIBDIR/libcuda.so.1" ]; then
    echo "(no GPU here: the CUDA stand-in plays the driver; its device memory is unreadable"
    echo " by the CPU, so only transfers that really go through the transports succeed)"
    strata_mpirun_gpu 2 "$T/mpi/test_p2p_device" --max-size 4194304 | grep -E "^rank 0: device|d->d 4194304|all checks"
else
    echo "(skipped: this build has no UCX transports or CUDA stand-in)"
fi

step "Demo done; the cluster is torn down on exit"
