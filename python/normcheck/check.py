"""Judging a Python kernel in-process: the suite's cases through ``fn``, every element against the
certified oracle with the same bounds, contracts and report as ``normcheck run`` (docs/python.md)."""
import ctypes
import inspect
import json
import threading

from . import _normcheck
from .frameworks import framework_named
from .grouped import GroupedCall

SIGNATURES = {
    "layernorm_forward": "fn(x, gamma, beta, eps) -> y",
    "layernorm_backward": "fn(x, gamma, beta, eps, dy) -> (dx, dgamma, dbeta)",
    "rmsnorm_forward": "fn(x, gamma, eps) -> y",
    "rmsnorm_backward": "fn(x, gamma, eps, dy) -> (dx, dgamma)",
    "gemma_rmsnorm_forward": "fn(x, w, eps) -> y = x r (1 + w)  [Gemma's RMSNorm: the kernel forms 1 + w]",
    "gemma_rmsnorm_backward": "fn(x, w, eps, dy) -> (dx, dw)",
}
# Every per-op kernel may also take a dtype keyword (the storage dtype) and return None to decline.

# The other sections' ops: the call travels as the serve protocol's request (docs/plugins.md) and is
# judged by that section, as `normcheck run --serve CMD --ops OP` judges a serve command.
SECTION_SIGNATURES = {
    "layernorm_jvp": "fn(x, gamma, beta, eps, dx, dgamma, dbeta) -> du",
    "rmsnorm_jvp": "fn(x, gamma, eps, dx, dgamma) -> du",
    "linear_rmsnorm": "fn(x, g, w, b, eps, dy) -> (y, dx, dw, dg)  [b is None without bias; check(..., block_form=...)]",
    "qr_contraction": "fn(x, D, R, c, n, eps, dy) -> (f, dx)  [dy is None: return f]",
    "grouped_norm": "fn(call: normcheck.GroupedCall) -> dict of outputs, or None to decline the call",
    "axis_audit": "the grouped_norm kernel, probed (gamma = 1, beta = 0, dy = 0) for the axes it normalizes over",
}

FAILING_VERDICTS = _normcheck.FAILING_VERDICTS  # the C++ list (src/report/verdicts.hpp)


_SECTION_KEYS = {"layernorm_jvp": "layernorm_jvp", "rmsnorm_jvp": "rmsnorm_jvp", "linear_rmsnorm": "rms_block", "qr_contraction": "qr_contraction",
                 "grouped_norm": "grouped_norm", "axis_audit": "axis_audit"}


class KernelTimeout(BaseException):
    """Raised inside a kernel call that ran past ``check(..., timeout=...)``. A BaseException, so that
    a kernel's own ``except Exception`` does not swallow it; the call is recorded as a kernel failure."""


def _call_with_timeout(fn, timeout, *args):
    """fn(*args), interrupted with KernelTimeout after ``timeout`` seconds (None: never). The
    interruption is an asynchronous exception in the calling thread: it stops Python code and
    interruptible waits, not a kernel blocked inside C code that never returns to the interpreter
    (run such a kernel in serve mode, where a hung process is killed; docs/python.md)."""
    if timeout is None:
        return fn(*args)
    lock, state, tid = threading.Lock(), {"done": False}, threading.get_ident()

    def interrupt():
        with lock:
            if not state["done"]:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(KernelTimeout))

    timer = threading.Timer(timeout, interrupt)
    timer.daemon = True
    try:
        try:
            timer.start()
            return fn(*args)
        finally:
            with lock:
                state["done"] = True
            timer.cancel()
    except KernelTimeout:
        raise RuntimeError(f"timed out after {timeout} s (interrupted)") from None


class NormcheckFailure(AssertionError):
    """A kernel failed its contract: the message names the worst element and how to rebuild the case."""


