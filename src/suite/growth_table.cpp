#include "suite/growth_table.hpp"

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"
#include "kernels/residual_streams.hpp"
#include "kernels/storage_io.hpp"
#include "oracles/certified_port_hamiltonian.hpp"

namespace normcheck {
namespace {

constexpr const char* kArchs[] = {"plain_residual", "ln_in_branch", "ln_on_trunk", "plain_residual_rescaled"};
constexpr int kPlain = 0, kLnBranch = 1, kRescaled = 3;

double norm_of(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e * e;
  return std::sqrt(s);
}

/// ||x_t|| of residual control `kind` in storage S, t = 0..depth, and the first non-finite depth.
template <class S>
std::vector<double> residual_kernel_norms(int kind, const GrowthConfig& cfg, DType dt, const std::vector<double>& x0, int64_t depth,
                                          uint64_t seed, int64_t& overflow) {
  std::vector<S> x = to_storage<S>(x0);
  std::vector<double> norms{norm_of(x0)};
  overflow = -1;
  int scale_log2 = 0;  // the rescaled stream: ||x_t|| = ||stored x|| 2^scale_log2
  for (int64_t t = 0; t < depth; ++t) {
    const ResidualStep p = residual_step_params(dt, cfg.width, cfg.gain, seed, t);
    const std::vector<S> W1 = to_storage<S>(p.W1), W2 = to_storage<S>(p.W2);
    if (kind == kPlain || kind == kRescaled) x = kernels::plain_residual_step<S>(W1.data(), W2.data(), x);
    else if (kind == kLnBranch) x = kernels::ln_branch_step<S>(W1.data(), W2.data(), x, cfg.eps);
    else x = kernels::ln_trunk_step<S>(W1.data(), W2.data(), x, cfg.eps);
    std::vector<double> xd = to_double(x);
    const bool finite = std::all_of(xd.begin(), xd.end(), [](double e) { return std::isfinite(e); });
    if (!finite && overflow < 0) overflow = t + 1;
    if (kind == kRescaled && finite && norm_of(xd) > 0) {
      // The seed's rescaling, by a power of two: exact, and the branch is positively homogeneous
      // (relu, matrix products), so every later step is the unscaled one times 2^-k bit for bit
      // until the unscaled stream would leave the dtype's range.
      const int k = std::ilogb(norm_of(xd));
      for (double& e : xd) e = std::ldexp(e, -k);
      x = to_storage<S>(xd);
      scale_log2 += k;
    }
    norms.push_back(finite ? std::ldexp(norm_of(to_double(x)), scale_log2) : HUGE_VAL);
  }
  return norms;
}

std::vector<double> residual_kernel_norms_of(int kind, const GrowthConfig& cfg, DType dt, const std::vector<double>& x0, int64_t depth,
                                             uint64_t seed, int64_t& overflow) {
  switch (dt) {
    case DType::f16: return residual_kernel_norms<f16>(kind, cfg, dt, x0, depth, seed, overflow);
    case DType::bf16: return residual_kernel_norms<bf16>(kind, cfg, dt, x0, depth, seed, overflow);
    case DType::f32: return residual_kernel_norms<float>(kind, cfg, dt, x0, depth, seed, overflow);
    case DType::f64: break;
  }
  return residual_kernel_norms<double>(kind, cfg, dt, x0, depth, seed, overflow);
}

GrowthRow row_from(const std::string& arch, DType dt, const GrowthConfig& cfg, const std::vector<double>& kn,
                   const std::vector<double>& on, int64_t overflow) {
  GrowthRow r{arch, dt, {}, {}, overflow};
  for (int64_t d : cfg.depths) {
    r.kernel_ratio.push_back(kn[d] / kn[0]);
    r.oracle_ratio.push_back(on[d] / on[0]);
  }
  return r;
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

}  // namespace

std::vector<GrowthRow> run_growth(const GrowthConfig& cfg, DType dt, BudgetCaseResult& ph) {
  const int64_t depth = *std::max_element(cfg.depths.begin(), cfg.depths.end());
  const uint64_t seed = derive_seed(cfg.seed, 0x6707);
  const PhCase c = make_ph_case(dt, cfg.width, depth, cfg.h, seed);
  std::vector<GrowthRow> rows;
  std::vector<double> plain_oracle;
  for (int kind = 0; kind < 4; ++kind) {
    int64_t overflow = -1;
    const std::vector<double> kn = residual_kernel_norms_of(kind, cfg, dt, c.x0, depth, seed, overflow);
    // The rescaled stream's exact norms are the plain stream's (rescaling does not change it in real arithmetic).
    const std::vector<double> on = kind == kRescaled ? plain_oracle : oracle::residual_stream_norms_mpfr(kind, dt, c.x0, cfg.gain, seed, depth, cfg.eps);
    if (kind == kPlain) plain_oracle = on;
    rows.push_back(row_from(kArchs[kind], dt, cfg, kn, on, overflow));
  }
  BudgetCaseOptions o;
  o.judge_max_n = cfg.width;
  ph = run_budget_case(c, o);
  rows.push_back(row_from("port_hamiltonian", dt, cfg, ph.kernel_norms, ph.oracle_norms, ph.overflow_depth));
  return rows;
}

nlohmann::json growth_rows_json(const GrowthConfig& cfg, const std::vector<GrowthRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const GrowthRow& r : rows) {
    nlohmann::json k = nlohmann::json::array(), o = nlohmann::json::array();
    for (size_t i = 0; i < cfg.depths.size(); ++i) {
      k.push_back(number_or_null(r.kernel_ratio[i]));
      o.push_back(number_or_null(r.oracle_ratio[i]));
    }
    out.push_back({{"arch", r.arch},
                   {"storage", std::string(dtype_info(r.dtype).name)},
                   {"accum", std::string(dtype_info(dtype_info(r.dtype).default_accum).name)},
                   {"kernel_ratio", k},
                   {"oracle_ratio", o},
                   {"overflow_depth", r.overflow_depth < 0 ? nlohmann::json() : nlohmann::json(r.overflow_depth)}});
  }
  return out;
}

}  // namespace normcheck
