#include "placement.hpp"

#include "finetune.hpp"
#include "memfit/implementation.hpp"
#include "memfit/recipes.hpp"
#include "optimizer_states.hpp"
#include "peft.hpp"
#include "vision.hpp"

namespace memfit {

namespace {

Count elements(const TensorGroup& g) { return g.elements_each(); }

Bytes local_frozen_base_bytes(const Placement& p, const ParameterCount& params, const Config& c, Bytes unquantized) {
  const QuantizedBase base = quantized_base(c);
  return p.local<BytesUnit>(params, [&](const TensorGroup& g) {
    return frozen_bytes_each(g, c.training.finetune, unquantized, base);
  });
}

// The busiest stage by parameters: the first (dense layers first, plus the embeddings) or the last
// (MoE layers, plus the final norm and head). Counted layer by layer, so one more layer never
// lowers a stage's count.
void choose_stage(const ParameterCount& params, const Parallel& par, const ModelSpec& m, Placement& p) {
  const Count layers_per_stage = ceil_div(Count(m.num_hidden_layers), par.pipeline);
  p.dense_layers = min(params.dense_layer_count, layers_per_stage);
  // Interleaved dense and MoE layers: every stage holds its share of each.
  const Count interleaved_moe = interleaved_moe_layers(params, m, layers_per_stage);
  if (m.moe_layers_interleaved) p.dense_layers = layers_per_stage - interleaved_moe;
  p.moe_layers = layers_per_stage - p.dense_layers;
  p.first_stage = true;
  p.last_stage = par.pipeline == 1;
  if (par.pipeline == 1) return;
  const Count first = p.local<CountUnit>(params, elements);
  Placement last = p;
  last.moe_layers = m.moe_layers_interleaved ? interleaved_moe : min(params.moe_layer_count, layers_per_stage);
  last.dense_layers = layers_per_stage - last.moe_layers;
  last.first_stage = false;
  last.last_stage = true;
  if (last.local<CountUnit>(params, elements) > first) p = last;
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

// Paged optimizers keep their states in CUDA unified memory, but for small tensors
// (paged_states_on_device); offload moves states (and master weights) or parameters to the host.
// What leaves the GPU is counted apart.
void offload(const Config& c, const ParameterCount& params, StaticBytes& s, std::vector<std::string>& notes) {
  if (is_paged(c.training.optimizer)) {
    const Parallel& par = c.parallel;
    const bool unsharded = par.zero_stage == 0 && par.tensor == 1 && par.pipeline == 1 && par.expert == 1;
    const Bytes resident =
        unsharded ? min(paged_states_on_device(c, trains_some_layers(c) ? trained_view(c, params) : params), s.states)
                  : Bytes{0};
    s.offloaded += s.states - resident;
    s.states = resident;
    const bool eight_bit = c.training.optimizer == Optimizer::kPagedAdamW8bit;
    notes.push_back(std::string("Paged optimizer: states live in CUDA unified memory and are paged to the CPU under "
                                "pressure; they are shown apart and not counted as allocated") +
                    (resident.is_zero() ? "."
                                        : eight_bit ? ", but for tensors under 100,000 elements and the block scales."
                                                    : ", but for tensors under 100,000 elements."));
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

Count Placement::held(const ParameterCount& params, const TensorGroup& g) const {
  // A hybrid model's attention or Gated DeltaNet groups: this stage's share of its blocks (the two
  // kinds are spread evenly; validate.cpp keeps a hybrid model on one stage).
  if (g.mixer != Mixer::kAll) {
    const Count stage = g.layer == LayerKind::kMoe ? moe_layers : dense_layers;
    const Count total = g.layer == LayerKind::kMoe ? params.moe_layer_count : params.dense_layer_count;
    return mul_div(g.count, stage, max(total, Count(1)));
  }
  switch (g.layer) {
    case LayerKind::kDense: return params.per_layer(g) * dense_layers;
    case LayerKind::kMoe: {
      const Count per_layer = g.component == Component::kExperts ? params.per_layer(g) / expert : params.per_layer(g);
      return per_layer * moe_layers;
    }
    case LayerKind::kNone: break;
  }
  return (is_embedding(g.component) ? first_stage : last_stage) ? g.count : Count(0);
}

Placement placement(const Config& c, const ParameterCount& params, Count base_count) {
  const Parallel& par = c.parallel;
  Placement p;
  p.tensor = par.tensor;
  p.expert = par.expert;
  choose_stage(params, par, c.model, p);
  p.local_count = p.local<CountUnit>(params, elements);
  p.total_count = max(params.total_count, Count(1));
  // A nominal count (the seeds' tables) is placed in the same proportions as the architecture.
  p.local_params = mul_div(base_count, p.local_count, p.total_count);
  p.local_trainable = p.local_params;
  if (trains_some_layers(c)) {
    // Some blocks train: each stage is taken to hold its share of them (the top blocks sit on the
    // last stages of a pipeline; the busiest stage is then one that holds them, not an average).
    const Count trained = trained_view(c, local_parameters(params, p)).total_count;
    p.local_trainable = mul_div(trained, p.local_params, max(p.local_count, Count(1)));
  }
  if (is_peft(c)) {
    // What the method adds and trains on this GPU's own tensors (its stage, its tensor slice).
    const PeftParameters peft = peft_parameters(c, local_parameters(params, p));
    p.local_trainable = peft.trainable_count();
    p.local_added = peft.added_count();
    p.local_copies = peft.saved_copies;
    p.buffer_bytes = peft.buffer_bytes;
  }
  // Baichuan-13B keeps its last ALiBi table on the model between steps (self.alibi_mask, H×T×T in
  // the compute dtype, rebuilt when T changes): a module buffer, never sharded.
  if (resolve_implementation(c).attention_mask == AttentionMask::kAlibi) {
    const Count heads = ceil_div(Count(c.model.num_attention_heads), par.tensor);
    const Count t = Count(c.training.seq_len);
    p.buffer_bytes += heads * t * t * recipe_of(c).compute;
  }
  // ZeRO / FSDP shard over every rank that holds the same layers: data × context parallel
  // (context-parallel ranks hold identical weights; torchtitan and Megatron's distributed
  // optimizer shard across both).
  // Hybrid sharding shards within groups of shard_degree ranks only.
  p.zero_shards = par.zero_stage == 0    ? 1
                  : par.shard_degree > 0 ? par.shard_degree
                                         : (Exact(par.num_gpus) / (Exact(par.tensor) * par.pipeline)).value();
  return p;
}

ParameterCount local_parameters(const ParameterCount& params, const Placement& p) {
  ParameterCount mine = params;
  for (TensorGroup& g : mine.groups) {
    g.count = p.held(params, g);
    // Megatron's column- and row-parallel linears split one dimension each; which one does not
    // change a state's size but for Adafactor's factored rows and columns (a vector per matrix).
    if (!g.cols.is_zero()) g.rows = ceil_div(g.rows, p.tensor);
  }
  return mine;
}

// Optimizer states on this GPU, from its own tensors: exact for state layouts that depend on
// shapes (8-bit blocks, Adafactor's factors), and for the rest the local trainable count. A
// nominal count scales a full fine-tune's states like its weights.
Bytes local_optimizer_state_bytes(const Config& c, const ParameterCount& params, const Placement& p,
                                  Bytes state_element) {
  const ParameterCount mine = local_parameters(params, p);
  if (is_peft(c)) return optimizer_state_bytes(c, mine, p.local_trainable, state_element);
  if (trains_some_layers(c)) {
    const ParameterCount trained = trained_view(c, mine);
    return p.as_nominal(optimizer_state_bytes(c, trained, trained.total_count, state_element));
  }
  return p.as_nominal(optimizer_state_bytes(c, mine, p.local_count, state_element));
}

std::int64_t head_calls(const Config& c) {
  const Implementation impl = resolve_implementation(c);
  const ImplementationProfile& profile = implementation_profile(impl.framework);
  switch (impl.loss) {
    case LossKernel::kChunked:
      if (profile.loss_chunk_rows > 0) return (c.training.seq_len + profile.loss_chunk_rows - 1) / profile.loss_chunk_rows;
      return std::max<std::int64_t>(1, profile.loss_chunks);
    case LossKernel::kFusedLinearCe:
    case LossKernel::kChunkedRecompute: return 0;  // a chunk's weight cast is made again in its backward
    default: return 1;
  }
}

Count interleaved_moe_layers(const ParameterCount& params, const ModelSpec& m, Count stage_layers) {
  return min(params.moe_layer_count,
             ceil_div(params.moe_layer_count * stage_layers, max(Count(m.num_hidden_layers), Count(1))));
}

Bytes weight_copy_bytes(const Config& c, const ParameterCount& params, const Placement& p) {
  const PrecisionRecipe& r = recipe_of(c);
  const Implementation impl = resolve_implementation(c);
  const Finetune& f = c.training.finetune;
  const bool peft = is_peft(c);
  // prepare_model_for_kbit_training makes fp32 whatever the quantiser left (the head, routers,
  // stacked experts): under autocast each matmul on such a frozen weight casts it at every use and
  // saves the 16-bit copy (measured: tools/frameworks/families.py, llama4_text QLoRA: the head, the
  // routers and Llama 4's expert stacks). Quantised layers dequantise in their own kernels.
  const bool kbit_fp32 = peft && r.autocast && f.base_bits < 16 && kbit_upcast(f);
  const QuantizedBase base = quantized_base(c);
  const Bytes copy = kbit_fp32 ? r.compute : r.autocast_copy;
  if (copy.is_zero()) return Bytes{0};
  // A PEFT method's frozen base in 16 bits (or quantised) has nothing to cast. An fp32 base under
  // autocast is cast at every use, and autocast caches only the casts of leaf tensors that require
  // grad (aten/src/ATen/autocast_mode.cpp, cached_cast), so a frozen weight's cast is not
  // shared: each linear whose input needs a gradient saves its own 16-bit copy of the weight for
  // backward, the head once per call (LitGPT's 128-position chunks make it one copy per chunk).
  // Blocks under full checkpointing make their copies again, one block at a time, in backward:
  // the blocks left out of it (training.checkpointed_layers) keep theirs, and one recomputed block
  // holds its own while its backward runs.
  if (peft && !kbit_fp32 && (f.base_bits != 16 || lora_base_bytes(r, impl) != kFp32Bytes)) return Bytes{0};
  const std::int64_t head_uses = peft ? head_calls(c) : 1;
  const std::int64_t layers = std::max<std::int64_t>(1, c.model.num_hidden_layers);
  // A recomputed block makes its casts again for its backward: one block of the stage at a time.
  // With only some blocks recomputed, backward reaches them after the kept blocks' casts are freed
  // (as activations.cpp counts their recomputation): the larger of the two. Per stage: the share
  // below is of the model's layers, and every stage recomputes a block of its own.
  const std::int64_t recomputed = c.training.recomputed_layers(layers);
  const std::int64_t one_block_per_stage = recomputed > 0 ? std::min<std::int64_t>(c.parallel.pipeline, layers) : 0;
  Count blocks_kept = peft ? Count(std::max(layers - recomputed, one_block_per_stage)) : Count(layers);
  if (trains_some_layers(c)) {
    // The trained blocks' casts are cached (leaves that require grad); a frozen block that backward
    // passes through saves its own copies, unless it is recomputed; below the lowest trained block
    // nothing needs a gradient and the casts are transient.
    const std::int64_t trained = c.training.finetune.trainable_layers;
    const std::int64_t frozen_in_backward = std::max<std::int64_t>(0, layers - lowest_backward_layer(c) - trained);
    blocks_kept = Count(trained) + mul_div(Count(frozen_in_backward), Count(layers - c.training.recomputed_layers(layers)),
                                           Count(layers));
  }
  const bool tied_head = c.model.output_head == OutputHead::kLm && c.model.tie_word_embeddings;
  // Stacked experts under transformers' grouped GEMMs are not cast: torch._grouped_mm is not on
  // autocast's list (activations.cpp moe_terms). torchtitan casts the stacks to bf16 itself and
  // Llama 4's batched matmuls are on the list: both save the stacks' 16-bit copies.
  const bool experts_uncast = impl.moe_dispatch == MoeDispatch::kGrouped && impl.framework != Framework::kTorchtitan;
  // A stack PEFT adapts (target_parameters) is rebuilt as W + s·B·A every forward, and that merged
  // stack is what the matmul casts and keeps (activations.cpp, moe.merged_expert_weights): the
  // frozen stack itself is never cast. gate and up are one stack.
  // ERNIE 4.5 runs its fp32 router with autocast off (modeling_ernie4_5_moe.py,
  // Ernie4_5_MoeTopKRouter: maybe_autocast(enabled=False)): no cast.
  const bool router_uncast = c.model.model_type == "ernie4_5_moe";
  const unsigned stacked_adapted =
      peft && stacked_experts(c) ? targets_reaching(f.lora_targets, Component::kExperts, expert_targeting(c)) : 0u;
  return p.as_nominal(p.local<BytesUnit>(params, [&](const TensorGroup& g) {
    if (kbit_fp32 && quantized_tensor(g, f, base)) return Bytes{0};
    if (g.component == Component::kExperts && g.lora_target != 0) {
      const unsigned stack = (g.lora_target & (kLoraGate | kLoraUp)) ? (kLoraGate | kLoraUp) : g.lora_target;
      if (stacked_adapted & stack) return Bytes{0};
    }
    const bool head = g.component == Component::kHead || (tied_head && g.component == Component::kTokenEmbedding);
    if (head) return g.elements_each() * copy * head_uses;
    if (experts_uncast && g.component == Component::kExperts) return Bytes{0};
    // A trained vision tower runs (images through it): autocast caches one 16-bit copy of each of
    // its matmul weights, the whole tower's, kept for backward (weights_copies_on_gpu leaves them
    // out under ZeRO-3, where one of the language model's units bounds them).
    // (SigLIP's pooling attention, nn.MultiheadAttention, is left uncast: measured with CUDA's
    // policy emulated, tools/frameworks/vision_tower.py.)
    if (is_vision(g.component)) return g.cast ? g.elements_each() * copy : Bytes{0};
    const bool matmul = g.linear || (g.component == Component::kRouter && !router_uncast);
    return matmul ? mul_div(g.elements_each() * copy, blocks_kept, Count(layers)) : Bytes{0};
  }));
}

namespace {

// Q-GaLore's INT8 trained weights (q_galore_torch/utils/quantization.py, _quantize_tensor_int8 and
// QGaLoreLinear): the blocks' linear weights as uint8 codes plus a scale and a zero per group. The
// first scales are fp32 (computed before the model is cast, kept as attributes .to(dtype) leaves
// alone); every update re-quantizes from the weight dequantized in the gradient's dtype
// (q_galore_adamw8bit.py, _quantize_stochastic_round), so in the steady state they are in the
// model's dtype. Every other parameter in the recipe's dtype.
Bytes int8_trained_weight_bytes(const Config& c, const ParameterCount& params, const Placement& p,
                                const PrecisionRecipe& r) {
  Count linear = 0;
  for (const TensorGroup& g : params.groups) {
    if (g.linear && g.layer != LayerKind::kNone) linear += g.elements_each() * p.held(params, g);
  }
  linear = min(p.local_params, mul_div(linear / c.parallel.tensor, p.local_params, max(p.local_count, Count(1))));
  const Count groups = ceil_div(linear, Count(std::max<std::int64_t>(1, c.training.weight_quant_group_size)));
  return (p.local_params - linear) * r.weights + linear * Bytes{1} + groups * r.weights * 2;
}

// LitGPT's swap of the token embedding for bitsandbytes' StableEmbedding under a bitsandbytes base
// (training.finetune.stable_embedding).
bool uses_stable_embedding(const Config& c) {
  const Finetune& f = c.training.finetune;
  if (!is_peft(c) || f.base_bits >= 16 || f.quant_method != QuantMethod::kBitsandbytes) return false;
  switch (f.stable_embedding) {
    case Switch::kYes: return true;
    case Switch::kNo: return false;
    case Switch::kAuto: break;
  }
  return resolve_implementation(c).framework == Framework::kLitgpt;
}

}  // namespace

std::int64_t reduce_bucket_elements(const Config& c) {
  return c.parallel.reduce_bucket_elements >= 0
             ? c.parallel.reduce_bucket_elements
             : implementation_profile(c.training.implementation.framework).reduce_bucket_elements;
}

Bytes fsdp2_reduce_element(const Config& c, const PrecisionRecipe& r) {
  return runs_accelerate(c.training.implementation.framework) && !r.gathered.is_zero() ? min(r.gathered, r.gradients)
                                                                                       : r.gradients;
}

bool defers_gradient_sync(const Config& c, const Placement& p) {
  const Parallel& par = c.parallel;
  const Training& t = c.training;
  if (par.zero_stage < 2 || p.zero_shards <= 1 || t.grad_accum_steps <= 1 || !stores_gradients(t) ||
      updates_in_backward(t)) {
    return false;
  }
  switch (par.gradient_sync) {
    case GradientSync::kEveryMicroBatch: return false;
    case GradientSync::kLastMicroBatch: return true;
    case GradientSync::kAuto: break;
  }
  // bf16_master / fp16_master are DeepSpeed's (and Megatron's) recipes: the engine reduces every
  // micro-batch whatever script drives it.
  if (t.precision == Precision::kBf16Master || t.precision == Precision::kFp16Master) return false;
  switch (t.implementation.framework) {
    // accelerate's accumulate() enters the model's no_sync() on every micro-batch but the last
    // (accelerator.py, accumulate / no_sync; GradientAccumulationPlugin.sync_each_batch defaults to
    // False), and the HF Trainer steps through it; Lightning Fabric's no_backward_sync, which
    // LitGPT's finetune scripts use, is FSDP's no_sync() (fabric/strategies/fsdp.py,
    // _FSDPBackwardSyncControl). FSDP's no_sync docstring: it "accumulate[s] the full model
    // gradients (instead of gradient shards) until the eventual sync".
    case Framework::kHf:
    case Framework::kLitgpt:
    case Framework::kUnsloth:
    case Framework::kLiger:
    case Framework::kTrl: return true;
    // torch.distributed.pipelining runs every backward but the last with
    // set_requires_gradient_sync(False) on an FSDP2 stage (stage.py, backward_maybe_with_nosync);
    // without a pipeline torchtitan reduce-scatters every micro-batch.
    case Framework::kTorchtitan: return par.pipeline > 1;
    default: return false;  // DeepSpeed, torchtune, Megatron, nanoGPT, llm.c: every micro-batch
  }
}

StaticBytes static_bytes(const Config& c, const ParameterCount& params, const Placement& p,
                         const PrecisionRecipe& r, std::vector<std::string>& notes) {
  const bool peft = is_peft(c);
  const Implementation impl = resolve_implementation(c);
  const Bytes base_element = lora_base_bytes(r, impl);
  // PEFT's fp32 adapters: fp32 weights, gradients and optimizer states whatever the recipe; so are
  // 16-bit ones once accelerate's FSDP preparation casts what trains (accelerate_upcasts_trained).
  const bool upcast = peft && accelerate_upcasts_trained(c);
  const bool fp32_adapters = peft && (impl.lora_adapter_dtype == LoraAdapterDtype::kFp32 || upcast);
  const Bytes adapter_element = fp32_adapters ? kFp32Bytes : r.weights;
  // modules_to_save copies keep the original module's dtype: the base's, or fp32 after
  // prepare_model_for_kbit_training or accelerate's upcast; so do their gradients and (torch.optim)
  // their states.
  const Bytes copy_element = kbit_fp32_stream(c.training.finetune) || upcast ? kFp32Bytes : base_element;
  const Count adapters = p.local_trainable - p.local_copies;
  StaticBytes s;
  s.weights = peft ? p.as_nominal(local_frozen_base_bytes(p, params, c, base_element)) +
                         (p.local_added - p.local_copies) * adapter_element + p.local_copies * copy_element
                   : p.local_params * r.weights;
  // Under accelerate's upcast (recipe_of) only what trains is cast: layers a partial fine-tune
  // freezes keep the dtype they were loaded in.
  if (!peft && accelerate_upcasts_trained(c)) {
    s.weights = p.local_trainable * r.weights +
                (p.local_params - p.local_trainable) * recipe_for(c.training.precision).weights;
  }
  if (!peft && c.training.weight_quant == WeightQuant::kInt8) s.weights = int8_trained_weight_bytes(c, params, p, r);
  const Bytes gradient_element = stored_gradient_bytes(c, r);
  s.gradients = stores_gradients(c.training)
                    ? (peft ? adapters * (fp32_adapters ? kFp32Bytes : gradient_element) + p.local_copies * copy_element
                            : p.local_trainable * gradient_element)
                    : Bytes{0};
  // FSDP1 with use_orig_params and a unit holding frozen and trainable parameters gives the whole
  // flat parameter a gradient ("gradient memory ... higher than expected": torch/distributed/fsdp/
  // _flat_param.py), in the base's dtype: a PEFT method under block units (LitGPT) pays for the
  // blocks' frozen weights' gradients, and the root's where it trains something (the head's
  // adapters, modules_to_save, prompts). Stacks that give the adapters units of their own (the HF
  // Trainer, torchtune: fsdp1_keeps_adapters_apart, for methods that train leaf modules) mix
  // nothing: all-frozen units get no gradient (measured: tools/frameworks/fsdp1_units.py). FSDP2 shards each parameter on its own;
  // DeepSpeed's engine has no such option.
  if (fsdp1_units_mix(c) && fsdp1_uses_orig_params(c)) {
    // The root unit (embeddings, final norm, head) mixes where something in it trains.
    const Finetune& f = c.training.finetune;
    const FinetuneMethod m = f.method;
    // (A modules_to_save copy is a leaf module that trains: a unit of its own where the policy
    // wraps those apart, fsdp1_wraps_adapters_apart, whatever the method.)
    const bool copies_mix = f.modules_to_save != 0 && !fsdp1_wraps_adapters_apart(c.training.implementation.framework);
    const bool root_trains = (f.lora_targets & kLoraHead) || copies_mix || prepends_virtual_tokens(m) ||
                             prefixes_keys_values(m) ||
                             m == FinetuneMethod::kLlamaAdapterV2 || m == FinetuneMethod::kLnTuning ||
                             m == FinetuneMethod::kTrainableTokens;
    const Count blocks = p.local<CountUnit>(params, [](const TensorGroup& g) {
      return g.layer == LayerKind::kNone ? Count(0) : g.elements_each();
    });
    const Count mixed = root_trains ? p.local_params : mul_div(blocks, p.local_params, max(p.local_count, Count(1)));
    // accelerate casts such a unit's flat parameter to fp32 whole, its frozen weights with it (a
    // 16-bit base: FSDP1 refuses fp32 adapters beside it, validate.cpp), and its gradient is fp32.
    const bool whole_unit_upcast = upcast && c.training.finetune.base_bits == 16 && base_element < kFp32Bytes;
    if (whole_unit_upcast) {
      // (What the method adds is counted as fp32 already; copies held apart are not in these units.)
      const Count added_inside = root_trains ? p.local_added : p.local_added - p.local_copies;
      s.weights += max(Count(0), mixed - added_inside) * (kFp32Bytes - base_element);
      notes.push_back("accelerate's FSDP1 preparation casts each unit that trains to fp32 under mixed precision, and "
                      "this method's units hold the frozen base too: the blocks' weights and gradients are fp32 "
                      "(parallel.fsdp_version 2 casts only the trained parameters).");
    }
    s.gradients += mixed * (whole_unit_upcast ? kFp32Bytes : base_element);
  }
  if (upcast && (!p.local_copies.is_zero() || impl.lora_adapter_dtype != LoraAdapterDtype::kFp32)) {
    notes.push_back(std::string("accelerate's FSDP preparation casts the trained parameters to fp32 under mixed "
                                "precision: ") +
                    (p.local_copies.is_zero() ? "the adapters'" : "the modules_to_save copies'") +
                    " weights, gradients and optimizer states are fp32.");
  }
  // MeZO updates the weights in place: no optimizer keeps a master copy.
  s.master = forward_only(c.training) ? Bytes{0} : p.local_trainable * r.master;
  const Bytes state_element = fp32_adapters ? kFp32Bytes : r.optimizer_state;
  s.states = local_optimizer_state_bytes(c, params, p, state_element);
  // Optimizers whose states are zeros_like(p) hold the copies' states in the copies' dtype.
  if (peft && !p.local_copies.is_zero() && states_follow_parameter_dtype(c.training.optimizer) &&
      !p.local_trainable.is_zero()) {
    const Bytes copies_share = mul_div(s.states, p.local_copies, p.local_trainable);
    s.states = s.states - copies_share + mul_div(copies_share, Count(copy_element.value()), Count(state_element.value()));
  }
  // Deferred sync: the micro-batches before the last hold every unit's gradient unsharded. FSDP1
  // leaves it in the unsharded flat parameter's .grad, in the dtype the unit was gathered in (the
  // base's, for a PEFT method); FSDP2 accumulates in the reduce dtype (fsdp/_fully_shard/
  // _fsdp_param.py, to_accumulated_grad_if_needed: unsharded_accumulated_grad in reduce_dtype),
  // which under accelerate is the gathered dtype too (fsdp2_reduce_element).
  const bool kept_dtype = peft || (runs_fsdp2(c) && !runs_accelerate(impl.framework));
  const Bytes unsharded_gradients = kept_dtype ? s.gradients : p.local_trainable * r.gathered;
  // A multimodal model's vision tower (model.vision_type): frozen and never run by a text-only step,
  // held whole on every GPU (validate.cpp: no tensor or pipeline split), sharded by ZeRO-3 / FSDP
  // as every parameter is (FSDP's units take frozen parameters too; DeepSpeed partitions them all),
  // moved by parameter offload. FSDP's SHARD_GRAD_OP (zero_stage 2) shards every unit at rest and
  // gathers it when it runs, keeping it gathered until its backward: the tower's own units never
  // run, so they stay sharded, while its pieces in the root unit, which runs, are held whole through
  // the step. DeepSpeed's ZeRO-2 holds every parameter whole. What sharding cannot take off a 4-bit
  // tower (its quantisation state; FSDP2's uint8 weights) comes back below, as the base's does.
  const Bytes vision = vision_tower_bytes(c, params, r, TowerPart::kAll, false);
  const bool shard_all = c.parallel.zero_stage >= 3;
  const bool shard_units = shard_all || (c.parallel.zero_stage == 2 && runs_torch_data_parallel(impl.framework));
  const TowerPart sharded_part = shard_all ? TowerPart::kAll : TowerPart::kUnits;
  const Bytes vision_sharded = shard_units ? vision_tower_bytes(c, params, r, sharded_part, false) : Bytes{0};
  const Bytes vision_unshardable = shard_units ? vision_tower_bytes(c, params, r, sharded_part, true) : Bytes{0};
  const Bytes unsharded_weights = s.weights + vision;
  // Expert parallelism is carved out of the data-parallel ranks: the routed experts this GPU holds
  // are held by zero_shards / expert ranks only, and ZeRO / FSDP shard them over that group
  // (DeepSpeed-MoE's expert-data-parallel groups, deepspeed/utils/groups.py; Megatron's
  // expert-data-parallel distributed optimizer; torchtitan's FSDP over dp_shard / ep for the
  // experts). The rest is sharded over all zero_shards ranks. The experts' share is their share
  // of this GPU's base parameters (a PEFT method's adapters are counted with the rest).
  if (p.expert > 1 && c.parallel.zero_stage > 0) {
    const auto experts_only = [](auto each) {
      return [each](const TensorGroup& g) { return g.component == Component::kExperts ? each(g) : decltype(each(g)){}; };
    };
    const Count expert_count = p.local<CountUnit>(params, experts_only(elements));
    const auto share = [&](Bytes b) { return mul_div(b, expert_count, max(p.local_count, Count(1))); };
    StaticBytes e;
    e.weights = peft ? p.as_nominal(p.local<BytesUnit>(params, experts_only([&](const TensorGroup& g) {
                         return frozen_bytes_each(g, c.training.finetune, base_element, quantized_base(c));
                       })))
                     : share(s.weights);
    if (!peft) {
      e.gradients = share(s.gradients);
      e.master = share(s.master);
      e.states = share(s.states);
    }
    s.weights = s.weights - e.weights;
    s.gradients = s.gradients - e.gradients;
    s.master = s.master - e.master;
    s.states = s.states - e.states;
    shard(s, c.parallel.zero_stage, p.zero_shards);
    shard(e, c.parallel.zero_stage, std::max<std::int64_t>(1, p.zero_shards / p.expert));
    s.weights += e.weights;
    s.gradients += e.gradients;
    s.master += e.master;
    s.states += e.states;
  } else {
    shard(s, c.parallel.zero_stage, p.zero_shards);
  }
  s.vision = vision - vision_sharded + vision_sharded / p.zero_shards;
  s.weights += s.vision;
  s.vision_unsharded = vision_unshardable - vision_unshardable / p.zero_shards;
  // What ZeRO-3 sharding cannot take off a bitsandbytes 4-bit base comes back: its quantisation
  // state, which is no parameter (quant_state_bytes_each), and under accelerate's FSDP2 the uint8-
  // stored weights themselves, left out of fully_shard (fsdp2_leaves_4bit_whole). Neither is a
  // parameter the engine offloads: added after offload() below.
  Bytes unsharded_on_gpu{0};
  if (c.parallel.zero_stage >= 3 && bnb_4bit_base(c)) {
    const QuantizedBase base = quantized_base(c);
    const bool whole = fsdp2_leaves_4bit_whole(c);
    const auto unsharded = [&](bool experts) {
      return [&, experts](const TensorGroup& g) {
        if ((g.component == Component::kExperts) != experts) return Bytes{0};
        if (whole && quantized_tensor(g, c.training.finetune, base)) {
          return frozen_bytes_each(g, c.training.finetune, base_element, base);
        }
        return quant_state_bytes_each(g, c.training.finetune, base);
      };
    };
    const std::int64_t expert_shards = p.expert > 1 ? std::max<std::int64_t>(1, p.zero_shards / p.expert) : p.zero_shards;
    const Bytes dense = p.as_nominal(p.local<BytesUnit>(params, unsharded(false)));
    const Bytes experts = p.as_nominal(p.local<BytesUnit>(params, unsharded(true)));
    unsharded_on_gpu = dense - dense / p.zero_shards + experts - experts / expert_shards;
    if (whole) {
      notes.push_back("accelerate's FSDP2 leaves 4-bit weights stored as uint8 out of its sharding (fsdp2_prepare_model: "
                      "ignored_params): every GPU holds the quantised base whole; bnb_4bit_quant_storage bf16 shards it");
    }
  }
  // DeepSpeed ZeRO++ hpZ: a secondary partition of every parameter, numel / group in its dtype,
  // from forward to backward (partition_parameters.py, _partition_param_sec: ds_secondary_tensor
  // on the parameters' device, so on the host when they are offloaded; the step frees the trained
  // parameters' ones, stage3.py _post_step, after the step's peak). The group is
  // min(hpz, world size) ranks (utils/groups.py, _create_zero_param_parallel_group): on one GPU a
  // whole second copy.
  const std::int64_t data_ranks = std::max<std::int64_t>(1, c.parallel.num_gpus / (c.parallel.tensor * c.parallel.pipeline));
  if (c.parallel.zero_stage >= 3 && impl.framework == Framework::kDeepspeed && c.parallel.zero_hpz_partition_size > 1) {
    const std::int64_t group = std::min(c.parallel.zero_hpz_partition_size, data_ranks);
    s.weights += unsharded_weights / group;
    s.vision += vision / group;
    notes.push_back("ZeRO++ hpZ: each GPU also keeps a secondary partition, 1/" + std::to_string(group) +
                    " of the parameters in their dtype, for backward's all-gather inside its group; it is counted "
                    "with the parameters" + (c.parallel.offload_params ? " (on the host: the parameters are offloaded)."
                                                                        : "."));
  }
  s.accumulated_gradients = defers_gradient_sync(c, p) ? max(s.gradients, unsharded_gradients) : s.gradients;
  s.weights += p.buffer_bytes;  // module buffers: not sharded
  // torch DDP (plain data parallelism: no sharding, tensor, pipeline or context split) under
  // frameworks that wrap the model in it: the
  // reducer allocates its buckets for every parameter that requires grad, in the gradient's dtype
  // (torch/csrc/distributed/c10d/reducer.cpp, initialize_buckets), and unless
  // gradient_as_bucket_view they are a second copy of the gradients ("the saved memory size will be
  // equal to the total gradients size", DistributedDataParallel's docstring).
  const Parallel& par = c.parallel;
  const bool plain_data_parallel = par.tensor == 1 && par.pipeline == 1 && par.context == 1 && par.num_gpus > 1;
  if (runs_torch_data_parallel(impl.framework) && par.zero_stage == 0 && plain_data_parallel && !par.ddp_bucket_view &&
      !updates_in_backward(c.training)) {
    s.reducer_buckets = s.gradients;
  }
  // DeepSpeed ZeRO-3 with contiguous_gradients (its default) allocates, when the optimizer is built,
  // one flat bucket of reduce_bucket_size elements in the trained parameters' dtype, whatever their
  // number, and keeps it for the run: backward copies each gradient into it until it is full, then
  // reduce-scatters it (runtime/zero/stage3.py, __init__: `self.__ipg_bucket_flat_buffer =
  // torch.empty(self.reduce_bucket_size, dtype=self.dtype, ...)`; __add_grad_to_ipg_bucket). LOMO /
  // AdaLomo and MeZO build no DeepSpeed optimizer.
  if (impl.framework == Framework::kDeepspeed && par.zero_stage == 3 && stores_gradients(c.training) &&
      !updates_in_backward(c.training) && !p.local_trainable.is_zero()) {
    s.zero_reduce_bucket = Count(reduce_bucket_elements(c)) * stored_gradient_bytes(c, r);
  }
  // LitGPT's StableEmbedding swap (finetune/lora.py, adapter.py, adapter_v2.py: `old_embedding =
  // model.transformer.wte`, a local of main() for the whole run; the StableEmbedding's weight
  // requires grad but was not given to the optimizer): one more embedding in the base's dtype, and
  // its gradient in the same dtype from the first backward on.
  if (uses_stable_embedding(c)) {
    const Bytes embedding = Count(c.model.vocab_size) * Count(c.model.hidden_size) * base_element;
    s.weights += embedding;
    s.orphan_gradients = embedding;
    notes.push_back("LitGPT's StableEmbedding swap (bitsandbytes base, LitGPT since Oct 2024): the old token "
                    "embedding stays allocated and the new one keeps a gradient no optimizer clears; both are "
                    "counted (training.finetune.stable_embedding).");
  }
  offload(c, params, s, notes);
  if (c.parallel.offload_params) {
    s.vision_offloaded = s.vision;
    s.vision = Bytes{0};
  }
  s.weights += unsharded_on_gpu + s.vision_unsharded;
  // DeepSpeed's optimizer offload keeps the gradient partitions on the host with the states: ZeRO-3
  // puts its flat gradient buffer on the offload device (runtime/zero/stage3.py: `self.device` is the
  // CPU under offload_optimizer; grad_partitions_flat_buffer is made there) and ZeRO-2 copies each
  // reduced gradient into the host's fp32 partition (runtime/zero/stage_1_and_2.py,
  // copy_grads_in_partition / async_accumulate_grad_in_cpu_via_gpu), keeping on the GPU one buffer
  // the size of the largest parameter (temp_grad_buffer_for_gpu_offload, in the model's dtype).
  if (impl.framework == Framework::kDeepspeed && par.offload_optimizer && par.zero_stage >= 2 &&
      stores_gradients(c.training) && s.accumulated_gradients == s.gradients) {
    const Bytes on_gpu = par.zero_stage == 3 ? Bytes{0} : min(s.gradients, largest_trainable_tensor(c, params) * r.weights);
    s.offloaded += s.gradients - on_gpu;
    s.gradients = s.accumulated_gradients = on_gpu;
  }
  return s;
}

}  // namespace memfit
