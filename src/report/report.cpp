#include "report/report.hpp"

#include "report/shard_items.hpp"

#include "report/record_header.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/shell_quote.hpp"
#include "oracles/certified_layernorm.hpp"
#include "io/case_json.hpp"
#include "suite/failure_json.hpp"

#include "report/version.hpp"
#include "io/json_input.hpp"
#include "git_revision.h"  // generated at build time (cmake/git_revision.cmake)
#ifndef NORMCHECK_CXX_FLAGS
#define NORMCHECK_CXX_FLAGS "unknown"
#endif

namespace normcheck {
namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

}  // namespace

const char* expectation_name(Expectation e) { return e == Expectation::must_pass ? "must_pass" : "report_only"; }

namespace {

std::string verdict(const Record& r) {
  // A plugin's own arithmetic is unknown: its only bound is the contract, and failing it is "fail".
  const bool external = is_external_kernel_name(r.key.kernel);
  // A call that crashed, hung, returned an error or no readable output is not an accuracy result.
  if (r.cases > 0 && r.kernel_failures > 0) return "kernel_failure";
  if (r.cases > 0 && r.acc.count() > 0 && r.own_failed_cases > 0 && !external) return "own_bound_violated";
  if (r.within_looser_contract()) return "looser_contract";  // failed the two-pass contract, held the Welford one
  return verdict_name(r.cases, r.acc, r.failed(), r.known_weak);
}

/// The contract of an external LayerNorm record (docs/bounds.md section 2.7.5): the one chosen, the
/// bounds measured and the tightest one every case held.
nlohmann::json contract_json(const Record& r) {
  const bool welford = r.bound_id.rfind("LN-WELFORDMERGE", 0) == 0;
  const bool automatic = !r.looser_bound_id.empty();
  nlohmann::json j = {{"chosen", automatic ? "auto" : welford ? "welford" : "two_pass"}, {"bound_id", r.bound_id}};
  std::string held = "none";
  if (r.cases == 0) held = "not_run";
  else if (r.failed_cases == 0) held = welford ? "welford" : "two_pass";
  else if (r.within_looser_contract()) held = "welford";
  j["held"] = held;
  if (automatic) {
    j["looser_bound_id"] = r.looser_bound_id;
    j["looser_failed_cases"] = r.looser_failed_cases;
    j["looser_max_bound_ratio"] = json_number(std::max(0.0, r.looser.max_bound_ratio()));
    j["looser_bound_violations"] = r.looser.bound_violations();
  }
  if (r.within_looser_contract())
    j["note"] = "within the Welford contract (" + r.looser_bound_id + "), not the two-pass one (" + r.bound_id + ")";
  return j;
}

nlohmann::json external_json(const ExternalSpecs& e) {
  nlohmann::json j = {{"plugins", e.plugins}, {"exec", e.exec}, {"serve", e.serve}, {"name", e.name}, {"block_form", e.block_form},
                      {"kernel_timeout", e.timeout_s}, {"serve_startup_timeout", e.serve_startup_s}};
  if (!e.contract.empty()) j["contract"] = e.contract;  // --contract (reports without it stay as they were)
  return j;
}

nlohmann::json config_json(const RunConfig& cfg) {
  nlohmann::json ops = nlohmann::json::array(), dtypes = nlohmann::json::array();
  for (Op op : cfg.ops) ops.push_back(std::string(op_name(op)));
  for (DType d : cfg.dtypes) dtypes.push_back(std::string(dtype_info(d).name));
  nlohmann::json j = {{"suite", cfg.suite},
          {"suite_version", cfg.suite_version},
          {"ops", ops},
          {"variants", cfg.variants},
          {"dtypes", dtypes},
          {"generators", cfg.generators},
          {"cases_per_generator", cfg.cases_per_generator},
          {"seed", std::to_string(cfg.seed)},
          {"shape", {{"rows", cfg.shape.rows}, {"n", cfg.shape.n}, {"max_elements", cfg.shape.max_elements}}},
          {"eps_override", cfg.eps_override ? nlohmann::json(hexfloat(*cfg.eps_override)) : nlohmann::json()}};
  if (cfg.external.any()) j["external"] = external_json(cfg.external);  // built-in runs' reports stay as they were
  return j;
}

/// The JSON of the last worst case regenerated: consecutive records (the kernels and outputs of one
/// dtype and generator) mostly share their worst case, and regenerating and digesting a large case
/// for each of them was the report's single-threaded tail (a 2048 x 4096 case: 60 regenerations).
class WorstCaseInputs {
 public:
  const nlohmann::json& of(const RunConfig& cfg, const std::string& generator, DType dtype, uint64_t seed) {
    if (!valid_ || generator != generator_ || dtype != dtype_ || seed != seed_) {
      LayerNormCase c = gen::make_layernorm_case(generator, dtype, seed, cfg.shape);
      if (cfg.eps_override) c.eps = *cfg.eps_override;
      json_ = case_to_json(c);
      generator_ = generator;
      dtype_ = dtype;
      seed_ = seed;
      valid_ = true;
    }
    return json_;
  }

