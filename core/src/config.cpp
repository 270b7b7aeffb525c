#include "memfit/config.hpp"

#include <cctype>
#include <cmath>
#include <optional>
#include <string_view>

#include "config_internal.hpp"
#include "field_table.hpp"
#include "memfit/gpus.hpp"
#include "memfit/implementation.hpp"
#include "memfit/presets.hpp"
#include "peft.hpp"
#include "text.hpp"

namespace memfit {

namespace {

using detail::Field;
using detail::FieldKind;

// A value as a message quotes it; a long string is named by its length instead of echoed whole.
constexpr std::size_t kMaxEchoedChars = 80;

std::string describe(const Json& value) {
  switch (value.kind()) {
    case Json::Kind::kString:
      if (value.as_string().size() > kMaxEchoedChars) {
        return "a string of " + detail::group_digits(static_cast<std::int64_t>(value.as_string().size())) + " bytes";
      }
      return "\"" + value.as_string() + "\"";
    case Json::Kind::kNumber: return value.dump();
    case Json::Kind::kBool: return value.as_bool() ? "true" : "false";
    default: return Json::kind_name(value.kind());
  }
}

std::string choices_text(const std::vector<const char*>& choices) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i) out += i + 1 == choices.size() ? " or " : ", ";
    out += choices[i];
  }
  return out;
}

using detail::int_range_text;
using detail::real_range_text;

// Each reader stores a valid value and returns "", or returns what is wrong with it.
std::string read_int(const Field& f, const Json& value, Config& config) {
  const auto v = value.as_exact_integer();
  if (!v) return "must be " + int_range_text(f) + "; got " + describe(value);
  if (*v < f.min_int || *v > f.max_int) return "must be " + int_range_text(f) + "; got " + detail::group_digits(*v);
  f.int_ref(config) = *v;
  return "";
}

std::string read_real(const Field& f, const Json& value, Config& config) {
  if (!value.is_number() || !std::isfinite(value.as_double())) {
    return "must be " + real_range_text(f) + "; got " + describe(value);
  }
  const double v = value.as_double();
  if (v < f.min_real || v > f.max_real) {
    // A whole number is echoed as the integer fields echo theirs (1,000,000,000,000).
    const bool whole = std::fabs(v) < 9.0e15 && v == std::floor(v);
    return "must be " + real_range_text(f) + "; got " +
           (whole ? detail::group_digits(static_cast<std::int64_t>(v)) : detail::plain_number(v));
  }
  f.real_ref(config) = v;
  return "";
}

std::string read_bool(const Field& f, const Json& value, Config& config) {
  if (!value.is_bool()) return "must be true or false; got " + describe(value);
  f.bool_ref(config) = value.as_bool();
  return "";
}

std::string read_string(const Field& f, const Json& value, Config& config) {
  if (!value.is_string() || value.as_string().size() > 200) {
    return "must be a string of at most 200 characters; got " + describe(value);
  }
  f.string_ref(config) = value.as_string();
  return "";
}

// ASCII letters in lower case (ids and choices are ASCII): what the hints below compare.
std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// What a refused enum value most likely meant: a choice spelled in other letter case ("LoRA"), or
// a name other tools give to a combination of memfit's settings (QLoRA: LoRA over a 4-bit base).
std::string enum_hint(const Field& f, const Json& value) {
  if (!value.is_string()) return "";
  const std::string v = lower(value.as_string());
  if (std::string(f.path) == "training.finetune.method" && v == "qlora") {
    return " (QLoRA is method \"lora\" with training.finetune.base_bits 4)";
  }
  for (const char* choice : f.choices) {
    if (v == lower(choice)) return " (did you mean \"" + std::string(choice) + "\"?)";
  }
  return "";
}

// The preset a refused id most likely meant: its id in other letter case ("llama-3-70B"), or the
// Hugging Face model its architecture comes from ("meta-llama/Meta-Llama-3-8B", the source's first
// word).
std::string preset_hint(const Json& value) {
  if (!value.is_string()) return "";
  const std::string v = lower(value.as_string());
  for (const Preset& p : presets()) {
    const std::string source(p.source);
    if (v == lower(p.id) || (v.find('/') != std::string::npos && lower(source.substr(0, source.find(' '))) == v)) {
      return " (did you mean \"" + std::string(p.id) + "\"?)";
    }
  }
  return "";
}

