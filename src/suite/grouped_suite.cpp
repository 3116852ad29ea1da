#include "suite/grouped_suite.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/rng.hpp"
#include "generators/grouped_generators.hpp"
#include "io/case_json.hpp"
#include "suite/failure_json.hpp"
#include "suite/grouped_judge.hpp"
#include "suite/work_items.hpp"

namespace normcheck {
namespace {


struct Item {
  DType dtype;
  int kind, layout;
  int64_t index;
};

/// Every (kind, layout) pair of a dtype, cases_per_layout cases each.
DtypeSlice dtype_slice(const GroupedSuiteConfig& cfg) {
  return {cfg.shard, cfg.dtypes.size(), grouped_suite_kinds().size() * grouped_suite_layouts().size() * static_cast<size_t>(cfg.cases_per_layout)};
}

Item item_at(const GroupedSuiteConfig& cfg, size_t i) {
  const size_t per_layout = static_cast<size_t>(cfg.cases_per_layout), per_kind = grouped_suite_layouts().size() * per_layout,
               per_dtype = grouped_suite_kinds().size() * per_kind;
  return {cfg.dtypes[i / per_dtype], static_cast<int>((i % per_dtype) / per_kind), static_cast<int>((i % per_kind) / per_layout),
          static_cast<int64_t>(i % per_layout)};
}

struct ItemResult {
  GroupedNormCase c;
  GroupedJudgement j;
};

}  // namespace

const std::vector<audit::NormKind>& grouped_suite_kinds() {
  // Appended kinds keep the earlier kinds' case seeds (the seed derives from the kind's position).
  static const std::vector<audit::NormKind> kinds = {audit::NormKind::batch_norm,         audit::NormKind::group_norm,
                                                     audit::NormKind::instance_norm,      audit::NormKind::layer_norm,
                                                     audit::NormKind::channel_layer_norm, audit::NormKind::rms_norm};
  return kinds;
}

const std::vector<audit::Layout>& grouped_suite_layouts() {
  static const std::vector<audit::Layout> layouts = {audit::Layout::nchw, audit::Layout::nhwc, audit::Layout::sequence};
  return layouts;
}

int64_t planned_cases(const GroupedSuiteConfig& cfg) { return dtype_slice(cfg).planned(); }

uint64_t grouped_case_seed(uint64_t run_seed, DType dt, int kind, int layout, int64_t index) {
  return derive_seed(derive_seed(run_seed, 0x6e0 + static_cast<uint64_t>(kind)), static_cast<uint64_t>(dt),
                     static_cast<uint64_t>(layout), static_cast<uint64_t>(index));
}

GroupedSuiteResult run_grouped_suite(const GroupedSuiteConfig& cfg) {
  GroupedSuiteResult result;
  const DtypeSlice slice = dtype_slice(cfg);
  const size_t total = slice.total();
  result.cases_planned = slice.planned();
  const auto done = run_slice_items<ItemResult>(slice, cfg.threads, [&](size_t i) {
    const Item it = item_at(cfg, i);
    ItemResult r;
    r.c = gen::make_grouped_case(grouped_suite_kinds()[static_cast<size_t>(it.kind)], grouped_suite_layouts()[static_cast<size_t>(it.layout)], it.dtype,
                                 grouped_case_seed(cfg.seed, it.dtype, it.kind, it.layout, it.index));
    r.j = judge_grouped(r.c, cfg.external ? cfg.external->run(r.c) : run_grouped_kernel(r.c));
    count_finished(std::any_of(r.j.outputs.begin(), r.j.outputs.end(), [](const OutputJudgement& o) { return o.failed; }));
    return r;
  });
  for (size_t i = 0; i < total; ++i) {
    if (!done[i]) continue;
    ++result.cases_done;
    const ItemResult& item = *done[i];
    for (const OutputJudgement& o : item.j.outputs) {
      auto rec = std::find_if(result.records.begin(), result.records.end(), [&](const GroupedRecord& r) {
        return r.storage == item.c.dtype && r.kind == item.c.spec.kind && r.output == o.output;
      });
      if (rec == result.records.end()) {
        GroupedRecord fresh;
        fresh.storage = item.c.dtype;
        fresh.kind = item.c.spec.kind;
        fresh.output = o.output;
        rec = result.records.insert(result.records.end(), std::move(fresh));
      }
      ++rec->cases;
      if (o.failed) ++rec->failed_cases;
      if (!o.kernel_failure.empty() && rec->kernel_failures++ == 0)
        rec->first_kernel_failure = fmt::format("case {} ({} {}, seed {}): {}", i, audit::layout_name(item.c.tensor.layout),
                                                fmt::join(item.c.tensor.shape, "x"), item.c.seed, o.kernel_failure);
      if (!item.j.reference.certified) ++rec->uncertified_cases;
      rec->oracle_precision_bits = std::max(rec->oracle_precision_bits, item.j.reference.precision_bits);
      const double before = rec->acc.max_bound_ratio();
      rec->acc.merge(o.acc);
      if (o.acc.max_bound_ratio() > before) {
        rec->worst_seed = item.c.seed;
        rec->worst_tensor = item.c.tensor;
        rec->worst = o.worst;
      }
    }
  }
  result.interrupted = result.cases_done < result.cases_planned;
  return result;
}

bool grouped_suite_passed(const GroupedSuiteResult& r, bool report_only) {
  for (const GroupedRecord& rec : r.records)
    if (rec.failed() && !report_only) return false;
  return !r.interrupted;
}

}  // namespace normcheck
