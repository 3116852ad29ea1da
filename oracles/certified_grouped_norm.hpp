#pragma once
/// Certified reference of a grouped normalization (batch norm training and inference with the
/// running-statistic update, group norm, instance norm): MPFI enclosures escalated 168 -> 500 ->
/// 1330 bits until every output is within 1e-3 ULP of the case dtype.
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

struct GroupedNormLayout {
  std::vector<int64_t> group_of, channel_of;
  int64_t groups = 0, channels = 0;
  bool batch_norm = false;
};

CertifiedGroupedNorm evaluate_grouped_mpfi50(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);
CertifiedGroupedNorm evaluate_grouped_mpfi150(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);
CertifiedGroupedNorm evaluate_grouped_mpfi400(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);

CertifiedGroupedNorm certified_grouped_norm(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);

}  // namespace normcheck::oracle
