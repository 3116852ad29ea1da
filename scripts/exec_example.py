#!/usr/bin/python3
"""An exec-protocol kernel for normcheck (docs/plugins.md), in NumPy: LayerNorm and RMSNorm,
forward and backward, computed in float64 and rounded once to the case dtype.

normcheck runs it as   normcheck run --exec "/usr/bin/python3 /path/to/scripts/exec_example.py {dir}"
(the command runs inside the case directory {dir}: name the script by an absolute path) and it reads
{dir}/manifest.json, the input .npy files, and writes the output .npy files. bf16 travels as uint16
bit patterns. Exit status 77 tells normcheck "unsupported" (skipped). scripts/serve_numpy.py serves
the same kernel as one long-running process (serve mode).

--one-pass plants a regression (the nightly test, docs/nightly.md): the LayerNorm variance as
E[x^2] - E[x]^2 in float32, the textbook formula that cancels catastrophically for large means.
"""
import json
import os
import sys

import numpy as np


class Unsupported(Exception):
    """This op or dtype is not implemented: normcheck skips the call."""


def load(path, dtype):
    a = np.load(path)
    if dtype == "bf16":  # bit patterns -> float32 -> float64
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def store(path, values, dtype):
    if dtype == "f16":
        np.save(path, values.astype(np.float16))
    elif dtype == "f32":
        np.save(path, values.astype(np.float32))
    elif dtype == "f64":
        np.save(path, values.astype(np.float64))
    elif dtype == "bf16":  # one correct rounding from float64 (not via float32: that would round twice)
        flat = [round_to_bf16_bits(float(v)) for v in np.asarray(values, dtype=np.float64).reshape(-1)]
        np.save(path, np.array(flat, dtype=np.uint16).reshape(np.shape(values)))
    else:
        raise Unsupported(dtype)


def round_to_bf16_bits(v):
    """Correctly rounded float64 -> bfloat16 (nearest, ties to even), one rounding."""
    import math
    if math.isnan(v):
        return 0x7FC0
    if v == 0:
        return 0x8000 if math.copysign(1.0, v) < 0 else 0
    sign = 0x8000 if v < 0 else 0
    a = abs(v)
    if a >= 3.3961775292304718e38:  # beyond bf16 max + half ulp
        return sign | 0x7F80
    m, e = math.frexp(a)  # a = m 2^e, m in [0.5, 1)
    e -= 1                # a = (2m) 2^e
    e = max(e, -126)      # subnormal spacing 2^-133
    q = a / 2.0 ** (e - 7)  # 8 significant bits
    r = math.floor(q)
    frac = q - r
    if frac > 0.5 or (frac == 0.5 and r % 2 == 1):
        r += 1
    value = r * 2.0 ** (e - 7)
    bits = np.frombuffer(np.float32(value).tobytes(), dtype=np.uint32)[0]
    return sign | int(bits >> 16)


def compute(case_dir, m, one_pass=False):
    """Reads the inputs the manifest m names in case_dir and writes its outputs there."""
    dtype, op, eps = m["dtype"], m["op"], float(m["eps"])
    if not op.startswith(("layernorm_", "rmsnorm_")):
        raise Unsupported(op)
    path = lambda name: os.path.join(case_dir, m["inputs"][name])
    x, g = load(path("x"), dtype), load(path("gamma"), dtype)
    rms = op.startswith("rmsnorm")
    mean = np.zeros((x.shape[0], 1)) if rms else x.mean(axis=1, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=1, keepdims=True)
    if one_pass and not rms:
        x32 = x.astype(np.float32)
        var = ((x32 * x32).mean(axis=1, keepdims=True) - x32.mean(axis=1, keepdims=True) ** 2).astype(np.float64)
        var = np.maximum(var, 0.0)
    r = 1.0 / np.sqrt(var + eps)
    z = d * r
    out = os.path.join
    if op.endswith("forward"):
        y = g * z if rms else g * z + load(path("beta"), dtype)
        store(out(case_dir, m["outputs"]["y"]), y, dtype)
        return
    dy = load(path("dy"), dtype)
    v = g * dy
    n = x.shape[1]
    mean_v = np.zeros((x.shape[0], 1)) if rms else v.mean(axis=1, keepdims=True)
    dx = r * (v - mean_v - z * (v * z).sum(axis=1, keepdims=True) / n)
    store(out(case_dir, m["outputs"]["dx"]), dx, dtype)
    store(out(case_dir, m["outputs"]["dgamma"]), (dy * z).sum(axis=0), dtype)
    if not rms:
        store(out(case_dir, m["outputs"]["dbeta"]), dy.sum(axis=0), dtype)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    case_dir = args[0] if args else os.environ["NORMCHECK_CASE_DIR"]
    with open(os.path.join(case_dir, "manifest.json")) as f:
        m = json.load(f)
    try:
        compute(case_dir, m, "--one-pass" in sys.argv[1:])
    except Unsupported:
        raise SystemExit(77)


if __name__ == "__main__":
    main()
