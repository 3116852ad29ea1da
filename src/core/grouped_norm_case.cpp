#include "core/grouped_norm_case.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/layernorm_case.hpp"

namespace normcheck {

std::vector<int64_t> case_groups(const GroupedNormCase& c) { return audit::declared_groups(c.tensor, c.spec); }

int64_t case_channel_count(const GroupedNormCase& c) {
  return c.tensor.shape[static_cast<size_t>(audit::channel_axis(c.tensor.layout))];
}

std::vector<int64_t> case_params(const GroupedNormCase& c) { return audit::affine_index_of_entries(c.tensor, c.spec); }

std::vector<int64_t> case_param_shape(const GroupedNormCase& c) {
  const bool trailing = c.spec.kind == audit::NormKind::layer_norm || c.spec.kind == audit::NormKind::rms_norm;
  if (!trailing || c.spec.tied_affine) return {case_param_count(c)};  // one per channel
  const auto& shape = c.tensor.shape;
  return {shape.end() - c.spec.normalized_dims, shape.end()};
}

int64_t case_param_count(const GroupedNormCase& c) {
  int64_t p = 1;
  for (int64_t s : audit::account(c.tensor, c.spec).affine_shape) p *= s;
  return p;
}

bool case_centred(const GroupedNormCase& c) { return c.spec.kind != audit::NormKind::rms_norm; }

std::optional<std::string> validate_grouped_case(const GroupedNormCase& c) {
  if (auto err = audit::validate(c.tensor, c.spec)) return err;
  if (!(c.eps > 0) || !std::isfinite(c.eps)) return fmt::format("eps must be finite and > 0, got {}", c.eps);
  if (!(c.momentum >= 0 && c.momentum <= 1)) return fmt::format("momentum must be in [0, 1], got {}", c.momentum);
  int64_t elements = 1;
  for (int64_t s : c.tensor.shape) elements *= s;
  if (!c.spec.affine) return std::string("grouped cases carry gamma and beta (affine = true)");
  const auto ch = static_cast<size_t>(case_channel_count(c)), params = static_cast<size_t>(case_param_count(c));
  const size_t betas = case_centred(c) ? params : 0;
  for (const auto& [v, want, name] : {std::tuple{&c.x, static_cast<size_t>(elements), "x"}, {&c.dy, static_cast<size_t>(elements), "dy"},
                                      {&c.gamma, params, "gamma"}, {&c.beta, betas, "beta"}, {&c.running_mean, ch, "running_mean"},
                                      {&c.running_var, ch, "running_var"}}) {
    if (v->size() != want) return fmt::format("shape mismatch: {} has {} values, expected {}", name, v->size(), want);
    if (auto err = check_values(*v, name, c.dtype)) return err;
  }
  for (double v : c.running_var)
    if (v < 0) return std::string("running_var must be >= 0");
  return std::nullopt;
}

}  // namespace normcheck
