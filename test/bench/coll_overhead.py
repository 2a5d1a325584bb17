#!/usr/bin/env python3
"""Per-call cost of small host collectives with coll/strata on: this build
against Open MPI's tuned and han alone and against another build of Strata
(e.g. the release before a change), alternating them round by round on this
node, and writes a table (CSV, markdown) and a plot (PNG, gnuplot).

  coll_overhead.py --builddir BUILD [--before OTHER_BUILD] [--np 4 | --nodes N --ppn K [--rate 1gbit]]
                   [--variants tuned,han,strata] [--op sum|NAME,...|all]
                   [--min 8] [--max 4K] [--iters 2000] [--repeats 5] [--rounds 3]
                   [--colls allreduce,reduce,bcast,allgather,alltoall,iallreduce,reduce_scatter_block]
                   [--type int|float|char]
                   [--out DIR]

Variants (--variants, comma-separated; default tuned,han,strata, and
strata-before as well when --before is given): tuned (coll/strata and
coll/han off), han (coll/han on top, coll/strata off), strata (this build),
strata-before (coll/strata of OTHER_BUILD/components/ompi, needs --before);
any other name is a configuration of test/lib.sh's strata_coll_mca
(e.g. strata-ring).  strata must be one of them.

--op: the reduction operation of allreduce, reduce and iallreduce (sum,
prod, max, min, land, lor, lxor, band, bor, bxor, a comma-separated list, or
all: every one defined on --type, float: sum, prod, max, min; int and char:
all ten).  Every operation runs inside the same mpirun of a variant (one
mpirun per variant and round); bcast, allgather and alltoall take none and
show - as their operation.

Each round runs every variant once (test/bench/coll_latency_bench, calls back
to back, OSU-style: no barrier between calls, so no barrier's skew is timed);
the order rotates from round to round.  With --nodes the runs go to a
namespace cluster (test/cluster/cluster.sh) of N nodes with K ranks each,
links shaped to --rate, brought up once for all runs.  A figure is the best over
rounds of each round's best repeat: on a small oversubscribed machine a run's
time is the work plus whatever the scheduler adds, and only adds, so the
minimum is the figure that compares (runs of one variant differ by up to 2x
here).

Outputs in --out, keyed by (collective, operation, bytes):
  results.csv  variant,collective,op,bytes,us_per_call
  rounds.csv   round,variant,collective,op,bytes,us_per_call: each round's
               figures, from which the paired ratios come
  results.md   a row per collective, operation and size: each variant's time
               and the ratios strata / tuned, strata / han,
               strata / min(tuned, han) (the issue's target: <= 1.00; a row
               above it is marked, and listed under the table) and
               strata / strata-before (the change's cost; 1.00 = none), those
               whose variants ran, and with tuned and han the median and
               quartiles over rounds of each round's own strata / min(tuned,
               han) (paired: the runs of a round follow each other)
  bytes.md, bytes.csv  (--bytes, with --nodes) per variant, collective and
               size: the bytes each node sent per call (its link's tx
               counter over a run of --iters calls of that size alone, less
               a run of none: set-up and the benchmark's own messages
               cancel; divided by the calls) against the
               bound, (N-1)/N of the vector (bcast) or of the gathered
               vector (allgather; for the reducing collectives the vector,
               2(N-1)/N for allreduce)
  plot.png     strata over its base (min(tuned, han) when both ran, else
               strata-before, else tuned or han) per size, one line per
               collective; with several operations the worst operation's
               ratio, and plot-<collective>.png per reducing collective, one
               line per operation; over several rounds against min(tuned,
               han) also a line per collective of the paired medians
"""

import argparse
import csv
import datetime
import math
import os
import platform
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from allreduce_bench import describe_setup, reexec_in_cluster  # noqa: E402

