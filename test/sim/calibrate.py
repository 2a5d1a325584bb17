#!/usr/bin/env python3
"""Calibrates test/sim/strata_sim on the namespace cluster and checks its
predictions against measured allreduce times.

  calibrate.py --builddir BUILD [--nodes 4[,2,8]] [--ppn 2] [--rate 1gbit]
               [--sizes 64K,1M,4M] [--inter auto[,ring,...]] [--rounds 3] [--iters 10]
               [--check-size 1M --tolerance 0.25] [--write-params FILE] [--csv FILE]

For each node count N (one namespace cluster each, links shaped to --rate):
  1. strata_sim_calib measures the model's parameters with the job's own
     N x ppn ranks all busy (test/sim/strata_sim_calib.c: ping-pong latency
     L + 2o, per-message send cost o, the node's link G, memcpy and reduce
     bandwidth per rank).  --write-params writes them as a strata_sim
     parameter set (FILE, with %d replaced by N), with the settings the
     cluster fixes: one NIC per node, btl/tcp's 64 KiB eager limit.
  2. strata_allreduce_bench runs coll/strata from the least to the largest
     of --sizes (powers of two), --rounds times (a fresh mpirun each), the
     --inter settings alternating within each round (auto: the cost model
     with coll/strata's default alpha and beta, as a user gets it; or
     forced).
     A size's measured time is the best (least) over rounds of the per-round
     median over --iters calls: the machine has 2 shared cores, and the best
     round is the one least disturbed by other work.
  3. strata_sim predicts the same configurations with those parameters (the
     same decision: coll/strata's defaults) and the ratio predicted /
     measured is printed.
With --check-size, exits 1 unless every ratio at that size (of the
--check-inter setting, or of all) is within 1 +- --tolerance.  Inside a running cluster (--inside-cluster, set by the
test suite's cluster_job) it uses that cluster, whose node count must be
the single --nodes value.
"""

import argparse
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.dirname(os.path.dirname(HERE))

