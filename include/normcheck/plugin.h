/* normcheck plugin ABI, version 1 (docs/plugins.md).
 *
 * A kernel library exports one C function, normcheck_plugin_v1, returning a static description:
 * its ABI version, a name, a capability query and a run function. normcheck loads the library
 * with dlopen once per worker process (one per --threads; never in normcheck itself) and calls it
 * there for many cases: a crash or a hang is recorded as a failure of the case and the worker is
 * replaced; it never takes the harness down. The outputs are judged against normcheck's certified
 * oracles exactly as its built-in kernels are. A plugin may keep state between calls (caches, a
 * device context) but must not depend on it for its results.
 *
 * Tensors are row-major with explicit row strides (in elements). Storage formats:
 *   NC_F16   IEEE binary16 bit patterns (uint16_t)
 *   NC_BF16  bfloat16 bit patterns (uint16_t, the high half of an IEEE binary32)
 *   NC_F32   float
 *   NC_F64   double
 * gamma, beta, dgamma, dbeta have n elements. The plugin computes in whatever precision it likes
 * and writes its outputs in the storage dtype.
 *
 * What a plugin must expect (docs/plugins.md, "What a call looks like"): in about three calls of four
 * the row strides exceed n (each matrix padded independently by 1 to 17 elements); every output
 * element, every element of row padding and 8 guard elements after each tensor hold quiet-NaN
 * sentinels before the call. A kernel that ignores the strides, skips an output element, accumulates
 * into dgamma/dbeta instead of writing them, or writes into an input, into padding or past the end
 * is caught: NaN reaches its outputs, or the post-call check names the element it wrote. */
#ifndef NORMCHECK_PLUGIN_H
#define NORMCHECK_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NORMCHECK_PLUGIN_ABI_VERSION 1u

typedef enum nc_op {
  NC_LAYERNORM_FORWARD = 0,  /* y = gamma * (x - mean) / sqrt(var + eps) + beta, biased var */
  NC_LAYERNORM_BACKWARD = 1, /* dx, dgamma, dbeta for cotangent dy (dgamma, dbeta summed over rows) */
  NC_RMSNORM_FORWARD = 2,    /* y = gamma * x / sqrt(mean(x^2) + eps); beta is NULL */
  NC_RMSNORM_BACKWARD = 3    /* dx, dgamma; dbeta is NULL */
} nc_op;

typedef enum nc_dtype { NC_F16 = 0, NC_BF16 = 1, NC_F32 = 2, NC_F64 = 3 } nc_dtype;

typedef enum nc_status {
  NC_OK = 0,
  NC_UNSUPPORTED = 1, /* this op x dtype (or shape) is not implemented: skipped, not a failure */
  NC_ERROR = 2        /* the plugin failed: message says why; recorded as a failure */
} nc_status;

typedef struct nc_norm_args {
  nc_op op;
  nc_dtype dtype;
  int64_t rows, n;
  int64_t x_row_stride, y_row_stride, dy_row_stride, dx_row_stride; /* elements between rows, >= n; often > n */
  double eps;                                                       /* > 0 */
  const void* x;
  const void* gamma;
  const void* beta; /* NULL for RMSNorm */
  const void* dy;   /* backward only */
  void* y;          /* forward only */
  void* dx;         /* backward only */
  void* dgamma;     /* backward only */
  void* dbeta;      /* LayerNorm backward only */
} nc_norm_args;

typedef struct nc_plugin {
  uint32_t abi_version; /* NORMCHECK_PLUGIN_ABI_VERSION */
  const char* name;     /* short identifier: letters, digits, '_' */
  /* 1 if (op, dtype) is implemented, 0 otherwise. */
  int (*supports)(nc_op op, nc_dtype dtype);
  /* Runs one call; on NC_ERROR writes a NUL-terminated reason into message (size bytes). */
  nc_status (*run)(const nc_norm_args* args, char* message, size_t message_size);
} nc_plugin;

