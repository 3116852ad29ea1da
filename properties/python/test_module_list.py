"""normcheck.modules writes the module list `normcheck contract --graph` reads (issue 20): a GELU,
a dropout or a hook between the modules is refused by name, modules other consumers still read count
in the storage comparison, and a plain chain contracts with its chain recorded as checked."""
import json
import os
import pathlib
import struct
import subprocess

import pytest

torch = pytest.importorskip("torch")
import normcheck.modules  # noqa: E402

BINARY = os.environ.get("NORMCHECK_BINARY", str(pathlib.Path(__file__).resolve().parents[2] / "build" / "normcheck"))


def save_safetensors(state_dict, path):
    """A float32 safetensors file of the state dict (the format: header length, JSON header, data)."""
    header, blobs, offset = {}, [], 0
    for name, t in state_dict.items():
        data = t.detach().to(torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def contract(model, tmp_path, *args):
    save_safetensors(model.state_dict(), tmp_path / "m.safetensors")
    normcheck.modules.write_module_list(model, tmp_path / "m.modules.json")
    return subprocess.run([BINARY, "contract", "--in", str(tmp_path / "m.safetensors"), "--graph", str(tmp_path / "m.modules.json"),
                           "--out", str(tmp_path / "c.safetensors"), "--samples", "4", *args], capture_output=True, text=True)


def test_a_plain_chain_contracts_and_its_module_list_is_what_ran(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 48), torch.nn.LayerNorm(48, eps=1e-6), torch.nn.Linear(48, 8))
    listed = normcheck.modules.module_list(model)
    assert [(m["name"], m["op"]) for m in listed["modules"]] == [("0", "Linear"), ("1", "LayerNorm"), ("2", "Linear")]
    assert listed["modules"][1]["eps"] == 1e-6 and listed["modules"][1]["inputs"] == ["0"]
    done = contract(model, tmp_path)
    assert done.returncode == 0, done.stderr
    cert = json.loads((tmp_path / "c.safetensors.certificate.json").read_text())
    assert cert["chain"]["source"] == "graph" and cert["chain"]["retained"] == []
    assert float.fromhex(cert["eps"]) == 1e-6  # the LayerNorm's eps, from the module list
    assert cert["passed"]


def test_a_gelu_between_the_producer_and_the_norm_is_refused_by_name(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(12, 48), torch.nn.GELU(), torch.nn.LayerNorm(48), torch.nn.Linear(48, 8))
    done = contract(model, tmp_path)
    assert done.returncode == 2
    assert "module '1' (GELU) lies between Linear '0' and LayerNorm '2'" in done.stderr
    assert not (tmp_path / "c.safetensors").exists()


def test_a_hook_on_the_norm_is_refused(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(12, 48), torch.nn.LayerNorm(48), torch.nn.Linear(48, 8))
    model[1].register_forward_hook(lambda module, inputs, output: output * 2)
    done = contract(model, tmp_path)
    assert done.returncode == 2 and "has hooks" in done.stderr


class Residual(torch.nn.Module):
    """y = out(norm(lin(x))) + norm(lin(x)): the LayerNorm's output is read twice."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(12, 48)
        self.norm = torch.nn.LayerNorm(48)
        self.out = torch.nn.Linear(48, 48)

    def forward(self, x):
        h = self.norm(self.lin(x))
        return self.out(h) + h


def test_a_residual_addition_keeps_the_norm_and_its_producer_in_the_storage_count(tmp_path):
    listed = normcheck.modules.module_list(Residual())
    assert [m["op"] for m in listed["modules"]] == ["Linear", "LayerNorm", "Linear", "add"]
    done = contract(Residual(), tmp_path)
    assert done.returncode == 0, done.stderr
    cert = json.loads((tmp_path / "c.safetensors.certificate.json").read_text())
    assert [(r["name"], r["needed_by"]) for r in cert["chain"]["retained"]] == [("lin", "norm"), ("norm", "add")]
    d, n = 12, 48
    assert cert["parameters"]["n_retained"] == (n * d + n) + 2 * n
