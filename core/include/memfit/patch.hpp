// Partial configurations ("patches"): a suggestion is one, a command-line flag writes one, the page
// applies one. One merge rule for all of them.
#pragma once

#include <string_view>

#include "memfit/config.hpp"
#include "memfit/json.hpp"

namespace memfit {

// Overlays `patch` onto `base`, object by object: objects merge key by key; any other value
// (a number, a list, null) replaces what was there.
void merge_patch(Json& base, const Json& patch);

// Sets the value at a dotted path ("training.finetune.lora_rank"), creating objects on the way.
void set_path(Json& root, std::string_view path, Json value);

// The configuration with `patch` applied, read back through the one configuration reader, so a
// patched configuration is validated exactly as a typed one.
ConfigParse apply_patch(const Config& config, const Json& patch);

}  // namespace memfit
