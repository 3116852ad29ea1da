// QR vs Gram (issue 20, seed qr-contraction-across-layernorm: "QR avoids the cancelling cross terms
// of the Gram matrix T^T T"). The converter's R (Householder QR of T in float64) against the Gram
// form (Cholesky of T^T T formed in float64) on ill-conditioned producers, condition numbers 1e2 to
// 1e12, in every storage dtype: the algorithmic error of |R xbar|^2 along the producer's weakest
// directions (exact reference at 200 bits), the certified Gram error max |R64^T R64 - T^T T| /
// max |T^T T|, and the contracted kernel's output f against the certified original block, judged by
// QR-CONTRACTED (its bound is derived from the certified Gram error of whichever R it is given, so
// both forms must stay inside it). The table is printed; docs/qr-contraction.md quotes it.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <boost/multiprecision/mpfr.hpp>
#include <cmath>
#include <cstdio>
#include <string>

#include "kernels/contraction_converter.hpp"
#include "bounds/bounds_contraction.hpp"
#include "core/rng.hpp"
#include "kernels/contraction_registry.hpp"
#include "oracles/certified_contraction.hpp"
#include "suite/contraction_judge.hpp"
#include "suite/judge.hpp"

using namespace normcheck;

namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Exact = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<60>, boost::multiprecision::et_off>;

constexpr int64_t kN = 64, kD = 15, kM = 8;
constexpr int kRandomRows = 24, kWeakRows = 8;

/// An orthonormal basis of the span of `g`'s columns (float64 Householder QR).
Matrix orthonormal_columns(const Matrix& g) {
  const Eigen::HouseholderQR<Matrix> qr(g);
  return qr.householderQ() * Matrix::Identity(g.rows(), g.cols());
}

Matrix gaussian(Rng& rng, int64_t rows, int64_t cols) {
  Matrix g(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) g(i, j) = rng.normal();
  return g;
}

/// A block whose centered producer T = [P A, P a] has singular values 1 ... 1/kappa (log-spaced),
/// left singular vectors orthogonal to 1 (so centering keeps them), random right singular vectors
/// V; eps = 2^-100 so that the denominator measures |T xbar|^2 itself. Returns V too.
AffineLnAffine ill_conditioned_block(double kappa, uint64_t seed, Matrix& v) {
  Rng rng(seed);
  Matrix g = gaussian(rng, kN, kD + 1);
  for (Eigen::Index q = 0; q < g.cols(); ++q) g.col(q).array() -= g.col(q).mean();
  const Matrix u = orthonormal_columns(g);
  v = orthonormal_columns(gaussian(rng, kD + 1, kD + 1));
  Eigen::VectorXd sigma(kD + 1);
  for (int64_t i = 0; i <= kD; ++i) sigma(i) = std::pow(kappa, -static_cast<double>(i) / kD);
  const Matrix t = u * sigma.asDiagonal() * v.transpose();
  AffineLnAffine blk;
  blk.d = kD;
  blk.n = kN;
  blk.m = kM;
  blk.eps = 0x1p-100;
  for (int64_t j = 0; j < kN; ++j) {
    for (int64_t i = 0; i < kD; ++i) blk.A.push_back(t(j, i));
    blk.a.push_back(t(j, kD));
  }
  for (int64_t j = 0; j < kN; ++j) blk.gamma.push_back(1 + 0.1 * rng.normal());
  for (int64_t j = 0; j < kN; ++j) blk.beta.push_back(0.1 * rng.normal());
  for (int64_t i = 0; i < kM * kN; ++i) blk.W.push_back(rng.normal() / 8);
  for (int64_t i = 0; i < kM; ++i) blk.b.push_back(0.1 * rng.normal());
  return blk;
}

/// Inputs in `dt`: random rows, then xbar along the weakest right singular directions (v's last
/// columns) and slightly off them; x = v_j[0:d] / v_j[d] so that xbar = [x; 1].
std::vector<double> inputs(const Matrix& v, DType dt, uint64_t seed) {
  Rng rng(seed ^ 0x9a);
  std::vector<double> x;
  for (int r = 0; r < kRandomRows; ++r)
    for (int64_t i = 0; i < kD; ++i) x.push_back(round_to_dtype(rng.normal(), dt));
  for (int r = 0; r < kWeakRows; ++r) {
    Eigen::VectorXd dir = v.col(kD - r % 4);
    if (r >= 4) dir += std::pow(10.0, -(r - 3)) * v.col(0);  // off the weakest direction by 1e-1 ... 1e-4
    for (int64_t i = 0; i < kD; ++i) x.push_back(round_to_dtype(dir(i) / dir(kD), dt));
  }
  return x;
}

