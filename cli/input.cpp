#include "input.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace memfit::cli {

namespace {

// Reads up to one byte past the limit, so that "exactly at the limit" and "over it" differ.
Input read_stream(std::FILE* f) {
  Input in;
  char buffer[1 << 16];
  while (in.text.size() <= kMaxInputBytes) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, f);
    in.text.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (std::ferror(f)) in.error = std::strerror(errno);
  else if (in.text.size() > kMaxInputBytes) in.error = "is larger than 16 MiB", in.invalid = true;
  if (!in.error.empty()) in.text.clear();
  return in;
}

}  // namespace

Input read_input(const std::string& path) {
  if (path == "-") return read_stream(stdin);
  struct stat info{};
  if (::stat(path.c_str(), &info) != 0) return {"", std::strerror(errno)};
  if (S_ISDIR(info.st_mode)) return {"", "is a directory", true};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return {"", std::strerror(errno)};
  Input in = read_stream(f);
  std::fclose(f);
  return in;
}

}  // namespace memfit::cli
