/// Cross-checks the certified LayerNorm oracle against ONNX's LayerNormalization test vectors
/// (Debian libonnx-testdata), judging the float32 numpy reference with our a priori bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "bounds/bounds.hpp"
#include "core/metrics.hpp"
#include "oracles/certified_layernorm.hpp"
#include "properties/onnx_testdata.hpp"

namespace normcheck {
namespace {

using onnx::OnnxLayerNormVector;

constexpr double kU = 0x1p-24;      ///< float32 unit roundoff
constexpr double kEta = 0x1p-150;   ///< half the float32 subnormal spacing (underflow error)
constexpr double kRefRel = 0x1p-53; ///< the oracle's mean and rstd are nearest doubles
/// The tolerances below are evaluated in double from double statistics: O(n) roundings of
/// relative size 2^-53 each, far below 1e-9 for these sizes; this factor covers exactly that.
constexpr double kEvalSlack = 1.0 + 1e-9;

/// numpy's reference: float32 storage and arithmetic, two-pass statistics. Every op in it,
/// mean = sum(x)/n, d = x - mean, var = sum(d*d)/n, r = reciprocal(sqrt(var + eps)),
/// Y = (d*r)*W + B, is an op of the model of docs/bounds.md section 2 (any summation order,
/// including numpy's pairwise one, obeys the recursive-sum bound gamma_{n-1} sum|x|; a product
/// of three factors rounded twice is (1+theta_2) in any order), so the bound applies unchanged.
const BoundModel kNumpyModel{StatsModel::two_pass, DType::f32, DType::f32};

/// The vectors, loaded once (empty when the package is not installed).
const std::vector<OnnxLayerNormVector>& onnx_vectors() {
  static const auto vectors = onnx::load_onnx_layernorm_vectors(onnx::kDebianOnnxNodeRoot);
  return vectors;
}

/// The LayerNormCase of a vector: every float widened to double exactly.
LayerNormCase to_case(const OnnxLayerNormVector& v) {
  const onnx::RowShape s = onnx::row_shape(v.x_dims, v.axis);
  LayerNormCase c;
  c.dtype = DType::f32;
  c.rows = s.rows;
  c.n = s.n;
  c.eps = v.epsilon;
  c.x.assign(v.x.begin(), v.x.end());
  c.gamma.assign(v.scale.begin(), v.scale.end());
  c.beta.assign(v.bias.begin(), v.bias.end());
  c.generator = "onnx:" + v.name;
  return c;
}

/// Tolerances for one row's float32 Mean (absolute) and InvStdDev (relative).
struct StatTolerance {
  double mean_abs = 0;
  double rstd_rel = 0;
};

/// Derivation (u = 2^-24, S = sum_j |x_j|, gamma_k = k u / (1 - k u)):
///  Mean: any summation order gives |s^ - s| <= gamma_{n-1} S; the division adds u |s^| / n,
///    so |mu^ - mu| <= e_mu = (gamma_{n-1} + u (1 + gamma_{n-1})) S / n (+ eta for underflow).
///  Var: d^_j = fl(x_j - mu^) = d_j + eps_j, eps_j = (mu - mu^) + rho_j, |rho_j| <= u(|d_j| + e_mu).
///    Since sum_j d_j = 0 exactly, sum d^_j^2 - sum d_j^2 = sum 2 d_j rho_j + sum eps_j^2, bounded by
///    lin + quad with |eps_j| <= e_d_j = e_mu + u(|d_j| + e_mu). Squares, n - 1 additions and the
///    division give (1 + theta_{n+1}): e_v = e2 + gamma_{n+1} (v + e2), e2 = (lin + quad) / n.
///  Rstd: eps is the attribute's float32, used exactly (numpy rounds the Python float eps to the
///    same float32), so w^ = fl(v^ + eps) has |w^ - w| <= e_v + u (w + e_v) = delta_w w. Then
///    |(1 + delta)^-1/2 - 1| <= a = delta_w / (2 (1 - delta_w)^1.5) (mean value theorem), and the
///    rounded sqrt and reciprocal add (1 + d2)/(1 + d1): rho = a + (1 + a) 2u / (1 - u).
///  Both are widened by the oracle's own 2^-53 rounding of mean and rstd.
StatTolerance stat_tolerance(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, int64_t i) {
  const double* x = &c.x[static_cast<size_t>(i * c.n)];
  const double nn = static_cast<double>(c.n), g = gamma_k(nn - 1, kU);
  double s1 = 0;
  for (int64_t j = 0; j < c.n; ++j) s1 += std::fabs(x[j]);
  const double e_mu = (g + kU * (1 + g)) * s1 / nn + kEta;
  double lin = 0, quad = 0;
  for (int64_t j = 0; j < c.n; ++j) {
    const double d = std::fabs(x[j] - ref.mean[i]), e_d = e_mu + kU * (d + e_mu);
    lin += 2 * d * kU * (d + e_mu);
    quad += e_d * e_d;
  }
  const double e2 = (lin + quad) / nn;
  const double e_v = e2 + gamma_k(nn + 1, kU) * (ref.var[i] + e2) + (nn + 1) * kEta;
  const double w = ref.var[i] + c.eps, delta_w = (e_v + kU * (w + e_v)) / w;
  const double a = delta_w / (2 * std::pow(1 - delta_w, 1.5));
  const double rho = a + (1 + a) * 2 * kU / (1 - kU);
  return {(e_mu + kRefRel * std::fabs(ref.mean[i])) * kEvalSlack, (rho + kRefRel) * kEvalSlack};
}

/// Largest error-to-tolerance ratios of a vector's outputs against the oracle for case `c`.
struct Ratios {
  double y = 0, y_abs = 0, mean = 0, rstd = 0;
  int64_t y_ulps = 0;  ///< largest distance, in float32 steps, from the correctly rounded Y
  bool certified = false;
  bool violated() const { return !(y <= 1 && mean <= 1 && rstd <= 1); }
};

/// max(a, b) that turns a NaN ratio into +inf (a violation) instead of dropping it.
double worse(double a, double b) { return std::isnan(b) ? std::numeric_limits<double>::infinity() : std::max(a, b); }

/// Compares the ONNX Y, Mean and InvStdDev of `v` with the oracle evaluated on `c`.
Ratios compare_with_oracle(const OnnxLayerNormVector& v, const LayerNormCase& c) {
  const oracle::CertifiedLayerNorm ref = oracle::certified_layernorm(c, /*with_vjp=*/false);
  const std::vector<double> bound = layernorm_forward_bound(c, ref, kNumpyModel).bound;
  Ratios r;
  r.certified = ref.certified;
  for (size_t k = 0; k < v.y.size(); ++k) {
    const ElementError e = measure_element(v.y[k], ref.y[k], DType::f32, bound[k]);
    r.y = worse(r.y, e.uncertified ? std::numeric_limits<double>::infinity() : e.bound_ratio);
    r.y_abs = worse(r.y_abs, e.abs_err);
    r.y_ulps = std::max(r.y_ulps, e.ulp_distance);
  }
  for (int64_t i = 0; i < c.rows; ++i) {
    const StatTolerance t = stat_tolerance(c, ref, i);
    r.mean = worse(r.mean, std::fabs(v.mean[i] - ref.mean[i]) / t.mean_abs);
    r.rstd = worse(r.rstd, std::fabs(v.inv_std_dev[i] - ref.rstd[i]) / (t.rstd_rel * ref.rstd[i]));
  }
  return r;
}

/// Skips the calling test when the ONNX test data is not installed.
#define SKIP_WITHOUT_ONNX_DATA()                                                              \
  if (onnx_vectors().empty())                                                                 \
  GTEST_SKIP() << "no ONNX LayerNormalization vectors under " << onnx::kDebianOnnxNodeRoot \
               << " (install Debian's libonnx-testdata)"

TEST(OnnxVectors, FoundAndDecoded) {
  SKIP_WITHOUT_ONNX_DATA();
  EXPECT_GE(onnx_vectors().size(), 10u);
  for (const auto& v : onnx_vectors()) {
    std::printf("found %-52s dims %-14s axis %2lld eps %.9g\n", v.name.c_str(), onnx::dims_string(v.x_dims).c_str(),
                static_cast<long long>(v.axis), v.epsilon);
    const bool eps_test = v.name.find("_epsilon") != std::string::npos;
    EXPECT_EQ(v.epsilon, static_cast<double>(eps_test ? 0.1f : 1e-5f)) << v.name;
    const auto at = v.name.find("_axis");
    if (v.name.find("default_axis") != std::string::npos) {
      EXPECT_EQ(v.axis, -1) << v.name;  // no attribute: the default
      continue;
    }
    ASSERT_NE(at, std::string::npos) << v.name;
    const bool negative = v.name.compare(at, 15, "_axis_negative_") == 0;
    const int64_t k = std::stoll(v.name.substr(at + (negative ? 15 : 5)));
    EXPECT_EQ(v.axis, negative ? -k : k) << v.name;
  }
}

TEST(OnnxVectors, OracleAgreesWithinFloat32Bounds) {
  SKIP_WITHOUT_ONNX_DATA();
  Ratios worst;
  for (const auto& v : onnx_vectors()) {
    const LayerNormCase c = to_case(v);
    ASSERT_EQ(validate_case(c, false), std::nullopt) << v.name;
    const Ratios r = compare_with_oracle(v, c);
    std::printf("%-52s rows %2lld n %3lld  Y err/bound %.3f (|err| %.3g, %lld ulp)  Mean %.3f  InvStdDev %.3f\n",
                v.name.c_str(), static_cast<long long>(c.rows), static_cast<long long>(c.n), r.y, r.y_abs,
                static_cast<long long>(r.y_ulps), r.mean, r.rstd);
    EXPECT_TRUE(r.certified) << v.name;
    EXPECT_LE(r.y, 1.0) << v.name << ": Y outside the two-pass float32 bound";
    EXPECT_LE(r.mean, 1.0) << v.name << ": Mean outside its float32 tolerance";
    EXPECT_LE(r.rstd, 1.0) << v.name << ": InvStdDev outside its float32 tolerance";
    worst = {std::max(worst.y, r.y), std::max(worst.y_abs, r.y_abs), std::max(worst.mean, r.mean),
             std::max(worst.rstd, r.rstd), std::max(worst.y_ulps, r.y_ulps), true};
  }
  std::printf("max over %zu vectors: Y err/bound %.3f (|err| %.3g, %lld ulp)  Mean %.3f  InvStdDev %.3f\n",
              onnx_vectors().size(), worst.y, worst.y_abs, static_cast<long long>(worst.y_ulps), worst.mean,
              worst.rstd);
}

TEST(OnnxVectors, MutatedEpsilonIsDetected) {
  SKIP_WITHOUT_ONNX_DATA();
  int detected = 0, detected_by_y = 0;
  for (const auto& v : onnx_vectors()) {
    LayerNormCase c = to_case(v);
    c.eps *= 4;  // the oracle now solves a different problem; the comparison must notice
    const Ratios r = compare_with_oracle(v, c);
    detected += r.violated() ? 1 : 0;
    detected_by_y += r.y > 1 ? 1 : 0;
  }
  std::printf("eps*4 mutation detected in %d of %zu vectors (%d by Y alone)\n", detected, onnx_vectors().size(),
              detected_by_y);
  EXPECT_GE(detected, 1);
}

/// Base-128 varint encoding of `v`.
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}

/// A field key followed by `payload`, length-prefixed for wire type 2.
std::string field(uint32_t number, uint32_t type, const std::string& payload) {
  return varint(uint64_t{number} << 3 | type) + (type == 2 ? varint(payload.size()) : "") + payload;
}

/// Little-endian bytes of a float.
std::string le_float(float f) {
  std::string out(4, '\0');
  uint32_t b;
  std::memcpy(&b, &f, 4);
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(b >> (8 * i));
  return out;
}

/// A FLOAT TensorProto of dims [1, 2] with raw_data {1.5, -2}.
std::string small_tensor() {
  return field(1, 0, varint(1)) + field(1, 0, varint(2)) + field(2, 0, varint(1)) + field(8, 2, "X") +
         field(9, 2, le_float(1.5f) + le_float(-2.0f));
}

TEST(OnnxReader, DecodesHandBuiltMessages) {
  const onnx::OnnxTensor t = onnx::parse_tensor(small_tensor());
  EXPECT_EQ(t.name, "X");
  EXPECT_EQ(t.dims, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(t.data, (std::vector<float>{1.5f, -2.0f}));
  // Packed dims and packed float_data.
  const std::string packed = field(1, 2, varint(2)) + field(2, 0, varint(1)) +
                             field(4, 2, le_float(0.25f) + le_float(3.0f));
  EXPECT_EQ(onnx::parse_tensor_dims(packed), (std::vector<int64_t>{2}));
  EXPECT_EQ(onnx::parse_tensor(packed).data, (std::vector<float>{0.25f, 3.0f}));
  // axis = -2 is a 10-byte varint; epsilon a fixed32 float.
  const std::string axis = field(1, 2, "axis") + field(3, 0, varint(static_cast<uint64_t>(int64_t{-2})));
  const std::string eps = field(1, 2, "epsilon") + field(2, 5, le_float(0.1f));
  const std::string node = field(4, 2, "LayerNormalization") + field(5, 2, axis) + field(5, 2, eps);
  const onnx::LayerNormAttributes a = onnx::parse_layernorm_model(field(1, 0, varint(8)) + field(7, 2, field(1, 2, node)));
  EXPECT_EQ(a.axis, -2);
  EXPECT_EQ(a.epsilon, static_cast<double>(0.1f));
}

TEST(OnnxReader, RejectsMalformedFiles) {
  const std::string good = small_tensor();
  const std::vector<std::string> bad = {
      good.substr(0, good.size() - 3),                                // truncated raw_data
      good.substr(0, 1) + "\xff",                                     // truncated varint
      std::string(11, '\xff'),                                        // varint over 10 bytes
      "\x0b\x00",                                                     // group wire type
      field(1, 0, varint(2)) + field(2, 0, varint(11)) + field(10, 1, std::string(8, '\0')),   // DOUBLE
      field(1, 0, varint(3)) + field(2, 0, varint(1)) + field(9, 2, le_float(1.0f)),          // too few values
      field(1, 0, varint(1)) + field(2, 0, varint(1)) + field(9, 2, "abc"),                   // ragged raw_data
      field(2, 2, "x"),                                               // data_type with wrong wire type
  };
  const std::string path = ::testing::TempDir() + "normcheck_onnx_bad.pb";
  for (size_t i = 0; i < bad.size(); ++i) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad[i];
    EXPECT_THROW(onnx::read_tensor_file(path), std::runtime_error) << "case " << i;
  }
  std::remove(path.c_str());
  try {
    onnx::parse_tensor(bad[4]);
    ADD_FAILURE() << "a DOUBLE tensor was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported data_type 11"), std::string::npos) << e.what();
  }
  EXPECT_THROW(onnx::read_tensor_file(path), std::runtime_error);  // missing file
  const std::string add = field(7, 2, field(1, 2, field(4, 2, "Add")));
  EXPECT_THROW(onnx::parse_layernorm_model(add), std::runtime_error);
  EXPECT_THROW(onnx::parse_layernorm_model("\x3a\x7f"), std::runtime_error);  // graph runs past end
  EXPECT_THROW(onnx::row_shape({2, 3}, 2), std::runtime_error);
  EXPECT_TRUE(onnx::load_onnx_layernorm_vectors("/nonexistent/onnx/node").empty());
}

