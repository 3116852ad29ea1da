#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "core/suggest.hpp"
#include "core/bounds.hpp"
#include "properties/generators.hpp"
#include "report/case_json.hpp"
#include "suite/judge.hpp"

namespace normcheck::cli {
namespace {

const KernelEntry* kernel_of(const BoundsOptions& o) {
  const auto op = parse_op(o.op);
  const auto dtype = parse_dtype(o.dtype);
  return op && dtype ? find_kernel(*op, o.variant, *dtype) : nullptr;
}

/// Summary of a bound vector on the sample: max, median, max relative to |value|, void count.
nlohmann::json sample_summary(const TensorBound& b, const std::vector<CertifiedValue>& ref,
                              const OutputJudgement& observed) {
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
          {"first_bounds", hex_array(std::vector<double>(b.bound.begin(), b.bound.begin() + std::min<size_t>(3, b.bound.size())))},
          {"observed_max_error_over_bound", json_number(observed.own.max_rigor_ratio())}};
}

void print_text(const nlohmann::json& j) {
  std::printf("bound %s for %s, kernel %s, storage %s, accumulator %s\n", j["bound_id"].get<std::string>().c_str(),
              j["op"].get<std::string>().c_str(), j["kernel"].get<std::string>().c_str(),
              j["storage"].get<std::string>().c_str(), j["accum"].get<std::string>().c_str());
  std::printf("formula (docs/bounds.md; (+) composes relative errors: a (+) b = a + b + ab):\n");
  for (const auto& line : j["formula"]) std::printf("  %s\n", line.get<std::string>().c_str());
  std::printf("constants (n = %lld, rows = %lld):\n", j["n"].get<long long>(), j["rows"].get<long long>());
  for (const auto& c : j["constants"])
    std::printf("  %-10s = %-24s %.6g  %s\n", c["name"].get<std::string>().c_str(), c["hex"].get<std::string>().c_str(),
                c["value"].get<double>(), c["meaning"].get<std::string>().c_str());
  std::printf("sample (%s, seed %s):\n", j["sample"]["generator"].get<std::string>().c_str(),
              j["sample"]["seed"].get<std::string>().c_str());
  for (const auto& [name, s] : j["sample"]["outputs"].items())
    std::printf("  %-7s max bound %.4g, median %.4g, max bound/|value| %.4g, void %lld/%lld, observed error/bound %s\n",
                name.c_str(), s["max_bound"].get<double>(), s["median_bound"].get<double>(),
                s["max_bound_over_abs_value"].get<double>(), s["void"].get<long long>(), s["elements"].get<long long>(),
                s["observed_max_error_over_bound"].dump().c_str());
}

/// One line naming what of (op, dtype, kernel, generator) is unknown, with a suggestion; empty if all are known.
std::string unknown_part(const BoundsOptions& o) {
  const std::vector<std::string> ops = {"layernorm_forward", "layernorm_backward", "rmsnorm_forward", "rmsnorm_backward"};
  if (!parse_op(o.op)) return fmt::format("unknown op '{}'{}", o.op, did_you_mean(o.op, ops));
  if (!parse_dtype(o.dtype)) return fmt::format("unknown dtype '{}'{}", o.dtype, did_you_mean(o.dtype, dtype_names()));
  if (!kernel_of(o)) {
    std::vector<std::string> variants;
    for (const KernelEntry& k : builtin_kernels())
      if (op_name(k.op) == o.op && dtype_info(k.storage).name == o.dtype) variants.push_back(k.variant);
    return fmt::format("no kernel '{}' for op '{}' and dtype '{}'{} (see normcheck list)", o.variant, o.op, o.dtype,
                       did_you_mean(o.variant, variants));
  }
  if (!gen::is_row_generator(o.generator))
    return fmt::format("unknown generator '{}'{} (see normcheck list)", o.generator, did_you_mean(o.generator, gen::row_generator_names()));
  return "";
}

}  // namespace

int bounds_command(const BoundsOptions& o) {
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
  const BoundModel m = own_bound_model(tolerance_for(*k), *k);
  const bool backward = is_backward(k->op);
  const LayerNormCase c = gen::make_layernorm_case(o.generator, k->storage, o.seed, {o.rows, o.n, o.rows * o.n});
  const auto ref = certified_reference(k->op, c, backward);
  const auto judged = judge_case(*k, c, ref);
  nlohmann::json outputs;
  if (is_rmsnorm(k->op)) {
    if (!backward) {
      outputs["y"] = sample_summary(rmsnorm_forward_bound(c, ref, m), ref.y, judged[0]);
    } else {
      const BackwardBound b = rmsnorm_backward_bound(c, ref, m);
      outputs["dx"] = sample_summary(b.dx, ref.dx, judged[0]);
      outputs["dgamma"] = sample_summary(b.dgamma, ref.dgamma, judged[1]);
    }
  } else if (!backward) {
    outputs["y"] = sample_summary(layernorm_forward_bound(c, ref, m), ref.y, judged[0]);
  } else {
    const BackwardBound b = layernorm_backward_bound(c, ref, m);
    outputs["dx"] = sample_summary(b.dx, ref.dx, judged[0]);
    outputs["dgamma"] = sample_summary(b.dgamma, ref.dgamma, judged[1]);
    outputs["dbeta"] = sample_summary(b.dbeta, ref.dbeta, judged[2]);
  }
  nlohmann::json constants = nlohmann::json::array();
  for (const NamedConstant& nc : bound_constants(m, c.n, c.rows))
    constants.push_back({{"name", nc.name}, {"meaning", nc.meaning}, {"value", nc.value}, {"hex", hexfloat(nc.value)}});
  const nlohmann::json j = {{"bound_id", bound_id(m)}, {"op", o.op}, {"kernel", o.variant},
                            {"storage", std::string(dtype_info(m.storage).name)},
                            {"accum", std::string(dtype_info(m.accum).name)}, {"n", c.n}, {"rows", c.rows},
                            {"formula", bound_formula(m, backward)}, {"constants", constants},
                            {"sample", {{"generator", o.generator}, {"seed", std::to_string(o.seed)}, {"outputs", outputs}}}};
  if (o.json)
    std::printf("%s\n", j.dump(1).c_str());
  else
    print_text(j);
  return kExitOk;
}

}  // namespace normcheck::cli
