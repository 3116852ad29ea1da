#pragma once
/// A priori componentwise error bounds for the LayerNorm kernels (derivations: docs/bounds.md).
/// Every bound is evaluated per element from the case's exact inputs and the oracle's statistics;
/// rows whose intermediates may overflow get a void (+inf) bound and the `overflow` regime.
#include <cstdint>
#include <string>
#include <vector>

#include "core/layernorm_case.hpp"
#include "core/metrics.hpp"
#include "oracles/certified_layernorm.hpp"

namespace normcheck {

/// How the row statistics are computed by the kernel the bound describes.
/// op_by_op: two-pass statistics as an eager autograd engine runs them, every primitive's result
/// stored in the storage dtype (src/kernels/layernorm_op_by_op.hpp; docs/bounds.md section 4.5).
/// welford_merge: Welford partials merged by Chan's formula in any tree (docs/bounds.md section 2.7):
/// SumOrder::sequential stands for any tree (depth up to n - 1, the Welford class contract),
/// SumOrder::blocked for welford_chunked's tree (blocked_reduction_depth).
enum class StatsModel { two_pass, welford, one_pass, rms, op_by_op, welford_merge };

/// RMSNorm arithmetic deviations of the known-weak variants (bitmask, StatsModel::rms only).
enum RmsFlags : uint8_t {
  kRmsSumsqStorage = 1,  ///< sum of squares accumulated in the storage dtype
  kRmsRstdBf16 = 2,      ///< r rounded to bf16 before use
  kRmsXrBf16 = 4,        ///< x r rounded to bf16 before the gain multiply
  kRmsDgBf16 = 8,        ///< dg accumulated in bf16
  /// The gain is 1 + w formed by the kernel in the accumulator (Gemma's RMSNorm): the case's gamma
  /// holds hi = fl64(1 + w), the exact gain hi + lo (docs/bounds.md section 10.6)
  kRmsGainOffset = 16,
  /// With kRmsGainOffset: 1 + w rounded to the storage dtype instead (the known-weak gemma_gain_storage)
  kRmsGainStorage = 32,
};
/// Order of the within-row sums (mean, sum of squares, backward row sums). blocked: blocks of
/// kReductionBlock terms summed sequentially, then a pairwise tree (core/reduction_block.hpp).
enum class SumOrder { sequential, pairwise, blocked };

/// Arithmetic the bound assumes.
struct BoundModel {
  StatsModel stats;
  DType storage;
  DType accum;
  SumOrder order = SumOrder::sequential;
  /// Relative error of r = 1/sqrt(w_hat) beyond w_hat's own error; < 0 means correctly rounded
  /// sqrt then division: 2u/(1-u).
  double rsqrt_error = -1;
  uint8_t rms_flags = 0;  ///< RmsFlags, for StatsModel::rms
};

/// Regime flags of one element (a bitmask).
enum Regime : uint8_t {
  kRegimeCancellation = 1,  ///< kappa = sqrt(1 + mu^2/v) >= 100, or |y| << |gamma z| + |beta|
  kRegimeOverflow = 2,      ///< an intermediate may overflow: bound void, Inf/NaN allowed
  kRegimeUnderflow = 4,     ///< subnormal inputs, outputs or variance
  kRegimeEpsVanishes = 8,   ///< eps rounds to 0 in the accumulator
};

/// Names of the regime bits set in `flags` ("cancellation", ...); empty for the normal regime.
std::vector<std::string> regime_names(uint8_t flags);

/// gamma_k = k u / (1 - k u) (Higham, eq. 3.8); +inf when k u >= 1 (bound void).
double gamma_k(double k, double u);

/// Per-element bounds of one output tensor and the regime of each element, with the envelope
/// that judges an element whose bound is void (docs/bounds.md section 15).
struct TensorBound {
  std::vector<double> bound;
  std::vector<uint8_t> regime;
  /// Every value the model's arithmetic can produce lies in env_center +- env_radius, whatever the
  /// regime (empty vectors or an infinite radius: no envelope; an empty center is 0).
  std::vector<double> env_center{}, env_radius{};
  /// Where known, every such value also lies in [env_lower, env_upper] (section 15.7: the side of the
  /// envelope that the sign of the normalised value fixes); empty vectors: no such limits.
  std::vector<double> env_lower{}, env_upper{};

