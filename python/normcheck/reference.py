"""The certified oracle as functions (docs/python.md).

Each returns a dict with one entry per output ("y"; with ``dy``: "dx", "dgamma" and for LayerNorm
"dbeta"), each a dict of float64 arrays: ``rounded`` (the correctly rounded value in the dtype),
``hi`` + ``lo`` (the enclosure's midpoint) and ``rad`` (its certified radius), and ``decided`` (bool:
the whole enclosure rounds to ``rounded``); plus ``precision_bits`` and ``max_err_ulps`` of the
accepted oracle level. Inputs must be values of the dtype (bf16 and f16 given as float32/float64
arrays holding such values); anything else is refused with a ValueError.
"""
import numpy as np

from . import _normcheck


def _f64(a):
    if a is None:
        return None
    if hasattr(a, "detach"):  # a torch tensor
        a = a.detach().to("cpu").double().numpy()
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64))


def layer_norm(x, gamma, beta, eps, dtype, dy=None):
    """LayerNorm over the last axis of x (rows, n); with dy, its VJP (dx, dgamma, dbeta)."""
    return _normcheck.reference(False, _f64(x), _f64(gamma), _f64(beta), float(eps), dtype, _f64(dy))


def rms_norm(x, gamma, eps, dtype, dy=None):
    """RMSNorm over the last axis of x (rows, n); with dy, its VJP (dx, dgamma)."""
    return _normcheck.reference(True, _f64(x), _f64(gamma), None, float(eps), dtype, _f64(dy))


def bf16_bits(values):
    """The bf16 bit patterns (uint16) of float values that are bf16 values (e.g. ``rounded``)."""
    a = np.asarray(values, dtype=np.float32)
    return (a.view(np.uint32) >> 16).astype(np.uint16)
