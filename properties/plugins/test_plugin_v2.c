/* Test plugins for ABI version 2 (include/normcheck/plugin.h): the six grouped norms (NC_GROUPED_NORM:
 * batch, group, instance, channel-layer norm, layer norm and RMSNorm over the last k axes), the
 * QR-contracted block (NC_CONTRACTED_BLOCK), the LayerNorm and RMSNorm JVPs (NC_LAYERNORM_JVP, NC_RMSNORM_JVP) and the Linear o RMSNorm block in its fused deferred form (NC_LINEAR_RMSNORM),
 * f32 and f64, computed in double and rounded once, honouring shapes and strides. One source
 * compiled several ways (NC_BEHAVIOUR):
 *   V2_GOOD                correct
 *   V2_WRONG_GROUPS        group norm over one group whatever G is (a wrong G)
 *   V2_BIAS_IN_CORRECTION  the deferred backward's correction uses <dy, y> instead of <dy, y - b>
 *   V2_CONTRACTED_K_DIVISOR the contracted block divides |R xbar|^2 by k, the rows of R, instead of
 *                          the original width n (a natural slip: n is no longer a dimension of R)
 *   V2_JVP_NO_DGAMMA       the LayerNorm and RMSNorm JVPs forget the z dgamma term (the tangent of the scale)
 * It also serves the version 1 LayerNorm forward in f64, to show that one library carries both. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "normcheck/plugin.h"

#define NC_BEHAVIOUR_V2_GOOD 0
#define NC_BEHAVIOUR_V2_WRONG_GROUPS 1
#define NC_BEHAVIOUR_V2_BIAS_IN_CORRECTION 2
#define NC_BEHAVIOUR_V2_CONTRACTED_K_DIVISOR 3
#define NC_BEHAVIOUR_V2_JVP_NO_DGAMMA 4
#ifndef NC_BEHAVIOUR
#define NC_BEHAVIOUR NC_BEHAVIOUR_V2_GOOD
#endif

/* Element e (in memory order of the tensor's shape) of t. */
static int64_t address(const nc_tensor* t, int64_t e) {
  int64_t at = 0;
  for (int k = t->rank - 1; k >= 0; --k) {
    at += (e % t->shape[k]) * t->strides[k];
    e /= t->shape[k];
  }
  return at;
}

static double get(const nc_tensor* t, nc_dtype d, int64_t e) {
  const int64_t a = address(t, e);
  return d == NC_F32 ? (double)((const float*)t->data)[a] : ((const double*)t->data)[a];
}

static void set(const nc_tensor* t, nc_dtype d, int64_t e, double v) {
  const int64_t a = address(t, e);
  if (d == NC_F32) ((float*)t->data)[a] = (float)v;
  else ((double*)t->data)[a] = v;
}

static int64_t count(const nc_tensor* t) {
  int64_t n = 1;
  for (int k = 0; k < t->rank; ++k) n *= t->shape[k];
  return n;
}

/* Coordinate on axis `axis` of element e. */
static int64_t coord(const nc_tensor* t, int64_t e, int axis) {
  for (int k = t->rank - 1; k > axis; --k) e /= t->shape[k];
  return e % t->shape[axis];
}

/* Product of the axes from..rank-1 of t. */
static int64_t trailing(const nc_tensor* t, int from) {
  int64_t n = 1;
  for (int k = from; k < t->rank; ++k) n *= t->shape[k];
  return n;
}

/* The reduction group of element e of x under the call's kind (any numbering). */
static int64_t group_of(const nc_call* c, const nc_tensor* x, int64_t e, int64_t groups) {
  const int64_t channels = x->shape[c->channel_axis];
  switch (c->kind) {
    case NC_BATCH_NORM: return coord(x, e, c->channel_axis);
    case NC_INSTANCE_NORM: return coord(x, e, 0) * channels + coord(x, e, c->channel_axis);
    case NC_GROUP_NORM: return coord(x, e, 0) * groups + coord(x, e, c->channel_axis) / (channels / groups);
    case NC_LAYER_NORM:
    case NC_RMS_NORM: return e / trailing(x, x->rank - c->normalized_dims);
    default: /* NC_CHANNEL_LAYER_NORM: every position apart from the channel */
      return (e / trailing(x, c->channel_axis)) * trailing(x, c->channel_axis + 1) + e % trailing(x, c->channel_axis + 1);
  }
}

