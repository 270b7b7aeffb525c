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

// Where the parameters sit on the busiest GPU: its share of the counted architecture (pipeline
// stage, tensor and expert parallelism) and how many ways ZeRO / FSDP shard what it shards.
struct Placement {
  Exact local_count;      // counted parameters on this GPU before ZeRO
  Exact total_count;      // counted parameters of the whole model
  Exact local_params;     // the (possibly nominal) base parameters on this GPU
  Exact local_trainable;  // trainable parameters on this GPU before ZeRO
  Exact zero_shards;      // 1 without ZeRO
  Exact share_of(Exact whole_model_bytes) const { return mul_div(whole_model_bytes, local_count, total_count); }
};

Placement placement(const Config& c, const ParameterCount& params, Exact base_count, Exact trainable) {
  const Parallel& par = c.parallel;
  // Expert parallelism places num_experts / expert of each layer's routed experts on a GPU.
  const Exact routed_experts = params.component_count(Component::kExperts);
  const Exact block_params = params.block_count() - routed_experts + routed_experts / par.expert;
  const Exact first_extra = params.component_count(Component::kTokenEmbedding) +
                            params.component_count(Component::kPositionEmbedding) +
                            params.component_count(Component::kTokenTypeEmbedding) +
                            params.component_count(Component::kEmbeddingNorm);
  const Exact last_extra = params.total_count - params.block_count() - first_extra;
  Placement p;
  p.local_count = stage_share(block_params, first_extra, last_extra, par, c.model);
  p.total_count = max(params.total_count, Exact(1));
  // A nominal count (the seeds' tables) is placed in the same proportions as the architecture.
  p.local_params = mul_div(base_count, p.local_count, p.total_count);
  p.local_trainable = is_lora(c) ? trainable / par.tensor : p.local_params;
  // ZeRO / FSDP shard over every rank that holds the same layers: data × context parallel
  // (context-parallel ranks hold identical weights; torchtitan and Megatron's distributed
  // optimizer shard across both).
  p.zero_shards = par.zero_stage > 0 ? Exact(par.num_gpus) / (Exact(par.tensor) * par.pipeline) : Exact(1);
  return p;
}

struct StaticBytes {
  Exact weights, gradients, master, states, offloaded;
};

// Weights, gradients, master weights and optimizer states on this GPU, after ZeRO sharding,
// paging and offload.
StaticBytes static_bytes(const Config& c, const ParameterCount& params, const Placement& p, Exact trainable,
                         const Recipe& r, std::vector<std::string>& notes) {
  const bool lora = is_lora(c);
  const Parallel& par = c.parallel;
  StaticBytes s;
  if (lora) {
    const std::int64_t half = c.training.precision == Precision::kFp32 ? 4 : 2;
    s.weights = p.share_of(frozen_base_bytes(params, c.training.finetune.base_bits, half)) +
                p.local_trainable * r.weight_bytes;
  } else {
    s.weights = p.local_params * r.weight_bytes;
  }
  s.gradients = p.local_trainable * r.gradient_bytes;
  s.master = p.local_trainable * r.master_bytes;
  s.states = mul_div(optimizer_state_bytes(c.training.optimizer, params, trainable, lora, c.training.finetune,
                                           r.state_element_bytes),
                     p.local_trainable, max(trainable, Exact(1)));
  if (par.zero_stage >= 3) s.weights = s.weights / p.zero_shards;
  if (par.zero_stage >= 2) s.gradients = s.gradients / p.zero_shards;
  if (par.zero_stage >= 1) {
    s.master = s.master / p.zero_shards;
    s.states = s.states / p.zero_shards;
  }
  if (is_paged(c.training.optimizer)) {
    s.offloaded += s.states;
    s.states = 0;
    notes.push_back("Paged optimizer: states live in CUDA unified memory and are paged to the CPU under "
                    "pressure; they are shown apart and not counted as allocated.");
  }
  if (par.offload_optimizer) {
    s.offloaded += s.states + s.master;
    s.states = s.master = 0;
  }
  if (par.offload_params) {
    s.offloaded += s.weights;
    s.weights = 0;
  }
  return s;
}

