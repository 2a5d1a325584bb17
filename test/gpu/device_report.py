#!/usr/bin/env python3
"""Writes the staged GPU run's results (test/gpu/device-run.sh) from its work
folder into $OUT: summary.md (machine, stages, steps, key figures) and
results.csv (every measurement, one value a row).  Called after every step,
so what a run stopped at any point has done is in $OUT.

  device_report.py --work DIR --out DIR --budget S --elapsed S
  device_report.py --plot RESULTS_CSV --out DIR    (here, where gnuplot is:
      one PNG per allreduce benchmark of a run's results.csv, for docs/results)

The work folder holds machine.txt, stages.tsv (stage, title, budget),
steps.tsv (stage, step, status, seconds, note), logs/STEP.log and
bench/NAME/results.csv (allreduce_bench.py's or p2p_suite.py's).  A step's
status is ok, failed, timeout (stopped at its stage's limit), skipped (it
ran, and the machine lacks what it needs), no-time (not started: its stage
had too little time left) or not-chosen (STRATA_DEVICE_STEPS).  A run whose
machine.txt says "rehearsal: yes" (the CUDA stand-in in the driver's place)
is titled as a rehearsal, and its figures are not a GPU's.
"""

import argparse
import csv
import os
import re

# Sizes the summary quotes from the allreduce benchmarks.
QUOTED_SIZES = (64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30)
# A step's statuses, in the order the stage lines count them.
STATUSES = ("ok", "failed", "skipped", "no-time", "not-chosen")


