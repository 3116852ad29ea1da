#include "suite/contraction_judge.hpp"

#include <cmath>
#include <limits>

#include "bounds/bounds_contraction.hpp"
#include "kernels/contraction_registry.hpp"

namespace normcheck {
namespace {

/// Judges an output by its envelope alone (no a priori bound); its worst element is the one with the
/// largest ULP error.
OutputJudgement envelope_only(const std::string& name, const std::vector<double>& got, const std::vector<CertifiedValue>& ref,
                              const TensorBound& envelope, DType dtype) {
  OutputJudgement j = judge_tensor(name, got, ref, envelope, nullptr, dtype, 1.0);
  double worst = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const ElementError e = measure_element(got[i], ref[i], dtype, envelope.bound[i], envelope.envelope(i));
    if (e.ulp_err > worst || (std::isnan(e.ulp_err) && worst >= 0)) {
      worst = std::isnan(e.ulp_err) ? HUGE_VAL : e.ulp_err;
      j.worst = {static_cast<int64_t>(i), got[i], ref[i], envelope.bound[i], e};
    }
  }
  return j;
}

}  // namespace

oracle::StoredContraction stored_view(const ContractedBlock& k) {
  return {k.d, k.n, k.m, k.k, k.eps, k.D, k.R, k.c, k.R64};
}

/// Every output of a failed external call fails with the reason.
OutputJudgement kernel_failure(const std::string& name, const std::string& why) {
  OutputJudgement o;
  o.output = name;
  o.failed = true;
  o.kernel_failure = why;
  return o;
}

ContractionJudgement judge_contraction(const ContractionCase& c, const ContractedKernel* external) {
  ContractionJudgement j;
  j.contracted = contract_block(c.block, c.dtype);
  const AffineLnOutputs got = external ? (*external)(j.contracted, c) : run_contracted(j.contracted, c);
  if (got.skipped) {
    j.skipped = true;
    return j;
  }
  const oracle::StoredContraction view = stored_view(j.contracted);
  j.coefficient_error = oracle::coefficient_error(c.block, view);
  const bool with_vjp = !c.dy.empty();
  j.reference = oracle::certified_affine_ln(c, with_vjp);
  const ContractionBound bound = contracted_bound(c, view, j.coefficient_error, j.reference, contraction_accum(c.dtype));
  const ContractionBound envelope = original_envelope(c, contraction_accum(c.dtype));
  const AffineLnOutputs original = run_original(c);
  const auto judged = [&](const char* name, const std::vector<double>& v, const std::vector<CertifiedValue>& ref, const TensorBound& b) {
    return got.failure.empty() ? judge_tensor(name, v, ref, b, nullptr, c.dtype, 1.0) : kernel_failure(name, got.failure);
  };
  j.f = judged("f", got.f, j.reference.f, bound.f);
  j.original_f = envelope_only("f", original.f, j.reference.f, envelope.f, c.dtype);
  if (with_vjp) {
    j.dx = judged("dx", got.dx, j.reference.dx, bound.dx);
    j.original_dx = envelope_only("dx", original.dx, j.reference.dx, envelope.dx, c.dtype);
  }
  return j;
}

}  // namespace normcheck
