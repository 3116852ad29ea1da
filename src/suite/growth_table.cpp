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

/// One step's VJP of control `kind` at the state x (the rescaled stream's state: the steps are
/// positively homogeneous of degree 1, so their Jacobians are those of the unscaled stream).
template <class S>
std::vector<S> residual_step_vjp(int kind, const std::vector<S>& W1, const std::vector<S>& W2, const std::vector<S>& x,
                                 const std::vector<S>& g, double eps) {
  if (kind == kLnBranch) return kernels::ln_branch_step_vjp<S>(W1.data(), W2.data(), x, g, eps);
  if (kind == kLnTrunk) return kernels::ln_trunk_step_vjp<S>(W1.data(), W2.data(), x, g, eps);
  return kernels::plain_residual_step_vjp<S>(W1.data(), W2.data(), x, g);
}

/// A residual control run by its kernels in one storage dtype.
struct ResidualKernelRun {
  std::vector<double> norms;        ///< ||x_t||, t = 0..depth
  std::vector<double> grad_ratios;  ///< ||d<g, x_d>/dx_0|| / ||g|| for each d of cfg.depths
  int64_t overflow = -1;            ///< first non-finite depth; -1 none
};

/// Control `kind` in storage S: one forward pass keeping its states (for the rescaled row, the
/// seed's power-of-two rescaling after every step: exact, and the branch is positively homogeneous
/// (relu, matrix products), so every later step is the unscaled one times 2^-k bit for bit until the
/// unscaled stream would leave the dtype's range), then each depth's network differentiated by the
/// step VJP kernels; the rescaled row also rescales the cotangent by a power of two after every
/// step (the VJP is linear: exact).
template <class S>
ResidualKernelRun residual_kernel_run(int kind, const GrowthConfig& cfg, DType dt, const std::vector<double>& x0,
                                      const std::vector<double>& gL, uint64_t seed) {
  const int64_t depth = *std::max_element(cfg.depths.begin(), cfg.depths.end());
  ResidualKernelRun run;
  run.norms.push_back(norm_of(x0));
  std::vector<std::vector<S>> xs{to_storage<S>(x0)}, W1s, W2s;  // xs: the state before step t
  int scale_log2 = 0;  // the rescaled stream: ||x_t|| = ||stored x|| 2^scale_log2
  for (int64_t t = 0; t < depth; ++t) {
    const ResidualStep p = residual_step_params(dt, cfg.width, cfg.gain, seed, t);
    W1s.push_back(to_storage<S>(p.W1));
    W2s.push_back(to_storage<S>(p.W2));
    const S* W1 = W1s.back().data();
    const S* W2 = W2s.back().data();
    std::vector<S> x = xs.back();
    if (kind == kPlain || kind == kRescaled) x = kernels::plain_residual_step<S>(W1, W2, x);
    else if (kind == kLnBranch) x = kernels::ln_branch_step<S>(W1, W2, x, cfg.eps);
    else x = kernels::ln_trunk_step<S>(W1, W2, x, cfg.eps);
    std::vector<double> xd = to_double(x);
    const bool finite = std::all_of(xd.begin(), xd.end(), [](double e) { return std::isfinite(e); });
    if (!finite && run.overflow < 0) run.overflow = t + 1;
    if (kind == kRescaled && finite) {
      const auto [scaled, k] = rescaled(std::move(xd));
      x = to_storage<S>(scaled);
      scale_log2 += k;
    }
    run.norms.push_back(finite ? std::ldexp(norm_of(to_double(x)), scale_log2) : HUGE_VAL);
    if (t + 1 < depth) xs.push_back(std::move(x));
  }
  for (int64_t d : cfg.depths) {
    std::vector<S> g = to_storage<S>(gL);
    int g_scale_log2 = 0;
    for (int64_t t = d - 1; t >= 0; --t) {
      g = residual_step_vjp<S>(kind == kRescaled ? kPlain : kind, W1s[t], W2s[t], xs[t], g, cfg.eps);
      if (kind == kRescaled) {
        const auto [gs, k] = rescaled(to_double(g));
        g = to_storage<S>(gs);
        g_scale_log2 += k;
      }
    }
    const double gn = norm_of(to_double(g));
    run.grad_ratios.push_back(std::isfinite(gn) ? std::ldexp(gn, g_scale_log2) / norm_of(gL) : HUGE_VAL);
  }
  return run;
}

ResidualKernelRun residual_kernel_run_of(int kind, const GrowthConfig& cfg, DType dt, const std::vector<double>& x0,
                                         const std::vector<double>& gL, uint64_t seed) {
  switch (dt) {
    case DType::f16: return residual_kernel_run<f16>(kind, cfg, dt, x0, gL, seed);
    case DType::bf16: return residual_kernel_run<bf16>(kind, cfg, dt, x0, gL, seed);
    case DType::f32: return residual_kernel_run<float>(kind, cfg, dt, x0, gL, seed);
    case DType::f64: break;
  }
  return residual_kernel_run<double>(kind, cfg, dt, x0, gL, seed);
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
  oracle::ResidualStreamReference plain_reference;
  for (int kind = 0; kind < 4; ++kind) {
    const ResidualKernelRun run = residual_kernel_run_of(kind, cfg, dt, c.x0, gL, seed);
    // The rescaled stream's exact norms and gradients are the plain stream's (rescaling does not
    // change it in real arithmetic).
    const oracle::ResidualStreamReference ref =
        kind == kRescaled ? plain_reference : oracle::residual_stream_reference_mpfr(kind, dt, c.x0, gL, cfg.gain, seed, cfg.depths, cfg.eps);
    if (kind == kPlain) plain_reference = ref;
    rows.push_back(row_from(kArchs[kind], dt, cfg, run.norms, ref.norms, run.overflow));
    rows.back().grad_kernel_ratio = run.grad_ratios;
    rows.back().grad_oracle_ratio = ref.grad_ratios;
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
