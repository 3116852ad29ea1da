#include "oracles/gain_split.hpp"

#include <mpfi.h>

#include <cmath>

#include "oracles/certify_interval.hpp"

namespace normcheck::oracle {

bool GainSplit::exact_in_double() const {
  for (double l : lo)
    if (l != 0) return false;
  return true;
}

GainSplit split_unit_offset_gain(const std::vector<double>& w) {
  GainSplit s;
  s.hi.resize(w.size());
  s.lo.resize(w.size());
  for (size_t j = 0; j < w.size(); ++j) {
    const double a = 1.0, b = w[j];
    const double h = a + b, bb = h - a;
    s.hi[j] = h;
    s.lo[j] = (a - (h - bb)) + (b - bb);  // exact for finite a, b without overflow (|w| <= max f64 - 1 here)
  }
  return s;
}

namespace {

constexpr mpfr_prec_t kSumBits = 320;

/// v = [(hi + lo - rad) 2^scale, (hi + lo + rad) 2^scale], outward.
void load(mpfi_t v, const CertifiedValue& c) {
  mpfi_t r;
  mpfi_init2(r, kSumBits);
  mpfi_set_d(v, c.hi);
  mpfi_add_d(v, v, c.lo);
  mpfi_interv_d(r, -c.rad, c.rad);
  mpfi_add(v, v, r);
  mpfi_mul_2si(v, v, c.scale);
  mpfi_clear(r);
}

}  // namespace

CertifiedValue certified_sum(const CertifiedValue& a, const CertifiedValue& b, DType dtype) {
  if (b.hi == 0 && b.lo == 0 && b.rad == 0) return a;  // the lo half of a column whose gain is a double
  if (a.unbounded() || b.unbounded()) {
    CertifiedValue out = a.unbounded() ? a : b;
    out.rad = HUGE_VAL;
    return out;
  }
  mpfi_t x, y;
  mpfi_init2(x, kSumBits);
  mpfi_init2(y, kSumBits);
  load(x, a);
  load(y, b);
  mpfi_add(x, x, y);
  const CertifiedValue out = certify_interval(x, dtype);
  mpfi_clear(x);
  mpfi_clear(y);
  return out;
}

}  // namespace normcheck::oracle
