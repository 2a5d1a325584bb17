# Benchmark layer: CI only checks that the benchmark and its driver run and
# produce their table and plot; figures come from on-demand runs (docs/testing.md).

B="$STRATA_SRCDIR/test/bench/allreduce_bench.py"

# bench_outputs_complete DIR CONFIGS SIZES: every configuration has every size
bench_outputs_complete() {
    local dir=$1 configs=$2 sizes=$3 c
    cat "$dir/results.md"
    [ -s "$dir/plot.png" ] || { echo "no plot.png"; return 1; }
    file "$dir/plot.png" 2>/dev/null | grep -q PNG || head -c 8 "$dir/plot.png" | grep -q PNG || { echo "plot.png is not a PNG"; return 1; }
    for c in ${configs//,/ }; do
        local n; n=$(grep -c "^$c," "$dir/results.csv")
        [ "$n" -eq "$sizes" ] || { echo "$c: $n sizes in results.csv, expected $sizes"; return 1; }
    done
}

# The compression benchmark's configurations through the allreduce driver
# (none, bf16, fp16, fp8 at 1 Gbit/s between two namespace nodes): every
# size of each, with the bytes each node sent; compressed ones send fewer.
bench_compress_cluster() {
    local out="$STRATA_TEST_TMP/out"
    python3 "$B" --builddir "$STRATA_BUILDDIR" --configs strata,strata-bf16,strata-fp16,strata-fp8 \
        --nodes 2 --ppn 2 --rate 1gbit --min 1M --max 2M --iters 2 --warmup 1 --rounds 1 --out "$out" &&
        bench_outputs_complete "$out" strata,strata-bf16,strata-fp16,strata-fp8 2 || return 1
    python3 - "$out/results.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
tx = {}
for r in rows:
    tx.setdefault(r["config"], {})[r["bytes"]] = float(r["tx_bytes_per_node_per_call"])
for cfg, limit in (("strata-bf16", 0.6), ("strata-fp16", 0.6), ("strata-fp8", 0.35)):
    for size, b in tx[cfg].items():
        ratio = b / tx["strata"][size]
        print("%s %s B: %.3f of the exact bytes" % (cfg, size, ratio))
        if not ratio < limit:
            sys.exit("%s sent %.3f of the exact bytes at %s B (limit %.2f)" % (cfg, ratio, size, limit))
PY
}

# The overlap benchmark and its driver (icoll_overlap.sh): every
# configuration and compute has every size, a table and a plot; on one node,
# or (ARGS: --nodes 2 --ppn 2) across namespace nodes.
bench_icoll_overlap() {
    local out="$STRATA_TEST_TMP/overlap"
    bash "$STRATA_SRCDIR/test/bench/icoll_overlap.sh" --builddir "$STRATA_BUILDDIR" --out "$out" \
        --np 3 --sizes 65536,1048576 --iters 2 "$@" || return 1
    [ -s "$out/plot.png" ] || { echo "no plot.png"; return 1; }
    for c in strata_thread strata_calls libnbc; do
        [ "$(grep -c "^$c,\(sleep\|busy\)," "$out/results.csv")" -eq 4 ] ||
            { echo "$c: not every compute and size in results.csv"; return 1; }
    done
}

bench_one_node() {
    python3 "$B" --builddir "$STRATA_BUILDDIR" --configs tuned,han,strata --np 4 \
        --min 8 --max 64K --iters 5 --warmup 1 --rounds 2 --out "$STRATA_TEST_TMP/out" &&
        bench_outputs_complete "$STRATA_TEST_TMP/out" tuned,han,strata 14
}

# The per-call driver's cluster mode (the issue's OSU-style latency mode
# across nodes): one cluster for every run, torn down after.
bench_coll_overhead_cluster() {
    local out="$STRATA_TEST_TMP/overhead-cluster"
    python3 "$STRATA_SRCDIR/test/bench/coll_overhead.py" --builddir "$STRATA_BUILDDIR" --nodes 2 --ppn 2 \
        --colls allreduce --type float --min 8 --max 64 --iters 20 --repeats 2 --rounds 1 --out "$out" || return 1
    grep "machine:" "$out/results.md"
    grep -q "namespace cluster of 2 nodes x 2 ranks" "$out/results.md" || return 1
    [ "$(grep -c '^\(tuned\|han\|strata\),allreduce,' "$out/results.csv")" -eq 12 ] || return 1
    "$STRATA_CLUSTER_SH" status
}

# The cluster run also feeds the targets report (allreduce_targets.py), to
# check that it reads the driver's output; its verdicts mean nothing here.
bench_cluster() {
    local out="$STRATA_TEST_TMP/out"
    python3 "$B" --builddir "$STRATA_BUILDDIR" --configs tuned,han,strata --nodes 2 --ppn 2 --rate 1gbit \
        --min 1K --max 4M --iters 3 --warmup 1 --rounds 1 --out "$out" &&
        bench_outputs_complete "$out" tuned,han,strata 13 &&
        "$STRATA_CLUSTER_SH" status || return 1
    python3 "$STRATA_SRCDIR/test/bench/allreduce_targets.py" --cluster4 "$out" --cluster2 "$out" \
        --node "$out" --out "$STRATA_TEST_TMP/targets.md" || return 1
    [ "$(grep -c '^| time' "$STRATA_TEST_TMP/targets.md")" -eq 8 ]
}

# The point-to-point driver runs every variant and writes its report (on the
# CUDA stand-in here: the figures mean nothing, and the report says so).
bench_p2p_suite() {
    local out="$STRATA_TEST_TMP/p2p"
    python3 "$STRATA_SRCDIR/test/bench/p2p_suite.py" --builddir "$STRATA_BUILDDIR" --out "$out" \
        --rounds 1 --lat-iters 50 --bw-iters 2 --bw-max 1M || return 1
    cat "$out/results.md"
    grep -q "Do not quote them" "$out/results.md" || return 1
    for v in plain strata pinned staged memcpy; do
        grep -q "^$v," "$out/results.csv" || { echo "no $v rows"; return 1; }
    done
    # The limits in the same run, and the host<->device table read against them.
    for k in memcpy,memcpy-htod-pinned,bw memcpy,memcpy-htod-pageable,bw memcpy,memcpy-dtoh-pinned,bw \
             memcpy,memcpy-ce-round,lat pinned,host-device,bw strata,device-host,bw; do
        grep -q "^$k," "$out/results.csv" || { echo "no $k rows"; return 1; }
    done
    grep -q "^| size | h->d pageable | h->d pinned | memcpy htod pinned" "$out/results.md" || return 1
    [ -s "$out/latency.png" ] && [ -s "$out/bandwidth.png" ] || return 1
    # A GPU application's host traffic and another build's module (this one
    # here), with the paired per-round ratios for every Strata variant.
    out="$STRATA_TEST_TMP/p2p-before"
    python3 "$STRATA_SRCDIR/test/bench/p2p_suite.py" --builddir "$STRATA_BUILDDIR" --out "$out" \
        --variants plain,strata,gpu-app --kinds host-host --rounds 2 --lat-iters 50 --bw-iters 2 \
        --bw-max 64K --before-module "$STRATA_UCT_MODULE" || return 1
    grep -A3 "same round" "$out/results.md"
    grep -q "^| size | strata/plain | gpu-app/plain | before/plain |" "$out/results.md" || return 1
    for v in gpu-app before; do
        grep -q "^$v,host-host,lat," "$out/results.csv" || { echo "no $v rows"; return 1; }
    done
}

# The per-call cost driver: this build against itself as "before" (the
# figures mean nothing here), every variant and collective in the table; then
# every operation defined on float in one mpirun per variant, with a plot per
# reducing collective, the strata / min(tuned, han) column and, over two
# rounds, its paired per-round median.
bench_coll_overhead() {
    local out="$STRATA_TEST_TMP/overhead"
    python3 "$STRATA_SRCDIR/test/bench/coll_overhead.py" --builddir "$STRATA_BUILDDIR" \
        --before "$STRATA_BUILDDIR" --np 3 --max 64 --iters 20 --repeats 2 --rounds 1 --out "$out" || return 1
    [ -s "$out/plot.png" ] || { echo "no plot.png"; return 1; }
    # 6 collectives x 4 sizes (8..64 B) x 4 variants
    [ "$(grep -c '^\(tuned\|han\|strata-before\|strata\),' "$out/results.csv")" -eq 96 ] || return 1
    out="$STRATA_TEST_TMP/overhead-ops"
    python3 "$STRATA_SRCDIR/test/bench/coll_overhead.py" --builddir "$STRATA_BUILDDIR" --np 3 \
        --min 1 --max 8 --iters 20 --repeats 1 --rounds 2 --colls allreduce,reduce,bcast \
        --type float --op all --out "$out" || return 1
    local p; for p in plot plot-allreduce plot-reduce; do
        [ -s "$out/$p.png" ] || { echo "no $p.png"; return 1; }
    done
    grep -q 'strata / min(tuned, han)' "$out/results.md" || return 1
    # two rounds: each row's paired per-round ratio, median (quartiles)
    grep -q '| paired per round: median (quartiles) |$' "$out/results.md" || return 1
    [ "$(grep -c ' [0-9.]* ([0-9.]*-[0-9.]*) |$' "$out/results.md")" -eq 18 ] || return 1
    # ... from each round's own figures, kept in rounds.csv
    [ "$(grep -c '^[12],\(tuned\|han\|strata\),' "$out/rounds.csv")" -eq 108 ] || return 1
    grep -q 'paired per-round median' "$out/plot.dat" || return 1
    # (2 reducing collectives x 4 ops + bcast) x 2 sizes (4, 8 B) x 3 variants
    [ "$(grep -c '^\(tuned\|han\|strata\),' "$out/results.csv")" -eq 54 ]
}

if [ "$STRATA_HAVE_OMPI" = yes ]; then
    strata_test bench_coll_overhead 300 bench_coll_overhead
    if [ "$STRATA_HAVE_UCX" = yes ] && [ -f "$STRATA_BUILDDIR/test/cuda_standin/lib/libcuda.so.1" ]; then
        strata_test bench_p2p_suite 300 bench_p2p_suite
    fi
    strata_test bench_one_node 300 bench_one_node
    strata_test bench_icoll_overlap 300 bench_icoll_overlap
    if strata_is_root; then
        strata_test bench_cluster 300 bench_cluster
        strata_test bench_coll_overhead_cluster 300 bench_coll_overhead_cluster
        strata_test bench_icoll_overlap_cluster 300 bench_icoll_overlap --nodes 2 --ppn 2 --rate 1gbit
        strata_test bench_compress_cluster 300 bench_compress_cluster
    else
        strata_skip bench_cluster "network namespaces need root"
        strata_skip bench_coll_overhead_cluster "network namespaces need root"
        strata_skip bench_icoll_overlap_cluster "network namespaces need root"
        strata_skip bench_compress_cluster "network namespaces need root"
    fi
fi
