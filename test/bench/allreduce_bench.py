#!/usr/bin/env python3
"""Runs strata_allreduce_bench for several Open MPI coll configurations in one
go, alternating them round by round, on this node or on a namespace cluster,
and writes a table (CSV and markdown) and a plot (PNG, gnuplot).

  allreduce_bench.py --builddir BUILD [--configs tuned,han,strata]
                     [--np 4] | [--nodes N --ppn K [--rate 1gbit]]
                     [--min 8] [--max 64M] [--iters 50] [--iters-large N] [--warmup 5] [--rounds 3]
                     [--buffer host|device] [--out DIR]
                     [--coll allreduce|bcast|allgather|reduce|reduce_scatter_block]

Each round runs every configuration once over all sizes; the order of the
configurations rotates from round to round so that drift in the machine's
state does not favour one of them.  A size's figure for a configuration is the
median over rounds of the per-round median.  On a cluster, the bytes each node
sent per allreduce are read from the nodes' eth0 counters and compared with the
optimum 2(N-1)/N * n.

With --buffer device on one node the benchmark also measures the GPU's own
limit (strata_allreduce_bench's LIMIT lines: a device-to-device copy of the
message, which moves 2n bytes through HBM): k ranks sharing one GPU must move
(3k+1)n bytes through HBM per allreduce (each rank reads its input and writes
its result, and the node phases read k inputs and write the result once
more per slice), so the limit is (3k+1)/2 copy times; the table gives each
configuration's fraction of it.  The configurations strata-native and
strata-staged force coll/strata's two device paths.

--coll times another collective (strata_allreduce_bench --coll: a size is
the vector, or each rank's block for allgather and reduce_scatter_block).
Its bytes bound, for the most any node sends per call: bcast n (every byte
leaves the root's node once); reduce n (every other node must send
something of every element: its contribution leaves it no other way);
allgather and reduce_scatter_block (N-1)/N of the whole vector (every node
must receive the other nodes' part; what the nodes send adds up to what
they receive).  Its HBM limit
with k ranks on one GPU, in device-to-device copies of the size: bcast k
(the root's copy in, k-1 copies out), allgather k(k+1) (k blocks in, then
every rank copies all k out); none for the reductions other than allreduce.
"""

import argparse
import csv
import datetime
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.dirname(os.path.dirname(HERE))


