// libFuzzer target: the safetensors reader (`normcheck contract --in`) and its serialize round trip.
#include <cstddef>
#include <cstdint>
#include <string>

#include "contraction/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  normcheck::SafetensorsFile f;
  try {
    f = normcheck::parse_safetensors(bytes, "fuzz");
  } catch (const std::exception&) {
    return 0;  // refused with a message: fine
  }
  // what parses must serialize and parse back to the same tensors
  const normcheck::SafetensorsFile back = normcheck::parse_safetensors(normcheck::serialize_safetensors(f), "round trip");
  if (back.tensors.size() != f.tensors.size()) __builtin_trap();
  return 0;
}
