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


def grouped_norm(call):
    """torch.nn.functional's batch, group, instance and layer norm with autograd's backward; the kinds
    ATen 1.13 has no kernel for (channel layer norm, RMSNorm) are declined, as the adapter declines them."""
    F = torch.nn.functional
    gamma, beta = (t.clone().requires_grad_(True) for t in (call.gamma, call.beta)) if call.beta is not None else (None, None)
    if call.kind == "layer_norm":
        x = call.x.clone().requires_grad_(True)
        y = F.layer_norm(x, x.shape[-call.normalized_dims:], gamma, beta, call.eps)
        y.backward(call.dy)
        return {"y": y, "dx": x.grad, "dgamma": gamma.grad, "dbeta": beta.grad}
    if call.kind not in ("batch_norm", "group_norm", "instance_norm"):
        return None
    x = call.channels_first(call.x).requires_grad_(True)
    out = {}
    if call.kind == "group_norm":
        y = F.group_norm(x, call.groups, gamma, beta, call.eps)
    elif call.kind == "instance_norm":
        y = F.instance_norm(x, weight=gamma, bias=beta, eps=call.eps)
    else:
        running_mean, running_var = call.running_mean.clone(), call.running_var.clone()
        y = F.batch_norm(x, running_mean, running_var, gamma, beta, training=True, momentum=call.momentum, eps=call.eps)
        with torch.no_grad():
            y_inference = F.batch_norm(x, call.running_mean.clone(), call.running_var.clone(), gamma, beta, training=False, eps=call.eps)
        out.update(running_mean=running_mean, running_var=running_var, y_inference=call.from_channels_first(y_inference))
    y.backward(call.channels_first(call.dy))
    out.update(y=call.from_channels_first(y), dx=call.from_channels_first(x.grad), dgamma=gamma.grad, dbeta=beta.grad)
    return out


def grouped_key(r):
    return (r["kind"], r["worst_case"]["layout"], r["storage"], r["output"])


@pytest.mark.skipif(not ADAPTER.exists(), reason="the libtorch adapter is not built (libtorch not found at configure time)")
def test_torch_grouped_norms_in_process_and_through_the_adapter_fail_on_the_same_records(tmp_path):
    torch.set_num_threads(1)
    report = tmp_path / "libtorch_grouped.json"
    run = subprocess.run([str(BINARY), "run", "--kernel", str(ADAPTER), "--report-only", "--suite", "quick", "--dtypes", ",".join(DTYPES),
                          "--ops", "grouped_norm", "--threads", "2", "--quiet", "--out", str(report)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    adapter_records = json.loads(report.read_text())["grouped_norm"]["records"]
    result = normcheck.check(grouped_norm, op="grouped_norm", dtypes=DTYPES, suite="quick", framework="torch", report_only=True)
    python_records = result.records
    assert all(r["kernel"] == "python:grouped_norm" for r in python_records)
    # the same kinds, layouts, dtypes and outputs judged (the declined kinds in neither), the same failures
    assert {grouped_key(r) for r in python_records} == {grouped_key(r) for r in adapter_records}
    assert {r["kind"] for r in python_records} == {"batch_norm", "group_norm", "instance_norm", "layer_norm"}
    failing_python = {grouped_key(r) for r in python_records if r["verdict"] in FAILING_VERDICTS}
    assert failing_python == {grouped_key(r) for r in adapter_records if r["verdict"] in FAILING_VERDICTS}
    assert failing_python, "bf16 batch norm's known defect is caught both ways"
