/* Test plugins for the normcheck plugin ABI, one source compiled several ways (NC_BEHAVIOUR):
 *   GOOD               two-pass LayerNorm and RMSNorm in f32 (float) and f64 (double)
 *   ONE_PASS           planted defect: var = E[x^2] - E[x]^2 (cancels at large means)
 *   CRASH              dereferences NULL when n > 64
 *   HANG               loops forever when rows > 3
 *   BAD_ABI            declares ABI version 99
 * Planted defects of the kinds real kernels have (issue 14), each in every dtype it can express:
 *   NAN                every output element NaN
 *   EPS_IGNORED        uses eps = 1e-5 whatever it is given
 *   DGAMMA_ACCUMULATE  dgamma += ... and dbeta += ... into the output buffers (no zeroing)
 *   STRIDE_IGNORING    reads and writes rows n elements apart, whatever the strides
 *   SKIP_ZERO          leaves output elements whose value is 0 unwritten
 *   FLUSH_SUBNORMAL    flushes subnormal outputs to zero
 *   TRUNCATE           computes in a wider type (double for f32, long double for f64) and
 *                      truncates the outputs toward zero
 *   ROUND_AWAY         the same, rounding the outputs away from zero
 * A hostile one (issue 15): FLOOD writes bytes into the worker's reply pipe (fd 4) from a thread
 *   for ever and hangs: the harness's time limit must still fire.
 * Hostile ones of issue 48, each otherwise GOOD:
 *   GROW_BLOCK    on the first call of the run (no file at $NC_TEST_MARKER yet: it creates it) grows
 *                 the shared call block (fd 5) by 1 MiB: that call fails, the worker is replaced
 *   STDERR_FLOOD  writes 4 MiB to stderr on every call
 *   ESCAPE        on the first call of each worker starts a grandchild in a session of its own
 *                 (setsid, double fork) that writes its pid to $NC_TEST_MARKER.<pid> and sleeps
 * Sound, but not two-pass (issue 42 item 3), every dtype:
 *   WELFORD_CHUNKED    LayerNorm statistics as PyTorch's CPU kernel computes them: Welford over chunks
 *                      of 8 elements (mean += delta * (1/k), M2 = fma(delta, x - mean, M2)), the chunk
 *                      partials merged left to right by Chan's formula in PyTorch's AddMoments form
 *                      (c = n_b / n; mean = fma(c, delta, mean); M2 += M2_b + delta^2 c n_a), the affine
 *                      step y = fma(z, gamma, beta): FMA where a compiler would contract. It declares
 *                      nothing (judged by the "auto" contract).
 *   WELFORD_DECLARED   the same kernel, declaring normcheck_plugin_contract() = "welford".
 * f16 and bf16 are computed in float. Compiled with -ffp-contract=off: every operation rounds as
 * written. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "normcheck/plugin.h"

#ifndef NC_BEHAVIOUR
#define NC_BEHAVIOUR 0
#endif
#define NC_BEHAVIOUR_GOOD 0
#define NC_BEHAVIOUR_ONE_PASS 1
#define NC_BEHAVIOUR_CRASH 2
#define NC_BEHAVIOUR_HANG 3
#define NC_BEHAVIOUR_BAD_ABI 4
#define NC_BEHAVIOUR_NAN 5
#define NC_BEHAVIOUR_EPS_IGNORED 6
#define NC_BEHAVIOUR_DGAMMA_ACCUMULATE 7
#define NC_BEHAVIOUR_STRIDE_IGNORING 8
#define NC_BEHAVIOUR_SKIP_ZERO 9
#define NC_BEHAVIOUR_FLUSH_SUBNORMAL 10
#define NC_BEHAVIOUR_TRUNCATE 11
#define NC_BEHAVIOUR_ROUND_AWAY 12
#define NC_BEHAVIOUR_FLOOD 13
#define NC_BEHAVIOUR_WELFORD_CHUNKED 14
#define NC_BEHAVIOUR_WELFORD_DECLARED 15
#define NC_BEHAVIOUR_GROW_BLOCK 16
#define NC_BEHAVIOUR_STDERR_FLOOD 17
#define NC_BEHAVIOUR_ESCAPE 18
#define HOSTILE_GOOD (NC_BEHAVIOUR >= NC_BEHAVIOUR_GROW_BLOCK)

#define WELFORD (NC_BEHAVIOUR == NC_BEHAVIOUR_WELFORD_CHUNKED || NC_BEHAVIOUR == NC_BEHAVIOUR_WELFORD_DECLARED)
#define WELFORD_CHUNK 8

#define DIRECTED (NC_BEHAVIOUR == NC_BEHAVIOUR_TRUNCATE || NC_BEHAVIOUR == NC_BEHAVIOUR_ROUND_AWAY)
#define ALL_DTYPES (NC_BEHAVIOUR >= NC_BEHAVIOUR_NAN && !DIRECTED && !HOSTILE_GOOD)

static int supports(nc_op op, nc_dtype dtype) {
  (void)op;
  return ALL_DTYPES || dtype == NC_F32 || dtype == NC_F64;
}

/* ---- storage formats ---------------------------------------------------------------------- */

