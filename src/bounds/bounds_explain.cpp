// One element's bound, taken apart for auditors (docs/bounds.md; `normcheck bounds --explain`).
#include "bounds/bounds_explain.hpp"

#include <cmath>

#include "bounds/bounds_model.hpp"
#include "oracles/gain_split.hpp"

namespace normcheck {

using namespace bounds_detail;

namespace {

/// The section deriving a statistic of model m: Welford's 2.2, the Welford merge tree's `merge`, else `two_pass`.
const char* section_of(const BoundModel& m, const char* two_pass, const char* merge) {
  return m.stats == StatsModel::welford ? "2.2" : m.stats == StatsModel::welford_merge ? merge : two_pass;
}

double exact_abs_of(const oracle::CertifiedLayerNorm& ref, const std::string& output, size_t index) {
  const std::vector<CertifiedValue>& v = output == "y" ? ref.y : output == "dx" ? ref.dx : output == "dgamma" ? ref.dgamma : ref.dbeta;
  return upper_abs(v.at(index));
}

void add_layernorm_row_terms(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m,
                             BoundExplanation& e) {
  const Units u = units_of(m);
  const RowError r = row_error(c, ref, e.row, m, u);
  e.row_terms = {{"mu", "the row's mean (nearest double of the exact value)", "2.1", r.mu},
                 {"v", "upper bound of the exact (biased) variance", "2.1", r.v},
                 {"r", "upper bound of the exact 1/sqrt(v + eps)", "2.3", r.rstd},
                 {"e_mu", "|mu_hat - mu|: error of the kernel's mean", section_of(m, "2.1", "2.7.2"), r.e_mu},
                 {"e_v", "|v_hat - v|: error of the kernel's variance", m.stats == StatsModel::one_pass ? "4" : section_of(m, "2.1", "2.7.3"), r.e_v},
                 {"delta_r", "|r_hat - r| / r: relative error of the kernel's 1/sqrt(v + eps)", "2.3", r.delta_r}};
  const size_t j = static_cast<size_t>(e.col);
  e.element_terms = {{"|d_j|", "upper bound of |x_j - mu|", "2.1", r.d_abs[j]},
                     {"e_d_j", "|d_hat_j - d_j| = e_mu + u_a (|d_j| + e_mu)", "2.1", r.e_d[j]},
                     {"e_z_j", "|z_hat_j - z_j|, z = d r: the normalized value's error", "2.4 / 3.1", normalized_error(r, e.col, u)}};
}

void add_rmsnorm_row_terms(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m,
                           BoundExplanation& e) {
  const Units u = units_of(m);
  const RmsUnits ru = rms_units(m, u);
  const RmsRow r = rms_row(c, ref, e.row, m, u, ru);
  e.row_terms = {{"ms", "upper bound of the exact mean of squares", "10.1", (ref.var[e.row] + ref.var_rad[e.row])},
                 {"r", "upper bound of the exact 1/sqrt(ms + eps)", "10.1", r.rstd},
                 {"delta_r", "|r_hat - r| / r, from e_ms as in 2.3", "10.1", r.delta_r}};
  const double x = std::fabs(c.x[e.index]);
  e.element_terms = {{"|x_j|", "the input", "10.1", x},
                     {"e_z_j", "|z_hat_j - x_j r| = |x| r (delta_r (+) u_xr) + eta_xr", "10.1",
                      x * r.rstd * compose(r.delta_r, ru.u_xr) + ru.eta_xr}};
}

/// The backward bound's own intermediates for the element (LayerNorm: e_A, e_B, c, e_c, section 3;
/// RMSNorm: v, e_v, B, e_B, c, e_c, section 10.2; the column sums), from the bound function itself
/// (a trace of the same evaluation).
void add_backward_terms(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m, BoundExplanation& e) {
  BackwardBoundTrace trace{e.output, static_cast<size_t>(e.index)};
  if (m.stats == StatsModel::rms) rmsnorm_backward_bound(c, ref, m, &trace);
  else layernorm_backward_bound(c, ref, m, &trace);
  for (const NamedConstant& t : trace.terms) {
    const size_t open = t.meaning.rfind(" [");
    e.element_terms.push_back({t.name, open == std::string::npos ? t.meaning : t.meaning.substr(0, open),
                               open == std::string::npos ? "3" : t.meaning.substr(open + 2, t.meaning.size() - open - 3), t.value});
  }
}

}  // namespace

BoundExplanation explain_bound(const LayerNormCase& given, const oracle::CertifiedLayerNorm& ref, const BoundModel& m,
                               const std::string& output, const TensorBound& b, size_t index) {
  // Gemma's RMSNorm (the gain offset, 10.6): its bound is RMSNorm's on gamma = hi, the double part of
  // 1 + w (gemma_rmsnorm_bounds), so the terms are evaluated on that case too
  LayerNormCase with_hi;
  if (m.rms_flags & kRmsGainOffset) {
    with_hi = given;
    with_hi.gamma = oracle::split_unit_offset_gain(given.gamma).hi;
  }
  const LayerNormCase& c = (m.rms_flags & kRmsGainOffset) ? with_hi : given;
  BoundExplanation e;
  e.output = output;
  e.index = static_cast<int64_t>(index);
  const bool column_output = output == "dgamma" || output == "dbeta";
  e.row = column_output ? -1 : e.index / c.n;
  e.col = column_output ? e.index : e.index % c.n;
  e.bound = b.bound.at(index);
  e.exact_abs = exact_abs_of(ref, output, index);
  e.void_bound = !std::isfinite(e.bound);
  if (!column_output) {
    if (m.stats == StatsModel::rms) add_rmsnorm_row_terms(c, ref, m, e);
    else add_layernorm_row_terms(c, ref, m, e);
    // the element's parameters, as the bound reads them (issue 46: an auditor recomputing it needs them)
    const size_t j = static_cast<size_t>(e.col);
    e.element_terms.push_back({"gamma_j", "the element's gain (Gemma: the gain's hi part, 10.6), exact", m.stats == StatsModel::rms ? "10.1" : "2.4",
                               c.gamma.at(j)});
    if (m.stats != StatsModel::rms && output == "y") e.element_terms.push_back({"beta_j", "the element's shift, exact", "2.5", c.beta.at(j)});
  }
  if (output != "y") add_backward_terms(c, ref, m, e);
  if (e.void_bound) return e;
  // bound = (e + u_s (|exact| + e) + eta_s) * slack when the store rounds (with_store), else e * slack.
  const Units u = units_of(m);
  const double unslacked = e.bound / kEvaluationSlack;
  e.evaluation_slack = e.bound - unslacked;
  if (u.store_rounds) {
    e.arithmetic = std::max(0.0, (unslacked - u.us * e.exact_abs - u.eta_s) / (1 + u.us));
    e.store = unslacked - e.arithmetic;
  } else {
    e.arithmetic = unslacked;
  }
  return e;
}

}  // namespace normcheck
