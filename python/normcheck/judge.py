"""Judging one case: ``normcheck.judge(case, op, outputs)`` judges a kernel's outputs on one case as
``check`` judges each of its cases (certified reference, the verdict bound of docs/bounds.md, the
contract), element by element, so that a Hypothesis or pytest test can assert on normcheck's bound
instead of an assert_allclose tolerance (docs/python.md)."""
import numpy as np

from . import _normcheck
from .check import NormcheckFailure, _adapter
from .frameworks import framework_named


def _as_float64(a):
    if hasattr(a, "detach"):  # a torch tensor (bf16 included): its values, exactly, as float64
        a = a.detach().to("cpu").double().numpy()
    return np.asarray(a, dtype=np.float64)


def _outputs_dict(op, outputs):
    names = list(_normcheck.op_outputs(op))
    if isinstance(outputs, dict):
        return {k: _as_float64(v) for k, v in outputs.items()}
    if not isinstance(outputs, (tuple, list)):
        outputs = (outputs,)
    if len(outputs) != len(names):
        raise ValueError(f"{op} has {len(names)} outputs ({', '.join(names)}), got {len(outputs)}")
    return {name: _as_float64(o) for name, o in zip(names, outputs)}


class Judgement:
    """One case judged: ``passed``; per output (``outputs[name]``) its verdict ("pass", "fail",
    "looser_contract") and, element by element, ``exact`` (the correctly rounded value), ``bound``,
    ``error``, ``error_over_bound``, ``failing``, ``judged_by_envelope`` and
    ``admits_full_relative_error`` (a bound of 100 % or more of |exact|: legitimately loose there)."""

    def __init__(self, op, case, raw):
        self.op = op
        self.case = case
        self.passed = bool(raw.pop("passed"))
        self.bound_id = raw.pop("bound_id")
        self.precision_bits = raw.pop("precision_bits")
        self.oracle_max_err_ulps = raw.pop("oracle_max_err_ulps")
        self.outputs = raw

    def _case_text(self):
        c = self.case
        rows, n = (int(d) for d in np.shape(c["x"]))
        origin = f", {c['generator']} seed {c['seed']}" if "generator" in c and "seed" in c else ""
        return f"{self.op} {c['dtype']} {rows} x {n}{origin}"

    def describe(self):
        """The verdict per output and, where one fails, its worst element in hexfloat."""
        lines = [f"{self._case_text()}: {'passed' if self.passed else 'FAILED'} (bound {self.bound_id})"]
        for name, d in self.outputs.items():
            k = int(d["worst_index"])
            line = f"  {name}: {d['verdict']}, max error/bound {d['max_error_over_bound']:.4g}"
            if d["verdict"] != "pass" and k >= 0:
                shape = d["exact"].shape
                where = np.unravel_index(k, shape)
                exact, bound, err = (float(d[f].reshape(-1)[k]) for f in ("exact", "bound", "error"))
                line += (f"; worst element {tuple(int(i) for i in where)}: exact {exact.hex()}, error {err:.6g}, "
                         f"bound {bound.hex()}")
            lines.append(line)
        return "\n".join(lines)

    def raise_for_failures(self):
        """Raises NormcheckFailure with ``describe()`` when an output failed."""
        __tracebackhide__ = True  # pytest: the failure points at the caller, not here
        if not self.passed:
            raise NormcheckFailure(self.describe())

    def __repr__(self):
        worst = max((d["max_error_over_bound"] for d in self.outputs.values()), default=0.0)
        return f"<Judgement {'PASSED' if self.passed else 'FAILED'}: {self._case_text()}, max error/bound {worst:.4g}>"


def judge(case, op, outputs, contract="auto", framework="numpy", device="cpu"):
    """Judges ``outputs`` of ``op`` on ``case`` (a dict as ``normcheck.generate`` returns: x, gamma,
    beta, dy, eps, dtype). ``outputs``: a dict by output name, a tuple in ``op_outputs`` order, one
    array for a single-output op, or the kernel itself (called as ``check`` calls it, with the dtype
    keyword when it takes one). ``contract`` as in ``check``. Returns a Judgement."""
    if op not in _normcheck.op_names():
        raise ValueError(f"unknown op {op!r} ({', '.join(_normcheck.op_names())})")
    if not isinstance(case, dict):
        raise TypeError("case is a dict as normcheck.generate returns (x, gamma, beta, dy, eps, dtype)")
    for name in ["x", "eps", "dtype"] + [n for n, _ in _normcheck.op_inputs(op)]:
        if name not in case:
            raise ValueError(f"the case has no {name!r} ({op} takes one; normcheck.generate makes whole cases)")
    if callable(outputs):
        fw = framework_named(framework, device)
        got = _adapter(outputs, fw)(op, case["dtype"], case)
        if got is None:
            raise ValueError("the kernel declined this case (returned None): nothing to judge")
        outputs = got
    return Judgement(op, case, _normcheck.judge(op, case, _outputs_dict(op, outputs), contract))
