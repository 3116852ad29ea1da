#include "suite/runner.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "ops/op_kernels.hpp"
#include "oracles/certified_layernorm.hpp"
#include "io/case_json.hpp"
#include "suite/failure_json.hpp"

namespace normcheck {
namespace {

bool selected(const std::vector<std::string>& list, const std::string& v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

}  // namespace

/// Every work item: dtypes x generators x cases, in that (dtype-major) order; the corpus has its own
/// number of cases per dtype, every other generator cfg.cases_per_generator.
std::vector<WorkItem> per_op_items(const RunConfig& cfg) {
  std::vector<WorkItem> items;
  for (DType dt : cfg.dtypes)
    for (size_t g = 0; g < cfg.generators.size(); ++g) {
      const int64_t cases = gen::generator_case_count(cfg.generators[g], dt, cfg.cases_per_generator);
      for (int64_t k = 0; k < cases; ++k) items.push_back({dt, g, k});
    }
  return items;
}

namespace {

/// A case of the config's shard: its position in per_op_items and the families (units) it owns.
struct OwnedCase {
  size_t item;
  OpFamilies families;
};

/// The config's shard's cases, in case order: those with a live family unit it owns.
std::vector<OwnedCase> owned_cases(const RunConfig& cfg, const std::vector<WorkItem>& items,
                                   const std::vector<const KernelEntry*>& kernels) {
  const FamilyUnits units = family_units(cfg);
  std::map<DType, OpFamilies> live;
  for (DType dt : cfg.dtypes) live[dt] = live_families(kernels, dt, units.first());
  std::vector<OwnedCase> out;
  for (size_t i = 0; i < items.size(); ++i) {
    OwnedCase c{i, {}};
    for (int f = 0; f < kOpFamilies; ++f)
      c.families[f] = live[items[i].dtype][f] && cfg.shard.owns(units.unit(static_cast<int64_t>(i), f));
    if (any_family(c.families)) out.push_back(c);
  }
  return out;
}

/// Records in a fixed order: dtype, generator, kernel, output.
std::vector<Record> plan_records(const RunConfig& cfg, const std::vector<const KernelEntry*>& kernels,
                                 std::map<std::tuple<const KernelEntry*, size_t, std::string>, size_t>& index) {
  std::vector<Record> records;
  for (DType dt : cfg.dtypes)
    for (size_t g = 0; g < cfg.generators.size(); ++g)
      for (const KernelEntry* k : kernels) {
        if (k->storage != dt) continue;
        const ToleranceEntry& t = tolerance_for(*k);
        for (const std::string& out : op_outputs(k->op)) {
          Record r;
          r.key = {k->op, k->kernel, k->variant, k->storage, k->accum, "accuracy/" + cfg.generators[g], out};
          r.bound_id = bound_label(verdict_bound_model(t, *k));
          r.own_bound_id = bound_label(own_bound_model(t, *k));
          if (const std::optional<BoundModel> looser = looser_contract_model(*k)) r.looser_bound_id = bound_label(*looser);
          r.expectation = is_external_kernel(*k) && cfg.external_report_only ? Expectation::report_only : t.expectation;
          r.known_weak = k->known_weak;
          index[{k, g, out}] = records.size();
          records.push_back(std::move(r));
        }
      }
  return records;
}

void append_journal(const RunConfig& cfg, const LayerNormCase& c, const KernelEntry& k,
                    const OutputJudgement& j, std::mutex& mu) {
  if (cfg.journal_path.empty()) return;
  const std::string line = failing_case_json_line(c, k, j);
  std::lock_guard<std::mutex> lock(mu);
  std::ofstream f(cfg.journal_path, std::ios::app);
  f << line << '\n';
  f.flush();
}

/// Judges one op family's kernels on case `c` against one certified reference (with the VJP if
/// a backward kernel of the family needs it), adding its oracle certificate and partials to `r`.
void run_family(const RunConfig& cfg, const WorkItem& w, const LayerNormCase& c, int family, const std::vector<const KernelEntry*>& kernels,
                const std::map<std::tuple<const KernelEntry*, size_t, std::string>, size_t>& index, std::mutex& journal_mu,
                CaseResult& r) {
  bool present = false, need_vjp = false;
  for (const KernelEntry* k : kernels)
    if (k->storage == w.dtype && op_family_index(k->op) == family) {
      present = true;
      need_vjp = need_vjp || is_backward(k->op);
    }
  if (!present) return;
  const oracle::CertifiedLayerNorm ref = certified_reference(op_of(family_at(family), OpDirection::forward), c, need_vjp);
  r.oracle[family] = {ref.max_err_ulps, ref.precision_bits, ref.certified};
  for (const KernelEntry* k : kernels) {
    if (k->storage != w.dtype || op_family_index(k->op) != family) continue;
    for (OutputJudgement& j : judge_case(*k, c, ref)) {
      if (j.failed || j.own_failed) append_journal(cfg, c, *k, j, journal_mu);
      r.partials.push_back({index.at({k, w.generator_index, j.output}), std::move(j)});
    }
  }
}

/// Runs the owned families of one case. Each family's CPU time goes to its shard unit, with the
/// case's generation added to each (a shard that runs one family alone pays it too).
CaseResult run_item(const RunConfig& cfg, const FamilyUnits& units, const WorkItem& w, const OwnedCase& owned,
                    const std::vector<const KernelEntry*>& kernels, const std::map<std::tuple<const KernelEntry*, size_t, std::string>, size_t>& index, std::mutex& journal_mu) {
  const double start = thread_cpu_seconds();
  CaseResult r;
  const LayerNormCase c = suite_case(cfg, w);
  r.seed = c.seed;
  r.digest = case_digest(c);
  r.rows = c.rows;
  r.n = c.n;
  r.eps = c.eps;
  r.families = owned.families;
  const double made = thread_cpu_seconds() - start;
  for (int f = 0; f < kOpFamilies; ++f) {
    if (!owned.families[f]) continue;
    const double family_start = thread_cpu_seconds();
    run_family(cfg, w, c, f, kernels, index, journal_mu, r);
    add_unit_seconds(cfg.shard.first_unit + units.unit(static_cast<int64_t>(owned.item), f), made + thread_cpu_seconds() - family_start);
  }
  return r;
}

}  // namespace

void merge_item(const WorkItem& w, int64_t item_index, const RunConfig& cfg, const CaseResult& item, std::vector<Record>& records) {
  for (const CasePartial& p : item.partials) {
    Record& rec = records[p.record];
    if (p.judgement.declined) {  // unsupported: counted, never judged (the record stays not_run without judged cases)
      ++rec.declined_cases;
      continue;
    }
    const CaseResult::OracleInfo& oracle = item.oracle.at(op_family_index(rec.key.op));
    ++rec.cases;
    if (!oracle.certified) ++rec.uncertified_cases;
    if (p.judgement.failed) ++rec.failed_cases;
    if (p.judgement.own_failed) ++rec.own_failed_cases;
    if (!p.judgement.kernel_failure.empty() && rec.kernel_failures++ == 0)
      rec.first_kernel_failure = "case " + std::to_string(item_index) + " (generator " + cfg.generators[w.generator_index] +
                                 ", seed " + std::to_string(item.seed) + ", rows " + std::to_string(item.rows) + ", n " +
                                 std::to_string(item.n) + "): " + p.judgement.kernel_failure;
    rec.own.merge(p.judgement.own);
    rec.bias.merge(p.judgement.bias);
    if (p.judgement.has_looser) rec.looser.merge(p.judgement.looser);
    // A failure no looser bound measured (the kernel crashed, hung or errored) fails it too.
    if (p.judgement.looser_failed || (p.judgement.failed && !p.judgement.has_looser)) ++rec.looser_failed_cases;
    rec.points.push_back({item_index, item.rows, item.n, p.judgement.acc.max_ulp(), std::max(0.0, p.judgement.acc.max_bound_ratio())});
    rec.oracle_max_err_ulps = std::max(rec.oracle_max_err_ulps, oracle.err_ulps);
    rec.oracle_precision_bits = std::max(rec.oracle_precision_bits, oracle.bits);
    ++rec.oracle_levels[oracle.bits];
    const double before = rec.acc.max_bound_ratio();
    rec.acc.merge(p.judgement.acc);
    if (p.judgement.acc.max_bound_ratio() > before) {
      rec.worst = {item_index, item.seed, cfg.generators[w.generator_index], item.rows, item.n, item.eps,
                   item.digest, p.judgement.worst};
    }
  }
}

ProgressCounters& progress_counters() {
  static ProgressCounters counters;
  return counters;
}

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

/// The seed a generator is called with: the corpus's case index, else the derived case seed.
static uint64_t generator_seed(const RunConfig& cfg, const WorkItem& w) {
  if (cfg.generators[w.generator_index] == gen::kCorpusGenerator) return static_cast<uint64_t>(w.case_index);
  return case_seed(cfg.seed, w.dtype, w.generator_index, w.case_index);
}

LayerNormCase suite_case(const RunConfig& cfg, const WorkItem& w) {
  LayerNormCase c = gen::make_layernorm_case(cfg.generators[w.generator_index], w.dtype, generator_seed(cfg, w), cfg.shape);
  if (cfg.eps_override) c.eps = *cfg.eps_override;
  return c;
}

std::pair<int64_t, int64_t> suite_case_shape(const RunConfig& cfg, const WorkItem& w) {
  return gen::layernorm_case_shape(cfg.generators[w.generator_index], w.dtype, generator_seed(cfg, w), cfg.shape);
}

uint64_t case_seed(uint64_t run_seed, DType dt, size_t generator_index, int64_t case_index) {
  return derive_seed(run_seed, static_cast<uint64_t>(dt), generator_index, static_cast<uint64_t>(case_index));
}

namespace {

/// Whether `generator` is a witness of expectation f: the one it names, or with "*" any but the corpus
/// and its blind generators.
bool witnesses(const FlagExpectation& f, std::string_view generator) {
  if (f.generator != "*") return generator == f.generator;
  if (generator == "corpus") return false;
  const std::string blind = " " + std::string(f.blind) + " ";
  return blind.find(" " + std::string(generator) + " ") == std::string::npos;
}

}  // namespace

std::vector<FlagCheck> evaluate_flags(const std::vector<DType>& dtypes, const std::vector<FlagView>& records) {
  std::vector<FlagCheck> checks;
  for (const FlagExpectation& f : flag_expectations())
    for (DType dt : dtypes) {
      const std::string dname(dtype_info(dt).name);
      if (f.storage != "*" && f.storage != dname) continue;
      FlagCheck fc{f, dname, 0, false};
      std::map<std::string_view, std::map<std::string_view, int64_t>> witness;  // op -> generator -> cases
      for (const FlagView& r : records) {
        if (r.variant != f.variant || r.storage != dt || r.cases == 0) continue;
        if (f.generator != "*" && r.generator != f.generator) continue;
        if (f.op != "*" && r.op != f.op) continue;
        fc.applicable = true;
        if (r.failed) ++fc.failing_records;
        if (witnesses(f, r.generator)) witness[r.op][r.generator] = std::max(witness[r.op][r.generator], r.cases);
      }
      for (const auto& [op, by_generator] : witness) {
        int64_t n = 0;
        for (const auto& [g, cases] : by_generator) n += cases;
        fc.witness_cases = std::max(fc.witness_cases, n);
      }
      if (fc.applicable) checks.push_back(fc);
    }
  return checks;
}

std::vector<const KernelEntry*> selected_kernels(const RunConfig& cfg) {
  std::vector<const KernelEntry*> out;
  for (const KernelEntry& k : cfg.extra_kernels)
    if (std::find(cfg.ops.begin(), cfg.ops.end(), k.op) != cfg.ops.end() &&
        std::find(cfg.dtypes.begin(), cfg.dtypes.end(), k.storage) != cfg.dtypes.end())
      out.push_back(&k);
  if (!cfg.builtin) return out;
  for (const KernelEntry& k : builtin_kernels()) {
    if (std::find(cfg.ops.begin(), cfg.ops.end(), k.op) == cfg.ops.end()) continue;
    if (std::find(cfg.dtypes.begin(), cfg.dtypes.end(), k.storage) == cfg.dtypes.end()) continue;
    if (!selected(cfg.variants, k.variant)) continue;
    out.push_back(&k);
  }
  return out;
}

RunResult run_suite(const RunConfig& cfg, const std::function<void(int64_t, int64_t)>& progress) {
  const auto kernels = selected_kernels(cfg);
  std::map<std::tuple<const KernelEntry*, size_t, std::string>, size_t> index;
  RunResult result;
  result.records = plan_records(cfg, kernels, index);
  const std::vector<WorkItem> items = per_op_items(cfg);
  const std::vector<OwnedCase> todo = owned_cases(cfg, items, kernels);
  const FamilyUnits units = family_units(cfg);
  result.cases_planned = static_cast<int64_t>(todo.size());
  // Finished items wait in `pending` until every earlier item is merged: records are merged in
  // case order whatever the thread timing, and memory stays O(threads), not O(cases) (a sharded run
  // also keeps its cases for the report's shard_items).
  std::map<size_t, CaseResult> pending;  // by position in `todo`
  size_t cursor = 0;
  std::atomic<size_t> next{0};
  std::mutex journal_mu, merge_mu;
  auto merge_one = [&](size_t k, const CaseResult& item) {
    ++result.cases_done;
    for (const auto& [family, o] : item.oracle)
      result.max_oracle_precision_bits = std::max(result.max_oracle_precision_bits, o.bits);
    merge_item(items[todo[k].item], static_cast<int64_t>(todo[k].item), cfg, item, result.records);
    if (cfg.shard.sharded()) result.shard_items.emplace_back(static_cast<int64_t>(todo[k].item), item);
  };
  auto worker = [&] {
    for (size_t k; !stop_requested() && (k = next++) < todo.size();) {
      CaseResult item = run_item(cfg, units, items[todo[k].item], todo[k], kernels, index, journal_mu);
      // Must-pass failures only: known-weak kernels fail by design and report-only ones do not fail the run.
      count_finished(std::any_of(item.partials.begin(), item.partials.end(), [&](const CasePartial& p) {
        const Record& rec = result.records[p.record];  // expectation and known_weak are fixed before the workers start
        return p.judgement.failed && !rec.known_weak && rec.expectation == Expectation::must_pass;
      }));
      std::lock_guard<std::mutex> lock(merge_mu);
      pending.emplace(k, std::move(item));
      for (auto it = pending.find(cursor); it != pending.end(); it = pending.find(++cursor)) {
        merge_one(cursor, it->second);
        pending.erase(it);
      }
      if (progress) progress(result.cases_done + static_cast<int64_t>(pending.size()), result.cases_planned);
    }
  };
  run_on_threads(cfg.threads, todo.size(), worker);
  for (const auto& [i, item] : pending) merge_one(i, item);  // after a gap left by an interruption
  result.interrupted = result.cases_done < result.cases_planned;
  std::sort(result.shard_items.begin(), result.shard_items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  result.flag_checks = flag_checks_of(cfg, result.records);
  return result;
}

std::vector<FlagCheck> flag_checks_of(const RunConfig& cfg, const std::vector<Record>& records) {
  std::vector<FlagView> views;
  for (const Record& r : records)
    views.push_back({r.key.variant, r.key.storage, std::string_view(r.key.property).substr(r.key.property.find('/') + 1),
                     r.cases, r.failed(), op_name(r.key.op)});
  return evaluate_flags(cfg.dtypes, views);
}

int64_t planned_cases(const RunConfig& cfg) {
  return static_cast<int64_t>(owned_cases(cfg, per_op_items(cfg), selected_kernels(cfg)).size());
}

OpFamilies live_families(const std::vector<const KernelEntry*>& kernels, DType dt, int first_family) {
  OpFamilies present{};
  for (const KernelEntry* k : kernels)
    if (k->storage == dt) present[op_family_index(k->op)] = true;
  return live_families(present, first_family);
}

FamilyUnits family_units(const RunConfig& cfg) {
  std::array<bool, kOpFamilies> in_run{};
  for (Op op : cfg.ops) in_run[op_family_index(op)] = true;
  FamilyUnits u;
  for (int f = 0; f < kOpFamilies; ++f)
    if (in_run[f]) u.families.push_back(f);
  if (u.families.empty()) u.families.push_back(0);
  return u;
}

int64_t FamilyUnits::unit(int64_t item, int family) const {
  for (size_t k = 0; k < families.size(); ++k)
    if (families[k] == family) return per_case() * item + static_cast<int64_t>(k);
  throw std::logic_error("a shard unit of an op family the run does not have");
}

void join_case_pieces(int64_t item_index, CaseResult& whole, CaseResult&& piece) {
  const auto refuse = [&](const std::string& why) {
    throw std::invalid_argument("the shards' parts of per-op case " + std::to_string(item_index) + " " + why);
  };
  if (piece.seed != whole.seed || piece.digest != whole.digest || piece.rows != whole.rows || piece.n != whole.n ||
      std::memcmp(&piece.eps, &whole.eps, sizeof(double)) != 0)
    refuse("are not the same case (seed, digest, shape or eps differ)");
  for (int f = 0; f < kOpFamilies; ++f) {
    if (!piece.families[f]) continue;
    if (whole.families[f]) refuse("cover the " + std::string(family_label(family_at(f))) + " kernels twice");
    whole.families[f] = true;
  }
  for (auto& [f, info] : piece.oracle) {
    if (f < 0 || f >= kOpFamilies || !piece.families[f]) refuse("carry an oracle certificate of a family they do not cover");
    whole.oracle[f] = info;
  }
  for (CasePartial& p : piece.partials) whole.partials.push_back(std::move(p));
}

bool records_passed(const RunResult& r) {
  for (const Record& rec : r.records) {
    // An external kernel's only bound is the contract: its expectation decides (own = verdict).
    const bool own_matters = !is_external_kernel_name(rec.key.kernel);
    if ((rec.expectation == Expectation::must_pass && rec.failed()) || (own_matters && rec.own_failed_cases > 0)) return false;
  }
  return true;
}

bool all_flags_met(const std::vector<FlagCheck>& flags) {
  return std::all_of(flags.begin(), flags.end(), [](const FlagCheck& f) { return f.met(); });
}

bool run_passed(const RunResult& r) { return all_flags_met(r.flag_checks) && records_passed(r) && !r.interrupted; }

}  // namespace normcheck
