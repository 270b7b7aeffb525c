// What autograd saves for backward, term by term, and what the loss and the backward pass hold
// for a moment (core-internal).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/estimate.hpp"
#include "memfit/parameters.hpp"
#include "memfit/units.hpp"

namespace memfit {

// One micro-batch on the busiest GPU.
struct ActivationModel {
  Bytes saved_bytes;             // embedding + blocks + final norm, end of forward, busiest stage
  Bytes embedding_saved_bytes;   // what the embedding keeps (freed last in backward)
  std::vector<NamedBytes> layer_terms;  // one block's terms
  Bytes layer_backward_working_bytes;  // one layer's backward temporaries (+ recompute)
  // The part of it that is the block's forward run again (full or op-level checkpointing, or the
  // attention core under selective): tensors of the block's own sizes (layer_terms), not one buffer.
  Bytes layer_recomputed_bytes;
  // The sizes of the gradients backward makes in a block: the largest (the MLP's or the scores'),
  // then the residual stream's. The rest of the working memory comes as tensors of these sizes.
  std::array<Bytes, 2> layer_gradient_tensor_bytes;
  // What a block's PEFT layers allocate for a moment beyond what they save (DoRA's weight norm, the
  // pieces of a dense update: peft_temporaries), the tensors alive at once: in forward, again in
  // backward where the block is recomputed (empty where it is not), and in its backward.
  std::vector<Bytes> layer_forward_temporaries, layer_recompute_temporaries, layer_backward_temporaries;
  // Full checkpointing recomputes every block of the busiest stage (each saves only its input).
  bool every_block_recomputed = false;
  // training.use_cache: the keys and values each layer returns (beyond what autograd already
  // saves of them), alive from that layer's forward until the loss (or the step's end when the
  // loop keeps its outputs: loop_keeps_logits).
  Bytes kv_cache_key_bytes, kv_cache_value_bytes;  // one layer's (two tensors)
  Bytes kv_cache_bytes;  // all layers of the busiest stage
  // The whole cache, all layers, aliased saved tensors included: what a loop that keeps its
  // outputs holds after backward has freed the saved tensors, and the previous step's beside the
  // next forward. kv_cache_kept is set wherever the loop keeps it.
  Bytes kv_cache_total_bytes;
  bool kv_cache_kept = false;
  // What autograd Functions keep as ctx attributes rather than saved tensors (bitsandbytes before
  // 0.43.2: each 4-bit linear's input): part of saved_bytes, but backward does not free it; it
  // goes with the graph, after backward, or when the loop holds the outputs (loop_keeps_logits)
  // when the next forward returns.
  Bytes retained_bytes;
  bool retained_until_next_forward = false;
  // FSDP1 with units of frozen parameters (a PEFT base with use_orig_params off) under reentrant
  // checkpointing: each recomputed block's input, and the gradient backward gives it, stay until
  // backward ends (fsdp1_keeps_recomputed_inputs in activations.cpp). One block's input (its
  // gradient is as large), and the blocks whose inputs stay; zero where it does not apply.
  Bytes frozen_unit_input_bytes;
  Count frozen_unit_blocks;
  std::vector<std::string> notes;
};

// The output head and the loss, from the head's input to the logits' gradient.
struct LossModel {
  Bytes forward_bytes;    // head + loss high point during forward
  Bytes backward_bytes;   // head + loss high point at the start of backward
  Bytes grad_bytes;       // the logits' gradient (and its cast) alive through the head's backward
  Bytes head_input_bytes; // the head's saved input (and the size of the gradient it returns)
  Bytes head_grad_bytes;  // the head weight's gradient (or the tied embedding's)
  Bytes head_dequant_bytes;  // a quantised head's weight, dequantised for each forward and backward matmul
  bool head_grad_in_forward = false;  // a fused linear loss computes it during forward (in forward_bytes)
  Bytes kept_bytes;       // logits the training loop holds through the whole step
  Bytes peak_bytes;       // the larger of the two high points (breakdown.logits_and_loss)
  std::vector<std::string> notes;
};

ActivationModel activation_model(const Config& config, const ParameterCount& params);

// How much of one micro-batch's whole-stage activations the first pipeline stage holds at its
// peak: chunks / chunks_per_stage (a chunk is a virtual stage's share of the layers).
struct PipelineInFlight {
  Count chunks;
  std::int64_t chunks_per_stage;
};
PipelineInFlight pipeline_in_flight(const Parallel& parallel, std::int64_t micro_batches);
LossModel loss_model(const Config& config, const ParameterCount& params);

// Encoder-decoder models (T5, BART) and post-norm encoders (RoBERTa, XLM-R, DeBERTa):
// activations_encdec.cpp, which activation_model and loss_model hand such a model to.
bool uses_encoder_activation_model(const ModelSpec& model);
ActivationModel encoder_activation_model(const Config& config, const ParameterCount& params);
LossModel encoder_loss_model(const Config& config);

// The seeds' formula (seeds/000, seeds/001): L·B·T·(34d + 5hT) bytes, or B·T·(34d + 5hT) with
// full checkpointing. 34 and 5 include the 2 bytes per fp16 element (Korthikanti et al. 2022).
Bytes seed_activation_bytes(const Config& config);

}  // namespace memfit
