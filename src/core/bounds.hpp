#pragma once
/// A priori componentwise error bounds for the LayerNorm kernels (derivations: docs/bounds.md).
/// Every bound is evaluated per element from the case's exact inputs and the oracle's statistics.
#include <string_view>
#include <vector>

#include "core/layernorm_case.hpp"
#include "oracles/certified_layernorm.hpp"

namespace normcheck {

/// How the row statistics are computed by the kernel the bound describes.
enum class StatsModel { two_pass, welford };

/// Arithmetic the bound assumes: storage and accumulator unit roundoffs and statistics model.
struct BoundModel {
  StatsModel stats;
  DType storage;
  DType accum;
};

/// gamma_k = k u / (1 - k u) (Higham, eq. 3.8); +inf when k u >= 1 (bound void).
double gamma_k(double k, double u);

/// Per-element bound on |y_hat - y| for the forward pass (docs/bounds.md, section 2).
std::vector<double> layernorm_forward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                            const BoundModel& m);

struct BackwardBound {
  std::vector<double> dx, dgamma, dbeta;
};

/// Per-element bounds on the backward outputs (docs/bounds.md, section 3).
BackwardBound layernorm_backward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                       const BoundModel& m);

}  // namespace normcheck
