"""Rounding to a storage dtype, for kernels that compute in a wider type (docs/python.md).

NumPy has no bfloat16: with framework="numpy" a bf16 kernel receives and returns float32 arrays
holding bf16 values. ``round_to(a, "bf16")`` rounds any float array to the nearest bf16 value (ties
to even, overflow to infinity, gradual underflow), once, from the array's own values: a float64 array
is not rounded through float32 first (that double rounding is wrong on about one value in 2^16 near
a tie).
"""
import numpy as np

# significand bits (with the implicit one), the exponent of the smallest normal (as frexp counts it:
# value = m 2^e, 0.5 <= m < 1) and the largest finite value; the array type a kernel returns
_FORMATS = {
    "f16": (11, -13, 65504.0, np.float16),
    "bf16": (8, -125, float.fromhex("0x1.fep127"), np.float32),
    "f32": (24, -125, float.fromhex("0x1.fffffep127"), np.float32),
    "f64": (53, -1021, float.fromhex("0x1.fffffffffffffp1023"), np.float64),
}


def kernel_array_type(dtype):
    """The NumPy type a kernel of ``dtype`` receives and returns (float32 for bf16)."""
    return _FORMATS[_checked(dtype)][3]


def _checked(dtype):
    if dtype not in _FORMATS:
        raise ValueError(f"unknown dtype {dtype!r} (f16, bf16, f32, f64)")
    return dtype


def round_to(a, dtype):
    """``a`` (a float array or scalar) rounded to nearest ``dtype`` values, ties to even, returned in
    ``kernel_array_type(dtype)`` (bf16 values in a float32 array). NaN stays NaN; values whose rounding
    exceeds the largest finite value become +-inf."""
    bits, emin, max_finite, out_type = _FORMATS[_checked(dtype)]
    x = np.asarray(a, dtype=np.float64)
    if dtype == "f64":
        return x.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(x)
        _, e = np.frexp(np.where(finite, x, 0.0))
        e = np.maximum(e, emin)  # below the normal range: the subnormal spacing 2^(emin - bits)
        scale = np.ldexp(1.0, (bits - e).astype(np.int32))  # exact: a power of two within float64's range
        r = np.where(finite, np.rint(x * scale) / scale, x)  # x * scale is exact; rint rounds ties to even
        r = np.where(np.abs(r) > max_finite, np.copysign(np.inf, r), r)
    return r.astype(out_type)
