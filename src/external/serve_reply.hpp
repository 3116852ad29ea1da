#pragma once
/// The serve protocol's reply line (docs/plugins.md): what one line from a serve command means for
/// the call it answers. Pure: the pool acts on the verdict (fuzz/fuzz_serve_reply.cpp feeds it bytes).
#include <cstdint>
#include <string>
#include <string_view>

namespace normcheck::external {

struct ReplyVerdict {
  /// stale: the line names an earlier call (perhaps a second reply to it, read while this call
  /// waits; the message is the broken one, for when no reply to this call follows).
  enum Kind { ok, unsupported, error, broken, stale } kind = broken;
  /// error: the command's message; broken: why the line breaks the protocol (the process is
  /// replaced). Control characters escaped, length capped.
  std::string message;
};

/// Classifies `line` as the reply to call number `call`: a JSON object with "call" equal to `call`
/// and "status" "ok", "unsupported" or "error" (with an optional string "message").
ReplyVerdict classify_reply(std::string_view line, int64_t call);

}  // namespace normcheck::external