/* The one exported symbol of a version 1 plugin. */
const nc_plugin* normcheck_plugin_v1(void);

/* Optional, with either version (docs/plugins.md, "Contracts"): the class of algorithm the plugin's
 * LayerNorm statistics belong to, which chooses the contract it is judged by (docs/bounds.md 2.7):
 *   "two_pass"  mean, then the mean of squared deviations, any summation order (LN-TWOPASS-SEQ)
 *   "welford"   Welford partials merged by Chan's formula in any tree, sequential Welford included
 *               (LN-WELFORDMERGE-ANY)
 * Without it the plugin is judged by the two-pass contract and, where it fails it, by the Welford
 * one ("auto"); `normcheck run --contract` overrides the declaration. */
const char* normcheck_plugin_contract(void);

/* ---------------------------------------------------------------------------------------------
 * ABI version 2 (docs/plugins.md, "ABI version 2"): the ops of the grouped and block suites on
 * tensors of any rank up to 4 with explicit shapes and strides. A version 2 plugin exports
 * normcheck_plugin_v2 instead of (or besides) normcheck_plugin_v1; normcheck looks for v2 first.
 * The version 1 ops keep their numbers and their nc_norm_args call. */
#define NORMCHECK_PLUGIN_ABI_VERSION_2 2u

enum {
  NC_GROUPED_NORM = 16,  /* a normalization of a rank-2..4 tensor (nc_norm_kind): batch, group, instance norm,
                            layer norm or RMSNorm over the last k axes, channel layer norm; training forward
                            and backward; batch norm also the running-statistic update and inference mode */
  NC_LINEAR_RMSNORM = 17, /* y = W (g * x r) + b, r = 1/sqrt(mean(x^2) + eps), then dx, dW, dg for dy */
  NC_CONTRACTED_BLOCK = 18, /* the QR-contracted affine -> LayerNorm -> affine block: with xbar = [x; 1],
                              f = D xbar / sqrt(|R xbar|^2 / n + eps) + c, then dx for dy */
  NC_LAYERNORM_JVP = 19,    /* forward-mode LayerNorm: du = gamma r (dx - mean(dx) - z mean(z dx)) + z dgamma + dbeta */
  NC_RMSNORM_JVP = 20       /* forward-mode RMSNorm: du = gamma r (dx - z mean(z dx)) + z dgamma, z = x r */
};

typedef enum nc_norm_kind {
  NC_BATCH_NORM = 0,         /* per channel over every other axis */
  NC_GROUP_NORM = 1,         /* per sample over `groups` blocks of channels and the spatial axes */
  NC_INSTANCE_NORM = 2,      /* per sample and channel over the spatial (sequence) axes */
  NC_LAYER_NORM = 3,         /* over the last `normalized_dims` axes; gamma, beta shaped like those axes */
  NC_CHANNEL_LAYER_NORM = 4, /* over the channel axis alone at each position (ConvNeXt's channels-first LN) */
  NC_RMS_NORM = 5            /* like NC_LAYER_NORM without the mean: y = gamma x / sqrt(mean(x^2) + eps); no beta */
} nc_norm_kind;

/* The form a plugin's NC_LINEAR_RMSNORM computes: it chooses the bound it is judged by. */
typedef enum nc_block_form { NC_BLOCK_COMPOSED = 0, NC_BLOCK_DEFERRED = 1 } nc_block_form;

typedef struct nc_tensor {
  void* data;          /* NULL when absent (a block without bias) */
  int32_t rank;        /* 1 to 4 */
  int64_t shape[4];    /* memory order */
  int64_t strides[4];  /* elements; the last is 1, the others may exceed the dense stride (padding) */
} nc_tensor;