OPS = ("sum", "prod", "max", "min", "land", "lor", "lxor", "band", "bor", "bxor")
FLOAT_OPS = ("sum", "prod", "max", "min")
REDUCING = ("allreduce", "reduce", "iallreduce", "reduce_scatter_block")
MPI_TYPES = {"int": "MPI_INT", "float": "MPI_FLOAT", "char": "MPI_SIGNED_CHAR"}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--builddir", required=True)
    p.add_argument("--before", help="another Strata build directory to compare with")
    p.add_argument("--variants", help="comma-separated (default tuned,han,strata, "
                   "plus strata-before with --before)")
    p.add_argument("--np", type=int, default=4)
    p.add_argument("--nodes", type=int, default=0, help="run on a namespace cluster of this many nodes")
    p.add_argument("--ppn", type=int, default=2, help="ranks per node with --nodes")
    p.add_argument("--rate", default="1gbit", help="link rate with --nodes (tc tbf)")
    p.add_argument("--inside-cluster", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--min", default="8")
    p.add_argument("--max", default="4K")
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--colls", default="allreduce,reduce,bcast,allgather,alltoall,iallreduce")
    p.add_argument("--type", default="int", choices=("int", "float", "char"),
                   help="element type (MPI_INT, MPI_FLOAT, MPI_SIGNED_CHAR)")
    p.add_argument("--op", default="sum",
                   help="reduction operation(s): %s, a comma-separated list, or all" % ", ".join(OPS))
    p.add_argument("--out", default="coll-overhead")
    p.add_argument("--bytes", action="store_true",
                   help="with --nodes: also count the bytes each node sends per call (bytes.md)")
    args = p.parse_args(argv)
    if args.variants is None:
        args.variants = ["tuned", "han"] + (["strata-before"] if args.before else []) + ["strata"]
    else:
        args.variants = [v for v in args.variants.split(",") if v]
    if "strata" not in args.variants:
        p.error("--variants must include strata")
    if "strata-before" in args.variants and not args.before:
        p.error("the strata-before variant needs --before")
    valid = FLOAT_OPS if args.type == "float" else OPS
    if args.op == "all":
        args.ops = list(valid)
    else:
        args.ops = [o for o in args.op.split(",") if o]
        for o in args.ops:
            if o not in OPS:
                p.error("unknown --op %s" % o)
            if o not in valid:
                p.error("--op %s is not defined on --type %s" % (o, args.type))
    return args


def mpirun_command(args, variant, sizes=None, colls=None, repeats=None, extra=(), iters=None):
    """mpirun through test/lib.sh's helpers; strata-before points Open MPI's
    component path at the other build (lib.sh derives it from STRATA_BUILDDIR)."""
    bench = os.path.join(args.builddir, "test", "bench", "coll_latency_bench")
    lo, hi = sizes if sizes else (args.min, args.max)
    bench_args = ["--type", args.type, "--op", ",".join(args.ops), "--min", str(lo),
                  "--max", str(hi), "--iters", str(args.iters if iters is None else iters),
                  "--repeats", str(repeats or args.repeats), "--colls", colls or args.colls,
                  "--label", variant] + list(extra)
    env = shlex.quote(os.path.join(args.builddir, "test", "strata-test-env.sh"))
    lib = shlex.quote(os.path.join(SRCDIR, "test", "lib.sh"))
    components = "STRATA_BUILDDIR=%s; " % shlex.quote(args.before) if variant == "strata-before" else ""
    coll = "strata" if variant == "strata-before" else variant
    if args.nodes:
        launch = "strata_mpirun_cluster -np %d --map-by ppr:%d:node" % (args.nodes * args.ppn, args.ppn)
    else:
        launch = "strata_mpirun_local %d" % args.np
    script = ". %s; %s. %s; mca=$(strata_coll_mca %s) || exit 2; %s $mca %s" % (
        env, components, lib, shlex.quote(coll), launch,
        " ".join(shlex.quote(a) for a in [bench] + bench_args))
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
                    _, label, coll, op, nbytes, us = line.split(",")
                    records.append((rnd, label, coll, op, int(nbytes), float(us)))
    return records


def aggregate(records):
    """{(variant, collective, op, bytes): best us per call over rounds}"""
    table = {}
    for _, v, c, o, b, us in records:
        key = (v, c, o, b)
        table[key] = min(us, table.get(key, us))
    return table


def per_round(records):
    """[{(variant, collective, op, bytes): us per call}] a table per round"""
    rounds = {}
    for rnd, v, c, o, b, us in records:
        rounds.setdefault(rnd, {})[(v, c, o, b)] = us
    return [rounds[r] for r in sorted(rounds)]


def quartiles(xs):
    """(first quartile, median, third quartile) of XS, linearly interpolated"""
    xs = sorted(xs)

    def q(f):
        i = f * (len(xs) - 1)
        lo = int(math.floor(i))
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)
    return q(0.25), q(0.5), q(0.75)