  /// The envelope of element k.
  Envelope envelope(size_t k) const {
    Envelope e;
    if (k < env_radius.size()) e.radius = env_radius[k];
    if (k < env_center.size()) e.center = env_center[k];
    if (k < env_lower.size()) e.lower = env_lower[k];
    if (k < env_upper.size()) e.upper = env_upper[k];
    return e;
  }
  /// Sets element k's limits [lower, upper] (sizing the vectors on first use: no limits elsewhere).
  void set_limits(size_t k, double lower, double upper) {
    if (env_lower.empty()) {
      env_lower.assign(bound.size(), -std::numeric_limits<double>::infinity());
      env_upper.assign(bound.size(), std::numeric_limits<double>::infinity());
    }
    env_lower[k] = lower;
    env_upper[k] = upper;
  }
};

/// Bound on |y_hat - y| for the forward pass (docs/bounds.md, section 2).
TensorBound layernorm_forward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                    const BoundModel& m);

struct BackwardBound {
  TensorBound dx, dgamma, dbeta;
};

/// The named constants a bound uses, and the intermediates of one element (BackwardBoundTrace).
struct NamedConstant {
  std::string name, meaning;
  double value;
};

/// Asks layernorm_backward_bound for the intermediates of one element of `output` (dx: flat index;
/// dgamma, dbeta: column), for `normcheck bounds` (docs/bounds.md sections 3.2-3.4): filled in `terms`.
struct BackwardBoundTrace {
  std::string output;
  size_t index = 0;
  std::vector<NamedConstant> terms{};
};

/// Bounds on the backward outputs (docs/bounds.md, section 3); with `trace`, its element's intermediates.
BackwardBound layernorm_backward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                       const BoundModel& m, BackwardBoundTrace* trace = nullptr);

/// The named constants a bound uses for a row length n and `rows` rows, for auditors.
std::vector<NamedConstant> bound_constants(const BoundModel& m, int64_t n, int64_t rows);

/// The bound's formula, step by step, as the code evaluates it (docs/bounds.md sections 2-4).
std::vector<std::string> bound_formula(const BoundModel& m, bool backward);

/// Bound on |y_hat - y| for RMSNorm forward (docs/bounds.md section 10).
TensorBound rmsnorm_forward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m);

/// Bounds on RMSNorm dx and dgamma (dbeta left empty; docs/bounds.md section 10); with `trace`, its
/// element's intermediates.
BackwardBound rmsnorm_backward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                     const BoundModel& m, BackwardBoundTrace* trace = nullptr);

/// Fills out's envelope for LayerNorm y (centred on beta) or RMSNorm y (centred on 0) under the
/// model's arithmetic (docs/bounds.md section 15); rows without one keep an infinite radius.
void add_forward_envelope(const LayerNormCase& c, const BoundModel& m, TensorBound& out);

/// Fills the envelopes of dx, dgamma and (LayerNorm) dbeta (centred on 0; section 15).
void add_backward_envelope(const LayerNormCase& c, const BoundModel& m, TensorBound& dx, TensorBound& dgamma,
                           TensorBound* dbeta);

/// Identifier of the bound a model evaluates, e.g. "LN-TWOPASS-SEQ", "LN-ONEPASS-SEQ".
std::string bound_id(const BoundModel& m);

/// The identifier with the model's dtypes, as reports and `normcheck bounds` print it: "LN-TWOPASS-SEQ[bf16/f32]".
std::string bound_label(const BoundModel& m);

}  // namespace normcheck
