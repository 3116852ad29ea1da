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

/* The one exported symbol of a plugin. */
const nc_plugin* normcheck_plugin_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* NORMCHECK_PLUGIN_H */
