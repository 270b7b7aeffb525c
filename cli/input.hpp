// Reading a file or stdin for the command line, bounded: at most kMaxInputBytes are read, so
// `--config /dev/zero` ends with a message instead of reading forever.
#pragma once

#include <cstddef>
#include <string>

namespace memfit::cli {

inline constexpr std::size_t kMaxInputBytes = 16u << 20;  // 16 MiB, the JSON reader's own limit

struct Input {
  std::string text;
  std::string error;     // empty on success: "is a directory", "is larger than 16 MiB", ...
  bool invalid = false;  // the input itself is refused (too large, a directory): exit status 2, not 1
};

// '-' reads stdin.
Input read_input(const std::string& path);

}  // namespace memfit::cli
