#include "memfit/memfit.hpp"

#include "api_common.hpp"

namespace memfit {

Json failure_json(const std::vector<Issue>& errors, const std::vector<Issue>& warnings) {
  Json j = Json::object();
  j.set("ok", Json::boolean(false));
  j.set("errors", issues_to_json(errors));
  j.set("warnings", issues_to_json(warnings));
  return j;
}

namespace {

Json model_to_json(const ModelSpec& model) {
  Config c;
  c.model = model;
  Json all = config_to_json(c);
  return *all.find("model");
}

}  // namespace

Json estimate_json(std::string_view config_text) {
  ConfigParse parsed = parse_config_text(config_text);
  if (!parsed.ok()) return failure_json(parsed.errors, parsed.warnings);
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
  if (!imported.errors.empty()) return failure_json(imported.errors, imported.warnings);
  Config c = default_config();
  c.model = imported.model;
  c.training.seq_len = 1;  // only the model is checked here
  const std::vector<Issue> errors = validate(c);
  if (!errors.empty()) return failure_json(errors, imported.warnings);
  const ParameterCount count = count_parameters(imported.model);
  Json j = Json::object();
  j.set("ok", Json::boolean(true));
  j.set("errors", Json::array());
  j.set("warnings", issues_to_json(imported.warnings));
  j.set("model", model_to_json(imported.model));
  j.set("parameter_count", Json::integer(count.total_count.value()));
  j.set("parameters_by_component", parameters_by_component_json(count));
  j.set("vision_parameter_count", Json::integer(count.vision_count.value()));  // outside parameter_count
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
    j.set("memory_bytes", Json::integer(g.memory_bytes.value()));
    j.set("context_bytes", Json::integer(g.context_bytes.value()));
    j.set("source", Json::string(g.source));
    // What a run can use (CUDA's total where a reading is published, else memory_bytes): the fits' memory_bytes.
    j.set("usable_bytes", Json::integer(g.usable_bytes().value()));
    j.set("peak_fp16_tflops", Json::number(g.peak_fp16_tflops));
    j.set("peak_bf16_tflops", Json::number(g.peak_bf16_tflops));
    j.set("peak_fp8_tflops", Json::number(g.peak_fp8_tflops));
    j.set("peak_fp32_tflops", Json::number(g.peak_fp32_tflops));
    j.set("ceiling_16bit", Json::number(g.ceiling_16bit));
    j.set("ceiling_fp8", Json::number(g.ceiling_fp8));
    j.set("bf16", Json::boolean(g.has_bf16()));
    j.set("fp8", Json::boolean(g.has_fp8()));
    j.set("memory_bandwidth_gb_per_s", Json::number(g.memory_bandwidth_gb_per_s));
    j.set("intra_node_gb_per_s", Json::number(g.intra_node_gb_per_s));
    j.set("inter_node_gb_per_s", Json::number(g.inter_node_gb_per_s));
    j.set("host_link_gb_per_s", Json::number(g.host_link_gb_per_s));
    j.set("gpus_per_node", Json::integer(g.gpus_per_node));
    j.set("nvlink_domain", Json::integer(gpu_link_domain(g.id, 0)));
    j.set("price_per_hour", Json::number(g.price_per_hour));
    j.set("spec_source", Json::string(g.spec_source));
    Json aliases = Json::array();
    for (const char* a : g.aliases) aliases.push(Json::string(a));
    j.set("aliases", std::move(aliases));
    list.push(std::move(j));
  }
  return list;
}

Json suggestions_json(std::string_view config_text) {
  ConfigParse parsed = parse_config_text(config_text);
  if (!parsed.ok()) return failure_json(parsed.errors, parsed.warnings);
  Json list = Json::array();
  for (const Suggestion& s : suggest(parsed.config)) {
    Json j = Json::object();
    j.set("title", Json::string(s.title));
    j.set("detail", Json::string(s.detail));
    j.set("patch", s.patch);
    j.set("device_total_bytes", Json::integer(s.device_total_bytes.value()));
    j.set("verdict", Json::string(to_string(s.verdict)));
    j.set("saved_bytes", Json::integer(s.saved_bytes.value()));
    j.set("step_time_s", s.timed ? Json::number(s.step_time_s) : Json::null());
    j.set("time_per_token_change", s.timed ? Json::number(s.time_per_token_change) : Json::null());
    list.push(std::move(j));
  }
  Json j = Json::object();
  j.set("ok", Json::boolean(true));
  j.set("errors", Json::array());
  j.set("suggestions", std::move(list));
  return j;
}

Json merge_patch_json(std::string_view config_text, std::string_view patch_text) {
  JsonParseResult config = parse_json(config_text), patch = parse_json(patch_text);
  std::vector<Issue> errors;
  if (!config.value || !config.value->is_object()) errors.push_back({"(configuration)", "must be a JSON object"});
  if (!patch.value || !patch.value->is_object()) errors.push_back({"(patch)", "must be a JSON object"});
  if (!errors.empty()) return failure_json(errors, {});
  merge_patch(*config.value, *patch.value);
  Json j = Json::object();
  j.set("ok", Json::boolean(true));
  j.set("errors", Json::array());
  j.set("config", std::move(*config.value));
  return j;
}

}  // namespace memfit
