"""The Python module (issue 18): the certified reference as a function, in-process judging of Python
kernels (a correct one passes, a planted wrong one fails naming its worst element), bad input
refused, Hypothesis strategies on the harness's generators, torch kernels judged report-only."""
import json

import numpy as np
import pytest
from hypothesis import given, settings

import normcheck
from normcheck import strategies
from normcheck.testing import assert_accurate


def ln_float64(x, gamma, beta, eps):
    """LayerNorm in float64, two passes."""
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * np.asarray(gamma, np.float64) + np.asarray(beta, np.float64)


def good_layer_norm(x, gamma, beta, eps):
    """A correct kernel: float64 arithmetic, rounded once to the input's dtype."""
    return ln_float64(x, gamma, beta, eps).astype(x.dtype)


def one_pass_layer_norm(x, gamma, beta, eps):
    """The textbook one-pass variance E[x^2] - E[x]^2, in the storage dtype: wrong on large means."""
    mean = x.mean(axis=1, keepdims=True, dtype=x.dtype)
    var = (x * x).mean(axis=1, keepdims=True, dtype=x.dtype) - mean * mean
    return ((x - mean) / np.sqrt(np.maximum(var, 0) + x.dtype.type(eps)) * gamma + beta).astype(x.dtype)


def test_the_reference_is_certified_and_agrees_with_float64():
    c = normcheck.generate("normal", "f32", 7, rows=4, n=64)
    ref = normcheck.reference.layer_norm(c["x"], c["gamma"], c["beta"], c["eps"], "f32", dy=c["dy"])
    assert set(ref) >= {"y", "dx", "dgamma", "dbeta", "precision_bits", "max_err_ulps"}
    assert ref["max_err_ulps"] <= 1e-3
    y = ref["y"]
    assert y["rounded"].shape == (4, 64) and y["decided"].all()
    exact = y["hi"] + y["lo"]
    f64 = ln_float64(c["x"], c["gamma"], c["beta"], c["eps"])
    assert np.max(np.abs(exact - f64)) <= 1e-12 * np.max(np.abs(f64))
    assert np.all(np.abs(y["rounded"] - exact) <= np.spacing(np.abs(y["rounded"]).astype(np.float32)))  # within an f32 ulp
    assert np.array_equal(y["rounded"].astype(np.float32).astype(np.float64), y["rounded"])  # f32 values


def test_the_rms_reference_and_bf16_bits():
    c = normcheck.generate("normal", "bf16", 3, rows=2, n=32)
    ref = normcheck.reference.rms_norm(c["x"], c["gamma"], c["eps"], "bf16", dy=c["dy"])
    assert set(ref) >= {"y", "dx", "dgamma"} and "dbeta" not in ref
    bits = normcheck.reference.bf16_bits(ref["y"]["rounded"])
    assert bits.dtype == np.uint16
    back = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    assert np.array_equal(back, ref["y"]["rounded"])


@pytest.mark.parametrize("bad, message", [
    (dict(eps=0.0), "eps"),
    (dict(gamma=np.ones(3)), "gamma"),
    (dict(x=np.full((2, 4), 1.0 + 2.0 ** -20)), "representable"),
])
def test_the_reference_refuses_bad_input(bad, message):
    args = dict(x=np.ones((2, 4)), gamma=np.ones(4), beta=np.zeros(4), eps=1e-5)
    args.update(bad)
    with pytest.raises(ValueError, match=message):
        normcheck.reference.layer_norm(args["x"], args["gamma"], args["beta"], args["eps"], "bf16")


def test_a_correct_kernel_passes_in_every_numpy_dtype():
    result = assert_accurate(good_layer_norm, op="layernorm_forward", dtypes=("f16", "f32", "f64"), suite="quick")
    assert result.passed and not result.failing_records
    assert {r["storage"] for r in result.records} == {"f16", "f32", "f64"}
    assert all(r["kernel"] == "python:good_layer_norm" for r in result.records)
    assert sum(r["elements"] for r in result.records) > 10000


