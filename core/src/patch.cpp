#include "memfit/patch.hpp"

#include <string>

namespace memfit {

void merge_patch(Json& base, const Json& patch) {
  for (const auto& [key, value] : patch.members()) {
    const Json* existing = base.find(key);
    if (value.is_object() && existing && existing->is_object()) {
      Json merged = *existing;
      merge_patch(merged, value);
      base.set(key, std::move(merged));
    } else {
      base.set(key, value);
    }
  }
}

void set_path(Json& root, std::string_view path, Json value) {
  const std::size_t dot = path.find('.');
  if (dot == std::string_view::npos) {
    root.set(std::string(path), std::move(value));
    return;
  }
  const std::string key(path.substr(0, dot));
  const Json* child = root.find(key);
  Json node = child && child->is_object() ? *child : Json::object();
  set_path(node, path.substr(dot + 1), std::move(value));
  root.set(key, std::move(node));
}

ConfigParse apply_patch(const Config& config, const Json& patch) {
  Json json = config_to_json(config);
  merge_patch(json, patch);
  return parse_config(json);
}

}  // namespace memfit
