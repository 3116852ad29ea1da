// The groups and shared-error directions of the bias statistic for the per-op outputs
// (docs/bounds.md section 16). Every regressor is in bound units (divided by the element's bound).
#include "suite/judge.hpp"

#include <unordered_map>

namespace normcheck {
namespace {

/// Union-find over a tensor's elements: elements that share an intermediate of the kernel (the same
/// normalised value z_ij, an identical output) may share its error, so they form one cluster.
class Clusters {
 public:
  /// `keys`: about how many distinct intermediates will be linked (reserved: no rehashing).
  Clusters(size_t n, size_t keys) : parent_(n) {
    for (size_t i = 0; i < n; ++i) parent_[i] = i;
    owner_.reserve(keys);
  }
  /// Element e uses the intermediate named by `key`.
  void link(size_t e, uint64_t key) {
    const auto [it, fresh] = owner_.emplace(key, e);
    if (!fresh) parent_[find(e)] = find(it->second);
  }
  std::vector<uint64_t> ids() {
    std::vector<uint64_t> out(parent_.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = find(i);
    return out;
  }

 private:
  size_t find(size_t a) {
    while (parent_[a] != a) a = parent_[a] = parent_[parent_[a]];
    return a;
  }
  std::vector<size_t> parent_;
  std::unordered_map<uint64_t, size_t> owner_;
};

/// Cluster ids of a row-major tensor (y, dx): a whole row is one cluster, and rows holding an
/// identical output (duplicated rows) are merged. A row's elements share more than its statistics:
/// with one computed mean, the roundings of x - mean in one binade of x can all go the same way (ties
/// resolved to even by the same last bit of the mean), a directed error whose sign is random across
/// rows; only rows are independent (section 16.2).
std::vector<uint64_t> row_clusters(const LayerNormCase& c, const BiasInputs& in) {
  Clusters cl(in.cluster.size(), in.cluster.size() + static_cast<size_t>(c.rows));
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t e = static_cast<size_t>(i * c.n + j);
      cl.link(e, 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(i));
      if (in.cluster[e] != 0) cl.link(e, in.cluster[e]);  // 0: an element the statistic leaves out
    }
  return cl.ids();
}

/// Cluster ids of dbeta: its columns are independent sums of dy; identical outputs are merged.
std::vector<uint64_t> column_clusters(const BiasInputs& in) {
  Clusters cl(in.cluster.size(), in.cluster.size());
  for (size_t j = 0; j < in.cluster.size(); ++j)
    if (in.cluster[j] != 0) cl.link(j, in.cluster[j]);  // 0: an element the statistic leaves out
  return cl.ids();
}

/// z_ij = (x_ij - mean_i) r_i from the oracle's statistics (mean 0 for RMSNorm), nearest double.
double normalized(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, int64_t i, int64_t j) {
  return (c.x[static_cast<size_t>(i * c.n + j)] - ref.mean[i]) * ref.rstd[i];
}

/// Rows as groups: y (LayerNorm: y - beta and gamma, the rstd and the mean errors; RMSNorm: y) or
/// dx (LayerNorm: dx, 1 and z, the rstd, A and B errors; RMSNorm: dx and z).
void row_groups(Op op, const std::string& output, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                const TensorBound& b, const BiasInputs& in, BiasAccumulator& out) {
  const bool rms = !has_input(op, "beta"), forward = output == "y";
  const size_t k = forward ? (rms ? 1 : 2) : (rms ? 2 : 3);
  std::vector<double> rho(static_cast<size_t>(c.n)), s(rho.size());
  std::vector<uint64_t> cluster(rho.size());
  const std::vector<uint64_t> ids = row_clusters(c, in);
  std::vector<std::vector<double>> reg(k, std::vector<double>(rho.size()));
  const auto& values = forward ? ref.y : ref.dx;
  for (int64_t i = 0; i < c.rows; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t e = static_cast<size_t>(i * c.n + j);
      const double bound = b.bound[e], v = values[e].approx();
      rho[j] = in.rho[e];
      s[j] = in.s[e];
      cluster[j] = ids[e];
      if (forward) {
        reg[0][j] = (rms ? v : v - c.beta[j]) / bound;
        if (!rms) reg[1][j] = c.gamma[j] / bound;
      } else {
        reg[0][j] = v / bound;
        reg[1][j] = normalized(c, ref, i, j) / bound;
        if (!rms) reg[2][j] = 1 / bound;
      }
    }
    out.add_group(rho, s, reg, cluster);
  }
}

/// dbeta as one group without regressors (it involves no statistics). dgamma has no test: each of
/// its columns sums products with every row's z, so its elements share every row's systematic
/// rounding and no set of them is independent (section 16.2).
void column_group(const std::string& output, const BiasInputs& in, BiasAccumulator& out) {
  if (output == "dbeta") out.add_group(in.rho, in.s, {}, column_clusters(in));
}

}  // namespace

void add_bias_groups(Op op, const std::string& output, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                     const TensorBound& verdict, const BiasInputs& in, BiasAccumulator& out) {
  if (output == "y" || output == "dx") row_groups(op, output, c, ref, verdict, in, out);
  else column_group(output, in, out);
  out.close_case();
}

}  // namespace normcheck
