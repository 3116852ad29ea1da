#include "external/serve_reply.hpp"

#include <nlohmann/json.hpp>

#include "io/json_input.hpp"

namespace normcheck::external {

ReplyVerdict classify_reply(std::string_view line, int64_t call) {
  const nlohmann::json reply = parse_untrusted_json(line);
  if (reply.is_discarded() || !reply.is_object())
    return {ReplyVerdict::broken, "serve command wrote a line that is not a JSON object (or nests deeper than " + std::to_string(kMaxJsonDepth) +
                                      " levels) on stdout (print diagnostics to stderr): " + printable(line.substr(0, 120))};
  const nlohmann::json* status = reply.contains("status") && reply.at("status").is_string() ? &reply.at("status") : nullptr;
  const bool answers = reply.contains("call") && reply.at("call").is_number_integer() && reply.at("call").get<int64_t>() == call;
  const std::string known = status ? status->get<std::string>() : "";
  const bool earlier = reply.contains("call") && reply.at("call").is_number_integer() && reply.at("call").get<int64_t>() > 0 &&
                       reply.at("call").get<int64_t>() < call;
  if (!answers || (known != "ok" && known != "unsupported" && known != "error"))
    return {earlier ? ReplyVerdict::stale : ReplyVerdict::broken, "serve command broke the protocol: the reply to call " + std::to_string(call) +
                                      " must be one line with \"call\": " + std::to_string(call) +
                                      " and \"status\": \"ok\", \"unsupported\" or \"error\"; got " + printable(dump_untrusted(reply).substr(0, 160))};
  if (known == "ok") return {ReplyVerdict::ok, ""};
  if (known == "unsupported") return {ReplyVerdict::unsupported, ""};
  const bool message = reply.contains("message") && reply.at("message").is_string();
  return {ReplyVerdict::error, message ? printable(reply.at("message").get<std::string>().substr(0, 2000)) : "error without a message"};
}

}  // namespace normcheck::external
