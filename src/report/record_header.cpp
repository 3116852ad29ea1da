#include "report/record_header.hpp"

#include "report/report.hpp"

namespace normcheck {

nlohmann::json record_header_json(const RecordHeader& h) {
  nlohmann::json j = {{"op", h.op},
                      {"storage", std::string(dtype_info(h.storage).name)},
                      {"accum", std::string(dtype_info(h.accum).name)},
                      {"output", h.output},
                      {"bound_id", h.bound_id},
                      {"verdict", h.verdict},
                      {"cases", h.cases},
                      {"failed_cases", h.failed_cases},
                      {"uncertified_cases", h.uncertified_cases}};
  if (h.expectation) j["expectation"] = expectation_name(*h.expectation);
  if (h.external) {
    j["kernel"] = h.external->kernel;
    if (h.external->expectation) j["expectation"] = expectation_name(*h.external->expectation);
    j["kernel_failures"] = {{"cases", h.external->kernel_failures}, {"first", h.external->first_kernel_failure}};
    if (h.external->declined_cases) j["declined_cases"] = *h.external->declined_cases;
  }
  return j;
}

}  // namespace normcheck
