#include "suite/budget_search.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/float_format.hpp"
#include "core/rng.hpp"
#include "io/json_input.hpp"

namespace normcheck {
namespace {

/// The start of restart r: the seeded case, x0 and every step's seeded u scaled by powers of two.
PhCase start_case(const BudgetSearchConfig& cfg, int r, Rng& rng) {
  PhCase c = make_ph_case(cfg.dtype, cfg.n, cfg.depth, cfg.h, derive_seed(cfg.seed, 0xb5, static_cast<uint64_t>(r)));
  const double sx = std::ldexp(1.0, static_cast<int>(rng.range(-6, 6))), su = std::ldexp(1.0, static_cast<int>(rng.range(-6, 6)));
  for (double& v : c.x0) v = round_to_dtype(v * sx, cfg.dtype);
  for (int64_t t = 0; t < c.depth; ++t)
    for (double v : ph_step_params(c, t).u) c.u.push_back(round_to_dtype(v * su, cfg.dtype));
  return c;
}

/// One move: an entry of x0 or of u scaled by a power of two, negated, or redrawn at its vector's scale.
PhCase mutate(const PhCase& c, Rng& rng) {
  PhCase d = c;
  const auto k = static_cast<size_t>(rng.range(0, static_cast<int64_t>(d.x0.size() + d.u.size()) - 1));
  std::vector<double>& vec = k < d.x0.size() ? d.x0 : d.u;
  double& v = vec[k < d.x0.size() ? k : k - d.x0.size()];
  const double old = v;
  double scale = 0;
  for (double e : vec) scale = std::max(scale, std::fabs(e));
  switch (rng.range(0, 2)) {
    case 0: v *= std::ldexp(1.0, static_cast<int>(rng.range(1, 3)) * (rng.range(0, 1) ? 1 : -1)); break;
    case 1: v = -v; break;
    default: v = (scale > 0 ? scale : 1.0) * rng.normal(); break;
  }
  const double w = round_to_dtype(v, d.dtype);
  v = std::isfinite(w) ? w : old;
  return d;
}

std::string hex(double v) { return fmt::format("{:a}", v); }

std::vector<double> from_hex(const nlohmann::json& a) {
  std::vector<double> out;
  for (const auto& s : a) out.push_back(std::stod(s.get<std::string>()));
  return out;
}

}  // namespace

BudgetObjectives budget_objectives(const BudgetCaseResult& r) {
  BudgetObjectives o;
  for (size_t t = 1; t < r.kernel_norms.size() && t < r.fp_budget.size(); ++t)
    o.tightness = std::max(o.tightness, std::isfinite(r.kernel_norms[t]) ? r.kernel_norms[t] / r.fp_budget[t] : HUGE_VAL);
  for (size_t t = 0; t < r.fp_budget.size() && t < r.exact_budget.size(); ++t)
    if (r.exact_budget[t] > 0) o.slack = std::max(o.slack, r.fp_budget[t] / r.exact_budget[t] - 1);
  o.failed = r.failed();
  return o;
}

BudgetObjectives evaluate_budget_case(const PhCase& c) {
  BudgetCaseOptions o;
  o.explicit_inverse = false;
  o.judge_max_n = 0;
  o.backward = false;  // the objectives are the forward budget's
  return budget_objectives(run_budget_case(c, o));
}

BudgetSearchResult search_budget_worst_case(const BudgetSearchConfig& cfg) {
  if (cfg.objective != "tightness" && cfg.objective != "slack")
    throw std::invalid_argument("unknown objective '" + cfg.objective + "' (tightness, slack)");
  if (cfg.n < kPhMinWidth || cfg.n > kPhMaxWidth || cfg.depth < 1 || cfg.depth > kPhMaxDepth)
    throw std::invalid_argument(fmt::format("width {} and depth {} must be in [{}, {}] and [1, {}]", cfg.n, cfg.depth, kPhMinWidth,
                                            kPhMaxWidth, kPhMaxDepth));
  if (cfg.restarts < 1 || cfg.iterations < 0) throw std::invalid_argument("--restarts must be >= 1 and --iterations >= 0");
  Rng rng(derive_seed(cfg.seed, 0xb5d));
  BudgetSearchResult out;
  bool have = false;
  for (int r = 0; r < cfg.restarts; ++r) {
    PhCase c = start_case(cfg, r, rng);
    BudgetObjectives v = evaluate_budget_case(c);
    ++out.evaluations;
    if (r == 0) out.start_value = v.of(cfg.objective);
    for (int it = 0; it < cfg.iterations; ++it) {
      PhCase d = mutate(c, rng);
      const BudgetObjectives w = evaluate_budget_case(d);
      ++out.evaluations;
      if (w.of(cfg.objective) > v.of(cfg.objective)) c = std::move(d), v = w;
    }
    if (!have || v.of(cfg.objective) > out.value.of(cfg.objective)) out.best = c, out.value = v, have = true;
  }
  return out;
}

nlohmann::json budget_corpus_entry(const PhCase& c, const std::string& objective, const BudgetObjectives& v) {
  nlohmann::json x0 = nlohmann::json::array(), u = nlohmann::json::array();
  for (double e : c.x0) x0.push_back(hex(e));
  for (double e : c.u) u.push_back(hex(e));
  return {{"dtype", std::string(dtype_info(c.dtype).name)},
          {"n", c.n},
          {"m", c.m},
          {"depth", c.depth},
          {"h", hex(c.h)},
          {"theta_scale", hex(c.theta_scale)},
          {"seed", std::to_string(c.seed)},
          {"objective", objective},
          {"tightness", v.tightness},
          {"slack", v.slack},
          {"failed", v.failed},
          {"x0", x0},
          {"u", u}};
}

PhCase budget_case_of_entry(const nlohmann::json& e) {
  PhCase c;
  const auto dt = parse_dtype(e.at("dtype").get<std::string>());
  if (!dt) throw std::invalid_argument("budget corpus entry names an unknown dtype");
  c.dtype = *dt;
  c.n = e.at("n").get<int64_t>();
  c.m = e.at("m").get<int64_t>();
  c.depth = e.at("depth").get<int64_t>();
  c.h = std::stod(e.at("h").get<std::string>());
  c.theta_scale = std::stod(e.at("theta_scale").get<std::string>());
  c.seed = parse_decimal_u64(e.at("seed").get<std::string>(), "seed");
  c.x0 = from_hex(e.at("x0"));
  c.u = from_hex(e.at("u"));
  if (c.n < kPhMinWidth || c.n > kPhMaxWidth || c.depth < 1 || c.depth > kPhMaxDepth || c.m != ph_ports(c.n) ||
      static_cast<int64_t>(c.x0.size()) != c.n || static_cast<int64_t>(c.u.size()) != c.depth * c.m)
    throw std::invalid_argument("budget corpus entry has inconsistent sizes");
  for (const std::vector<double>* v : {&c.x0, &c.u})
    for (double x : *v)
      if (!std::isfinite(x) || round_to_dtype(x, c.dtype) != x) throw std::invalid_argument("budget corpus entry holds a value its dtype cannot");
  return c;
}

}  // namespace normcheck
