// A multimodal model's vision tower (model.vision_type), core-internal: its tensors and the bytes
// it holds (vision.cpp).
#pragma once

#include <vector>

#include "memfit/config.hpp"
#include "memfit/parameters.hpp"
#include "memfit/recipes.hpp"
#include "memfit/units.hpp"

namespace memfit {

// The tower's tensor groups (component kVisionTower), none when model.vision_type is none.
void vision_parameters(const ModelSpec& model, std::vector<TensorGroup>& out);

// Which of the tower's tensors: all of them, or those in FSDP units of their own (vision_parameters'
// `unit` groups, never gathered by a text-only step).
enum class TowerPart { kAll, kUnits };

// The bytes of the part, whole (before ZeRO): frozen, stored as the frozen base is. With
// `unshardable`, only what ZeRO-3 / FSDP cannot shard of a bitsandbytes 4-bit tower (its
// quantisation state, and under accelerate's FSDP2 with uint8 storage its 4-bit weights).
Bytes vision_tower_bytes(const Config& config, const ParameterCount& params, const PrecisionRecipe& recipe,
                         TowerPart part, bool unshardable);

// The tower's tensors in FSDP's root unit (outside the modules its classes list in
// _no_split_modules), as the root gathers them: its parameters' gathered dtype, a quantised base at
// its stored size.
Bytes vision_root_gathered_bytes(const Config& config, const ParameterCount& params, const PrecisionRecipe& recipe);

}  // namespace memfit
