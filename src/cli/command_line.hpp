#pragma once
/// The command line (CLI11): every subcommand and option, declared apart from main so that the
/// fuzz target fuzz_cli parses argv with exactly the app normcheck uses.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

namespace normcheck::cli {

/// The app, every subcommand, and the options parsing fills in.
struct CommandLine {
  CLI::App app{"normcheck: judges normalization kernels against certified arbitrary-precision oracles"};
  RunOptions run_opts;
  ReplayOptions replay_opts;
  SearchOptions search_opts;
  ContractOptions contract_opts;
  ExampleBlockOptions example_opts;
  AuditOptions audit_opts;
  DiffOptions diff_opts;
  MergeOptions merge_opts;
  RenderOptions render_opts;
  BenchOptions bench_opts;
  BenchOracleOptions bench_oracle_opts;
  BenchAuditOptions bench_audit_opts;
  BoundsOptions bounds_opts;
  BiasOptions bias_opts;
  BudgetOptions budget_opts;
  BudgetSearchOptions budget_search_opts;
  bool suites_json = false;
  bool list_json = false;
  HistoryOptions history_opts;
  bool quiet = false, verbose = false;  ///< --quiet / --verbose, accepted by every subcommand (docs/terminal.md)
  CLI::App *run = nullptr, *replay = nullptr, *list = nullptr, *search = nullptr, *contract = nullptr, *example = nullptr,
           *audit = nullptr, *diff = nullptr, *suites = nullptr, *merge = nullptr, *render = nullptr, *bench = nullptr, *bench_oracle = nullptr, *bench_audit = nullptr,
           *bias = nullptr, *bounds = nullptr, *budget = nullptr, *budget_search = nullptr, *version = nullptr, *completion = nullptr, *manpage = nullptr,
           *history = nullptr, *history_add = nullptr, *history_show = nullptr;
  std::string completion_shell;
};

/// Declares every subcommand and option of `cl.app`. `replay_records` are the replay options that
/// name a record, as (option without "--", section key): the sections declare them.
/// `version` gives the text of --version (main passes version_text; the fuzz target, built without the
/// oracle libraries, passes nothing and gets no --version flag).
void declare_command_line(CommandLine& cl, const std::vector<std::pair<std::string, std::string>>& replay_records,
                          const std::function<std::string()>& version = {});

/// "unknown command 'rn'; did you mean 'run'? ..." when argv[1] is neither an option nor a
/// subcommand of `app`; empty otherwise.
std::string unknown_subcommand(const CLI::App& app, int argc, char** argv);

/// One line for CLI11's "arguments were not expected": the first unexpected argument and, for an
/// option, the closest option of the subcommand it was given to.
std::string unexpected_arguments(const CLI::App& app, const CLI::ExtrasError& e);

}  // namespace normcheck::cli
