#pragma once
/// One case of a grouped normalization (batch norm, group norm, instance norm) on an image or
/// sequence tensor: exact values of the kernel's inputs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/axes.hpp"
#include "core/dtype.hpp"

namespace normcheck {

struct GroupedNormCase {
  DType dtype = DType::f32;
  audit::TensorSpec tensor;
  audit::NormSpec spec;  ///< batch_norm, group_norm or instance_norm
  double eps = 1e-5, momentum = 0.1;
  std::vector<double> x, dy;                                ///< entries, memory order
  std::vector<double> gamma, beta, running_mean, running_var;  ///< one per channel
  std::string generator;
  uint64_t seed = 0;
};

/// Group id and channel of every entry of the case.
std::vector<int64_t> case_groups(const GroupedNormCase& c);
std::vector<int64_t> case_channels(const GroupedNormCase& c);
int64_t case_channel_count(const GroupedNormCase& c);

/// One clear message for a malformed case, else nullopt.
std::optional<std::string> validate_grouped_case(const GroupedNormCase& c);

}  // namespace normcheck
