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

/// What a merge did to the corpus file: cases added (a new key), replaced (a higher ratio, or any
/// with `replace_easier`), kept (the file's case of that key was at least as hard).
struct CorpusMerge {
  int64_t added = 0, replaced = 0, kept = 0;
};

/// Merges entries into the corpus file, sorted by (op, output, variant, dtype, rows, n): a found case
/// never replaces a harder one of the same key (a higher or equal ratio) unless `replace_easier`.
CorpusMerge merge_into_corpus(const std::string& path, const std::vector<CorpusEntry>& entries, bool replace_easier = false);

}  // namespace normcheck
