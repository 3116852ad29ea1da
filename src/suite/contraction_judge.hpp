#pragma once
/// Judges the converter under test on one case: convert (float64 QR, storage rounding), evaluate
/// the contracted kernel, and measure f and dx against the certified original block with the
/// contraction bound; the original block's own low-precision kernel is measured against the same
/// oracle (report only: the contraction is never judged by it).
#include <functional>

#include "kernels/contraction_converter.hpp"
#include "kernels/contraction_registry.hpp"
#include "oracles/certified_contraction.hpp"
#include "suite/judge.hpp"

namespace normcheck {

/// A contracted-block kernel: the stored coefficients and the case's x and dy to f and dx.
using ContractedKernel = std::function<AffineLnOutputs(const ContractedBlock&, const ContractionCase&)>;

struct ContractionJudgement {
  ContractedBlock contracted;
  bool skipped = false;  ///< the external kernel declined the call: nothing judged
  oracle::CoefficientError coefficient_error;
  oracle::CertifiedAffineLn reference;
  OutputJudgement f, dx;                    ///< contracted kernel, with the contraction bound
  OutputJudgement original_f, original_dx;  ///< original kernel: no a priori bound, judged by its envelope only
};

/// Throws ConversionError when the converter rejects the block. `external`: the contracted kernel
/// judged instead of the built-in one (the coefficients are still the converter's).
ContractionJudgement judge_contraction(const ContractionCase& c, const ContractedKernel* external = nullptr);

/// The exact stored coefficients as the oracle's view of them.
oracle::StoredContraction stored_view(const ContractedBlock& k);

}  // namespace normcheck
