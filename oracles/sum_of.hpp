#pragma once
/// The accumulator the textbook formulas sum in: Real itself, unless a level of the precision
/// cascade defines a better one for its type (the double ball's compensated BallSum, ball.hpp).
/// Usage: `sum_of_t<Real> s{}; s += term; const Real value = total(s);`.
namespace normcheck::oracle {

template <class Real>
struct SumOf {
  using type = Real;
};
template <class Real>
using sum_of_t = typename SumOf<Real>::type;

/// The value of a plain sum.
template <class Real>
const Real& total(const Real& s) {
  return s;
}

}  // namespace normcheck::oracle
