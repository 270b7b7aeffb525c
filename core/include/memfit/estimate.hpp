// The estimate: what one training step needs on each GPU, in exact bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/gpus.hpp"
#include "memfit/parameters.hpp"
#include "memfit/recipes.hpp"
#include "memfit/units.hpp"

namespace memfit {

struct NamedBytes {
  std::string name;  // e.g. "attention.softmax_fp32"
  Bytes bytes;
};

// Bytes per GPU, by what holds them. `activations`: what the embedding and the transformer
// blocks save for backward at the end of forward; `logits_and_loss`: what the output head and the
// loss hold at their largest.
struct Breakdown {
  Bytes parameters;
  Bytes gradients;
  Bytes optimizer_states;
  Bytes master_weights;
  Bytes activations;
  Bytes logits_and_loss;
  Bytes overhead;                // CUDA context and library workspaces (outside the allocator)
  Bytes weight_copies;           // autocast's 16-bit / FP8 copies of the weights, alive fwd→bwd
  Bytes offloaded_bytes;         // optimizer states / parameters (DeepSpeed: gradients too) in CPU memory
};

struct Phase {
  const char* name;   // "forward", "backward", "optimizer_step"
  const char* label;  // "End of forward"
  Bytes bytes;        // allocated at that phase's high point
};

enum class Verdict { kFits, kTight, kDoesNotFit };
const char* to_string(Verdict v);

struct Fit {
  const Gpu* gpu;
  Verdict verdict;       // memory only
  const char* lacks = nullptr;  // what the card lacks to run the training settings ("bf16", "FP8"), or nullptr
  Bytes budget_bytes;    // budget_fraction × memory
  Bytes need_bytes;      // device_total_bytes
  Bytes need_high_bytes; // the top of the measured band on the device total
  Bytes headroom_bytes;  // memory − need (negative when it does not fit)
  Bytes budget_left_bytes;  // budget − need_high: what more fits before the verdict turns (negative unless it fits)
};


// What a card lacks to run a precision recipe and torchao's Float8 linears: "bf16" for the bf16
// recipes before Ampere (no bf16 tensor cores: PyTorch emulates them, far slower), "FP8" for
// Transformer Engine's recipe or Float8 linears before Ada / Hopper / CDNA 3; nullptr when it runs
// them. One rule for the GPU table, the suggestions, the planner and the step time.
const char* card_lacks(const Gpu& g, Precision p, Float8 float8 = Float8::kNone);
inline const char* card_lacks(const Gpu& g, const Training& t) { return card_lacks(g, t.precision, t.float8); }

struct Estimate {
  std::vector<Issue> errors;  // non-empty: nothing below is meaningful
  std::vector<Issue> warnings;
  std::vector<std::string> notes;  // conventions that applied, in words
  Config config;
  Implementation implementation;    // the configuration's implementation, every `auto` resolved
  ParameterCount parameters;
  Count parameter_count;            // the count the memory model used (nominal if given)
  Count trainable_parameter_count;
  Breakdown breakdown;
  std::vector<NamedBytes> activation_terms_per_layer;  // one block, one micro-batch (empty for seed_14p)
  std::vector<Phase> phases;
  Bytes peak_allocated_bytes;
  // Allocated between two steps (after the optimizer step and zero_grad): what memory_allocated()
  // reads in a loop that logs it after each step.
  Bytes between_steps_bytes;
  Bytes peak_reserved_bytes;        // point estimate
  Bytes peak_reserved_low_bytes;    // fragmentation range
  Bytes peak_reserved_high_bytes;
  Bytes device_total_bytes;         // reserved + CUDA context (what nvidia-smi shows)
  // Of breakdown.overhead, the NCCL communicators' buffers (several GPUs; zero when the overhead
  // is given or under the seeds' convention): outside PyTorch's allocator, beside the CUDA context.
  Bytes communicator_bytes;
  int communicators = 0;
  Bytes device_total_low_bytes;
  Bytes device_total_high_bytes;
  double fragmentation = 0;         // reserved / allocated − 1 used for the point estimate
  bool fragmentation_simulated = false;  // from the allocator replay (else the given or fixed factor)
  Count allocator_segments;         // segments the replay's allocator held at its peak
  // Gradient buffers of a fixed size per GPU counted with the gradients (DeepSpeed ZeRO-3's
  // contiguous bucket): not per parameter, so static_bytes_per_parameter leaves them out.
  Bytes fixed_gradient_buffers;
  // FSDP1 with limit_all_gathers false (parallel.fsdp_limit_all_gathers): what max_memory_reserved
  // and nvidia-smi show when the all-gathers run a whole step ahead of the GPU, up to the card.
  // The fit is judged on the need above: the allocator gives this memory back when the card is
  // full. Zero when it does not apply.
  Bytes runahead_peak_reserved_bytes;
  Bytes runahead_device_total_bytes;
  // Weights, gradients, optimizer states and master weights per (base) parameter, all GPUs
  // together: the seeds' "14x rule" number, 2–3 for LoRA.
  double static_bytes_per_parameter = 0;
  // What a multimodal model's vision tower, or the part of it held frozen, adds on this GPU (its
  // weights, with what ZeRO-3 cannot shard of its 4-bit quantisation) and on the host (parameter
  // offload): not per base parameter.
  Bytes vision_bytes, vision_offloaded_bytes;
  // Of the tower's parameters, those the run trains (training.finetune.train_vision; in
  // trainable_parameter_count, and with the model's in the weights, gradients and states).
  Count vision_trained_count;
  // What one micro-batch's images leave saved in the vision tower (training.images_per_sample), in
  // breakdown.activations.
  Bytes vision_activation_bytes;
  // Where published GPU runs landed relative to memfit (docs/accuracy.md): 80 % of them measured
  // between these multiples of the estimate; applied to peak_allocated_bytes. Empty (0, 0) under
  // the seeds' convention.
  Bytes measured_band_low_bytes;
  Bytes measured_band_high_bytes;
  int measured_band_cases = 0;
  std::string measured_band_population;  // "hf · lora · one GPU"
  bool measured_band_fallback = false;   // the population has too few cases: the whole set's band
  // The same band applied to the device total: its top is what the fit judges against the budget
  // (Fit::need_high_bytes), so the page can show where the verdict's number comes from.
  Bytes device_total_band_low_bytes;
  Bytes device_total_band_high_bytes;
  Fit fit;                          // the configured GPU
  std::vector<Fit> fits;            // every GPU in the table
  bool ok() const { return errors.empty(); }
};

Estimate estimate(const Config& config);

// The JSON result (DESIGN.md "The result"); the same for the command line and the wasm module.
Json estimate_to_json(const Estimate& e);
Json issues_to_json(const std::vector<Issue>& issues);
// Pieces of the result, for views that show part of it (the planner's plans).
Json breakdown_to_json(const Breakdown& b);
Json phases_to_json(const std::vector<Phase>& phases);
Json fit_to_json(const Fit& f);
// {"token_embedding": n, "attention": n, ...}: the non-zero components.
Json parameters_by_component_json(const ParameterCount& parameters);

}  // namespace memfit
