#pragma once
/// Reader for the ONNX LayerNormalization node test vectors (onnx/backend/test/data/node), with a
/// small hand-written protobuf wire-format decoder. Malformed input throws std::runtime_error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace normcheck::onnx {

/// Reinterprets IEEE binary32 bits as a float.
float bits_to_float(uint32_t bits);

/// Formats dims as [a, b, c] for error messages.
std::string dims_string(const std::vector<int64_t>& dims);

/// Protobuf wire types (the group types 3 and 4 are rejected).
enum class WireType : uint32_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

/// One field key: field number and wire type.
struct FieldKey {
  uint32_t number = 0;
  WireType type = WireType::varint;
};

/// Sequential decoder over one protobuf message; `context` names the message in error messages.
class WireReader {
 public:
  WireReader(std::string_view bytes, std::string context);

  /// True when every byte has been consumed.
  bool done() const { return pos_ >= bytes_.size(); }
  /// Reads the next field key; rejects field number 0 and wire types 3, 4, 6 and 7.
  FieldKey key();
  /// Reads a base-128 varint of at most 10 bytes.
  uint64_t varint();
  /// Reads a little-endian 32-bit value.
  uint32_t fixed32();
  /// Reads a little-endian 64-bit value.
  uint64_t fixed64();
  /// Reads a length-delimited payload (bounds-checked).
  std::string_view bytes();
  /// Skips the payload of a field of wire type `t`.
  void skip(WireType t);
  /// Throws a runtime_error naming the context and the byte offset.
  [[noreturn]] void fail(const std::string& what) const;
  /// Throws unless `k` has wire type `want` (a field of the wrong type is malformed).
  void expect_type(const FieldKey& k, WireType want, const char* field) const;
  /// The message name used in error messages.
  const std::string& context() const { return context_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
  std::string context_;
};

/// A decoded TensorProto holding FLOAT (data_type 1) data.
struct OnnxTensor {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> data;  ///< prod(dims) values, row-major
};

/// Decodes a serialized TensorProto; only FLOAT tensors with inline data are accepted.
OnnxTensor parse_tensor(std::string_view bytes, const std::string& context = "TensorProto");

/// Dims of a serialized TensorProto (full validation included).
std::vector<int64_t> parse_tensor_dims(std::string_view bytes);

/// Reads and decodes one .pb file holding a TensorProto.
OnnxTensor read_tensor_file(const std::string& path);

/// The LayerNormalization attributes of a model.
struct LayerNormAttributes {
  int64_t axis = -1;
  double epsilon = static_cast<double>(1e-5f);  ///< attribute default, a float32 like the stored value
};

/// Decodes a serialized ModelProto whose graph is a single LayerNormalization node.
LayerNormAttributes parse_layernorm_model(std::string_view bytes, const std::string& context = "model");

/// Reads the whole file into a string; throws when it cannot be opened or read.
std::string read_binary_file(const std::string& path);

/// Row decomposition of a shape for a normalization axis: rows = prod(dims[0:axis]), n = rest.
struct RowShape {
  int64_t axis = 0;  ///< the normalized, non-negative axis
  int64_t rows = 0;
  int64_t n = 0;
};

/// Resolves `axis` (negative counts from the end) against `dims`; throws if out of range.
RowShape row_shape(const std::vector<int64_t>& dims, int64_t axis);

/// One ONNX LayerNormalization test vector, float32 data as stored.
struct OnnxLayerNormVector {
  std::string name;
  std::vector<int64_t> x_dims;
  std::vector<float> x, scale, bias, y, mean, inv_std_dev;  ///< bias is zeros when B is absent
  int64_t axis = -1;
  double epsilon = 1e-5;
};

/// Loads one test directory (model.onnx plus test_data_set_0/) and checks every shape.
OnnxLayerNormVector load_onnx_layernorm_vector(const std::string& dir);

/// Loads every test_layer_normalization_* directory under `root`, skipping `_expanded` ones,
/// sorted by name. An absent root yields an empty list.
std::vector<OnnxLayerNormVector> load_onnx_layernorm_vectors(const std::string& root);

/// Where Debian's libonnx-testdata installs the node tests.
inline constexpr const char* kDebianOnnxNodeRoot = "/usr/share/libonnx-testdata/data/node";

}  // namespace normcheck::onnx
