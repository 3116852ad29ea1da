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
  // The first process to finish publishes its report; one that finishes later keeps that one (a hard
  // link fails when the path exists) instead of replacing it under a test that already read it (the
  // reports differ in times and paths).
  std::error_code ec;
  fs::create_hard_link(tmp, path, ec);
  if (ec && !fs::exists(path)) fs::rename(tmp, path, ec);  // a file system without hard links
  fs::remove(tmp, ec);
  fs::remove(tmp.string() + ".failures.jsonl", ec);
  for (const auto& e : fs::directory_iterator(dir, ec)) {  // reports of older builds
    const std::string name = e.path().filename().string();
    if (name.rfind("quick_", 0) == 0 && e.path() != path) fs::remove(e.path(), ec);
  }
  return path;
}

inline nlohmann::json load_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

inline fs::path save_json(const nlohmann::json& j, const std::string& name) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << j.dump();
  return p;
}

/// Index of a passing record whose errors, divided by 10 in a base report, make the real report a regression.
inline size_t regressable_record(const nlohmann::json& report) {
  const nlohmann::json& records = report.at("records");
  for (size_t i = 0; i < records.size(); ++i) {
    const nlohmann::json& r = records[i];
    if (r.at("verdict") == "pass" && r.at("max_ulp").is_number() && r.at("max_ulp").get<double>() > 2 &&
        r.at("max_bound_ratio").is_number() && r.at("max_bound_ratio").get<double>() > 0.2)
      return i;
  }
  ADD_FAILURE() << "no record to plant a regression on";
  return 0;
}

/// Makes record i of `base` ten times better (max/RMS ULP, err/bound): against it, the real report regressed.
inline void plant_regression(nlohmann::json& base, size_t i) {
  nlohmann::json& better = base["records"][i];
  for (const char* f : {"max_ulp", "rms_ulp", "max_bound_ratio"}) better[f] = better[f].get<double>() / 10;
}

}  // namespace
