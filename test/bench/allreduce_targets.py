#!/usr/bin/env python3
"""Evaluate coll/strata's allreduce against its performance targets.

    allreduce_targets.py --cluster4 DIR --cluster2 DIR --node DIR [--rate 1gbit] [--out FILE]

Each DIR is an output directory of allreduce_bench.py run with the
configurations tuned, han and strata (cluster4: 4 nodes x 2 ranks, cluster2:
2 nodes x 2 ranks, both with links shaped to --rate; node: one node).  Reads
their results.csv and writes a markdown table: every target, the worst case
over the sizes it covers, and whether it was met.  A report, not a test: the
figures depend on the machine, so nothing here fails a build.

Targets (issue 3):
  bytes per node per call <= 1.1 x optimum 2(N-1)/N * n, n >= 1 MiB, clusters
  time <= 0.75 x min(tuned, han), n >= 2 MiB, 4 nodes
  time <= 1.0 x min(tuned, han), n >= 2 MiB, 2 nodes
  time <= 1.25 x link bound 2(N-1)/N * n / rate, n >= 2 MiB, clusters
  time <= 1.2 x min(tuned, han), n <= 4 KiB, everywhere
  time <= 1.0 x min(tuned, han), n >= 64 KiB, one node
"""
import argparse
import csv
import os
import sys

MIB = 1 << 20
KIB = 1 << 10


def parse_rate(text):
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    for suffix, scale in units.items():
        if text.lower().endswith(suffix):
            return float(text[: -len(suffix)]) * scale / 8.0
    raise SystemExit(f"allreduce_targets: cannot read rate '{text}' (e.g. 1gbit)")


def load(path):
    table = {}
    with open(os.path.join(path, "results.csv")) as f:
        for row in csv.DictReader(f):
            entry = table.setdefault(int(row["bytes"]), {})
            entry[row["config"]] = row
    for size, entry in table.items():
        missing = {"tuned", "han", "strata"} - set(entry)
        if missing:
            raise SystemExit(f"allreduce_targets: {path}: {size} B lacks {sorted(missing)}")
    return table


def fmt_size(n):
    if n >= MIB:
        return f"{n // MIB} MiB"
    if n >= KIB:
        return f"{n // KIB} KiB"
    return f"{n} B"


class Report:
    def __init__(self):
        self.rows = []

    def target(self, name, setup, table, sizes, value, limit):
        """value(size, entry) -> ratio; the worst ratio over sizes against limit."""
        worst = None
        for size in sizes:
            ratio = value(size, table[size])
            if worst is None or ratio > worst[1]:
                worst = (size, ratio)
        if worst is None:
            self.rows.append((name, setup, "no sizes measured", "-", "not measured"))
            return
        met = "met" if worst[1] <= limit else "**missed**"
        self.rows.append((name, setup, f"{worst[1]:.2f} at {fmt_size(worst[0])}",
                          f"<= {limit:g}", met))

    def markdown(self):
        lines = ["| target | setup | worst measured | limit | result |",
                 "| --- | --- | --- | --- | --- |"]
        lines += [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in self.rows]
        return "\n".join(lines) + "\n"


def time_ratio(size, entry):
    best = min(float(entry["tuned"]["median_us"]), float(entry["han"]["median_us"]))
    return float(entry["strata"]["median_us"]) / best


def bytes_ratio(nodes):
    def ratio(size, entry):
        optimum = 2.0 * (nodes - 1) / nodes * size
        return float(entry["strata"]["tx_bytes_per_node_per_call"]) / optimum
    return ratio


def bound_ratio(nodes, rate):
    def ratio(size, entry):
        bound_us = 2.0 * (nodes - 1) / nodes * size / rate * 1e6
        return float(entry["strata"]["median_us"]) / bound_us
    return ratio


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cluster4", required=True)
    ap.add_argument("--cluster2", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--out")
    args = ap.parse_args()
    rate = parse_rate(args.rate)

    report = Report()
    setups = [("4 nodes x 2", args.cluster4, 4, 0.75), ("2 nodes x 2", args.cluster2, 2, 1.0)]
    for setup, path, nodes, limit in setups:
        t = load(path)
        large = sorted(s for s in t if s >= 2 * MIB)
        report.target("bytes per node <= 1.1 x optimum (>= 1 MiB)", setup, t,
                      sorted(s for s in t if s >= MIB), bytes_ratio(nodes), 1.1)
        report.target(f"time <= {limit:g} x min(tuned, han) (>= 2 MiB)", setup, t, large,
                      time_ratio, limit)
        report.target("time <= 1.25 x link bound (>= 2 MiB)", setup, t, large,
                      bound_ratio(nodes, rate), 1.25)
        report.target("time <= 1.2 x min(tuned, han) (<= 4 KiB)", setup, t,
                      sorted(s for s in t if s <= 4 * KIB), time_ratio, 1.2)
    t = load(args.node)
    report.target("time <= 1.2 x min(tuned, han) (<= 4 KiB)", "one node", t,
                  sorted(s for s in t if s <= 4 * KIB), time_ratio, 1.2)
    report.target("time <= 1.0 x min(tuned, han) (>= 64 KiB)", "one node", t,
                  sorted(s for s in t if s >= 64 * KIB), time_ratio, 1.0)

    text = report.markdown()
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
