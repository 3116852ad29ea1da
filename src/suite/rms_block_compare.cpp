#include "suite/rms_block_compare.hpp"

#include <cmath>
#include <stdexcept>

#include "core/rng.hpp"
#include "kernels/rms_block.hpp"
#include "kernels/storage_io.hpp"
#include "oracles/certified_rms_block.hpp"
#include "properties/generators.hpp"

namespace normcheck {
namespace {

/// Forward y and dx of both forms for one case, as exact doubles of storage values.
struct BlockOutputs {
  std::vector<double> y_composed, y_deferred, dx_composed, dx_deferred;
};

template <class S>
BlockOutputs run_block(const RmsBlockCase& c) {
  using A = default_accum_t<S>;
  const auto x = to_storage<S>(c.x), g = to_storage<S>(c.g), w = to_storage<S>(c.w), b = to_storage<S>(c.b),
             dy = to_storage<S>(c.dy);
  const kernels::RmsBlockArgs<S> a{x.data(), g.data(), w.data(), c.b.empty() ? nullptr : b.data(), dy.data(),
                                   c.rows, c.n, c.m, c.eps};
  std::vector<S> yc(static_cast<size_t>(c.rows * c.m)), yd(yc.size()), dxc(c.x.size()), dxd(c.x.size());
  kernels::linear_rmsnorm_forward_composed<S, A>(a, yc.data());
  kernels::linear_rmsnorm_forward_deferred<S, A>(a, yd.data());
  kernels::linear_rmsnorm_backward_dx_composed<S, A>(a, dxc.data());
  kernels::linear_rmsnorm_backward_dx_deferred<S, A>(a, yd.data(), dxd.data());
  return {to_double(yc), to_double(yd), to_double(dxc), to_double(dxd)};
}

BlockOutputs run_block_any(const RmsBlockCase& c) {
  BlockOutputs out;
  for_each_dtype([&](auto tag) {
    using S = decltype(tag);
    if (dtype_traits<S>::id == c.dtype) out = run_block<S>(c);
  });
  return out;
}

/// y - b of the block in double (a guide for the "cancel" generator, not a reference).
std::vector<double> approx_pre_bias_output(const RmsBlockCase& c) {
  std::vector<double> y(static_cast<size_t>(c.rows * c.m));
  for (int64_t i = 0; i < c.rows; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < c.n; ++j) ss += c.x[i * c.n + j] * c.x[i * c.n + j];
    const double r = 1 / std::sqrt(ss / static_cast<double>(c.n) + c.eps);
    for (int64_t k = 0; k < c.m; ++k) {
      double s = 0;
      for (int64_t j = 0; j < c.n; ++j) s += c.w[k * c.n + j] * c.g[j] * c.x[i * c.n + j];
      y[i * c.m + k] = r * s;
    }
  }
  return y;
}

void accumulate(BlockFormStats& st, const std::vector<double>& got, const std::vector<CertifiedValue>& ref,
                const std::vector<double>* cancellation) {
  const double inf = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < got.size(); ++i) {
    const ElementError e = measure_element(got[i], ref[i], st.dtype, inf);
    const double before = st.acc.max_ulp();
    st.acc.add(e, static_cast<int64_t>(i));
    if (cancellation && e.ulp_err > before) st.worst_cancellation = (*cancellation)[i];
  }
}

}  // namespace

RmsBlockCase make_rms_block_case(const std::string& generator, DType dt, uint64_t seed) {
  if (generator != "normal" && generator != "cancel" && generator != "wide")
    throw std::invalid_argument("unknown block generator '" + generator + "'");
  Rng rng(seed);
  RmsBlockCase c;
  c.dtype = dt;
  c.rows = rng.range(1, 4);
  c.n = generator == "wide" ? 1024 : rng.log_range(4, 256);
  c.m = rng.log_range(4, 128);
  c.eps = 1e-6;
  for (int64_t k = 0; k < c.rows * c.n; ++k) c.x.push_back(gen::normal(rng, dt, 0, 1));
  for (int64_t j = 0; j < c.n; ++j) c.g.push_back(gen::normal(rng, dt, 1, 0.3));
  const double wscale = 1 / std::sqrt(static_cast<double>(c.n));
  for (int64_t k = 0; k < c.m * c.n; ++k) c.w.push_back(gen::normal(rng, dt, 0, wscale));
  for (int64_t k = 0; k < c.m; ++k) c.b.push_back(gen::normal(rng, dt, 0, 0.1));
  if (generator == "cancel") {
    for (double v : approx_pre_bias_output(c)) c.dy.push_back(round_to_dtype(v, dt));
  } else {
    for (int64_t k = 0; k < c.rows * c.m; ++k) c.dy.push_back(gen::normal(rng, dt, 0, 1));
  }
  return c;
}

std::vector<BlockFormStats> compare_rms_block(const BlockCompareConfig& cfg) {
  std::vector<BlockFormStats> rows;
  for (DType dt : cfg.dtypes) {
    BlockFormStats yc{dt, "composed", "y", {}, 0}, yd{dt, "deferred", "y", {}, 0};
    BlockFormStats dc{dt, "composed", "dx", {}, 0}, dd{dt, "deferred", "dx", {}, 0};
    for (size_t g = 0; g < cfg.generators.size(); ++g)
      for (int k = 0; k < cfg.cases; ++k) {
        const RmsBlockCase c = make_rms_block_case(cfg.generators[g], dt, derive_seed(cfg.seed, static_cast<uint64_t>(dt), g, k));
        const oracle::CertifiedRmsBlock ref = oracle::certified_rms_block(c);
        const BlockOutputs out = run_block_any(c);
        accumulate(yc, out.y_composed, ref.y, nullptr);
        accumulate(yd, out.y_deferred, ref.y, nullptr);
        accumulate(dc, out.dx_composed, ref.dx, &ref.cancellation);
        accumulate(dd, out.dx_deferred, ref.dx, &ref.cancellation);
      }
    for (auto* s : {&yc, &yd, &dc, &dd}) rows.push_back(*s);
  }
  return rows;
}

nlohmann::json block_compare_json(const BlockCompareConfig& cfg, const std::vector<BlockFormStats>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const BlockFormStats& s : rows)
    out.push_back({{"dtype", std::string(dtype_info(s.dtype).name)},
                   {"form", s.form},
                   {"output", s.output},
                   {"elements", s.acc.count()},
                   {"max_ulp", s.acc.max_ulp()},
                   {"rms_ulp", s.acc.rms_ulp()},
                   {"normwise", s.acc.normwise()},
                   {"nonfinite_mismatches", s.acc.nonfinite_mismatches()},
                   {"uncertified_elements", s.acc.uncertified()},
                   {"cancellation_at_worst_ulp", std::isfinite(s.worst_cancellation) ? nlohmann::json(s.worst_cancellation)
                                                                                       : nlohmann::json("inf")}});
  return {{"generators", cfg.generators}, {"cases_per_generator", cfg.cases}, {"seed", std::to_string(cfg.seed)},
          {"bound_ratio", "not available: the block has no a priori bound yet (issue 4 partial)"},
          {"rows", out}};
}

}  // namespace normcheck
