#pragma once
/// Shared body of the grouped-normalization oracle TUs (one interval or ball type per TU).
#include <boost/multiprecision/mpfi.hpp>

#include "oracles/certified_grouped_norm.hpp"
#include "oracles/grouped_norm.hpp"
#include "oracles/layernorm_certify_impl.hpp"

namespace normcheck::oracle::detail {

template <class Interval>
CertifiedGroupedNorm evaluate_grouped(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp, int bits) {
  const auto r = grouped_norm_reference<Interval>(c, l, with_vjp);
  CertifiedGroupedNorm out;
  out.precision_bits = bits;
  CertifiedLayerNorm acc;
  out.y = certify_all(r.y, c.dtype, acc);
  out.dx = certify_all(r.dx, c.dtype, acc);
  out.contrib = certify_all(r.contrib, c.dtype, acc);
  out.dgamma = certify_all(r.dgamma, c.dtype, acc);
  out.dbeta = certify_all(r.dbeta, c.dtype, acc);
  out.running_mean = certify_all(r.running_mean, c.dtype, acc);
  out.running_var = certify_all(r.running_var, c.dtype, acc);
  out.y_inference = certify_all(r.y_inference, c.dtype, acc);
  mids(r.mean, out.mean, out.mean_rad);
  mids(r.var, out.var, out.var_rad);
  mids(r.rstd, out.rstd, out.rstd_rad);
  out.max_err_ulps = acc.max_err_ulps;
  out.undecided_roundings = acc.undecided_roundings;
  out.certified = acc.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

}  // namespace normcheck::oracle::detail

/// The grouped oracle on an interval type (suffix: the function's name's end).
#define NORMCHECK_DEFINE_INTERVAL_GROUPED_ORACLE(suffix, Interval)                                             \
  namespace normcheck::oracle {                                                                              \
  CertifiedGroupedNorm evaluate_grouped_##suffix(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp) { \
    return detail::evaluate_grouped<Interval>(c, l, with_vjp, detail::interval_bits<Interval>());            \
  }                                                                                                          \
  }

/// The grouped oracle's MPFI level of Digits decimal digits, on the lean type (as LayerNorm's).
#define NORMCHECK_DEFINE_MPFI_GROUPED_ORACLE(Digits) \
  NORMCHECK_DEFINE_INTERVAL_GROUPED_ORACLE(mpfi##Digits, detail::LeanMpfi<Digits>)

/// The grouped oracle on a ball level of the cascade (Real: Ball or DdBall; bits: its midpoint's precision).
#define NORMCHECK_DEFINE_BALL_GROUPED_ORACLE(suffix, Real, bits)                                                 \
  namespace normcheck::oracle {                                                                              \
  CertifiedGroupedNorm evaluate_grouped_##suffix(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp) { \
    return detail::evaluate_grouped<Real>(c, l, with_vjp, bits);                                             \
  }                                                                                                          \
  }
