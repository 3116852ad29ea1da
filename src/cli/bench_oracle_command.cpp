// normcheck bench-oracle: the certified oracle's cost per element against the project's float64
// kernel, side by side in one process (docs/performance.md): LayerNorm and RMSNorm forward + VJP,
// per level of the precision cascade (double ball, double-double ball, MPFI 168 bits on the lean
// interval type), Boost's mpfi_float_backend<50> as the reference point, and the whole cascade, with the cases each level certified (accepted:
// radius within 1e-3 ULP and every rounding decided), on one row generator or all of them, and the
// log-log slope of the cost per element against n. Repeats are interleaved; the median is reported.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/bench_timing.hpp"
#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "core/suggest.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/rmsnorm.hpp"
#include "oracles/boost_mpfi_reference.hpp"
#include "oracles/certified_layernorm.hpp"
#include "generators/generators.hpp"
#include "io/output_files.hpp"

namespace normcheck::cli {
namespace {

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
  std::string key;  ///< what --paths names it
  std::string name;
  std::function<oracle::CertifiedLayerNorm(const LayerNormCase&)> run;  ///< empty: the float64 kernel
};

std::vector<Path> paths(bool rms) {
  using namespace oracle;
  if (rms)
    return {{"float64", "float64 kernel", nullptr},
            {"a_priori", "a priori (53-bit)", [](const LayerNormCase& c) { return evaluate_rmsnorm_a_priori(c, true); }},
            {"ball", "ball (53-bit)", [](const LayerNormCase& c) { return evaluate_rmsnorm_ball(c, true); }},
            {"a_priori_dd", "a priori dd (106-bit)", [](const LayerNormCase& c) { return evaluate_rmsnorm_a_priori_dd(c, true); }},
            {"dd_ball", "dd ball (106-bit)", [](const LayerNormCase& c) { return evaluate_rmsnorm_dd_ball(c, true); }},
            {"mpfi", "mpfi 168-bit", [](const LayerNormCase& c) { return evaluate_rmsnorm_mpfi50(c, true); }},
            {"boost_mpfi", "boost mpfi_float_50", [](const LayerNormCase& c) { return evaluate_rmsnorm_boost_mpfi50(c, true); }},
            {"cascade", "cascade", [](const LayerNormCase& c) { return certified_rmsnorm(c, true); }}};
  return {{"float64", "float64 kernel", nullptr},
          {"a_priori", "a priori (53-bit)", [](const LayerNormCase& c) { return evaluate_layernorm_a_priori(c, true); }},
          {"ball", "ball (53-bit)", [](const LayerNormCase& c) { return evaluate_layernorm_ball(c, true); }},
          {"dd_ball", "dd ball (106-bit)", [](const LayerNormCase& c) { return evaluate_layernorm_dd_ball(c, true); }},
          {"mpfi", "mpfi 168-bit", [](const LayerNormCase& c) { return evaluate_layernorm_mpfi50(c, true); }},
          {"boost_mpfi", "boost mpfi_float_50", [](const LayerNormCase& c) { return evaluate_layernorm_boost_mpfi50(c, true); }},
          {"cascade", "cascade", [](const LayerNormCase& c) { return certified_layernorm(c, true); }}};
}

const std::vector<std::string>& path_keys() {
  static const std::vector<std::string> keys = {"a_priori", "ball", "a_priori_dd", "dd_ball", "mpfi", "boost_mpfi", "cascade"};
  return keys;
}

/// The op's paths that `wanted` names (all when empty), the float64 kernel first.
std::vector<Path> selected_paths(bool rms, const std::vector<std::string>& wanted) {
  std::vector<Path> out;
  for (Path& p : paths(rms))
    if (!p.run || wanted.empty() || std::find(wanted.begin(), wanted.end(), p.key) != wanted.end()) out.push_back(std::move(p));
  return out;
}

}  // namespace

