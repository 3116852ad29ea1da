#pragma once
/// The directed-rounding (bias) statistic of docs/bounds.md section 16. A kernel that rounds its
/// outputs toward zero or away from zero stays inside a loose bound, yet every output is biased.
/// Per group of elements that share one computed set of statistics (a row: one rstd, one mean), the
/// signed errors in bound units rho_j = (y_hat_j - y_j) / b_j are projected onto the complement of
/// the span of the group's shared-error directions (regressors), which removes every error the row's
/// statistics can cause whatever its size or sign; what remains is correlated with the directed-
/// rounding direction s_j = sign(y_j) ulp(y_j) / b_j. With w = P s and r = P rho, X_j = w_j r_j and
///   Z = sum_j X_j / sqrt(sum_clusters c (sum_{j in cluster} X_j)^2),   c = m / (m - k),
/// where a cluster gathers the elements that may share one error (same output value, same correct
/// rounding: duplicated rows, repeated inputs). For independent clusters with symmetric errors the
/// self-normalised sum is sub-Gaussian (Efron 1969): P(|Z| >= t) <= 2 exp(-t^2 / 2), so |Z| >
/// kBiasThreshold has false-alarm probability <= 1e-9.
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace normcheck {

/// sqrt(2 ln(2 / 1e-9)): the two-sided threshold of false-alarm probability 1e-9.
inline constexpr double kBiasThreshold = 6.5471;

class BiasAccumulator {
 public:
  /// Adds one group: rho and s per element (elements with s = 0 or not finite carry no weight), the
  /// group's regressors (each as long as rho) and a cluster key per element (keys are shared across
  /// the groups of one case). Groups with fewer than 4 (k + 1) weighted elements are skipped.
  void add_group(const std::vector<double>& rho, const std::vector<double>& s,
                 const std::vector<std::vector<double>>& regressors, const std::vector<uint64_t>& cluster);
  /// Ends a case: its clusters enter the variance (clusters never span cases).
  void close_case();
  /// Merges another accumulator's closed cases.
  void merge(const BiasAccumulator& o);

  double z() const;  ///< the statistic over closed cases (0 when nothing was added)
  bool flagged() const { return z() > kBiasThreshold || z() < -kBiasThreshold; }
  int64_t elements() const { return elements_; }  ///< weighted elements in the statistic
  int64_t groups() const { return groups_; }

  /// The closed cases' sums, exactly (a sharded run hands them to `merge`).
  struct State {
    double t = 0, v = 0;
    int64_t elements = 0, groups = 0;
  };
  State state() const { return {t_, v_, elements_, groups_}; }
  static BiasAccumulator from_state(const State& s) {
    BiasAccumulator b;
    b.t_ = s.t;
    b.v_ = s.v;
    b.elements_ = s.elements;
    b.groups_ = s.groups;
    return b;
  }

 private:
  double t_ = 0, v_ = 0;
  int64_t elements_ = 0, groups_ = 0;
  std::unordered_map<uint64_t, double> open_;  ///< cluster sums of the case being added
};

}  // namespace normcheck
