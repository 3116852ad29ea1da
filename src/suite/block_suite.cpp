#include "suite/block_suite.hpp"

#include "suite/work_items.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "bounds/bounds_block.hpp"
#include "oracles/certified_rms_block.hpp"
#include "generators/block_generators.hpp"
#include "io/case_json.hpp"
#include "suite/failure_json.hpp"

namespace normcheck {
namespace {

const std::vector<CertifiedValue>& block_reference(const oracle::CertifiedRmsBlock& ref, const std::string& output) {
  if (output == "y") return ref.y;
  if (output == "dx") return ref.dx;
  return output == "dw" ? ref.dw : ref.dg;
}

const TensorBound& block_bound_of(const BlockBound& b, const std::string& output) {
  if (output == "y") return b.y;
  if (output == "dx") return b.dx;
  return output == "dw" ? b.dw : b.dg;
}

std::vector<const BlockKernelEntry*> selected_block_kernels(const BlockSuiteConfig& cfg) {
  std::vector<const BlockKernelEntry*> out;
  if (cfg.builtin)
    for (const BlockKernelEntry& k : builtin_block_kernels())
      if (std::find(cfg.dtypes.begin(), cfg.dtypes.end(), k.storage) != cfg.dtypes.end() &&
          (cfg.variants.empty() || std::find(cfg.variants.begin(), cfg.variants.end(), k.variant) != cfg.variants.end()))
        out.push_back(&k);
  for (const BlockKernelEntry& k : cfg.extra_kernels)
    if (std::find(cfg.dtypes.begin(), cfg.dtypes.end(), k.storage) != cfg.dtypes.end()) out.push_back(&k);
  return out;
}

bool is_external(const BlockKernelEntry& k) { return k.kernel != "builtin"; }

/// Shard units of (dtype, block generator): the items of one generator of one dtype.
DtypeSlice dtype_slice(const BlockSuiteConfig& cfg) {
  return {cfg.shard, cfg.dtypes.size() * cfg.generators.size(), static_cast<size_t>(cfg.cases_per_generator)};
}

WorkItem item_at(const BlockSuiteConfig& cfg, size_t i) {
  return work_item_at(cfg.dtypes, cfg.generators.size(), cfg.cases_per_generator, i);
}

/// The judgement of an output whose call failed: failed, with the reason.
OutputJudgement failed_call(const std::string& name, const std::string& why) {
  OutputJudgement j;
  j.output = name;
  j.failed = true;
  j.kernel_failure = why;
  return j;
}

/// One judged output of one variant on one case, with the record it belongs to.
struct Partial {
  size_t record;
  OutputJudgement judgement;
  double cancellation;
};

struct ItemResult {
  RmsBlockCase c;
  int bits = 0;
  double err_ulps = 0;
  bool certified = true;
  std::vector<Partial> partials;
};

/// Records in a fixed order: dtype, generator, variant, output.
std::vector<BlockRecord> plan(const BlockSuiteConfig& cfg, const std::vector<const BlockKernelEntry*>& kernels,
                              std::map<std::tuple<const BlockKernelEntry*, size_t, std::string>, size_t>& index) {
  std::vector<BlockRecord> records;
  for (DType dt : cfg.dtypes)
    for (size_t g = 0; g < cfg.generators.size(); ++g)
      for (const BlockKernelEntry* k : kernels) {
        if (k->storage != dt) continue;
        const BlockToleranceEntry& t = block_tolerance_for(k->bound_variant);
        for (const std::string& out : block_outputs()) {
          BlockRecord r;
          r.kernel = k->kernel;
          r.variant = k->variant;
          r.storage = k->storage;
          r.accum = k->accum;
          r.generator = cfg.generators[g];
          r.output = out;
          r.bound_id = block_bound_id(t.bound) + "[" + std::string(dtype_info(k->storage).name) + "/" +
                       std::string(dtype_info(k->accum).name) + "]";
          r.expectation = is_external(*k) && cfg.external_report_only ? Expectation::report_only : t.expectation;
          r.known_weak = k->known_weak;
          index[{k, g, out}] = records.size();
          records.push_back(std::move(r));
        }
      }
  return records;
}

void journal(const BlockSuiteConfig& cfg, const RmsBlockCase& c, const BlockKernelEntry& k, const OutputJudgement& j,
             std::mutex& mu) {
  if (cfg.journal_path.empty()) return;
  const nlohmann::json line = {{"op", "linear_rmsnorm"},
                               {"variant", k.variant},
                               {"accum", std::string(dtype_info(k.accum).name)},
                               {"output", j.output},
                               {"case", block_case_to_json(c)},
                               {"worst", worst_element_json(j.worst, 0)}};
  std::lock_guard<std::mutex> lock(mu);
  std::ofstream f(cfg.journal_path, std::ios::app);
  f << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

ItemResult run_item(const BlockSuiteConfig& cfg, const WorkItem& it, const std::vector<const BlockKernelEntry*>& kernels,
                    const std::map<std::tuple<const BlockKernelEntry*, size_t, std::string>, size_t>& index,
                    std::mutex& journal_mu) {
  ItemResult r;
  r.c = gen::make_rms_block_case(cfg.generators[it.generator_index], it.dtype,
                                 block_case_seed(cfg.seed, it.dtype, it.generator_index, it.case_index));
  const oracle::CertifiedRmsBlock ref = oracle::certified_rms_block(r.c);
  r.bits = ref.precision_bits;
  r.err_ulps = ref.max_err_ulps;
  r.certified = ref.certified;
  std::map<std::pair<BlockForm, DType>, BlockBound> bounds;  // one bound per (form, accumulator)
  bool failing = false;
  for (const BlockKernelEntry* k : kernels) {
    if (k->storage != it.dtype) continue;
    const BlockToleranceEntry& t = block_tolerance_for(k->bound_variant);
    auto b = bounds.find({t.bound, k->accum});
    if (b == bounds.end()) b = bounds.emplace(std::pair{t.bound, k->accum}, rms_block_bound(r.c, ref, t.bound, k->accum)).first;
    const BlockOutputs out = k->run(r.c);
    if (out.skipped) continue;
    for (const std::string& name : block_outputs()) {
      OutputJudgement j = out.failure.empty() ? judge_tensor(name, block_output(out, name), block_reference(ref, name),
                                                             block_bound_of(b->second, name), nullptr, it.dtype, t.max_ratio)
                                              : failed_call(name, out.failure);
      if (j.failed) journal(cfg, r.c, *k, j, journal_mu), failing = failing || !k->known_weak;
      const double cancel = name == "dx" && j.worst.index >= 0 ? ref.cancellation[static_cast<size_t>(j.worst.index)] : 0;
      r.partials.push_back({index.at({k, it.generator_index, name}), std::move(j), cancel});
    }
  }
  count_finished(failing);
  return r;
}

void merge(const ItemResult& item, int64_t item_index, std::vector<BlockRecord>& records) {
  for (const Partial& p : item.partials) {
    BlockRecord& rec = records[p.record];
    ++rec.cases;
    if (!item.certified) ++rec.uncertified_cases;
    if (p.judgement.failed) ++rec.failed_cases;
    if (!p.judgement.kernel_failure.empty() && rec.kernel_failures++ == 0)
      rec.first_kernel_failure = "case " + std::to_string(item_index) + " (generator " + rec.generator + ", seed " +
                                 std::to_string(item.c.seed) + ", rows " + std::to_string(item.c.rows) + ", n " +
                                 std::to_string(item.c.n) + ", m " + std::to_string(item.c.m) + "): " + p.judgement.kernel_failure;
    rec.oracle_max_err_ulps = std::max(rec.oracle_max_err_ulps, item.err_ulps);
    rec.points.push_back({item_index, item.c.rows, item.c.n, p.judgement.acc.max_ulp(), std::max(0.0, p.judgement.acc.max_bound_ratio())});
    rec.oracle_precision_bits = std::max(rec.oracle_precision_bits, item.bits);
    ++rec.oracle_levels[item.bits];
    const double before = rec.acc.max_bound_ratio();
    rec.acc.merge(p.judgement.acc);
    if (p.judgement.acc.max_bound_ratio() > before)
      rec.worst = {item_index, item.c.seed, item.c.rows, item.c.n, item.c.m, block_case_digest(item.c),
                   p.judgement.worst, p.cancellation};
  }
}

}  // namespace

int64_t planned_cases(const BlockSuiteConfig& cfg) { return dtype_slice(cfg).planned(); }

uint64_t block_case_seed(uint64_t run_seed, DType dt, size_t generator_index, int64_t case_index) {
  // A fourth derivation word keeps block cases independent of the LayerNorm cases of the same seed.
  return derive_seed(derive_seed(run_seed, 0xb10c), static_cast<uint64_t>(dt), generator_index,
                     static_cast<uint64_t>(case_index));
}

void validate_block_config(const BlockSuiteConfig& cfg) {
  for (const auto& g : cfg.generators)
    if (!gen::is_block_generator(g)) throw std::invalid_argument("unknown block generator '" + g + "'");
  for (const auto& v : cfg.variants) {
    const auto& t = builtin_block_kernels();
    if (std::none_of(t.begin(), t.end(), [&](const BlockKernelEntry& k) { return k.variant == v; }))
      throw std::invalid_argument("unknown block variant '" + v + "'");
  }
  if (cfg.cases_per_generator < 1) throw std::invalid_argument("block cases per generator must be >= 1");
}

std::vector<OutputJudgement> judge_block_case(const BlockKernelEntry& k, const RmsBlockCase& c,
                                              const oracle::CertifiedRmsBlock& ref) {
  const BlockToleranceEntry& t = block_tolerance_for(k.bound_variant);
  const BlockBound b = rms_block_bound(c, ref, t.bound, k.accum);
  const BlockOutputs out = k.run(c);
  std::vector<OutputJudgement> result;
  if (out.skipped) return result;  // declined: nothing to judge
  for (const std::string& name : block_outputs())
    result.push_back(out.failure.empty() ? judge_tensor(name, block_output(out, name), block_reference(ref, name),
                                                        block_bound_of(b, name), nullptr, c.dtype, t.max_ratio)
                                         : failed_call(name, out.failure));
  return result;
}

BlockSuiteResult run_block_suite(const BlockSuiteConfig& cfg) {
  validate_block_config(cfg);
  const auto kernels = selected_block_kernels(cfg);
  std::map<std::tuple<const BlockKernelEntry*, size_t, std::string>, size_t> index;
  BlockSuiteResult result;
  result.records = plan(cfg, kernels, index);
  const DtypeSlice slice = dtype_slice(cfg);
  const size_t total = slice.total();
  result.cases_planned = slice.planned();
  std::mutex journal_mu;
  const auto done =
      run_slice_items<ItemResult>(slice, cfg.threads, [&](size_t i) { return run_item(cfg, item_at(cfg, i), kernels, index, journal_mu); });
  for (size_t i = 0; i < total; ++i)
    if (done[i]) {
      merge(*done[i], static_cast<int64_t>(i), result.records);
      ++result.cases_done;
    }
  result.interrupted = result.cases_done < result.cases_planned;
  std::vector<FlagView> views;
  for (const BlockRecord& r : result.records) views.push_back({r.variant, r.storage, r.generator, r.cases, r.failed(), "linear_rmsnorm"});
  result.flag_checks = evaluate_flags(cfg.dtypes, views);
  return result;
}

std::vector<BlockComparisonRow> block_comparison(const BlockSuiteResult& r) {
  std::vector<BlockComparisonRow> rows;
  for (const BlockRecord& rec : r.records) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const BlockComparisonRow& row) {
      return row.dtype == rec.storage && row.variant == rec.variant && row.output == rec.output;
    });
    if (it == rows.end()) it = rows.insert(rows.end(), {rec.storage, rec.variant, rec.output, {}, 0});
    const double before = it->acc.max_ulp();
    it->acc.merge(rec.acc);
    if (rec.acc.max_ulp() > before) it->cancellation_at_worst = rec.worst.cancellation;
  }
  return rows;
}

bool block_records_passed(const BlockSuiteResult& r) {
  for (const BlockRecord& rec : r.records)
    if (rec.expectation == Expectation::must_pass && rec.failed()) return false;
  return true;
}

bool block_suite_passed(const BlockSuiteResult& r) { return all_flags_met(r.flag_checks) && block_records_passed(r) && !r.interrupted; }

}  // namespace normcheck
