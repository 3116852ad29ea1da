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
#include "contraction/module_graph.hpp"
#include "io/output_files.hpp"
#include "generators/contraction_generators.hpp"
#include "report/report.hpp"

namespace normcheck::cli {
namespace {

DType dtype_or_throw(const std::string& s) {
  const auto dt = parse_dtype(s);
  if (!dt) throw std::invalid_argument(fmt::format("unknown dtype '{}' (f16, bf16, f32, f64)", s));
  return *dt;
}

/// The chain to contract: from the module list (--graph), or the state dict trusted (--assume-chain).
struct ChainChoice {
  BlockNames names;
  double eps = 1e-5;
  RetainedParts retained;
  nlohmann::json record;  ///< the certificate's "chain"
};

ChainChoice choose_chain(const ContractOptions& o) {
  if (o.graph.empty() == !o.assume_chain)
    throw std::invalid_argument(o.assume_chain ? "--graph and --assume-chain exclude each other"
                                               : "a state dict cannot show what runs between its modules (a GELU, a residual addition, a hook): "
                                                 "give the model's module list with --graph FILE (docs/qr-contraction.md) or --assume-chain");
  ChainChoice c;
  if (o.assume_chain) {
    c.names.producer = o.producer.empty() ? "0" : o.producer;
    c.names.norm = o.norm.empty() ? "1" : o.norm;
    if (!o.consumers.empty()) c.names.consumers = o.consumers;
    c.eps = o.eps.value_or(1e-5);
    c.record = {{"source", "assumed"},
                {"note", "--assume-chain: the state dict was trusted to be Linear -> LayerNorm -> Linear with nothing between; not verified"}};
  } else {
    const GraphChain g = find_contractible_chain(read_module_list(o.graph), o.norm, o.producer, o.consumers);
    if (o.eps && g.eps && *o.eps != *g.eps)
      throw std::invalid_argument(fmt::format("--eps {} differs from LayerNorm '{}''s eps {} in the module list", *o.eps, g.norm, *g.eps));
    c.names = {g.producer, g.norm, g.consumers};
    c.eps = o.eps ? *o.eps : g.eps.value_or(1e-5);
    nlohmann::json retained = nlohmann::json::array();
    for (const RetainedModule& r : g.retained) {
      retained.push_back({{"name", r.name}, {"op", r.op}, {"needed_by", r.needed_by}});
      (r.name == g.producer ? c.retained.producer : c.retained.norm) = true;
    }
    c.record = {{"source", "graph"}, {"graph", o.graph}, {"retained", retained}};
  }
  if (!(c.eps > 0) || !std::isfinite(c.eps)) throw std::invalid_argument(fmt::format("--eps must be finite and > 0, got {}", c.eps));
  c.record["producer"] = c.names.producer;
  c.record["norm"] = c.names.norm;
  c.record["consumers"] = c.names.consumers;
  return c;
}

void print_parameters(const nlohmann::json& pc) {
  const double reduction = pc.at("reduction").get<double>();
  std::printf("parameters %lld -> %lld (%.1f %% %s", static_cast<long long>(pc.at("n_old").get<int64_t>()),
              static_cast<long long>(pc.at("n_new").get<int64_t>()), 100 * std::fabs(reduction), reduction >= 0 ? "fewer" : "more");
  if (pc.at("n_retained").get<int64_t>() > 0)
    std::printf("; %lld of them in retained modules", static_cast<long long>(pc.at("n_retained").get<int64_t>()));
  std::printf(")\n");
}

}  // namespace

int contract_command(const ContractOptions& o) {
  AffineLnAffine blk;
  DType source = DType::f32, storage = DType::f32;
  ContractedBlock k;
  ChainChoice chain;
  const std::string cert_path = o.certificate.empty() ? o.out + ".certificate.json" : o.certificate;
  try {
    storage = dtype_or_throw(o.dtype);
    chain = choose_chain(o);
    for (const std::string& out : {o.out, cert_path}) {
      std::error_code ec;
      if (std::filesystem::equivalent(o.in, out, ec))
        throw std::invalid_argument("'" + printable(out) + "' is the input block: the contraction would overwrite it");
      check_writable(out);
    }
    if (o.out == cert_path) throw std::invalid_argument("--certificate and --out name the same file");
    blk = block_from_safetensors(read_safetensors(o.in), chain.names, chain.eps, source);
    k = contract_block(blk, storage);  // throws before anything is written
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  const ParameterCounts counts = parameter_counts(blk, chain.retained);
  if (counts.n_new > counts.n_old) {
    const std::string what = fmt::format("the contraction has more parameters than the block: {} -> {} ({:.1f} % more)", counts.n_old,
                                         counts.n_new, -100 * counts.reduction());
    if (!o.allow_growth) {
      print_error(what + "; nothing written (--allow-growth writes it anyway)");
      return kExitBadInput;
    }
    std::fprintf(stderr, "warning: %s (--allow-growth)\n", what.c_str());
  }
  bool passed = false;
  CertificateOptions copts{o.samples, o.seed, chain.record, chain.retained};
  const nlohmann::json cert = contraction_certificate(blk, source, k, copts, passed);
  try {  // both or neither: weights without their certificate are not written
    OutputFiles files;
    files.add(o.out, serialize_safetensors(contracted_to_safetensors(k, chain.names)));
    files.add(cert_path, cert.dump(1) + "\n");
    files.commit();
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  std::printf("contracted d=%lld n=%lld m=%lld k=%lld into %s (%s), chain %s: ", static_cast<long long>(blk.d),
              static_cast<long long>(blk.n), static_cast<long long>(blk.m), static_cast<long long>(k.k), o.out.c_str(), o.dtype.c_str(),
              o.assume_chain ? "assumed (--assume-chain)" : "checked in the module list");
  print_parameters(cert.at("parameters"));
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
    if (!o.modules.empty() && o.modules == o.out) throw std::invalid_argument("--modules and --out name the same file");
    OutputFiles files;
    files.add(o.out, serialize_safetensors(block_to_safetensors(c.block, dt, BlockNames{})));
    const BlockNames names;
    if (!o.modules.empty()) files.add(o.modules, chain_module_list(names.producer, names.norm, names.consumers, 1e-5));  // the model: LayerNorm(n), PyTorch's default eps
    files.commit();
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
