#pragma once
/// Normalization-axis accounting (seed: normalization-axis-audit): for a tensor shape and layout
/// and a declared normalization kind, the reduction groups, entries per group, learned affine
/// parameters, stored running-statistic scalars and the broadcast shapes of the statistics and of
/// gamma/beta; and the group of every entry, to compare with what a kernel actually does.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace normcheck::audit {

/// Memory layouts: dense (N, D), images NCHW and NHWC, sequences (N, L, D).
enum class Layout { dense, nchw, nhwc, sequence };

enum class NormKind {
  batch_norm,          ///< statistics per channel over every other axis (spatial batch norm)
  layer_norm,          ///< over the last `normalized_dims` axes of the tensor as stored
  channel_layer_norm,  ///< over the channel axis alone, at each position
  instance_norm,       ///< per sample and channel, over the spatial (or sequence) axes
  group_norm,          ///< per sample, over `groups` blocks of channels and the spatial axes
  rms_norm,            ///< like layer_norm over the last `normalized_dims` axes, no mean, no beta
};

struct NormSpec {
  NormKind kind = NormKind::layer_norm;
  int normalized_dims = 1;     ///< layer_norm / rms_norm: trailing axes normalized
  int64_t groups = 1;          ///< group_norm: G
  bool affine = true;          ///< learned gamma (and beta, except RMSNorm)
  bool tied_affine = false;    ///< one gamma/beta per channel, shared over the other normalized axes
  bool track_running_stats = true;  ///< batch norm (instance norm: when set explicitly)
};

struct TensorSpec {
  Layout layout = Layout::nchw;
  std::vector<int64_t> shape;  ///< in memory order
};

/// What a declared normalization does to a tensor.
struct Accounting {
  int64_t elements = 0, groups = 0, entries_per_group = 0;
  int64_t learned_parameters = 0;  ///< gamma and beta together
  int64_t running_statistics = 0;  ///< stored mean and variance scalars (no bookkeeping counter)
  std::vector<int64_t> stats_shape, affine_shape;  ///< broadcast shapes in memory order
  std::vector<bool> reduced;       ///< per memory axis: fully reduced over
  int64_t channel_blocks = 0;      ///< group norm: channels split into this many blocks (else 0)
  std::string description;         ///< e.g. "normalizes over H, W per (N, C)"
};

/// Names of the memory axes ("N", "C", "H", "W" ...).
std::vector<std::string> axis_names(Layout layout);
/// Index of the channel (feature) axis.
int channel_axis(Layout layout);

std::optional<Layout> parse_layout(std::string_view name);
std::optional<NormKind> parse_kind(std::string_view name);
std::string_view layout_name(Layout l);
std::string_view kind_name(NormKind k);

/// One clear message when the shape, layout and kind do not fit together (wrong rank, empty axis,
/// C not divisible by G, instance norm without spatial axes, normalized_dims out of range).
std::optional<std::string> validate(const TensorSpec& t, const NormSpec& n);

/// The accounting; throws std::invalid_argument (the validate message) when they do not fit.
Accounting account(const TensorSpec& t, const NormSpec& n);

/// The reduction group of every entry (flat memory index), numbered 0.. in first-seen order.
std::vector<int64_t> declared_groups(const TensorSpec& t, const NormSpec& n);

/// The coordinate on the channel axis of `layout` of every entry (flat memory index) of a tensor
/// of `t.shape`: the index of its gamma/beta.
std::vector<int64_t> channel_of_entries(const TensorSpec& t, Layout layout);

/// The index of every entry's gamma/beta (flat memory index) in the flattened `affine_shape` of
/// `account(t, n)`: the channel for batch, group, instance and tied norms, the position within the
/// normalized axes for layer_norm / rms_norm with elementwise affine parameters.
std::vector<int64_t> affine_index_of_entries(const TensorSpec& t, const NormSpec& n);

/// Canonical form of a partition: groups renumbered in first-seen order.
std::vector<int64_t> canonical(const std::vector<int64_t>& group_of);

}  // namespace normcheck::audit