def human(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def read_tsv(path, width):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                rows.append((parts + [""] * width)[:width])
    return rows


def read_log(work, name):
    path = os.path.join(work, "logs", name + ".log")
    if not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        return f.read()


def bench_rows(work):
    """Every measurement of bench/*/results.csv as (source, series, kind,
    bytes, metric, value)."""
    rows = []
    bench = os.path.join(work, "bench")
    if not os.path.isdir(bench):
        return rows
    for source in sorted(os.listdir(bench)):
        path = os.path.join(bench, source, "results.csv")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for r in csv.DictReader(f):
                if "config" in r:  # allreduce_bench.py
                    buffer = "host" if source.startswith("allreduce-host-") else "device"
                    for metric in ("median_us", "min_us", "max_us", "hbm_limit_us"):
                        if r.get(metric):
                            rows.append((source, r["config"], buffer, int(r["bytes"]), metric, r[metric]))
                elif "variant" in r:  # p2p_suite.py
                    kind = "%s/%s" % (r["kind"], r["mode"])
                    for metric in ("lat_us", "bw_MBps"):
                        if r.get(metric) and float(r[metric]) > 0:
                            rows.append((source, r["variant"], kind, int(r["bytes"]), metric, r[metric]))
    return rows


SHARE_HEAD = re.compile(r"^== (\d+) process\(es\), (\w+)(, \d+ bytes)?$")
SHARE_LINE = re.compile(r"^proc \d+: (\w+) (\d+) bytes: ([0-9.]+) us per op\+sync")


def share_rows(work):
    """gpu_share_probe's microseconds per synchronized operation, the mean of
    the processes, from logs/share_probe.log, share_probe_small.log (8-byte
    copies from and to pinned and pageable memory) and share_probe_mps.log, as
    (source, op, "N procs", bytes, "us_per_op", value)."""
    rows = []
    for step in ("share_probe", "share_probe_small", "share_probe_mps"):
        n, times = None, {}
        for line in read_log(work, step).splitlines():
            m = SHARE_HEAD.match(line)
            if m:
                n = int(m.group(1))
                continue
            m = SHARE_LINE.match(line)
            if m and n:
                times.setdefault((m.group(1), n, int(m.group(2))), []).append(float(m.group(3)))
        for (op, n, nbytes), us in sorted(times.items()):
            rows.append((step, op, "%d procs" % n, nbytes, "us_per_op", "%.1f" % (sum(us) / len(us))))
    return rows


def share_figures(rows):
    """One line per operation: microseconds with 1, 2, 4 processes, without
    and with MPS."""
    t = {(r[0], r[1], r[2], r[3]): r[5] for r in rows if r[0].startswith("share_probe")}
    if not t:
        return []
    lines = ["", "One synchronized GPU operation (gpu_share_probe), us per op, "
             "processes sharing the GPU:", "",
             "| op | bytes | MPS | 1 | 2 | 4 |", "|---|---|---|---|---|---|"]
    for op, nbytes in sorted({(k[1], k[3]) for k in t}):
        for sources, mps in ((("share_probe", "share_probe_small"), "no"), (("share_probe_mps",), "yes")):
            cells = [next((t[(src, op, "%d procs" % n, nbytes)] for src in sources
                           if (src, op, "%d procs" % n, nbytes) in t), "-") for n in (1, 2, 4)]
            if any(c != "-" for c in cells):
                lines.append("| %s | %d | %s | %s |" % (op, nbytes, mps, " | ".join(cells)))
    return lines


def allreduce_figures(rows):
    """Per native-npK benchmark (and bcast-, allgather-,
    reduce_scatter_block-npK): staged and native medians and the HBM limit
    at the quoted sizes."""
    lines = []
    colls = {"native-": "MPI_Allreduce", "bcast-": "MPI_Bcast", "allgather-": "MPI_Allgather",
             "reduce_scatter_block-": "MPI_Reduce_scatter_block"}
    sources = sorted({r[0] for r in rows if r[0].startswith(tuple(colls)) and "-chunk" not in r[0]})
    for source in sources:
        coll = next(v for k, v in colls.items() if source.startswith(k))
        t = {(r[1], r[3], r[4]): float(r[5]) for r in rows if r[0] == source}
        sizes = sorted({r[3] for r in rows if r[0] == source})
        quoted = [n for n in sizes if n in QUOTED_SIZES] or sizes[-1:]
        lines.append("")
        lines.append("%s: device %s (float sum where it reduces), median us; limit/native is the "
                     "fraction of the HBM limit native reaches" % (source, coll))
        lines.append("")
        lines.append("| size | staged | native | native / staged | HBM limit | limit / native |")
        lines.append("|---|---|---|---|---|---|")
        for n in quoted:
            s = t.get(("strata-staged", n, "median_us"))
            v = t.get(("strata-native", n, "median_us"))
            lim = t.get(("strata-native", n, "hbm_limit_us")) or t.get(("strata-staged", n, "hbm_limit_us"))
            cells = [human(n), "%.1f" % s if s else "-", "%.1f" % v if v else "-",
                     "%.2f" % (v / s) if s and v else "-", "%.1f" % lim if lim else "-",
                     "%.2f" % (lim / v) if lim and v else "-"]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def native_medians(rows, source):
    """{bytes: median us} of strata-native in one allreduce benchmark."""
    return {r[3]: float(r[5]) for r in rows
            if r[0] == source and r[1] == "strata-native" and r[4] == "median_us"}


def queue_figures(rows):
    """The queued native allreduce (native-npK[-mps]) against the host-driven
    one of the same run (native-npK-host[-mps]), at the quoted sizes."""
    lines = []
    for host in sorted({r[0] for r in rows if re.match(r"native-np\d+-host(-|$)", r[0])}):
        queued, driven = native_medians(rows, host.replace("-host", "", 1)), native_medians(rows, host)
        sizes = [n for n in sorted(set(queued) & set(driven)) if n in QUOTED_SIZES]
        if not sizes:
            continue
        lines += ["", "%s: the native allreduce queued on the GPU against the host driving every chunk "
                  "(coll_strata_device_queue 0), median us:" % host.replace("-host", "", 1), "",
                  "| size | queued | host-driven | queued / host-driven |", "|---|---|---|---|"]
        lines += ["| %s | %.1f | %.1f | %.2f |" % (human(n), queued[n], driven[n], queued[n] / driven[n])
                  for n in sizes]
    return lines


CHUNK_SOURCE = re.compile(r"^native-np(\d+)-chunk(\w+?)(-mps)?$")


def label_bytes(label):
    """8M -> 8388608 (a chunk size as the plan writes it)."""
    m = re.match(r"^(\d+)([KMG]?)$", label)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)] if m else 0


def chunk_figures(rows):
    """The native allreduce's median at the quoted sizes per chunk size
    (native-npK-chunkC[-mps], coll_strata_device_segment_size)."""
    runs = {}
    for source in {r[0] for r in rows}:
        m = CHUNK_SOURCE.match(source)
        if m:
            runs.setdefault((int(m.group(1)), m.group(3) or ""), []).append((m.group(2), native_medians(rows, source)))
    lines = []
    for (np_, mps), chunks in sorted(runs.items()):
        chunks.sort(key=lambda c: label_bytes(c[0]))
        sizes = sorted(n for n in set().union(*(set(t) for _, t in chunks)) if n in QUOTED_SIZES)
        lines += ["", "The native allreduce, %d ranks%s, against its chunk size "
                  "(coll_strata_device_segment_size), median us:" % (np_, " under MPS" if mps else ""), "",
                  "| size | " + " | ".join("%s chunks" % c for c, _ in chunks) + " |",
                  "|---|" + "---|" * len(chunks)]
        for n in sizes:
            lines.append("| %s | %s |" % (human(n), " | ".join("%.1f" % t[n] if n in t else "-" for _, t in chunks)))
    return lines


