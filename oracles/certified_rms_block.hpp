#pragma once
/// Certified reference of the block Linear o RMSNorm: forward y, the VJP (dx, dW, dg), and the
/// row statistics with certified radii (for the a priori bounds).
#include <vector>

#include "core/certified_value.hpp"
#include "core/rmsnorm_case.hpp"

namespace normcheck::oracle {

struct CertifiedRmsBlock {
  std::vector<CertifiedValue> y;   ///< rows * m
  std::vector<CertifiedValue> dx;  ///< rows * n
  std::vector<CertifiedValue> dw;  ///< m * n, summed over rows
  std::vector<CertifiedValue> dg;  ///< n, summed over rows
  std::vector<double> ms, ms_rad;      ///< mean(x^2) per row: nearest double, certified distance
  std::vector<double> rstd, rstd_rad;  ///< r = (mean(x^2) + eps)^(-1/2) per row
  std::vector<double> cancellation;  ///< per dx element: (|t1| + |t2|) / |t1 - t2| of the deferred form
  int precision_bits = 0;
  double max_err_ulps = 0;
  bool certified = false;
  int64_t undecided_roundings = 0;  ///< outputs whose rounding the enclosure does not decide
};

/// The ball levels of the cascade (oracles/ball.hpp, oracles/dd_ball.hpp), as for LayerNorm.
CertifiedRmsBlock evaluate_rms_block_ball(const RmsBlockCase& c);
CertifiedRmsBlock evaluate_rms_block_dd_ball(const RmsBlockCase& c);
CertifiedRmsBlock evaluate_rms_block_mpfi50(const RmsBlockCase& c);
CertifiedRmsBlock evaluate_rms_block_mpfi150(const RmsBlockCase& c);
CertifiedRmsBlock evaluate_rms_block_mpfi400(const RmsBlockCase& c);

/// The cascade: double ball (not for f64 outputs), double-double ball, then MPFI 168 -> 500 -> 1330
/// bits, until every output is within 1e-3 ULP of the case dtype with its rounding decided. The whole
/// case moves up a level (dW and dg sum over every row).
CertifiedRmsBlock certified_rms_block(const RmsBlockCase& c);

}  // namespace normcheck::oracle