/* The index of element e's gamma/beta. */
static int64_t param_of(const nc_call* c, const nc_tensor* x, int64_t e) {
  if (c->kind == NC_LAYER_NORM || c->kind == NC_RMS_NORM) return e % trailing(x, x->rank - c->normalized_dims);
  return coord(x, e, c->channel_axis);
}

static int64_t group_count(const nc_call* c, const nc_tensor* x, int64_t groups) {
  int64_t most = 0;
  for (int64_t e = 0; e < count(x); ++e) {
    const int64_t g = group_of(c, x, e, groups);
    if (g + 1 > most) most = g + 1;
  }
  return most;
}

static nc_status grouped(const nc_call* c, char* msg, size_t size) {
  const nc_tensor *x = &c->in[0], *dy = &c->in[1], *gamma = &c->in[2], *beta = &c->in[3];
  const nc_dtype d = c->dtype;
  const int rms = c->kind == NC_RMS_NORM;
  const int64_t total = count(x), channels = x->shape[c->channel_axis], params = count(gamma);
  int64_t groups = c->groups;
  if (NC_BEHAVIOUR == NC_BEHAVIOUR_V2_WRONG_GROUPS) groups = 1;
  const int64_t ngroups = group_count(c, x, groups);
  double* acc = calloc((size_t)(5 * ngroups), sizeof(double)); /* sum, count, sumsq, sum dz, sum dz z */
  double* dgb = calloc((size_t)(2 * params), sizeof(double));
  if (!acc || !dgb) {
    free(acc);
    free(dgb);
    snprintf(msg, size, "out of memory");
    return NC_ERROR;
  }
  double *sum = acc, *cnt = acc + ngroups, *sq = acc + 2 * ngroups, *sdz = acc + 3 * ngroups, *sdzz = acc + 4 * ngroups;
#define GROUP_OF(e) group_of(c, x, e, groups)
  for (int64_t e = 0; e < total; ++e) {
    if (!rms) sum[GROUP_OF(e)] += get(x, d, e);
    cnt[GROUP_OF(e)] += 1;
  }
  for (int64_t g = 0; g < ngroups; ++g) sum[g] /= cnt[g]; /* now the mean (0 for RMSNorm) */
  for (int64_t e = 0; e < total; ++e) {
    const double v = get(x, d, e) - sum[GROUP_OF(e)];
    sq[GROUP_OF(e)] += v * v;
  }
  for (int64_t g = 0; g < ngroups; ++g) sq[g] /= cnt[g]; /* now the biased variance (RMSNorm: mean square) */
  for (int64_t e = 0; e < total; ++e) {
    const int64_t g = GROUP_OF(e), p = param_of(c, x, e);
    const double r = 1.0 / sqrt(sq[g] + c->eps), z = (get(x, d, e) - sum[g]) * r, gy = get(dy, d, e);
    set(&c->out[0], d, e, z * get(gamma, d, p) + (rms ? 0.0 : get(beta, d, p)));
    const double dz = gy * get(gamma, d, p);
    sdz[g] += dz;
    sdzz[g] += dz * z;
    dgb[p] += gy * z;
    dgb[params + p] += gy;
  }
  for (int64_t e = 0; e < total; ++e) {
    const int64_t g = GROUP_OF(e), p = param_of(c, x, e);
    const double r = 1.0 / sqrt(sq[g] + c->eps), z = (get(x, d, e) - sum[g]) * r;
    const double dz = get(dy, d, e) * get(gamma, d, p);
    set(&c->out[1], d, e, r * (dz - (rms ? 0.0 : sdz[g] / cnt[g]) - z * sdzz[g] / cnt[g]));
  }
  for (int64_t p = 0; p < params; ++p) {
    set(&c->out[2], d, p, dgb[p]);
    if (!rms) set(&c->out[3], d, p, dgb[params + p]);
  }
  if (c->kind == NC_BATCH_NORM) {
    const nc_tensor *rm = &c->in[4], *rv = &c->in[5];
    for (int64_t ch = 0; ch < channels; ++ch) {
      const double k = cnt[ch], unbias = k > 1 ? k / (k - 1) : 1.0; /* one element: factor 1, as the contract */
      set(&c->out[4], d, ch, (1 - c->momentum) * get(rm, d, ch) + c->momentum * sum[ch]);
      set(&c->out[5], d, ch, (1 - c->momentum) * get(rv, d, ch) + c->momentum * sq[ch] * unbias);
    }
    for (int64_t e = 0; e < total; ++e) {
      const int64_t ch = coord(x, e, c->channel_axis);
      set(&c->out[6], d, e, (get(x, d, e) - get(rm, d, ch)) / sqrt(get(rv, d, ch) + c->eps) * get(gamma, d, ch) + get(beta, d, ch));
    }
  }
#undef GROUP_OF
  free(dgb);
  free(acc);
  return NC_OK;
}

