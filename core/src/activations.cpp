#include "activations.hpp"

#include <algorithm>

namespace memfit {

namespace {

// Element sizes of what a step saves. Sources: PyTorch autocast op lists (matmuls run in 16 bit,
// layer_norm and softmax in fp32) and the Hugging Face modeling files (eager attention computes
// softmax in fp32, then casts back; RMSNorm upcasts to fp32 internally).
constexpr std::int64_t kFp32Bytes = 4;
constexpr std::int64_t kMaskBytes = 1;   // dropout masks are torch.bool
constexpr std::int64_t kIndexBytes = 8;  // token ids, expert indices: int64

struct Dims {
  Exact tokens;        // B·T on this GPU (T divided by context parallelism)
  Exact batch;         // B
  Exact seq;           // T on this GPU
  Exact full_seq;      // T (keys attended to)
  Exact hidden;        // d
  Exact hidden_tp;     // d, or d / tp for tensors split by sequence parallelism
  Exact heads;         // query heads on this GPU
  Exact kv_heads;      // key/value heads on this GPU
  Exact head_dim;
  Exact v_head_dim;
  Exact ff;            // dense MLP inner size on this GPU
  std::int64_t act;    // bytes of a matmul input / output element
  std::int64_t stream; // bytes of the residual stream (fp32 under AMP)
  bool dropout;
};

Dims make_dims(const Config& c) {
  const ModelSpec& m = c.model;
  const Parallel& p = c.parallel;
  const Precision prec = c.training.precision;
  Dims d;
  d.batch = c.training.micro_batch_size;
  d.full_seq = c.training.seq_len;
  d.seq = ceil_div(c.training.seq_len, p.context);
  d.tokens = d.batch * d.seq;
  d.hidden = m.hidden_size;
  d.hidden_tp = p.sequence_parallel ? ceil_div(m.hidden_size, p.tensor) : Exact(m.hidden_size);
  d.heads = ceil_div(m.num_attention_heads, p.tensor);
  d.kv_heads = ceil_div(m.kv_heads(), p.tensor);
  if (m.attention_type == AttentionType::kMla) {
    d.head_dim = Exact(m.qk_nope_head_dim) + m.qk_rope_head_dim;
    d.v_head_dim = m.v_head_dim;
    d.kv_heads = d.heads;
  } else {
    d.head_dim = d.v_head_dim = m.head_size();
  }
  d.ff = ceil_div(m.intermediate_size, p.tensor);
  d.act = prec == Precision::kFp32 ? 4 : 2;
  d.stream = (prec == Precision::kFp32 || prec == Precision::kFp16Mixed || prec == Precision::kBf16Mixed) ? 4 : 2;
  d.dropout = c.training.dropout > 0.0;
  return d;
}

// One hidden-size norm over the residual stream. LayerNorm (native kernel) saves its input and an
// fp32 mean and reciprocal standard deviation per token. RMSNorm as Hugging Face writes it
// (x.float(); x * rsqrt(mean(x²) + eps); weight * x.to(dtype)) saves the fp32 input (a copy when
// the stream is 16-bit), the fp32 rsqrt per token, and the normalised tensor in the stream dtype.
Exact norm_saved_bytes(const ModelSpec& m, const Dims& d) {
  const Exact td = d.tokens * d.hidden_tp;
  if (m.norm == NormKind::kLayerNorm) return td * d.stream + d.tokens * 2 * kFp32Bytes;
  return td * kFp32Bytes + d.tokens * kFp32Bytes + td * d.stream;
}

// Rotary embedding as Hugging Face applies it (q·cos + rotate_half(q)·sin): the multiply by sin
// saves the rotated copy; the projection output itself is saved by the multiply by cos.
Exact rotary_saved_bytes(const ModelSpec& m, const Dims& d) {
  if (m.position_embedding != PositionKind::kRotary) return 0;
  return d.tokens * (d.heads + d.kv_heads) * d.head_dim * d.act * 2;
}

void add(std::vector<NamedBytes>& terms, const char* name, Exact bytes) {
  if (bytes.value() != 0 || bytes.overflow()) terms.push_back({name, bytes});
}

// The attention sublayer of one block (Korthikanti et al. 2022, §4.1, extended to GQA, fp32
// softmax and FlashAttention).
void attention_terms(const Config& c, const Dims& d, bool recompute_core, std::vector<NamedBytes>& t) {
  const ModelSpec& m = c.model;
  const Exact q_elems = d.tokens * d.heads * d.head_dim;
  const Exact out_elems = d.tokens * d.heads * d.v_head_dim;
  const Exact scores = d.batch * d.heads * d.seq * d.full_seq;
  if (m.attention_type == AttentionType::kMla) {
    // The latent path: the compressed kv (and q) activations and their norms' inputs.
    add(t, "attention.latent", d.tokens * (Exact(m.kv_lora_rank) + m.q_lora_rank + m.qk_rope_head_dim) * d.act * 2);
  }
  if (!recompute_core) add(t, "attention.rotary", rotary_saved_bytes(m, d));
  if (c.training.attention == AttentionImpl::kFlash) {
    // FlashAttention (Dao et al. 2022) saves q, k, v, the output and the fp32 log-sum-exp per row;
    // the output is also the o_proj input.
    add(t, "attention.flash_qkv", d.tokens * (d.heads * d.head_dim + d.kv_heads * (d.head_dim + d.v_head_dim)) * d.act);
    add(t, "attention.flash_out", out_elems * d.act);
    add(t, "attention.flash_lse", d.batch * d.heads * d.seq * kFp32Bytes);
  } else {
    if (!recompute_core) {
      // Q·Kᵀ saves q and k (k repeated to every query head, as repeat_kv does); P·V saves v
      // (repeated) and the probabilities.
      add(t, "attention.q", q_elems * d.act);
      add(t, "attention.k", q_elems * d.act);
      add(t, "attention.v", out_elems * d.act);
      // Softmax in fp32 saves its fp32 output; the cast back to 16 bit is what P·V saves.
      add(t, "attention.softmax_fp32", scores * kFp32Bytes);
      if (d.act != kFp32Bytes && !d.dropout) add(t, "attention.probs_cast", scores * d.act);
      if (d.dropout) {
        add(t, "attention.dropout_mask", scores * kMaskBytes);
        add(t, "attention.dropout_probs", scores * d.act);
      }
    }
    add(t, "attention.o_proj_input", out_elems * d.act);
  }
  if (d.dropout) add(t, "attention.residual_dropout_mask", d.tokens * d.hidden_tp * kMaskBytes);
}

// The MLP sublayer: plain (up → activation → down) saves the activation's input and output;
// gated (down(act(gate x) · up x)) saves gate x, act(gate x), up x and their product.
Exact mlp_inner_bytes(const ModelSpec& m, const Dims& d, Exact tokens, Exact ff) {
  const std::int64_t tensors = m.mlp == MlpKind::kGated ? 4 : 2;
  return tokens * ff * d.act * tensors;
}

void mlp_terms(const Config& c, const Dims& d, bool moe, std::vector<NamedBytes>& t) {
  const ModelSpec& m = c.model;
  if (!moe) {
    add(t, "mlp.inner", mlp_inner_bytes(m, d, d.tokens, d.ff));
  } else {
    // Routing: fp32 softmax over the router logits, top-k indices; each routed token copy is
    // gathered for its expert and its output scaled by the routing weight.
    const Exact routed = d.tokens * m.num_experts_per_tok;
    const Exact expert_ff = ceil_div(m.moe_intermediate_size, c.parallel.tensor);
    add(t, "moe.router", d.tokens * m.num_experts * kFp32Bytes + routed * kIndexBytes);
    add(t, "moe.expert_inputs", routed * d.hidden * d.act * 2);
    add(t, "moe.experts_inner", mlp_inner_bytes(m, d, routed, expert_ff));
    const Exact shared_ff = m.shared_expert_intermediate_size > 0
                                ? Exact(m.shared_expert_intermediate_size)
                                : Exact(m.num_shared_experts) * m.moe_intermediate_size;
    if (shared_ff.value() > 0) {
      add(t, "moe.shared_inner", mlp_inner_bytes(m, d, d.tokens, ceil_div(shared_ff, c.parallel.tensor)));
    }
  }
  if (d.dropout) add(t, "mlp.residual_dropout_mask", d.tokens * d.hidden_tp * kMaskBytes);
}

std::vector<NamedBytes> block_terms(const Config& c, const Dims& d, bool moe) {
  const ModelSpec& m = c.model;
  std::vector<NamedBytes> t;
  const bool selective = c.training.checkpointing == Checkpointing::kSelective;
  add(t, "norms", norm_saved_bytes(m, d) * m.norms_per_block);
  // Each sublayer's first matmul saves the normalised input (one tensor shared by q/k/v, and by
  // attention and MLP in a parallel block).
  const std::int64_t sublayer_inputs = m.block == BlockLayout::kParallel ? 1 : 2;
  add(t, "matmul_inputs", d.tokens * d.hidden_tp * d.act * sublayer_inputs);
  attention_terms(c, d, selective, t);
  mlp_terms(c, d, moe, t);
  return t;
}

Exact sum(const std::vector<NamedBytes>& terms) {
  Exact total = 0;
  for (const NamedBytes& term : terms) total += term.bytes;
  return total;
}

}  // namespace

Exact seed_activation_bytes(const Config& c) {
  const ModelSpec& m = c.model;
  const Exact b = c.training.micro_batch_size, t = c.training.seq_len, d = m.hidden_size, h = m.num_attention_heads;
  const Exact per_layer = b * t * (d * 34 + h * t * 5);
  switch (c.training.checkpointing) {
    case Checkpointing::kNone: return per_layer * m.num_hidden_layers;
    case Checkpointing::kFull: return per_layer;  // the seeds: "one layer's activations"
    case Checkpointing::kSelective:               // Korthikanti et al.: the 5hT term is recomputed
      return b * t * d * 34 * m.num_hidden_layers;
  }
  return per_layer;
}

Exact weight_copy_bytes(const Config& c, const ParameterCount& params) {
  const Precision p = c.training.precision;
  const bool amp = p == Precision::kFp16Mixed || p == Precision::kBf16Mixed;
  if (!amp && p != Precision::kFp8Mixed) return 0;
  // LoRA keeps a frozen 16-bit (or quantised) base: nothing to cast.
  if (c.training.finetune.method == FinetuneMethod::kLora) return 0;
  Exact matmul_weights = 0;
  for (const TensorGroup& g : params.groups) {
    if (g.linear || g.component == Component::kHead) matmul_weights += g.elements();
  }
  if (c.model.output_head == OutputHead::kLm && c.model.tie_word_embeddings) {
    matmul_weights += params.component_count(Component::kTokenEmbedding);
  }
  // AMP: one 16-bit copy. FP8 (Transformer Engine): an FP8 copy and its transpose.
  return matmul_weights * 2;
}

ActivationModel activation_model(const Config& c, const ParameterCount& params) {
  const ModelSpec& m = c.model;
  const Training& tr = c.training;
  const Parallel& p = c.parallel;
  const Dims d = make_dims(c);
  ActivationModel out;

  // Embedding: the lookup saves the token ids (and position ids for a learned table).
  out.embedding_saved_bytes = d.tokens * kIndexBytes * (m.position_embedding == PositionKind::kLearned ? 2 : 1);
  if (d.dropout) out.embedding_saved_bytes += d.tokens * d.hidden_tp * kMaskBytes;

  out.layer_terms = block_terms(c, d, m.num_experts > 0 && m.first_k_dense_replace == 0);
  const Exact dense_layer = sum(block_terms(c, d, false));
  const Exact moe_layer = m.num_experts > 0 ? sum(block_terms(c, d, true)) : Exact(0);
  out.per_layer_bytes = sum(out.layer_terms);

  // Layers on the busiest pipeline stage, and micro-batches in flight there (1F1B holds up to
  // `pipeline` micro-batches on the first stage: Narayanan et al. 2021).
  const Exact layers_per_stage = ceil_div(m.num_hidden_layers, p.pipeline);
  const Exact in_flight = p.pipeline > 1 ? Exact(std::min(p.pipeline, tr.grad_accum_steps)) : Exact(1);
  const Exact dense_share = std::min<std::int64_t>(params.dense_layer_count.value(), layers_per_stage.value());
  const Exact moe_share = layers_per_stage - dense_share;

  const Exact block_input = d.tokens * d.hidden_tp * d.stream;
  Exact body;
  if (tr.checkpointing == Checkpointing::kFull) {
    // Full recomputation keeps only each block's input (Chen et al. 2016).
    body = block_input * layers_per_stage;
  } else {
    body = dense_layer * dense_share + moe_layer * moe_share;
  }
  const Exact final_norm = m.final_norm ? norm_saved_bytes(m, d) : Exact(0);
  out.saved_bytes = (body + final_norm + out.embedding_saved_bytes) * in_flight;
  if (tr.activation_offload) {
    // Offloading keeps roughly one layer's worth on the GPU while the rest streams to the host.
    out.saved_bytes = dense_layer + out.embedding_saved_bytes;
    out.notes.push_back("Activation offload: saved tensors stream to CPU memory; about one layer stays on the GPU.");
  }

  // Backward working memory: gradients of one layer's largest intermediates, plus, under full
  // checkpointing, that layer's recomputed activations.
  const Exact scores = d.batch * d.heads * d.seq * d.full_seq;
  const Exact attention_grads = tr.attention == AttentionImpl::kEager ? scores * kFp32Bytes * 2 : Exact(0);
  const Exact mlp_grads = d.tokens * d.ff * d.act * 3;
  out.layer_backward_working_bytes = max(attention_grads, mlp_grads) + block_input * 2;
  if (tr.checkpointing == Checkpointing::kFull) out.layer_backward_working_bytes += max(dense_layer, moe_layer);

  // Logits and loss (Hugging Face ForCausalLMLoss): logits in the activation dtype, an fp32
  // upcast, log_softmax saving its fp32 output. Backward holds the saved log-probabilities, the
  // incoming gradient and log_softmax's gradient at once: three fp32 V-wide tensors.
  if (m.output_head == OutputHead::kLm) {
    const Exact vocab = ceil_div(m.vocab_size, p.tensor);
    Exact rows = d.tokens;
    if (tr.chunked_loss) {
      // Chunked / fused linear cross-entropy (Liger-Kernel's rule): chunks of
      // B·T / ceil(V / d) rows, so a chunk's logits are about as large as the hidden states.
      rows = ceil_div(d.tokens, ceil_div(m.vocab_size, m.hidden_size));
      out.notes.push_back("Chunked loss: logits exist one chunk at a time.");
    }
    const Exact head_input = d.tokens * d.hidden_tp * d.act;
    const Exact upcast = d.act == kFp32Bytes ? Exact(0) : rows * vocab * kFp32Bytes;
    out.logits_forward_bytes = head_input + rows * vocab * d.act + upcast + rows * vocab * kFp32Bytes +
                               d.tokens * kIndexBytes;
    out.logits_backward_bytes = head_input + rows * vocab * kFp32Bytes * 3 + d.tokens * kIndexBytes;
    out.logits_peak_bytes = max(out.logits_forward_bytes, out.logits_backward_bytes);
  }
  return out;
}

}  // namespace memfit
