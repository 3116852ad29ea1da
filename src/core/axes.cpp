#include "core/axes.hpp"

#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace normcheck::audit {
namespace {

/// Product of positive sizes, saturated at 2^62 (no signed overflow on absurd shapes).
int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t s : v) {
    if (s <= 0) return 0;
    if (__builtin_mul_overflow(p, s, &p) || p > (int64_t{1} << 62)) return int64_t{1} << 62;
  }
  return p;
}

bool has_spatial_axes(Layout l) { return l != Layout::dense; }

/// Axes reduced over, and the channel blocks of group norm (0: none).
void reduction_of(const TensorSpec& t, const NormSpec& n, std::vector<bool>& reduced, int64_t& blocks) {
  const int rank = static_cast<int>(t.shape.size()), ch = channel_axis(t.layout);
  reduced.assign(static_cast<size_t>(rank), false);
  blocks = 0;
  switch (n.kind) {
    case NormKind::batch_norm:
      for (int a = 0; a < rank; ++a) reduced[a] = a != ch;
      break;
    case NormKind::layer_norm:
    case NormKind::rms_norm:
      for (int a = rank - n.normalized_dims; a < rank; ++a) reduced[a] = true;
      break;
    case NormKind::channel_layer_norm:
      reduced[ch] = true;
      break;
    case NormKind::instance_norm:
      for (int a = 1; a < rank; ++a) reduced[a] = a != ch;
      break;
    case NormKind::group_norm:
      for (int a = 1; a < rank; ++a) reduced[a] = a != ch;
      blocks = n.groups;
      break;
  }
}

