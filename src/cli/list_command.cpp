// normcheck list: what can be named on the command line (dtypes, ops, kernels, generators, suites),
// read from the registries, as text or (--json) as one JSON object.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "ops/op_kernels.hpp"
#include "cli/commands.hpp"
#include "kernels/block_registry.hpp"
#include "generators/block_generators.hpp"
#include "generators/contraction_generators.hpp"
#include "generators/generators.hpp"
#include "sections/section.hpp"
#include "suite/suites.hpp"

namespace normcheck::cli {
namespace {

nlohmann::json kernel_row(const std::string& variant, DType storage, DType accum, bool known_weak) {
  return {{"variant", variant}, {"storage", std::string(dtype_info(storage).name)},
          {"accum", std::string(dtype_info(accum).name)}, {"known_weak", known_weak}};
}

}  // namespace

nlohmann::json listing() {
  nlohmann::json j;
  j["dtypes"] = nlohmann::json::array();
  for_each_dtype([&](auto tag) { j["dtypes"].push_back(std::string(dtype_traits<decltype(tag)>::name)); });
  j["ops"] = nlohmann::json::array();
  for (const sections::Section* s : sections::registry())
    for (std::string_view op : s->ops()) j["ops"].push_back(std::string(op));
  j["kernels"] = nlohmann::json::array();
  for (const KernelEntry& k : builtin_kernels())
    if (!is_backward(k.op)) j["kernels"].push_back(kernel_row(k.variant, k.storage, k.accum, k.known_weak));
  j["block_kernels"] = nlohmann::json::array();
  for (const BlockKernelEntry& k : builtin_block_kernels())
    j["block_kernels"].push_back(kernel_row(k.variant, k.storage, k.accum, k.known_weak));
  j["generators"] = gen::row_generator_names();
  j["block_generators"] = gen::block_generator_names();
  j["contraction_generators"] = gen::contraction_generator_names();
  j["suites"] = nlohmann::json::array();
  for (const SuiteDef& s : suites())
    j["suites"].push_back({{"name", std::string(s.name)}, {"description", std::string(s.description)}});
  return j;
}

namespace {

std::string joined(const nlohmann::json& names) {
  std::string s;
  for (const auto& n : names) s += " " + n.get<std::string>();
  return s;
}

void print_kernels(const char* title, const nlohmann::json& kernels, const char* weak_label) {
  std::printf("%s (variant storage accum):\n", title);
  for (const auto& k : kernels)
    std::printf("  %-28s %-5s %-5s%s\n", k["variant"].get<std::string>().c_str(), k["storage"].get<std::string>().c_str(),
                k["accum"].get<std::string>().c_str(), k["known_weak"].get<bool>() ? weak_label : "");
}

}  // namespace

int list_command(bool json) {
  const nlohmann::json j = listing();
  if (json) {
    std::printf("%s\n", j.dump(1).c_str());
    return kExitOk;
  }
  std::printf("dtypes:%s\nops:%s\n", joined(j["dtypes"]).c_str(), joined(j["ops"]).c_str());
  print_kernels("kernels", j["kernels"], "  (known weak)");
  print_kernels("block kernels (op linear_rmsnorm)", j["block_kernels"], "  (planted defect)");
  std::printf("generators:%s\nblock generators:%s\nqr_contraction generators (the seed's categories):%s\nsuites:\n",
              joined(j["generators"]).c_str(), joined(j["block_generators"]).c_str(),
              joined(j["contraction_generators"]).c_str());
  for (const auto& s : j["suites"])
    std::printf("  %-8s %s\n", s["name"].get<std::string>().c_str(), s["description"].get<std::string>().c_str());
  return kExitOk;
}

}  // namespace normcheck::cli
