#pragma once
/// RapidCheck generators of LayerNorm cases built on our own generators. RapidCheck draws the
/// generator name, the shape and the case seed; shrinking reduces rows and n towards 1 and the
/// seed towards 0, so a failing case shrinks to the smallest shape that still fails.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "generators/generators.hpp"

namespace normcheck::rcgen {

/// Shapes from n = 1 to 8192 and 1 to 512 rows, rows reduced so that rows * n <= max_elements.
inline rc::Gen<LayerNormCase> layernorm_case(DType dt, std::vector<std::string> generators,
                                             int64_t max_elements = 16384) {
  auto n_gen = rc::gen::oneOf(rc::gen::inRange<int64_t>(1, 65), rc::gen::inRange<int64_t>(1, 8193));
  auto rows_gen = rc::gen::oneOf(rc::gen::inRange<int64_t>(1, 9), rc::gen::inRange<int64_t>(1, 513));
  return rc::gen::map(
      rc::gen::tuple(rc::gen::elementOf(generators), rows_gen, n_gen, rc::gen::arbitrary<uint64_t>()),
      [dt, max_elements](const std::tuple<std::string, int64_t, int64_t, uint64_t>& t) {
        const auto& [name, rows, n, seed] = t;
        const int64_t capped_rows = std::max<int64_t>(1, std::min(rows, max_elements / n));
        return gen::make_layernorm_case(name, dt, seed, gen::ShapeRequest{capped_rows, n, max_elements});
      });
}

/// rc::check with at least `cases` successful cases (RC_PARAMS' max_success when larger): for
/// properties whose cases are cheap and whose defects are rare (binade-extreme rows). RC_PARAMS'
/// seed and reproduce strings still apply.
template <class Testable>
bool check_cases(const std::string& description, int cases, Testable&& testable) {
  using namespace rc::detail;
  rc::detail::TestParams params = configuration().testParams;
  params.maxSuccess = std::max(params.maxSuccess, cases);
  std::cerr << "\n- " << description << std::endl;
  TestMetadata metadata;
  metadata.id = description;
  metadata.description = description;
  const auto result = checkProperty(toProperty(std::forward<Testable>(testable)), metadata, params);
  printResultMessage(result, std::cerr);
  std::cerr << std::endl;
  return result.template is<SuccessResult>();
}

}  // namespace normcheck::rcgen