std::string axis_list(const std::vector<std::string>& names, const std::vector<bool>& pick, bool value) {
  std::vector<std::string> out;
  for (size_t a = 0; a < names.size(); ++a)
    if (pick[a] == value) out.push_back(names[a]);
  return fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace

std::vector<std::string> axis_names(Layout layout) {
  switch (layout) {
    case Layout::dense: return {"N", "D"};
    case Layout::nchw: return {"N", "C", "H", "W"};
    case Layout::nhwc: return {"N", "H", "W", "C"};
    case Layout::sequence: return {"N", "L", "D"};
  }
  return {};
}

int channel_axis(Layout layout) {
  switch (layout) {
    case Layout::dense: return 1;
    case Layout::nchw: return 1;
    case Layout::nhwc: return 3;
    case Layout::sequence: return 2;
  }
  return 1;
}

std::string_view layout_name(Layout l) {
  switch (l) {
    case Layout::dense: return "dense";
    case Layout::nchw: return "nchw";
    case Layout::nhwc: return "nhwc";
    case Layout::sequence: return "sequence";
  }
  return "?";
}

std::string_view kind_name(NormKind k) {
  switch (k) {
    case NormKind::batch_norm: return "batch_norm";
    case NormKind::layer_norm: return "layer_norm";
    case NormKind::channel_layer_norm: return "channel_layer_norm";
    case NormKind::instance_norm: return "instance_norm";
    case NormKind::group_norm: return "group_norm";
    case NormKind::rms_norm: return "rms_norm";
  }
  return "?";
}

std::optional<Layout> parse_layout(std::string_view name) {
  for (Layout l : {Layout::dense, Layout::nchw, Layout::nhwc, Layout::sequence})
    if (layout_name(l) == name) return l;
  return std::nullopt;
}

std::optional<NormKind> parse_kind(std::string_view name) {
  for (NormKind k : {NormKind::batch_norm, NormKind::layer_norm, NormKind::channel_layer_norm, NormKind::instance_norm,
                     NormKind::group_norm, NormKind::rms_norm})
    if (kind_name(k) == name) return k;
  return std::nullopt;
}

std::optional<std::string> validate(const TensorSpec& t, const NormSpec& n) {
  const size_t rank = axis_names(t.layout).size();
  if (t.shape.size() != rank)
    return fmt::format("layout {} needs {} axes ({}), got {}", layout_name(t.layout), rank,
                       fmt::join(axis_names(t.layout), ", "), t.shape.size());
  for (size_t a = 0; a < rank; ++a)
    if (t.shape[a] < 1) return fmt::format("axis {} has size {} (empty tensors are rejected)", axis_names(t.layout)[a], t.shape[a]);
  if (product(t.shape) > (int64_t{1} << 26)) return std::string("tensor larger than 2^26 entries");
  if ((n.kind == NormKind::layer_norm || n.kind == NormKind::rms_norm) &&
      (n.normalized_dims < 1 || n.normalized_dims > static_cast<int>(rank)))
    return fmt::format("normalized_dims must be in [1, {}], got {}", rank, n.normalized_dims);
  if ((n.kind == NormKind::instance_norm || n.kind == NormKind::group_norm) && !has_spatial_axes(t.layout))
    return fmt::format("{} needs spatial or sequence axes; layout dense has none", kind_name(n.kind));
  if (n.kind == NormKind::group_norm) {
    const int64_t c = t.shape[static_cast<size_t>(channel_axis(t.layout))];
    if (n.groups < 1 || c % n.groups != 0) return fmt::format("group norm: C = {} is not divisible by G = {}", c, n.groups);
  }
  return std::nullopt;
}

Accounting account(const TensorSpec& t, const NormSpec& n) {
  if (auto err = validate(t, n)) throw std::invalid_argument(*err);
  const auto names = axis_names(t.layout);
  const int rank = static_cast<int>(t.shape.size()), ch = channel_axis(t.layout);
  const int64_t c = t.shape[static_cast<size_t>(ch)];
  Accounting a;
  reduction_of(t, n, a.reduced, a.channel_blocks);
  a.elements = product(t.shape);
  a.entries_per_group = a.channel_blocks ? c / a.channel_blocks : 1;
  for (int ax = 0; ax < rank; ++ax)
    if (a.reduced[ax]) a.entries_per_group *= t.shape[ax];
  a.groups = a.elements / a.entries_per_group;
  // Broadcast shapes: statistics keep the non-reduced axes (group norm: G at the channel axis).
  for (int ax = 0; ax < rank; ++ax)
    a.stats_shape.push_back(a.reduced[ax] ? 1 : (ax == ch && a.channel_blocks ? a.channel_blocks : t.shape[ax]));
  const bool per_position = n.kind == NormKind::layer_norm || n.kind == NormKind::rms_norm;
  for (int ax = 0; ax < rank; ++ax) {
    if (per_position && !n.tied_affine) a.affine_shape.push_back(a.reduced[ax] ? t.shape[ax] : 1);
    else if (per_position) a.affine_shape.push_back(ax == ch && a.reduced[ax] ? c : 1);
    else a.affine_shape.push_back(ax == ch ? c : 1);
  }
  const int64_t per_tensor = n.affine ? product(a.affine_shape) : 0;
  a.learned_parameters = n.kind == NormKind::rms_norm ? per_tensor : 2 * per_tensor;
  a.running_statistics = n.kind == NormKind::batch_norm && n.track_running_stats ? 2 * c : 0;
  std::vector<bool> kept(a.reduced.size());
  for (size_t ax = 0; ax < kept.size(); ++ax) kept[ax] = !a.reduced[ax] && !(static_cast<int>(ax) == ch && a.channel_blocks);
  std::string over = axis_list(names, a.reduced, true);
  if (a.channel_blocks)
    over = fmt::format("{}{}blocks of {} channels ({} groups)", over, over.empty() ? "" : " and ", c / a.channel_blocks, a.channel_blocks);
  const std::string per = axis_list(names, kept, true);
  a.description = fmt::format("normalizes over {} {}", over.empty() ? "nothing" : over,
                              per.empty() ? "for the whole tensor" : "per (" + per + ")");
  if (a.groups * a.entries_per_group != a.elements) throw std::logic_error("accounting: groups x entries != elements");
  return a;
}

std::vector<int64_t> declared_groups(const TensorSpec& t, const NormSpec& n) {
  const Accounting a = account(t, n);
  const int rank = static_cast<int>(t.shape.size()), ch = channel_axis(t.layout);
  const int64_t c = t.shape[static_cast<size_t>(ch)];
  std::vector<int64_t> key(static_cast<size_t>(a.elements), 0), coord(static_cast<size_t>(rank), 0);
  for (int64_t e = 0; e < a.elements; ++e) {
    int64_t k = 0;
    for (int ax = 0; ax < rank; ++ax) {
      int64_t v = a.reduced[ax] ? 0 : coord[ax];
      int64_t size = t.shape[ax];
      if (ax == ch && a.channel_blocks) {
        v = coord[ax] / (c / a.channel_blocks);
        size = a.channel_blocks;
      }
      k = k * size + v;
    }
    key[static_cast<size_t>(e)] = k;
    for (int ax = rank - 1; ax >= 0 && ++coord[ax] == t.shape[ax]; --ax) coord[ax] = 0;
  }
  return canonical(key);
}

std::vector<int64_t> channel_of_entries(const TensorSpec& t, Layout layout) {
  const int ch = channel_axis(layout), rank = static_cast<int>(t.shape.size());
  int64_t stride = 1;
  for (int a = rank - 1; a > ch; --a) stride *= t.shape[a];
  std::vector<int64_t> c(static_cast<size_t>(product(t.shape)));
  for (size_t e = 0; e < c.size(); ++e) c[e] = (static_cast<int64_t>(e) / stride) % t.shape[ch];
  return c;
}

std::vector<int64_t> affine_index_of_entries(const TensorSpec& t, const NormSpec& n) {
  const Accounting a = account(t, n);
  const int rank = static_cast<int>(t.shape.size());
  std::vector<int64_t> index(static_cast<size_t>(a.elements), 0), coord(static_cast<size_t>(rank), 0);
  for (int64_t e = 0; e < a.elements; ++e) {
    int64_t k = 0;
    for (int ax = 0; ax < rank; ++ax) k = k * a.affine_shape[ax] + (a.affine_shape[ax] == 1 ? 0 : coord[ax]);
    index[static_cast<size_t>(e)] = k;
    for (int ax = rank - 1; ax >= 0 && ++coord[ax] == t.shape[ax]; --ax) coord[ax] = 0;
  }
  return index;
}

std::vector<int64_t> canonical(const std::vector<int64_t>& group_of) {
  std::unordered_map<int64_t, int64_t> ids;
  std::vector<int64_t> out(group_of.size());
  for (size_t e = 0; e < group_of.size(); ++e) out[e] = ids.emplace(group_of[e], static_cast<int64_t>(ids.size())).first->second;
  return out;
}

}  // namespace normcheck::audit
