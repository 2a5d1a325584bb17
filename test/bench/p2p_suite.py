#!/usr/bin/env python3
"""Point-to-point through Open MPI's pml/ucx, with and without Strata's UCX
transports, alternating the variants round by round in one run, and writes
results.csv, results.md and plots (gnuplot) into --out.

  p2p_suite.py --builddir BUILD --out DIR [--rounds 3] [--variants LIST] [--kinds LIST]
               [--lat-iters N] [--bw-iters N] [--bw-max SIZE] [--driver standin|real]
               [--before-module PATH]

Variants (p2p_bench kinds in brackets):
  plain        pml/ucx, UCX_TLS=self,sm, Strata not loaded        [host-host]
  strata       pml/ucx, hook/strata loads libuct_strata.so,
               UCX_TLS=self,sm,gpu_copy,gpu_ipc                   [host-host, device-device,
                                                                   host-device, device-host]
  staged       as strata without gpu_ipc: device data staged
               through host memory by gpu_copy                    [device-device]
  pinned       as strata, host buffers pinned (cuMemHostAlloc)   [host-device, device-host]
  memcpy       p2p_bench --memcpy-ref: the local limits on one GPU: cuMemcpyDtoD,
               HtoD/DtoH from/to pinned and pageable memory, and the
               copy-engine round (8 B there and back, synchronized, /2)
                                                                  [memcpy-*]
  gpu-app      as strata, each rank holding device memory (p2p_bench
               --gpu-app): host traffic of a GPU application      [host-host]
  before       as strata with another build's libuct_strata.so
               (--before-module; added to the variants when given) [host-host]
The report gives host-host latency strata/plain (the cost of having Strata
loaded), device-device bandwidth strata/staged (the gain of gpu_ipc) and
strata/memcpy (how close MPI gets to a local device copy), host<->device
bandwidth over a local copy from or to pinned memory (pageable and pinned MPI
buffers), and small-message latency over the copy-engine round.  With the CUDA
stand-in (--driver standin) device figures measure host memcpy: the report
says so, and they are never to be quoted as GPU results.  Host latency is also
given as the median of each round's own ratio to plain (the runs of one round
follow each other, so a machine that changes speed between rounds moves both).
"""

import argparse
import csv
import datetime
import os
import platform
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from allreduce_bench import git_commit, has_pngcairo, have_gnuplot, human_size, parse_size, quartile_cell  # noqa: E402

VARIANTS = {
    "plain": {"tls": "self,sm", "strata": False, "kinds": "host-host"},
    "strata": {"tls": "self,sm,gpu_copy,gpu_ipc", "strata": True,
               "kinds": "host-host,device-device,host-device,device-host"},
    "pinned": {"tls": "self,sm,gpu_copy,gpu_ipc", "strata": True, "kinds": "host-device,device-host",
               "args": ["--host-pinned"]},
    "staged": {"tls": "self,sm,gpu_copy", "strata": True, "kinds": "device-device"},
    "memcpy": {"tls": "self,sm,gpu_copy,gpu_ipc", "strata": True, "kinds": "device-device", "memcpy": True},
    "gpu-app": {"tls": "self,sm,gpu_copy,gpu_ipc", "strata": True, "kinds": "host-host", "args": ["--gpu-app"]},
    "before": {"tls": "self,sm,gpu_copy,gpu_ipc", "strata": True, "kinds": "host-host"},
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--builddir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--variants", default="plain,strata,pinned,staged,memcpy")
    p.add_argument("--lat-iters", type=int, default=2000)
    p.add_argument("--bw-iters", type=int, default=20)
    p.add_argument("--bw-max", default="256M")
    p.add_argument("--driver", choices=("standin", "real"), default="standin")
    p.add_argument("--title", default="")
    p.add_argument("--before-module", default="",
                   help="another build's libuct_strata.so: adds variant 'before' (host-host), to compare "
                        "a change with what it replaces in the same run")
    p.add_argument("--render-only", action="store_true",
                   help="write results.md and the plots again from --out's results.csv")
    p.add_argument("--kinds", default="",
                   help="only these p2p_bench buffer kinds (e.g. host-host, to measure only what "
                        "Strata costs host traffic)")
    return p.parse_args(argv)


def mpirun_command(args, variant):
    """The variant's mpirun line, through test/lib.sh's launcher switch (Open
    MPI 4.1's ORTE or 5.0's PRRTE: oversubscription, the component path's
    name, with Open MPI's directory from configure)."""
    v = VARIANTS[variant]
    b = args.builddir
    mpirun_args = ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any",
                   "--mca", "osc", "^ucx", "-x", "UCX_TLS=" + v["tls"]]
    if os.environ.get("LD_LIBRARY_PATH") or args.driver == "standin":
        mpirun_args += ["-x", "LD_LIBRARY_PATH"]
    if v["strata"]:
        module = args.before_module if variant == "before" else "%s/components/ucx/libuct_strata.so" % b
        mpirun_args += ["--mca", "hook_strata_load_uct", "1", "--mca", "hook_strata_uct_module", module]
    kinds = v["kinds"]
    if args.kinds:
        kinds = ",".join(k for k in kinds.split(",") if k in args.kinds.split(","))
    mpirun_args += ["%s/test/bench/p2p_bench" % b, "--kinds", kinds, "--lat-iters", str(args.lat_iters),
                    "--bw-iters", str(args.bw_iters), "--bw-max", str(parse_size(args.bw_max))]
    mpirun_args += v.get("args", [])
    if v.get("memcpy"):
        mpirun_args += ["--memcpy-ref", "--no-lat", "--lat-iters", str(min(args.lat_iters, 1000))]
    script = ('. %s; . %s; strata_oversubscribed %s; '
              'mpirun -np 2 --bind-to none "${strata_mca_component_path[@]}" "${strata_args[@]}"') % (
        shlex.quote(os.path.join(b, "test", "strata-test-env.sh")),
        shlex.quote(os.path.join(SRCDIR, "test", "lib.sh")),
        " ".join(shlex.quote(a) for a in mpirun_args))
    return ["bash", "-c", script]


