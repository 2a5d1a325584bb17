#!/usr/bin/env python3
"""Per-call cost of small host collectives with coll/strata on: this build
against another build of Strata (e.g. the release before a change) and
against Open MPI's tuned alone, alternating them round by round on this
node, and writes a table (CSV, markdown) and a plot (PNG, gnuplot).

  coll_overhead.py --builddir BUILD [--before OTHER_BUILD] [--np 4]
                   [--min 8] [--max 4K] [--iters 2000] [--repeats 5] [--rounds 3]
                   [--colls allreduce,reduce,bcast,allgather,alltoall,iallreduce]
                   [--type int|float|char]
                   [--out DIR]

Variants: tuned (coll/strata off), strata-before (coll/strata of
OTHER_BUILD/components/ompi, when --before is given), strata (this build).
Each round runs every variant once (test/bench/coll_latency_bench, calls back
to back); the order rotates from round to round.  A figure is the best over
rounds of each round's best repeat: on a small oversubscribed machine a run's
time is the work plus whatever the scheduler adds, and only adds, so the
minimum is the figure that compares (runs of one variant differ by up to 2x
here).  Ratios are strata over strata-before
(the change's cost; 1.00 = none) and strata over tuned.
"""

import argparse
import csv
import datetime
import os
import platform
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.dirname(os.path.dirname(HERE))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--builddir", required=True)
    p.add_argument("--before", help="another Strata build directory to compare with")
    p.add_argument("--np", type=int, default=4)
    p.add_argument("--min", default="8")
    p.add_argument("--max", default="4K")
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--colls", default="allreduce,reduce,bcast,allgather,alltoall,iallreduce")
    p.add_argument("--type", default="int", choices=("int", "float", "char"),
                   help="element type (MPI_INT, MPI_FLOAT, MPI_SIGNED_CHAR)")
    p.add_argument("--out", default="coll-overhead")
    return p.parse_args(argv)


def mpirun_command(args, variant):
    """mpirun through test/lib.sh's helpers; strata-before points Open MPI's
    component path at the other build (lib.sh derives it from STRATA_BUILDDIR)."""
    bench = os.path.join(args.builddir, "test", "bench", "coll_latency_bench")
    bench_args = ["--type", args.type, "--min", args.min, "--max", args.max, "--iters", str(args.iters),
                  "--repeats", str(args.repeats), "--colls", args.colls, "--label", variant]
    env = shlex.quote(os.path.join(args.builddir, "test", "strata-test-env.sh"))
    lib = shlex.quote(os.path.join(SRCDIR, "test", "lib.sh"))
    components = "STRATA_BUILDDIR=%s; " % shlex.quote(args.before) if variant == "strata-before" else ""
    coll = "tuned" if variant == "tuned" else "strata"
    script = ". %s; %s. %s; strata_mpirun_local %d $(strata_coll_mca %s) %s" % (
        env, components, lib, args.np, coll, " ".join(shlex.quote(a) for a in [bench] + bench_args))
    return ["bash", "-c", script]