def test_a_planted_one_pass_variance_fails_naming_its_worst_element(tmp_path):
    result = normcheck.check(one_pass_layer_norm, dtypes=("f32",), suite="quick")
    assert not result.passed
    generators = {r["property"] for r in result.failing_records}
    assert "accuracy/large_mean" in generators
    with pytest.raises(normcheck.NormcheckFailure) as info:
        result.raise_for_failures()
    message = str(info.value)
    for word in ("worst element", "row", "col", "kernel", "exact", "bound", "normcheck.generate("):
        assert word in message, message
    result.save(tmp_path / "report.json")
    assert json.loads((tmp_path / "report.json").read_text())["run"]["passed"] is False


def test_a_kernel_that_raises_or_returns_the_wrong_dtype_is_a_kernel_failure():
    def raises(x, gamma, beta, eps):
        raise RuntimeError("boom")

    def wrong_dtype(x, gamma, beta, eps):
        return ln_float64(x, gamma, beta, eps)  # float64 for an f32 op: never rounded silently

    for fn, text in ((raises, "boom"), (wrong_dtype, "float64")):
        result = normcheck.check(fn, dtypes=("f32",), suite="quick", generators=("normal",), cases=1)
        assert not result.passed
        assert any(text in (r["kernel_failures"].get("first") or "") for r in result.records), fn.__name__


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        normcheck.check(good_layer_norm, op="layernorm_sideways")
    with pytest.raises(ValueError):
        normcheck.check(good_layer_norm, dtypes=("f8",))
    with pytest.raises(ValueError):
        normcheck.check(good_layer_norm, suite="weekly")
    with pytest.raises(ValueError):
        normcheck.check(good_layer_norm, generators=("gaussian",))


@settings(max_examples=25, deadline=None)
@given(strategies.layernorm_case(dtype="f16", max_elements=512))
def test_hypothesis_cases_hold_f16_values_and_are_certified(case):
    x = case["x"]
    assert np.array_equal(x.astype(np.float16).astype(np.float64), x)
    ref = normcheck.reference.layer_norm(x, case["gamma"], case["beta"], case["eps"], "f16")
    assert ref["max_err_ulps"] <= 1e-3


torch = pytest.importorskip("torch")


def test_torch_layer_norm_is_judged_report_only_in_f32_bf16_and_f64():
    def torch_layer_norm(x, gamma, beta, eps):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), gamma, beta, eps)

    result = normcheck.check(torch_layer_norm, dtypes=("f32", "bf16", "f64"), framework="torch", report_only=True)
    assert result.passed  # report-only: verdicts are recorded, the run is not failed by them
    assert {r["storage"] for r in result.records} == {"f32", "bf16", "f64"}
    assert all(r["expectation"] == "report_only" for r in result.records)
    assert sum(r["elements"] for r in result.records) > 0


def test_a_torch_one_pass_variance_fails_in_f32():
    def torch_one_pass(x, gamma, beta, eps):
        mean = x.mean(dim=-1, keepdim=True)
        var = (x * x).mean(dim=-1, keepdim=True) - mean * mean
        return (x - mean) / torch.sqrt(var.clamp_min(0) + eps) * gamma + beta

    result = normcheck.check(torch_one_pass, dtypes=("f32",), framework="torch", generators=("large_mean",))
    assert not result.passed
    assert result.failing_records


def test_the_readme_quick_start_works_as_printed():
    import pathlib
    import re

    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"## Python quick start.*?```python\n(.*?)```", readme, re.S)
    assert block, "README has no Python quick start"
    namespace = {}
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.group(1), "README.md", "exec"), namespace)  # raises if the kernel is judged wrong
    assert namespace["result"].passed
    # what the snippet says it prints (the comment after print(...)) is what it printed
    claimed = [line.split("# ", 1)[1].strip() for line in block.group(1).splitlines() if line.startswith("print(") and "# " in line]
    assert claimed == [printed.getvalue().strip()], (claimed, printed.getvalue())


