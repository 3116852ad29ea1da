#pragma once
/// A priori componentwise bound for the contracted block's evaluation (docs/bounds.md section 12):
/// the stored coefficients' certified distance to the exact contraction (CoefficientError: the
/// float64 conversion and the storage rounding) propagated with the kernel's own rounding
/// errors, operation by operation ((magnitude, error) pairs of bounds/error_pairs.hpp).
#include "bounds/bounds.hpp"
#include "core/contraction_case.hpp"
#include "oracles/certified_contraction.hpp"

namespace normcheck {

struct ContractionBound {
  TensorBound f, dx;  ///< dx empty when the case has no dy
};

/// Bounds on |f_hat - f| and |dx_hat - dx| of the contracted kernel with stored coefficients `s`
/// (exact values), their certified errors `e`, the case's inputs and the original block's
/// certified statistics `ref` (|P h|^2 / n = var); accumulator `accum`.
ContractionBound contracted_bound(const ContractionCase& c, const oracle::StoredContraction& s,
                                  const oracle::CoefficientError& e, const oracle::CertifiedAffineLn& ref, DType accum);

/// The original (uncontracted) block kernel has no a priori error bound: every bound is +inf and
/// every element is judged by the envelope of its three stored stages (docs/bounds.md section 15.4).
ContractionBound original_envelope(const ContractionCase& c, DType accum);

}  // namespace normcheck
