// Optimizer state bytes, exactly as the implementations allocate them (core-internal).
#pragma once

#include "memfit/config.hpp"
#include "memfit/parameters.hpp"
#include "memfit/recipes.hpp"
#include "memfit/units.hpp"

namespace memfit {

// State bytes for all trainable tensors (before sharding). `state_element` is one 32-bit
// optimizer state element as the recipe keeps it (fp32 4; 2 when the parameters are pure bf16).
Bytes optimizer_state_bytes(Optimizer optimizer, const ParameterCount& params, Count trainable, bool lora,
                            const Finetune& finetune, Bytes state_element);

// The seeds' multipliers (seeds/001 optim_multipliers × 4 bytes): adam 2, lion 1, sgd 1 (momentum),
// adafactor 0.1 (the seeds' own approximation).
Bytes seed_optimizer_state_bytes(Optimizer optimizer, Count parameters);

// Temporary buffers of the step itself: foreach AdamW keeps one state-sized intermediate for all
// (local, sharded) parameters; the per-parameter loop one for the largest tensor; fused none.
Bytes optimizer_step_temporary_bytes(const Training& training, Count sharded_trainable, Count largest_tensor,
                                     const PrecisionRecipe& recipe);

bool is_paged(Optimizer optimizer);

}  // namespace memfit
