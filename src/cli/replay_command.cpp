#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/replay_external.hpp"
#include "oracles/certified_layernorm.hpp"
#include "oracles/certified_rms_block.hpp"
#include "kernels/contraction_registry.hpp"
#include "properties/block_generators.hpp"
#include "properties/contraction_generators.hpp"
#include "suite/contraction_judge.hpp"
#include "report/case_json.hpp"
#include "report/report.hpp"
#include "suite/suites.hpp"

namespace normcheck::cli {
namespace {

const nlohmann::json& record_at(const nlohmann::json& report, int64_t index) {
  if (!report.is_object() || !report.contains("records") || !report.at("records").is_array())
    throw std::invalid_argument("report has no 'records' array");
  const auto& records = report.at("records");
  if (index < 0 || index >= static_cast<int64_t>(records.size()))
    throw std::invalid_argument(fmt::format("record {} out of range (report has {})", index, records.size()));
  return records.at(static_cast<size_t>(index));
}

/// The worst case's inputs: inline when present, else regenerated from its seed and checked by digest.
LayerNormCase worst_case_of(const nlohmann::json& report, const nlohmann::json& wc, DType dtype) {
  LayerNormCase c;
  if (wc.contains("x")) {
    c = case_from_json(wc);
  } else {
    const RunConfig cfg = config_from_report(report);
    c = gen::make_layernorm_case(wc.at("generator").get<std::string>(), dtype,
                                 std::stoull(wc.at("case_seed").get<std::string>()), cfg.shape);
    c.eps = parse_hexfloat(wc.at("eps").get<std::string>());
  }
  if (std::to_string(case_digest(c)) != wc.at("digest").get<std::string>())
    throw std::invalid_argument("case inputs do not match the recorded digest (edited report or other build)");
  if (auto err = validate_case(c, true)) throw std::invalid_argument("invalid case in report: " + *err);
  return c;
}

void print_value_line(const char* label, double v) {
  std::printf("  %-8s %-26s %.17g\n", label, hexfloat(v).c_str(), v);
}

/// The block record's case: inline inputs when present, else regenerated from its seed; checked by digest.
RmsBlockCase block_case_of(const nlohmann::json& wc, DType dtype) {
  RmsBlockCase c = wc.contains("x") ? block_case_from_json(wc)
                                    : gen::make_rms_block_case(wc.at("generator").get<std::string>(), dtype,
                                                               std::stoull(wc.at("case_seed").get<std::string>()));
  if (std::to_string(block_case_digest(c)) != wc.at("digest").get<std::string>())
    throw std::invalid_argument("block case inputs do not match the recorded digest (edited report or other build)");
  if (auto err = validate_block_case(c)) throw std::invalid_argument("invalid block case in report: " + *err);
  return c;
}

BlockKernelEntry block_kernel_for(const nlohmann::json& report, const nlohmann::json& rec, const ReplayOptions& o) {
  const auto storage = parse_dtype(rec.at("storage").get<std::string>());
  if (!storage) throw std::invalid_argument("block record names an unknown dtype");
  if (rec.contains("kernel") && rec.at("kernel").get<std::string>() != "builtin") return replay_block_kernel(report, rec, *storage, o);
  for (const BlockKernelEntry& k : builtin_block_kernels())
    if (k.storage == *storage && k.variant == rec.at("variant").get<std::string>() &&
        dtype_info(k.accum).name == rec.at("accum").get<std::string>())
      return k;
  throw std::invalid_argument("block record names a kernel this build does not have");
}

/// Prints the replayed worst element beside the recorded one; exit 0 when they agree.
int report_replay(const WorstElement& w, const nlohmann::json& recorded, int64_t recorded_index) {
  print_value_line("kernel", w.got);
  print_value_line("oracle", w.ref.approx());
  print_value_line("bound", w.bound);
  const bool same = hexfloat(w.got) == recorded.at("kernel").get<std::string>() && w.index == recorded_index;
  std::printf("%s\n", same ? "replay reproduces the recorded worst element" : "replay DIFFERS from the recorded worst element");
  return same ? kExitOk : kExitCheckFailed;
}

int replay_block_record(const ReplayOptions& o) {
  nlohmann::json rec;
  RmsBlockCase c;
  std::optional<BlockKernelEntry> kernel;
  const BlockKernelEntry* k = nullptr;
  try {
    const nlohmann::json report = read_json_file(o.report);
    if (!report.is_object() || !report.contains("rms_block") || !report.at("rms_block").is_object())
      throw std::invalid_argument("report has no block suite section ('rms_block')");
    const auto& records = report.at("rms_block").at("records");
    if (*o.block_record < 0 || *o.block_record >= static_cast<int64_t>(records.size()))
      throw std::invalid_argument(fmt::format("block record {} out of range (report has {})", *o.block_record, records.size()));
    rec = records.at(static_cast<size_t>(*o.block_record));
    if (rec.at("worst_case").is_null()) throw std::invalid_argument("block record has no worst case (no case ran)");
    kernel = block_kernel_for(report, rec, o);
    k = &*kernel;
    c = block_case_of(rec.at("worst_case"), k->storage);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normcheck: error: %s\n", e.what());
    return kExitBadInput;
  }
  const std::string output = rec.at("output").get<std::string>();
  const oracle::CertifiedRmsBlock ref = oracle::certified_rms_block(c);
  const std::vector<OutputJudgement> judged = judge_block_case(*k, c, ref);
  if (judged.empty()) {
    std::printf("the kernel declined the call (unsupported): nothing to replay\n");
    return kExitCheckFailed;
  }
  for (const OutputJudgement& j : judged) {
    if (j.output != output) continue;
    if (!j.kernel_failure.empty()) {
      std::printf("block record %lld: linear_rmsnorm %s %s, output %s\nkernel failure: %s\n", static_cast<long long>(*o.block_record),
                  k->kernel.c_str(), dtype_info(k->storage).name.data(), output.c_str(), j.kernel_failure.c_str());
      return kExitCheckFailed;
    }
    std::printf("block record %lld: linear_rmsnorm %s %s(acc %s) %s, output %s\n", static_cast<long long>(*o.block_record),
                k->variant.c_str(), dtype_info(k->storage).name.data(), dtype_info(k->accum).name.data(),
                rec.at("property").get<std::string>().c_str(), output.c_str());
    std::printf("case: generator %s, seed %llu, rows %lld, n %lld, m %lld, eps %s; oracle %d bits, certified error %.3g ulp\n",
                c.generator.c_str(), static_cast<unsigned long long>(c.seed), static_cast<long long>(c.rows),
                static_cast<long long>(c.n), static_cast<long long>(c.m), hexfloat(c.eps).c_str(), ref.precision_bits,
                ref.max_err_ulps);
    std::printf("worst element %lld (recorded), this replay's worst %lld, max err/bound %.6g, max ulp %.6g\n",
                static_cast<long long>(rec.at("worst_case").at("element").at("index").get<int64_t>()),
                static_cast<long long>(j.worst.index), j.acc.max_bound_ratio(), j.acc.max_ulp());
    const auto& elem = rec.at("worst_case").at("element");
    return report_replay(j.worst, elem, elem.at("index").get<int64_t>());
  }
  std::fprintf(stderr, "normcheck: error: block record output '%s' is not a block output\n", output.c_str());
  return kExitBadInput;
}

int replay_contraction_record(const ReplayOptions& o) {
  nlohmann::json rec;
  ContractionCase c;
  try {
    const nlohmann::json report = read_json_file(o.report);
    if (!report.is_object() || !report.contains("qr_contraction") || !report.at("qr_contraction").is_object())
      throw std::invalid_argument("report has no QR-contraction section ('qr_contraction')");
    const auto& records = report.at("qr_contraction").at("records");
    if (*o.contraction_record < 0 || *o.contraction_record >= static_cast<int64_t>(records.size()))
      throw std::invalid_argument(
          fmt::format("contraction record {} out of range (report has {})", *o.contraction_record, records.size()));
    rec = records.at(static_cast<size_t>(*o.contraction_record));
    if (rec.at("worst_case").is_null()) throw std::invalid_argument("contraction record has no worst case (no case ran)");
    const auto& wc = rec.at("worst_case");
    const auto dt = parse_dtype(rec.at("storage").get<std::string>());
    if (!dt) throw std::invalid_argument("unknown dtype in contraction record");
    c = gen::make_contraction_case(wc.at("generator").get<std::string>(), *dt, std::stoull(wc.at("case_seed").get<std::string>()));
    if (c.block.d != wc.at("d").get<int64_t>() || c.block.n != wc.at("n").get<int64_t>() ||
        c.block.m != wc.at("m").get<int64_t>() || c.rows != wc.at("rows").get<int64_t>())
      throw std::invalid_argument("regenerated case does not match the recorded shapes (edited report or other build)");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normcheck: error: %s\n", e.what());
    return kExitBadInput;
  }
  const ContractionJudgement j = judge_contraction(c);
  const bool contracted = rec.at("form") == "contracted", is_f = rec.at("output") == "f";
  const OutputJudgement& out = contracted ? (is_f ? j.f : j.dx) : (is_f ? j.original_f : j.original_dx);
  std::printf("contraction record %lld: %s %s %s, output %s; case: generator %s, seed %llu, d %lld, n %lld, m %lld, rows %lld\n",
              static_cast<long long>(*o.contraction_record), rec.at("form").get<std::string>().c_str(),
              dtype_info(c.dtype).name.data(), rec.at("property").get<std::string>().c_str(), out.output.c_str(),
              c.generator.c_str(), static_cast<unsigned long long>(c.seed), static_cast<long long>(c.block.d),
              static_cast<long long>(c.block.n), static_cast<long long>(c.block.m), static_cast<long long>(c.rows));
  std::printf("oracle %d bits, certified error %.3g ulp; max err/bound %.6g, max ulp %.6g\n", j.reference.precision_bits,
              j.reference.max_err_ulps, out.acc.max_bound_ratio(), out.acc.max_ulp());
  const auto& elem = rec.at("worst_case").at("element");
  // Per case: the element with the largest err/bound (contracted) or ULP error (original).
  const WorstElement& w = out.worst;
  return report_replay(w, elem, elem.at("index").get<int64_t>());
}

}  // namespace

int replay_command(const ReplayOptions& o) {
  if (o.kernel_timeout && !(*o.kernel_timeout > 0 && std::isfinite(*o.kernel_timeout))) {
    std::fprintf(stderr, "normcheck: error: --kernel-timeout must be a finite number > 0\n");
    return kExitBadInput;
  }
  if (!o.dump.empty() && !o.record) {
    std::fprintf(stderr, "normcheck: error: --dump writes per-op records (--record) only; block and contraction cases are in the report's worst_case\n");
    return kExitBadInput;
  }
  if (o.block_record) return replay_block_record(o);
  if (o.contraction_record) return replay_contraction_record(o);
  if (!o.record) {
    std::fprintf(stderr, "normcheck: error: replay needs --record, --block-record or --contraction-record\n");
    return kExitBadInput;
  }
  nlohmann::json report, rec;
  LayerNormCase c;
  std::optional<KernelEntry> kernel;
  oracle::CertifiedLayerNorm ref;
  try {
    report = read_json_file(o.report);
    rec = record_at(report, *o.record);
    if (rec.at("worst_case").is_null()) throw std::invalid_argument("record has no worst case (no case ran)");
    const auto op = parse_op(rec.at("op").get<std::string>());
    const auto storage = parse_dtype(rec.at("storage").get<std::string>());
    if (!op || !storage) throw std::invalid_argument("record names an unknown op or dtype");
    c = worst_case_of(report, rec.at("worst_case"), *storage);
    ref = certified_reference(*op, c, is_backward(*op));
    if (!o.dump.empty()) {
      dump_case(o.dump, *op, c, ref, rec, rec.at("worst_case").value("replay", std::string()));
      std::printf("case written to %s (manifest.json, inputs, expected_<output>.npy, exact.json)\n", o.dump.c_str());
    }
    kernel = replay_kernel(report, rec, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normcheck: error: %s\n", e.what());
    return kExitBadInput;
  }
  const KernelEntry* k = &*kernel;
  const std::string output = rec.at("output").get<std::string>();
  const auto judged = judge_case(*k, c, ref);
  const auto& elem = rec.at("worst_case").at("element");
  const int64_t index = elem.at("index").get<int64_t>();
  if (judged.empty()) {
    std::printf("the kernel declined the call (unsupported): nothing to replay\n");
    return kExitCheckFailed;
  }
  for (const OutputJudgement& j : judged) {
    if (j.output != output) continue;
    if (!j.kernel_failure.empty()) {
      std::printf("record %lld: %s %s %s, output %s\nkernel failure: %s\n", static_cast<long long>(*o.record),
                  rec.at("op").get<std::string>().c_str(), k->kernel.c_str(), dtype_info(k->storage).name.data(), output.c_str(),
                  j.kernel_failure.c_str());
      return kExitCheckFailed;
    }
    std::printf("record %lld: %s %s %s(acc %s) %s, output %s\n", static_cast<long long>(*o.record),
                rec.at("op").get<std::string>().c_str(), k->variant.c_str(), dtype_info(k->storage).name.data(),
                dtype_info(k->accum).name.data(), rec.at("property").get<std::string>().c_str(), output.c_str());
    std::printf("case: generator %s, seed %llu, rows %lld, n %lld, eps %s; oracle %d bits, certified error %.3g ulp\n",
                c.generator.c_str(), static_cast<unsigned long long>(c.seed), static_cast<long long>(c.rows),
                static_cast<long long>(c.n), hexfloat(c.eps).c_str(), ref.precision_bits, ref.max_err_ulps);
    std::printf("worst element %lld (recorded), this replay's worst %lld, max err/bound %.6g, max ulp %.6g\n",
                static_cast<long long>(index), static_cast<long long>(j.worst.index), j.acc.max_bound_ratio(),
                j.acc.max_ulp());
    return report_replay(j.worst, elem, index);
  }
  std::fprintf(stderr, "normcheck: error: record output '%s' not produced by its kernel\n", output.c_str());
  return kExitBadInput;
}

int list_command() {
  std::printf("dtypes:");
  for_each_dtype([](auto tag) { std::printf(" %s", dtype_traits<decltype(tag)>::name.data()); });
  std::printf("\nops: layernorm_forward layernorm_backward rmsnorm_forward rmsnorm_backward linear_rmsnorm qr_contraction\nkernels (variant storage accum):\n");
  for (const KernelEntry& k : builtin_kernels())
    if (!is_backward(k.op))
      std::printf("  %-24s %-5s %-5s%s\n", k.variant.c_str(), dtype_info(k.storage).name.data(),
                  dtype_info(k.accum).name.data(), k.known_weak ? "  (known weak)" : "");
  std::printf("block kernels (op linear_rmsnorm; variant storage accum):\n");
  for (const BlockKernelEntry& k : builtin_block_kernels())
    std::printf("  %-28s %-5s %-5s%s\n", k.variant.c_str(), dtype_info(k.storage).name.data(),
                dtype_info(k.accum).name.data(), k.known_weak ? "  (planted defect)" : "");
  std::printf("generators:");
  for (const auto& g : gen::row_generator_names()) std::printf(" %s", g.c_str());
  std::printf("\nblock generators:");
  for (const auto& g : gen::block_generator_names()) std::printf(" %s", g.c_str());
  std::printf("\nqr_contraction generators (the seed's categories):");
  for (const auto& g : gen::contraction_generator_names()) std::printf(" %s", g.c_str());
  std::printf("\nsuites:\n");
  for (const SuiteDef& s : suites()) std::printf("  %-8s %s\n", s.name.data(), s.description.data());
  return kExitOk;
}

}  // namespace normcheck::cli