std::string read_enum(const Field& f, const Json& value, Config& config) {
  // A choice spelled as a number ("1", "2") is also read from the JSON number (fsdp_version: 2).
  const std::optional<std::int64_t> number = value.is_number() ? value.as_exact_integer() : std::nullopt;
  const std::string text = value.is_string() ? value.as_string() : number ? std::to_string(*number) : std::string();
  for (std::size_t i = 0; (value.is_string() || number) && i < f.choices.size(); ++i) {
    if (text == f.choices[i]) {
      f.enum_set(config, static_cast<int>(i));
      return "";
    }
  }
  return "must be one of " + choices_text(f.choices) + "; got " + describe(value) + enum_hint(f, value);
}

// A list of names from the field's choices, stored as a bit set.
std::string read_targets(const Field& f, const Json& value, Config& config) {
  unsigned bits = 0;
  bool ok = value.is_array();
  for (std::size_t n = 0; ok && n < value.items().size(); ++n) {
    const Json& item = value.items()[n];
    bool known = false;
    for (std::size_t i = 0; item.is_string() && i < f.choices.size(); ++i) {
      if (item.as_string() == f.choices[i]) {
        bits |= 1u << i;
        known = true;
      }
    }
    ok = known;
  }
  if (!ok) {
    return "must be a list of module names from " + choices_text(f.choices) + "; got " +
           (value.is_array() ? value.dump() : describe(value));
  }
  f.targets_ref(config) = bits;
  return "";
}

// Reads one field's JSON value into the configuration, or explains why it cannot.
void read_field(const Field& f, const Json& value, Config& config, std::vector<Issue>& errors) {
  std::string error;
  switch (f.kind) {
    case FieldKind::kInt: error = read_int(f, value, config); break;
    case FieldKind::kReal: error = read_real(f, value, config); break;
    case FieldKind::kBool: error = read_bool(f, value, config); break;
    case FieldKind::kString: error = read_string(f, value, config); break;
    case FieldKind::kEnum: error = read_enum(f, value, config); break;
    case FieldKind::kTargets: error = read_targets(f, value, config); break;
  }
  if (!error.empty()) errors.push_back({f.path, std::move(error)});
}

Json write_field(const Field& f, const Config& config) {
  Config& c = const_cast<Config&>(config);  // accessors are shared by reader and writer
  switch (f.kind) {
    case FieldKind::kInt: return Json::integer(f.int_ref(c));
    case FieldKind::kReal: return Json::number(f.real_ref(c));
    case FieldKind::kBool: return Json::boolean(f.bool_ref(c));
    case FieldKind::kString: return Json::string(f.string_ref(c));
    case FieldKind::kEnum: return Json::string(f.choices[static_cast<std::size_t>(f.enum_get(c))]);
    case FieldKind::kTargets: {
      Json list = Json::array();
      for (std::size_t i = 0; i < f.choices.size(); ++i) {
        if (f.targets_ref(c) & (1u << i)) list.push(Json::string(f.choices[i]));
      }
      return list;
    }
  }
  return Json();
}

// "training.finetune.lora_rank" → the object path and the last key.
const Json* find_path(const Json& root, std::string_view path) {
  const Json* node = &root;
  while (node) {
    const std::size_t dot = path.find('.');
    if (dot == std::string_view::npos) return node->find(path);
    node = node->find(path.substr(0, dot));
    path.remove_prefix(dot + 1);
  }
  return nullptr;
}

bool is_known_path(const std::string& path) {
  for (const Field& f : detail::config_fields()) {
    if (path == f.path) return true;
  }
  return path == "training.finetune";
}

// Unknown keys are named, the first kMaxNamedUnknown of them; the rest are counted, so a document
// of a million stray keys does not become a million warnings.
constexpr std::size_t kMaxNamedUnknown = 20;

