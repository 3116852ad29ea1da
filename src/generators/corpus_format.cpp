// The corpus text format: one case per line, `key=value` fields, values in hexfloat. Parsing and
// printing only (src/generators/corpus.cpp reads the files and embeds the committed corpus), so that the
// fuzz target links nothing else.
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "io/case_json.hpp"
#include "generators/corpus.hpp"

namespace normcheck {
namespace {

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

std::string corpus_line(const CorpusEntry& e) {
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.6g", e.ratio);
  return "op=" + std::string(op_name(e.op)) + " output=" + e.output + " variant=" + e.variant + " dtype=" +
         std::string(dtype_info(e.c.dtype).name) + " rows=" + std::to_string(e.c.rows) + " n=" +
         std::to_string(e.c.n) + " eps=" + hexfloat(e.c.eps) + " ratio=" + ratio + " x=" + join_hex(e.c.x) +
         " gamma=" + join_hex(e.c.gamma) + " beta=" + join_hex(e.c.beta) +
         (e.c.dy.empty() ? "" : " dy=" + join_hex(e.c.dy)) + (e.name.empty() ? "" : " name=" + e.name);
}

}  // namespace normcheck
