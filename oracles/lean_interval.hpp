#pragma once
/// The MPFI scalar of the LayerNorm and RMSNorm oracles' last cascade level (issue 17, item 2): the
/// same MPFI operations as Boost's mpfi_float_backend, called in the same order, so every enclosure
/// is the same bit for bit (a test compares them), but without an allocation per temporary.
///
/// Each value owns an mpfi_t of Bits bits taken from a per-thread pool of initialised intervals and
/// given back when it dies. In the oracles' element loops every temporary (an input converted from
/// double, a product, a difference) is taken from and given back to the pool, so after the first
/// row no temporary calls malloc. The pool keeps at most about kPoolBytes (16 MiB: the intervals
/// of a whole 16384-element forward + VJP evaluation at 168 bits) per precision and thread; what is
/// given back beyond that is freed, so a long-running process does not keep a larger case's storage. MPFI's subtraction, product, square and negation allocate a temporary per call; for
/// regular operands the lean type writes the same endpoints with MPFR directly (below) and leaves
/// the rest to MPFI, whose temporaries then still allocate.
///
/// A moved-from value holds no interval (it may only be assigned to or destroyed), as for Boost's.
#include <cstddef>
#include <utility>
#include <vector>

#include <mpfi.h>

namespace normcheck::oracle {

namespace lean_interval_detail {

/// Initialised intervals of one precision, free for reuse by this thread.
class IntervalPool {
 public:
  explicit IntervalPool(mpfr_prec_t bits) : bits_(bits), max_free_(max_free_for(bits)) {}
  IntervalPool(const IntervalPool&) = delete;
  IntervalPool& operator=(const IntervalPool&) = delete;
  ~IntervalPool() {
    for (mpfi_ptr p : free_) destroy(p);
  }

  mpfi_ptr take() {
    if (free_.empty()) {
      auto* p = new __mpfi_struct;
      mpfi_init2(p, bits_);
      return p;
    }
    mpfi_ptr p = free_.back();
    free_.pop_back();
    return p;
  }

  void give(mpfi_ptr p) {
    if (free_.size() < max_free_)
      free_.push_back(p);
    else
      destroy(p);
  }

 private:
  static constexpr size_t kPoolBytes = size_t{16} << 20;
  static size_t max_free_for(mpfr_prec_t bits) {
    const size_t limb_bytes = (static_cast<size_t>(bits) + 63) / 64 * 8 + 16;  // per endpoint, with malloc's overhead
    return kPoolBytes / (sizeof(__mpfi_struct) + 2 * limb_bytes);
  }
  static void destroy(mpfi_ptr p) {
    mpfi_clear(p);
    delete p;
  }

  mpfr_prec_t bits_;
  size_t max_free_;
  std::vector<mpfi_ptr> free_;
};

template <mpfr_prec_t Bits>
IntervalPool& pool() {
  thread_local IntervalPool p(Bits);
  return p;
}

// MPFI's mpfi_sub, mpfi_mul, mpfi_sqr and mpfi_neg allocate a temporary endpoint on every call (so
// that the result may alias an operand). Where the operands are common, the functions below write
// the same endpoints without it: every endpoint (a nonzero bound, or exactly zero) is regular
// (nonzero, finite, not NaN) and, for products, each operand lies on one side of zero. Then each
// endpoint of the result is one correctly rounded MPFR operation (downward for the left end, upward
// for the right) of the endpoints that MPFI's general case pairs, so it is the same number; a zero
// difference is signed as MPFI signs it (+0 on the left, -0 on the right). Everything else (a zero,
// infinite or NaN endpoint, an operand containing zero, a result that aliases the operand MPFI
// reads after writing) goes to MPFI itself. The lean type's tests compare every case with MPFI's.

inline bool regular(mpfi_srcptr a) { return mpfr_regular_p(&a->left) && mpfr_regular_p(&a->right); }
inline bool positive(mpfi_srcptr a) { return !mpfr_signbit(&a->left); }   // for regular a: 0 < left
inline bool negative(mpfi_srcptr a) { return mpfr_signbit(&a->right); }   // for regular a: right < 0

/// MPFI's signs of zero endpoints: +0 on the left, -0 on the right.
inline void sign_zero_ends(mpfi_ptr r) {
  if (mpfr_zero_p(&r->left) && mpfr_signbit(&r->left)) mpfr_neg(&r->left, &r->left, MPFR_RNDU);
  if (mpfr_zero_p(&r->right) && !mpfr_signbit(&r->right)) mpfr_neg(&r->right, &r->right, MPFR_RNDD);
}

/// r = a - b (r may be a, not b).
inline void sub(mpfi_ptr r, mpfi_srcptr a, mpfi_srcptr b) {
  if (r == b || !regular(a) || !regular(b)) {
    mpfi_sub(r, a, b);
    return;
  }
  mpfr_sub(&r->left, &a->left, &b->right, MPFR_RNDD);
  mpfr_sub(&r->right, &a->right, &b->left, MPFR_RNDU);
  sign_zero_ends(r);
}

/// r = a b (r neither a nor b).
inline void mul(mpfi_ptr r, mpfi_srcptr a, mpfi_srcptr b) {
  if (r == a || r == b || !regular(a) || !regular(b) || !(positive(a) || negative(a)) || !(positive(b) || negative(b))) {
    mpfi_mul(r, a, b);
    return;
  }
  // The left end is the product of the ends nearest zero when the signs agree, of the far ends else.
  const bool pa = positive(a), pb = positive(b);
  mpfr_srcptr lower_a = pb ? &a->left : &a->right, lower_b = pa ? &b->left : &b->right;
  mpfr_srcptr upper_a = pb ? &a->right : &a->left, upper_b = pa ? &b->right : &b->left;
  mpfr_mul(&r->left, lower_a, lower_b, MPFR_RNDD);
  mpfr_mul(&r->right, upper_a, upper_b, MPFR_RNDU);
}

/// r = a^2 (r not a).
inline void sqr(mpfi_ptr r, mpfi_srcptr a) {
  if (r == a || !regular(a) || !(positive(a) || negative(a))) {
    mpfi_sqr(r, a);
    return;
  }
  const bool pa = positive(a);
  mpfr_sqr(&r->left, pa ? &a->left : &a->right, MPFR_RNDD);
  mpfr_sqr(&r->right, pa ? &a->right : &a->left, MPFR_RNDU);
}

/// r = -a (r not a).
inline void neg(mpfi_ptr r, mpfi_srcptr a) {
  if (r == a || !regular(a)) {
    mpfi_neg(r, a);
    return;
  }
  mpfr_neg(&r->left, &a->right, MPFR_RNDD);
  mpfr_neg(&r->right, &a->left, MPFR_RNDU);
}

}  // namespace lean_interval_detail

/// An MPFI interval of Bits bits with value semantics, for the oracle formulas (`<Real>`).
template <mpfr_prec_t Bits>
class LeanInterval {
 public:
  static constexpr mpfr_prec_t kBits = Bits;

