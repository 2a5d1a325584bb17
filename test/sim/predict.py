#!/usr/bin/env python3
"""Predicts coll/strata's allreduce at scale with test/sim/strata_sim and
writes the tables and plots of docs/results/2026-11-24-scale-simulation/.

  predict.py --builddir BUILD --out DIR [--networks namespace=FILE,eth100=FILE,ndr=FILE]
             [--nodes LIST] [--ppn 1,2,4,8] [--sizes LIST] [--plot-ppn 8]
             [--plot-sizes 4K,256K,16M]

For every network (a strata_sim parameter set), node count, ranks per node
and size it runs the inter-node phase forced to ring, doubling and
halving_doubling, and auto: the decision function with the cost model set to
the network itself (strata_sim --decide-from-network: alpha = L + 2o, beta =
G for one rail, the rails a path runs at once sharing the node's NICs), which
is what a site gets by setting coll_strata_allreduce_inter_latency_us,
_bandwidth_gbs and _nics to its network (or by their measurement).
Writes into --out:
  predictions.csv   every prediction (strata_sim's columns, network and setting first)
  wins.md           per network and ranks per node: the fastest forced algorithm
                    per node count and size, and auto's choice when it differs
  time-vs-nodes-NETWORK.png   time against node count at --plot-sizes, --plot-ppn
                    ranks per node, one panel per size (gnuplot)
One rank per node: the decision hands the call to the module below strata
(path fallback); the simulator models it as strata's rail path with one
slice (coll_strata_allreduce_algorithm=rail), so those rows are strata
forced, not the module below.
"""

import argparse
import csv
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from calibrate import human_size, parse_size  # noqa: E402

SETTINGS = ("ring", "doubling", "halving_doubling", "auto")
FORCED = SETTINGS[:3]
SHORT = {"ring": "ring", "doubling": "rd", "halving_doubling": "rhd"}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--builddir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--networks", default="namespace=%s,eth100=%s,ndr=%s" % (
        os.path.join(HERE, "params", "namespace-1gbit-4x2.txt"), os.path.join(HERE, "params", "eth100.txt"),
        os.path.join(HERE, "params", "ndr.txt")))
    p.add_argument("--nodes", default="2,3,4,6,8,12,16,32,64,100,128,256,512,1000,1024,2048,3000,4096")
    p.add_argument("--ppn", default="1,2,4,8")
    p.add_argument("--sizes", default="8,64,512,4K,32K,256K,2M,16M,64M")
    p.add_argument("--plot-ppn", type=int, default=8)
    p.add_argument("--plot-sizes", default="4K,256K,16M")
    p.add_argument("--render-only", action="store_true",
                   help="write wins.md and the plots again from --out's predictions.csv")
    return p.parse_args(argv)


def simulate(args, params, setting):
    sim = os.path.join(args.builddir, "test", "sim", "strata_sim")
    sizes = ",".join(str(parse_size(s)) for s in args.sizes.split(","))
    cmd = [sim, "--params", params, "--nodes", args.nodes, "--ppn", args.ppn, "--bytes", sizes,
           "--alg", setting, "--decide-from-network"]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True).stdout
    cols = ["nodes", "ppn", "bytes", "path", "inter", "slices", "chunks", "predicted_s", "node_chunk_s",
            "xchg_chunk_s", "interval_s"]
    rows = []
    for line in out.splitlines():
        r = dict(zip(cols, line.split(",")))
        for k in ("nodes", "ppn", "bytes", "slices", "chunks"):
            r[k] = int(r[k])
        for k in ("predicted_s", "node_chunk_s", "xchg_chunk_s", "interval_s"):
            r[k] = float(r[k])
        rows.append(r)
    return rows


def fmt_time(s):
    if s >= 1:
        return "%.2f s" % s
    if s >= 1e-3:
        return "%.3g ms" % (s * 1e3)
    return "%.3g us" % (s * 1e6)


