#pragma once
/// Runs a verification suite: generates cases, evaluates the certified oracle once per case,
/// judges every selected kernel, and aggregates records deterministically (case order, not
/// thread timing, decides every tie).
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "generators/generators.hpp"
#include "suite/judge.hpp"
#include "suite/work_items.hpp"

namespace normcheck {

/// How the run reached its external kernels, kept in the report so that `normcheck replay` can
/// call them again as printed.
struct ExternalSpecs {
  std::vector<std::string> plugins;  ///< absolute library paths (--kernel)
  std::string exec, serve;           ///< --exec / --serve commands as given
  std::string name = "exec";         ///< --exec-name
  std::string block_form;            ///< --block-form of a served linear_rmsnorm kernel
  std::string contract;              ///< --contract of the external LayerNorm kernels ("": as each declares; auto)
  double timeout_s = 10, serve_startup_s = 120;
  bool any() const { return !plugins.empty() || !exec.empty() || !serve.empty(); }
};

struct RunConfig {
  std::string suite = "default";
  int suite_version = 1;
  std::vector<Op> ops;
  std::vector<std::string> variants;  ///< empty: all
  std::vector<DType> dtypes;
  std::vector<std::string> generators;
  int cases_per_generator = 3;
  uint64_t seed = 1;
  int threads = 1;
  gen::ShapeRequest shape;
  std::optional<double> eps_override;
  std::string journal_path;  ///< failing cases are appended here as JSON lines (empty: none)
  bool builtin = true;                     ///< judge the built-in kernels
  std::vector<KernelEntry> extra_kernels;  ///< plugin kernels (external/plugin.hpp), judged too
  bool external_report_only = false;       ///< external kernels' records are report_only
  ExternalSpecs external;                  ///< where extra_kernels came from (reported)
  ShardSpec shard;  ///< the slice this run does (per-op units: FamilyUnits)
};

/// Identity of a report record.
struct RecordKey {
  Op op;
  std::string kernel, variant;
  DType storage, accum;
  std::string property;  ///< "accuracy/<generator>"
  std::string output;
};

/// Where a record's worst element came from: enough to regenerate and replay it.
struct WorstCase {
  int64_t case_index = -1;
  uint64_t case_seed = 0;
  std::string generator;
  int64_t rows = 0, n = 0;
  double eps = 0;
  uint64_t digest = 0;
  WorstElement element;
};

/// One case's contribution to a record: its shape and its largest errors (error against n).
struct CasePoint {
  int64_t case_index = 0, rows = 0, n = 0;
  double max_ulp = 0, max_bound_ratio = 0;
};

struct Record {
  RecordKey key;
  std::string bound_id;      ///< the verdict bound, e.g. "LN-TWOPASS-SEQ[f16/f32]"
  std::string own_bound_id;  ///< the kernel's own bound (equal for sound kernels)
  Expectation expectation = Expectation::must_pass;
  bool known_weak = false;
  int64_t cases = 0, failed_cases = 0;
  int64_t uncertified_cases = 0;  ///< cases with elements the oracle could not certify (unjudged)
  int64_t declined_cases = 0;     ///< cases an external kernel declined (unsupported): not judged, not in `cases`
  ErrorAccumulator acc;
  ErrorAccumulator own;            ///< against the own bound
  int64_t own_failed_cases = 0;    ///< rigor failures: the own bound was violated
  double oracle_max_err_ulps = 0;
  int oracle_precision_bits = 0;
  std::map<int, int64_t> oracle_levels;  ///< cases per precision (bits) of the cascade level that certified them
  int64_t kernel_failures = 0;         ///< cases where an external kernel crashed, hung or errored
  std::string first_kernel_failure;    ///< the first such message, with its case index
  WorstCase worst;
  std::vector<CasePoint> points;  ///< per case, in case order
  BiasAccumulator bias;           ///< the directed-rounding statistic over every case (docs/bounds.md 16)
  /// External LayerNorm kernels judged with contract "auto": the looser sound class's bound
  /// (LN-WELFORDMERGE-ANY) the record is also measured against, and its failures (section 2.7.5).
  std::string looser_bound_id;
  ErrorAccumulator looser;
  int64_t looser_failed_cases = 0;
  /// A failing case (of the verdict bound, and of the looser contract's too where there is one; they
  /// may be different cases: a kernel holding neither everywhere is in neither class), or a flagged
  /// bias: outputs systematically rounded toward or away from zero.
  bool failed() const { return (failed_cases > 0 && (looser_bound_id.empty() || looser_failed_cases > 0)) || bias.flagged(); }
  /// Failed the tightest contract but held the looser sound class's bound on every case: reported as
  /// such ("within the Welford contract, not the two-pass one"), not as a failure.
  bool within_looser_contract() const { return !looser_bound_id.empty() && failed_cases > 0 && !failed(); }
};

/// Outcome of one flag expectation: was the known-weak kernel caught?
struct FlagCheck {
  FlagExpectation expectation;
  std::string storage;
  int64_t failing_records = 0;
  bool applicable = false;  ///< the run contained matching records
  int64_t witness_cases = 0;  ///< cases judged on the expectation's witness generators (max over its ops)
  bool caught() const { return failing_records > 0; }
  /// Enough witness cases that a miss is the harness's failure, not chance or a blind selection.
  bool required() const { return witness_cases >= required_witness_cases(expectation); }
  /// What the verdict needs: caught, or too few witness cases to require it.
  bool met() const { return caught() || !required(); }
};

/// Which op families a piece of work covers; index: family_index.
using OpFamilies = std::array<bool, kOpFamilies>;

/// One judged output of one kernel on one case: record `record` (plan order) and its judgement.
struct CasePartial {
  size_t record;
  OutputJudgement judgement;
};

/// What one case contributes to the records: its identity, the oracle's certificate per op family,
/// and every kernel output's judgement. Records fold these in case order (merge_item), in a run and
/// in `normcheck merge` alike, so that merged shards equal the unsharded run bit for bit.
struct CaseResult {
  struct OracleInfo {
    double err_ulps = 0;
    int bits = 0;
    bool certified = true;
  };
  std::map<int, OracleInfo> oracle;   ///< key: family_index
  OpFamilies families{};              ///< the op families (shard units) of the case this result covers
  uint64_t seed = 0, digest = 0;
  int64_t rows = 0, n = 0;
  double eps = 0;
  std::vector<CasePartial> partials;
};

struct RunResult {
  std::vector<Record> records;
  /// A sharded run's cases, (item index, result) in case order: what `merge` folds (empty unsharded).
  std::vector<std::pair<int64_t, CaseResult>> shard_items;
  std::vector<FlagCheck> flag_checks;
  int64_t cases_done = 0, cases_planned = 0;
  bool interrupted = false;
  int max_oracle_precision_bits = 0;
};

/// What a flag expectation needs of a record (per-op or block).
struct FlagView {
  std::string_view variant;
  DType storage;
  std::string_view generator;
  int64_t cases;
  bool failed;
  std::string_view op;  ///< op_name of the record's op ("linear_rmsnorm" for block records)
};

/// Checks every flag expectation (tolerance table) that applies to the records of `dtypes`.
std::vector<FlagCheck> evaluate_flags(const std::vector<DType>& dtypes, const std::vector<FlagView>& records);


/// Case seed of (dtype, generator index, case index) under the run seed.
uint64_t case_seed(uint64_t run_seed, DType dt, size_t generator_index, int64_t case_index);

/// The case of a work item, exactly as the run judges it (generator, seed, shape, eps override).
LayerNormCase suite_case(const RunConfig& cfg, const WorkItem& w);
/// Its (rows, n), without generating it.
std::pair<int64_t, int64_t> suite_case_shape(const RunConfig& cfg, const WorkItem& w);

/// Cases the config's shard plans.
int64_t planned_cases(const RunConfig& cfg);

/// Every work item of the config, in case order (dtype, generator, case).
std::vector<WorkItem> per_op_items(const RunConfig& cfg);

/// The per-op section's shard units: one per case and op family of the run (the families of its
/// ops, in family order: an external kernel of an op not in cfg.ops is not run), item i's kernels of the run's k-th family being unit
/// F i + k for F families (the default suite's LayerNorm and RMSNorm: 2i and 2i + 1). They share
/// nothing but the case's inputs: each has its own oracle and its own records, so a shard can run
/// any of them alone and `merge` joins them exactly.
struct FamilyUnits {
  std::vector<int> families;  ///< family_index values, ascending; never empty
  int64_t per_case() const { return static_cast<int64_t>(families.size()); }
  /// The unit of item `item`'s kernels of `family`; throws std::logic_error for a family not in the run.
  int64_t unit(int64_t item, int family) const;
  int first() const { return families.front(); }
};
FamilyUnits family_units(const RunConfig& cfg);

/// The op families with a unit of work in a case: those `present` (with a kernel of the case's
/// storage dtype); when none is, the run's first family's unit alone (it still generates the case).
inline OpFamilies live_families(OpFamilies present, int first_family) {
  bool any = false;
  for (bool p : present) any = any || p;
  if (!any) present[static_cast<size_t>(first_family)] = true;
  return present;
}
/// True if the piece of work covers some family.
inline bool any_family(const OpFamilies& f) {
  for (bool p : f)
    if (p) return true;
  return false;
}
/// The same from the selected kernels, for a case of dtype `dt`.
OpFamilies live_families(const std::vector<const KernelEntry*>& kernels, DType dt, int first_family);

/// Adds `piece` (another part of the same case: another shard's families) to `whole`. Throws
/// std::invalid_argument (one line) when the two are not parts of one case or overlap.
void join_case_pieces(int64_t item_index, CaseResult& whole, CaseResult&& piece);

/// Folds one case into the records (the run's own fold, used by `merge` too).
void merge_item(const WorkItem& w, int64_t item_index, const RunConfig& cfg, const CaseResult& item, std::vector<Record>& records);

/// The flag checks of a run's records.
std::vector<FlagCheck> flag_checks_of(const RunConfig& cfg, const std::vector<Record>& records);

/// Runs the suite; `progress` (may be empty) is called after each case with (done, planned).
RunResult run_suite(const RunConfig& cfg, const std::function<void(int64_t, int64_t)>& progress = {});

/// True when every must_pass record passed and no kernel violated its own bound.
bool records_passed(const RunResult& r);

/// records_passed, every applicable flag expectation caught, and nothing interrupted.
bool run_passed(const RunResult& r);

/// Every flag check met (its weak kernel caught, or too few witness cases to require it): part of
/// the per-op, block and merged verdicts.
bool all_flags_met(const std::vector<FlagCheck>& flags);

/// The kernels a config selects, in registry order.
std::vector<const KernelEntry*> selected_kernels(const RunConfig& cfg);

}  // namespace normcheck