def p2p_carried_figures(rows):
    """host->device bandwidth and the 8-byte device->device latency on the
    carried Open MPI and UCX (p2p-carried)."""
    t = {(r[1], r[2], r[3], r[4]): float(r[5]) for r in rows if r[0] == "p2p-carried"}
    if not t:
        return []
    lines = ["", "p2p on the carried Open MPI 4.1 and UCX 1.13 (pml/ucx with Strata), 2 ranks on one GPU:", ""]
    lat = t.get(("strata", "device-device/lat", 8, "lat_us"))
    if lat:
        lines.append("- device-device latency at 8 B: %.2f us" % lat)
    for variant, what in (("strata", "pageable"), ("pinned", "pinned")):
        bw = sorted((n, v) for (var, kind, n, m), v in t.items()
                    if var == variant and kind == "host-device/bw" and m == "bw_MBps")
        if bw:
            lines.append("- host-device bandwidth from %s memory: %s" % (
                what, ", ".join("%s %.0f MB/s" % (human(n), v) for n, v in bw)))
    return lines


def p2p_figures(rows):
    lines = []
    t = {(r[1], r[2], r[3], r[4]): float(r[5]) for r in rows if r[0] == "p2p"}
    if not t:
        return lines

    def pick(variant, kind, metric, largest):
        sizes = sorted(n for (v, k, n, m) in t if v == variant and k == kind and m == metric)
        if not sizes:
            return None, None
        n = sizes[-1] if largest else sizes[0]
        return n, t[(variant, kind, n, metric)]

    lines.append("")
    lines.append("p2p through pml/ucx, 2 ranks on one GPU:")
    lines.append("")
    n, plain = pick("plain", "host-host/lat", "lat_us", False)
    _, strata = pick("strata", "host-host/lat", "lat_us", False)
    if plain and strata:
        lines.append("- host-host latency at %s: plain %.2f us, Strata loaded %.2f us (%.2fx)"
                     % (human(n), plain, strata, strata / plain))
    n, dd = pick("strata", "device-device/lat", "lat_us", False)
    if dd:
        lines.append("- device-device latency at %s: %.2f us" % (human(n), dd))
    n, ipc = pick("strata", "device-device/bw", "bw_MBps", True)
    _, staged = pick("staged", "device-device/bw", "bw_MBps", True)
    _, memcpy = pick("memcpy", "memcpy-dtod/bw", "bw_MBps", True)
    if ipc:
        text = "- device-device bandwidth at %s: gpu_ipc %.0f MB/s" % (human(n), ipc)
        if staged:
            text += ", staged %.0f MB/s (gpu_ipc / staged %.2f)" % (staged, ipc / staged)
        if memcpy:
            text += ", cuMemcpyDtoD %.0f MB/s (gpu_ipc / memcpy %.2f)" % (memcpy, ipc / memcpy)
        lines.append(text)
    n, hd = pick("strata", "host-device/bw", "bw_MBps", True)
    if hd:
        lines.append("- host-device bandwidth at %s: %.0f MB/s" % (human(n), hd))
    return lines


def conformance_facts(work):
    """The probe's answers on the context flag (order.ctx.*, each) and on
    the ordering (order.*: how many, and how many of each group differ from
    the record, logs/conformance.compare)."""
    answers = {}
    for name in ("conformance-real.txt", "conformance-standin.txt"):
        path = os.path.join(work, name)
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                answers = dict(l.split(None, 1) for l in f if l.strip() and not l.startswith("#") and " " in l)
    if not answers:
        return []
    differ = {}
    path = os.path.join(work, "logs", "conformance.compare")
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for l in f:
                m = re.match(r"^(order\.[a-z_0-9]+)\.\S+: driver says ", l)
                if m:
                    differ[m.group(1)] = differ.get(m.group(1), 0) + 1
    ctx = sorted((k, v.strip()) for k, v in answers.items() if k.startswith("order.ctx."))
    groups = {}
    for k in answers:
        if k.startswith("order."):
            g = ".".join(k.split(".")[:2])
            groups[g] = groups.get(g, 0) + 1
    facts = []
    if ctx:
        facts.append("  - the context flag (order.ctx.*): %s" % ", ".join("%s %s" % (k[10:], v) for k, v in ctx))
    if groups:
        facts.append("  - the ordering (order.*, answers / differing from the record): %s" % ", ".join(
            "%s %d/%d" % (g, n, differ.get(g, 0)) for g, n in sorted(groups.items())))
    return facts


