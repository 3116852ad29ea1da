#!/usr/bin/env python3
"""Shard balance of `normcheck run --shard i/N` (docs/nightly.md, "Even shards"): runs every shard
of each N one after the other with one thread, in a shuffled order (so that a slow spell of a
shared machine does not fall on neighbouring shards), times each (CPU time of the shard process,
user + system, and wall time), and prints the longest/shortest shard ratio of both, the median
shard and the cases per shard. With --repeats R every shard runs R times (each round in its own
shuffled order) and its least CPU and wall time count: a shared machine's slow spells only ever
lengthen a run, so the minimum is the shard's own cost.

    /usr/bin/python3 scripts/shard_balance.py --suite default --shards 4 16 64 [--repeats 2] [--balance-from REPORT] [--json out.json]

With --balance-from every shard balances the units by the seconds that report measured (an
unsharded run of the same suite: `normcheck run --suite default --out REPORT`).
"""
import argparse
import json
import os
import pathlib
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="default")
    ap.add_argument("--shards", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--binary", default=str(ROOT / "build" / "normcheck"))
    ap.add_argument("--balance-from", help="a report of the same suite whose run.unit_seconds balance the shards")
    ap.add_argument("--repeats", type=int, default=1, help="runs of every shard; the least time counts")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        sys.exit(f"shard_balance: no normcheck binary at {a.binary} (build first: bash scripts/build.sh)")
    rows = []
    print("| N | CPU: longest / shortest shard (s) | CPU ratio | median (s) | wall ratio | cases per shard (min-max) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.shards:
            times, cpus, cases, balanced_by = [float("inf")] * n, [float("inf")] * n, [0] * n, set()
            rounds = []
            for r in range(max(1, a.repeats)):
                order = list(range(n))
                random.Random(n * 1000 + r).shuffle(order)
                rounds += order
            for i in rounds:
                out = pathlib.Path(tmp) / f"s{i}.json"
                start = time.monotonic()
                used = resource.getrusage(resource.RUSAGE_CHILDREN)
                done = subprocess.run([a.binary, "run", "--suite", a.suite, "--threads", "1", "--quiet", "--shard", f"{i}/{n}",
                                       "--out", str(out)] + (["--balance-from", a.balance_from] if a.balance_from else []),
                                      capture_output=True, text=True)
                times[i] = min(times[i], time.monotonic() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus[i] = min(cpus[i], (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime))
                if done.returncode not in (0, 1):
                    sys.exit(f"shard_balance: shard {i}/{n} failed: {done.stderr.strip()}")
                report = json.loads(out.read_text())
                balanced_by.add(report["run"]["shard"]["balanced_by"] if n > 1 else "unsharded")
                total = report["run"]["cases_planned"]
                for key, section in report.items():
                    if isinstance(section, dict) and "cases_planned" in section and key != "run":
                        total += section["cases_planned"]
                cases[i] = total
                out.unlink()
            row = {"shards": n, "longest_cpu_s": max(cpus), "shortest_cpu_s": min(cpus), "ratio": max(cpus) / min(cpus),
                   "median_cpu_s": statistics.median(cpus), "wall_ratio": max(times) / min(times),
                   "cases_min": min(cases), "cases_max": max(cases), "balanced_by": sorted(balanced_by),
                   "cpu_seconds": cpus, "wall_seconds": times}
            rows.append(row)
            print(f"| {n} | {row['longest_cpu_s']:.2f} / {row['shortest_cpu_s']:.2f} | {row['ratio']:.2f} | {row['median_cpu_s']:.2f} "
                  f"| {row['wall_ratio']:.2f} | {row['cases_min']}-{row['cases_max']} |", flush=True)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"suite": a.suite, "balance_from": a.balance_from, "repeats": a.repeats, "rows": rows},
                                                   indent=1) + "\n")


if __name__ == "__main__":
    main()