int bench_oracle_command(const BenchOracleOptions& o) {
  std::vector<DType> dtypes;
  std::vector<std::string> generators;
  try {
    dtypes = parse_names<DType>(o.dtypes, parse_dtype, "dtype", dtype_names());
    for (int64_t n : o.ns)
      if (n < 1 || n > 65536) throw std::invalid_argument(fmt::format("--n values must be in [1, 65536], got {}", n));
    if (o.generator == "all") {
      for (const std::string& g : gen::row_generator_names())
        if (g != gen::kCorpusGenerator) generators.push_back(g);  // the corpus has its own shapes
    } else if (!gen::is_row_generator(o.generator)) {
      throw std::invalid_argument(fmt::format("unknown generator '{}'{} (or 'all')", o.generator, did_you_mean(o.generator, gen::row_generator_names())));
    } else {
      generators.push_back(o.generator);
    }
    for (const std::string& p : o.paths)
      if (std::find(path_keys().begin(), path_keys().end(), p) == path_keys().end())
        throw std::invalid_argument(fmt::format("unknown path '{}'{} (a_priori, ball, a_priori_dd, dd_ball, mpfi, boost_mpfi or cascade)", p, did_you_mean(p, path_keys())));
    if (!o.json.empty()) check_writable(o.json);
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  nlohmann::json rows = nlohmann::json::array();
  std::map<std::string, std::vector<std::pair<double, double>>> by_series;  // op/dtype/generator/path -> (n, ns)
  std::printf("%-9s %-5s %-18s %6s %-17s %12s %10s %22s\n", "op", "dtype", "generator", "n", "path", "ns/element", "x float64",
              "certified by (cases)");
  for (bool rms : {false, true})
    for (DType dt : dtypes)
      for (const std::string& generator : generators)
        for (int64_t n : o.ns) {
          gen::ShapeRequest shape;
          shape.n = n;
          shape.rows = std::max<int64_t>(1, o.elements / n);
          std::vector<LayerNormCase> cases;
          for (int k = 0; k < o.cases; ++k) cases.push_back(gen::make_layernorm_case(generator, dt, 1000 + k, shape));
          const std::vector<Path> ps = selected_paths(rms, o.paths);
          std::vector<std::vector<double>> times(ps.size());
          std::vector<std::map<int, int>> levels(ps.size());
          int64_t elements = 0, largest = 0, widest = 0;
          for (const LayerNormCase& c : cases) {
            elements += c.rows * c.n;
            largest = std::max(largest, c.rows * c.n);
            widest = std::max(widest, c.n);
          }
          // The float64 kernel writes into buffers allocated (and zeroed) outside the timed loop, as a
          // caller's kernel would; the oracle paths build their results as they always do.
          std::vector<double> y(static_cast<size_t>(largest)), dx(y.size()), dg(static_cast<size_t>(widest)), db(dg.size());
          for (int rep = 0; rep < o.repeats; ++rep)  // interleaved: every path once per repeat
            for (size_t p = 0; p < ps.size(); ++p) {
              const double start = now_s();
              for (const LayerNormCase& c : cases) {
                if (!ps[p].run) {
                  float64_kernel(rms, c, y, dx, dg, db);
                } else {
                  const oracle::CertifiedLayerNorm r = ps[p].run(c);
                  if (rep == 0) ++levels[p][accepted(r) ? r.precision_bits : 0];
                }
              }
              times[p].push_back((now_s() - start) * 1e9 / static_cast<double>(std::max<int64_t>(1, elements)));
            }
          std::vector<double> medians;
          for (const auto& t : times) medians.push_back(median_of(t));
          const char* op = rms ? "rmsnorm" : "layernorm";
          const std::string dtype(dtype_info(dt).name);
          for (size_t p = 0; p < ps.size(); ++p) {
            std::string by;
            for (const auto& [bits, count] : levels[p]) by += fmt::format("{}{}:{}", by.empty() ? "" : " ", bits ? std::to_string(bits) : "none", count);
            std::printf("%-9s %-5s %-18s %6lld %-17s %12.1f %10.1f %22s\n", op, dtype.c_str(), generator.c_str(), static_cast<long long>(n),
                        ps[p].name.c_str(), medians[p], medians[p] / medians[0], by.c_str());
            rows.push_back({{"op", op}, {"pass", "forward+vjp"}, {"dtype", dtype}, {"generator", generator}, {"n", n},
                            {"rows", cases[0].rows}, {"cases", cases.size()}, {"path", ps[p].name}, {"ns_per_element", medians[p]},
                            {"ratio_to_float64", medians[p] / medians[0]}, {"certified_by_bits", by}});
            by_series[fmt::format("{} {} {} {}", op, dtype, generator, ps[p].name)].push_back({static_cast<double>(n), medians[p]});
          }
        }
  nlohmann::json slopes = nlohmann::json::object();
  if (o.ns.size() >= 2) {
    std::printf("\ncost per element against n (log-log slope; 0 = cost linear in n):\n");
    for (const auto& [series, points] : by_series) {
      const double slope = log_log_slope(points);
      slopes[series] = slope;
      std::printf("  %-55s %+.3f\n", series.c_str(), slope);
    }
  }
  if (!o.json.empty()) {
    write_json_atomically(o.json, {{"format", "normcheck-bench-oracle-v2"}, {"generators", generators}, {"repeats", o.repeats},
                                   {"rows", rows}, {"slopes", slopes}});
    std::printf("written: %s\n", o.json.c_str());
  }
  return kExitOk;
}

}  // namespace normcheck::cli
