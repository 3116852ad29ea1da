#include <cmath>
#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "kernels/block_registry.hpp"
#include "properties/block_generators.hpp"
#include "properties/contraction_generators.hpp"
#include "properties/generators.hpp"
#include "sections/section.hpp"
#include "suite/suites.hpp"

namespace normcheck::cli {

/// The options naming a record (--record, --block-record, ...), as the sections declare them.
std::string replay_record_options() {
  std::string names;
  for (const sections::Section* s : sections::registry())
    if (!s->replay_option().empty()) names += (names.empty() ? "--" : ", --") + std::string(s->replay_option());
  return names;
}

int replay_command(const ReplayOptions& o) {
  if (o.kernel_timeout && !(*o.kernel_timeout > 0 && std::isfinite(*o.kernel_timeout))) {
    std::fprintf(stderr, "normcheck: error: --kernel-timeout must be a finite number > 0\n");
    return kExitBadInput;
  }
  if (o.records.size() != 1) {
    std::fprintf(stderr, "normcheck: error: replay needs exactly one of %s\n", replay_record_options().c_str());
    return kExitBadInput;
  }
  const auto& [key, index] = o.records.front();
  return sections::section_by_key(key)->replay(o, index);
}

int list_command() {
  std::printf("dtypes:");
  for_each_dtype([](auto tag) { std::printf(" %s", dtype_traits<decltype(tag)>::name.data()); });
  std::printf("\nops: layernorm_forward layernorm_backward rmsnorm_forward rmsnorm_backward linear_rmsnorm qr_contraction\nkernels (variant storage accum):\n");
  for (const KernelEntry& k : builtin_kernels())
    if (!is_backward(k.op))
      std::printf("  %-24s %-5s %-5s%s\n", k.variant.c_str(), dtype_info(k.storage).name.data(),
                  dtype_info(k.accum).name.data(), k.known_weak ? "  (known weak)" : "");
  std::printf("block kernels (op linear_rmsnorm; variant storage accum):\n");
  for (const BlockKernelEntry& k : builtin_block_kernels())
    std::printf("  %-28s %-5s %-5s%s\n", k.variant.c_str(), dtype_info(k.storage).name.data(),
                dtype_info(k.accum).name.data(), k.known_weak ? "  (planted defect)" : "");
  std::printf("generators:");
  for (const auto& g : gen::row_generator_names()) std::printf(" %s", g.c_str());
  std::printf("\nblock generators:");
  for (const auto& g : gen::block_generator_names()) std::printf(" %s", g.c_str());
  std::printf("\nqr_contraction generators (the seed's categories):");
  for (const auto& g : gen::contraction_generator_names()) std::printf(" %s", g.c_str());
  std::printf("\nsuites:\n");
  for (const SuiteDef& s : suites()) std::printf("  %-8s %s\n", s.name.data(), s.description.data());
  return kExitOk;
}

}  // namespace normcheck::cli
