#include "oracles/certified_layernorm.hpp"

#include <algorithm>

#include "oracles/certificate_accounting.hpp"
#include "oracles/certified_rms_block.hpp"

namespace normcheck::oracle {

// The precision cascade (docs/bounds.md section 18): double ball, double-double ball, MPFI at 168,
// 500 and 1330 bits. A level whose every output is accepted (radius within 1e-3 ULP, rounding
// decided) ends it. Otherwise, when at most half the rows fail (y, dx, du) and at most half the
// columns (dgamma, dbeta: sums over all rows), only those are evaluated again at the next levels
// and spliced in: the failing rows as a case of their own (each row's y, dx, du and statistics
// depend on that row alone), the failing columns from whole-row statistics (evaluate_*_columns);
// else the whole case goes to the next level. The double ball is not tried for f64 outputs: a 53-bit midpoint
// cannot reach 1e-3 ULP of binary64 unless every output is exact.

namespace {

using LayerNormLevel = CertifiedLayerNorm (*)(const LayerNormCase&, bool);
using ColumnLevel = CertifiedLayerNorm (*)(const LayerNormCase&, const std::vector<int64_t>&);

/// The levels of a cascade: whole cases, and the same levels for columns only.
struct Levels {
  std::vector<LayerNormLevel> whole;
  std::vector<ColumnLevel> columns;
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

/// Columns of dgamma or dbeta the level did not accept.
std::vector<int64_t> failing_columns(const CertifiedLayerNorm& r, const LayerNormCase& c) {
  const FloatFormat& fmt = *dtype_info(c.dtype).format;
  std::vector<int64_t> cols;
  for (int64_t j = 0; j < c.n; ++j) {
    const auto ok = [&](const std::vector<CertifiedValue>& v) { return v.empty() || element_accepted(v[static_cast<size_t>(j)], fmt); };
    if (!ok(r.dgamma) || !ok(r.dbeta)) cols.push_back(j);
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

/// `columns`: dgamma and dbeta are wanted (false for a case of failing rows, whose column sums
/// cover only those rows and are discarded).
CertifiedLayerNorm cascade(const Levels& levels, size_t first, const LayerNormCase& c, bool with_vjp, bool columns = true) {
  CertifiedLayerNorm r;
  for (size_t level = first; level < levels.whole.size(); ++level) {
    r = levels.whole[level](c, with_vjp);
    if (accepted(r)) return r;  // every output accepted: no failing row or column to look for
    const std::vector<int64_t> rows = failing_rows({&r.y, &r.dx}, c);
    const std::vector<int64_t> cols = columns ? failing_columns(r, c) : std::vector<int64_t>{};
    if ((rows.empty() && cols.empty()) || level + 1 == levels.whole.size()) return r;
    if (!rows.empty() && !rows_can_fall_through(rows.size(), c.rows)) continue;
    if (!cols.empty() && !rows_can_fall_through(cols.size(), c.n)) continue;
    settle_columns(levels.columns, level + 1, c, cols, r);
    if (!rows.empty()) {
      const CertifiedLayerNorm part = cascade(levels, level + 1, case_of_rows(c, rows), with_vjp, false);
      put_rows(r.y, part.y, rows, c.n);
      put_rows(r.dx, part.dx, rows, c.n);
      for (auto [whole, piece] : {std::pair{&r.mean, &part.mean}, {&r.var, &part.var}, {&r.rstd, &part.rstd},
                                  {&r.mean_rad, &part.mean_rad}, {&r.var_rad, &part.var_rad}, {&r.rstd_rad, &part.rstd_rad}})
        put_rows(*whole, *piece, rows, 1);
      r.precision_bits = std::max(r.precision_bits, part.precision_bits);
    }
    recount(r, {&r.y, &r.dx, &r.dgamma, &r.dbeta}, c.dtype);
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
/// outputs; f64 outputs skip both 53-bit levels and start at the double-double ball.
size_t first_per_op_level(DType output) { return output == DType::f64 ? 2 : 0; }

}  // namespace

CertifiedLayerNorm certified_layernorm(const LayerNormCase& c, bool with_vjp) {
  // The a priori level's columns are never evaluated alone (settle_columns starts at the level
  // after the failing one), so the double ball's column function stands in its place.
  const Levels all{{evaluate_layernorm_a_priori, evaluate_layernorm_ball, evaluate_layernorm_dd_ball, evaluate_layernorm_mpfi50,
                    evaluate_layernorm_mpfi150, evaluate_layernorm_mpfi400},
                   {evaluate_layernorm_columns_ball, evaluate_layernorm_columns_ball, evaluate_layernorm_columns_dd_ball,
                    evaluate_layernorm_columns_mpfi50, evaluate_layernorm_columns_mpfi150, evaluate_layernorm_columns_mpfi400}};
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
  const Levels all{{evaluate_rmsnorm_a_priori, evaluate_rmsnorm_ball, evaluate_rmsnorm_dd_ball, evaluate_rmsnorm_mpfi50,
                    evaluate_rmsnorm_mpfi150, evaluate_rmsnorm_mpfi400},
                   {evaluate_rmsnorm_columns_ball, evaluate_rmsnorm_columns_ball, evaluate_rmsnorm_columns_dd_ball,
                    evaluate_rmsnorm_columns_mpfi50, evaluate_rmsnorm_columns_mpfi150, evaluate_rmsnorm_columns_mpfi400}};
  return cascade(all, first_per_op_level(c.dtype), c, with_vjp);
}

}  // namespace normcheck::oracle
