#pragma once
/// The options of `normcheck run` and `normcheck replay` as the sections see them (the command line
/// fills them in src/cli/main.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace normcheck {

/// Exit codes of every command: 0 ok, 1 a check failed, 2 bad usage or bad input.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitBadInput = 2;

/// Where `run` writes its report without --out (relative to the current directory, announced on stderr).
inline constexpr const char* kDefaultReport = "reports/latest.json";

struct RunOptions {
  std::string suite = "default";
  std::vector<std::string> ops, variants, dtypes, generators, block_generators, contraction_generators;
  std::optional<uint64_t> seed;
  std::optional<int> cases, block_cases, contraction_cases, grouped_cases, jvp_cases;
  std::vector<std::string> plugins;  ///< --kernel: plugin libraries to judge
  double kernel_timeout = 10;        ///< seconds per plugin or exec call
  std::string exec, exec_name = "exec";  ///< --exec: a command implementing the exec protocol
  std::string serve;                 ///< --serve: a long-running command speaking the serve protocol
  double serve_startup_timeout = 120;  ///< seconds until a serve command's ready line
  std::string block_form;            ///< --block-form: composed or deferred, what a served linear_rmsnorm kernel computes
  std::string contract;              ///< --contract: auto, two_pass or welford for the external LayerNorm kernels ("": as declared)
  bool report_only = false;          ///< external kernels are measured, not judged (third-party libraries)
  std::string invariance = "on";     ///< --invariance: on, report_only or off (the batch_invariance section)
  int threads = 1;
  /// Seconds between progress lines when stderr is not a terminal (CI logs); 0: none.
  double progress_every = 30;
  std::string out;  ///< empty: kDefaultReport, announced on stderr
  std::optional<int64_t> rows, n, max_elements;
  std::optional<double> eps;
  bool quiet = false;    ///< no tables, no failing-record explanations (the result lines stay)
  bool verbose = false;  ///< explain every failing record (default: the 10 most severe)
  std::string junit;         ///< --junit FILE: JUnit XML, one testcase per record
  bool summary_json = false;  ///< --summary-json: one machine-readable summary line on stdout
  std::string diff;           ///< --diff BASE: the nightly verdict against BASE decides exit, JUnit and summary
  bool allow_removed = false;  ///< --allow-removed: with --diff, removed records do not fail the verdict
  std::string shard;  ///< "i/N": run only shard i of N (empty: everything)
  std::string balance_from;  ///< a report whose run.unit_seconds balance the shards (empty: the built-in estimates)
};

struct ReplayOptions {
  std::string report;
  /// The records named on the command line as (section key, index), one per --record,
  /// --block-record, ... option given (each section declares its option); replay takes exactly one.
  std::vector<std::pair<std::string, int64_t>> records;
  std::string plugin, exec, serve;       ///< an external record's kernel (default: the report's config.external)
  std::optional<double> kernel_timeout;  ///< seconds per external call
  std::string dump;                      ///< write the case, inputs and exact outputs here
};

}  // namespace normcheck
