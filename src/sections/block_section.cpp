// The Linear o RMSNorm block section ("rms_block"): composed and fused-deferred block kernels,
// built-in or external (ABI v2 plugins, serve mode with --block-form), judged per output.
#include <algorithm>
#include <cstdio>
#include <iterator>

#include <fmt/format.h>

#include "external/plugin.hpp"
#include "external/plugin_v2.hpp"
#include "external/serve_block.hpp"
#include "sections/merge_rules.hpp"
#include "oracles/certified_rms_block.hpp"
#include "generators/block_generators.hpp"
#include "core/suggest.hpp"
#include "report/schema_check.hpp"
#include "report/block_report.hpp"
#include "io/case_json.hpp"
#include "report/report.hpp"
#include "report/terminal_summary.hpp"
#include "sections/replay_external.hpp"
#include "sections/replay_support.hpp"
#include "sections/sections.hpp"
#include "suite/suites.hpp"
#include "io/json_input.hpp"

namespace normcheck::sections {
namespace {

using nlohmann::json;

constexpr std::string_view kOp = "linear_rmsnorm";

bool is_block_variant(const std::string& v) {
  const auto& t = builtin_block_kernels();
  return std::any_of(t.begin(), t.end(), [&](const BlockKernelEntry& k) { return k.variant == v; });
}

class BlockRun final : public SectionRun {
 public:
  explicit BlockRun(BlockSuiteConfig cfg) : cfg_(std::move(cfg)) {}
  /// A unit is a (dtype, block generator): merge folds the per-dtype comparison rows again (acc_bytes).
  int64_t shard_units() const override { return static_cast<int64_t>(cfg_.dtypes.size() * cfg_.generators.size()); }
  void set_shard(const ShardSpec& shard) override { cfg_.shard = shard; }
  double seconds_per_case() const override { return 8e-3; }  // measured on the default suite (docs/nightly.md)
  int64_t planned_cases() const override { return normcheck::planned_cases(cfg_); }
  void run(const std::string& journal) override {
    cfg_.journal_path = journal;
    result_ = run_block_suite(cfg_);
  }
  int64_t cases_done() const override { return result_ ? result_->cases_done : 0; }
  bool passed() const override { return result_ && block_suite_passed(*result_); }
  bool complete() const override { return result_ && !result_->interrupted; }
  int64_t judged_external_elements() const override {
    int64_t n = 0;
    if (result_)
      for (const BlockRecord& rec : result_->records)
        if (rec.kernel != "builtin") n += rec.acc.count() + rec.kernel_failures;
    return n;
  }
  void write(json& report, const std::string& report_path) const override {
    if (result_) report["rms_block"] = block_suite_json(cfg_, *result_, report_path);
  }
  void print_summary() const override {
    if (result_) print_block_summary(*result_);
  }

 private:
  BlockSuiteConfig cfg_;
  std::optional<BlockSuiteResult> result_;
};

/// The external block kernels: ABI v2 plugins' (their declared form) and, with --ops linear_rmsnorm,
/// the serve command's (--block-form).
std::vector<BlockKernelEntry> external_blocks(const PlanInputs& in, bool named) {
  const RunOptions& o = in.options;
  const std::vector<DType>& dtypes = in.common.dtypes;
  std::vector<BlockKernelEntry> out;
  if (!o.ops.empty() && !named) return out;
  for (const external::PluginInfo& p : in.external->plugins)
    for (BlockKernelEntry& k : external::plugin_block_kernels(p))
      if (std::find(dtypes.begin(), dtypes.end(), k.storage) != dtypes.end()) out.push_back(std::move(k));
  if (named && in.external->serve) {
    if (o.block_form != "composed" && o.block_form != "deferred")
      throw PlanError("--ops linear_rmsnorm with --serve needs --block-form composed or --block-form deferred: the form your "
                      "kernel computes chooses its bound (docs/bounds.md section 11)");
    for (BlockKernelEntry& k : external::serve_block_kernels(in.external->serve, o.block_form, dtypes)) out.push_back(std::move(k));
  }
  if (named && out.empty())
    throw PlanError("--ops linear_rmsnorm: no external kernel implements it (an ABI v2 plugin with NC_LINEAR_RMSNORM, or --serve)");
  return out;
}

/// The block record's case: inline inputs when present, else regenerated from its seed; checked by digest.
RmsBlockCase block_case_of(const json& wc, DType dtype) {
  RmsBlockCase c = wc.contains("x") ? block_case_from_json(wc)
                                    : gen::make_rms_block_case(wc.at("generator").get<std::string>(), dtype,
                                                               parse_decimal_u64(wc.at("case_seed").get<std::string>(), "case_seed"));
  if (std::to_string(block_case_digest(c)) != wc.at("digest").get<std::string>())
    throw std::invalid_argument("block case inputs do not match the recorded digest (edited report or other build)");
  if (auto err = validate_block_case(c)) throw std::invalid_argument("invalid block case in report: " + *err);
  return c;
}

BlockKernelEntry block_kernel_for(const json& report, const json& rec, const ReplayOptions& o) {
  const auto storage = parse_dtype(rec.at("storage").get<std::string>());
  if (!storage) throw std::invalid_argument("block record names an unknown dtype");
  if (rec.contains("kernel") && rec.at("kernel").get<std::string>() != "builtin") return replay_block_kernel(report, rec, *storage, o);
  for (const BlockKernelEntry& k : builtin_block_kernels())
    if (k.storage == *storage && k.variant == rec.at("variant").get<std::string>() && dtype_info(k.accum).name == rec.at("accum").get<std::string>())
      return k;
  throw std::invalid_argument("block record names a kernel this build does not have");
}

class BlockSection final : public Section {
 public:
  std::string_view key() const override { return "rms_block"; }
  std::vector<std::string_view> ops() const override { return {kOp}; }
  bool knows_variant(const std::string& v) const override { return is_block_variant(v); }

