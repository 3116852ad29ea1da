// normcheck bench-oracle: the certified oracle's cost per element against the project's float64
// kernel, side by side in one process (docs/performance.md): LayerNorm and RMSNorm forward + VJP,
// per level of the precision cascade (double ball, MPFI 168 bits) and for the whole cascade, with
// the share of cases each level certified. Repeats are interleaved; the median is reported.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/rmsnorm.hpp"
#include "oracles/certified_layernorm.hpp"
#include "properties/generators.hpp"
#include "report/output_files.hpp"

namespace normcheck::cli {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/// The float64 kernel of the op (forward and backward), the cost every oracle path is divided by.
void float64_kernel(bool rms, const LayerNormCase& c, std::vector<double>& y, std::vector<double>& dx, std::vector<double>& dg,
                    std::vector<double>& db) {
  if (rms) {
    kernels::rmsnorm_forward_rms<double>(c.x.data(), c.gamma.data(), c.rows, c.n, c.eps, y.data());
    kernels::rmsnorm_backward_rms<double>(c.x.data(), c.gamma.data(), c.dy.data(), c.rows, c.n, c.eps, dx.data(), dg.data());
  } else {
    kernels::layernorm_forward_two_pass<double>(c.x.data(), c.gamma.data(), c.beta.data(), c.rows, c.n, c.eps, y.data());
    kernels::layernorm_backward_two_pass<double>(c.x.data(), c.gamma.data(), c.dy.data(), c.rows, c.n, c.eps, dx.data(), dg.data(),
                                                 db.data());
  }
}

struct Path {
  std::string name;
  std::function<oracle::CertifiedLayerNorm(const LayerNormCase&)> run;  ///< empty: the float64 kernel
};

std::vector<Path> paths(bool rms) {
  using namespace oracle;
  if (rms)
    return {{"float64 kernel", nullptr},
            {"ball (53-bit)", [](const LayerNormCase& c) { return evaluate_rmsnorm_ball(c, true); }},
            {"mpfi 168-bit", [](const LayerNormCase& c) { return evaluate_rmsnorm_mpfi50(c, true); }},
            {"cascade", [](const LayerNormCase& c) { return certified_rmsnorm(c, true); }}};
  return {{"float64 kernel", nullptr},
          {"ball (53-bit)", [](const LayerNormCase& c) { return evaluate_layernorm_ball(c, true); }},
          {"mpfi 168-bit", [](const LayerNormCase& c) { return evaluate_layernorm_mpfi50(c, true); }},
          {"cascade", [](const LayerNormCase& c) { return certified_layernorm(c, true); }}};
}

}  // namespace

int bench_oracle_command(const BenchOracleOptions& o) {
  std::vector<DType> dtypes;
  try {
    dtypes = parse_names<DType>(o.dtypes, parse_dtype, "dtype");
    for (int64_t n : o.ns)
      if (n < 1 || n > 65536) throw std::invalid_argument(fmt::format("--n values must be in [1, 65536], got {}", n));
    if (!gen::is_row_generator(o.generator)) throw std::invalid_argument(fmt::format("unknown generator '{}'", o.generator));
    if (!o.json.empty()) check_writable(o.json);
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-9s %-5s %6s %-16s %12s %10s %22s\n", "op", "dtype", "n", "path", "ns/element", "x float64", "certified by (cases)");
  for (bool rms : {false, true})
    for (DType dt : dtypes)
      for (int64_t n : o.ns) {
        gen::ShapeRequest shape;
        shape.n = n;
        shape.rows = std::max<int64_t>(1, o.elements / n);
        std::vector<LayerNormCase> cases;
        for (int k = 0; k < o.cases; ++k) cases.push_back(gen::make_layernorm_case(o.generator, dt, 1000 + k, shape));
        const std::vector<Path> ps = paths(rms);
        std::vector<std::vector<double>> times(ps.size());
        std::vector<std::map<int, int>> levels(ps.size());
        const int64_t elements = static_cast<int64_t>(cases.size()) * cases[0].rows * n;
        for (int rep = 0; rep < o.repeats; ++rep)  // interleaved: every path once per repeat
          for (size_t p = 0; p < ps.size(); ++p) {
            const double start = now_s();
            for (const LayerNormCase& c : cases) {
              if (!ps[p].run) {
                std::vector<double> y(c.x.size()), dx(c.x.size()), dg(static_cast<size_t>(n)), db(dg);
                float64_kernel(rms, c, y, dx, dg, db);
              } else {
                const oracle::CertifiedLayerNorm r = ps[p].run(c);
                if (rep == 0) ++levels[p][r.certified ? r.precision_bits : 0];
              }
            }
            times[p].push_back((now_s() - start) * 1e9 / static_cast<double>(elements));
          }
        std::vector<double> medians;
        for (auto& t : times) {
          std::sort(t.begin(), t.end());
          medians.push_back(t[t.size() / 2]);
        }
        for (size_t p = 0; p < ps.size(); ++p) {
          std::string by;
          for (const auto& [bits, count] : levels[p]) by += fmt::format("{}{}:{}", by.empty() ? "" : " ", bits ? std::to_string(bits) : "none", count);
          std::printf("%-9s %-5s %6lld %-16s %12.1f %10.1f %22s\n", rms ? "rmsnorm" : "layernorm", dtype_info(dt).name.data(),
                      static_cast<long long>(n), ps[p].name.c_str(), medians[p], medians[p] / medians[0], by.c_str());
          rows.push_back({{"op", rms ? "rmsnorm" : "layernorm"}, {"pass", "forward+vjp"}, {"dtype", std::string(dtype_info(dt).name)},
                          {"n", n}, {"rows", cases[0].rows}, {"cases", cases.size()}, {"path", ps[p].name},
                          {"ns_per_element", medians[p]}, {"ratio_to_float64", medians[p] / medians[0]}, {"certified_by_bits", by}});
        }
      }
  if (!o.json.empty()) {
    write_json_atomically(o.json, {{"format", "normcheck-bench-oracle-v1"}, {"generator", o.generator}, {"repeats", o.repeats}, {"rows", rows}});
    std::printf("written: %s\n", o.json.c_str());
  }
  return kExitOk;
}

}  // namespace normcheck::cli