 private:
  bool valid_ = false;
  std::string generator_;
  DType dtype_ = DType::f32;
  uint64_t seed_ = 0;
  nlohmann::json json_;
};

nlohmann::json worst_case_json(const RunConfig& cfg, const Record& r, size_t record_index,
                               const std::string& report_path, WorstCaseInputs& inputs) {
  if (r.worst.case_index < 0) return nullptr;
  // The inputs inline where the record failed (an accuracy failure, a kernel failure, an own bound
  // violated, no certified element: replayable from the report alone, whatever the build); a passing
  // record, or a known-weak kernel flagged as expected, keeps generator, seed and digest, from which
  // `normcheck replay` regenerates the case and checks it. Only inline inputs regenerate the case
  // here: the rest is the identity the run recorded (a shard writing its records paid a
  // regeneration and digest of a large case per record otherwise).
  const std::string v = verdict(r);
  const bool inline_inputs = is_failing_verdict(v) || v == "uncertified";
  const WorstCase& w = r.worst;
  nlohmann::json j = inline_inputs && w.rows * w.n <= kInlineCaseLimit
                         ? inputs.of(cfg, w.generator, r.key.storage, w.case_seed)
                         : case_identity_json(r.key.storage, w.rows, w.n, w.eps, w.generator, w.case_seed, w.digest);
  j["inputs_inline"] = j.contains("x");  // only a regenerated case of at most kInlineCaseLimit elements has them
  j["case_index"] = r.worst.case_index;
  j["element"] = worst_element_json(r.worst.element, row_length_of_output(r.key.output, j.at("n").get<int64_t>()));
  j["replay"] = replay_command_line(report_path, "record", static_cast<int64_t>(record_index));
  return j;
}

nlohmann::json record_json(const RunConfig& cfg, const Record& r, size_t index, const std::string& path, WorstCaseInputs& inputs) {
  const ErrorAccumulator& a = r.acc;
  RecordHeader h{std::string(op_name(r.key.op)), r.key.storage, r.key.accum, r.key.output, r.bound_id, r.expectation,
                 verdict(r), r.cases, r.failed_cases, r.uncertified_cases, std::nullopt};
  if (is_external_kernel_name(r.key.kernel)) h.external = ExternalRecordIdentity{r.key.kernel, std::nullopt, r.kernel_failures, r.first_kernel_failure, r.declined_cases};
  nlohmann::json j = record_header_json(h);
  j.update({{"kernel", r.key.kernel},
          {"variant", r.key.variant},
          {"property", r.key.property},
          {"own_bound_id", r.own_bound_id},
          {"own_bound",
           {{"max_bound_ratio", json_number(r.own.max_rigor_ratio())},
            {"violations", r.own.rigor_violations()},
            {"failed_cases", r.own_failed_cases},
            {"void_bound_elements", r.own.void_bounds() + r.own.envelope_void()}}},
          {"regimes",
           {{"worst_case", regime_names(a.worst_regime())},
            {"cancellation_elements", a.regime_count(0)},
            {"overflow_elements", a.regime_count(1)},
            {"underflow_elements", a.regime_count(2)},
            {"eps_vanishes_elements", a.regime_count(3)},
            {"own_overflow_predicted", r.own.regime_count(1)},
            {"own_overflow_survived", r.own.overflow_survived()}}},
          {"known_weak", r.known_weak},
          {"oracle",
           {{"precision_bits", r.oracle_precision_bits},
            {"certified_max_err_ulps", r.oracle_max_err_ulps},
            {"required_max_err_ulps", kRequiredUlpFraction},
            {"cases_by_precision_bits", oracle_levels_json(r.oracle_levels)}}},
          {"worst_case", worst_case_json(cfg, r, index, path, inputs)}});
  j.update(accumulator_json(a));
  if (is_external_kernel_name(r.key.kernel) && !family_spec(op_family(r.key.op)).contracts.empty()) j["contract"] = contract_json(r);
  j["bias"] = bias_json(r.bias);
  j["points"] = case_points_json(r.points);
  return j;
}

}  // namespace

nlohmann::json oracle_levels_json(const std::map<int, int64_t>& levels) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [bits, cases] : levels) j[std::to_string(bits)] = cases;
  return j;
}

