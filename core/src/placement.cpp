#include "placement.hpp"

#include "finetune.hpp"
#include "optimizer_states.hpp"

namespace memfit {

namespace {

// Parameters held by the busiest pipeline stage, divided by tensor parallelism. Blocks are split
// evenly by layer; the first stage holds the embeddings, the last the head (Megatron's layout).
Count stage_share(Count block, Count first_stage_extra, Count last_stage_extra, const Parallel& p,
                  const ModelSpec& m) {
  const Count layers_per_stage = ceil_div(Count(m.num_hidden_layers), p.pipeline);
  const Count block_share = mul_div(block, layers_per_stage, m.num_hidden_layers);
  const Count stage = p.pipeline == 1 ? block_share + first_stage_extra + last_stage_extra
                                      : block_share + max(first_stage_extra, last_stage_extra);
  return stage / p.tensor;
}

// ZeRO stage 3 / FSDP shard the weights, stage 2 also the gradients, stage 1 the optimizer states
// and master weights (Rajbhandari et al. 2020).
void shard(StaticBytes& s, std::int64_t zero_stage, std::int64_t shards) {
  if (zero_stage >= 3) s.weights = s.weights / shards;
  if (zero_stage >= 2) s.gradients = s.gradients / shards;
  if (zero_stage >= 1) {
    s.master = s.master / shards;
    s.states = s.states / shards;
  }
}

// Paged optimizers keep their states in CUDA unified memory; offload moves states (and master
// weights) or parameters to the host. What leaves the GPU is counted apart.
void offload(const Config& c, StaticBytes& s, std::vector<std::string>& notes) {
  if (is_paged(c.training.optimizer)) {
    s.offloaded += s.states;
    s.states = Bytes{0};
    notes.push_back("Paged optimizer: states live in CUDA unified memory and are paged to the CPU under "
                    "pressure; they are shown apart and not counted as allocated.");
  }
  if (c.parallel.offload_optimizer) {
    s.offloaded += s.states + s.master;
    s.states = s.master = Bytes{0};
  }
  if (c.parallel.offload_params) {
    s.offloaded += s.weights;
    s.weights = Bytes{0};
  }
}

}  // namespace

Placement placement(const Config& c, const ParameterCount& params, Count base_count, Count trainable) {
  const Parallel& par = c.parallel;
  // Expert parallelism places num_experts / expert of each layer's routed experts on a GPU.
  const Count routed_experts = params.component_count(Component::kExperts);
  const Count block_params = params.block_count() - routed_experts + routed_experts / par.expert;
  const Count first_extra = params.component_count(Component::kTokenEmbedding) +
                            params.component_count(Component::kPositionEmbedding) +
                            params.component_count(Component::kTokenTypeEmbedding) +
                            params.component_count(Component::kEmbeddingNorm);
  const Count last_extra = params.total_count - params.block_count() - first_extra;
  Placement p;
  p.local_count = stage_share(block_params, first_extra, last_extra, par, c.model);
  p.total_count = max(params.total_count, Count(1));
  // A nominal count (the seeds' tables) is placed in the same proportions as the architecture.
  p.local_params = mul_div(base_count, p.local_count, p.total_count);
  p.local_trainable = is_lora(c) ? trainable / par.tensor : p.local_params;
  // ZeRO / FSDP shard over every rank that holds the same layers: data × context parallel
  // (context-parallel ranks hold identical weights; torchtitan and Megatron's distributed
  // optimizer shard across both).
  // Hybrid sharding shards within groups of shard_degree ranks only.
  p.zero_shards = par.zero_stage == 0    ? 1
                  : par.shard_degree > 0 ? par.shard_degree
                                         : (Exact(par.num_gpus) / (Exact(par.tensor) * par.pipeline)).value();
  return p;
}

StaticBytes static_bytes(const Config& c, const ParameterCount& params, const Placement& p, Count trainable,
                         const PrecisionRecipe& r, std::vector<std::string>& notes) {
  const bool lora = is_lora(c);
  StaticBytes s;
  s.weights = lora ? p.share_of(frozen_base_bytes(params, c.training.finetune.base_bits, r.frozen_base)) +
                         p.local_trainable * r.weights
                   : p.local_params * r.weights;
  s.gradients = p.local_trainable * r.gradients;
  s.master = p.local_trainable * r.master;
  s.states = mul_div(optimizer_state_bytes(c.training.optimizer, params, trainable, lora, c.training.finetune,
                                           r.optimizer_state),
                     p.local_trainable, max(trainable, Count(1)));
  shard(s, c.parallel.zero_stage, p.zero_shards);
  offload(c, s, notes);
  return s;
}

}  // namespace memfit