/// max over the weak rows of | |R64 xbar|^2 - |T xbar|^2 | / |T xbar|^2, at 200 bits (T = P [A a] exactly).
double weak_direction_norm_error(const AffineLnAffine& blk, const ContractedBlock& k, const std::vector<double>& x) {
  double worst = 0;
  for (int r = kRandomRows; r < kRandomRows + kWeakRows; ++r) {
    std::vector<Exact> xbar(kD + 1, Exact(1));
    for (int64_t i = 0; i < kD; ++i) xbar[i] = Exact(x[r * kD + i]);
    std::vector<Exact> h(kN);
    Exact mean(0);
    for (int64_t j = 0; j < kN; ++j) {
      h[j] = Exact(blk.a[j]);
      for (int64_t i = 0; i < kD; ++i) h[j] += Exact(blk.A[j * kD + i]) * xbar[i];
      mean += h[j];
    }
    mean /= kN;
    Exact exact(0), got(0);
    for (int64_t j = 0; j < kN; ++j) exact += (h[j] - mean) * (h[j] - mean);
    for (int64_t l = 0; l < k.k; ++l) {
      Exact row(0);
      for (int64_t i = 0; i <= kD; ++i) row += Exact(k.R64[l * (kD + 1) + i]) * xbar[i];
      got += row * row;
    }
    worst = std::max(worst, static_cast<double>(abs(got - exact) / exact));
  }
  return worst;
}

struct Cell {
  bool converted = false;
  std::string failure;
  double norm_err = 0, gram_err = 0, f_max_ulp = 0, f_normwise = 0, f_ratio = 0;
  int64_t violations = 0;
};

Cell measure(const AffineLnAffine& blk, const std::vector<double>& x, DType dt, RFactor form) {
  Cell cell;
  ContractedBlock k;
  try {
    k = contract_block(blk, dt, form);
  } catch (const ConversionError& e) {
    cell.failure = e.what();
    return cell;
  }
  cell.converted = true;
  ContractionCase c;
  c.dtype = dt;
  c.block = blk;
  c.rows = kRandomRows + kWeakRows;
  c.x = x;
  c.generator = "ill_conditioned";
  const oracle::StoredContraction view = stored_view(k);
  const oracle::CoefficientError err = oracle::coefficient_error(blk, view);
  const oracle::CertifiedAffineLn ref = oracle::certified_affine_ln(c, false);
  const ContractionBound bound = contracted_bound(c, view, err, ref, contraction_accum(dt));
  const OutputJudgement f = judge_tensor("f", run_contracted(k, c).f, ref.f, bound.f, nullptr, dt, 1.0);
  cell.norm_err = weak_direction_norm_error(blk, k, x);
  cell.gram_err = err.max_rel_G;
  cell.f_max_ulp = f.acc.max_ulp();
  cell.f_normwise = f.acc.normwise();
  cell.f_ratio = f.acc.max_bound_ratio();
  cell.violations = f.acc.bound_violations();
  return cell;
}

std::string column(const Cell& c, double Cell::*metric, const char* format) {
  if (!c.converted) return "fails";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, c.*metric);
  return buf;
}

}  // namespace

TEST(QrVsGram, QrIsNoWorseAndMuchBetterAlongWeakDirectionsInFloat64) {
  std::printf("| storage | condition | |R xbar|^2 rel. error QR / Gram | max|R64'R64 - T'T|/max|T'T| QR / Gram | f max ULP QR / Gram | f normwise QR / Gram | f err/bound QR / Gram |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (DType dt : {DType::f16, DType::bf16, DType::f32, DType::f64})
    for (double kappa : {1e2, 1e4, 1e6, 1e8, 1e10, 1e12}) {
      Matrix v;
      const AffineLnAffine blk = ill_conditioned_block(kappa, 2026, v);
      const std::vector<double> x = inputs(v, dt, 2026);
      const Cell qr = measure(blk, x, dt, RFactor::householder_qr), gram = measure(blk, x, dt, RFactor::gram_cholesky);
      std::printf("| %s | %.0e | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s |\n", std::string(dtype_info(dt).name).c_str(), kappa,
                  column(qr, &Cell::norm_err, "%.1e").c_str(), column(gram, &Cell::norm_err, "%.1e").c_str(),
                  column(qr, &Cell::gram_err, "%.1e").c_str(), column(gram, &Cell::gram_err, "%.1e").c_str(),
                  column(qr, &Cell::f_max_ulp, "%.3g").c_str(), column(gram, &Cell::f_max_ulp, "%.3g").c_str(),
                  column(qr, &Cell::f_normwise, "%.1e").c_str(), column(gram, &Cell::f_normwise, "%.1e").c_str(),
                  column(qr, &Cell::f_ratio, "%.2f").c_str(), column(gram, &Cell::f_ratio, "%.2f").c_str());
      // QR converts every block, and its kernel stays inside QR-CONTRACTED.
      ASSERT_TRUE(qr.converted) << qr.failure;
      EXPECT_EQ(qr.violations, 0) << dtype_info(dt).name << " kappa " << kappa;
      // The bound is derived from the certified Gram error of the R it is given: the Gram form's
      // kernel must stay inside it too (a rigor check of QR-CONTRACTED on another R).
      if (gram.converted) {
        EXPECT_EQ(gram.violations, 0) << dtype_info(dt).name << " kappa " << kappa;
      }
      // The seed's claim, where it is visible (the algorithmic error, independent of the storage):
      // along the weak directions the Gram form's |R xbar|^2 error grows like u kappa^2, QR's like u kappa.
      if (gram.converted && kappa >= 1e4) {
        EXPECT_GT(gram.norm_err, 100 * qr.norm_err) << dtype_info(dt).name << " kappa " << kappa;
      }
      if (kappa <= 1e6) {  // Cholesky works while kappa^2 u < 1
        EXPECT_TRUE(gram.converted) << gram.failure;
      }
      if (kappa >= 1e10) {  // and fails beyond
        EXPECT_FALSE(gram.converted);
      }
    }
}
