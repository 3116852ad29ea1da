#include "core/bias.hpp"

#include <cmath>

#include <Eigen/Dense>
#include <Eigen/QR>

#include "core/metrics.hpp"

namespace normcheck {

void BiasAccumulator::add_group(const std::vector<double>& rho, const std::vector<double>& s,
                                const std::vector<std::vector<double>>& regressors, const std::vector<uint64_t>& cluster) {
  std::vector<size_t> used;
  for (size_t j = 0; j < rho.size(); ++j) {
    bool ok = s[j] != 0 && std::isfinite(s[j]) && std::isfinite(rho[j]);
    for (const auto& r : regressors) ok = ok && std::isfinite(r[j]);
    if (ok) used.push_back(j);
  }
  const auto m = static_cast<Eigen::Index>(used.size()), k = static_cast<Eigen::Index>(regressors.size());
  if (m < 4 * (k + 1)) return;
  Eigen::MatrixXd a(m, k);
  Eigen::VectorXd sv(m), rv(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    const size_t j = used[static_cast<size_t>(i)];
    sv(i) = s[j];
    rv(i) = rho[j];
    for (Eigen::Index c = 0; c < k; ++c) a(i, c) = regressors[static_cast<size_t>(c)][j];
  }
  Eigen::Index rank = 0;
  if (k > 0) {
    // Columns scaled to unit norm first (their scales differ by many binades), then pivoted QR.
    for (Eigen::Index c = 0; c < k; ++c) {
      const double norm = a.col(c).stableNorm();  // entries may be near 1e300: no overflow in the squares
      if (norm > 0 && std::isfinite(norm)) a.col(c) /= norm;
    }
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
    qr.setThreshold(1e-10);
    rank = qr.rank();
    if (rank > 0) {
      const Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(m, rank);
      sv -= q * (q.transpose() * sv);
      rv -= q * (q.transpose() * rv);
    }
  }
  if (m - rank < 2) return;
  // A group whose products X_j are not all below 2^500 in magnitude (errors of 1e300 bound units:
  // f64 outputs near 1e300 from a broken kernel) is left out: its squares could overflow the
  // variance and make Z = inf / inf, a NaN that breaks the report (issue 48, M2).
  for (Eigen::Index i = 0; i < m; ++i)
    if (!(std::fabs(sv(i) * rv(i)) < 0x1p500)) return;
  const double scale = std::sqrt(static_cast<double>(m) / static_cast<double>(m - rank));
  // One hash lookup per run of equal keys (a row's elements share its cluster), not per element.
  double* sum = nullptr;
  for (Eigen::Index i = 0; i < m; ++i) {
    const uint64_t key = cluster[used[static_cast<size_t>(i)]];
    if (i == 0 || key != cluster[used[static_cast<size_t>(i - 1)]]) sum = &open_[key];  // references survive rehashing
    *sum += scale * sv(i) * rv(i);
  }
  t_ += sv.dot(rv);
  elements_ += m;
  ++groups_;
}

void BiasAccumulator::close_case() {
  for (const auto& [key, x] : open_) v_ += x * x;
  open_.clear();
}

void BiasAccumulator::merge(const BiasAccumulator& o) {
  t_ += o.t_;
  v_ += o.v_;
  elements_ = checked_count_sum(elements_, o.elements_, "bias element count");
  groups_ = checked_count_sum(groups_, o.groups_, "bias group count");
}

double BiasAccumulator::z() const {
  const double z = v_ > 0 ? t_ / std::sqrt(v_) : 0.0;
  return std::isfinite(z) ? z : 0.0;  // a variance that overflowed over many groups: no statistic
}

}  // namespace normcheck
