#pragma once
/// The grouped-norm section of the report, written from its suite's result.
#include <string>

#include <nlohmann/json.hpp>

#include "suite/grouped_suite.hpp"

namespace normcheck {

nlohmann::json grouped_suite_json(const GroupedSuiteConfig& cfg, const GroupedSuiteResult& r, const std::string& report_path);

}  // namespace normcheck
