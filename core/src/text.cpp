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

namespace {

// Values people type (0.85, 0.1, 2.5) have few decimals: print those with integer arithmetic.
// musl's printf formats doubles through long double, which wasm emulates in software (~tens of
// µs per number); this path keeps the page's per-keystroke JSON fast.
bool short_decimal(double value, std::string& out) {
  constexpr double kScale = 1e9;
  if (!(value > -1e9 && value < 1e9)) return false;
  const double scaled = value * kScale;
  const double rounded = scaled < 0 ? -static_cast<double>(static_cast<std::int64_t>(-scaled + 0.5))
                                    : static_cast<double>(static_cast<std::int64_t>(scaled + 0.5));
  if (rounded / kScale != value) return false;  // not exactly a 9-decimal number
  std::int64_t units = static_cast<std::int64_t>(rounded);
  const bool negative = units < 0;
  if (negative) units = -units;
  char fraction[10] = {};
  std::int64_t rest = units % 1'000'000'000;
  for (int i = 8; i >= 0; --i, rest /= 10) fraction[i] = static_cast<char>('0' + rest % 10);
  int length = 9;
  while (length > 0 && fraction[length - 1] == '0') --length;
  out = (negative ? "-" : "") + std::to_string(units / 1'000'000'000);
  if (length > 0) out += "." + std::string(fraction, static_cast<std::size_t>(length));
  return true;
}

}  // namespace

std::string plain_number(double value) {
  if (std::string fast; short_decimal(value, fast)) return fast;
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
