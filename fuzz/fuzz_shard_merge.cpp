// libFuzzer target: `normcheck merge` on crafted shard reports (docs/nightly.md, "Shards"). The input
// is the shard reports' texts separated by "\n--SHARD--\n" (at most 4); each is checked against the
// report schema as `merge` reads it, then merged. Beyond "no crash": a refusal is one line
// (std::invalid_argument or std::runtime_error naming the problem, or a JSON field the merge reads
// and the schema leaves open, which `normcheck merge` prints with describe_input_error), and a
// merged report is itself a valid report (the schema holds).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "nightly/merge.hpp"
#include "io/json_input.hpp"
#include "report/schema_check.hpp"

namespace {

constexpr std::string_view kSeparator = "\n--SHARD--\n";

std::vector<std::string> split_shards(std::string_view text) {
  std::vector<std::string> parts;
  while (parts.size() < 3) {
    const size_t at = text.find(kSeparator);
    if (at == std::string_view::npos) break;
    parts.emplace_back(text.substr(0, at));
    text.remove_prefix(at + kSeparator.size());
  }
  parts.emplace_back(text);
  return parts;
}

bool is_one_line(const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<normcheck::nightly::ShardReport> shards;
  try {
    int i = 0;
    for (const std::string& text : split_shards(std::string_view(reinterpret_cast<const char*>(data), size))) {
      const std::string path = "shard" + std::to_string(i++) + ".json";
      const nlohmann::json report = normcheck::parse_untrusted_json(text);
      if (report.is_discarded()) return 0;  // not JSON: merge refuses it before merging
      normcheck::check_report_schema(report, path);
      shards.push_back({path, report});
    }
  } catch (const std::invalid_argument& e) {
    if (!is_one_line(e.what())) __builtin_trap();
    return 0;
  } catch (const std::runtime_error& e) {
    if (!is_one_line(e.what())) __builtin_trap();
    return 0;
  }
  nlohmann::json merged;
  try {
    merged = normcheck::nightly::merge_shards(std::move(shards), "merged.json");
  } catch (const nlohmann::json::exception& e) {
    // a field the schema leaves open and the merge reads: `normcheck merge` names the shards and the
    // field in one line ("'a.json' or 'b.json' is malformed: key 'kernel' not found"), as here
    if (!is_one_line(normcheck::describe_input_error("shard0.json", e))) __builtin_trap();
    return 0;
  } catch (const std::invalid_argument& e) {
    if (!is_one_line(e.what())) __builtin_trap();
    return 0;
  } catch (const std::runtime_error& e) {
    if (!is_one_line(e.what())) __builtin_trap();
    return 0;
  }
  merged["run"]["command_line"] = "normcheck merge";
  normcheck::check_report_schema(merged, "merged.json");  // throws (a finding) when the merge wrote an invalid report
  return 0;
}
