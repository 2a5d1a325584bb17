#!/usr/bin/env bash
# Overlap of MPI_Iallreduce with compute, on one node or across namespace
# nodes (test/cluster/cluster.sh, links shaped), OSU's definition
# (icoll_overlap_bench.c), in one run against what users would otherwise
# run: coll/strata with its progress thread (coll_strata_progress=auto),
# coll/strata with progress inside MPI calls only (calls), and the module
# below strata (libnbc, strata off); compute asleep and busy.
#
#   test/bench/icoll_overlap.sh --builddir DIR --out DIR [--np N]
#                               [--nodes N --ppn K [--rate 1gbit]]
#                               [--sizes B,...] [--iters K]
#   (--nodes: as root, on a namespace cluster of N nodes with K ranks each;
#   across nodes the thread turns the calls on coll/strata's own UCP wire)
#
# Writes DIR/results.csv, DIR/results.md (with the machine, commit and
# command) and DIR/plot.png (gnuplot).  A benchmark: it asserts nothing.
set -uo pipefail

builddir="" out="" np=4 sizes="65536,262144,1048576,4194304,16777216" iters=20
nodes=0 ppn=2 rate="" argv=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
    --builddir) builddir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --ppn) ppn=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    *) echo "icoll_overlap.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -n "$builddir" ] && [ -n "$out" ] || { echo "icoll_overlap.sh: --builddir and --out are required" >&2; exit 2; }
builddir=$(cd "$builddir" && pwd)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$builddir/test/strata-test-env.sh"
. "$src/test/lib.sh"
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "$nodes" -gt 0 ] && [ -z "${STRATA_CLUSTER:-}" ]; then
    exec "$STRATA_CLUSTER_SH" run --nodes "$nodes" ${rate:+--rate "$rate"} -- bash "${BASH_SOURCE[0]}" "${argv[@]}"
fi
where="one node, $np ranks"
if [ "$nodes" -gt 0 ]; then
    np=$((nodes * ppn))
    where="$nodes namespace nodes x $ppn ranks${rate:+, links at $rate}"
fi
launch() { # MCA... PROGRAM ARGS...
    if [ "$nodes" -gt 0 ]; then
        strata_mpirun_cluster -np "$np" --map-by "ppr:$ppn:node" "$@"
    else
        strata_mpirun_local "$np" "$@"
    fi
}
csv="$out/results.csv"
: >"$csv.tmp"

run() { # LABEL COMPUTE MCA...
    local label=$1 compute=$2; shift 2
    launch "$@" "$builddir/test/bench/icoll_overlap_bench" \
        --sizes "$sizes" --iters "$iters" --compute "$compute" --label "$label" >"$out/$label-$compute.log" 2>&1 ||
        { tail -20 "$out/$label-$compute.log"; return 1; }
    grep "^$label," "$out/$label-$compute.log" >>"$csv.tmp"
}

for compute in sleep busy; do
    run strata_thread "$compute" $(strata_coll_mca strata) --mca coll_strata_progress auto || exit 1
    run strata_calls "$compute" $(strata_coll_mca strata) --mca coll_strata_progress calls || exit 1
    run libnbc "$compute" --mca coll_strata_priority 0 || exit 1
done
{ echo "label,compute,bytes,t_blocking,t_pure,t_compute,t_all,overlap"; cat "$csv.tmp"; } >"$csv"
rm -f "$csv.tmp"

{
    echo "# MPI_Iallreduce overlap with compute, $where"
    echo
    echo "- date: $(date -u +%Y-%m-%d), commit: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "- machine: $(nproc) cores, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "- command: test/bench/icoll_overlap.sh ${argv[*]}"
    echo "- overlap = 100 - 100 (t_all - t_compute) / t_pure (OSU); times in us, the slowest rank's mean"
    echo "- strata_thread: coll/strata, progress thread (auto); strata_calls: coll/strata, progress in MPI calls only; libnbc: the module below strata"
    echo
    echo "| config | compute | bytes | t_blocking | t_pure | t_pure / t_blocking | t_all | overlap % |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    tail -n +2 "$csv" | awk -F, '{ printf "| %s | %s | %s | %s | %s | %.2f | %s | %s |\n", $1, $2, $3, $4, $5, ($4 > 0 ? $5 / $4 : 0), $7, $8 }'
} >"$out/results.md"

if command -v gnuplot >/dev/null 2>&1; then
    gnuplot <<EOF 2>"$out/gnuplot.log" || cat "$out/gnuplot.log"
set terminal pngcairo size 1000,450 noenhanced
set output "$out/plot.png"
set datafile separator ","
set multiplot layout 1,2 title "MPI_Iallreduce overlap with compute, $where (OSU definition)"
set logscale x 2
set xlabel "bytes"
set ylabel "overlap (%)"
set yrange [0:105]
set key bottom right
do for [c in "sleep busy"] {
    set title "compute: ".c
    plot for [l in "strata_thread strata_calls libnbc"] "$csv" using (strcol(1) eq l && strcol(2) eq c ? \$3 : 1/0):8 with linespoints title l
}
unset multiplot
EOF
fi
cat "$out/results.md"
