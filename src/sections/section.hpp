#pragma once
/// One interface for every section of a run: the per-op records, the Linear o RMSNorm block, the QR
/// contraction, the grouped norms, the port-Hamiltonian budget and the axis audits.
///
/// A `Section` is what a kind of section is, whatever the run: its name in the report and in --ops,
/// how it is selected and planned from the run options (built-in or external kernels), how it merges
/// shards, its row of `normcheck suites`, and how one of its records is replayed. A `SectionRun` is
/// one planned section of one run: its shard units, its cases, running them, its verdict and its part
/// of the report and of the terminal summary.
///
/// The commands (run, merge, diff, render, suites, replay) see sections only through this interface
/// and the registry (sections/registry.cpp): adding a section is its own files plus one line there.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sections/options.hpp"
#include "suite/runner.hpp"

namespace normcheck::external {
struct PluginInfo;
class ServePool;
}  // namespace normcheck::external

namespace normcheck::nightly {
struct ShardReport;
}

namespace normcheck::sections {

/// Bad usage found while planning; the run command prints the one line and exits 2.
struct PlanError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// The external kernels of a run (--kernel, --exec, --serve): inspected plugins, the one serve pool
/// every section shares, and what the report records for replay.
struct ExternalKernels {
  std::vector<external::PluginInfo> plugins;
  std::shared_ptr<external::ServePool> serve;
  ExternalSpecs specs;
};

/// What a section plans from.
struct PlanInputs {
  const RunOptions& options;
  const RunConfig& common;          ///< the suite's configuration with the run options applied (dtypes, seed, threads, shape)
  const ExternalKernels* external;  ///< null: the built-in kernels run; else only these external kernels
  /// True when --ops names one of `ops`.
  bool names_any(const std::vector<std::string_view>& ops) const;
};

/// One planned section of one run.
class SectionRun {
 public:
  virtual ~SectionRun() = default;
  /// Shard units: a per-op case, or a unit holding every aggregate of its records (a dtype); the run
  /// command assigns them to shards by unit_costs() (ShardSpec::owner).
  virtual int64_t shard_units() const = 0;
  virtual void set_shard(const ShardSpec& shard) = 0;
  /// Cases this shard will run.
  virtual int64_t planned_cases() const = 0;
  /// Rough CPU seconds per case on this project's machine (docs/nightly.md, "Even shards"): what the
  /// shard balance weighs a unit by.
  virtual double seconds_per_case() const { return 1e-3; }
  /// Estimated cost of each shard unit, called before set_shard (all cases planned): by default the
  /// section's cases spread evenly over its units at seconds_per_case().
  virtual std::vector<double> unit_costs() const {
    const int64_t units = shard_units();
    return std::vector<double>(static_cast<size_t>(std::max<int64_t>(units, 0)),
                               units > 0 ? seconds_per_case() * static_cast<double>(planned_cases()) / static_cast<double>(units) : 0.0);
  }
  /// Runs the section's cases; failing cases are appended to `journal` (JSON lines) as they finish.
  virtual void run(const std::string& journal) = 0;
  virtual int64_t cases_done() const = 0;
  /// The section's verdict (false when it did not run to its end).
  virtual bool passed() const = 0;
  /// Every planned case ran (not interrupted).
  virtual bool complete() const = 0;
  /// Output elements judged (or failed calls) of external kernels: zero means nothing was verified.
  virtual int64_t judged_external_elements() const { return 0; }
  /// Writes the section into the report (its member, or the top level for the per-op records).
  virtual void write(nlohmann::json& report, const std::string& report_path) const = 0;
  virtual void print_summary() const {}
  /// The per-op run configuration (the report's `config`); null for the other sections.
  virtual const RunConfig* run_config() const { return nullptr; }
};

/// A kind of section.
class Section {
 public:
  virtual ~Section() = default;
  /// The report member holding the section ("records": the per-op records at the top level).
  virtual std::string_view key() const = 0;
  /// The names --ops selects the section with.
  virtual std::vector<std::string_view> ops() const = 0;
  /// Kernel variants (--kernels) the section knows.
  virtual bool knows_variant(const std::string& /*variant*/) const { return false; }
  /// The section planned for a run; null when the options do not select it. Throws PlanError.
  virtual std::unique_ptr<SectionRun> plan(const PlanInputs& in) const = 0;
  /// Merges the section of every shard into `merged` (shard order); returns the merged verdict.
  /// Throws std::invalid_argument when the shards cannot be merged.
  virtual bool merge(const std::vector<nightly::ShardReport>& shards, const std::string& out_path, nlohmann::json& merged) const = 0;
  /// Its records in a report (null when absent).
  virtual const nlohmann::json* records(const nlohmann::json& report) const;
  /// Whether its records carry verdicts and ULP metrics that `diff` compares.
  virtual bool diffed() const { return true; }
  /// Its row of `normcheck suites` for the named suite.
  virtual nlohmann::json suite_row(std::string_view suite) const = 0;
  /// The replay option naming one of its records ("record" for --record); empty: no replay.
  virtual std::string_view replay_option() const { return {}; }
  /// Replays record `index` of the report (exit code: 0 reproduced, 1 differs or failed, 2 bad input).
  virtual int replay(const ReplayOptions& o, int64_t index) const;
};

/// Every section, in run, report-summary and shard-unit order.
const std::vector<const Section*>& registry();

/// The section a report member or --ops name belongs to; null if none.
const Section* section_by_key(std::string_view key);
const Section* section_by_op(std::string_view op);

}  // namespace normcheck::sections
