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


def compute_trailing(case_dir, m):
    """Layer norm or RMSNorm over the last normalized_dims axes (elementwise gamma, beta shaped like
    those axes): the tensor as (positions, normalized entries), forward and backward."""
    dtype, eps, kind, k = m["dtype"], float(m["eps"]), m["kind"], int(m["normalized_dims"])
    path = lambda name: os.path.join(case_dir, m["inputs"][name])
    out = lambda name: os.path.join(case_dir, m["outputs"][name])
    shape = m["shape"]
    normalized = shape[len(shape) - k:]
    width = int(np.prod(normalized))
    x, dy = load(path("x"), dtype).reshape(-1, width), load(path("dy"), dtype).reshape(-1, width)
    g = load(path("gamma"), dtype).reshape(width)
    rms = kind == "rms_norm"
    mean = 0.0 if rms else x.mean(axis=1, keepdims=True)
    r = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    z = (x - mean) * r
    v = dy * g
    dx = r * (v - (0.0 if rms else v.mean(axis=1, keepdims=True)) - z * (v * z).mean(axis=1, keepdims=True))
    store(out("dx"), dx.reshape(shape), dtype)
    store(out("dgamma"), (dy * z).sum(axis=0).reshape(normalized), dtype)
    if rms:
        store(out("y"), (z * g).reshape(shape), dtype)
        return
    b = load(path("beta"), dtype).reshape(width)
    store(out("y"), (z * g + b).reshape(shape), dtype)
    store(out("dbeta"), dy.sum(axis=0).reshape(normalized), dtype)


