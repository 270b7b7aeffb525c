// memfit's public API. Front ends (the command line, the wasm module) speak JSON text through
// these functions, so they share one parser, one validator and one result format.
#pragma once

#include <string>
#include <string_view>

#include "memfit/config.hpp"
#include "memfit/estimate.hpp"
#include "memfit/exports.hpp"
#include "memfit/gpus.hpp"
#include "memfit/hf_import.hpp"
#include "memfit/implementation.hpp"
#include "memfit/json.hpp"
#include "memfit/parameters.hpp"
#include "memfit/patch.hpp"
#include "memfit/plan.hpp"
#include "memfit/presets.hpp"
#include "memfit/recipes.hpp"
#include "memfit/solve.hpp"
#include "memfit/step_time.hpp"
#include "memfit/suggest.hpp"

namespace memfit {

// Configuration JSON text → result JSON (with `ok`, `errors` and `warnings` always present).
Json estimate_json(std::string_view config_text);
// The default configuration, normalised (every field present).
Json default_config_json();
// Validation only: {"ok", "errors", "warnings"}.
Json validate_json(std::string_view config_text);
// A Hugging Face config.json → {"ok", "errors", "warnings", "model": {memfit model fields},
// "training": {implementation knobs of the model's transformers class, to apply unless set},
// "parameter_count", "parameters_by_component"}.
Json import_hf_json(std::string_view hf_config_text);
// Presets: [{id, name, family, source, published_parameter_count, parameter_count, model}].
Json presets_json();
// GPUs: [{id, name, architecture, memory_bytes (nvidia-smi's total), context_bytes, source, usable_bytes (CUDA's
// total where a reading is published, else memory_bytes: what a verdict counts), peak_{fp16,bf16,fp8}_tflops,
// bf16, fp8, memory_bandwidth_gb_per_s, intra_node_gb_per_s, inter_node_gb_per_s, gpus_per_node,
// price_per_hour, spec_source, aliases}].
Json gpus_json();
// What to change: {"ok", "errors", "suggestions": [{title, detail, patch, device_total_bytes,
// verdict}]}, best first (see suggest.hpp).
Json suggestions_json(std::string_view config_text);
// The seeds' scaling table rows for the given configuration's training settings.
Json scaling_table_json(std::string_view config_text);
// A configuration with a patch merged into it (patch.hpp's rule): {"ok", "errors", "config"}.
// The configuration is returned as given plus the patch, not normalised.
Json merge_patch_json(std::string_view config_text, std::string_view patch_text);

// Solvers (solve.hpp): target max-micro-batch | max-seq-len | min-gpus | max-layers | max-width,
// family (min-gpus only; "" = zero3). {"ok", "errors", "target", "found", "value", "config",
// "binding", "binding_phase", "device_total_bytes", "budget_bytes", "next", "estimates"}.
Json solve_json(std::string_view config_text, std::string_view target, std::string_view family);
// The step time of a configuration (step_time.hpp); options {"train_tokens", "tp_comm_overlap"}.
Json step_time_json(std::string_view config_text, std::string_view options_text);
// The planner (plan.hpp); options {"gpus_min", "gpus_max", "global_batch_tokens", "train_tokens",
// "top", "rank_by", "keep_precision", "tp_comm_overlap"}.
Json plan_json(std::string_view config_text, std::string_view options_text);
// The plan's files and launch command for an engine (exports.hpp): deepspeed | fsdp | torchtitan
// | megatron | torchtune. {"ok", "errors", "engine", "filename", "text", "command", "notes"}.
Json export_json(std::string_view config_text, std::string_view engine);

}  // namespace memfit
