#include <stdexcept>
#include "core/layernorm_case.hpp"

#include <cmath>
#include <cstring>
#include <tuple>

#include <fmt/format.h>

namespace normcheck {

std::optional<std::string> check_values(const std::vector<double>& v, const char* name, DType dt) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i]))
      return fmt::format("{}[{}] is not finite ({})", name, i, v[i]);
    if (!representable(v[i], dt))
      return fmt::format("{}[{}] = {:a} is not representable in {}", name, i, v[i],
                         dtype_info(dt).name);
  }
  return std::nullopt;
}

void mix(uint64_t& h, uint64_t word) {
  for (int b = 0; b < 8; ++b) {
    h ^= (word >> (8 * b)) & 0xffu;
    h *= 0x100000001b3ull;
  }
}

void mix_values(uint64_t& h, const std::vector<double>& v) {
  mix(h, v.size());
  for (double d : v) {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    mix(h, bits);
  }
}

std::optional<int64_t> case_elements(int64_t a, int64_t b) {
  int64_t product = 0;
  if (a < 1 || b < 1 || __builtin_mul_overflow(a, b, &product) || product > kMaxCaseElements) return std::nullopt;
  return product;
}

std::optional<std::string> validate_case(const LayerNormCase& c, bool need_dy) {
  if (!(c.eps > 0.0) || !std::isfinite(c.eps))
    return fmt::format("eps must be finite and > 0, got {}", c.eps);
  if (c.rows <= 0 || c.n <= 0)
    return fmt::format("empty tensor: rows = {}, n = {} (both must be >= 1)", c.rows, c.n);
  const std::optional<int64_t> checked = case_elements(c.rows, c.n);
  if (!checked) return fmt::format("shape rows = {}, n = {} exceeds {} elements per case", c.rows, c.n, kMaxCaseElements);
  const auto elems = static_cast<size_t>(*checked);
  if (c.x.size() != elems)
    return fmt::format("shape mismatch: x has {} values, rows*n = {}", c.x.size(), elems);
  if (c.gamma.size() != static_cast<size_t>(c.n) || c.beta.size() != static_cast<size_t>(c.n))
    return fmt::format("shape mismatch: gamma has {}, beta has {} values, n = {}", c.gamma.size(),
                       c.beta.size(), c.n);
  if (need_dy && c.dy.size() != elems)
    return fmt::format("shape mismatch: dy has {} values, rows*n = {}", c.dy.size(), elems);
  for (auto [vec, name] : {std::pair{&c.x, "x"}, {&c.gamma, "gamma"}, {&c.beta, "beta"}, {&c.dy, "dy"}})
    if (auto err = check_values(*vec, name, c.dtype)) return err;
  return std::nullopt;
}

uint64_t case_digest(const LayerNormCase& c) {
  uint64_t h = 0xcbf29ce484222325ull;
  mix(h, static_cast<uint64_t>(c.dtype));
  mix(h, static_cast<uint64_t>(c.rows));
  mix(h, static_cast<uint64_t>(c.n));
  mix_values(h, {c.eps});
  mix_values(h, c.x);
  mix_values(h, c.gamma);
  mix_values(h, c.beta);
  mix_values(h, c.dy);
  return h;
}

}  // namespace normcheck

namespace normcheck {

std::optional<std::string> validate_tangents(const LayerNormCase& c, const LayerNormTangents& t) {
  const auto rn = static_cast<size_t>(c.rows * c.n), n = static_cast<size_t>(c.n);
  for (const auto& [v, want, name] : {std::tuple{&t.dx, rn, "tangent dx"}, {&t.dgamma, n, "tangent dgamma"}, {&t.dbeta, n, "tangent dbeta"}}) {
    if (v->size() != want) return fmt::format("shape mismatch: {} has {} values, expected {}", name, v->size(), want);
    if (auto err = check_values(*v, name, c.dtype)) return err;
  }
  return std::nullopt;
}

const std::vector<double>& case_input(const LayerNormCase& c, std::string_view name) {
  if (name == "x") return c.x;
  if (name == "gamma") return c.gamma;
  if (name == "beta") return c.beta;
  if (name == "dy") return c.dy;
  throw std::invalid_argument("a LayerNorm case has no tensor '" + std::string(name) + "'");
}

}  // namespace normcheck
