// The training step as a sequence of allocations and frees, replayed through the model of
// PyTorch's caching allocator (allocator.hpp): what the allocator reserves for the step, and the
// timeline of allocated and reserved bytes (core-internal).
#pragma once

#include <vector>

#include "activations.hpp"
#include "allocator.hpp"
#include "placement.hpp"

namespace memfit {

struct StepSimulation {
  Bytes peak_allocated_bytes;  // of the simulated tensors (per-tensor rounding included)
  Bytes peak_reserved_bytes;   // segments the allocator holds at the end of the second step
  Count segment_count;
  // mallocs that found the card full and released the cache to retry (num_alloc_retries)
  std::int64_t alloc_retries = 0;
  // Replayed on the card, a request found no room even after the cache was released, so these
  // numbers are the unbounded replay's: on that card the run may stop with an out-of-memory error.
  bool ran_out_on_card = false;
  std::vector<Phase> timeline;  // allocated at the end of each stage of the second step
  bool ok = false;              // false: the step could not be replayed (nothing to report)
  // The request that took the reserve to its high point, and the stage it came in (0 forward,
  // 1 backward, 2 the optimizer step): a request no cached block could hold.
  Bytes reserve_peak_request_bytes;
  int reserve_peak_stage = 0;
  // FSDP1 without its rate limiter (fsdp_gathers_run_ahead): the same step replayed with every
  // unit's gathered parameters left waiting on the GPU until the loop reads the loss or the card
  // is full; its peak reserved and the allocated peak it was replayed at. Zero when that does not apply
  // or the step does not fit the card even so.
  Bytes runahead_peak_reserved_bytes;
  Bytes runahead_peak_allocated_bytes;
};

// FSDP1 (FullyShardedDataParallel) with limit_all_gathers=False: nothing holds the CPU back, so it
// issues all-gathers for units far ahead of the GPU (torch/distributed/fsdp/_runtime_utils.py:
// the rate limiter that _unshard waits on is `limit_all_gathers`, default True since PyTorch 2.1,
// pytorch/pytorch#104900). FSDP2, DeepSpeed and Megatron have no such switch.
bool fsdp_gathers_run_ahead(const Config& config, const Placement& place);

// Two steps (the first creates the optimizer states; the second is the steady state that
// max_memory_reserved reports after training has run a while), tensor by tensor: the parameters,
// master weights, states and gradients of every group this GPU holds, each block's saved
// activations in forward and their release in backward as its gradients land, the loss's tensors,
// the optimizer's temporaries, and zero_grad(set_to_none=True).
//
// With varying sequence lengths (training.sequence_lengths), micro-batches of other lengths
// (`earlier`, each with its own activations and loss) run first, through the same allocator,
// on a card of `capacity` bytes (0: unbounded).
struct EarlierBatch {
  ActivationModel activations;
  LossModel loss;
};
StepSimulation simulate_step(const Config& config, const ParameterCount& params, const Placement& place,
                             const StaticBytes& statics, const ActivationModel& activations, const LossModel& loss,
                             Bytes weight_copies, Bytes optimizer_temporaries, const PrecisionRecipe& recipe,
                             SegmentMode segments, const std::vector<EarlierBatch>& earlier = {},
                             Bytes capacity = Bytes{0});

// The micro-batch lengths replayed before the full-length steps when lengths vary: each the
// padded length of a micro-batch of `micro_batch` samples (its longest).
constexpr int kVaryingMicroBatches = 24;
std::vector<std::int64_t> varying_lengths(std::int64_t seq_len, std::int64_t micro_batch);

}  // namespace memfit
