#include "sections/replay_support.hpp"

#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "io/case_json.hpp"
#include "sections/options.hpp"

namespace normcheck::sections {

const nlohmann::json& record_with_worst_case(const nlohmann::json* records, int64_t index, const std::string& what) {
  if (records == nullptr) throw std::invalid_argument(fmt::format("the report has no {}s", what));
  if (index < 0 || index >= static_cast<int64_t>(records->size()))
    throw std::invalid_argument(fmt::format("{} {} out of range (report has {})", what, index, records->size()));
  const nlohmann::json& rec = records->at(static_cast<size_t>(index));
  if (!rec.is_object() || !rec.contains("worst_case") || rec.at("worst_case").is_null())
    throw std::invalid_argument(fmt::format("{} {} has no worst case (no case ran)", what, index));
  return rec;
}

void print_value_line(const char* label, double v) { std::printf("  %-8s %-26s %.17g\n", label, hexfloat(v).c_str(), v); }

int report_replay(const OutputJudgement& j, const nlohmann::json& recorded) {
  const WorstElement& w = j.worst;
  std::printf("worst element %lld (recorded), this replay's worst %lld, max err/bound %.6g, max ulp %.6g\n",
              static_cast<long long>(recorded.at("index").get<int64_t>()), static_cast<long long>(w.index), j.acc.max_bound_ratio(),
              j.acc.max_ulp());
  print_value_line("kernel", w.got);
  print_value_line("oracle", w.ref.approx());
  print_value_line("bound", w.bound);
  const bool same = hexfloat(w.got) == recorded.at("kernel").get<std::string>() && w.index == recorded.at("index").get<int64_t>();
  std::printf("%s\n", same ? "replay reproduces the recorded worst element" : "replay DIFFERS from the recorded worst element");
  return same ? kExitOk : kExitCheckFailed;
}

}  // namespace normcheck::sections
