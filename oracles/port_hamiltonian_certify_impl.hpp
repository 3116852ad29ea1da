#pragma once
/// Shared body of the MPFI port-Hamiltonian TUs (one interval type per TU): l2-ball stream,
/// certified Cayley and dissipation matrices. Include from one TU per interval type.
#include <algorithm>
#include <cmath>

#include <Eigen/Dense>
#include <boost/multiprecision/mpfi.hpp>

#include "core/float_format.hpp"
#include "oracles/certified_port_hamiltonian.hpp"
#include "oracles/certify_interval.hpp"
#include "oracles/port_hamiltonian.hpp"

namespace normcheck::oracle::ph_detail {

template <unsigned Digits>
using Interval = boost::multiprecision::number<boost::multiprecision::mpfi_float_backend<Digits>, boost::multiprecision::et_off>;

/// The midpoint as a thin interval.
template <class I>
I thin_mid(const I& x) {
  mpfr_t m;
  mpfr_init2(m, mpfi_get_prec(x.backend().data()));
  mpfi_mid(m, x.backend().data());
  I r;
  mpfi_set_fr(r.backend().data(), m);
  mpfr_clear(m);
  return r;
}
template <class I>
double mid_double(const I& x) {
  mpfr_t m;
  mpfr_init2(m, mpfi_get_prec(x.backend().data()));
  mpfi_mid(m, x.backend().data());
  const double d = mpfr_get_d(m, MPFR_RNDN);
  mpfr_clear(m);
  return d;
}
/// Upper bound of max |x| (mag) or lower bound of min |x| (mig), as a double rounded outward.
template <class I>
double mag_up(const I& x, bool lower = false) {
  mpfr_t m;
  mpfr_init2(m, mpfi_get_prec(x.backend().data()));
  if (lower) mpfi_mig(m, x.backend().data()); else mpfi_mag(m, x.backend().data());
  const double d = mpfr_get_d(m, lower ? MPFR_RNDD : MPFR_RNDU);
  mpfr_clear(m);
  return d;
}
/// Upper bound of half the width.
template <class I>
double half_width_up(const I& x) {
  mpfr_t m;
  mpfr_init2(m, mpfi_get_prec(x.backend().data()));
  mpfi_diam_abs(m, x.backend().data());
  const double d = mpfr_get_d(m, MPFR_RNDU) * 0.5;
  mpfr_clear(m);
  return d;
}
inline double up(double x) { return x * (1 + 0x1p-50) + 0x1p-1074; }
inline double down(double x) { return x * (1 - 0x1p-50); }

/// [lower, upper] of ||x||_2 for an interval vector (widths included).
template <class I>
std::pair<double, double> norm_enclosure(const std::vector<I>& x) {
  I lo(0), hi(0);
  for (const I& e : x) {
    const I a(mag_up(e, true)), b(mag_up(e));
    lo += a * a;
    hi += b * b;
  }
  return {down(mag_up(I(sqrt(lo)), true)), mag_up(I(sqrt(hi)))};
}

/// Upper bound of || x - mid(x) ||_2.
template <class I>
double radius_l2(const std::vector<I>& x) {
  I s(0);
  for (const I& e : x) {
    const I w(half_width_up(e));
    s += w * w;
  }
  return mag_up(I(sqrt(s)));
}

/// (h/2) S as intervals, converted once per step (the residuals reuse it).
template <class I>
std::vector<I> half_h_s(const PhStep& p, double h) {
  const I hh = I(h) / I(2);
  std::vector<I> out;
  out.reserve(p.S.size());
  for (double v : p.S) out.push_back(hh * I(v));
  return out;
}

/// y = x + sign (h/2) S x with the precomputed (h/2) S.
template <class I>
std::vector<I> shifted(const std::vector<I>& hs, const std::vector<I>& x, int sign) {
  const size_t n = x.size();
  std::vector<I> y(n);
  for (size_t i = 0; i < n; ++i) {
    I s(0);
    for (size_t j = 0; j < n; ++j)
      if (i != j) s += hs[i * n + j] * x[j];
    y[i] = sign > 0 ? I(x[i] + s) : I(x[i] - s);
  }
  return y;
}

/// Approximate C x (thin, refined) and the certified bound of its distance to the exact C x.
template <class I>
std::vector<I> cayley_image(const PhStep& p, const std::vector<I>& hs, const Eigen::PartialPivLU<Eigen::MatrixXd>& lu,
                            const std::vector<I>& x, double& residual) {
  const int bits = static_cast<int>(mpfi_get_prec(I(0).backend().data()));
  const int64_t n = p.n;
  const std::vector<I> rhs = shifted(hs, x, +1);  // (I + (h/2) S) x
  Eigen::VectorXd b(n);
  for (int64_t i = 0; i < n; ++i) b[i] = mid_double(rhs[i]);
  Eigen::VectorXd z0 = lu.solve(b);
  std::vector<I> z(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) z[i] = I(z0[i]);
  std::vector<I> r;
  for (int it = 0;; ++it) {
    r = shifted(hs, z, -1);  // (I - (h/2) S) z; the residual is rhs minus it
    for (int64_t i = 0; i < n; ++i) r[i] = rhs[i] - r[i];
    if (it == 4 || norm_enclosure(r).second <= std::ldexp(norm_enclosure(z).second, 20 - bits)) break;
    for (int64_t i = 0; i < n; ++i) b[i] = mid_double(r[i]);
    if (b.norm() == 0) break;
    const Eigen::VectorXd d = lu.solve(b);
    for (int64_t i = 0; i < n; ++i) z[i] = thin_mid(I(z[i] + I(d[i])));
  }
  residual = norm_enclosure(r).second;  // ||z - C x|| <= ||(I - hS/2)^-1|| ||r|| <= ||r||
  return z;
}

inline Eigen::PartialPivLU<Eigen::MatrixXd> cayley_lu_double(const PhStep& p, double h) {
  Eigen::MatrixXd M(p.n, p.n);
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t j = 0; j < p.n; ++j) M(i, j) = (i == j ? 1.0 : 0.0) - 0.5 * h * p.S[i * p.n + j];
  return Eigen::PartialPivLU<Eigen::MatrixXd>(M);
}