// The step, phase by phase, in its steady state (optimizer states already exist).
std::vector<Phase> step_phases(const Config& c, const ParameterCount& params, const Placement& p,
                               const StaticBytes& st, const ActivationModel& act, Exact weight_copies,
                               const Recipe& r) {
  const Parallel& par = c.parallel;
  const Training& t = c.training;
  const bool lora = is_lora(c);
  const Exact statics = st.weights + st.master + st.states;
  const Exact grads_in_forward = t.grad_accum_steps > 1 && !t.optimizer_in_backward ? st.gradients : Exact(0);
  // ZeRO-3 / FSDP gathers one unit (a block) at a time, in the dtype the matmuls use.
  const std::int64_t compute_weight_bytes = t.precision == Precision::kFp32 ? 4 : 2;
  const Exact gathered_layer = par.zero_stage >= 3 ? max(params.per_dense_layer_count, params.per_moe_layer_count) *
                                                         compute_weight_bytes / par.tensor
                                                   : Exact(0);
  const Exact alive = statics + grads_in_forward + weight_copies + act.saved_bytes + gathered_layer;
  const Exact forward = alive + act.logits_forward_bytes;

  // Backward passes three high points: the loss and head (every saved tensor alive, the loss's
  // V-wide gradients, then the head weight's gradient beside the logits' gradient); the top block
  // (its working memory, and its recomputation under checkpointing); and the end (every
  // gradient, plus a tied embedding's gradient before it is added to the head's).
  Exact head_grad = 0;
  if (!lora && c.model.output_head == OutputHead::kLm) {
    const Exact head_elements = c.model.tie_word_embeddings ? params.component_count(Component::kTokenEmbedding)
                                                             : params.component_count(Component::kHead);
    head_grad = head_elements * r.gradient_bytes / par.tensor;
  }
  const Exact loss_and_head =
      alive + max(act.logits_backward_bytes, act.logits_grad_bytes + head_grad + act.head_input_bytes * 2);
  const Exact top_block = alive + head_grad + act.head_input_bytes + act.layer_backward_working_bytes;
  // An untied embedding's gradient becomes its .grad as it is; a tied one is added to the head's
  // gradient already there, so for a moment both exist.
  const Exact embedding_grad = !lora && c.model.tie_word_embeddings
                                   ? params.component_count(Component::kTokenEmbedding) * r.gradient_bytes / par.tensor
                                   : Exact(0);
  const Exact grads_at_end = t.optimizer_in_backward ? Exact(0) : st.gradients;
  const Exact backward_end = statics + grads_at_end + act.embedding_saved_bytes + embedding_grad;
  const Exact backward = max(max(loss_and_head, top_block), backward_end);

  std::vector<Phase> phases = {{"forward", "End of forward (loss computed)", forward},
                               {"backward", "Backward (high point)", backward}};
  if (!t.optimizer_in_backward) {
    const Exact sharded_trainable = par.zero_stage >= 1 ? p.local_trainable / p.zero_shards : p.local_trainable;
    const Exact largest = par.zero_stage >= 1 ? Exact(0) : largest_trainable_tensor(params, lora, t.finetune);
    phases.push_back({"optimizer_step", "Optimizer step",
                      statics + st.gradients + optimizer_step_temporary_bytes(c, sharded_trainable, largest, r)});
  }
  return phases;
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
    e.notes.push_back(std::string(r.name) + ": " + r.description + ".");
    const Placement place = placement(c, e.parameters, base_parameter_count, e.trainable_parameter_count);
    const StaticBytes st = static_bytes(c, e.parameters, place, e.trainable_parameter_count, r, e.notes);
    e.breakdown.parameters = st.weights;
    e.breakdown.gradients = st.gradients;
    e.breakdown.master_weights = st.master;
    e.breakdown.optimizer_states = st.states;
    e.breakdown.offloaded_bytes = st.offloaded;

    // Activations and logits for one micro-batch.
    const ActivationModel act = activation_model(c, e.parameters);
    e.breakdown.activations = act.saved_bytes;
    e.breakdown.logits_and_loss = act.logits_peak_bytes;
    e.activation_terms_per_layer = act.layer_terms;
    e.breakdown.weight_copies = place.share_of(weight_copy_bytes(c, e.parameters));
    if (c.parallel.zero_stage >= 3) {
      e.notes.push_back("ZeRO-3 / FSDP gathers one block's full parameters at a time; that buffer is included "
                        "in the forward and backward phases.");
    }
    e.phases = step_phases(c, e.parameters, place, st, act, e.breakdown.weight_copies, r);
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