# What the namespace cluster fixes: one eth0 per node; ob1 over btl/tcp
# sends up to 64 KiB (header included) eagerly.
CLUSTER_FIXED = {"nics": "1", "rndv": "65500"}


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
    p.add_argument("--builddir", required=True)
    p.add_argument("--nodes", default="4", help="node counts (even), comma-separated")
    p.add_argument("--ppn", type=int, default=2)
    p.add_argument("--rate", default="1gbit")
    p.add_argument("--sizes", default="64K,1M,4M")
    p.add_argument("--inter", default="auto", help="inter-node settings: auto, ring, doubling, halving_doubling")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--check-size", default="")
    p.add_argument("--tolerance", type=float, default=0.25)
    p.add_argument("--check-inter", default="", help="check only this --inter setting (default: all)")
    p.add_argument("--write-params", default="", help="parameter set to write (%%d: node count)")
    p.add_argument("--csv", default="", help="append the comparison to this CSV file")
    p.add_argument("--inside-cluster", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def cluster_shell(args, command):
    """Runs a shell command with test/lib.sh's helpers inside the cluster."""
    script = ". %s; . %s; %s" % (shlex.quote(os.path.join(args.builddir, "test", "strata-test-env.sh")),
                                  shlex.quote(os.path.join(SRCDIR, "test", "lib.sh")), command)
    proc = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        raise SystemExit("calibrate: failed (exit %d): %s" % (proc.returncode, command))
    return proc.stdout


def measure_params(args, nodes):
    calib = os.path.join(args.builddir, "test", "sim", "strata_sim_calib")
    out = cluster_shell(args, "strata_mpirun_cluster -np %d --map-by ppr:%d:node %s"
                        % (nodes * args.ppn, args.ppn, shlex.quote(calib)))
    params, comments = dict(CLUSTER_FIXED), []
    for line in out.splitlines():
        if line.startswith("# strata_sim_calib") or line.startswith("# one-way"):
            comments.append(line)
        elif "=" in line and not line.startswith("#") and not line.startswith("["):
            key, value = (x.strip() for x in line.split("=", 1))
            params[key] = value
    for key in ("L", "o", "G", "copy-bw", "reduce-bw"):
        if key not in params:
            sys.stderr.write(out)
            raise SystemExit("calibrate: strata_sim_calib printed no %s" % key)
    return params, comments


def write_params(path, params, comments, nodes, ppn, rate):
    with open(path, "w") as f:
        f.write("# strata_sim parameter set: the namespace cluster (test/cluster/cluster.sh), links\n")
        f.write("# shaped to %s, measured by test/sim/calibrate.py with %d nodes x %d ranks busy\n"
                % (rate, nodes, ppn))
        for c in comments:
            f.write(c + "\n")
        f.write("name = namespace-%s-%dx%d\n" % (rate, nodes, ppn))
        for key in ("L", "o", "G", "nics", "rndv", "copy-bw", "reduce-bw"):
            f.write("%s = %s\n" % (key, params[key]))


def bench_config(inter):
    mca = "$(strata_coll_mca strata)"
    if inter != "auto":
        mca += " --mca coll_strata_allreduce_inter_algorithm %s" % inter
    return mca


def measure_allreduce(args, nodes, sizes, inters):
    """{(inter, bytes): best over rounds of the per-round median (s)}; the
    settings alternate within each round, so drift in the machine's load
    does not favour one."""
    bench = os.path.join(args.builddir, "test", "bench", "strata_allreduce_bench")
    best = {}
    for rnd in range(args.rounds):
        for inter in inters[rnd % len(inters):] + inters[:rnd % len(inters)]:
            out = cluster_shell(args, "strata_mpirun_cluster -np %d --map-by ppr:%d:node %s %s --min %d --max %d "
                                "--iters %d --iters-large %d --warmup 3 --label %s"
                                % (nodes * args.ppn, args.ppn, bench_config(inter), shlex.quote(bench), min(sizes),
                                   max(sizes), args.iters, args.iters, inter))
            for line in out.splitlines():
                if line.startswith("RESULT,"):
                    fields = line.split(",")
                    nbytes, median = int(fields[2]), float(fields[5]) * 1e-6
                    if nbytes in sizes:
                        best[(inter, nbytes)] = min(best.get((inter, nbytes), median), median)
    return best


def predict(args, params, nodes, sizes, inter):
    sim = os.path.join(args.builddir, "test", "sim", "strata_sim")
    cmd = [sim, "--nodes", str(nodes), "--ppn", str(args.ppn), "--bytes", ",".join(str(s) for s in sizes),
           "--alg", inter]
    for key, value in params.items():
        cmd += ["--" + key, value]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        f = line.split(",")
        result[int(f[2])] = {"path": f[3], "inter": f[4], "predicted": float(f[7]), "node": float(f[8]),
                             "xchg": float(f[9]), "interval": float(f[10])}
    return result


def run_inside(args):
    nodes = int(args.nodes)
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    params, comments = measure_params(args, nodes)
    for c in comments:
        print(c)
    if args.write_params:
        path = args.write_params.replace("%d", str(nodes))
        write_params(path, params, comments, nodes, args.ppn, args.rate)
        print("calibrate: wrote %s" % path)
    rows = []
    inters = [i for i in args.inter.split(",") if i]
    measured = measure_allreduce(args, nodes, sizes, inters)
    for inter in inters:
        predicted = predict(args, params, nodes, sizes, inter)
        for nbytes in sizes:
            p = predicted[nbytes]
            rows.append({"nodes": nodes, "ppn": args.ppn, "bytes": nbytes, "setting": inter, "inter": p["inter"],
                         "measured": measured[(inter, nbytes)], "predicted": p["predicted"],
                         "ratio": p["predicted"] / measured[(inter, nbytes)]})
    print("| nodes x ppn | size | inter-node (setting: chosen) | measured (ms, best of %d rounds' medians) "
          "| predicted (ms) | predicted / measured |" % args.rounds)
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %d x %d | %s | %s: %s | %.2f | %.2f | %.2f |" % (r["nodes"], r["ppn"], human_size(r["bytes"]),
                                                           r["setting"], r["inter"], r["measured"] * 1e3,
                                                           r["predicted"] * 1e3, r["ratio"]))
    for r in rows:
        print("CALIB,%d,%d,%d,%s,%s,%.6g,%.6g,%.4f" % (r["nodes"], r["ppn"], r["bytes"], r["setting"], r["inter"],
                                                      r["measured"], r["predicted"], r["ratio"]))
    if args.csv:
        new = not os.path.exists(args.csv)
        with open(args.csv, "a") as f:
            if new:
                f.write("nodes,ppn,bytes,setting,inter,measured_s,predicted_s,ratio\n")
            for r in rows:
                f.write("%d,%d,%d,%s,%s,%.6g,%.6g,%.4f\n" % (r["nodes"], r["ppn"], r["bytes"], r["setting"],
                                                            r["inter"], r["measured"], r["predicted"], r["ratio"]))
    if args.check_size:
        check = parse_size(args.check_size)
        checked = [r for r in rows if r["bytes"] == check and args.check_inter in ("", r["setting"])]
        bad = [r for r in checked if abs(r["ratio"] - 1.0) > args.tolerance]
        if not checked:
            raise SystemExit("calibrate: --check-size %s is not among --sizes" % args.check_size)
        for r in checked:
            print("calibrate: %s at %d nodes x %d (%s): measured %.2f ms, predicted %.2f ms, ratio %.2f: %s"
                  % (human_size(check), nodes, args.ppn, r["setting"], r["measured"] * 1e3, r["predicted"] * 1e3,
                     r["ratio"], "FAIL (outside 1 +- %g)" % args.tolerance if r in bad else "within 1 +- %g"
                     % args.tolerance))
        return 1 if bad else 0
    return 0


def main(argv):
    args = parse_args(argv)
    args.builddir = os.path.abspath(args.builddir)
    if args.inside_cluster:
        if "," in args.nodes:
            raise SystemExit("calibrate: inside a cluster, --nodes is that cluster's node count")
        return run_inside(args)
    rc = 0
    for nodes in [int(n) for n in args.nodes.split(",") if n]:
        rest = [a for a in argv]
        i = rest.index("--nodes") if "--nodes" in rest else -1
        if i >= 0:
            del rest[i:i + 2]
        cmd = [os.path.join(SRCDIR, "test", "cluster", "cluster.sh"), "run", "--nodes", str(nodes)]
        if args.rate:
            cmd += ["--rate", args.rate]
        cmd += ["--", sys.executable, os.path.abspath(__file__), "--inside-cluster", "--nodes", str(nodes)] + rest
        rc |= subprocess.call(cmd)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
