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

// Where the parameters sit on the busiest GPU: the layers of its pipeline stage (every stage
// holds ceil(L / pp) layers, dense ones first; the first stage also the embeddings, the last the
// final norm and head: Megatron's layout), its slice of tensor and expert parallelism, and how
// many ways ZeRO / FSDP shard what it shards.
struct Placement {
  Count dense_layers, moe_layers;       // blocks of each kind on this GPU's stage
  bool first_stage = true, last_stage = true;
  std::int64_t tensor = 1, expert = 1;
  Count local_count;      // counted parameters on this GPU before ZeRO
  Count total_count;      // counted parameters of the whole model
  Count local_params;     // the (possibly nominal) base parameters on this GPU
  Count local_trainable;  // trainable parameters on this GPU before ZeRO
  Count local_added;      // parameters a PEFT method adds, on this GPU (LoRA-FA: its frozen A too)
  Count local_copies;     // of those, modules_to_save copies (kept in the base's dtype)
  Bytes buffer_bytes;     // frozen buffers a PEFT method registers (not sharded)
  std::int64_t zero_shards = 1;  // 1 without ZeRO

  // Σ each(g) over the tensors this GPU holds (before ZeRO), tensor by tensor group: layer groups
  // count per layer × the stage's layers of that kind, routed experts / expert parallelism, the
  // embeddings and head where the stage holds them; all divided by tensor parallelism.
  template <class Unit, class Each>
  Quantity<Unit> local(const ParameterCount& params, Each each) const {
    Quantity<Unit> total{Exact(0)};
    for (const TensorGroup& g : params.groups) {
      const Quantity<Unit> per_tensor = each(g);
      if (per_tensor.is_zero()) continue;
      total += per_tensor * held(params, g);
    }
    return total / tensor;
  }
  // How many of a group's tensors this GPU's stage holds (before tensor parallelism).
  Count held(const ParameterCount& params, const TensorGroup& g) const;

  // Bytes of an architecture-counted quantity on this GPU, scaled to the (possibly nominal)
  // parameter count the memory model uses.
  Bytes as_nominal(Bytes architecture_bytes) const {
    return mul_div(architecture_bytes, local_params, max(local_count, Count(1)));
  }
};

Placement placement(const Config& config, const ParameterCount& params, Count base_count);

// Autocast's cached 16-bit copies (AMP) or Transformer Engine's FP8 copies of the matmul weights
// this GPU holds: every linear layer and the head (or the tied embedding serving as the head).
Bytes weight_copy_bytes(const Config& config, const ParameterCount& params, const Placement& place);

// The MoE layers a pipeline stage of `stage_layers` holds when dense and MoE layers alternate
// (model.moe_layers_interleaved, Llama 4 Maverick): its share of them, rounded up.
Count interleaved_moe_layers(const ParameterCount& params, const ModelSpec& model, Count stage_layers);

// How many times the output head runs per micro-batch: once, or once per chunk where the head
// itself is chunked (LitGPT's lm_head_chunk_size of sequence positions, torchtune's and
// torchtitan's output chunks); 0 where a fused linear cross-entropy runs it inside the loss, a
// chunk at a time in forward and again in backward (Liger, TRL's chunked loss).
std::int64_t head_calls(const Config& config);

// This GPU's tensors (before ZeRO): each group's count is how many this GPU's stage holds, and
// tensor parallelism splits each matrix's rows.
ParameterCount local_parameters(const ParameterCount& params, const Placement& place);

struct StaticBytes {
  Bytes weights, gradients, master, states, offloaded;
  // Gradients held between the micro-batches of one step: the sharded gradients, or, when the
  // gradient sync waits for the last micro-batch (defers_gradient_sync), the full unsharded ones
  // (never fewer than `gradients`).
  Bytes accumulated_gradients;
  // torch DDP's all-reduce buckets: allocated when the model is wrapped, kept for the run.
  Bytes reducer_buckets;
  // Gradients of parameters no optimizer steps, never cleared (LitGPT's StableEmbedding swap).
  Bytes orphan_gradients;
  // DeepSpeed ZeRO-3's contiguous gradient bucket (__ipg_bucket_flat_buffer): one block of
  // reduce_bucket_size elements, allocated with the optimizer and kept for the run.
  Bytes zero_reduce_bucket;
  // Of `weights`, a multimodal model's vision tower (frozen, never run): the step's replay holds it
  // as its own tensors. Beside it, the part of its 4-bit quantisation ZeRO-3 cannot shard (in
  // `weights` too), and what parameter offload moved to the host (in `offloaded`).
  Bytes vision, vision_unsharded, vision_offloaded;

  // What the GPU holds from the first step to the last, whatever the phase.
  Bytes resident() const { return weights + master + states + reducer_buckets + orphan_gradients + zero_reduce_bucket; }
};

// Whether the micro-batches before the last accumulate full, unsharded gradients (FSDP's no_sync /
// set_requires_gradient_sync(False)): sharded gradients, several micro-batches, and a framework
// (or parallel.gradient_sync) that reduces only at the last one.
bool defers_gradient_sync(const Config& config, const Placement& place);

// An element of FSDP2's reduce dtype, the dtype its reduce-scatter input and a deferred sync's
// accumulated gradients are in: accelerate's mixed precision policy reduces in the mixed-precision
// dtype (utils/dataclasses.py, set_mixed_precision: reduce_dtype = param_dtype, bf16), torchtitan in
// fp32 (mixed_precision_reduce), the dtype of the kept gradients.
Bytes fsdp2_reduce_element(const Config& config, const PrecisionRecipe& recipe);

// DeepSpeed's reduce_bucket_size in elements: the configuration's, else the framework's default
// (DeepSpeed's 5e8; none for engines without such a bucket).
std::int64_t reduce_bucket_elements(const Config& config);

// Weights, gradients, master weights and optimizer states on this GPU.
StaticBytes static_bytes(const Config& config, const ParameterCount& params, const Placement& place,
                         const PrecisionRecipe& recipe, std::vector<std::string>& notes);

}  // namespace memfit