def takes_dtype(fn):
    """True if ``fn`` accepts a ``dtype`` keyword (a parameter of that name, or ``**kwargs``): it is then
    called with ``dtype="bf16"`` (the storage dtype, "f16", "bf16", "f32" or "f64"), so that a NumPy
    kernel, which receives float32 arrays for both bf16 and f32, knows which rounding it owes."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return any(p.kind == p.VAR_KEYWORD or (p.name == "dtype" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)) for p in params)


def _with_dtype(fn, timeout):
    """fn(*args) under the timeout, with dtype= where fn takes it: (dtype, *args) -> outputs."""
    wants_dtype = takes_dtype(fn)
    if wants_dtype:
        return lambda dtype, *args: _call_with_timeout(lambda *a: fn(*a, dtype=dtype), timeout, *args)
    return lambda dtype, *args: _call_with_timeout(fn, timeout, *args)


def _adapter(fn, framework, timeout=None):
    call_fn = _with_dtype(fn, timeout)

    def call(op, dtype, case):
        fn = lambda *args: call_fn(dtype, *args)  # noqa: E731
        to = lambda name: framework.to_kernel(case[name], dtype)  # noqa: E731
        # the op's inputs in its spec's order, eps after the tensors and parameters, before the cotangent
        inputs = _normcheck.op_inputs(op)
        args = [to(name) for name, cotangent in inputs if not cotangent] + [float(case["eps"])]
        outs = fn(*args, *[to(name) for name, cotangent in inputs if cotangent])
        if outs is None:  # the kernel declines this op or dtype: counted as not run, never judged
            return None
        names = list(_normcheck.op_outputs(op))
        if len(names) == 1 and not isinstance(outs, (tuple, list)):
            outs = (outs,)
        rows, n = (int(d) for d in case["x"].shape)
        shapes = {"y": (rows, n), "dx": (rows, n), "dgamma": (n,), "dbeta": (n,)}
        # each output in its own shape: a transposed (n, rows) y has the right size and the wrong layout
        return [_shaped(framework, o, dtype, name, shapes[name]) for o, name in zip(outs, names)]

    return call


def _shape_text(wc):
    if isinstance(wc.get("shape"), list):
        return " x ".join(str(d) for d in wc["shape"])
    if "d" in wc:
        return f"{wc.get('rows')} x {wc.get('d')} -> {wc.get('m')}"
    return f"{wc.get('rows')} x {wc.get('n')}"


def _shaped(framework, out, dtype, name, shape):
    got = tuple(getattr(out, "shape", ()))
    if got != tuple(shape):
        raise ValueError(f"{name} has shape {got}, expected {tuple(shape)}")
    return framework.from_kernel(out, dtype, name)


def _section_adapter(fn, op, framework, timeout=None):
    """The callable as an in-process serve command: (op, dtype, manifest, inputs, outputs) -> dict."""
    call_fn = _with_dtype(fn, timeout)

    def call(wire_op, dtype, manifest_json, inputs, outputs):
        fn = lambda *args: call_fn(dtype, *args)  # noqa: E731
        m = json.loads(manifest_json)
        t = {name: framework.to_kernel(a, dtype) for name, a in inputs.items()}
        eps = float.fromhex(m["eps_hex"])
        if op in ("grouped_norm", "axis_audit"):
            outs = fn(GroupedCall(m, t, framework, dtype))
            if outs is None:
                return None
            return {name: _shaped(framework, outs[name], dtype, name, shape) for name, shape in outputs if name in outs}
        if op == "layernorm_jvp":
            outs = fn(t["x"], t["gamma"], t["beta"], eps, t["dx"], t["dgamma"], t["dbeta"])
        elif op == "rmsnorm_jvp":
            outs = fn(t["x"], t["gamma"], eps, t["dx"], t["dgamma"])
        elif op == "linear_rmsnorm":
            outs = fn(t["x"], t["g"], t["w"], t.get("b"), eps, t["dy"])
        else:
            outs = fn(t["x"], t["D"], t["R"], t["c"], int(m["n"]), eps, t.get("dy"))
        if outs is None:
            return None
        if len(outputs) == 1 and not isinstance(outs, (tuple, list)):
            outs = (outs,)
        if len(outs) != len(outputs):
            raise ValueError(f"returned {len(outs)} outputs, expected {len(outputs)} ({', '.join(n for n, _ in outputs)})")
        return {name: _shaped(framework, o, dtype, name, shape) for (name, shape), o in zip(outputs, outs)}

    return call


class CheckResult:
    """The report of one ``check``: ``passed``, ``records`` (dicts, the report's schema), ``report``."""

    def __init__(self, report, section="records"):
        self.report = report
        self.section = section
        # a section's report also holds what it measures beside the kernel (the QR contraction's original
        # block): the records are the judged kernel's
        if section == "records":
            self.records = report[section]
        elif section == "axis_audit":  # one record per probed (kind, layout, dtype), all of the kernel
            self.records = report[section]["records"]
        else:
            self.records = [r for r in report[section]["records"] if str(r.get("kernel", "")).startswith("python:")]
        # check(..., invariance=True): the batch_invariance section's records of the kernel
        section_inv = report.get("batch_invariance") if section == "records" else None
        self.invariance_records = list(section_inv["records"]) if isinstance(section_inv, dict) else []
        for r in self.invariance_records:
            kernel = str(r.get("kernel", "python:kernel")).split(":", 1)[-1]
            r["replay"] = f"normcheck.check({kernel}, op={r.get('op')!r}, dtypes=({r.get('storage')!r},), invariance=True)"
        for r in self.records:  # no report file names these records: the replay is a Python line
            wc = r.get("worst_case")
            if isinstance(wc, dict) and "replay" in wc:
                wc["replay"] = self._python_replay(r)

    def _python_replay(self, record):
        """The Python line that judges the record's worst case again (the kernel by its name)."""
        wc = record.get("worst_case") or {}
        kernel = str(record.get("kernel", "python:kernel")).split(":", 1)[-1]
        if self.section == "records":
            generator = record["property"].split("/", 1)[-1]
            case = (f"normcheck.generate({generator!r}, {record['storage']!r}, {wc.get('case_seed')}, "
                    f"max_elements={self.report['config']['shape']['max_elements']})")
            return f"normcheck.judge({case}, {record['op']!r}, {kernel})"
        return f"normcheck.check({kernel}, op={record['op']!r}, seed={self.report['config'].get('seed')})"

    @property
    def passed(self):
        return bool(self.report["run"]["passed"])

    @property
    def failing_records(self):
        """Records whose verdict is a failure (report-only records included)."""
        if self.section == "axis_audit":
            return [r for r in self.records if not r["kernel"]["as_expected"]]
        return [r for r in self.records + self.invariance_records if r["verdict"] in FAILING_VERDICTS]

    def save(self, path):
        """Writes the report (schema reports/schema/report.v1.schema.json)."""
        with open(path, "w") as f:
            json.dump(self.report, f)

    @property
    def loose_elements(self):
        """Judged elements whose bound admits 100 % of |exact| or more (docs/bounds.md section 15.7): where
        the contract's arithmetic cannot resolve the row a sound kernel may be that far off, and such an
        error passes. The sum of the records' ``loose_elements``."""
        return sum(int(r.get("loose_elements", 0) or 0) for r in self.records)

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
        if self.section == "axis_audit":
            k, d = record["kernel"], record["declared"]
            what = k.get("verdict") or f"kernel failure: {k.get('failure')}"
            affine = (k.get("affine") or {}).get("verdict")
            return (f"{self.report['axis_audit'].get('kernel')} axis_audit {d['kind']} on {d['layout']} {record['tensor']['shape']} "
                    f"{k.get('dtype')}: {what}" + (f"; affine: {affine}" if affine else ""))
        if record in self.invariance_records:
            d = record.get("difference") or {}
            where = (f": {d.get('output')} element {d.get('col')} of row {d.get('row')}: {d.get('config_a')} gives {d.get('a')}, "
                     f"{d.get('config_b')} gives {d.get('b')}" if d else (f": {record.get('failure')}" if record.get("failure") else ""))
            return (f"{record['kernel']} batch_invariance {record['op']} {record['storage']}: {record['verdict']}{where}\n"
                    f"  replay: {record['replay']}")
        wc = record.get("worst_case") or {}
        e = wc.get("element") or {}
        if "property" in record:
            generator = record["property"].split("/", 1)[-1]
        else:  # grouped records: a kind on a layout
            generator = f"{record.get('kind')} on layout {wc.get('layout')}"
        lines = [
            f"{record['kernel']} {record['op']}/{record['output']} {record['storage']}: {record['verdict']} "
            f"({record['failed_cases']} of {record['cases']} cases) on generator {generator}",
        ]
        if record.get("loose_elements"):
            lines.append(f"  {record['loose_elements']} of its elements have a bound of 100 % of |exact| or more (docs/bounds.md "
                         "15.7): there a sound kernel may be that far off")
        if record.get("kernel_failures", {}).get("first"):
            lines.append(f"  kernel failure: {record['kernel_failures']['first']}")
        if e:
            lines += [
                f"  worst element: case {wc.get('case_index', '-')} (seed {wc.get('case_seed')}, {_shape_text(wc)}), "
                f"row {e.get('row')}, col {e.get('col')}",
                f"  kernel {e.get('kernel_decimal')} ({e.get('kernel')})  exact {e.get('oracle_decimal')} "
                f"(correctly rounded {e.get('oracle_rounded')})",
                f"  error {e.get('ulp_error')} ulp, bound {e.get('bound')} -> error/bound {e.get('bound_ratio')}",
            ]
            got, exact = e.get("kernel"), e.get("oracle_rounded")
            if got in ("nan", "inf", "-inf") and exact not in (None, "nan", "inf", "-inf"):
                word = {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[got]
                lines.append(f"  the kernel returned {word} where the exact value is finite: always a failure, whatever the bound")
            if self.section == "records":
                lines.append(f"  replay: {self._python_replay(record)}" + ("" if generator != "corpus" else "  (corpus: the case index is the seed)"))
            else:
                lines.append(f"  replay: the {self.section} section's case of seed {wc.get('case_seed')}: "
                             f"{self._python_replay(record)} runs it again")
        return "\n".join(lines)

    def raise_for_failures(self):
        """Raises NormcheckFailure naming the worst element when the check did not pass."""
        __tracebackhide__ = True  # pytest: the failure points at the caller's line, not normcheck's frames
        if self.passed:
            return
        worst = self.worst()
        failing = self.failing_records
        head = f"normcheck: {len(failing)} of {len(self.records) + len(self.invariance_records)} records failed"
        if worst is None:
            raise NormcheckFailure(head + " (nothing was judged: the kernel declined or failed every case)")
        # the first line is what pytest's short summary shows: the verdict and the worst record in it
        ratio = ((worst.get("worst_case") or {}).get("element") or {}).get("bound_ratio")
        summary = (f"{worst.get('op')} {worst.get('storage')} {worst.get('verdict')}" if worst in self.invariance_records
                   else f"{worst.get('op')}/{worst.get('output')} {worst.get('storage')} {worst.get('verdict')}")
        if ratio is not None:
            summary += f", error/bound {ratio}"
        raise NormcheckFailure(f"{head}, worst {summary}\n" + self.describe(worst))

    def __repr__(self):
        total = len(self.records) + len(self.invariance_records)
        return f"<CheckResult {'PASSED' if self.passed else 'FAILED'}: {total} records, {len(self.failing_records)} failing>"


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _check_arguments(seed, cases, max_elements, name):
    """One ValueError naming the argument for what the native layer would refuse with a long TypeError."""
    if seed is not None and not (_is_int(seed) and 0 <= seed < 2**64):
        raise ValueError(f"seed is an integer from 0 to 2**64 - 1 or None, not {seed!r}")
    if cases is not None and not (_is_int(cases) and 1 <= cases <= 1_000_000):
        raise ValueError(f"cases is an integer from 1 to 1000000 or None, not {cases!r}")
    if max_elements is not None and not (_is_int(max_elements) and 1 <= max_elements <= _normcheck.MAX_CASE_ELEMENTS):
        raise ValueError(f"max_elements is an integer from 1 to {_normcheck.MAX_CASE_ELEMENTS} or None, not {max_elements!r}")
    if name is not None and not (isinstance(name, str) and name.isidentifier() and len(name) <= 64):
        raise ValueError(f"name is an identifier of at most 64 characters (it names the kernel in the report), not {name!r}")


def check(fn, op="layernorm_forward", dtypes=("bf16", "f32"), suite="quick", cases=None, seed=None, framework="numpy",
          device="cpu", report_only=False, generators=None, name=None, max_elements=None, block_form=None, contract="auto",
          timeout=60.0, invariance=False):
    """Judges ``fn`` (signature by op: ``SIGNATURES``, ``SECTION_SIGNATURES``) on the suite's cases of
    ``op`` in each dtype, in this process: for the per-op ops its row generators and the committed
    corpus, for the others that section's cases (docs/python.md). ``cases``: cases per generator
    (default: the suite's); ``generators``: a subset of ``row_generators()`` (per-op) or of the block's
    or contraction's generators; ``report_only``: records never fail the run (verdicts are still
    computed); ``block_form``: what a ``linear_rmsnorm`` kernel computes; ``contract``: the class of a
    LayerNorm kernel's statistics, "auto" (the two-pass contract, and where the kernel fails it the
    Welford class's, reported as verdict "looser_contract"), "two_pass" or "welford" (docs/bounds.md
    section 2.7); ``timeout``: seconds a kernel call may take before it is interrupted and recorded as a
    kernel failure (None: no limit); ``invariance``: also check the per-op kernel's determinism and batch
    invariance as ``normcheck run`` checks an external kernel's (docs/invariance.md: the same row must
    give the same bits whatever the batch, position, padding or call; records in ``invariance_records``). Ctrl-C (KeyboardInterrupt) or sys.exit (SystemExit) inside the kernel
    stops the check and is raised again from it: they are never recorded as the kernel's failures.
    Returns a CheckResult."""
    _check_arguments(seed=seed, cases=cases, max_elements=max_elements, name=name)
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and 0 < timeout < float("inf")):
        raise ValueError(f"timeout is a positive number of seconds or None, not {timeout!r}")
    if contract not in ("auto", "two_pass", "welford"):
        raise ValueError(f"contract is 'auto', 'two_pass' or 'welford', not {contract!r}")
    if op not in SIGNATURES and op not in SECTION_SIGNATURES:
        raise ValueError(f"unknown op {op!r} ({', '.join(list(SIGNATURES) + list(SECTION_SIGNATURES))})")
    fw = framework_named(framework, device)
    if name is None:
        name = getattr(fn, "__name__", "kernel")
        name = name if name.isidentifier() else "kernel"  # a lambda is "<lambda>"
    if op in SIGNATURES:
        if block_form is not None:
            raise ValueError("block_form is for op='linear_rmsnorm'")
        text = _normcheck.check_kernel(_adapter(fn, fw, timeout), name, op, list(dtypes), suite, cases,
                                       seed, list(generators or []), bool(report_only), int(max_elements or 0), contract,
                                       bool(invariance))
        return CheckResult(json.loads(text))
    if invariance:
        raise ValueError(f"invariance checks the per-op ops ({', '.join(SIGNATURES)}); op={op!r} has its section's checks")
    if max_elements is not None:
        raise ValueError(f"max_elements narrows the per-op cases only; op={op!r} uses its suite's shapes")
    if contract != "auto":
        raise ValueError(f"contract chooses the bound of the LayerNorm ops; op={op!r} has its section's bound")
    if op == "linear_rmsnorm" and block_form not in ("composed", "deferred"):
        raise ValueError("op='linear_rmsnorm' needs block_form='composed' or 'deferred': the form your kernel computes "
                         "chooses its bound (docs/bounds.md section 11)")
    if op != "linear_rmsnorm" and block_form is not None:
        raise ValueError("block_form is for op='linear_rmsnorm'")
    text = _normcheck.check_section(_section_adapter(fn, op, fw, timeout), name, op, list(dtypes), suite, cases, seed,
                                    list(generators or []), bool(report_only), block_form or "")
    return CheckResult(json.loads(text), section=_SECTION_KEYS[op])
