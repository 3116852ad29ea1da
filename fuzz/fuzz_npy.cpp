// libFuzzer target: the .npy reader of exec-protocol outputs (bytes a user's program writes).
// The first byte picks the dtype, the next two the expected shape; the rest is the file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "external/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const normcheck::DType dtypes[] = {normcheck::DType::f16, normcheck::DType::bf16, normcheck::DType::f32, normcheck::DType::f64};
  const normcheck::DType dt = dtypes[data[0] % 4];
  const std::vector<int64_t> shape = {1 + data[1] % 8, 1 + data[2] % 8};
  try {
    normcheck::external::parse_npy(std::string_view(reinterpret_cast<const char*>(data) + 3, size - 3), dt, shape, "fuzz.npy");
  } catch (const normcheck::external::NpyError&) {
  }
  return 0;
}
