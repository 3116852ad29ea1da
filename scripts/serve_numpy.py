#!/usr/bin/python3
"""A serve-mode kernel for normcheck (docs/plugins.md, "Serve mode"): the NumPy LayerNorm/RMSNorm of
scripts/exec_example.py as one long-running process per normcheck worker thread.

    normcheck run --serve "/usr/bin/python3 /path/to/normcheck/scripts/serve_numpy.py" --exec-name numpy

Protocol: print {"ready": true} once started; then for every JSON request line on stdin (the exec
manifest plus "dir", the private folder holding the input .npy files) write the outputs into "dir"
and answer one JSON line {"status": "ok" | "unsupported" | "error", "message": "..."} on stdout.
Diagnostics go to stderr, never stdout. Ops: layernorm/rmsnorm forward and backward, grouped_norm
(batch, group, instance and channel-layer norm on any layout, layer norm and RMSNorm over the
trailing axes), linear_rmsnorm (the Linear o RMSNorm block in its fused deferred form: run with
--block-form deferred), contracted_block (the QR-contracted affine -> LayerNorm -> affine
block), layernorm_jvp and rmsnorm_jvp (the JVPs). --one-pass plants the textbook E[x^2]-E[x]^2 variance; --wrong-groups plants a group norm
over one group whatever G is; --bias-in-correction plants <dy, y> for <dy, y - b> in the deferred
backward; --k-divisor plants |R xbar|^2 / k for / n in the contracted block; --jvp-no-dgamma drops
the JVP's z dgamma term.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exec_example  # noqa: E402


def main():
    one_pass = "--one-pass" in sys.argv[1:]
    wrong_groups = "--wrong-groups" in sys.argv[1:]
    bias_in_correction = "--bias-in-correction" in sys.argv[1:]
    k_divisor = "--k-divisor" in sys.argv[1:]
    no_dgamma = "--jvp-no-dgamma" in sys.argv[1:]
    print(json.dumps({"ready": True, "name": "numpy"}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            exec_example.compute(request["dir"], request, one_pass, wrong_groups, bias_in_correction, k_divisor, no_dgamma)
            reply = {"status": "ok"}
        except exec_example.Unsupported as e:
            reply = {"status": "unsupported", "message": str(e)}
        except Exception as e:  # the call fails, the process stays
            reply = {"status": "error", "message": f"{type(e).__name__}: {e}"}
        reply["call"] = request["call"]  # the reply names the call it answers
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
