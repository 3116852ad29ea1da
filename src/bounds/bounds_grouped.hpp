#pragma once
/// A priori bounds for the grouped normalization kernels (kernels/grouped_norm.hpp): batch norm
/// (training statistics, running-statistic update, inference mode), group norm, instance norm.
/// docs/bounds.md section 13.
#include "bounds/bounds.hpp"
#include "core/grouped_norm_case.hpp"
#include "oracles/certified_grouped_norm.hpp"

namespace normcheck {

struct GroupedBound {
  TensorBound y, dx, dgamma, dbeta;                   ///< dx, dgamma, dbeta when the VJP is asked
  TensorBound running_mean, running_var, y_inference;  ///< batch norm only
};

GroupedBound grouped_norm_bound(const GroupedNormCase& c, const oracle::GroupedNormLayout& l,
                                const oracle::CertifiedGroupedNorm& ref, DType accum, bool with_vjp);

}  // namespace normcheck