def step_facts(work, steps):
    """One line per smoke and client step worth quoting from its log."""
    facts = []
    done = {s[1] for s in steps if s[2] not in ("no-time", "not-chosen")}
    if "strata_info" in done:
        m = re.findall(r"^Result: .*$", read_log(work, "strata_info"), re.M)
        if m:
            facts.append("- strata_info: %s" % m[-1])
    if "ucx_info" in done:
        tls = re.findall(r"Transport: (gpu_\w+)", read_log(work, "ucx_info"))
        facts.append("- ucx_info -d: %s" % (", ".join(sorted(set(tls))) or "no Strata transport"))
    if "conformance" in done:
        log = read_log(work, "conformance")
        m = re.findall(r"^conformance: .*$", log, re.M)
        status = [st for st in steps if st[1] == "conformance"][-1]
        facts.append("- conformance probe: %s" % (m[-1][len("conformance: "):] if m else
                                                   "%s (%s)" % (status[2], status[4] or "no answers")))
        facts += conformance_facts(work)
    for name, what in (("tests_h200", "the tests that failed on the H200"), ("tests", "gpu, ucx layers")):
        if name not in done:
            continue
        log = read_log(work, name)
        m = re.findall(r"^\d+ passed, \d+ failed.*$", log, re.M)
        failed = re.findall(r"^FAIL: (\S+)", log, re.M)
        skipped = re.findall(r"^SKIP: (\S+) \((.*)\)$", log, re.M)
        lanes = re.findall(r"^== (\d+) tests in (\d+) lanes", log, re.M)
        facts.append("- %s (%s%s): %s" % (name, what, ", %s tests in %s lanes" % lanes[-1] if lanes else "",
                                          m[-1] if m else "no summary line (stopped?)"))
        if failed:
            facts.append("  - failed: %s" % ", ".join(failed))
        budget = [name for name, why in skipped if "budget" in why]
        if budget:
            facts.append("  - not run, budget spent: %s" % ", ".join(budget))
    if "sanitizer" in done:
        lines = re.findall(r"^sanitizer: (.*)$", read_log(work, "sanitizer"), re.M)
        if lines:
            facts.append("- compute-sanitizer:")
            facts += ["  - %s" % l for l in lines]
    if "ubuntu_stack" in done:
        log = read_log(work, "ubuntu_stack")
        lines = re.findall(r"^ubuntu: (.*)$", log, re.M)
        if lines:
            facts.append("- the machine's own Open MPI and UCX with Strata:")
            facts += ["  - %s" % l for l in lines]
        else:
            status = [st for st in steps if st[1] == "ubuntu_stack"][-1]
            facts.append("- the machine's own Open MPI and UCX with Strata: %s (%s)" % (status[2], status[4]))
    if "mpi4py" in done:
        log = read_log(work, "mpi4py")
        m = re.findall(r"^mpi4py_coll: .*$", log, re.M) or re.findall(r"^mpi4py .*$", log, re.M)
        if m:
            facts.append("- mpi4py: %s" % m[-1][:200])
    return facts


