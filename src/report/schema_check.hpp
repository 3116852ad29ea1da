#pragma once
/// Reports checked against their schema (reports/schema/report.v1.schema.json, compiled in) when a
/// command reads them (replay, diff, merge, render): a malformed or tampered field is refused in one
/// line naming the file and the field's JSON pointer ("'r.json' is malformed at /records/3/max_ulp:
/// must be a number >= 0 or one of "inf", "nan"; is an array") before any field is used.
///
/// The checker implements the draft-07 keywords the schema uses: type, enum, const, minimum,
/// exclusiveMinimum, maxItems, required, properties, additionalProperties, items, oneOf and local
/// $ref. `pattern` is not checked here (a regex per hexfloat string would cost seconds on a nightly
/// report); the schema tests check it with python3-jsonschema, and the readers parse the strings.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace normcheck {

/// The schema's text, embedded at build time (cmake/embed_schema.cmake).
std::string_view embedded_report_schema();

struct SchemaViolation {
  std::string pointer;  ///< JSON pointer of the offending value ("" is the document)
  std::string what;     ///< "must be ...; is ..."
  bool type_mismatch = false;  ///< the value has none of the types the schema allows there
};

/// strict: every keyword. present_fields: the fields a value has must have the schema's types, values
/// and ranges, but fields may be missing and unknown ones are allowed (what commands reading a report
/// check: render shows sections it does not know, diff and render take hand-trimmed reports).
enum class SchemaMode { strict, present_fields };

/// The first violation of `schema` (a draft-07 subset, see above) by `value`, depth first; none if it
/// conforms.
std::optional<SchemaViolation> first_schema_violation(const nlohmann::json& value, const nlohmann::json& schema,
                                                      SchemaMode mode = SchemaMode::strict);

/// The report schema, parsed once.
const nlohmann::json& report_schema();

/// Throws std::invalid_argument with one line naming `file` and the field when `report` is not a
/// normcheck report or a field it has does not follow the report schema (SchemaMode::present_fields).
void check_report_schema(const nlohmann::json& report, const std::string& file);

/// read_json_file, then check_report_schema: how a command reads a report it is handed.
nlohmann::json read_report_file(const std::string& path);

}  // namespace normcheck
