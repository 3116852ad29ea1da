// The JVP sections: "layernorm_jvp", the forward-mode derivative of LayerNorm along tangents of
// x, gamma and beta (LN-JVP-TWOPASS-SEQ), and "rmsnorm_jvp", RMSNorm's along tangents of x and gamma
// (RMS-JVP-SEQ), each judged against its certified JVP; the op's built-in kernels (a sound one and a
// planted one) or one external kernel (ABI v2 NC_LAYERNORM_JVP / NC_RMSNORM_JVP, or the serve op).
#include <cstdio>

#include <fmt/format.h>

#include "report/jvp_report.hpp"
#include "external/plugin.hpp"
#include "external/plugin_v2.hpp"
#include "external/serve_jvp.hpp"
#include "kernels/jvp_registry.hpp"
#include "sections/merge_rules.hpp"
#include "generators/jvp_generators.hpp"
#include "report/schema_check.hpp"
#include "io/json_input.hpp"
#include "report/terminal_summary.hpp"
#include "sections/replay_external.hpp"
#include "sections/replay_support.hpp"
#include "sections/section_support.hpp"
#include "sections/sections.hpp"
#include "suite/suites.hpp"

namespace normcheck::sections {
namespace {

using nlohmann::json;

class JvpRun final : public SectionRun {
 public:
  explicit JvpRun(JvpSuiteConfig cfg) : cfg_(std::move(cfg)), op_(jvp_op_info(cfg_.op)) {}
  int64_t shard_units() const override { return static_cast<int64_t>(cfg_.dtypes.size()); }
  void set_shard(const ShardSpec& shard) override { cfg_.shard = shard; }
  double seconds_per_case() const override { return 1.5e-3; }  // measured on the default suite (docs/nightly.md)
  int64_t planned_cases() const override { return normcheck::planned_cases(cfg_); }
  void run(const std::string&) override { result_ = run_jvp_suite(cfg_); }
  int64_t cases_done() const override { return result_ ? result_->cases_done : 0; }
  bool passed() const override { return result_ && jvp_suite_passed(*result_, report_only()); }
  bool complete() const override { return result_ && !result_->interrupted; }
  int64_t judged_external_elements() const override {
    int64_t n = 0;
    if (result_ && cfg_.external)
      for (const JvpRecord& rec : result_->records) n += rec.acc.count() + rec.kernel_failures;
    return n;
  }
  void write(json& report, const std::string& report_path) const override {
    if (result_) report[std::string(op_.op)] = jvp_suite_json(cfg_, *result_, report_path);
  }
  void print_summary() const override {
    if (result_) print_jvp_summary(*result_, op_.summary_title);
  }

 private:
  bool report_only() const { return cfg_.external && cfg_.external->report_only; }
  JvpSuiteConfig cfg_;
  const JvpOpInfo& op_;
  std::optional<JvpSuiteResult> result_;
};

/// The op's external JVP kernel (a plugin's ABI v2 op or the serve command), one at a time.
std::optional<JvpExternalKernel> external_jvp(const PlanInputs& in, const JvpOpInfo& op) {
  const std::string name(op.op);
  return one_external_kernel<JvpExternalKernel>(
      in, op.op, op.abi_op, [name](const external::PluginInfo& p) { return !external::plugin_jvp_dtypes(p, name).empty(); },
      [name](const external::PluginInfo& p) { return external::plugin_jvp_kernel(p, name); },
      [name](const std::shared_ptr<external::ServePool>& pool) { return external::serve_jvp_kernel(pool, name); });
}

/// The record's case, regenerated from generator, dtype, seed and shape cap, checked against its shape.
gen::JvpCase jvp_case_of(const json& rec) {
  const json& wc = rec.at("worst_case");
  const auto dt = parse_dtype(rec.at("storage").get<std::string>());
  const std::string g = wc.at("generator").get<std::string>();
  if (!dt || std::find(gen::jvp_generator_names().begin(), gen::jvp_generator_names().end(), g) == gen::jvp_generator_names().end())
    throw std::invalid_argument("JVP record names an unknown dtype or generator");
  gen::JvpCase jc = gen::make_jvp_case(g, *dt, parse_decimal_u64(wc.at("case_seed").get<std::string>(), "case_seed"), wc.at("max_elements").get<int64_t>());
  if (jc.c.rows != wc.at("rows").get<int64_t>() || jc.c.n != wc.at("n").get<int64_t>())
    throw std::invalid_argument("regenerated case does not match the recorded shape (edited report or other build)");
  return jc;
}

class JvpSection final : public Section {
 public:
  explicit JvpSection(const JvpOpInfo& op) : op_(op) {}
  std::string_view key() const override { return op_.op; }
  std::vector<std::string_view> ops() const override { return {op_.op}; }

