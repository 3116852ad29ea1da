#include "kernels/registry.hpp"

#include <type_traits>

#include "kernels/layernorm.hpp"
#include "kernels/layernorm_op_by_op.hpp"
#include "kernels/layernorm_reductions.hpp"
#include "kernels/rmsnorm.hpp"
#include "kernels/storage_runner.hpp"

namespace normcheck {
namespace {

/// Registers the forward and backward kernel of one variant (LayerNorm or RMSNorm ops).
template <class S, class A, class Fwd, class Bwd>
void add_pair(std::vector<KernelEntry>& out, const char* variant, bool weak, Fwd fwd, Bwd bwd, bool rms = false) {
  const DType s = dtype_traits<S>::id, a = dtype_traits<A>::id;
  out.push_back({"builtin", variant, rms ? Op::rmsnorm_forward : Op::layernorm_forward, s, a, weak,
                 [fwd](const LayerNormCase& c) { return run_forward<S>(fwd, c); }});
  out.push_back({"builtin", variant, rms ? Op::rmsnorm_backward : Op::layernorm_backward, s, a, weak,
                 [bwd](const LayerNormCase& c) { return run_backward<S>(bwd, c); }});
}

template <class S, class A, class Fwd, class Bwd>
void add_rms_pair(std::vector<KernelEntry>& out, const char* variant, bool weak, Fwd fwd, Bwd bwd) {
  add_pair<S, A>(out, variant, weak, fwd, bwd, true);
}

template <class S>
void add_rms_dtype(std::vector<KernelEntry>& out) {
  using A = default_accum_t<S>;
  using namespace kernels;
  add_rms_pair<S, A>(out, "rms", false, rmsnorm_forward_rms<S, A>, rmsnorm_backward_rms<S, A>);
  if constexpr (!std::is_same_v<S, A>)
    add_rms_pair<S, A>(out, "rms_sumsq_storage", true, rmsnorm_forward_rms_sumsq_storage<S, A>,
                       rmsnorm_backward_rms_sumsq_storage<S, A>);
  add_rms_pair<S, A>(out, "rms_invrms_bf16", true, rmsnorm_forward_rms_invrms_bf16<S, A>,
                     rmsnorm_backward_rms_invrms_bf16<S, A>);
  add_rms_pair<S, A>(out, "rms_xr_bf16", true, rmsnorm_forward_rms_xr_bf16<S, A>, rmsnorm_backward_rms_xr_bf16<S, A>);
  add_rms_pair<S, A>(out, "rms_dg_bf16", true, rmsnorm_forward_rms_dg_bf16<S, A>, rmsnorm_backward_rms_dg_bf16<S, A>);
}

template <class S>
void add_dtype(std::vector<KernelEntry>& out) {
  using A = default_accum_t<S>;
  using namespace kernels;
  add_pair<S, A>(out, "two_pass", false, layernorm_forward_two_pass<S, A>, layernorm_backward_two_pass<S, A>);
  add_pair<S, A>(out, "two_pass_pairwise", false, layernorm_forward_two_pass_pairwise<S, A>,
                 layernorm_backward_two_pass_pairwise<S, A>);
  add_pair<S, A>(out, "welford", false, layernorm_forward_welford<S, A>, layernorm_backward_welford<S, A>);
  add_pair<S, A>(out, "two_pass_blocked", false, layernorm_forward_two_pass_blocked<S, A>, layernorm_backward_two_pass_blocked<S, A>);
  add_pair<S, A>(out, "welford_chunked", false, layernorm_forward_welford_chunked<S, A>, layernorm_backward_welford_chunked<S, A>);
  add_pair<S, A>(out, "one_pass", true, layernorm_forward_one_pass<S, A>, layernorm_backward_one_pass<S, A>);
  add_pair<S, A>(out, "op_by_op", true, layernorm_forward_op_by_op<S, A>, layernorm_backward_op_by_op<S, A>);
  if constexpr (!std::is_same_v<S, A>)
    add_pair<S, S>(out, "two_pass_storage_accum", true, layernorm_forward_two_pass<S, S>,
                   layernorm_backward_two_pass<S, S>);
}

}  // namespace

void add_layernorm_kernels(std::vector<KernelEntry>& out) {
  for_each_dtype([&](auto tag) { add_dtype<decltype(tag)>(out); });
}

void add_rmsnorm_kernels(std::vector<KernelEntry>& out) {
  for_each_dtype([&](auto tag) { add_rms_dtype<decltype(tag)>(out); });
}

}  // namespace normcheck
