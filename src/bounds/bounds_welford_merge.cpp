// LN-WELFORDMERGE-ANY and -BLOCKED (docs/bounds.md section 2.7): the row statistics of any merge tree
// of Welford partials (sequential Welford, chunked Welford merged by Chan's formula, warp-style tree
// merges; the forms of section 2.7.1, FMA contraction allowed), the tree's depth D the one parameter:
// n - 1 for the class (any tree), blocked_reduction_depth(n) for welford_chunked.
//
// Every term below is a sum of products of nonnegative doubles; `up` rounds each product up and adds
// the smallest subnormal, so that neither the rounding nor the underflow of the bound's own double
// arithmetic can lose a term (an overflow gives +inf, a void bound).
#include <limits>

#include "bounds/bounds_model.hpp"
#include "core/reduction_block.hpp"

namespace normcheck::bounds_detail {
namespace {

/// An upper bound of the double x computed from nonnegative terms by a few roundings, also when it underflowed.
double up(double x) { return x * (1 + kRel) + std::numeric_limits<double>::denorm_min(); }

/// (1 + a)^k, rounded up; +inf when it overflows.
double power_up(double a, double k) { return up(std::exp(k * std::log1p(a)) * (1 + 0x1p-40)); }

/// The row's extremes: max |x_j| and the range hi - lo (computed as 2 (hi/2 - lo/2), +inf if it overflows).
struct RowSpread {
  double max_abs = 0, range = 0;
  double sum_abs = 0;   ///< S1 = sum |x_j|, rounded up
  double harmonic = 0;  ///< H_n = sum_{k <= n} 1 / k, rounded up
};

RowSpread spread(const double* x, int64_t n) {
  double lo = x[0], hi = x[0], m = 0, s1 = 0, h = 0;
  for (int64_t j = 0; j < n; ++j) {
    lo = std::min(lo, x[j]), hi = std::max(hi, x[j]), m = std::max(m, std::fabs(x[j]));
    s1 += std::fabs(x[j]);
    h += 1.0 / static_cast<double>(j + 1);
  }
  const double slack = 1 + static_cast<double>(n + 2) * 0x1p-52;  // the n roundings of each sum
  return {m, 2 * ((0.5 * hi - 0.5 * lo) * (1 + 0x1p-52)), s1 * slack, h * slack};
}

}  // namespace

int64_t welford_merge_depth(int64_t n, SumOrder order) {
  if (n <= 1) return 0;
  return order == SumOrder::blocked ? blocked_reduction_depth(n) : n - 1;
}

double welford_merge_weight_sum(int64_t n, int64_t depth) {
  if (n <= 1) return 0;
  // W <= sum n_nu / 4 <= n D / 4, and W <= (n / 2) log2 n for every tree (by induction: the binary
  // entropy H(p) >= 4 p (1 - p) >= 2 p (1 - p); section 2.7.3).
  const double nn = static_cast<double>(n);
  return up(nn * std::min(static_cast<double>(depth) / 4, 0.5 * std::log2(nn) * (1 + 0x1p-50)));
}

namespace {

/// The pieces of the merged mean's error (section 2.7.2): e_mu, and what the per-node bound
/// E_nu <= g (n_nu beta + L extra) of 2.7.3 uses: beta (an F1 merge's own rounding), extra (what an
/// F2 merge adds to it, at most L = ceil(log2 n) of them on a path) and g = (1 + alpha)^D.
struct MeanError {
  double beta = 0, extra = 0, levels = 0, growth = 1, e_mu = 0;
};

MeanError merged_mean_error(const RowSpread& s, int64_t n, int64_t depth, const Units& u) {
  if (n <= 1) return {};  // the leaf: mu_hat = x exactly
  const double nn = static_cast<double>(n), d = static_cast<double>(depth);
  const double g3 = gamma_k(3, u.ua), g4 = gamma_k(4, u.ua);
  // An F1 merge's rounding not due to the children's errors: (1 + u)(gamma_4 R + n eta_a) + u M; an F2
  // merge (weighted means) adds at most (1 + u) gamma_3 M, on at most L merges of a path.
  const double beta = up(up((1 + u.ua) * up(up(g4 * s.range) + up(nn * u.eta_a))) + up(u.ua * s.max_abs));
  const double extra = up((1 + u.ua) * up(g3 * s.max_abs));
  const double levels = std::min(d, std::ceil(std::log2(nn)));
  // Summed along a path instead (partial means |m| <= S1_node / n_node, sizes increasing along it):
  // (1 + u)(gamma_4 S1 (1 + 2 H_n) + D n eta_a) + u S1 H_n, plus the F2 merges' L (1 + u) gamma_3 M.
  const double path = up(up((1 + u.ua) * up(up(g4 * up(s.sum_abs * (1 + 2 * s.harmonic))) + up(d * nn * u.eta_a))) +
                         up(u.ua * up(s.sum_abs * s.harmonic)));
  const double f2 = up(levels * extra);
  // The children's error grows by 1 + alpha per merge.
  const double alpha = (u.ua + 3 * (1 + u.ua) * g4) * (1 + kRel);
  const double g = power_up(alpha, d);
  return {beta, extra, levels, g, up((std::min(up(beta * d), path) + f2) * g)};
}

}  // namespace

double mean_error_welford_merge(const double* x, int64_t n, int64_t depth, const Units& u) {
  return n <= 1 ? 0 : merged_mean_error(spread(x, n), n, depth, u).e_mu;
}

double variance_error_welford_merge(const double* x, int64_t n, const RowError& r, int64_t depth, const Units& u) {
  if (n <= 1) return 0;  // M2 = 0 exactly and 0 / 1 = 0
  const RowSpread s = spread(x, n);
  const MeanError m = merged_mean_error(s, n, depth, u);
  const double nn = static_cast<double>(n), d = static_cast<double>(depth), e = std::max(r.e_mu, m.e_mu);
  const double g2 = gamma_k(2, u.ua), g4 = gamma_k(4, u.ua), g10 = gamma_k(10, u.ua);
  // Everything below is divided by n (S / n = v): S itself, D S or the products could overflow the
  // double evaluation where the kernel's M2 does not.
  // sqrt(Q / n), Q >= sum_nu (n_a n_b / n_nu) E_nu^2: E_nu <= n_nu beta g and sum n_a n_b n_nu = (n^3 - n) / 3
  // for every tree; or E_nu <= e_mu and sum n_a n_b / n_nu <= W.
  // (Minkowski: the F2 merges' L extra as a separate term, times sqrt(W / n).)
  const double root_w_n = std::sqrt(welford_merge_weight_sum(n, depth) / nn * (1 + 0x1p-50));
  const double root_q_n = std::min(up(up(m.growth * up(m.beta * std::sqrt((nn * nn - 1) / 3 * (1 + 0x1p-50)))) +
                                      up(m.growth * up(up(m.levels * m.extra) * root_w_n))),
                                   up(e * root_w_n));
  // The local roundings of the merged means (l of section 2.7.2), summed over the n - 1 merges: each
  // at most l_max, or all together (partial means |m| <= S1_node / n_node) the second form.
  // (G2 is Welford's step, an F1 merge of a single element.)
  const double l_max = up(up((1 + u.ua) * up(up(g4 * up(s.range + 2 * e)) + up(nn * u.eta_a))) + up(u.ua * up(s.max_abs + e)));
  const double sh = up(s.sum_abs * s.harmonic), ne = up((nn - 1) * e);
  const double l_all = std::min(up((nn - 1) * l_max), up(up((1 + u.ua) * up(up(g4 * up(2 * sh + 2 * ne)) + up(nn * (nn - 1) * u.eta_a))) +
                                                          up(u.ua * up(sh + ne))));
  // B / n: the merges' products against their exact values: the mean errors through delta^2
  // (Cauchy-Schwarz over the tree: sum (n_a n_b / n_nu) E_nu |delta_nu| <= sqrt(S Q)), the product
  // roundings, Welford's delta (x - mu_new) form, the products' underflow.
  const double through_mean = up(4 * up(1 + g10) * up(up(std::sqrt(r.v) * root_q_n) + up(root_q_n * root_q_n)));
  const double products = up(g10 * r.v);
  const double welford_form = up(up(std::pow(1 + u.ua, 3) / nn) * up(up(s.range + 2 * e) * l_all));
  const double underflow = up((4 * d + 1) * u.eta_a);
  const double b = through_mean + products + welford_form + underflow;
  // F = B + gamma_2 (D S + B + 2 (n - 1) F): the three-term sums of every merge.
  const double shrink = 1 - 2 * (nn - 1) * g2 * (1 + kRel);
  if (!(shrink > 0x1p-20)) return kInf;
  const double f_n = up(up(up(b * (1 + g2)) + up(up(g2 * r.v) * d)) / shrink);  // F / n
  // v_hat = fl(M2_hat / n) or fl(M2_hat * fl(1 / n)): exact for a power of two, else two roundings.
  const double div = (n & (n - 1)) == 0 ? 0.0 : 2 * u.ua + u.ua * u.ua;
  return up(f_n * (1 + div)) + up(div * r.v) + u.eta_a;
}

double welford_merge_intermediates(const double* x, int64_t n, const RowError& r, const Units& u) {
  const RowSpread s = spread(x, n);
  const double nn = static_cast<double>(n);
  const double delta = up(s.range + 2 * r.e_mu);  // |delta_hat| <= (R + 2E)(1 + u)
  // delta^2 times count factors whose partial products are at most max(n_a, n_b) <= n - 1 (section 2.7.1)
  const double product = up(up(delta * delta) * (nn - 1)) * growth(12, u.ua);
  const double partial_m2 = up(up(r.v + r.e_v) * nn) * growth(2, u.ua);
  return std::max({up(s.max_abs + r.e_mu), delta * (1 + u.ua), product, partial_m2});
}

}  // namespace normcheck::bounds_detail
