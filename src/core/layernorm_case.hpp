#pragma once
/// One LayerNorm test case: inputs as the exact values of storage-dtype numbers, plus provenance.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"

namespace normcheck {

struct LayerNormCase {
  DType dtype = DType::f32;
  int64_t rows = 0;
  int64_t n = 0;
  double eps = 1e-5;
  std::vector<double> x;      ///< rows*n, row-major, each exactly representable in dtype
  std::vector<double> gamma;  ///< n
  std::vector<double> beta;   ///< n
  std::vector<double> dy;     ///< rows*n output cotangent (backward only; may be empty)
  std::string generator;      ///< generator that produced it, for replay
  uint64_t seed = 0;          ///< case seed the generator was called with
};

/// The case's tensor named `name` (an OpSpec input: x, gamma, beta, dy); throws std::invalid_argument
/// for another name.
const std::vector<double>& case_input(const LayerNormCase& c, std::string_view name);

/// The tangents of a LayerNorm JVP along (x, gamma, beta): dx (rows*n), dgamma and dbeta (n each),
/// exact values of the case's dtype.
struct LayerNormTangents {
  std::vector<double> dx, dgamma, dbeta;
};

/// One clear line when the tangents do not fit the case (sizes, non-finite or unrepresentable values).
std::optional<std::string> validate_tangents(const LayerNormCase& c, const LayerNormTangents& t);

/// Checks shapes, eps > 0, finiteness and representability; returns one line describing the
/// first problem, or nullopt when the case is valid. `need_dy` demands a cotangent.
std::optional<std::string> validate_case(const LayerNormCase& c, bool need_dy);

/// Most elements one tensor of a case may have (16.7 M: rows of 16384 over 1024 rows); a larger
/// shape is refused with a clear message instead of ending in std::bad_alloc.
inline constexpr int64_t kMaxCaseElements = int64_t{1} << 24;

/// a * b when both are >= 1 and the product is at most kMaxCaseElements (no overflow); else nullopt.
std::optional<int64_t> case_elements(int64_t a, int64_t b);

/// 64-bit FNV-1a digest of the case's input bit patterns (shape, eps, x, gamma, beta, dy).
uint64_t case_digest(const LayerNormCase& c);

/// Building blocks of validation and digests, shared by every case type: finite and
/// representable in dt; FNV-1a over words and over exact double bit patterns.
std::optional<std::string> check_values(const std::vector<double>& v, const char* name, DType dt);
void mix(uint64_t& h, uint64_t word);
void mix_values(uint64_t& h, const std::vector<double>& v);

}  // namespace normcheck
