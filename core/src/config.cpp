#include "memfit/config.hpp"

#include <cmath>
#include <string_view>

#include "config_internal.hpp"
#include "field_table.hpp"
#include "memfit/gpus.hpp"
#include "memfit/presets.hpp"
#include "text.hpp"

namespace memfit {

namespace {

using detail::Field;
using detail::FieldKind;

std::string describe(const Json& value) {
  switch (value.kind()) {
    case Json::Kind::kString: return "\"" + value.as_string() + "\"";
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

std::string int_range_text(const Field& f) {
  return "an integer from " + detail::group_digits(f.min_int) + " to " + detail::group_digits(f.max_int);
}

std::string real_range_text(const Field& f) {
  return "a number from " + detail::plain_number(f.min_real) + " to " + detail::plain_number(f.max_real);
}

// Reads one field's JSON value into the configuration, or explains why it cannot.
void read_field(const Field& f, const Json& value, Config& config, std::vector<Issue>& errors) {
  const std::string path = f.path;
  switch (f.kind) {
    case FieldKind::kInt: {
      const auto v = value.as_exact_integer();
      if (!v) {
        errors.push_back({path, "must be " + int_range_text(f) + "; got " + describe(value)});
        return;
      }
      if (*v < f.min_int || *v > f.max_int) {
        errors.push_back({path, "must be " + int_range_text(f) + "; got " + detail::group_digits(*v)});
        return;
      }
      f.int_ref(config) = *v;
      return;
    }
    case FieldKind::kReal: {
      if (!value.is_number() || !std::isfinite(value.as_double())) {
        errors.push_back({path, "must be " + real_range_text(f) + "; got " + describe(value)});
        return;
      }
      const double v = value.as_double();
      if (v < f.min_real || v > f.max_real) {
        errors.push_back({path, "must be " + real_range_text(f) + "; got " + detail::plain_number(v)});
        return;
      }
      f.real_ref(config) = v;
      return;
    }
    case FieldKind::kBool: {
      if (!value.is_bool()) {
        errors.push_back({path, "must be true or false; got " + describe(value)});
        return;
      }
      f.bool_ref(config) = value.as_bool();
      return;
    }
    case FieldKind::kString: {
      if (!value.is_string() || value.as_string().size() > 200) {
        errors.push_back({path, "must be a string of at most 200 characters; got " + describe(value)});
        return;
      }
      f.string_ref(config) = value.as_string();
      return;
    }
    case FieldKind::kEnum: {
      if (value.is_string()) {
        for (std::size_t i = 0; i < f.choices.size(); ++i) {
          if (value.as_string() == f.choices[i]) {
            f.enum_set(config, static_cast<int>(i));
            return;
          }
        }
      }
      errors.push_back({path, "must be one of " + choices_text(f.choices) + "; got " + describe(value)});
      return;
    }
    case FieldKind::kTargets: {
      unsigned bits = 0;
      bool ok = value.is_array();
      if (ok) {
        for (const Json& item : value.items()) {
          bool known = false;
          for (std::size_t i = 0; item.is_string() && i < f.choices.size(); ++i) {
            if (item.as_string() == f.choices[i]) {
              bits |= 1u << i;
              known = true;
            }
          }
          ok = ok && known;
        }
      }
      if (!ok) {
        errors.push_back({path, "must be a list of module names from " + choices_text(f.choices) +
                                    "; got " + (value.is_array() ? value.dump() : describe(value))});
        return;
      }
      f.targets_ref(config) = bits;
      return;
    }
  }
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

void collect_unknown(const Json& node, const std::string& prefix, std::vector<Issue>& warnings) {
  for (const auto& [key, value] : node.members()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object() && (path == "model" || path == "training" || path == "parallel" ||
                              path == "hardware" || path == "training.finetune")) {
      collect_unknown(value, path, warnings);
    } else if (!is_known_path(path) && path != "version") {
      warnings.push_back({path, "is not a memfit field and was ignored"});
    }
  }
}

// Under the hf framework a preset runs as its transformers class does: the class's implementation
// knobs (HfImport::reference) apply unless the configuration gives them.
void apply_preset_reference(const Json& json, const Implementation& reference, Config& config) {
  Implementation& impl = config.training.implementation;
  if (impl.framework != Framework::kHf) return;
  if (reference.softmax_dtype != SoftmaxDtype::kAuto && !find_path(json, "training.softmax_dtype")) {
    impl.softmax_dtype = reference.softmax_dtype;
  }
  if (reference.attention_mask != AttentionMask::kAuto && !find_path(json, "training.attention_mask")) {
    impl.attention_mask = reference.attention_mask;
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
  if (json.find("model") && !find_path(json, "model.preset")) out.config.model = ModelSpec{};
  const Json* preset = find_path(json, "model.preset");
  if (preset && !(preset->is_string() && preset->as_string().empty())) {
    const auto model = preset->is_string() ? preset_model(preset->as_string()) : std::nullopt;
    if (!model) {
      out.errors.push_back({"model.preset", "must be the id of a preset (see `memfit --list-presets`); got " + describe(*preset)});
      return out;
    }
    out.config.model = *model;
  }
  detail::apply_fields(json, out.config, out.errors);
  if (preset && preset->is_string()) apply_preset_reference(json, preset_reference(preset->as_string()), out.config);
  // The default sequence length (2048) is longer than some models' learned position tables
  // (GPT-2: 1024, BERT: 512); unless the user chose a length, use the longest the model takes.
  ModelSpec& m = out.config.model;
  if (!find_path(json, "training.seq_len") && m.position_embedding == PositionKind::kLearned &&
      out.config.training.seq_len > m.max_position_embeddings) {
    out.config.training.seq_len = m.max_position_embeddings;
    out.warnings.push_back({"training.seq_len", "not given; set to model.max_position_embeddings (" +
                                                    detail::group_digits(m.max_position_embeddings) + ")"});
  }
  collect_unknown(json, "", out.warnings);
  if (out.errors.empty()) out.errors = validate(out.config);
  return out;
}

ConfigParse parse_config_text(std::string_view text) {
  JsonParseResult parsed = parse_json(text);
  if (!parsed.value) {
    ConfigParse out;
    out.config = default_config();
    out.errors.push_back({"(configuration)", "is not valid JSON: " + parsed.error});
    return out;
  }
  return parse_config(*parsed.value);
}

std::vector<Issue> validate(const Config& c) {
  std::vector<Issue> errors;
  auto add = [&](const char* field, std::string message) { errors.push_back({field, std::move(message)}); };
  // Ranges first, so that a configuration built in C++ is held to the same limits as JSON.
  for (const Field& f : detail::config_fields()) {
    Config& m = const_cast<Config&>(c);
    if (f.kind == FieldKind::kInt && (f.int_ref(m) < f.min_int || f.int_ref(m) > f.max_int)) {
      add(f.path, "must be " + int_range_text(f) + "; got " + detail::group_digits(f.int_ref(m)));
    } else if (f.kind == FieldKind::kReal && !(f.real_ref(m) >= f.min_real && f.real_ref(m) <= f.max_real)) {
      add(f.path, "must be " + real_range_text(f) + "; got " + detail::plain_number(f.real_ref(m)));
    }
  }
  if (!errors.empty()) return errors;

  const ModelSpec& m = c.model;
  if (m.attention_type == AttentionType::kStandard) {
    if (m.head_dim == 0 && m.hidden_size % m.num_attention_heads != 0) {
      add("model.num_attention_heads",
          "must divide model.hidden_size (" + detail::group_digits(m.hidden_size) +
              ") when model.head_dim is not given; got " + detail::group_digits(m.num_attention_heads));
    }
    if (m.num_key_value_heads > m.num_attention_heads || m.num_attention_heads % m.kv_heads() != 0) {
      add("model.num_key_value_heads",
          "must divide model.num_attention_heads (" + detail::group_digits(m.num_attention_heads) +
              "); got " + detail::group_digits(m.num_key_value_heads));
    }
  } else {
    if (m.kv_lora_rank < 1) add("model.kv_lora_rank", "must be at least 1 for attention_type mla");
    if (m.qk_nope_head_dim + m.qk_rope_head_dim < 1) add("model.qk_nope_head_dim", "qk_nope_head_dim + qk_rope_head_dim must be at least 1 for attention_type mla");
    if (m.v_head_dim < 1) add("model.v_head_dim", "must be at least 1 for attention_type mla");
  }
  const bool has_dense_layers = m.num_experts == 0 || m.first_k_dense_replace > 0;
  if (has_dense_layers && m.intermediate_size < 1) {
    add("model.intermediate_size", "must be at least 1 (the model has dense MLP layers)");
  }
  if (m.num_experts > 0) {
    if (m.num_experts_per_tok < 1 || m.num_experts_per_tok > m.num_experts) {
      add("model.num_experts_per_tok", "must be from 1 to model.num_experts (" + detail::group_digits(m.num_experts) +
                                           "); got " + detail::group_digits(m.num_experts_per_tok));
    }
    if (m.moe_intermediate_size < 1) add("model.moe_intermediate_size", "must be at least 1 when model.num_experts > 0");
    if (m.first_k_dense_replace > m.num_hidden_layers) {
      add("model.first_k_dense_replace", "must be at most model.num_hidden_layers (" + detail::group_digits(m.num_hidden_layers) + ")");
    }
  }
  if (m.position_embedding == PositionKind::kLearned && c.training.seq_len > m.max_position_embeddings &&
      c.training.precision != Precision::kSeed14p) {
    add("training.seq_len", "must be at most model.max_position_embeddings (" +
                                detail::group_digits(m.max_position_embeddings) + ") for learned positions; got " +
                                detail::group_digits(c.training.seq_len));
  }

  const Training& t = c.training;
  if (t.finetune.method == FinetuneMethod::kLora) {
    if (t.finetune.lora_targets == 0) add("training.finetune.lora_targets", "must name at least one module for LoRA");
    if (t.finetune.base_bits != 4 && t.finetune.base_bits != 8 && t.finetune.base_bits != 16) {
      add("training.finetune.base_bits", "must be 16 (frozen 16-bit base), 8 (int8) or 4 (QLoRA NF4); got " +
                                             detail::group_digits(t.finetune.base_bits));
    }
  }

  const Parallel& p = c.parallel;
  const std::int64_t model_parallel = p.tensor * p.pipeline * p.context;
  if (p.num_gpus % model_parallel != 0) {
    add("parallel.num_gpus", "must be a multiple of tensor × pipeline × context (" + detail::group_digits(model_parallel) +
                                 "); got " + detail::group_digits(p.num_gpus));
  }
  if (p.pipeline > m.num_hidden_layers) {
    add("parallel.pipeline", "must be at most model.num_hidden_layers (" + detail::group_digits(m.num_hidden_layers) + ")");
  }
  if (m.attention_type == AttentionType::kStandard && m.num_attention_heads % p.tensor != 0) {
    add("parallel.tensor", "must divide model.num_attention_heads (" + detail::group_digits(m.num_attention_heads) + ")");
  }
  if (p.expert > 1 && (m.num_experts == 0 || m.num_experts % p.expert != 0)) {
    add("parallel.expert", "must divide model.num_experts (" + detail::group_digits(m.num_experts) + ")");
  }
  if (!find_gpu(c.hardware.gpu)) {
    add("hardware.gpu", "must be the id of a GPU in the table (see `memfit --list-gpus`); got \"" + c.hardware.gpu + "\"");
  }
  return errors;
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
const char* to_string(Checkpointing c) {
  return detail::find_field("training.checkpointing")->choices[static_cast<std::size_t>(c)];
}

}  // namespace memfit