static nc_status block(const nc_call* c, char* msg, size_t size) {
  const nc_tensor *x = &c->in[0], *g = &c->in[1], *w = &c->in[2], *b = &c->in[3], *dy = &c->in[4];
  const nc_dtype d = c->dtype;
  const int64_t rows = x->shape[0], n = x->shape[1], m = w->shape[0];
  double* r = malloc((size_t)rows * sizeof(double));
  double* pre = malloc((size_t)(rows * m) * sizeof(double));
  if (!r || !pre) {
    free(r);
    free(pre);
    snprintf(msg, size, "out of memory");
    return NC_ERROR;
  }
  for (int64_t i = 0; i < rows; ++i) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += get(x, d, i * n + j) * get(x, d, i * n + j);
    r[i] = 1.0 / sqrt(s / (double)n + c->eps);
    for (int64_t k = 0; k < m; ++k) {
      double t = 0;
      for (int64_t j = 0; j < n; ++j) t += get(w, d, k * n + j) * get(g, d, j) * get(x, d, i * n + j);
      pre[i * m + k] = r[i] * t;
      set(&c->out[0], d, i * m + k, pre[i * m + k] + (b->data ? get(b, d, k) : 0.0));
    }
  }
  for (int64_t i = 0; i < rows; ++i) {
    double corr = 0;
    for (int64_t k = 0; k < m; ++k) {
      const double bias = b->data ? get(b, d, k) : 0.0;
      const double yk = NC_BEHAVIOUR == NC_BEHAVIOUR_V2_BIAS_IN_CORRECTION ? pre[i * m + k] + bias : pre[i * m + k];
      corr += get(dy, d, i * m + k) * yk;
    }
    for (int64_t j = 0; j < n; ++j) {
      double t = 0;
      for (int64_t k = 0; k < m; ++k) t += get(dy, d, i * m + k) * get(w, d, k * n + j);
      set(&c->out[1], d, i * n + j, r[i] * get(g, d, j) * t - r[i] * r[i] / (double)n * corr * get(x, d, i * n + j));
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    double dg = 0;
    for (int64_t k = 0; k < m; ++k) {
      double t = 0; /* sum_i r_i dy_ik x_ij */
      for (int64_t i = 0; i < rows; ++i) t += r[i] * get(dy, d, i * m + k) * get(x, d, i * n + j);
      set(&c->out[2], d, k * n + j, t * get(g, d, j));
      dg += get(w, d, k * n + j) * t;
    }
    set(&c->out[3], d, j, dg);
  }
  free(r);
  free(pre);
  return NC_OK;
}

/* The contracted block: xbar = [x; 1], s = 1 / sqrt(|R xbar|^2 / n + eps), f = s D xbar + c,
 * dx = s D^T dy - (s^3 / n) <dy, D xbar> R^T R xbar (the first d entries), in double. */
