#include "core/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace normcheck {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Every error field of a non-finite mismatch.
void set_infinite_errors(ElementError& e) {
  e.abs_err = e.rel_err = e.mollified = e.ulp_err = e.bound_ratio = kInf;
  e.ulp_distance = std::numeric_limits<int64_t>::max();
}

/// A non-finite kernel value: a correct overflow (the infinity the exact value rounds to, or the
/// other candidate of an undecided rounding) passes; anything else (NaN, the opposite infinity, an
/// infinity where the exact value is finite) is a violation (docs/bounds.md section 5.4).
void judge_nonfinite(double got, const CertifiedValue& ref, ElementError& e) {
  if (std::isinf(got) && (got == ref.rounded || got == ref.rounded_alt)) return;
  e.nonfinite_mismatch = true;
  set_infinite_errors(e);
  e.violation = true;
}

/// Judges a finite element whose bound is void by the envelope: |got - center| <= radius, with
/// the computed distance shrunk by 2^-52 so that a violation is certified.
void judge_by_envelope(double got, const Envelope& env, ElementError& e) {
  if (!(env.radius < kInf)) {
    e.envelope_void = true;
    return;
  }
  const double d = std::fabs(got - env.center);
  e.bound_ratio = env.radius > 0 ? d / env.radius : (d > 0 ? kInf : 0.0);
  e.violation = d * (1 - 0x1p-52) > env.radius;
  // The limits are rigorous bounds themselves (rounded outward when derived): a value beyond one fails,
  // with a ratio above 1 by its shortfall relative to the limit.
  const double beyond = got < env.lower ? env.lower - got : got > env.upper ? got - env.upper : 0.0;
  if (beyond > 0) {
    const double limit = std::fabs(got < env.lower ? env.lower : env.upper);
    e.bound_ratio = std::max(e.bound_ratio, 1 + (limit > 0 ? beyond / limit : kInf));
    e.violation = true;
  }
}

}  // namespace

ElementError measure_element(double got, const CertifiedValue& ref, DType dtype, double bound, const Envelope& env,
                             Judging mode) {
  const FloatFormat& fmt = *dtype_info(dtype).format;
  ElementError e;
  e.kernel_finite = std::isfinite(got);
  e.bound_void = !(bound < kInf);
  if (ref.unbounded()) {  // MPFR itself overflowed: nothing to compare with
    e.uncertified = true;
    return e;
  }
  e.rounding_undecided = !ref.rounding_decided;
  if (!e.kernel_finite) {
    judge_nonfinite(got, ref, e);
    if (mode == Judging::rigor && e.bound_void) e.violation = false;  // the own bound predicted it may happen
    return e;
  }
  if (std::isinf(ref.rounded) && std::isinf(ref.rounded_alt)) {  // the exact value overflows the dtype
    // The a priori bounds assume no overflow; a finite value is judged by the envelope, which holds
    // the exact value and max_finite alike, and gets no verdict only where there is none.
    if (mode == Judging::rigor || !(env.radius < kInf)) {
      e.exact_overflow = true;
      return e;
    }
    e.bound_void = true;
    bound = kInf;
  }
  if (!(ref.rad_in(ulp_at(ref.approx(), fmt)) <= kRequiredUlpFraction)) {
    e.uncertified = true;
    return e;
  }
  // Work in the reference's scaled domain so that errors of tiny values do not underflow.
  const auto scaled = [&](double v, int k) { return ref.scale == 0 ? v : scale_by_pow2(v, k); };
  const double signed_diff = (scaled(got, -ref.scale) - ref.hi) - ref.lo;
  const double diff = std::fabs(signed_diff);
  const double mag = std::fabs(ref.approx());
  e.abs_err = scaled(diff, ref.scale);
  e.ref_abs = mag;
  e.rel_err = ref.hi != 0 ? diff / std::fabs(ref.hi) : (diff > 0 ? kInf : 0.0);
  e.mollified = e.abs_err / std::max(mag, 1.0);
  e.ulp_err = diff / scaled(ulp_at(mag, fmt), -ref.scale);
  e.exact_below_normal = mag < dtype_info(dtype).min_normal;
  const uint64_t bits = encode_exact(got, fmt);
  e.ulp_distance = value_steps(bits, encode_exact(ref.rounded, fmt), fmt);
  if (std::isfinite(ref.rounded_alt))
    e.ulp_distance = std::min(e.ulp_distance, value_steps(bits, encode_exact(ref.rounded_alt, fmt), fmt));
  if (e.bound_void) {
    if (mode == Judging::verdict) judge_by_envelope(got, env, e);
    // The envelope admits 0: the output could be 100 % off and pass.
    e.admits_full_relative = !e.envelope_void && mag > 0 && std::max(env.center - env.radius, env.lower) <= 0 &&
                             std::min(env.center + env.radius, env.upper) >= 0;
    return e;
  }
  const double scaled_bound = scaled(bound, -ref.scale);
  e.admits_full_relative = ref.hi != 0 && scaled_bound >= std::fabs(ref.hi);
  e.bound_ratio = bound > 0 ? diff / scaled_bound : (diff > 0 ? kInf : 0.0);
  e.signed_ratio = bound > 0 ? signed_diff / scaled_bound : 0.0;
  if (e.rounding_undecided && e.ulp_distance == 0) return e;  // either candidate rounding is accepted
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
  if (e.nonfinite_mismatch) ++nonfinite_;
  if (e.rounding_undecided) ++rounding_undecided_;
  if (e.unjudged()) {
    uncertified_ += e.uncertified;
    exact_overflow_ += e.exact_overflow;
    envelope_void_ += e.envelope_void;
    return;
  }
  ++count_;
  if (e.violation) ++violations_;
  if (e.bound_violated()) ++rigor_violations_;
  if (!e.bound_void && e.bound_ratio > max_rigor_ratio_) max_rigor_ratio_ = e.bound_ratio;
  if (e.bound_void && e.kernel_finite && e.bound_ratio > max_envelope_ratio_) max_envelope_ratio_ = e.bound_ratio;
  for (int bit = 0; bit < 4; ++bit)
    if (e.regime & (1u << bit)) ++regime_counts_[bit];
  if ((e.regime & 2u) && e.kernel_finite) ++overflow_survived_;
  if (e.undecided) ++undecided_;
  if (e.bound_void) ++void_bounds_;
  if (e.admits_full_relative) ++loose_;
  if (e.ulp_err > max_ulp_) max_ulp_ = e.ulp_err;
  if (!e.exact_below_normal && e.ulp_err > max_ulp_normal_) max_ulp_normal_ = e.ulp_err;
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

int64_t checked_count_sum(int64_t a, int64_t b, const char* what) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) throw std::overflow_error(std::string(what) + "s overflow a 64-bit integer (a crafted report?)");
  return sum;
}

