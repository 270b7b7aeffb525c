#include "phases.hpp"

#include <string_view>

#include "finetune.hpp"
#include "memfit/implementation.hpp"
#include "optimizer_states.hpp"
#include "step_events.hpp"
#include "vision.hpp"

namespace memfit {

namespace {

// The key/value cache the loop holds through the step with its outputs (training.use_cache):
// while autograd's saved tensors live, only what is not one of them (kv_cache_bytes); after
// backward, and the previous step's beside the next forward, all of it.
Bytes kept_cache(const ActivationModel& act) { return act.kv_cache_kept ? act.kv_cache_bytes : Bytes{0}; }
Bytes kept_cache_whole(const ActivationModel& act) { return act.kv_cache_kept ? act.kv_cache_total_bytes : Bytes{0}; }

// A loop that holds its outputs holds the graph behind them, and with it what autograd Functions
// keep as ctx attributes (ActivationModel::retained_bytes): the previous step's, beside the next
// forward's activations until that forward returns, and the step's own after its backward.
Bytes kept_graph(const ActivationModel& act) { return act.retained_until_next_forward ? act.retained_bytes : Bytes{0}; }

// The previous micro-batch's share beside this forward: as long as that micro-batch was. With
// varying lengths the step at the high point is a long one and the one before it any: the average
// of the lengths the allocator replay draws (step_events.cpp, varying_lengths).
Bytes previous_graph(const Config& c, const ActivationModel& act) {
  if (!act.retained_until_next_forward) return Bytes{0};
  const std::vector<std::int64_t> lengths =
      c.training.sequence_lengths == SequenceLengths::kVarying ? varying_lengths(c.training.seq_len, c.training.micro_batch_size)
                                                               : std::vector<std::int64_t>{};
  if (lengths.empty()) return act.retained_bytes;
  std::int64_t sum = 0;
  for (std::int64_t l : lengths) sum += l;
  return mul_div(act.retained_bytes, Count(sum), Count(c.training.seq_len) * static_cast<std::int64_t>(lengths.size()));
}

// What every phase holds besides its own high point: the weights, master copy and states,
// gradients kept across micro-batches, autocast's copies, the saved activations and, under
// ZeRO-3 / FSDP, the one unit (a block) gathered at a time in the compute dtype.
Bytes alive_through_step(const Config& c, const ParameterCount& params, const Placement& p, const StaticBytes& st,
                         const ActivationModel& act, const LossModel& loss, Bytes weight_copies,
                         const PrecisionRecipe& r) {
  const Training& t = c.training;
  const Bytes grads_in_forward = gradients_kept_between_steps(t) ? st.accumulated_gradients : Bytes{0};
  const Bytes gathered_layer = gathered_layer_bytes(c, params, p, r);
  return st.resident() + grads_in_forward + weight_copies + act.saved_bytes + gathered_layer + loss.kept_bytes +
         kept_cache(act) + fsdp_root_gathered_bytes(c, params, p, r);
}

// DeepSpeed ZeRO-2: every backward() allocates the gradient reduce bucket, reduce_bucket_size
// elements in the model's dtype, and a second one under overlap_comm (double buffering), whatever
// the number of ranks or of trainable parameters (deepspeed/runtime/zero/stage_1_and_2.py,
// backward: `buf_0 = torch.empty(int(self.reduce_bucket_size), dtype=self.dtype, ...)`, under
// contiguous_gradients). ZeRO-1 allocates none: the engine turns contiguous_gradients and
// overlap_comm off for stage 1 ("meaningless in stage 1", runtime/engine.py _configure_zero_optimizer).
Bytes reduce_bucket_bytes(const Config& c, const PrecisionRecipe& r) {
  const Parallel& par = c.parallel;
  if (par.zero_stage != 2) return Bytes{0};
  return Count(reduce_bucket_elements(c)) * r.weights * (par.overlap_comm ? 2 : 1);  // self.dtype: the model's weights
}

// DeepSpeed ZeRO++ qgZ (runtime/comm/coalesced_collectives.py, all_to_all_quant_reduce), one
// gradient at a time: its int4 codes and their receive buffer (half a byte an element each), then
// the node's reduced share twice in int4 and dequantized to 16 bits (the element count over the
// GPUs of a node): for the largest trainable tensor, whatever else backward holds.
Bytes quantized_gradient_bytes(const Config& c, const ParameterCount& params) {
  const Parallel& par = c.parallel;
  if (!par.zero_quantized_gradients || par.zero_stage != 3 ||
      c.training.implementation.framework != Framework::kDeepspeed || !stores_gradients(c.training)) {
    return Bytes{0};
  }
  const std::int64_t node = std::max<std::int64_t>(
      1, std::min(par.num_gpus, gpus_per_node(c.hardware.gpu, c.hardware.gpus_per_node)));
  const Count n = largest_trainable_tensor(c, params);
  return n * Bytes{1} + ceil_div(n, Count(node)) * Bytes{3};
}

// The blocks' largest linear weight (before tensor parallelism): what a quantiser works on.
Count largest_block_linear(const ParameterCount& params) {
  Count largest = 0;
  for (const TensorGroup& g : params.groups) {
    if (g.linear && g.layer != LayerKind::kNone) largest = max(largest, g.elements_each());
  }
  return largest;
}

// Loading the model, before the first step: the weights as the framework brings them in (their
// own dtype; or fp32 first and then cast tensor by tensor; or, resuming nanoGPT, a checkpoint with
// its optimizer states put on the GPU before the model is built). A quantised base is loaded in
// 16 bit and quantised one tensor at a time (bitsandbytes' Params4bit / Int8Params).
Bytes load_bytes(const Config& c, const ParameterCount& params, const Placement& p, const StaticBytes& st,
                 const PrecisionRecipe& r) {
  Count largest = 0;
  for (const TensorGroup& g : params.groups) largest = max(largest, g.elements_each());
  largest = largest / c.parallel.tensor;
  switch (resolve_implementation(c).load) {
    case LoadPath::kFp32ThenCast: return (p.local_params + params.vision_count) * kFp32Bytes + largest * r.weights;
    case LoadPath::kCheckpointOnGpu: return st.weights * 2 + st.master + st.states;
    case LoadPath::kAuto:
    case LoadPath::kDirect: break;
  }
  const bool quantised = is_peft(c) && c.training.finetune.base_bits < 16;
  if (quantised && c.training.finetune.base_bits == 4 && c.training.finetune.nf4_whole_tensor) {
    // torchao before 0.2 (torchao/dtypes/nf4tensor.py, convert_to_norm_float_weight and
    // quantize_tensor_nearest): the 16-bit weight, its block-scaled copy, and (value - nf4) with
    // its .abs(), each numel × 16 in the weight's dtype, alive together for a moment; the largest
    // quantised weight is the blocks' largest linear.
    return st.weights + largest_block_linear(params) / c.parallel.tensor * r.frozen_base * (2 + 2 * 16);
  }
  return st.weights + (quantised ? largest * r.frozen_base : Bytes{0});
}

// An optimizer stepped in backward, parameter by parameter (training.optimizer_in_backward:
// torchtune's optimizer_in_bwd, GaLore's and Q-GaLore's per-layer hooks, register_post_accumulate_
// grad_hook): while the largest parameter's hook runs, its gradient and that one step's temporaries
// exist beside everything backward holds. Q-GaLore's INT8 weights (training.weight_quant) are
// dequantized, updated and re-quantized with stochastic rounding in the hook
// (q_galore_adamw8bit.py step, _quantize_stochastic_round): the float weight, its clone, and
// w / scales, its ceil and floor, the rounding probability, the random draw and torch.where's
// result, all of the weight's size in the gradient's dtype: eight at once.
Bytes in_backward_step_bytes(const Config& c, const ParameterCount& params, const PrecisionRecipe& r) {
  const Training& t = c.training;
  if (!t.optimizer_in_backward || c.parallel.offload_optimizer) return Bytes{0};
  const Count largest = largest_trainable_tensor(c, params) / c.parallel.tensor;
  const Bytes step = optimizer_step_temporary_bytes(c, params, largest, largest, r);
  const Count largest_linear = largest_block_linear(params);  // Q-GaLore quantizes the blocks' linears
  const Bytes requantize = t.weight_quant == WeightQuant::kInt8
                               ? largest_linear / c.parallel.tensor * stored_gradient_bytes(c, r) * 8
                               : Bytes{0};
  return largest * stored_gradient_bytes(c, r) + max(step, requantize);
}

// Backward passes three high points: the loss and head (every saved tensor alive, the loss's
// V-wide gradients, then the head weight's gradient beside the logits' gradient); the top block
// (its working memory, and its recomputation under checkpointing); and the end (every
// gradient, plus a tied embedding's gradient before it is added to the head's).
// A block's high point in backward: its recomputed tensors and the gradients of its intermediates;
// or the recomputed tensors with what its PEFT layers allocate for a moment as they run again
// (DoRA's weight norm), before any gradient of the block exists; or with what a PEFT layer's
// backward makes (a dense update's gradient and what the method builds from it) beside the
// gradient that reaches the layer, one stream-sized tensor (the block's other gradients come after).
Bytes block_backward_working(const ActivationModel& act) {
  const Bytes recomputed = min(act.layer_recomputed_bytes, act.layer_backward_working_bytes);
  return max(max(act.layer_backward_working_bytes, recomputed + total(act.layer_recompute_temporaries)),
             recomputed + act.layer_gradient_tensor_bytes[1] + total(act.layer_backward_temporaries));
}

Bytes backward_high_point(const Config& c, const ParameterCount& params, const StaticBytes& st,
                          const ActivationModel& act, const LossModel& loss, Bytes alive, Bytes bucket,
                          const ReusedGathered& reused, Bytes root_at_end, const FsdpUnitGradients& unit,
                          const PrecisionRecipe& r) {
  const Bytes head_grad = loss.head_grad_bytes;
  const Bytes loss_and_head = alive + reused.head + reused.blocks +
                              max(loss.backward_bytes, loss.grad_bytes + head_grad + loss.head_input_bytes * 2 + loss.head_dequant_bytes);
  const Bytes working = block_backward_working(act);
  const Bytes top_block = alive + reused.blocks + head_grad + loss.head_input_bytes + working +
                          unit.unsharded + unit.reduce_input;
  // An untied embedding's gradient becomes its .grad as it is; a tied one is added to the head's
  // gradient already there, so for a moment both exist.
  const bool embedding_trains = !trains_some_layers(c) || c.training.finetune.train_embeddings ||
                                c.training.finetune.train_head;
  const Bytes embedding_grad = !is_peft(c) && c.model.tie_word_embeddings && embedding_trains
                                   ? params.component_count(Component::kTokenEmbedding) * r.gradients /
                                         c.parallel.tensor
                                   : Bytes{0};
  // A micro-batch before the last ends holding the accumulated gradients; the last, the sharded ones.
  const Bytes grads_at_end = updates_in_backward(c.training) ? Bytes{0} : st.accumulated_gradients;
  // LOMO / AdaLomo update each parameter in backward: one gradient (and its fp32 copy) at a time.
  const Bytes fused = stores_gradients(c.training)
                          ? in_backward_step_bytes(c, params, r)
                          : fused_update_temporary_bytes(c.training, largest_trainable_tensor(c, params), r);
  // FSDP1's frozen units under reentrant checkpointing (ActivationModel::frozen_unit_input_bytes):
  // each recomputed block's input stays, with its gradient, until backward ends, so the bottom
  // block's backward runs beside the inputs and gradients of every block above it.
  // (The inputs are the checkpoints, already alive, unless offloaded to the host: then backward
  // brings each back, and the hook keeps that copy on the GPU.)
  const Bytes kept_inputs = act.frozen_unit_input_bytes * act.frozen_unit_blocks;
  const Bytes inputs_back = c.training.activation_offload ? kept_inputs : Bytes{0};
  const Bytes bottom_block = kept_inputs.is_zero() ? Bytes{0}
                                                   : alive + reused.blocks + inputs_back + kept_inputs -
                                                         act.frozen_unit_input_bytes + working;
  // Backward frees every saved tensor but leaves ctx attributes, which go with the graph after it.
  const Bytes end = st.resident() + grads_at_end + act.embedding_saved_bytes + embedding_grad + loss.kept_bytes +
                    kept_cache_whole(act) + act.retained_bytes + fused + root_at_end + kept_inputs * Count(2);
  return max(max(max(loss_and_head, top_block), bottom_block), end) + bucket;
}

// DeepSpeed ZeRO-3's largest optimizer sub-group on this GPU (runtime/zero/stage3.py,
// _create_fp16_sub_groups): the parameters' partitions (ceil(numel / ranks) each), in the model's
// order (embeddings, the blocks, then the final norm and the head), fill a sub-group until it
// reaches sub_group_size elements; the parameter that reaches it closes the group, so a group can
// pass that size by up to one partition. A parameter-efficient method's adapters, or a model too
// deep to list, take the bound: one sub-group plus the largest partition.
Count largest_zero3_sub_group(const Config& c, const ParameterCount& params, const Placement& p, Count sharded) {
  const Count size = Count(std::max<std::int64_t>(1, c.parallel.zero_sub_group_size));
  if (sharded <= size) return sharded;
  const Count shards = Count(std::max<std::int64_t>(1, p.zero_shards));
  const Count bound = min(sharded, size + max(Count(0), ceil_div(largest_trainable_tensor(c, params), shards) - Count(1)));
  const std::int64_t layers = (p.dense_layers + p.moe_layers).value();
  if (is_peft(c) || trains_some_layers(c) || layers > 4096 || p.expert > 1 || p.local_params != p.local_count) return bound;
  Count group = 0, largest = 0;
  const auto add = [&](Count tensor, std::int64_t times) {
    const Count part = ceil_div(tensor / p.tensor, shards);
    for (std::int64_t k = 0; k < times && part.value() > 0; ++k) {
      group += part;
      if (group >= size) {
        largest = max(largest, group);
        group = 0;
      }
    }
  };
  for (const TensorGroup& g : params.groups) {
    if (g.layer == LayerKind::kNone && is_embedding(g.component)) add(g.elements_each(), p.held(params, g).value());
  }
  for (std::int64_t i = 0; i < layers; ++i) {
    const LayerKind kind = i < p.dense_layers.value() ? LayerKind::kDense : LayerKind::kMoe;
    for (const TensorGroup& g : params.groups) {
      if (g.layer == kind && params.in_layer(g, i)) add(g.elements_each(), params.per_layer(g).value());
    }
  }
  for (const TensorGroup& g : params.groups) {
    if (g.layer == LayerKind::kNone && !is_embedding(g.component)) add(g.elements_each(), p.held(params, g).value());
  }
  largest = max(largest, group);
  return largest.is_zero() ? bound : min(largest, bound);
}

// DeepSpeed's ZeRO optimizers step on fp32 gradients made at the step: the 16-bit gradient
// partition is flattened into a new tensor and cast to fp32 (`self.flatten(averaged_gradients[i])
// .to(fp32)`), the fp32 copy being the master partition's .grad until the update is done. ZeRO 1/2
// (runtime/zero/stage_1_and_2.py, step) convert every group before one optimizer.step(), so all
// fp32 gradients coexist, beside one group's flattened copy; ZeRO-3 (runtime/zero/stage3.py,
// _prepare_fp32_grad_for_sub_group) steps sub-group by sub-group (sub_group_size, 1e9 elements by
// default), so the largest sub-group's worth at a time.
Bytes deepspeed_fp32_gradients(const Config& c, const ParameterCount& params, const Placement& p,
                               Count sharded_trainable, const PrecisionRecipe& r) {
  if (c.training.implementation.framework != Framework::kDeepspeed || c.parallel.zero_stage < 1) return Bytes{0};
  // The flattened 16-bit copy and its fp32 cast exist together for a moment.
  const Bytes stored = stored_gradient_bytes(c, r);
  const Bytes fp32_copy = stored == kFp32Bytes ? Bytes{0} : Bytes{kFp32Bytes};
  const Count elements =
      c.parallel.zero_stage == 3 ? largest_zero3_sub_group(c, params, p, sharded_trainable) : sharded_trainable;
  return elements * (stored + fp32_copy);
}

// DeepSpeed ZeRO-3's reduce of a full gradient bucket: reduce_scatter_coalesced interleaves the
// bucket's gradients rank by rank into one new flat tensor for the collective
// (runtime/comm/coalesced_collectives.py: `torch.cat(tensor_partitions_lst_with_padding)`), beside
// the bucket itself (StaticBytes::zero_reduce_bucket). The bucket holds at most its size, and never
// more than all the trainable gradients. qgZ reduces through its own buffers instead.
Bytes zero3_reduce_copy_bytes(const Config& c, const Placement& p, const StaticBytes& st, const PrecisionRecipe& r) {
  if (st.zero_reduce_bucket.is_zero() || c.parallel.zero_quantized_gradients) return Bytes{0};
  const Bytes element = stored_gradient_bytes(c, r);
  if (element.is_zero()) return Bytes{0};
  return min(st.zero_reduce_bucket, p.local_trainable * element);
}

}  // namespace

bool keeps_units_gathered(const Config& c) {
  switch (c.parallel.reshard_after_forward) {
    case ReshardAfterForward::kAlways: return false;
    case ReshardAfterForward::kNever: return true;
    case ReshardAfterForward::kAuto: break;
  }
  // torchtitan/distributed/fsdp.py, get_fsdp_reshard_after_forward_policy: "default" is
  // `not pp_enabled` ("to avoid per-microbatch all-gathers").
  return c.training.implementation.framework == Framework::kTorchtitan && c.parallel.pipeline > 1;
}

Bytes gathered_layer_bytes(const Config& c, const ParameterCount& params, const Placement& p,
                           const PrecisionRecipe& r) {
  // With one data-parallel rank there is nothing to gather: the unit is already whole.
  if (c.parallel.zero_stage < 3 || p.zero_shards <= 1) return Bytes{0};
  // torchao's fsdp_pre_all_gather casts a tensorwise Float8 weight's shard to fp8 and gathers the
  // 1-byte data (torchao/float8/fsdp_utils.py): the dense blocks' linear weights at 1 byte.
  const bool fp8_gather = c.training.float8 == Float8::kTensorwise && c.parallel.float8_all_gather && runs_fsdp2(c);
  const auto fp8_linear = [&](const TensorGroup& g) { return fp8_gather && g.linear && g.layer == LayerKind::kDense; };
  // A quantised frozen base is gathered as it is stored, not as a 16-bit copy: bitsandbytes packs
  // two 4-bit codes per byte into a storage dtype that transformers' Trainer sets FSDP's parameter
  // dtype to (trainer.py, _fsdp_qlora_plugin_updates: mixed precision = bnb_4bit_quant_storage;
  // bitsandbytes functional.py quantize_4bit packs into quant_storage), and GPTQ's packed int32
  // codes are flattened as they are: the block's frozen tensors at their stored bytes, less a 4-bit
  // tensor's quantisation state, which is no parameter and stays whole on every GPU
  // (quant_state_bytes_each). 4-bit weights that FSDP2 leaves out (fsdp2_leaves_4bit_whole) are
  // never gathered.
  const Finetune& f = c.training.finetune;
  const bool quantized_peft = is_peft(c) && f.base_bits < 16;
  const QuantizedBase base = quantized_base(c);
  const bool whole_4bit = fsdp2_leaves_4bit_whole(c);
  const auto frozen_gathered_each = [&](const TensorGroup& g) {
    return whole_4bit && quantized_tensor(g, f, base) ? Bytes{0}
                                                      : frozen_bytes_each(g, f, r.gathered, base) - quant_state_bytes_each(g, f, base);
  };
  if (keeps_units_gathered(c)) {
    // Every block of the stage stays gathered from its forward to its backward (and, inside a
    // pipeline schedule, across micro-batches: torch.distributed.pipelining's stage.py runs every
    // backward but the last with set_reshard_after_backward(False)).
    Bytes blocks{0};
    for (const TensorGroup& g : params.groups) {
      if (g.layer == LayerKind::kNone) continue;
      const Bytes each = quantized_peft ? frozen_gathered_each(g) : g.elements_each() * (fp8_linear(g) ? Bytes{1} : r.gathered);
      blocks += each * p.held(params, g);
    }
    return p.as_nominal(blocks / c.parallel.tensor);
  }
  if (quantized_peft) {
    // One block of each kind (a hybrid model's two mixers apart): the largest is gathered.
    Bytes largest{0};
    for (const bool linear : {false, true}) {
      Bytes dense{0}, moe{0};
      for (const TensorGroup& g : params.groups) {
        if (g.layer == LayerKind::kNone) continue;
        const Bytes each = frozen_gathered_each(g) * params.per_layer_in(g, linear);
        (g.layer == LayerKind::kMoe ? moe : dense) += each;
      }
      largest = max(largest, max(dense, moe));
    }
    return p.as_nominal(largest / c.parallel.tensor);
  }
  // DeepSpeed ZeRO++ qwZ gathers int8 codes (one byte an element; the scales, one per group of
  // thousands, are left out) and dequantizes them into the 16-bit block: both for a moment.
  const bool int8_gather = c.parallel.zero_quantized_weights && c.training.implementation.framework == Framework::kDeepspeed;
  Bytes block = max(params.per_dense_layer_count, params.per_moe_layer_count) * (r.gathered + (int8_gather ? Bytes{1} : Bytes{0}));
  if (fp8_gather && params.per_dense_layer_count >= params.per_moe_layer_count && !c.model.hybrid_attention()) {
    Count linear = 0;
    for (const TensorGroup& g : params.groups) {
      if (fp8_linear(g)) linear += g.elements_each() * params.per_layer(g);
    }
    block = block - linear * (r.gathered - Bytes{1});
  } else if (fp8_gather && params.per_dense_layer_count >= params.per_moe_layer_count) {
    // A hybrid model's larger kind of block, its linears in fp8.
    Bytes largest{0};
    for (const bool linear_block : {false, true}) {
      Count all = 0, linear = 0;
      for (const TensorGroup& g : params.groups) {
        if (g.layer != LayerKind::kDense) continue;
        const Count n = g.elements_each() * params.per_layer_in(g, linear_block);
        all += n;
        if (fp8_linear(g)) linear += n;
      }
      largest = max(largest, all * r.gathered - linear * (r.gathered - Bytes{1}));
    }
    block = largest + (int8_gather ? params.per_dense_layer_count * Bytes{1} : Bytes{0});
  }
  return p.as_nominal(block / c.parallel.tensor);
}

// FSDP's root unit on this GPU, before sharding: the tensors outside the blocks (embeddings, final
// norm, head) that `keep` selects. An encoder-decoder's blocks are listed without a layer kind, so
// the component decides.
namespace {
template <class Keep>
Count root_elements(const Config& c, const ParameterCount& params, const Placement& p, Keep keep) {
  Count outside = 0;
  for (const TensorGroup& g : params.groups) {
    // (A trained vision tower's blocks are FSDP units of their own: TensorGroup::unit.)
    if (g.layer == LayerKind::kNone && !is_block_component(g.component) && !g.unit && keep(g)) {
      outside += g.elements_each() * p.held(params, g) / c.parallel.tensor;
    }
  }
  return outside;
}

// Whether accelerate's FSDP2 gives the embedding and the tail (final norm, head) units of their own
// (under ZeRO-2 too: the tail's gradients then go at its own post-backward, at backward's start).
bool root_carved(const Config& c, const Placement& p) {
  return c.parallel.zero_stage >= 2 && p.zero_shards > 1 && runs_accelerate(c.training.implementation.framework) &&
         runs_fsdp2(c) && !c.model.tie_word_embeddings && !c.model.is_encoder_decoder &&
         c.model.output_head == OutputHead::kLm;
}

bool in_tail(const TensorGroup& g) { return g.component == Component::kFinalNorm || g.component == Component::kHead; }
}  // namespace

FsdpRootUnits fsdp_root_units(const Config& c, const ParameterCount& params, const Placement& p,
                              const PrecisionRecipe& r) {
  if (c.parallel.zero_stage < 3 || !root_carved(c, p)) return {};
  const auto gathered = [&](auto keep) { return p.as_nominal(root_elements(c, params, p, keep) * r.gathered); };
  // The embedding unit is gathered again in backward only when gradient reaches its output: it
  // trains, or a PEFT run's checkpointing made its output require grad (transformers'
  // enable_input_require_grads), which fires FSDP2's pre-backward hook on that output.
  const Finetune& ft = c.training.finetune;
  const bool trains = !is_peft(c) && (!trains_some_layers(c) || ft.train_embeddings);
  const bool input_grad = is_peft(c) && c.training.checkpointing != Checkpointing::kNone;
  return {gathered(in_tail), gathered([](const TensorGroup& g) { return g.component == Component::kTokenEmbedding; }),
          trains || input_grad};
}

// torch/distributed/fsdp/_runtime_utils.py (_post_forward_reshard: "Do not free the root's
// parameters in the post-forward for FULL_SHARD"); torch/distributed/fsdp/_fully_shard/
// _fsdp_state.py (_lazy_init: "For the root, do not reshard after forward").
bool fsdp_root_stays_gathered(const Config& c, const Placement& p) {
  return c.parallel.zero_stage >= 3 && p.zero_shards > 1 && runs_torch_data_parallel(c.training.implementation.framework);
}

Bytes fsdp_root_gathered_bytes(const Config& c, const ParameterCount& params, const Placement& p,
                               const PrecisionRecipe& r) {
  if (!fsdp_root_stays_gathered(c, p)) return Bytes{0};
  const bool carved = root_carved(c, p);
  // With a vision tower, its pieces outside the classes' block modules sit in the root too.
  return p.as_nominal(root_elements(c, params, p, [carved](const TensorGroup& g) {
                        return !carved || (!in_tail(g) && g.component != Component::kTokenEmbedding);
                      }) *
                      r.gathered) +
         vision_root_gathered_bytes(c, params, r);
}

FsdpSharding fsdp_sharding(const Config& c, const Placement& p) {
  const Framework f = c.training.implementation.framework;
  if (c.parallel.zero_stage < 2 || p.zero_shards <= 1 || !runs_torch_data_parallel(f)) return FsdpSharding::kNone;
  return runs_fsdp2(c) ? FsdpSharding::kFsdp2 : FsdpSharding::kFsdp1;
}

FsdpUnitGradients fsdp_unit_gradients(const Config& c, const ParameterCount& params, const Placement& p,
                                      const PrecisionRecipe& r) {
  const Training& t = c.training;
  const FsdpSharding fsdp = fsdp_sharding(c, p);
  if (fsdp == FsdpSharding::kNone || is_peft(c) || trains_some_layers(c) || !stores_gradients(t) ||
      updates_in_backward(t) || defers_gradient_sync(c, p)) {
    return {};
  }
  const Count unit = max(params.per_dense_layer_count, params.per_moe_layer_count) / c.parallel.tensor;
  const Bytes compute = r.gathered.is_zero() ? r.weights : r.gathered;
  return {p.as_nominal(unit * compute),
          fsdp == FsdpSharding::kFsdp2 ? p.as_nominal(unit * fsdp2_reduce_element(c, r)) : Bytes{0}};
}

// FSDP's root unit at the end of backward (torch/distributed/fsdp: the root's post-backward runs last,
// from the final callback). Under full sharding its parameters (the embeddings, the final norm and
// the head) are still gathered; under full or gradient sharding the gradients of the whole unit are
// unsharded in the compute dtype: the head's made at backward's start and kept, the embedding's just
// made. FSDP2 (torchtitan, torchtune) then copies them into one flat reduce-scatter input in the
// reduce dtype, the sharded gradients' (fully_shard/_fsdp_collectives.py, foreach_reduce:
// `torch.empty(reduce_scatter_input_numel, dtype=reduce_dtype)`, foreach_reduce_scatter_copy_in);
// FSDP1 reduce-scatters the flat gradient in place.
Bytes fsdp_root_at_backward_end(const Config& c, const ParameterCount& params, const Placement& p,
                                const PrecisionRecipe& r) {
  const Framework f = c.training.implementation.framework;
  if (c.parallel.zero_stage < 2 || p.zero_shards <= 1 || !runs_torch_data_parallel(f)) return Bytes{0};
  // accelerate's carved root: the embedding is gathered again for its backward; the tail's gradients
  // were reduce-scattered after the head's backward.
  const bool carved = root_carved(c, p);
  const FsdpRootUnits units = fsdp_root_units(c, params, p, r);
  const Bytes gathered =
      fsdp_root_gathered_bytes(c, params, p, r) + (units.embedding_in_backward ? units.embedding : Bytes{0});
  // Deferred gradient sync already holds every unsharded gradient (StaticBytes::accumulated_gradients).
  if (is_peft(c) || !stores_gradients(c.training) || updates_in_backward(c.training) || defers_gradient_sync(c, p)) {
    return gathered;
  }
  // Training some blocks: the root's gradients are those of the embeddings or the head that train.
  const Finetune& ft = c.training.finetune;
  const bool some = trains_some_layers(c);
  const Count outside = root_elements(c, params, p, [&](const TensorGroup& g) {
    return !(carved && in_tail(g)) && (!some || is_vision(g.component) ||
                                       (is_embedding(g.component) ? ft.train_embeddings : ft.train_head));
  });
  const Bytes compute = r.gathered.is_zero() ? r.weights : r.gathered;
  return gathered + p.as_nominal(outside * compute + (runs_fsdp2(c) ? outside * fsdp2_reduce_element(c, r) : Bytes{0}));
}

ReusedGathered deepspeed_reused_gathered(const Config& c, const ParameterCount& params, const Placement& p,
                                         const PrecisionRecipe& r) {
  // deepspeed/runtime/zero/partitioned_param_coordinator.py, __params_to_release: after a module
  // runs, its parameters stay gathered if they appear again among the modules of the step's trace
  // before max_reuse_distance parameters have been traversed. After forward, the trace runs on
  // into backward: the head's backward comes next; block L − k (k from the top) comes back after k
  // blocks of forward, the head twice and k blocks of backward (2kW + 2H parameters).
  const double reach = double(c.parallel.zero3_max_reuse_distance);
  if (c.training.implementation.framework != Framework::kDeepspeed || c.parallel.zero_stage != 3 ||
      p.zero_shards <= 1 || forward_only(c.training) || reach <= 0.0) {
    return {};
  }
  const Count head = c.model.output_head != OutputHead::kLm ? Count(0)
                     : c.model.tie_word_embeddings       ? params.component_count(Component::kTokenEmbedding)
                                                         : params.component_count(Component::kHead);
  const Count block = max(params.per_dense_layer_count, params.per_moe_layer_count);
  std::int64_t blocks = 0;
  const double h = double(head.value()), w = double(block.value());
  while (blocks < c.model.num_hidden_layers && 2.0 * double(blocks) * w + 2.0 * h < reach) ++blocks;
  // The block in use is already counted (gathered_layer_bytes).
  const Count extra_blocks = Count(std::max<std::int64_t>(0, blocks - 1));
  const Bytes kept_blocks = p.as_nominal(block * extra_blocks * r.gathered / c.parallel.tensor);
  return {p.as_nominal(head * r.gathered / c.parallel.tensor), kept_blocks};
}

ReusedGathered gathered_across_forward_end(const Config& c, const ParameterCount& params, const Placement& p,
                                           const PrecisionRecipe& r) {
  ReusedGathered out = deepspeed_reused_gathered(c, params, p, r);
  out.head += fsdp_root_units(c, params, p, r).tail;
  return out;
}

Bytes optimizer_temporaries(const Config& c, const ParameterCount& params, const Placement& p,
                            const PrecisionRecipe& r) {
  const Training& t = c.training;
  // An offloaded optimizer steps on the CPU (DeepSpeed's CPU Adam): no temporaries on the GPU.
  if (updates_in_backward(t) || c.parallel.offload_optimizer) return Bytes{0};
  const bool zero = c.parallel.zero_stage >= 1;
  const Count sharded_trainable = zero ? p.local_trainable / p.zero_shards : p.local_trainable;
  const Count largest = zero ? Count(0) : largest_trainable_tensor(c, params);
  return optimizer_step_temporary_bytes(c, local_parameters(params, p), sharded_trainable, largest, r) +
         deepspeed_fp32_gradients(c, params, p, sharded_trainable, r);
}

// llm.c allocates each buffer once, at its first use, and never frees one (train_gpt2.cu: the
// activations at the first forward, the gradients and GradActTensors' bt4c (B·T·4C) and
// residual3 (B·T·C) at the first backward): from the second step on every phase holds all of it.
Bytes llmc_everything(const Config& c, const StaticBytes& st, const ActivationModel& act, const LossModel& loss,
                      const PrecisionRecipe& r) {
  const Training& t = c.training;
  const Count tokens = Count(t.micro_batch_size) * Count(t.seq_len);
  return st.resident() + st.accumulated_gradients + act.saved_bytes + loss.forward_bytes +
         tokens * Count(c.model.hidden_size) * Count(5) * r.compute;
}

Bytes between_steps_bytes(const Config& c, const StaticBytes& st, const ActivationModel& act, const LossModel& loss,
                          const PrecisionRecipe& r) {
  if (c.training.implementation.framework == Framework::kLlmC) return llmc_everything(c, st, act, loss, r);
  // zero_grad(set_to_none=True) after the step frees the gradients (HF Trainer, accelerate's
  // examples, torchtune, LitGPT, nanoGPT); zeroed in place they stay. A loop that zeroes them at the
  // next step's start instead keeps them until then: breakdown.gradients more.
  const Bytes grads = c.training.zero_grad_set_to_none ? Bytes{0} : st.accumulated_gradients;
  return st.resident() + grads + loss.kept_bytes + kept_cache_whole(act) + kept_graph(act);
}

// The step in its steady state (optimizer states already exist).
std::vector<Phase> step_phases(const Config& c, const ParameterCount& params, const Placement& p,
                               const StaticBytes& st, const ActivationModel& act, const LossModel& loss,
                               Bytes weight_copies, const PrecisionRecipe& r) {
  const Training& t = c.training;
  const Bytes alive = alive_through_step(c, params, p, st, act, loss, weight_copies, r);
  const Bytes bucket = reduce_bucket_bytes(c, r) + quantized_gradient_bytes(c, params) +
                       zero3_reduce_copy_bytes(c, p, st, r);
  const ReusedGathered reused = gathered_across_forward_end(c, params, p, r);
  std::vector<Phase> phases = {{"load", "Loading the model", load_bytes(c, params, p, st, r)}};
  const Bytes forward = alive + (act.kv_cache_kept ? act.kv_cache_total_bytes : act.kv_cache_bytes) +
                        previous_graph(c, act) + reused.blocks;
  // A block's PEFT layers allocating for a moment in forward (DoRA's weight norm), the last block's
  // beside everything the blocks below it saved.
  const Bytes temporaries = total(act.layer_forward_temporaries);
  if (!temporaries.is_zero()) phases.push_back({"forward_block", "Forward (inside a block)", forward + temporaries});
  phases.push_back({"forward", "End of forward (loss computed)", forward + loss.forward_bytes + reused.head});
  if (forward_only(t)) {
    phases.push_back({"optimizer_step", "MeZO perturbation and update",
                      st.weights + optimizer_temporaries(c, params, p, r)});
    return phases;
  }
  phases.push_back({"backward", "Backward (high point)",
                    backward_high_point(c, params, st, act, loss, alive, bucket, reused,
                                        fsdp_root_at_backward_end(c, params, p, r),
                                        fsdp_unit_gradients(c, params, p, r), r)});
  if (!updates_in_backward(t)) {
    phases.push_back({"optimizer_step", "Optimizer step",
                      st.resident() + st.gradients + loss.kept_bytes + kept_cache_whole(act) +
                          kept_graph(act) + optimizer_temporaries(c, params, p, r)});
  }
  if (c.training.implementation.framework == Framework::kLlmC) {
    const Bytes everything = llmc_everything(c, st, act, loss, r);
    for (Phase& ph : phases) {
      if (std::string_view(ph.name) != "load") ph.bytes = max(ph.bytes, everything);
    }
  }
  return phases;
}

}  // namespace memfit
