#pragma once
/// Normalization over arbitrary reduction groups (batch norm, group norm, instance norm, channel
/// layer norm, layer norm and RMSNorm over trailing axes) as a kernel under test, templated on storage and accumulator. A plan lists
/// each group's entries; every group is normalized with the two-pass LayerNorm arithmetic
/// (kernels/layernorm.hpp), gamma and beta indexed per entry (one per channel). Cost O(entries):
/// each entry takes part in one reduction and a constant number of elementwise operations.
#include <cstdint>
#include <vector>

#include "kernels/layernorm.hpp"
#include "kernels/rmsnorm.hpp"

namespace normcheck::kernels {

/// The groups of a normalization: group g holds order[offsets[g] .. offsets[g+1]).
struct GroupPlan {
  std::vector<int64_t> order, offsets;
  std::vector<int64_t> param_of;  ///< per entry (flat index): index into gamma and beta
  int64_t groups() const { return static_cast<int64_t>(offsets.size()) - 1; }
};

/// The plan of a partition (group id per entry, ids 0..G-1) with per-entry parameter indices.
inline GroupPlan plan_of(const std::vector<int64_t>& group_of, std::vector<int64_t> param_of) {
  int64_t groups = 0;
  for (int64_t g : group_of) groups = std::max(groups, g + 1);
  GroupPlan p;
  p.offsets.assign(static_cast<size_t>(groups + 1), 0);
  for (int64_t g : group_of) ++p.offsets[static_cast<size_t>(g + 1)];
  for (size_t g = 1; g < p.offsets.size(); ++g) p.offsets[g] += p.offsets[g - 1];
  p.order.resize(group_of.size());
  std::vector<int64_t> fill(p.offsets.begin(), p.offsets.end() - 1);
  for (size_t e = 0; e < group_of.size(); ++e) p.order[static_cast<size_t>(fill[static_cast<size_t>(group_of[e])]++)] = static_cast<int64_t>(e);
  p.param_of = std::move(param_of);
  return p;
}

/// Statistics of one group in the accumulator (two-pass, sequential in plan order).
template <class Storage, class Accum>
RowStats<Accum> group_stats(const GroupPlan& p, int64_t g, const Storage* x, Accum eps, std::vector<Storage>& buf) {
  const int64_t b = p.offsets[g], n = p.offsets[g + 1] - b;
  buf.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) buf[i] = x[p.order[b + i]];
  return row_stats_two_pass<Storage, Accum>(buf.data(), n, eps);
}

/// y = gamma (x - mean_g) r_g + beta, the LayerNorm forward arithmetic per group.
template <class Storage, class Accum>
void grouped_norm_forward(const GroupPlan& p, const Storage* x, const Storage* gamma, const Storage* beta, double eps,
                          Storage* y, std::vector<Accum>* means = nullptr, std::vector<Accum>* vars = nullptr) {
  const Accum eps_a = num::constant<Accum>(eps);
  std::vector<Storage> buf;
  for (int64_t g = 0; g < p.groups(); ++g) {
    const RowStats<Accum> s = group_stats<Storage, Accum>(p, g, x, eps_a, buf);
    if (means) means->push_back(s.mean);
    if (vars) vars->push_back(s.var);
    for (int64_t i = p.offsets[g]; i < p.offsets[g + 1]; ++i) {
      const int64_t e = p.order[i], c = p.param_of[e];
      Accum t = (num::convert<Accum>(x[e]) - s.mean) * s.rstd;
      t = t * num::convert<Accum>(gamma[c]) + num::convert<Accum>(beta[c]);
      y[e] = num::convert<Storage>(t);
    }
  }
}

/// dx per group with the LayerNorm backward arithmetic; dgamma, dbeta summed per parameter index
/// in the accumulator (plan order), then stored.
template <class Storage, class Accum>
void grouped_norm_backward(const GroupPlan& p, const Storage* x, const Storage* gamma, const Storage* dy, double eps,
                           int64_t params, Storage* dx, Storage* dgamma, Storage* dbeta) {
  const Accum eps_a = num::constant<Accum>(eps);
  std::vector<Accum> dg(static_cast<size_t>(params), num::constant<Accum>(0.0)), db(dg);
  std::vector<Accum> z, gv;
  std::vector<Storage> buf;
  for (int64_t g = 0; g < p.groups(); ++g) {
    const RowStats<Accum> s = group_stats<Storage, Accum>(p, g, x, eps_a, buf);
    const int64_t b = p.offsets[g], n = p.offsets[g + 1] - b;
    const Accum count = num::constant<Accum>(static_cast<double>(n));
    z.resize(static_cast<size_t>(n));
    gv.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t e = p.order[b + i], c = p.param_of[e];
      const Accum dye = num::convert<Accum>(dy[e]);
      z[i] = (num::convert<Accum>(x[e]) - s.mean) * s.rstd;
      gv[i] = dye * num::convert<Accum>(gamma[c]);
      dg[c] += dye * z[i];
      db[c] += dye;
    }
    const Accum mean_g = SequentialSum::sum<Accum>(n, [&](int64_t i) { return gv[i]; }) / count;
    const Accum mean_gz = SequentialSum::sum<Accum>(n, [&](int64_t i) { return gv[i] * z[i]; }) / count;
    for (int64_t i = 0; i < n; ++i) dx[p.order[b + i]] = num::convert<Storage>(s.rstd * ((gv[i] - mean_g) - z[i] * mean_gz));
  }
  for (int64_t c = 0; c < params; ++c) {
    dgamma[c] = num::convert<Storage>(dg[c]);
    dbeta[c] = num::convert<Storage>(db[c]);
  }
}

