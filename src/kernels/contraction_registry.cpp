#include "kernels/contraction_registry.hpp"

#include <stdexcept>

#include "kernels/affine_ln_affine.hpp"
#include "kernels/contracted_block.hpp"
#include "kernels/storage_io.hpp"

namespace normcheck {
namespace {

template <class S>
AffineLnOutputs contracted(const ContractedBlock& k, const ContractionCase& c) {
  using A = default_accum_t<S>;
  const auto D = to_storage<S>(k.D), R = to_storage<S>(k.R), cc = to_storage<S>(k.c), x = to_storage<S>(c.x),
             dy = to_storage<S>(c.dy);
  const kernels::ContractedArgs<S> args{D.data(), R.data(), cc.data(), k.d, k.n, k.m, k.k, k.eps};
  std::vector<S> f(static_cast<size_t>(c.rows * k.m)), dx(c.dy.empty() ? 0 : static_cast<size_t>(c.rows * k.d));
  kernels::contracted_forward<S, A>(args, x.data(), c.rows, f.data());
  if (!c.dy.empty()) kernels::contracted_backward<S, A>(args, x.data(), dy.data(), c.rows, dx.data());
  return {to_double(f), to_double(dx), "", false};
}

template <class S>
AffineLnOutputs original(const ContractionCase& c) {
  using A = default_accum_t<S>;
  const AffineLnAffine& blk = c.block;
  const std::vector<double> ones(static_cast<size_t>(blk.n), 1.0), zeros(static_cast<size_t>(blk.n), 0.0);
  const auto Am = to_storage<S>(blk.A), a = to_storage<S>(blk.a), W = to_storage<S>(blk.W), b = to_storage<S>(blk.b),
             g = to_storage<S>(blk.gamma.empty() ? ones : blk.gamma), be = to_storage<S>(blk.beta.empty() ? zeros : blk.beta),
             x = to_storage<S>(c.x), dy = to_storage<S>(c.dy);
  const kernels::AffineLnArgs<S> args{Am.data(), blk.a.empty() ? nullptr : a.data(), g.data(), be.data(), W.data(),
                                      blk.b.empty() ? nullptr : b.data(), blk.d, blk.n, blk.m, blk.eps};
  std::vector<S> f(static_cast<size_t>(c.rows * blk.m)), dx(c.dy.empty() ? 0 : static_cast<size_t>(c.rows * blk.d));
  kernels::affine_ln_affine_forward<S, A>(args, x.data(), c.rows, f.data());
  if (!c.dy.empty()) kernels::affine_ln_affine_backward<S, A>(args, x.data(), dy.data(), c.rows, dx.data());
  return {to_double(f), to_double(dx), "", false};
}

template <class F>
auto dispatch(DType dt, F&& f) {
  decltype(f(double{})) out;
  bool found = false;
  for_each_dtype([&](auto tag) {
    if (dtype_traits<decltype(tag)>::id == dt) {
      out = f(tag);
      found = true;
    }
  });
  if (!found) throw std::logic_error("no kernels for dtype");
  return out;
}

}  // namespace

AffineLnOutputs run_contracted(const ContractedBlock& k, const ContractionCase& c) {
  if (k.storage != c.dtype) throw std::logic_error("contracted block stored in another dtype than the case");
  return dispatch(c.dtype, [&](auto tag) { return contracted<decltype(tag)>(k, c); });
}

AffineLnOutputs run_original(const ContractionCase& c) {
  return dispatch(c.dtype, [&](auto tag) { return original<decltype(tag)>(c); });
}

DType contraction_accum(DType storage) { return dtype_info(storage).default_accum; }

}  // namespace normcheck
