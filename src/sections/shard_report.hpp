#pragma once
/// One shard's report as `merge` reads it: the sections' merge rules take these.
#include <string>

#include <nlohmann/json.hpp>

namespace normcheck::nightly {

struct ShardReport {
  std::string path;
  nlohmann::json report;
};

}  // namespace normcheck::nightly
