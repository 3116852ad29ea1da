#include "suite/search.hpp"

#include <cmath>
#include <stdexcept>

#include "ops/op_kernels.hpp"
#include "core/rng.hpp"
#include "generators/generators.hpp"
#include "suite/judge.hpp"

namespace normcheck {
namespace {

/// The kernel a search names; throws std::invalid_argument when the build has none.
const KernelEntry& searched_kernel(Op op, const std::string& variant, DType dt) {
  const KernelEntry* k = find_kernel(op, variant, dt);
  if (!k) throw std::invalid_argument("no kernel '" + variant + "' for " + std::string(dtype_info(dt).name));
  return *k;
}

/// Generators the restarts cycle through (the adversarial starting points).
const std::vector<std::string>& start_generators() {
  static const std::vector<std::string> g = {"normal", "large_mean", "eps_dominant", "log_uniform",
                                             "near_max", "subnormal", "constant"};
  return g;
}

/// Moves v by `steps` representable values of dt; keeps v when the result is not finite.
double nudge(double v, int64_t steps, DType dt) {
  const FloatFormat& f = *dtype_info(dt).format;
  const double w = decode_bits(bits_from_ordered_key(ordered_key(encode_exact(v, f), f) + steps, f), f);
  return std::isfinite(w) ? w : v;
}

/// (x_ij - mean_i) / sqrt(var_i + eps) in double: a guide for the search, not a reference.
double approx_normalized(const LayerNormCase& c, int64_t i, int64_t j) {
  const double* x = &c.x[static_cast<size_t>(i * c.n)];
  double mean = 0, var = 0;
  for (int64_t k = 0; k < c.n; ++k) mean += x[k] / static_cast<double>(c.n);
  for (int64_t k = 0; k < c.n; ++k) var += (x[k] - mean) * (x[k] - mean) / static_cast<double>(c.n);
  return (x[j] - mean) / std::sqrt(var + c.eps);
}

/// One random local move on the inputs (x, gamma, beta or dy) of a case.
void mutate(LayerNormCase& c, Rng& rng, bool backward) {
  const int kind = static_cast<int>(rng.range(0, backward ? 5 : 4));
  const int64_t steps = (rng.coin() ? 1 : -1) * (int64_t{1} << rng.range(0, 12));
  auto pick = [&](std::vector<double>& v) -> double& { return v[static_cast<size_t>(rng.range(0, v.size() - 1))]; };
  switch (kind) {
    case 0: case 1: { double& x = pick(c.x); x = nudge(x, steps, c.dtype); break; }
    case 2: { double& g = pick(c.gamma); g = nudge(g, steps, c.dtype); break; }
    case 3: {  // set beta_j near -gamma_j z_ij for a random row i: output y_ij cancels to ~0
      const int64_t i = rng.range(0, c.rows - 1), j = rng.range(0, c.n - 1);
      const double z = approx_normalized(c, i, j);
      c.beta[j] = nudge(round_to_dtype(-c.gamma[j] * z, c.dtype), steps % 4, c.dtype);
      if (!std::isfinite(c.beta[j])) c.beta[j] = 0;
      break;
    }
    case 4: {  // copy one x onto a neighbour: more cancellation in x - mean
      const int64_t a = rng.range(0, c.x.size() - 1), b = rng.range(0, c.x.size() - 1);
      c.x[b] = nudge(c.x[a], steps % 8, c.dtype);
      break;
    }
    default: { double& d = pick(c.dy); d = nudge(d, steps, c.dtype); break; }
  }
}

}  // namespace

double own_bound_ratio(Op op, const std::string& variant, const LayerNormCase& c, std::string* output,
                       const std::string& only_output) {
  const KernelEntry& k = searched_kernel(op, variant, c.dtype);
  const auto ref = certified_reference(op, c, is_backward(op));
  double best = 0;
  for (const OutputJudgement& j : judge_case(k, c, ref)) {
    if (!only_output.empty() && j.output != only_output) continue;
    const double r = j.own.max_rigor_ratio();
    if (r > best) {
      best = r;
      if (output) *output = j.output;
    }
  }
  return best;
}

SearchResult search_worst_case(const SearchConfig& cfg) {
  searched_kernel(cfg.op, cfg.variant, cfg.dtype);  // validates the request
  Rng rng(cfg.seed);
  SearchResult result;
  result.best.op = cfg.op;
  result.best.variant = cfg.variant;
  result.best.output = cfg.output.empty() ? op_outputs(cfg.op).front() : cfg.output;
  result.best.ratio = -1;
  const bool backward = is_backward(cfg.op);
  for (int restart = 0; restart < cfg.restarts; ++restart) {
    const std::string& g = start_generators()[static_cast<size_t>(restart) % start_generators().size()];
    LayerNormCase current = gen::make_layernorm_case(g, cfg.dtype, rng.next(), {cfg.rows, cfg.n, cfg.rows * cfg.n});
    std::string out = result.best.output;
    double score = own_bound_ratio(cfg.op, cfg.variant, current, &out, cfg.output);
    ++result.evaluations;
    for (int it = 0; it < cfg.iterations; ++it) {
      LayerNormCase candidate = current;
      mutate(candidate, rng, backward);
      if (validate_case(candidate, backward)) continue;
      std::string cand_out = result.best.output;
      const double s = own_bound_ratio(cfg.op, cfg.variant, candidate, &cand_out, cfg.output);
      ++result.evaluations;
      if (s >= score) {
        current = std::move(candidate);
        score = s;
        out = cand_out;
      }
    }
    if (score > result.best.ratio) {
      result.best.ratio = score;
      result.best.c = current;
      result.output = out;
      result.best.output = cfg.output.empty() ? out : cfg.output;
    }
  }
  result.best.c.generator = "corpus";
  return result;
}

}  // namespace normcheck