void collect_unknown(const Json& node, const std::string& prefix, std::vector<Issue>& warnings, std::int64_t& more) {
  for (const auto& [key, value] : node.members()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object() && (path == "model" || path == "training" || path == "parallel" ||
                              path == "hardware" || path == "training.finetune")) {
      collect_unknown(value, path, warnings, more);
    } else if (!is_known_path(path) && path != "version") {
      if (warnings.size() < kMaxNamedUnknown && path.size() <= kMaxEchoedChars) {
        warnings.push_back({path, "is not a memfit field and was ignored"});
      } else {
        ++more;
      }
    }
  }
}

void collect_unknown(const Json& root, std::vector<Issue>& warnings) {
  std::int64_t more = 0;
  collect_unknown(root, "", warnings, more);
  if (more > 0) {
    warnings.push_back({"(configuration)", detail::group_digits(more) + " more keys are not memfit fields and were ignored"});
  }
}


}  // namespace

void detail::apply_fields(const Json& root, Config& config, std::vector<Issue>& errors) {
  for (const Field& f : detail::config_fields()) {
    // null means "not given", as Hugging Face configs write it (head_dim: null).
    const Json* value = find_path(root, f.path);
    if (value && !value->is_null()) read_field(f, *value, config, errors);
  }
}

Config default_config() {
  Config config;
  config.model = *preset_model("llama-3-8b");
  return config;
}

ConfigParse parse_config(const Json& json) {
  ConfigParse out;
  out.config = default_config();
  if (!json.is_object()) {
    out.errors.push_back({"(configuration)", "must be a JSON object; got " + std::string(Json::kind_name(json.kind()))});
    return out;
  }
  for (const char* section : {"model", "training", "parallel", "hardware"}) {
    const Json* node = json.find(section);
    if (node && !node->is_object()) {
      out.errors.push_back({section, "must be an object; got " + std::string(Json::kind_name(node->kind()))});
      return out;
    }
  }
  if (const Json* finetune = find_path(json, "training.finetune"); finetune && !finetune->is_object()) {
    out.errors.push_back({"training.finetune", "must be an object; got " + std::string(Json::kind_name(finetune->kind()))});
    return out;
  }

  // A preset supplies the model; explicit fields then override it. A model described without a
  // preset starts from the plain defaults, not from the default preset's hidden details.
  const Json* preset = find_path(json, "model.preset");
  const bool no_preset = !preset || preset->is_null() || (preset->is_string() && preset->as_string().empty());
  if (json.find("model") && no_preset) out.config.model = ModelSpec{};
  if (preset && !(preset->is_string() && preset->as_string().empty())) {
    const auto model = preset->is_string() ? preset_model(preset->as_string()) : std::nullopt;
    if (!model) {
      out.errors.push_back({"model.preset", "must be the id of a preset (see `memfit --list-presets`); got " +
                                                describe(*preset) + preset_hint(*preset)});
      return out;
    }
    out.config.model = *model;
  }
  detail::apply_fields(json, out.config, out.errors);
  // Any common spelling of a card ("A100 80GB PCIe", "rtx4090") is read as its id.
  if (const Gpu* gpu = find_gpu(out.config.hardware.gpu)) out.config.hardware.gpu = gpu->id;
  // LitGPT computes soft-capped scores itself, not through SDPA (litgpt/model.py
  // scaled_dot_product_attention: "with softcapping we cannot use SDPA").
  if (out.config.training.implementation.framework == Framework::kLitgpt && out.config.model.attention_softcap &&
      !find_path(json, "training.attention")) {
    out.config.training.implementation.attention = AttentionImpl::kEager;
  }
  // The default sequence length (2048) is longer than some models' learned position tables
  // (GPT-2: 1024, BERT: 512); unless the user chose a length, use the longest the model takes.
  // Prompt tuning and P-tuning prepend their virtual tokens to every sequence (peft.cpp), which
  // the table must hold as well.
  ModelSpec& m = out.config.model;
  const Finetune& f = out.config.training.finetune;
  // (Prefix tuning's and Cartridge's cached positions come first as well, in a decoder-only model.)
  const bool prompts = prepends_virtual_tokens(f.method) ||
                       (prefixes_keys_values(f.method) && !out.config.model.is_encoder_decoder);
  const std::int64_t virtual_tokens = prompts ? std::max<std::int64_t>(0, f.num_virtual_tokens) : 0;
  // (Virtual tokens that fill the whole table are refused on their own, peft.cpp.)
  const std::int64_t room = m.max_position_embeddings - virtual_tokens;
  const std::int64_t longest = room >= 1 ? room : m.max_position_embeddings;
  if (!find_path(json, "training.seq_len") && m.position_embedding == PositionKind::kLearned &&
      out.config.training.seq_len > longest) {
    out.config.training.seq_len = longest;
    out.warnings.push_back({"training.seq_len", "not given; set to model.max_position_embeddings (" +
                                                    detail::group_digits(m.max_position_embeddings) + ")" +
                                                    (virtual_tokens && room >= 1 ? " less the " + detail::group_digits(virtual_tokens) +
                                                                          " virtual tokens"
                                                                    : std::string())});
  }
  collect_unknown(json, out.warnings);
  if (out.errors.empty()) out.errors = validate(out.config);
  return out;
}

