// libFuzzer target: reading a report (replay, diff, merge, render): the nesting pre-scan, the parse,
// the error line, and the readers of a record's numbers and inline case.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "io/case_json.hpp"
#include "io/json_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (normcheck::json_nesting_depth(text) > normcheck::kMaxJsonDepth) return 0;  // refused before parsing
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    (void)normcheck::describe_input_error("fuzz.json", e);
    return 0;
  }
  if (!j.is_object() || !j.contains("records") || !j.at("records").is_array()) return 0;
  for (const nlohmann::json& r : j.at("records")) {
    if (!r.is_object()) continue;
    for (const char* field : {"max_ulp", "rms_ulp", "max_bound_ratio"})
      if (r.contains(field)) (void)normcheck::json_number_value(r.at(field));
    try {
      if (r.contains("worst_case") && r.at("worst_case").is_object()) (void)normcheck::case_from_json(r.at("worst_case"));
    } catch (const std::exception& e) {
      (void)normcheck::describe_input_error("fuzz.json", e);
    }
  }
  return 0;
}