def run_rounds(args, variants):
    records = []
    for rnd in range(args.rounds):
        order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
        for variant in order:
            print("coll_overhead: round %d/%d, %s" % (rnd + 1, args.rounds, variant), flush=True)
            proc = subprocess.run(mpirun_command(args, variant), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                sys.stderr.write(proc.stdout)
                raise SystemExit("coll_overhead: the %s run failed (exit %d)" % (variant, proc.returncode))
            for line in proc.stdout.splitlines():
                if line.startswith("RESULT,"):
                    _, label, coll, nbytes, us = line.split(",")
                    records.append((label, coll, int(nbytes), float(us)))
    return records


def aggregate(records):
    table = {}
    for key in {(r[0], r[1], r[2]) for r in records}:
        table[key] = min(r[3] for r in records if (r[0], r[1], r[2]) == key)
    return table


def git_commit(srcdir=SRCDIR):
    proc = subprocess.run(["git", "-C", srcdir, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    return proc.stdout.strip() or "unknown"


def build_commit(builddir):
    """The commit a build directory was configured from (its test env names the source)."""
    try:
        with open(os.path.join(builddir, "test", "strata-test-env.sh")) as f:
            for line in f:
                if line.startswith("STRATA_SRCDIR="):
                    return git_commit(line.split("=", 1)[1].strip().strip("'\""))
    except OSError:
        pass
    return "unknown"


def write_outputs(args, variants, table, command):
    os.makedirs(args.out, exist_ok=True)
    colls = [c for c in args.colls.split(",") if any(k[1] == c for k in table)]
    sizes = sorted({k[2] for k in table})
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "collective", "bytes", "us_per_call"])
        for (v, c, b), us in sorted(table.items()):
            w.writerow([v, c, b, "%.3f" % us])
    before = "strata-before" in variants
    head = ["collective", "bytes"] + ["%s us" % v for v in variants]
    if before:
        head.append("strata / strata-before")
    head.append("strata / tuned")
    lines = [
        "# Small host collectives: per-call time with coll/strata on",
        "",
        "- date: %s" % datetime.date.today().isoformat(),
        "- commit: %s" % git_commit(),
        "- machine: %s, %d cores, %d ranks on one node (%smpi_yield_when_idle 1)" % (
            platform.node(), os.cpu_count(), args.np,
            "oversubscribed, " if args.np > (os.cpu_count() or 1) else ""),
        "- command: `%s`" % command,
        "- elements: %s" % {"int": "MPI_INT", "float": "MPI_FLOAT", "char": "MPI_SIGNED_CHAR"}[args.type],
    ] + (["- strata-before: the build in %s, commit %s" % (args.before, build_commit(args.before))]
         if args.before else []) + [
        "- figure: best over %d rounds (variants alternating) of the best of %d repeats of %d "
        "back-to-back calls (slowest rank's mean per call)" % (args.rounds, args.repeats, args.iters),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for c in colls:
        for b in sizes:
            row = [c, str(b)] + ["%.2f" % table[(v, c, b)] if (v, c, b) in table else "-" for v in variants]
            if before:
                row.append("%.2f" % (table[("strata", c, b)] / table[("strata-before", c, b)]))
            row.append("%.2f" % (table[("strata", c, b)] / table[("tuned", c, b)]))
            lines.append("| " + " | ".join(row) + " |")
    lines += ["", "![plot](plot.png)", ""]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines))
    write_plot(args, colls, sizes, table, "strata-before" if before else "tuned")


def write_plot(args, colls, sizes, table, base):
    data = os.path.join(args.out, "plot.dat")
    with open(data, "w") as f:
        for c in colls:
            f.write("# %s\n" % c)
            for b in sizes:
                f.write("%d %.4f\n" % (b, table[("strata", c, b)] / table[(base, c, b)]))
            f.write("\n\n")
    plots = ", ".join("'%s' index %d with linespoints title '%s'" % (data, i, c) for i, c in enumerate(colls))
    script = "\n".join([
        "set terminal png size 900,600",
        "set output '%s'" % os.path.join(args.out, "plot.png"),
        "set title 'coll/strata per-call time over %s, host buffers, %d ranks'" % (base, args.np),
        "set logscale x",
        "set yrange [0:2]",
        "set xlabel 'message size (bytes)'",
        "set ylabel 'time ratio (1 = same)'",
        "set key top left",
        "set grid",
        "plot " + plots,
    ])
    proc = subprocess.run(["gnuplot"], input=script, text=True, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit("coll_overhead: gnuplot failed: %s" % proc.stderr)


def main(argv):
    args = parse_args(argv)
    args.builddir = os.path.abspath(args.builddir)
    args.out = os.path.abspath(args.out)
    variants = ["tuned"] + (["strata-before"] if args.before else []) + ["strata"]
    if args.before:
        args.before = os.path.abspath(args.before)
    table = aggregate(run_rounds(args, variants))
    if not table:
        raise SystemExit("coll_overhead: no results were printed")
    write_outputs(args, variants, table, "test/bench/coll_overhead.py " + " ".join(shlex.quote(a) for a in argv))
    with open(os.path.join(args.out, "results.md")) as f:
        print(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
