#pragma once
/// An op whose gain is an exact sum that binary64 cannot hold (Gemma's RMSNorm: gain 1 + w) is
/// linear in that gain: its certified outputs are the sums of the oracle's outputs for the two
/// doubles hi + lo = gain (TwoSum, exact). This file certifies those sums.
#include <vector>

#include "core/certified_value.hpp"
#include "core/dtype.hpp"

namespace normcheck::oracle {

/// hi + lo = 1 + w exactly, per element (Knuth's TwoSum; hi = fl(1 + w), |lo| <= ulp(hi) / 2).
struct GainSplit {
  std::vector<double> hi, lo;
  bool exact_in_double() const;  ///< every lo is 0: the gain is a double
};
GainSplit split_unit_offset_gain(const std::vector<double>& w);

/// The certificate of a + b: an enclosure of the sum of the two enclosures (MPFI, outward rounding,
/// 320 bits), its radius and its rounding to `dtype` decided as certify_interval decides them.
CertifiedValue certified_sum(const CertifiedValue& a, const CertifiedValue& b, DType dtype);

}  // namespace normcheck::oracle
