#include "text.hpp"

#include <cstdio>
#include <cstdlib>

namespace memfit::detail {

std::string group_digits(std::int64_t value) {
  const bool negative = value < 0;
  // Work in unsigned so that INT64_MIN does not overflow when negated.
  std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  std::string digits = std::to_string(magnitude);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return negative ? "-" + out : out;
}

std::string plain_number(double value) {
  // The fewest significant digits that read back as the same double (libc++ 14, which
  // Emscripten 3.1.6 ships, has no floating-point std::to_chars).
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

}  // namespace memfit::detail
