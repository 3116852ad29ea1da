#include "report/schema_check.hpp"

#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "io/json_input.hpp"

namespace normcheck {
namespace {

using json = nlohmann::json;

/// A value as a reader sees it in an error line: short, printable.
std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return printable(s);
}

std::string kind_of(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer (" + shown(v) + ")";
  if (v.is_number()) return "a number (" + shown(v) + ")";
  if (v.is_string()) return "a string (" + shown(v) + ")";
  if (v.is_boolean()) return "a boolean (" + shown(v) + ")";
  if (v.is_null()) return "null";
  return v.is_array() ? "an array" : "an object";
}

/// A float that is a whole number int64 can hold (1.98e48 is whole but cannot be converted: UB).
bool integral_in_int64(double d) { return d >= -0x1p63 && d < 0x1p63 && std::trunc(d) == d; }

bool has_type(const json& v, const std::string& type) {
  if (type == "integer") return v.is_number_integer() || v.is_number_unsigned() || (v.is_number_float() && integral_in_int64(v.get<double>()));
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "boolean") return v.is_boolean();
  return type == "null" && v.is_null();
}

std::string pointer_token(const std::string& key) {
  std::string t;
  for (const char c : key) t += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return t;
}

/// What a schema accepts, in words, for a oneOf none of whose branches matched.
std::string expectation(const json& schema, const json& root);

class Checker {
 public:
  Checker(const json& root, SchemaMode mode) : root_(root), strict_(mode == SchemaMode::strict) {}

  std::optional<SchemaViolation> check(const json& v, const json& schema, const std::string& at) const {
    const json& s = resolved(schema);
    if (!s.is_object()) return std::nullopt;
    if (s.contains("oneOf")) return one_of(v, s.at("oneOf"), at);
    if (s.contains("type")) {
      const json& t = s.at("type");
      bool ok = false;
      std::string names;
      for (const json& name : t.is_array() ? t : json::array({t})) {
        ok = ok || has_type(v, name.get<std::string>());
        names += (names.empty() ? "" : " or ") + name.get<std::string>();
      }
      if (!ok) return SchemaViolation{at, fmt::format("must be {} {}; is {}", article(names), names, kind_of(v)), true};
    }
    if (s.contains("enum")) {
      bool ok = false;
      for (const json& e : s.at("enum")) ok = ok || e == v;
      if (!ok) return SchemaViolation{at, fmt::format("must be one of {}; is {}", listed(s.at("enum")), shown(v))};
    }
    if (s.contains("const") && s.at("const") != v)
      return SchemaViolation{at, fmt::format("must be {}; is {}", shown(s.at("const")), shown(v))};
    if (v.is_number()) {
      if (s.contains("minimum") && v.get<double>() < s.at("minimum").get<double>())
        return SchemaViolation{at, fmt::format("must be >= {}; is {}", shown(s.at("minimum")), shown(v))};
      if (s.contains("exclusiveMinimum") && !(v.get<double>() > s.at("exclusiveMinimum").get<double>()))
        return SchemaViolation{at, fmt::format("must be > {}; is {}", shown(s.at("exclusiveMinimum")), shown(v))};
    }
    if (v.is_array()) return array(v, s, at);
    if (v.is_object()) return object(v, s, at);
    return std::nullopt;
  }

  const json& resolved(const json& schema) const {
    if (!schema.is_object()) return schema;
    const auto cached = resolved_.find(&schema);  // a hexfloat array refers to its item's schema a million times
    if (cached != resolved_.end()) return *cached->second;
    const json* s = &schema;
    for (int hops = 0; s->is_object() && s->contains("$ref") && hops < 16; ++hops) {
      const std::string ref = s->at("$ref").get<std::string>();
      if (ref.rfind("#/", 0) != 0) throw std::logic_error("report schema: only local $ref is supported: " + ref);
      s = &root_.at(json::json_pointer(ref.substr(1)));
    }
    resolved_.emplace(&schema, s);
    return *s;
  }

 private:
  static std::string article(const std::string& names) {
    return names.find_first_of("aeiou") == 0 ? "an" : "a";
  }

  /// A schema that asks only for a string (a pattern is not checked here).
  static bool plain_strings(const json& s) {
    if (!s.is_object() || !s.contains("type") || s.at("type") != "string") return false;
    for (const auto& [key, value] : s.items())
      if (key != "type" && key != "pattern" && key != "description") return false;
    return true;
  }

  static std::string listed(const json& values) {
    std::string s;
    for (const json& e : values) s += (s.empty() ? "" : ", ") + shown(e);
    return s;
  }

