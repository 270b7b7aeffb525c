// Optimizer state bytes, exactly as the implementations allocate them (core-internal).
#pragma once

#include "memfit/config.hpp"
#include "memfit/estimate.hpp"
#include "memfit/exact.hpp"
#include "memfit/parameters.hpp"

namespace memfit {

// State bytes for all trainable tensors (before sharding). `state_element_bytes` is the dtype of
// one 32-bit-optimizer state element (fp32 4; 2 when the parameters themselves are pure bf16).
Exact optimizer_state_bytes(Optimizer optimizer, const ParameterCount& params, Exact trainable_count, bool lora,
                            const Finetune& finetune, std::int64_t state_element_bytes);

// The seeds' multipliers (seeds/001 optim_multipliers × 4 bytes): adam 2, lion 1, sgd 1 (momentum),
// adafactor 0.1 (the seeds' own approximation).
Exact seed_optimizer_state_bytes(Optimizer optimizer, Exact parameter_count);

// Temporary buffers of the step itself: foreach AdamW keeps one state-sized intermediate for all
// (local, sharded) parameters; the per-parameter loop one for the largest tensor; fused none.
Exact optimizer_step_temporary_bytes(const Config& config, Exact sharded_trainable, Exact largest_tensor,
                                     const Recipe& recipe);

// The largest trainable tensor's elements (the per-parameter loop's temporary).
Exact largest_trainable_tensor(const ParameterCount& params, bool lora, const Finetune& finetune);

bool is_paged(Optimizer optimizer);

}  // namespace memfit
