#pragma once
/// Conversions between exact doubles (how cases and reports hold values) and storage vectors.
#include <vector>

#include "core/dtype.hpp"

namespace normcheck {

/// Each value (exactly representable in S) as S.
template <class S>
std::vector<S> to_storage(const std::vector<double>& v) {
  std::vector<S> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = dtype_traits<S>::from_double(v[i]);
  return out;
}

/// The exact double of each storage value.
template <class S>
std::vector<double> to_double(const std::vector<S>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = dtype_traits<S>::to_double(v[i]);
  return out;
}

}  // namespace normcheck