/// Histogram counts up to the last non-empty bucket.
nlohmann::json ulp_histogram_json(const ErrorAccumulator& a) {
  const auto& h = a.ulp_histogram();
  size_t end = h.size();
  while (end > 0 && h[end - 1] == 0) --end;
  return std::vector<int64_t>(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(end));
}

nlohmann::json case_points_json(const std::vector<CasePoint>& points) {
  nlohmann::json j = {{"case_index", nlohmann::json::array()}, {"rows", nlohmann::json::array()}, {"n", nlohmann::json::array()},
                      {"max_ulp", nlohmann::json::array()}, {"max_bound_ratio", nlohmann::json::array()}};
  for (const CasePoint& p : points) {
    j["case_index"].push_back(p.case_index);
    j["rows"].push_back(p.rows);
    j["n"].push_back(p.n);
    j["max_ulp"].push_back(json_number(p.max_ulp));
    j["max_bound_ratio"].push_back(json_number(p.max_bound_ratio));
  }
  return j;
}

nlohmann::json accumulator_json(const ErrorAccumulator& a) {
  return {
          {"ulp_histogram", ulp_histogram_json(a)},
          {"elements", a.count()},
          {"max_ulp", json_number(a.max_ulp())},
          {"max_ulp_normal", json_number(a.max_ulp_normal())},
          {"rms_ulp", json_number(a.rms_ulp())},
          {"max_ulp_distance", a.max_ulp_distance()},
          {"max_abs_error", json_number(a.max_abs())},
          {"max_rel_error", json_number(a.max_rel())},
          {"max_mollified_error", json_number(a.max_mollified())},
          {"normwise_error", json_number(a.normwise())},
          {"max_bound_ratio", json_number(std::max(0.0, a.max_bound_ratio()))},
          {"bound_violations", a.bound_violations()},
          {"void_bound_elements", a.void_bounds()},
          {"loose_elements", a.loose()},
          {"max_envelope_ratio", json_number(a.max_envelope_ratio())},
          {"unjudged_elements", a.unjudged()},
          {"exact_overflow_elements", a.exact_overflows()},
          {"rounding_undecided_elements", a.rounding_undecided()},
          {"uncertified_elements", a.uncertified()},
          {"undecided_elements", a.undecided()},
          {"nonfinite_mismatches", a.nonfinite_mismatches()}};
}

nlohmann::json bias_json(const BiasAccumulator& b) {
  return {{"z", b.z()}, {"threshold", kBiasThreshold}, {"flagged", b.flagged()}, {"elements", b.elements()},
          {"groups", b.groups()}};
}

std::string verdict_name(int64_t cases, const ErrorAccumulator& a, bool failed, bool known_weak) {
  if (cases == 0) return "not_run";
  if (a.count() == 0 && a.unjudged() > 0) return "uncertified";  // no element got a verdict
  if (!failed) return "pass";
  return known_weak ? "flagged" : "fail";
}

nlohmann::json flag_checks_json(const std::vector<FlagCheck>& checks) {
  nlohmann::json flags = nlohmann::json::array();
  for (const FlagCheck& f : checks)
    flags.push_back({{"variant", std::string(f.expectation.variant)},
                     {"storage", f.storage},
                     {"generator", std::string(f.expectation.generator)},
                     {"op", std::string(f.expectation.op)},
                     {"why", std::string(f.expectation.why)},
                     {"failing_records", f.failing_records},
                     {"caught", f.caught()},
                     {"witness_cases", f.witness_cases},
                     {"required_witness_cases", required_witness_cases(f.expectation)},
                     {"required", f.required()}});
  return flags;
}

