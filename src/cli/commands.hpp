#pragma once
/// The normcheck subcommands. Each returns the process exit code: 0 ok, 1 a check failed,
/// 2 bad usage or bad input.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sections/options.hpp"

namespace normcheck::cli {

using normcheck::kExitBadInput;
using normcheck::kExitCheckFailed;
using normcheck::kExitOk;

using normcheck::ReplayOptions;
using normcheck::RunOptions;

/// Prints "normcheck: error: <what>" as one line (control characters escaped) on stderr.
void print_error(const std::string& what);

/// Says on stderr where the report goes because no --out was given (once the command line is known to
/// be good): a command never writes where the user did not look without a word.
void announce_default_output(const std::string& path);

struct SearchOptions {
  std::vector<std::string> ops = {"layernorm_forward"};
  std::vector<std::string> variants = {"two_pass"};
  std::vector<std::string> dtypes = {"f32"};
  int64_t rows = 2, n = 32;
  uint64_t seed = 1;
  int restarts = 6, iterations = 300;
  std::string out;  ///< corpus file to merge the worst cases into (empty: none)
  bool structured = false;  ///< write the structured adversarial cases to `out` instead of searching
  bool replace = false;     ///< a found case replaces a corpus case of the same key even when its ratio is lower
};

struct BiasOptions {
  std::vector<std::string> dtypes = {"f32", "f64"};
  int64_t cases = 1000, record_cases = 10, max_elements = 1024;
  uint64_t seed = 20261201;
  int threads = 1;
  bool sound_only = false;  ///< skip the planted kernels (a long false-alarm run)
};

struct BoundsOptions {
  std::string op = "layernorm_forward", variant = "two_pass", dtype = "f32", generator = "normal";
  int64_t rows = 1, n = 1024;
  uint64_t seed = 1;
  bool json = false;
  std::string input;               ///< the user's case: hexfloat JSON (a report's worst_case) or x as .npy
  double eps = 1e-5;               ///< eps of a .npy input
  std::optional<int64_t> element;  ///< the element to explain (default: each output's largest bound)
  std::string output;              ///< the one output to explain (default: every output of the op)
  /// --record K: record K of the report given with --input; its op, kernel, dtype, output, worst
  /// element and case (regenerated from its seed when not inline, as replay does)
  std::optional<int64_t> record;
  std::vector<std::string> given;  ///< which of --op, --kernel, --dtype the command line gave (a record fixes them)
};


struct ContractOptions {
  std::string in, out, dtype = "f32", certificate;
  std::optional<double> eps;  ///< default: the module list's, else 1e-5
  std::string producer, norm;  ///< default: from the module list, else 0 and 1
  std::vector<std::string> consumers;  ///< default: from the module list, else 2
  std::string graph;           ///< --graph: the module list (docs/qr-contraction.md)
  bool assume_chain = false;   ///< --assume-chain: trust the state dict to be a plain chain
  bool allow_growth = false;   ///< --allow-growth: write a contraction with more parameters
  int samples = 64;
  uint64_t seed = 1;
};

struct ExampleBlockOptions {
  std::string out, dtype = "f32", generator = "random";
  std::string modules;  ///< also write the block's module list here
  int64_t d = 6, n = 10, m = 4;
  uint64_t seed = 1;
};

struct AuditOptions {
  std::vector<int64_t> shape;
  std::string layout = "nchw", kind = "batch_norm", kernel, dtype = "f32", out;
  std::string exec;  ///< probe an external kernel through the exec protocol (op "normalize")
  std::string serve;  ///< or through serve mode
  double exec_timeout = 10;
  int normalized_dims = 1;
  int64_t groups = 1;
  bool tied_affine = false, no_affine = false, no_running_stats = false;
  uint64_t seed = 1;
};

struct DiffOptions {
  std::string base, now, out;
  bool verbose = false;
  double max_ulp_factor = 2.0, rms_ulp_factor = 1.5, bound_ratio_increase = 0.10;
  bool force = false;
  bool allow_removed = false;  ///< records judged in BASE and not in NEW do not fail the comparison
};

/// Failing records explained in the terminal by run and merge without --verbose (most severe first).
constexpr size_t kExplainedFailures = 10;

struct MergeOptions {
  bool quiet = false, verbose = false;
  std::vector<std::string> shards;
  std::string out;
};

/// normcheck render: the HTML report of REPORT, optionally against a --diff base.
struct HistoryOptions {
  std::string db, report, record;
};
int history_add_command(const HistoryOptions& o);
int history_show_command(const HistoryOptions& o);

struct RenderOptions {
  std::string history;  ///< --history DB: trend lines from the nightly history
  std::string report, diff, out;
  int worst = 20;
  bool allow_removed = false;  ///< as diff's: the banner's nightly verdict accepts removed records
};
/// normcheck norm-budget (issue 9): the port-Hamiltonian budget check and growth table.
struct BudgetOptions {
  std::string out;  ///< empty: reports/norm_budget.json, announced on stderr
  std::vector<std::string> dtypes;
  int64_t width = 32;
  std::vector<int64_t> depths = {24, 48, 120, 240, 300};
  double h = 0.25, gain = 1.0;
  int cases = 2, threads = 1;
  uint64_t seed = 20261130;
};
int norm_budget_command(const BudgetOptions& o, const std::string& command_line);

/// normcheck search-budget (issue 20): worst-case search over the stream's initial state and port signals.
struct BudgetSearchOptions {
  std::vector<std::string> dtypes = {"f32", "bf16"}, objectives = {"tightness", "slack"};
  int64_t width = 8, depth = 12;
  double h = 0.25;
  int restarts = 4, iterations = 40;
  uint64_t seed = 1;
  std::string out;  ///< the corpus (JSON) of the worst cases found; empty: none written
};
int search_budget_command(const BudgetSearchOptions& o);

/// normcheck bench-external: calls per second of each external-call path, baseline and persistent side by side.
struct BenchOptions {
  std::string plugin, exec, serve, op = "layernorm_forward", dtype = "f32";
  int64_t rows = 1, n = 64, calls = 2000, baseline_calls = 100;
  double timeout = 10;
};
int bench_external_command(const BenchOptions& o);

struct BenchOracleOptions {
  std::vector<std::string> dtypes = {"bf16", "f32", "f64"};
  std::vector<int64_t> ns = {64, 1024, 4096};
  std::string generator = "normal", json;
  std::vector<std::string> paths;  ///< oracle paths to time (empty: all); the float64 kernel always runs
  int64_t elements = 16384;  ///< rows x n per case
  int cases = 2, repeats = 3;
};
int bench_oracle_command(const BenchOracleOptions& o);

struct BenchAuditOptions {
  std::string dtype = "f32", json;
  int repeats = 3;
  int64_t max_side = 32;  ///< NCHW tensors (2, 8, s, s) for s = 2, 4, ... max_side
};
int bench_audit_command(const BenchAuditOptions& o);

int run_command(const RunOptions& o, const std::string& command_line);
int render_command(const RenderOptions& o);
int merge_command(const MergeOptions& o, const std::string& command_line);
int diff_command(const DiffOptions& o);
int audit_axes_command(const AuditOptions& o);
int contract_command(const ContractOptions& o);
int example_block_command(const ExampleBlockOptions& o);
int bias_command(const BiasOptions& o);
int search_command(const SearchOptions& o);
int bounds_command(const BoundsOptions& o);
int replay_command(const ReplayOptions& o);
int list_command(bool json);
/// Everything `list` shows, from the registries (never a hand-kept copy): dtypes, ops, kernels, block
/// kernels, generators, block and contraction generators, suites (`list --json`; shell completion).
nlohmann::json listing();
int suites_command(bool json);

}  // namespace normcheck::cli
