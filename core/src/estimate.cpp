#include "memfit/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "activations.hpp"
#include "optimizer_states.hpp"
#include "text.hpp"

namespace memfit {

namespace {

#include "accuracy_band.inc"

constexpr std::int64_t kMiB = 1LL << 20;

// The seeds' framework overhead (seeds/001 estimate_memory: "512 MB baseline", MiB in fact).
constexpr std::int64_t kSeedOverheadBytes = 512 * kMiB;

// PyTorch's caching allocator rounds every block up to 512 bytes and carves large requests from
// 2 MiB / 20 MiB segments; what it reserves beyond what tensors hold is fragmentation. The seeds
// put it at 10–20 %; measured training loops with expandable segments off typically show 5–15 %
// (see docs/accuracy.md). The point estimate is the middle of the measured range.
constexpr double kFragmentationPoint = 0.08;
constexpr double kFragmentationLow = 0.03;
constexpr double kFragmentationHigh = 0.20;
constexpr double kSeedFragmentationHigh = 0.20;

// The CUDA context without lazy module loading (CUDA < 11.7, or CUDA_MODULE_LOADING=EAGER): every
// kernel image is loaded at start. Hugging Face measured 1343 MB (MiB) on a V100 for
// `torch.ones((1, 1)).to("cuda")` ("Efficient Training on a Single GPU"); the device total's
// upper bound allows for it.
constexpr std::int64_t kEagerContextBytes = 1343LL << 20;  // seeds/000: "maintain a 10-20% safety margin"

Exact scale(Exact bytes, double factor) {
  // Sizes stay far below 2^53 whenever they have not overflowed, so the rounding here is exact to
  // the byte for every realistic input; overflowed values keep their flag.
  const double scaled = std::ceil(static_cast<double>(bytes.value()) * factor);
  if (bytes.overflow() || !(scaled < 9.0e18)) return Exact(INT64_MAX) * 2;
  return Exact(static_cast<std::int64_t>(scaled));
}

bool is_lora(const Config& c) { return c.training.finetune.method == FinetuneMethod::kLora; }

// Trainable parameters: everything for a full fine-tune; for LoRA, A (r × in) and B (out × r) on
// every targeted linear layer (Hu et al. 2021).
Exact lora_parameter_count(const ParameterCount& params, const Finetune& f) {
  Exact total = 0;
  for (const TensorGroup& g : params.groups) {
    if (g.cols.value() > 0 && (g.lora_target & f.lora_targets)) {
      total += g.count * Exact(f.lora_rank) * (g.rows + g.cols);
    }
  }
  return total;
}

// Frozen base weights for LoRA: 16-bit, int8 (LLM.int8(): one byte per weight and an fp32 scale
// per output row), or NF4 (QLoRA: half a byte per weight, an 8-bit absmax per 64-weight block
// with double quantisation, an fp32 second-level absmax per 256 blocks, and a 16-entry fp32 code
// table plus an fp32 offset per tensor). Only the linear layers inside the blocks are quantised;
// embeddings, norms and the head stay 16-bit, as bitsandbytes / transformers leave them.
constexpr std::int64_t kNf4BlockElements = 64;
constexpr std::int64_t kNf4SecondLevelBlocks = 256;
constexpr std::int64_t kNf4PerTensorBytes = 16 * 4 + 4;  // NF4 code table (16 fp32) + offset (fp32)

Exact frozen_base_bytes(const ParameterCount& params, std::int64_t base_bits, std::int64_t half_bytes) {
  Exact total = 0;
  for (const TensorGroup& g : params.groups) {
    const Exact n = g.elements_each();
    Exact each;
    if (!g.linear || base_bits == 16) {
      each = n * half_bytes;
    } else if (base_bits == 8) {
      each = n + g.rows * 4;
    } else {
      const Exact blocks = ceil_div(n, kNf4BlockElements);
      each = ceil_div(n, 2) + blocks + ceil_div(blocks, kNf4SecondLevelBlocks) * 4 + kNf4PerTensorBytes;
    }
    total += each * g.count;
  }
  return total;
}

// Parameters held by the busiest pipeline stage, divided by tensor parallelism. Blocks are split
// evenly by layer; the first stage holds the embeddings, the last the head (Megatron's layout).
Exact stage_share(Exact block, Exact first_stage_extra, Exact last_stage_extra, const Parallel& p, const ModelSpec& m) {
  const Exact layers_per_stage = ceil_div(m.num_hidden_layers, p.pipeline);
  const Exact block_share = mul_div(block, layers_per_stage, m.num_hidden_layers);
  Exact stage = p.pipeline == 1 ? block_share + first_stage_extra + last_stage_extra
                                : block_share + max(first_stage_extra, last_stage_extra);
  return stage / p.tensor;
}

Fit make_fit(const Gpu& gpu, Exact need, double budget_fraction) {
  Fit f;
  f.gpu = &gpu;
  f.budget_bytes = Exact(static_cast<std::int64_t>(static_cast<double>(gpu.memory_bytes) * budget_fraction));
  f.need_bytes = need;
  f.headroom_bytes = Exact(gpu.memory_bytes) - need;
  if (need.overflow() || need > Exact(gpu.memory_bytes)) f.verdict = Verdict::kDoesNotFit;
  else if (need > f.budget_bytes) f.verdict = Verdict::kTight;
  else f.verdict = Verdict::kFits;
  return f;
}

// The seeds' convention (seeds/001 estimate_memory, the 14P rule): P·(2 + 4 + optimizer) bytes,
// activations L·B·T·(34d + 5hT) (one layer's worth with full checkpointing), a 512 MiB overhead,
// no logits, no master copy, no phases: the total is a plain sum.
void estimate_seed_convention(const Config& c, Estimate& e) {
  const Recipe r = recipe_for(Precision::kSeed14p);
  const Exact p = e.parameter_count;
  e.breakdown.parameters = p * r.weight_bytes;
  e.breakdown.gradients = p * r.gradient_bytes;
  e.breakdown.optimizer_states = seed_optimizer_state_bytes(c.training.optimizer, p);
  e.breakdown.activations = seed_activation_bytes(c);
  e.breakdown.overhead = c.hardware.overhead_bytes >= 0 ? Exact(c.hardware.overhead_bytes) : Exact(kSeedOverheadBytes);
  const Exact allocated = e.breakdown.parameters + e.breakdown.gradients + e.breakdown.optimizer_states +
                          e.breakdown.activations;
  e.phases = {{"total", "Parameters + gradients + optimizer states + activations", allocated}};
  e.peak_allocated_bytes = allocated;
  // The seeds' M (this plus the overhead) is a floor: "actual usage often runs 10-20% higher".
  // The point estimate is the floor; the range runs from it to the seeds' +20 %.
  e.fragmentation = c.hardware.fragmentation >= 0 ? c.hardware.fragmentation : 0.0;
  e.peak_reserved_bytes = scale(allocated, 1.0 + e.fragmentation);
  e.peak_reserved_low_bytes = e.peak_reserved_bytes;
  e.peak_reserved_high_bytes = scale(allocated, 1.0 + std::max(e.fragmentation, kSeedFragmentationHigh));
  e.notes.push_back("seed_14p: 2-byte parameters, 4-byte gradients, 8-byte Adam states, no master copy (the 14P rule); "
                    "activations L·B·T·(34d + 5hT) bytes; overhead 512 MiB; the total is a sum (seeds/000, seeds/001).");
  if (c.training.optimizer == Optimizer::kAdafactor) {
    e.notes.push_back("adafactor under seed_14p uses the seeds' 0.1 states-per-parameter approximation.");
  }
}

}  // namespace

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kFits: return "fits";
    case Verdict::kTight: return "tight";
    case Verdict::kDoesNotFit: return "does_not_fit";
  }
  return "unknown";
}