/* Rounds |v| to the grid of a binary format (precision p, smallest subnormal exponent qmin) to
 * nearest, ties to even; +inf beyond max. */
static double round_to_grid(double v, int p, int qmin, double max) {
  int e = 0;
  const double a = fabs(v);
  frexp(a, &e);
  const double q = ldexp(1.0, e - p > qmin ? e - p : qmin);
  const double r = nearbyint(a / q) * q;
  return copysign(r > max ? INFINITY : r, v);
}

static double load(const void* base, int64_t k, nc_dtype d) {
  if (d == NC_F64) return ((const double*)base)[k];
  if (d == NC_F32) return ((const float*)base)[k];
  const uint16_t h = ((const uint16_t*)base)[k];
  if (d == NC_BF16) {
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
  }
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 31) return m ? NAN : sign * INFINITY;
  return sign * (e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25));
}

static void store(void* base, int64_t k, nc_dtype d, double v) {
  if (d == NC_F64) {
    ((double*)base)[k] = v;
  } else if (d == NC_F32) {
    ((float*)base)[k] = (float)v;
  } else if (d == NC_BF16) {
    const float f = (float)round_to_grid(v, 8, -133, 0x1.fep+127);
    uint32_t bits;
    memcpy(&bits, &f, 4);
    ((uint16_t*)base)[k] = isnan(v) ? 0x7fc0 : (uint16_t)(bits >> 16);
  } else {
    const double r = round_to_grid(v, 11, -24, 65504.0), a = fabs(r);
    uint16_t bits = signbit(r) ? 0x8000 : 0;
    if (isnan(v)) bits = 0x7e00;
    else if (isinf(a)) bits |= 0x7c00;
    else if (a < 0x1p-14) bits |= (uint16_t)(a / 0x1p-24);
    else {
      int e;
      const double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
      bits |= (uint16_t)(((e - 1 + 15) << 10) | (uint16_t)((m * 2 - 1) * 1024));
    }
    ((uint16_t*)base)[k] = bits;
  }
}

static double min_normal(nc_dtype d) {
  return d == NC_F64 ? 0x1p-1022 : d == NC_F16 ? 0x1p-14 : 0x1p-126;
}

/* ---- kernels on contiguous rows, one implementation per real type T ----------------------- */

