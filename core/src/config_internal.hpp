// Core-internal configuration helpers shared by config.cpp and presets.cpp.
#pragma once

#include <vector>

#include "memfit/config.hpp"

namespace memfit::detail {

// Reads every field present in `root` (an object with model/training/parallel/hardware
// sections) into `config`, type- and range-checking each one. Does not resolve presets.
void apply_fields(const Json& root, Config& config, std::vector<Issue>& errors);

}  // namespace memfit::detail
