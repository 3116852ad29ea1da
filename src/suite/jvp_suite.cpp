#include "suite/jvp_suite.hpp"

#include <algorithm>

#include "bounds/bounds_jvp.hpp"
#include "core/rng.hpp"
#include "generators/jvp_generators.hpp"
#include "io/case_json.hpp"
#include "kernels/jvp_registry.hpp"
#include "oracles/certified_layernorm.hpp"
#include "suite/failure_json.hpp"

namespace normcheck {
namespace {

DtypeSlice dtype_slice(const JvpSuiteConfig& cfg) {
  return {cfg.shard, cfg.dtypes.size(), cfg.generators.size() * static_cast<size_t>(cfg.cases_per_generator)};
}

/// The kernels a run judges: the external one, or every built-in kernel of the op.
std::vector<std::pair<std::string, bool>> kernel_names(const JvpSuiteConfig& cfg) {
  if (cfg.external) return {{cfg.external->name, false}};
  std::vector<std::pair<std::string, bool>> out;
  for (const JvpKernelInfo& k : jvp_kernels())
    if (k.op == cfg.op) out.emplace_back(k.name, k.known_weak);
  return out;
}

std::vector<JvpKernel> kernels_of(const JvpSuiteConfig& cfg) {
  if (cfg.external) return {cfg.external->run};
  std::vector<JvpKernel> out;
  for (const JvpKernelInfo& k : jvp_kernels())
    if (k.op == cfg.op) out.push_back([name = k.name](const LayerNormCase& c, const LayerNormTangents& t) { return JvpOutputs{run_jvp_kernel(name, c, t), "", false}; });
  return out;
}

/// Records in a fixed order: dtype, generator, kernel.
std::vector<JvpRecord> plan(const JvpSuiteConfig& cfg) {
  std::vector<JvpRecord> records;
  for (DType dt : cfg.dtypes)
    for (const std::string& g : cfg.generators)
      for (const auto& [name, weak] : kernel_names(cfg)) {
        JvpRecord r;
        r.storage = dt;
        r.accum = dtype_info(dt).default_accum;
        r.generator = g;
        r.kernel = name;
        r.known_weak = weak;
        records.push_back(std::move(r));
      }
  return records;
}

struct ItemResult {
  gen::JvpCase jc;
  std::vector<JvpJudgement> judged;
};

void merge_one(JvpRecord& rec, const ItemResult& item, const JvpJudgement& j, int64_t index) {
  if (j.skipped) return;
  ++rec.cases;
  if (!j.certified) ++rec.uncertified_cases;
  if (j.du.failed) ++rec.failed_cases;
  if (!j.du.kernel_failure.empty() && rec.kernel_failures++ == 0)
    rec.first_kernel_failure = "case " + std::to_string(index) + " (" + item.jc.c.generator + ", seed " + std::to_string(item.jc.c.seed) +
                               "): " + j.du.kernel_failure;
  rec.oracle_precision_bits = std::max(rec.oracle_precision_bits, j.precision_bits);
  ++rec.oracle_levels[j.precision_bits];
  rec.oracle_max_err_ulps = std::max(rec.oracle_max_err_ulps, j.oracle_max_err_ulps);
  const double before = rec.acc.max_bound_ratio();
  rec.acc.merge(j.du.acc);
  if (j.du.worst.index >= 0 && (j.du.acc.max_bound_ratio() > before || rec.worst.case_index < 0))  // a judged element
    rec.worst = {index, item.jc.c.seed, item.jc.c.rows, item.jc.c.n, j.du.worst};
}

}  // namespace

int64_t planned_cases(const JvpSuiteConfig& cfg) { return dtype_slice(cfg).planned(); }

uint64_t jvp_case_seed(uint64_t run_seed, DType dt, size_t generator_index, int64_t case_index) {
  return derive_seed(derive_seed(run_seed, 0x1f0), static_cast<uint64_t>(dt), generator_index, static_cast<uint64_t>(case_index));
}

const JvpOpInfo& jvp_op_info(std::string_view op) {
  static const JvpOpInfo ops[] = {
      {"layernorm_jvp", "LN-JVP-TWOPASS-SEQ", "jvp-record", "NC_LAYERNORM_JVP",
       "LayerNorm JVP (du along tangents of x, gamma, beta) against the certified JVP, LN-JVP-TWOPASS-SEQ", oracle::certified_layernorm_jvp,
       layernorm_jvp_bound},
      {"rmsnorm_jvp", "RMS-JVP-SEQ", "rms-jvp-record", "NC_RMSNORM_JVP",
       "RMSNorm JVP (du along tangents of x, gamma) against the certified JVP, RMS-JVP-SEQ", oracle::certified_rmsnorm_jvp,
       rmsnorm_jvp_bound}};
  for (const JvpOpInfo& o : ops)
    if (o.op == op) return o;
  throw std::invalid_argument("unknown JVP op '" + std::string(op) + "'");
}

std::vector<JvpJudgement> judge_jvp(std::string_view op, const LayerNormCase& c, const LayerNormTangents& t,
                                    const std::vector<JvpKernel>& kernels) {
  const JvpOpInfo& info = jvp_op_info(op);
  std::vector<JvpOutputs> outs;
  bool any = false;
  for (const JvpKernel& k : kernels) {
    outs.push_back(k(c, t));
    any = any || !outs.back().skipped;
  }
  std::vector<JvpJudgement> judged(kernels.size());
  if (!any) {
    for (JvpJudgement& j : judged) j.skipped = true;
    return judged;
  }
  const oracle::CertifiedLayerNormJvp ref = info.oracle(c, t);
  const TensorBound bound = info.bound(c, t, ref, dtype_info(c.dtype).default_accum);
  for (size_t i = 0; i < kernels.size(); ++i) {
    JvpJudgement& j = judged[i];
    j.skipped = outs[i].skipped;
    j.precision_bits = ref.precision_bits;
    j.oracle_max_err_ulps = ref.max_err_ulps;
    j.certified = ref.certified;
    if (j.skipped) continue;
    if (!outs[i].failure.empty()) {
      j.du.output = "du";
      j.du.failed = true;
      j.du.kernel_failure = outs[i].failure;
      continue;
    }
    j.du = judge_tensor("du", outs[i].du, ref.du, bound, nullptr, c.dtype, 1.0);
  }
  return judged;
}

JvpSuiteResult run_jvp_suite(const JvpSuiteConfig& cfg) {
  JvpSuiteResult result;
  result.records = plan(cfg);
  const DtypeSlice slice = dtype_slice(cfg);
  const size_t total = slice.total();
  result.cases_planned = slice.planned();
  const std::vector<JvpKernel> kernels = kernels_of(cfg);
  const auto done = run_slice_items<ItemResult>(
      slice, cfg.threads,
      [&](size_t i) {
        const WorkItem it = work_item_at(cfg.dtypes, cfg.generators.size(), cfg.cases_per_generator, i);
        ItemResult r;
        r.jc = gen::make_jvp_case(cfg.generators[it.generator_index], it.dtype,
                                  jvp_case_seed(cfg.seed, it.dtype, it.generator_index, it.case_index), cfg.max_elements);
        r.judged = judge_jvp(cfg.op, r.jc.c, r.jc.t, kernels);
        count_finished(std::any_of(r.judged.begin(), r.judged.end(), [](const JvpJudgement& j) { return j.du.failed; }));
        return r;
      });
  const size_t per_group = kernels.size();
  for (size_t i = 0; i < total; ++i) {
    if (!done[i]) continue;
    ++result.cases_done;
    const WorkItem it = work_item_at(cfg.dtypes, cfg.generators.size(), cfg.cases_per_generator, i);
    const size_t base = (dtype_position(cfg.dtypes, it.dtype) * cfg.generators.size() + it.generator_index) * per_group;
    for (size_t k = 0; k < per_group; ++k) merge_one(result.records[base + k], *done[i], done[i]->judged[k], static_cast<int64_t>(i));
  }
  result.interrupted = result.cases_done < result.cases_planned;
  return result;
}

bool jvp_suite_passed(const JvpSuiteResult& r, bool report_only) {
  for (const JvpRecord& rec : r.records) {
    if (rec.known_weak) continue;  // flagged or not, a planted kernel does not fail the run (its flag check does)
    if (rec.failed() && !report_only) return false;
  }
  for (const JvpRecord& weak : r.records) {  // every planted kernel is caught in every dtype it ran in
    if (!weak.known_weak || weak.cases == 0) continue;
    const bool caught = std::any_of(r.records.begin(), r.records.end(), [&](const JvpRecord& o) {
      return o.known_weak && o.kernel == weak.kernel && o.storage == weak.storage && o.failed();
    });
    if (!caught) return false;
  }
  return !r.interrupted;
}

}  // namespace normcheck
