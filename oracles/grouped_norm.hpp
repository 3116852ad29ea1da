#pragma once
/// Reference grouped normalization (batch norm, group norm, instance norm, layer norm over trailing
/// axes, channel layer norm, RMSNorm), templated on the real type; shares no code with
/// src/kernels. Each group g of entries (given by the caller) is normalized with its own mean and
/// biased variance; gamma and beta are indexed by parameter c (the channel, or the entry's place
/// in the normalized axes).
///   forward    y = gamma_c (x - mean_g) r_g + beta_c,  r_g = (var_g + eps)^(-1/2)
///   VJP        v = gamma_c dy,  dx = r_g (v - mean_g(v) - z mean_g(v z)),
///              dgamma_c = sum over the parameter's entries of dy z,  dbeta_c = sum dy
///   RMSNorm    (layout.centred false) mean_g = 0, var_g = mean_g(x^2), no beta, no mean_g(v) term
///   batch norm running statistics (PyTorch): m' = (1 - mom) m + mom mean_c,
///              v' = (1 - mom) v + mom var_c n / (n - 1);  inference y = gamma (x - m) / sqrt(v + eps) + beta
#include <cstdint>
#include <vector>

#include "core/grouped_norm_case.hpp"
#include "oracles/certified_grouped_norm.hpp"
#include "oracles/sum_of.hpp"

namespace normcheck::oracle {

template <class Real>
struct GroupedNormReference {
  std::vector<Real> y, dx, contrib;           ///< per entry; contrib = dy z
  std::vector<Real> dgamma, dbeta;            ///< per channel
  std::vector<Real> mean, var, rstd;          ///< per group
  std::vector<Real> running_mean, running_var, y_inference;  ///< batch norm only
};

template <class Real>
GroupedNormReference<Real> grouped_norm_reference(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp) {
  GroupedNormReference<Real> r;
  const size_t entries = c.x.size();
  const std::vector<int64_t>& group_of = l.group_of;
  const std::vector<int64_t>& channel_of = l.param_of;
  const int64_t groups = l.groups, channels = l.params;
  std::vector<Real> count(static_cast<size_t>(groups), Real(0));
  std::vector<sum_of_t<Real>> sum(static_cast<size_t>(groups)), sq(sum), vsum(sum), vzsum(sum);
  std::vector<int64_t> members(static_cast<size_t>(groups), 0);  // the counts as integers, for the tests on them
  for (size_t e = 0; e < entries; ++e) {
    count[group_of[e]] += Real(1);
    ++members[group_of[e]];
    if (l.centred) sum[group_of[e]] += Real(c.x[e]);
  }
  for (int64_t g = 0; g < groups; ++g) r.mean.push_back(total(sum[g]) / count[g]);  // 0 for RMSNorm
  for (size_t e = 0; e < entries; ++e) {
    const Real d = Real(c.x[e]) - r.mean[group_of[e]];
    sq[group_of[e]] += d * d;
  }
  for (int64_t g = 0; g < groups; ++g) {
    r.var.push_back(total(sq[g]) / count[g]);  // RMSNorm: the mean of squares
    r.rstd.push_back(Real(1) / sqrt(r.var.back() + Real(c.eps)));
  }
  std::vector<Real> z(entries);
  for (size_t e = 0; e < entries; ++e) {
    const int64_t g = group_of[e], ch = channel_of[e];
    z[e] = (Real(c.x[e]) - r.mean[g]) * r.rstd[g];
    r.y.push_back(l.centred ? Real(c.gamma[ch]) * z[e] + Real(c.beta[ch]) : Real(c.gamma[ch]) * z[e]);
  }
  if (with_vjp) {
    std::vector<sum_of_t<Real>> dgamma(static_cast<size_t>(channels)), dbeta(dgamma);
    for (size_t e = 0; e < entries; ++e) {
      const int64_t g = group_of[e], ch = channel_of[e];
      const Real v = Real(c.gamma[ch]) * Real(c.dy[e]);
      vsum[g] += v;
      vzsum[g] += v * z[e];
      r.contrib.push_back(Real(c.dy[e]) * z[e]);
      dgamma[ch] += r.contrib.back();
      if (l.centred) dbeta[ch] += Real(c.dy[e]);
    }
    for (int64_t ch = 0; ch < channels; ++ch) {
      r.dgamma.push_back(total(dgamma[ch]));
      if (l.centred) r.dbeta.push_back(total(dbeta[ch]));
    }
    std::vector<Real> mean_v, mean_vz;
    for (int64_t g = 0; g < groups; ++g) {
      mean_v.push_back(total(vsum[g]) / count[g]);
      mean_vz.push_back(total(vzsum[g]) / count[g]);
    }
    for (size_t e = 0; e < entries; ++e) {
      const int64_t g = group_of[e], ch = channel_of[e];
      const Real v = Real(c.gamma[ch]) * Real(c.dy[e]);
      const Real centring = l.centred ? mean_v[g] : Real(0);
      r.dx.push_back(r.rstd[g] * (v - centring - z[e] * mean_vz[g]));
    }
  }
  if (l.batch_norm) {  // groups are channels
    const Real mom(c.momentum), keep = Real(1) - mom;
    for (int64_t ch = 0; ch < channels; ++ch) {
      const Real n = count[ch];
      const Real unbiased = members[ch] > 1 ? r.var[ch] * n / (n - Real(1)) : r.var[ch];
      r.running_mean.push_back(keep * Real(c.running_mean[ch]) + mom * r.mean[ch]);
      r.running_var.push_back(keep * Real(c.running_var[ch]) + mom * unbiased);
    }
    for (size_t e = 0; e < entries; ++e) {
      const int64_t ch = channel_of[e];
      const Real inv = Real(1) / sqrt(Real(c.running_var[ch]) + Real(c.eps));
      r.y_inference.push_back(Real(c.gamma[ch]) * ((Real(c.x[e]) - Real(c.running_mean[ch])) * inv) + Real(c.beta[ch]));
    }
  }
  return r;
}

}  // namespace normcheck::oracle