def run_variant(args, variant):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if args.driver == "standin":
        lib = os.path.join(args.builddir, "test/cuda_standin/lib")
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    proc = subprocess.run(mpirun_command(args, variant), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise SystemExit("p2p_suite: variant %s failed (exit %d):\n%s" % (variant, proc.returncode,
                                                                          proc.stdout[-3000:]))
    rows = []
    for line in proc.stdout.splitlines():
        parts = line.split(",")
        if len(parts) == 5 and "/" in parts[0] and parts[1].isdigit():
            kind, mode = parts[0].split("/")
            if variant == "memcpy" and not kind.startswith("memcpy-"):
                continue
            rows.append((variant, kind, mode, int(parts[1]), float(parts[2]), float(parts[3])))
    return rows


def main(argv):
    args = parse_args(argv)
    args.builddir, args.out = os.path.abspath(args.builddir), os.path.abspath(args.out)
    variants = [v for v in args.variants.split(",") if v]
    if args.before_module:
        args.before_module = os.path.abspath(args.before_module)
        if "before" not in variants:
            variants.append("before")
    if args.render_only:
        with open(os.path.join(args.out, "results.csv")) as f:
            table = {(r["variant"], r["kind"], r["mode"], int(r["bytes"])):
                     (float(r["lat_us"]), float(r["bw_MBps"]), int(r["rounds"])) for r in csv.DictReader(f)}
        with open(os.path.join(args.out, "results.md")) as f:
            old = {l.split(":")[0]: l.rstrip("\n") for l in f if l.startswith("- ")}
        write_outputs(args, table, "", keep=old)
        return
    samples = {}
    if args.kinds:
        variants = [v for v in variants if any(k in args.kinds.split(",") for k in VARIANTS[v]["kinds"].split(","))]
    for r in range(args.rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for variant in order:
            print("p2p_suite: round %d/%d: %s" % (r + 1, args.rounds, variant), flush=True)
            for (var, kind, mode, size, lat, bw) in run_variant(args, variant):
                samples.setdefault((var, kind, mode, size), []).append((lat, bw))
            # The tables so far after every variant: a run stopped at a time
            # limit (the staged GPU run) keeps what it measured.
            write_tables(args, samples)


def write_tables(args, samples):
    table = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), len(v))
             for k, v in samples.items()}
    write_outputs(args, table, " ".join(sys.argv), paired=paired_ratios(samples))


def paired_ratios(samples):
    """Host-host latency of each Strata variant over plain's in the same round:
    {(variant, size): [ratio per round]}."""
    out = {}
    for (var, kind, mode, size), v in samples.items():
        base = samples.get(("plain", "host-host", "lat", size))
        if var in ("strata", "gpu-app", "before") and kind == "host-host" and mode == "lat" and base:
            out[(var, size)] = [a[0] / b[0] for a, b in zip(v, base) if b[0] > 0]
    return out


