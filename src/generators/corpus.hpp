#pragma once
/// The worst-case corpus (properties/corpus/*.txt): one case per line, hexfloat, with a header.
///   # comment lines
///   op=<op> output=<o> variant=<v> dtype=<d> rows=<r> n=<n> eps=<hex> ratio=<dec> x=<hex,...> gamma=<...>
///   beta=<...> dy=<...> [name=<label>]   (all on one line; dy may be empty for forward cases)
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
  std::string name;          ///< what a structured case is built to reach (empty for search results)
  LayerNormCase c;
};

/// One committed corpus file compiled into the binary (cmake/embed_corpus.cmake).
struct EmbeddedCorpusFile {
  const char* name;
  const char* text;
};
const std::vector<EmbeddedCorpusFile>& embedded_corpus_files();

/// Parses a corpus file; throws std::invalid_argument naming the line on any malformed entry.
std::vector<CorpusEntry> read_corpus(const std::string& path);

/// Parses corpus text; `source` names it in error messages.
std::vector<CorpusEntry> parse_corpus(const std::string& text, const std::string& source);

/// The committed corpus's cases of dtype dt (every embedded file, in file order), each with generator
/// "corpus" and seed = its index in this list: what every suite replays first for every kernel.
const std::vector<LayerNormCase>& corpus_cases(DType dt);

/// The structured adversarial cases and tracker inputs (src/generators/corpus_structured.cpp).
std::vector<CorpusEntry> structured_corpus();

/// Writes entries to path in the given order (the structured file), replacing it.
void write_corpus(const std::string& path, const std::vector<CorpusEntry>& entries, const std::string& header);

/// One corpus line (no newline).
std::string corpus_line(const CorpusEntry& e);

/// Writes entries, replacing existing ones with the same (op, output, variant, dtype, rows, n), sorted.
void merge_into_corpus(const std::string& path, const std::vector<CorpusEntry>& entries);

}  // namespace normcheck