def paired(rounds, c, o, b, bases):
    """(q1, median, q3) over rounds of each round's own strata / min(BASES):
    the runs of one round follow each other, so a machine that changes speed
    between rounds moves both sides of a round's ratio (None when no round
    has them all)"""
    rs = [ratio(t, c, o, b, bases) for t in rounds]
    rs = [r for r in rs if r is not None]
    return quartiles(rs) if rs else None


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


def ratio(table, c, o, b, bases):
    """strata's time over the least of BASES' times (None when one is missing)."""
    s = table.get(("strata", c, o, b))
    ts = [table.get((v, c, o, b)) for v in bases]
    if s is None or not ts or None in ts:
        return None
    return s / min(ts)


def ratio_columns(variants):
    """(heading, base variants) of every ratio the variants allow"""
    cols = []
    for base in ("tuned", "han"):
        if base in variants:
            cols.append(("strata / %s" % base, (base,)))
    if "tuned" in variants and "han" in variants:
        cols.append(("strata / min(tuned, han)", ("tuned", "han")))
    if "strata-before" in variants:
        cols.append(("strata / strata-before", ("strata-before",)))
    return cols


def plot_base(variants):
    """(title, base variants) the plots compare strata with"""
    if "tuned" in variants and "han" in variants:
        return "min(tuned, han)", ("tuned", "han")
    for v in ("strata-before", "tuned", "han"):
        if v in variants:
            return v, (v,)
    return None, ()


def row_keys(args, table):
    """(collective, op) in --colls then operation order, with the sizes each has"""
    keys = []
    for c in args.colls.split(","):
        for o in (args.ops if c in REDUCING else ["-"]):
            sizes = sorted({k[3] for k in table if k[1] == c and k[2] == o})
            if sizes:
                keys.append((c, o, sizes))
    return keys


def fmt(x):
    return "-" if x is None else "%.2f" % x


def write_outputs(args, variants, table, rounds, command):
    os.makedirs(args.out, exist_ok=True)
    keys = row_keys(args, table)
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "collective", "op", "bytes", "us_per_call"])
        for (v, c, o, b), us in sorted(table.items()):
            w.writerow([v, c, o, b, "%.4f" % us])
    with open(os.path.join(args.out, "rounds.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "variant", "collective", "op", "bytes", "us_per_call"])
        for rnd, t in enumerate(rounds):
            for (v, c, o, b), us in sorted(t.items()):
                w.writerow([rnd + 1, v, c, o, b, "%.4f" % us])
    rcols = ratio_columns(variants)
    target = ("tuned", "han") if "tuned" in variants and "han" in variants else None
    head = ["collective", "op", "bytes"] + ["%s us" % v for v in variants] + [h for h, _ in rcols]
    if target and len(rounds) > 1:
        head.append("paired per round: median (quartiles)")
    rows, over = [], []
    for c, o, sizes in keys:
        for b in sizes:
            row = [c, o, str(b)] + [fmt(table.get((v, c, o, b))) for v in variants]
            for _, bases in rcols:
                r = ratio(table, c, o, b, bases)
                # marked where the printed figure is above 1.00, what a reader sees
                if bases == target and r is not None and round(r, 2) > 1.00:
                    row.append("**%.2f** (!)" % r)
                    over.append("%s %s %d B: %.2f" % (c, o, b, r))
                else:
                    row.append(fmt(r))
            if target and len(rounds) > 1:
                pr = paired(rounds, c, o, b, target)
                row.append("-" if pr is None else "%.2f (%.2f-%.2f)" % (pr[1], pr[0], pr[2]))
            rows.append("| " + " | ".join(row) + " |")
    lines = [
        "# Small host collectives: per-call time with coll/strata on",
        "",
        "- date: %s" % datetime.date.today().isoformat(),
        "- commit: %s" % git_commit(),
        ("- machine: %s, %d cores, namespace cluster of %d nodes x %d ranks, links shaped to %s" % (
            platform.node(), os.cpu_count(), args.nodes, args.ppn, args.rate)) if args.nodes else
        "- machine: %s, %d cores, %d ranks on one node (%smpi_yield_when_idle 1)" % (
            platform.node(), os.cpu_count(), args.np,
            "oversubscribed, " if args.np > (os.cpu_count() or 1) else ""),
        "- command: `%s`" % command,
        "- elements: %s" % MPI_TYPES[args.type],
        "- operations: %s (allreduce, reduce, iallreduce; - where the collective has none)" % (
            ", ".join("MPI_" + o.upper() for o in args.ops)),
        "- variants: %s" % ", ".join(variants),
    ] + (["- strata-before: the build in %s, commit %s" % (args.before, build_commit(args.before))]
         if "strata-before" in variants else []) + [
        "- figure: best over %d rounds (variants alternating) of the best of %d repeats of %d "
        "back-to-back calls (slowest rank's mean per call)" % (args.rounds, args.repeats, args.iters),
    ] + (["- paired per round: each round's own strata / min(tuned, han) (its runs follow "
          "each other, so a machine that changes speed between rounds moves both sides); "
          "median and quartiles over the rounds"] if target and len(rounds) > 1 else [])
    if target:
        lines.append("- strata above min(tuned, han) (ratio > 1.00, marked **(!)**): %d of %d rows%s" % (
            len(over), len(rows), (": " + "; ".join(over[:20]) +
                                    ("; and %d more" % (len(over) - 20) if len(over) > 20 else ""))
            if over else ""))
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + rows
    plots = write_plot(args, variants, keys, table, rounds)
    lines += [""] + ["![%s](%s)" % (p[:-4], p) for p in plots] + [""]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines))


