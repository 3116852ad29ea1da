#include "core/contraction_case.hpp"

#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/layernorm_case.hpp"

namespace normcheck {
namespace {

std::optional<std::string> check_size(const std::vector<double>& v, size_t want, const char* name, bool optional) {
  if (optional && v.empty()) return std::nullopt;
  if (v.size() != want) return fmt::format("shape mismatch: {} has {} values, expected {}{}", name, v.size(), want, optional ? " or none" : "");
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) return fmt::format("{}[{}] is not finite ({})", name, i, v[i]);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> validate_block(const AffineLnAffine& blk) {
  if (!(blk.eps > 0.0) || !std::isfinite(blk.eps)) return fmt::format("eps must be finite and > 0, got {}", blk.eps);
  if (blk.d <= 0 || blk.n <= 0 || blk.m <= 0)
    return fmt::format("empty tensor: d = {}, n = {}, m = {} (all must be >= 1)", blk.d, blk.n, blk.m);
  const auto n = static_cast<size_t>(blk.n), d = static_cast<size_t>(blk.d), m = static_cast<size_t>(blk.m);
  for (const auto& [v, want, name, opt] :
       {std::tuple{&blk.A, n * d, "A (producer weight)", false}, {&blk.a, n, "a (producer bias)", true},
        {&blk.gamma, n, "gamma (LayerNorm weight)", true}, {&blk.beta, n, "beta (LayerNorm bias)", true},
        {&blk.W, m * n, "W (consumer weight)", false}, {&blk.b, m, "b (consumer bias)", true}})
    if (auto err = check_size(*v, want, name, opt)) return err;
  if (blk.gamma.empty() && !blk.beta.empty()) return std::string("LayerNorm bias without LayerNorm weight");
  if (!blk.consumer_rows.empty()) {
    for (int64_t r : blk.consumer_rows)
      if (r <= 0) return fmt::format("consumer with {} rows (must be >= 1)", r);
    const int64_t total = std::accumulate(blk.consumer_rows.begin(), blk.consumer_rows.end(), int64_t{0});
    if (total != blk.m) return fmt::format("consumer sizes sum to {}, W has {} rows", total, blk.m);
  }
  return std::nullopt;
}

ParameterCounts parameter_counts(const AffineLnAffine& blk, const RetainedParts& retained) {
  const int64_t d = blk.d, n = blk.n, m = blk.m, k = blk.k();
  const auto present = [](const std::vector<double>& v) { return static_cast<int64_t>(v.size()); };
  ParameterCounts c;
  c.n_old = n * d + present(blk.a) + present(blk.gamma) + present(blk.beta) + m * n + present(blk.b);
  c.n_retained = (retained.producer ? n * d + present(blk.a) : 0) + (retained.norm ? present(blk.gamma) + present(blk.beta) : 0);
  c.n_new = m * (d + 1) + k * (d + 1) + m + c.n_retained;
  c.n_new_separate_r = c.n_new + (static_cast<int64_t>(blk.consumers().size()) - 1) * k * (d + 1);
  return c;
}

}  // namespace normcheck
