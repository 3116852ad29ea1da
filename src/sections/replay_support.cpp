#include "sections/replay_support.hpp"

#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "generators/generators.hpp"
#include "io/case_json.hpp"
#include "io/json_input.hpp"
#include "report/report.hpp"
#include "suite/invariance.hpp"
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
  std::printf("%s\n", same ? "replay reproduces the recorded worst element"
                          : "replay DIFFERS from the recorded worst element (nondeterministic across runs, or not the recorded build)");
  return same ? kExitOk : kExitCheckFailed;
}

int report_repeat(Op op, const KernelOutputs& first, const KernelOutputs& second, int64_t n) {
  if (!first.failure.empty() || first.skipped) return kExitOk;  // the first call's failure is the replay's verdict
  if (!second.failure.empty() || second.skipped) {
    std::printf("NONDETERMINISTIC: call 1 gave outputs, call 2 %s\n", second.skipped ? "declined the case" : ("failed: " + second.failure).c_str());
    return kExitCheckFailed;
  }
  const std::optional<InvarianceDifference> d = repeat_difference(op, first, "call 1", second, "call 2 (fresh buffers)", n);
  if (!d) {
    std::printf("second call: every output bit-identical (deterministic on this case)\n");
    return kExitOk;
  }
  std::printf("NONDETERMINISTIC: output %s %s differs between %s and %s\n", d->output.c_str(),
              d->row < 0 ? fmt::format("element {}", d->col).c_str() : fmt::format("row {} col {}", d->row, d->col).c_str(),
              d->config_a.c_str(), d->config_b.c_str());
  print_value_line("call 1", d->a);
  print_value_line("call 2", d->b);
  return kExitCheckFailed;
}

/// The worst case's inputs: inline when present, else regenerated from its seed and checked by digest.
LayerNormCase per_op_worst_case(const nlohmann::json& report, const nlohmann::json& wc, DType dtype) {
  LayerNormCase c;
  if (wc.contains("x")) {
    c = case_from_json(wc);
  } else {
    const RunConfig cfg = config_from_report(report);
    c = gen::make_layernorm_case(wc.at("generator").get<std::string>(), dtype, parse_decimal_u64(wc.at("case_seed").get<std::string>(), "case_seed"),
                                 cfg.shape);
    c.eps = parse_hexfloat(wc.at("eps").get<std::string>());
  }
  if (std::to_string(case_digest(c)) != wc.at("digest").get<std::string>())
    throw std::invalid_argument("case inputs do not match the recorded digest (edited report or other build)");
  if (auto err = validate_case(c, true)) throw std::invalid_argument("invalid case in report: " + *err);
  return c;
}

}  // namespace normcheck::sections