#define DEFINE_KERNELS(T, SQRT, FMA, SUFFIX)                                                             \
  /* Chunked Welford merged by Chan's formula (WELFORD_CHUNKED): the row's mean and M2. */                \
  static void welford_##SUFFIX(const T* x, int64_t n, T* mean, T* m2) {                                 \
    T m = 0, s = 0;                                                                                      \
    int64_t count = 0;                                                                                   \
    for (int64_t lo = 0; lo < n; lo += WELFORD_CHUNK) {                                                  \
      T cm = 0, cs = 0;                                                                                  \
      int64_t k = 0;                                                                                     \
      for (int64_t j = lo; j < n && j < lo + WELFORD_CHUNK; ++j) {                                       \
        const T delta = x[j] - cm, inv = (T)1 / (T)(++k);                                                \
        cm = FMA(delta, inv, cm);                                                                        \
        cs = FMA(delta, x[j] - cm, cs);                                                                  \
      }                                                                                                  \
      const int64_t total = count + k;                                                                   \
      const T c = (T)k / (T)total, delta = cm - m;                                                       \
      if (count == 0) { /* the first chunk is the partial */                                             \
        m = cm;                                                                                          \
        s = cs;                                                                                          \
      } else {                                                                                           \
        m = FMA(c, delta, m);                                                                            \
        s += cs + delta * delta * c * (T)count;                                                          \
      }                                                                                                  \
      count = total;                                                                                     \
    }                                                                                                    \
    *mean = m;                                                                                           \
    *m2 = s;                                                                                             \
  }                                                                                                      \
  static void stats_##SUFFIX(const T* x, int64_t n, int rms, T eps, T* mean, T* rstd) {                 \
    T s = 0, ss = 0, m = 0;                                                                              \
    if (WELFORD && !rms) {                                                                               \
      welford_##SUFFIX(x, n, mean, &ss);                                                                 \
      *rstd = (T)1 / SQRT(ss / (T)n + eps);                                                              \
      return;                                                                                            \
    }                                                                                                    \
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
  static void forward_##SUFFIX(const T* x, const T* g, const T* b, int64_t rows, int64_t n, int rms,     \
                               T eps, T* y) {                                                            \
    for (int64_t i = 0; i < rows; ++i) {                                                                 \
      T mean, rstd;                                                                                      \
      stats_##SUFFIX(x + i * n, n, rms, eps, &mean, &rstd);                                              \
      for (int64_t j = 0; j < n; ++j) {                                                                  \
        T t = (x[i * n + j] - mean) * rstd;                                                              \
        y[i * n + j] = rms ? g[j] * t : WELFORD ? FMA(t, g[j], b[j]) : t * g[j] + b[j];                  \
      }                                                                                                  \
    }                                                                                                    \
  }                                                                                                      \
  static void backward_##SUFFIX(const T* x, const T* g, const T* dy, int64_t rows, int64_t n, int rms,   \
                                T eps, T* dx, T* dg, T* db) {                                            \
    for (int64_t j = 0; j < n; ++j) dg[j] = db[j] = 0;                                                   \
    for (int64_t i = 0; i < rows; ++i) {                                                                 \
      const T* xr = x + i * n;                                                                           \
      const T* dyr = dy + i * n;                                                                         \
      T mean, rstd, sg = 0, sgz = 0;                                                                     \
      stats_##SUFFIX(xr, n, rms, eps, &mean, &rstd);                                                     \
      for (int64_t j = 0; j < n; ++j) {                                                                  \
        const T z = (xr[j] - mean) * rstd, gv = dyr[j] * g[j];                                           \
        sg += gv;                                                                                        \
        sgz += gv * z;                                                                                   \
        dg[j] += dyr[j] * z;                                                                             \
        db[j] += dyr[j];                                                                                 \
      }                                                                                                  \
      const T mg = rms ? 0 : sg / (T)n, mgz = sgz / (T)n;                                                \
      for (int64_t j = 0; j < n; ++j) {                                                                  \
        const T z = (xr[j] - mean) * rstd, gv = dyr[j] * g[j];                                           \
        dx[i * n + j] = rstd * ((gv - mg) - z * mgz);                                                    \
      }                                                                                                  \
    }                                                                                                    \
  }

DEFINE_KERNELS(float, sqrtf, fmaf, f32)
DEFINE_KERNELS(double, sqrt, fma, f64)
DEFINE_KERNELS(long double, sqrtl, fmal, f80)

/* ---- one call: load (honouring or ignoring strides), compute, store ----------------------- */

typedef long double wide;

/* The value an output element gets, from the computed one: the planted defects act here. */
static wide finish_value(wide v, nc_dtype d) {
  if (NC_BEHAVIOUR == NC_BEHAVIOUR_NAN) return NAN;
  if (DIRECTED) {
    /* v was computed in a wider type: round to the dtype toward zero or away from zero. */
    const wide r = d == NC_F32 ? (wide)(float)v : (wide)(double)v;
    const int toward = NC_BEHAVIOUR == NC_BEHAVIOUR_TRUNCATE;
    if (r == v || isnan(v) || isinf(r)) return r;
    if ((fabsl(r) > fabsl(v)) == toward)
      return d == NC_F32 ? (wide)nextafterf((float)r, toward ? 0.0f : copysignf(INFINITY, (float)r))
                         : (wide)nextafter((double)r, toward ? 0.0 : copysign(INFINITY, (double)r));
    return r;
  }
  return v;
}

