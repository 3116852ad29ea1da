#pragma once
/// Shell quoting of paths that normcheck puts into command lines (the exec command's {dir}, the
/// replay commands printed in reports): a copy-pasted or /bin/sh-run command sees the path whole.
#include <string>
#include <string_view>

namespace normcheck {

/// `text` as one POSIX shell word: unchanged when it holds only characters no shell treats
/// specially (letters, digits, _ - . / + = : , @ %), else in single quotes with each ' as '\''.
inline std::string shell_quote(std::string_view text) {
  const auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || std::string_view("_-./+=:,@%").find(c) != std::string_view::npos;
  };
  bool all_plain = !text.empty();
  for (const char c : text) all_plain = all_plain && plain(c);
  if (all_plain) return std::string(text);
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace normcheck