def write_wins(args, table, networks):
    nodes = [int(n) for n in args.nodes.split(",")]
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    lines = ["# Where each inter-node algorithm wins (strata_sim predictions)", "",
             "Each cell: the fastest of ring / rd (recursive doubling) / rhd (halving-doubling), "
             "forced, and in brackets auto's choice (the cost model set to the network) with "
             "auto's time over the fastest where it is not the fastest. `=` marks a tie within 1%.", ""]
    for net, _ in networks:
        for ppn in [int(k) for k in args.ppn.split(",")]:
            lines.append("## %s, %d rank(s) per node" % (net, ppn))
            lines.append("")
            lines.append("| nodes | " + " | ".join(human_size(s) for s in sizes) + " |")
            lines.append("|---|" + "---|" * len(sizes))
            for n in nodes:
                cells = []
                for s in sizes:
                    times = {a: table[(net, a, n, ppn, s)]["predicted_s"] for a in FORCED}
                    best = min(times, key=times.get)
                    ties = [a for a in FORCED if a != best and times[a] <= times[best] * 1.01]
                    cell = SHORT[best] + "".join("=" + SHORT[a] for a in ties)
                    auto = table[(net, "auto", n, ppn, s)]
                    chosen = {"ring": "ring", "doubling": "rd", "halving_doubling": "rhd"}.get(auto["inter"],
                                                                                           auto["inter"])
                    ratio = auto["predicted_s"] / times[best]
                    if ratio > 1.01:
                        cell += " (%s %.2f)" % (chosen, ratio)
                    cells.append(cell)
                lines.append("| %d | %s |" % (n, " | ".join(cells)))
            lines.append("")
    with open(os.path.join(args.out, "wins.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_plot(args, table, net):
    nodes = [int(n) for n in args.nodes.split(",")]
    sizes = [parse_size(s) for s in args.plot_sizes.split(",")]
    data = os.path.join(args.out, "time-vs-nodes-%s.dat" % net)
    with open(data, "w") as f:
        for s in sizes:
            for a in SETTINGS:
                f.write("# %s %s\n" % (human_size(s), a))
                for n in nodes:
                    f.write("%d %.9g\n" % (n, table[(net, a, n, args.plot_ppn, s)]["predicted_s"] * 1e3))
                f.write("\n\n")
    png = os.path.join(args.out, "time-vs-nodes-%s.png" % net)
    script = ["set terminal pngcairo size 1500,500" if has_pngcairo() else "set terminal png size 1500,500",
              "set termoption noenhanced", "set output '%s'" % png,
              "set multiplot layout 1,%d title 'coll/strata allreduce predicted by strata_sim: %s, %d ranks per node'"
              % (len(sizes), net, args.plot_ppn),
              "set logscale xy", "set xlabel 'nodes'", "set ylabel 'time (ms)'", "set key top left", "set grid"]
    styles = {"ring": "lw 2", "doubling": "lw 2", "halving_doubling": "lw 2", "auto": "dashtype 2 lw 2 lc rgb 'black'"}
    for i, s in enumerate(sizes):
        plots = ", ".join("'%s' index %d with linespoints %s title '%s'"
                          % (os.path.basename(data), i * len(SETTINGS) + j, styles[a], a)
                          for j, a in enumerate(SETTINGS))
        script += ["set title '%s'" % human_size(s), "plot " + plots]
    script.append("unset multiplot")
    proc = subprocess.run(["gnuplot"], input="\n".join(script), text=True, cwd=args.out,
                          stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit("predict: gnuplot failed: %s" % proc.stderr)
    os.remove(data)


def has_pngcairo():
    proc = subprocess.run(["gnuplot", "-e", "set terminal"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    return "pngcairo" in proc.stdout


def main(argv):
    args = parse_args(argv)
    args.builddir = os.path.abspath(args.builddir)
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    networks = [tuple(x.split("=", 1)) for x in args.networks.split(",") if x]
    table = {}
    if args.render_only:
        with open(os.path.join(args.out, "predictions.csv")) as f:
            for r in csv.DictReader(f):
                for k in ("nodes", "ppn", "bytes"):
                    r[k] = int(r[k])
                r["predicted_s"] = float(r["predicted_s"])
                table[(r["network"], r["setting"], r["nodes"], r["ppn"], r["bytes"])] = r
    else:
        simulate_all(args, networks, table)
    write_wins(args, table, networks)
    for net, _ in networks:
        write_plot(args, table, net)
    print("predict: wrote predictions.csv, wins.md and time-vs-nodes-*.png in %s" % args.out)
    return 0


def simulate_all(args, networks, table):
    with open(os.path.join(args.out, "predictions.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["network", "setting", "nodes", "ppn", "bytes", "path", "inter", "slices", "chunks",
                    "predicted_s", "node_chunk_s", "xchg_chunk_s", "interval_s"])
        for net, params in networks:
            for setting in SETTINGS:
                print("predict: %s, %s" % (net, setting), flush=True)
                for r in simulate(args, params, setting):
                    table[(net, setting, r["nodes"], r["ppn"], r["bytes"])] = r
                    w.writerow([net, setting, r["nodes"], r["ppn"], r["bytes"], r["path"], r["inter"], r["slices"],
                                r["chunks"], "%.9g" % r["predicted_s"], "%.9g" % r["node_chunk_s"],
                                "%.9g" % r["xchg_chunk_s"], "%.9g" % r["interval_s"]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