ConfigParse parse_config_text(std::string_view text) {
  JsonParseResult parsed = parse_json(text);
  if (!parsed.value) {
    ConfigParse out;
    out.config = default_config();
    out.errors.push_back({"(configuration)", json_parse_problem(parsed)});
    return out;
  }
  return parse_config(*parsed.value);
}

Json config_to_json(const Config& config) {
  Json root = Json::object();
  for (const Field& f : detail::config_fields()) {
    std::string_view path = f.path;
    Json* node = &root;
    while (true) {
      const std::size_t dot = path.find('.');
      if (dot == std::string_view::npos) break;
      const std::string key(path.substr(0, dot));
      Json* child = const_cast<Json*>(node->find(key));
      node = child ? child : &node->set(key, Json::object());
      path.remove_prefix(dot + 1);
    }
    node->set(std::string(path), write_field(f, config));
  }
  return root;
}

namespace {

// {"field": F, "in": [values]}: the condition that F holds one of the values.
Json when_in(const char* field, Json values) {
  Json j = Json::object();
  j.set("field", Json::string(field));
  j.set("in", std::move(values));
  return j;
}

Json when_true(const char* field) {
  Json yes = Json::array();
  yes.push(Json::boolean(true));
  return when_in(field, std::move(yes));
}

Json when_at_least(const char* field, std::int64_t min) {
  Json j = Json::object();
  j.set("field", Json::string(field));
  j.set("min", Json::integer(min));
  return j;
}

Json spellings(std::initializer_list<const char*> names) {
  Json list = Json::array();
  for (const char* n : names) list.push(Json::string(n));
  return list;
}

Json integers(std::initializer_list<std::int64_t> values) {
  Json list = Json::array();
  for (std::int64_t v : values) list.push(Json::integer(v));
  return list;
}

// The choices of an enum field `path` for which `holds` is true, by their spelling.
template <class Enum>
Json choices_where(const char* path, bool (*holds)(Enum)) {
  Json list = Json::array();
  const detail::Field& f = *detail::find_field(path);
  for (std::size_t i = 0; i < f.choices.size(); ++i) {
    if (holds(static_cast<Enum>(i))) list.push(Json::string(f.choices[i]));
  }
  return list;
}

// The fine-tuning methods for which `uses` holds, and the frameworks for which `runs` does.
Json methods_where(bool (*uses)(FinetuneMethod)) { return choices_where("training.finetune.method", uses); }
Json frameworks_where(bool (*runs)(Framework)) { return choices_where("training.framework", runs); }

bool any_peft(FinetuneMethod m) { return m != FinetuneMethod::kFull; }
// Stacks running transformers' rotary code, whose cos and sin are computed each forward and saved.
bool saves_rotary_tables(Framework f) { return implementation_profile(f).rotary_saved; }

bool fsdp1_by_default(Framework f) { return runs_torch_data_parallel(f) && !runs_fsdp2(f); }
bool fsdp2_by_default(Framework f) { return runs_torch_data_parallel(f) && runs_fsdp2(f); }
// FSDP1 stacks whose units mix a PEFT method's adapters with the frozen base (LitGPT's blocks).
bool fsdp1_mixes_adapters(Framework f) { return runs_torch_data_parallel(f) && !fsdp1_wraps_adapters_apart(f); }
// Torch FSDP1 stacks that read parallel.fsdp_use_orig_params (LitGPT's always sets it).
bool reads_use_orig_params(Framework f) { return runs_torch_data_parallel(f) && f != Framework::kLitgpt; }
// PEFT methods whose trainable tensors sit inside the wrapped layer, in its block's unit.
bool peft_keeps_parameter_dicts(FinetuneMethod m) { return any_peft(m) && !peft_trains_leaf_modules(m); }

// {"any_of": [conditions]}: at least one of them holds.
Json any_of(std::initializer_list<Json> conditions) {
  Json list = Json::array();
  for (const Json& c : conditions) list.push(c);
  Json j = Json::object();
  j.set("any_of", std::move(list));
  return j;
}

// When the estimate reads a field: every condition listed holds (a condition {"any_of": [...]}
// holds when one of its conditions does). Under other settings the field is valid but changes
// nothing (the page shows it as not applying). Fields not listed always apply.
Json applicability(std::string_view path) {
  Json all = Json::array();
  // Sharded by torch's FSDP (not DeepSpeed's, Megatron's or llm.c's engine), and which version:
  // parallel.fsdp_version, or under auto the framework's own (runs_fsdp2).
  const auto torch_fsdp = [&](Json stages) {
    all.push(when_in("parallel.zero_stage", std::move(stages)));
    all.push(when_in("training.framework", frameworks_where(runs_torch_data_parallel)));
  };
  const auto fsdp_version = [&](const char* version, bool (*by_default)(Framework)) {
    all.push(when_in("parallel.fsdp_version", spellings({"auto", version})));
    all.push(any_of({when_in("parallel.fsdp_version", spellings({version})),
                     when_in("training.framework", frameworks_where(by_default))}));
  };
  const auto method = [](std::initializer_list<const char*> names) {
    return when_in("training.finetune.method", spellings(names));
  };
  const auto methods = [](bool (*uses)(FinetuneMethod)) {
    return when_in("training.finetune.method", methods_where(uses));
  };
  // A vision tower's sizes, under the towers that read them.
  const auto towers = [&](std::initializer_list<const char*> names) { all.push(when_in("model.vision_type", spellings(names))); };
  if (path == "model.vision_depth" || path == "model.vision_hidden_size" || path == "model.vision_intermediate_size" ||
      path == "model.vision_patch_size" || path == "model.vision_in_channels") {
    towers({"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "gemma3", "llava", "mistral3", "paligemma"});
  } else if (path == "model.vision_out_hidden_size") {
    towers({"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "paligemma"});  // PaliGemma's projection_dim
  } else if (path == "model.vision_temporal_patch_size") {
    towers({"qwen2_vl", "qwen2_5_vl", "qwen3_vl"});
  } else if (path == "model.vision_spatial_merge_size") {
    towers({"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "mistral3"});
  } else if (path == "model.vision_num_position_embeddings") {
    towers({"qwen3_vl", "gemma3", "llava", "paligemma"});
  } else if (path == "model.vision_num_heads" || path == "training.images_per_sample") {
    towers({"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "gemma3", "llava", "mistral3"});
  } else if (path == "training.image_patches") {
    towers({"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "gemma3", "llava", "mistral3"});
    all.push(when_at_least("training.images_per_sample", 1));
  } else if (path == "model.vision_feature_layer") {
    towers({"llava", "mistral3"});
  } else if (path == "model.vision_tokens_per_image") {
    towers({"gemma3"});
  } else if (path == "model.vision_deepstack_layers") {
    towers({"qwen3_vl"});
  } else if (path == "model.vision_use_head") {
    towers({"gemma3", "llava", "paligemma"});  // SigLIP's: Gemma 3's, PaliGemma's, or LLaVA's over SigLIP
  } else if (path == "model.vision_projector_bias") {
    towers({"llava", "mistral3"});
  } else if (path == "model.vision_encoder") {
    towers({"llava"});
  } else if (path == "training.finetune.train_vision") {
    towers({"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "gemma3", "llava", "mistral3", "paligemma"});
    all.push(when_in("training.finetune.method", spellings({"full"})));
  } else if (path == "training.galore_rank" || path == "training.galore_update_interval") {
    all.push(when_in("training.optimizer", spellings({"galore_adamw", "galore_adamw_8bit", "apollo"})));
  } else if (path == "training.max_preconditioner_dim") {
    all.push(when_in("training.optimizer", spellings({"shampoo", "soap"})));
  } else if (path == "training.finetune.lora_rank" || path == "training.finetune.use_rslora") {
    all.push(methods(uses_rank_method));
  } else if (path == "training.finetune.lora_targets") {
    all.push(methods(adapts_linears_method));
  } else if (path == "training.finetune.lora_dropout") {  // ShadowPEFT's shadow_dropout too
    all.push(methods([](FinetuneMethod m) { return adapts_linears_method(m) || m == FinetuneMethod::kShadow; }));
  } else if (path == "training.finetune.trainable_layers") {
    all.push(when_in("training.finetune.method", spellings({"full"})));
  } else if (path == "training.finetune.lowest_trainable_layer" || path == "training.finetune.train_embeddings" ||
             path == "training.finetune.train_head") {
    all.push(when_in("training.finetune.method", spellings({"full"})));
    all.push(when_at_least("training.finetune.trainable_layers", 0));
  } else if (path == "training.finetune.base_bits" || path == "training.finetune.modules_to_save" ||
             path == "training.lora_base_dtype" || path == "training.lora_adapter_dtype") {
    all.push(methods(any_peft));
  } else if (path == "training.finetune.quant_method" || path == "training.finetune.prepare_kbit") {
    all.push(methods(any_peft));
    all.push(when_in("training.finetune.base_bits", integers({4, 8})));
  } else if (path == "training.finetune.quant_type" || path == "training.finetune.double_quant" ||
             path == "training.finetune.quant_block_size" || path == "training.finetune.bnb_keeps_input") {
    all.push(methods(any_peft));
    all.push(when_in("training.finetune.base_bits", integers({4})));
    all.push(when_in("training.finetune.quant_method", spellings({"bitsandbytes"})));
  } else if (path == "training.finetune.quant_storage") {
    // Read where accelerate shards the 4-bit base with torch's FSDP (fsdp2_leaves_4bit_whole;
    // FSDP1 refuses uint8).
    all.push(methods(any_peft));
    all.push(when_in("training.finetune.base_bits", integers({4})));
    all.push(when_in("training.finetune.quant_method", spellings({"bitsandbytes"})));
    all.push(when_in("parallel.zero_stage", integers({2, 3})));
    all.push(when_in("training.framework", frameworks_where(runs_accelerate)));
    // FSDP2 leaves weights whole only where ZeRO-3 shards them; FSDP1 refuses uint8 at 2 as at 3.
    all.push(any_of({when_in("parallel.zero_stage", integers({3})), when_in("parallel.fsdp_version", spellings({"auto", "1"}))}));
  } else if (path == "training.finetune.stable_embedding") {
    all.push(methods(any_peft));
    all.push(when_in("training.finetune.base_bits", integers({4, 8})));
    all.push(when_in("training.finetune.quant_method", spellings({"bitsandbytes"})));
  } else if (path == "training.finetune.nf4_whole_tensor") {
    all.push(methods(any_peft));
    all.push(when_in("training.finetune.base_bits", integers({4})));
  } else if (path == "training.finetune.gptq_kernel" || path == "training.finetune.gptq_group_size") {
    all.push(methods(any_peft));
    all.push(when_in("training.finetune.base_bits", integers({4, 8})));
    all.push(when_in("training.finetune.quant_method", spellings({"gptq"})));
  } else if (path == "training.finetune.num_virtual_tokens") {
    all.push(method({"prompt_tuning", "prefix_tuning", "p_tuning", "multitask_prompt_tuning", "cpt", "cartridge"}));
  } else if (path == "training.finetune.encoder_hidden_size") {
    all.push(method({"prefix_tuning", "p_tuning"}));
  } else if (path == "training.finetune.prefix_projection") {
    all.push(method({"prefix_tuning"}));
  } else if (path == "training.finetune.encoder_reparameterization_type") {
    all.push(method({"p_tuning"}));
  } else if (path == "training.finetune.adapter_len" || path == "training.finetune.adapter_start_layer") {
    all.push(method({"llama_adapter", "llama_adapter_v2"}));
  } else if (path == "training.finetune.block_size") {
    all.push(method({"oft", "boft", "c3a"}));
  } else if (path == "training.finetune.boft_n_butterfly_factor") {
    all.push(method({"boft"}));
  } else if (path == "training.finetune.n_frequency") {
    all.push(method({"fourierft", "waveft"}));
  } else if (path == "training.finetune.feedforward_modules") {
    all.push(when_in("training.finetune.method", spellings({"ia3"})));
  } else if (path == "training.finetune.decompose_factor") {
    all.push(when_in("training.finetune.method", spellings({"lokr"})));
  } else if (path == "training.finetune.loaded_before_wrapping") {
    all.push(when_in("training.finetune.method", spellings({"boft", "psoft", "frod"})));
  } else if (path == "training.finetune.num_adapters") {
    all.push(method({"xlora"}));
  } else if (path == "training.finetune.num_trainable_tokens") {
    all.push(method({"trainable_tokens"}));
  } else if (path == "parallel.virtual_stages" || path == "parallel.pipeline_schedule") {
    all.push(when_at_least("parallel.pipeline", 2));
  } else if (path == "parallel.shard_degree") {
    all.push(when_at_least("parallel.zero_stage", 1));
  } else if (path == "parallel.overlap_comm") {
    all.push(when_in("parallel.zero_stage", integers({2})));
  } else if (path == "parallel.reduce_bucket_elements") {
    all.push(when_in("parallel.zero_stage", integers({2, 3})));
  } else if (path == "parallel.zero3_max_reuse_distance" || path == "parallel.zero_sub_group_size" ||
             path == "parallel.zero_hpz_partition_size" ||
             path == "parallel.zero_quantized_weights" || path == "parallel.zero_quantized_gradients") {
    all.push(when_in("parallel.zero_stage", integers({3})));
    all.push(when_in("training.framework", spellings({"deepspeed"})));
  } else if (path == "parallel.float8_all_gather") {
    all.push(when_in("training.float8", spellings({"tensorwise"})));
    torch_fsdp(integers({3}));
    fsdp_version("2", fsdp2_by_default);  // torchao's FSDP2 hook
  } else if (path == "training.target_len") {
    all.push(when_true("model.is_encoder_decoder"));
  } else if (path == "training.checkpointed_layers" || path == "training.checkpoint_impl") {
    all.push(when_in("training.checkpointing", spellings({"full"})));
  } else if (path == "training.weight_quant_group_size") {
    all.push(when_in("training.weight_quant", spellings({"int8"})));
  } else if (path == "training.galore_proj_quant") {
    all.push(when_in("training.optimizer", spellings({"galore_adamw", "galore_adamw_8bit"})));
  } else if (path == "parallel.fsdp_use_orig_params") {
    all.push(when_in("parallel.zero_stage", integers({2, 3})));  // FULL_SHARD and SHARD_GRAD_OP flatten alike
    all.push(when_in("training.framework", frameworks_where(reads_use_orig_params)));  // fsdp1_uses_orig_params
    fsdp_version("1", fsdp1_by_default);  // FSDP1's option
    // A full fine-tune's optimizer works on the views; a PEFT method pays for frozen gradients only
    // where its units mix (fsdp1_keeps_adapters_apart: the framework's policy and the method).
    all.push(any_of({when_in("training.finetune.method", spellings({"full"})),
                     when_in("training.framework", frameworks_where(fsdp1_mixes_adapters)),
                     when_in("training.finetune.method", methods_where(peft_keeps_parameter_dicts))}));
  } else if (path == "parallel.async_tp") {
    all.push(when_at_least("parallel.tensor", 2));
  } else if (path == "parallel.fsdp_version") {
    torch_fsdp(integers({2, 3}));
  } else if (path == "parallel.fsdp_limit_all_gathers") {
    torch_fsdp(integers({3}));
    fsdp_version("1", fsdp1_by_default);  // FSDP1's option
  } else if (path == "parallel.ddp_bucket_view") {
    all.push(when_in("parallel.zero_stage", integers({0})));
  } else if (path == "parallel.reshard_after_forward") {
    all.push(when_in("parallel.zero_stage", integers({3})));
  } else if (path == "parallel.gradient_sync") {
    all.push(when_in("parallel.zero_stage", integers({2, 3})));
  } else if (path == "training.moe_dispatch") {
    all.push(when_at_least("model.num_experts", 1));
  } else if (path == "model.rotary_table_dtype") {
    all.push(when_true("model.rotary_per_layer"));
    all.push(when_in("training.framework", frameworks_where(saves_rotary_tables)));
  } else if (path == "model.rotary_dim") {
    all.push(when_in("model.position_embedding", spellings({"rotary"})));
    all.push(when_in("training.framework", frameworks_where(saves_rotary_tables)));
  } else if (path == "training.linear_attention_kernel") {
    all.push(when_at_least("model.linear_attention_layers", 1));
  } else if (path == "training.finetune.target_parameters") {
    all.push(when_at_least("model.num_experts", 1));
    all.push(when_in("training.finetune.method", spellings({"lora", "lora_fa"})));
    all.push(when_in("training.moe_dispatch", spellings({"auto", "grouped"})));
  }
  return all;
}

// When a choice of a list field names something the model has: {choice: [conditions]} as in
// applicability, for the choices that need one. The core refuses such a choice where the condition
// fails (peft.cpp check_targets, validate.cpp); the page leaves it out of the offer unless chosen.
Json choice_applicability(std::string_view path) {
  Json out = Json::object();
  if (path == "training.finetune.lora_targets") {
    Json qkv = Json::array();
    qkv.push(when_in("model.attention_type", spellings({"standard", "disentangled"})));
    out.set("qkv", std::move(qkv));
    Json router = Json::array();
    router.push(when_at_least("model.num_experts", 1));
    out.set("router", std::move(router));
    Json linear_attn = Json::array();
    linear_attn.push(when_at_least("model.linear_attention_layers", 1));
    out.set("linear_attn", std::move(linear_attn));
  }
  return out;
}

}  // namespace

Json config_schema() {
  // Constant data: built once.
  static const Json cached = [] {
    Json list = Json::array();
    const Config defaults = default_config();
    for (const Field& f : detail::config_fields()) {
      Json entry = Json::object();
      entry.set("field", Json::string(f.path));
      static constexpr const char* kKindNames[] = {"integer", "boolean", "number", "choice", "string", "list"};
      entry.set("kind", Json::string(kKindNames[static_cast<int>(f.kind)]));
      entry.set("default", write_field(f, defaults));
      if (f.kind == FieldKind::kInt) {
        entry.set("min", Json::integer(f.min_int));
        entry.set("max", Json::integer(f.max_int));
      } else if (f.kind == FieldKind::kReal) {
        entry.set("min", Json::number(f.min_real));
        entry.set("max", Json::number(f.max_real));
      }
      if (!f.choices.empty()) {
        Json choices = Json::array();
        for (const char* c : f.choices) choices.push(Json::string(c));
        entry.set("choices", std::move(choices));
      }
      entry.set("help", Json::string(f.help));
      Json applies = applicability(f.path);
      if (!applies.items().empty()) entry.set("applies_when", std::move(applies));
      Json choice_applies = choice_applicability(f.path);
      if (!choice_applies.members().empty()) entry.set("choices_apply_when", std::move(choice_applies));
      list.push(std::move(entry));
    }
    return list;
  }();
  return cached;
}

const char* to_string(Precision p) {
  return detail::find_field("training.precision")->choices[static_cast<std::size_t>(p)];
}
const char* to_string(Optimizer o) {
  return detail::find_field("training.optimizer")->choices[static_cast<std::size_t>(o)];
}
const char* to_string(FinetuneMethod m) {
  return detail::find_field("training.finetune.method")->choices[static_cast<std::size_t>(m)];
}
const char* to_string(Checkpointing c) {
  return detail::find_field("training.checkpointing")->choices[static_cast<std::size_t>(c)];
}
const char* to_string(Goal g) {
  return detail::find_field("training.goal")->choices[static_cast<std::size_t>(g)];
}

Goal resolved_goal(const Training& t) {
  if (t.goal != Goal::kAuto) return t.goal;
  return t.finetune.method != FinetuneMethod::kFull ? Goal::kPeft : Goal::kFullFinetune;
}

}  // namespace memfit