def compute_grouped(case_dir, m, wrong_groups=False):
    """A grouped norm (op grouped_norm, serve mode) on a tensor of any layout: batch, group,
    instance and channel-layer norm with one gamma/beta per channel, layer norm and RMSNorm over the
    trailing axes; training-mode forward and backward, and for batch norm the running-statistic
    update (unbiased variance) and the inference output from the statistics before the update.
    wrong_groups plants the defect of normalizing a group norm over one group whatever G is."""
    dtype, eps, kind = m["dtype"], float(m["eps"]), m["kind"]
    if kind in ("layer_norm", "rms_norm"):
        return compute_trailing(case_dir, m)
    path = lambda name: os.path.join(case_dir, m["inputs"][name])
    out = lambda name: os.path.join(case_dir, m["outputs"][name])
    shape, ca = m["shape"], m["channel_axis"]
    to_ncs = lambda a: np.moveaxis(a.reshape(shape), ca, 1).reshape(shape[0], shape[ca], -1)
    from_ncs = lambda a: np.moveaxis(a.reshape([shape[0], shape[ca]] + [s for i, s in enumerate(shape) if i not in (0, ca)]), 1, ca)
    x, dy = to_ncs(load(path("x"), dtype)), to_ncs(load(path("dy"), dtype))
    g, b = load(path("gamma"), dtype)[None, :, None], load(path("beta"), dtype)[None, :, None]
    n, c, s = x.shape
    if kind == "group_norm":
        groups = 1 if wrong_groups else int(m["groups"])
        view, axes = (lambda a: a.reshape(n, groups, c // groups, s)), (2, 3)
    elif kind == "batch_norm":
        view, axes = (lambda a: a), (0, 2)
    elif kind == "instance_norm":
        view, axes = (lambda a: a), (2,)
    elif kind == "channel_layer_norm":
        view, axes = (lambda a: a), (1,)
    else:
        raise Unsupported(kind)
    xv = view(x)
    mean = xv.mean(axis=axes, keepdims=True)
    var = ((xv - mean) ** 2).mean(axis=axes, keepdims=True)
    r = 1.0 / np.sqrt(var + eps)
    z = ((xv - mean) * r).reshape(n, c, s)
    store(out("y"), from_ncs(z * g + b), dtype)
    dz = view(dy * g)
    zv = view(z)
    dx = r * (dz - dz.mean(axis=axes, keepdims=True) - zv * (dz * zv).mean(axis=axes, keepdims=True))
    store(out("dx"), from_ncs(dx.reshape(n, c, s)), dtype)
    store(out("dgamma"), (dy * z).sum(axis=(0, 2)), dtype)
    store(out("dbeta"), dy.sum(axis=(0, 2)), dtype)
    if kind != "batch_norm":
        return
    k = n * s
    mom = float(m["momentum"])
    rm, rv = load(path("running_mean"), dtype), load(path("running_var"), dtype)
    store(out("running_mean"), (1 - mom) * rm + mom * mean.reshape(c), dtype)
    unbias = k / (k - 1) if k > 1 else 1.0  # one element per channel: factor 1, as normcheck's contract
    store(out("running_var"), (1 - mom) * rv + mom * var.reshape(c) * unbias, dtype)
    yi = (x - rm[None, :, None]) / np.sqrt(rv[None, :, None] + eps) * g + b
    store(out("y_inference"), from_ncs(yi), dtype)


def compute_block(case_dir, m, bias_in_correction=False):
    """The Linear o RMSNorm block y = W (g * x r) + b (op linear_rmsnorm, serve mode) in the fused
    deferred form: y = r (W diag(g) x) + b, dx = r (diag(g) W^T dy) - (r^2/n) <dy, y - b> x,
    dW = dy^T (g * x r), dg_j = sum_k W_kj sum_i r_i dy_ik x_ij; in float64, rounded once.
    bias_in_correction plants the defect <dy, y> for <dy, y - b>."""
    dtype, eps = m["dtype"], float(m["eps"])
    path = lambda name: os.path.join(case_dir, m["inputs"][name])
    out = lambda name: os.path.join(case_dir, m["outputs"][name])
    x, g, w, dy = (load(path(k), dtype) for k in ("x", "g", "w", "dy"))
    b = load(path("b"), dtype) if "b" in m["inputs"] else np.zeros(w.shape[0])
    n = x.shape[1]
    r = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    pre = r * ((x * g) @ w.T)
    y = pre + b
    store(out("y"), y, dtype)
    corr = (dy * (y if bias_in_correction else pre)).sum(axis=1, keepdims=True)
    dx = r * ((dy @ w) * g) - (r * r / n) * corr * x
    store(out("dx"), dx, dtype)
    store(out("dw"), dy.T @ (g * x * r), dtype)
    store(out("dg"), (w * ((r * dy).T @ x)).sum(axis=0), dtype)


def compute_contracted(case_dir, m, k_divisor=False):
    """The QR-contracted affine -> LayerNorm -> affine block (op contracted_block, serve mode): with
    xbar = [x, 1], s = 1 / sqrt(|R xbar|^2 / n + eps), f = s D xbar + c and, for dy,
    dx = s D^T dy - (s^3 / n) <dy, D xbar> R^T R xbar (first d entries). k_divisor plants the slip
    of dividing by k, the rows of R, instead of the original width n."""
    dtype, eps = m["dtype"], float(m["eps"])
    path = lambda name: os.path.join(case_dir, m["inputs"][name])
    out = lambda name: os.path.join(case_dir, m["outputs"][name])
    x, D, R, c = (load(path(k), dtype) for k in ("x", "D", "R", "c"))
    n = R.shape[0] if k_divisor else int(m["n"])
    xbar = np.hstack([x, np.ones((x.shape[0], 1))])
    p, q = xbar @ R.T, xbar @ D.T
    s = 1.0 / np.sqrt((p * p).sum(axis=1, keepdims=True) / n + eps)
    store(out("f"), s * q + c, dtype)
    if "dy" not in m["inputs"]:
        return
    dy = load(path("dy"), dtype)
    dot = (dy * q).sum(axis=1, keepdims=True)
    dx = s * (dy @ D) - s ** 3 / n * dot * (p @ R)
    store(out("dx"), dx[:, : x.shape[1]], dtype)


def compute_jvp(case_dir, m, no_dgamma=False):
    """The LayerNorm JVP (op layernorm_jvp, serve mode): du = gamma r (dx - mean(dx) - z mean(z dx))
    + z dgamma + dbeta along the tangents dx, dgamma, dbeta. no_dgamma plants the slip of dropping
    the z dgamma term."""
    dtype, eps = m["dtype"], float(m["eps"])
    path = lambda name: os.path.join(case_dir, m["inputs"][name])
    x, g, tx, tg, tb = (load(path(k), dtype) for k in ("x", "gamma", "dx", "dgamma", "dbeta"))
    d = x - x.mean(axis=1, keepdims=True)
    r = 1.0 / np.sqrt((d * d).mean(axis=1, keepdims=True) + eps)
    z = d * r
    q = r * (tx - tx.mean(axis=1, keepdims=True) - z * (z * tx).mean(axis=1, keepdims=True))
    du = g * q + (0.0 if no_dgamma else z * tg) + tb
    store(os.path.join(case_dir, m["outputs"]["du"]), du, dtype)


def compute_rms_jvp(case_dir, m, no_dgamma=False):
    """The RMSNorm JVP (op rmsnorm_jvp, serve mode): du = gamma r (dx - z mean(z dx)) + z dgamma,
    z = x r, along the tangents dx, dgamma. no_dgamma drops the z dgamma term."""
    dtype, eps = m["dtype"], float(m["eps"])
    path = lambda name: os.path.join(case_dir, m["inputs"][name])
    x, g, tx, tg = (load(path(k), dtype) for k in ("x", "gamma", "dx", "dgamma"))
    r = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    z = x * r
    du = g * r * (tx - z * (z * tx).mean(axis=1, keepdims=True)) + (0.0 if no_dgamma else z * tg)
    store(os.path.join(case_dir, m["outputs"]["du"]), du, dtype)


def compute(case_dir, m, one_pass=False, wrong_groups=False, bias_in_correction=False, k_divisor=False, no_dgamma=False,
            batch_variant=False):
    """Reads the inputs the manifest m names in case_dir and writes its outputs there. batch_variant
    plants a batch-size dependent path: from 256 rows on, the per-row ops are computed in float32
    (accurate, but a row's bits then depend on the batch it is in: docs/invariance.md)."""
    dtype, op, eps = m["dtype"], m["op"], float(m["eps"])
    if op == "layernorm_jvp":
        return compute_jvp(case_dir, m, no_dgamma)
    if op == "rmsnorm_jvp":
        return compute_rms_jvp(case_dir, m, no_dgamma)
    if op == "contracted_block":
        return compute_contracted(case_dir, m, k_divisor)
    if op == "grouped_norm":
        return compute_grouped(case_dir, m, wrong_groups)
    if op == "linear_rmsnorm":
        return compute_block(case_dir, m, bias_in_correction)
    if not op.startswith(("layernorm_", "rmsnorm_")):
        raise Unsupported(op)
    path = lambda name: os.path.join(case_dir, m["inputs"][name])
    x, g = load(path("x"), dtype), load(path("gamma"), dtype)
    if batch_variant and x.shape[0] >= 256:
        x, g = x.astype(np.float32), g.astype(np.float32)
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
        y = g * z if rms else g * z + load(path("beta"), dtype).astype(x.dtype)
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
        compute(case_dir, m, "--one-pass" in sys.argv[1:], batch_variant="--batch-variant" in sys.argv[1:])
    except Unsupported:
        raise SystemExit(77)


if __name__ == "__main__":
    main()
