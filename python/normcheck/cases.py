"""The harness's own cases: inputs exactly representable in the dtype, as float64 NumPy arrays."""
from . import _normcheck


class Case(dict):
    """A harness case: a dict (x, gamma, beta, dy, eps, rows, n, dtype, generator, seed, digest) whose
    repr is one short line that rebuilds it, so that Hypothesis and pytest print that, not every value."""

    rebuild = None  # the generate(...) call that made it

    def __repr__(self):
        if self.rebuild:
            return self.rebuild
        return f"Case({self.get('dtype')} {self.get('rows')} x {self.get('n')}, keys {', '.join(sorted(self))})"


def generate(generator, dtype, seed, rows=0, n=0, max_elements=65536):
    """One case of a row generator (``row_generators()``): a dict with x (rows, n), gamma, beta (n),
    dy (rows, n), eps, rows, n, dtype, generator, seed and the digest ``normcheck replay`` checks.
    rows and n of 0 let the generator choose the shape under max_elements; its repr is the call that
    rebuilds it (``Case``)."""
    case = Case(_normcheck.generate(generator, dtype, int(seed), int(rows), int(n), int(max_elements)))
    shape = f", rows={int(rows)}, n={int(n)}" if rows or n else ""
    case.rebuild = f"normcheck.generate({generator!r}, {dtype!r}, {int(seed)}{shape}, max_elements={int(max_elements)})"
    return case


def row_generators():
    """Names of the row generators (the corpus first)."""
    return list(_normcheck.row_generators())
