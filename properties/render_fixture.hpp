#pragma once
/// A small real report for the render tests, produced by the built binary once per build (cached
/// beside the binary, keyed by its modification time) and helpers to write edited copies.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "properties/cli_harness.hpp"

namespace {

/// The report of `normcheck run --suite quick` over two ops, two dtypes, the block and grouped suites, tiny case counts.
inline fs::path render_fixture_report() {
  struct stat st {};
  ::stat(NORMCHECK_BINARY, &st);
  const fs::path dir = fs::path(NORMCHECK_BINARY).parent_path() / "render_fixture";
  const fs::path path = dir / ("quick_" + std::to_string(st.st_mtime) + ".json");
  if (fs::exists(path)) return path;
  fs::create_directories(dir);
  const fs::path tmp = dir / ("writing_" + std::to_string(::getpid()) + ".json");
  const Outcome o = run_cli("run --suite quick --ops layernorm_forward,rmsnorm_forward,linear_rmsnorm,grouped_norm "
                            "--dtypes f32,bf16 --cases 2 --block-cases 1 --grouped-cases 1 --threads 2 --quiet --out " +
                            tmp.string());
  EXPECT_LE(o.exit_code, 1) << o.err;  // 1: a flag check not caught with so few cases; the report is complete
  fs::rename(tmp, path);              // atomic: parallel test processes see a whole file or none
  return path;
}

inline nlohmann::json load_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

inline fs::path save_json(const nlohmann::json& j, const std::string& name) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << j.dump();
  return p;
}

}  // namespace
