#include <algorithm>
#include <functional>
#include <cstdio>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bounds/bounds.hpp"
#include "bounds/bounds_explain.hpp"
#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "core/suggest.hpp"
#include "external/npy.hpp"
#include "generators/generators.hpp"
#include "io/case_json.hpp"
#include "io/json_input.hpp"
#include "ops/op_kernels.hpp"
#include "sections/replay_support.hpp"
#include "suite/judge.hpp"

namespace normcheck::cli {
namespace {

const KernelEntry* kernel_of(const BoundsOptions& o) {
  const auto op = parse_op(o.op);
  const auto dtype = parse_dtype(o.dtype);
  return op && dtype ? find_kernel(*op, o.variant, *dtype) : nullptr;
}

/// Summary of a bound vector on the sample: max, median, max relative to |value|, void count.
nlohmann::json sample_summary(const TensorBound& b, const std::vector<CertifiedValue>& ref, const nlohmann::json& observed) {
  std::vector<double> finite;
  double max_rel = 0;
  int64_t voids = 0;
  for (size_t i = 0; i < b.bound.size(); ++i) {
    if (std::isinf(b.bound[i])) {
      ++voids;
      continue;
    }
    finite.push_back(b.bound[i]);
    const double v = std::fabs(ref[i].approx());
    if (v > 0) max_rel = std::max(max_rel, b.bound[i] / v);
  }
  std::sort(finite.begin(), finite.end());
  return {{"elements", b.bound.size()},
          {"void", voids},
          {"max_bound", finite.empty() ? 0.0 : finite.back()},
          {"median_bound", finite.empty() ? 0.0 : finite[finite.size() / 2]},
          {"max_bound_over_abs_value", max_rel},
          {"bounds", hex_array(b.bound)},
          {"observed_max_error_over_bound", observed}};
}

nlohmann::json terms_json(const std::vector<BoundTerm>& terms) {
  nlohmann::json a = nlohmann::json::array();
  for (const BoundTerm& t : terms)
    a.push_back({{"name", t.name}, {"value", json_number(t.value)}, {"hex", hexfloat(t.value)}, {"meaning", t.value_meaning},
                 {"section", t.section}});
  return a;
}

/// The element to explain: --element when given, else the largest finite bound (the first void one if all are void).
size_t explained_element(const TensorBound& b, const std::optional<int64_t>& element) {
  if (element) return static_cast<size_t>(*element);
  size_t best = 0;
  for (size_t i = 1; i < b.bound.size(); ++i)
    if (std::isfinite(b.bound[i]) && (!std::isfinite(b.bound[best]) || b.bound[i] > b.bound[best])) best = i;
  return best;
}

nlohmann::json explanation_json(const BoundExplanation& e) {
  const double total = e.arithmetic + e.store + e.evaluation_slack;
  const auto share = [total](double part) { return total > 0 ? 100 * part / total : 0.0; };
  return {{"index", e.index}, {"row", e.row}, {"col", e.col}, {"bound", hexfloat(e.bound)}, {"bound_decimal", e.bound},
          {"exact_abs_upper", e.exact_abs}, {"void", e.void_bound},
          {"row_terms", terms_json(e.row_terms)}, {"element_terms", terms_json(e.element_terms)},
          {"arithmetic", {{"value", e.arithmetic}, {"share_percent", share(e.arithmetic)},
                          {"meaning", "e: the error of the computation in the accumulator (sections 2-4, 10)"}}},
          {"store_rounding", {{"value", e.store}, {"share_percent", share(e.store)},
                              {"meaning", "u_s (|exact| + e) + eta_s: the final rounding to the storage dtype (section 2.6)"}}},
          {"evaluation_slack", {{"value", e.evaluation_slack}, {"share_percent", share(e.evaluation_slack)},
                                {"meaning", "the bound's 1e-6 relative safety factor for its own evaluation"}}}};
}

void print_terms(const nlohmann::json& terms) {
  for (const auto& t : terms)
    std::printf("    %-18s = %-24s %-12.6g %s [%s]\n", t["name"].get<std::string>().c_str(), t["hex"].get<std::string>().c_str(),
                t["value"].is_number() ? t["value"].get<double>() : HUGE_VAL, t["meaning"].get<std::string>().c_str(),
                t["section"].get<std::string>().c_str());
}

void print_explanation(const std::string& output, const nlohmann::json& e, const std::string& storage) {
  const std::string where = e["row"].get<int64_t>() < 0 ? fmt::format("column {}", e["col"].get<int64_t>())
                                                        : fmt::format("row {}, column {}", e["row"].get<int64_t>(), e["col"].get<int64_t>());
  std::printf("  %s element %lld (%s): bound %s = %.6g, |exact| <= %.6g\n", output.c_str(), e["index"].get<long long>(), where.c_str(),
              e["bound"].get<std::string>().c_str(), e["bound_decimal"].get<double>(), e["exact_abs_upper"].get<double>());
  if (!e["row_terms"].empty()) {
    std::printf("   the row's statistics:\n");
    print_terms(e["row_terms"]);
  }
  if (!e["element_terms"].empty()) {
    std::printf("   the element's intermediates:\n");
    print_terms(e["element_terms"]);
  }
  if (e["void"].get<bool>()) {
    std::printf("   the bound is void (+inf): overflow predicted or the statistics unresolved (section 5); the envelope judges it\n");
    return;
  }
  std::printf("   the bound, term by term:\n");
  for (const char* part : {"arithmetic", "store_rounding", "evaluation_slack"})
    std::printf("    %-16s %-12.6g %6.2f %%  %s\n", part, e[part]["value"].get<double>(), e[part]["share_percent"].get<double>(),
                e[part]["meaning"].get<std::string>().c_str());
  const double store = e["store_rounding"]["share_percent"].get<double>();
  if (store >= 50)
    std::printf("   for %s storage the output rounding is %.2f %% of the %s bound: the kernel's arithmetic is held to the rest\n",
                storage.c_str(), store, output.c_str());
}

void print_text(const nlohmann::json& j) {
  std::printf("bound %s for %s, kernel %s, storage %s, accumulator %s\n", j["bound_id"].get<std::string>().c_str(),
              j["op"].get<std::string>().c_str(), j["kernel"].get<std::string>().c_str(),
              j["storage"].get<std::string>().c_str(), j["accum"].get<std::string>().c_str());
  if (j.contains("held_to")) {
    std::printf("%s\n", j["held_to"].get<std::string>().c_str());
  } else {
    std::printf("(reports: this kernel's own_bound_id; its records are judged against bound_id %s)\n",
                j["verdict_bound_id"].get<std::string>().c_str());
  }
  std::printf("formula (docs/bounds.md; (+) composes relative errors: a (+) b = a + b + ab):\n");
  for (const auto& line : j["formula"]) std::printf("  %s\n", line.get<std::string>().c_str());
  std::printf("constants (n = %lld, rows = %lld):\n", j["n"].get<long long>(), j["rows"].get<long long>());
  for (const auto& c : j["constants"])
    std::printf("  %-10s = %-24s %.6g  %s\n", c["name"].get<std::string>().c_str(), c["hex"].get<std::string>().c_str(),
                c["value"].get<double>(), c["meaning"].get<std::string>().c_str());
  std::printf("input (%s), eps %s:\n", j["sample"]["input"].get<std::string>().c_str(), j["sample"]["eps"].get<std::string>().c_str());
  for (const auto& [name, s] : j["sample"]["outputs"].items())
    std::printf("  %-7s max bound %.4g, median %.4g, max bound/|value| %.4g, void %lld/%lld, observed error/bound %s\n",
                name.c_str(), s["max_bound"].get<double>(), s["median_bound"].get<double>(),
                s["max_bound_over_abs_value"].get<double>(), s["void"].get<long long>(), s["elements"].get<long long>(),
                s["observed_max_error_over_bound"].dump().c_str());
  std::printf("  (observed: %s)\n", j["observed_by"].get<std::string>().c_str());
  std::printf("explained (the largest bound of each output; --element I for another; every element's bound: --json):\n");
  for (const auto& [name, s] : j["sample"]["outputs"].items()) print_explanation(name, s["explained"], j["storage"].get<std::string>());
}

/// One line naming what of (op, dtype, kernel, generator) is unknown, with a suggestion; empty if all are known.
std::string unknown_part(const BoundsOptions& o) {
  if (!parse_op(o.op)) return fmt::format("unknown op '{}'{}", o.op, did_you_mean(o.op, op_name_list()));
  if (!parse_dtype(o.dtype)) return fmt::format("unknown dtype '{}'{}", o.dtype, did_you_mean(o.dtype, dtype_names()));
  if (!kernel_of(o)) {
    std::vector<std::string> variants;
    for (const KernelEntry& k : builtin_kernels())
      if (op_name(k.op) == o.op && dtype_info(k.storage).name == o.dtype) variants.push_back(k.variant);
    return fmt::format("no kernel '{}' for op '{}' and dtype '{}'{} (see normcheck list)", o.variant, o.op, o.dtype,
                       did_you_mean(o.variant, variants));
  }
  if (!o.output.empty()) {
    const std::vector<std::string>& names = op_outputs(*parse_op(o.op));
    if (std::find(names.begin(), names.end(), o.output) == names.end())
    {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      return fmt::format("op '{}' has no output '{}' (its outputs: {}){}", o.op, o.output, list, did_you_mean(o.output, names));
    }
  }
  if (!gen::is_row_generator(o.generator))
    return fmt::format("unknown generator '{}'{} (see normcheck list)", o.generator, did_you_mean(o.generator, gen::row_generator_names()));
  return "";
}


/// The case the bound is evaluated on: the user's (--input: a case object as in a report's worst_case
/// or `normcheck replay --dump`, hexfloat JSON; or x as .npy with gamma = 1, beta = 0, dy = 1) or a
/// generated sample. Throws std::invalid_argument with one line.
LayerNormCase bounds_case(const BoundsOptions& o, const KernelEntry& k) {
  if (o.input.empty()) return gen::make_layernorm_case(o.generator, k.storage, o.seed, {o.rows, o.n, o.rows * o.n});
  LayerNormCase c;
  if (o.input.size() > 4 && o.input.compare(o.input.size() - 4, 4, ".npy") == 0) {
    c.dtype = k.storage;
    c.rows = o.rows;
    c.n = o.n;
    c.eps = o.eps;
    c.x = external::read_npy(o.input, k.storage, {o.rows, o.n});
    c.gamma.assign(static_cast<size_t>(o.n), 1.0);
    c.beta.assign(static_cast<size_t>(o.n), 0.0);
    if (is_backward(k.op)) c.dy.assign(c.x.size(), 1.0);
  } else {
    try {
      const nlohmann::json j = read_json_file(o.input);
      const nlohmann::json& wc = j.is_object() && j.contains("worst_case") ? j.at("worst_case") : j;
      if (wc.is_object() && !wc.contains("x") && wc.contains("case_seed"))
        throw std::invalid_argument("the record's case is not inline (a passing record keeps its generator and seed): give the report "
                                    "and the record, --input REPORT.json --record K, and bounds regenerates it");
      if (j.is_object() && j.contains("records")) throw std::invalid_argument("this is a report: name one of its records with --record K");
      c = case_from_json(wc);
    } catch (const std::exception& e) {
      throw std::invalid_argument(describe_input_error(o.input, e));
    }
    if (c.dtype != k.storage)
      throw std::invalid_argument(fmt::format("'{}' holds a {} case: give --dtype {}", printable(o.input), dtype_info(c.dtype).name,
                                              dtype_info(c.dtype).name));
  }
  if (const auto bad = validate_case(c, is_backward(k.op))) throw std::invalid_argument(printable(o.input) + ": " + *bad);
  return c;
}

/// A report's record as what `bounds` explains: the options it fixes (op, kernel, dtype, output,
/// the worst element), its case, and for an external kernel's record the kernel's identity (bounds
/// cannot call that kernel: the observed error is the recorded worst element's).
struct RecordSubject {
  BoundsOptions o;
  LayerNormCase c;
  std::optional<KernelEntry> external;
  nlohmann::json worst_element;
  std::string kernel, bound_id;
};

std::string text_at(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_string()) throw std::invalid_argument(fmt::format("the record has no '{}'", key));
  return j.at(key).get<std::string>();
}

RecordSubject record_subject(const BoundsOptions& given) {
  if (given.input.empty()) throw std::invalid_argument("--record K needs --input REPORT.json, the report that holds record K");
  nlohmann::json report;
  try {
    report = read_json_file(given.input);
  } catch (const std::exception& e) {
    throw std::invalid_argument(describe_input_error(given.input, e));
  }
  if (!report.is_object() || !report.contains("records") || !report.at("records").is_array())
    throw std::invalid_argument(fmt::format("--record K needs a report as --input: '{}' has no records array", printable(given.input)));
  const nlohmann::json& rec = sections::record_with_worst_case(&report.at("records"), *given.record, "record");
  RecordSubject s{given, {}, std::nullopt, rec.at("worst_case").value("element", nlohmann::json()), text_at(rec, "kernel"), text_at(rec, "bound_id")};
  const auto fix = [&](const char* option, std::string& field, const std::string& value) {
    if (std::find(given.given.begin(), given.given.end(), option) != given.given.end() && field != value)
      throw std::invalid_argument(fmt::format("record {} is {} {}: {} {} names another (leave it out)", *given.record, option + 2, value, option, field));
    field = value;
  };
  fix("--op", s.o.op, text_at(rec, "op"));
  fix("--dtype", s.o.dtype, text_at(rec, "storage"));
  const std::string output = text_at(rec, "output");
  if (!s.o.output.empty() && s.o.output != output)
    throw std::invalid_argument(fmt::format("record {} is output {}: --output {} names another", *given.record, output, s.o.output));
  s.o.output = output;
  if (!s.o.element && s.worst_element.is_object() && s.worst_element.contains("index")) s.o.element = s.worst_element.at("index").get<int64_t>();
  const std::optional<Op> op = parse_op(s.o.op);
  const std::optional<DType> dt = parse_dtype(s.o.dtype);
  if (!op || !dt) throw std::invalid_argument(fmt::format("record {} has op '{}' and dtype '{}': not a per-op record this build knows", *given.record, s.o.op, s.o.dtype));
  if (is_external_kernel_name(s.kernel)) {
    const std::optional<DType> accum = parse_dtype(text_at(rec, "accum"));
    KernelEntry k{s.kernel, text_at(rec, "variant"), *op, *dt, accum ? *accum : dtype_info(*dt).default_accum, false, {}};
    if (rec.contains("contract") && rec.at("contract").is_object()) {
      const std::string chosen = rec.at("contract").value("chosen", std::string());
      k.contract = chosen == "auto" ? "" : chosen;
    }
    s.external = k;
  } else {
    fix("--kernel", s.o.variant, text_at(rec, "variant"));
  }
  s.c = sections::per_op_worst_case(report, rec.at("worst_case"), *dt);
  return s;
}

/// The bounds of one kernel on one case, explained (text or JSON). `observed(i)` is what output i's
/// "observed error/bound" is, `observed_by` says whose.
int explain_bounds(const BoundsOptions& o, const KernelEntry& k, const LayerNormCase& c, const std::string& input,
                   const std::function<nlohmann::json(size_t, const std::vector<OutputJudgement>&)>& observed, const std::string& observed_by,
                   bool run_kernel) {
  const ToleranceEntry& t = tolerance_for(k);
  const BoundModel m = own_bound_model(t, k);
  const auto ref = certified_reference(k.op, c, is_backward(k.op));
  const std::vector<OutputJudgement> judged = run_kernel ? judge_case(k, c, ref) : std::vector<OutputJudgement>{};
  nlohmann::json outputs;
  const std::vector<TensorBound> bounds = bounds_for(k.op, c, ref, m);
  for (size_t i = 0; i < bounds.size(); ++i) {
    const std::string& name = op_outputs(k.op)[i];
    if (!o.output.empty() && name != o.output) continue;
    const TensorBound& b = bounds[i];
    if (o.element && (*o.element < 0 || static_cast<size_t>(*o.element) >= b.bound.size())) {
      print_error(fmt::format("--element {} is outside {} ({} elements)", *o.element, name, b.bound.size()));
      return kExitBadInput;
    }
    outputs[name] = sample_summary(b, reference_of(ref, name), observed(i, judged));
    outputs[name]["explained"] = explanation_json(explain_bound(c, ref, m, name, b, explained_element(b, o.element)));
  }
  nlohmann::json constants = nlohmann::json::array();
  for (const NamedConstant& nc : bound_constants(m, c.n, c.rows))
    constants.push_back({{"name", nc.name}, {"meaning", nc.meaning}, {"value", nc.value}, {"hex", hexfloat(nc.value)}});
  nlohmann::json j = {{"bound_id", bound_label(m)}, {"verdict_bound_id", bound_label(verdict_bound_model(t, k))},
                            {"op", std::string(op_name(k.op))}, {"kernel", is_external_kernel(k) ? k.kernel : k.variant},
                            {"storage", std::string(dtype_info(m.storage).name)},
                            {"accum", std::string(dtype_info(m.accum).name)}, {"n", c.n}, {"rows", c.rows},
                            {"formula", bound_formula(m, is_backward(k.op))}, {"constants", constants},
                            {"observed_by", observed_by},
                            {"sample", {{"input", input}, {"generator", o.input.empty() ? o.generator : c.generator},
                                        {"seed", std::to_string(o.input.empty() ? o.seed : c.seed)}, {"eps", hexfloat(c.eps)},
                                        {"outputs", outputs}}}};
  if (is_external_kernel(k))
    j["held_to"] = fmt::format("an external kernel is held to this bound as an accuracy target (its contract, docs/bounds.md 2.7.5), not a "
                               "proof about its arithmetic: FMA, sum order and formula need not be the contract's; it must be at least "
                               "this accurate, element by element");
  if (o.json)
    std::printf("%s\n", j.dump(1).c_str());
  else
    print_text(j);
  return kExitOk;
}

/// `bounds --input REPORT --record K`: the record's bound on its own case, at its worst element.
int record_bounds(const BoundsOptions& given) {
  RecordSubject s;
  try {
    s = record_subject(given);
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  const std::string input = fmt::format("{}, record {} (case seed {})", given.input, *given.record, s.c.seed);
  if (s.external) {  // its bound is the contract's; its error is the one the report recorded
    if (const std::string here = bound_label(verdict_bound_model(tolerance_for(*s.external), *s.external)); here != s.bound_id) {
      print_error(fmt::format("record {} was judged by {}; this build's bound for it is {} (another normcheck version)", *given.record, s.bound_id, here));
      return kExitBadInput;
    }
    const nlohmann::json recorded = s.worst_element.is_object() ? s.worst_element.value("bound_ratio", nlohmann::json()) : nlohmann::json();
    return explain_bounds(s.o, *s.external, s.c, input, [&](size_t, const std::vector<OutputJudgement>&) { return recorded; },
                          fmt::format("the record's worst element, {} as the report recorded it (bounds does not call external kernels)", s.kernel),
                          false);
  }
  const KernelEntry* k = kernel_of(s.o);
  if (!k) {
    print_error(unknown_part(s.o));
    return kExitBadInput;
  }
  return explain_bounds(s.o, *k, s.c, input,
                        [](size_t i, const std::vector<OutputJudgement>& j) { return json_number(j[i].own.max_rigor_ratio()); },
                        fmt::format("the record's kernel, builtin {}, run again on the record's case", k->variant), true);
}

}  // namespace

int bounds_command(const BoundsOptions& o) {
  if (o.record) return record_bounds(o);
  if (const std::string unknown = unknown_part(o); !unknown.empty()) {
    print_error(unknown);
    return kExitBadInput;
  }
  const KernelEntry* k = kernel_of(o);
  if (!case_elements(o.rows, o.n)) {
    std::fprintf(stderr, "normcheck: error: --rows %lld x --n %lld exceeds %lld elements per case\n", static_cast<long long>(o.rows),
                 static_cast<long long>(o.n), static_cast<long long>(kMaxCaseElements));
    return kExitBadInput;
  }
  if (!(o.eps > 0 && std::isfinite(o.eps))) {
    print_error("--eps must be a finite number > 0");
    return kExitBadInput;
  }
  LayerNormCase c;
  try {
    c = bounds_case(o, *k);
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  const std::string input = o.input.empty() ? fmt::format("generator {}, seed {}", o.generator, o.seed) : o.input;
  return explain_bounds(o, *k, c, input,
                        [](size_t i, const std::vector<OutputJudgement>& j) { return json_number(j[i].own.max_rigor_ratio()); },
                        fmt::format("the built-in kernel {} run on this input, against this bound", k->variant), true);
}

}  // namespace normcheck::cli
