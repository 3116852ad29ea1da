#pragma once
/// Evaluation of the contracted block under test, f = D xbar / sqrt(|R xbar|^2 / n + eps) + c,
/// and its input VJP dx = s D^T dy - (s^3 / n) <dy, D xbar> R^T R xbar, templated on storage
/// (the dtype of D, R, c, x, dy and the outputs) and accumulator (f32 for f16/bf16 storage, the
/// storage precision otherwise, as the seed's dtype policy states).
#include <cstdint>
#include <vector>

#include "kernels/numeric.hpp"

namespace normcheck::kernels {

template <class Storage>
struct ContractedArgs {
  const Storage *D, *R, *c;  ///< m x (d+1), k x (d+1), m
  int64_t d, n, m, k;
  double eps;
};

/// sum_q coef[q] xbar[q] with xbar = [x; 1], sequential, in Accum.
template <class Storage, class Accum>
Accum dot_xbar(const Storage* coef, const Storage* x, int64_t d) {
  Accum s = num::constant<Accum>(0.0);
  for (int64_t q = 0; q < d; ++q) s += num::convert<Accum>(coef[q]) * num::convert<Accum>(x[q]);
  return s + num::convert<Accum>(coef[d]);
}

/// p = R xbar (k) and the reciprocal s = 1 / sqrt(|p|^2 / n + eps) of one row.
template <class Storage, class Accum>
Accum contracted_reciprocal(const ContractedArgs<Storage>& a, const Storage* x, std::vector<Accum>& p) {
  p.resize(static_cast<size_t>(a.k));
  Accum ss = num::constant<Accum>(0.0);
  for (int64_t l = 0; l < a.k; ++l) {
    p[l] = dot_xbar<Storage, Accum>(a.R + l * (a.d + 1), x, a.d);
    ss += p[l] * p[l];
  }
  const Accum v = ss / num::constant<Accum>(static_cast<double>(a.n));
  return num::constant<Accum>(1.0) / num::sqrt(v + num::constant<Accum>(a.eps));
}

template <class Storage, class Accum>
void contracted_forward(const ContractedArgs<Storage>& a, const Storage* x, int64_t rows, Storage* f) {
  std::vector<Accum> p;
  for (int64_t r = 0; r < rows; ++r) {
    const Storage* xr = x + r * a.d;
    const Accum s = contracted_reciprocal<Storage, Accum>(a, xr, p);
    for (int64_t i = 0; i < a.m; ++i) {
      const Accum num = dot_xbar<Storage, Accum>(a.D + i * (a.d + 1), xr, a.d);
      f[r * a.m + i] = num::convert<Storage>(num * s + num::convert<Accum>(a.c[i]));
    }
  }
}

template <class Storage, class Accum>
void contracted_backward(const ContractedArgs<Storage>& a, const Storage* x, const Storage* dy, int64_t rows, Storage* dx) {
  const int64_t cols = a.d + 1;
  const Accum nn = num::constant<Accum>(static_cast<double>(a.n));
  std::vector<Accum> p;
  for (int64_t r = 0; r < rows; ++r) {
    const Storage* xr = x + r * a.d;
    const Storage* dyr = dy + r * a.m;
    const Accum s = contracted_reciprocal<Storage, Accum>(a, xr, p);
    Accum t = num::constant<Accum>(0.0);
    for (int64_t i = 0; i < a.m; ++i) t += num::convert<Accum>(dyr[i]) * dot_xbar<Storage, Accum>(a.D + i * cols, xr, a.d);
    const Accum coef = s * s * s / nn * t;
    for (int64_t q = 0; q < a.d; ++q) {
      Accum e = num::constant<Accum>(0.0), g = num::constant<Accum>(0.0);
      for (int64_t i = 0; i < a.m; ++i) e += num::convert<Accum>(a.D[i * cols + q]) * num::convert<Accum>(dyr[i]);
      for (int64_t l = 0; l < a.k; ++l) g += num::convert<Accum>(a.R[l * cols + q]) * p[l];
      dx[r * a.d + q] = num::convert<Storage>(s * e - coef * g);
    }
  }
}

}  // namespace normcheck::kernels
