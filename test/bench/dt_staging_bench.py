#!/usr/bin/env python3
"""What hook/strata's handling of non-contiguous datatypes on device buffers
costs a send and a receive, in time and in peak memory: this build against
another build (e.g. the one before a change), alternating them round by
round, 2 ranks on this node; writes a table (CSV, markdown).

  dt_staging_bench.py --builddir BUILD --before OTHER_BUILD [--sparse-mib 512]
                      [--timed vector_4mib,vector_dense] [--rounds 3] [--out DIR]
  dt_staging_bench.py --builddir BUILD --paths [...]

--paths (Open MPI 5.0 with Strata's accelerator component, one build): the
three ways such data can go, in the same run: "hook" (pml/ucx, hook/strata's
redirected generic datatypes), "engine-ucx" (pml/ucx, the redirect off:
Open MPI's datatype engine packs through the accelerator component) and
"engine-ob1" (pml/ob1 over btl/sm, the engine again), with a plot.

Cases (test/mpi/test_p2p_datatypes, device to device, one element, rank 0
to 1 and back, the receive started once the message is there): "sparse", a
vector of 2 x 2 MPI_INT whose blocks lie --sparse-mib MiB apart (16 bytes of
data), and each --timed datatype of the test's table.  Variants: "before"
(OTHER_BUILD/components), "after" (this build).  A figure is the median over
rounds and both ranks of the time of one MPI_Send / MPI_Recv, and the largest
rise of the resident memory's peak (VmHWM, reset before each call) over its
size before the call.

With the CUDA stand-in (the default; STRATA_TEST_DRIVER=real for a GPU) the
device is host memory behind a fence: the figures are the host-side cost of
the code alone, never GPU results.
"""

import argparse
import csv
import datetime
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.dirname(os.path.dirname(HERE))
LINE = re.compile(r"^rank (\d+): (.*): send ([0-9.]+) ms, peak \+([0-9.]+) MiB; "
                  r"receive ([0-9.]+) ms, peak \+([0-9.]+) MiB$")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--builddir", required=True)
    p.add_argument("--before", help="another Strata build directory to compare with")
    p.add_argument("--paths", action="store_true",
                   help="compare the paths of one Open MPI 5.0 build instead (see above)")
    p.add_argument("--sparse-mib", type=int, default=512)
    p.add_argument("--timed", default="vector_4mib,vector_dense")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default="dt-staging")
    args = p.parse_args(argv)
    if not args.paths and not args.before:
        p.error("--before OTHER_BUILD or --paths is required")
    return args


# --paths: the variants' mpirun lines (test/lib.sh helpers) and settings
PATHS = {
    "hook": "strata_mpirun_gpu 2 --mca accelerator_cuda_strata_enable 1",
    "engine-ucx": "strata_mpirun_gpu 2 --mca accelerator_cuda_strata_enable 1 "
                  "--mca hook_strata_device_datatypes 0",
    "engine-ob1": 'LD_LIBRARY_PATH="$(strata_cuda_ld_path)" strata_mpirun_local 2 -x LD_LIBRARY_PATH '
                  "--mca accelerator_cuda_strata_enable 1",
}


def variants(args):
    return list(PATHS) if args.paths else ["before", "after"]


def mpirun_command(args, variant, case_args):
    """mpirun through test/lib.sh's helpers; "before" points Open MPI's
    component path and the UCT module at the other build (lib.sh derives
    them from STRATA_BUILDDIR)."""
    prog = os.path.join(args.builddir, "test", "mpi", "test_p2p_datatypes")
    env = shlex.quote(os.path.join(args.builddir, "test", "strata-test-env.sh"))
    lib = shlex.quote(os.path.join(SRCDIR, "test", "lib.sh"))
    other = "STRATA_BUILDDIR=%s; " % shlex.quote(args.before) if variant == "before" else ""
    run = PATHS[variant] if args.paths else "strata_mpirun_gpu 2"
    script = ". %s; %s. %s; %s %s" % (
        env, other, lib, run, " ".join(shlex.quote(a) for a in [prog] + case_args +
                                        ["--max-peak-mib", "1000000", "--timeout", "300"]))
    return ["bash", "-c", script]


def cases(args):
    out = [("sparse %d MiB" % args.sparse_mib, ["--sparse", str(args.sparse_mib)])]
    for name in filter(None, args.timed.split(",")):
        out.append((name, ["--timed", name]))
    return out