/// Upper bound of max |tanh theta_i|.
template <class I>
double lambda_upper(const std::vector<double>& theta) {
  double m = 0;
  for (double t : theta) m = std::max(m, mag_up(I(tanh(I(t)))));
  return m;
}

template <class I>
CertifiedValue certify_ball(const I& center, double radius, DType dt) {
  I v(center);
  const I r(-radius, radius);
  v += r;
  return certify_interval(v.backend().data(), dt);
}

/// Every component of an l2 ball (centers x, radius rho) certified in dtype dt; max_err_ulps
/// collects the largest radius in ULPs of the dtype.
template <class I>
std::vector<CertifiedValue> certify_state(const std::vector<I>& x, double rho, DType dt, double& max_err_ulps) {
  const FloatFormat& fmt = *dtype_info(dt).format;
  std::vector<CertifiedValue> out;
  for (const I& e : x) {
    out.push_back(certify_ball(e, rho, dt));
    max_err_ulps = std::max(max_err_ulps, out.back().rad_in(ulp_at(out.back().approx(), fmt)));
  }
  return out;
}

template <class I>
CertifiedPhStream stream(const PhCase& c, int bits) {
  CertifiedPhStream out;
  out.precision_bits = bits;
  std::vector<I> x(c.x0.begin(), c.x0.end());
  double rho = 0;
  I budget(norm_enclosure(x).first, norm_enclosure(x).second);
  const auto record_norm = [&] {
    const auto nx = norm_enclosure(x);
    out.norm_lo.push_back(std::max(0.0, down(nx.first - rho)));
    out.norm_hi.push_back(up(nx.second + rho));
    out.budget_lo.push_back(mag_up(budget, true));
    out.budget_hi.push_back(mag_up(budget));
    // t = 0 is the equality ||x_0|| = B_0; from t = 1 on the inequality is strict (lambda < 1).
    if (out.norm_hi.size() > 1 && out.norm_hi.back() > out.budget_lo.back()) out.budget_holds = false;
    if (nx.first > 0) out.max_radius_rel = std::max(out.max_radius_rel, rho / nx.first);
  };
  record_norm();
  for (int64_t t = 0; t < c.depth; ++t) {
    const PhStep p = ph_step_params(c, t);
    double res = 0;
    const std::vector<I> z = cayley_image(p, half_h_s<I>(p, c.h), cayley_lu_double(p, c.h), x, res);
    out.max_residual = std::max(out.max_residual, res);
    const double lam = lambda_upper<I>(p.theta);
    out.lambda_max = std::max(out.lambda_max, lam);
    std::vector<I> w = ph::dissipation_apply(p.theta, p.v, z);
    const std::vector<I> port = ph::port_term<I>(p.B, p.u, p.n, p.m, c.h);
    const auto pn = norm_enclosure(port);
    out.port_lo.push_back(pn.first);
    out.port_hi.push_back(pn.second);
    budget += I(pn.first, pn.second);
    for (int64_t i = 0; i < p.n; ++i) w[i] += port[i];
    const double enc = radius_l2(w);
    for (auto& e : w) e = thin_mid(e);
    rho = up(enc + up(lam * up(res + rho)));
    x = std::move(w);
    record_norm();
  }
  out.contractive = out.lambda_max < 1;
  out.x_final = certify_state(x, rho, c.dtype, out.max_err_ulps);
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

/// Upper bound of ||B||_F (exact doubles) and its lower bound, h included.
template <class I>
std::pair<double, double> h_frobenius(const std::vector<double>& B, double h) {
  I s(0);
  for (double b : B) s += I(b) * I(b);
  const I f = I(h) * sqrt(s);
  return {mag_up(f, true), mag_up(f)};
}

/// The backward stream (section 14.7): the cotangent ball (center g~, radius rho) goes through
/// Lambda (symmetric: the forward's dissipation_apply) and C^T = (I + hS/2)^-1 (I - hS/2), the
/// forward's certified solve with h -> -h (||(I + hS/2)^-1||_2 <= 1 for skew S as well):
/// rho_t = res + rad(Lambda g~) + lambda rho_{t+1}.
template <class I>
CertifiedPhBackward backward(const PhCase& c, int bits) {
  CertifiedPhBackward out;
  out.precision_bits = bits;
  const std::vector<double> gL = ph_cotangent(c);
  std::vector<I> g(gL.begin(), gL.end());
  double rho = 0;
  const auto gLn = norm_enclosure(g);
  std::vector<double> lo{gLn.first}, hi{gLn.second};
  for (int64_t t = c.depth - 1; t >= 0; --t) {
    const PhStep p = ph_step_params(c, t);
    const std::pair<double, double> hb = h_frobenius<I>(p.B, c.h);
    const auto pn = norm_enclosure(ph::port_adjoint<I>(p.B, g, p.n, p.m, c.h));
    const double prad = up(hb.second * rho);
    out.port_lo.push_back(std::max(0.0, down(pn.first - prad)));
    out.port_hi.push_back(up(pn.second + prad));
    out.port_budget_lo.push_back(down(hb.first * gLn.first));
    if (out.port_hi.back() > out.port_budget_lo.back()) out.port_budget_holds = false;
    const double lam = lambda_upper<I>(p.theta);
    out.lambda_max = std::max(out.lambda_max, lam);
    std::vector<I> a = ph::dissipation_apply(p.theta, p.v, g);
    const double enc = radius_l2(a);
    for (auto& e : a) e = thin_mid(e);
    double res = 0;
    g = cayley_image(p, half_h_s<I>(p, -c.h), cayley_lu_double(p, -c.h), a, res);
    rho = up(res + up(enc + up(lam * rho)));
    const auto gn = norm_enclosure(g);
    lo.push_back(std::max(0.0, down(gn.first - rho)));
    hi.push_back(up(gn.second + rho));
    if (hi.back() > gLn.first) out.budget_holds = false;
  }
  out.norm_lo.assign(lo.rbegin(), lo.rend());
  out.norm_hi.assign(hi.rbegin(), hi.rend());
  std::reverse(out.port_lo.begin(), out.port_lo.end());
  std::reverse(out.port_hi.begin(), out.port_hi.end());
  std::reverse(out.port_budget_lo.begin(), out.port_budget_lo.end());
  out.contractive = out.lambda_max < 1;
  out.grad_x0 = certify_state(g, rho, c.dtype, out.max_err_ulps);
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

template <class I>
CertifiedMatrix cayley_matrix(const PhStep& p, double h, DType dt, int bits) {
  CertifiedMatrix out;
  out.n = p.n;
  out.precision_bits = bits;
  const int64_t n = p.n;
  const auto lu = cayley_lu_double(p, h);
  const std::vector<I> hs = half_h_s<I>(p, h);
  std::vector<std::vector<I>> cols;
  std::vector<double> rad;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<I> e(static_cast<size_t>(n), I(0));
    e[j] = I(1);
    double r = 0;
    cols.push_back(cayley_image(p, hs, lu, e, r));
    rad.push_back(r);
  }
  const FloatFormat& fmt = *dtype_info(dt).format;
  out.a.resize(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      CertifiedValue& cv = out.a[i * n + j] = certify_ball(cols[j][i], rad[j], dt);
      out.max_err_ulps = std::max(out.max_err_ulps, cv.rad_in(ulp_at(cv.approx(), fmt)));
    }
  // Orthogonality of the oracle to its certified precision: |(C~^T C~ - I)_ij| <= r_i ||c~_j|| +
  // r_j ||c~_i|| + r_i r_j whenever the exact C is orthogonal (checks the solve and the certificate).
  bool ok = true;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i; j < n; ++j) {
      I g(i == j ? -1.0 : 0.0);
      for (int64_t k = 0; k < n; ++k) g += cols[i][k] * cols[j][k];
      const double ni = norm_enclosure(cols[i]).second, nj = norm_enclosure(cols[j]).second;
      const double allow = up(rad[i] * nj + rad[j] * ni + rad[i] * rad[j]);
      out.structure_value = std::max(out.structure_value, mag_up(g));
      if (mag_up(g, true) > allow) ok = false;
    }
  out.structure_certified = ok;
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

template <class I>
CertifiedMatrix dissipation_matrix(const PhStep& p, DType dt, int bits) {
  CertifiedMatrix out;
  out.n = p.n;
  out.precision_bits = bits;
  const FloatFormat& fmt = *dtype_info(dt).format;
  for (const I& e : ph::dissipation_matrix<I>(p.theta, p.v)) {
    out.a.push_back(certify_interval(e.backend().data(), dt));
    const CertifiedValue& cv = out.a.back();
    out.max_err_ulps = std::max(out.max_err_ulps, cv.rad_in(ulp_at(cv.approx(), fmt)));
  }
  out.structure_value = lambda_upper<I>(p.theta);
  out.structure_certified = out.structure_value < 1;
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

template <unsigned Digits>
int bits_of() {
  return static_cast<int>(mpfi_get_prec(Interval<Digits>(0).backend().data()));
}

}  // namespace normcheck::oracle::ph_detail

/// Defines the port-Hamiltonian oracle entry points on the MPFI type of Digits decimal digits.
#define NORMCHECK_DEFINE_MPFI_PH_ORACLE(Digits)                                                        \
  namespace normcheck::oracle {                                                                     \
  CertifiedPhStream certified_ph_stream_mpfi##Digits(const PhCase& c) {                             \
    return ph_detail::stream<ph_detail::Interval<Digits>>(c, ph_detail::bits_of<Digits>());          \
  }                                                                                                 \
  CertifiedPhBackward certified_ph_backward_mpfi##Digits(const PhCase& c) {                         \
    return ph_detail::backward<ph_detail::Interval<Digits>>(c, ph_detail::bits_of<Digits>());        \
  }                                                                                                 \
  CertifiedMatrix certified_cayley_mpfi##Digits(const PhStep& p, double h, DType dt) {              \
    return ph_detail::cayley_matrix<ph_detail::Interval<Digits>>(p, h, dt, ph_detail::bits_of<Digits>()); \
  }                                                                                                 \
  CertifiedMatrix certified_dissipation_mpfi##Digits(const PhStep& p, DType dt) {                   \
    return ph_detail::dissipation_matrix<ph_detail::Interval<Digits>>(p, dt, ph_detail::bits_of<Digits>()); \
  }                                                                                                 \
  }
