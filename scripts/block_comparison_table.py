#!/usr/bin/python3
"""Prints the composed-vs-deferred block comparison of a normcheck report as Markdown tables:
per dtype and output (merged over block generators), then dx per block generator.
Usage: scripts/block_comparison_table.py reports/latest.json"""
import json
import sys


def main(path):
    with open(path) as f:
        report = json.load(f)
    block = report.get("rms_block")
    if not block:
        sys.exit("normcheck: error: report has no block suite section ('rms_block')")
    print("| dtype | output | form | max ULP | RMS ULP | normwise | max err/bound |")
    print("|---|---|---|---|---|---|---|")
    for r in block["comparison"]:
        if r["variant"] == "deferred_bias_in_correction":
            continue
        print(f"| {r['dtype']} | {r['output']} | {r['variant']} | {r['max_ulp']:.4g} | {r['rms_ulp']:.3g} | "
              f"{r['normwise_error']:.3g} | {r['max_bound_ratio']:.3g} |")
    print()
    print("| dtype | generator | form | dx max ULP | dx RMS ULP | dx normwise | max err/bound |")
    print("|---|---|---|---|---|---|---|")
    for r in block["records"]:
        if r["output"] != "dx" or r["variant"] == "deferred_bias_in_correction":
            continue
        print(f"| {r['storage']} | {r['property'].split('/')[1]} | {r['variant']} | {r['max_ulp']:.4g} | "
              f"{r['rms_ulp']:.3g} | {r['normwise_error']:.3g} | {r['max_bound_ratio']:.3g} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: block_comparison_table.py REPORT.json")
    main(sys.argv[1])
