"""normcheck.reference on binade-extreme rows against mpmath at 3400 bits (issue 42): every returned
enclosure hi + lo +- rad holds the exact value, also for values below 2^-900 and at or above 2^1000
(which the oracle holds scaled by a power of two), and an undecided rounding names both candidates."""

import mpmath
import numpy as np
import pytest

import normcheck

mpmath.mp.prec = 3400


def _mean(v):
    return mpmath.fsum(v) / len(v)


def _exact(case, rms):
    """y, dx, dgamma (and dbeta) of LayerNorm or RMSNorm from the textbook formulas, row by row."""
    x, g, b, dy, eps = case["x"], case["gamma"], case["beta"], case["dy"], mpmath.mpf(case["eps"])
    rows, n = x.shape
    out = {"y": [], "dx": [], "dgamma": [mpmath.mpf(0)] * n, "dbeta": [mpmath.mpf(0)] * n}
    for i in range(rows):
        xr = [mpmath.mpf(float(v)) for v in x[i]]
        mu = mpmath.mpf(0) if rms else _mean(xr)
        d = [v - mu for v in xr]
        r = 1 / mpmath.sqrt(_mean([t * t for t in d]) + eps)
        z = [t * r for t in d]
        gg = [mpmath.mpf(float(dy[i, j])) * mpmath.mpf(float(g[j])) for j in range(n)]
        a = mpmath.mpf(0) if rms else _mean(gg)
        bb = _mean([gg[j] * z[j] for j in range(n)])
        for j in range(n):
            out["y"].append(mpmath.mpf(float(g[j])) * z[j] + (0 if rms else mpmath.mpf(float(b[j]))))
            out["dx"].append(r * (gg[j] - a - z[j] * bb))
            out["dgamma"][j] += mpmath.mpf(float(dy[i, j])) * z[j]
            out["dbeta"][j] += mpmath.mpf(float(dy[i, j]))
    return out


def _misses(cert, exact):
    """Elements whose enclosure misses the exact value."""
    hi, lo, rad = (np.ravel(cert[k]) for k in ("hi", "lo", "rad"))
    misses = []
    for k, e in enumerate(exact):
        if not np.isfinite(rad[k]) or not np.isfinite(hi[k]):
            continue  # claims nothing
        mid = mpmath.mpf(float(hi[k])) + mpmath.mpf(float(lo[k]))  # exact at 3400 bits
        if abs(e - mid) > mpmath.mpf(float(rad[k])):
            misses.append((k, float(hi[k]), float(rad[k]), mpmath.nstr(e, 20)))
    return misses


@pytest.mark.parametrize("rms", [False, True])
def test_every_enclosure_holds_the_exact_value_on_binade_extreme_rows(rms):
    checked = 0
    for seed in range(60):
        case = normcheck.generate("binade_extreme", "f64", seed, rows=2, n=3)
        exact = _exact(case, rms)
        for with_dy in (False, True):
            dy = case["dy"] if with_dy else None
            if rms:
                ref = normcheck.reference.rms_norm(case["x"], case["gamma"], case["eps"], "f64", dy=dy)
            else:
                ref = normcheck.reference.layer_norm(case["x"], case["gamma"], case["beta"], case["eps"], "f64", dy=dy)
            outputs = ["y"] + (["dx", "dgamma"] + ([] if rms else ["dbeta"]) if with_dy else [])
            for name in outputs:
                misses = _misses(ref[name], exact[name])
                assert not misses, f"seed {seed} {name}: {misses[:3]}"
                checked += np.size(ref[name]["rad"])
                cert = ref[name]
                undecided = ~cert["decided"]
                assert np.array_equal(cert["rounded"][~undecided], cert["rounded_alt"][~undecided])
    assert checked > 1000
