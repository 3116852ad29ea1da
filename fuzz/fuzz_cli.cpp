// libFuzzer target: the command line's option parsing and validators (argv from the input, split at
// NUL bytes; nothing runs). The app is normcheck's own (src/cli/command_line.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/command_line.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = {"normcheck"};
  std::string current;
  for (size_t i = 0; i < size && args.size() < 64; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  if (!current.empty()) args.push_back(current);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  normcheck::cli::CommandLine cl;
  normcheck::cli::declare_command_line(cl, {{"record", "records"}, {"block-record", "rms_block"}, {"grouped-record", "grouped_norm"}});
  try {
    cl.app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::Error&) {  // help requests and parse errors: one line and exit 2 in normcheck
  }
  return 0;
}
