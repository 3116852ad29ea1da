#!/usr/bin/python3
"""In-process `normcheck.check` against the exec protocol, side by side in one run (issue 18): the
same NumPy LayerNorm (float64, rounded once to the dtype) judged on the quick suite's f32
layernorm_forward cases, once through the Python module and once as `normcheck run --exec` (a
process per call). Prints seconds per case of each and their ratio (docs/python.md).

usage: /usr/bin/python3 scripts/bench_python.py [--cases N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import normcheck

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def layer_norm(x, gamma, beta, eps):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)
    return ((x64 - mean) / np.sqrt(var + eps) * gamma + beta).astype(x.dtype)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1, help="cases per generator (default 1)")
    args = parser.parse_args()
    start = time.perf_counter()
    result = normcheck.check(layer_norm, op="layernorm_forward", dtypes=("f32",), suite="quick", cases=args.cases)
    in_process = time.perf_counter() - start
    cases = result.report["run"]["cases_done"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "exec.json")
        command = [os.path.join(ROOT, "build", "normcheck"), "run", "--exec", f"/usr/bin/python3 {ROOT}/scripts/exec_example.py {{dir}}",
                   "--ops", "layernorm_forward", "--dtypes", "f32", "--suite", "quick", "--cases", str(args.cases), "--threads", "1",
                   "--quiet", "--out", out]
        start = time.perf_counter()
        subprocess.run(command, check=False, stdout=subprocess.DEVNULL)
        exec_seconds = time.perf_counter() - start
        exec_cases = json.load(open(out))["run"]["cases_done"]
    print(f"{'path':<32} {'cases':>6} {'seconds':>9} {'ms/case':>9}")
    print(f"{'normcheck.check (in-process)':<32} {cases:>6} {in_process:>9.3f} {1000 * in_process / cases:>9.2f}")
    print(f"{'run --exec (process per call)':<32} {exec_cases:>6} {exec_seconds:>9.3f} {1000 * exec_seconds / exec_cases:>9.2f}")
    ratio = (exec_seconds / exec_cases) / (in_process / cases)
    print(f"ratio (seconds per case, exec / in-process): {ratio:.1f}x")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
