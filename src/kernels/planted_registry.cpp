#include <memory>

#include "kernels/planted.hpp"
#include "kernels/planted_invariance.hpp"
#include "kernels/storage_runner.hpp"
#include "kernels/registry.hpp"

namespace normcheck {
namespace {

/// Forward and backward entries of one planted directed kernel for LayerNorm or RMSNorm.
template <class S, class W, kernels::Direction D>
void add_directed(std::vector<KernelEntry>& out, bool rms) {
  const DType s = dtype_traits<S>::id;
  const std::string variant = std::string(rms ? "rms" : "ln") +
                              (D == kernels::Direction::toward_zero ? "_truncate" : "_round_away");
  const Op fwd = rms ? Op::rmsnorm_forward : Op::layernorm_forward, bwd = rms ? Op::rmsnorm_backward : Op::layernorm_backward;
  out.push_back({"planted", variant, fwd, s, s, true, [rms](const LayerNormCase& c) {
                   KernelOutputs o;
                   o.y = kernels::directed_forward<S, W, D>(c.x, c.gamma, c.beta, c.rows, c.n, c.eps, rms);
                   return o;
                 }});
  out.push_back({"planted", variant, bwd, s, s, true, [rms](const LayerNormCase& c) {
                   KernelOutputs o;
                   kernels::directed_backward<S, W, D>(c.x, c.gamma, c.dy, c.rows, c.n, c.eps, rms, o.dx, o.dgamma,
                                                       rms ? nullptr : &o.dbeta);
                   return o;
                 }});
}

/// The planted batch-variant and nondeterministic kernels of one storage type (kernels/planted_invariance.hpp).
template <class S>
void add_invariance(std::vector<KernelEntry>& out) {
  using namespace kernels;
  const DType s = dtype_traits<S>::id;
  const auto pair = [&](const char* variant, auto fwd, auto bwd) {
    out.push_back({"planted", variant, Op::layernorm_forward, s, s, false, [fwd](const LayerNormCase& c) { return run_forward<S>(fwd, c); }});
    out.push_back({"planted", variant, Op::layernorm_backward, s, s, false, [bwd](const LayerNormCase& c) { return run_backward<S>(bwd, c); }});
  };
  pair("ln_rowcount_block", layernorm_forward_rowcount_block<S, S>, layernorm_backward_rowcount_block<S, S>);
  pair("ln_aligned_peel", layernorm_forward_aligned_peel<S, S>, layernorm_backward_aligned_peel<S, S>);
  auto calls = std::make_shared<std::atomic<uint64_t>>(0);
  const auto atomic_bwd = [calls](const S* x, const S* g, const S* dy, int64_t rows, int64_t n, double eps, S* dx, S* dg, S* db) {
    layernorm_backward_atomic_dgamma<S, S>(*calls, x, g, dy, rows, n, eps, dx, dg, db);
  };
  out.push_back({"planted", "ln_atomic_dgamma", Op::layernorm_backward, s, s, false,
                 [atomic_bwd](const LayerNormCase& c) { return run_backward<S>(atomic_bwd, c); }});
}

}  // namespace

const std::vector<KernelEntry>& planted_invariance_kernels() {
  static const std::vector<KernelEntry> table = [] {
    std::vector<KernelEntry> out;
    add_invariance<float>(out);
    add_invariance<double>(out);
    return out;
  }();
  return table;
}

const std::vector<KernelEntry>& planted_directed_kernels() {
  static const std::vector<KernelEntry> table = [] {
    std::vector<KernelEntry> out;
    for (bool rms : {false, true}) {
      add_directed<float, double, kernels::Direction::toward_zero>(out, rms);
      add_directed<float, double, kernels::Direction::away_from_zero>(out, rms);
      add_directed<double, long double, kernels::Direction::toward_zero>(out, rms);
      add_directed<double, long double, kernels::Direction::away_from_zero>(out, rms);
    }
    return out;
  }();
  return table;
}

}  // namespace normcheck
