"""Hypothesis strategies over the harness's own floating-point generators (docs/python.md)."""
from hypothesis import strategies as st

from .cases import generate, row_generators


def layernorm_case(dtype="f32", generators=None, max_elements=4096):
    """Cases (the dicts of ``normcheck.generate``) from the row generators (default: all but the
    corpus), with seeds drawn by Hypothesis."""
    names = list(generators or [g for g in row_generators() if g != "corpus"])
    return st.builds(lambda g, seed: generate(g, dtype, seed, max_elements=max_elements), st.sampled_from(names),
                     st.integers(min_value=0, max_value=2**63 - 1))