Recipe recipe_for(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return {"fp32", "fp32 weights, gradients and optimizer states", 4, 4, 0, 4, 4};
    case Precision::kFp16Mixed:
      return {"fp16_mixed", "PyTorch AMP: fp32 weights, gradients and states; fp16 autocast copies of the weights "
                            "and fp16 activations", 4, 4, 0, 4, 2};
    case Precision::kBf16Mixed:
      return {"bf16_mixed", "PyTorch AMP: fp32 weights, gradients and states; bf16 autocast copies of the weights "
                            "and bf16 activations", 4, 4, 0, 4, 2};
    case Precision::kFp16Master:
      return {"fp16_master", "Megatron / DeepSpeed: fp16 weights, fp32 main gradients, fp32 master weights, fp32 "
                             "optimizer states", 2, 4, 4, 4, 2};
    case Precision::kBf16Master:
      return {"bf16_master", "Megatron / DeepSpeed: bf16 weights, fp32 main gradients, fp32 master weights, fp32 "
                             "optimizer states", 2, 4, 4, 4, 2};
    case Precision::kBf16:
      return {"bf16", "pure bf16: weights, gradients and optimizer states all bf16 (no master copy)", 2, 2, 0, 2, 2};
    case Precision::kFp8Mixed:
      return {"fp8_mixed", "Transformer Engine FP8: bf16 weights with FP8 copies for the matmuls, fp32 main "
                           "gradients, fp32 master weights and states", 2, 4, 4, 4, 2};
    case Precision::kBf16Fsdp:
      return {"bf16_fsdp", "FSDP mixed precision (param_dtype bf16): fp32 weights, gradients and states kept "
                           "sharded; each unit's weights gathered in bf16 for compute; bf16 activations",
              4, 4, 0, 4, 2};
    case Precision::kSeed14p:
      return {"seed_14p", "the seeds' convention: 2-byte parameters, 4-byte gradients, 8-byte Adam states, no "
                          "master copy", 2, 4, 0, 4, 2};
  }
  return recipe_for(Precision::kBf16Mixed);
}

