#include "generators/grouped_generators.hpp"

#include <cmath>

#include "core/rng.hpp"
#include "generators/generators.hpp"

namespace normcheck::gen {

GroupedNormCase make_grouped_case(audit::NormKind kind, audit::Layout layout, DType dt, uint64_t seed) {
  Rng rng(seed);
  GroupedNormCase c;
  c.dtype = dt;
  c.seed = seed;
  c.generator = "grouped";
  c.spec.kind = kind;
  int64_t channels = rng.range(1, 8);
  if (kind == audit::NormKind::group_norm) {
    c.spec.groups = rng.range(1, 4);
    channels = c.spec.groups * rng.range(1, 3);
  }
  const int64_t n = rng.range(1, 4);
  switch (layout) {
    case audit::Layout::nchw: c.tensor = {layout, {n, channels, rng.range(1, 6), rng.range(1, 6)}}; break;
    case audit::Layout::nhwc: c.tensor = {layout, {n, rng.range(1, 6), rng.range(1, 6), channels}}; break;
    default: c.tensor = {audit::Layout::sequence, {n, rng.range(1, 12), channels}}; break;
  }
  c.eps = model_eps(rng);
  if (kind == audit::NormKind::layer_norm || kind == audit::NormKind::rms_norm)  // trailing axes, never the batch
    c.spec.normalized_dims = static_cast<int>(rng.range(1, static_cast<int64_t>(c.tensor.shape.size()) - 1));
  int64_t elements = 1;
  for (int64_t s : c.tensor.shape) elements *= s;
  const double shift = normal(rng, DType::f64, 0, 2), spread = std::exp(normal(rng, DType::f64, 0, 0.7));
  for (int64_t e = 0; e < elements; ++e) {
    c.x.push_back(normal(rng, dt, shift, spread));
    c.dy.push_back(normal(rng, dt, 0, 1));
  }
  const int64_t params = case_param_count(c);
  if (params == channels) {  // per-channel parameters: the draws of the first grouped suite
    for (int64_t ch = 0; ch < channels; ++ch) {
      c.gamma.push_back(normal(rng, dt, 1, 0.3));
      c.beta.push_back(normal(rng, dt, 0, 0.3));
      c.running_mean.push_back(normal(rng, dt, 0, 0.5));
      c.running_var.push_back(std::fabs(normal(rng, dt, 1, 0.3)));
    }
  } else {
    for (int64_t p = 0; p < params; ++p) {
      c.gamma.push_back(normal(rng, dt, 1, 0.3));
      c.beta.push_back(normal(rng, dt, 0, 0.3));
    }
    for (int64_t ch = 0; ch < channels; ++ch) {
      c.running_mean.push_back(normal(rng, dt, 0, 0.5));
      c.running_var.push_back(std::fabs(normal(rng, dt, 1, 0.3)));
    }
  }
  if (!case_centred(c)) c.beta.clear();  // RMSNorm has no beta
  return c;
}

}  // namespace normcheck::gen
