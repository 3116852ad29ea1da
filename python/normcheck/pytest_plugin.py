"""pytest plugin, loaded by pytest on its own (the ``pytest11`` entry point of the normcheck
distribution metadata that the build writes beside the package): no conftest, no ``-p`` option.

- fixture ``normcheck``: ``normcheck(fn, **options)`` judges ``fn`` like ``normcheck.check`` and
  fails the test with the worst element's description (``testing.assert_accurate``) when it does not
  pass; returns the CheckResult.
- fixture ``normcheck_check``: the same fixture under a name that does not hide the package in a
  test module that also does ``import normcheck`` (there, a test parameter named ``normcheck`` is the
  fixture, not the module);
- marker ``@pytest.mark.normcheck(**options)``: defaults for the fixture's options in that test
  (``op``, ``dtypes``, ``suite``, ``cases``, ``generators``, ``framework``, ``device``, ...).

The package is imported only when the fixture is used, so a stale or missing build never breaks
pytest runs that do not use it.
"""
import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "normcheck(**options): default options (op, dtypes, suite, cases, generators, framework, device) "
        "of the normcheck fixture in this test")


def _fixture(request):
    marker = request.node.get_closest_marker("normcheck")
    defaults = dict(marker.kwargs) if marker else {}

    def judge(fn, **options):
        __tracebackhide__ = True  # pytest: the failure points at the test's line
        from normcheck.testing import assert_accurate  # noqa: PLC0415 (lazy: see the module docstring)
        return assert_accurate(fn, **{**defaults, **options})

    return judge


@pytest.fixture
def normcheck(request):
    """``normcheck(fn, **options)``: judge ``fn`` on the suite's cases; fail the test naming the worst element."""
    return _fixture(request)


@pytest.fixture
def normcheck_check(request):
    """The fixture ``normcheck`` under a name that leaves ``import normcheck`` usable in the test."""
    return _fixture(request)