static nc_status contracted(const nc_call* c, char* msg, size_t size) {
  const nc_tensor *x = &c->in[0], *D = &c->in[1], *R = &c->in[2], *cc = &c->in[3], *dy = &c->in[4];
  const nc_dtype dt = c->dtype;
  const int64_t rows = x->shape[0], d = x->shape[1], m = D->shape[0], k = R->shape[0];
  const double n = NC_BEHAVIOUR == NC_BEHAVIOUR_V2_CONTRACTED_K_DIVISOR ? (double)k : (double)c->contraction_n;
  double* buf = malloc((size_t)(k + m + d + 1) * sizeof(double));
  if (!buf) {
    snprintf(msg, size, "out of memory");
    return NC_ERROR;
  }
  double *p = buf, *q = buf + k, *xbar = buf + k + m;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < d; ++j) xbar[j] = get(x, dt, r * d + j);
    xbar[d] = 1.0;
    double ss = 0;
    for (int64_t l = 0; l < k; ++l) {
      p[l] = 0;
      for (int64_t j = 0; j <= d; ++j) p[l] += get(R, dt, l * (d + 1) + j) * xbar[j];
      ss += p[l] * p[l];
    }
    const double s = 1.0 / sqrt(ss / n + c->eps);
    double dot = 0; /* <dy, D xbar> */
    for (int64_t i = 0; i < m; ++i) {
      q[i] = 0;
      for (int64_t j = 0; j <= d; ++j) q[i] += get(D, dt, i * (d + 1) + j) * xbar[j];
      set(&c->out[0], dt, r * m + i, s * q[i] + get(cc, dt, i));
      if (dy->data) dot += get(dy, dt, r * m + i) * q[i];
    }
    if (!dy->data) continue;
    for (int64_t j = 0; j < d; ++j) {
      double a = 0, b = 0; /* (D^T dy)_j, (R^T p)_j */
      for (int64_t i = 0; i < m; ++i) a += get(D, dt, i * (d + 1) + j) * get(dy, dt, r * m + i);
      for (int64_t l = 0; l < k; ++l) b += get(R, dt, l * (d + 1) + j) * p[l];
      set(&c->out[1], dt, r * d + j, s * a - s * s * s / n * dot * b);
    }
  }
  free(buf);
  return NC_OK;
}

/* The LayerNorm JVP: du = gamma r (dx - mean(dx) - z mean(z dx)) + z dgamma + dbeta, in double. */
static nc_status jvp(const nc_call* c, char* msg, size_t size) {
  const nc_tensor *x = &c->in[0], *g = &c->in[1], *tx = &c->in[3], *tg = &c->in[4], *tb = &c->in[5];
  const nc_dtype dt = c->dtype;
  const int64_t rows = x->shape[0], n = x->shape[1];
  double* z = malloc((size_t)n * sizeof(double));
  if (!z) {
    snprintf(msg, size, "out of memory");
    return NC_ERROR;
  }
  for (int64_t i = 0; i < rows; ++i) {
    double mean = 0, var = 0, mt = 0, mzt = 0;
    for (int64_t j = 0; j < n; ++j) mean += get(x, dt, i * n + j);
    mean /= (double)n;
    for (int64_t j = 0; j < n; ++j) var += (get(x, dt, i * n + j) - mean) * (get(x, dt, i * n + j) - mean);
    const double r = 1.0 / sqrt(var / (double)n + c->eps);
    for (int64_t j = 0; j < n; ++j) {
      z[j] = (get(x, dt, i * n + j) - mean) * r;
      mt += get(tx, dt, i * n + j);
      mzt += z[j] * get(tx, dt, i * n + j);
    }
    mt /= (double)n;
    mzt /= (double)n;
    for (int64_t j = 0; j < n; ++j) {
      const double dgamma_term = NC_BEHAVIOUR == NC_BEHAVIOUR_V2_JVP_NO_DGAMMA ? 0.0 : z[j] * get(tg, dt, j);
      set(&c->out[0], dt, i * n + j, get(g, dt, j) * r * (get(tx, dt, i * n + j) - mt - z[j] * mzt) + dgamma_term + get(tb, dt, j));
    }
  }
  free(z);
  return NC_OK;
}

