#include "io/output_files.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "io/json_input.hpp"

namespace normcheck {
namespace {

std::string temporary_of(const std::string& path) { return path + ".tmp"; }

[[noreturn]] void cannot_write(const std::string& path, const std::string& why) {
  throw std::runtime_error("cannot write '" + printable(path) + "'" + (why.empty() ? "" : " (" + why + ")"));
}

}  // namespace

void check_writable(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) cannot_write(path, "empty path");
  std::error_code ec;
  if (fs::is_directory(path, ec)) cannot_write(path, "it is a folder");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) cannot_write(path, "cannot create its folder: " + ec.message());
  }
  if (::access(parent.empty() ? "." : parent.c_str(), W_OK) != 0) cannot_write(path, "its folder is not writable");
}

OutputFiles::~OutputFiles() {
  for (const std::string& p : paths_) std::remove(temporary_of(p).c_str());
}

void OutputFiles::add(const std::string& path, std::string_view bytes) {
  const std::string tmp = temporary_of(path);
  paths_.push_back(path);  // removed by the destructor whatever happens next
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (f) f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (f) f.close();  // the final flush can fail too (disk full)
  if (!f) cannot_write(path, "");
}

void OutputFiles::commit() {
  for (size_t i = 0; i < paths_.size(); ++i)
    if (std::rename(temporary_of(paths_[i]).c_str(), paths_[i].c_str()) != 0) {
      paths_.erase(paths_.begin(), paths_.begin() + static_cast<std::ptrdiff_t>(i));  // those are in place
      cannot_write(paths_.front(), "rename failed");
    }
  paths_.clear();
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  OutputFiles out;
  out.add(path, bytes);
  out.commit();
}

void write_json_atomically(const std::string& path, const nlohmann::json& j) { write_file_atomically(path, j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"); }

}  // namespace normcheck