TEST(OnnxReader, CorruptedRealFilesThrowOrParse) {
  const std::string dir = std::string(onnx::kDebianOnnxNodeRoot) + "/test_layer_normalization_4d_axis1/";
  if (onnx_vectors().empty()) GTEST_SKIP() << "ONNX test data not installed";
  const std::string model = onnx::read_binary_file(dir + "model.onnx");
  const std::string tensor = onnx::read_binary_file(dir + "test_data_set_0/input_1.pb");
  for (size_t i = 0; i < tensor.size(); ++i) {  // every proper prefix, every byte set to 0xff
    std::string flipped = tensor;
    flipped[i] = '\xff';
    EXPECT_THROW(onnx::parse_tensor(tensor.substr(0, i)), std::runtime_error) << "prefix " << i;
    try { onnx::parse_tensor(flipped); } catch (const std::runtime_error&) {}  // any other exception fails
  }
  for (size_t i = 0; i < model.size(); ++i) {
    std::string flipped = model;
    flipped[i] = '\xff';
    try { onnx::parse_layernorm_model(model.substr(0, i)); } catch (const std::runtime_error&) {}
    try { onnx::parse_layernorm_model(flipped); } catch (const std::runtime_error&) {}
  }
}

}  // namespace
}  // namespace normcheck
