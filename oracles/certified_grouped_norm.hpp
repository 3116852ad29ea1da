#pragma once
/// Certified reference of a grouped normalization (batch norm training and inference with the
/// running-statistic update, group norm, instance norm, layer norm over trailing axes, channel
/// layer norm, RMSNorm over trailing axes): the precision cascade (double ball, double-double ball,
/// MPFI 168 -> 500 -> 1330 bits) until every output is within 1e-3 ULP of the case dtype and every
/// rounding to it decided.
#include <vector>

#include "core/certified_value.hpp"
#include "core/grouped_norm_case.hpp"

namespace normcheck::oracle {

struct CertifiedGroupedNorm {
  std::vector<CertifiedValue> y, dx, contrib, dgamma, dbeta;
  std::vector<CertifiedValue> running_mean, running_var, y_inference;  ///< batch norm only
  std::vector<double> mean, mean_rad, var, var_rad, rstd, rstd_rad;    ///< per group
  int precision_bits = 0;
  double max_err_ulps = 0;
  bool certified = false;
  int64_t undecided_roundings = 0;  ///< outputs whose rounding the enclosure does not decide
};

/// Who is normalized with whom, and whose gamma/beta each entry uses.
struct GroupedNormLayout {
  std::vector<int64_t> group_of;  ///< per entry: its reduction group, 0 .. groups - 1
  std::vector<int64_t> param_of;  ///< per entry: its gamma/beta (the channel, or its place in the normalized axes)
  int64_t groups = 0, params = 0;
  bool batch_norm = false;        ///< groups are the channels; running statistics and inference mode
  bool centred = true;            ///< false for RMSNorm: no mean, r = (mean(x^2) + eps)^(-1/2), no beta
};

/// The ball levels of the precision cascade (docs/bounds.md section 18): 53- and 106-bit midpoints.
CertifiedGroupedNorm evaluate_grouped_ball(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);
CertifiedGroupedNorm evaluate_grouped_dd_ball(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);
CertifiedGroupedNorm evaluate_grouped_mpfi50(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);
CertifiedGroupedNorm evaluate_grouped_mpfi150(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);
CertifiedGroupedNorm evaluate_grouped_mpfi400(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);

CertifiedGroupedNorm certified_grouped_norm(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);

}  // namespace normcheck::oracle
