#!/usr/bin/python3
"""Turns a normcheck report into a committed baseline: every metric, verdict, histogram and
worst-case identity (case index, seed, shape, digest, worst element, replay command) is kept; the
per-case points (for charts) and the worst cases' input arrays are dropped (they are regenerated from the seed by `normcheck replay`,
and would make the baseline tens of megabytes). `normcheck diff` reads only what is kept.

usage: scripts/make_baseline.py REPORT.json BASELINE.json
"""
import json
import sys


def is_array_of_hexfloats(v):
    return isinstance(v, list) and len(v) > 0 and all(isinstance(e, str) for e in v[:4])


def strip_worst_case(wc):
    if not isinstance(wc, dict):
        return
    dropped = [k for k, v in wc.items() if is_array_of_hexfloats(v) or (isinstance(v, dict) and k in ("case", "inputs"))]
    for k in dropped:
        del wc[k]
    if dropped:
        wc["inputs_dropped"] = sorted(dropped)
    for v in wc.values():
        if isinstance(v, dict):
            strip_worst_case(v)


def drop_points(node):
    if isinstance(node, dict):
        node.pop("points", None)
        for v in node.values():
            drop_points(v)
    elif isinstance(node, list):
        for v in node:
            drop_points(v)


def walk(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "worst_case":
                strip_worst_case(v)
            elif k == "points":
                continue
            else:
                walk(v)
    elif isinstance(node, list):
        for v in node:
            walk(v)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make_baseline.py REPORT.json BASELINE.json")
    try:
        with open(sys.argv[1]) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"make_baseline: error: cannot read {sys.argv[1]}: {e}")
    if not isinstance(report, dict) or report.get("tool") != "normcheck":
        sys.exit(f"make_baseline: error: {sys.argv[1]} is not a normcheck report")
    if not report.get("run", {}).get("complete", False):
        sys.exit(f"make_baseline: error: {sys.argv[1]} is incomplete (interrupted): not a baseline")
    walk(report)
    drop_points(report)
    report["baseline"] = {"from": sys.argv[1], "inputs_dropped": True}
    with open(sys.argv[2], "w") as f:
        json.dump(report, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