def parse_size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def human_size(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%g %s" % (n / scale, unit)
    return "%d B" % n


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--builddir", required=True, help="configured and built Strata build directory")
    p.add_argument("--configs", default="tuned,han,strata", help="coll configurations (tuned, han, strata)")
    p.add_argument("--np", type=int, default=4, help="ranks on this node (without --nodes)")
    p.add_argument("--nodes", type=int, default=0, help="run on a namespace cluster of this many nodes")
    p.add_argument("--ppn", type=int, default=2, help="ranks per node on the cluster")
    p.add_argument("--rate", default="", help="per-link rate on the cluster, e.g. 1gbit (tc tbf)")
    p.add_argument("--min", default="8")
    p.add_argument("--max", default="64M")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--iters-large", type=int, default=0,
                   help="timed calls per size from 1 MiB (default: --iters)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--buffer", choices=("host", "device"), default="host")
    p.add_argument("--out", default="allreduce-bench")
    p.add_argument("--title", default="")
    p.add_argument("--coll", default="allreduce",
                   choices=("allreduce", "bcast", "allgather", "reduce", "reduce_scatter_block"))
    p.add_argument("--inside-cluster", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def mpirun_command(args, config):
    """The benchmark's mpirun line, built by test/lib.sh's helpers so that
    tests and benchmarks run jobs the same way."""
    bench = os.path.join(args.builddir, "test", "bench", "strata_allreduce_bench")
    bench_args = ["--min", args.min, "--max", args.max, "--iters", str(args.iters),
                  "--iters-large", str(args.iters_large or args.iters),
                  "--warmup", str(args.warmup), "--buffer", args.buffer, "--label", config,
                  "--coll", args.coll]
    if args.nodes:
        launch = "strata_mpirun_cluster -np %d --map-by ppr:%d:node" % (args.nodes * args.ppn, args.ppn)
        bench_args += ["--netdev", "eth0"]
    else:
        launch = "strata_mpirun_local %d" % args.np
    script = ". %s; . %s; %s $(strata_coll_mca %s) %s" % (
        shlex.quote(os.path.join(args.builddir, "test", "strata-test-env.sh")),
        shlex.quote(os.path.join(SRCDIR, "test", "lib.sh")),
        launch, shlex.quote(config), " ".join(shlex.quote(a) for a in [bench] + bench_args))
    return ["bash", "-c", script]


def run_rounds(args, configs):
    records = []
    args.copy_us = {}
    for rnd in range(args.rounds):
        order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
        for config in order:
            print("allreduce_bench: round %d/%d, %s" % (rnd + 1, args.rounds, config), flush=True)
            proc = subprocess.run(mpirun_command(args, config), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                sys.stderr.write(proc.stdout)
                raise SystemExit("allreduce_bench: the %s run failed (exit %d)" % (config, proc.returncode))
            for line in proc.stdout.splitlines():
                if line.startswith("LIMIT,"):
                    _, _, nbytes, copy_us = line.split(",")
                    args.copy_us.setdefault(int(nbytes), []).append(float(copy_us))
                    continue
                if not line.startswith("RESULT,"):
                    continue
                _, label, nbytes, iters, tmin, tmed, tmax, tx, rx = line.split(",")
                records.append({"config": label, "round": rnd, "bytes": int(nbytes),
                                "min_us": float(tmin), "median_us": float(tmed), "max_us": float(tmax),
                                "tx": int(tx), "rx": int(rx)})
    return records


def aggregate(records, configs):
    table = {}
    for config in configs:
        for nbytes in sorted({r["bytes"] for r in records}):
            rs = [r for r in records if r["config"] == config and r["bytes"] == nbytes]
            if not rs:
                continue
            table[(config, nbytes)] = {
                "median_us": statistics.median(r["median_us"] for r in rs),
                "min_us": min(r["min_us"] for r in rs),
                "max_us": max(r["max_us"] for r in rs),
                "tx": statistics.median(r["tx"] for r in rs),
                "rx": statistics.median(r["rx"] for r in rs),
                "rounds": len(rs),
            }
    return table


def paired_ratios(records, configs):
    """Each strata* configuration's per-round median over the fastest
    non-strata configuration's in the same round, per size: {(config, bytes):
    [ratio per round]}.  The runs of a round follow each other, so a machine
    that moves between a fast and a slow state from round to round moves
    both sides of a ratio."""
    ours = [c for c in configs if c.startswith("strata")]
    others = [c for c in configs if not c.startswith("strata")]
    if not ours or not others:
        return {}
    by = {(r["config"], r["round"], r["bytes"]): r["median_us"] for r in records}
    out = {}
    for (config, rnd, nbytes), us in by.items():
        if config not in ours:
            continue
        ref = [by[(o, rnd, nbytes)] for o in others if (o, rnd, nbytes) in by]
        if len(ref) == len(others) and min(ref) > 0:
            out.setdefault((config, nbytes), []).append(us / min(ref))
    return out


def quartiles(x):
    x = sorted(x)
    q = statistics.quantiles(x, n=4) if len(x) >= 2 else [x[0]] * 3
    return q[0], statistics.median(x), q[2]


def quartile_cell(x, fmt="%.2f"):
    """A table cell: the median, first and third quartile in brackets; - for none."""
    if not x:
        return "-"
    q1, med, q3 = quartiles(x)
    return ("%s (%s-%s)" % (fmt, fmt, fmt)) % (med, q1, q3)


def reexec_in_cluster(script, argv, nodes, rate):
    """Runs `script argv --inside-cluster` inside one namespace cluster of
    `nodes` nodes (links shaped to `rate`, if given), brought up for all the
    runs; cluster.sh tears it down on every exit path."""
    cmd = [os.path.join(SRCDIR, "test", "cluster", "cluster.sh"), "run", "--nodes", str(nodes)]
    if rate:
        cmd += ["--rate", rate]
    return subprocess.call(cmd + ["--", sys.executable, os.path.abspath(script), "--inside-cluster"] + argv)


def git_commit():
    try:
        return subprocess.run(["git", "-C", SRCDIR, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def describe_setup(args):
    if args.nodes:
        where = "namespace cluster, %d nodes x %d ranks" % (args.nodes, args.ppn)
        where += ", links shaped to %s" % args.rate if args.rate else ", links unshaped"
    else:
        where = "one node, %d ranks" % args.np
    return where


def hbm_limits(args):
    """Per size, the least time k ranks sharing one GPU need: (3k+1)n bytes
    through HBM at the rate a device-to-device copy reaches (2n bytes per
    copy).  Only on one node with device buffers."""
    if args.nodes or args.buffer != "device":
        return {}
    k = args.np
    copies = {"allreduce": (3 * k + 1) / 2.0, "bcast": float(k), "allgather": float(k * (k + 1))}
    if args.coll not in copies:
        return {}
    return {nbytes: copies[args.coll] * statistics.median(times)
            for nbytes, times in getattr(args, "copy_us", {}).items()}


def bytes_optimum(args, nbytes):
    """The least the busiest node must send per call (see the top)."""
    n = args.nodes
    whole = nbytes * args.nodes * args.ppn if args.coll in ("allgather", "reduce_scatter_block") else nbytes
    if args.coll in ("bcast", "reduce"):
        return float(nbytes)
    return (2.0 if args.coll == "allreduce" else 1.0) * (n - 1) / n * whole


def write_outputs(args, configs, table, command_line, paired=None):
    limits = hbm_limits(args)
    os.makedirs(args.out, exist_ok=True)
    sizes = sorted({nbytes for (_, nbytes) in table})
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "bytes", "median_us", "min_us", "max_us", "tx_bytes_per_node_per_call",
                    "rx_bytes_per_node_per_call", "rounds", "hbm_limit_us"])
        for config in configs:
            for nbytes in sizes:
                e = table.get((config, nbytes))
                if e:
                    w.writerow([config, nbytes, "%.3f" % e["median_us"], "%.3f" % e["min_us"], "%.3f" % e["max_us"],
                                int(e["tx"]), int(e["rx"]), e["rounds"],
                                "%.3f" % limits[nbytes] if nbytes in limits else ""])

    base = configs[0]
    lines = []
    lines.append("# MPI_%s: %s" % (args.coll.capitalize() if args.coll != "reduce_scatter_block"
                                   else "Reduce_scatter_block", args.title or ", ".join(configs)))
    lines.append("")
    lines.append("- setup: %s, %s buffers, MPI_FLOAT MPI_SUM" % (describe_setup(args), args.buffer))
    lines.append("- machine: %s, %d cores, %s" % (platform.node(), os.cpu_count() or 0, platform.platform()))
    lines.append("- date: %s, commit %s" % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), git_commit()))
    lines.append("- method: %d rounds alternating the configurations; per round %d timed calls per size "
                 "(%d from 1 MiB; +%d warm-up), each fenced by a barrier and timed on the slowest rank; "
                 "figures are the median over rounds of the per-round median"
                 % (args.rounds, args.iters, args.iters_large or args.iters, args.warmup))
    lines.append("- command: `%s`" % command_line)
    lines.append("")
    head = ["size"] + ["%s median (us)" % c for c in configs] + ["%s / %s" % (c, base) for c in configs[1:]]
    if args.nodes:
        head += ["%s tx/node/call vs optimum" % c for c in configs]
    if limits:
        head += ["HBM limit (us)"] + ["%s / limit" % c for c in configs]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for nbytes in sizes:
        row = [human_size(nbytes)]
        row += ["%.1f" % table[(c, nbytes)]["median_us"] if (c, nbytes) in table else "-" for c in configs]
        for c in configs[1:]:
            if (c, nbytes) in table and (base, nbytes) in table:
                row.append("%.2f" % (table[(c, nbytes)]["median_us"] / table[(base, nbytes)]["median_us"]))
            else:
                row.append("-")
        if args.nodes:
            optimum = bytes_optimum(args, nbytes)
            for c in configs:
                e = table.get((c, nbytes))
                row.append("%.2f" % (e["tx"] / optimum) if e and e["tx"] >= 0 and optimum > 0 else "-")
        if limits:
            lim = limits.get(nbytes)
            row.append("%.1f" % lim if lim else "-")
            for c in configs:
                e = table.get((c, nbytes))
                row.append("%.2f" % (lim / e["median_us"]) if lim and e else "-")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append("Ratios below 1 mean faster than %s. tx/node/call is the most any node sent per call "
                 "(barrier traffic included) over the optimum (%s)." % (
                     base, "2(N-1)/N * n" if args.coll == "allreduce" else "see allreduce_bench.py's top")
                 if args.nodes else
                 "Ratios below 1 mean faster than %s." % base)
    if limits:
        lines.append("")
        lines.append("HBM limit: %s times the median device-to-device copy of the size on "
                     "rank 0 (k = %d ranks sharing the GPU); `/ limit` is the fraction of it a "
                     "configuration reaches (1 = at the limit)." % (
                         {"allreduce": "(3k+1)/2", "bcast": "k", "allgather": "k(k+1)"}[args.coll], args.np))
    if paired:
        ours = [c for c in configs if c.startswith("strata") and any(k[0] == c for k in paired)]
        others = [c for c in configs if not c.startswith("strata")]
        lines.append("")
        lines.append("Paired per round: the median over rounds of each round's %s over min(%s) in the same "
                     "round (first and third quartile)." % ("/".join(ours), ", ".join(others)))
        lines.append("")
        lines.append("| size | " + " | ".join("%s / min(%s)" % (c, ", ".join(others)) for c in ours) + " |")
        lines.append("|---|" + "---|" * len(ours))
        for nbytes in sizes:
            cells = [quartile_cell(paired.get((c, nbytes))) for c in ours]
            lines.append("| %s | %s |" % (human_size(nbytes), " | ".join(cells)))
    lines.append("")
    lines.append("![plot](plot.png)")
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    write_plot(args, configs, table, sizes, limits)


