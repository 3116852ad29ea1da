#pragma once
/// The original affine -> LayerNorm -> affine block as an unfused framework runs it in the
/// storage dtype: the producer GEMM stores h, the two-pass LayerNorm kernel stores its output,
/// the consumer GEMM stores f; backward the consumer dgrad stores du, the LayerNorm backward
/// stores dh, the producer dgrad gives dx. The baseline the contraction is compared with (both
/// are judged only by the oracle, never one by the other).
#include <cstdint>
#include <vector>

#include "kernels/layernorm.hpp"

namespace normcheck::kernels {

template <class Storage>
struct AffineLnArgs {
  const Storage *A, *a, *gamma, *beta, *W, *b;  ///< a, b may be null; gamma, beta always present (1, 0 when absent)
  int64_t d, n, m;
  double eps;
};

/// out[r][j] = init[j] + sum_q mat[j][q] in[r][q] (mat row-major, rows_out x len), stored.
template <class Storage, class Accum>
void affine_rows(const Storage* mat, const Storage* init, const Storage* in, int64_t rows, int64_t rows_out, int64_t len,
                 Storage* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < rows_out; ++j) {
      Accum s = init ? num::convert<Accum>(init[j]) : num::constant<Accum>(0.0);
      for (int64_t q = 0; q < len; ++q) s += num::convert<Accum>(mat[j * len + q]) * num::convert<Accum>(in[r * len + q]);
      out[r * rows_out + j] = num::convert<Storage>(s);
    }
}

/// out[r][q] = sum_j mat[j][q] in[r][j] (the transposed product), stored.
template <class Storage, class Accum>
void affine_rows_transposed(const Storage* mat, const Storage* in, int64_t rows, int64_t rows_mat, int64_t len,
                            Storage* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < len; ++q) {
      Accum s = num::constant<Accum>(0.0);
      for (int64_t j = 0; j < rows_mat; ++j) s += num::convert<Accum>(mat[j * len + q]) * num::convert<Accum>(in[r * rows_mat + j]);
      out[r * len + q] = num::convert<Storage>(s);
    }
}

template <class Storage, class Accum>
void affine_ln_affine_forward(const AffineLnArgs<Storage>& a, const Storage* x, int64_t rows, Storage* f) {
  std::vector<Storage> h(static_cast<size_t>(rows * a.n)), u(h.size());
  affine_rows<Storage, Accum>(a.A, a.a, x, rows, a.n, a.d, h.data());
  layernorm_forward_two_pass<Storage, Accum>(h.data(), a.gamma, a.beta, rows, a.n, a.eps, u.data());
  affine_rows<Storage, Accum>(a.W, a.b, u.data(), rows, a.m, a.n, f);
}

template <class Storage, class Accum>
void affine_ln_affine_backward(const AffineLnArgs<Storage>& a, const Storage* x, const Storage* dy, int64_t rows, Storage* dx) {
  std::vector<Storage> h(static_cast<size_t>(rows * a.n)), du(h.size()), dh(h.size()), dg(static_cast<size_t>(a.n)), db(dg.size());
  affine_rows<Storage, Accum>(a.A, a.a, x, rows, a.n, a.d, h.data());
  affine_rows_transposed<Storage, Accum>(a.W, dy, rows, a.m, a.n, du.data());
  layernorm_backward_two_pass<Storage, Accum>(h.data(), a.gamma, du.data(), rows, a.n, a.eps, dh.data(), dg.data(), db.data());
  affine_rows_transposed<Storage, Accum>(a.A, dh.data(), rows, a.n, a.d, dx);
}

}  // namespace normcheck::kernels
