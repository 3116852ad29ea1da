#pragma once
/// The kernels' explicit math layer: conversions and sqrt through dtype_traits, never implicit.
#include "core/dtype.hpp"

namespace normcheck::num {

/// Converts between dtypes with one correct rounding (via the exact double value).
template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else {
    return dtype_traits<To>::from_double(dtype_traits<From>::to_double(v));
  }
}

/// A double constant rounded to T.
template <class T>
T constant(double v) {
  return dtype_traits<T>::from_double(v);
}

/// Correctly rounded square root in T.
template <class T>
T sqrt(T v) {
  return dtype_traits<T>::sqrt(v);
}

}  // namespace normcheck::num
