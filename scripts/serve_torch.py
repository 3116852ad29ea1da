#!/usr/bin/python3
"""A serve-mode kernel for normcheck driven through PyTorch (Debian's python3-torch): what
torch.nn.functional.layer_norm computes forward and backward (autograd) in the storage dtype,
RMSNorm composed from torch ops as models write it, x * rsqrt(mean(x^2) + eps) * g, and the grouped
norms of the grouped suite (op grouped_norm): F.batch_norm (training forward and backward, the
running-statistic update, inference from the statistics before it), F.group_norm and
F.instance_norm, F.layer_norm over the last k axes, RMSNorm over the last k axes composed from ops,
channel layer norm as ConvNeXt writes it, on NCHW, NHWC and (N, L, C) tensors, the LayerNorm and
RMSNorm JVPs through forward-mode AD (torch.autograd.forward_ad on F.layer_norm and on the composed
RMSNorm), and the Linear o RMSNorm block composed from
RMSNorm and F.linear (op linear_rmsnorm, --block-form composed). f32, bf16 and f64 on the CPU; what torch
1.13 does not implement on the CPU (f16, some bf16 ops) answers "unsupported".

    normcheck run --serve "/usr/bin/python3 /path/to/normcheck/scripts/serve_torch.py" \\
        --exec-name torch --report-only

Same protocol as scripts/serve_numpy.py. One intra-op thread (deterministic reductions).
"""
import json
import os
import sys

import numpy as np
import torch

DTYPES = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16}


class Unsupported(Exception):
    pass


def load(path, dtype):
    a = np.load(path)
    if dtype == "bf16":  # uint16 bit patterns -> bfloat16 tensor of the same bits
        return torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def store(path, t, dtype):
    t = t.detach().contiguous()
    if dtype == "bf16":
        np.save(path, t.view(torch.int16).numpy().view(np.uint16))
    else:
        np.save(path, t.numpy())


def trailing(d, m):
    """Layer norm over the last normalized_dims axes (F.layer_norm with that normalized_shape) or
    RMSNorm over them composed from torch ops as models write it, autograd backward."""
    dtype, eps, kind, k = m["dtype"], float(m["eps"]), m["kind"], int(m["normalized_dims"])
    path = lambda name: os.path.join(d, m["inputs"][name])
    out = lambda name: os.path.join(d, m["outputs"][name])
    shape = m["shape"]
    normalized = shape[len(shape) - k:]
    x = load(path("x"), dtype).reshape(shape).requires_grad_(True)
    g = load(path("gamma"), dtype).reshape(normalized).requires_grad_(True)
    if kind == "layer_norm":
        b = load(path("beta"), dtype).reshape(normalized).requires_grad_(True)
        y = torch.nn.functional.layer_norm(x, normalized, g, b, eps)
    else:
        dims = tuple(range(len(shape) - k, len(shape)))
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps) * g
    y.backward(load(path("dy"), dtype).reshape(shape))
    store(out("y"), y.detach(), dtype)
    store(out("dx"), x.grad, dtype)
    store(out("dgamma"), g.grad, dtype)
    if kind == "layer_norm":
        store(out("dbeta"), b.grad, dtype)


def grouped(d, m):
    """Batch, group, instance or channel-layer norm on a tensor whose channel axis is
    m["channel_axis"]; layer norm and RMSNorm over trailing axes in trailing()."""
    dtype, eps, kind, ca = m["dtype"], float(m["eps"]), m["kind"], m["channel_axis"]
    if kind in ("layer_norm", "rms_norm"):
        return trailing(d, m)
    path = lambda name: os.path.join(d, m["inputs"][name])
    out = lambda name: os.path.join(d, m["outputs"][name])
    shape = m["shape"]
    x = load(path("x"), dtype).reshape(shape).movedim(ca, 1).contiguous().requires_grad_(True)
    dy = load(path("dy"), dtype).reshape(shape).movedim(ca, 1)
    g = load(path("gamma"), dtype).requires_grad_(True)
    b = load(path("beta"), dtype).requires_grad_(True)
    back = lambda t: t.detach().movedim(1, ca)
    if kind == "group_norm":
        y = torch.nn.functional.group_norm(x, int(m["groups"]), g, b, eps)
    elif kind == "instance_norm":
        y = torch.nn.functional.instance_norm(x, weight=g, bias=b, eps=eps)
    elif kind == "batch_norm":
        rm, rv = load(path("running_mean"), dtype), load(path("running_var"), dtype)
        rm0, rv0 = rm.clone(), rv.clone()
        y = torch.nn.functional.batch_norm(x, rm, rv, g, b, training=True, momentum=float(m["momentum"]), eps=eps)
        with torch.no_grad():
            yi = torch.nn.functional.batch_norm(x, rm0, rv0, g, b, training=False, eps=eps)
        store(out("running_mean"), rm, dtype)
        store(out("running_var"), rv, dtype)
        store(out("y_inference"), back(yi), dtype)
    elif kind == "channel_layer_norm":  # ConvNeXt's LayerNorm(data_format="channels_first")
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        view = [1, -1] + [1] * (x.dim() - 2)
        y = g.reshape(view) * ((x - u) / torch.sqrt(s + eps)) + b.reshape(view)
    else:
        raise Unsupported(kind)
    y.backward(dy)
    store(out("y"), back(y), dtype)
    store(out("dx"), back(x.grad), dtype)
    store(out("dgamma"), g.grad, dtype)
    store(out("dbeta"), b.grad, dtype)


