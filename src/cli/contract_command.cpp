// normcheck contract: Linear -> LayerNorm -> Linear from safetensors to D, R, c in a storage
// dtype, with a JSON certificate; normcheck example-block: writes such a block (fixtures).
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "contraction/block_io.hpp"
#include "contraction/certificate.hpp"
#include "report/output_files.hpp"
#include "properties/contraction_generators.hpp"
#include "report/report.hpp"

namespace normcheck::cli {
namespace {

BlockNames names_of(const ContractOptions& o) {
  BlockNames n;
  n.producer = o.producer;
  n.norm = o.norm;
  n.consumers = o.consumers;
  return n;
}

DType dtype_or_throw(const std::string& s) {
  const auto dt = parse_dtype(s);
  if (!dt) throw std::invalid_argument(fmt::format("unknown dtype '{}' (f16, bf16, f32, f64)", s));
  return *dt;
}

}  // namespace

int contract_command(const ContractOptions& o) {
  AffineLnAffine blk;
  DType source = DType::f32, storage = DType::f32;
  ContractedBlock k;
  const std::string cert_path = o.certificate.empty() ? o.out + ".certificate.json" : o.certificate;
  try {
    storage = dtype_or_throw(o.dtype);
    if (!(o.eps > 0) || !std::isfinite(o.eps)) throw std::invalid_argument(fmt::format("--eps must be finite and > 0, got {}", o.eps));
    for (const std::string& out : {o.out, cert_path}) {
      std::error_code ec;
      if (std::filesystem::equivalent(o.in, out, ec))
        throw std::invalid_argument("'" + printable(out) + "' is the input block: the contraction would overwrite it");
      check_writable(out);
    }
    if (o.out == cert_path) throw std::invalid_argument("--certificate and --out name the same file");
    blk = block_from_safetensors(read_safetensors(o.in), names_of(o), o.eps, source);
    k = contract_block(blk, storage);  // throws before anything is written
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  bool passed = false;
  const nlohmann::json cert = contraction_certificate(blk, source, k, {o.samples, o.seed}, passed);
  try {  // both or neither: weights without their certificate are not written
    OutputFiles files;
    files.add(o.out, serialize_safetensors(contracted_to_safetensors(k, names_of(o))));
    files.add(cert_path, cert.dump(1) + "\n");
    files.commit();
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  const auto& pc = cert.at("parameters");
  std::printf("contracted d=%lld n=%lld m=%lld k=%lld into %s (%s): parameters %lld -> %lld (%.1f %% fewer)\n",
              static_cast<long long>(blk.d), static_cast<long long>(blk.n), static_cast<long long>(blk.m),
              static_cast<long long>(k.k), o.out.c_str(), o.dtype.c_str(), static_cast<long long>(pc.at("n_old").get<int64_t>()),
              static_cast<long long>(pc.at("n_new").get<int64_t>()), 100 * pc.at("reduction").get<double>());
  const auto& cf = cert.at("contracted").at("f");
  const auto& of = cert.at("original").at("f");
  std::printf("f vs oracle on %d + 5 inputs: contracted (%s) max %.4g ulp, err/bound %.3g; original (%s) max %.4g ulp\n",
              o.samples, o.dtype.c_str(), cf.at("max_ulp").get<double>(), cf.at("max_bound_ratio").get<double>(),
              std::string(dtype_info(source).name).c_str(), of.at("max_ulp").get<double>());
  std::printf("overflow margin %.3g of %s's range; certificate: %s (%s)\n", k.overflow_margin(), o.dtype.c_str(),
              cert_path.c_str(), passed ? "PASSED" : "FAILED: a bound was violated");
  return passed ? kExitOk : kExitCheckFailed;
}

int example_block_command(const ExampleBlockOptions& o) {
  try {
    const DType dt = dtype_or_throw(o.dtype);
    ContractionCase c = gen::make_contraction_case(o.generator, dt, o.seed, {o.d, o.n, o.m, 1, true});
    if (c.block.consumer_rows.size() > 1) throw std::invalid_argument("example-block writes one consumer; use another generator");
    c.block.consumer_rows.clear();
    write_safetensors(o.out, block_to_safetensors(c.block, dt, BlockNames{}));
    std::printf("wrote %s: Linear(%lld -> %lld) -> LayerNorm(%lld) -> Linear(%lld -> %lld), %s, generator %s, seed %llu\n",
                o.out.c_str(), static_cast<long long>(o.d), static_cast<long long>(o.n), static_cast<long long>(o.n),
                static_cast<long long>(o.n), static_cast<long long>(o.m), o.dtype.c_str(), o.generator.c_str(),
                static_cast<unsigned long long>(o.seed));
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace normcheck::cli
