#pragma once
/// The one error-metrics module: per-element errors of a kernel value against a certified
/// reference, and an accumulator (max, RMS, worst index) in the style of Boost.Math's test_result.
#include <array>
#include <cstdint>
#include <limits>

#include "core/certified_value.hpp"
#include "core/dtype.hpp"

namespace normcheck {

struct ElementError {
  double abs_err = 0;        ///< |y_hat - y|
  double rel_err = 0;        ///< |y_hat - y| / |y| (inf if y = 0 != y_hat)
  double mollified = 0;      ///< |y_hat - y| / max(|y|, 1)
  double ulp_err = 0;        ///< |y_hat - y| / ulp_dtype(y), fractional
  int64_t ulp_distance = 0;  ///< representable steps between y_hat and RN_dtype(y), by bit pattern
  double bound_ratio = 0;    ///< |y_hat - y| / bound
  bool nonfinite_mismatch = false;  ///< NaN or Inf where the reference differs
  double ref_abs = 0;        ///< |y|, for the normwise error
  bool bound_void = false;   ///< the a priori bound is +inf here (outside its domain)
  bool uncertified = false;  ///< the reference is not accurate enough to judge: not counted
  bool violation = false;    ///< certified: |y_hat - y| > bound for every y in the enclosure
  bool undecided = false;    ///< the enclosure straddles the bound (within the oracle radius)
  uint8_t regime = 0;        ///< regime flags of the element (core/bounds.hpp), set by the judge
  bool kernel_finite = true; ///< the kernel's value is finite
};

/// Errors of kernel value `got` (exact double of a dtype value) against `ref` with `bound` (the
/// tolerance). A violation is certified: it holds for every value in the oracle's enclosure.
ElementError measure_element(double got, const CertifiedValue& ref, DType dtype, double bound);

/// ULP-error histogram buckets: 0 holds errors <= 0.5 ULP, bucket k >= 1 holds (2^(k-2), 2^(k-1)] ULP,
/// the last bucket also everything larger and non-finite errors (docs/report-format.md).
inline constexpr int kUlpBuckets = 48;

/// The histogram bucket of an ULP error.
int ulp_bucket(double ulp_err);

/// Running summary over many elements.
class ErrorAccumulator {
 public:
  /// Adds one element; `index` identifies it for worst-case reporting.
  void add(const ElementError& e, int64_t index);
  /// Merges another accumulator (the other's indices must already be globally meaningful).
  void merge(const ErrorAccumulator& other);

  int64_t count() const { return count_; }
  int64_t nonfinite_mismatches() const { return nonfinite_; }
  /// Certified violations: error above the bound, or Inf/NaN where the bound is finite.
  int64_t bound_violations() const { return violations_; }
  int64_t void_bounds() const { return void_bounds_; }  ///< elements whose bound is +inf
  int64_t uncertified() const { return uncertified_; }  ///< elements left unjudged
  int64_t undecided() const { return undecided_; }  ///< within the oracle radius of the bound
  /// Elements with regime bit `bit` (0 cancellation, 1 overflow, 2 underflow, 3 eps_vanishes).
  int64_t regime_count(int bit) const { return regime_counts_[bit]; }
  /// Elements predicted to overflow on which the kernel still returned a finite value.
  int64_t overflow_survived() const { return overflow_survived_; }
  uint8_t worst_regime() const { return worst_regime_; }  ///< regime of the worst element
  double max_ulp() const { return max_ulp_; }
  const std::array<int64_t, kUlpBuckets>& ulp_histogram() const { return ulp_hist_; }
  int64_t max_ulp_distance() const { return max_ulp_distance_; }
  double rms_ulp() const;
  double max_abs() const { return max_abs_; }
  double max_rel() const { return max_rel_; }
  double max_mollified() const { return max_mollified_; }
  double max_bound_ratio() const { return max_ratio_; }
  int64_t worst_index() const { return worst_index_; }  ///< element with the largest bound ratio
  /// Normwise relative error ||y_hat - y||_2 / ||y||_2 over added elements.
  double normwise() const;

 private:
  int64_t count_ = 0, nonfinite_ = 0, violations_ = 0, void_bounds_ = 0, uncertified_ = 0, undecided_ = 0,
          overflow_survived_ = 0, regime_counts_[4] = {0, 0, 0, 0}, worst_index_ = -1, max_ulp_distance_ = 0;
  double max_ulp_ = 0, sum_sq_ulp_ = 0, max_abs_ = 0, max_rel_ = 0, max_mollified_ = 0;
  double max_ratio_ = -1, diff_sq_ = 0, ref_sq_ = 0;
  uint8_t worst_regime_ = 0;
  std::array<int64_t, kUlpBuckets> ulp_hist_{};
};

}  // namespace normcheck
