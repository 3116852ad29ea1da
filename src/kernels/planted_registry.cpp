#include "kernels/planted.hpp"
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

}  // namespace

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
