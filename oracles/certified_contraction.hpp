#pragma once
/// Certified references for the QR contraction across LayerNorm (issue 5):
///   - the original affine -> LayerNorm -> affine block on the precision cascade (double ball,
///     double-double ball, MPFI 168 -> 500 -> 1330 bits), outputs
///     f and input cotangent dx certified to 1e-3 ULP of the case dtype, with row statistics;
///   - certified upper bounds of the distance between a converter's stored coefficients and the
///     exact contraction (|D_hat - D|, |c_hat - c|, |R_hat^T R_hat - T^T T|);
///   - the exact contraction itself at 336 bits (Eigen Householder QR on an MPFR scalar), for the
///     identity properties.
#include <vector>

#include "core/certified_value.hpp"
#include "core/contraction_case.hpp"

namespace normcheck::oracle {

struct CertifiedAffineLn {
  std::vector<CertifiedValue> f;   ///< rows x m
  std::vector<CertifiedValue> dx;  ///< rows x d (when asked)
  std::vector<double> mean, mean_rad, var, var_rad, rstd, rstd_rad;  ///< per row, nearest double + certified distance
  int precision_bits = 0;
  double max_err_ulps = 0;
  bool certified = false;
  int64_t undecided_roundings = 0;  ///< outputs whose rounding the enclosure does not decide
};

/// The ball levels of the precision cascade (docs/bounds.md section 18): 53- and 106-bit midpoints.
CertifiedAffineLn evaluate_affine_ln_ball(const ContractionCase& c, bool with_vjp);
CertifiedAffineLn evaluate_affine_ln_dd_ball(const ContractionCase& c, bool with_vjp);
CertifiedAffineLn evaluate_affine_ln_mpfi50(const ContractionCase& c, bool with_vjp);
CertifiedAffineLn evaluate_affine_ln_mpfi150(const ContractionCase& c, bool with_vjp);
CertifiedAffineLn evaluate_affine_ln_mpfi400(const ContractionCase& c, bool with_vjp);

/// The precision cascade (double ball, double-double ball, MPFI 168 -> 500 -> 1330 bits) until every
/// output is within 1e-3 ULP of the case dtype and every rounding decided.
CertifiedAffineLn certified_affine_ln(const ContractionCase& c, bool with_vjp);

/// Stored coefficients of a contraction, as exact doubles (row-major).
struct StoredContraction {
  int64_t d = 0, n = 0, m = 0, k = 0;
  double eps = 0;
  std::vector<double> D, R, c;
  std::vector<double> R64;  ///< R before the storage rounding (float64), for the Gram error
};

/// Certified upper bounds of |D_hat - D| (m x (d+1)), |c_hat - c| (m) and |R64^T R64 - T^T T|
/// ((d+1) x (d+1)) for the exact D = W diag(gamma) T, c = W beta + b, T = [P A, P a]: the Gram
/// error of the float64 QR; the storage rounding R - R64 is known exactly and bounded apart.
struct CoefficientError {
  std::vector<double> dD, dc, dG;
  double max_rel_D = 0, max_rel_G = 0;  ///< max |dD| / max |D|, max |dG| / max |T^T T| (summary)
};
CoefficientError coefficient_error(const AffineLnAffine& blk, const StoredContraction& s);

/// The exact contraction at 336 bits, evaluated there on the case's inputs; values as
/// double-double (hi + lo, about 106 bits).
struct HighPrecisionContraction {
  int64_t k = 0;
  std::vector<double> f_hi, f_lo, dx_hi, dx_lo;
  double max_norm_identity_rel = 0;  ///< max over rows of | |P h| - |R xbar| | / max(|P h|, tiny)
  std::vector<double> D, R, c;       ///< the exact coefficients rounded to double
};
HighPrecisionContraction high_precision_contraction(const ContractionCase& c);

}  // namespace normcheck::oracle
