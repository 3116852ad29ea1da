// Every level of the certified LayerNorm and RMSNorm oracles, and every entry point (with and without
// the VJP, forward only, the column and element fall-throughs, the JVPs), against an independent
// reference written here from the textbook formulas in MPFI at 1000 decimal digits (about 3300 bits),
// on binade-extreme rows (issue 42): every enclosure a level returns must contain the exact value,
// and every rounding it calls decided must be the exact value's. One MPFI type in this TU.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <boost/multiprecision/mpfi.hpp>
#include <functional>
#include <sstream>

#include "oracles/certified_layernorm.hpp"
#include "properties/rc_generators.hpp"
#include "io/case_json.hpp"

using namespace normcheck;
using Exact = boost::multiprecision::number<boost::multiprecision::mpfi_float_backend<1000>, boost::multiprecision::et_off>;
using oracle::CertifiedLayerNorm;
using oracle::CertifiedLayerNormJvp;

namespace {

/// The exact outputs of one case, as narrow intervals.
struct Truth {
  std::vector<Exact> y, dx, dgamma, dbeta, du, mean, var, rstd;
};

Exact mean_of(const std::vector<Exact>& v) {
  Exact s(0);
  for (const Exact& e : v) s += e;
  return s / Exact(static_cast<double>(v.size()));
}

/// LayerNorm (or RMSNorm, with a zero mean and no shift) written from the formulas, row by row.
Truth exact_outputs(const LayerNormCase& c, bool rms, const LayerNormTangents* t) {
  Truth out;
  const auto n = static_cast<size_t>(c.n);
  out.dgamma.assign(n, Exact(0));
  out.dbeta.assign(n, Exact(0));
  for (int64_t i = 0; i < c.rows; ++i) {
    std::vector<Exact> x(n), d(n), sq(n), z(n), g(n), gz(n);
    for (size_t j = 0; j < n; ++j) x[j] = Exact(c.x[i * n + j]);
    const Exact mu = rms ? Exact(0) : mean_of(x);
    for (size_t j = 0; j < n; ++j) {
      d[j] = x[j] - mu;
      sq[j] = d[j] * d[j];
    }
    const Exact var = mean_of(sq), r = Exact(1) / sqrt(var + Exact(c.eps));
    out.mean.push_back(mu);
    out.var.push_back(var);
    out.rstd.push_back(r);
    for (size_t j = 0; j < n; ++j) {
      z[j] = d[j] * r;
      out.y.push_back(Exact(c.gamma[j]) * z[j] + (rms ? Exact(0) : Exact(c.beta[j])));
      g[j] = Exact(c.dy[i * n + j]) * Exact(c.gamma[j]);
      gz[j] = g[j] * z[j];
      out.dgamma[j] += Exact(c.dy[i * n + j]) * z[j];
      out.dbeta[j] += Exact(c.dy[i * n + j]);
    }
    const Exact a = rms ? Exact(0) : mean_of(g), b = mean_of(gz);
    for (size_t j = 0; j < n; ++j) out.dx.push_back(r * (g[j] - a - z[j] * b));
    if (!t) continue;
    std::vector<Exact> tx(n), ztx(n);
    for (size_t j = 0; j < n; ++j) {
      tx[j] = Exact(t->dx[i * n + j]);
      ztx[j] = z[j] * tx[j];
    }
    const Exact ta = rms ? Exact(0) : mean_of(tx), tb = mean_of(ztx);
    for (size_t j = 0; j < n; ++j)
      out.du.push_back(Exact(c.gamma[j]) * r * (tx[j] - ta - z[j] * tb) + z[j] * Exact(t->dgamma[j]) +
                       (rms ? Exact(0) : Exact(t->dbeta[j])));
  }
  return out;
}

/// The enclosure of a certificate, exactly: (hi + lo +- rad) 2^scale.
Exact enclosure(const CertifiedValue& v) {
  Exact mid = Exact(v.hi) + Exact(v.lo), rad(v.rad);
  Exact lo = mid - rad, hi = mid + rad;
  Exact e(0);
  mpfi_interv_fr(e.backend().data(), boost::multiprecision::lower(lo).backend().data(), boost::multiprecision::upper(hi).backend().data());
  mpfi_mul_2si(e.backend().data(), e.backend().data(), v.scale);
  return e;
}

/// The rounding interval of dtype value r: the reals that round to r (either zero for 0; the
/// overflow threshold and beyond for an infinity), as an interval (unbounded ends: +-inf).
Exact rounding_interval(double r, DType dt) {
  const FloatFormat& f = *dtype_info(dt).format;
  const double max = dtype_info(dt).max_finite;
  const auto neighbour = [&](double v, int step) {
    const double w = decode_bits(bits_from_ordered_key(ordered_key(encode_exact(v, f), f) + step, f), f);
    return std::isfinite(w) ? Exact(w) : Exact(v) + (Exact(v) - Exact(decode_bits(bits_from_ordered_key(ordered_key(encode_exact(v, f), f) - step, f), f)));
  };
  Exact lo, hi;
  if (std::isinf(r)) {
    const Exact threshold = Exact(max) + (Exact(max) - neighbour(max, -1)) / 2;
    lo = r > 0 ? threshold : Exact(-std::numeric_limits<double>::infinity());
    hi = r > 0 ? Exact(std::numeric_limits<double>::infinity()) : -threshold;
  } else if (r == 0) {  // both zeros: the sign of zero is not judged
    hi = Exact(dtype_info(dt).denorm_min) / 2;
    lo = -hi;
  } else {
    lo = (Exact(r) + neighbour(r, -1)) / 2;
    hi = (Exact(r) + neighbour(r, 1)) / 2;
  }
  Exact e(0);
  mpfi_interv_fr(e.backend().data(), boost::multiprecision::lower(lo).backend().data(), boost::multiprecision::upper(hi).backend().data());
  return e;
}

bool disjoint(const Exact& a, const Exact& b) {
  return boost::multiprecision::upper(a) < boost::multiprecision::lower(b) || boost::multiprecision::upper(b) < boost::multiprecision::lower(a);
}

/// The first certificate of `got` that contradicts the exact values: an enclosure without the exact
/// value, or a decided rounding that is not the exact value's. `index` maps got's positions to truth's.
std::string first_contradiction(const std::string& what, const std::vector<CertifiedValue>& got, const std::vector<Exact>& truth,
                                DType dt, const std::function<size_t(size_t)>& index = [](size_t k) { return k; }) {
  for (size_t k = 0; k < got.size(); ++k) {
    const CertifiedValue& v = got[k];
    const Exact& exact = truth.at(index(k));
    std::ostringstream s;
    s << what << "[" << index(k) << "]: hi " << hexfloat(v.hi) << " lo " << hexfloat(v.lo) << " rad " << hexfloat(v.rad) << " scale "
      << v.scale << " rounded " << hexfloat(v.rounded) << (v.rounding_decided ? " (decided)" : " (undecided)") << "; exact ~ "
      << boost::multiprecision::median(exact).convert_to<double>();
    if (v.unbounded()) continue;  // claims nothing
    if (disjoint(enclosure(v), exact)) return s.str() + ": the enclosure misses the exact value";
    if (v.rounding_decided && disjoint(rounding_interval(v.rounded, dt), exact))
      return s.str() + ": the decided rounding is not the exact value's";
  }
  return "";
}

/// The statistics of a level (nearest doubles with certified radii) against the exact ones.
std::string statistics_contradiction(const CertifiedLayerNorm& r, const Truth& t, const std::vector<int64_t>& rows) {
  for (size_t k = 0; k < r.rstd.size(); ++k) {
    const auto i = static_cast<size_t>(rows.empty() ? static_cast<int64_t>(k) : rows[k]);
    for (auto [mid, rad, exact, name] : {std::tuple{&r.mean, &r.mean_rad, &t.mean, "mean"}, {&r.var, &r.var_rad, &t.var, "var"},
                                         {&r.rstd, &r.rstd_rad, &t.rstd, "rstd"}}) {
      if (k >= mid->size() || !std::isfinite((*mid)[k]) || !((*rad)[k] < HUGE_VAL)) continue;
      CertifiedValue cv;
      cv.hi = (*mid)[k];
      cv.rad = (*rad)[k];
      if (disjoint(enclosure(cv), (*exact)[i]))
        return std::string(name) + "[" + std::to_string(i) + "] " + hexfloat((*mid)[k]) + " +- " + hexfloat((*rad)[k]) + " misses the exact value";
    }
  }
  return "";
}

std::string case_text(const LayerNormCase& c) {
  std::ostringstream s;
  s << "\n dtype " << dtype_info(c.dtype).name << " rows " << c.rows << " n " << c.n << " eps " << hexfloat(c.eps);
  for (auto [v, name] : {std::pair{&c.x, "x"}, {&c.gamma, "gamma"}, {&c.beta, "beta"}, {&c.dy, "dy"}}) {
    s << "\n  " << name << " =";
    for (double e : *v) s << " " << hexfloat(e);
  }
  return s.str();
}

using WholeLevel = CertifiedLayerNorm (*)(const LayerNormCase&, bool);
using ColumnLevel = CertifiedLayerNorm (*)(const LayerNormCase&, const std::vector<int64_t>&);
using OutputLevel = CertifiedLayerNorm (*)(const LayerNormCase&, const std::vector<int64_t>&, const std::vector<int64_t>&);
using JvpLevel = CertifiedLayerNormJvp (*)(const LayerNormCase&, const LayerNormTangents&);

struct Family {
  bool rms;
  std::vector<std::pair<const char*, WholeLevel>> whole;
  std::vector<std::pair<const char*, ColumnLevel>> columns;
  std::vector<std::pair<const char*, OutputLevel>> outputs;
  std::vector<std::pair<const char*, JvpLevel>> jvp;
};

const Family& layernorm_family() {
  using namespace oracle;
  static const Family f{false,
                        {{"certified_layernorm", certified_layernorm},
                         {"a_priori", evaluate_layernorm_a_priori},
                         {"ball", evaluate_layernorm_ball},
                         {"dd_ball", evaluate_layernorm_dd_ball},
                         {"mpfi50", evaluate_layernorm_mpfi50},
                         {"mpfi150", evaluate_layernorm_mpfi150},
                         {"mpfi400", evaluate_layernorm_mpfi400}},
                        {{"columns_ball", evaluate_layernorm_columns_ball},
                         {"columns_dd_ball", evaluate_layernorm_columns_dd_ball},
                         {"columns_mpfi50", evaluate_layernorm_columns_mpfi50},
                         {"columns_mpfi150", evaluate_layernorm_columns_mpfi150},
                         {"columns_mpfi400", evaluate_layernorm_columns_mpfi400}},
                        {{"outputs_ball", evaluate_layernorm_outputs_ball},
                         {"outputs_dd_ball", evaluate_layernorm_outputs_dd_ball},
                         {"outputs_mpfi50", evaluate_layernorm_outputs_mpfi50},
                         {"outputs_mpfi150", evaluate_layernorm_outputs_mpfi150},
                         {"outputs_mpfi400", evaluate_layernorm_outputs_mpfi400}},
                        {{"certified_layernorm_jvp", certified_layernorm_jvp},
                         {"jvp_ball", evaluate_layernorm_jvp_ball},
                         {"jvp_dd_ball", evaluate_layernorm_jvp_dd_ball},
                         {"jvp_mpfi50", evaluate_layernorm_jvp_mpfi50},
                         {"jvp_mpfi150", evaluate_layernorm_jvp_mpfi150},
                         {"jvp_mpfi400", evaluate_layernorm_jvp_mpfi400}}};
  return f;
}

const Family& rmsnorm_family() {
  using namespace oracle;
  static const Family f{true,
                        {{"certified_rmsnorm", certified_rmsnorm},
                         {"a_priori", evaluate_rmsnorm_a_priori},
                         {"ball", evaluate_rmsnorm_ball},
                         {"a_priori_dd", evaluate_rmsnorm_a_priori_dd},
                         {"dd_ball", evaluate_rmsnorm_dd_ball},
                         {"mpfi50", evaluate_rmsnorm_mpfi50},
                         {"mpfi150", evaluate_rmsnorm_mpfi150},
                         {"mpfi400", evaluate_rmsnorm_mpfi400}},
                        {{"columns_ball", evaluate_rmsnorm_columns_ball},
                         {"columns_a_priori_dd", evaluate_rmsnorm_columns_a_priori_dd},
                         {"columns_dd_ball", evaluate_rmsnorm_columns_dd_ball},
                         {"columns_mpfi50", evaluate_rmsnorm_columns_mpfi50},
                         {"columns_mpfi150", evaluate_rmsnorm_columns_mpfi150},
                         {"columns_mpfi400", evaluate_rmsnorm_columns_mpfi400}},
                        {{"outputs_ball", evaluate_rmsnorm_outputs_ball},
                         {"outputs_a_priori_dd", evaluate_rmsnorm_outputs_a_priori_dd},
                         {"outputs_dd_ball", evaluate_rmsnorm_outputs_dd_ball},
                         {"outputs_mpfi50", evaluate_rmsnorm_outputs_mpfi50},
                         {"outputs_mpfi150", evaluate_rmsnorm_outputs_mpfi150},
                         {"outputs_mpfi400", evaluate_rmsnorm_outputs_mpfi400}},
                        {{"certified_rmsnorm_jvp", certified_rmsnorm_jvp},
                         {"jvp_ball", evaluate_rmsnorm_jvp_ball},
                         {"jvp_dd_ball", evaluate_rmsnorm_jvp_dd_ball},
                         {"jvp_mpfi50", evaluate_rmsnorm_jvp_mpfi50},
                         {"jvp_mpfi150", evaluate_rmsnorm_jvp_mpfi150},
                         {"jvp_mpfi400", evaluate_rmsnorm_jvp_mpfi400}}};
  return f;
}

/// Whole evaluations with and without the VJP.
std::string check_whole(const Family& f, const LayerNormCase& c, const Truth& t) {
  for (const auto& [name, level] : f.whole)
    for (const bool vjp : {false, true}) {
      const CertifiedLayerNorm r = level(c, vjp);
      const std::string at = std::string(f.rms ? "rmsnorm " : "layernorm ") + name + (vjp ? " (with the VJP) " : " (forward only) ");
      for (auto [got, truth, what] : {std::tuple{&r.y, &t.y, "y"}, {&r.dx, &t.dx, "dx"}, {&r.dgamma, &t.dgamma, "dgamma"},
                                      {&r.dbeta, &t.dbeta, "dbeta"}})
        if (auto e = first_contradiction(at + what, *got, *truth, c.dtype); !e.empty()) return e;
      if (auto e = statistics_contradiction(r, t, {}); !e.empty()) return at + e;
    }
  return "";
}

/// The column and element fall-throughs on every column and on every output.
std::string check_parts(const Family& f, const LayerNormCase& c, const Truth& t) {
  std::vector<int64_t> cols(static_cast<size_t>(c.n)), all(c.x.size());
  for (size_t k = 0; k < cols.size(); ++k) cols[k] = static_cast<int64_t>(k);
  for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int64_t>(k);
  const std::string family = f.rms ? "rmsnorm " : "layernorm ";
  for (const auto& [name, level] : f.columns) {
    const CertifiedLayerNorm r = level(c, cols);
    if (auto e = first_contradiction(family + name + " dgamma", r.dgamma, t.dgamma, c.dtype); !e.empty()) return e;
    if (auto e = first_contradiction(family + name + " dbeta", r.dbeta, t.dbeta, c.dtype); !e.empty()) return e;
  }
  for (const auto& [name, level] : f.outputs) {
    const CertifiedLayerNorm r = level(c, all, all);
    if (auto e = first_contradiction(family + name + " y", r.y, t.y, c.dtype); !e.empty()) return e;
    if (auto e = first_contradiction(family + name + " dx", r.dx, t.dx, c.dtype); !e.empty()) return e;
    std::vector<int64_t> rows(static_cast<size_t>(c.rows));
    for (size_t k = 0; k < rows.size(); ++k) rows[k] = static_cast<int64_t>(k);
    if (auto e = statistics_contradiction(r, t, rows); !e.empty()) return family + name + " " + e;
  }
  return "";
}

std::string check_jvp(const Family& f, const LayerNormCase& c, const LayerNormTangents& tangents, const Truth& t) {
  for (const auto& [name, level] : f.jvp) {
    const CertifiedLayerNormJvp r = level(c, tangents);
    if (auto e = first_contradiction(std::string(f.rms ? "rmsnorm " : "layernorm ") + name + " du", r.du, t.du, c.dtype); !e.empty())
      return e;
  }
  return "";
}

/// Tangents of the case's dtype from the same extreme values (the generator's cotangent and shifts).
LayerNormTangents tangents_of(const LayerNormCase& c) {
  LayerNormTangents t;
  t.dx = c.dy;
  t.dgamma = c.beta;
  t.dbeta = c.gamma;
  return t;
}

/// Every contradiction of every level and entry point on case c (empty when none).
std::string check_case(const LayerNormCase& c) {
  const LayerNormTangents tangents = tangents_of(c);
  for (const Family* f : {&layernorm_family(), &rmsnorm_family()}) {
    const Truth t = exact_outputs(c, f->rms, &tangents);
    for (const std::string& e : {check_whole(*f, c, t), check_parts(*f, c, t), check_jvp(*f, c, tangents, t)})
      if (!e.empty()) return e + case_text(c);
  }
  return "";
}

LayerNormCase one_row_case(DType dt, double eps, std::vector<double> x, std::vector<double> gamma) {
  LayerNormCase c;
  c.dtype = dt;
  c.rows = static_cast<int64_t>(x.size()) / static_cast<int64_t>(gamma.size());
  c.n = static_cast<int64_t>(gamma.size());
  c.eps = eps;
  c.x = std::move(x);
  c.gamma = std::move(gamma);
  c.beta.assign(c.gamma.size(), 0.0);
  c.dy.assign(c.x.size(), 1.0);
  return c;
}

}  // namespace

