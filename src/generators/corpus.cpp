#include "generators/corpus.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/rng.hpp"
#include "io/case_json.hpp"

namespace normcheck {
namespace {

const char* kHeader =
    "# normcheck worst-case corpus: cases found by `normcheck search` (random restarts + hill climbing\n"
    "# over storage-dtype bit patterns, maximizing |error| / own a priori bound; docs/bounds.md section 9).\n"
    "# One case per line: op output variant dtype rows n eps ratio x gamma beta dy; values in hexfloat.\n"
    "# The property suite (properties/test_corpus.cpp) replays every line on every run.\n";

std::string key_of(const CorpusEntry& e) {
  return std::string(op_name(e.op)) + " " + e.output + " " + e.variant + " " + std::string(dtype_info(e.c.dtype).name) + " " +
         std::to_string(e.c.rows) + "x" + std::to_string(e.c.n);
}

}  // namespace

std::vector<CorpusEntry> read_corpus(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot open corpus '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_corpus(text.str(), path);
}

const std::vector<LayerNormCase>& corpus_cases(DType dt) {
  static const std::map<DType, std::vector<LayerNormCase>> by_dtype = [] {
    std::map<DType, std::vector<LayerNormCase>> m;
    for (DType d : dtype_ids()) m[d];
    for (const EmbeddedCorpusFile& f : embedded_corpus_files())
      for (CorpusEntry& e : parse_corpus(f.text, std::string("properties/corpus/") + f.name)) {
        auto& list = m[e.c.dtype];
        e.c.seed = list.size();
        if (e.c.dy.empty()) {  // a forward case: a cotangent so that backward kernels replay it too
          Rng rng(e.c.seed + 1);
          for (size_t k = 0; k < e.c.x.size(); ++k) e.c.dy.push_back(round_to_dtype(rng.normal(), e.c.dtype));
        }
        list.push_back(std::move(e.c));
      }
    return m;
  }();
  return by_dtype.at(dt);
}

void write_corpus(const std::string& path, const std::vector<CorpusEntry>& entries, const std::string& header) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write corpus '" + path + "'");
  out << header;
  for (const CorpusEntry& e : entries) out << corpus_line(e) << '\n';
  if (!out) throw std::runtime_error("cannot write corpus '" + path + "'");
}

CorpusMerge merge_into_corpus(const std::string& path, const std::vector<CorpusEntry>& entries, bool replace_easier) {
  std::map<std::string, CorpusEntry> by_key;
  if (std::ifstream(path).good())
    for (auto& e : read_corpus(path)) by_key[key_of(e)] = e;
  CorpusMerge m;
  for (const auto& e : entries) {
    const auto [it, added] = by_key.try_emplace(key_of(e), e);
    if (added) {
      ++m.added;
    } else if (replace_easier || e.ratio > it->second.ratio) {
      it->second = e;
      ++m.replaced;
    } else {
      ++m.kept;
    }
  }
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write corpus '" + path + "'");
  out << kHeader;
  for (const auto& [key, e] : by_key) out << corpus_line(e) << '\n';
  return m;
}

}  // namespace normcheck
