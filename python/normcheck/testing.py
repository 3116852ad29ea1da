"""pytest helpers: ``assert_accurate`` fails a test with the worst element's description."""
from .check import check


def assert_accurate(fn, op="layernorm_forward", **options):
    """``check(fn, op, **options)`` and raise NormcheckFailure (an AssertionError, rendered by pytest)
    naming the worst element when it did not pass; returns the CheckResult."""
    __tracebackhide__ = True  # pytest: the failure points at the test's line
    result = check(fn, op=op, **options)
    result.raise_for_failures()
    return result