  std::unique_ptr<SectionRun> plan(const PlanInputs& in) const override {
    const RunOptions& o = in.options;
    const bool named = in.names_any(ops());
    if (!o.block_form.empty() && (!named || !(in.external && in.external->serve))) throw PlanError("--block-form is for --serve with --ops linear_rmsnorm");
    BlockSuiteConfig cfg = *suite_block_config(o.suite);
    cfg.dtypes = in.common.dtypes;
    std::copy_if(o.variants.begin(), o.variants.end(), std::back_inserter(cfg.variants), is_block_variant);
    if (!o.block_generators.empty()) {
      for (const std::string& g : o.block_generators)
        if (!gen::is_block_generator(g))
          throw PlanError(fmt::format("unknown block generator '{}'{} (see normcheck list)", g, did_you_mean(g, gen::block_generator_names())));
      cfg.generators = o.block_generators;
    }
    if (o.seed) cfg.seed = *o.seed;
    if (o.block_cases) cfg.cases_per_generator = *o.block_cases;
    cfg.threads = o.threads;
    if (in.external) {
      std::vector<BlockKernelEntry> blocks = external_blocks(in, named);
      if (blocks.empty()) return nullptr;
      cfg.builtin = false;
      cfg.extra_kernels = std::move(blocks);
      cfg.external_report_only = o.report_only;
      return std::make_unique<BlockRun>(std::move(cfg));
    }
    const bool variants_name_block = o.variants.empty() || !cfg.variants.empty();
    if ((o.ops.empty() || named) && variants_name_block && cfg.cases_per_generator > 0) return std::make_unique<BlockRun>(std::move(cfg));
    return nullptr;
  }

  bool merge(const std::vector<nightly::ShardReport>& shards, const std::string& out_path, json& m) const override {
    const std::vector<const json*> parts = nightly::section_parts(shards, "rms_block");
    nightly::require_every_shard(parts, shards, "rms_block");
    m["rms_block"] = nightly::merge_suite_section(parts, shards, out_path, true, block_comparison_from_records);
    return m["rms_block"].value("passed", false);
  }

  json suite_row(std::string_view suite) const override {
    const BlockSuiteConfig block = *suite_block_config(suite);
    return {{"section", "rms_block"}, {"ops", "linear_rmsnorm"}, {"kernels", builtin_block_kernels().size()},
            {"dtypes", block.dtypes.size()}, {"generators", block.generators.size()},
            {"cases_per_generator", block.cases_per_generator},
            {"cases", static_cast<int64_t>(block.dtypes.size() * block.generators.size()) * block.cases_per_generator},
            {"shapes", "block generator shapes"}};
  }

  std::string_view replay_option() const override { return "block-record"; }

  int replay(const ReplayOptions& o, int64_t index) const override {
    json rec;
    RmsBlockCase c;
    std::optional<BlockKernelEntry> kernel;
    try {
      if (!o.dump.empty()) throw std::invalid_argument("--dump writes per-op records (--record) only; a block case is in the report's worst_case");
      const json report = read_report_file(o.report);
      rec = record_with_worst_case(records(report), index, "block record");
      kernel = block_kernel_for(report, rec, o);
      c = block_case_of(rec.at("worst_case"), kernel->storage);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "normcheck: error: %s\n", describe_input_error(o.report, e).c_str());
      return kExitBadInput;
    }
    return replay_judged(*kernel, c, rec, index);
  }

 private:
  static int replay_judged(const BlockKernelEntry& k, const RmsBlockCase& c, const json& rec, int64_t index) {
    const std::string output = rec.at("output").get<std::string>();
    const oracle::CertifiedRmsBlock ref = oracle::certified_rms_block(c);
    const std::vector<OutputJudgement> judged = judge_block_case(k, c, ref);
    if (judged.empty()) {
      std::printf("the kernel declined the call (unsupported): nothing to replay\n");
      return kExitCheckFailed;
    }
    for (const OutputJudgement& j : judged) {
      if (j.output != output) continue;
      if (!j.kernel_failure.empty()) {
        std::printf("block record %lld: linear_rmsnorm %s %s, output %s\nkernel failure: %s\n", static_cast<long long>(index),
                    k.kernel.c_str(), dtype_info(k.storage).name.data(), output.c_str(), j.kernel_failure.c_str());
        return kExitCheckFailed;
      }
      const json& elem = rec.at("worst_case").at("element");
      std::printf("block record %lld: linear_rmsnorm %s %s(acc %s) %s, output %s\n", static_cast<long long>(index), k.variant.c_str(),
                  dtype_info(k.storage).name.data(), dtype_info(k.accum).name.data(), rec.at("property").get<std::string>().c_str(),
                  output.c_str());
      std::printf("case: generator %s, seed %llu, rows %lld, n %lld, m %lld, eps %s; oracle %d bits, certified error %.3g ulp\n",
                  c.generator.c_str(), static_cast<unsigned long long>(c.seed), static_cast<long long>(c.rows), static_cast<long long>(c.n),
                  static_cast<long long>(c.m), hexfloat(c.eps).c_str(), ref.precision_bits, ref.max_err_ulps);
      return report_replay(j, elem);
    }
    std::fprintf(stderr, "normcheck: error: block record output '%s' is not a block output\n", output.c_str());
    return kExitBadInput;
  }
};

}  // namespace

const Section& block_section() {
  static const BlockSection s;
  return s;
}

}  // namespace normcheck::sections
