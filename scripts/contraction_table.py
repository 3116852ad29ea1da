#!/usr/bin/python3
"""Prints the QR-contraction comparison of a normcheck report as Markdown: per dtype and output
(merged over the seed's categories), then normwise error per category, contracted vs original.
Usage: scripts/contraction_table.py reports/latest.json"""
import json
import sys


def fmt(v):
    return v if isinstance(v, str) else f"{v:.3g}"


def main(path):
    with open(path) as f:
        section = json.load(f).get("qr_contraction")
    if not section:
        sys.exit("normcheck: error: report has no QR-contraction section ('qr_contraction')")
    print("| dtype | output | form | max ULP | RMS ULP | normwise | max err/bound (original: /envelope) | NaN/Inf |")
    print("|---|---|---|---|---|---|---|---|")
    for r in section["comparison"]:
        # The original block has no a priori bound: its elements are judged by the envelope only.
        ratio = fmt(r["max_bound_ratio"]) if r["form"] == "contracted" else f"{fmt(r['max_envelope_ratio'])} (envelope)"
        print(f"| {r['dtype']} | {r['output']} | {r['form']} | {fmt(r['max_ulp'])} | {fmt(r['rms_ulp'])} | "
              f"{fmt(r['normwise_error'])} | {ratio} | {r['nonfinite_mismatches']} |")
    print()
    cells = {}
    for r in section["records"]:
        cells[(r["storage"], r["property"].split("/")[1], r["output"], r["form"])] = r["normwise_error"]
    print("| dtype | category | f contracted | f original | dx contracted | dx original |")
    print("|---|---|---|---|---|---|")
    for dt in section["config"]["dtypes"]:
        for g in section["config"]["generators"]:
            row = [fmt(cells[(dt, g, o, form)]) for o in ("f", "dx") for form in ("contracted", "original")]
            print(f"| {dt} | {g} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: contraction_table.py REPORT.json")
    main(sys.argv[1])
