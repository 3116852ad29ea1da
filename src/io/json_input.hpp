#pragma once
/// Reading JSON a user hands in (reports for replay, diff, merge, render): bounded nesting, and
/// errors that name the file and the field in one printable line.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace normcheck {

/// Deepest nesting a report may have: ours nest 8 levels; 200,000 levels crashed nlohmann's
/// recursive copy and compare (issue 16).
inline constexpr std::size_t kMaxJsonDepth = 64;

/// Nesting depth of the JSON text's arrays and objects (strings skipped); stops counting past `limit`.
std::size_t json_nesting_depth(std::string_view text, std::size_t limit = kMaxJsonDepth + 1);

/// Reads and parses a JSON file; throws std::runtime_error with one line naming the file when it
/// cannot be read, is not JSON, or nests deeper than kMaxJsonDepth. `keep` (nlohmann's parser
/// callback) can drop what the caller does not need while parsing.
nlohmann::json read_json_file(const std::string& path, const nlohmann::json::parser_callback_t& keep = nullptr);

/// `text` with control characters escaped (\n, \t, \x1b ...) and every byte that is not part of a
/// well-formed UTF-8 character escaped as \xNN (invalid bytes, or a character cut in two by a length
/// cap): safe to quote in an error line and to store in a JSON report (issue 48, H1).
std::string printable(std::string_view text);

/// Parses JSON a kernel or a child process wrote (a serve reply, a ready line): nesting deeper than
/// kMaxJsonDepth or text that is not JSON gives a discarded value, never an exception or a recursion
/// that overflows the stack (issue 48, H2).
nlohmann::json parse_untrusted_json(std::string_view text);

/// j as one line of JSON, invalid UTF-8 in its strings replaced by U+FFFD instead of throwing.
std::string dump_untrusted(const nlohmann::json& j);

/// The count `key` of a report object: 0 when absent, else an integer from 0 to 2^53
/// (kMaxPlausibleCount); anything else throws std::invalid_argument naming the field. Reports are
/// untrusted: a crafted count must not overflow the sums merge and render make (issue 48, M3).
int64_t report_count(const nlohmann::json& j, const char* key);

/// Whether `v` is a JSON integer from lo to hi (an unsigned one beyond int64 is not): read an
/// integer from an untrusted file only after this, never through a narrowing get<int>().
bool json_integer_in(const nlohmann::json& v, int64_t lo, int64_t hi);

/// A decimal unsigned 64-bit integer (a seed or a digest as reports write them): digits only, no sign
/// or space, at most 2^64 - 1; anything else throws std::invalid_argument naming `what` (never the
/// bare "stoull" of std::stoull).
uint64_t parse_decimal_u64(const std::string& text, const char* what);

/// Sum of counts read from reports; std::overflow_error where int64 would overflow.
int64_t add_report_counts(int64_t a, int64_t b);

/// One line for an error met while reading `file`: nlohmann's type, range and parse errors lose
/// their "[json.exception...]" tag and gain the file (and the field's JSON pointer where nlohmann
/// names it); other errors are passed through with control characters escaped.
std::string describe_input_error(const std::string& file, const std::exception& e);

}  // namespace normcheck
