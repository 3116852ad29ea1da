#include "kernels/jvp_registry.hpp"

#include <algorithm>
#include <stdexcept>

#include "kernels/layernorm_jvp.hpp"
#include "kernels/rmsnorm_jvp.hpp"
#include "kernels/storage_io.hpp"

namespace normcheck {
namespace {

template <class S>
std::vector<double> run_as(const std::string& name, const LayerNormCase& c, const LayerNormTangents& t) {
  using A = default_accum_t<S>;
  const auto x = to_storage<S>(c.x), g = to_storage<S>(c.gamma), tx = to_storage<S>(t.dx), tg = to_storage<S>(t.dgamma),
             tb = to_storage<S>(t.dbeta);
  std::vector<S> du(x.size());
  if (name == "two_pass")
    kernels::layernorm_jvp_two_pass<S, A>(x.data(), g.data(), tx.data(), tg.data(), tb.data(), c.rows, c.n, c.eps, du.data());
  else if (name == "uncentred")
    kernels::layernorm_jvp_uncentred<S, A>(x.data(), g.data(), tx.data(), tg.data(), tb.data(), c.rows, c.n, c.eps, du.data());
  else if (name == "rms")
    kernels::rmsnorm_jvp_rms<S, A>(x.data(), g.data(), tx.data(), tg.data(), c.rows, c.n, c.eps, du.data());
  else
    kernels::rmsnorm_jvp_r_constant<S, A>(x.data(), g.data(), tx.data(), tg.data(), c.rows, c.n, c.eps, du.data());
  return to_double(du);
}

}  // namespace

const std::vector<JvpKernelInfo>& jvp_kernels() {
  static const std::vector<JvpKernelInfo> kernels = {
      {"two_pass", false, "layernorm_jvp"}, {"uncentred", true, "layernorm_jvp"}, {"rms", false, "rmsnorm_jvp"}, {"r_constant", true, "rmsnorm_jvp"}};
  return kernels;
}

std::vector<double> run_jvp_kernel(const std::string& name, const LayerNormCase& c, const LayerNormTangents& t) {
  const auto& all = jvp_kernels();
  if (std::none_of(all.begin(), all.end(), [&](const JvpKernelInfo& k) { return k.name == name; }))
    throw std::invalid_argument("unknown JVP kernel '" + name + "'");
  std::vector<double> out;
  for_each_dtype([&](auto tag) {
    if (dtype_traits<decltype(tag)>::id == c.dtype) out = run_as<decltype(tag)>(name, c, t);
  });
  return out;
}

}  // namespace normcheck