@pytest.mark.normcheck(op="layernorm_forward", dtypes=("f32",), suite="quick", generators=("normal", "large_mean"))
def test_the_fixture_and_marker_work_without_configuration(normcheck):
    # No conftest and no -p option: pytest loaded the plugin from the package's entry point.
    result = normcheck(good_layer_norm)
    assert result.passed
    assert {r["storage"] for r in result.records} == {"f32"}  # the marker's dtypes
    with pytest.raises(AssertionError) as failure:
        normcheck(one_pass_layer_norm)  # the marker's generators include large_mean, where it breaks
    assert "worst element" in str(failure.value)


def chunked_welford_layer_norm(x, gamma, beta, eps):
    """A sound kernel that is not two-pass: Welford over chunks of 4 in float32, the chunks merged by Chan's
    formula (PyTorch's combine), then the affine map in float32 (issue 42 item 3)."""
    x = np.asarray(x, dtype=np.float32)
    one = np.float32(1)
    means, m2s = [], []
    for row in x:
        count, mean, m2 = np.float32(0), np.float32(0), np.float32(0)
        for lo in range(0, len(row), 4):
            cc, cm, cs = np.float32(0), np.float32(0), np.float32(0)
            for v in row[lo:lo + 4]:
                cc = cc + one
                d = v - cm
                cm = cm + d / cc
                cs = cs + d * (v - cm)
            if count == 0:
                count, mean, m2 = cc, cm, cs
                continue
            n = count + cc
            delta = cm - mean
            w = cc / n
            mean, m2, count = mean + delta * w, m2 + cs + delta * delta * count * w, n
        means.append(mean)
        m2s.append(m2 / np.float32(len(row)))
    mean = np.array(means, dtype=np.float32)[:, None]
    r = one / np.sqrt(np.array(m2s, dtype=np.float32)[:, None] + np.float32(eps))
    return ((x - mean) * r * np.asarray(gamma, np.float32) + np.asarray(beta, np.float32)).astype(np.float32)


def test_the_contract_argument_chooses_the_class_and_a_chunked_welford_kernel_is_not_a_plain_failure():
    kwargs = dict(dtypes=("f32",), suite="quick", generators=("overflow_prone", "large_mean", "normal"), cases=2)
    auto = normcheck.check(chunked_welford_layer_norm, **kwargs)
    assert all(r["verdict"] in ("pass", "looser_contract") for r in auto.records), [r["verdict"] for r in auto.records]
    assert all(r["contract"]["chosen"] == "auto" for r in auto.records)
    welford = normcheck.check(chunked_welford_layer_norm, contract="welford", **kwargs)
    assert welford.passed
    assert all(r["bound_id"] == "LN-WELFORDMERGE-ANY[f32/f32]" for r in welford.records)
    assert all(r["contract"]["chosen"] == "welford" for r in welford.records)
    with pytest.raises(ValueError, match="contract"):
        normcheck.check(good_layer_norm, contract="three_pass")


# Issue 48 M6: a kernel call that runs past ``timeout`` is interrupted and recorded as that case's
# kernel failure, and the check goes on; Ctrl-C and sys.exit inside a kernel stop the check and are
# raised again from it (they used to be recorded as kernel failures: a hanging kernel survived five
# SIGINTs).
def _nth_call_misbehaves(n, misbehave):
    calls = [0]

    def kernel(x, gamma, beta, eps):
        calls[0] += 1
        if calls[0] == n:
            misbehave()
        return good_layer_norm(x, gamma, beta, eps)

    return kernel, calls


def _spin_forever():
    while True:
        pass


def test_a_hanging_python_kernel_is_interrupted_at_its_timeout_and_the_check_goes_on():
    kernel, calls = _nth_call_misbehaves(2, _spin_forever)
    result = normcheck.check(kernel, dtypes=("f32",), timeout=0.5)
    failed = [r for r in result.records if r["kernel_failures"]["cases"]]
    assert len(failed) == 1 and failed[0]["kernel_failures"]["cases"] == 1, failed
    assert "timed out after 0.5 s (interrupted)" in failed[0]["kernel_failures"]["first"]
    assert calls[0] > 10  # every later case ran
    assert sum(r["elements"] for r in result.records) > 0


