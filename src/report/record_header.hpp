#pragma once
/// The identity and verdict fields every judged record of a report carries (per-op, block,
/// contraction, grouped), written by one function so that the sections agree on names and values:
/// op, storage, accum, output, bound_id, verdict, cases, failed_cases, uncertified_cases, and for an
/// external kernel's record its kernel, expectation and kernel_failures. Section-specific fields
/// (variant, property, kind, regimes, oracle, worst_case ...) are added by each section's writer.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "bounds/tolerance_table.hpp"

namespace normcheck {

/// What an external kernel's record adds: its name, whether its failures count, and its failed calls.
struct ExternalRecordIdentity {
  std::string kernel;  ///< "plugin:<name>", "exec:<name>", "serve:<name>"
  std::optional<Expectation> expectation;  ///< written when the section's records have none of their own
  int64_t kernel_failures = 0;
  std::string first_kernel_failure;
  std::optional<int64_t> declined_cases;  ///< calls declined as unsupported, where the section counts them
};

struct RecordHeader {
  std::string op;
  DType storage = DType::f32, accum = DType::f32;
  std::string output, bound_id;
  std::optional<Expectation> expectation;
  std::string verdict;  ///< "kernel_failure" when an external kernel's calls failed, else the judged verdict
  int64_t cases = 0, failed_cases = 0, uncertified_cases = 0;
  std::optional<ExternalRecordIdentity> external;
};

/// The verdict field: "kernel_failure" when calls failed, else `judged`.
inline std::string record_verdict(int64_t kernel_failures, const std::string& judged) {
  return kernel_failures > 0 ? "kernel_failure" : judged;
}

nlohmann::json record_header_json(const RecordHeader& h);

}  // namespace normcheck
