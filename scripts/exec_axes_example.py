#!/usr/bin/python3
"""An exec-protocol kernel for `normcheck audit-axes --exec` (op "normalize", docs/axis-audit.md):
normalizes x over the axes a flag names, in float64, and writes y in the case dtype.

    normcheck audit-axes --shape 2,3,4,4 --layout nchw --kind channel_layer_norm \\
        --exec "/usr/bin/python3 $PWD/scripts/exec_axes_example.py {dir} --over C"
    normcheck audit-axes ... --serve "/usr/bin/python3 $PWD/scripts/exec_axes_example.py --serve --over C"

--over takes axis names of the manifest's layout ("C", "H,W", "N,H,W" ...); a kernel that
declares channel norm but passes --over W is the seed's wrong-axis bug. --serve runs it as a
serve-mode process (docs/plugins.md). bf16 is not handled (unsupported)."""
import json
import os
import sys

import numpy as np


def normalize(case_dir, m, over):
    """Writes y for the request m; False when unsupported."""
    if m["op"] != "normalize" or m["dtype"] == "bf16":
        return False
    x = np.load(os.path.join(case_dir, m["inputs"]["x"])).astype(np.float64)
    axes = tuple(m["axes"].index(a) for a in over)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + 1e-5)
    out = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[m["dtype"]]
    np.save(os.path.join(case_dir, m["outputs"]["y"]), y.astype(out))
    return True


def serve(over):
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        m = json.loads(line)
        try:
            reply = {"status": "ok" if normalize(m["dir"], m, over) else "unsupported"}
        except Exception as e:
            reply = {"status": "error", "message": f"{type(e).__name__}: {e}"}
        reply["call"] = m["call"]  # the reply names the call it answers
        print(json.dumps(reply), flush=True)


def main():
    over = sys.argv[sys.argv.index("--over") + 1].split(",") if "--over" in sys.argv else ["C"]
    if "--serve" in sys.argv:
        return serve(over)
    case_dir = sys.argv[1]
    with open(os.path.join(case_dir, "manifest.json")) as f:
        m = json.load(f)
    if not normalize(case_dir, m, over):
        raise SystemExit(77)


if __name__ == "__main__":
    main()