def test_sys_exit_inside_a_kernel_stops_the_check_and_is_raised_again():
    def leave():
        raise SystemExit(5)

    kernel, calls = _nth_call_misbehaves(3, leave)
    with pytest.raises(SystemExit) as exit_info:
        normcheck.check(kernel, dtypes=("f32",))
    assert exit_info.value.code == 5 and calls[0] == 3  # nothing called after it
    assert normcheck.check(good_layer_norm, dtypes=("f32",), cases=1).passed  # the next check is unaffected


def test_ctrl_c_inside_a_kernel_stops_the_check_and_is_raised_again():
    import os
    import signal
    import time

    def interrupt():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # interrupted at once by the KeyboardInterrupt

    for op in ("layernorm_forward", "layernorm_jvp"):
        kernel, calls = _nth_call_misbehaves(3, interrupt)
        fn = kernel if op == "layernorm_forward" else (lambda x, g, b, eps, dx, dg, db: kernel(x, g, b, eps) * 0)
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            normcheck.check(fn, op=op, dtypes=("f32",))
        assert calls[0] == 3 and time.monotonic() - started < 4, op


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan"), "1", True])
def test_a_timeout_that_is_not_a_positive_number_is_refused(timeout):
    with pytest.raises(ValueError, match="timeout is a positive number of seconds or None"):
        normcheck.check(good_layer_norm, dtypes=("f32",), timeout=timeout)


# Issue 48 (low): an output of the right size in the wrong shape (a transposed y) is a kernel failure,
# not a pass; arguments out of range get one ValueError naming them, not a multi-line TypeError.
def test_a_transposed_output_of_the_right_size_is_a_kernel_failure():
    result = normcheck.check(lambda x, g, b, eps: np.ascontiguousarray(good_layer_norm(x, g, b, eps).T), dtypes=("f32",),
                             generators=["normal"], cases=2, max_elements=4096)
    failures = [r["kernel_failures"]["first"] for r in result.records if r["kernel_failures"]["cases"]]
    assert failures and all("y has shape" in f for f in failures), failures
    assert not result.passed


@pytest.mark.parametrize("argument,value", [("seed", -1), ("seed", 2**64), ("cases", 10**12), ("cases", 0), ("max_elements", -5),
                                            ("max_elements", 2**40), ("name", "two words"), ("name", 5), ("seed", 1.5)])
def test_arguments_out_of_range_get_one_value_error_naming_them(argument, value):
    with pytest.raises(ValueError, match=f"^{argument} is "):
        normcheck.check(good_layer_norm, dtypes=("f32",), **{argument: value})


def rounded_layer_norm(x, gamma, beta, eps, dtype):
    """A correct kernel that knows its storage dtype: float64 arithmetic, one rounding to it."""
    return normcheck.round_to(ln_float64(x, gamma, beta, eps), dtype)


def test_a_kernel_taking_dtype_is_told_the_storage_dtype_and_round_to_makes_it_pass_in_bf16():
    seen = set()

    def kernel(x, gamma, beta, eps, dtype):
        seen.add((dtype, x.dtype.name))
        return rounded_layer_norm(x, gamma, beta, eps, dtype)

    result = normcheck.check(kernel, dtypes=("bf16", "f32"), suite="quick", generators=("normal", "large_mean"), cases=2)
    assert seen == {("bf16", "float32"), ("f32", "float32")}  # the same array type, two different roundings owed
    assert result.passed and not result.failing_records, [result.describe(r) for r in result.failing_records]
    # Rounding the bf16 outputs to f32 instead (what a kernel that cannot tell the two apart does) is caught.
    wrong = normcheck.check(lambda x, g, b, eps: normcheck.round_to(ln_float64(x, g, b, eps), "f32"), dtypes=("bf16",),
                            suite="quick", generators=("normal",), cases=1)
    assert not wrong.passed
    assert any("bf16" in (r["kernel_failures"].get("first") or "") for r in wrong.records)


