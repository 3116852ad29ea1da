/// Model parsing and test-directory loading for the ONNX LayerNormalization vectors.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "properties/onnx_testdata.hpp"

namespace normcheck::onnx {

namespace {

namespace fs = std::filesystem;

/// The attributes of one NodeProto.attribute (field 5) entry that LayerNormalization uses.
void read_attribute(std::string_view bytes, const std::string& context, LayerNormAttributes& out) {
  WireReader r(bytes, context + ".attribute");
  std::string name;
  bool has_f = false, has_i = false;
  float f = 0;
  int64_t i = 0;
  while (!r.done()) {
    const FieldKey k = r.key();
    if (k.number == 1) {
      r.expect_type(k, WireType::length_delimited, "name");
      name = std::string(r.bytes());
    } else if (k.number == 2) {
      r.expect_type(k, WireType::fixed32, "f");
      f = bits_to_float(r.fixed32());
      has_f = true;
    } else if (k.number == 3) {
      r.expect_type(k, WireType::varint, "i");
      i = static_cast<int64_t>(r.varint());
      has_i = true;
    } else {
      r.skip(k.type);
    }
  }
  if (name == "axis") {
    if (!has_i) r.fail("attribute axis has no int value");
    out.axis = i;
  } else if (name == "epsilon") {
    if (!has_f || !std::isfinite(f) || !(f > 0)) r.fail("attribute epsilon is missing or not a positive float");
    out.epsilon = static_cast<double>(f);  // exact: every float is a double
  } else if (name != "stash_type") {
    r.fail("unexpected LayerNormalization attribute '" + name + "'");
  }
}

/// A NodeProto that must be a LayerNormalization node.
LayerNormAttributes read_node(std::string_view bytes, const std::string& context) {
  WireReader r(bytes, context + ".node");
  LayerNormAttributes attrs;
  std::string op_type;
  while (!r.done()) {
    const FieldKey k = r.key();
    if (k.number == 4) {
      r.expect_type(k, WireType::length_delimited, "op_type");
      op_type = std::string(r.bytes());
    } else if (k.number == 5) {
      r.expect_type(k, WireType::length_delimited, "attribute");
      read_attribute(r.bytes(), context, attrs);
    } else {
      r.skip(k.type);
    }
  }
  if (op_type != "LayerNormalization") r.fail("op_type is '" + op_type + "', expected 'LayerNormalization'");
  return attrs;
}

/// Payloads of every field `number` (length-delimited) of a message.
std::vector<std::string_view> submessages(std::string_view bytes, const std::string& context, uint32_t number,
                                          const char* field) {
  WireReader r(bytes, context);
  std::vector<std::string_view> out;
  while (!r.done()) {
    const FieldKey k = r.key();
    if (k.number != number) {
      r.skip(k.type);
      continue;
    }
    r.expect_type(k, WireType::length_delimited, field);
    out.push_back(r.bytes());
  }
  return out;
}

/// Throws unless `t` has exactly the dims `want`.
void expect_dims(const OnnxTensor& t, const std::vector<int64_t>& want, const std::string& what) {
  if (t.dims != want)
    throw std::runtime_error(what + ": dims " + dims_string(t.dims) + ", expected " + dims_string(want));
}

}  // namespace

LayerNormAttributes parse_layernorm_model(std::string_view bytes, const std::string& context) {
  const auto graphs = submessages(bytes, context, 7, "graph");
  if (graphs.size() != 1) throw std::runtime_error(context + ": expected one graph, found " + std::to_string(graphs.size()));
  const auto nodes = submessages(graphs[0], context + ".graph", 1, "node");
  if (nodes.size() != 1) throw std::runtime_error(context + ": expected one node, found " + std::to_string(nodes.size()));
  return read_node(nodes[0], context + ".graph");
}

OnnxLayerNormVector load_onnx_layernorm_vector(const std::string& dir) {
  OnnxLayerNormVector v;
  v.name = fs::path(dir).filename().string();
  const LayerNormAttributes attrs = parse_layernorm_model(read_binary_file(dir + "/model.onnx"), dir + "/model.onnx");
  v.axis = attrs.axis;
  v.epsilon = attrs.epsilon;
  const std::string set = dir + "/test_data_set_0/";
  const OnnxTensor x = read_tensor_file(set + "input_0.pb");
  const RowShape s = row_shape(x.dims, v.axis);
  const std::vector<int64_t> norm_dims(x.dims.begin() + s.axis, x.dims.end());
  std::vector<int64_t> stat_dims(x.dims.begin(), x.dims.begin() + s.axis);
  stat_dims.resize(x.dims.size(), 1);
  const OnnxTensor w = read_tensor_file(set + "input_1.pb");
  expect_dims(w, norm_dims, set + "input_1.pb (scale)");
  OnnxTensor b{"B", norm_dims, std::vector<float>(static_cast<size_t>(s.n), 0.0f)};
  if (fs::exists(set + "input_2.pb")) b = read_tensor_file(set + "input_2.pb");
  expect_dims(b, norm_dims, set + "input_2.pb (bias)");
  const OnnxTensor y = read_tensor_file(set + "output_0.pb");
  expect_dims(y, x.dims, set + "output_0.pb (Y)");
  const OnnxTensor mean = read_tensor_file(set + "output_1.pb");
  expect_dims(mean, stat_dims, set + "output_1.pb (Mean)");
  const OnnxTensor rstd = read_tensor_file(set + "output_2.pb");
  expect_dims(rstd, stat_dims, set + "output_2.pb (InvStdDev)");
  v.x_dims = x.dims;
  v.x = x.data, v.scale = w.data, v.bias = b.data, v.y = y.data, v.mean = mean.data, v.inv_std_dev = rstd.data;
  return v;
}

std::vector<OnnxLayerNormVector> load_onnx_layernorm_vectors(const std::string& root) {
  std::vector<std::string> dirs;
  if (!fs::is_directory(root)) return {};
  const std::string prefix = "test_layer_normalization_", skip = "_expanded";
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    const bool expanded = name.size() >= skip.size() && name.compare(name.size() - skip.size(), skip.size(), skip) == 0;
    if (e.is_directory() && name.rfind(prefix, 0) == 0 && !expanded) dirs.push_back(e.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<OnnxLayerNormVector> out;
  for (const auto& d : dirs) out.push_back(load_onnx_layernorm_vector(d));
  return out;
}

}  // namespace normcheck::onnx
