"""The certified oracle as functions (docs/python.md).

Each returns a dict with one entry per output (``layer_norm``, ``rms_norm``: "y", with ``dy`` "dx",
"dgamma" and for LayerNorm "dbeta"; ``layer_norm_jvp``, ``rms_norm_jvp``: "du"; ``grouped_norm``: see its docstring), each a dict of float64 arrays: ``rounded`` (the correctly rounded value in the dtype),
``hi`` + ``lo`` (the enclosure's midpoint) and ``rad`` (its certified radius: the exact value lies in
[hi + lo - rad, hi + lo + rad], also below 2^-1022 and above 2^1000, where it is widened by the
unscaling's own rounding), ``decided`` (bool: the whole enclosure rounds to ``rounded``) and
``rounded_alt`` (equal to ``rounded`` where decided; where not, the other candidate rounding: the
exact value rounds to one of the two); plus ``precision_bits`` and ``max_err_ulps`` of the
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


def layer_norm_jvp(x, gamma, beta, eps, dtype, dx, dgamma, dbeta):
    """The LayerNorm JVP at (x, gamma, beta) along the tangents (dx, dgamma, dbeta):
    du = gamma r (dx - mean(dx) - z mean(z dx)) + z dgamma + dbeta. Returns {"du": ..., ...}."""
    return _normcheck.reference_jvp(False, _f64(x), _f64(gamma), _f64(beta), float(eps), dtype, _f64(dx), _f64(dgamma), _f64(dbeta))


def rms_norm_jvp(x, gamma, eps, dtype, dx, dgamma):
    """The RMSNorm JVP at (x, gamma) along the tangents (dx, dgamma): du = gamma r (dx - z mean(z dx))
    + z dgamma, z = x r. Returns {"du": ..., ...}."""
    return _normcheck.reference_jvp(True, _f64(x), _f64(gamma), None, float(eps), dtype, _f64(dx), _f64(dgamma), None)


def grouped_norm(kind, layout, x, gamma, beta, eps, dtype, dy=None, groups=1, normalized_dims=1, running_mean=None,
                 running_var=None, momentum=0.1):
    """A grouped normalization of ``x`` given in memory order for ``layout`` (``dense`` (N, C),
    ``nchw``, ``nhwc``, ``sequence`` (N, L, C)): ``kind`` is ``batch_norm`` (training statistics,
    biased variance), ``group_norm`` (``groups``), ``instance_norm``, ``layer_norm`` or ``rms_norm``
    over the last ``normalized_dims`` axes (gamma, beta shaped like them; RMSNorm: beta None), or
    ``channel_layer_norm``; gamma and beta are per channel otherwise. Returns "y"; with ``dy`` "dx",
    "dgamma" and "dbeta" (not for RMSNorm); for batch norm also "running_mean", "running_var" (the
    updated statistics, unbiased variance, from ``running_mean`` and ``running_var``: default 0 and
    1) and "y_inference" (inference mode from the statistics before the update)."""
    return _normcheck.reference_grouped(kind, layout, _f64(x), _f64(gamma), _f64(beta), float(eps), dtype, _f64(dy), int(groups),
                                        int(normalized_dims), _f64(running_mean), _f64(running_var), float(momentum))


def bf16_bits(values):
    """The bf16 bit patterns (uint16) of float values that are bf16 values (e.g. ``rounded``)."""
    a = np.asarray(values, dtype=np.float32)
    return (a.view(np.uint32) >> 16).astype(np.uint16)
