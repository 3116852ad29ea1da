#pragma once
/// The certificate of a double ball (oracles/ball.hpp): its midpoint and radius, and Ziv's test of
/// its rounding to the dtype on doubles just outside the ball.
#include "core/certified_value.hpp"
#include "core/dtype.hpp"
#include "oracles/ball.hpp"

namespace normcheck::oracle {

/// hi = mid, lo = 0, rad = rad, scale 0; rounded / rounded_alt from the doubles one step outside
/// mid -+ rad (below and above the real endpoints whatever the rounding of mid -+ rad); an
/// unbounded ball (overflow, NaN, a division by a ball containing 0) gives an unbounded certificate.
CertifiedValue certify_ball(const Ball& b, DType dtype);

}  // namespace normcheck::oracle