bool ErrorAccumulator::counts_plausible() const {
  const auto ok = [](int64_t c) { return c >= 0 && c <= kMaxPlausibleCount; };
  for (int64_t c : {count_, nonfinite_, violations_, void_bounds_, uncertified_, undecided_, exact_overflow_, envelope_void_, loose_,
                    rounding_undecided_, rigor_violations_, overflow_survived_})
    if (!ok(c)) return false;
  for (int64_t c : regime_counts_)
    if (!ok(c)) return false;
  for (int64_t c : ulp_hist_)
    if (!ok(c)) return false;
  return worst_index_ >= -1 && max_ulp_distance_ >= 0 && worst_regime_ < 16;
}

bool ErrorAccumulator::values_plausible() const {
  for (double v : {max_ulp_, max_ulp_normal_, sum_sq_ulp_, max_abs_, max_rel_, max_mollified_, max_rigor_ratio_, max_envelope_ratio_,
                   diff_sq_, ref_sq_})
    if (!(v >= 0)) return false;  // NaN fails too
  return max_ratio_ >= 0 || max_ratio_ == -1;
}

void ErrorAccumulator::merge(const ErrorAccumulator& o) {
  count_ = checked_count_sum(count_, o.count_);
  nonfinite_ = checked_count_sum(nonfinite_, o.nonfinite_);
  violations_ = checked_count_sum(violations_, o.violations_);
  rigor_violations_ = checked_count_sum(rigor_violations_, o.rigor_violations_);
  max_rigor_ratio_ = std::max(max_rigor_ratio_, o.max_rigor_ratio_);
  max_envelope_ratio_ = std::max(max_envelope_ratio_, o.max_envelope_ratio_);
  void_bounds_ = checked_count_sum(void_bounds_, o.void_bounds_);
  loose_ = checked_count_sum(loose_, o.loose_);
  uncertified_ = checked_count_sum(uncertified_, o.uncertified_);
  exact_overflow_ = checked_count_sum(exact_overflow_, o.exact_overflow_);
  envelope_void_ = checked_count_sum(envelope_void_, o.envelope_void_);
  rounding_undecided_ = checked_count_sum(rounding_undecided_, o.rounding_undecided_);
  undecided_ = checked_count_sum(undecided_, o.undecided_);
  max_ulp_ = std::max(max_ulp_, o.max_ulp_);
  max_ulp_normal_ = std::max(max_ulp_normal_, o.max_ulp_normal_);
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
  overflow_survived_ = checked_count_sum(overflow_survived_, o.overflow_survived_);
  for (int bit = 0; bit < 4; ++bit) regime_counts_[bit] = checked_count_sum(regime_counts_[bit], o.regime_counts_[bit]);
  for (size_t b = 0; b < ulp_hist_.size(); ++b) ulp_hist_[b] = checked_count_sum(ulp_hist_[b], o.ulp_hist_[b]);
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
