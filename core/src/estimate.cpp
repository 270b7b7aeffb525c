// The estimate, job by job: count the parameters, place and shard them (placement.cpp), model
// what the step saves and holds (activations.cpp), walk the step's phases (phases.cpp), then the
// allocator's reserve and the fit on each GPU (fit.cpp). The seeds' convention has its own path
// (seed_convention.cpp).
#include "memfit/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "activations.hpp"
#include "finetune.hpp"
#include "fit.hpp"
#include "memfit/implementation.hpp"
#include "phases.hpp"
#include "placement.hpp"
#include "seed_convention.hpp"
#include "step_events.hpp"
#include "text.hpp"
#include "vision.hpp"

namespace memfit {

namespace {

// Autocast's 16-bit copies (AMP) and Transformer Engine's FP8 copies live from forward to
// backward for every weight the GPU holds in full. Under ZeRO-3 a GPU holds a full weight only
// while its unit is gathered: DeepSpeed's LinearFunctionForZeroStage3 (deepspeed/runtime/zero/
// linear.py) saves the partitioned parameter, not the cast, and backward gathers and casts it
// again; so the copies exist for one unit (the largest block) at a time, not for the model.
// (FSDP with fp32 parameters under plain autocast would keep them; FSDP's own mixed precision,
// `bf16_fsdp`, gathers in bf16 and makes none.)
Bytes weight_copies_on_gpu(const Config& c, const ParameterCount& params, const Placement& place) {
  const Bytes held = weight_copy_bytes(c, params, place);  // every weight this GPU holds
  if (c.parallel.zero_stage < 3 || held.is_zero()) return held;
  // One unit (the largest block, its tensor-parallel slice) of what this GPU holds, of the language
  // model's weights: a trained vision tower's units are smaller, and are left out.
  ParameterCount model = params;
  Count tower = 0;
  model.groups.erase(std::remove_if(model.groups.begin(), model.groups.end(),
                                    [&tower](const TensorGroup& g) {
                                      if (is_vision(g.component)) tower += g.elements();
                                      return is_vision(g.component);
                                    }),
                     model.groups.end());
  const Bytes language = tower.is_zero() ? held : weight_copy_bytes(c, model, place);
  const Count unit = max(params.per_dense_layer_count, params.per_moe_layer_count);
  return min(language, mul_div(language, unit, max((place.local_count - tower) * place.tensor, Count(1))));
}

// What a vision tower's note says: what is held frozen and where, what trains (training.finetune.
// train_vision), and what the estimate leaves out.
std::string vision_note(const Config& c, const ParameterCount& params, const Placement& place, const PrecisionRecipe& r,
                        const Estimate& e) {
  const auto gib = [](Bytes b) { return static_cast<double>(b.value()) / 1073741824.0; };
  const VisionTrain trains = resolve_train_vision(c);
  const Count trained = e.parameters.vision_count - params.vision_count;
  // The parts that train, and those held frozen, in words.
  const bool one_trains = trains == VisionTrain::kProjector || trains == VisionTrain::kEncoder;
  const char* trained_part = trains == VisionTrain::kProjector ? "projector"
                             : trains == VisionTrain::kEncoder ? "encoder"
                                                               : "encoder and projector";
  const char* frozen_part = trains == VisionTrain::kProjector ? "encoder"
                            : trains == VisionTrain::kEncoder ? "projector"
                                                              : "encoder and projector";
  std::string text;
  if (trains != VisionTrain::kNone) {
    text = std::string("The vision ") + trained_part + " (" + detail::group_digits(trained.value()) +
           " parameters, outside the parameter count) train" + (one_trains ? "s" : "") + " with the language model" +
           (c.training.finetune.train_vision == VisionTrain::kAuto ? " (TRL's SFTTrainer freezes nothing)" : "") + ": " +
           (one_trains ? "its" : "their") + " weights, gradients and optimizer states are counted with the model's" +
           (recipe_of(c).autocast_copy.is_zero() ? std::string(". ")
                                                 : std::string(", and autocast's 16-bit copies of the weights the "
                                                               "tower's matmuls read. "));
  }
  if (!params.vision_count.is_zero()) {
    // Its pieces in FSDP's root unit are gathered with it for the step (phases.cpp).
    const Bytes gathered = fsdp_root_stays_gathered(c, place) ? vision_root_gathered_bytes(c, params, r) : Bytes{0};
    char held[160] = "", more[160] = "", host[160] = "";
    std::snprintf(held, sizeof held, "%.2f GiB on this GPU", gib(e.vision_bytes));
    if (!gathered.is_zero()) std::snprintf(more, sizeof more, ", %.2f GiB more while FSDP's root unit is gathered", gib(gathered));
    if (!e.vision_offloaded_bytes.is_zero()) {
      std::snprintf(host, sizeof host, ", %.2f GiB on the host (offloaded with the parameters)", gib(e.vision_offloaded_bytes));
    }
    text += std::string("The vision ") + frozen_part + " (" + detail::group_digits(params.vision_count.value()) +
            " parameters, outside the parameter count) " + (one_trains ? "is" : "are") +
            " held frozen with the weights: " + held + more + host + ". ";
  }
  if (trains == VisionTrain::kNone) {
    text += "Frozen as LLaMA-Factory (freeze_vision_tower) and ms-swift (freeze_vit) freeze it by default; a script "
            "that does not must call requires_grad_(False) on it, or DeepSpeed and FSDP keep optimizer states for it "
            "(training.finetune.train_vision). LoRA adapts the language model's layers only (a target list matched "
            "by name also reaches a SigLIP, CLIP or Pixtral tower's layers of the same names in PEFT: a pattern on "
            "language_model keeps them out). ";
  }
  const Training& t = c.training;
  if (t.images_per_sample > 0) {
    char images[420];
    std::snprintf(images, sizeof images,
                  "Images: %lld a sequence, %s patches each, run through the tower and keep %.2f GiB for backward "
                  "(in the activations, freed last%s)%s; their tokens are part of training.seq_len: ",
                  static_cast<long long>(t.images_per_sample), detail::group_digits(image_patches(c).value()).c_str(),
                  gib(e.vision_activation_bytes),
                  t.activation_offload ? "; activation offload moves the blocks' part to the host" : "",
                  trains == VisionTrain::kNone && t.checkpointing == Checkpointing::kFull &&
                          !e.vision_activation_bytes.is_zero()
                      ? " (a frozen tower too: gradient_checkpointing_enable's enable_input_require_grads makes the "
                        "patch embedding's output require grad, so each checkpointed block keeps its input)"
                      : "");
    return text + images + image_token_words(c.model) + ".";
  }
  if (c.model.vision_type == VisionTower::kPaliGemma) {
    // With the token_type_ids PaliGemma's processor gives, transformers also builds a B×1×T×T
    // boolean prefix mask for the language model's attention, which the estimate leaves out.
    return text + "Images through PaliGemma's tower are not modelled yet; a step whose batch carries token_type_ids "
                  "(PaliGemma's processor) also holds a batch × sequence² boolean prefix mask, not in the estimate.";
  }
  return text + "Images through the tower are not in the estimate (training.images_per_sample); their tokens are "
                "part of training.seq_len: " + image_token_words(c.model) + ".";
}

// The measured-recipe path: what one training step allocates on the busiest GPU. `params` are the
// model's parameters as the memory model places them (with_trained_vision).
void estimate_step(const Config& c, const Gpu& gpu, const ParameterCount& params, Count base_parameter_count,
                   Estimate& e) {
  const PrecisionRecipe& r = recipe_of(c);
  e.notes.push_back(std::string(r.name) + ": " + r.description + ".");
  const Placement place = placement(c, params, base_parameter_count);
  const StaticBytes st = static_bytes(c, params, place, r, e.notes);
  e.breakdown.parameters = st.weights;
  e.breakdown.gradients = st.accumulated_gradients + st.reducer_buckets + st.orphan_gradients + st.zero_reduce_bucket;
  e.fixed_gradient_buffers = st.zero_reduce_bucket;
  e.vision_bytes = st.vision + st.vision_unsharded;
  e.vision_offloaded_bytes = st.vision_offloaded;
  e.vision_activation_bytes = vision_saved(c).total();
  if (!e.parameters.vision_count.is_zero()) e.notes.push_back(vision_note(c, params, place, r, e));
  if (!st.zero_reduce_bucket.is_zero()) {
    e.notes.push_back("DeepSpeed ZeRO-3 keeps a contiguous gradient bucket of reduce_bucket_size elements for the "
                      "whole run (counted with the gradients), and backward's reduce-scatter copies a full bucket "
                      "once more; Hugging Face's \"auto\" sets it to the hidden size squared "
                      "(parallel.reduce_bucket_elements).");
  }
  if (!st.reducer_buckets.is_zero()) {
    e.notes.push_back("DDP's all-reduce buckets (gradient_as_bucket_view=False, PyTorch's default) keep a second copy "
                      "of the gradients for the whole run; they are counted with the gradients. "
                      "parallel.ddp_bucket_view true makes the gradients views into them.");
  }
  if (st.accumulated_gradients > st.gradients) {
    char line[384];
    std::snprintf(line, sizeof line,
                  "Gradient sync at the last micro-batch (FSDP's no_sync / set_requires_gradient_sync(False)): "
                  "the %lld micro-batches before it "
                  "accumulate full, unsharded gradients (%.2f GiB) instead of this GPU's shard (%.2f GiB); "
                  "parallel.gradient_sync every_micro_batch reduces each micro-batch instead.",
                  static_cast<long long>(c.training.grad_accum_steps - 1),
                  static_cast<double>(st.accumulated_gradients.value()) / 1073741824.0,
                  static_cast<double>(st.gradients.value()) / 1073741824.0);
    e.notes.push_back(line);
  }
  e.breakdown.master_weights = st.master;
  e.breakdown.optimizer_states = st.states;
  e.breakdown.offloaded_bytes = st.offloaded;

  const ActivationModel act = activation_model(c, params);
  const LossModel loss = loss_model(c, params);
  e.breakdown.activations = act.saved_bytes;
  e.breakdown.logits_and_loss = loss.peak_bytes;
  e.activation_terms_per_layer = act.layer_terms;
  e.breakdown.weight_copies = weight_copies_on_gpu(c, params, place);
  if (c.parallel.zero_stage >= 3) {
    e.notes.push_back("ZeRO-3 / FSDP gathers one block's full parameters at a time; that buffer is included "
                      "in the forward and backward phases.");
  }
  e.phases = step_phases(c, params, place, st, act, loss, e.breakdown.weight_copies, r);
  Bytes peak{0};
  for (const Phase& ph : e.phases) peak = max(peak, ph.bytes);
  e.peak_allocated_bytes = peak;
  e.between_steps_bytes = between_steps_bytes(c, st, act, loss, r);
  e.breakdown.overhead = c.hardware.overhead_bytes >= 0 ? Bytes(c.hardware.overhead_bytes) : gpu.context_bytes;
  if (c.hardware.overhead_bytes < 0) {
    // NCCL's buffers sit beside the context, outside the caching allocator, and leave it that
    // much less of the card.
    const Communicators comms = nccl_communicators(c);
    e.communicators = comms.count;
    e.communicator_bytes = comms.bytes;
    e.breakdown.overhead += comms.bytes;
    if (comms.count > 0) {
      char line[360];
      std::snprintf(line, sizeof line,
                    "NCCL: %d communicator%s (%s) hold%s %.2f GiB outside PyTorch's allocator, "
                    "counted with the CUDA context: nvidia-smi sees it, max_memory_reserved does not.",
                    comms.count, comms.count == 1 ? "" : "s", comms.groups, comms.count == 1 ? "s" : "",
                    static_cast<double>(comms.bytes.value()) / 1073741824.0);
      e.notes.push_back(line);
    }
    // Async TP's fused matmuls pass their shards through the TP group's symmetric-memory workspace
    // (torch/distributed/_symmetric_memory: get_symm_mem_workspace, _SymmetricMemory.empty_strided_p2p,
    // not the caching allocator), which grows to the largest request: a reduce-scatter matmul's two
    // output shards (_pipelined_produce_and_all2all double-buffers out_chunks[0]), B·T / (cp·tp)
    // tokens of hidden_size in the compute dtype (a float8 matmul's output is bf16).
    if (c.parallel.async_tp && c.parallel.tensor >= 2) {
      const Count tokens = Count(c.training.micro_batch_size) * Count(c.training.seq_len) /
                           (c.parallel.context * c.parallel.tensor);
      const Bytes workspace = tokens * Count(c.model.hidden_size) * min(max(r.compute, Bytes{2}), Bytes{4}) * Count(2);
      e.breakdown.overhead += workspace;
      char line[300];
      std::snprintf(line, sizeof line,
                    "Async TP: the symmetric-memory workspace of the fused matmuls (%.2f GiB: two output shards of a "
                    "reduce-scatter matmul) is outside PyTorch's caching allocator: nvidia-smi sees it, "
                    "max_memory_reserved does not.",
                    static_cast<double>(workspace.value()) / 1073741824.0);
      e.notes.push_back(line);
    }
  }
  // What the caching allocator can get from the card: its memory less what sits outside PyTorch.
  const Bytes capacity = max(Bytes{0}, gpu.usable_bytes() - e.breakdown.overhead);
  StepSimulation sim;
  if (c.hardware.fragmentation < 0) {
    std::vector<EarlierBatch> earlier;
    if (c.training.sequence_lengths == SequenceLengths::kVarying) {
      for (std::int64_t length : varying_lengths(c.training.seq_len, c.training.micro_batch_size)) {
        Config shorter = c;
        shorter.training.seq_len = length;
        earlier.push_back({activation_model(shorter, params), loss_model(shorter, params)});
      }
      e.notes.push_back("Varying sequence lengths: the allocator's reserve is replayed over micro-batches of " +
                        std::to_string(kVaryingMicroBatches) +
                        " lengths (samples spread from an eighth of seq_len up to it, each micro-batch padded to its "
                        "longest sample), then full-length steps; segments cut for one length are reused for "
                        "another only where they fit.");
    }
    sim = simulate_step(c, params, place, st, act, loss, e.breakdown.weight_copies,
                        optimizer_temporaries(c, params, place, r), r,
                        c.hardware.expandable_segments ? SegmentMode::kExpandable : SegmentMode::kCudaMalloc,
                        earlier, capacity);
  }
  allocator_reserve(c, sim, capacity, e);
  if (e.fragmentation_simulated && e.fragmentation >= 0.10 && sim.reserve_peak_request_bytes.value() > 0) {
    // Why the reserve is high here (it moves by steps with the shapes: a sequence length that
    // makes one tensor just too large for the cached pieces adds a segment).
    static constexpr const char* kStage[] = {"forward pass", "backward pass", "optimizer step"};
    const double request = static_cast<double>(sim.reserve_peak_request_bytes.value());
    char size[32];
    if (request >= 1073741824.0) std::snprintf(size, sizeof size, "%.2f GiB", request / 1073741824.0);
    else std::snprintf(size, sizeof size, "%.0f MiB", std::max(1.0, request / 1048576.0));
    char line[320];
    std::snprintf(line, sizeof line,
                  "The allocator reserves %.0f %% over the allocated peak: at its high point, in the %s, a %s "
                  "request found no cached block that large (freed blocks are cached in smaller pieces)%s.",
                  100 * e.fragmentation, kStage[sim.reserve_peak_stage], size,
                  c.hardware.expandable_segments ? "" : "; expandable_segments:True maps pages into one range instead");
    e.notes.push_back(line);
  }
  if (e.fragmentation_simulated && sim.ran_out_on_card && e.peak_allocated_bytes <= capacity) {
    e.notes.push_back("On this card the replayed allocator runs out even after releasing its cache, though the tensors "
                      "fit: the run may stop out of memory; expandable segments or a smaller micro-batch leave room.");
  } else if (e.fragmentation_simulated && sim.alloc_retries > 0) {
    e.notes.push_back(std::string("The step fills the card: the allocator found no room for a segment ") +
                      (sim.alloc_retries == 1 ? std::string("once") : std::to_string(sim.alloc_retries) + " times") +
                      " and released its cache to retry, which synchronizes the GPU and slows the step; expandable "
                      "segments or a smaller micro-batch avoid it.");
  }
  if (sim.runahead_peak_reserved_bytes.value() > 0 && sim.runahead_peak_allocated_bytes.value() > 0) {
    // The run-ahead replay's reserve over its allocated peak, applied to the step's peak as the
    // need's is, and never past what the card can hand out.
    const double ratio = static_cast<double>(sim.runahead_peak_reserved_bytes.value()) /
                         static_cast<double>(sim.runahead_peak_allocated_bytes.value());
    e.runahead_peak_reserved_bytes = max(e.peak_reserved_bytes, min(capacity, scale(e.peak_allocated_bytes, ratio)));
    char shown[64];
    std::snprintf(shown, sizeof shown, "%.1f GiB",
                  static_cast<double>((e.runahead_peak_reserved_bytes + e.breakdown.overhead).value()) / 1073741824.0);
    e.notes.push_back(std::string("limit_all_gathers false (FSDP1): the CPU issues all-gathers ahead of the GPU and the "
                                  "caching allocator keeps each gathered unit until the GPU is done with it; with the "
                                  "CPU a whole step ahead nvidia-smi shows up to ") +
                      shown +
                      " (the card, at most: there the allocator waits for the GPU and frees them, cudaMalloc retries "
                      "that slow the step but do not run out of memory). The fit is judged on what the step needs.");
  }
  e.notes.insert(e.notes.end(), act.notes.begin(), act.notes.end());
  e.notes.insert(e.notes.end(), loss.notes.begin(), loss.notes.end());
}

// Weights, gradients, optimizer states and master weights per base parameter, all GPUs together
// (the seeds' "14x rule" number; 2–3 for LoRA), rounded to 1e-6: a ratio for people.
double static_bytes_per_parameter(const Estimate& e, Count base_parameter_count) {
  const Breakdown& b = e.breakdown;
  // (Not the vision tower's bytes: they are not per parameter of the language model.)
  const Bytes statics = b.parameters + b.gradients - e.fixed_gradient_buffers + b.optimizer_states + b.master_weights +
                       b.offloaded_bytes - e.vision_bytes - e.vision_offloaded_bytes;
  return std::round(1e6 * static_cast<double>(statics.value()) * static_cast<double>(e.config.parallel.num_gpus) /
                    static_cast<double>(std::max<std::int64_t>(1, base_parameter_count.value()))) /
         1e6;
}

std::string lora_note(const Estimate& e) {
  const PrecisionRecipe& r = recipe_of(e.config);
  const Bytes full = r.weights + r.gradients + r.master + r.optimizer_state * 2;
  char text[200];
  std::snprintf(text, sizeof text,
                "%s: %.2f bytes of weights, gradients and optimizer states per base parameter (full "
                "fine-tuning with the same recipe needs %lld).",
                e.config.training.finetune.method == FinetuneMethod::kLora ? "LoRA"
                                                                           : to_string(e.config.training.finetune.method),
                e.static_bytes_per_parameter, static_cast<long long>(full.value()));
  return text;
}

// What transformers 5's stacked experts change for a parameter-efficient run, in words: the
// experts bitsandbytes leaves unquantised, and the merged copy of the experts LoRA keeps per layer.
void stacked_expert_notes(const Config& c, Estimate& e) {
  if (experts_left_unquantized(c)) {
    e.notes.push_back("bitsandbytes quantises nn.Linear modules only: transformers 5's stacked experts (" +
                      detail::group_digits(e.parameters.component_count(Component::kExperts).value()) +
                      " parameters) stay unquantised, " +
                      (kbit_upcast(c.training.finetune) ? "in fp32 after prepare_model_for_kbit_training"
                                                        : "in 16 bit") +
                      "; unsloth quantises them.");
  }
  const unsigned mlp_names = kLoraGate | kLoraUp | kLoraDown;
  const unsigned targets = c.training.finetune.lora_targets;
  const ExpertTargeting targeting = expert_targeting(c);
  if (!is_peft(c) || targeting == ExpertTargeting::kModules || !(targets & (mlp_names | kLoraRouter))) return;
  if (targets_reaching(targets, Component::kExperts, targeting) & mlp_names) {
    e.notes.push_back("LoRA on stacked experts: one adapter per projection over all experts (rank × experts wide), "
                      "added to the whole expert weight each forward: every MoE layer keeps a merged copy of its "
                      "experts for backward.");
  }
  const bool dense = !e.parameters.component_count(Component::kMlp).is_zero();
  const bool shared = !e.parameters.component_count(Component::kSharedExperts).is_zero();
  const bool linear_mlps = dense || shared;
  const std::string which = dense && shared ? "the dense layers' MLPs and the shared experts"
                            : dense         ? "the dense layers' MLPs"
                                            : "the shared experts";
  if (targeting == ExpertTargeting::kMapped && linear_mlps && (targets & mlp_names)) {
    e.notes.push_back(std::string(c.training.finetune.target_parameters
                                      ? "gate, up and down name the stacked experts' parameters (target_parameters)"
                                      : "PEFT moves gate, up and down to the stacked experts' parameters") +
                      ": " + which + ", nn.Linear modules of the same names, get no adapter.");
  }
  if (targeting == ExpertTargeting::kUnmapped) {
    std::string reach;
    if (targets & mlp_names) {
      reach = linear_mlps ? "gate, up and down adapt only " + which + " (nn.Linear modules), "
                          : "gate, up and down reach no module, ";
    }
    if (targets & kLoraRouter) reach += "the router (a parameter there) gets no adapter, ";
    const std::string& type = c.model.multimodal_type.empty() ? c.model.model_type : c.model.multimodal_type;
    e.notes.push_back("PEFT maps no module names onto " + type + "'s stacked experts (transformers 5): " +
                      reach + "and the routed experts stay frozen; training.finetune.target_parameters adapts them.");
  }
}

bool overflowed(const Estimate& e) {
  const Breakdown& b = e.breakdown;
  return e.parameters.overflow || e.device_total_high_bytes.overflow() || b.parameters.overflow() ||
         b.gradients.overflow() || b.optimizer_states.overflow() || b.activations.overflow() ||
         b.logits_and_loss.overflow() || b.weight_copies.overflow() || b.offloaded_bytes.overflow() ||
         e.trainable_parameter_count.overflow();
}

}  // namespace

Estimate estimate(const Config& requested) {
  Estimate e;
  e.config = requested;
  e.errors = validate(requested);
  if (!e.errors.empty()) return e;
  e.warnings = advisories(requested);
  const Config c = config_as_run(requested);
  if (requested.model.tie_word_embeddings && !c.model.tie_word_embeddings &&
      requested.model.output_head == OutputHead::kLm) {
    e.notes.push_back("LitGPT keeps the output head apart from the token embedding (its checkpoint converter copies "
                      "the embedding into lm_head.weight): both are counted.");
  }
  e.implementation = resolve_implementation(c);
  if (c.training.implementation.framework == Framework::kLiger && !liger_patches(c.model).known) {
    const std::string& type = c.model.multimodal_type.empty() ? c.model.model_type : c.model.multimodal_type;
    e.notes.push_back("Liger-Kernel has no patches for model_type \"" + type +
                      "\" (not in its MODEL_TYPE_TO_APPLY_LIGER_FN): the run is transformers' own code, counted as "
                      "under hf.");
  }
  if (falcon_left_unquantized(requested)) {
    e.notes.push_back("transformers 5 quantises only modules whose type is exactly nn.Linear: Falcon's FalconLinear "
                      "layers stay 16-bit under bitsandbytes, so the base is not quantised" +
                      std::string(requested.training.finetune.prepare_kbit
                                      ? ", and prepare_model_for_kbit_training casts all of it to fp32."
                                      : "."));
  }
  if (c.training.finetune.lora_targets != requested.training.finetune.lora_targets) {
    e.notes.push_back(e.implementation.projections == Projections::kGateUpFused
                          ? "The gated MLP's gate_up_proj (training.projections gate_up_fused, GLM-4) is one module "
                            "to PEFT: gate and up are adapted together; q, k and v stay separate."
                          : "Fused projections (training.projections fused) are one module each to PEFT: the adapter "
                            "covers the whole fused layer (q, k and v as qkv; gate and up as gate_up).");
  }

  e.parameters = count_parameters(c.model);
  e.parameter_count = c.model.nominal_parameter_count > 0 ? Count(c.model.nominal_parameter_count)
                                                           : e.parameters.total_count;
  // The memory model's parameters: the vision tower's trained parts join the language model's
  // (they are in trainable_parameter_count, not in parameter_count, which stays the language model's).
  const ParameterCount params = with_trained_vision(c, e.parameters);
  const Count trained_vision = params.total_count - e.parameters.total_count;
  e.vision_trained_count = trained_vision;
  const bool peft = is_peft(c);
  const TrainableCounts counts = trainable_counts(c, params, e.parameter_count + trained_vision);
  e.trainable_parameter_count = counts.trainable;
  // A parameter-efficient model holds its base and the method's parameters: sum(p.numel())
  // counts both (PEFT's get_nb_trainable_parameters() "all params").
  const Count base_parameter_count = e.parameter_count + trained_vision;
  if (peft) e.parameter_count += counts.added;
  if (c.model.nominal_parameter_count > 0) {
    e.notes.push_back("The memory model uses the nominal parameter count " +
                      detail::group_digits(c.model.nominal_parameter_count) + "; the architecture counts " +
                      detail::group_digits(e.parameters.total_count.value()) + ".");
  }

  const Gpu& gpu = *find_gpu(c.hardware.gpu);
  if (c.training.precision == Precision::kSeed14p) estimate_seed_convention(c, e);
  else estimate_step(c, gpu, params, base_parameter_count, e);

  e.static_bytes_per_parameter = static_bytes_per_parameter(e, base_parameter_count);
  if (peft) e.notes.push_back(lora_note(e));
  const FinetuneMethod method = c.training.finetune.method;
  if (method == FinetuneMethod::kBoft || method == FinetuneMethod::kFrod || method == FinetuneMethod::kPsoft) {
    e.notes.push_back(c.training.finetune.loaded_before_wrapping
                          ? "The model is taken to be on the GPU when PEFT wraps it (device_map): this method's "
                            "buffers then stay where PEFT made them; training.finetune.loaded_before_wrapping "
                            "false for a model moved there after."
                          : "The model is taken to be moved to the GPU after PEFT wraps it, buffers included.");
  }
  stacked_expert_notes(c, e);
  // trl/trainer/sft_config.py: SFTConfig turns gradient checkpointing on unless told otherwise.
  if (e.implementation.framework == Framework::kTrl && c.training.checkpointing == Checkpointing::kNone) {
    e.notes.push_back("TRL's SFTConfig checkpoints by default (gradient_checkpointing=True): its default run is "
                      "training.checkpointing full.");
  }
  fit_on_gpus(c, gpu, e);
  if (overflowed(e)) {
    e.errors.push_back({"(configuration)", "the estimate exceeds 9.2 EB (the largest exact byte count); reduce "
                                           "model.num_hidden_layers, training.seq_len or training.micro_batch_size"});
  }
  return e;
}

}  // namespace memfit
