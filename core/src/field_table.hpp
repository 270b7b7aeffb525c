// The configuration's field table: one row per JSON field, with its range or choices and help.
// Private to the core; the public view of it is `config_schema()`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memfit/config.hpp"

namespace memfit::detail {

enum class FieldKind { kInt, kBool, kReal, kEnum, kString, kTargets };

struct Field {
  const char* path = "";  // JSON path, e.g. "training.seq_len"
  FieldKind kind = FieldKind::kInt;
  const char* help = "";
  std::int64_t min_int = 0, max_int = 0;
  double min_real = 0, max_real = 0;
  std::vector<const char*> choices;  // enum spellings in enum order; LoRA target names by bit
  std::int64_t& (*int_ref)(Config&) = nullptr;
  bool& (*bool_ref)(Config&) = nullptr;
  double& (*real_ref)(Config&) = nullptr;
  std::string& (*string_ref)(Config&) = nullptr;
  unsigned& (*targets_ref)(Config&) = nullptr;
  int (*enum_get)(const Config&) = nullptr;
  void (*enum_set)(Config&, int) = nullptr;
};

const std::vector<Field>& config_fields();
const Field* find_field(const char* path);

// "an integer from 1 to 1,000,000" / "a number from 0 to 0.99": a field's range in words.
std::string int_range_text(const Field& f);
std::string real_range_text(const Field& f);

}  // namespace memfit::detail