  LeanInterval() : p_(take()) { mpfi_set_ui(p_, 0u); }
  LeanInterval(double d) : p_(take()) { mpfi_set_d(p_, d); }  // NOLINT: exact (Bits >= 53), as Boost's
  LeanInterval(int i) : p_(take()) { mpfi_set_si(p_, i); }    // NOLINT
  LeanInterval(const LeanInterval& o) : p_(take()) { mpfi_set(p_, o.p_); }
  LeanInterval(LeanInterval&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  LeanInterval& operator=(const LeanInterval& o) {
    if (this != &o) {
      if (!p_) p_ = take();
      mpfi_set(p_, o.p_);
    }
    return *this;
  }
  LeanInterval& operator=(LeanInterval&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~LeanInterval() {
    if (p_) lean_interval_detail::pool<Bits>().give(p_);
  }

  mpfi_srcptr data() const { return p_; }

  LeanInterval& operator+=(const LeanInterval& o) {
    mpfi_add(p_, p_, o.p_);
    return *this;
  }
  LeanInterval& operator-=(const LeanInterval& o) {
    lean_interval_detail::sub(p_, p_, o.p_);
    return *this;
  }
  LeanInterval& operator*=(const LeanInterval& o) {  // Boost squares when o is this value
    if (&o == this)
      mpfi_sqr(p_, p_);
    else
      mpfi_mul(p_, p_, o.p_);
    return *this;
  }
  LeanInterval& operator/=(const LeanInterval& o) {
    mpfi_div(p_, p_, o.p_);
    return *this;
  }

  friend LeanInterval operator+(const LeanInterval& a, const LeanInterval& b) {
    return with_result([&](mpfi_ptr r) { mpfi_add(r, a.p_, b.p_); });
  }
  friend LeanInterval operator-(const LeanInterval& a, const LeanInterval& b) {
    return with_result([&](mpfi_ptr r) { lean_interval_detail::sub(r, a.p_, b.p_); });
  }
  friend LeanInterval operator*(const LeanInterval& a, const LeanInterval& b) {
    return with_result([&](mpfi_ptr r) {
      if (&a == &b)
        lean_interval_detail::sqr(r, a.p_);
      else
        lean_interval_detail::mul(r, a.p_, b.p_);
    });
  }
  friend LeanInterval operator/(const LeanInterval& a, const LeanInterval& b) {
    return with_result([&](mpfi_ptr r) { mpfi_div(r, a.p_, b.p_); });
  }
  friend LeanInterval operator-(const LeanInterval& a) {
    return with_result([&](mpfi_ptr r) { lean_interval_detail::neg(r, a.p_); });
  }
  friend LeanInterval sqrt(const LeanInterval& a) {
    return with_result([&](mpfi_ptr r) { mpfi_sqrt(r, a.p_); });
  }

 private:
  struct Uninitialised {};
  explicit LeanInterval(Uninitialised) : p_(take()) {}
  static mpfi_ptr take() { return lean_interval_detail::pool<Bits>().take(); }
  /// A new value whose interval `set` writes (every operation writes its whole result).
  template <class Set>
  static LeanInterval with_result(Set set) {
    LeanInterval r{Uninitialised{}};
    set(r.p_);
    return r;
  }

  mpfi_ptr p_;
};

}  // namespace normcheck::oracle
