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
  // 15 significant digits read back exactly for every value a person types (0.85, 0.1); the
  // rest need 17.
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", value);
  if (std::strtod(buf, nullptr) != value) std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

}  // namespace memfit::detail
