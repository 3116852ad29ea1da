#pragma once
/// Judges the converter under test on one case: convert (float64 QR, storage rounding), evaluate
/// the contracted kernel, and measure f and dx against the certified original block with the
/// contraction bound; the original block's own low-precision kernel is measured against the same
/// oracle (report only: the contraction is never judged by it).
#include "contraction/converter.hpp"
#include "oracles/certified_contraction.hpp"
#include "suite/judge.hpp"

namespace normcheck {

struct ContractionJudgement {
  ContractedBlock contracted;
  oracle::CoefficientError coefficient_error;
  oracle::CertifiedAffineLn reference;
  OutputJudgement f, dx;                    ///< contracted kernel, with the contraction bound
  OutputJudgement original_f, original_dx;  ///< original kernel: no a priori bound, judged by its envelope only
};

/// Throws ConversionError when the converter rejects the block.
ContractionJudgement judge_contraction(const ContractionCase& c);

/// The exact stored coefficients as the oracle's view of them.
oracle::StoredContraction stored_view(const ContractedBlock& k);

}  // namespace normcheck
