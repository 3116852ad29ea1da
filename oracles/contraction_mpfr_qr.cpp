// The exact QR contraction at oracle precision: Eigen's Householder QR on a 336-bit MPFR scalar
// (the one multiprecision type of this TU), evaluated at that precision.
#include <boost/multiprecision/eigen.hpp>
#include <boost/multiprecision/mpfr.hpp>
#include <Eigen/Dense>
#include <Eigen/QR>

#include <cmath>

#include "oracles/affine_ln_affine.hpp"
#include "oracles/certified_contraction.hpp"

namespace normcheck::oracle {
namespace {

using Real = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<100>, boost::multiprecision::et_off>;
using Matrix = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic>;

/// R of the full reduced QR of T (k x (d+1), every row kept, no truncation).
std::vector<Real> reduced_r(const std::vector<Real>& t, int64_t n, int64_t cols, int64_t k) {
  Matrix m(n, cols);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t q = 0; q < cols; ++q) m(j, q) = t[j * cols + q];
  const Eigen::HouseholderQR<Matrix> qr(m);
  const Matrix r = qr.matrixQR().topRows(k).template triangularView<Eigen::Upper>();
  std::vector<Real> out(static_cast<size_t>(k * cols));
  for (int64_t l = 0; l < k; ++l)
    for (int64_t q = 0; q < cols; ++q) out[l * cols + q] = r(l, q);
  return out;
}

void split(const Real& v, std::vector<double>& hi, std::vector<double>& lo) {
  const double h = v.convert_to<double>();
  hi.push_back(h);
  lo.push_back(std::isfinite(h) ? Real(v - Real(h)).convert_to<double>() : 0.0);
}

}  // namespace

HighPrecisionContraction high_precision_contraction(const ContractionCase& c) {
  const AffineLnAffine& blk = c.block;
  const std::vector<Real> t = centered_producer<Real>(blk);
  Contraction<Real> k{blk.d, blk.n, blk.m, blk.k(), blk.eps, {}, {}, {}};
  numerator_coefficients(blk, t, k.D, k.c);
  k.R = reduced_r(t, blk.n, blk.d + 1, k.k);
  HighPrecisionContraction out;
  out.k = k.k;
  for (const Real& v : contracted_forward<Real>(k, c.x, c.rows)) split(v, out.f_hi, out.f_lo);
  if (!c.dy.empty())
    for (const Real& v : contracted_vjp<Real>(k, c.x, c.dy, c.rows)) split(v, out.dx_hi, out.dx_lo);
  const int64_t cols = blk.d + 1;
  for (int64_t r = 0; r < c.rows; ++r) {  // |P h| = |T xbar| against |R xbar|
    const auto xbar = [&](int64_t q) { return q < blk.d ? Real(c.x[r * blk.d + q]) : Real(1); };
    Real ph(0), rx(0);
    for (int64_t j = 0; j < blk.n; ++j) {
      Real s(0);
      for (int64_t q = 0; q < cols; ++q) s += t[j * cols + q] * xbar(q);
      ph += s * s;
    }
    for (int64_t l = 0; l < k.k; ++l) {
      Real s(0);
      for (int64_t q = 0; q < cols; ++q) s += k.R[l * cols + q] * xbar(q);
      rx += s * s;
    }
    const Real a = sqrt(ph), b = sqrt(rx);
    const Real scale = a > Real(0) ? a : Real(1);
    out.max_norm_identity_rel = std::max(out.max_norm_identity_rel, Real(abs(a - b) / scale).convert_to<double>());
  }
  for (const Real& v : k.D) out.D.push_back(v.convert_to<double>());
  for (const Real& v : k.R) out.R.push_back(v.convert_to<double>());
  for (const Real& v : k.c) out.c.push_back(v.convert_to<double>());
  return out;
}

}  // namespace normcheck::oracle
