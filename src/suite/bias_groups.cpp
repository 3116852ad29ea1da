// The groups and shared-error directions of the bias statistic for the per-op outputs
// (docs/bounds.md section 16). Every regressor is in bound units (divided by the element's bound).
#include "suite/judge.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace normcheck {
namespace {

/// Merges units (rows of a tensor, or single elements) that hold an equal value-pair key: the
/// connected components of "same unit" and "same key" over the elements, without a hash table.
/// The elements are bucketed by their key's top bits with one counting pass (keys are SplitMix64
/// outputs, so a bucket holds a few elements); only buckets holding two or more are sorted, and
/// equal keys in them merge their units. Returns each element's component (its root unit).
class UnitMerge {
 public:
  /// `per_unit` consecutive elements form one unit.
  UnitMerge(const std::vector<uint64_t>& keys, size_t per_unit) : keys_(keys), per_unit_(per_unit), parent_(units(keys, per_unit)) {
    for (size_t u = 0; u < parent_.size(); ++u) parent_[u] = static_cast<uint32_t>(u);
    merge_equal_keys();
  }
  std::vector<uint64_t> ids() {
    std::vector<uint64_t> out(keys_.size());
    for (size_t e = 0; e < out.size(); ++e) out[e] = find(static_cast<uint32_t>(e / per_unit_));
    return out;
  }

 private:
  static size_t units(const std::vector<uint64_t>& keys, size_t per_unit) {
    if (per_unit == 0) throw std::invalid_argument("bias clusters: a unit of 0 elements");
    if (keys.size() > std::numeric_limits<uint32_t>::max())
      throw std::invalid_argument("bias clusters: " + std::to_string(keys.size()) + " elements are more than 2^32 - 1");
    return (keys.size() + per_unit - 1) / per_unit;
  }
  /// Buckets of about one element each (at least 2^8, at most 2^24).
  static int bucket_bits(size_t n) {
    int bits = 8;
    while (bits < 24 && (size_t{1} << bits) < n) ++bits;
    return bits;
  }
  void merge_equal_keys() {
    const int bits = bucket_bits(keys_.size());
    const auto bucket = [&](uint64_t key) { return static_cast<size_t>(key >> (64 - bits)); };
    std::vector<uint32_t> start((size_t{1} << bits) + 1, 0);
    for (const uint64_t k : keys_)
      if (k != 0) ++start[bucket(k) + 1];  // 0: an element the statistic leaves out
    for (size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
    std::vector<uint32_t> order(start.back()), next(start.begin(), start.end() - 1);
    for (size_t e = 0; e < keys_.size(); ++e)
      if (keys_[e] != 0) order[next[bucket(keys_[e])]++] = static_cast<uint32_t>(e);
    for (size_t b = 0; b + 1 < start.size(); ++b)
      if (start[b + 1] - start[b] >= 2) merge_bucket(order.data() + start[b], order.data() + start[b + 1]);
  }
  void merge_bucket(uint32_t* first, uint32_t* last) {
    std::sort(first, last, [&](uint32_t a, uint32_t b) { return keys_[a] < keys_[b]; });
    for (uint32_t* at = first + 1; at < last; ++at)
      if (keys_[*at] == keys_[at[-1]]) unite(*at / per_unit_, at[-1] / per_unit_);
  }
  uint32_t find(uint32_t a) {
    while (parent_[a] != a) a = parent_[a] = parent_[parent_[a]];
    return a;
  }
  void unite(size_t a, size_t b) { parent_[find(static_cast<uint32_t>(a))] = find(static_cast<uint32_t>(b)); }

  const std::vector<uint64_t>& keys_;
  size_t per_unit_;
  std::vector<uint32_t> parent_;
};

/// Cluster ids of a row-major tensor (y, dx): a whole row is one cluster, and rows holding an
/// identical output (duplicated rows) are merged. A row's elements share more than its statistics:
/// with one computed mean, the roundings of x - mean in one binade of x can all go the same way (ties
/// resolved to even by the same last bit of the mean), a directed error whose sign is random across
/// rows; only rows are independent (section 16.2).
std::vector<uint64_t> row_clusters(const LayerNormCase& c, const BiasInputs& in) {
  return UnitMerge(in.cluster, static_cast<size_t>(c.n)).ids();
}

/// Cluster ids of dbeta: its columns are independent sums of dy; identical outputs are merged.
std::vector<uint64_t> column_clusters(const BiasInputs& in) { return UnitMerge(in.cluster, 1).ids(); }

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