static void store_output(void* base, int64_t k, nc_dtype d, wide v, int accumulate) {
  if (NC_BEHAVIOUR == NC_BEHAVIOUR_SKIP_ZERO && v == 0) return;
  v = finish_value(v, d);
  if (accumulate) v += load(base, k, d);
  if (NC_BEHAVIOUR == NC_BEHAVIOUR_FLUSH_SUBNORMAL && v != 0 && fabsl(v) < min_normal(d)) v = 0;
  store(base, k, d, (double)v);
}

typedef enum { KIND_FLOAT, KIND_DOUBLE, KIND_LONG } compute_kind;

static compute_kind kind_of(nc_dtype d) {
  if (d == NC_F64) return DIRECTED ? KIND_LONG : KIND_DOUBLE;
  return d == NC_F32 && DIRECTED ? KIND_DOUBLE : KIND_FLOAT;
}

static int64_t stride_of(int64_t given, int64_t n) { return NC_BEHAVIOUR == NC_BEHAVIOUR_STRIDE_IGNORING ? n : given; }

static void load_rows(wide* out, const void* base, int64_t rows, int64_t n, int64_t stride, nc_dtype d) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) out[i * n + j] = load(base, i * stride + j, d);
}

/* Runs the kernel of `kind` on wide buffers (converted to the compute type on the way in and out). */
static void compute(compute_kind kind, int backward, int rms, int64_t rows, int64_t n, double eps, const wide* x,
                    const wide* g, const wide* b, const wide* dy, wide* y, wide* dx, wide* dg, wide* db) {
  const int64_t rn = rows * n;
#define RUN_AS(T, SUFFIX)                                                                          \
  {                                                                                                \
    T* buf = malloc(sizeof(T) * (size_t)(4 * rn + 5 * n));                                         \
    T *tx = buf, *tg = tx + rn, *tb = tg + n, *tdy = tb + n, *ty = tdy + rn, *tdx = ty + rn,       \
      *tdg = tdx + rn, *tdb = tdg + n;                                                             \
    for (int64_t k = 0; k < rn; ++k) tx[k] = (T)x[k], tdy[k] = backward ? (T)dy[k] : 0;            \
    for (int64_t j = 0; j < n; ++j) tg[j] = (T)g[j], tb[j] = b ? (T)b[j] : 0;                      \
    if (backward) {                                                                                \
      backward_##SUFFIX(tx, tg, tdy, rows, n, rms, (T)eps, tdx, tdg, tdb);                         \
      for (int64_t k = 0; k < rn; ++k) dx[k] = tdx[k];                                             \
      for (int64_t j = 0; j < n; ++j) dg[j] = tdg[j], db[j] = tdb[j];                              \
    } else {                                                                                       \
      forward_##SUFFIX(tx, tg, tb, rows, n, rms, (T)eps, ty);                                      \
      for (int64_t k = 0; k < rn; ++k) y[k] = ty[k];                                               \
    }                                                                                              \
    free(buf);                                                                                     \
  }
  if (kind == KIND_FLOAT) RUN_AS(float, f32)
  else if (kind == KIND_DOUBLE) RUN_AS(double, f64)
  else RUN_AS(long double, f80)
#undef RUN_AS
}

#if NC_BEHAVIOUR == NC_BEHAVIOUR_FLOOD
#include <pthread.h>
#include <unistd.h>
static void* flood(void* unused) {
  static char bytes[65536];
  (void)unused;
  for (;;)
    if (write(4, bytes, sizeof bytes) < 0) usleep(100);
  return NULL;
}
#endif

#if HOSTILE_GOOD
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#if NC_BEHAVIOUR == NC_BEHAVIOUR_GROW_BLOCK
/* The first call of the run: creates $NC_TEST_MARKER and says 1, else 0. */
static int first_call_of_run(void) {
  const char* marker = getenv("NC_TEST_MARKER");
  if (!marker) return 0;
  const int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}
