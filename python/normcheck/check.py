"""Judging a Python kernel in-process: the suite's cases through ``fn``, every element against the
certified oracle with the same bounds, contracts and report as ``normcheck run`` (docs/python.md)."""
import json

from . import _normcheck
from .frameworks import framework_named

SIGNATURES = {
    "layernorm_forward": "fn(x, gamma, beta, eps) -> y",
    "layernorm_backward": "fn(x, gamma, beta, eps, dy) -> (dx, dgamma, dbeta)",
    "rmsnorm_forward": "fn(x, gamma, eps) -> y",
    "rmsnorm_backward": "fn(x, gamma, eps, dy) -> (dx, dgamma)",
}

FAILING_VERDICTS = _normcheck.FAILING_VERDICTS  # the C++ list (src/report/verdicts.hpp)


class NormcheckFailure(AssertionError):
    """A kernel failed its contract: the message names the worst element and how to rebuild the case."""


def _adapter(fn, framework):
    def call(op, dtype, case):
        to = lambda name: framework.to_kernel(case[name], dtype)  # noqa: E731
        eps = float(case["eps"])
        if op == "layernorm_forward":
            outs = fn(to("x"), to("gamma"), to("beta"), eps)
        elif op == "layernorm_backward":
            outs = fn(to("x"), to("gamma"), to("beta"), eps, to("dy"))
        elif op == "rmsnorm_forward":
            outs = fn(to("x"), to("gamma"), eps)
        else:
            outs = fn(to("x"), to("gamma"), eps, to("dy"))
        names = list(_normcheck.op_outputs(op))
        if len(names) == 1 and not isinstance(outs, (tuple, list)):
            outs = (outs,)
        return [framework.from_kernel(o, dtype, name) for o, name in zip(outs, names)]

    return call


class CheckResult:
    """The report of one ``check``: ``passed``, ``records`` (dicts, the report's schema), ``report``."""

    def __init__(self, report):
        self.report = report
        self.records = report["records"]

    @property
    def passed(self):
        return bool(self.report["run"]["passed"])

    @property
    def failing_records(self):
        """Records whose verdict is a failure (report-only records included)."""
        return [r for r in self.records if r["verdict"] in FAILING_VERDICTS]

    def save(self, path):
        """Writes the report (schema reports/schema/report.v1.schema.json)."""
        with open(path, "w") as f:
            json.dump(self.report, f)

    def worst(self):
        """The failing record with the largest error/bound ratio (None if none failed)."""
        failing = self.failing_records
        if not failing:
            return None
        def ratio(r):
            wc = r.get("worst_case") or {}
            value = (wc.get("element") or {}).get("bound_ratio", 0)
            return value if isinstance(value, (int, float)) else float("inf")
        return max(failing, key=ratio)

    def describe(self, record):
        """Why a record failed: op, output, dtype, generator, case, worst element, bound, reproduction."""
        wc = record.get("worst_case") or {}
        e = wc.get("element") or {}
        generator = record["property"].split("/", 1)[-1]
        lines = [
            f"{record['kernel']} {record['op']}/{record['output']} {record['storage']}: {record['verdict']} "
            f"({record['failed_cases']} of {record['cases']} cases) on generator {generator}",
        ]
        if record.get("kernel_failures", {}).get("first"):
            lines.append(f"  kernel failure: {record['kernel_failures']['first']}")
        if e:
            lines += [
                f"  worst element: case {wc.get('case_index')} (seed {wc.get('case_seed')}, {wc.get('rows')} x {wc.get('n')}), "
                f"row {e.get('row')}, col {e.get('col')}",
                f"  kernel {e.get('kernel_decimal')} ({e.get('kernel')})  exact {e.get('oracle_decimal')} "
                f"(correctly rounded {e.get('oracle_rounded')})",
                f"  error {e.get('ulp_error')} ulp, bound {e.get('bound')} -> error/bound {e.get('bound_ratio')}",
                f"  rebuild: normcheck.generate({generator!r}, {record['storage']!r}, {wc.get('case_seed')}, "
                f"max_elements={self.report['config']['shape']['max_elements']})"
                + ("" if generator != "corpus" else "  (corpus: the case index is the seed)"),
            ]
        return "\n".join(lines)

    def raise_for_failures(self):
        """Raises NormcheckFailure naming the worst element when the check did not pass."""
        if self.passed:
            return
        worst = self.worst()
        failing = self.failing_records
        head = f"normcheck: {len(failing)} of {len(self.records)} records failed"
        if worst is None:
            raise NormcheckFailure(head + " (nothing was judged: the kernel declined or failed every case)")
        raise NormcheckFailure(head + "; the worst:\n" + self.describe(worst))

    def __repr__(self):
        return f"<CheckResult {'PASSED' if self.passed else 'FAILED'}: {len(self.records)} records, {len(self.failing_records)} failing>"


def check(fn, op="layernorm_forward", dtypes=("bf16", "f32"), suite="quick", cases=None, seed=None, framework="numpy",
          device="cpu", report_only=False, generators=None, name=None, max_elements=None):
    """Judges ``fn`` (signature by op: ``SIGNATURES``) on the suite's per-op cases (its row generators
    and the committed corpus) in each dtype, in this process. ``cases``: cases per generator (default:
    the suite's); ``generators``: a subset of ``row_generators()``; ``report_only``: records never fail
    the run (verdicts are still computed). Returns a CheckResult."""
    if op not in SIGNATURES:
        raise ValueError(f"unknown op {op!r} ({', '.join(SIGNATURES)})")
    adapter = _adapter(fn, framework_named(framework, device))
    if name is None:
        name = getattr(fn, "__name__", "kernel")
        name = name if name.isidentifier() else "kernel"  # a lambda is "<lambda>"
    text = _normcheck.check_kernel(adapter, name, op, list(dtypes), suite, cases,
                                   seed, list(generators or []), bool(report_only), int(max_elements or 0))
    return CheckResult(json.loads(text))