def write_plot(args, configs, table, sizes, limits):
    data = os.path.join(args.out, "plot.dat")
    with open(data, "w") as f:
        for c in configs:
            f.write("# %s\n" % c)
            for nbytes in sizes:
                if (c, nbytes) in table:
                    f.write("%d %.3f\n" % (nbytes, table[(c, nbytes)]["median_us"]))
            f.write("\n\n")
        if limits:
            f.write("# HBM limit\n")
            for nbytes in sizes:
                if nbytes in limits:
                    f.write("%d %.3f\n" % (nbytes, limits[nbytes]))
            f.write("\n\n")
    if not have_gnuplot("allreduce_bench", "plot.png", data):
        return
    plots = ", ".join("'%s' index %d with linespoints title '%s'" % (data, i, c) for i, c in enumerate(configs))
    if limits:
        plots += ", '%s' index %d with lines dashtype 2 title 'HBM limit'" % (data, len(configs))
    script = "\n".join([
        "set terminal pngcairo size 900,600" if has_pngcairo() else "set terminal png size 900,600",
        "set output '%s'" % os.path.join(args.out, "plot.png"),
        "set title '%s' noenhanced" % (args.title or "MPI_Allreduce, " + describe_setup(args)).replace("'", ""),
        "set logscale xy",
        "set xlabel 'message size (bytes)'",
        "set ylabel 'median time (us)'",
        "set key top left",
        "set grid",
        "plot " + plots,
    ])
    proc = subprocess.run(["gnuplot"], input=script, text=True, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit("allreduce_bench: gnuplot failed: %s" % proc.stderr)


def have_gnuplot(prog, name, data):
    """Whether gnuplot is here; without it (a bare GPU machine) the plot is
    left out with a line saying where its data is."""
    if shutil.which("gnuplot"):
        return True
    print("%s: no gnuplot here: %s not drawn (the data is in %s)" % (prog, name, data))
    return False


def has_pngcairo():
    proc = subprocess.run(["gnuplot", "-e", "set terminal"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    return "pngcairo" in proc.stdout


def main(argv):
    args = parse_args(argv)
    args.builddir = os.path.abspath(args.builddir)
    args.out = os.path.abspath(args.out)
    configs = [c for c in args.configs.split(",") if c]
    parse_size(args.min), parse_size(args.max)
    if args.nodes and not args.inside_cluster:
        return reexec_in_cluster(__file__, argv, args.nodes, args.rate)
    records = run_rounds(args, configs)
    if not records:
        raise SystemExit("allreduce_bench: no results were printed")
    table = aggregate(records, configs)
    shown = [a for a in argv if a != "--inside-cluster"]
    write_outputs(args, configs, table, "test/bench/allreduce_bench.py " + " ".join(shlex.quote(a) for a in shown),
                  paired=paired_ratios(records, configs))
    with open(os.path.join(args.out, "results.md")) as f:
        print(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
