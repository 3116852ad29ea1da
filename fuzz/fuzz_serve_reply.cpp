// libFuzzer target: a serve command's reply line (scripts/serve_*.py speak it; any user program may).
// The first 8 bytes are the call number the reply must answer, the rest the line.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "external/serve_reply.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  int64_t call = 0;
  std::memcpy(&call, data, sizeof call);
  const normcheck::external::ReplyVerdict v =
      normcheck::external::classify_reply(std::string_view(reinterpret_cast<const char*>(data) + 8, size - 8), call);
  // a verdict's message never carries a raw control character to the terminal
  for (const char c : v.message)
    if (static_cast<unsigned char>(c) < 0x20) __builtin_trap();
  return 0;
}
