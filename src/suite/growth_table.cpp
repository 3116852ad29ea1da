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
constexpr int kPlain = 0, kLnBranch = 1, kLnTrunk = 2, kRescaled = 3;

double norm_of(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e * e;
  return std::sqrt(s);
}

/// v scaled by 2^-k, k = the exponent of ||v|| (exact: a power of two), and k; v unchanged when
/// ||v|| is 0 or not finite.
std::pair<std::vector<double>, int> rescaled(std::vector<double> v) {
  const double nv = norm_of(v);
  if (!std::isfinite(nv) || nv == 0) return {std::move(v), 0};
  const int k = std::ilogb(nv);
  for (double& e : v) e = std::ldexp(e, -k);
  return {std::move(v), k};
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
    if (kind == kRescaled && finite) {
      // The seed's rescaling, by a power of two: exact, and the branch is positively homogeneous
      // (relu, matrix products), so every later step is the unscaled one times 2^-k bit for bit
      // until the unscaled stream would leave the dtype's range.
      const auto [xs, k] = rescaled(std::move(xd));
      x = to_storage<S>(xs);
      scale_log2 += k;
    }
    norms.push_back(finite ? std::ldexp(norm_of(to_double(x)), scale_log2) : HUGE_VAL);
  }
  return norms;
}

/// One step's VJP of control `kind` at the state x (the rescaled stream's state: the steps are
/// positively homogeneous of degree 1, so their Jacobians are those of the unscaled stream).
template <class S>
std::vector<S> residual_step_vjp(int kind, const std::vector<S>& W1, const std::vector<S>& W2, const std::vector<S>& x,
                                 const std::vector<S>& g, double eps) {
  if (kind == kLnBranch) return kernels::ln_branch_step_vjp<S>(W1.data(), W2.data(), x, g, eps);
  if (kind == kLnTrunk) return kernels::ln_trunk_step_vjp<S>(W1.data(), W2.data(), x, g, eps);
  return kernels::plain_residual_step_vjp<S>(W1.data(), W2.data(), x, g);
}

/// Gradient growth ||d<g, x_d>/dx_0|| / ||g|| of control `kind` in storage S for each d of cfg.depths:
/// the forward states are kept (rescaled like the forward for the rescaled row), then each depth's
/// network is differentiated by the step VJP kernels; the rescaled row also rescales the cotangent
/// by a power of two after every step (the VJP is linear: exact).
template <class S>
std::vector<double> residual_kernel_grad_ratios(int kind, const GrowthConfig& cfg, DType dt, const std::vector<double>& x0,
                                                const std::vector<double>& gL, uint64_t seed) {
  const int64_t depth = *std::max_element(cfg.depths.begin(), cfg.depths.end());
  std::vector<std::vector<S>> xs{to_storage<S>(x0)};
  std::vector<std::vector<S>> W1s, W2s;
  for (int64_t t = 0; t < depth; ++t) {
    const ResidualStep p = residual_step_params(dt, cfg.width, cfg.gain, seed, t);
    W1s.push_back(to_storage<S>(p.W1));
    W2s.push_back(to_storage<S>(p.W2));
    if (t + 1 == depth) break;
    std::vector<S> x = xs.back();
    if (kind == kPlain || kind == kRescaled) x = kernels::plain_residual_step<S>(W1s.back().data(), W2s.back().data(), x);
    else if (kind == kLnBranch) x = kernels::ln_branch_step<S>(W1s.back().data(), W2s.back().data(), x, cfg.eps);
    else x = kernels::ln_trunk_step<S>(W1s.back().data(), W2s.back().data(), x, cfg.eps);
    if (kind == kRescaled) x = to_storage<S>(rescaled(to_double(x)).first);
    xs.push_back(std::move(x));
  }
  std::vector<double> ratios;
  for (int64_t d : cfg.depths) {
    std::vector<S> g = to_storage<S>(gL);
    int scale_log2 = 0;
    for (int64_t t = d - 1; t >= 0; --t) {
      g = residual_step_vjp<S>(kind == kRescaled ? kPlain : kind, W1s[t], W2s[t], xs[t], g, cfg.eps);
      if (kind == kRescaled) {
        const auto [gs, k] = rescaled(to_double(g));
        g = to_storage<S>(gs);
        scale_log2 += k;
      }
    }
    const double gn = norm_of(to_double(g));
    ratios.push_back(std::isfinite(gn) ? std::ldexp(gn, scale_log2) / norm_of(gL) : HUGE_VAL);
  }
  return ratios;
}

