// Checks on a typed configuration: each field's range (as JSON input is held to), then the rules
// between fields. Every message names the field and what is allowed.
#include <algorithm>
#include <string>
#include <vector>

#include "activations.hpp"
#include "field_table.hpp"
#include "finetune.hpp"
#include "memfit/config.hpp"
#include "memfit/estimate.hpp"
#include "memfit/gpus.hpp"
#include "memfit/hf_import.hpp"
#include "memfit/implementation.hpp"
#include "peft.hpp"
#include "vision.hpp"
#include "text.hpp"

namespace memfit {

namespace {

using detail::Field;
using detail::FieldKind;
using detail::group_digits;

class Checks {
 public:
  void add(const char* field, std::string message) { errors_.push_back({field, std::move(message)}); }
  void add_issue(Issue issue) { errors_.push_back(std::move(issue)); }
  std::vector<Issue> take() { return std::move(errors_); }
  bool empty() const { return errors_.empty(); }

 private:
  std::vector<Issue> errors_;
};

// Ranges first, so that a configuration built in C++ is held to the same limits as JSON.
void check_ranges(const Config& c, Checks& out) {
  Config& m = const_cast<Config&>(c);  // the table's accessors are shared by reader and writer
  for (const Field& f : detail::config_fields()) {
    if (f.kind == FieldKind::kInt && (f.int_ref(m) < f.min_int || f.int_ref(m) > f.max_int)) {
      out.add(f.path, "must be " + detail::int_range_text(f) + "; got " + group_digits(f.int_ref(m)));
    } else if (f.kind == FieldKind::kReal && !(f.real_ref(m) >= f.min_real && f.real_ref(m) <= f.max_real)) {
      out.add(f.path, "must be " + detail::real_range_text(f) + "; got " + detail::plain_number(f.real_ref(m)));
    }
  }
}

void check_attention(const ModelSpec& m, Checks& out) {
  if (m.qk_norm_layers > m.num_hidden_layers) {
    out.add("model.qk_norm_layers", "must be at most model.num_hidden_layers (" + group_digits(m.num_hidden_layers) +
                                        "); got " + group_digits(m.qk_norm_layers));
  }
  if (m.rotary_per_layer && (m.position_embedding != PositionKind::kRotary || m.is_encoder_decoder)) {
    out.add("model.rotary_per_layer", "needs a decoder with rotary positions (model.position_embedding rotary)");
  }
  if (m.rotary_per_layer && m.num_attention_heads > 0 && m.rotary_dim > m.head_size()) {
    out.add("model.rotary_dim", "must be at most the head size (" + group_digits(m.head_size()) + "); got " +
                                    group_digits(m.rotary_dim));
  }
  if (m.attention_type != AttentionType::kMla) {
    if (m.head_dim == 0 && m.hidden_size % m.num_attention_heads != 0) {
      out.add("model.num_attention_heads", "must divide model.hidden_size (" + group_digits(m.hidden_size) +
                                               ") when model.head_dim is not given; got " +
                                               group_digits(m.num_attention_heads));
    }
    if (m.num_key_value_heads > m.num_attention_heads || m.num_attention_heads % m.kv_heads() != 0) {
      out.add("model.num_key_value_heads", "must divide model.num_attention_heads (" +
                                               group_digits(m.num_attention_heads) + "); got " +
                                               group_digits(m.num_key_value_heads));
    }
    return;
  }
  if (m.kv_lora_rank < 1) out.add("model.kv_lora_rank", "must be at least 1 for attention_type mla");
  if (m.qk_nope_head_dim + m.qk_rope_head_dim < 1) {
    out.add("model.qk_nope_head_dim", "qk_nope_head_dim + qk_rope_head_dim must be at least 1 for attention_type mla");
  }
  if (m.v_head_dim < 1) out.add("model.v_head_dim", "must be at least 1 for attention_type mla");
}

void check_mlp(const ModelSpec& m, Checks& out) {
  if (m.hidden_act == HiddenAct::kClampedSwiglu && m.mlp != MlpKind::kGated) {
    out.add("model.hidden_act", "clamped_swiglu needs a gated MLP (model.mlp gated): it reads a gate and an up projection");
  }
  // Apertus's xIELU is a decoder's up / down MLP's, its learned scalars one pair a layer.
  if (m.hidden_act == HiddenAct::kXielu &&
      (m.mlp != MlpKind::kPlain || m.num_experts > 0 || uses_encoder_activation_model(m))) {
    out.add("model.hidden_act", "xielu (Apertus) needs a plain MLP (model.mlp plain) in a decoder without experts "
                                "(model.num_experts 0)");
  }
  if (m.attention_sinks && m.attention_type != AttentionType::kStandard) {
    out.add("model.attention_sinks", "needs model.attention_type standard");
  }
  // A weightless norm is OLMo-1's LayerNorm, the only one memfit knows how it runs (on an fp32 copy).
  if (!m.norm_weight && (m.norm != NormKind::kLayerNorm || m.norm_bias || m.qk_norm != QkNorm::kNone || !m.normalize_before)) {
    out.add("model.norm_weight", "false is OLMo-1's LayerNorm without weight or bias: it needs model.norm layernorm, "
                                 "model.norm_bias false, model.qk_norm none and model.normalize_before true");
  }
  // OLMo's clamps are on a decoder's standard attention.
  if (m.clip_qkv && (m.attention_type != AttentionType::kStandard || !m.normalize_before)) {
    out.add("model.clip_qkv", "needs model.attention_type standard and model.normalize_before true (OLMo's decoder "
                              "attention clamps q, k and v)");
  }
  const bool has_dense_layers = m.num_experts == 0 || m.first_k_dense_replace > 0;
  if (has_dense_layers && m.intermediate_size < 1) {
    out.add("model.intermediate_size", "must be at least 1 (the model has dense MLP layers)");
  }
  if (m.num_experts == 0) return;
  if (m.num_experts_per_tok < 1 || m.num_experts_per_tok > m.num_experts) {
    out.add("model.num_experts_per_tok", "must be from 1 to model.num_experts (" + group_digits(m.num_experts) +
                                             "); got " + group_digits(m.num_experts_per_tok));
  }
  if (m.moe_intermediate_size < 1) out.add("model.moe_intermediate_size", "must be at least 1 when model.num_experts > 0");
  if (m.first_k_dense_replace > m.num_hidden_layers) {
    out.add("model.first_k_dense_replace",
            "must be at most model.num_hidden_layers (" + group_digits(m.num_hidden_layers) + ")");
  }
}

// Encoder-decoder models (T5, BART): the decoder's heads must split the hidden size, and the two
// stacks are placed whole (memfit does not model a pipeline or context split of an encoder and a
// decoder with cross-attention between them). DeBERTa's attention is an encoder's.
void check_encoder_decoder(const Config& c, Checks& out) {
  const ModelSpec& m = c.model;
  if (m.attention_type == AttentionType::kDisentangled && m.is_encoder_decoder) {
    out.add("model.attention_type", "disentangled (DeBERTa) is an encoder's attention; it cannot be combined with "
                                    "model.is_encoder_decoder");
  }
  if (!m.is_encoder_decoder) return;
  if (m.attention_type == AttentionType::kMla) {
    out.add("model.attention_type", "mla is not supported for an encoder-decoder (model.is_encoder_decoder)");
  }
  if (m.num_experts > 0) out.add("model.num_experts", "must be 0 for an encoder-decoder (model.is_encoder_decoder)");
  if (m.hidden_act == HiddenAct::kClampedSwiglu) {
    out.add("model.hidden_act", "clamped_swiglu (gpt-oss) is not supported for an encoder-decoder (model.is_encoder_decoder)");
  }
  if (m.attention_sinks) out.add("model.attention_sinks", "is not supported for an encoder-decoder (model.is_encoder_decoder)");
  if (!m.norm_weight) out.add("model.norm_weight", "must be true for an encoder-decoder (model.is_encoder_decoder)");
  if (m.clip_qkv) out.add("model.clip_qkv", "must be false for an encoder-decoder (model.is_encoder_decoder)");
  if (m.head_dim == 0 && m.hidden_size % m.decoder_heads() != 0) {
    out.add("model.decoder_attention_heads", "must divide model.hidden_size (" + group_digits(m.hidden_size) +
                                                 ") when model.head_dim is not given; got " +
                                                 group_digits(m.decoder_heads()));
  }
  if (c.parallel.pipeline > 1) {
    out.add("parallel.pipeline", "must be 1 for an encoder-decoder (model.is_encoder_decoder): memfit does not "
                                 "split its encoder and decoder into pipeline stages; got " +
                                     group_digits(c.parallel.pipeline));
  }
  if (c.parallel.context > 1) {
    out.add("parallel.context", "must be 1 for an encoder-decoder (model.is_encoder_decoder); got " +
                                    group_digits(c.parallel.context));
  }
  if (m.decoder_heads() % c.parallel.tensor != 0) {
    out.add("parallel.tensor", "must divide the decoder's attention heads (" + group_digits(m.decoder_heads()) + ")");
  }
}

// A hybrid model (Gated DeltaNet blocks beside attention: Qwen3.5) as transformers' classes run
// it, on one pipeline stage and without tensor, context or expert splits (memfit models none of
// them for the Gated DeltaNet), every block with the same MLP kind.
void check_hybrid(const Config& c, Checks& out) {
  const ModelSpec& m = c.model;
  const Training& t = c.training;
  if ((t.finetune.lora_targets & kLoraLinearAttn) && !m.hybrid_attention() && t.finetune.method != FinetuneMethod::kFull) {
    out.add("training.finetune.lora_targets", "linear_attn needs Gated DeltaNet layers (model.linear_attention_layers)");
  }
  if (!m.hybrid_attention()) return;
  const std::string why = " for a model with Gated DeltaNet layers (model.linear_attention_layers)";
  if (m.linear_attention_layers > m.num_hidden_layers) {
    out.add("model.linear_attention_layers", "must be at most model.num_hidden_layers (" +
                                                 group_digits(m.num_hidden_layers) + "); got " +
                                                 group_digits(m.linear_attention_layers));
  }
  if (m.linear_num_value_heads % m.linear_num_key_heads != 0) {
    out.add("model.linear_num_value_heads", "must be a multiple of model.linear_num_key_heads (" +
                                                group_digits(m.linear_num_key_heads) + "); got " +
                                                group_digits(m.linear_num_value_heads));
  }
  if (m.is_encoder_decoder || m.attention_type != AttentionType::kStandard || uses_encoder_activation_model(m) ||
      m.block != BlockLayout::kSequential) {
    out.add("model.linear_attention_layers", "needs a pre-norm decoder with standard attention and sequential blocks "
                                             "(not an encoder, an encoder-decoder, mla, disentangled or parallel "
                                             "blocks)");
  }
  // PEFT's prefix tuning hands every layer past keys and values, and its adaption prompt wraps every
  // layer's self_attn: a Gated DeltaNet layer has neither.
  switch (t.finetune.method) {
    case FinetuneMethod::kPrefixTuning:
    case FinetuneMethod::kCartridge:
    case FinetuneMethod::kLlamaAdapter:
    case FinetuneMethod::kLlamaAdapterV2:
      out.add("training.finetune.method", std::string(to_string(t.finetune.method)) +
                                              " needs attention in every layer; a Gated DeltaNet layer (model."
                                              "linear_attention_layers) has none: lora, prompt_tuning or p_tuning");
      break;
    default: break;
  }
  if (m.num_experts > 0 && m.first_k_dense_replace > 0) {
    out.add("model.first_k_dense_replace", "must be 0" + why + ": every block has the same MLP; got " +
                                               group_digits(m.first_k_dense_replace));
  }
  if (!runs_transformers_model(t.implementation.framework)) {
    out.add("training.framework", "must run transformers' model class" + why + " (hf, trl, deepspeed, liger, ...)");
  }
  if (t.checkpointing == Checkpointing::kSelective || t.checkpointing == Checkpointing::kSelectiveOp) {
    out.add("training.checkpointing", "must be none or full" + why);
  }
  const Parallel& p = c.parallel;
  if (p.pipeline > 1) out.add("parallel.pipeline", "must be 1" + why + "; got " + group_digits(p.pipeline));
  if (p.tensor > 1) out.add("parallel.tensor", "must be 1" + why + "; got " + group_digits(p.tensor));
  if (p.context > 1) out.add("parallel.context", "must be 1" + why + "; got " + group_digits(p.context));
  if (p.expert > 1) out.add("parallel.expert", "must be 1" + why + "; got " + group_digits(p.expert));
}

// A vision tower (model.vision_type) is loaded by the multimodal transformers class: the stacks
// that run that class (and unsloth's FastVisionModel), one pipeline stage, no tensor split (the
// classes' tp_plan covers the language model only, and memfit places the tower whole).
void check_vision(const Config& c, Checks& out) {
  const ModelSpec& m = c.model;
  if (m.vision_type == VisionTower::kNone) return;
  const std::string why = " for a model with a vision tower (model.vision_type; none leaves it out)";
  const Framework f = c.training.implementation.framework;
  if (!runs_transformers_model(f) && f != Framework::kUnsloth) {
    out.add("training.framework", "must run the multimodal transformers class" + why + " (hf, trl, deepspeed, liger, unsloth)");
  }
  if (m.is_encoder_decoder || uses_encoder_activation_model(m)) {
    out.add("model.vision_type", "must be none for an encoder or an encoder-decoder: the vision towers memfit knows feed "
                                 "a decoder's language model");
  }
  // The seeds' convention counts parameters alone, by their rule; Q-GaLore's INT8 layers are
  // swapped in by module name, the tower's included, which memfit does not model.
  if (c.training.precision == Precision::kSeed14p) {
    out.add("model.vision_type", "must be none under precision seed_14p (the source documents' convention has no vision tower)");
  }
  if (c.training.weight_quant != WeightQuant::kNone) {
    out.add("training.weight_quant", "must be none" + why + ": Q-GaLore's INT8 layers replace the tower's linears too");
  }
  // Images through the tower: where memfit models what they leave saved (vision.cpp).
  if (const ImagesUnmodelled why = images_unmodelled(c); !why.field.empty()) out.add(why.field.c_str(), why.message);
  // Only LLaVA builds the encoder its vision_config names; Gemma 3's, Mistral 3's and PaliGemma's are fixed.
  if (m.vision_encoder != VisionEncoder::kAuto && m.vision_type != VisionTower::kLlava) {
    out.add("model.vision_encoder", "must be auto unless model.vision_type is llava (the other wrappers' encoders are "
                                    "fixed by their class)");
  }
  // PEFT's adapters go on the language model; a tower that trains beside them is modules_to_save's
  // business (or adapters of its own), which memfit does not model.
  const VisionTrain trains = c.training.finetune.train_vision;
  if (is_peft(c) && trains != VisionTrain::kAuto && trains != VisionTrain::kNone) {
    out.add("training.finetune.train_vision", "must be none or auto under a PEFT method (training.finetune.method " +
                                                  std::string(to_string(c.training.finetune.method)) +
                                                  "): the tower is held frozen beside the adapters");
  }
  const Parallel& p = c.parallel;
  if (p.pipeline > 1) out.add("parallel.pipeline", "must be 1" + why + "; got " + group_digits(p.pipeline));
  if (p.tensor > 1) out.add("parallel.tensor", "must be 1" + why + "; got " + group_digits(p.tensor));
}

void check_training(const Config& c, Checks& out) {
  const ModelSpec& m = c.model;
  const Training& t = c.training;
  // Images run through a vision tower: a model without one (or whose tower the importer left out,
  // with a warning) has nothing to run them through.
  if (t.images_per_sample > 0 && m.vision_type == VisionTower::kNone) {
    out.add("training.images_per_sample", "must be 0 for a model without a vision tower (model.vision_type none)");
  }

  // transformers' Llama 4 class has no FlashAttention-2 path (modeling_llama4.py,
  // _supports_flash_attn = False): loading it so raises.
  if (m.model_type == "llama4_text" && t.implementation.attention == AttentionImpl::kFlash &&
      runs_transformers_model(t.implementation.framework)) {
    out.add("training.attention", "flash is not available for Llama 4 under transformers (its class has no "
                                  "FlashAttention-2 path); sdpa or eager");
  }
  // Liger's Granite patch raises for its fused linear cross-entropy (apply_liger_kernel_to_granite:
  // "LigerFusedLinearCrossEntropy is not available for Granite models": the class scales its logits).
  if (t.implementation.framework == Framework::kLiger && liger_patches(m).loss == LossKernel::kFusedCe &&
      (t.implementation.loss == LossKernel::kFusedLinearCe || t.implementation.chunked_loss)) {
    out.add(t.implementation.chunked_loss ? "training.chunked_loss" : "training.loss",
            "Liger has no fused linear cross-entropy for Granite (its logits are scaled; Liger's Granite patch "
            "raises): leave it to Liger's cross-entropy (training.loss auto)");
  }
  if (m.position_embedding == PositionKind::kLearned && t.seq_len > m.max_position_embeddings &&
      t.precision != Precision::kSeed14p) {
    out.add("training.seq_len", "must be at most model.max_position_embeddings (" +
                                    group_digits(m.max_position_embeddings) + ") for learned positions; got " +
                                    group_digits(t.seq_len));
  }
  if (m.is_encoder_decoder && m.position_embedding == PositionKind::kLearned &&
      t.decoder_len() > m.max_position_embeddings) {
    out.add("training.target_len", "must be at most model.max_position_embeddings (" +
                                       group_digits(m.max_position_embeddings) + ") for learned positions; got " +
                                       group_digits(t.decoder_len()));
  }
  if (t.optimizer_in_backward && t.grad_accum_steps > 1) {
    // The step runs inside backward, per parameter: there is no gradient to accumulate into
    // (torchtune refuses optimizer_in_bwd with gradient_accumulation_steps > 1).
    out.add("training.optimizer_in_backward", "cannot be combined with training.grad_accum_steps > 1 (" +
                                                  group_digits(t.grad_accum_steps) +
                                                  "): the update happens during backward");
  }
  if (t.finetune.base_bits != 4 && t.finetune.base_bits != 8 && t.finetune.base_bits != 16) {
    out.add("training.finetune.base_bits", "must be 16 (frozen 16-bit base), 8 (int8) or 4 (QLoRA NF4); got " +
                                               group_digits(t.finetune.base_bits));
  } else if (t.finetune.method == FinetuneMethod::kFull && t.finetune.base_bits != 16) {
    out.add("training.finetune.base_bits", "must be 16 with training.finetune.method full: a quantised base is "
                                           "frozen, so only adapters (lora) can train on it; got " +
                                               group_digits(t.finetune.base_bits));
  }
  if (t.finetune.method == FinetuneMethod::kLnTuning && !m.norm_weight) {
    out.add("training.finetune.method", "ln_tuning trains the norms' weights, and this model's norms have none "
                                        "(model.norm_weight false)");
  }
  if (t.finetune.method == FinetuneMethod::kLora && t.finetune.lora_targets == 0) {
    out.add("training.finetune.lora_targets", "must name at least one module for LoRA");
  }
  if (t.checkpointing == Checkpointing::kFull && t.checkpointed_layers >= 0) {
    if (t.checkpointed_layers > c.model.num_hidden_layers) {
      out.add("training.checkpointed_layers", "must be at most model.num_hidden_layers (" +
                                                  group_digits(c.model.num_hidden_layers) + ") or -1 (all); got " +
                                                  group_digits(t.checkpointed_layers));
    } else if (uses_encoder_activation_model(c.model)) {
      out.add("training.checkpointed_layers", "must be -1 (all blocks) for an encoder or encoder-decoder model: "
                                              "checkpointing part of the blocks is modelled for decoder-only models");
    }
  }
  if (t.precision == Precision::kFp8Mixed) {
    // Transformer Engine refuses FP8 below compute capability 8.9 (check_fp8_support).
    const Gpu* gpu = find_gpu(c.hardware.gpu);
    if (gpu && !gpu->has_fp8()) {
      out.add("training.precision", "fp8_mixed needs a GPU with FP8 tensor cores (H100, H200, B200, L4, L40S, RTX "
                                    "4090, MI300); hardware.gpu is " + std::string(gpu->name));
    }
  }
  if (t.float8 != Float8::kNone) {
    // torch._scaled_mm needs FP8 tensor cores (sm_89+, MI300); Transformer Engine's recipe is
    // another path to FP8 (precision fp8_mixed), not both at once.
    const Gpu* gpu = find_gpu(c.hardware.gpu);
    if (gpu && t.float8 == Float8::kMxfp8 && !gpu->has_mx()) {
      // torchao's MX training asserts compute capability 10.0+ (block-scaled torch._scaled_mm).
      out.add("training.float8", "mxfp8 needs a Blackwell GPU (B200) for its block-scaled matmuls; hardware.gpu is " +
                                     std::string(gpu->name) + (gpu->has_fp8() ? " (tensorwise or rowwise run on it)" : ""));
    } else if (gpu && !gpu->has_fp8()) {
      out.add("training.float8", "needs a GPU with FP8 matmuls (H100, H200, B200, L4, L40S, RTX 4090, MI300); "
                                 "hardware.gpu is " + std::string(gpu->name));
    }
    if (t.precision == Precision::kFp8Mixed) {
      out.add("training.float8", "cannot be combined with training.precision fp8_mixed (Transformer Engine's FP8): "
                                 "choose one");
    }
  }
  const Finetune& ft = t.finetune;
  if (ft.trainable_layers >= 0) {
    const std::int64_t layers = c.model.num_hidden_layers;
    if (is_peft(c)) {
      out.add("training.finetune.trainable_layers", "applies to method full (the blocks trained in full); a "
                                                    "parameter-efficient method trains its own parameters: set -1");
    } else if (ft.trainable_layers > layers) {
      out.add("training.finetune.trainable_layers", "must be at most model.num_hidden_layers (" + group_digits(layers) +
                                                        ") or -1 (every block); got " + group_digits(ft.trainable_layers));
    } else if (uses_encoder_activation_model(c.model)) {
      out.add("training.finetune.trainable_layers", "must be -1 (every block) for an encoder or encoder-decoder model: "
                                                    "training some blocks only is modelled for decoder-only models");
    } else if (ft.lowest_trainable_layer > layers - ft.trainable_layers) {
      out.add("training.finetune.lowest_trainable_layer",
              "must leave room for the trained blocks above it: at most model.num_hidden_layers - trainable_layers (" +
                  group_digits(layers - ft.trainable_layers) + "), or -1 (the top blocks); got " +
                  group_digits(ft.lowest_trainable_layer));
    }
  }
  if (t.weight_quant != WeightQuant::kNone) {
    // Q-GaLore quantizes the weights it trains (prepare_model_for_int8_training); the frozen base of
    // a parameter-efficient method is finetune.base_bits.
    if (is_peft(c)) {
      out.add("training.weight_quant", "applies to full fine-tuning and pre-training (the trained weights are stored "
                                       "in INT8); for a quantized frozen base use training.finetune.base_bits");
    }
    if (t.precision != Precision::kBf16 && t.precision != Precision::kFp32 && t.precision != Precision::kBf16Autocast) {
      out.add("training.weight_quant", "needs training.precision bf16, bf16_autocast or fp32: the INT8 weights are "
                                       "the only copy (Q-GaLore keeps no fp32 master weights)");
    }
  }
  std::vector<Issue> peft;
  validate_peft(c, peft);  // peft.cpp: what each method's PEFT implementation refuses
  for (Issue& issue : peft) out.add_issue(std::move(issue));
}

// Combinations no framework can run, named by both fields.
void check_layout_sense(const Config& c, Checks& out) {
  const Parallel& p = c.parallel;
  if (p.context > 1 && c.training.seq_len % p.context != 0) {
    out.add("parallel.context", "must divide training.seq_len (" + group_digits(c.training.seq_len) +
                                    "): each context-parallel rank holds an equal slice; got " + group_digits(p.context));
  }
  const std::int64_t data_parallel = p.num_gpus / std::max<std::int64_t>(1, p.tensor * p.pipeline * p.context);
  if (p.expert > 1 && data_parallel % p.expert != 0) {
    out.add("parallel.expert", "must divide the data-parallel size (parallel.num_gpus / (tensor × pipeline × "
                               "context) = " + group_digits(data_parallel) + "); got " + group_digits(p.expert));
  }
  if (p.offload_params && p.zero_stage < 3) {
    out.add("parallel.offload_params", "needs parallel.zero_stage 3 (parameter offload is ZeRO-3 / FSDP's); got "
                                       "zero_stage " + group_digits(p.zero_stage));
  }
  if (p.offload_optimizer && p.zero_stage < 1) {
    out.add("parallel.offload_optimizer", "needs parallel.zero_stage 1 or more (DeepSpeed's ZeRO-Offload); got "
                                          "zero_stage 0");
  }
}

void check_parallel(const Config& c, Checks& out) {
  const ModelSpec& m = c.model;
  const Parallel& p = c.parallel;
  const std::int64_t model_parallel = p.tensor * p.pipeline * p.context;
  if (p.num_gpus % model_parallel != 0) {
    out.add("parallel.num_gpus", "must be a multiple of tensor × pipeline × context (" +
                                     group_digits(model_parallel) + "); got " + group_digits(p.num_gpus));
  }
  if (p.pipeline > m.num_hidden_layers) {
    out.add("parallel.pipeline", "must be at most model.num_hidden_layers (" + group_digits(m.num_hidden_layers) + ")");
  }
  if (m.attention_type != AttentionType::kMla && m.num_attention_heads % p.tensor != 0) {
    out.add("parallel.tensor", "must divide model.num_attention_heads (" + group_digits(m.num_attention_heads) + ")");
  }
  if (p.expert > 1 && m.num_experts == 0) {
    out.add("parallel.expert", "must be 1 for a dense model: expert parallelism splits a mixture of experts' "
                               "experts, and model.num_experts is 0");
  } else if (p.expert > 1 && m.num_experts % p.expert != 0) {
    out.add("parallel.expert", "must divide model.num_experts (" + group_digits(m.num_experts) + ")");
  } else if (p.expert > 1 && resolve_implementation(c).moe_dispatch == MoeDispatch::kDense) {
    // transformers' Llama 4 runs every expert on every token through two batched matmuls and has
    // no expert-parallel plan for them.
    out.add("parallel.expert", "must be 1 with training.moe_dispatch dense (every expert runs on every token, "
                               "as transformers' Llama 4 does, with no expert-parallel plan)");
  }
  if (p.virtual_stages > 1 && p.pipeline_schedule == PipelineSchedule::kSequential) {
    out.add("parallel.virtual_stages", "must be 1 with parallel.pipeline_schedule sequential (interleaving needs 1F1B)");
  }
  if (p.virtual_stages > 1 && (p.pipeline < 2 || p.pipeline * p.virtual_stages > m.num_hidden_layers)) {
    out.add("parallel.virtual_stages", "must be 1 without pipeline parallelism, and pipeline × virtual_stages at "
                                       "most model.num_hidden_layers (" + group_digits(m.num_hidden_layers) + ")");
  }
  if (p.gradient_sync == GradientSync::kLastMicroBatch && p.zero_stage >= 2 &&
      c.training.implementation.framework == Framework::kDeepspeed) {
    out.add("parallel.gradient_sync", "must be every_micro_batch or auto with training.framework deepspeed and "
                                      "ZeRO stage 2 or 3: the engine reduces every micro-batch (its no_sync() refuses "
                                      "partitioned gradients)");
  }
  const Framework framework = c.training.implementation.framework;
  if (p.reshard_after_forward == ReshardAfterForward::kNever && p.zero_stage == 3 &&
      !runs_torch_data_parallel(framework)) {
    out.add("parallel.reshard_after_forward", "must be auto or always with training.framework " +
                                                  std::string(to_string(framework)) +
                                                  ": it is FSDP's setting (DeepSpeed keeps what it reuses soon: "
                                                  "parallel.zero3_max_reuse_distance)");
  }
  if (p.fsdp_version != FsdpVersion::kAuto && p.zero_stage >= 2) {
    if (!runs_torch_data_parallel(framework)) {
      out.add("parallel.fsdp_version", "must be auto with training.framework " + std::string(to_string(framework)) +
                                           ": it shards with its own engine, not torch FSDP");
    } else if (p.fsdp_version == FsdpVersion::kOne && framework == Framework::kTorchtitan) {
      out.add("parallel.fsdp_version", "must be 2 or auto with training.framework torchtitan: it shards with "
                                       "fully_shard (FSDP2) only");
    }
  }
  if (fsdp1_units_mix(c) && !fsdp1_uses_orig_params(c)) {
    // Without use_orig_params FSDP1 flattens a unit only if all of it trains or none of it
    // (_flat_param.py, _validate_tensors_to_flatten), and this method's tensors share the blocks'
    // units with the frozen base.
    out.add("parallel.fsdp_use_orig_params",
            "must be true for " + std::string(to_string(c.training.finetune.method)) +
                " under FSDP1: its trained tensors share the blocks' units with the frozen base, and FSDP1 "
                "flattens a unit with use_orig_params=False only if all of it trains or none (\"Must flatten tensors "
                "with uniform requires_grad\"); the HF Trainer sets it true by default, and parallel.fsdp_version 2 "
                "needs neither");
  }
  if (fsdp1_units_mix(c) && runs_accelerate(framework) &&
      ((c.training.finetune.base_bits == 16 &&
        lora_base_bytes(recipe_of(c), resolve_implementation(c)) < kFp32Bytes) ||
       (bnb_4bit_base(c) && c.training.finetune.quant_storage != QuantStorage::kUint8)) &&
      resolve_implementation(c).lora_adapter_dtype == LoraAdapterDtype::kFp32) {
    // The HF Trainer's policy gives leaf modules that train a unit of their own; this method's
    // tensors stay in the blocks' units beside the 16-bit base, and FSDP1 flattens a unit into one
    // tensor of one dtype (_validate_tensors_to_flatten). Measured: tools/frameworks/accelerate_upcast.py.
    out.add("training.lora_adapter_dtype",
            "must be weights (PEFT's autocast_adapter_dtype=False) for " +
                std::string(to_string(c.training.finetune.method)) +
                " under FSDP1 with a 16-bit (or bf16-stored 4-bit) base: its fp32 tensors stay in the blocks' units beside "
                "the base, and "
                "FSDP1 flattens a unit into one tensor of one dtype (\"Must flatten tensors with uniform dtype\"); "
                "or parallel.fsdp_version 2, which shards each parameter apart");
  }
  if (c.training.finetune.quant_storage == QuantStorage::kUint8 && bnb_4bit_base(c) && p.zero_stage >= 2 &&
      runs_accelerate(framework) && runs_fsdp1(c)) {
    // FSDP1 flattens a block's tensors into one flat parameter of one dtype (_flat_param.py,
    // _validate_tensors_to_flatten: "Must flatten tensors with uniform dtype").
    out.add("training.finetune.quant_storage",
            "must be bf16 or auto (bnb_4bit_quant_storage) under FSDP1: it flattens each block into one tensor of one "
            "dtype and cannot take uint8 4-bit weights beside the block's 16-bit norms (FSDP2 can: "
            "parallel.fsdp_version 2)");
  }
  if (p.async_tp && p.tensor >= 2 && framework != Framework::kTorchtitan) {
    out.add("parallel.async_tp", "must be false with training.framework " + std::string(to_string(framework)) +
                                     ": it is torchtitan's (enable_async_tensor_parallel)");
  } else if (p.async_tp && p.tensor >= 2 && c.training.implementation.compile != Switch::kYes) {
    out.add("parallel.async_tp", "needs training.compile yes: torchtitan's async TP is an Inductor pass "
                                 "(micro-pipeline TP) over the compiled model");
  }
  const std::int64_t data_ranks = p.num_gpus / (p.tensor * p.pipeline);
  // ZeRO++ is DeepSpeed's ZeRO-3; under another stage it is ignored, as DeepSpeed ignores it (and
  // the planner may try other stages), but under ZeRO-3 another engine cannot run it.
  const bool zero_plus_plus = p.zero_hpz_partition_size > 1 || p.zero_quantized_weights || p.zero_quantized_gradients;
  if (zero_plus_plus && p.zero_stage == 3 && framework != Framework::kDeepspeed) {
    out.add(p.zero_hpz_partition_size > 1 ? "parallel.zero_hpz_partition_size"
            : p.zero_quantized_weights    ? "parallel.zero_quantized_weights"
                                          : "parallel.zero_quantized_gradients",
            "is DeepSpeed's ZeRO++: it applies with training.framework deepspeed (set 1 / false otherwise)");
  } else if (p.zero_hpz_partition_size > 1 && p.zero_stage == 3 && p.num_gpus % model_parallel == 0 && data_ranks > 0 &&
             data_ranks % std::min(p.zero_hpz_partition_size, data_ranks) != 0) {
    // DeepSpeed groups min(hpz, world size) consecutive ranks and requires them to divide the world
    // (utils/groups.py, _create_zero_param_parallel_group).
    out.add("parallel.zero_hpz_partition_size", "must divide the data-parallel ranks (num_gpus / (tensor × pipeline) "
                                                "= " + group_digits(data_ranks) + ") or be at least that many; got " +
                                                group_digits(p.zero_hpz_partition_size));
  }
  if (p.float8_all_gather && p.zero_stage == 3 && !runs_fsdp2(c)) {
    out.add("parallel.float8_all_gather",
            "is torchao's FSDP2 setting (enable_fsdp_float8_all_gather); " +
                (runs_torch_data_parallel(framework) ? std::string("this run shards with FSDP1 (parallel.fsdp_version)")
                                                     : "training.framework " + std::string(to_string(framework)) +
                                                           " does not gather through FSDP2"));
  }
  if (p.shard_degree > 0 && p.num_gpus % model_parallel == 0 && data_ranks % p.shard_degree != 0) {
    out.add("parallel.shard_degree", "must divide the ranks that hold the same layers (num_gpus / (tensor × "
                                     "pipeline) = " + group_digits(data_ranks) + "); got " +
                                     group_digits(p.shard_degree));
  }
  check_layout_sense(c, out);
}

void check_hardware(const Hardware& h, Checks& out) {
  if (!find_gpu(h.gpu)) {
    out.add("hardware.gpu", "must be the id of a GPU in the table (see `memfit --list-gpus`); got \"" + h.gpu + "\"" +
                                gpu_suggestion_text(h.gpu));
  }
  // -1 is the one spelling of "automatic"; any other negative number is a mistake, not a request.
  if (h.fragmentation < 0 && h.fragmentation != -1.0) {
    out.add("hardware.fragmentation",
            "must be -1 (automatic) or a number from 0 to 1; got " + detail::plain_number(h.fragmentation));
  }
}

}  // namespace

std::vector<Issue> validate(const Config& c) {
  Checks checks;
  check_ranges(c, checks);
  if (!checks.empty()) return checks.take();
  check_attention(c.model, checks);
  check_mlp(c.model, checks);
  check_encoder_decoder(c, checks);
  check_hybrid(c, checks);
  check_vision(c, checks);
  check_training(c, checks);
  check_parallel(c, checks);
  check_hardware(c.hardware, checks);
  return checks.take();
}

std::vector<Issue> advisories(const Config& c) {
  std::vector<Issue> out;
  const Parallel& p = c.parallel;
  const std::int64_t data_parallel = p.num_gpus / std::max<std::int64_t>(1, p.tensor * p.pipeline);
  if (p.sequence_parallel && p.tensor == 1) {
    out.push_back({"parallel.sequence_parallel", "has no effect without tensor parallelism (parallel.tensor 1)"});
  }
  if (p.zero_stage > 0 && data_parallel == 1) {
    out.push_back({"parallel.zero_stage", "shards nothing: one data-parallel rank (parallel.num_gpus / (tensor × "
                                          "pipeline) = 1)"});
  }
  if (c.training.finetune.method == FinetuneMethod::kFull && c.training.finetune.lora_dropout > 0) {
    out.push_back({"training.finetune.lora_dropout", "has no effect with training.finetune.method full"});
  }
  if (c.training.implementation.chunked_loss && c.model.output_head == OutputHead::kNone) {
    out.push_back({"training.chunked_loss", "has no effect: the model has no output head (model.output_head none)"});
  }
  const Gpu* gpu = find_gpu(c.hardware.gpu);
  if (const char* lacks = gpu ? card_lacks(*gpu, c.training.precision) : nullptr; lacks && std::string(lacks) == "bf16") {
    // PyTorch emulates bf16 on cards without bf16 tensor cores (torch.cuda.is_bf16_supported's
    // including_emulation), so the run starts, at a fraction of the card's fp16 speed.
    out.push_back({"training.precision", "needs bf16 tensor cores, which the " + std::string(gpu->name) +
                                             " lacks (Ampere and later have them): PyTorch emulates bf16 there, far "
                                             "slower; fp16_mixed or fp16_master is the usual recipe on this card"});
  }
  // FSDP1's root unit holds a frozen vision tower's outer pieces (its projector, norms, patch
  // embedding) beside the trained embeddings and head: without use_orig_params FSDP1 refuses to
  // flatten them ("Must flatten tensors with uniform requires_grad when use_orig_params=False").
  // The HF Trainer's and accelerate's default is true; the estimate barely depends on it.
  if (vision_root_frozen(c) && !is_peft(c) && p.zero_stage >= 2 && data_parallel > 1 &&
      runs_torch_data_parallel(c.training.implementation.framework) && !runs_fsdp2(c) && !fsdp1_uses_orig_params(c)) {
    out.push_back({"parallel.fsdp_use_orig_params", "should be true under FSDP1 for a model with a vision tower (the "
                                                    "HF Trainer's and accelerate's default): FSDP1's root unit mixes "
                                                    "the frozen tower's outer pieces with the trained embeddings, and "
                                                    "FSDP1 refuses to start without it; the estimate barely changes"});
  }
  // A fused q/k/v target on a transformers class whose q, k and v are separate modules: PEFT's
  // target_modules would name a module the model does not have.
  const Finetune& f = c.training.finetune;
  if ((f.lora_targets & kLoraQkv) && adapts_linears_method(f.method) &&
      runs_transformers_model(c.training.implementation.framework) &&
      hf_qkv_modules(c.model.model_type) == QkvModules::kSeparate) {
    out.push_back({"training.finetune.lora_targets",
                   "qkv names one fused q/k/v projection, which transformers' class for model_type \"" +
                       c.model.model_type +
                       "\" does not have (its q, k and v are separate modules): PEFT would find no module of that "
                       "name; name q, k and v instead"});
  }
  if (c.training.target_len > 0 && !c.model.is_encoder_decoder) {
    out.push_back({"training.target_len", "has no effect: the model has no decoder (model.is_encoder_decoder false)"});
  }
  return out;
}

}  // namespace memfit