#endif
static void misbehave(void) {
#if NC_BEHAVIOUR == NC_BEHAVIOUR_GROW_BLOCK
  struct stat st;
  if (first_call_of_run() && fstat(5, &st) == 0) (void)!ftruncate(5, st.st_size + (1 << 20));
#elif NC_BEHAVIOUR == NC_BEHAVIOUR_STDERR_FLOOD
  static char line[4096];
  if (!line[0]) {
    memset(line, 'e', sizeof line - 1);
    line[sizeof line - 1] = '\n';
  }
  for (int k = 0; k < 1024; ++k) (void)!write(2, line, sizeof line);
#elif NC_BEHAVIOUR == NC_BEHAVIOUR_ESCAPE
  static int started = 0;
  const char* marker = getenv("NC_TEST_MARKER");
  if (started || !marker) return;
  started = 1;
  if (fork() == 0) {
    setsid();
    if (fork() == 0) {
      for (int fd = 3; fd <= 6; ++fd) close(fd);
      char path[4096];
      snprintf(path, sizeof path, "%s.%d", marker, (int)getpid());
      FILE* f = fopen(path, "w");
      if (f) fclose(f);
      for (int k = 0; k < 600; ++k) sleep(1);
    }
    _exit(0);
  }
#endif
}
#endif

static nc_status run(const nc_norm_args* a, char* message, size_t size) {
#if HOSTILE_GOOD
  misbehave();
#endif
#if NC_BEHAVIOUR == NC_BEHAVIOUR_FLOOD
  pthread_t t;
  pthread_create(&t, NULL, flood, NULL);
  for (volatile int spin = 1; spin;) {
  }
#endif
  if (NC_BEHAVIOUR == NC_BEHAVIOUR_CRASH && a->n > 64) {
    volatile int* p = NULL;
    *p = 1;
  }
  if (NC_BEHAVIOUR == NC_BEHAVIOUR_HANG && a->rows > 3)
    for (volatile int spin = 1; spin;) {
    }
  if (!supports(a->op, a->dtype)) return NC_UNSUPPORTED;
  if (a->eps <= 0) {
    snprintf(message, size, "eps must be > 0");
    return NC_ERROR;
  }
  const int rms = a->op == NC_RMSNORM_FORWARD || a->op == NC_RMSNORM_BACKWARD;
  const int backward = a->op == NC_LAYERNORM_BACKWARD || a->op == NC_RMSNORM_BACKWARD;
  const int64_t rows = a->rows, n = a->n, rn = rows * n;
  const double eps = NC_BEHAVIOUR == NC_BEHAVIOUR_EPS_IGNORED ? 1e-5 : a->eps;
  wide* buf = malloc(sizeof(wide) * (size_t)(4 * rn + 5 * n));
  if (!buf) {
    snprintf(message, size, "out of memory");
    return NC_ERROR;
  }
  wide *x = buf, *g = x + rn, *b = g + n, *dy = b + n, *y = dy + rn, *dx = y + rn, *dg = dx + rn, *db = dg + n;
  load_rows(x, a->x, rows, n, stride_of(a->x_row_stride, n), a->dtype);
  load_rows(g, a->gamma, 1, n, n, a->dtype);
  if (a->beta) load_rows(b, a->beta, 1, n, n, a->dtype);
  if (backward) load_rows(dy, a->dy, rows, n, stride_of(a->dy_row_stride, n), a->dtype);
  compute(kind_of(a->dtype), backward, rms, rows, n, eps, x, g, a->beta ? b : NULL, dy, y, dx, dg, db);
  const int accumulate = NC_BEHAVIOUR == NC_BEHAVIOUR_DGAMMA_ACCUMULATE;
  if (!backward) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < n; ++j) store_output(a->y, i * stride_of(a->y_row_stride, n) + j, a->dtype, y[i * n + j], 0);
  } else {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < n; ++j) store_output(a->dx, i * stride_of(a->dx_row_stride, n) + j, a->dtype, dx[i * n + j], 0);
    for (int64_t j = 0; j < n; ++j) {
      store_output(a->dgamma, j, a->dtype, dg[j], accumulate);
      if (a->dbeta) store_output(a->dbeta, j, a->dtype, db[j], accumulate);
    }
  }
  free(buf);
  return NC_OK;
}

static const nc_plugin description = {NC_BEHAVIOUR == NC_BEHAVIOUR_BAD_ABI ? 99u : NORMCHECK_PLUGIN_ABI_VERSION, NC_NAME,
                                      supports, run};

const nc_plugin* normcheck_plugin_v1(void) { return &description; }

#if NC_BEHAVIOUR == NC_BEHAVIOUR_WELFORD_DECLARED
const char* normcheck_plugin_contract(void) { return "welford"; }
#endif