def gnuplot(args, name, title, series):
    """One PNG: SERIES is [(title, [(bytes, ratio)])], ratios of strata over the base."""
    series = [(t, pts) for t, pts in series if pts]
    data = os.path.join(args.out, name[:-4] + ".dat")
    with open(data, "w") as f:
        for t, pts in series:
            f.write("# %s\n" % t)
            for b, r in pts:
                f.write("%d %.4f\n" % (b, r))
            f.write("\n\n")
    top = max([2.0] + [math.ceil(r * 1.1 * 4) / 4 for _, pts in series for _, r in pts])
    plots = ", ".join("'%s' index %d with linespoints title '%s'" % (data, i, t)
                      for i, (t, _) in enumerate(series))
    script = "\n".join([
        "set terminal png size 900,600 noenhanced",
        "set output '%s'" % os.path.join(args.out, name),
        "set title '%s'" % title,
        "set logscale x",
        "set yrange [0:%g]" % top,
        "set xlabel 'message size (bytes)'",
        "set ylabel 'time ratio (1 = same)'",
        "set key top left",
        "set grid",
        "plot " + (plots if plots else "1 title 'no data'"),
    ])
    proc = subprocess.run(["gnuplot"], input=script, text=True, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit("coll_overhead: gnuplot failed: %s" % proc.stderr)


def write_plot(args, variants, keys, table, rounds):
    """plot.png (a line per collective, the worst operation's ratio when there
    are several, and over several rounds against min(tuned, han) a second
    line per collective of the paired per-round medians) and with several
    operations plot-<coll>.png per reducing collective (a line per
    operation); returns the file names."""
    base, bases = plot_base(variants)
    if base is None:
        return []
    what = "coll/strata per-call time over %s, host %s, %d ranks" % (base, MPI_TYPES[args.type], args.np)
    colls = [c for c in args.colls.split(",") if any(k[0] == c for k in keys)]
    series = []
    for c in colls:
        pts = []
        for b in sorted({b for k in keys if k[0] == c for b in k[2]}):
            rs = [ratio(table, c, o, b, bases) for kc, o, _ in keys if kc == c]
            rs = [r for r in rs if r is not None]
            if rs:
                pts.append((b, max(rs)))
        with_paired = bases == ("tuned", "han") and len(rounds) > 1
        series.append(("%s, best of rounds" % c if with_paired else c, pts))
        if with_paired:
            pts = []
            for b in sorted({b for k in keys if k[0] == c for b in k[2]}):
                prs = [paired(rounds, c, o, b, bases) for kc, o, _ in keys if kc == c]
                prs = [pr[1] for pr in prs if pr is not None]
                if prs:
                    pts.append((b, max(prs)))
            series.append(("%s, paired per-round median" % c, pts))
    several = len(args.ops) > 1
    names = ["plot.png"]
    gnuplot(args, "plot.png", what + (", worst of %d ops" % len(args.ops) if several else ""), series)
    if several:
        for c in colls:
            if c not in REDUCING:
                continue
            series = []
            for kc, o, sizes in keys:
                if kc == c:
                    pts = [(b, ratio(table, c, o, b, bases)) for b in sizes]
                    series.append((o, [(b, r) for b, r in pts if r is not None]))
            name = "plot-%s.png" % c
            gnuplot(args, name, "%s: %s" % (c, what), series)
            names.append(name)
    return names


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)


