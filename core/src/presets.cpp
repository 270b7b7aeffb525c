#include "memfit/presets.hpp"

#include "config_internal.hpp"
#include "memfit/hf_import.hpp"

namespace memfit {

namespace {

// The seeds' GPT-style shape (seed 001, count_parameters): learned positions, LayerNorm with bias
// (two per block and a final one), biased q/k/v/o and MLP projections, GELU MLP, untied head.
#define MF_SEED_GPT(vocab, hidden, layers, heads, ff, positions, nominal)                                    \
  "{\"model_type\":\"seed_gpt\",\"vocab_size\":" #vocab ",\"hidden_size\":" #hidden                         \
  ",\"num_hidden_layers\":" #layers ",\"num_attention_heads\":" #heads ",\"intermediate_size\":" #ff        \
  ",\"mlp\":\"plain\",\"hidden_act\":\"gelu\",\"norm\":\"layernorm\",\"norm_bias\":true,\"position_embedding\":\"learned\""          \
  ",\"max_position_embeddings\":" #positions ",\"tie_word_embeddings\":false,\"attention_bias\":true"       \
  ",\"mlp_bias\":true,\"norms_per_block\":2,\"final_norm\":true,\"residual_dropout\":true"                \
  ",\"nominal_parameter_count\":" #nominal "}"

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> table = {
      // The seeds' models, under the seeds' names (seeds/001: config, model_configs).
      {"seed-toy-70m", "Seeds' toy GPT (70.6M)", "Seeds", "seeds/001 `config` and SimpleTransformer", 70'640'640,
       PresetFormat::kMemfit, MF_SEED_GPT(50257, 512, 6, 8, 2048, 512, 0)},
      {"seed-gpt2-small", "GPT-2 Small (117M)", "Seeds", "seeds/001 model_configs (nominal 117e6); seeds/000", 0,
       PresetFormat::kMemfit, MF_SEED_GPT(50257, 768, 12, 12, 3072, 1024, 117000000)},
      {"seed-gpt2-large", "GPT-2 Large (774M)", "Seeds", "seeds/001 model_configs (nominal 774e6)", 0,
       PresetFormat::kMemfit, MF_SEED_GPT(50257, 1280, 36, 20, 5120, 1024, 774000000)},
      {"seed-llama-7b", "LLaMA-7B", "Seeds", "seeds/001 model_configs (nominal 7e9)", 0, PresetFormat::kMemfit,
       MF_SEED_GPT(32000, 4096, 32, 32, 11008, 2048, 7000000000)},
      {"seed-llama-13b", "LLaMA-13B", "Seeds", "seeds/001 model_configs (nominal 13e9)", 0, PresetFormat::kMemfit,
       MF_SEED_GPT(32000, 5120, 40, 40, 13824, 2048, 13000000000)},
      {"seed-llama-70b", "LLaMA-70B", "Seeds", "seeds/001 model_configs (nominal 70e9)", 0, PresetFormat::kMemfit,
       MF_SEED_GPT(32000, 8192, 80, 64, 28672, 2048, 70000000000)},
#include "presets_real.inc"
  };
  return table;
}

#undef MF_SEED_GPT

const Preset* find_preset(std::string_view id) {
  for (const Preset& p : presets()) {
    if (id == p.id) return &p;
  }
  return nullptr;
}

namespace {

// A preset resolved once: its model. (Its code's knobs follow from its model_type: class_reference.)
struct Resolved {
  std::optional<ModelSpec> model;
};

Resolved resolve_memfit(const Json& model_json) {
  Config config;  // struct defaults, not default_config(): that one is itself a preset
  std::vector<Issue> errors;
  Json root = Json::object();
  root.set("model", model_json);
  detail::apply_fields(root, config, errors);
  if (!errors.empty()) return {};
  return {config.model};
}

// Resolves one preset's JSON (memfit fields or an imported config.json).
Resolved resolve(const Preset* preset) {
  const JsonParseResult parsed = parse_json(preset->model);
  if (!parsed.value) return {};
  Resolved out;
  if (preset->format == PresetFormat::kHuggingFace) {
    HfImport imported = import_hf_config(*parsed.value);
    if (!imported.errors.empty()) return {};
    out = {imported.model};
  } else {
    out = resolve_memfit(*parsed.value);
    if (!out.model) return {};
  }
  out.model->preset = preset->id;
  return out;
}

// Presets are constant data: resolve them once (thread-safe static initialisation), so a
// configuration naming a preset costs a table lookup, not a JSON parse.
const Resolved* find_resolved(std::string_view id) {
  static const std::vector<Resolved> resolved = [] {
    std::vector<Resolved> all;
    for (const Preset& p : presets()) all.push_back(resolve(&p));
    return all;
  }();
  const std::vector<Preset>& table = presets();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (id == table[i].id) return &resolved[i];
  }
  return nullptr;
}

}  // namespace

std::optional<ModelSpec> preset_model(std::string_view id) {
  const Resolved* r = find_resolved(id);
  return r ? r->model : std::nullopt;
}


}  // namespace memfit
