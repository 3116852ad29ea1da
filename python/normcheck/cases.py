"""The harness's own cases: inputs exactly representable in the dtype, as float64 NumPy arrays."""
from . import _normcheck


def generate(generator, dtype, seed, rows=0, n=0, max_elements=65536):
    """One case of a row generator (``row_generators()``): a dict with x (rows, n), gamma, beta (n),
    dy (rows, n), eps, rows, n, dtype, generator, seed and the digest ``normcheck replay`` checks.
    rows and n of 0 let the generator choose the shape under max_elements."""
    return _normcheck.generate(generator, dtype, int(seed), int(rows), int(n), int(max_elements))


def row_generators():
    """Names of the row generators (the corpus first)."""
    return list(_normcheck.row_generators())
