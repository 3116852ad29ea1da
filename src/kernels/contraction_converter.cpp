#include "kernels/contraction_converter.hpp"

#include <Eigen/Dense>
#include <Eigen/QR>
#include <cmath>

#include <fmt/format.h>

namespace normcheck {
namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Column mean by Neumaier's compensated summation (error about u |mean|, not n u).
double compensated_mean(const Matrix& t, Eigen::Index col) {
  double sum = 0, comp = 0;
  for (Eigen::Index j = 0; j < t.rows(); ++j) {
    const double v = t(j, col), s = sum + v;
    comp += std::fabs(sum) >= std::fabs(v) ? (sum - s) + v : (v - s) + sum;
    sum = s;
  }
  return (sum + comp) / static_cast<double>(t.rows());
}

/// T = [P A, P a] in float64: each column minus its mean over the n features. A constant column
/// (a constant producer) centers to exactly 0, so that R = 0 and f = c exactly.
Matrix centered_producer_f64(const AffineLnAffine& blk) {
  Matrix t(blk.n, blk.d + 1);
  for (int64_t j = 0; j < blk.n; ++j) {
    for (int64_t i = 0; i < blk.d; ++i) t(j, i) = blk.A[j * blk.d + i];
    t(j, blk.d) = blk.a.empty() ? 0.0 : blk.a[j];
  }
  for (Eigen::Index q = 0; q < t.cols(); ++q) {
    if (t.col(q).minCoeff() == t.col(q).maxCoeff()) {
      t.col(q).setZero();
      continue;
    }
    const double mean = compensated_mean(t, q);
    t.col(q).array() -= mean;
  }
  return t;
}

/// Rounds `v` to the storage dtype; throws when it overflows.
std::vector<double> store(const Matrix& v, DType storage, const char* name, double& max_abs) {
  std::vector<double> out(static_cast<size_t>(v.size()));
  const DTypeInfo& info = dtype_info(storage);
  for (Eigen::Index r = 0; r < v.rows(); ++r)
    for (Eigen::Index q = 0; q < v.cols(); ++q) {
      const double x = v(r, q);
      if (!std::isfinite(x))
        throw ConversionError(fmt::format("coefficient {}[{}][{}] is not finite in float64", name, r, q));
      max_abs = std::max(max_abs, std::fabs(x));
      const double s = round_to_dtype(x, storage);
      if (!std::isfinite(s))
        throw ConversionError(fmt::format("coefficient {}[{}][{}] = {:.6g} overflows {} (largest finite {:.6g}); nothing written",
                                          name, r, q, x, info.name, info.max_finite));
      out[static_cast<size_t>(r * v.cols() + q)] = s;
    }
  return out;
}

/// R by Householder QR of T: k x (d+1), every row kept.
Matrix r_by_householder_qr(const Matrix& t, int64_t k) {
  const Eigen::HouseholderQR<Matrix> qr(t);
  return qr.matrixQR().topRows(k).triangularView<Eigen::Upper>();
}

/// R by Cholesky of fl(T^T T): (d+1) x (d+1).
Matrix r_by_gram_cholesky(const Matrix& t) {
  const Matrix gram = t.transpose() * t;
  const Eigen::LLT<Matrix> llt(gram);
  if (llt.info() != Eigen::Success)
    throw ConversionError("the Gram matrix T^T T is not positive definite in float64 (rank-deficient or too ill-conditioned): the Gram form cannot convert this block");
  return llt.matrixU();
}

}  // namespace

double ContractedBlock::overflow_margin() const { return max_abs_coefficient / dtype_info(storage).max_finite; }

ContractedBlock contract_block(const AffineLnAffine& blk, DType storage, RFactor form) {
  if (auto err = validate_block(blk)) throw ConversionError(*err);
  const Matrix t = centered_producer_f64(blk);
  if (form == RFactor::gram_cholesky && blk.n < blk.d + 1)
    throw ConversionError("the Gram form needs n >= d + 1 (T^T T is singular otherwise)");
  const int64_t k = form == RFactor::gram_cholesky ? blk.d + 1 : blk.k();
  const Matrix r = form == RFactor::gram_cholesky ? r_by_gram_cholesky(t) : r_by_householder_qr(t, k);
  const Eigen::Map<const Matrix> w(blk.W.data(), blk.m, blk.n);
  Eigen::VectorXd g = Eigen::VectorXd::Ones(blk.n), beta = Eigen::VectorXd::Zero(blk.n), b = Eigen::VectorXd::Zero(blk.m);
  for (int64_t j = 0; j < blk.n; ++j) {
    if (!blk.gamma.empty()) g(j) = blk.gamma[j];
    if (!blk.beta.empty()) beta(j) = blk.beta[j];
  }
  for (int64_t i = 0; i < static_cast<int64_t>(blk.b.size()); ++i) b(i) = blk.b[i];
  const Matrix d = w * g.asDiagonal() * t;
  const Matrix c = (w * beta + b).transpose();
  ContractedBlock out;
  out.storage = storage;
  out.d = blk.d;
  out.n = blk.n;
  out.m = blk.m;
  out.k = k;
  out.eps = blk.eps;
  out.consumer_rows = blk.consumers();
  out.D = store(d, storage, "D", out.max_abs_coefficient);
  out.R = store(r, storage, "R", out.max_abs_coefficient);
  out.R64.assign(r.data(), r.data() + r.size());
  out.c = store(c, storage, "c", out.max_abs_coefficient);
  return out;
}

}  // namespace normcheck
