#pragma once
/// JSON encoding of cases and values: hexfloat strings (exact) beside decimals (readable).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/certified_value.hpp"
#include "core/contraction_case.hpp"
#include "core/layernorm_case.hpp"
#include "core/rmsnorm_case.hpp"

namespace normcheck {

/// Exact hexadecimal floating-point text ("%a"), e.g. "0x1.8p+1"; "inf", "-inf", "nan".
std::string hexfloat(double v);
/// Decimal text with 17 significant digits (round-trips), or hexfloat's words for non-finite.
std::string fmt_decimal(double v);
/// A JSON number when finite, else the string "inf", "-inf" or "nan".
nlohmann::json json_number(double v);

/// The inverse of json_number: a number, or "inf" / "-inf" / "nan"; nullopt for anything else.
std::optional<double> json_number_value(const nlohmann::json& v);
/// Row length of an output tensor: n for per-element outputs (y, dx), 0 for per-column ones.
inline int64_t row_length_of_output(const std::string& output, int64_t n) {
  return (output == "y" || output == "dx") ? n : 0;
}
/// A JSON integer that fits in int64_t; throws std::invalid_argument naming `what` for anything else.
/// nlohmann's get<int64_t>() converts a float such as 1e48 with a cast that is undefined behaviour
/// (found by fuzz_report_json). The case readers use it; other integer reads of report fields do not
/// yet (docs/fuzzing.md).
int64_t json_int64(const nlohmann::json& v, const std::string& what);
/// Parses hexfloat (or decimal) text; throws std::invalid_argument on malformed text.
double parse_hexfloat(const std::string& s);

nlohmann::json hex_array(const std::vector<double>& v);
std::vector<double> parse_hex_array(const nlohmann::json& j, const char* what);

/// Inputs are written in full when rows * n is at most this; larger cases replay from the seed.
inline constexpr int64_t kInlineCaseLimit = 4096;

/// The case: shape, eps, generator, seed, digest, and (if small) every input in hexfloat.
nlohmann::json case_to_json(const LayerNormCase& c);
/// case_to_json without the inputs, from the case's identity alone (no regeneration): dtype, shape,
/// eps, generator, seed and digest.
nlohmann::json case_identity_json(DType dtype, int64_t rows, int64_t n, double eps, const std::string& generator, uint64_t seed,
                                  uint64_t digest);
/// Rebuilds a case from case_to_json output; throws std::invalid_argument if inputs are absent
/// or malformed.
LayerNormCase case_from_json(const nlohmann::json& j);

/// A block case: shapes, eps, generator, seed, digest, and (if x, g, W, b and dy together hold at
/// most kInlineCaseLimit values) every input in hexfloat.
nlohmann::json block_case_to_json(const RmsBlockCase& c);
/// Rebuilds a block case; throws std::invalid_argument if inputs are absent or malformed.
RmsBlockCase block_case_from_json(const nlohmann::json& j);

/// A contraction case: dtype, shapes, eps, generator, seed, and (if the block and inputs hold
/// at most kInlineCaseLimit values) every parameter and input in hexfloat.
nlohmann::json contraction_case_to_json(const ContractionCase& c);

}  // namespace normcheck
