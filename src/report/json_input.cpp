#include "report/json_input.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace normcheck {

std::size_t json_nesting_depth(std::string_view text, std::size_t limit) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > deepest && (deepest = depth) >= limit) return deepest;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

nlohmann::json read_json_file(const std::string& path, const nlohmann::json::parser_callback_t& keep) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open '" + printable(path) + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  if (json_nesting_depth(text) > kMaxJsonDepth)
    throw std::runtime_error("'" + printable(path) + "' nests arrays and objects deeper than " + std::to_string(kMaxJsonDepth) +
                             " levels: not a normcheck report");
  try {
    return nlohmann::json::parse(text, keep);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(describe_input_error(path, e));
  }
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else if (ch == '\r') out += "\\r";
    else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string describe_input_error(const std::string& file, const std::exception& e) {
  const auto* j = dynamic_cast<const nlohmann::json::exception*>(&e);
  if (j == nullptr) return printable(e.what());
  std::string what = e.what();
  if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) what = what.substr(what.find("] ") + 2);
  // with JSON_DIAGNOSTICS the message starts with the field's JSON pointer: "(/records/3/op) type must be ..."
  std::string field;
  if (!what.empty() && what.front() == '(' && what.find(") ") != std::string::npos) {
    field = what.substr(1, what.find(") ") - 1);
    what = what.substr(what.find(") ") + 2);
  }
  const char* kind = dynamic_cast<const nlohmann::json::parse_error*>(&e) != nullptr ? "is not valid JSON" : "is malformed";
  return "'" + printable(file) + "' " + kind + (field.empty() ? "" : " at field " + printable(field)) + ": " + printable(what);
}

}  // namespace normcheck
