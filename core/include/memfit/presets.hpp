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
  const char* model;   // JSON object text
  // kMemfit presets: the implementation knobs of the code the preset reproduces (JSON object
  // text, e.g. {"softmax_dtype":"compute"}), applied under the hf framework unless given. Imported
  // presets take them from the importer (HfImport::reference).
  const char* reference = nullptr;
};

const std::vector<Preset>& presets();
const Preset* find_preset(std::string_view id);
// The resolved model description of a preset (nullopt for an unknown id).
std::optional<ModelSpec> preset_model(std::string_view id);
// The implementation knobs of the preset's reference code (kAuto where it follows the profile).
Implementation preset_reference(std::string_view id);

}  // namespace memfit
