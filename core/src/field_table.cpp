#include "field_table.hpp"

#include <cstring>

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
      MF_STRING("model.model_type", model.model_type, "Hugging Face family (informational once resolved)"),
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
      MF_ENUM("model.norm", model.norm, NormKind, "normalisation layer", "layernorm", "rmsnorm"),
      MF_BOOL("model.norm_bias", model.norm_bias, "LayerNorm has a bias"),
      MF_ENUM("model.position_embedding", model.position_embedding, PositionKind,
              "learned positions have parameters; rotary and none do not", "learned", "rotary", "none"),
      MF_INT("model.max_position_embeddings", model.max_position_embeddings, 1, kBillion,
             "rows of the learned position table; the longest sequence"),
      MF_INT("model.position_embedding_offset", model.position_embedding_offset, 0, kMillion,
             "extra position rows (OPT has 2)"),
      MF_BOOL("model.tie_word_embeddings", model.tie_word_embeddings, "the output head shares the token embedding"),
      MF_ENUM("model.output_head", model.output_head, OutputHead, "lm: a vocabulary head; none: an encoder body",
              "lm", "none"),
      MF_BOOL("model.lm_head_bias", model.lm_head_bias, "the output head has a bias"),
      MF_BOOL("model.attention_bias", model.attention_bias, "bias on q, k, v and output projections"),
      MF_BOOL("model.qkv_bias", model.qkv_bias, "bias on q, k and v only (Qwen2)"),
      MF_BOOL("model.mlp_bias", model.mlp_bias, "bias on the MLP projections"),
      MF_ENUM("model.block", model.block, BlockLayout,
              "sequential: attention then MLP; parallel: both read the block input (GPT-NeoX, Falcon, Phi)",
              "sequential", "parallel"),
      MF_INT("model.norms_per_block", model.norms_per_block, 0, 8, "hidden-size norms in each block"),
      MF_BOOL("model.final_norm", model.final_norm, "a norm after the last block"),
      MF_BOOL("model.residual_dropout", model.residual_dropout,
              "dropout on the embeddings and both residual branches (GPT-2, OPT, BERT)"),
      MF_ENUM("model.qk_norm", model.qk_norm, QkNorm,
              "norms on queries and keys: per head (Qwen3) or over the whole projection (OLMo-2)", "none",
              "per_head", "full_width"),
      MF_INT("model.type_vocab_size", model.type_vocab_size, 0, kMillion, "token-type embedding rows (BERT)"),
      MF_BOOL("model.embedding_norm", model.embedding_norm, "a norm right after the embeddings (BERT)"),
      MF_BOOL("model.pooler", model.pooler, "BERT pooler (dense hidden→hidden with bias)"),
      MF_INT("model.num_experts", model.num_experts, 0, 100'000, "routed experts per MoE layer; 0 = dense"),
      MF_INT("model.num_experts_per_tok", model.num_experts_per_tok, 0, 100'000, "experts each token is routed to"),
      MF_INT("model.num_shared_experts", model.num_shared_experts, 0, 10'000, "always-active shared experts"),
      MF_INT("model.moe_intermediate_size", model.moe_intermediate_size, 0, 100 * kMillion, "inner size of one expert"),
      MF_INT("model.shared_expert_intermediate_size", model.shared_expert_intermediate_size, 0, 100 * kMillion,
             "inner size of the shared expert MLP; 0 = num_shared_experts × moe_intermediate_size"),
      MF_BOOL("model.shared_expert_gate", model.shared_expert_gate, "a sigmoid gate on the shared expert (Qwen2-MoE)"),
      MF_BOOL("model.router_bias", model.router_bias, "a per-expert router bias (DeepSeek-V3)"),
      MF_INT("model.first_k_dense_replace", model.first_k_dense_replace, 0, 100'000, "leading dense layers in an MoE model"),
      MF_ENUM("model.attention_type", model.attention_type, AttentionType,
              "standard (multi-head / grouped-query) or mla (DeepSeek multi-head latent attention)", "standard", "mla"),
      MF_INT("model.q_lora_rank", model.q_lora_rank, 0, kMillion, "MLA query compression rank; 0 = direct"),
      MF_INT("model.kv_lora_rank", model.kv_lora_rank, 0, kMillion, "MLA key/value compression rank"),
      MF_INT("model.qk_rope_head_dim", model.qk_rope_head_dim, 0, kMillion, "MLA rotary part of a query/key head"),
      MF_INT("model.qk_nope_head_dim", model.qk_nope_head_dim, 0, kMillion, "MLA non-rotary part of a query/key head"),
      MF_INT("model.v_head_dim", model.v_head_dim, 0, kMillion, "MLA value head size"),
      MF_INT("model.nominal_parameter_count", model.nominal_parameter_count, 0, 1'000'000 * kBillion,
             "use this parameter count instead of the counted one (the seeds' nominal sizes); 0 = count"),

      // training
      MF_INT("training.micro_batch_size", training.micro_batch_size, 1, kMillion, "sequences per GPU per step (B)"),
      MF_INT("training.seq_len", training.seq_len, 1, 100 * kMillion, "tokens per sequence (T)"),
      MF_INT("training.grad_accum_steps", training.grad_accum_steps, 1, kMillion, "micro-batches per optimizer step"),
      MF_ENUM("training.precision", training.precision, Precision, "precision recipe (bytes per parameter)", "fp32",
              "fp16_mixed", "bf16_mixed", "fp16_master", "bf16_master", "bf16", "fp8_mixed", "seed_14p", "bf16_fsdp"),
      MF_ENUM("training.optimizer", training.optimizer, Optimizer, "optimizer", "adamw", "adamw_8bit", "paged_adamw",
              "paged_adamw_8bit", "adafactor", "sgd", "sgd_momentum", "lion"),
      MF_ENUM("training.optimizer_impl", training.optimizer_impl, OptimizerImpl,
              "foreach: PyTorch's default multi-tensor step (one state-sized temporary); fused: in-place "
              "kernels (fused=True, DeepSpeed FusedAdam, 8-bit); for_loop: one parameter at a time",
              "foreach", "fused", "for_loop"),
      MF_ENUM("training.checkpointing", training.checkpointing, Checkpointing,
              "activation checkpointing: none, selective (Megatron: attention core recomputed), full (layer "
              "inputs only), selective_op (torchtitan: every second matmul output and the attention output kept)",
              "none", "selective", "full", "selective_op"),
      MF_ENUM("training.attention", training.implementation.attention, AttentionImpl,
              "flash: no T×T scores stored; eager: softmax scores stored", "flash", "eager"),
      MF_REAL("training.dropout", training.dropout, 0.0, 0.99, "dropout probability (masks stored when > 0)"),
      MF_BOOL("training.chunked_loss", training.implementation.chunked_loss,
              "cross-entropy in chunks (no full fp32 logits)"),
      MF_BOOL("training.optimizer_in_backward", training.optimizer_in_backward,
              "optimizer step fused into backward (gradients freed per parameter)"),
      MF_BOOL("training.activation_offload", training.activation_offload, "saved activations offloaded to CPU"),
      MF_ENUM("training.goal", training.goal, Goal,
              "what the run is for (decides the changes suggested and the planner's search); auto = peft for "
              "LoRA, else full_finetune",
              "auto", "pretrain", "full_finetune", "peft"),
      MF_ENUM("training.finetune.method", training.finetune.method, FinetuneMethod, "full fine-tune or LoRA adapters",
              "full", "lora"),
      MF_INT("training.finetune.lora_rank", training.finetune.lora_rank, 1, 100'000, "LoRA rank r"),
      [] {
        Field f = make_field("training.finetune.lora_targets", FieldKind::kTargets, "modules that get LoRA adapters");
        f.choices = {"q", "k", "v", "o", "gate", "up", "down", "head"};
        f.targets_ref = [](Config& c) -> unsigned& { return c.training.finetune.lora_targets; };
        return f;
      }(),
      MF_REAL("training.finetune.lora_dropout", training.finetune.lora_dropout, 0.0, 0.99,
              "dropout on the LoRA adapters' input (PEFT lora_dropout)"),
      MF_INT("training.finetune.base_bits", training.finetune.base_bits, 4, 16,
             "frozen base weights: 16 (bf16/fp16), 8 (int8), 4 (QLoRA NF4)"),
      // The implementation: what the framework's code does (implementation.cpp's profiles).
      MF_ENUM("training.framework", training.implementation.framework, Framework,
              "the code that runs the model: hf (transformers with Trainer / accelerate)", "hf"),
      MF_ENUM("training.softmax_dtype", training.implementation.softmax_dtype, SoftmaxDtype,
              "eager attention's softmax: fp32 (upcast) or compute (the matmuls' dtype); auto = the framework's",
              "auto", "fp32", "compute"),
      MF_ENUM("training.logits_dtype", training.implementation.logits_dtype, LogitsDtype,
              "the logits the loss reads: fp32 (upcast) or compute; auto = the framework's", "auto", "fp32",
              "compute"),
      MF_ENUM("training.attention_mask", training.implementation.attention_mask, AttentionMask,
              "eager attention's causal mask: additive (a T×T tensor passed to every layer) or implicit; auto = "
              "the framework's",
              "auto", "additive", "implicit"),

      // parallel
      MF_INT("parallel.num_gpus", parallel.num_gpus, 1, kMillion, "GPUs in the job"),
      MF_INT("parallel.tensor", parallel.tensor, 1, 1024, "tensor-parallel degree"),
      MF_INT("parallel.pipeline", parallel.pipeline, 1, 10'000, "pipeline-parallel stages"),
      MF_INT("parallel.context", parallel.context, 1, 10'000, "context-parallel degree (sequence split)"),
      MF_INT("parallel.expert", parallel.expert, 1, 100'000, "expert-parallel degree"),
      MF_INT("parallel.virtual_stages", parallel.virtual_stages, 1, 1000,
             "interleaved 1F1B: model chunks per pipeline stage (Megatron virtual pipeline size); 1 = plain 1F1B"),
      MF_INT("parallel.zero_stage", parallel.zero_stage, 0, 3,
             "ZeRO / FSDP: 1 shards optimizer states, 2 also gradients, 3 also parameters"),
      MF_INT("parallel.shard_degree", parallel.shard_degree, 0, kMillion,
             "ranks ZeRO / FSDP shard over; 0 = all data-parallel ranks; smaller = hybrid sharding (shard "
             "within groups of this size, replicate across them)"),
      MF_BOOL("parallel.sequence_parallel", parallel.sequence_parallel, "Megatron sequence parallelism"),
      MF_BOOL("parallel.offload_optimizer", parallel.offload_optimizer, "optimizer states in CPU memory"),
      MF_BOOL("parallel.offload_params", parallel.offload_params, "parameters in CPU memory (ZeRO-3 offload)"),

      // hardware
      MF_STRING("hardware.gpu", hardware.gpu, "GPU id from the table"),
      MF_INT("hardware.overhead_bytes", hardware.overhead_bytes, -1, 1LL << 40,
             "CUDA context and workspaces; -1 = by convention and GPU"),
      MF_REAL("hardware.budget_fraction", hardware.budget_fraction, 0.1, 1.0, "plan to this share of the card"),
      MF_REAL("hardware.fragmentation", hardware.fragmentation, -1.0, 1.0,
              "allocator overhead as a share of allocated memory; -1 = by convention"),
      MF_INT("hardware.gpus_per_node", hardware.gpus_per_node, 0, 1024,
             "GPUs per server (links inside a node are fast); 0 = the card's usual server"),
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

std::string int_range_text(const Field& f) {
  return "an integer from " + group_digits(f.min_int) + " to " + group_digits(f.max_int);
}

std::string real_range_text(const Field& f) {
  return "a number from " + plain_number(f.min_real) + " to " + plain_number(f.max_real);
}

const Field* find_field(const char* path) {
  for (const Field& f : config_fields()) {
    if (std::strcmp(f.path, path) == 0) return &f;
  }
  return nullptr;
}

}  // namespace memfit::detail
