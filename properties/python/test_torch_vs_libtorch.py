"""Torch judged in-process agrees with the libtorch C++ adapter (issue 18): the same ATen kernels
reached two ways — `normcheck.check` calling torch from Python, and `normcheck run --kernel
libnc_torch.so` calling ATen through the plugin ABI — on the same quick-suite cases must fail on the
same (dtype, generator, output) records, for the LayerNorm forward and backward and an RMSNorm
composed from torch ops exactly as the adapter composes it (src/adapters/torch_plugin.cpp)."""
import json
import os
import pathlib
import subprocess

import pytest

torch = pytest.importorskip("torch")
import normcheck  # noqa: E402
from normcheck.check import FAILING_VERDICTS  # noqa: E402

BINARY = pathlib.Path(os.environ.get("NORMCHECK_BINARY", pathlib.Path(__file__).resolve().parents[2] / "build" / "normcheck"))
ADAPTER = BINARY.parent / "libnc_torch.so"
DTYPES = ("f32", "bf16", "f64")


def layer_norm(x, gamma, beta, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


def layer_norm_backward(x, gamma, beta, eps, dy):
    x, gamma, beta = (t.detach().requires_grad_(True) for t in (x, gamma, beta))
    torch.nn.functional.layer_norm(x, (x.shape[-1],), gamma, beta, eps).backward(dy)
    return x.grad, gamma.grad, beta.grad


def rms_norm(x, gamma, eps):  # the adapter's composition, op for op
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return (x * r) * gamma


def rms_norm_backward(x, gamma, eps, dy):
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    z = x * r
    v = dy * gamma
    return r * (v - z * (v * z).mean(-1, keepdim=True)), (dy * z).sum(0)


KERNELS = {"layernorm_forward": layer_norm, "layernorm_backward": layer_norm_backward,
           "rmsnorm_forward": rms_norm, "rmsnorm_backward": rms_norm_backward}


def failing(records):
    """(op, dtype, generator, output) of every failing record."""
    return {(r["op"], r["storage"], r["property"].split("/", 1)[1], r["output"]) for r in records if r["verdict"] in FAILING_VERDICTS}


@pytest.mark.skipif(not ADAPTER.exists(), reason="the libtorch adapter is not built (libtorch not found at configure time)")
def test_torch_in_process_and_the_libtorch_adapter_fail_on_the_same_records(tmp_path):
    torch.set_num_threads(1)  # as the adapter does
    report = tmp_path / "libtorch.json"
    run = subprocess.run([str(BINARY), "run", "--kernel", str(ADAPTER), "--report-only", "--suite", "quick", "--dtypes", ",".join(DTYPES),
                          "--ops", ",".join(KERNELS), "--threads", "2", "--quiet", "--out", str(report)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    adapter_records = [r for r in json.loads(report.read_text())["records"] if r["kernel"].startswith("plugin:")]
    python_records = []
    for op, fn in KERNELS.items():
        python_records += normcheck.check(fn, op=op, dtypes=DTYPES, suite="quick", framework="torch", report_only=True).records
    # Both judged every record of the suite, and found the same failures.
    assert {(r["op"], r["storage"], r["property"], r["output"]) for r in python_records} == \
        {(r["op"], r["storage"], r["property"], r["output"]) for r in adapter_records}
    assert failing(python_records) == failing(adapter_records)
    assert failing(adapter_records), "the quick suite catches libtorch's known defects (docs/findings-libtorch.md)"
