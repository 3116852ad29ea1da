#pragma once
/// One case of a grouped normalization (batch norm, group norm, instance norm, layer norm over the
/// trailing axes, channel layer norm, RMSNorm over the trailing axes) on an image or sequence
/// tensor: exact values of the kernel's inputs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/axes.hpp"
#include "core/dtype.hpp"

namespace normcheck {

struct GroupedNormCase {
  DType dtype = DType::f32;
  audit::TensorSpec tensor;
  audit::NormSpec spec;  ///< any kind; layer_norm / rms_norm over spec.normalized_dims trailing axes
  double eps = 1e-5, momentum = 0.1;
  std::vector<double> x, dy;                                ///< entries, memory order
  std::vector<double> gamma, beta;                 ///< the affine shape of the kind (audit::account), flattened
  std::vector<double> running_mean, running_var;  ///< one per channel (batch norm uses them)
  std::string generator;
  uint64_t seed = 0;
};

/// Group id and gamma/beta index of every entry of the case.
std::vector<int64_t> case_groups(const GroupedNormCase& c);
std::vector<int64_t> case_params(const GroupedNormCase& c);
/// Channels (the running statistics' length) and gamma/beta values with their shape (memory order,
/// the axes the parameters vary along: (C) for per-channel kinds, the normalized axes otherwise).
int64_t case_channel_count(const GroupedNormCase& c);
int64_t case_param_count(const GroupedNormCase& c);
std::vector<int64_t> case_param_shape(const GroupedNormCase& c);
/// The kernel has a beta and a centring mean (false for RMSNorm).
bool case_centred(const GroupedNormCase& c);

/// One clear message for a malformed case, else nullopt.
std::optional<std::string> validate_grouped_case(const GroupedNormCase& c);

}  // namespace normcheck
