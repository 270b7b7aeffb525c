// Model presets: one table used by the command line, the wasm module and the page.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "memfit/config.hpp"

namespace memfit {

enum class PresetFormat {
  kMemfit,       // `model` holds memfit model fields
  kHuggingFace,  // `model` holds the model's Hugging Face config.json keys (imported)
};

struct Preset {
  const char* id;
  const char* name;    // display name
  const char* family;  // picker group
  const char* source;  // where the architecture and the count come from
  std::int64_t published_parameter_count;  // 0 where the source states none (the seeds' models)
  PresetFormat format;
  const char* model;   // JSON object text (its model_type gives its code's knobs: class_reference)
};

const std::vector<Preset>& presets();
const Preset* find_preset(std::string_view id);
// The resolved model description of a preset (nullopt for an unknown id).
std::optional<ModelSpec> preset_model(std::string_view id);

}  // namespace memfit
