#pragma once
/// The mathematics of each op family, looked up instead of switched on (issue 43): its certified
/// reference (the oracle cascade) and the per-output error bounds of its ops. The judge, the runner
/// and the bias calibration reach an op's oracle and bound only through this table; a new family
/// is one row here (see docs/adding-an-op.md).
#include <vector>

#include "bounds/bounds.hpp"
#include "core/layernorm_case.hpp"
#include "core/op_spec.hpp"
#include "kernels/registry.hpp"
#include "oracles/certified_layernorm.hpp"

namespace normcheck {

struct FamilyMath {
  OpFamily family;
  /// The certified reference of a case: the forward outputs, and with the VJP its cotangents.
  oracle::CertifiedLayerNorm (*reference)(const LayerNormCase& c, bool with_vjp);
  /// The bounds of op's outputs (op_spec(op).outputs order) under one bound model.
  std::vector<TensorBound> (*bounds)(Op op, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m);
  /// Appends the family's built-in kernels (every dtype, forward and backward) to the table.
  void (*add_kernels)(std::vector<KernelEntry>& out);
};

/// The row of a family; every OpFamily has one.
const FamilyMath& family_math(OpFamily f);

}  // namespace normcheck
