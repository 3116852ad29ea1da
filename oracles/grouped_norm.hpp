#pragma once
/// Reference grouped normalization (batch norm, group norm, instance norm), templated on the real
/// type; shares no code with src/kernels. Each group g of entries (given by the caller) is
/// normalized with its own mean and biased variance; gamma and beta are indexed by channel.
///   forward    y = gamma_c (x - mean_g) r_g + beta_c,  r_g = (var_g + eps)^(-1/2)
///   VJP        v = gamma_c dy,  dx = r_g (v - mean_g(v) - z mean_g(v z)),
///              dgamma_c = sum over the channel's entries of dy z,  dbeta_c = sum dy
///   batch norm running statistics (PyTorch): m' = (1 - mom) m + mom mean_c,
///              v' = (1 - mom) v + mom var_c n / (n - 1);  inference y = gamma (x - m) / sqrt(v + eps) + beta
#include <cstdint>
#include <vector>

#include "core/grouped_norm_case.hpp"

namespace normcheck::oracle {

template <class Real>
struct GroupedNormReference {
  std::vector<Real> y, dx, contrib;           ///< per entry; contrib = dy z
  std::vector<Real> dgamma, dbeta;            ///< per channel
  std::vector<Real> mean, var, rstd;          ///< per group
  std::vector<Real> running_mean, running_var, y_inference;  ///< batch norm only
};

template <class Real>
GroupedNormReference<Real> grouped_norm_reference(const GroupedNormCase& c, const std::vector<int64_t>& group_of,
                                                  const std::vector<int64_t>& channel_of, int64_t groups, int64_t channels,
                                                  bool with_vjp, bool batch_norm) {
  GroupedNormReference<Real> r;
  const size_t entries = c.x.size();
  std::vector<Real> count(static_cast<size_t>(groups), Real(0)), sum(count), sq(count), vsum(count), vzsum(count);
  for (size_t e = 0; e < entries; ++e) {
    count[group_of[e]] += Real(1);
    sum[group_of[e]] += Real(c.x[e]);
  }
  for (int64_t g = 0; g < groups; ++g) r.mean.push_back(sum[g] / count[g]);
  for (size_t e = 0; e < entries; ++e) {
    const Real d = Real(c.x[e]) - r.mean[group_of[e]];
    sq[group_of[e]] += d * d;
  }
  for (int64_t g = 0; g < groups; ++g) {
    r.var.push_back(sq[g] / count[g]);
    r.rstd.push_back(Real(1) / sqrt(r.var.back() + Real(c.eps)));
  }
  std::vector<Real> z(entries);
  for (size_t e = 0; e < entries; ++e) {
    const int64_t g = group_of[e], ch = channel_of[e];
    z[e] = (Real(c.x[e]) - r.mean[g]) * r.rstd[g];
    r.y.push_back(Real(c.gamma[ch]) * z[e] + Real(c.beta[ch]));
  }
  if (with_vjp) {
    r.dgamma.assign(static_cast<size_t>(channels), Real(0));
    r.dbeta.assign(static_cast<size_t>(channels), Real(0));
    for (size_t e = 0; e < entries; ++e) {
      const int64_t g = group_of[e], ch = channel_of[e];
      const Real v = Real(c.gamma[ch]) * Real(c.dy[e]);
      vsum[g] += v;
      vzsum[g] += v * z[e];
      r.contrib.push_back(Real(c.dy[e]) * z[e]);
      r.dgamma[ch] += r.contrib.back();
      r.dbeta[ch] += Real(c.dy[e]);
    }
    for (size_t e = 0; e < entries; ++e) {
      const int64_t g = group_of[e], ch = channel_of[e];
      const Real v = Real(c.gamma[ch]) * Real(c.dy[e]);
      r.dx.push_back(r.rstd[g] * (v - vsum[g] / count[g] - z[e] * (vzsum[g] / count[g])));
    }
  }
  if (batch_norm) {  // groups are channels
    const Real mom(c.momentum), keep = Real(1) - mom;
    for (int64_t ch = 0; ch < channels; ++ch) {
      const Real n = count[ch];
      const Real unbiased = n > Real(1) ? r.var[ch] * n / (n - Real(1)) : r.var[ch];
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
