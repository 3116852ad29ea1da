#include "suite/contraction_suite.hpp"

#include "suite/work_items.hpp"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "kernels/contraction_registry.hpp"
#include "generators/contraction_generators.hpp"
#include "io/case_json.hpp"
#include "suite/failure_json.hpp"
#include "suite/contraction_judge.hpp"

namespace normcheck {
namespace {

/// Shard units of (dtype, seed category): the items of one generator of one dtype.
DtypeSlice dtype_slice(const ContractionSuiteConfig& cfg) {
  return {cfg.shard, cfg.dtypes.size() * cfg.generators.size(), static_cast<size_t>(cfg.cases_per_generator)};
}

WorkItem item_at(const ContractionSuiteConfig& cfg, size_t i) {
  return work_item_at(cfg.dtypes, cfg.generators.size(), cfg.cases_per_generator, i);
}

/// Outcome of one case: the judgement, or the converter's rejection.
struct ItemResult {
  ContractionCase c;
  std::optional<ContractionJudgement> judged;
  std::string rejection;
};

/// Records in a fixed order: dtype, generator, form, output.
std::vector<ContractionRecord> plan(const ContractionSuiteConfig& cfg) {
  std::vector<ContractionRecord> records;
  for (DType dt : cfg.dtypes)
    for (const std::string& g : cfg.generators)
      for (const char* form : {"contracted", "original"})
        for (const char* out : {"f", "dx"}) {
          ContractionRecord r;
          r.storage = dt;
          r.accum = contraction_accum(dt);
          r.generator = g;
          r.form = form;
          r.output = out;
          const bool judged = r.form == "contracted";
          const std::string pair = "[" + std::string(dtype_info(dt).name) + "/" + std::string(dtype_info(r.accum).name) + "]";
          r.bound_id = judged ? "QR-CONTRACTED" + pair : "ENVELOPE-ORIGINAL" + pair;  // docs/bounds.md 12, 15.4
          // The original block is the baseline the contraction is compared with: judged by its
          // envelope and reported, never a reason for the run to fail.
          r.expectation = judged ? Expectation::must_pass : Expectation::report_only;
          records.push_back(std::move(r));
        }
  return records;
}

void journal(const ContractionSuiteConfig& cfg, const ItemResult& item, const OutputJudgement* j, std::mutex& mu) {
  if (cfg.journal_path.empty()) return;
  nlohmann::json line = {{"op", "qr_contraction"}, {"case", contraction_case_to_json(item.c)}};
  if (j) {
    line["output"] = j->output;
    line["worst"] = worst_element_json(j->worst, 0);
  } else {
    line["rejected"] = item.rejection;
  }
  std::lock_guard<std::mutex> lock(mu);
  std::ofstream(cfg.journal_path, std::ios::app) << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

ItemResult run_item(const ContractionSuiteConfig& cfg, const WorkItem& it, std::mutex& mu) {
  ItemResult r;
  r.c = gen::make_contraction_case(cfg.generators[it.generator_index], it.dtype,
                                   contraction_case_seed(cfg.seed, it.dtype, it.generator_index, it.case_index));
  bool failing = true;
  try {
    r.judged = judge_contraction(r.c, cfg.external ? &cfg.external->run : nullptr);
    failing = false;
    if (r.judged->skipped) return r;
    for (const OutputJudgement* j : {&r.judged->f, &r.judged->dx})
      if (j->failed) journal(cfg, r, j, mu), failing = true;
  } catch (const ConversionError& e) {
    r.rejection = e.what();
    journal(cfg, r, nullptr, mu);
  }
  count_finished(failing);
  return r;
}

void merge_one(ContractionRecord& rec, const ItemResult& item, const OutputJudgement* j, int64_t index) {
  ++rec.cases;
  if (!item.judged) {  // the converter refused a valid block: a failure of the contracted records
    if (rec.form == "contracted") ++rec.failed_cases, ++rec.rejected_cases;
    return;
  }
  const oracle::CertifiedAffineLn& ref = item.judged->reference;
  if (!ref.certified) ++rec.uncertified_cases;
  if (j->failed) ++rec.failed_cases;
  if (!j->kernel_failure.empty() && rec.kernel_failures++ == 0)
    rec.first_kernel_failure = "case " + std::to_string(index) + " (" + item.c.generator + ", seed " + std::to_string(item.c.seed) + "): " + j->kernel_failure;
  rec.oracle_max_err_ulps = std::max(rec.oracle_max_err_ulps, ref.max_err_ulps);
  rec.oracle_precision_bits = std::max(rec.oracle_precision_bits, ref.precision_bits);
  if (rec.form == "contracted") {
    rec.max_coefficient_rel_D = std::max(rec.max_coefficient_rel_D, item.judged->coefficient_error.max_rel_D);
    rec.max_coefficient_rel_G = std::max(rec.max_coefficient_rel_G, item.judged->coefficient_error.max_rel_G);
  }
  const double before = rec.form == "contracted" ? rec.acc.max_bound_ratio() : rec.acc.max_ulp();
  rec.acc.merge(j->acc);
  const double now = rec.form == "contracted" ? j->acc.max_bound_ratio() : j->acc.max_ulp();
  if (now > before || rec.worst.case_index < 0)
    rec.worst = {index, item.c.seed, item.c.block.d, item.c.block.n, item.c.block.m, item.c.rows, j->worst};
}

}  // namespace

int64_t planned_cases(const ContractionSuiteConfig& cfg) { return dtype_slice(cfg).planned(); }

uint64_t contraction_case_seed(uint64_t run_seed, DType dt, size_t generator_index, int64_t case_index) {
  return derive_seed(derive_seed(run_seed, 0x9c0), static_cast<uint64_t>(dt), generator_index, static_cast<uint64_t>(case_index));
}

void validate_contraction_config(const ContractionSuiteConfig& cfg) {
  for (const auto& g : cfg.generators)
    if (!gen::is_contraction_generator(g)) throw std::invalid_argument("unknown contraction generator '" + g + "'");
  if (cfg.cases_per_generator < 1) throw std::invalid_argument("contraction cases per generator must be >= 1");
}

ContractionSuiteResult run_contraction_suite(const ContractionSuiteConfig& cfg) {
  validate_contraction_config(cfg);
  ContractionSuiteResult result;
  result.records = plan(cfg);
  const DtypeSlice slice = dtype_slice(cfg);
  const size_t total = slice.total();
  result.cases_planned = slice.planned();
  std::mutex mu;
  const auto done = run_slice_items<ItemResult>(slice, cfg.threads, [&](size_t i) { return run_item(cfg, item_at(cfg, i), mu); });
  const size_t per_record_group = 4;  // contracted f, dx, original f, dx
  for (size_t i = 0; i < total; ++i) {
    if (!done[i]) continue;
    ++result.cases_done;
    const WorkItem it = item_at(cfg, i);
    const size_t dt_index = dtype_position(cfg.dtypes, it.dtype);
    const size_t base = (dt_index * cfg.generators.size() + it.generator_index) * per_record_group;
    const ItemResult& item = *done[i];
    if (item.judged && item.judged->skipped) continue;  // the external kernel declined: not judged
    const ContractionJudgement* j = item.judged ? &*item.judged : nullptr;
    merge_one(result.records[base + 0], item, j ? &j->f : nullptr, static_cast<int64_t>(i));
    merge_one(result.records[base + 1], item, j ? &j->dx : nullptr, static_cast<int64_t>(i));
    merge_one(result.records[base + 2], item, j ? &j->original_f : nullptr, static_cast<int64_t>(i));
    merge_one(result.records[base + 3], item, j ? &j->original_dx : nullptr, static_cast<int64_t>(i));
  }
  result.interrupted = result.cases_done < result.cases_planned;
  return result;
}

bool contraction_suite_passed(const ContractionSuiteResult& r, bool report_only) {
  for (const ContractionRecord& rec : r.records)
    if (rec.expectation == Expectation::must_pass && rec.failed() && !report_only) return false;
  return !r.interrupted;
}

}  // namespace normcheck
