// The step's phases: forward, backward and the optimizer step, each at its high point
// (core-internal).
#pragma once

#include <vector>

#include "activations.hpp"
#include "memfit/estimate.hpp"
#include "placement.hpp"

namespace memfit {

// The optimizer step's temporaries on this GPU (foreach's per-tensor intermediates, ...).
Bytes optimizer_temporaries(const Config& config, const ParameterCount& params, const Placement& place,
                            const PrecisionRecipe& recipe);

// Whether ZeRO-3 / FSDP keeps each unit gathered from its forward to its backward
// (parallel.reshard_after_forward).
bool keeps_units_gathered(const Config& config);

// Under ZeRO-3 / FSDP, one block's parameters gathered in the compute dtype (the largest block),
// its linear weights in fp8 under torchao's Float8 all-gather; every block of the stage when units
// stay gathered (keeps_units_gathered); zero with nothing to gather.
Bytes gathered_layer_bytes(const Config& config, const ParameterCount& params, const Placement& place,
                           const PrecisionRecipe& recipe);

// FSDP's root unit (the parameters outside the wrapped blocks: embeddings, final norm, output
// head) in the gathered dtype: FSDP1 and FSDP2 do not reshard the root after forward, so it stays
// gathered from the forward's start to the end of backward. Zero unless parameters are sharded by
// an FSDP framework (DeepSpeed gathers and releases per module).
bool fsdp_root_stays_gathered(const Config& config, const Placement& place);
Bytes fsdp_root_gathered_bytes(const Config& config, const ParameterCount& params, const Placement& place,
                               const PrecisionRecipe& recipe);

// accelerate (>= 1.14) under FSDP2 carves the root: the input embedding becomes a unit of its own,
// resharded after its forward, and the final norm with the output head another, not resharded
// after forward (utils/fsdp_utils.py, fsdp2_prepare_model, accelerate #4015). The tail is then
// gathered from forward's end (the loss) through the head's backward, at backward's start; the
// embedding at forward's start and again for its backward, at backward's end; the root keeps what
// is left (fsdp_root_gathered_bytes). A tied head shares the embedding's weight and unit, which
// lives as the root did; other stacks, and FSDP1, leave all three in the root.
struct FsdpRootUnits {
  Bytes tail, embedding;  // in the gathered dtype; zero where the root is not carved
  bool embedding_in_backward = false;  // gathered again for its backward (gradient reaches its output)
};
FsdpRootUnits fsdp_root_units(const Config& config, const ParameterCount& params, const Placement& place,
                              const PrecisionRecipe& recipe);
// The root's share of the end of backward: what is gathered then, and the gradients the root's
// post-backward has not yet reduce-scattered (with FSDP2's reduce-scatter input).
Bytes fsdp_root_at_backward_end(const Config& config, const ParameterCount& params, const Placement& place,
                                const PrecisionRecipe& recipe);

// FSDP's unit in backward, for a model that trains its blocks: autograd makes the unit's gradients
// unsharded, in the dtype the unit was gathered in (FSDP1: the flat parameter's .grad; FSDP2: each
// unsharded parameter's .grad), until its post-backward hook reduce-scatters them. FSDP2 copies them
// into one flat reduce-scatter input in the reduce dtype (fully_shard/_fsdp_collectives.py,
// foreach_reduce) and keeps that buffer until the next unit's reduce-scatter (_fsdp_param_group.py,
// post_backward: comm_ctx.reduce_scatter_state), so the block below runs its backward beside it.
// Zero where the gradients are sharded as they are made, held unsharded anyway (deferred sync), or
// not stored.
// Which FSDP shards this run's parameters: ZeRO-2 (SHARD_GRAD_OP) or ZeRO-3 (FULL_SHARD) over two
// ranks or more under torch's own data parallelism; FSDP2 under torchtitan and torchtune.
enum class FsdpSharding { kNone, kFsdp1, kFsdp2 };
FsdpSharding fsdp_sharding(const Config& config, const Placement& place);

struct FsdpUnitGradients {
  Bytes unsharded;     // one block's gradients, as made
  Bytes reduce_input;  // FSDP2's flat reduce-scatter input of the block above
};
FsdpUnitGradients fsdp_unit_gradients(const Config& config, const ParameterCount& params, const Placement& place,
                                      const PrecisionRecipe& recipe);

// DeepSpeed ZeRO-3 keeps a gathered parameter when the step uses it again within
// stage3_max_reuse_distance parameters (parallel.zero3_max_reuse_distance): at forward's end the
// output head (used again at once by its backward) and the last blocks (used again by their
// recomputation or backward after the head twice) stay gathered beside the block in use.
// Both are alive at forward's end and the loss; the head goes after its own backward, the blocks
// after theirs (all counted at the top block's).
struct ReusedGathered {
  Bytes head, blocks;
};
ReusedGathered deepspeed_reused_gathered(const Config& config, const ParameterCount& params, const Placement& place,
                                         const PrecisionRecipe& recipe);
// Gathered across forward's end beside the block in use: DeepSpeed's reused parameters and
// accelerate's FSDP2 tail unit (fsdp_root_units), whose parameters go after the head's backward.
ReusedGathered gathered_across_forward_end(const Config& config, const ParameterCount& params, const Placement& place,
                                           const PrecisionRecipe& recipe);

// What stays allocated between two steps, after the optimizer step and zero_grad: the weights,
// master copies, states and fixed buffers, the gradients where zero_grad keeps them, and what the
// loop holds with its outputs (loop_keeps_logits: the logits, the key/value cache, the graph).
Bytes between_steps_bytes(const Config& config, const StaticBytes& st, const ActivationModel& act,
                          const LossModel& loss, const PrecisionRecipe& recipe);

std::vector<Phase> step_phases(const Config& config, const ParameterCount& params, const Placement& place,
                               const StaticBytes& statics, const ActivationModel& activations,
                               const LossModel& loss, Bytes weight_copies, const PrecisionRecipe& recipe);

}  // namespace memfit