def node_tx_bytes():
    """{node: bytes its link sent} from cluster.sh bytes (inside the cluster)."""
    out = subprocess.run([os.environ["STRATA_CLUSTER_SH"], "bytes", "--name", os.environ["STRATA_CLUSTER"]],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    tx = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) >= 2:
            tx[f[0]] = int(f[1])
    return tx


def count_bytes(args):
    """[(variant, coll, bytes, tx per node per call, bound)], one run per size."""
    rows = []
    n = args.nodes
    size = parse_size(args.min)
    sizes = []
    while size <= parse_size(args.max):
        sizes.append(size)
        size *= 2
    for coll in args.colls.split(","):
        for variant in args.variants:
            for size in sizes:
                sent = []
                for iters in (args.iters, 0):
                    before = node_tx_bytes()
                    cmd = mpirun_command(args, variant, (size, size), coll, 1, ("--warmup", "0"), iters)
                    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                    if proc.returncode != 0:
                        sys.stderr.write(proc.stdout)
                        raise SystemExit("coll_overhead: the %s byte count failed" % variant)
                    after = node_tx_bytes()
                    sent.append(sum(after[k] - before.get(k, 0) for k in after) / float(len(after)))
                sent = max(sent[0] - sent[1], 0.0)
                vector = size * args.np if coll in ("allgather", "alltoall", "reduce_scatter_block") else size
                factor = 2.0 if coll == "allreduce" else 1.0
                rows.append((variant, coll, size, sent / args.iters, factor * (n - 1) / n * vector))
    return rows


def write_bytes(args, rows, command_line):
    with open(os.path.join(args.out, "bytes.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "collective", "bytes", "tx_bytes_per_node_per_call", "bound"])
        for r in rows:
            w.writerow([r[0], r[1], r[2], "%.0f" % r[3], "%.0f" % r[4]])
    with open(os.path.join(args.out, "bytes.md"), "w") as f:
        f.write("# Bytes each node sends per call, against the bound\n\n")
        f.write("- %s; per size a run of %d calls less a run of none\n" % (describe_setup(args), args.iters))
        f.write("- command: `%s`\n\n" % command_line)
        f.write("| collective | bytes | %s | bound |\n" % " | ".join("%s (x bound)" % v for v in args.variants))
        f.write("| --- | ---: | %s ---: |\n" % ("---: | " * len(args.variants)))
        keys = sorted({(r[1], r[2]) for r in rows})
        for coll, size in keys:
            cells, bound = [], 0
            for v in args.variants:
                hit = [r for r in rows if r[0] == v and r[1] == coll and r[2] == size]
                if hit:
                    bound = hit[0][4]
                    cells.append("%.0f (%.2f)" % (hit[0][3], hit[0][3] / bound if bound else 0))
                else:
                    cells.append("-")
            f.write("| %s | %d | %s | %.0f |\n" % (coll, size, " | ".join(cells), bound))


def main(argv):
    args = parse_args(argv)
    args.builddir = os.path.abspath(args.builddir)
    args.out = os.path.abspath(args.out)
    if args.before:
        args.before = os.path.abspath(args.before)
    if args.nodes and not args.inside_cluster:
        return reexec_in_cluster(__file__, argv, args.nodes, args.rate)
    if args.nodes:
        args.np = args.nodes * args.ppn
        argv = [a for a in argv if a != "--inside-cluster"]
    records = run_rounds(args, args.variants)
    table = aggregate(records)
    if not table:
        raise SystemExit("coll_overhead: no results were printed")
    write_outputs(args, args.variants, table, per_round(records),
                  "test/bench/coll_overhead.py " + " ".join(shlex.quote(a) for a in argv))
    if args.bytes and args.nodes:
        write_bytes(args, count_bytes(args),
                    "test/bench/coll_overhead.py " + " ".join(shlex.quote(a) for a in argv))
    with open(os.path.join(args.out, "results.md")) as f:
        print(f.read())
    if args.bytes and args.nodes:
        with open(os.path.join(args.out, "bytes.md")) as f:
            print(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
