#include "oracles/certified_layernorm.hpp"

#include <algorithm>
#include <tuple>

#include "oracles/certificate_accounting.hpp"
#include "oracles/certified_rms_block.hpp"

namespace normcheck::oracle {

// The precision cascade (docs/bounds.md section 18): the a priori double level (f16, bf16 and f32
// outputs of LayerNorm and RMSNorm), double ball, RMSNorm's a priori double-double level (section
// 18.3), double-double ball, MPFI at 168, 500 and 1330 bits. A level whose every output is
// accepted (radius within 1e-3 ULP, rounding decided) ends it.
// Otherwise, when at most half the outputs (y and dx; the JVP: half the rows of du) and at most
// half the columns (dgamma, dbeta: sums over all rows) fail, only those are evaluated again at the
// next levels and spliced in: the failing y and dx outputs from a case of their rows (each row's
// outputs and statistics depend on that row alone; evaluate_*_outputs computes the row statistics
// and the VJP's row means, then those outputs only), the JVP's failing rows as a case of their own,
// the failing columns from whole-row statistics (evaluate_*_columns); else the whole case goes to
// the next level. The 53-bit levels are not tried for f64 outputs: a 53-bit midpoint cannot reach
// 1e-3 ULP of binary64 unless every output is exact.

namespace {

using LayerNormLevel = CertifiedLayerNorm (*)(const LayerNormCase&, bool);
using ColumnLevel = CertifiedLayerNorm (*)(const LayerNormCase&, const std::vector<int64_t>&);
using OutputLevel = CertifiedLayerNorm (*)(const LayerNormCase&, const std::vector<int64_t>&, const std::vector<int64_t>&);

/// The levels of a cascade: whole cases, and the same levels for columns only and for some y and dx
/// outputs only.
struct Levels {
  std::vector<LayerNormLevel> whole;
  std::vector<ColumnLevel> columns;
  std::vector<OutputLevel> outputs;
};
using JvpLevel = CertifiedLayerNormJvp (*)(const LayerNormCase&, const LayerNormTangents&);

/// Rows with an output in one of `per_row` (rows * n each) that the level did not accept.
std::vector<int64_t> failing_rows(std::initializer_list<const std::vector<CertifiedValue>*> per_row, const LayerNormCase& c) {
  const FloatFormat& fmt = *dtype_info(c.dtype).format;
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < c.rows; ++i) {
    bool ok = true;
    for (const auto* v : per_row)
      for (int64_t j = 0; ok && j < c.n && !v->empty(); ++j) ok = element_accepted((*v)[static_cast<size_t>(i * c.n + j)], fmt);
    if (!ok) rows.push_back(i);
  }
  return rows;
}

/// The rows `rows` of a rows * n tensor (empty stays empty).
template <class T>
std::vector<T> take_rows(const std::vector<T>& v, const std::vector<int64_t>& rows, int64_t n) {
  std::vector<T> out;
  if (v.empty()) return out;
  out.reserve(rows.size() * static_cast<size_t>(n));
  for (int64_t i : rows) out.insert(out.end(), v.begin() + i * n, v.begin() + (i + 1) * n);
  return out;
}

/// Writes the rows of `part` (rows.size() * n) back into rows `rows` of `whole`.
template <class T>
void put_rows(std::vector<T>& whole, const std::vector<T>& part, const std::vector<int64_t>& rows, int64_t n) {
  if (whole.empty() || part.empty()) return;
  for (size_t k = 0; k < rows.size(); ++k)
    std::copy(part.begin() + static_cast<int64_t>(k) * n, part.begin() + static_cast<int64_t>(k + 1) * n, whole.begin() + rows[k] * n);
}

LayerNormCase case_of_rows(const LayerNormCase& c, const std::vector<int64_t>& rows) {
  LayerNormCase sub = c;
  sub.rows = static_cast<int64_t>(rows.size());
  sub.x = take_rows(c.x, rows, c.n);
  sub.dy = take_rows(c.dy, rows, c.n);
  return sub;
}

/// Recomputes the accounting of a result from its outputs.
template <class Result>
void recount(Result& r, std::initializer_list<const std::vector<CertifiedValue>*> outputs, DType dt) {
  const FloatFormat& fmt = *dtype_info(dt).format;
  r.max_err_ulps = 0;
  r.undecided_roundings = 0;
  for (const auto* v : outputs)
    for (const CertifiedValue& cv : *v) account_element(cv, fmt, r);
  r.certified = r.max_err_ulps <= kRequiredUlpFraction;
}

/// Worth re-evaluating only some rows (or columns): at most half of them fail.
bool rows_can_fall_through(size_t failing, int64_t rows) { return failing > 0 && 2 * static_cast<int64_t>(failing) <= rows; }

/// Whether the level accepted cv; if so, folds its radius in ULPs into kept_max (one radius
/// computation per output: element_accepted's and account_element's).
bool accepted_into(const CertifiedValue& cv, const FloatFormat& fmt, double& kept_max) {
  const double ulps = radius_in_ulps(cv, fmt);
  const bool ok = cv.rounding_decided && ulps <= kRequiredUlpFraction;
  if (ok) kept_max = std::max(kept_max, ulps);
  return ok;
}

/// Columns of dgamma or dbeta the level did not accept; the accepted ones' largest radius goes into kept_max.
std::vector<int64_t> failing_columns(const CertifiedLayerNorm& r, const LayerNormCase& c, double& kept_max) {
  const FloatFormat& fmt = *dtype_info(c.dtype).format;
  std::vector<int64_t> cols;
  for (int64_t j = 0; j < c.n; ++j) {
    double column_max = 0;  // folded in only when the whole column is accepted (else both go on)
    const auto ok = [&](const std::vector<CertifiedValue>& v) { return v.empty() || accepted_into(v[static_cast<size_t>(j)], fmt, column_max); };
    const bool gamma_ok = ok(r.dgamma), beta_ok = ok(r.dbeta);
    if (gamma_ok && beta_ok) kept_max = std::max(kept_max, column_max);
    else cols.push_back(j);
  }
  return cols;
}

/// Evaluates the columns `cols` again from level `first` on until each is accepted (or the last
/// level), splicing them into r.
void settle_columns(const std::vector<ColumnLevel>& levels, size_t first, const LayerNormCase& c, std::vector<int64_t> cols,
                    CertifiedLayerNorm& r) {
  const FloatFormat& fmt = *dtype_info(c.dtype).format;
  for (size_t level = first; level < levels.size() && !cols.empty(); ++level) {
    const CertifiedLayerNorm part = levels[level](c, cols);
    std::vector<int64_t> still;
    for (size_t k = 0; k < cols.size(); ++k) {
      const auto j = static_cast<size_t>(cols[k]);
      r.dgamma[j] = part.dgamma[k];
      bool ok = element_accepted(part.dgamma[k], fmt);
      if (!part.dbeta.empty()) {
        r.dbeta[j] = part.dbeta[k];
        ok = ok && element_accepted(part.dbeta[k], fmt);
      }
      if (!ok) still.push_back(cols[k]);
    }
    r.precision_bits = std::max(r.precision_bits, part.precision_bits);  // reported: the highest level used
    cols = std::move(still);
  }
}

/// Indices of the outputs of v that the level did not accept; the accepted ones' largest radius goes into kept_max.
std::vector<int64_t> failing_outputs(const std::vector<CertifiedValue>& v, const FloatFormat& fmt, double& kept_max) {
  std::vector<int64_t> out;
  for (size_t k = 0; k < v.size(); ++k)
    if (!accepted_into(v[k], fmt, kept_max)) out.push_back(static_cast<int64_t>(k));
  return out;
}

/// The accounting of r after the outputs and columns at these indices were evaluated again: the
/// outputs the level accepted (decided, largest radius kept_max) and the ones spliced in.
void recount_spliced(CertifiedLayerNorm& r, double kept_max, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs,
                     const std::vector<int64_t>& cols, DType dt) {
  const FloatFormat& fmt = *dtype_info(dt).format;
  r.max_err_ulps = kept_max;
  r.undecided_roundings = 0;
  for (int64_t k : ys) account_element(r.y[static_cast<size_t>(k)], fmt, r);
  for (int64_t k : dxs) account_element(r.dx[static_cast<size_t>(k)], fmt, r);
  for (int64_t j : cols)
    for (const auto* v : {&r.dgamma, &r.dbeta})
      if (!v->empty()) account_element((*v)[static_cast<size_t>(j)], fmt, r);
  r.certified = r.max_err_ulps <= kRequiredUlpFraction;
}

/// The rows of the row-major outputs a and b, ascending, each once.
std::vector<int64_t> rows_of(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t n) {
  std::vector<int64_t> rows;
  for (const auto* v : {&a, &b})
    for (int64_t k : *v) rows.push_back(k / n);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

/// The outputs (row-major indices into a case) as indices into case_of_rows(case, rows).
std::vector<int64_t> indices_in_rows(const std::vector<int64_t>& outputs, const std::vector<int64_t>& rows, int64_t n) {
  std::vector<int64_t> out;
  out.reserve(outputs.size());
  for (int64_t k : outputs) out.push_back((std::lower_bound(rows.begin(), rows.end(), k / n) - rows.begin()) * n + k % n);
  return out;
}

/// Evaluates the y outputs `ys` and dx outputs `dxs` again from level `first` on until each is
/// accepted (or the last level), each level on a case of the rows that still have one (whose
/// statistics it recomputes over whole rows), splicing them and those rows' statistics into r.
void settle_outputs(const std::vector<OutputLevel>& levels, size_t first, const LayerNormCase& c, std::vector<int64_t> ys,
                    std::vector<int64_t> dxs, CertifiedLayerNorm& r) {
  const FloatFormat& fmt = *dtype_info(c.dtype).format;
  for (size_t level = first; level < levels.size() && !(ys.empty() && dxs.empty()); ++level) {
    const std::vector<int64_t> rows = rows_of(ys, dxs, c.n);
    const CertifiedLayerNorm part = levels[level](case_of_rows(c, rows), indices_in_rows(ys, rows, c.n), indices_in_rows(dxs, rows, c.n));
    for (auto [whole, got, wanted] : {std::tuple{&r.y, &part.y, &ys}, {&r.dx, &part.dx, &dxs}}) {
      std::vector<int64_t> still;
      for (size_t t = 0; t < wanted->size(); ++t) {
        const auto k = static_cast<size_t>((*wanted)[t]);
        (*whole)[k] = (*got)[t];
        if (!element_accepted((*got)[t], fmt)) still.push_back((*wanted)[t]);
      }
      *wanted = std::move(still);
    }
    for (auto [whole, piece] : {std::pair{&r.mean, &part.mean}, {&r.var, &part.var}, {&r.rstd, &part.rstd},
                                {&r.mean_rad, &part.mean_rad}, {&r.var_rad, &part.var_rad}, {&r.rstd_rad, &part.rstd_rad}})
      put_rows(*whole, *piece, rows, 1);
    r.precision_bits = std::max(r.precision_bits, part.precision_bits);  // reported: the highest level used
  }
}

CertifiedLayerNorm cascade(const Levels& levels, size_t first, const LayerNormCase& c, bool with_vjp) {
  CertifiedLayerNorm r;
  const FloatFormat& fmt = *dtype_info(c.dtype).format;
  for (size_t level = first; level < levels.whole.size(); ++level) {
    r = levels.whole[level](c, with_vjp);
    if (accepted(r)) return r;  // every output accepted: no failing output or column to look for
    double kept_max = 0;  // the largest radius in ULPs of the outputs this level accepted
    const std::vector<int64_t> ys = failing_outputs(r.y, fmt, kept_max), dxs = failing_outputs(r.dx, fmt, kept_max);
    const std::vector<int64_t> cols = failing_columns(r, c, kept_max);
    const size_t outputs_failing = ys.size() + dxs.size();
    if ((outputs_failing == 0 && cols.empty()) || level + 1 == levels.whole.size()) return r;
    if (outputs_failing > 0 && !rows_can_fall_through(outputs_failing, static_cast<int64_t>(r.y.size() + r.dx.size()))) continue;
    if (!cols.empty() && !rows_can_fall_through(cols.size(), c.n)) continue;
    settle_columns(levels.columns, level + 1, c, cols, r);
    settle_outputs(levels.outputs, level + 1, c, ys, dxs, r);
    recount_spliced(r, kept_max, ys, dxs, cols, c.dtype);
    return r;
  }
  return r;
}

CertifiedLayerNormJvp cascade_jvp(const std::vector<JvpLevel>& levels, size_t first, const LayerNormCase& c, const LayerNormTangents& t) {
  CertifiedLayerNormJvp r;
  for (size_t level = first; level < levels.size(); ++level) {
    r = levels[level](c, t);
    if (accepted(r) || level + 1 == levels.size()) return r;
    const std::vector<int64_t> rows = failing_rows({&r.du}, c);
    if (!rows_can_fall_through(rows.size(), c.rows)) continue;
    LayerNormTangents sub_t = t;
    sub_t.dx = take_rows(t.dx, rows, c.n);
    const CertifiedLayerNormJvp part = cascade_jvp(levels, level + 1, case_of_rows(c, rows), sub_t);
    put_rows(r.du, part.du, rows, c.n);
    r.precision_bits = std::max(r.precision_bits, part.precision_bits);
    recount(r, {&r.du}, c.dtype);
    return r;
  }
  return r;
}

}  // namespace

namespace {

/// The first level of the per-op cascades below: the a priori level (index 0) for f16, bf16 and f32
/// outputs; f64 outputs skip both 53-bit levels and start at the first 106-bit level (index 2:
/// LayerNorm's double-double ball, RMSNorm's a priori double-double level).
size_t first_per_op_level(DType output) { return output == DType::f64 ? 2 : 0; }

}  // namespace

CertifiedLayerNorm certified_layernorm(const LayerNormCase& c, bool with_vjp) {
  // The a priori level's columns and outputs are never evaluated alone (settle_columns and
  // settle_outputs start at the level after the failing one), so the double ball's functions stand
  // in its place.
  const Levels all{{evaluate_layernorm_a_priori, evaluate_layernorm_ball, evaluate_layernorm_dd_ball, evaluate_layernorm_mpfi50,
                    evaluate_layernorm_mpfi150, evaluate_layernorm_mpfi400},
                   {evaluate_layernorm_columns_ball, evaluate_layernorm_columns_ball, evaluate_layernorm_columns_dd_ball,
                    evaluate_layernorm_columns_mpfi50, evaluate_layernorm_columns_mpfi150, evaluate_layernorm_columns_mpfi400},
                   {evaluate_layernorm_outputs_ball, evaluate_layernorm_outputs_ball, evaluate_layernorm_outputs_dd_ball,
                    evaluate_layernorm_outputs_mpfi50, evaluate_layernorm_outputs_mpfi150, evaluate_layernorm_outputs_mpfi400}};
  return cascade(all, first_per_op_level(c.dtype), c, with_vjp);
}

CertifiedLayerNormJvp certified_layernorm_jvp(const LayerNormCase& c, const LayerNormTangents& t) {
  return cascade_jvp({evaluate_layernorm_jvp_ball, evaluate_layernorm_jvp_dd_ball, evaluate_layernorm_jvp_mpfi50,
                      evaluate_layernorm_jvp_mpfi150, evaluate_layernorm_jvp_mpfi400},
                     first_cascade_level(c.dtype), c, t);
}

CertifiedLayerNormJvp certified_rmsnorm_jvp(const LayerNormCase& c, const LayerNormTangents& t) {
  return cascade_jvp({evaluate_rmsnorm_jvp_ball, evaluate_rmsnorm_jvp_dd_ball, evaluate_rmsnorm_jvp_mpfi50,
                      evaluate_rmsnorm_jvp_mpfi150, evaluate_rmsnorm_jvp_mpfi400},
                     first_cascade_level(c.dtype), c, t);
}

CertifiedRmsBlock certified_rms_block(const RmsBlockCase& c) {
  return escalate_from_level<CertifiedRmsBlock>(
      first_cascade_level(c.dtype),
      {evaluate_rms_block_ball, evaluate_rms_block_dd_ball, evaluate_rms_block_mpfi50, evaluate_rms_block_mpfi150, evaluate_rms_block_mpfi400}, c);
}

CertifiedLayerNorm certified_rmsnorm(const LayerNormCase& c, bool with_vjp) {
  // RMSNorm has a 106-bit a priori level too (index 2, section 18.3), before the double-double ball.
  const Levels all{{evaluate_rmsnorm_a_priori, evaluate_rmsnorm_ball, evaluate_rmsnorm_a_priori_dd, evaluate_rmsnorm_dd_ball,
                    evaluate_rmsnorm_mpfi50, evaluate_rmsnorm_mpfi150, evaluate_rmsnorm_mpfi400},
                   {evaluate_rmsnorm_columns_ball, evaluate_rmsnorm_columns_ball, evaluate_rmsnorm_columns_a_priori_dd,
                    evaluate_rmsnorm_columns_dd_ball, evaluate_rmsnorm_columns_mpfi50, evaluate_rmsnorm_columns_mpfi150,
                    evaluate_rmsnorm_columns_mpfi400},
                   {evaluate_rmsnorm_outputs_ball, evaluate_rmsnorm_outputs_ball, evaluate_rmsnorm_outputs_a_priori_dd,
                    evaluate_rmsnorm_outputs_dd_ball, evaluate_rmsnorm_outputs_mpfi50, evaluate_rmsnorm_outputs_mpfi150,
                    evaluate_rmsnorm_outputs_mpfi400}};
  return cascade(all, first_per_op_level(c.dtype), c, with_vjp);
}

}  // namespace normcheck::oracle
