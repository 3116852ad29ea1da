#pragma once
/// The converter under test (seed: qr-contraction-across-layernorm): the real transformation a
/// user runs. Conversion in float64 with Eigen's Householder QR, coefficients stored in the
/// storage dtype; the original divisor n and eps retained.
#include <stdexcept>
#include <string>
#include <vector>

#include "core/contraction_case.hpp"

namespace normcheck {

/// One clear line: malformed block, non-finite parameters, or a coefficient that overflows the
/// storage dtype. Nothing is produced (or written) when it is thrown.
struct ConversionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// D (m x (d+1)), R (k x (d+1)), c (m), row-major, as exact values of the storage dtype.
struct ContractedBlock {
  DType storage = DType::f32;
  int64_t d = 0, n = 0, m = 0, k = 0;
  double eps = 0;
  std::vector<double> D, R, c;
  std::vector<double> R64;             ///< R in float64 before the storage rounding (R - R64 is that rounding)
  std::vector<int64_t> consumer_rows;  ///< D and c rows per consumer (one shared R)
  double max_abs_coefficient = 0;      ///< largest |coefficient| before storage rounding
  /// max |coefficient| / largest finite value of the storage dtype (< 1: no overflow)
  double overflow_margin() const;
};

/// How R (with R^T R = T^T T) is computed in float64.
enum class RFactor {
  householder_qr,  ///< the converter: Eigen's Householder QR of T (the seed's method)
  /// The baseline the seed argues against: Cholesky of the Gram matrix T^T T formed in float64
  /// (its cross terms cancel: the error of |R xbar|^2 is about u |T|^2 |xbar|^2 instead of
  /// u |T| |xbar| |T xbar|). Needs T^T T positive definite in float64 (n >= d + 1, full rank,
  /// condition number below about 1e8); else ConversionError. docs/qr-contraction.md, "QR vs Gram".
  gram_cholesky,
};

/// Converts in float64 and stores in `storage`; throws ConversionError.
ContractedBlock contract_block(const AffineLnAffine& blk, DType storage, RFactor form = RFactor::householder_qr);

}  // namespace normcheck