/* Tensors of the calls, by position in nc_call.in / nc_call.out:
 * NC_GROUPED_NORM   in:  x, dy (the tensor), gamma, beta, running_mean, running_var (one per channel;
 *                        the running statistics only for batch norm)
 *                   out: y, dx, dgamma, dbeta, running_mean, running_var (updated, unbiased variance),
 *                        y_inference (from the statistics before the update); the last three for batch
 *                        norm only. Training statistics use the biased variance.
 *                   gamma, beta, dgamma, dbeta have shape (C) (one per channel) except for NC_LAYER_NORM
 *                   and NC_RMS_NORM: the shape of the last normalized_dims axes of x (elementwise
 *                   affine, as torch.nn.LayerNorm). NC_RMS_NORM: beta and dbeta have data NULL.
 * NC_LINEAR_RMSNORM in:  x (rows x n), g (n), w (m x n), b (m; data NULL without bias), dy (rows x m)
 *                   out: y (rows x m), dx (rows x n), dw (m x n), dg (n)
 * NC_LAYERNORM_JVP  in:  x (rows x n), gamma (n), beta (n), dx (rows x n), dgamma (n), dbeta (n): the point and
 *                        the tangents; out: du (rows x n). Statistics as NC_LAYERNORM_FORWARD (biased variance).
 * NC_RMSNORM_JVP    in:  x (rows x n), gamma (n), dx (rows x n), dgamma (n); out: du (rows x n);
 *                        r = 1/sqrt(mean(x^2) + eps) as NC_RMSNORM_FORWARD.
 * NC_CONTRACTED_BLOCK in: x (rows x d), D (m x (d+1)), R (k x (d+1)), c (m), dy (rows x m)
 *                   out: f (rows x m), dx (rows x d); the divisor n (the original LayerNorm's width,
 *                   not k) in contraction_n, eps in eps. dx = s D^T dy - (s^3/n) <dy, D xbar> R^T R xbar
 *                   restricted to x, s = 1/sqrt(|R xbar|^2 / n + eps). */
typedef struct nc_call {
  uint32_t op;           /* NC_GROUPED_NORM or NC_LINEAR_RMSNORM */
  nc_dtype dtype;
  double eps;            /* > 0 */
  double momentum;       /* batch norm: running = (1 - momentum) running + momentum batch */
  int32_t kind;          /* NC_GROUPED_NORM: nc_norm_kind */
  int32_t channel_axis;  /* NC_GROUPED_NORM: the axis of x holding the channels (axis 0 is the batch) */
  int64_t groups;        /* NC_GROUP_NORM: G, which divides the channel count */
  nc_tensor in[6];
  nc_tensor out[7];
  int32_t normalized_dims; /* NC_LAYER_NORM, NC_RMS_NORM: k, the trailing axes normalized (1 .. rank - 1) */
  int64_t contraction_n;   /* NC_CONTRACTED_BLOCK: n, the divisor of |R xbar|^2 */
} nc_call;

typedef struct nc_plugin_v2 {
  uint32_t abi_version; /* NORMCHECK_PLUGIN_ABI_VERSION_2 */
  const char* name;     /* short identifier: letters, digits, '_' */
  /* 1 if op (a version 1 nc_op, NC_GROUPED_NORM, NC_LINEAR_RMSNORM, NC_CONTRACTED_BLOCK, NC_LAYERNORM_JVP or NC_RMSNORM_JVP) x dtype
     is implemented. */
  int (*supports)(uint32_t op, nc_dtype dtype);
  /* The version 1 ops (NULL when the plugin has none). */
  nc_status (*run)(const nc_norm_args* args, char* message, size_t message_size);
  /* NC_GROUPED_NORM, NC_LINEAR_RMSNORM, NC_CONTRACTED_BLOCK, NC_LAYERNORM_JVP and NC_RMSNORM_JVP. */
  nc_status (*run_call)(const nc_call* call, char* message, size_t message_size);
  int32_t block_form; /* nc_block_form of its NC_LINEAR_RMSNORM */
} nc_plugin_v2;

const nc_plugin_v2* normcheck_plugin_v2(void);

#ifdef __cplusplus
}
#endif

#endif /* NORMCHECK_PLUGIN_H */
