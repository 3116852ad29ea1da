#pragma once
/// What CI reads of a nightly comparison (issue 42 item 4): the JUnit testsuite of a diff and the
/// summary line with the nightly verdict, so that `run --diff BASE --junit FILE --summary-json`
/// says FAILED on a night that regressed, compared nothing or lost records, as `normcheck diff` does.
#include <string>

#include <nlohmann/json.hpp>

#include "nightly/diff.hpp"
#include "report/ci_output.hpp"

namespace normcheck::nightly {

/// The testsuite "nightly_diff": one case "comparison against BASE" (failing when nothing was compared
/// or records were removed without allow_removed) and one failing case per new failure, regression and
/// (unless allowed) removed record.
JunitSuite diff_junit_suite(const DiffResult& d, const std::string& base_name);

/// summary_line(report) with "passed" the nightly verdict (the run passed and the diff passed),
/// "run_passed" the run's own and "diff": {passed, verdict, compared, counts}.
nlohmann::json summary_line_with_diff(const nlohmann::json& report, const std::string& report_path, const DiffResult& d);

}  // namespace normcheck::nightly
