// The step-time model: how long one optimizer step takes on a layout, and so tokens per second,
// MFU, and the time and cost to train N tokens. docs/step_time.md writes the model out and scores
// it against published throughputs.
//
// FLOPs per token from the model's shape (dense and MoE matmuls, attention's sequence term,
// recomputation added by the checkpointing mode), run at the card's peak times its ceiling (the
// share of peak published runs reach); communication (tensor-parallel all-reduces over NVLink,
// data-parallel / ZeRO reduce-scatters and all-gathers over the node's or the network's links,
// the context-parallel ring, the expert all-to-all, pipeline sends) as bytes over bandwidth,
// hidden behind the compute it overlaps with; the 1F1B and interleaved pipeline bubble.
#pragma once

#include <cstdint>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/gpus.hpp"
#include "memfit/json.hpp"
#include "memfit/parameters.hpp"

namespace memfit {

// The parallel layout and batch of a run: the configuration fields the planner varies.
struct Layout {
  std::int64_t num_gpus = 1, tensor = 1, pipeline = 1, virtual_stages = 1, context = 1, expert = 1;
  std::int64_t zero_stage = 0, shard_degree = 0;
  bool sequence_parallel = false, offload_optimizer = false, offload_params = false;
  Precision precision = Precision::kBf16Mixed;
  Checkpointing checkpointing = Checkpointing::kNone;
  std::int64_t checkpointed_layers = -1;  // under full checkpointing: blocks recomputed (-1: all)
  std::int64_t micro_batch_size = 1, grad_accum_steps = 1;

  std::int64_t data_parallel() const { return num_gpus / (tensor * pipeline * context); }
};
Layout layout_of(const Config& config);
void apply_layout(const Layout& layout, Config& config);

// Inputs of the time model that are not part of the memory configuration.
struct StepTimeOptions {
  // Tensor-parallel collectives overlapped with the GEMMs around them (Megatron / NeMo
  // --tp-comm-overlap, torchtitan async TP). Off: they run in the open, as plain PyTorch TP does.
  bool tp_comm_overlap = false;
  // Tokens to train, for the time and the cost; 0: default_train_tokens() for the configuration.
  double train_tokens = 0;
};

// The tokens to train when none are given: for pre-training, 20 per parameter, the compute-optimal
// count of Hoffmann et al. 2022 ("Training Compute-Optimal Large Language Models", Table 3 and
// section 3.4); for fine-tuning (full or parameter-efficient), 100 M tokens, the order of an
// instruction-tuning set taken over a few epochs (Alpaca's 52 K examples are about 10 M tokens;
// UltraChat 200k a few hundred million). `why` receives the rule in words.
double default_train_tokens(const Config& config, const ParameterCount& params, std::string* why = nullptr);

// Where a step's time goes on the busiest GPU, in seconds. Communication counts only where it is
// not hidden behind compute.
struct StepTimeParts {
  double compute_s = 0;          // forward, backward and recomputation, every micro-batch
  double recompute_s = 0;        // of which recomputation (activation checkpointing)
  double tensor_parallel_s = 0;  // all-reduces / all-gathers + reduce-scatters of the blocks
  double context_parallel_s = 0; // the ring passing keys and values
  double expert_parallel_s = 0;  // token dispatch and combine (all-to-all)
  double data_parallel_s = 0;    // gradient reduction and ZeRO / FSDP gathers
  double pipeline_bubble_s = 0;  // 1F1B warm-up and cool-down
  double pipeline_p2p_s = 0;     // activations and gradients sent between stages
  double optimizer_s = 0;        // the optimizer step (on the CPU and over PCIe when offloaded)
};

struct StepTime {
  std::vector<Issue> errors;  // non-empty: nothing below is meaningful
  double step_time_s = 0;
  double tokens_per_step = 0;       // the global batch in tokens
  double tokens_per_s = 0;          // all GPUs together
  double tokens_per_s_per_gpu = 0;
  double model_flops_per_token = 0;     // training FLOPs without recomputation (MFU's numerator)
  double hardware_flops_per_token = 0;  // with recomputation
  // Model FLOP utilisation against the card's dense 16-bit peak, whatever the recipe (so FP8
  // runs compare with bf16 ones); hardware FLOP utilisation counts the recomputation too.
  double mfu = 0;
  double hfu = 0;
  double train_tokens = 0;
  double train_time_s = 0;
  double gpu_hours = 0;
  double price_per_gpu_hour = 0;  // 0: unknown (no price in the table and none given)
  double cost_usd = 0;
  StepTimeParts parts;
  bool ok() const { return errors.empty(); }
};

// What the model and the card contribute, computed once: the planner times many layouts of one
// model on one card.
struct StepTimeModel {
  const Gpu* gpu = nullptr;
  std::int64_t link_domain = 8;  // GPUs joined by the GPU link: the server, or an NVLink Switch rack (gpu_link_domain)
  double price_per_gpu_hour = 0;
  StepTimeOptions options;
  // The model, per token and forward pass, whole model.
  double seq_len = 0, hidden = 0, layers = 0, dense_layers = 0, moe_layers = 0, experts_per_token = 0;
  double kv_width = 0;                // key + value width of one layer (all heads)
  double attention_context = 0;       // positions a token attends to on average (causal: (T + 1) / 2)
  double block_matmul_flops = 0;      // 2 × the matmul weights a token meets in all blocks
  double head_matmul_flops = 0;       // 2 × V × d
  double attention_flops_per_layer = 0;  // QKᵀ and PV, per token, per layer
  // Parameters, for communication and the optimizer.
  double block_parameters = 0, expert_parameters = 0, outside_parameters = 0, trainable_fraction = 1;
  bool lora = false;
  bool forward_only = false;  // MeZO: a second forward pass instead of a backward one
  // Some blocks trained (training.finetune.trainable_layers): backward's cost in forward passes,
  // averaged over the blocks (2 trained, 1 frozen above the lowest trained, 0 below); < 0: unused.
  double partial_backward_passes = -1;
  double partial_attention_backward_passes = -1;  // the same for attention's score matmuls (none below)
  std::int64_t base_bits = 16;
  bool sequential_pipeline = false;  // parallel.pipeline_schedule sequential
  double optimizer_states = 2;  // state tensors per trainable parameter (Adam 2, momentum 1, SGD 0)
};

StepTimeModel step_time_model(const Config& config, const ParameterCount& params, const StepTimeOptions& options);
StepTime step_time(const StepTimeModel& model, const Layout& layout);
// The step time alone, without the totals (the planner's inner loop); infinity when the card
// cannot run the layout's precision. `parts`, when given, receives where the time goes.
double step_seconds(const StepTimeModel& model, const Layout& layout, StepTimeParts* parts = nullptr);
StepTime step_time(const Config& config, const StepTimeOptions& options = {});

// {"ok", "errors", "step_time_s", "tokens_per_s", ..., "parts": {...}, "assumptions": [...]}.
Json step_time_to_json(const StepTime& t);
// The model's fixed assumptions, in words (docs/step_time.md explains each).
const std::vector<const char*>& step_time_assumptions();

}  // namespace memfit
