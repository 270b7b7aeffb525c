#include "field_table.hpp"

#include <cstring>
#include <string_view>

#include "text.hpp"

namespace memfit::detail {

namespace {

Field make_field(const char* path, FieldKind kind, const char* help) {
  Field f;
  f.path = path;
  f.kind = kind;
  f.help = help;
  return f;
}

// Accessor helpers: each row names its member once.
#define MF_INT(path, member, lo, hi, help)                                            \
  [] {                                                                                \
    Field f = make_field(path, FieldKind::kInt, help);                                             \
    f.min_int = lo;                                                                   \
    f.max_int = hi;                                                                   \
    f.int_ref = [](Config& c) -> std::int64_t& { return c.member; };                  \
    return f;                                                                         \
  }()
#define MF_BOOL(path, member, help)                                                   \
  [] {                                                                                \
    Field f = make_field(path, FieldKind::kBool, help);                                            \
    f.bool_ref = [](Config& c) -> bool& { return c.member; };                         \
    return f;                                                                         \
  }()
#define MF_REAL(path, member, lo, hi, help)                                           \
  [] {                                                                                \
    Field f = make_field(path, FieldKind::kReal, help);                                            \
    f.min_real = lo;                                                                  \
    f.max_real = hi;                                                                  \
    f.real_ref = [](Config& c) -> double& { return c.member; };                       \
    return f;                                                                         \
  }()
#define MF_STRING(path, member, help)                                                 \
  [] {                                                                                \
    Field f = make_field(path, FieldKind::kString, help);                                          \
    f.string_ref = [](Config& c) -> std::string& { return c.member; };                \
    return f;                                                                         \
  }()
#define MF_ENUM(path, member, type, help, ...)                                        \
  [] {                                                                                \
    Field f = make_field(path, FieldKind::kEnum, help);                                            \
    f.choices = {__VA_ARGS__};                                                        \
    f.enum_get = [](const Config& c) { return static_cast<int>(c.member); };          \
    f.enum_set = [](Config& c, int v) { c.member = static_cast<type>(v); };           \
    return f;                                                                         \
  }()

constexpr std::int64_t kMillion = 1'000'000;
constexpr std::int64_t kBillion = 1'000'000'000;

// One row per field: a table, read top to bottom, not a procedure (hence its length).
std::vector<Field> build_fields() {
  std::vector<Field> f = {
      // model: architecture (Hugging Face config.json names)
      MF_STRING("model.preset", model.preset, "preset id the model fields start from; explicit fields override it"),
      MF_STRING("model.model_type", model.model_type, "Hugging Face family: the transformers class that runs the shape (its knobs under hf, trl, deepspeed, liger)"),
      MF_STRING("model.multimodal_type", model.multimodal_type, "the multimodal model_type (qwen3_vl, mistral3, ...) whose language model this is; empty for a text model (Liger's patches key on it)"),
      MF_INT("model.vocab_size", model.vocab_size, 1, 10 * kMillion, "vocabulary size V"),
      MF_INT("model.hidden_size", model.hidden_size, 1, kMillion, "hidden size d"),
      MF_INT("model.num_hidden_layers", model.num_hidden_layers, 1, 100'000, "transformer blocks L"),
      MF_INT("model.num_attention_heads", model.num_attention_heads, 1, kMillion, "attention heads h"),
      MF_INT("model.num_key_value_heads", model.num_key_value_heads, 0, kMillion,
             "key/value heads (grouped-query attention); 0 = num_attention_heads"),
      MF_INT("model.head_dim", model.head_dim, 0, kMillion, "size of one head; 0 = hidden_size / num_attention_heads"),
      MF_INT("model.intermediate_size", model.intermediate_size, 0, 100 * kMillion, "MLP inner size (d_ff)"),
      MF_ENUM("model.mlp", model.mlp, MlpKind, "plain: up, act, down; gated: SwiGLU/GeGLU (gate, up, down)",
              "plain", "gated"),
      MF_ENUM("model.hidden_act", model.hidden_act, HiddenAct,
              "the MLP's activation: auto (SiLU for a gated MLP, GELU otherwise), gelu, relu (T5 v1.0), gelu_new "
              "(transformers' NewGELU: GPT-2, T5 v1.1), silu, gelu_pytorch_tanh (config.json hidden_act / "
              "activation_function), clamped_swiglu (gpt-oss: gate and up clamped, (up + 1) · gate · "
              "sigmoid(1.702 · gate); a gated MLP), relu2 (squared ReLU: Nemotron, Arcee), xielu (Apertus: "
              "two learned parameters per MLP, Python arithmetic)",
              "auto", "gelu", "relu", "gelu_new", "silu", "gelu_pytorch_tanh", "clamped_swiglu", "relu2", "xielu"),
      MF_ENUM("model.norm", model.norm, NormKind, "normalisation layer", "layernorm", "rmsnorm"),
      MF_BOOL("model.norm_bias", model.norm_bias, "LayerNorm has a bias"),
      MF_BOOL("model.norm_weight", model.norm_weight,
              "the norms have a learned weight; false: OLMo-1's LayerNorm without weight or bias, run on an fp32 copy"),
      MF_BOOL("model.clip_qkv", model.clip_qkv,
              "q, k and v clamped in place (OLMo's clip_qkv): each clamp keeps a copy of its projection's output"),
      MF_ENUM("model.position_embedding", model.position_embedding, PositionKind,
              "learned positions have parameters; rotary and none do not; relative_bias: T5's bucketed bias "
              "table (relative_attention_num_buckets × heads per stack)",
              "learned", "rotary", "none", "relative_bias"),
      MF_INT("model.max_position_embeddings", model.max_position_embeddings, 1, kBillion,
             "rows of the learned position table; the longest sequence"),
      MF_INT("model.position_embedding_offset", model.position_embedding_offset, 0, kMillion,
             "extra position rows (OPT has 2)"),
      MF_BOOL("model.tie_word_embeddings", model.tie_word_embeddings, "the output head shares the token embedding"),
      MF_ENUM("model.output_head", model.output_head, OutputHead,
              "lm: a vocabulary head (an encoder's masked-LM head with lm_head_transform); none: the bare model; "
              "sequence_classification: an encoder's dense + tanh over one token then num_labels outputs, a "
              "decoder's score (num_labels outputs, no bias) read at each sequence's last token (a reward model: 1); "
              "token_classification: num_labels outputs per token (an encoder-decoder's encoder only)",
              "lm", "none", "sequence_classification", "token_classification"),
      MF_BOOL("model.lm_head_bias", model.lm_head_bias, "the output head has a bias"),
      MF_BOOL("model.attention_bias", model.attention_bias, "bias on q, k, v and output projections"),
      MF_BOOL("model.qkv_bias", model.qkv_bias, "bias on q, k and v only (Qwen2)"),
      MF_BOOL("model.mlp_bias", model.mlp_bias, "bias on the MLP projections"),
      MF_ENUM("model.block", model.block, BlockLayout,
              "sequential: attention then MLP; parallel: both read the block input (GPT-NeoX, Falcon, Phi)",
              "sequential", "parallel"),
      MF_INT("model.norms_per_block", model.norms_per_block, 0, 8, "hidden-size norms in each block"),
      MF_BOOL("model.final_norm", model.final_norm, "a norm after the last block"),
      MF_BOOL("model.input_norm", model.input_norm,
              "each sublayer normalises its input (pre-norm); false: only its output, before the residual add "
              "(OLMo-2)"),
      MF_BOOL("model.residual_dropout", model.residual_dropout,
              "dropout on the embeddings and both residual branches (GPT-2, OPT, BERT)"),
      MF_ENUM("model.head_dropout", model.head_dropout, Switch,
              "a decoder's token classifier drops out its input in training (transformers' classifier_dropout, "
              "else hidden_dropout, else 0.1), whatever training.dropout says; auto = its class's default",
              "auto", "yes", "no"),
      MF_BOOL("model.attention_output_dropout", model.attention_output_dropout,
              "with residual_dropout: the attention branch drops out too; false: only the MLP's (DistilBERT)"),
      MF_BOOL("model.attention_softcap", model.attention_softcap,
              "tanh soft-capping of the attention scores (Gemma 2: attn_logit_softcapping); eager attention keeps "
              "the tanh output"),
      MF_BOOL("model.attention_sinks", model.attention_sinks,
              "a learned sink logit per head joins every softmax row (gpt-oss: one parameter per head and layer)"),
      MF_BOOL("model.logit_softcap", model.logit_softcap,
              "tanh soft-capping of the logits (Gemma 2: final_logit_softcapping); the tanh output is kept"),
      MF_ENUM("model.qk_norm", model.qk_norm, QkNorm,
              "norms on queries and keys: per head (Qwen3), over the whole projection (OLMo-2) or a weightless "
              "fp32 L2 norm of each head (Llama 4)", "none", "per_head", "full_width", "l2"),
      MF_BOOL("model.qk_norm_after_rotary", model.qk_norm_after_rotary,
              "the q and k norms read the rotated heads (Hunyuan), in the rotary tables' dtype under autocast"),
      MF_INT("model.qk_norm_layers", model.qk_norm_layers, 0, 100'000,
             "layers with the query and key norms; 0 = every layer (Llama 4: its rotary layers)"),
      MF_INT("model.linear_attention_layers", model.linear_attention_layers, 0, 100'000,
             "blocks whose token mixer is a Gated DeltaNet (linear attention) instead of attention, spread among "
             "the attention blocks (Qwen3.5: 3 of every 4); 0 = every block attends"),
      MF_INT("model.linear_num_key_heads", model.linear_num_key_heads, 1, kMillion,
             "Gated DeltaNet query/key heads (Hk)"),
      MF_INT("model.linear_num_value_heads", model.linear_num_value_heads, 1, kMillion,
             "Gated DeltaNet value heads (Hv), a multiple of the key heads"),
      MF_INT("model.linear_key_head_dim", model.linear_key_head_dim, 1, kMillion, "Gated DeltaNet key head size (K)"),
      MF_INT("model.linear_value_head_dim", model.linear_value_head_dim, 1, kMillion,
             "Gated DeltaNet value head size (V)"),
      MF_INT("model.linear_conv_kernel_dim", model.linear_conv_kernel_dim, 1, 1'000,
             "width of the Gated DeltaNet's causal convolution over q, k and v"),
      MF_BOOL("model.linear_attention_fused", model.linear_attention_fused,
              "the Gated DeltaNet projects q, k, v and z with one linear and b and a with another (Qwen3-Next: "
              "in_proj_qkvz, in_proj_ba); false: four (Qwen3.5)"),
      MF_BOOL("model.attention_output_gate", model.attention_output_gate,
              "the attention output is multiplied by sigmoid of a gate q_proj projects beside the queries "
              "(Qwen3.5: q_proj twice as wide)"),
      MF_BOOL("model.rotary_per_layer", model.rotary_per_layer,
              "every layer rebuilds the rotary cos and sin and keeps them (ERNIE 4.5, GLM-4)"),
      MF_ENUM("model.rotary_table_dtype", model.rotary_table_dtype, RotaryTableDtype,
              "the dtype of the per-layer rotary tables: fp32 (ERNIE 4.5) or the residual stream's (GLM-4)",
              "fp32", "stream"),
      MF_INT("model.rotary_dim", model.rotary_dim, 0, 100'000,
             "the rotated part of each head when it is only part (GLM-4, Nemotron: half); 0 = the whole head"),
      MF_INT("model.type_vocab_size", model.type_vocab_size, 0, kMillion, "token-type embedding rows (BERT)"),
      MF_BOOL("model.embedding_norm", model.embedding_norm, "a norm right after the embeddings (BERT)"),
      MF_BOOL("model.pooler", model.pooler, "BERT pooler (dense hidden→hidden with bias) on the bare model (output_head none)"),
      MF_BOOL("model.normalize_before", model.normalize_before,
              "pre-norm blocks (true: GPT-2, Llama, T5) or post-norm (false: BERT-style encoders, BART)"),
      MF_INT("model.num_labels", model.num_labels, 1, kMillion, "outputs of a classification head"),
      MF_BOOL("model.lm_head_transform", model.lm_head_transform,
              "masked-LM head: dense, activation and LayerNorm before the vocabulary projection (BERT, RoBERTa, DeBERTa)"),
      MF_BOOL("model.is_encoder_decoder", model.is_encoder_decoder,
              "an encoder and a decoder with cross-attention (T5, BART); num_hidden_layers etc. describe the encoder"),
      MF_INT("model.num_decoder_layers", model.num_decoder_layers, 0, 100'000,
             "decoder blocks of an encoder-decoder; 0 = num_hidden_layers"),
      MF_INT("model.decoder_attention_heads", model.decoder_attention_heads, 0, kMillion,
             "decoder attention heads of an encoder-decoder; 0 = num_attention_heads"),
      MF_INT("model.decoder_ffn_dim", model.decoder_ffn_dim, 0, 100 * kMillion,
             "decoder MLP inner size of an encoder-decoder; 0 = intermediate_size"),
      MF_INT("model.relative_attention_num_buckets", model.relative_attention_num_buckets, 1, kMillion,
             "rows of T5's relative position bias table (position_embedding relative_bias)"),
      MF_INT("model.position_buckets", model.position_buckets, 0, kMillion,
             "DeBERTa log-bucketed relative positions; 0 = max_relative_positions"),
      MF_INT("model.max_relative_positions", model.max_relative_positions, -1, kBillion,
             "DeBERTa relative span; -1 (or 0) = max_position_embeddings"),
      MF_ENUM("model.pos_att_type", model.pos_att_type, PosAttType,
              "DeBERTa relative score terms: content-to-position and position-to-content", "c2p_p2c", "c2p", "p2c"),
      MF_BOOL("model.share_att_key", model.share_att_key,
              "DeBERTa: the position projections reuse the content query/key projections"),
      MF_BOOL("model.norm_rel_ebd", model.norm_rel_ebd, "DeBERTa: a LayerNorm on the relative embeddings"),
      MF_INT("model.num_experts", model.num_experts, 0, 100'000, "routed experts per MoE layer; 0 = dense"),
      MF_INT("model.num_experts_per_tok", model.num_experts_per_tok, 0, 100'000, "experts each token is routed to"),
      MF_INT("model.num_shared_experts", model.num_shared_experts, 0, 10'000, "always-active shared experts"),
      MF_INT("model.moe_intermediate_size", model.moe_intermediate_size, 0, 100 * kMillion, "inner size of one expert"),
      MF_INT("model.shared_expert_intermediate_size", model.shared_expert_intermediate_size, 0, 100 * kMillion,
             "inner size of the shared expert MLP; 0 = num_shared_experts × moe_intermediate_size"),
      MF_BOOL("model.shared_expert_gate", model.shared_expert_gate, "a sigmoid gate on the shared expert (Qwen2-MoE)"),
      MF_BOOL("model.router_bias", model.router_bias, "a per-expert router bias (DeepSeek-V3)"),
      MF_INT("model.first_k_dense_replace", model.first_k_dense_replace, 0, 100'000, "leading dense layers in an MoE model"),
      MF_INT("model.moe_input_jitter", model.moe_input_jitter, 0, 2,
             "times a mixture's input is multiplied by uniform noise in training, each keeping its noise "
             "(Mixtral's router_jitter_noise: 1; Phi-3.5-MoE's input_jitter_noise: 2)"),
      MF_BOOL("model.moe_layers_interleaved", model.moe_layers_interleaved,
              "the first_k_dense_replace dense layers alternate with the MoE layers (Llama 4 Maverick) instead of "
              "coming first: each pipeline stage holds its share of each"),
      MF_ENUM("model.attention_type", model.attention_type, AttentionType,
              "standard (multi-head / grouped-query), mla (DeepSeek multi-head latent attention) or disentangled "
              "(DeBERTa-v2/v3)",
              "standard", "mla", "disentangled"),
      MF_INT("model.q_lora_rank", model.q_lora_rank, 0, kMillion, "MLA query compression rank; 0 = direct"),
      MF_INT("model.kv_lora_rank", model.kv_lora_rank, 0, kMillion, "MLA key/value compression rank"),
      MF_INT("model.qk_rope_head_dim", model.qk_rope_head_dim, 0, kMillion, "MLA rotary part of a query/key head"),
      MF_INT("model.qk_nope_head_dim", model.qk_nope_head_dim, 0, kMillion, "MLA non-rotary part of a query/key head"),
      MF_INT("model.v_head_dim", model.v_head_dim, 0, kMillion, "MLA value head size"),
      MF_ENUM("model.vision_type", model.vision_type, VisionTower,
              "a multimodal model's vision encoder and projector, by its transformers class: held frozen, never "
              "run by a text-only step", "none", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "gemma3", "llava", "mistral3",
              "paligemma"),
      MF_INT("model.vision_depth", model.vision_depth, 0, 100'000, "vision encoder blocks; 0 = the released models'"),
      MF_INT("model.vision_hidden_size", model.vision_hidden_size, 0, kMillion,
             "vision encoder width (Qwen2-VL: embed_dim); 0 = the released models'"),
      MF_INT("model.vision_intermediate_size", model.vision_intermediate_size, 0, kMillion,
             "vision MLP width; 0 = the released models'"),
      MF_INT("model.vision_out_hidden_size", model.vision_out_hidden_size, 0, kMillion,
             "the projector's output width; 0 = hidden_size"),
      MF_INT("model.vision_patch_size", model.vision_patch_size, 0, 100'000, "patch side in pixels; 0 = the released models'"),
      MF_INT("model.vision_temporal_patch_size", model.vision_temporal_patch_size, 0, 1'000, "frames per patch; 0 = 2"),
      MF_INT("model.vision_in_channels", model.vision_in_channels, 0, 1'000, "image channels; 0 = 3"),
      MF_INT("model.vision_spatial_merge_size", model.vision_spatial_merge_size, 0, 1'000,
             "patches merged per side; 0 = 2"),
      MF_INT("model.vision_num_position_embeddings", model.vision_num_position_embeddings, 0, kMillion,
             "learned vision positions (Qwen3-VL; SigLIP, CLIP: one per patch); 0 = the released models'"),
      MF_INT("model.vision_deepstack_layers", model.vision_deepstack_layers, 0, 100, "Qwen3-VL's deepstack mergers"),
      MF_INT("model.vision_num_heads", model.vision_num_heads, 0, 100'000,
             "vision encoder attention heads; 0 = the released models' 16"),
      MF_ENUM("model.vision_use_head", model.vision_use_head, Switch,
              "SigLIP's attention-pooling head (Gemma 3's and PaliGemma's released ones are off); auto = no", "auto", "yes", "no"),
      MF_ENUM("model.vision_projector_bias", model.vision_projector_bias, Switch,
              "biases on the projector's linears; auto = the class's (LLaVA yes, Mistral 3 no)", "auto", "yes", "no"),
      MF_ENUM("model.vision_encoder", model.vision_encoder, VisionEncoder,
              "the vision encoder class under LLaVA (LlavaModel builds the one vision_config names: CLIP for "
              "LLaVA-1.5, SigLIP for LLaVA-Interleave, Pixtral for Pixtral-12B); auto = CLIP",
              "auto", "clip", "siglip", "pixtral"),
      MF_INT("model.vision_feature_layer", model.vision_feature_layer, -100'001, 100'000,
             "the vision layer LLaVA and Mistral 3 project (vision_feature_layer: -1 the last block's output, -2 "
             "the one before); 0 = the class's (LLaVA -2, Mistral 3 -1)"),
      MF_INT("model.vision_tokens_per_image", model.vision_tokens_per_image, 0, kMillion,
             "tokens Gemma 3's projector pools an image to (mm_tokens_per_image); 0 = 256"),
      MF_INT("model.nominal_parameter_count", model.nominal_parameter_count, 0, 1'000'000 * kBillion,
             "use this parameter count instead of the counted one (the seeds' nominal sizes); 0 = count"),

      // training
      MF_INT("training.micro_batch_size", training.micro_batch_size, 1, kMillion, "sequences per GPU per step (B)"),
      MF_INT("training.images_per_sample", training.images_per_sample, 0, 100'000,
             "images through the vision tower per sequence (their tokens count in seq_len); 0 = text-only"),
      MF_INT("training.image_patches", training.image_patches, 0, 10 * kMillion,
             "patches of each image before any merger, (height / patch) x (width / patch): 14-pixel patches for "
             "Qwen2-VL, Qwen2.5-VL and Mistral 3, 16 for Qwen3-VL and Pixtral-12B; 0 = SigLIP's or CLIP's fixed count"),
      MF_INT("training.seq_len", training.seq_len, 1, 100 * kMillion,
             "tokens per sequence (T); an encoder-decoder's source length"),
      MF_INT("training.target_len", training.target_len, 0, 100 * kMillion,
             "an encoder-decoder's target (decoder) length; 0 = seq_len"),
      MF_ENUM("training.sequence_lengths", training.sequence_lengths, SequenceLengths,
              "fixed: every micro-batch is seq_len tokens (packed data, or padded to the cap); varying: each is "
              "padded to its own longest sample, so lengths range up to seq_len and the caching allocator keeps "
              "segments cut for every length (a larger reserve)",
              "fixed", "varying"),
      MF_INT("training.grad_accum_steps", training.grad_accum_steps, 1, kMillion, "micro-batches per optimizer step"),
      MF_ENUM("training.precision", training.precision, Precision, "precision recipe (bytes per parameter)", "fp32",
              "fp16_mixed", "bf16_mixed", "fp16_master", "bf16_master", "bf16", "fp8_mixed", "seed_14p", "bf16_fsdp",
              "bf16_autocast"),
      MF_ENUM("training.optimizer", training.optimizer, Optimizer,
              "optimizer (states derived from each library's code: torch.optim, bitsandbytes, galore-torch, "
              "Adam-mini, Muon, LOMO/AdaLomo, distributed Shampoo, SOAP, CAME, Sophia, schedule_free, torchao; "
              "mezo: zeroth-order, two forward passes per step and nothing for backward; apollo: APOLLO's random "
              "low-rank moments, galore_rank sets r)",
              "adamw", "adamw_8bit", "paged_adamw", "paged_adamw_8bit", "adafactor", "sgd", "sgd_momentum", "lion",
              "galore_adamw", "galore_adamw_8bit", "adam_mini", "muon", "lomo", "adalomo", "shampoo", "soap", "came",
              "sophia", "schedule_free_adamw", "lion_8bit", "sgd_momentum_8bit", "adamw_4bit", "mezo", "apollo"),
      MF_INT("training.galore_rank", training.galore_rank, 1, 100'000,
             "GaLore / APOLLO projection rank r (APOLLO-Mini: 1)"),
      MF_INT("training.galore_update_interval", training.galore_update_interval, 1, kMillion,
             "GaLore update_proj_gap: optimizer steps between projection updates (SVDs)"),
      MF_INT("training.max_preconditioner_dim", training.max_preconditioner_dim, 0, kMillion,
             "Shampoo / SOAP: largest preconditioner side (blocks of this size); 0 = the library's default "
             "(distributed Shampoo 1024, SOAP 10000)"),
      MF_ENUM("training.optimizer_impl", training.optimizer_impl, OptimizerImpl,
              "foreach: PyTorch's default multi-tensor step (one state-sized temporary); fused: in-place "
              "kernels (fused=True, DeepSpeed FusedAdam, 8-bit); for_loop: one parameter at a time; "
              "foreach_legacy: PyTorch <= 2.0's multi-tensor step (two state-sized temporaries); auto = the "
              "framework's (fused: the Trainer's adamw_torch_fused on PyTorch >= 2.8, DeepSpeed, torchtune, "
              "torchtitan, Megatron, nanoGPT, llm.c; foreach: LitGPT's fine-tuning scripts)",
              "auto", "foreach", "fused", "for_loop", "foreach_legacy"),
      MF_ENUM("training.checkpointing", training.checkpointing, Checkpointing,
              "activation checkpointing: none, selective (Megatron: attention core recomputed), full (layer "
              "inputs only), selective_op (torchtitan: every second matmul output and the attention output kept)",
              "none", "selective", "full", "selective_op"),
      MF_INT("training.checkpointed_layers", training.checkpointed_layers, -1, 100'000,
             "under full checkpointing, how many blocks are recomputed; the others keep all their activations "
             "(Megatron --recompute-method block --recompute-num-layers N: N per pipeline stage; torchtitan's "
             "layer selective checkpointing every k-th block: layers / k); -1 = all"),
      MF_ENUM("training.attention", training.implementation.attention, AttentionImpl,
              "attention kernel: flash (no T×T scores stored), eager (scores stored), sdpa (torch's: flash for "
              "16-bit inputs, memory-efficient for fp32); auto = the framework's",
              "auto", "flash", "eager", "sdpa"),
      MF_REAL("training.dropout", training.dropout, 0.0, 0.99, "dropout probability (masks stored when > 0)"),
      MF_BOOL("training.chunked_loss", training.implementation.chunked_loss,
              "kept for old links: true means training.loss fused_linear_ce"),
      MF_BOOL("training.optimizer_in_backward", training.optimizer_in_backward,
              "optimizer step fused into backward (gradients freed per parameter)"),
      MF_BOOL("training.zero_grad_set_to_none", training.zero_grad_set_to_none,
              "zero_grad frees the gradients (PyTorch >= 2.0's default); false zeroes them in place (PyTorch 1.x), "
              "so they stay allocated through the next step's forward"),
      MF_BOOL("training.activation_offload", training.activation_offload, "saved activations offloaded to CPU"),
      MF_ENUM("training.float8", training.float8, Float8,
              "torchao Float8 linears (convert_to_float8_training): none, tensorwise or rowwise scaling, or mxfp8 "
              "(torchao's MX training: one E8M0 scale per 32 elements, Blackwell only); saved activations as in "
              "bf16 (torchao >= 0.13; rowwise >= 0.9), fp8 copies of each matmul's operands for a moment",
              "none", "tensorwise", "rowwise", "mxfp8"),
      MF_ENUM("training.weight_quant", training.weight_quant, WeightQuant,
              "trained weights stored in low precision: int8 = the blocks' linear weights as INT8 codes with an "
              "fp32 scale and zero per group, dequantized for each matmul, updated with stochastic rounding "
              "(Q-GaLore --weight_quant); full fine-tuning and pre-training only",
              "none", "int8"),
      MF_INT("training.weight_quant_group_size", training.weight_quant_group_size, 1, 1LL << 30,
             "elements sharing one scale and zero under weight_quant int8 (Q-GaLore --weight_group_size, 256)"),
      MF_BOOL("training.galore_proj_quant", training.galore_proj_quant,
              "Q-GaLore --proj_quant: GaLore's projection matrices as one-byte codes (4-bit values, unpacked) with "
              "a scale and zero per 256 elements"),
      MF_ENUM("training.goal", training.goal, Goal,
              "what the run is for (decides the changes suggested and the planner's search); auto = peft for "
              "a parameter-efficient method, else full_finetune",
              "auto", "pretrain", "full_finetune", "peft"),
      MF_ENUM("training.finetune.method", training.finetune.method, FinetuneMethod,
              "full fine-tune, or a parameter-efficient method of Hugging Face PEFT (llama_adapter_v2: LitGPT)",
              "full", "lora", "dora", "lora_fa", "adalora", "vera", "ia3", "prompt_tuning", "prefix_tuning",
              "p_tuning", "llama_adapter", "llama_adapter_v2", "oft", "boft", "ln_tuning", "trainable_tokens", "loha",
              "lokr", "fourierft", "hra", "miss", "vblora", "randlora", "c3a", "road", "waveft", "delora", "gralora",
              "tinylora", "shira", "hira", "multitask_prompt_tuning", "cpt", "cartridge", "adamss", "beft", "lily",
              "poly", "frod", "pvera", "glora", "unilora", "osf", "psoft", "peanut", "supertuning", "deft", "xlora",
              "shadow"),
      MF_INT("training.finetune.lora_rank", training.finetune.lora_rank, 1, 100'000,
             "rank r of the method (LoRA, DoRA, LoRA-FA, AdaLoRA init_r, VeRA, LoHa, LoKr, HRA, MiSS, VB-LoRA, "
             "RandLoRA, DeLoRA, GraLoRA, TinyLoRA, SHiRA, AdaMSS, Lily, Poly, PVeRA, GLoRA, Uni-LoRA, PSOFT, PEANuT, DEFT)"),
      [] {
        Field f = make_field("training.finetune.lora_targets", FieldKind::kTargets,
                             "modules a method adapts (qkv: one fused q/k/v projection, as GPT-2's c_attn; router: a "
                             "mixture of experts' router; linear_attn: every projection of a Gated DeltaNet layer; "
                             "IA3 scales down's input and the others' output)");
        f.choices = {"q", "k", "v", "o", "gate", "up", "down", "head", "qkv", "router", "linear_attn"};
        f.targets_ref = [](Config& c) -> unsigned& { return c.training.finetune.lora_targets; };
        return f;
      }(),
      [] {
        Field f = make_field("training.finetune.modules_to_save", FieldKind::kTargets,
                             "PEFT modules_to_save: a trainable full copy of the token embedding and / or the output "
                             "head beside the frozen original, with its gradients and optimizer states");
        f.choices = {"embed", "head"};
        f.targets_ref = [](Config& c) -> unsigned& { return c.training.finetune.modules_to_save; };
        return f;
      }(),
      MF_INT("training.finetune.trainable_layers", training.finetune.trainable_layers, -1, 100'000,
             "full fine-tuning of this many blocks only (LLaMA-Factory freeze_trainable_layers, LISA's activated "
             "layers, LLaMA-Pro's added blocks); -1 = every block"),
      MF_INT("training.finetune.lowest_trainable_layer", training.finetune.lowest_trainable_layer, -1, 100'000,
             "the lowest trained block (0-based): backward stops there, so the blocks below save nothing; -1 = the "
             "trained blocks are the top ones"),
      [] {
        Field f = make_field("training.finetune.feedforward_modules", FieldKind::kTargets,
                             "IA3 feedforward_modules: they scale their input");
        f.choices = {"q", "k", "v", "o", "gate", "up", "down"};
        f.targets_ref = [](Config& c) -> unsigned& { return c.training.finetune.feedforward_modules; };
        return f;
      }(),
      MF_INT("training.finetune.decompose_factor", training.finetune.decompose_factor, -1, kMillion,
             "LoKr decompose_factor (-1: near the square root)"),
      MF_BOOL("training.finetune.loaded_before_wrapping", training.finetune.loaded_before_wrapping,
              "the model is on the GPU before PEFT wraps it (device_map, quantised bases); false: moved after. "
              "Places BOFT's, FRoD's and PSOFT's buffers"),
      MF_BOOL("training.finetune.train_embeddings", training.finetune.train_embeddings,
              "with trainable_layers: the token embedding trains too (backward then runs through every block)"),
      MF_BOOL("training.finetune.train_head", training.finetune.train_head,
              "with trainable_layers: the output head trains too"),
      MF_ENUM("training.finetune.train_vision", training.finetune.train_vision, VisionTrain,
              "which parts of the vision tower a full fine-tune trains: its projector (mergers), its encoder, "
              "both, or none (held frozen); auto: both under trl (SFTTrainer freezes nothing), none elsewhere "
              "(LLaMA-Factory's and ms-swift's defaults)",
              "auto", "none", "projector", "encoder", "all"),
      MF_REAL("training.finetune.lora_dropout", training.finetune.lora_dropout, 0.0, 0.99,
              "dropout on the LoRA adapters' input (PEFT lora_dropout)"),
      MF_BOOL("training.finetune.target_parameters", training.finetune.target_parameters,
              "stacked experts named with PEFT's target_parameters: gate_up_proj at rank r (module names: gate and "
              "up fused at 2r)"),
      MF_BOOL("training.finetune.use_rslora", training.finetune.use_rslora,
              "rsLoRA scaling (alpha / sqrt(r)); changes no memory"),
      MF_INT("training.finetune.base_bits", training.finetune.base_bits, 4, 16,
             "frozen base weights: 16 (bf16/fp16), 8 (int8), 4 (QLoRA 4-bit)"),
      MF_ENUM("training.finetune.quant_type", training.finetune.quant_type, QuantType,
              "4-bit base data type (bnb_4bit_quant_type); nf4 and fp4 store the same bytes", "nf4", "fp4"),
      MF_ENUM("training.finetune.quant_storage", training.finetune.quant_storage, QuantStorage,
              "dtype the 4-bit codes are packed into (bnb_4bit_quant_storage; same bytes): uint8, bitsandbytes' "
              "default, is left out of accelerate's FSDP2 sharding (whole on every GPU) and cannot be flattened by "
              "FSDP1; bf16 (any floating dtype) is sharded like the rest; auto = bf16 where the run shards",
              "auto", "uint8", "bf16"),
      MF_ENUM("training.finetune.quant_method", training.finetune.quant_method, QuantMethod,
              "who quantised the 8/4-bit base: bitsandbytes (QLoRA, LLM.int8(), at load), gptq (auto-gptq "
              "QuantLinear over a GPTQ checkpoint, which dequantises each weight to fp16 and keeps it for backward) "
              "or chatglm (ChatGLM's own model.quantize(bits): int8 / packed int4 with an fp16 scale per row, each "
              "quantized linear saving its input)",
              "bitsandbytes", "gptq", "chatglm"),
      MF_ENUM("training.finetune.gptq_kernel", training.finetune.gptq_kernel, GptqKernel,
              "GPTQ base: dequantize (auto-gptq's CUDA QuantLinear: each weight unpacked to fp16 and kept for "
              "backward) or fused (triton / exllama kernels that read the packed weight and keep nothing new)",
              "dequantize", "fused"),
      MF_INT("training.finetune.gptq_group_size", training.finetune.gptq_group_size, 0, kMillion,
             "GPTQ base: input rows per scale and zero point (the checkpoint's group_size; 0 = one group, "
             "group_size -1)"),
      MF_BOOL("training.finetune.double_quant", training.finetune.double_quant,
              "4-bit base: quantise the block scales again (bnb_4bit_use_double_quant)"),
      MF_BOOL("training.finetune.bnb_keeps_input", training.finetune.bnb_keeps_input,
              "4-bit base on bitsandbytes before 0.43.2 (July 2024): each 4-bit linear keeps its input until the "
              "step's graph is freed (ctx.tensors; removed by bitsandbytes PR #1270)"),
      MF_BOOL("training.finetune.nf4_whole_tensor", training.finetune.nf4_whole_tensor,
              "4-bit base quantised by torchao before 0.2 (May 2024, torchtune's early QLoRA): each weight "
              "compared with the 16 NF4 values in one piece at load, a numel x 16 difference tensor (twice for a "
              "moment); later torchao works in chunks"),
      MF_ENUM("training.finetune.stable_embedding", training.finetune.stable_embedding, Switch,
              "LitGPT (since Oct 2024) with a bitsandbytes base swaps the token embedding for bnb's "
              "StableEmbedding: the old embedding stays allocated and the new one keeps a gradient no "
              "optimizer clears, two more embedding-sized tensors; auto = yes under LitGPT with a "
              "bitsandbytes base",
              "auto", "yes", "no"),
      MF_INT("training.finetune.quant_block_size", training.finetune.quant_block_size, 16, 4096,
             "4-bit base: weights per quantisation block (bitsandbytes blocksize; a power of two)"),
      MF_BOOL("training.finetune.prepare_kbit", training.finetune.prepare_kbit,
              "8/4-bit base prepared by PEFT's prepare_model_for_kbit_training (TRL, axolotl, qlora.py): the "
              "embeddings, norms and head upcast to fp32 (it also turns on checkpointing: set that apart)"),
      MF_INT("training.finetune.num_virtual_tokens", training.finetune.num_virtual_tokens, 1, kMillion,
             "prompt tuning, prefix tuning, p-tuning, multitask prompt tuning, CPT and Cartridge: virtual tokens"),
      MF_INT("training.finetune.encoder_hidden_size", training.finetune.encoder_hidden_size, 0, kMillion,
             "p-tuning's prompt encoder and prefix tuning's projection: hidden size; 0 = the token dimension"),
      MF_BOOL("training.finetune.prefix_projection", training.finetune.prefix_projection,
              "prefix tuning through a two-layer MLP (PEFT prefix_projection)"),
      MF_ENUM("training.finetune.encoder_reparameterization_type", training.finetune.encoder_reparameterization_type,
              PromptEncoder, "p-tuning's prompt encoder", "mlp", "lstm"),
      MF_INT("training.finetune.adapter_len", training.finetune.adapter_len, 1, kMillion,
             "LLaMA-Adapter: adaption prompt length"),
      MF_INT("training.finetune.adapter_start_layer", training.finetune.adapter_start_layer, 0, 100'000,
             "LLaMA-Adapter: first adapted layer (PEFT adapter_layers = layers - this)"),
      MF_INT("training.finetune.block_size", training.finetune.block_size, 0, kMillion,
             "OFT, BOFT, C3A block size; 0 = the method's PEFT default (OFT 32, BOFT 4, C3A 256)"),
      MF_INT("training.finetune.boft_n_butterfly_factor", training.finetune.boft_n_butterfly_factor, 1, 64,
             "BOFT: butterfly factors"),
      MF_INT("training.finetune.n_frequency", training.finetune.n_frequency, 0, 100 * kMillion,
             "FourierFT / WaveFT: trained coefficients per module; 0 = the PEFT default (1000 / 2592)"),
      MF_INT("training.finetune.num_trainable_tokens", training.finetune.num_trainable_tokens, 1, 10 * kMillion,
             "trainable_tokens: embedding rows trained"),
      MF_INT("training.finetune.num_adapters", training.finetune.num_adapters, 1, 1000,
             "X-LoRA: the LoRA adapters it mixes (trained beforehand, frozen), each of rank lora_rank on lora_targets"),
      // The implementation: what the framework's code does (implementation.cpp's profiles).
      MF_ENUM("training.framework", training.implementation.framework, Framework,
              "the code that runs the model; its profile sets every knob left at auto", "hf", "torchtune",
              "torchtitan", "litgpt", "megatron", "megatron_te", "deepspeed", "nanogpt", "llm_c", "unsloth", "liger",
              "trl"),
      MF_ENUM("training.softmax_dtype", training.implementation.softmax_dtype, SoftmaxDtype,
              "eager attention's softmax: fp32 (upcast) or compute (the matmuls' dtype); auto = the framework's",
              "auto", "fp32", "compute"),
      MF_ENUM("training.logits_dtype", training.implementation.logits_dtype, LogitsDtype,
              "the logits the loss reads: fp32 (upcast) or compute; auto = the framework's", "auto", "fp32",
              "compute"),
      MF_ENUM("training.attention_mask", training.implementation.attention_mask, AttentionMask,
              "eager attention's causal mask: additive (a T×T tensor passed to every layer), implicit, boolean "
              "(a T×T mask saved by every layer), or alibi (Baichuan-13B: a B×H×T×T ALiBi bias built each step for "
              "any attention, kept through backward, and an H×T×T cache between steps); auto = the framework's",
              "auto", "additive", "implicit", "boolean", "alibi"),
      MF_ENUM("training.loss", training.implementation.loss, LossKernel,
              "the loss: eager cross-entropy, chunked (per-chunk, log-probabilities kept), fused_ce (logits and "
              "a log-sum-exp kept, gradient in place), fused_linear_ce (head and loss per chunk), compiled_ce "
              "(torch.compile'd cross-entropy: logits and a log-sum-exp kept, a new gradient), loss_parallel "
              "(DTensor's, under tensor parallelism: four V-wide tensors in backward), chunked_recompute (TRL's "
              "chunked_nll: head and loss per 256 tokens, recomputed in backward); auto = the framework's",
              "auto", "eager", "chunked", "fused_ce", "fused_linear_ce", "compiled_ce", "loss_parallel",
              "chunked_recompute"),
      MF_ENUM("training.norm_kernel", training.implementation.norm_kernel, NormKernel,
              "what an RMSNorm saves: eager (fp32 x, rstd, normalised x), eager_fp32 (all fp32), fused (x, rstd), "
              "fused_fp32 (fp32 x, rstd), python_layernorm (a LayerNorm in Python fp32 arithmetic, as Cohere's: "
              "x - mean twice, rstd, fp32 normalised x), compute (a LayerNorm run in the autocast dtype on casts "
              "of its input and weight, autocast off, as Nemotron's LayerNorm1P: x, mean, rstd); auto = the "
              "framework's",
              "auto", "eager", "eager_fp32", "fused", "fused_fp32", "python_layernorm", "compute"),
      MF_ENUM("training.kv_saved", training.implementation.kv_saved, KvSaved,
              "keys and values a fused attention kernel saves: at kv_heads or repeated to query_heads; auto = "
              "the framework's",
              "auto", "kv_heads", "query_heads"),
      MF_ENUM("training.projections", training.implementation.projections, Projections,
              "q/k/v and gate/up as separate matmuls (each saves its own autocast copy of its input), fused, or "
              "qkv_fused (q/k/v fused, gate/up separate; LitGPT) or gate_up_fused (q/k/v separate, gate/up fused; "
              "GLM-4); auto = the framework's",
              "auto", "separate", "fused", "qkv_fused", "gate_up_fused"),
      MF_ENUM("training.activation_kernel", training.implementation.activation_kernel, ActivationKernel,
              "the MLP activation as Python arithmetic (eager: gelu_new saves four tensors), one kernel (fused), or "
              "one kernel whose backward writes the gradients over its saved inputs (fused_inplace: Liger's and "
              "unsloth's Triton SwiGLU); auto = the framework's",
              "auto", "eager", "fused", "fused_inplace"),
      MF_ENUM("training.loop_keeps_logits", training.implementation.loop_keeps_logits, Switch,
              "the training loop holds the logits through backward and the next forward (LitGPT, nanoGPT); auto = "
              "the framework's",
              "auto", "yes", "no"),
      MF_ENUM("training.use_cache", training.implementation.use_cache, Switch,
              "use_cache left on in training (a loop that wraps layers in its own checkpointing, e.g. FSDP's "
              "checkpoint_wrapper): each layer's keys and values are returned with the outputs and live as long "
              "as they do (through backward when the loop keeps its outputs); auto = no",
              "auto", "yes", "no"),
      MF_ENUM("training.checkpoint_impl", training.implementation.checkpoint_impl, CheckpointImpl,
              "how activation checkpointing recomputes a block: reentrant (torch.utils.checkpoint use_reentrant=True, "
              "transformers 4's gradient checkpointing default, unsloth's; under FSDP1 a unit of frozen parameters "
              "then keeps every block's recomputed input and its gradient until backward ends) or non_reentrant "
              "(transformers 5, torch's checkpoint_wrapper: torchtune, torchtitan, LitGPT); auto = the framework's",
              "auto", "reentrant", "non_reentrant"),
      MF_ENUM("training.loss_shift_copy", training.implementation.loss_shift_copy, Switch,
              "the eager loss shifts a contiguous copy of the logits while the 16-bit logits are held (transformers "
              "4.46-4.48's ForCausalLMLoss, Qwen-1's remote code): one more logits-sized tensor during forward; auto "
              "= no (transformers 4.49+ shifts the labels; before 4.46 the copy replaces the freed 16-bit logits)",
              "auto", "yes", "no"),
      MF_ENUM("training.moe_dispatch", training.implementation.moe_dispatch, MoeDispatch,
              "how a mixture-of-experts block runs its experts: loop (one expert at a time: transformers 4, "
              "LitGPT, Megatron's SequentialMLP) or grouped (the routed tokens sorted by expert through grouped "
              "GEMMs: transformers 5, torchtitan; in the experts' weight dtype, fp32 under autocast "
              "over fp32 weights) or dense (every expert on every token, weighted by the router's scores: "
              "transformers' Llama 4); auto = the framework's (the model class's under transformers)",
              "auto", "loop", "grouped", "dense"),
      MF_ENUM("training.linear_attention_kernel", training.implementation.linear_attention_kernel,
              LinearAttentionKernel,
              "what runs a Gated DeltaNet layer: fla (flash-linear-attention's and causal-conv1d's kernels, installed "
              "beside transformers) or torch (transformers' fallback without them: fp32 chunk intermediates, about "
              "2.5 times the layer's saved tensors); auto = fla",
              "auto", "fla", "torch"),
      MF_ENUM("training.lora_base_dtype", training.implementation.lora_base_dtype, LoraBaseDtype,
              "a LoRA base's dtype: half (16-bit), fp32, or weights (the recipe's weight dtype, as LitGPT); auto = "
              "the framework's",
              "auto", "half", "fp32", "weights"),
      MF_ENUM("training.lora_adapter_dtype", training.implementation.lora_adapter_dtype, LoraAdapterDtype,
              "the adapters' dtype (any PEFT method's trained tensors): fp32 (PEFT's autocast_adapter_dtype, its "
              "default; each adapter saves its own cast of its input) or weights (the recipe's; "
              "autocast_adapter_dtype=False); auto = the framework's",
              "auto", "fp32", "weights"),
      MF_ENUM("training.load", training.implementation.load, LoadPath,
              "how weights reach the GPU: direct, fp32_then_cast, or checkpoint_on_gpu (with optimizer states); "
              "auto = the framework's",
              "auto", "direct", "fp32_then_cast", "checkpoint_on_gpu"),
      MF_ENUM("training.compile", training.implementation.compile, Switch,
              "torch.compile over the model: the partitioner saves a norm's input and rstd and a gated "
              "activation's inputs, recomputing the rest (norm_kernel and activation_kernel at auto become "
              "fused); auto = the framework's (no framework compiles by default)",
              "auto", "yes", "no"),

      // parallel
      MF_INT("parallel.num_gpus", parallel.num_gpus, 1, kMillion, "GPUs in the job"),
      MF_INT("parallel.tensor", parallel.tensor, 1, 1024, "tensor-parallel degree"),
      MF_INT("parallel.pipeline", parallel.pipeline, 1, 10'000, "pipeline-parallel stages"),
      MF_INT("parallel.context", parallel.context, 1, 10'000, "context-parallel degree (sequence split)"),
      MF_INT("parallel.expert", parallel.expert, 1, 100'000, "expert-parallel degree"),
      MF_INT("parallel.virtual_stages", parallel.virtual_stages, 1, 1000,
             "interleaved 1F1B: model chunks per pipeline stage (Megatron virtual pipeline size); 1 = plain 1F1B"),
      MF_ENUM("parallel.pipeline_schedule", parallel.pipeline_schedule, PipelineSchedule,
              "1f1b: stages overlap micro-batches (Megatron, torchtitan, DeepSpeed); sequential: one micro-batch "
              "passes every stage before the next (transformers / accelerate device_map='auto': naive model "
              "parallelism, one GPU busy at a time)",
              "1f1b", "sequential"),
      MF_INT("parallel.zero_stage", parallel.zero_stage, 0, 3,
             "ZeRO / FSDP: 1 shards optimizer states, 2 also gradients, 3 also parameters"),
      MF_INT("parallel.shard_degree", parallel.shard_degree, 0, kMillion,
             "ranks ZeRO / FSDP shard over; 0 = all data-parallel ranks; smaller = hybrid sharding (shard "
             "within groups of this size, replicate across them)"),
      MF_BOOL("parallel.sequence_parallel", parallel.sequence_parallel, "Megatron sequence parallelism"),
      MF_BOOL("parallel.offload_optimizer", parallel.offload_optimizer, "optimizer states in CPU memory"),
      MF_BOOL("parallel.offload_params", parallel.offload_params, "parameters in CPU memory (ZeRO-3 offload)"),
      MF_BOOL("parallel.float8_all_gather", parallel.float8_all_gather,
              "torchao enable_fsdp_float8_all_gather: FSDP2 gathers the tensorwise Float8 linears' weights in fp8 "
              "(1 byte each)"),
      MF_BOOL("parallel.fsdp_use_orig_params", parallel.fsdp_use_orig_params,
              "FSDP1 use_orig_params=True: the optimizer works on each parameter's view of the flat shard, and "
              "units mixing frozen and trainable parameters keep gradients for all (the HF Trainer and torchtune "
              "give LoRA's adapters units of their own, so nothing mixes; LitGPT always sets it, and its blocks "
              "mix)"),
      MF_ENUM("parallel.fsdp_version", parallel.fsdp_version, FsdpVersion,
              "which FSDP shards: 1 = FullyShardedDataParallel (flat parameters: accelerate's default, LitGPT), "
              "2 = fully_shard (per-parameter shards: torchtitan, torchtune, accelerate fsdp_version 2); "
              "auto = the framework's",
              "auto", "1", "2"),
      MF_BOOL("parallel.async_tp", parallel.async_tp,
              "torchtitan's async tensor parallelism: torch's fused all-gather and reduce-scatter matmuls keep a "
              "symmetric-memory workspace outside the caching allocator (in nvidia-smi's total, not in "
              "max_memory_reserved)"),
      MF_BOOL("parallel.fsdp_limit_all_gathers", parallel.fsdp_limit_all_gathers,
              "FSDP1 limit_all_gathers (default true since PyTorch 2.1): false lets all-gathers run ahead of the "
              "GPU, and the allocator's reserve grows toward the card (it gives the memory back when full)"),
      MF_ENUM("parallel.gradient_sync", parallel.gradient_sync, GradientSync,
              "when sharded gradients are reduced under accumulation: every micro-batch (DeepSpeed, torchtune, "
              "torchtitan), or only the last, the others accumulating full unsharded gradients (FSDP no_sync: the "
              "HF Trainer / accelerate, Lightning Fabric; pipeline schedules over FSDP2); auto = by framework",
              "auto", "every_micro_batch", "last_micro_batch"),
      MF_BOOL("parallel.ddp_bucket_view", parallel.ddp_bucket_view,
              "torch DDP gradient_as_bucket_view: true makes the gradients views into the all-reduce buckets; "
              "false (PyTorch's default) keeps the buckets, as large as all the gradients, beside them"),
      MF_ENUM("parallel.reshard_after_forward", parallel.reshard_after_forward, ReshardAfterForward,
              "ZeRO-3 / FSDP after a unit's forward: always free its gathered weights, or never (keep every unit "
              "gathered until its backward: FSDP2 reshard_after_forward=False); auto = never under torchtitan with "
              "a pipeline (its default policy), always otherwise",
              "auto", "always", "never"),
      MF_INT("parallel.reduce_bucket_elements", parallel.reduce_bucket_elements, -1, 100 * kBillion,
             "DeepSpeed reduce_bucket_size in elements: ZeRO-2's gradient reduce bucket, and under ZeRO-3 the "
             "contiguous gradient bucket DeepSpeed keeps for the whole run (Hugging Face's \"auto\" is hidden size "
             "squared); -1 = the framework's (DeepSpeed's default, 5e8)"),
      MF_INT("parallel.zero3_max_reuse_distance", parallel.zero3_max_reuse_distance, 0, 1000 * kBillion,
             "DeepSpeed ZeRO-3 stage3_max_reuse_distance in elements: a gathered parameter used again within this "
             "many parameters stays gathered (the head and the last blocks across forward's end; default 1e9)"),
      MF_INT("parallel.zero_sub_group_size", parallel.zero_sub_group_size, 1, 1000 * kBillion,
             "DeepSpeed ZeRO-3 sub_group_size in elements: the optimizer step makes the fp32 gradients of one "
             "sub-group of the local partition at a time (default 1e9)"),
      MF_INT("parallel.zero_hpz_partition_size", parallel.zero_hpz_partition_size, 1, 1024,
             "DeepSpeed ZeRO++ hpZ (zero_hpz_partition_size): each GPU also keeps a secondary copy of 1/hpz of the "
             "16-bit parameters, so backward gathers them inside a group of this many GPUs (usually a node); 1 = off"),
      MF_BOOL("parallel.zero_quantized_weights", parallel.zero_quantized_weights,
              "DeepSpeed ZeRO++ qwZ (zero_quantized_weights): ZeRO-3 gathers int8 codes and dequantizes them, "
              "one byte per element of the gathered block beside it for a moment"),
      MF_BOOL("parallel.zero_quantized_gradients", parallel.zero_quantized_gradients,
              "DeepSpeed ZeRO++ qgZ (zero_quantized_gradients): ZeRO-3 reduces each gradient through int4 codes "
              "in two all-to-alls, about a byte per element of one gradient at a time"),
      MF_BOOL("parallel.overlap_comm", parallel.overlap_comm,
              "DeepSpeed ZeRO-2 overlap_comm: backward reduces through two buckets of reduce_bucket_size "
              "(DeepSpeed's default for stage 2: off; stage 1 has no bucket)"),

      // hardware
      MF_STRING("hardware.gpu", hardware.gpu, "GPU id from the table"),
      MF_INT("hardware.overhead_bytes", hardware.overhead_bytes, -1, 1LL << 40,
             "CUDA context and workspaces; -1 = by convention and GPU"),
      MF_REAL("hardware.budget_fraction", hardware.budget_fraction, 0.1, 1.0, "plan to this share of the card"),
      MF_REAL("hardware.fragmentation", hardware.fragmentation, -1.0, 1.0,
              "allocator overhead as a share of allocated memory (0 to 1); -1 = simulated from the step's "
              "allocations"),
      MF_BOOL("hardware.expandable_segments", hardware.expandable_segments,
              "PyTorch's allocator with expandable_segments:True (less fragmentation)"),
      MF_INT("hardware.gpus_per_node", hardware.gpus_per_node, 0, 1024,
             "GPUs per server, the host a launcher starts on (links inside it, and across an NVLink rack "
             "such as GB200 NVL72, are fast); 0 = the card's usual server"),
      MF_REAL("hardware.price_per_gpu_hour", hardware.price_per_gpu_hour, -1.0, 10000.0,
              "USD per GPU-hour for cost estimates; -1 = the GPU table's default (0 where none is sourced)"),
  };
  return f;
}

#undef MF_INT
#undef MF_BOOL
#undef MF_REAL
#undef MF_STRING
#undef MF_ENUM

}  // namespace

const std::vector<Field>& config_fields() {
  static const std::vector<Field> fields = build_fields();  // immutable after first use
  return fields;
}

namespace {
// A field whose -1 stands for "the framework's / memfit's own choice" (its help says "-1 = ...").
bool minus_one_is_automatic(const Field& f) { return std::string_view(f.help).find("-1 = ") != std::string_view::npos; }
// One whose -1 stands for all of something ("-1 = all", "-1 = every block"): said so, not "automatic".
bool minus_one_is_all(const Field& f) {
  const std::string_view help(f.help);
  return help.find("-1 = all") != std::string_view::npos || help.find("-1 = every") != std::string_view::npos;
}
}  // namespace

std::string int_range_text(const Field& f) {
  if (f.min_int == -1 && minus_one_is_automatic(f)) {
    return std::string(minus_one_is_all(f) ? "-1 (all)" : "-1 (automatic)") + " or an integer from 0 to " +
           group_digits(f.max_int);
  }
  return "an integer from " + group_digits(f.min_int) + " to " + group_digits(f.max_int);
}

std::string real_range_text(const Field& f) {
  if (f.min_real == -1.0 && minus_one_is_automatic(f)) {
    return "-1 (automatic) or a number from 0 to " + plain_number(f.max_real);
  }
  return "a number from " + plain_number(f.min_real) + " to " + plain_number(f.max_real);
}

const Field* find_field(const char* path) {
  for (const Field& f : config_fields()) {
    if (std::strcmp(f.path, path) == 0) return &f;
  }
  return nullptr;
}

}  // namespace memfit::detail
