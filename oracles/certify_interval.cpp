#include "oracles/certify_interval.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace normcheck::oracle {
namespace {

/// RAII holder for one MPFR number.
struct MpfrTemp {
  explicit MpfrTemp(mpfr_prec_t prec) { mpfr_init2(v, prec); }
  ~MpfrTemp() { mpfr_clear(v); }
  MpfrTemp(const MpfrTemp&) = delete;
  MpfrTemp& operator=(const MpfrTemp&) = delete;
  mpfr_t v;
};

/// Values below 2^kTinyExponent are stored scaled (CertifiedValue::scale).
constexpr mpfr_exp_t kTinyExponent = -900;

}  // namespace

double round_to_odd_double(mpfr_srcptr x) {
  const double t = mpfr_get_d(x, MPFR_RNDZ);
  if (mpfr_nan_p(x) || mpfr_inf_p(x) || mpfr_cmp_d(x, t) == 0) return t;
  uint64_t bits;
  std::memcpy(&bits, &t, 8);
  bits |= 1u;  // inexact: the odd neighbour (t truncated toward zero, so this moves away from 0)
  double r;
  std::memcpy(&r, &bits, 8);
  return r;
}

double round_mpfr_to_dtype(mpfr_srcptr x, DType dtype) {
  if (dtype == DType::f64) return mpfr_get_d(x, MPFR_RNDN);
  return round_to_dtype(round_to_odd_double(x), dtype);
}

double interval_mid_double(mpfi_srcptr v) {
  MpfrTemp m(mpfi_get_prec(v) + 2);
  mpfi_mid(m.v, v);
  return mpfr_get_d(m.v, MPFR_RNDN);
}

namespace {

/// Values below 2^kTinyExponent or at and above 2^kHugeExponent are stored scaled.
constexpr mpfr_exp_t kHugeExponent = 1000;

/// The power-of-two scale of an enclosure: the exponent of its midpoint (or, for an enclosure
/// centred on exactly 0, of its wider endpoint, so that the radius stays representable) when that
/// is tiny or huge, else 0.
int scale_of(mpfr_srcptr left, mpfr_srcptr right, mpfr_srcptr mid) {
  mpfr_exp_t e = 0;
  if (!mpfr_zero_p(mid))
    e = mpfr_get_exp(mid);
  else if (!mpfr_zero_p(left) || !mpfr_zero_p(right))
    e = std::max(mpfr_zero_p(left) ? -(mpfr_exp_t{1} << 40) : mpfr_get_exp(left),
                 mpfr_zero_p(right) ? -(mpfr_exp_t{1} << 40) : mpfr_get_exp(right));
  return e < kTinyExponent || e >= kHugeExponent ? static_cast<int>(e) : 0;
}

/// Ziv's test on the enclosure: both ends round to the same dtype value (the sign of zero aside).
void decide_rounding(mpfr_srcptr left, mpfr_srcptr right, DType dtype, CertifiedValue& out) {
  if (mpfr_zero_p(left) && mpfr_zero_p(right)) {  // an exact zero (MPFI writes it [+0, -0])
    out.rounded = out.rounded_alt = 0.0;
    return;
  }
  const double r_left = round_mpfr_to_dtype(left, dtype), r_right = round_mpfr_to_dtype(right, dtype);
  out.rounded = r_left;
  out.rounded_alt = r_right;
  out.rounding_decided = r_left == r_right;  // -0 == +0: a zero of either sign is the same value
  out.zero_sign_undecided = r_left == 0 && r_right == 0 && std::signbit(r_left) != std::signbit(r_right);
  if (out.zero_sign_undecided) out.rounded = out.rounded_alt = 0.0;
}

}  // namespace

namespace {

/// The six temporaries of certify_interval, kept per thread and resized only when the precision
/// changes (issue 17: six allocations and frees per certified output otherwise). mpfr_set_prec
/// reuses the significand's storage when it is large enough; every temporary is overwritten before
/// it is read.
struct CertifyTemps {
  mpfr_prec_t prec = 0;
  MpfrTemp left{MPFR_PREC_MIN}, right{MPFR_PREC_MIN}, mid{MPFR_PREC_MIN}, tail{MPFR_PREC_MIN}, a{MPFR_PREC_MIN}, b{MPFR_PREC_MIN};
  void use(mpfr_prec_t p) {
    if (p == prec) return;
    for (mpfr_ptr t : {left.v, right.v, mid.v, tail.v, a.v, b.v}) mpfr_set_prec(t, p);
    prec = p;
  }
};

CertifyTemps& certify_temps(mpfr_prec_t prec) {
  thread_local CertifyTemps temps;
  temps.use(prec);
  return temps;
}

}  // namespace

CertifiedValue certify_interval(mpfi_srcptr v, DType dtype) {
  CertifyTemps& t = certify_temps(mpfi_get_prec(v) + 8);
  MpfrTemp &left = t.left, &right = t.right, &mid = t.mid, &tail = t.tail, &a = t.a, &b = t.b;
  mpfi_get_left(left.v, v);
  mpfi_get_right(right.v, v);
  CertifiedValue out;
  if (mpfr_nan_p(left.v) || mpfr_nan_p(right.v) || mpfr_inf_p(left.v) || mpfr_inf_p(right.v)) {
    out.hi = out.rounded = out.rounded_alt = std::numeric_limits<double>::quiet_NaN();
    out.rad = std::numeric_limits<double>::infinity();
    out.rounding_decided = false;
    return out;
  }
  mpfr_add(mid.v, left.v, right.v, MPFR_RNDN);  // exact: prec exceeds the endpoints' by 8 bits
  mpfr_div_2ui(mid.v, mid.v, 1, MPFR_RNDN);
  decide_rounding(left.v, right.v, dtype, out);
  // Scale tiny and huge values by a power of two (exact) so hi, lo and rad stay finite normal doubles.
  out.scale = scale_of(left.v, right.v, mid.v);
  for (mpfr_ptr p : {left.v, right.v, mid.v}) mpfr_div_2si(p, p, out.scale, MPFR_RNDN);
  out.hi = mpfr_get_d(mid.v, MPFR_RNDN);
  mpfr_sub_d(tail.v, mid.v, out.hi, MPFR_RNDN);
  out.lo = mpfr_get_d(tail.v, MPFR_RNDN);
  // rad >= max(right - mid, mid - left) + |mid - hi - lo|, every step rounded upward.
  mpfr_sub(a.v, right.v, mid.v, MPFR_RNDU);
  mpfr_sub(b.v, mid.v, left.v, MPFR_RNDU);
  mpfr_max(a.v, a.v, b.v, MPFR_RNDU);
  mpfr_sub_d(tail.v, tail.v, out.lo, MPFR_RNDN);
  mpfr_abs(tail.v, tail.v, MPFR_RNDU);
  mpfr_add(a.v, a.v, tail.v, MPFR_RNDU);
  out.rad = mpfr_get_d(a.v, MPFR_RNDU);
  return out;
}

}  // namespace normcheck::oracle
