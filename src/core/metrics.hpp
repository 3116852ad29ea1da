#pragma once
/// The one error-metrics module: per-element errors of a kernel value against a certified
/// reference, and an accumulator (max, RMS, worst index) in the style of Boost.Math's test_result.
#include <array>
#include <cstdint>
#include <limits>

#include "core/certified_value.hpp"
#include "core/dtype.hpp"

namespace normcheck {

/// A range that every value the verdict's arithmetic can produce lies in, whatever the regime
/// (center +- radius): it judges an element whose a priori bound is void (docs/bounds.md
/// section 15). A radius of +inf means no envelope.
struct Envelope {
  double center = 0;
  double radius = std::numeric_limits<double>::infinity();
  /// Limits the value also respects where the envelope knows them (section 15.7): an interval
  /// [lower, upper] may exclude the centre (a kernel returning beta, or 0, where it cannot).
  double lower = -std::numeric_limits<double>::infinity(), upper = std::numeric_limits<double>::infinity();
};

struct ElementError {
  double abs_err = 0;        ///< |y_hat - y|
  double rel_err = 0;        ///< |y_hat - y| / |y| (inf if y = 0 != y_hat)
  double mollified = 0;      ///< |y_hat - y| / max(|y|, 1)
  double ulp_err = 0;        ///< |y_hat - y| / ulp_dtype(y), fractional
  /// Representable values between y_hat and RN_dtype(y) (the nearer candidate when the rounding
  /// is undecided), the two zeros counting as one value.
  int64_t ulp_distance = 0;
  double bound_ratio = 0;    ///< |y_hat - y| / bound, or |y_hat - center| / radius when judged by the envelope
  double signed_ratio = 0;   ///< (y_hat - y) / bound where the a priori bound judges (bias statistic), else 0
  bool nonfinite_mismatch = false;  ///< NaN or Inf where the reference differs
  double ref_abs = 0;        ///< |y|, for the normwise error
  bool bound_void = false;   ///< the a priori bound is void (+inf): judged by the envelope only
  bool uncertified = false;  ///< no verdict: the reference is not accurate enough to judge
  bool exact_overflow = false;  ///< no verdict: the exact value overflows the dtype, the kernel is finite, no envelope
  bool envelope_void = false;   ///< no verdict: both the bound and the envelope are void
  bool violation = false;    ///< certified: outside the bound (or envelope) for every y in the enclosure
  bool undecided = false;    ///< the enclosure straddles the bound (within the oracle radius)
  bool rounding_undecided = false;  ///< the reference's rounding is undecided: either candidate passes
  uint8_t regime = 0;        ///< regime flags of the element (bounds/bounds.hpp), set by the judge
  bool kernel_finite = true; ///< the kernel's value is finite
  bool exact_below_normal = false;  ///< |y| is below the dtype's smallest normal (its ULP is the subnormal spacing)
  /// The verdict admits an error of |y| or more here (bound >= |y|, or an envelope holding 0): the
  /// problem is so ill-conditioned for the contract's arithmetic (unresolved statistics, cancellation)
  /// that a sound kernel may be 100 % off; the record counts such elements (loose_elements).
  bool admits_full_relative = false;
  /// No verdict at all (uncertified reference, exact value beyond the dtype, or no envelope).
  bool unjudged() const { return uncertified || exact_overflow || envelope_void; }
  /// The a priori bound itself is violated (a finite bound; not the envelope, not Inf/NaN where the
  /// bound is void): what the rigor of a kernel's own bound is checked by.
  bool bound_violated() const { return violation && !bound_void; }
};

/// What a measurement decides: a verdict (every element is judged: Inf/NaN against a finite exact
/// value fails always, a void bound hands over to the envelope) or the rigor of a kernel's own
/// a priori bound (where that bound is void, it claims nothing: nothing is judged there).
enum class Judging { verdict, rigor };

/// Errors of kernel value `got` (exact double of a dtype value) against `ref` with `bound` (the
/// tolerance) and, where the bound is void, the envelope. A violation is certified: it holds for
/// every value in the oracle's enclosure. For a verdict, Inf or NaN is a violation wherever the
/// exact value is finite and representable in the dtype, bound or no bound.
ElementError measure_element(double got, const CertifiedValue& ref, DType dtype, double bound,
                             const Envelope& envelope = {}, Judging mode = Judging::verdict);

/// ULP-error histogram buckets: 0 holds errors <= 0.5 ULP, bucket k >= 1 holds (2^(k-2), 2^(k-1)] ULP,
/// the last bucket also everything larger and non-finite errors (docs/report-format.md).
inline constexpr int kUlpBuckets = 48;

/// The largest element count a run can produce (2^53: beyond any memory; sums of a few million
/// such counts cannot overflow int64). Counts read from reports are checked against it.
inline constexpr int64_t kMaxPlausibleCount = int64_t{1} << 53;

/// a + b, or std::overflow_error naming `what` when the sum leaves int64 (counts from untrusted reports).
int64_t checked_count_sum(int64_t a, int64_t b, const char* what = "element count");

/// The histogram bucket of an ULP error.
int ulp_bucket(double ulp_err);

/// Running summary over many elements.
class ErrorAccumulator {
 public:
  /// Adds one element; `index` identifies it for worst-case reporting.
  void add(const ElementError& e, int64_t index);
  /// Merges another accumulator (the other's indices must already be globally meaningful).
  /// Throws std::overflow_error when a count would overflow (only crafted shard bytes can do that).
  void merge(const ErrorAccumulator& other);
  /// Whether every count is one a run can produce (0 to kMaxPlausibleCount; the worst index -1 or
  /// more): accumulators read back from a shard report are untrusted bytes (issue 48 M3).
  bool counts_plausible() const;
  /// Whether every error statistic is one a run can produce: no NaN, none below zero (the bound
  /// ratio's "none yet" is -1). A crafted shard's max_ulp of -7.9e77 made a merged report that
  /// failed its own schema (found by fuzz_shard_merge).
  bool values_plausible() const;

