#include "core/rmsnorm_case.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/layernorm_case.hpp"

namespace normcheck {

std::optional<std::string> validate_block_case(const RmsBlockCase& c) {
  if (!(c.eps > 0.0) || !std::isfinite(c.eps)) return fmt::format("eps must be finite and > 0, got {}", c.eps);
  if (c.rows <= 0 || c.n <= 0 || c.m <= 0)
    return fmt::format("empty tensor: rows = {}, n = {}, m = {} (all must be >= 1)", c.rows, c.n, c.m);
  for (const auto& [a, b] : {std::pair{c.rows, c.n}, {c.m, c.n}, {c.rows, c.m}})
    if (!case_elements(a, b)) return fmt::format("shape rows = {}, n = {}, m = {} exceeds {} elements per tensor", c.rows, c.n, c.m, kMaxCaseElements);
  const auto sz = [](int64_t a, int64_t b) { return static_cast<size_t>(a) * static_cast<size_t>(b); };
  for (const auto& [vec, want, name] :
       {std::tuple{&c.x, sz(c.rows, c.n), "x"}, {&c.g, sz(1, c.n), "g"}, {&c.w, sz(c.m, c.n), "w"},
        {&c.dy, sz(c.rows, c.m), "dy"}})
    if (vec->size() != want) return fmt::format("shape mismatch: {} has {} values, expected {}", name, vec->size(), want);
  if (!c.b.empty() && c.b.size() != static_cast<size_t>(c.m))
    return fmt::format("shape mismatch: b has {} values, expected {} or none", c.b.size(), c.m);
  for (auto [vec, name] : {std::pair{&c.x, "x"}, {&c.g, "g"}, {&c.w, "w"}, {&c.b, "b"}, {&c.dy, "dy"}})
    if (auto err = check_values(*vec, name, c.dtype)) return err;
  return std::nullopt;
}

uint64_t block_case_digest(const RmsBlockCase& c) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t v : {static_cast<int64_t>(c.dtype), c.rows, c.n, c.m}) mix(h, static_cast<uint64_t>(v));
  mix_values(h, {c.eps});
  for (const auto* v : {&c.x, &c.g, &c.w, &c.b, &c.dy}) mix_values(h, *v);
  return h;
}

}  // namespace normcheck
