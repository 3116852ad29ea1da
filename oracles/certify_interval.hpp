#pragma once
/// Turns an MPFI enclosure into a CertifiedValue; also correctly rounds MPFR numbers to a dtype.
#include <mpfi.h>
#include <mpfr.h>

#include "core/certified_value.hpp"
#include "core/dtype.hpp"

namespace normcheck::oracle {

/// Rounds x to a double with round-to-odd (sticky last bit): rounding that double to nearest in
/// any format of at most 51 bits equals rounding x directly (no double-rounding error).
double round_to_odd_double(mpfr_srcptr x);

/// Correctly rounds (nearest, ties to even) an MPFR number to `dtype`; returns it as a double.
double round_mpfr_to_dtype(mpfr_srcptr x, DType dtype);

/// Midpoint as double-double, certified radius, and the correctly rounded value in `dtype`.
CertifiedValue certify_interval(mpfi_srcptr v, DType dtype);

/// Midpoint of the enclosure rounded to nearest double (for statistics feeding bounds).
double interval_mid_double(mpfi_srcptr v);

}  // namespace normcheck::oracle
