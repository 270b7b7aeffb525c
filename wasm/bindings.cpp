// The embind boundary: plain functions taking and returning JSON text. No classes are bound, so
// JavaScript never has to call .delete(); no exception crosses (errors come back as data in the
// `errors` list of every answer). web/src/core.js is the only module that calls these.
//
// Built twice: memfit.mjs (the page's first view: estimate ... solve, step_time) and
// memfit-planner.mjs (MEMFIT_WASM_PLANNER: the same plus plan and export_plan), so the planner's
// code is fetched only when the planner is opened.
#include <emscripten/bind.h>

#include <string>

#include "memfit/memfit.hpp"

namespace {

std::string estimate(const std::string& config) { return memfit::estimate_json(config).dump(); }
std::string validate(const std::string& config) { return memfit::validate_json(config).dump(); }
std::string default_config() { return memfit::default_config_json().dump(); }
std::string config_schema() { return memfit::config_schema().dump(); }
std::string import_hf_config(const std::string& text) { return memfit::import_hf_json(text).dump(); }
std::string presets() { return memfit::presets_json().dump(); }
std::string gpus() { return memfit::gpus_json().dump(); }
std::string scaling_table(const std::string& config) { return memfit::scaling_table_json(config).dump(); }
std::string suggestions(const std::string& config) { return memfit::suggestions_json(config).dump(); }
std::string merge_patch(const std::string& config, const std::string& patch) {
  return memfit::merge_patch_json(config, patch).dump();
}
std::string solve(const std::string& config, const std::string& target, const std::string& family) {
  return memfit::solve_json(config, target, family).dump();
}
std::string step_time(const std::string& config, const std::string& options) {
  return memfit::step_time_json(config, options).dump();
}
#ifdef MEMFIT_WASM_PLANNER
std::string plan(const std::string& config, const std::string& options) { return memfit::plan_json(config, options).dump(); }
std::string export_plan(const std::string& config, const std::string& engine) {
  return memfit::export_json(config, engine).dump();
}
#endif

}  // namespace

EMSCRIPTEN_BINDINGS(memfit) {
  emscripten::function("estimate", &estimate);
  emscripten::function("validate", &validate);
  emscripten::function("default_config", &default_config);
  emscripten::function("config_schema", &config_schema);
  emscripten::function("import_hf_config", &import_hf_config);
  emscripten::function("presets", &presets);
  emscripten::function("gpus", &gpus);
  emscripten::function("scaling_table", &scaling_table);
  emscripten::function("suggestions", &suggestions);
  emscripten::function("merge_patch", &merge_patch);
  emscripten::function("solve", &solve);
  emscripten::function("step_time", &step_time);
#ifdef MEMFIT_WASM_PLANNER
  emscripten::function("plan", &plan);
  emscripten::function("export_plan", &export_plan);
#endif
}