def value(table, key, idx):
    return table[key][idx] if key in table else None


def ratio(a, b):
    return "%.2f" % (a / b) if a is not None and b else "-"


def write_outputs(args, table, command_line, keep=None, paired=None):
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "kind", "mode", "bytes", "lat_us", "bw_MBps", "rounds"])
        for (var, kind, mode, size), (lat, bw, n) in sorted(table.items()):
            w.writerow([var, kind, mode, size, "%.3f" % lat, "%.1f" % bw, n])
    standin = args.driver == "standin"
    lines = ["# MPI point-to-point through pml/ucx: %s" % (args.title or "with and without Strata"), ""]
    if standin and any(k[1] != "host-host" for k in table):
        lines += ["**CUDA stand-in run: device figures are host memcpy, not a GPU. Do not quote them.**", ""]
    lines += ["- machine: %s, %d cores, %s" % (platform.node(), os.cpu_count() or 0, platform.platform()),
              "- driver: %s" % ("CUDA stand-in (test/cuda_standin)" if standin else "the real CUDA driver"),
              "- date: %s, commit %s" % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), git_commit()),
              "- method: 2 ranks on one node, %d rounds alternating the variants; figures are medians over "
              "rounds of p2p_bench's per-run figures (latency: ping-pong of %d round trips; bandwidth: "
              "windows of 16 non-blocking sends, %d iterations)" % (args.rounds, args.lat_iters, args.bw_iters),
              "- command: `%s`" % command_line, ""]
    if keep:
        # Re-rendered: the run's own date, commit, method and command stay.
        lines = [keep.get(l.split(":")[0], l) if l.startswith("- ") else l for l in lines]
    lat_sizes = sorted({k[3] for k in table if k[2] == "lat"})
    ce = value(table, ("memcpy", "memcpy-ce-round", "lat", 8), 0)
    lat_sizes = [s for s in lat_sizes if any(k[2] == "lat" and k[3] == s and not k[1].startswith("memcpy-")
                                             for k in table)]
    lines += ["## Latency (one-way, us)", "",
              "copy-engine round (an 8-byte pinned copy to the device and back, each synchronized, "
              "over 2; the least a small device message pays on copy engines): %s us" %
              ("%.2f" % ce if ce is not None else "-"), "",
              "| size | host plain | host strata | strata/plain | device-device | dd/ce round | host-device "
              "| device-host |", "|---|---|---|---|---|---|---|---|"]
    for s in lat_sizes:
        hp = value(table, ("plain", "host-host", "lat", s), 0)
        hs = value(table, ("strata", "host-host", "lat", s), 0)
        dd = value(table, ("strata", "device-device", "lat", s), 0)
        hd = value(table, ("strata", "host-device", "lat", s), 0)
        dh = value(table, ("strata", "device-host", "lat", s), 0)
        fmt = lambda x: "%.2f" % x if x is not None else "-"  # noqa: E731
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            human_size(s), fmt(hp), fmt(hs), ratio(hs, hp), fmt(dd), ratio(dd, ce), fmt(hd), fmt(dh)))
    if paired:
        names = [v for v in ("strata", "gpu-app", "before") if any(k[0] == v for k in paired)]
        lines += ["", "Host-host latency over plain's in the same round: median of the rounds' ratios "
                  "(first and third quartile)", "",
                  "| size | " + " | ".join("%s/plain" % n for n in names) + " |",
                  "|---|" + "---|" * len(names)]
        for s in lat_sizes:
            cells = [quartile_cell(paired.get((n, s)), "%.3f") for n in names]
            lines.append("| %s | %s |" % (human_size(s), " | ".join(cells)))
        if "before" in names:
            lines += ["", "before: `%s`" % args.before_module]
    bw_sizes = sorted({k[3] for k in table if k[2] == "bw"})
    lines += ["", "## Bandwidth (MB/s, 10^6 B/s)", "",
              "| size | host plain | host strata | strata/plain | device-device gpu_ipc | device-device staged "
              "| ipc/staged | memcpy DtoD | ipc/memcpy |",
              "|---|---|---|---|---|---|---|---|---|"]
    for s in bw_sizes:
        hp = value(table, ("plain", "host-host", "bw", s), 1)
        hs = value(table, ("strata", "host-host", "bw", s), 1)
        ipc = value(table, ("strata", "device-device", "bw", s), 1)
        st = value(table, ("staged", "device-device", "bw", s), 1)
        mc = value(table, ("memcpy", "memcpy-dtod", "bw", s), 1)
        fmt = lambda x: "%.0f" % x if x is not None else "-"  # noqa: E731
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            human_size(s), fmt(hp), fmt(hs), ratio(hs, hp), fmt(ipc), fmt(st), ratio(ipc, st), fmt(mc),
            ratio(ipc, mc)))
    lines += ["", "## Host<->device bandwidth (MB/s) over a local copy from or to pinned memory", "",
              "h->d: rank 0's host buffer to rank 1's device buffer; d->h the reverse; pageable: malloc'ed, "
              "pinned: cuMemHostAlloc'ed; ratio: MPI over cuMemcpyHtoDAsync (DtoHAsync) of pinned memory "
              "in the same run.", "",
              "| size | h->d pageable | h->d pinned | memcpy htod pinned | memcpy htod pageable | pageable/limit "
              "| pinned/limit | d->h pageable | d->h pinned | memcpy dtoh pinned | pageable/limit | pinned/limit |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in bw_sizes:
        hd = value(table, ("strata", "host-device", "bw", s), 1)
        hdp = value(table, ("pinned", "host-device", "bw", s), 1)
        mh = value(table, ("memcpy", "memcpy-htod-pinned", "bw", s), 1)
        mhp = value(table, ("memcpy", "memcpy-htod-pageable", "bw", s), 1)
        dh = value(table, ("strata", "device-host", "bw", s), 1)
        dhp = value(table, ("pinned", "device-host", "bw", s), 1)
        md = value(table, ("memcpy", "memcpy-dtoh-pinned", "bw", s), 1)
        fmt = lambda x: "%.0f" % x if x is not None else "-"  # noqa: E731
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            human_size(s), fmt(hd), fmt(hdp), fmt(mh), fmt(mhp), ratio(hd, mh), ratio(hdp, mh), fmt(dh), fmt(dhp),
            fmt(md), ratio(dh, md), ratio(dhp, md)))
    lines += ["", "![latency](latency.png)", "", "![bandwidth](bandwidth.png)"]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    write_plot(args, table, "lat", 0, "latency.png", "one-way latency (us)",
               [("plain", "host-host"), ("strata", "host-host"), ("gpu-app", "host-host"), ("before", "host-host"),
                ("strata", "device-device"), ("strata", "host-device"), ("strata", "device-host")])
    write_plot(args, table, "bw", 1, "bandwidth.png", "bandwidth (MB/s)",
               [("strata", "host-host"), ("strata", "device-device"), ("staged", "device-device"),
                ("memcpy", "memcpy-dtod"), ("strata", "host-device"), ("pinned", "host-device"),
                ("strata", "device-host"), ("memcpy", "memcpy-htod-pinned"), ("memcpy", "memcpy-htod-pageable")])


