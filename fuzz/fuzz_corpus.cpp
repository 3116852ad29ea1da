// libFuzzer target: the worst-case corpus format (properties/corpus/*.txt, `search --out` merges).
#include <cstddef>
#include <cstdint>
#include <string>

#include "generators/corpus.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto entries = normcheck::parse_corpus(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    for (const auto& e : entries) (void)normcheck::corpus_line(e);  // what parses prints back
  } catch (const std::exception&) {
  }
  return 0;
}
