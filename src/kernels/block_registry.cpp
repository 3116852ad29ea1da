#include "kernels/block_registry.hpp"

#include <stdexcept>

#include "kernels/rms_block.hpp"
#include "kernels/storage_io.hpp"

namespace normcheck {
namespace {

enum class Variant { composed, deferred, deferred_bias_in_correction };

template <class S, Variant V>
BlockOutputs run_block(const RmsBlockCase& c) {
  using A = default_accum_t<S>;
  const auto x = to_storage<S>(c.x), g = to_storage<S>(c.g), w = to_storage<S>(c.w), b = to_storage<S>(c.b),
             dy = to_storage<S>(c.dy);
  const kernels::RmsBlockArgs<S> a{x.data(), g.data(), w.data(), c.b.empty() ? nullptr : b.data(), dy.data(),
                                   c.rows, c.n, c.m, c.eps};
  std::vector<S> y(static_cast<size_t>(c.rows * c.m)), dx(c.x.size()), dw(c.w.size()), dg(c.g.size());
  const kernels::RmsBlockGrads<S> grads{dx.data(), dw.data(), dg.data()};
  if constexpr (V == Variant::composed) {
    kernels::linear_rmsnorm_forward_composed<S, A>(a, y.data());
    kernels::linear_rmsnorm_backward_composed<S, A>(a, grads);
  } else {
    kernels::linear_rmsnorm_forward_deferred<S, A>(a, y.data());
    if constexpr (V == Variant::deferred)
      kernels::linear_rmsnorm_backward_deferred<S, A>(a, y.data(), grads);
    else
      kernels::linear_rmsnorm_backward_deferred_bias_in_correction<S, A>(a, y.data(), grads);
  }
  BlockOutputs out;
  out.y = to_double(y);
  out.dx = to_double(dx);
  out.dw = to_double(dw);
  out.dg = to_double(dg);
  return out;
}

template <class S>
void add_dtype(std::vector<BlockKernelEntry>& out) {
  const DType s = dtype_traits<S>::id, a = dtype_traits<default_accum_t<S>>::id;
  out.push_back({"composed", s, a, false, run_block<S, Variant::composed>, "builtin", "composed"});
  out.push_back({"deferred", s, a, false, run_block<S, Variant::deferred>, "builtin", "deferred"});
  out.push_back({"deferred_bias_in_correction", s, a, true, run_block<S, Variant::deferred_bias_in_correction>, "builtin",
                 "deferred_bias_in_correction"});
}

}  // namespace

const std::vector<std::string>& block_outputs() {
  static const std::vector<std::string> names = {"y", "dx", "dw", "dg"};
  return names;
}

const std::vector<double>& block_output(const BlockOutputs& o, std::string_view name) {
  if (name == "y") return o.y;
  if (name == "dx") return o.dx;
  if (name == "dw") return o.dw;
  if (name == "dg") return o.dg;
  throw std::logic_error("unknown block output " + std::string(name));
}

const std::vector<BlockKernelEntry>& builtin_block_kernels() {
  static const std::vector<BlockKernelEntry> table = [] {
    std::vector<BlockKernelEntry> t;
    for_each_dtype([&](auto tag) { add_dtype<decltype(tag)>(t); });
    return t;
  }();
  return table;
}

}  // namespace normcheck