/// RMSNorm over each group with the RMSNorm row arithmetic (kernels/rmsnorm.hpp, variant rms):
/// r_g = 1 / sqrt(sum(x^2)/n + eps) in Accum, y = (x r_g) gamma.
template <class Storage, class Accum>
using SoundRms = RmsPolicy<Accum, Accum, false, false, Accum>;

template <class Storage, class Accum>
Accum group_rms_reciprocal(const GroupPlan& p, int64_t g, const Storage* x, Accum eps, std::vector<Storage>& buf) {
  const int64_t b = p.offsets[g], n = p.offsets[g + 1] - b;
  buf.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) buf[i] = x[p.order[b + i]];
  return rms_reciprocal<Storage, Accum, SoundRms<Storage, Accum>>(buf.data(), n, eps);
}

template <class Storage, class Accum>
void grouped_rms_forward(const GroupPlan& p, const Storage* x, const Storage* gamma, double eps, Storage* y) {
  const Accum eps_a = num::constant<Accum>(eps);
  std::vector<Storage> buf;
  for (int64_t g = 0; g < p.groups(); ++g) {
    const Accum r = group_rms_reciprocal<Storage, Accum>(p, g, x, eps_a, buf);
    for (int64_t i = p.offsets[g]; i < p.offsets[g + 1]; ++i) {
      const int64_t e = p.order[i];
      y[e] = num::convert<Storage>((num::convert<Accum>(x[e]) * r) * num::convert<Accum>(gamma[p.param_of[e]]));
    }
  }
}

/// dx = r (v - z mean_g(v z)) with v = gamma dy, z = x r; dgamma summed per parameter index in Accum.
template <class Storage, class Accum>
void grouped_rms_backward(const GroupPlan& p, const Storage* x, const Storage* gamma, const Storage* dy, double eps,
                          int64_t params, Storage* dx, Storage* dgamma) {
  const Accum eps_a = num::constant<Accum>(eps);
  std::vector<Accum> dg(static_cast<size_t>(params), num::constant<Accum>(0.0)), z, v;
  std::vector<Storage> buf;
  for (int64_t g = 0; g < p.groups(); ++g) {
    const Accum r = group_rms_reciprocal<Storage, Accum>(p, g, x, eps_a, buf);
    const int64_t b = p.offsets[g], n = p.offsets[g + 1] - b;
    z.resize(static_cast<size_t>(n));
    v.resize(static_cast<size_t>(n));
    Accum sum_vz = num::constant<Accum>(0.0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t e = p.order[b + i], c = p.param_of[e];
      const Accum dye = num::convert<Accum>(dy[e]);
      z[i] = num::convert<Accum>(x[e]) * r;
      v[i] = num::convert<Accum>(gamma[c]) * dye;
      sum_vz += v[i] * z[i];
      dg[c] += dye * z[i];
    }
    const Accum mean_vz = sum_vz / num::constant<Accum>(static_cast<double>(n));
    for (int64_t i = 0; i < n; ++i) dx[p.order[b + i]] = num::convert<Storage>(r * (v[i] - z[i] * mean_vz));
  }
  for (int64_t c = 0; c < params; ++c) dgamma[c] = num::convert<Storage>(dg[c]);
}

/// Batch-norm running statistics after one training step (PyTorch's rule: the unbiased batch
/// variance, n / (n - 1), in the running variance): r <- (1 - m) r + m s, in the accumulator.
template <class Storage, class Accum>
void update_running_stats(const std::vector<Accum>& mean, const std::vector<Accum>& var, int64_t n, double momentum,
                          Storage* running_mean, Storage* running_var) {
  const Accum m = num::constant<Accum>(momentum), keep = num::constant<Accum>(1.0 - momentum);
  const Accum unbias = n > 1 ? num::constant<Accum>(static_cast<double>(n)) / num::constant<Accum>(static_cast<double>(n - 1))
                             : num::constant<Accum>(1.0);
  for (size_t c = 0; c < mean.size(); ++c) {
    running_mean[c] = num::convert<Storage>(keep * num::convert<Accum>(running_mean[c]) + m * mean[c]);
    running_var[c] = num::convert<Storage>(keep * num::convert<Accum>(running_var[c]) + m * (var[c] * unbias));
  }
}

/// Inference-mode batch norm: y = gamma (x - running_mean) / sqrt(running_var + eps) + beta.
template <class Storage, class Accum>
void batch_norm_inference(const std::vector<int64_t>& param_of, const Storage* x, const Storage* gamma, const Storage* beta,
                          const Storage* running_mean, const Storage* running_var, double eps, Storage* y) {
  const Accum eps_a = num::constant<Accum>(eps);
  for (size_t e = 0; e < param_of.size(); ++e) {
    const int64_t c = param_of[e];
    const Accum r = num::constant<Accum>(1.0) / num::sqrt(num::convert<Accum>(running_var[c]) + eps_a);
    Accum t = (num::convert<Accum>(x[e]) - num::convert<Accum>(running_mean[c])) * r;
    y[e] = num::convert<Storage>(t * num::convert<Accum>(gamma[c]) + num::convert<Accum>(beta[c]));
  }
}

}  // namespace normcheck::kernels
