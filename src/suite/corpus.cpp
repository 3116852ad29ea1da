#include "suite/corpus.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/rng.hpp"
#include "report/case_json.hpp"

namespace normcheck {
namespace {

const char* kHeader =
    "# normcheck worst-case corpus: cases found by `normcheck search` (random restarts + hill climbing\n"
    "# over storage-dtype bit patterns, maximizing |error| / own a priori bound; docs/bounds.md section 9).\n"
    "# One case per line: op output variant dtype rows n eps ratio x gamma beta dy; values in hexfloat.\n"
    "# The property suite (properties/test_corpus.cpp) replays every line on every run.\n";

std::string join_hex(const std::vector<double>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + hexfloat(v[i]);
  return s;
}

std::vector<double> split_hex(const std::string& s) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_hexfloat(item));
  return out;
}

std::map<std::string, std::string> fields_of(const std::string& line) {
  std::map<std::string, std::string> f;
  std::stringstream ss(line);
  std::string token;
  while (ss >> token) {
    const auto eq = token.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("token '" + token + "' is not key=value");
    f[token.substr(0, eq)] = token.substr(eq + 1);
  }
  return f;
}

const std::string& need(const std::map<std::string, std::string>& f, const char* key) {
  const auto it = f.find(key);
  if (it == f.end()) throw std::invalid_argument(std::string("missing '") + key + "'");
  return it->second;
}

CorpusEntry parse_entry(const std::string& line) {
  const auto f = fields_of(line);
  CorpusEntry e;
  const auto op = parse_op(need(f, "op"));
  const auto dt = parse_dtype(need(f, "dtype"));
  if (!op || !dt) throw std::invalid_argument("unknown op or dtype");
  e.op = *op;
  e.variant = need(f, "variant");
  e.output = need(f, "output");
  e.ratio = std::stod(need(f, "ratio"));
  e.c.dtype = *dt;
  e.c.rows = std::stoll(need(f, "rows"));
  e.c.n = std::stoll(need(f, "n"));
  e.c.eps = parse_hexfloat(need(f, "eps"));
  e.c.x = split_hex(need(f, "x"));
  e.c.gamma = split_hex(need(f, "gamma"));
  e.c.beta = split_hex(need(f, "beta"));
  e.c.dy = f.count("dy") ? split_hex(f.at("dy")) : std::vector<double>{};
  e.c.generator = "corpus";
  if (f.count("name")) e.name = f.at("name");
  if (auto err = validate_case(e.c, is_backward(e.op))) throw std::invalid_argument(*err);
  return e;
}

std::string key_of(const CorpusEntry& e) {
  return std::string(op_name(e.op)) + " " + e.output + " " + e.variant + " " + std::string(dtype_info(e.c.dtype).name) + " " +
         std::to_string(e.c.rows) + "x" + std::to_string(e.c.n);
}

}  // namespace

std::vector<CorpusEntry> parse_corpus(const std::string& text, const std::string& source) {
  std::vector<CorpusEntry> out;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    try {
      out.push_back(parse_entry(line));
    } catch (const std::exception& ex) {
      throw std::invalid_argument(source + ":" + std::to_string(number) + ": " + ex.what());
    }
  }
  return out;
}

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

std::string corpus_line(const CorpusEntry& e) {
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.6g", e.ratio);
  return "op=" + std::string(op_name(e.op)) + " output=" + e.output + " variant=" + e.variant + " dtype=" +
         std::string(dtype_info(e.c.dtype).name) + " rows=" + std::to_string(e.c.rows) + " n=" +
         std::to_string(e.c.n) + " eps=" + hexfloat(e.c.eps) + " ratio=" + ratio + " x=" + join_hex(e.c.x) +
         " gamma=" + join_hex(e.c.gamma) + " beta=" + join_hex(e.c.beta) +
         (e.c.dy.empty() ? "" : " dy=" + join_hex(e.c.dy)) + (e.name.empty() ? "" : " name=" + e.name);
}

void write_corpus(const std::string& path, const std::vector<CorpusEntry>& entries, const std::string& header) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write corpus '" + path + "'");
  out << header;
  for (const CorpusEntry& e : entries) out << corpus_line(e) << '\n';
  if (!out) throw std::runtime_error("cannot write corpus '" + path + "'");
}

void merge_into_corpus(const std::string& path, const std::vector<CorpusEntry>& entries) {
  std::map<std::string, CorpusEntry> by_key;
  if (std::ifstream(path).good())
    for (auto& e : read_corpus(path)) by_key[key_of(e)] = e;
  for (const auto& e : entries) by_key[key_of(e)] = e;
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write corpus '" + path + "'");
  out << kHeader;
  for (const auto& [key, e] : by_key) out << corpus_line(e) << '\n';
}

}  // namespace normcheck