def test_a_kernel_returning_none_declines_a_dtype_and_its_records_are_not_run_not_failed():
    def no_f16(x, gamma, beta, eps, **kwargs):
        return None if kwargs["dtype"] == "f16" else rounded_layer_norm(x, gamma, beta, eps, kwargs["dtype"])

    result = normcheck.check(no_f16, dtypes=("f16", "f32"), suite="quick", generators=("normal",), cases=2)
    assert result.passed, [result.describe(r) for r in result.failing_records]
    f16 = [r for r in result.records if r["storage"] == "f16"]
    assert f16 and all(r["verdict"] == "not_run" and r["cases"] == 0 and r["declined_cases"] > 0 for r in f16)
    assert all(r["verdict"] == "pass" and r["cases"] > 0 for r in result.records if r["storage"] == "f32")


def test_round_to_rounds_once_to_nearest_even_with_subnormals_and_overflow():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(200000) * np.exp2(rng.integers(-40, 40, 200000).astype(np.float64))
    with np.errstate(over="ignore"):  # NumPy's own correctly rounded casts (overflowing to inf)
        assert np.array_equal(normcheck.round_to(x, "f16"), x.astype(np.float16))
    assert np.array_equal(normcheck.round_to(x, "f32"), x.astype(np.float32))
    assert normcheck.round_to(x, "f16").dtype == np.float16 and normcheck.round_to(x, "bf16").dtype == np.float32
    # bf16 of float32 values: the bit-level rounding (add 0x7fff plus the lowest kept bit, truncate)
    xf = x.astype(np.float32)
    u = xf.view(np.uint32).astype(np.uint64)
    want = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    assert np.array_equal(normcheck.round_to(xf, "bf16"), want)
    # a float64 just above a bf16 tie: rounding through float32 lands on the tie and goes to even (1.0)
    above_tie = 1 + 2.0**-8 + 2.0**-30
    assert normcheck.round_to(above_tie, "bf16") == 1 + 2.0**-7
    assert normcheck.round_to(np.float32(above_tie), "bf16") == 1.0
    specials = normcheck.round_to([2.0**-25, 3 * 2.0**-26, 65519.0, 65520.0, -1e6, np.inf, 2.0**-134, 2.0**-133 * 1.5], "f16")
    assert list(specials[:6]) == [0.0, 2.0**-24, 65504.0, np.inf, -np.inf, np.inf]
    bf16_tiny = normcheck.round_to([2.0**-134, 2.0**-133 * 1.5, float.fromhex("0x1.ff8p127")], "bf16")
    assert list(bf16_tiny) == [0.0, 2.0**-132, np.inf]  # half the smallest subnormal ties to 0; 1.5 of it to even 2
    assert np.isnan(normcheck.round_to(np.nan, "bf16"))
    with pytest.raises(ValueError, match="unknown dtype"):
        normcheck.round_to(1.0, "f8")


def test_gemma_rms_norm_is_judged_from_python_through_its_spec_and_a_forgotten_one_is_caught():
    def gemma(x, w, eps, dtype):
        x = x.astype(np.float64)
        r = 1 / np.sqrt((x * x).mean(1, keepdims=True) + eps)
        return normcheck.round_to(x * r * (1 + w.astype(np.float64)), dtype)

    def forgot_the_one(x, w, eps, dtype):
        return gemma(x, w - 1, eps, dtype)  # multiplies by w: plain RMSNorm

    good = normcheck.check(gemma, op="gemma_rmsnorm_forward", dtypes=("bf16", "f64"), generators=("normal", "large_mean"), cases=2)
    assert good.passed, [good.describe(r) for r in good.failing_records]
    assert {r["op"] for r in good.records} == {"gemma_rmsnorm_forward"} and all(r["cases"] > 0 for r in good.records)
    bad = normcheck.check(forgot_the_one, op="gemma_rmsnorm_forward", dtypes=("bf16",), generators=("normal",), cases=1)
    assert not bad.passed


def test_a_nan_where_the_exact_value_is_finite_is_explained_in_words():
    result = normcheck.check(lambda x, g, b, eps: np.full_like(x, np.nan), dtypes=("f32",), generators=("normal",), cases=1)
    assert not result.passed
    assert "returned NaN where the exact value is finite: always a failure" in result.describe(result.worst())