TEST(OracleExtremes, TheForwardOnlyRmsNormOracleDoesNotCertifyAFalseZero) {
  // Issue 42's reproduction: rows 3, n 1, eps 2^34, gain 2^100, x = (2^-1074, 3, -1e-3). Exact
  // y[0] = 2^-991 (1 - 2^-2183); the a priori double-double level returned the exact ball 0.
  const LayerNormCase c = one_row_case(DType::f64, 0x1p34, {0x1p-1074, 3, -1e-3}, {0x1p100});
  const Truth t = exact_outputs(c, true, nullptr);
  for (const bool vjp : {false, true}) {
    const CertifiedLayerNorm r = oracle::certified_rmsnorm(c, vjp);
    EXPECT_EQ(first_contradiction("y", r.y, t.y, c.dtype), "") << vjp;
    EXPECT_EQ(r.y[0].rounded, 0x1p-991) << vjp;
  }
  EXPECT_EQ(first_contradiction("y", oracle::evaluate_rmsnorm_a_priori_dd(c, false).y, t.y, c.dtype), "");
}

TEST(OracleExtremes, TheAPrioriRmsNormDxRadiusKeepsTheUnderflowOfZTimesTheRowMean) {
  // z_0 = r x_0 underflows (r about 2^-500, x_0 = 2^-1074) while the row mean m of g dy z is about
  // 2^1019: dx_0 = -r z_0 m is -7.3e-318 (1.5e6 subnormal spacings), all of it the R eta |m| term of
  // the radius. Computed as (R eta)(2 + |m|), R eta underflowed to 0 and the radius (17 eta) missed it. The a priori
  // level serves only f16, bf16 and f32 in the cascade; called on f64 it must still enclose.
  LayerNormCase c = one_row_case(DType::f64, 0x1p-1074, {0x1p-1074, 0x1p500}, {1.0, 0x1p510});
  c.dy = {0.0, 0x1p510};
  const Truth t = exact_outputs(c, true, nullptr);
  EXPECT_EQ(first_contradiction("dx", oracle::evaluate_rmsnorm_a_priori(c, true).dx, t.dx, c.dtype), "");
}

TEST(OracleExtremes, EveryLevelAndEntryPointEnclosesTheExactValuesOnBinadeExtremeRows) {
  for_each_dtype([](auto tag) {
    const DType dt = dtype_traits<decltype(tag)>::id;
    const bool ok = rc::check(std::string(dtype_info(dt).name) + " oracle levels on binade-extreme rows", [dt] {
      const auto rows = *rc::gen::inRange<int64_t>(1, 4);
      const auto n = *rc::gen::inRange<int64_t>(1, 6);
      const auto seed = *rc::gen::arbitrary<uint64_t>();
      const LayerNormCase c = gen::make_layernorm_case("binade_extreme", dt, seed, gen::ShapeRequest{rows, n, 64});
      const std::string e = check_case(c);
      if (!e.empty()) RC_FAIL(e);
    });
    EXPECT_TRUE(ok) << dtype_info(dt).name;
  });
}
