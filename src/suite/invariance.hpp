#pragma once
/// Batch invariance and run-to-run determinism of a per-op kernel (issue 44), needing no oracle: the
/// same row must give the same bits whatever the batch it is in, its position, its neighbours, zero
/// rows of padding after it, and however often the call is repeated. Accuracy is judged elsewhere: a
/// kernel can be accurate and batch-variant. docs/invariance.md says what the checks prove and do not.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/registry.hpp"

namespace normcheck {

/// The first differing element between two calls whose outputs must be bitwise identical.
struct InvarianceDifference {
  std::string check;   ///< "determinism" or "batch_invariance"
  std::string output;  ///< y, dx, dgamma, dbeta
  int64_t row = -1;    ///< the case's row (per-row outputs; -1 for outputs reduced over the rows)
  int64_t col = 0;     ///< element within the row (or of the reduced output)
  std::string config_a, config_b;  ///< the two calls, in words (batch size, position, call number)
  double a = 0, b = 0;             ///< the two values (exact doubles of the storage values)
};

/// The first element where two calls of one case (labelled `label_a`, `label_b`) differ, over every
/// output of `op` (row and column from the row length n); nullopt when they are bitwise identical.
std::optional<InvarianceDifference> repeat_difference(Op op, const KernelOutputs& a, const std::string& label_a, const KernelOutputs& b,
                                                      const std::string& label_b, int64_t n);

struct InvarianceResult {
  int64_t calls = 0;                  ///< kernel calls the checks made (the case's own first call included)
  int64_t rows_called = 0;            ///< rows handed to the kernel over those calls (padding rows included)
  std::vector<int64_t> batch_sizes;   ///< batch sizes tried (rows), the case's own included
  int64_t padding_rows = 0;           ///< zero rows appended in the padding call
  std::vector<std::string> per_row_outputs;  ///< outputs checked for batch invariance and determinism
  std::vector<std::string> reduced_outputs;  ///< outputs reduced over the rows: determinism only
  std::optional<InvarianceDifference> nondeterministic, batch_variant;
  std::string failure;    ///< a call failed (external kernels): the checks stopped there
  bool declined = false;  ///< the kernel declined the case (unsupported)
  /// "pass", "nondeterministic" (repeats differ: then batch comparisons prove nothing), "batch_variant",
  /// "kernel_failure" or "declined".
  std::string verdict() const;
};

struct InvarianceLimits {
  int repeats = 2;                  ///< repeats of the case's own call after the first
  int64_t max_elements = 1 << 18;   ///< batches larger than this (rows x n) are not tried
};

/// The batch sizes tried for a case of `rows` x `n`: 1, 2, 3, 7, 64, 255, 256, 257, 1024 (around
/// kernels' row-count thresholds) and the case's own, without those over `max_elements`.
std::vector<int64_t> invariance_batch_sizes(int64_t rows, int64_t n, int64_t max_elements);

/// A batch of `rows` rows whose row i is the case's row (i + shift) mod c.rows, followed by
/// `padding` rows of zeros (x and dy); gamma, beta and eps are the case's.
LayerNormCase batch_of(const LayerNormCase& c, int64_t rows, int64_t shift, int64_t padding);

/// Runs the checks: the case's call, `repeats` more in fresh buffers (every output bitwise equal),
/// then each batch size at its own shift, the case rotated (every row moved, other neighbours) and the
/// case padded with zero rows (each batch row's per-row outputs bitwise equal to its row's in the
/// case's call). Two NaNs compare equal; +0 and -0 differ.
InvarianceResult check_invariance(const KernelEntry& k, const LayerNormCase& c, const InvarianceLimits& limits = {});

}  // namespace normcheck