std::vector<double> residual_kernel_grad_ratios_of(int kind, const GrowthConfig& cfg, DType dt, const std::vector<double>& x0,
                                                   const std::vector<double>& gL, uint64_t seed) {
  switch (dt) {
    case DType::f16: return residual_kernel_grad_ratios<f16>(kind, cfg, dt, x0, gL, seed);
    case DType::bf16: return residual_kernel_grad_ratios<bf16>(kind, cfg, dt, x0, gL, seed);
    case DType::f32: return residual_kernel_grad_ratios<float>(kind, cfg, dt, x0, gL, seed);
    case DType::f64: break;
  }
  return residual_kernel_grad_ratios<double>(kind, cfg, dt, x0, gL, seed);
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
  GrowthRow r{arch, dt, {}, {}, overflow, {}, {}};
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
  const std::vector<double> gL = ph_cotangent(c);
  std::vector<GrowthRow> rows;
  std::vector<double> plain_oracle, plain_grad_oracle;
  for (int kind = 0; kind < 4; ++kind) {
    int64_t overflow = -1;
    const std::vector<double> kn = residual_kernel_norms_of(kind, cfg, dt, c.x0, depth, seed, overflow);
    // The rescaled stream's exact norms are the plain stream's (rescaling does not change it in real arithmetic).
    const std::vector<double> on = kind == kRescaled ? plain_oracle : oracle::residual_stream_norms_mpfr(kind, dt, c.x0, cfg.gain, seed, depth, cfg.eps);
    if (kind == kPlain) plain_oracle = on;
    rows.push_back(row_from(kArchs[kind], dt, cfg, kn, on, overflow));
    rows.back().grad_kernel_ratio = residual_kernel_grad_ratios_of(kind, cfg, dt, c.x0, gL, seed);
    rows.back().grad_oracle_ratio = kind == kRescaled ? plain_grad_oracle
                                                      : oracle::residual_stream_grad_ratios_mpfr(kind, dt, c.x0, gL, cfg.gain, seed, cfg.depths, cfg.eps);
    if (kind == kPlain) plain_grad_oracle = rows.back().grad_oracle_ratio;
  }
  BudgetCaseOptions o;
  o.judge_max_n = cfg.width;
  o.grad_depths = cfg.depths;
  ph = run_budget_case(c, o);
  rows.push_back(row_from("port_hamiltonian", dt, cfg, ph.kernel_norms, ph.oracle_norms, ph.overflow_depth));
  for (const GradientGrowth& g : ph.grad_growth) {
    rows.back().grad_kernel_ratio.push_back(g.kernel);
    rows.back().grad_oracle_ratio.push_back(g.oracle);
  }
  return rows;
}

nlohmann::json growth_rows_json(const GrowthConfig& cfg, const std::vector<GrowthRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const GrowthRow& r : rows) {
    nlohmann::json k = nlohmann::json::array(), o = nlohmann::json::array(), gk = nlohmann::json::array(), go = nlohmann::json::array();
    for (size_t i = 0; i < cfg.depths.size(); ++i) {
      k.push_back(number_or_null(r.kernel_ratio[i]));
      o.push_back(number_or_null(r.oracle_ratio[i]));
      gk.push_back(number_or_null(r.grad_kernel_ratio[i]));
      go.push_back(number_or_null(r.grad_oracle_ratio[i]));
    }
    out.push_back({{"arch", r.arch},
                   {"storage", std::string(dtype_info(r.dtype).name)},
                   {"accum", std::string(dtype_info(dtype_info(r.dtype).default_accum).name)},
                   {"kernel_ratio", k},
                   {"oracle_ratio", o},
                   {"grad_kernel_ratio", gk},
                   {"grad_oracle_ratio", go},
                   {"overflow_depth", r.overflow_depth < 0 ? nlohmann::json() : nlohmann::json(r.overflow_depth)}});
  }
  return out;
}

}  // namespace normcheck