def write_summary(args, steps, stages, rows):
    machine = []
    path = os.path.join(args.work, "machine.txt")
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            machine = [l.rstrip("\n") for l in f if l.strip()]
    rehearsal = any(l.startswith("rehearsal: yes") for l in machine)
    passes = [l.split()[1] for l in machine if l.startswith("pass: ") and len(l.split()) > 1]
    what = ", %s pass" % passes[0] if passes else ""
    if rehearsal:
        lines = ["# Strata staged GPU run%s: REHEARSAL (the CUDA stand-in in the driver's place; "
                 "no figure here is a GPU's)" % what, ""]
    else:
        lines = ["# Strata staged GPU run%s" % what, ""]
    lines.append("%d s of %d s budget spent when this was written." % (args.elapsed, args.budget))
    lines.append("Several ranks share the one GPU: CUDA IPC between processes on one device; "
                 "no NVLink peer, no InfiniBand NIC.")
    lines.append("")
    lines += ["- " + l for l in machine]
    lines.append("")
    lines.append("| stage | what | budget s | spent s | %s |" % " | ".join(STATUSES))
    lines.append("|---|---|---|---|" + "---|" * len(STATUSES))
    for name, title, budget in stages:
        mine = [s for s in steps if s[0] == name]
        count = {st: sum(1 for s in mine if s[2] == st or (st, s[2]) == ("failed", "timeout")) for st in STATUSES}
        spent = sum(int(s[3] or 0) for s in mine)
        lines.append("| %s | %s | %s | %d | %s |" % (
            name, title, budget, spent, " | ".join(str(count[st]) for st in STATUSES)))
    lines.append("")
    lines.append("| stage | step | status | s | note |")
    lines.append("|---|---|---|---|---|")
    for stage, name, status, secs, note in steps:
        lines.append("| %s | %s | %s | %s | %s |" % (stage, name, status, secs, note.replace("|", "/")))
    facts = step_facts(args.work, steps)
    if facts:
        lines.append("")
        lines.append("## Key figures")
        lines.append("")
        lines += facts
    lines += share_figures(rows)
    lines += allreduce_figures(rows)
    lines += queue_figures(rows)
    lines += chunk_figures(rows)
    lines += p2p_carried_figures(rows)
    lines += p2p_figures(rows)
    lines.append("")
    lines.append("Every measurement: results.csv. Logs: logs.tar.gz (logs/STEP.log, tests/, bench/)."
                 "%s" % (" The conformance probe's answers: conformance-*.txt." if any(
                     s[1] == "conformance" and s[2] == "ok" for s in steps) else ""))
    tmp = os.path.join(args.out, ".summary.md")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, os.path.join(args.out, "summary.md"))


def write_csv(args, rows):
    tmp = os.path.join(args.out, ".results.csv")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["source", "series", "kind", "bytes", "metric", "value"])
        w.writerows(rows)
    os.replace(tmp, os.path.join(args.out, "results.csv"))


def plot(csv_path, out):
    """Device allreduce medians and the HBM limit against size, one PNG per
    benchmark (native-npK, allreduce-BUFFER-npK) of a run's results.csv."""
    import subprocess
    with open(csv_path) as f:
        rows = [r for r in csv.DictReader(f) if r["source"].startswith(("native-", "allreduce-"))]
    for source in sorted({r["source"] for r in rows}):
        mine = [r for r in rows if r["source"] == source]
        series = sorted({(r["series"], r["metric"]) for r in mine if r["metric"] in ("median_us", "hbm_limit_us")})
        data = os.path.join(out, source + ".dat")
        plots, index = [], 0
        with open(data, "w") as f:
            for name, metric in series:
                if metric == "hbm_limit_us" and name != series[0][0]:
                    continue  # the limit is the same for every configuration
                pts = sorted((int(r["bytes"]), float(r["value"])) for r in mine
                             if r["series"] == name and r["metric"] == metric)
                f.write("# %s %s\n" % (name, metric))
                f.writelines("%d %s\n" % p for p in pts)
                f.write("\n\n")
                title = "HBM limit" if metric == "hbm_limit_us" else name
                style = "lines dashtype 2" if metric == "hbm_limit_us" else "linespoints"
                plots.append("'%s' index %d with %s title '%s'" % (data, index, style, title))
                index += 1
        script = "\n".join([
            "set terminal pngcairo noenhanced size 900,600", "set output '%s'" % os.path.join(out, source + ".png"),
            "set title 'MPI_Allreduce (float sum), %s'" % source, "set logscale xy",
            "set xlabel 'message size (bytes)'", "set ylabel 'median time per call (us)'",
            "set key top left", "set grid", "plot " + ", ".join(plots)])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        os.remove(data)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plot", metavar="RESULTS_CSV")
    p.add_argument("--work")
    p.add_argument("--out", required=True)
    p.add_argument("--budget", type=int, default=0)
    p.add_argument("--elapsed", type=int, default=0)
    args = p.parse_args()
    if args.plot:
        plot(args.plot, args.out)
        return
    if not args.work:
        p.error("--work is required")
    steps = read_tsv(os.path.join(args.work, "steps.tsv"), 5)
    stages = read_tsv(os.path.join(args.work, "stages.tsv"), 3)
    rows = bench_rows(args.work) + share_rows(args.work)
    write_csv(args, rows)
    write_summary(args, steps, stages, rows)


if __name__ == "__main__":
    main()