def run_rounds(args):
    records = []
    names = variants(args)
    for rnd in range(args.rounds):
        for variant in (names if rnd % 2 == 0 else names[::-1]):
            for label, case_args in cases(args):
                print("dt_staging_bench: round %d/%d, %s, %s" % (rnd + 1, args.rounds, variant, label),
                      flush=True)
                proc = subprocess.run(mpirun_command(args, variant, case_args), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
                if proc.returncode != 0:
                    sys.stderr.write(proc.stdout)
                    raise SystemExit("dt_staging_bench: %s, %s failed (exit %d)" %
                                     (variant, label, proc.returncode))
                found = 0
                for line in proc.stdout.splitlines():
                    m = LINE.match(line)
                    if m:
                        records.append((label, variant, int(m.group(1)), float(m.group(3)),
                                        float(m.group(4)), float(m.group(5)), float(m.group(6))))
                        found += 1
                if found != 2:
                    sys.stderr.write(proc.stdout)
                    raise SystemExit("dt_staging_bench: %s, %s: expected 2 result lines, got %d" %
                                     (variant, label, found))
    return records


def summarize(args, records):
    rows = []
    for label, _ in cases(args):
        for variant in variants(args):
            rs = [r for r in records if r[0] == label and r[1] == variant]
            rows.append({
                "case": label, "variant": variant, "samples": len(rs),
                "send_ms": statistics.median(r[3] for r in rs),
                "send_peak_mib": max(r[4] for r in rs),
                "recv_ms": statistics.median(r[5] for r in rs),
                "recv_peak_mib": max(r[6] for r in rs),
            })
    return rows


def git_commit():
    try:
        return subprocess.run(["git", "-C", SRCDIR, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def write_outputs(args, rows):
    os.makedirs(args.out, exist_ok=True)
    fields = ["case", "variant", "samples", "send_ms", "send_peak_mib", "recv_ms", "recv_peak_mib"]
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
    real = os.environ.get("STRATA_TEST_DRIVER") == "real"
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("# Non-contiguous datatypes on device buffers: %s\n\n" %
                ("hook/strata against Open MPI's datatype engine" if args.paths else "before / after"))
        f.write("- date: %s\n- commit: %s (working tree)\n- machine: %s, %d CPUs\n" % (
            datetime.date.today().isoformat(), git_commit(), platform.node(), os.cpu_count() or 0))
        f.write("- command: `%s`\n" % " ".join(shlex.quote(a) for a in sys.argv))
        f.write("- driver: %s\n\n" % ("the real CUDA driver" if real else
                                      "**the CUDA stand-in**: host-side cost of the code only; "
                                      "do not quote these as GPU results"))
        f.write("| case | variant | send (ms) | send peak (MiB) | receive (ms) | receive peak (MiB) |\n")
        f.write("| --- | --- | ---: | ---: | ---: | ---: |\n")
        for r in rows:
            f.write("| %s | %s | %.3f | %.1f | %.3f | %.1f |\n" % (
                r["case"], r["variant"], r["send_ms"], r["send_peak_mib"], r["recv_ms"], r["recv_peak_mib"]))
        if args.paths and write_plot(args, rows):
            f.write("\n![plot](plot.png)\n")
    with open(os.path.join(args.out, "results.md")) as f:
        sys.stdout.write(f.read())


def write_plot(args, rows):
    """Send and receive times per case and path, grouped bars (gnuplot)."""
    data = os.path.join(args.out, "plot.dat")
    names = variants(args)
    with open(data, "w") as f:
        f.write("case " + " ".join("%s-send %s-recv" % (n, n) for n in names) + "\n")
        for label, _ in cases(args):
            vals = []
            for n in names:
                r = [x for x in rows if x["case"] == label and x["variant"] == n][0]
                vals += ["%.4f" % r["send_ms"], "%.4f" % r["recv_ms"]]
            f.write("\"%s\" %s\n" % (label, " ".join(vals)))
    cols = ", ".join("'' u %d ti col" % (i + 2) for i in range(1, 2 * len(names)))
    script = "\n".join([
        "set terminal png size 900,600 noenhanced",
        "set yrange [0.001:*]",
        "set output '%s'" % os.path.join(args.out, "plot.png"),
        "set style data histograms", "set style histogram clustered gap 1",
        "set style fill solid 0.8 border -1", "set logscale y", "set key top left",
        "set ylabel 'ms per call (median; CUDA stand-in, not a GPU)'",
        "set title 'Non-contiguous device datatypes, one element d->d'",
        "plot '%s' u 2:xtic(1) ti col, %s" % (data, cols),
    ])
    try:
        proc = subprocess.run(["gnuplot"], input=script, text=True, stderr=subprocess.PIPE)
    except OSError:
        return False
    return proc.returncode == 0


def main(argv):
    args = parse_args(argv)
    write_outputs(args, summarize(args, run_rounds(args)))


if __name__ == "__main__":
    main(sys.argv[1:])
