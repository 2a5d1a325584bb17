#!/bin/bash
# The recorded allreduce comparison, in one command (as root, on a quiet
# machine: nothing else should run meanwhile):
#   test/bench/allreduce_suite.sh BUILDDIR OUTDIR [ITERS] [ITERS_LARGE] [ROUNDS]
# Runs tuned, han and strata, alternating, 8 B - 64 MiB, on a namespace
# cluster of 4 nodes x 2 ranks and of 2 nodes x 2 ranks with links shaped to
# 1 Gbit/s, and on this node with 4 ranks; writes OUTDIR/{4x2,2x2,1node}/
# (results.csv, results.md, plot.png) and OUTDIR/targets.md (each target of
# the allreduce against what was measured).
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 BUILDDIR OUTDIR [ITERS] [ITERS_LARGE] [ROUNDS]" >&2; exit 2; }
build=$1 out=$2 iters=${3:-50} iters_large=${4:-5} rounds=${5:-3}
here=$(cd "$(dirname "$0")" && pwd)
bench=("python3" "$here/allreduce_bench.py" --builddir "$build" --configs tuned,han,strata
       --min 8 --max 64M --iters "$iters" --iters-large "$iters_large" --warmup 2
       --rounds "$rounds")

mkdir -p "$out"
"${bench[@]}" --nodes 4 --ppn 2 --rate 1gbit --out "$out/4x2" --title "4 nodes x 2 ranks, 1 Gbit/s links"
"${bench[@]}" --nodes 2 --ppn 2 --rate 1gbit --out "$out/2x2" --title "2 nodes x 2 ranks, 1 Gbit/s links"
"${bench[@]}" --np 4 --out "$out/1node" --title "one node, 4 ranks"
python3 "$here/allreduce_targets.py" --cluster4 "$out/4x2" --cluster2 "$out/2x2" \
    --node "$out/1node" --rate 1gbit --out "$out/targets.md"