def write_plot(args, table, mode, idx, name, ylabel, series):
    data = os.path.join(args.out, name.replace(".png", ".dat"))
    present = []
    with open(data, "w") as f:
        for var, kind in series:
            pts = sorted((k[3], v[idx]) for k, v in table.items() if k[:3] == (var, kind, mode))
            if not pts:
                continue
            present.append("%s %s" % (var, kind))
            f.write("# %s %s\n" % (var, kind))
            f.writelines("%d %.3f\n" % p for p in pts)
            f.write("\n\n")
    if not present:
        return
    if not have_gnuplot("p2p_suite", name, data):
        return
    plots = ", ".join("'%s' index %d with linespoints title '%s'" % (data, i, t) for i, t in enumerate(present))
    script = "\n".join([
        "set terminal pngcairo size 900,600" if has_pngcairo() else "set terminal png size 900,600",
        "set output '%s'" % os.path.join(args.out, name),
        "set title 'MPI p2p through pml/ucx%s'" % (" (CUDA stand-in: not GPU figures)" if args.driver == "standin" else ""),
        "set logscale xy", "set xlabel 'message size (bytes)'", "set ylabel '%s'" % ylabel,
        "set key top left", "set grid", "plot " + plots])
    proc = subprocess.run(["gnuplot"], input=script, text=True, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit("p2p_suite: gnuplot failed: %s" % proc.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
