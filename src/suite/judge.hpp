#pragma once
/// Judges one kernel on one case against the certified oracle and the tolerance table.
#include <string>
#include <vector>

#include "core/bias.hpp"
#include "bounds/bounds.hpp"
#include "core/metrics.hpp"
#include "bounds/tolerance_table.hpp"
#include "kernels/registry.hpp"
#include "oracles/certified_layernorm.hpp"

namespace normcheck {

/// The element with the largest bound ratio in one output of one case.
struct WorstElement {
  int64_t index = -1;
  double got = 0;
  CertifiedValue ref;
  double bound = 0;
  ElementError error;
};

/// Errors of one output tensor ("y", "dx", "dgamma", "dbeta") of one case.
struct OutputJudgement {
  std::string output;
  ErrorAccumulator acc;  ///< against the verdict bound
  WorstElement worst;
  bool failed = false;   ///< a certified violation of the verdict bound (or Inf/NaN where it is finite)
  ErrorAccumulator own;  ///< against the kernel's own bound (rigor: must never be violated)
  bool own_failed = false;
  std::string kernel_failure;  ///< the kernel produced no outputs: crash, hang or error (failed)
  BiasAccumulator bias;  ///< the directed-rounding statistic of this output (per-op records only)
  bool declined = false;  ///< an external kernel declined the call (unsupported): nothing judged
  /// External LayerNorm kernels judged with contract "auto": the same outputs against the looser sound
  /// class's bound (LN-WELFORDMERGE-ANY, docs/bounds.md section 2.7.5), judged like the verdict bound.
  bool has_looser = false;
  ErrorAccumulator looser;
  bool looser_failed = false;
};

/// What the bias statistic needs of each element of a judged tensor: the signed error in bound
/// units and the directed-rounding direction sign(y) ulp(y) / bound (0 where the a priori bound does
/// not judge the element).
struct BiasInputs {
  std::vector<double> rho, s;
  std::vector<uint64_t> cluster;  ///< elements with the same kernel value and the same correct rounding (0: left out)
};

/// Measures one tensor against the verdict bound (times max_ratio) and, when given, the kernel's
/// own bound; throws std::runtime_error when the kernel produced the wrong number of values.
OutputJudgement judge_tensor(const std::string& name, const std::vector<double>& got,
                             const std::vector<CertifiedValue>& ref, const TensorBound& verdict,
                             const TensorBound* own, DType dtype, double max_ratio, BiasInputs* bias = nullptr);

/// Adds the bias statistic's groups of one per-op output (docs/bounds.md section 16): rows of y and
/// dx with their shared-error directions, dgamma and dbeta as one group each.
void add_bias_groups(Op op, const std::string& output, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                     const TensorBound& verdict, const BiasInputs& in, BiasAccumulator& out);

/// The certified reference of an op's family (LayerNorm or RMSNorm), with the VJP when asked.
oracle::CertifiedLayerNorm certified_reference(Op op, const LayerNormCase& c, bool with_vjp);

/// Output names an op produces, in report order.
const std::vector<std::string>& op_outputs(Op op);

/// Per-output bounds of `op` on the case under one bound model, in op_outputs order.
std::vector<TensorBound> bounds_for(Op op, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m);

/// The certified values of one output ("y", "dx", "dgamma", "dbeta").
const std::vector<CertifiedValue>& reference_of(const oracle::CertifiedLayerNorm& ref, const std::string& output);

/// Runs kernel k on case c and measures every output element against the oracle `ref`.
std::vector<OutputJudgement> judge_case(const KernelEntry& k, const LayerNormCase& c,
                                        const oracle::CertifiedLayerNorm& ref);

/// Measures given kernel outputs (already computed) against the oracle. An external kernel's
/// failure gives one failed judgement per output; a skipped call gives none.
std::vector<OutputJudgement> judge_outputs(const KernelEntry& k, const LayerNormCase& c,
                                           const oracle::CertifiedLayerNorm& ref, const KernelOutputs& out);

}  // namespace normcheck
