#include "suite/invariance.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace normcheck {
namespace {

bool same_bits(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint64_t x = 0, y = 0;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

/// A call of the checks: its outputs and, for each of its first `rows` batch rows, the case row it holds.
struct Call {
  KernelOutputs out;
  std::string label;
};

std::string case_label(const LayerNormCase& c, int call) {
  return fmt::format("the case's own batch of {} rows, call {}", c.rows, call);
}

std::optional<InvarianceDifference> first_repeat_difference(const OpSpec& spec, const Call& a, const Call& b, int64_t n) {
  return repeat_difference(spec.op, a.out, a.label, b.out, b.label, n);
}

/// The first per-row output element of batch row i (case row (i + shift) mod R, i < rows) that differs
/// from the case's own call.
std::optional<InvarianceDifference> first_batch_difference(const OpSpec& spec, const Call& base, const Call& batch, int64_t case_rows,
                                                           int64_t n, int64_t rows, int64_t shift) {
  for (const OpSlot& o : spec.outputs) {
    if (!o.per_row()) continue;
    const std::vector<double>& vb = output_of(base.out, o.name);
    const std::vector<double>& vx = output_of(batch.out, o.name);
    if (static_cast<int64_t>(vx.size()) < rows * n)
      return InvarianceDifference{"batch_invariance", o.name, -1, 0, base.label,
                                  batch.label + fmt::format(" returned {} elements", vx.size()), 0, 0};
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t r = (i + shift) % case_rows;
      for (int64_t j = 0; j < n; ++j) {
        const double a = vb[static_cast<size_t>(r * n + j)], b = vx[static_cast<size_t>(i * n + j)];
        if (!same_bits(a, b))
          return InvarianceDifference{"batch_invariance", o.name, r, j, fmt::format("{} (row {} at position {})", base.label, r, r),
                                      fmt::format("{} (row {} at position {})", batch.label, r, i), a, b};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<InvarianceDifference> repeat_difference(Op op, const KernelOutputs& a, const std::string& label_a, const KernelOutputs& b,
                                                      const std::string& label_b, int64_t n) {
  for (const OpSlot& o : op_spec(op).outputs) {
    const std::vector<double>& va = output_of(a, o.name);
    const std::vector<double>& vb = output_of(b, o.name);
    const size_t count = std::min(va.size(), vb.size());
    for (size_t e = 0; e < count; ++e)
      if (!same_bits(va[e], vb[e])) {
        const int64_t idx = static_cast<int64_t>(e);
        return InvarianceDifference{"determinism", o.name, o.per_row() ? idx / n : -1, o.per_row() ? idx % n : idx,
                                    label_a, label_b, va[e], vb[e]};
      }
    if (va.size() != vb.size())
      return InvarianceDifference{"determinism", o.name, -1, static_cast<int64_t>(count), label_a + fmt::format(" ({} elements)", va.size()),
                                  label_b + fmt::format(" ({} elements)", vb.size()), 0, 0};
  }
  return std::nullopt;
}

std::string InvarianceResult::verdict() const {
  if (declined) return "declined";
  if (nondeterministic) return "nondeterministic";
  if (batch_variant) return "batch_variant";
  if (!failure.empty()) return "kernel_failure";
  return "pass";
}

std::vector<int64_t> invariance_batch_sizes(int64_t rows, int64_t n, int64_t max_elements) {
  std::vector<int64_t> sizes;
  for (int64_t b : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{7}, int64_t{64}, int64_t{255}, int64_t{256}, int64_t{257}, int64_t{1024}})
    if (b * n <= max_elements) sizes.push_back(b);
  sizes.push_back(rows);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

LayerNormCase batch_of(const LayerNormCase& c, int64_t rows, int64_t shift, int64_t padding) {
  LayerNormCase b = c;
  b.rows = rows + padding;
  const size_t n = static_cast<size_t>(c.n);
  b.x.assign(static_cast<size_t>(b.rows) * n, 0.0);
  if (!c.dy.empty()) b.dy.assign(static_cast<size_t>(b.rows) * n, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const size_t from = static_cast<size_t>((i + shift) % c.rows) * n, to = static_cast<size_t>(i) * n;
    std::copy_n(c.x.begin() + static_cast<std::ptrdiff_t>(from), n, b.x.begin() + static_cast<std::ptrdiff_t>(to));
    if (!c.dy.empty()) std::copy_n(c.dy.begin() + static_cast<std::ptrdiff_t>(from), n, b.dy.begin() + static_cast<std::ptrdiff_t>(to));
  }
  return b;
}

InvarianceResult check_invariance(const KernelEntry& k, const LayerNormCase& c, const InvarianceLimits& limits) {
  const OpSpec& spec = op_spec(k.op);
  InvarianceResult r;
  for (const OpSlot& o : spec.outputs) (o.per_row() ? r.per_row_outputs : r.reduced_outputs).push_back(o.name);
  r.batch_sizes = invariance_batch_sizes(c.rows, c.n, limits.max_elements);
  r.padding_rows = 64 - c.rows % 64;
  const auto call = [&](const LayerNormCase& input, std::string label) -> std::optional<Call> {
    ++r.calls;
    r.rows_called += input.rows;
    Call out{k.run(input), std::move(label)};
    if (out.out.skipped) {
      r.declined = true;
      return std::nullopt;
    }
    if (!out.out.failure.empty()) {
      r.failure = out.out.failure;
      return std::nullopt;
    }
    return out;
  };
  const std::optional<Call> base = call(c, case_label(c, 1));
  if (!base) return r;
  for (int rep = 0; rep < limits.repeats && !r.nondeterministic; ++rep) {
    const LayerNormCase moved = c;  // fresh buffers
    const std::optional<Call> again = call(moved, case_label(c, rep + 2));
    if (!again) return r;
    r.nondeterministic = first_repeat_difference(spec, *base, *again, c.n);
  }
  if (r.nondeterministic) return r;  // batch comparisons would prove nothing
  const auto try_batch = [&](int64_t rows, int64_t shift, int64_t padding, const std::string& label) {
    if (r.batch_variant) return true;
    const std::optional<Call> batch = call(batch_of(c, rows, shift, padding), label);
    if (!batch) return false;
    r.batch_variant = first_batch_difference(spec, *base, *batch, c.rows, c.n, rows, shift);
    return true;
  };
  for (int64_t b : r.batch_sizes) {
    if (b == c.rows) continue;
    const int64_t shift = (b * 7 + 1) % c.rows;
    if (!try_batch(b, shift, 0, fmt::format("a batch of {} rows", b))) return r;
  }
  if (c.rows > 1 && !try_batch(c.rows, c.rows / 2 + 1, 0, fmt::format("the case's {} rows rotated by {}", c.rows, c.rows / 2 + 1)))
    return r;
  try_batch(c.rows, 0, r.padding_rows, fmt::format("the case's {} rows followed by {} zero rows", c.rows, r.padding_rows));
  return r;
}

}  // namespace normcheck
