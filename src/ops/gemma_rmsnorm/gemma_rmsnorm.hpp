#pragma once
/// Gemma's RMSNorm, y = x r (1 + w): its oracle, its bounds and its built-in kernels, the three
/// entries of its row in the family table (ops/family_math.cpp). Its spec rows are in
/// core/op_spec.cpp; the derivation of its bound in docs/bounds.md section 10.6.
#include <vector>

#include "bounds/bounds.hpp"
#include "core/layernorm_case.hpp"
#include "core/op_spec.hpp"
#include "kernels/registry.hpp"
#include "oracles/certified_layernorm.hpp"

namespace normcheck {

/// The certified outputs for gain 1 + w (w = c.gamma): RMSNorm is linear in its gain, so the
/// outputs are the RMSNorm oracle's for gain hi plus those for gain lo, hi + lo = 1 + w exactly
/// (TwoSum); dgamma (= dL/dw) does not depend on the gain. When every 1 + w is a double, the
/// RMSNorm oracle's outputs for it.
oracle::CertifiedLayerNorm gemma_rmsnorm_reference(const LayerNormCase& c, bool with_vjp);

/// The RMSNorm bounds (RMS-SEQ) of the case with gamma = fl64(1 + w), with the gain's own rounding
/// in the kernel's accumulator (kRmsGainOffset, forced on whatever the model says).
std::vector<TensorBound> gemma_rmsnorm_bounds(Op op, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m);

/// gemma_rms (sound) and gemma_gain_storage (known weak: 1 + w rounded to the storage dtype), every
/// dtype, forward and backward.
void add_gemma_rmsnorm_kernels(std::vector<KernelEntry>& out);

}  // namespace normcheck
