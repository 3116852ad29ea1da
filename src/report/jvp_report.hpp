#pragma once
/// The JVP section of the report, written from its suite's result.
#include <string>

#include <nlohmann/json.hpp>

#include "suite/jvp_suite.hpp"

namespace normcheck {

nlohmann::json jvp_suite_json(const JvpSuiteConfig& cfg, const JvpSuiteResult& r, const std::string& report_path);

}  // namespace normcheck
