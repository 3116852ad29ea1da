#pragma once
/// The auditor's view of one element's bound (`normcheck bounds --explain`): the row intermediates the
/// bound code evaluated for it (e_mu, e_v, delta_r, r ... from the same functions the bounds call), the
/// element's own terms (e_d, e_z), and the bound split into the accumulator arithmetic's error and the
/// final rounding to storage, with their shares (docs/bounds.md sections 2, 3, 10 and 2.6).
#include <cstdint>
#include <string>
#include <vector>

#include "bounds/bounds.hpp"

namespace normcheck {

struct BoundTerm {
  std::string name, value_meaning, section;  ///< e.g. "delta_r", "relative error of r_hat", "2.3"
  double value = 0;
};

struct BoundExplanation {
  std::string output;  ///< y, dx, dgamma, dbeta
  int64_t index = 0, row = 0, col = 0;
  double bound = 0;      ///< the element's bound, as the verdict uses it
  double exact_abs = 0;  ///< upper bound of |exact value|
  std::vector<BoundTerm> row_terms;      ///< the row's statistics errors (row-wise outputs)
  std::vector<BoundTerm> element_terms;  ///< the element's own intermediates
  double arithmetic = 0;     ///< e: the accumulator arithmetic's error (bound without the store rounding)
  double store = 0;          ///< u_s (|exact| + e) + eta_s: the final rounding to storage (0 when storage = accum)
  double evaluation_slack = 0;  ///< the bound's safety factor over e + store (kEvaluationSlack - 1 of it)
  bool void_bound = false;
};

/// Explains element `index` of `output` of the case, whose bound vector `b` the bound functions
/// computed under model `m`. Row terms come from row_error / rms_row (the functions the bounds use),
/// so the numbers are the bound's own, not a re-derivation.
BoundExplanation explain_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m,
                               const std::string& output, const TensorBound& b, size_t index);

}  // namespace normcheck
