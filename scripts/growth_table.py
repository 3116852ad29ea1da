#!/usr/bin/env python3
"""Prints the growth table and the budget summary of a `normcheck norm-budget` report as markdown.

usage: scripts/growth_table.py reports/norm_budget.json
"""
import json
import sys


def cell(v):
    return "overflow" if v is None else f"{v:.3g}"


def main(path):
    with open(path) as f:
        report = json.load(f)
    section = report.get("port_hamiltonian")
    if not section or not section.get("growth"):
        sys.exit(f"{path}: no port_hamiltonian growth table (run normcheck norm-budget)")
    g = section["growth"]
    depths = g["depths"]
    print(f"Trunk growth ||x_L|| / ||x_0|| at width {g['width']}, kernel (oracle); seed {g['seed']}, "
          f"h = {g['h']}, gain = {g['gain']}\n")
    print("| stream | dtype | " + " | ".join(f"L = {d}" for d in depths) + " | overflows at |")
    print("|---|---|" + "---|" * len(depths) + "---|")
    for row in g["rows"]:
        cells = [f"{cell(k)} ({cell(o)})" for k, o in zip(row["kernel_ratio"], row["oracle_ratio"])]
        od = row["overflow_depth"]
        print(f"| {row['arch']} | {row['storage']} | " + " | ".join(cells) + f" | {'—' if od is None else od} |")
    print(f"\nGradient growth ||dL/dx_0|| / ||dL/dx_L|| of the network of depth L, kernel (oracle); "
          "the same cotangent dL/dx_L for every stream\n")
    print("| stream | dtype | " + " | ".join(f"L = {d}" for d in depths) + " |")
    print("|---|---|" + "---|" * len(depths))
    for row in g["rows"]:
        cells = [f"{cell(k)} ({cell(o)})" for k, o in zip(row["grad_kernel_ratio"], row["grad_oracle_ratio"])]
        print(f"| {row['arch']} | {row['storage']} | " + " | ".join(cells) + " |")
    print(f"\nFloating-point port budget, standard case (width {g['width']}, depth {max(depths)}):\n")
    print("| dtype | ‖ĈᵀĈ−I‖_F (solve) | a priori bound | ‖ĈᵀĈ−I‖_F (explicit inverse) | a priori bound "
          "| slack > 1 % at depth | slack at full depth | budget holds | gradient budget slack | gradient budget holds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for b in g["budget"]:
        sd = b["slack_exceeds_1pct_depth"]
        print(f"| {b['storage']} | {cell(b['orthogonality_defect'])} | {cell(b['orthogonality_defect_bound'])} | "
              f"{cell(b['explicit_inverse_defect'])} | {cell(b['explicit_inverse_defect_bound'])} | "
              f"{'none' if sd is None else sd} | {cell(b['final_slack'])} | {'yes' if b['fp_budget_holds'] else 'NO'} | "
              f"{cell(b['grad_final_slack'])} | {'yes' if b['fp_grad_budget_holds'] else 'NO'} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