Estimate estimate(const Config& c) {
  Estimate e;
  e.config = c;
  e.errors = validate(c);
  if (!e.errors.empty()) return e;

  e.parameters = count_parameters(c.model);
  e.parameter_count = c.model.nominal_parameter_count > 0 ? Exact(c.model.nominal_parameter_count)
                                                           : e.parameters.total_count;
  const bool lora = is_lora(c);
  e.trainable_parameter_count = lora ? lora_parameter_count(e.parameters, c.training.finetune) : e.parameter_count;
  // With LoRA the model holds its base and the adapters: sum(p.numel()) counts both.
  const Exact base_parameter_count = e.parameter_count;
  if (lora) e.parameter_count += e.trainable_parameter_count;
  if (c.model.nominal_parameter_count > 0) {
    e.notes.push_back("The memory model uses the nominal parameter count " +
                      detail::group_digits(c.model.nominal_parameter_count) + "; the architecture counts " +
                      detail::group_digits(e.parameters.total_count.value()) + ".");
  }

  const Gpu& gpu = *find_gpu(c.hardware.gpu);
  if (c.training.precision == Precision::kSeed14p) {
    estimate_seed_convention(c, e);
  } else {
    const Recipe r = recipe_for(c.training.precision);
    const Parallel& par = c.parallel;
    // ZeRO / FSDP shard over every rank that holds the same layers: data × context parallel
    // (context-parallel ranks hold identical weights; torchtitan and Megatron's distributed
    // optimizer shard across both).
    const Exact replicas = Exact(par.num_gpus) / (Exact(par.tensor) * par.pipeline);
    const Exact zero_shards = par.zero_stage > 0 ? replicas : Exact(1);
    e.notes.push_back(std::string(r.name) + ": " + r.description + ".");

    // Where the parameters sit, for the busiest stage.
    // Expert parallelism places num_experts / expert of each layer's routed experts on a GPU.
    const Exact routed_experts = e.parameters.component_count(Component::kExperts);
    const Exact block_params = e.parameters.block_count() - routed_experts + routed_experts / par.expert;
    const Exact first_extra = e.parameters.component_count(Component::kTokenEmbedding) +
                              e.parameters.component_count(Component::kPositionEmbedding) +
                              e.parameters.component_count(Component::kTokenTypeEmbedding) +
                              e.parameters.component_count(Component::kEmbeddingNorm);
    const Exact last_extra = e.parameters.total_count - e.parameters.block_count() - first_extra;
    const Exact local_fraction_num = stage_share(block_params, first_extra, last_extra, par, c.model);
    // Scale nominal counts (if any) by the same share as the counted architecture.
    const Exact local_params = mul_div(base_parameter_count, local_fraction_num, max(e.parameters.total_count, Exact(1)));
    const Exact local_trainable = lora ? e.trainable_parameter_count / par.tensor : local_params;

    // Weights.
    Exact weights;
    if (lora) {
      const std::int64_t half = c.training.precision == Precision::kFp32 ? 4 : 2;
      const Exact base = frozen_base_bytes(e.parameters, c.training.finetune.base_bits, half);
      weights = mul_div(base, local_fraction_num, max(e.parameters.total_count, Exact(1))) +
                local_trainable * r.weight_bytes;
    } else {
      weights = local_params * r.weight_bytes;
    }
    if (par.zero_stage >= 3) weights = weights / zero_shards;
    Exact grads = local_trainable * r.gradient_bytes;
    if (par.zero_stage >= 2) grads = grads / zero_shards;
    Exact master = local_trainable * r.master_bytes;
    Exact states = optimizer_state_bytes(c.training.optimizer, e.parameters, e.trainable_parameter_count, lora,
                                         c.training.finetune, r.state_element_bytes);
    states = mul_div(states, local_trainable, max(e.trainable_parameter_count, Exact(1)));
    if (par.zero_stage >= 1) {
      master = master / zero_shards;
      states = states / zero_shards;
    }
    if (is_paged(c.training.optimizer)) {
      e.breakdown.offloaded_bytes += states;
      e.notes.push_back("Paged optimizer: states live in CUDA unified memory and are paged to the CPU under "
                        "pressure; they are shown apart and not counted as allocated.");
      states = 0;
    }
    if (par.offload_optimizer) {
      e.breakdown.offloaded_bytes += states + master;
      states = master = 0;
    }
    if (par.offload_params) {
      e.breakdown.offloaded_bytes += weights;
      weights = 0;
    }
    e.breakdown.parameters = weights;
    e.breakdown.gradients = grads;
    e.breakdown.master_weights = master;
    e.breakdown.optimizer_states = states;

    // Activations and logits for one micro-batch.
    const ActivationModel act = activation_model(c, e.parameters);
    e.breakdown.activations = act.saved_bytes;
    e.breakdown.logits_and_loss = act.logits_peak_bytes;
    e.activation_terms_per_layer = act.layer_terms;
    e.breakdown.weight_copies =
        mul_div(weight_copy_bytes(c, e.parameters), local_fraction_num, max(e.parameters.total_count, Exact(1)));
    if (par.zero_stage >= 3) {
      e.notes.push_back("ZeRO-3 / FSDP gathers one layer's full parameters at a time; that buffer is included "
                        "in the backward phase.");
    }

    // The step, phase by phase (steady state: optimizer states already exist).
    const Exact statics = weights + master + states;
    const Exact grads_in_forward = c.training.grad_accum_steps > 1 && !c.training.optimizer_in_backward ? grads : Exact(0);
    // ZeRO-3 / FSDP gathers one unit (a block) at a time, in the dtype the matmuls use.
    const std::int64_t compute_weight_bytes = c.training.precision == Precision::kFp32 ? 4 : 2;
    const Exact gathered_layer =
        par.zero_stage >= 3 ? max(e.parameters.per_dense_layer_count, e.parameters.per_moe_layer_count) *
                                  compute_weight_bytes / par.tensor
                            : Exact(0);
    const Exact forward = statics + grads_in_forward + e.breakdown.weight_copies + act.saved_bytes +
                          act.logits_forward_bytes + gathered_layer;
    // Backward starts with every saved tensor alive plus the loss gradient; gradients then appear
    // as activations are freed, so the high point is at its start or at its end, plus the
    // working memory of one layer's backward (and its recomputation under checkpointing).
    // Backward passes three high points: the loss and head (every saved tensor alive, the loss's
    // V-wide gradients, then the head weight's gradient beside the logits' gradient); the top
    // block (its working memory, and its recomputation under checkpointing); and the end
    // (every gradient, plus the embedding's dense gradient before it is accumulated).
    const Exact grads_during_backward = c.training.optimizer_in_backward ? Exact(0) : grads;
    const bool embedding_trainable = !lora;
    const Exact grad_bytes_per_element = r.gradient_bytes;
    const Exact vocab_rows = e.parameters.component_count(Component::kTokenEmbedding) / c.model.hidden_size;
    Exact head_grad = 0;
    if (!lora && c.model.output_head == OutputHead::kLm) {
      const Exact head_elements = c.model.tie_word_embeddings ? e.parameters.component_count(Component::kTokenEmbedding)
                                                               : e.parameters.component_count(Component::kHead);
      head_grad = head_elements * grad_bytes_per_element / par.tensor;
    }
    const Exact alive = statics + grads_in_forward + e.breakdown.weight_copies + act.saved_bytes + gathered_layer;
    const Exact loss_and_head = alive + max(act.logits_backward_bytes,
                                            act.logits_grad_bytes + head_grad + act.head_input_bytes * 2);
    const Exact top_block = alive + head_grad + act.head_input_bytes + act.layer_backward_working_bytes;
    // An untied embedding's gradient becomes its .grad as it is; a tied one is added to the head's
    // gradient already there, so for a moment both exist.
    const Exact embedding_grad = embedding_trainable && c.model.tie_word_embeddings
                                     ? vocab_rows * c.model.hidden_size * grad_bytes_per_element / par.tensor
                                     : Exact(0);
    const Exact backward_end = statics + grads_during_backward + act.embedding_saved_bytes + embedding_grad;
    const Exact backward = max(max(loss_and_head, top_block), backward_end);
    const Exact sharded_trainable = par.zero_stage >= 1 ? local_trainable / zero_shards : local_trainable;
    const Exact largest_tensor = par.zero_stage >= 1 ? Exact(0) : largest_trainable_tensor(e.parameters, lora,
                                                                                          c.training.finetune);
    const Exact step = statics + grads + optimizer_step_temporary_bytes(c, sharded_trainable, largest_tensor, r);
    e.phases = {{"forward", "End of forward (loss computed)", forward},
                {"backward", "Backward (high point)", backward}};
    if (!c.training.optimizer_in_backward) e.phases.push_back({"optimizer_step", "Optimizer step", step});
    Exact peak = 0;
    for (const Phase& ph : e.phases) peak = max(peak, ph.bytes);
    e.peak_allocated_bytes = peak;
    e.breakdown.overhead = c.hardware.overhead_bytes >= 0 ? Exact(c.hardware.overhead_bytes) : Exact(gpu.context_bytes);
    e.fragmentation = c.hardware.fragmentation >= 0 ? c.hardware.fragmentation : kFragmentationPoint;
    e.peak_reserved_bytes = scale(peak, 1.0 + e.fragmentation);
    e.peak_reserved_low_bytes = scale(peak, 1.0 + kFragmentationLow);
    e.peak_reserved_high_bytes = scale(peak, 1.0 + kFragmentationHigh);
    for (const std::string& note : act.notes) e.notes.push_back(note);
  }

  const Breakdown& sb = e.breakdown;
  const Exact statics = sb.parameters + sb.gradients + sb.optimizer_states + sb.master_weights + sb.offloaded_bytes;
  // Rounded to 1e-6: a ratio for people, not a byte count.
  e.static_bytes_per_parameter =
      std::round(1e6 * static_cast<double>(statics.value()) * static_cast<double>(c.parallel.num_gpus) /
                 static_cast<double>(std::max<std::int64_t>(1, base_parameter_count.value()))) / 1e6;
  if (lora) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "LoRA: %.2f bytes of weights, gradients and optimizer states per base parameter (full "
                  "fine-tuning with the same recipe needs %lld).",
                  e.static_bytes_per_parameter,
                  static_cast<long long>(recipe_for(c.training.precision).weight_bytes +
                                         recipe_for(c.training.precision).gradient_bytes +
                                         recipe_for(c.training.precision).master_bytes +
                                         2 * recipe_for(c.training.precision).state_element_bytes));
    e.notes.push_back(text);
  }
  if (c.training.precision != Precision::kSeed14p) {
    e.measured_band_low_bytes = scale(e.peak_allocated_bytes, kMeasuredBandLowRatio);
    e.measured_band_high_bytes = scale(e.peak_allocated_bytes, kMeasuredBandHighRatio);
    e.measured_band_cases = kMeasuredBandCases;
  }
  e.device_total_bytes = e.peak_reserved_bytes + e.breakdown.overhead;
  e.device_total_low_bytes = e.peak_reserved_low_bytes + e.breakdown.overhead;
  e.device_total_high_bytes = e.peak_reserved_high_bytes + max(e.breakdown.overhead, Exact(kEagerContextBytes));
  e.fit = make_fit(gpu, e.device_total_bytes, c.hardware.budget_fraction);
  for (const Gpu& g : gpu_table()) e.fits.push_back(make_fit(g, e.device_total_bytes, c.hardware.budget_fraction));

  const Breakdown& b = e.breakdown;
  const bool overflow = e.parameters.overflow || e.device_total_high_bytes.overflow() || b.parameters.overflow() ||
                        b.gradients.overflow() || b.optimizer_states.overflow() || b.activations.overflow() ||
                        b.logits_and_loss.overflow() || b.weight_copies.overflow() || b.offloaded_bytes.overflow() ||
                        e.trainable_parameter_count.overflow();
  if (overflow) {
    e.errors.push_back({"(configuration)", "the estimate exceeds 9.2 EB (the largest exact byte count); reduce "
                                           "model.num_hidden_layers, training.seq_len or training.micro_batch_size"});
  }
  return e;
}

}  // namespace memfit
