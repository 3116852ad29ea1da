#pragma once
/// The worst-case corpus (properties/corpus/*.txt): one case per line, hexfloat, with a header.
///   # comment lines
///   op=<op> output=<o> variant=<v> dtype=<d> rows=<r> n=<n> eps=<hex> ratio=<dec> x=<hex,...> gamma=<...>
///   beta=<...> dy=<...>     (all on one line; dy may be empty for forward cases)
#include <string>
#include <vector>

#include "core/layernorm_case.hpp"
#include "kernels/registry.hpp"

namespace normcheck {

struct CorpusEntry {
  Op op = Op::layernorm_forward;
  std::string variant;
  double ratio = 0;  ///< own-bound ratio found by the search that wrote it
  std::string output = "y";  ///< the output whose ratio was maximized
  LayerNormCase c;
};

/// Parses a corpus file; throws std::invalid_argument naming the line on any malformed entry.
std::vector<CorpusEntry> read_corpus(const std::string& path);

/// One corpus line (no newline).
std::string corpus_line(const CorpusEntry& e);

/// Writes entries, replacing existing ones with the same (op, output, variant, dtype, rows, n), sorted.
void merge_into_corpus(const std::string& path, const std::vector<CorpusEntry>& entries);

}  // namespace normcheck
