#pragma once
/// Documentation generated from the command line itself: `normcheck completion bash` and
/// `normcheck manpage` (both installed by `cmake --install`, docs/terminal.md).
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace normcheck::cli {

/// A bash completion script: subcommands, each subcommand's options, option values from `listing`
/// (`normcheck list --json`: dtypes, ops, generators, kernels, suites), file names for other values.
std::string bash_completion(const CLI::App& app, const nlohmann::json& listing);

/// A man page (groff -man) with every subcommand, option and description, and the exit codes.
std::string man_page(const CLI::App& app, const std::string& version);

}  // namespace normcheck::cli
