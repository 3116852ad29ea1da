/* Test plugins for the normcheck plugin ABI, one source compiled several ways:
 *   NC_BEHAVIOUR_GOOD      two-pass LayerNorm and RMSNorm in f32 (float) and f64 (double)
 *   NC_BEHAVIOUR_ONE_PASS  planted defect: var = E[x^2] - E[x]^2 (cancels at large means)
 *   NC_BEHAVIOUR_CRASH     dereferences NULL when n > 64
 *   NC_BEHAVIOUR_HANG      loops forever when rows > 3
 *   NC_BEHAVIOUR_BAD_ABI   declares ABI version 99
 * Compiled with -ffp-contract=off: every operation rounds as written. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "normcheck/plugin.h"

#ifndef NC_BEHAVIOUR
#define NC_BEHAVIOUR 0
#endif
#define NC_BEHAVIOUR_GOOD 0
#define NC_BEHAVIOUR_ONE_PASS 1
#define NC_BEHAVIOUR_CRASH 2
#define NC_BEHAVIOUR_HANG 3
#define NC_BEHAVIOUR_BAD_ABI 4

static int supports(nc_op op, nc_dtype dtype) {
  (void)op;
  return dtype == NC_F32 || dtype == NC_F64;
}

/* One implementation per real type T (float or double). */
#define DEFINE_KERNELS(T, SQRT, SUFFIX)                                                                  \
  static void stats_##SUFFIX(const T* x, int64_t n, int rms, T eps, T* mean, T* rstd) {                 \
    T s = 0, ss = 0, m = 0;                                                                              \
    for (int64_t j = 0; j < n; ++j) s += x[j];                                                           \
    m = rms ? 0 : s / (T)n;                                                                              \
    if (NC_BEHAVIOUR == NC_BEHAVIOUR_ONE_PASS && !rms) {                                                 \
      for (int64_t j = 0; j < n; ++j) ss += x[j] * x[j];                                                 \
      *mean = m;                                                                                         \
      *rstd = (T)1 / SQRT(ss / (T)n - m * m + eps);                                                      \
      return;                                                                                            \
    }                                                                                                    \
    for (int64_t j = 0; j < n; ++j) {                                                                    \
      const T d = x[j] - m;                                                                              \
      ss += d * d;                                                                                       \
    }                                                                                                    \
    *mean = m;                                                                                           \
    *rstd = (T)1 / SQRT(ss / (T)n + eps);                                                                \
  }                                                                                                      \
  static void forward_##SUFFIX(const nc_norm_args* a, int rms) {                                         \
    const T *x = (const T*)a->x, *g = (const T*)a->gamma, *b = (const T*)a->beta;                        \
    T* y = (T*)a->y;                                                                                     \
    for (int64_t i = 0; i < a->rows; ++i) {                                                              \
      T mean, rstd;                                                                                      \
      stats_##SUFFIX(x + i * a->x_row_stride, a->n, rms, (T)a->eps, &mean, &rstd);                      \
      for (int64_t j = 0; j < a->n; ++j) {                                                               \
        T t = (x[i * a->x_row_stride + j] - mean) * rstd;                                                \
        t = rms ? g[j] * t : t * g[j] + b[j];                                                            \
        y[i * a->y_row_stride + j] = t;                                                                  \
      }                                                                                                  \
    }                                                                                                    \
  }                                                                                                      \
  static void backward_##SUFFIX(const nc_norm_args* a, int rms) {                                        \
    const T *x = (const T*)a->x, *g = (const T*)a->gamma, *dy = (const T*)a->dy;                         \
    T *dx = (T*)a->dx, *dg = (T*)a->dgamma, *db = (T*)a->dbeta;                                          \
    for (int64_t j = 0; j < a->n; ++j) {                                                                 \
      dg[j] = 0;                                                                                         \
      if (db) db[j] = 0;                                                                                 \
    }                                                                                                    \
    for (int64_t i = 0; i < a->rows; ++i) {                                                              \
      const T* xr = x + i * a->x_row_stride;                                                             \
      const T* dyr = dy + i * a->dy_row_stride;                                                          \
      T mean, rstd, sg = 0, sgz = 0;                                                                     \
      stats_##SUFFIX(xr, a->n, rms, (T)a->eps, &mean, &rstd);                                           \
      for (int64_t j = 0; j < a->n; ++j) {                                                               \
        const T z = (xr[j] - mean) * rstd, gv = dyr[j] * g[j];                                           \
        sg += gv;                                                                                        \
        sgz += gv * z;                                                                                   \
        dg[j] += dyr[j] * z;                                                                             \
        if (db) db[j] += dyr[j];                                                                         \
      }                                                                                                  \
      const T mg = rms ? 0 : sg / (T)a->n, mgz = sgz / (T)a->n;                                          \
      for (int64_t j = 0; j < a->n; ++j) {                                                               \
        const T z = (xr[j] - mean) * rstd, gv = dyr[j] * g[j];                                           \
        dx[i * a->dx_row_stride + j] = rstd * ((gv - mg) - z * mgz);                                     \
      }                                                                                                  \
    }                                                                                                    \
  }

DEFINE_KERNELS(float, sqrtf, f32)
DEFINE_KERNELS(double, sqrt, f64)

static nc_status run(const nc_norm_args* a, char* message, size_t size) {
  if (NC_BEHAVIOUR == NC_BEHAVIOUR_CRASH && a->n > 64) {
    volatile int* p = NULL;
    *p = 1;
  }
  if (NC_BEHAVIOUR == NC_BEHAVIOUR_HANG && a->rows > 3)
    for (volatile int spin = 1; spin;) {
    }
  if (a->dtype != NC_F32 && a->dtype != NC_F64) return NC_UNSUPPORTED;
  if (a->eps <= 0) {
    snprintf(message, size, "eps must be > 0");
    return NC_ERROR;
  }
  const int rms = a->op == NC_RMSNORM_FORWARD || a->op == NC_RMSNORM_BACKWARD;
  const int backward = a->op == NC_LAYERNORM_BACKWARD || a->op == NC_RMSNORM_BACKWARD;
  if (a->dtype == NC_F32) {
    if (backward) backward_f32(a, rms);
    else forward_f32(a, rms);
  } else {
    if (backward) backward_f64(a, rms);
    else forward_f64(a, rms);
  }
  return NC_OK;
}

static const nc_plugin description = {
    NC_BEHAVIOUR == NC_BEHAVIOUR_BAD_ABI ? 99u : NORMCHECK_PLUGIN_ABI_VERSION,
#if NC_BEHAVIOUR == NC_BEHAVIOUR_ONE_PASS
    "nc_one_pass",
#elif NC_BEHAVIOUR == NC_BEHAVIOUR_CRASH
    "nc_crash",
#elif NC_BEHAVIOUR == NC_BEHAVIOUR_HANG
    "nc_hang",
#else
    "nc_good",
#endif
    supports, run};

const nc_plugin* normcheck_plugin_v1(void) { return &description; }
