#include "memfit/memfit.hpp"

namespace memfit {

namespace {

Json failure(const std::vector<Issue>& errors, const std::vector<Issue>& warnings) {
  Json j = Json::object();
  j.set("ok", Json::boolean(false));
  j.set("errors", issues_to_json(errors));
  j.set("warnings", issues_to_json(warnings));
  return j;
}

// The seeds' scaling table (seeds/001 "Scaling Analysis"): its five models.
constexpr const char* kScalingPresets[] = {"seed-gpt2-small", "seed-gpt2-large", "seed-llama-7b", "seed-llama-13b",
                                           "seed-llama-70b"};

Json model_to_json(const ModelSpec& model) {
  Config c;
  c.model = model;
  Json all = config_to_json(c);
  return *all.find("model");
}

}  // namespace

Json estimate_json(std::string_view config_text) {
  ConfigParse parsed = parse_config_text(config_text);
  if (!parsed.ok()) return failure(parsed.errors, parsed.warnings);
  Estimate e = estimate(parsed.config);
  e.warnings.insert(e.warnings.begin(), parsed.warnings.begin(), parsed.warnings.end());
  return estimate_to_json(e);
}

Json default_config_json() { return config_to_json(default_config()); }

Json validate_json(std::string_view config_text) {
  ConfigParse parsed = parse_config_text(config_text);
  Json j = Json::object();
  j.set("ok", Json::boolean(parsed.ok()));
  j.set("errors", issues_to_json(parsed.errors));
  j.set("warnings", issues_to_json(parsed.warnings));
  return j;
}

Json import_hf_json(std::string_view text) {
  HfImport imported = import_hf_config_text(text);
  if (!imported.errors.empty()) return failure(imported.errors, imported.warnings);
  Config c = default_config();
  c.model = imported.model;
  c.training.seq_len = 1;  // only the model is checked here
  const std::vector<Issue> errors = validate(c);
  if (!errors.empty()) return failure(errors, imported.warnings);
  const ParameterCount count = count_parameters(imported.model);
  Json j = Json::object();
  j.set("ok", Json::boolean(true));
  j.set("errors", Json::array());
  j.set("warnings", issues_to_json(imported.warnings));
  j.set("model", model_to_json(imported.model));
  j.set("parameter_count", Json::integer(count.total_count.value()));
  j.set("parameters_by_component", parameters_by_component_json(count));
  return j;
}

Json presets_json() {
  // Constant data: built once (the page asks for it at start, where it cost ~50 ms in wasm).
  static const Json cached = [] {
    Json list = Json::array();
    for (const Preset& p : presets()) {
      const auto model = preset_model(p.id);
      if (!model) continue;  // a broken preset is caught by the preset tests, not shown
      Json j = Json::object();
      j.set("id", Json::string(p.id));
      j.set("name", Json::string(p.name));
      j.set("family", Json::string(p.family));
      j.set("source", Json::string(p.source));
      j.set("published_parameter_count", Json::integer(p.published_parameter_count));
      j.set("parameter_count", Json::integer(count_parameters(*model).total_count.value()));
      j.set("model", model_to_json(*model));
      list.push(std::move(j));
    }
    return list;
  }();
  return cached;
}

Json gpus_json() {
  Json list = Json::array();
  for (const Gpu& g : gpu_table()) {
    Json j = Json::object();
    j.set("id", Json::string(g.id));
    j.set("name", Json::string(g.name));
    j.set("architecture", Json::string(g.architecture));
    j.set("memory_bytes", Json::integer(g.memory_bytes));
    j.set("context_bytes", Json::integer(g.context_bytes));
    j.set("source", Json::string(g.source));
    list.push(std::move(j));
  }
  return list;
}

Json suggestions_json(std::string_view config_text) {
  ConfigParse parsed = parse_config_text(config_text);
  if (!parsed.ok()) return failure(parsed.errors, parsed.warnings);
  Json list = Json::array();
  for (const Suggestion& s : suggest(parsed.config)) {
    Json j = Json::object();
    j.set("title", Json::string(s.title));
    j.set("detail", Json::string(s.detail));
    j.set("patch", s.patch);
    j.set("device_total_bytes", Json::integer(s.device_total_bytes.value()));
    j.set("verdict", Json::string(to_string(s.verdict)));
    list.push(std::move(j));
  }
  Json j = Json::object();
  j.set("ok", Json::boolean(true));
  j.set("errors", Json::array());
  j.set("suggestions", std::move(list));
  return j;
}

Json scaling_table_json(std::string_view config_text) {
  ConfigParse parsed = parse_config_text(config_text);
  if (!parsed.ok()) return failure(parsed.errors, parsed.warnings);
  Json rows = Json::array();
  for (const char* id : kScalingPresets) {
    Config c = parsed.config;
    c.model = *preset_model(id);
    c.training.finetune.method = FinetuneMethod::kFull;
    c.parallel = Parallel{};
    Config checkpointed = c;
    c.training.checkpointing = Checkpointing::kNone;
    checkpointed.training.checkpointing = Checkpointing::kFull;
    // Learned positions cap T; the seeds' table ignores that (GPT-2 at T = 2048), as does this one.
    c.model.max_position_embeddings = std::max(c.model.max_position_embeddings, c.training.seq_len);
    checkpointed.model.max_position_embeddings = c.model.max_position_embeddings;
    const Estimate plain = estimate(c), ckpt = estimate(checkpointed);
    Json row = Json::object();
    row.set("preset", Json::string(id));
    row.set("name", Json::string(find_preset(id)->name));
    if (!plain.ok() || !ckpt.ok()) {
      row.set("errors", issues_to_json(plain.ok() ? ckpt.errors : plain.errors));
      rows.push(std::move(row));
      continue;
    }
    const Breakdown& b = plain.breakdown;
    const Exact statics = b.parameters + b.gradients + b.optimizer_states + b.master_weights;
    const bool seed = c.training.precision == Precision::kSeed14p;
    // The seeds' "Total" is static + activations; other recipes report the step's real peak.
    const auto total = [&](const Estimate& e) {
      return seed ? statics + e.breakdown.activations : e.peak_allocated_bytes;
    };
    row.set("parameter_count", Json::integer(plain.parameter_count.value()));
    row.set("static_bytes", Json::integer(statics.value()));
    row.set("activation_bytes", Json::integer((b.activations + b.logits_and_loss).value()));
    row.set("activation_checkpointed_bytes",
            Json::integer((ckpt.breakdown.activations + ckpt.breakdown.logits_and_loss).value()));
    row.set("total_bytes", Json::integer(total(plain).value()));
    row.set("total_checkpointed_bytes", Json::integer(total(ckpt).value()));
    rows.push(std::move(row));
  }
  Json j = Json::object();
  j.set("ok", Json::boolean(true));
  j.set("errors", Json::array());
  j.set("rows", std::move(rows));
  return j;
}

}  // namespace memfit
