#pragma once
/// The messages between the harness and a plugin worker process (`normcheck __plugin-worker LIB`):
/// fixed-size structs in a shared control page (fd 6) with sequence numbers both sides spin on for a
/// few microseconds before they sleep; two pipes (fd 3 to the worker, fd 4 back) carry only wake-up
/// bytes, end of file when a side dies, and the worker's first reply (did the library load). The
/// call's tensors live in a shared memory file on fd 5 that the harness sizes before each call
/// (offsets, never pointers).
#include <atomic>
#include <cstdint>

namespace normcheck::external::wire {

inline constexpr uint32_t kMagic = 0x6e63776bu;  // "ncwk"
inline constexpr int kRequestFd = 3, kReplyFd = 4, kBlockFd = 5, kControlFd = 6;
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
inline constexpr uint32_t kInspectedOps[] = {0, 1, 2, 3, 16, 17, 18, 19, 20};
inline constexpr int kInspectedOpCount = 9;
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
  int32_t norm_kind = 0, channel_axis = 0, normalized_dims = 0;
  int64_t groups = 1, contraction_n = 0;
  Tensor in[6], out[7];
};

struct Reply {
  uint32_t magic = kMagic;
  int32_t status = kOk;
  char name[64] = {};
  uint8_t supports[kInspectedOpCount * 4] = {};  ///< inspect: [index in kInspectedOps * 4 + dtype]
  int32_t abi_version = 0;                       ///< inspect: 1 or 2
  int32_t block_form = -1;                       ///< inspect: v2 plugins' nc_block_form
  char contract[32] = {};                        ///< inspect: normcheck_plugin_contract() ("" when not exported)
  char message[1024] = {};
};

/// The shared control page: the current request and reply and their sequence numbers. A side that
/// stops spinning sets its `*_sleeping` flag, re-checks the sequence number and blocks on its pipe;
/// the other side writes one wake-up byte when it sees the flag (sequentially consistent atomics:
/// no lost wake-up).
struct Control {
  std::atomic<uint64_t> request_seq{0}, reply_seq{0};
  std::atomic<uint32_t> worker_sleeping{0}, harness_sleeping{0};
  Request request;
  Reply reply;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the control page needs lock-free atomics across processes");
inline constexpr size_t kControlBytes = (sizeof(Control) + 4095) / 4096 * 4096;

/// Busy-wait budgets before sleeping on the pipe, in microseconds: the worker waits this long for
/// the next request after a reply (the harness prepares it meanwhile), the harness this long for a
/// reply (a small call returns in microseconds). Sleeping and waking a process costs tens of
/// microseconds on a virtual machine; spinning a little is far cheaper per call.
inline constexpr double kWorkerSpinUs = 200, kHarnessSpinUs = 100;

}  // namespace normcheck::external::wire
