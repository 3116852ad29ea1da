// normcheck: certified numerical verification of normalization kernels.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string_view>

#include "cli/command_line.hpp"
#include "core/allocator.hpp"
#include "cli/self_docs.hpp"
#include "report/version.hpp"
#include "sections/section.hpp"
#include "external/child_process.hpp"
#include "external/plugin_worker_main.hpp"

namespace {

/// An interrupted command takes its external workers down with it, then dies of the signal.
extern "C" void on_fatal_signal(int sig) {
  normcheck::external::kill_all_children();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

/// At every return from main: no grandchild of a kernel that escaped its worker's process group
/// (setsid, double fork) outlives the command (issue 48).
struct KillAdoptedDescendantsAtExit {
  KillAdoptedDescendantsAtExit() { normcheck::external::adopt_orphaned_descendants(); }
  ~KillAdoptedDescendantsAtExit() { normcheck::external::kill_adopted_descendants(); }
};

std::string joined_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "__plugin-worker") return normcheck::external::plugin_worker_main(argc, argv);
  normcheck::keep_freed_memory();
  const KillAdoptedDescendantsAtExit no_escaped_children;
  std::signal(SIGPIPE, SIG_IGN);  // a dead worker's pipe is an error to report, not a reason to die
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, on_fatal_signal);  // run installs its own
  normcheck::cli::CommandLine cl;
  std::vector<std::pair<std::string, std::string>> replay_records;
  for (const normcheck::sections::Section* s : normcheck::sections::registry())
    if (!s->replay_option().empty()) replay_records.emplace_back(std::string(s->replay_option()), std::string(s->key()));
  normcheck::cli::declare_command_line(cl, replay_records, normcheck::version_text);
  if (const std::string unknown = normcheck::cli::unknown_subcommand(cl.app, argc, argv); !unknown.empty()) {
    normcheck::cli::print_error(unknown);
    return normcheck::cli::kExitBadInput;
  }
  try {
    cl.app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cl.app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cl.app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cl.app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    normcheck::cli::print_error(normcheck::cli::unexpected_arguments(cl.app, e));
    return normcheck::cli::kExitBadInput;
  } catch (const CLI::ParseError& e) {
    normcheck::cli::print_error(std::string(e.what()) + " (see normcheck --help)");
    return normcheck::cli::kExitBadInput;
  }
  if (cl.quiet && cl.verbose) {
    normcheck::cli::print_error("--quiet and --verbose exclude each other");
    return normcheck::cli::kExitBadInput;
  }
  cl.run_opts.quiet = cl.quiet;
  cl.run_opts.verbose = cl.diff_opts.verbose = cl.merge_opts.verbose = cl.verbose;
  cl.merge_opts.quiet = cl.quiet;
  // --quiet: commands whose stdout is a table or a progress account print nothing there (their product
  // is a file or the exit code); run and merge keep their result lines; listings print what was asked.
  const bool stdout_is_the_product = *cl.run || *cl.merge || *cl.list || *cl.suites || *cl.version || *cl.bounds ||
                                     *cl.completion || *cl.manpage || *cl.history_show;
  if (cl.quiet && !stdout_is_the_product && !std::freopen("/dev/null", "w", stdout)) {
    normcheck::cli::print_error("--quiet: cannot redirect stdout to /dev/null");
    return normcheck::cli::kExitBadInput;
  }
  try {
    if (*cl.version) {
      std::fputs(normcheck::version_text().c_str(), stdout);
      return normcheck::cli::kExitOk;
    }
    if (*cl.completion) {
      std::fputs(normcheck::cli::bash_completion(cl.app, normcheck::cli::listing()).c_str(), stdout);
      return normcheck::cli::kExitOk;
    }
    if (*cl.manpage) {
      std::fputs(normcheck::cli::man_page(cl.app, normcheck::tool_version()).c_str(), stdout);
      return normcheck::cli::kExitOk;
    }
    if (*cl.history_add) return normcheck::cli::history_add_command(cl.history_opts);
    if (*cl.history_show) return normcheck::cli::history_show_command(cl.history_opts);
    if (*cl.run) return normcheck::cli::run_command(cl.run_opts, joined_args(argc, argv));
    if (*cl.replay) return normcheck::cli::replay_command(cl.replay_opts);
    if (*cl.list) return normcheck::cli::list_command(cl.list_json);
    if (*cl.search) return normcheck::cli::search_command(cl.search_opts);
    if (*cl.bounds) {
      for (const char* name : {"--op", "--kernel", "--dtype"})
        if (cl.bounds->count(name) > 0) cl.bounds_opts.given.emplace_back(name);
      return normcheck::cli::bounds_command(cl.bounds_opts);
    }
    if (*cl.bias) return normcheck::cli::bias_command(cl.bias_opts);
    if (*cl.bench) return normcheck::cli::bench_external_command(cl.bench_opts);
    if (*cl.bench_oracle) return normcheck::cli::bench_oracle_command(cl.bench_oracle_opts);
    if (*cl.bench_audit) return normcheck::cli::bench_audit_command(cl.bench_audit_opts);
    if (*cl.contract) return normcheck::cli::contract_command(cl.contract_opts);
    if (*cl.example) return normcheck::cli::example_block_command(cl.example_opts);
    if (*cl.audit) return normcheck::cli::audit_axes_command(cl.audit_opts);
    if (*cl.diff) return normcheck::cli::diff_command(cl.diff_opts);
    if (*cl.suites) return normcheck::cli::suites_command(cl.suites_json);
    if (*cl.merge) return normcheck::cli::merge_command(cl.merge_opts, joined_args(argc, argv));
    if (*cl.render) return normcheck::cli::render_command(cl.render_opts);
    if (*cl.budget) return normcheck::cli::norm_budget_command(cl.budget_opts, joined_args(argc, argv));
    if (*cl.budget_search) return normcheck::cli::search_budget_command(cl.budget_search_opts);
  } catch (const std::exception& e) {
    normcheck::cli::print_error(e.what());
    return normcheck::cli::kExitBadInput;
  }
  return normcheck::cli::kExitBadInput;
}
