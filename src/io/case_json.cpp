#include "io/case_json.hpp"
#include "io/json_input.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace normcheck {

std::string hexfloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

std::string fmt_decimal(double v) {
  if (!std::isfinite(v)) return hexfloat(v);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

nlohmann::json json_number(double v) {
  if (std::isfinite(v)) return v;
  return hexfloat(v);
}

std::optional<double> json_number_value(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  if (s == "inf") return HUGE_VAL;
  if (s == "-inf") return -HUGE_VAL;
  if (s == "nan") return NAN;
  return std::nullopt;
}

double parse_hexfloat(const std::string& s) {
  if (s.empty()) throw std::invalid_argument("empty number");
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) throw std::invalid_argument("malformed number '" + s + "'");
  return v;
}

nlohmann::json hex_array(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double d : v) a.push_back(hexfloat(d));
  return a;
}

std::vector<double> parse_hex_array(const nlohmann::json& j, const char* what) {
  if (!j.is_array()) throw std::invalid_argument(std::string(what) + " must be an array of hexfloat strings");
  std::vector<double> out;
  out.reserve(j.size());
  for (const auto& e : j) {
    if (!e.is_string()) throw std::invalid_argument(std::string(what) + " must contain hexfloat strings");
    out.push_back(parse_hexfloat(e.get<std::string>()));
  }
  return out;
}

nlohmann::json case_identity_json(DType dtype, int64_t rows, int64_t n, double eps, const std::string& generator, uint64_t seed,
                                  uint64_t digest) {
  return {{"dtype", std::string(dtype_info(dtype).name)},
          {"rows", rows},
          {"n", n},
          {"eps", hexfloat(eps)},
          {"generator", generator},
          {"case_seed", std::to_string(seed)},
          {"digest", std::to_string(digest)}};
}

nlohmann::json case_to_json(const LayerNormCase& c) {
  nlohmann::json j = case_identity_json(c.dtype, c.rows, c.n, c.eps, c.generator, c.seed, case_digest(c));
  if (c.rows * c.n <= kInlineCaseLimit) {
    j["x"] = hex_array(c.x);
    j["gamma"] = hex_array(c.gamma);
    j["beta"] = hex_array(c.beta);
    j["dy"] = hex_array(c.dy);
  }
  return j;
}

int64_t json_int64(const nlohmann::json& v, const std::string& what) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
    throw std::invalid_argument(what + " must be an integer that fits in 64 bits");
  return v.get<int64_t>();
}

LayerNormCase case_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("case must be a JSON object");
  for (const char* key : {"dtype", "rows", "n", "eps", "x", "gamma", "beta"})
    if (!j.contains(key)) throw std::invalid_argument(std::string("case lacks '") + key + "'");
  LayerNormCase c;
  const auto dt = parse_dtype(j.at("dtype").get<std::string>());
  if (!dt) throw std::invalid_argument("unknown dtype '" + j.at("dtype").get<std::string>() + "'");
  c.dtype = *dt;
  c.rows = json_int64(j.at("rows"), "case field 'rows'");
  c.n = json_int64(j.at("n"), "case field 'n'");
  c.eps = parse_hexfloat(j.at("eps").get<std::string>());
  c.x = parse_hex_array(j.at("x"), "x");
  c.gamma = parse_hex_array(j.at("gamma"), "gamma");
  c.beta = parse_hex_array(j.at("beta"), "beta");
  if (j.contains("dy")) c.dy = parse_hex_array(j.at("dy"), "dy");
  c.generator = j.value("generator", "");
  c.seed = parse_decimal_u64(j.value("case_seed", "0"), "case_seed");
  return c;
}

nlohmann::json block_case_to_json(const RmsBlockCase& c) {
  nlohmann::json j = {{"dtype", std::string(dtype_info(c.dtype).name)},
                      {"rows", c.rows},
                      {"n", c.n},
                      {"m", c.m},
                      {"eps", hexfloat(c.eps)},
                      {"generator", c.generator},
                      {"case_seed", std::to_string(c.seed)},
                      {"digest", std::to_string(block_case_digest(c))}};
  const size_t total = c.x.size() + c.g.size() + c.w.size() + c.b.size() + c.dy.size();
  if (total <= static_cast<size_t>(kInlineCaseLimit)) {
    j["x"] = hex_array(c.x);
    j["g"] = hex_array(c.g);
    j["w"] = hex_array(c.w);
    j["b"] = hex_array(c.b);
    j["dy"] = hex_array(c.dy);
  }
  return j;
}

RmsBlockCase block_case_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("block case must be a JSON object");
  for (const char* key : {"dtype", "rows", "n", "m", "eps", "x", "g", "w", "b", "dy"})
    if (!j.contains(key)) throw std::invalid_argument(std::string("block case lacks '") + key + "'");
  RmsBlockCase c;
  const auto dt = parse_dtype(j.at("dtype").get<std::string>());
  if (!dt) throw std::invalid_argument("unknown dtype '" + j.at("dtype").get<std::string>() + "'");
  c.dtype = *dt;
  c.rows = json_int64(j.at("rows"), "block case field 'rows'");
  c.n = json_int64(j.at("n"), "block case field 'n'");
  c.m = json_int64(j.at("m"), "block case field 'm'");
  c.eps = parse_hexfloat(j.at("eps").get<std::string>());
  c.x = parse_hex_array(j.at("x"), "x");
  c.g = parse_hex_array(j.at("g"), "g");
  c.w = parse_hex_array(j.at("w"), "w");
  c.b = parse_hex_array(j.at("b"), "b");
  c.dy = parse_hex_array(j.at("dy"), "dy");
  c.generator = j.value("generator", "");
  c.seed = parse_decimal_u64(j.value("case_seed", "0"), "case_seed");
  return c;
}

nlohmann::json contraction_case_to_json(const ContractionCase& c) {
  const AffineLnAffine& b = c.block;
  nlohmann::json j = {{"dtype", std::string(dtype_info(c.dtype).name)},
                      {"d", b.d},
                      {"n", b.n},
                      {"m", b.m},
                      {"rows", c.rows},
                      {"consumer_rows", b.consumers()},
                      {"eps", hexfloat(b.eps)},
                      {"generator", c.generator},
                      {"case_seed", std::to_string(c.seed)}};
  const size_t total = b.A.size() + b.a.size() + b.gamma.size() + b.beta.size() + b.W.size() + b.b.size() + c.x.size() + c.dy.size();
  if (total <= static_cast<size_t>(kInlineCaseLimit))
    for (const auto& [name, v] : {std::pair{"A", &b.A}, {"a", &b.a}, {"gamma", &b.gamma}, {"beta", &b.beta}, {"W", &b.W},
                                  {"b", &b.b}, {"x", &c.x}, {"dy", &c.dy}})
      j[name] = hex_array(*v);
  return j;
}

}  // namespace normcheck
