#include "sections/section.hpp"

#include <algorithm>
#include <cstdio>

namespace normcheck::sections {

bool PlanInputs::names_any(const std::vector<std::string_view>& ops) const {
  return std::any_of(options.ops.begin(), options.ops.end(),
                     [&](const std::string& op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); });
}

const nlohmann::json* Section::records(const nlohmann::json& report) const {
  if (!report.is_object()) return nullptr;
  const std::string k(key());
  const nlohmann::json* holder = k == "records" ? &report : (report.contains(k) ? &report.at(k) : nullptr);
  if (holder == nullptr || !holder->is_object() || !holder->contains("records")) return nullptr;
  const nlohmann::json& r = holder->at("records");
  return r.is_array() ? &r : nullptr;
}

int Section::replay(const ReplayOptions&, int64_t) const {
  std::fprintf(stderr, "normcheck: error: records of section '%.*s' cannot be replayed\n", static_cast<int>(key().size()), key().data());
  return kExitBadInput;
}

const Section* section_by_key(std::string_view key) {
  for (const Section* s : registry())
    if (s->key() == key) return s;
  return nullptr;
}

const Section* section_by_op(std::string_view op) {
  for (const Section* s : registry()) {
    const std::vector<std::string_view> ops = s->ops();
    if (std::find(ops.begin(), ops.end(), op) != ops.end()) return s;
  }
  return nullptr;
}

}  // namespace normcheck::sections
