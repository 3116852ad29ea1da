#include "core/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace normcheck {

ElementError measure_element(double got, const CertifiedValue& ref, DType dtype, double bound) {
  const FloatFormat& fmt = *dtype_info(dtype).format;
  const double inf = std::numeric_limits<double>::infinity();
  ElementError e;
  e.kernel_finite = std::isfinite(got);
  if (!(ref.rad_in(ulp_at(ref.approx(), fmt)) <= kRequiredUlpFraction)) {
    e.uncertified = true;
    return e;
  }
  const bool ref_finite = std::isfinite(ref.rounded);
  e.bound_void = std::isinf(bound);
  if (!std::isfinite(got) || !ref_finite) {
    const bool same = (std::isnan(got) && std::isnan(ref.rounded)) || got == ref.rounded;
    if (!same) {
      e.nonfinite_mismatch = true;
      e.violation = !e.bound_void;  // Inf/NaN where the bound predicted safety is a failure
      e.abs_err = e.rel_err = e.mollified = e.ulp_err = inf;
      e.bound_ratio = e.bound_void ? 0.0 : inf;
      e.ulp_distance = std::numeric_limits<int64_t>::max();
    }
    return e;
  }
  // Work in the reference's scaled domain so that errors of tiny values do not underflow.
  const double diff = std::fabs((std::ldexp(got, -ref.scale) - ref.hi) - ref.lo);
  const double mag = std::fabs(ref.approx());
  e.abs_err = std::ldexp(diff, ref.scale);
  e.ref_abs = mag;
  e.rel_err = ref.hi != 0 ? diff / std::fabs(ref.hi) : (diff > 0 ? inf : 0.0);
  e.mollified = e.abs_err / std::max(mag, 1.0);
  e.ulp_err = diff / std::ldexp(ulp_at(mag, fmt), -ref.scale);
  e.ulp_distance = std::llabs(ordered_key(encode_exact(got, fmt), fmt) -
                              ordered_key(encode_exact(ref.rounded, fmt), fmt));
  const double scaled_bound = std::ldexp(bound, -ref.scale);
  e.bound_ratio = bound > 0 ? diff / scaled_bound : (diff > 0 ? inf : 0.0);
  // diff is rounded to nearest: shrink it by 2^-50 relative so that a violation stays certified.
  e.violation = diff * (1 - 0x1p-50) - ref.rad > scaled_bound;
  e.undecided = !e.violation && diff + ref.rad > scaled_bound;
  return e;
}

int ulp_bucket(double ulp_err) {
  if (!(ulp_err > 0.5)) return std::isnan(ulp_err) ? kUlpBuckets - 1 : 0;
  if (!std::isfinite(ulp_err)) return kUlpBuckets - 1;
  int exponent = 0;
  const double mantissa = std::frexp(ulp_err, &exponent);  // ulp_err = mantissa 2^exponent, mantissa in [0.5, 1)
  const int ceil_log2 = mantissa == 0.5 ? exponent - 1 : exponent;
  return std::min(kUlpBuckets - 1, ceil_log2 + 1);
}

void ErrorAccumulator::add(const ElementError& e, int64_t index) {
  if (e.uncertified) {
    ++uncertified_;
    return;
  }
  ++count_;
  if (e.nonfinite_mismatch) ++nonfinite_;
  if (e.violation) ++violations_;
  for (int bit = 0; bit < 4; ++bit)
    if (e.regime & (1u << bit)) ++regime_counts_[bit];
  if ((e.regime & 2u) && e.kernel_finite) ++overflow_survived_;
  if (e.undecided) ++undecided_;
  if (e.bound_void) ++void_bounds_;
  if (e.ulp_err > max_ulp_) max_ulp_ = e.ulp_err;
  ++ulp_hist_[static_cast<size_t>(ulp_bucket(e.ulp_err))];
  if (e.ulp_distance > max_ulp_distance_) max_ulp_distance_ = e.ulp_distance;
  sum_sq_ulp_ += std::isfinite(e.ulp_err) ? e.ulp_err * e.ulp_err : 0.0;
  if (std::isfinite(e.abs_err)) {
    diff_sq_ += e.abs_err * e.abs_err;
    ref_sq_ += e.ref_abs * e.ref_abs;
  } else {
    diff_sq_ = std::numeric_limits<double>::infinity();
  }
  max_abs_ = std::max(max_abs_, e.abs_err);
  max_rel_ = std::max(max_rel_, e.rel_err);
  max_mollified_ = std::max(max_mollified_, e.mollified);
  if (e.bound_ratio > max_ratio_) {
    max_ratio_ = e.bound_ratio;
    worst_index_ = index;
    worst_regime_ = e.regime;
  }
}

void ErrorAccumulator::merge(const ErrorAccumulator& o) {
  count_ += o.count_;
  nonfinite_ += o.nonfinite_;
  violations_ += o.violations_;
  void_bounds_ += o.void_bounds_;
  uncertified_ += o.uncertified_;
  undecided_ += o.undecided_;
  max_ulp_ = std::max(max_ulp_, o.max_ulp_);
  max_ulp_distance_ = std::max(max_ulp_distance_, o.max_ulp_distance_);
  sum_sq_ulp_ += o.sum_sq_ulp_;
  max_abs_ = std::max(max_abs_, o.max_abs_);
  max_rel_ = std::max(max_rel_, o.max_rel_);
  max_mollified_ = std::max(max_mollified_, o.max_mollified_);
  if (o.max_ratio_ > max_ratio_) {
    max_ratio_ = o.max_ratio_;
    worst_index_ = o.worst_index_;
    worst_regime_ = o.worst_regime_;
  }
  overflow_survived_ += o.overflow_survived_;
  for (int bit = 0; bit < 4; ++bit) regime_counts_[bit] += o.regime_counts_[bit];
  for (size_t b = 0; b < ulp_hist_.size(); ++b) ulp_hist_[b] += o.ulp_hist_[b];
  diff_sq_ += o.diff_sq_;
  ref_sq_ += o.ref_sq_;
}

double ErrorAccumulator::rms_ulp() const {
  return count_ > 0 ? std::sqrt(sum_sq_ulp_ / static_cast<double>(count_)) : 0.0;
}

double ErrorAccumulator::normwise() const {
  if (ref_sq_ > 0) return std::sqrt(diff_sq_ / ref_sq_);
  return diff_sq_ > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

}  // namespace normcheck
