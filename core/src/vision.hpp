// A multimodal model's vision tower (model.vision_type), core-internal: its tensors and the bytes
// it holds (vision.cpp).
#pragma once

#include <string>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/parameters.hpp"
#include "memfit/recipes.hpp"
#include "memfit/units.hpp"

namespace memfit {

// The tower's tensor groups (component kVisionTower), none when model.vision_type is none.
void vision_parameters(const ModelSpec& model, std::vector<TensorGroup>& out);

// Which parts of the tower the run trains (training.finetune.train_vision): none without a tower or
// under a PEFT method (its adapters go on the language model; validate.cpp refuses another choice);
// auto: the whole tower under TRL, whose SFTTrainer freezes nothing, and none elsewhere, as
// LLaMA-Factory (freeze_vision_tower, freeze_multi_modal_projector) and ms-swift (freeze_vit,
// freeze_aligner) hold it by default.
VisionTrain resolve_train_vision(const Config& config);

// The parameters as the memory model places them: the tower's parts the run trains move from
// `vision` into `groups` and total_count (kept apart from the language model's blocks: layer
// kNone, their `unit` flags kept), where they are weights, gradients, master weights and optimizer
// states as the language model's are; what stays in `vision` is held frozen.
ParameterCount with_trained_vision(const Config& config, ParameterCount params);
// The model's parameters counted and so placed (count_parameters, then with_trained_vision).
ParameterCount memory_parameters(const Config& config);

// Whether frozen pieces of the tower sit in FSDP's root unit (outside its own units) beside what
// trains there: the whole tower frozen, or only some of its parts training.
bool vision_root_frozen(const Config& config);

// What one micro-batch's images (training.images_per_sample x image_patches) leave saved for
// backward in the vision tower, freed last in backward: the encoder blocks' tensors (which
// activation offload moves to the host as it does the language model's blocks') and the rest (the
// patch embedding's input, the rotary tables, the mergers'). Zero for text-only steps, under MeZO,
// and where it is not modelled (images_unmodelled says why).
struct VisionSaved {
  Bytes blocks, outside;
  Bytes total() const { return blocks + outside; }
};
VisionSaved vision_saved(const Config& config);
// Why a run's images through the tower are not modelled: the field and the message, or empty.
struct ImagesUnmodelled {
  std::string field, message;
};
ImagesUnmodelled images_unmodelled(const Config& config);
// The patches of each image as the encoder sees them: training.image_patches, or where that is 0
// the fixed count of a SigLIP or CLIP encoder ((image_size / patch_size)²).
Count image_patches(const Config& config);

// How many tokens an image adds to the language model's sequence (training.seq_len), in words, as
// the tower's processor and projector make them.
std::string image_token_words(const ModelSpec& model);

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