  int64_t count() const { return count_; }  ///< elements with a verdict (bound or envelope)
  int64_t nonfinite_mismatches() const { return nonfinite_; }
  /// Certified violations: error above the bound (or outside the envelope), or Inf/NaN where the
  /// exact value is finite and representable.
  int64_t bound_violations() const { return violations_; }
  /// Violations of the a priori bound itself (ElementError::bound_violated): the rigor check.
  int64_t rigor_violations() const { return rigor_violations_; }
  int64_t void_bounds() const { return void_bounds_; }  ///< judged by the envelope only (bound void)
  /// Judged elements whose bound or envelope admits a relative error of 100 % or more (ElementError::admits_full_relative).
  int64_t loose() const { return loose_; }
  int64_t uncertified() const { return uncertified_; }  ///< no verdict: reference not certified
  int64_t exact_overflows() const { return exact_overflow_; }  ///< no verdict: exact value beyond the dtype
  int64_t envelope_void() const { return envelope_void_; }  ///< no verdict: no bound and no envelope
  /// Elements without any verdict.
  int64_t unjudged() const { return uncertified_ + exact_overflow_ + envelope_void_; }
  int64_t undecided() const { return undecided_; }  ///< within the oracle radius of the bound
  int64_t rounding_undecided() const { return rounding_undecided_; }  ///< reference rounding undecided
  /// Elements with regime bit `bit` (0 cancellation, 1 overflow, 2 underflow, 3 eps_vanishes).
  int64_t regime_count(int bit) const { return regime_counts_[bit]; }
  /// Elements predicted to overflow on which the kernel still returned a finite value.
  int64_t overflow_survived() const { return overflow_survived_; }
  uint8_t worst_regime() const { return worst_regime_; }  ///< regime of the worst element
  double max_ulp() const { return max_ulp_; }
  /// Max ULP error over elements whose exact value is at least the dtype's smallest normal: tiny
  /// exact outputs (subnormal spacing, exact zeros) make max_ulp huge on correct kernels.
  double max_ulp_normal() const { return max_ulp_normal_; }
  const std::array<int64_t, kUlpBuckets>& ulp_histogram() const { return ulp_hist_; }
  int64_t max_ulp_distance() const { return max_ulp_distance_; }
  double rms_ulp() const;
  double max_abs() const { return max_abs_; }
  double max_rel() const { return max_rel_; }
  double max_mollified() const { return max_mollified_; }
  double max_bound_ratio() const { return max_ratio_; }
  /// Largest ratio over elements judged by a finite a priori bound (not the envelope): the rigor view.
  double max_rigor_ratio() const { return max_rigor_ratio_; }
  /// Largest |value - center| / radius over finite elements judged by the envelope only.
  double max_envelope_ratio() const { return max_envelope_ratio_; }
  int64_t worst_index() const { return worst_index_; }  ///< element with the largest bound ratio
  /// Normwise relative error ||y_hat - y||_2 / ||y||_2 over added elements.
  double normwise() const;

 private:
  int64_t count_ = 0, nonfinite_ = 0, violations_ = 0, void_bounds_ = 0, uncertified_ = 0, undecided_ = 0,
          exact_overflow_ = 0, envelope_void_ = 0, loose_ = 0, rounding_undecided_ = 0, rigor_violations_ = 0, overflow_survived_ = 0, regime_counts_[4] = {0, 0, 0, 0}, worst_index_ = -1, max_ulp_distance_ = 0;
  double max_ulp_ = 0, max_ulp_normal_ = 0, sum_sq_ulp_ = 0, max_abs_ = 0, max_rel_ = 0, max_mollified_ = 0;
  double max_ratio_ = -1, max_rigor_ratio_ = 0, max_envelope_ratio_ = 0, diff_sq_ = 0, ref_sq_ = 0;
  uint8_t worst_regime_ = 0;
  std::array<int64_t, kUlpBuckets> ulp_hist_{};
};

}  // namespace normcheck