nlohmann::json suite_section_json(const SuiteSection& s, nlohmann::json records, nlohmann::json comparison) {
  nlohmann::json dtypes = nlohmann::json::array();
  for (DType d : s.dtypes) dtypes.push_back(std::string(dtype_info(d).name));
  return {{"config",
           {{"dtypes", dtypes},
            {"generators", s.generators},
            {"cases_per_generator", s.cases_per_generator},
            {"seed", std::to_string(s.seed)}}},
          {"passed", s.passed},
          {"cases_planned", s.cases_planned},
          {"cases_done", s.cases_done},
          {"records", std::move(records)},
          {"comparison", std::move(comparison)}};
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string record_label(const RecordKey& k) {
  return std::string(op_name(k.op)) + "/" + k.output + " " + k.variant + " " +
         std::string(dtype_info(k.storage).name) + "(acc " + std::string(dtype_info(k.accum).name) + ") " +
         k.property;
}

std::string replay_command_line(const std::string& report_path, const char* option, int64_t index) {
  return "normcheck replay --report " + shell_quote(report_path) + " --" + option + " " + std::to_string(index);
}

nlohmann::json report_header(const RunConfig& cfg, const RunMetadata& meta) {
  const RunResult none;
  return {{"schema_version", kReportSchemaVersion},
          {"tool", "normcheck"},
          {"run",
           {{"complete", !none.interrupted},
            {"passed", run_passed(none)},
            {"shard", cfg.shard.sharded() ? nlohmann::json{{"index", cfg.shard.index},
                                                           {"count", cfg.shard.count},
                                                           {"balanced_by", cfg.shard.measured_balance ? "measured" : "estimates"},
                                                           {"owner_digest", cfg.shard.owner_digest}}
                                          : nlohmann::json()},
            {"cases_planned", none.cases_planned},
            {"cases_done", none.cases_done},
            {"start_time", meta.start_time},
            {"end_time", meta.end_time},
            {"command_line", meta.command_line},
            {"threads", cfg.threads},
            {"git_revision", NORMCHECK_GIT_REVISION},
            {"version", tool_version()},
            {"compiler", std::string("g++ ") + __VERSION__},
            {"flags", NORMCHECK_CXX_FLAGS},
            {"cpu", cpu_model()},
            {"oracle",
             {{"method", "MPFI interval enclosure with precision escalation"},
              {"precisions_bits", {168, 500, 1331}},
              {"max_precision_bits_used", none.max_oracle_precision_bits},
              {"required_max_err_ulps", kRequiredUlpFraction}}}}},
          {"config", config_json(cfg)},
          {"records", nlohmann::json::array()},
          {"records_passed", records_passed(none)},
          {"flag_checks", flag_checks_json(none.flag_checks)}};
}

void write_per_op_section(nlohmann::json& report, const RunConfig& cfg, const RunResult& r, const std::string& report_path) {
  nlohmann::json records = nlohmann::json::array();
  WorstCaseInputs inputs;
  for (size_t i = 0; i < r.records.size(); ++i) records.push_back(record_json(cfg, r.records[i], i, report_path, inputs));
  report["records"] = std::move(records);
  report["records_passed"] = records_passed(r);
  report["flag_checks"] = flag_checks_json(r.flag_checks);
  report["run"]["complete"] = !r.interrupted;
  report["run"]["passed"] = run_passed(r);
  report["run"]["cases_planned"] = r.cases_planned;
  report["run"]["cases_done"] = r.cases_done;
  report["run"]["oracle"]["max_precision_bits_used"] = r.max_oracle_precision_bits;
  if (cfg.shard.sharded()) report["shard_items"] = nightly::shard_items_json(r.shard_items);  // what `merge` folds
}

RunConfig config_from_report(const nlohmann::json& report) {
  const auto& c = report.at("config");
  RunConfig cfg;
  cfg.suite = c.at("suite").get<std::string>();
  cfg.suite_version = c.value("suite_version", 1);
  cfg.seed = parse_decimal_u64(c.at("seed").get<std::string>(), "seed");
  cfg.shape.rows = c.at("shape").at("rows").get<int64_t>();
  cfg.shape.n = c.at("shape").at("n").get<int64_t>();
  cfg.shape.max_elements = c.at("shape").at("max_elements").get<int64_t>();
  for (const auto& op : c.value("ops", nlohmann::json::array()))
    if (const auto parsed = parse_op(op.get<std::string>())) cfg.ops.push_back(*parsed);
  for (const auto& d : c.value("dtypes", nlohmann::json::array()))
    if (const auto parsed = parse_dtype(d.get<std::string>())) cfg.dtypes.push_back(*parsed);
  cfg.variants = c.value("variants", std::vector<std::string>{});
  cfg.generators = c.value("generators", std::vector<std::string>{});
  cfg.cases_per_generator = c.value("cases_per_generator", cfg.cases_per_generator);
  if (!c.at("eps_override").is_null()) cfg.eps_override = parse_hexfloat(c.at("eps_override").get<std::string>());
  if (c.contains("external") && c.at("external").is_object()) {
    const auto& e = c.at("external");
    cfg.external.plugins = e.value("plugins", std::vector<std::string>{});
    cfg.external.exec = e.value("exec", std::string());
    cfg.external.serve = e.value("serve", std::string());
    cfg.external.name = e.value("name", std::string("exec"));
    cfg.external.block_form = e.value("block_form", std::string());
    cfg.external.contract = e.value("contract", std::string());
    cfg.external.timeout_s = e.value("kernel_timeout", 10.0);
    cfg.external.serve_startup_s = e.value("serve_startup_timeout", 120.0);
  }
  return cfg;
}

}  // namespace normcheck
