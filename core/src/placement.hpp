// Placement and sharding: which parameters the busiest GPU holds, and the bytes of its weights,
// gradients, master weights and optimizer states after ZeRO / FSDP, paging and offload
// (core-internal).
#pragma once

#include <string>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/parameters.hpp"
#include "memfit/recipes.hpp"
#include "memfit/units.hpp"

namespace memfit {

// Where the parameters sit on the busiest GPU: its share of the counted architecture (pipeline
// stage, tensor and expert parallelism) and how many ways ZeRO / FSDP shard what it shards.
struct Placement {
  Count local_count;      // counted parameters on this GPU before ZeRO
  Count total_count;      // counted parameters of the whole model
  Count local_params;     // the (possibly nominal) base parameters on this GPU
  Count local_trainable;  // trainable parameters on this GPU before ZeRO
  Count local_added;      // parameters a PEFT method adds, on this GPU (LoRA-FA: its frozen A too)
  Bytes buffer_bytes;     // frozen buffers a PEFT method registers (not sharded)
  std::int64_t zero_shards = 1;  // 1 without ZeRO
  Bytes share_of(Bytes whole_model) const { return mul_div(whole_model, local_count, total_count); }
};

Placement placement(const Config& config, const ParameterCount& params, Count base_count, Count trainable);

struct StaticBytes {
  Bytes weights, gradients, master, states, offloaded;
};

// Weights, gradients, master weights and optimizer states on this GPU.
StaticBytes static_bytes(const Config& config, const ParameterCount& params, const Placement& place,
                         Count trainable, const PrecisionRecipe& recipe, std::vector<std::string>& notes);

}  // namespace memfit
