// libFuzzer target: the ONNX TensorProto and model readers of the ONNX test vectors.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "properties/onnx_testdata.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const normcheck::onnx::OnnxTensor t = normcheck::onnx::parse_tensor(bytes);
    (void)normcheck::onnx::row_shape(t.dims, size > 0 ? static_cast<int8_t>(data[0]) : -1);
  } catch (const std::exception&) {
  }
  try {
    (void)normcheck::onnx::parse_layernorm_model(bytes);
  } catch (const std::exception&) {
  }
  return 0;
}
