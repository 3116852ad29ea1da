#include "io/json_input.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/metrics.hpp"

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

namespace {

/// Length of the well-formed UTF-8 sequence of two to four bytes at text[i] (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or 0.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u; };
  const unsigned b0 = byte(i), b1 = byte(i + 1);
  const auto cont = [&](std::size_t k) { return (byte(k) & 0xc0) == 0x80; };
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const bool second = b0 == 0xe0 ? (b1 >= 0xa0 && b1 <= 0xbf) : b0 == 0xed ? (b1 >= 0x80 && b1 <= 0x9f) : cont(i + 1);
    return second && cont(i + 2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const bool second = b0 == 0xf0 ? (b1 >= 0x90 && b1 <= 0xbf) : b0 == 0xf4 ? (b1 >= 0x80 && b1 <= 0x8f) : cont(i + 1);
    return second && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

void append_escaped_byte(std::string& out, unsigned char u) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", u);
  out += buf;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else if (ch == '\r') out += "\\r";
    else if (u < 0x20 || u == 0x7f) append_escaped_byte(out, u);
    else if (u < 0x80) out += ch;
    else if (const std::size_t len = utf8_sequence_length(text, i); len > 0) {  // a whole character, kept
      out.append(text.substr(i, len));
      i += len - 1;
    } else {  // a byte of no well-formed character (invalid, or a character cut in two): escaped
      append_escaped_byte(out, u);
    }
  }
  return out;
}

nlohmann::json parse_untrusted_json(std::string_view text) {
  if (json_nesting_depth(text) > kMaxJsonDepth) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, false);
}

std::string dump_untrusted(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

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

bool json_integer_in(const nlohmann::json& v, int64_t lo, int64_t hi) {
  if (v.is_number_unsigned()) return hi >= 0 && v.get<uint64_t>() <= static_cast<uint64_t>(hi) && static_cast<int64_t>(v.get<uint64_t>()) >= lo;
  return v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
}

int64_t report_count(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return 0;
  const nlohmann::json& v = j.at(key);
  if (!json_integer_in(v, 0, kMaxPlausibleCount)) throw std::invalid_argument(std::string("field '") + key + "' is not a count from 0 to 2^53: " + printable(dump_untrusted(v).substr(0, 60)));
  return v.get<int64_t>();
}

uint64_t parse_decimal_u64(const std::string& text, const char* what) {
  uint64_t v = 0;
  bool ok = !text.empty() && text.size() <= 20;
  for (const char c : text) {
    if (!ok) break;
    ok = c >= '0' && c <= '9' && !__builtin_mul_overflow(v, uint64_t{10}, &v) && !__builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v);
  }
  if (!ok)
    throw std::invalid_argument(std::string("'") + what + "' must be a decimal integer from 0 to 2^64 - 1, got \"" + printable(text.substr(0, 40)) + "\"");
  return v;
}

int64_t add_report_counts(int64_t a, int64_t b) { return checked_count_sum(a, b, "report count"); }

}  // namespace normcheck
