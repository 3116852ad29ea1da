#pragma once
/// Shared body of the contraction oracle TUs (one interval or ball type per TU).
#include <algorithm>
#include <cmath>

#include <boost/multiprecision/mpfi.hpp>

#include "oracles/affine_ln_affine.hpp"
#include "oracles/certified_contraction.hpp"
#include "oracles/certified_layernorm.hpp"
#include "oracles/certify_interval.hpp"
#include "oracles/layernorm_certify_impl.hpp"

namespace normcheck::oracle::detail {

template <class Interval>
CertifiedAffineLn evaluate_affine_ln(const ContractionCase& c, bool with_vjp, int bits) {
  CertifiedAffineLn out;
  out.precision_bits = bits;
  CertifiedLayerNorm acc;  // collects the max error over outputs
  AffineLnStats<Interval> stats;
  out.f = certify_all(original_forward<Interval>(c.block, c.x, c.rows, &stats), c.dtype, acc);
  if (with_vjp) out.dx = certify_all(original_vjp<Interval>(c.block, c.x, c.dy, c.rows), c.dtype, acc);
  mids(stats.mean, out.mean, out.mean_rad);
  mids(stats.var, out.var, out.var_rad);
  mids(stats.rstd, out.rstd, out.rstd_rad);
  out.max_err_ulps = acc.max_err_ulps;
  out.undecided_roundings = acc.undecided_roundings;
  out.certified = acc.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

/// Upper bound of |v| as a double (rounded up).
template <class Interval>
double upper_magnitude(const Interval& v) {
  const double hi = std::fabs(boost::multiprecision::upper(v).template convert_to<double>());
  const double lo = std::fabs(boost::multiprecision::lower(v).template convert_to<double>());
  return std::max(hi, lo) * (1 + 0x1p-50) + 0x1p-1074;
}

template <class Interval>
CoefficientError coefficient_error(const AffineLnAffine& blk, const StoredContraction& s) {
  const std::vector<Interval> t = centered_producer<Interval>(blk);
  std::vector<Interval> D, c;
  numerator_coefficients(blk, t, D, c);
  CoefficientError e;
  double max_D = 0, max_G = 0;
  for (size_t i = 0; i < D.size(); ++i) {
    e.dD.push_back(upper_magnitude(Interval(s.D[i]) - D[i]));
    max_D = std::max(max_D, upper_magnitude(D[i]));
  }
  for (size_t i = 0; i < c.size(); ++i) e.dc.push_back(upper_magnitude(Interval(s.c[i]) - c[i]));
  const int64_t cols = blk.d + 1;
  for (int64_t p = 0; p < cols; ++p)
    for (int64_t q = 0; q < cols; ++q) {
      Interval g(0), gh(0);
      for (int64_t j = 0; j < blk.n; ++j) g += t[j * cols + p] * t[j * cols + q];
      for (int64_t l = 0; l < s.k; ++l) gh += Interval(s.R64[l * cols + p]) * Interval(s.R64[l * cols + q]);
      e.dG.push_back(upper_magnitude(gh - g));
      max_G = std::max(max_G, upper_magnitude(g));
    }
  // Relative to the largest exact coefficient; an all-zero exact D (or T) has no scale: 0 when
  // the stored one is zero too (up to the 2^-1074 of the upper rounding), else +inf.
  const auto relative = [](double v, double scale) {
    constexpr double kZero = 0x1p-1070;
    if (scale > kZero) return v / scale;
    return v > kZero ? HUGE_VAL : 0.0;
  };
  for (double v : e.dD) e.max_rel_D = std::max(e.max_rel_D, relative(v, max_D));
  for (double v : e.dG) e.max_rel_G = std::max(e.max_rel_G, relative(v, max_G));
  return e;
}

}  // namespace normcheck::oracle::detail

/// Defines the contraction oracle entry points on the MPFI type of Digits decimal digits.
#define NORMCHECK_DEFINE_MPFI_CONTRACTION_ORACLE(Digits)                                              \
  namespace normcheck::oracle {                                                                    \
  CertifiedAffineLn evaluate_affine_ln_mpfi##Digits(const ContractionCase& c, bool with_vjp) {     \
    return detail::evaluate_affine_ln<detail::MpfiInterval<Digits>>(c, with_vjp, detail::mpfi_bits<Digits>()); \
  }                                                                                                \
  }

/// The original block's oracle on a ball level of the cascade (Real: Ball or DdBall; bits: its midpoint's precision).
#define NORMCHECK_DEFINE_BALL_CONTRACTION_ORACLE(suffix, Real, bits)                                   \
  namespace normcheck::oracle {                                                                    \
  CertifiedAffineLn evaluate_affine_ln_##suffix(const ContractionCase& c, bool with_vjp) {         \
    return detail::evaluate_affine_ln<Real>(c, with_vjp, bits);                                    \
  }                                                                                                \
  }
