"""Inputs handed to a Python kernel in its framework's dtype, outputs read back exactly.

The harness's values are float64 arrays holding values of the storage dtype; conversion to the
framework's dtype is exact. An output must come back in that dtype: a kernel returning another
dtype is a kernel failure, never silently rounded. NumPy has no bfloat16: with framework="numpy",
bf16 inputs arrive as float32 arrays holding bf16 values and outputs must be float32 arrays holding
bf16 values (the harness checks each one).
"""
import numpy as np


class NumpyFramework:
    types = {"f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64}

    def to_kernel(self, a, dtype):
        return np.ascontiguousarray(a).astype(self.types[dtype])

    def from_kernel(self, out, dtype, name):
        a = np.asarray(out)
        want = np.dtype(self.types[dtype])
        if a.dtype != want:
            raise TypeError(f"{name} is a {a.dtype} array, expected {want.name} for {dtype}")
        return np.ascontiguousarray(a, dtype=np.float64).reshape(-1)

    def move_axis(self, t, source, destination):
        return np.ascontiguousarray(np.moveaxis(t, source, destination))


class TorchFramework:
    def __init__(self, device):
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.types = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}

    def to_kernel(self, a, dtype):
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(device=self.device, dtype=self.types[dtype])

    def from_kernel(self, out, dtype, name):
        if not isinstance(out, self.torch.Tensor):
            raise TypeError(f"{name} is a {type(out).__name__}, expected a torch tensor")
        if out.dtype != self.types[dtype]:
            raise TypeError(f"{name} is {out.dtype}, expected {self.types[dtype]} for {dtype}")
        return out.detach().to(device="cpu", dtype=self.torch.float64).contiguous().numpy().reshape(-1)

    def move_axis(self, t, source, destination):
        return t.movedim(source, destination).contiguous()


def framework_named(name, device):
    if name == "numpy":
        if device != "cpu":
            raise ValueError("framework='numpy' runs on device='cpu' only")
        return NumpyFramework()
    if name == "torch":
        return TorchFramework(device)
    raise ValueError(f"unknown framework {name!r} (numpy, torch)")