def block(d, m):
    """The Linear o RMSNorm block as a model composes it: F.linear(RMSNorm(x) * g, W, b), autograd
    backward, every op in the storage dtype (the composed form: run with --block-form composed)."""
    dtype, eps = m["dtype"], float(m["eps"])
    path = lambda name: os.path.join(d, m["inputs"][name])
    out = lambda name: os.path.join(d, m["outputs"][name])
    x, g, w = (load(path(k), dtype).requires_grad_(True) for k in ("x", "g", "w"))
    b = load(path("b"), dtype) if "b" in m["inputs"] else None
    u = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g
    y = torch.nn.functional.linear(u, w, b)
    y.backward(load(path("dy"), dtype))
    store(out("y"), y, dtype)
    store(out("dx"), x.grad, dtype)
    store(out("dw"), w.grad, dtype)
    store(out("dg"), g.grad, dtype)


def jvp(d, m):
    """The LayerNorm JVP through torch's forward-mode AD: F.layer_norm on dual tensors
    (torch.autograd.forward_ad), tangents dx, dgamma, dbeta."""
    import torch.autograd.forward_ad as fwad
    dtype, eps = m["dtype"], float(m["eps"])
    path = lambda name: os.path.join(d, m["inputs"][name])
    x, g, b, tx, tg, tb = (load(path(k), dtype) for k in ("x", "gamma", "beta", "dx", "dgamma", "dbeta"))
    with fwad.dual_level():
        y = torch.nn.functional.layer_norm(fwad.make_dual(x, tx), (x.shape[-1],), fwad.make_dual(g, tg), fwad.make_dual(b, tb), eps)
        store(os.path.join(d, m["outputs"]["du"]), fwad.unpack_dual(y).tangent, dtype)


def rms_jvp(d, m):
    """The RMSNorm JVP through forward-mode AD of the composed RMSNorm x * rsqrt(mean(x^2) + eps) * g
    (ATen 1.13 has no RMSNorm kernel), tangents dx, dgamma."""
    import torch.autograd.forward_ad as fwad
    dtype, eps = m["dtype"], float(m["eps"])
    path = lambda name: os.path.join(d, m["inputs"][name])
    x, g, tx, tg = (load(path(k), dtype) for k in ("x", "gamma", "dx", "dgamma"))
    with fwad.dual_level():
        xd = fwad.make_dual(x, tx)
        y = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * fwad.make_dual(g, tg)
        store(os.path.join(d, m["outputs"]["du"]), fwad.unpack_dual(y).tangent, dtype)


def compute(d, m):
    dtype, op, eps = m["dtype"], m["op"], float(m["eps"])
    if dtype not in DTYPES:
        raise Unsupported(f"{op} in {dtype}")
    if op == "layernorm_jvp":
        return jvp(d, m)
    if op == "rmsnorm_jvp":
        return rms_jvp(d, m)
    if op == "grouped_norm":
        return grouped(d, m)
    if op == "linear_rmsnorm":
        return block(d, m)
    if not op.startswith(("layernorm_", "rmsnorm_")):
        raise Unsupported(op)
    path = lambda name: os.path.join(d, m["inputs"][name])
    out = lambda name: os.path.join(d, m["outputs"][name])
    backward = op.endswith("backward")
    rms = op.startswith("rmsnorm")
    x = load(path("x"), dtype).requires_grad_(backward)
    g = load(path("gamma"), dtype).requires_grad_(backward)
    b = None if rms else load(path("beta"), dtype).requires_grad_(backward)
    if rms:
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g
    else:
        y = torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, eps)
    if not backward:
        store(out("y"), y, dtype)
        return
    y.backward(load(path("dy"), dtype))
    store(out("dx"), x.grad, dtype)
    store(out("dgamma"), g.grad, dtype)
    if not rms:
        store(out("dbeta"), b.grad, dtype)


def main():
    torch.set_num_threads(1)
    print(json.dumps({"ready": True, "name": "torch", "version": torch.__version__}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            compute(request["dir"], request)
            reply = {"status": "ok"}
        except Unsupported as e:
            reply = {"status": "unsupported", "message": str(e)}
        except RuntimeError as e:  # "... not implemented for 'BFloat16'": the op is missing, not wrong
            reply = {"status": "unsupported" if "not implemented for" in str(e) else "error", "message": str(e)}
        except Exception as e:
            reply = {"status": "error", "message": f"{type(e).__name__}: {e}"}
        reply["call"] = request["call"]  # the reply names the call it answers
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
