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

CertifiedValue certify_interval(mpfi_srcptr v, DType dtype) {
  const mpfr_prec_t prec = mpfi_get_prec(v) + 8;
  MpfrTemp left(prec), right(prec), mid(prec), tail(prec), a(prec), b(prec);
  mpfi_get_left(left.v, v);
  mpfi_get_right(right.v, v);
  CertifiedValue out;
  if (mpfr_nan_p(left.v) || mpfr_nan_p(right.v) || mpfr_inf_p(left.v) || mpfr_inf_p(right.v)) {
    out.hi = out.rounded = std::numeric_limits<double>::quiet_NaN();
    out.rad = std::numeric_limits<double>::infinity();
    out.rounding_certain = false;
    return out;
  }
  mpfr_add(mid.v, left.v, right.v, MPFR_RNDN);  // exact: prec exceeds the endpoints' by 8 bits
  mpfr_div_2ui(mid.v, mid.v, 1, MPFR_RNDN);
  out.rounded = round_mpfr_to_dtype(mid.v, dtype);
  const double r_left = round_mpfr_to_dtype(left.v, dtype);
  const double r_right = round_mpfr_to_dtype(right.v, dtype);
  out.rounding_certain = r_left == r_right && std::signbit(r_left) == std::signbit(r_right);
  // Scale tiny values up by a power of two (exact) so hi, lo and rad stay normal doubles.
  // An enclosure centred on exactly 0 (an exact zero computed through cancellations) is scaled
  // by its wider endpoint, so that its radius stays representable below denorm_min.
  mpfr_exp_t e = 0;
  if (!mpfr_zero_p(mid.v))
    e = mpfr_get_exp(mid.v);
  else if (!mpfr_zero_p(left.v) || !mpfr_zero_p(right.v))
    e = std::max(mpfr_zero_p(left.v) ? mpfr_exp_t{-1} << 40 : mpfr_get_exp(left.v),
                 mpfr_zero_p(right.v) ? mpfr_exp_t{-1} << 40 : mpfr_get_exp(right.v));
  out.scale = e < kTinyExponent ? static_cast<int>(e) : 0;
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
