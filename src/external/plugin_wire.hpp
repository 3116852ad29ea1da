#pragma once
/// The messages between the harness and a plugin worker process (`normcheck __plugin-worker LIB`):
/// fixed-size structs over two pipes (requests on fd 3, replies on fd 4); the call's tensors live in
/// a shared memory file on fd 5 that the harness sizes before each call (offsets, never pointers).
#include <cstdint>

namespace normcheck::external::wire {

inline constexpr uint32_t kMagic = 0x6e63776bu;  // "ncwk"
inline constexpr int kRequestFd = 3, kReplyFd = 4, kBlockFd = 5;
inline constexpr int kSlots = 8;  ///< x, gamma, beta, dy, y, dx, dgamma, dbeta

enum Kind : uint32_t { kInspect = 0, kRun = 1 };
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
};

struct Reply {
  uint32_t magic = kMagic;
  int32_t status = kOk;
  char name[64] = {};
  uint8_t supports[16] = {};  ///< inspect: [op * 4 + dtype]
  char message[1024] = {};
};

}  // namespace normcheck::external::wire
