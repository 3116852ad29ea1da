#include "suite/contraction_judge.hpp"

#include <limits>

#include "core/bounds_contraction.hpp"
#include "kernels/contraction_registry.hpp"

namespace normcheck {
namespace {

/// A tensor "bound" of +inf everywhere: errors are measured, no verdict is possible.
TensorBound unbounded(size_t n) {
  return {std::vector<double>(n, std::numeric_limits<double>::infinity()), std::vector<uint8_t>(n, 0)};
}

}  // namespace

oracle::StoredContraction stored_view(const ContractedBlock& k) {
  return {k.d, k.n, k.m, k.k, k.eps, k.D, k.R, k.c};
}

ContractionJudgement judge_contraction(const ContractionCase& c) {
  ContractionJudgement j;
  j.contracted = contract_block(c.block, c.dtype);
  const oracle::StoredContraction view = stored_view(j.contracted);
  j.coefficient_error = oracle::coefficient_error(c.block, view);
  const bool with_vjp = !c.dy.empty();
  j.reference = oracle::certified_affine_ln(c, with_vjp);
  const ContractionBound bound = contracted_bound(c, view, j.coefficient_error, j.reference, contraction_accum(c.dtype));
  const AffineLnOutputs got = run_contracted(j.contracted, c), original = run_original(c);
  j.f = judge_tensor("f", got.f, j.reference.f, bound.f, nullptr, c.dtype, 1.0);
  j.original_f = judge_tensor("f", original.f, j.reference.f, unbounded(original.f.size()), nullptr, c.dtype, 1.0);
  if (with_vjp) {
    j.dx = judge_tensor("dx", got.dx, j.reference.dx, bound.dx, nullptr, c.dtype, 1.0);
    j.original_dx = judge_tensor("dx", original.dx, j.reference.dx, unbounded(original.dx.size()), nullptr, c.dtype, 1.0);
  }
  return j;
}

}  // namespace normcheck