/* The RMSNorm JVP: du = gamma r (dx - z mean(z dx)) + z dgamma, z = x r, in double. */
static nc_status rms_jvp(const nc_call* c, char* msg, size_t size) {
  const nc_tensor *x = &c->in[0], *g = &c->in[1], *tx = &c->in[2], *tg = &c->in[3];
  const nc_dtype dt = c->dtype;
  const int64_t rows = x->shape[0], n = x->shape[1];
  (void)msg;
  (void)size;
  for (int64_t i = 0; i < rows; ++i) {
    double ms = 0, mzt = 0;
    for (int64_t j = 0; j < n; ++j) ms += get(x, dt, i * n + j) * get(x, dt, i * n + j);
    const double r = 1.0 / sqrt(ms / (double)n + c->eps);
    for (int64_t j = 0; j < n; ++j) mzt += get(x, dt, i * n + j) * r * get(tx, dt, i * n + j);
    mzt /= (double)n;
    for (int64_t j = 0; j < n; ++j) {
      const double z = get(x, dt, i * n + j) * r;
      const double dgamma_term = NC_BEHAVIOUR == NC_BEHAVIOUR_V2_JVP_NO_DGAMMA ? 0.0 : z * get(tg, dt, j);
      set(&c->out[0], dt, i * n + j, get(g, dt, j) * r * (get(tx, dt, i * n + j) - z * mzt) + dgamma_term);
    }
  }
  return NC_OK;
}

static int supports(uint32_t op, nc_dtype dtype) {
  if (op == NC_LAYERNORM_FORWARD) return dtype == NC_F64;
  return (op == NC_GROUPED_NORM || op == NC_LINEAR_RMSNORM || op == NC_CONTRACTED_BLOCK || op == NC_LAYERNORM_JVP || op == NC_RMSNORM_JVP) &&
         (dtype == NC_F32 || dtype == NC_F64);
}

/* The version 1 LayerNorm forward in f64 (two-pass), honouring the row strides. */
static nc_status run_v1(const nc_norm_args* a, char* msg, size_t size) {
  if (a->op != NC_LAYERNORM_FORWARD || a->dtype != NC_F64) {
    snprintf(msg, size, "unsupported");
    return NC_UNSUPPORTED;
  }
  for (int64_t i = 0; i < a->rows; ++i) {
    const double* x = (const double*)a->x + i * a->x_row_stride;
    double* y = (double*)a->y + i * a->y_row_stride;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < a->n; ++j) mean += x[j];
    mean /= (double)a->n;
    for (int64_t j = 0; j < a->n; ++j) var += (x[j] - mean) * (x[j] - mean);
    const double r = 1.0 / sqrt(var / (double)a->n + a->eps);
    for (int64_t j = 0; j < a->n; ++j)
      y[j] = (x[j] - mean) * r * ((const double*)a->gamma)[j] + ((const double*)a->beta)[j];
  }
  return NC_OK;
}

static nc_status run_call(const nc_call* c, char* msg, size_t size) {
  if (!supports(c->op, c->dtype)) {
    snprintf(msg, size, "unsupported");
    return NC_UNSUPPORTED;
  }
  if (c->op == NC_CONTRACTED_BLOCK) return contracted(c, msg, size);
  if (c->op == NC_LAYERNORM_JVP) return jvp(c, msg, size);
  if (c->op == NC_RMSNORM_JVP) return rms_jvp(c, msg, size);
  return c->op == NC_GROUPED_NORM ? grouped(c, msg, size) : block(c, msg, size);
}

static const nc_plugin_v2 kPlugin = {NORMCHECK_PLUGIN_ABI_VERSION_2, NC_NAME, supports, run_v1, run_call, NC_BLOCK_DEFERRED};

const nc_plugin_v2* normcheck_plugin_v2(void) { return &kPlugin; }
