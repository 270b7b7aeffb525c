// Optimizer state bytes, exactly as the implementations allocate them, and the step's temporaries
// (core-internal). Every optimizer's states are derived from its library's code (cited per
// function in optimizer_states.cpp) and checked against the libraries themselves run on a tiny
// model (tests/fixtures/optimizers/, tests/core/optimizer_test.cpp).
#pragma once

#include "memfit/config.hpp"
#include "memfit/parameters.hpp"
#include "memfit/recipes.hpp"
#include "memfit/units.hpp"

namespace memfit {

// State bytes for all trainable tensors (before sharding). `state_element` is one 32-bit
// optimizer state element as the recipe keeps it (fp32 4; 2 when the parameters are pure bf16).
Bytes optimizer_state_bytes(const Config& config, const ParameterCount& params, Count trainable,
                            Bytes state_element);

// The seeds' multipliers (seeds/001 optim_multipliers × 4 bytes): adam 2, lion 1, sgd 1 (momentum),
// adafactor 0.1 (the seeds' own approximation); optimizers the seeds do not name take the nearest.
Bytes seed_optimizer_state_bytes(Optimizer optimizer, Count parameters);

// Temporary buffers of the optimizer step itself, on top of the states: foreach AdamW keeps one
// state-sized intermediate for all (local, sharded) parameters; the per-parameter loop one for the
// largest tensor; fused none; GaLore its SVD and back-projection, Muon its Newton–Schulz iterates.
Bytes optimizer_step_temporary_bytes(const Config& config, const ParameterCount& params, Count sharded_trainable,
                                     Count largest_tensor, const PrecisionRecipe& recipe);

// LOMO and AdaLomo update each parameter inside backward, as its gradient arrives, and free that
// gradient at once: no gradients are stored and there is no separate optimizer step.
bool updates_in_backward(const Training& training);
bool stores_gradients(const Training& training);
// Whether stored gradients live across a forward: accumulated over micro-batches, or zeroed in
// place by zero_grad(set_to_none=False) instead of freed.
bool gradients_kept_between_steps(const Training& training);
// MeZO (Malladi et al. 2023, princeton-nlp/MeZO large_models/trainer.py, zo_step): two forward
// passes under torch.no_grad with the weights perturbed in place by seeded Gaussian noise, then an
// in-place update: no backward, no gradients, no state, nothing saved.
bool forward_only(const Training& training);
// Whether every state is zeros_like(param) (torch.optim AdamW / SGD momentum, Lion, Sophia,
// schedule-free AdamW): its bytes follow each parameter's dtype.
bool states_follow_parameter_dtype(Optimizer optimizer);
// The one gradient (and LOMO's fp32 copy of it) alive while a fused update runs in backward.
Bytes fused_update_temporary_bytes(const Training& training, Count largest_tensor, const PrecisionRecipe& recipe);

bool is_paged(Optimizer optimizer);
// What a bitsandbytes paged optimizer keeps in ordinary device memory: the states of tensors under
// 1e5 elements, which get_state_buffer allocates with torch.zeros_like instead of paging, and an
// 8-bit optimizer's block-wise absmax and quantisation maps. `params`: the trained view (all of the
// model, or the blocks trained). The caller applies it to unsharded runs only: tensor, pipeline and
// expert parallelism and ZeRO / FSDP change what each rank's optimizer steps (DeepSpeed's and
// FSDP1's flat partitions are far above the threshold; FSDP2's and use_orig_params' per-parameter
// shards of small tensors are not modelled and count as paged).
Bytes paged_states_on_device(const Config& config, const ParameterCount& params);

}  // namespace memfit
