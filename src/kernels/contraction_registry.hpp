#pragma once
/// Type-erased contracted-block and original-block kernels for the four storage dtypes.
#include <string>
#include <vector>

#include "kernels/contraction_converter.hpp"
#include "core/contraction_case.hpp"

namespace normcheck {

/// Kernel results as exact doubles of storage values (dx empty when the case has no dy).
struct AffineLnOutputs {
  std::vector<double> f, dx;
  std::string failure;   ///< an external kernel crashed, hung or errored (no values)
  bool skipped = false;  ///< an external kernel declined the call: not judged
};

/// The contracted block with the stored coefficients `k` on the case's inputs.
AffineLnOutputs run_contracted(const ContractedBlock& k, const ContractionCase& c);

/// The original block (unfused, stored intermediates) on the case's parameters and inputs.
AffineLnOutputs run_original(const ContractionCase& c);

/// The accumulator the kernels of `storage` use (f32 for f16/bf16, else the storage dtype).
DType contraction_accum(DType storage);

}  // namespace normcheck
