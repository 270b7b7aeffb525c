// Helpers shared by the JSON-text API's files (core-internal).
#pragma once

#include <vector>

#include "memfit/config.hpp"

namespace memfit {

// {"ok": false, "errors": [...], "warnings": [...]}: every API answer's shape on failure.
Json failure_json(const std::vector<Issue>& errors, const std::vector<Issue>& warnings);

}  // namespace memfit
