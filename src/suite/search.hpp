#pragma once
/// Worst-case search for tightness (docs/bounds.md section 9): random restarts from the row
/// generators, then hill climbing over the storage dtype's bit patterns, maximizing the largest
/// |error| / own a priori bound over a case's outputs. Seeded and single-threaded: reproducible.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "generators/corpus.hpp"

namespace normcheck {

struct SearchConfig {
  Op op = Op::layernorm_forward;
  std::string variant = "two_pass";
  DType dtype = DType::f32;
  int64_t rows = 2, n = 32;
  uint64_t seed = 1;
  int restarts = 6;
  int iterations = 300;  ///< hill-climbing steps per restart
  std::string output;    ///< maximize this output's ratio ("y", "dx", "dgamma", "dbeta"); empty: all
};

struct SearchResult {
  CorpusEntry best;      ///< the worst case found, with its ratio
  int64_t evaluations = 0;
  std::string output;    ///< which output reached the best ratio
};

/// Runs the search for one (op, variant, dtype, shape).
SearchResult search_worst_case(const SearchConfig& cfg);

/// The own-bound ratio of one case: max over outputs (or only `only_output` when not empty) of
/// |error| / bound (0 where void); `output` receives the output that reached it.
double own_bound_ratio(Op op, const std::string& variant, const LayerNormCase& c, std::string* output = nullptr,
                       const std::string& only_output = "");

}  // namespace normcheck
