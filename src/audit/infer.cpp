#include "audit/infer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/rng.hpp"

namespace normcheck::audit {
namespace {

bool same_bits(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

/// The entries whose outputs move when entry e moves by `delta`.
std::vector<int64_t> moved_once(const AuditKernel& k, const std::vector<double>& x0, const std::vector<double>& y0, int64_t e,
                                double delta, DType dt, int64_t& probes) {
  std::vector<double> x = x0;
  x[static_cast<size_t>(e)] = round_to_dtype(x0[static_cast<size_t>(e)] + delta, dt);
  const std::vector<double> y = k(x);
  ++probes;
  if (y.size() != y0.size()) throw std::runtime_error("kernel returned a different number of outputs");
  std::vector<int64_t> moved;
  for (size_t j = 0; j < y.size(); ++j)
    if (!same_bits(y[j], y0[j])) moved.push_back(static_cast<int64_t>(j));
  return moved;
}

/// Outputs that move when entry e moves up and when it moves down, together: a group of two
/// entries normalizes to +-1 whatever their distance, so only the move that swaps their order
/// changes its outputs (above rounding); one of the two directions always does.
std::vector<int64_t> moved_by(const AuditKernel& k, const std::vector<double>& x0, const std::vector<double>& y0, int64_t e,
                              double delta, DType dt, int64_t& probes) {
  std::vector<int64_t> up = moved_once(k, x0, y0, e, delta, dt, probes), down = moved_once(k, x0, y0, e, -delta, dt, probes), both;
  std::set_union(up.begin(), up.end(), down.begin(), down.end(), std::back_inserter(both));
  return both;
}

std::vector<int64_t> members(const std::vector<int64_t>& group_of, int64_t g) {
  std::vector<int64_t> m;
  for (size_t e = 0; e < group_of.size(); ++e)
    if (group_of[e] == g) m.push_back(static_cast<int64_t>(e));
  return m;
}

/// Standard normalizations of this tensor, by name, for the coincidence list.
std::vector<std::pair<std::string, NormSpec>> standard_kinds(const TensorSpec& t) {
  const int rank = static_cast<int>(t.shape.size());
  std::vector<std::pair<std::string, NormSpec>> out = {
      {"batch norm", {NormKind::batch_norm}},
      {"layer norm over every axis but N", {NormKind::layer_norm, rank - 1}},
      {"channel-only layer norm", {NormKind::channel_layer_norm}},
      {"last-axis layer norm", {NormKind::layer_norm, 1}},
      {"statistics over the whole tensor", {NormKind::layer_norm, rank}},
  };
  if (t.layout != Layout::dense) {
    out.push_back({"instance norm", {NormKind::instance_norm}});
    const int64_t c = t.shape[static_cast<size_t>(channel_axis(t.layout))];
    for (int64_t g = 2; g < c; ++g)
      if (c % g == 0) {
        NormSpec s{NormKind::group_norm};
        s.groups = g;
        out.push_back({fmt::format("group norm with G = {}", g), s});
      }
  }
  return out;
}

/// Random inputs exact in the dtype, drawn once per inference (groups and affine maps).
std::vector<double> probe_inputs(const TensorSpec& t, DType dtype, uint64_t seed) {
  int64_t elements = 1;
  for (int64_t s : t.shape)
    if (s < 1 || __builtin_mul_overflow(elements, s, &elements)) elements = INT64_MAX;
  if (elements > 65536) throw std::invalid_argument(fmt::format("axis inference probes at most 65536 entries, the tensor has {}", elements));
  Rng rng(seed);
  std::vector<double> x(static_cast<size_t>(elements));
  for (double& v : x) v = round_to_dtype(rng.normal(), dtype);
  return x;
}

}  // namespace

InferredGroups infer_groups(const AuditKernel& kernel, const TensorSpec& t, DType dtype, uint64_t seed) {
  const std::vector<double> x0 = probe_inputs(t, dtype, seed);
  const int64_t elements = static_cast<int64_t>(x0.size());
  const std::vector<double> y0 = kernel(x0);
  InferredGroups r;
  r.probes = 1;
  if (static_cast<int64_t>(y0.size()) != elements) throw std::runtime_error("kernel returned a different number of outputs");
  const double delta = 8 * std::sqrt(static_cast<double>(elements)) + 8;
  std::vector<int64_t> group(static_cast<size_t>(elements), -1);
  int64_t next = 0;
  for (int64_t e = 0; e < elements; ++e) {
    if (group[static_cast<size_t>(e)] >= 0) continue;
    std::vector<int64_t> moved = moved_by(kernel, x0, y0, e, delta, dtype, r.probes);
    if (moved.empty()) r.notes.push_back(fmt::format("entry {} moves no output (not even its own)", e));
    if (std::find(moved.begin(), moved.end(), e) == moved.end()) moved.push_back(e);
    for (int64_t j : moved) {
      if (group[static_cast<size_t>(j)] >= 0) {
        r.partition = false;
        r.notes.push_back(fmt::format("entry {} moves entry {}, already grouped with another probe: groups overlap", e, j));
        continue;
      }
      group[static_cast<size_t>(j)] = next;
    }
    ++next;
  }
  // Confirmation: a second member of each group must move exactly the same group.
  for (int64_t g = 0; g < next && r.partition; ++g) {
    const auto m = members(group, g);
    if (m.size() < 2) continue;
    auto moved = moved_by(kernel, x0, y0, m.back(), delta, dtype, r.probes);
    if (std::find(moved.begin(), moved.end(), m.back()) == moved.end()) moved.push_back(m.back());
    std::sort(moved.begin(), moved.end());
    if (moved != m) {
      r.partition = false;
      r.notes.push_back(fmt::format("entry {} moves {} outputs, its group has {}: the dependence is not a partition", m.back(),
                                    moved.size(), m.size()));
    }
  }
  r.group_of = canonical(group);
  return r;
}

AxisUse axis_use(const std::vector<int64_t>& group_of, const TensorSpec& t) {
  const auto names = axis_names(t.layout);
  const int rank = static_cast<int>(t.shape.size());
  AxisUse u;
  std::map<int64_t, int64_t> size;
  for (int64_t g : group_of) ++size[g];
  u.groups = static_cast<int64_t>(size.size());
  u.min_entries = size.empty() ? 0 : size.begin()->second;
  u.max_entries = 0;
  for (const auto& [g, s] : size) {
    u.min_entries = std::min(u.min_entries, s);
    u.max_entries = std::max(u.max_entries, s);
  }
  for (int a = 0; a < rank; ++a) {
    if (t.shape[a] == 1) {
      u.size_one.push_back(names[a]);
      continue;
    }
    int64_t stride = 1;
    for (int b = rank - 1; b > a; --b) stride *= t.shape[b];
    std::map<int64_t, std::set<int64_t>> coords;  // group -> coordinates on axis a
    for (size_t e = 0; e < group_of.size(); ++e) coords[group_of[e]].insert((static_cast<int64_t>(e) / stride) % t.shape[a]);
    bool all_full = true, all_one = true;
    std::set<size_t> block_sizes;
    for (const auto& [g, c] : coords) {
      all_full = all_full && static_cast<int64_t>(c.size()) == t.shape[a];
      all_one = all_one && c.size() == 1;
      block_sizes.insert(c.size());
    }
    (all_full ? u.reduced : all_one ? u.kept : u.partial).push_back(names[a]);
    if (!all_full && !all_one) u.partial_block.push_back(block_sizes.size() == 1 ? static_cast<int64_t>(*block_sizes.begin()) : 0);
  }
  return u;
}

/// "H, W and part of C", or "" when nothing is reduced.
std::string axes_phrase(const AxisUse& u) {
  std::string over = u.reduced.empty() ? "" : fmt::format("{}", fmt::join(u.reduced, ", "));
  for (size_t p = 0; p < u.partial.size(); ++p) {
    const std::string part = u.partial_block[p] > 0 ? fmt::format("blocks of {} along {}", u.partial_block[p], u.partial[p])
                                                    : fmt::format("irregular parts of {}", u.partial[p]);
    over += (over.empty() ? "" : " and ") + part;
  }
  return over;
}

std::string describe(const AxisUse& u) {
  const std::string over = axes_phrase(u);
  const auto groups = [](int64_t n) { return n == 1 ? std::string("1 group") : fmt::format("{} groups", n); };
  const auto entries = [](int64_t n) { return n == 1 ? std::string("1 entry") : fmt::format("{} entries", n); };
  const std::string sizes = u.min_entries == u.max_entries
                                ? fmt::format("{} of {}", groups(u.groups), entries(u.min_entries))
                                : fmt::format("{} of {} to {} entries", groups(u.groups), u.min_entries, u.max_entries);
  if (over.empty()) return fmt::format("normalizes each entry alone, no reduction ({})", sizes);
  return fmt::format("normalizes over {} ({})", over, sizes);
}

AuditVerdict compare_groups(const TensorSpec& t, const NormSpec& declared, const InferredGroups& inferred) {
  AuditVerdict v;
  const std::vector<int64_t> want = declared_groups(t, declared);
  const AxisUse d = axis_use(want, t), i = axis_use(inferred.group_of, t);
  v.declared_words = describe(d);
  v.inferred_words = describe(i);
  v.size_one_axes = i.size_one;
  v.match = inferred.partition && want == inferred.group_of;
  for (const auto& [name, spec] : standard_kinds(t))
    if (!validate(t, spec) && declared_groups(t, spec) == inferred.group_of) v.coincidences.push_back(name);
  if (!inferred.partition) {
    v.verdict = fmt::format("MISMATCH: the kernel's dependence is not a set of disjoint groups ({}); declared: {}",
                            fmt::join(inferred.notes, "; "), v.declared_words);
  } else if (v.match) {
    v.verdict = fmt::format("match: {}", v.inferred_words);
  } else {
    const auto phrase = [](const AxisUse& u) {
      const std::string p = axes_phrase(u);
      return p.empty() ? std::string("nothing (each entry alone)") : p;
    };
    v.verdict = fmt::format("MISMATCH: the kernel normalizes over {}, declared over {} (kernel: {}; declared: {})", phrase(i),
                            phrase(d), v.inferred_words, v.declared_words);
  }
  if (!v.size_one_axes.empty())
    v.verdict += fmt::format("; axes of size 1 ({}) cannot be told apart: reducing over them or not gives the same groups",
                             fmt::join(v.size_one_axes, ", "));
  return v;
}

namespace {


/// Outcome of one probe at one entry: the parameter's effect was seen (1), not seen (0), or neither (-1).
using Classify = int (*)(double base, double probed, double shift);
int shifted(double base, double probed, double shift) {
  const double d = probed - base;
  if (std::fabs(d - shift) < shift / 4) return 1;
  return std::fabs(d) < shift / 4 ? 0 : -1;
}
int doubled(double base, double probed, double) {
  if (base == 0 || !std::isfinite(base)) return -1;  // gamma times 0: not observable
  if (probed == 2 * base) return 1;
  return probed == base ? 0 : -1;
}

/// The per-entry parameter index of one parameter (gamma or beta): `probe(mask)` evaluates the
/// kernel with the parameters in `mask` changed.
template <class Probe>
std::vector<int64_t> infer_parameter_map(const std::vector<double>& base, int64_t params, double shift, Classify classify, Probe probe,
                                         const char* what, std::vector<std::string>& notes) {
  std::vector<int64_t> of(base.size(), 0);
  const std::vector<double> all = probe([](int64_t) { return true; });
  for (size_t e = 0; e < base.size(); ++e) {
    const int c = classify(base[e], all[e], shift);
    of[e] = c == 1 ? 0 : c == 0 ? kNotApplied : kUndetermined;
  }
  for (int bit = 0; (int64_t{1} << bit) < params; ++bit) {
    const std::vector<double> y = probe([bit](int64_t p) { return (p >> bit) & 1; });
    for (size_t e = 0; e < base.size(); ++e) {
      if (of[e] < 0) continue;
      const int c = classify(base[e], y[e], shift);
      if (c < 0) of[e] = kUndetermined;
      else of[e] |= int64_t{c} << bit;
    }
  }
  int64_t undetermined = 0, out_of_range = 0;
  for (int64_t& v : of) {
    if (v >= params) ++out_of_range, v = kUndetermined;
    undetermined += v == kUndetermined;
  }
  if (undetermined > 0)
    notes.push_back(fmt::format("{} of {} entries: {} could not be told (its effect is neither a clean shift nor a clean scaling there)",
                                undetermined, base.size(), what));
  if (out_of_range > 0) notes.push_back(fmt::format("{} entries answered with a {} index beyond the {} parameters", out_of_range, what, params));
  return of;
}

/// "along C (3 values, shared over N, H, W)", "not applied", "one value for every entry".
std::string affine_words(const std::vector<int64_t>& of, const TensorSpec& t) {
  std::vector<int64_t> applied;
  bool any = false;
  for (int64_t v : of) any = any || v >= 0;
  if (!any) return "not applied";
  for (int64_t v : of) applied.push_back(v >= 0 ? v : -1 - static_cast<int64_t>(applied.size()));  // unseen entries alone
  const AxisUse u = axis_use(canonical(applied), t);
  std::vector<std::string> along = u.kept;
  for (size_t p = 0; p < u.partial.size(); ++p) along.push_back("part of " + u.partial[p]);
  std::set<int64_t> values;
  for (int64_t v : of)
    if (v >= 0) values.insert(v);
  if (along.empty()) return "one value for every entry";
  return fmt::format("along {} ({} values{})", fmt::join(along, ", "), values.size(),
                     u.reduced.empty() ? std::string() : fmt::format(", shared over {}", fmt::join(u.reduced, ", ")));
}

/// Whether an inferred map equals the declared one where it was determined.
bool same_map(const std::vector<int64_t>& inferred, const std::vector<int64_t>& declared) {
  for (size_t e = 0; e < declared.size(); ++e)
    if (inferred[e] != kUndetermined && inferred[e] != declared[e]) return false;
  return true;
}

}  // namespace

InferredAffine infer_affine(const AffineAuditKernel& kernel, const TensorSpec& t, int64_t params, bool with_beta, DType dtype,
                            uint64_t seed) {
  const std::vector<double> x = probe_inputs(t, dtype, seed);
  const std::vector<double> ones(static_cast<size_t>(params), 1.0), zeros(static_cast<size_t>(params), 0.0);
  InferredAffine r;
  const auto call = [&](const std::vector<double>& gamma, const std::vector<double>& beta) {
    ++r.probes;
    std::vector<double> y = kernel(x, gamma, beta);
    if (y.size() != x.size()) throw std::runtime_error("kernel returned a different number of outputs");
    return y;
  };
  const std::vector<double> base = call(ones, zeros);
  double largest = 0;
  for (double v : base)
    if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
  const double shift = std::exp2(std::ceil(std::log2(8 * (1 + largest))));  // a power of two: exact in every dtype
  const auto with_mask = [&](double value, double otherwise, auto mask) {
    std::vector<double> p(static_cast<size_t>(params));
    for (int64_t i = 0; i < params; ++i) p[static_cast<size_t>(i)] = mask(i) ? value : otherwise;
    return p;
  };
  r.gamma_of = infer_parameter_map(base, params, 2, doubled, [&](auto mask) { return call(with_mask(2, 1, mask), zeros); }, "gamma", r.notes);
  if (with_beta)
    r.beta_of = infer_parameter_map(base, params, shift, shifted, [&](auto mask) { return call(ones, with_mask(shift, 0, mask)); }, "beta", r.notes);
  return r;
}

AffineVerdict compare_affine(const TensorSpec& t, const NormSpec& declared, const InferredAffine& inferred) {
  AffineVerdict v;
  const std::vector<int64_t> want = affine_index_of_entries(t, declared);
  v.declared_words = affine_words(want, t);
  v.gamma_words = affine_words(inferred.gamma_of, t);
  const bool gamma_ok = same_map(inferred.gamma_of, want);
  const bool beta_ok = inferred.beta_of.empty() || same_map(inferred.beta_of, want);
  if (!inferred.beta_of.empty()) v.beta_words = affine_words(inferred.beta_of, t);
  v.match = gamma_ok && beta_ok;
  const auto wrong = [&](const char* name, const std::string& words, const std::vector<int64_t>& of) {
    if (words == v.declared_words) {  // the same axes: the parameters land in another order
      for (size_t e = 0; e < want.size(); ++e)
        if (of[e] != kUndetermined && of[e] != want[e])
          return fmt::format("{} applied {} as declared, but in another order (entry {} uses {}[{}], declared {}[{}])", name, words, e, name,
                             of[e], name, want[e]);
    }
    return fmt::format("{} applied {}, declared {}", name, words, v.declared_words);
  };
  if (v.match) {
    v.verdict = fmt::format("match: gamma{} applied {}", inferred.beta_of.empty() ? "" : " and beta", v.declared_words);
  } else {
    std::vector<std::string> parts;
    if (!gamma_ok) parts.push_back(wrong("gamma", v.gamma_words, inferred.gamma_of));
    if (!beta_ok) parts.push_back(wrong("beta", v.beta_words, inferred.beta_of));
    v.verdict = fmt::format("MISMATCH: {}", fmt::join(parts, "; "));
  }
  if (!inferred.notes.empty()) v.verdict += fmt::format(" ({})", fmt::join(inferred.notes, "; "));
  return v;
}

}  // namespace normcheck::audit
