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
  std::vector<Issue> errors;    // fields named by their config.json key
  std::vector<Issue> warnings;  // e.g. DeepSeek's multi-token-prediction layer is not counted
};

HfImport import_hf_config(const Json& config_json);
HfImport import_hf_config_text(std::string_view text);

// What transformers' class for a model_type does where it differs from the hf profile (kAuto
// elsewhere): eager attention where the class has no SDPA path, its norm's arithmetic, a softmax in
// the compute dtype, fused projections, ... It depends on the class alone: a configuration naming
// the model_type (a preset's, an imported config.json's, one typed in) gets it under the frameworks
// that run the class (resolve_implementation).
Implementation class_reference(std::string_view model_type);

// The supported model_type values, comma-separated (for messages and documentation).
const char* supported_hf_model_types();

// Whether transformers' class for a model_type the importer reads projects q, k and v with one
// module (GPT-2's c_attn, GPT-NeoX's and Falcon's query_key_value, Phi-3's qkv_proj): PEFT's
// target names reach a fused projection only there. Unknown for a model_type memfit does not read
// (remote code such as Qwen-1's, ChatGLM's or Baichuan's, described on a preset's shape).
enum class QkvModules { kUnknown, kFused, kSeparate };
QkvModules hf_qkv_modules(const std::string& model_type);

}  // namespace memfit
