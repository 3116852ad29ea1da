#pragma once
/// The messages between the harness and a plugin worker process (`normcheck __plugin-worker LIB`):
/// fixed-size structs over two pipes (requests on fd 3, replies on fd 4); the call's tensors live in
/// a shared memory file on fd 5 that the harness sizes before each call (offsets, never pointers).
#include <cstdint>

namespace normcheck::external::wire {

inline constexpr uint32_t kMagic = 0x6e63776bu;  // "ncwk"
inline constexpr int kRequestFd = 3, kReplyFd = 4, kBlockFd = 5;
inline constexpr int kSlots = 8;  ///< x, gamma, beta, dy, y, dx, dgamma, dbeta

enum Kind : uint32_t { kInspect = 0, kRun = 1, kRunCall = 2 };  ///< kRunCall: an ABI v2 nc_call

/// An ABI v2 tensor: offset into the block (-1: absent), rank, shape and strides in elements.
struct Tensor {
  int64_t offset = -1;
  int32_t rank = 0;
  int64_t shape[4] = {0, 0, 0, 0};
  int64_t strides[4] = {0, 0, 0, 0};
};

/// The ops a worker is asked about, in the order of Reply::supports.
inline constexpr uint32_t kInspectedOps[] = {0, 1, 2, 3, 16, 17};
inline constexpr int kInspectedOpCount = 6;
enum Status : int32_t { kOk = 0, kUnsupported = 1, kError = 2, kLoadFailed = 3 };

struct Request {
  uint32_t magic = kMagic;
  uint32_t kind = kRun;
  uint64_t block_bytes = 0;
  int32_t op = 0, dtype = 0;  ///< nc_op, nc_dtype
  int64_t rows = 0, n = 0;
  int64_t x_stride = 0, y_stride = 0, dy_stride = 0, dx_stride = 0;
  double eps = 0;
  int64_t offset[kSlots] = {-1, -1, -1, -1, -1, -1, -1, -1};  ///< bytes into the block; -1 = NULL
  // kRunCall (ABI v2): op is the nc_call's op
  double momentum = 0;
  int32_t norm_kind = 0, channel_axis = 0;
  int64_t groups = 1;
  Tensor in[6], out[7];
};

struct Reply {
  uint32_t magic = kMagic;
  int32_t status = kOk;
  char name[64] = {};
  uint8_t supports[kInspectedOpCount * 4] = {};  ///< inspect: [index in kInspectedOps * 4 + dtype]
  int32_t abi_version = 0;                       ///< inspect: 1 or 2
  int32_t block_form = -1;                       ///< inspect: v2 plugins' nc_block_form
  char message[1024] = {};
};

}  // namespace normcheck::external::wire
