#include <string>

#include "finetune.hpp"
#include "memfit/estimate.hpp"
#include "memfit/implementation.hpp"

namespace memfit {

namespace {

template <class Unit>
Json bytes(Quantity<Unit> value) {
  return Json::integer(value.value());
}

constexpr const char* kBudgetRule =
    "A run fits when what nvidia-smi would show (the allocator's peak reserve plus the CUDA context), raised "
    "to the top of the band where published runs like it landed, stays within the budget share of the card "
    "(the seeds: plan to 80-85 %); it is tight when the estimate fits the card but that band crosses the "
    "budget, and does not fit when the estimate itself exceeds the card: the memory CUDA reports where a reading "
    "is published (nvidia-smi's total less the driver's reserve).";


// The implementation that ran, every `auto` resolved, with the profile's source.
Json implementation_to_json(const Implementation& impl) {
  Config c;
  c.training.implementation = impl;
  const Json all = config_to_json(c);
  const Json& training = *all.find("training");
  Json j = Json::object();
  for (const char* key : kImplementationKeys) j.set(key, *training.find(key));
  const ImplementationProfile& profile = implementation_profile(impl.framework);
  j.set("description", Json::string(profile.description));
  j.set("source", Json::string(profile.source));
  return j;
}

}  // namespace

Json parameters_by_component_json(const ParameterCount& parameters) {
  Json by_component = Json::object();
  for (int c = 0; c <= static_cast<int>(Component::kPooler); ++c) {
    const Count n = parameters.component_count(static_cast<Component>(c));
    if (n.value() > 0) by_component.set(to_string(static_cast<Component>(c)), bytes(n));
  }
  return by_component;
}

Json issues_to_json(const std::vector<Issue>& issues) {
  Json list = Json::array();
  for (const Issue& i : issues) {
    Json j = Json::object();
    j.set("field", Json::string(i.field));
    j.set("message", Json::string(i.message));
    list.push(std::move(j));
  }
  return list;
}

namespace {

Json parameters_by_layer_json(const ParameterCount& p) {
  Json layers = Json::object();
  layers.set("blocks", bytes(p.block_count()));
  layers.set("dense_layers", bytes(p.dense_layer_count));
  layers.set("per_dense_layer", bytes(p.per_dense_layer_count));
  layers.set("moe_layers", bytes(p.moe_layer_count));
  layers.set("per_moe_layer", bytes(p.per_moe_layer_count));
  return layers;
}

Json recipe_json(const PrecisionRecipe& r) {
  Json recipe = Json::object();
  recipe.set("name", Json::string(r.name));
  recipe.set("description", Json::string(r.description));
  recipe.set("weight_bytes", bytes(r.weights));
  recipe.set("gradient_bytes", bytes(r.gradients));
  recipe.set("master_bytes", bytes(r.master));
  recipe.set("optimizer_state_element_bytes", bytes(r.optimizer_state));
  recipe.set("activation_bytes", bytes(r.compute));
  return recipe;
}


Json named_bytes_json(const char* key, const std::vector<NamedBytes>& list) {
  Json out = Json::array();
  for (const NamedBytes& t : list) {
    Json term = Json::object();
    term.set(key, Json::string(t.name));
    term.set("bytes", bytes(t.bytes));
    out.push(std::move(term));
  }
  return out;
}


Json range_json(Bytes low, Bytes high) {
  Json range = Json::array();
  range.push(bytes(low));
  range.push(bytes(high));
  return range;
}

// The peak and what the allocator and the card make of it.
void peak_json(const Estimate& e, Json& j) {
  j.set("peak_allocated_bytes", bytes(e.peak_allocated_bytes));
  j.set("between_steps_bytes", bytes(e.between_steps_bytes));
  j.set("peak_reserved_bytes", bytes(e.peak_reserved_bytes));
  j.set("peak_reserved_range_bytes", range_json(e.peak_reserved_low_bytes, e.peak_reserved_high_bytes));
  j.set("device_total_bytes", bytes(e.device_total_bytes));
  j.set("device_total_range_bytes", range_json(e.device_total_low_bytes, e.device_total_high_bytes));
  j.set("communicator_bytes", bytes(e.communicator_bytes));
  if (e.measured_band_cases > 0) {
    j.set("measured_band_bytes", range_json(e.measured_band_low_bytes, e.measured_band_high_bytes));
    j.set("measured_band_cases", Json::integer(e.measured_band_cases));
    j.set("measured_band_population", Json::string(e.measured_band_population));
    j.set("measured_band_fallback", Json::boolean(e.measured_band_fallback));
    j.set("device_total_band_bytes", range_json(e.device_total_band_low_bytes, e.device_total_band_high_bytes));
  }
  j.set("fragmentation", Json::number(e.fragmentation));
  Json allocator = Json::object();
  allocator.set("simulated", Json::boolean(e.fragmentation_simulated));
  allocator.set("expandable_segments", Json::boolean(e.config.hardware.expandable_segments));
  allocator.set("segments", Json::integer(e.allocator_segments.value()));
  if (e.runahead_peak_reserved_bytes.value() > 0) {
    Json ahead = Json::object();
    ahead.set("peak_reserved_bytes", bytes(e.runahead_peak_reserved_bytes));
    ahead.set("device_total_bytes", bytes(e.runahead_device_total_bytes));
    allocator.set("fsdp_runahead", std::move(ahead));
  }
  j.set("allocator", std::move(allocator));
  j.set("static_bytes_per_parameter", Json::number(e.static_bytes_per_parameter));
}

void fits_json(const Estimate& e, Json& j) {
  Json fits = fit_to_json(e.fit);
  fits.set("budget_fraction", Json::number(e.config.hardware.budget_fraction));
  fits.set("rule", Json::string(kBudgetRule));
  j.set("fits", std::move(fits));
  Json gpus = Json::array();
  for (const Fit& f : e.fits) gpus.push(fit_to_json(f));
  j.set("gpus", std::move(gpus));
}

}  // namespace

Json fit_to_json(const Fit& f) {
  Json j = Json::object();
  j.set("gpu", Json::string(f.gpu->id));
  j.set("name", Json::string(f.gpu->name));
  // The memory the verdict counts against: CUDA's total where a reading is published (the
  // driver keeps the rest), else nvidia-smi's; nvidia-smi's own total beside it.
  j.set("memory_bytes", bytes(f.gpu->usable_bytes()));
  j.set("nvidia_smi_total_bytes", bytes(f.gpu->memory_bytes));
  j.set("verdict", Json::string(to_string(f.verdict)));
  j.set("budget_bytes", bytes(f.budget_bytes));
  j.set("need_bytes", bytes(f.need_bytes));
  j.set("need_high_bytes", bytes(f.need_high_bytes));
  j.set("headroom_bytes", bytes(f.headroom_bytes));
  j.set("budget_left_bytes", bytes(f.budget_left_bytes));
  j.set("runs", Json::boolean(f.lacks == nullptr));
  if (f.lacks) j.set("lacks", Json::string(f.lacks));
  return j;
}

Json breakdown_to_json(const Breakdown& b) {
  Json breakdown = Json::object();
  breakdown.set("parameters", bytes(b.parameters));
  breakdown.set("gradients", bytes(b.gradients));
  breakdown.set("optimizer_states", bytes(b.optimizer_states));
  breakdown.set("master_weights", bytes(b.master_weights));
  breakdown.set("activations", bytes(b.activations));
  breakdown.set("logits_and_loss", bytes(b.logits_and_loss));
  breakdown.set("overhead", bytes(b.overhead));
  breakdown.set("weight_copies", bytes(b.weight_copies));
  breakdown.set("offloaded", bytes(b.offloaded_bytes));
  return breakdown;
}

Json phases_to_json(const std::vector<Phase>& phases) {
  Json out = Json::array();
  for (const Phase& p : phases) {
    Json phase = Json::object();
    phase.set("name", Json::string(p.name));
    phase.set("label", Json::string(p.label));
    phase.set("bytes", bytes(p.bytes));
    out.push(std::move(phase));
  }
  return out;
}

Json estimate_to_json(const Estimate& e) {
  Json j = Json::object();
  j.set("ok", Json::boolean(e.ok()));
  j.set("errors", issues_to_json(e.errors));
  j.set("warnings", issues_to_json(e.warnings));
  if (!e.ok()) return j;

  j.set("config", config_to_json(e.config));
  j.set("parameter_count", bytes(e.parameter_count));
  j.set("trainable_parameter_count", bytes(e.trainable_parameter_count));
  j.set("architecture_parameter_count", bytes(e.parameters.total_count));
  j.set("active_parameter_count", bytes(e.parameters.active_count));
  // A multimodal model's vision tower, outside the counts above (model.vision_type), and the part of
  // it the run trains (in trainable_parameter_count).
  j.set("vision_parameter_count", bytes(e.parameters.vision_count));
  j.set("vision_trained_parameter_count", bytes(e.vision_trained_count));
  j.set("vision_activation_bytes", bytes(e.vision_activation_bytes));
  j.set("parameters_by_component", parameters_by_component_json(e.parameters));
  j.set("parameters_by_layer", parameters_by_layer_json(e.parameters));
  Json recipe = recipe_json(recipe_of(e.config));
  if (is_peft(e.config)) {
    // A parameter-efficient run keeps its frozen base apart from the recipe's weights: in 16 bits,
    // fp32, or quantised (placement.cpp static_bytes), and its adapters in fp32 where PEFT makes them so.
    const PrecisionRecipe& r = recipe_of(e.config);
    const std::int64_t base_bits = e.config.training.finetune.base_bits;
    recipe.set("frozen_base_bits",
               Json::integer(base_bits < 16 ? base_bits : lora_base_bytes(r, e.implementation).value() * 8));
    const bool fp32_adapters = peft_trains_in_fp32(e.config, e.implementation);
    recipe.set("trained_weight_bytes", bytes(fp32_adapters ? kFp32Bytes : r.weights));
    recipe.set("trained_gradient_bytes", bytes(fp32_adapters ? kFp32Bytes : stored_gradient_bytes(e.config, r)));
    recipe.set("trained_state_element_bytes", bytes(fp32_adapters ? kFp32Bytes : r.optimizer_state));
  }
  j.set("recipe", std::move(recipe));
  // The knobs the framework resolved, and the optimizer step it runs (training.optimizer_impl auto).
  Json implementation = implementation_to_json(e.implementation);
  Config stepped = e.config;
  stepped.training.optimizer_impl = resolved_optimizer_impl(e.config);
  const Json echoed = config_to_json(stepped);
  implementation.set("optimizer_impl", *echoed.find("training")->find("optimizer_impl"));
  j.set("implementation", std::move(implementation));
  j.set("breakdown", breakdown_to_json(e.breakdown));
  j.set("activation_terms_per_layer", named_bytes_json("name", e.activation_terms_per_layer));
  j.set("phases", phases_to_json(e.phases));
  peak_json(e, j);
  fits_json(e, j);
  Json notes = Json::array();
  for (const std::string& n : e.notes) notes.push(Json::string(n));
  j.set("notes", std::move(notes));
  return j;
}

}  // namespace memfit
