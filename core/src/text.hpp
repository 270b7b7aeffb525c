// Number spelling for messages (views format sizes; the core only names numbers in errors).
#pragma once

#include <cstdint>
#include <string>

namespace memfit::detail {

// 1234567 → "1,234,567"
std::string group_digits(std::int64_t value);
// Shortest decimal that reads back as the same double: 0.85 → "0.85".
std::string plain_number(double value);

}  // namespace memfit::detail