  std::optional<SchemaViolation> one_of(const json& v, const json& branches, const std::string& at) const {
    std::optional<SchemaViolation> deepest;
    std::string accepted;
    for (const json& b : branches) {
      auto err = check(v, b, at);
      if (!err) return std::nullopt;
      // The branch that got furthest into the value says most (the case object's missing field, not
      // "must be null"): a deeper pointer, or at the same depth a value of the branch's type.
      const auto depth = [&at](const SchemaViolation& e) { return 2 * (e.pointer.size() - at.size()) + (e.type_mismatch ? 0 : 1); };
      if (!deepest || depth(*err) > depth(*deepest)) deepest = err;
      accepted += (accepted.empty() ? "" : " or ") + expectation(b, root_);
    }
    if (deepest && (deepest->pointer.size() > at.size() || !deepest->type_mismatch)) return deepest;
    return SchemaViolation{at, fmt::format("must be {}; is {}", accepted, kind_of(v))};
  }

  std::optional<SchemaViolation> array(const json& v, const json& s, const std::string& at) const {
    if (s.contains("maxItems") && v.size() > s.at("maxItems").get<size_t>())
      return SchemaViolation{at, fmt::format("has {} items, at most {} allowed", v.size(), s.at("maxItems").get<size_t>())};
    if (!s.contains("items")) return std::nullopt;
    if (plain_strings(resolved(s.at("items")))) {  // hexfloat arrays, the bulk of a report: one test per item
      for (size_t i = 0; i < v.size(); ++i)
        if (!v[i].is_string())
          return SchemaViolation{at + "/" + std::to_string(i), "must be a string; is " + kind_of(v[i]), true};
      return std::nullopt;
    }
    for (size_t i = 0; i < v.size(); ++i)
      if (auto err = check(v[i], s.at("items"), at + "/" + std::to_string(i))) return err;
    return std::nullopt;
  }

  std::optional<SchemaViolation> object(const json& v, const json& s, const std::string& at) const {
    if (strict_ && s.contains("required"))
      for (const json& key : s.at("required"))
        if (!v.contains(key.get<std::string>()))
          return SchemaViolation{at, fmt::format("misses the required field \"{}\"", printable(key.get<std::string>()))};
    const json* props = s.contains("properties") ? &s.at("properties") : nullptr;
    for (const auto& [key, value] : v.items()) {
      const std::string where = at + "/" + pointer_token(key);
      if (props && props->contains(key)) {
        if (auto err = check(value, props->at(key), where)) return err;
      } else if (s.contains("additionalProperties")) {
        const json& extra = s.at("additionalProperties");
        if (strict_ && extra.is_boolean() && !extra.get<bool>())
          return SchemaViolation{at, fmt::format("has a field the schema does not know: \"{}\"", printable(key))};
        if (extra.is_object())
          if (auto err = check(value, extra, where)) return err;
      }
    }
    return std::nullopt;
  }

  const json& root_;
  bool strict_;
  mutable std::unordered_map<const json*, const json*> resolved_;
};

std::string expectation(const json& schema, const json& root) {
  const json& s = Checker(root, SchemaMode::strict).resolved(schema);
  if (!s.is_object()) return "anything";
  std::string what = s.contains("type") ? s.at("type").dump() : "a value";
  if (what.size() > 1 && what.front() == '"') what = what.substr(1, what.size() - 2);
  if (s.contains("enum")) {
    std::string values;
    for (const json& e : s.at("enum")) values += (values.empty() ? "" : ", ") + e.dump();
    return "one of " + values;
  }
  if (s.contains("minimum")) what += " >= " + s.at("minimum").dump();
  return (what.find_first_of("aeiou") == 0 ? "an " : "a ") + what;
}

}  // namespace

const json& report_schema() {
  static const json schema = json::parse(embedded_report_schema());
  return schema;
}

std::optional<SchemaViolation> first_schema_violation(const json& value, const json& schema, SchemaMode mode) {
  return Checker(schema, mode).check(value, schema, "");
}

void check_report_schema(const json& report, const std::string& file) {
  if (!report.is_object() || !report.contains("tool") || report.at("tool") != "normcheck")
    throw std::invalid_argument(fmt::format("'{}' is not a normcheck report (no \"tool\": \"normcheck\")", printable(file)));
  const auto err = first_schema_violation(report, report_schema(), SchemaMode::present_fields);
  if (!err) return;
  throw std::invalid_argument(fmt::format("'{}' is malformed at {}: {}", printable(file), err->pointer.empty() ? "/" : err->pointer,
                                          err->what));
}

json read_report_file(const std::string& path) {
  json report = read_json_file(path);
  check_report_schema(report, path);
  return report;
}

}  // namespace normcheck
