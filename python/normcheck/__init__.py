"""normcheck for Python: the certified reference and in-process judging of Python kernels.

    import normcheck
    result = normcheck.check(my_layer_norm, op="layernorm_forward", dtypes=("bf16", "f32"))
    result.raise_for_failures()

See docs/python.md for the API: ``check`` (judge a callable on a suite's cases), ``reference``
(certified, correctly rounded outputs with their enclosures), ``generate`` (the harness's own
cases), ``judge`` (one case's outputs, element by element), ``testing.assert_accurate`` (pytest) and ``strategies`` (Hypothesis).
"""
from . import _normcheck
from . import reference
from .cases import generate, row_generators
from .check import CheckResult, KernelTimeout, NormcheckFailure, check
from .grouped import GroupedCall
from .judge import Judgement, judge
from .rounding import kernel_array_type, round_to

__all__ = ["check", "CheckResult", "judge", "Judgement", "KernelTimeout", "NormcheckFailure", "GroupedCall", "reference", "generate", "row_generators",
           "round_to", "kernel_array_type"]