  std::unique_ptr<SectionRun> plan(const PlanInputs& in) const override {
    const RunOptions& o = in.options;
    JvpSuiteConfig cfg = *suite_jvp_config(o.suite);
    cfg.op = std::string(op_.op);
    cfg.dtypes = in.common.dtypes;
    if (o.seed) cfg.seed = *o.seed;
    if (o.jvp_cases) cfg.cases_per_generator = *o.jvp_cases;
    cfg.threads = o.threads;
    if (in.external) {
      cfg.external = external_jvp(in, op_);
      return cfg.external ? std::make_unique<JvpRun>(std::move(cfg)) : nullptr;
    }
    return selected_whole_or_named(in, op_.op) ? std::make_unique<JvpRun>(std::move(cfg)) : nullptr;
  }

  bool merge(const std::vector<nightly::ShardReport>& shards, const std::string& out_path, json& m) const override {
    const std::string key(op_.op);
    const std::vector<const json*> parts = nightly::section_parts(shards, key);
    nightly::require_every_shard(parts, shards, key);
    m[key] = nightly::merge_suite_section(parts, shards, out_path, false);
    return m[key].value("passed", false);
  }

  json suite_row(std::string_view suite) const override {
    const JvpSuiteConfig j = *suite_jvp_config(suite);
    const auto& all = jvp_kernels();
    const auto kernels = std::count_if(all.begin(), all.end(), [&](const JvpKernelInfo& k) { return k.op == op_.op; });
    return {{"section", op_.op}, {"ops", op_.op}, {"kernels", kernels}, {"dtypes", j.dtypes.size()},
            {"generators", j.generators.size()}, {"cases_per_generator", j.cases_per_generator}, {"cases", planned_cases(j)},
            {"shapes", fmt::format("the row generators', rows*n <= {}", j.max_elements)}};
  }

  std::string_view replay_option() const override { return op_.replay_option; }

  int replay(const ReplayOptions& o, int64_t index) const override {
    json rec;
    gen::JvpCase jc;
    JvpKernel kernel;
    try {
      if (!o.dump.empty()) throw std::invalid_argument("--dump writes per-op records (--record) only; a JVP case is regenerated from its seed");
      const json report = read_report_file(o.report);
      rec = record_with_worst_case(records(report), index, "JVP record");
      if (rec.value("op", "") != op_.op) throw std::invalid_argument("the record is not a " + std::string(op_.op) + " record");
      jc = jvp_case_of(rec);
      const std::string name = rec.at("kernel").get<std::string>();
      if (rec.contains("kernel_failures")) {
        kernel = replay_jvp_kernel(report, rec, o);
      } else {
        const auto& all = jvp_kernels();
        if (std::none_of(all.begin(), all.end(), [&](const JvpKernelInfo& k) { return k.name == name && k.op == op_.op; }))
          throw std::invalid_argument("the report names JVP kernel '" + name + "', which this build has not for " + std::string(op_.op));
        kernel = [name](const LayerNormCase& c, const LayerNormTangents& t) { return JvpOutputs{run_jvp_kernel(name, c, t), "", false}; };
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "normcheck: error: %s\n", describe_input_error(o.report, e).c_str());
      return kExitBadInput;
    }
    const JvpJudgement j = judge_jvp(op_.op, jc.c, jc.t, {kernel}).at(0);
    std::printf("JVP record %lld: %s %s, generator %s; case: seed %llu, rows %lld, n %lld; oracle %d bits\n", static_cast<long long>(index),
                rec.at("kernel").get<std::string>().c_str(), dtype_info(jc.c.dtype).name.data(), jc.c.generator.c_str(),
                static_cast<unsigned long long>(jc.c.seed), static_cast<long long>(jc.c.rows), static_cast<long long>(jc.c.n), j.precision_bits);
    if (j.skipped) {
      std::fprintf(stderr, "normcheck: error: the kernel declined the replayed case\n");
      return kExitCheckFailed;
    }
    if (!j.du.kernel_failure.empty()) {
      std::printf("kernel failure: %s\n", j.du.kernel_failure.c_str());
      return kExitCheckFailed;
    }
    return report_replay(j.du, rec.at("worst_case").at("element"));
  }

 private:
  const JvpOpInfo& op_;
};

}  // namespace

const Section& jvp_section() {
  static const JvpSection s(jvp_op_info("layernorm_jvp"));
  return s;
}

const Section& rmsnorm_jvp_section() {
  static const JvpSection s(jvp_op_info("rmsnorm_jvp"));
  return s;
}

}  // namespace normcheck::sections
