// Hugging Face config.json import: maps each supported `model_type` to the model description,
// filling in the family's implicit structure (which projections have biases, how many norms a
// block has, whether the head is tied by default, ...).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "memfit/config.hpp"

namespace memfit {

struct HfImport {
  ModelSpec model;
  // What transformers' class for this model_type does where it differs from the `hf` profile
  // (kAuto elsewhere). model_type picks the class in transformers (AutoModel), so the importer
  // reads it here once; the configuration then carries the values as explicit knobs.
  Implementation reference;
  std::vector<Issue> errors;    // fields named by their config.json key
  std::vector<Issue> warnings;  // e.g. DeepSeek's multi-token-prediction layer is not counted
};

HfImport import_hf_config(const Json& config_json);
HfImport import_hf_config_text(std::string_view text);

// The supported model_type values, comma-separated (for messages and documentation).
const char* supported_hf_model_types();

}  // namespace memfit
