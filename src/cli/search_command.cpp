#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "ops/op_kernels.hpp"
#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "io/output_files.hpp"
#include "generators/corpus.hpp"
#include "suite/judge.hpp"
#include "suite/search.hpp"

namespace normcheck::cli {

namespace {

const char* kStructuredHeader =
    "# normcheck structured corpus: inputs built to sit on the edges of the arithmetic (rows of a and a + 1 ulp\n"
    "# whose mean is a tie, n = 2^k - 1, 2^k, 2^k + 1, eps equal to the variance or one ulp above it, eps near\n"
    "# the accumulator's largest value) and the hard inputs of real bug trackers (DESIGN.md section 7).\n"
    "# Written by: normcheck search --structured --out properties/corpus/structured.txt\n"
    "# Every suite replays the whole corpus first, for every selected kernel (generator 'corpus').\n";

int write_structured(const SearchOptions& o) {
  if (o.out.empty()) {
    std::fprintf(stderr, "normcheck: error: --structured needs --out FILE\n");
    return kExitBadInput;
  }
  try {
    const auto entries = structured_corpus();
    write_corpus(o.out, entries, kStructuredHeader);
    std::printf("corpus: %zu structured cases written to %s\n", entries.size(), o.out.c_str());
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace

int search_command(const SearchOptions& o) {
  if (o.structured) return write_structured(o);
  std::vector<Op> ops;
  std::vector<DType> dtypes;
  try {
    ops = parse_names<Op>(o.ops, parse_op, "op");
    dtypes = parse_names<DType>(o.dtypes, parse_dtype, "dtype", dtype_names());
    if (o.rows < 1 || o.n < 1 || o.rows > 65536 || o.n > 65536 || o.rows * o.n > 65536)
      throw std::invalid_argument(fmt::format("shape {}x{} must have 1 <= rows*n <= 65536", o.rows, o.n));
    for (const auto& v : o.variants)
      if (!is_kernel_variant(v))
        throw std::invalid_argument(fmt::format("unknown kernel variant '{}'", v));
    if (!o.out.empty()) {  // the corpus the cases merge into is read and its folder checked before the search, not after
      if (std::filesystem::exists(o.out)) (void)read_corpus(o.out);
      check_writable(o.out);
    }
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  std::vector<CorpusEntry> found;
  bool violated = false;
  std::printf("%-20s %-24s %-5s %9s %8s  %s\n", "op", "variant", "dtype", "shape", "evals", "best |err|/own bound");
  for (Op op : ops)
    for (const auto& variant : o.variants)
      for (DType dt : dtypes) {
        if (!find_kernel(op, variant, dt)) continue;  // e.g. storage-precision accumulation in f32/f64, RMSNorm variants for LayerNorm ops
        for (const std::string& output : op_outputs(op)) {
        SearchConfig cfg{op, variant, dt, o.rows, o.n, o.seed, o.restarts, o.iterations, output};
        const SearchResult r = search_worst_case(cfg);
        std::printf("%-20s %-24s %-5s %4lldx%-4lld %8lld  %.4g (%s)\n", std::string(op_name(op)).c_str(), variant.c_str(),
                    dtype_info(dt).name.data(), static_cast<long long>(o.rows), static_cast<long long>(o.n),
                    static_cast<long long>(r.evaluations), r.best.ratio, r.best.output.c_str());
        std::fflush(stdout);  // a CI log (a pipe, fully buffered) sees each search as it ends, not all at the end
        violated = violated || r.best.ratio > 1;
        found.push_back(r.best);
        }
      }
  if (!o.out.empty()) {
    CorpusMerge m;
    try {
      m = merge_into_corpus(o.out, found, o.replace);
    } catch (const std::exception& e) {
      print_error(e.what());
      return kExitBadInput;
    }
    std::printf("corpus %s: %lld cases added, %lld replaced, %lld kept (the corpus's case was at least as hard%s)\n", o.out.c_str(),
                static_cast<long long>(m.added), static_cast<long long>(m.replaced), static_cast<long long>(m.kept),
                o.replace ? "; --replace: none kept" : "; --replace replaces them");
  }
  if (violated) std::printf("BOUND VIOLATED: a case exceeds its own a priori bound (see the corpus)\n");
  return violated ? kExitCheckFailed : kExitOk;
}

}  // namespace normcheck::cli
