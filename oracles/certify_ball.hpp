#pragma once
/// The certificate of a double ball (oracles/ball.hpp): its midpoint and radius, and Ziv's test of
/// its rounding to the dtype on doubles just outside the ball.
#include "core/certified_value.hpp"
#include "core/dtype.hpp"
#include "oracles/ball.hpp"
#include "oracles/dd_ball.hpp"

namespace normcheck::oracle {

/// hi = mid, lo = 0, rad = rad, scale 0; rounded / rounded_alt from the doubles one step outside
/// mid -+ rad (below and above the real endpoints whatever the rounding of mid -+ rad); an
/// unbounded ball (overflow, NaN, a division by a ball containing 0) gives an unbounded certificate.
CertifiedValue certify_ball(const Ball& b, DType dtype);

/// hi, lo, rad of the double-double ball, scale 0. For f16, bf16 and f32 the rounding is decided as
/// for the double ball, on doubles just outside hi + (lo -+ rad); for f64 when hi + lo -+ rad lie
/// strictly inside hi's rounding interval (hi -+ half the spacing to its neighbours).
CertifiedValue certify_dd_ball(const DdBall& b, DType dtype);

}  // namespace normcheck::oracle
