#!/usr/bin/python3
"""A serve-mode kernel for normcheck driven through PyTorch (Debian's python3-torch): what
torch.nn.functional.layer_norm computes forward and backward (autograd) in the storage dtype, and
RMSNorm composed from torch ops as models write it, x * rsqrt(mean(x^2) + eps) * g. f32, bf16 and
f64 on the CPU (f16 LayerNorm is not implemented on the CPU in torch 1.13: unsupported).

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


def compute(d, m):
    dtype, op, eps = m["dtype"], m["op"], float(m["eps"])
    if dtype not in DTYPES or not op.startswith(("layernorm_", "rmsnorm_")):
        raise Unsupported(f"{op} in {dtype}")
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
        except Exception as e:
            reply = {"status": "error", "message": f"{type(e).__name__}: {e}"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
