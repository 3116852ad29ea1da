#include "ops/gemma_rmsnorm/gemma_rmsnorm.hpp"

#include <algorithm>
#include <type_traits>

#include "core/float_format.hpp"
#include "kernels/storage_runner.hpp"
#include "ops/gemma_rmsnorm/gemma_rmsnorm_kernels.hpp"
#include "oracles/certificate_accounting.hpp"
#include "oracles/gain_split.hpp"

namespace normcheck {
namespace {

/// The case with gamma replaced by one half of the split gain.
LayerNormCase with_gain(const LayerNormCase& c, const std::vector<double>& gain) {
  LayerNormCase out = c;
  out.gamma = gain;
  return out;
}

/// Sums the two halves' outputs element by element.
void add_halves(std::vector<CertifiedValue>& a, const std::vector<CertifiedValue>& b, DType dt) {
  for (size_t i = 0; i < a.size(); ++i) a[i] = oracle::certified_sum(a[i], b[i], dt);
}

/// The certificate of the combined outputs: the accounting of the cascade's stopping rule
/// (oracles/certificate_accounting.hpp) recomputed on the sums.
void recertify(oracle::CertifiedLayerNorm& r, DType dt) {
  const FloatFormat& fmt = *dtype_info(dt).format;
  r.max_err_ulps = 0;
  r.undecided_roundings = 0;
  for (const auto* values : {&r.y, &r.dx, &r.dgamma})
    for (const CertifiedValue& v : *values) oracle::account_element(v, fmt, r);
  r.certified = r.max_err_ulps <= kRequiredUlpFraction;
}

oracle::CertifiedLayerNorm combined(const LayerNormCase& hi_case, const LayerNormCase& lo_case, bool with_vjp,
                                    oracle::CertifiedLayerNorm (*level)(const LayerNormCase&, bool)) {
  oracle::CertifiedLayerNorm a = level(hi_case, with_vjp);
  const oracle::CertifiedLayerNorm b = level(lo_case, with_vjp);
  add_halves(a.y, b.y, hi_case.dtype);
  add_halves(a.dx, b.dx, hi_case.dtype);
  recertify(a, hi_case.dtype);
  a.precision_bits = std::max(a.precision_bits, b.precision_bits);
  return a;
}

template <class S>
void add_dtype(std::vector<KernelEntry>& out) {
  using A = default_accum_t<S>;
  using namespace kernels;
  const DType s = dtype_traits<S>::id, a = dtype_traits<A>::id;
  const auto add = [&](const char* variant, bool weak, auto fwd, auto bwd) {
    out.push_back({"builtin", variant, Op::gemma_rmsnorm_forward, s, a, weak, [fwd](const LayerNormCase& c) { return run_forward<S>(fwd, c); }});
    out.push_back({"builtin", variant, Op::gemma_rmsnorm_backward, s, a, weak, [bwd](const LayerNormCase& c) { return run_backward<S>(bwd, c); }});
  };
  add("gemma_rms", false, gemma_rmsnorm_forward_gemma_rms<S, A>, gemma_rmsnorm_backward_gemma_rms<S, A>);
  if constexpr (!std::is_same_v<S, A>)  // in f32 and f64 the storage is the accumulator: the same kernel
    add("gemma_gain_storage", true, gemma_rmsnorm_forward_gemma_gain_storage<S, A>, gemma_rmsnorm_backward_gemma_gain_storage<S, A>);
}

}  // namespace

oracle::CertifiedLayerNorm gemma_rmsnorm_reference(const LayerNormCase& c, bool with_vjp) {
  const oracle::GainSplit gain = oracle::split_unit_offset_gain(c.gamma);
  const LayerNormCase hi_case = with_gain(c, gain.hi);
  if (gain.exact_in_double()) return oracle::certified_rmsnorm(hi_case, with_vjp);
  const LayerNormCase lo_case = with_gain(c, gain.lo);
  oracle::CertifiedLayerNorm r = combined(hi_case, lo_case, with_vjp, &oracle::certified_rmsnorm);
  // The sums' certificate can miss where each half's passed (a tie straddled by the sum): the top level.
  if (!accepted(r)) r = combined(hi_case, lo_case, with_vjp, &oracle::evaluate_rmsnorm_mpfi400);
  return r;
}

std::vector<TensorBound> gemma_rmsnorm_bounds(Op op, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m) {
  const LayerNormCase hi_case = with_gain(c, oracle::split_unit_offset_gain(c.gamma).hi);
  BoundModel gm = m;
  gm.rms_flags |= kRmsGainOffset;
  if (!is_backward(op)) return {rmsnorm_forward_bound(hi_case, ref, gm)};
  BackwardBound b = rmsnorm_backward_bound(hi_case, ref, gm);
  return {std::move(b.dx), std::move(b.dgamma)};
}

void add_gemma_rmsnorm_kernels(std::vector<KernelEntry>& out) {
  for_each_dtype([&](auto tag) { add_dtype<decltype(tag)>(out); });
}

}  // namespace normcheck
