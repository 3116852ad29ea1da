#!/usr/bin/env python3
"""Shard balance of `normcheck run --shard i/N` (docs/nightly.md, "Even shards"): runs every shard
of each N one after the other with one thread, times each, and prints the longest/shortest shard
time ratio and the cases per shard.

    /usr/bin/python3 scripts/shard_balance.py --suite default --shards 4 16 64 [--json out.json]
"""
import argparse
import json
import os
import pathlib
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
    ap.add_argument("--json")
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        sys.exit(f"shard_balance: no normcheck binary at {a.binary} (build first: bash scripts/build.sh)")
    rows = []
    print(f"| N | longest / shortest shard (s) | ratio | cases per shard (min-max) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.shards:
            times, cases = [], []
            for i in range(n):
                out = pathlib.Path(tmp) / f"s{i}.json"
                start = time.monotonic()
                done = subprocess.run([a.binary, "run", "--suite", a.suite, "--threads", "1", "--quiet", "--shard", f"{i}/{n}",
                                       "--out", str(out)], capture_output=True, text=True)
                times.append(time.monotonic() - start)
                if done.returncode not in (0, 1):
                    sys.exit(f"shard_balance: shard {i}/{n} failed: {done.stderr.strip()}")
                report = json.loads(out.read_text())
                total = report["run"]["cases_planned"]
                for key, section in report.items():
                    if isinstance(section, dict) and "cases_planned" in section and key != "run":
                        total += section["cases_planned"]
                cases.append(total)
                out.unlink()
            row = {"shards": n, "longest_s": max(times), "shortest_s": min(times), "ratio": max(times) / min(times),
                   "cases_min": min(cases), "cases_max": max(cases), "seconds": times}
            rows.append(row)
            print(f"| {n} | {row['longest_s']:.2f} / {row['shortest_s']:.2f} | {row['ratio']:.2f} | {row['cases_min']}-{row['cases_max']} |",
                  flush=True)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"suite": a.suite, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
