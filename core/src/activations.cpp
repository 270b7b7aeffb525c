#include "activations.hpp"

#include <algorithm>
#include <string_view>

namespace memfit {

namespace {

// What a training step saves for backward, as Hugging Face's eager PyTorch modules save it on a
// GPU. Every term below was derived from the op sequence and checked against autograd's saved
// tensors (tools/validate: saved_tensors_hooks on real modules; docs/accuracy.md). Symbols:
// t = B·T tokens on this GPU, d hidden, D = h·d_head, s bytes of a model-dtype element.
constexpr std::int64_t kFp32Bytes = 4;
constexpr std::int64_t kMaskBytes = 1;   // dropout masks are torch.bool on CUDA
constexpr std::int64_t kIndexBytes = 8;  // token ids, labels, expert indices: int64

// Per-family habits of the Hugging Face implementations that change what is saved.
struct FamilyTraits {
  bool softmax_in_fp32;   // eager attention: softmax(..., dtype=float32) then cast back (Llama era)
  bool residual_dropout;  // dropout on embeddings and both residual branches (GPT-2 era)
};

FamilyTraits family_traits(const ModelSpec& m) {
  constexpr std::string_view kGpt2Era[] = {"gpt2", "opt", "bert", "seed_gpt"};
  const bool old = std::find(std::begin(kGpt2Era), std::end(kGpt2Era), m.model_type) != std::end(kGpt2Era);
  return {!old, old};
}

struct Dims {
  Exact batch, seq, full_seq, tokens;  // B, T on this GPU (context parallel), T attended to, B·T
  Exact hidden, hidden_split;          // d; d or d / tp where sequence parallelism splits it
  Exact heads, kv_heads, head_dim, v_head_dim;
  Exact ff;                            // dense MLP inner size on this GPU
  std::int64_t act;      // s: a matmul input/output element (fp32 4, else 2)
  std::int64_t stream;   // the residual stream element (fp32 under AMP)
  std::int64_t softmax;  // the softmax output element
  bool amp;
  bool dropout;
  bool lora;
  unsigned targets;  // LoRA target bits
  Exact rank;
  bool lora_dropout;
  bool quantized_base_saves_input;  // bitsandbytes 4-bit linears keep their input for backward
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
  d.hidden_split = p.sequence_parallel ? ceil_div(m.hidden_size, p.tensor) : Exact(m.hidden_size);
  d.heads = ceil_div(m.num_attention_heads, p.tensor);
  d.kv_heads = ceil_div(m.kv_heads(), p.tensor);
  if (m.attention_type == AttentionType::kMla) {
    d.head_dim = Exact(m.qk_nope_head_dim) + m.qk_rope_head_dim;
    d.v_head_dim = m.v_head_dim;
    d.kv_heads = d.heads;  // MLA expands its latent to full per-head keys and values
  } else {
    d.head_dim = d.v_head_dim = m.head_size();
  }
  d.ff = ceil_div(m.intermediate_size, p.tensor);
  d.amp = prec == Precision::kFp16Mixed || prec == Precision::kBf16Mixed;
  d.act = prec == Precision::kFp32 ? 4 : 2;
  // AMP keeps fp32 weights, so the embedding's output and the residual stream are fp32; a LoRA
  // base is loaded in 16 bit, and its stream is 16-bit even under autocast.
  const bool lora = c.training.finetune.method == FinetuneMethod::kLora;
  d.stream = (prec == Precision::kFp32 || (d.amp && !lora)) ? 4 : 2;
  // Autocast runs softmax in fp32 whatever the model code asks for.
  d.softmax = (family_traits(m).softmax_in_fp32 || d.amp) ? kFp32Bytes : d.act;
  d.dropout = c.training.dropout > 0.0;
  d.lora = c.training.finetune.method == FinetuneMethod::kLora;
  d.targets = d.lora ? c.training.finetune.lora_targets : 0;
  d.rank = c.training.finetune.lora_rank;
  d.lora_dropout = c.training.finetune.lora_dropout > 0.0;
  // bitsandbytes' MatMul4Bit keeps its input A in ctx.tensors even though the 4-bit weight is
  // frozen (bitsandbytes/autograd/_functions.py), unlike a frozen nn.Linear, which keeps nothing.
  d.quantized_base_saves_input = d.lora && c.training.finetune.base_bits == 4;
  return d;
}

void add(std::vector<NamedBytes>& terms, const char* name, Exact bytes) {
  if (bytes.value() != 0 || bytes.overflow()) terms.push_back({name, bytes});
}

// One hidden-size norm. LayerNorm (native kernel) saves its input and an fp32 mean and rstd per
// token. Hugging Face's RMSNorm (x.float(); x · rsqrt(mean(x²) + ε); weight · x.to(dtype)) saves
// the fp32 input (an upcast copy when the stream is 16-bit), the fp32 rsqrt, and the normalised
// x for the weight's gradient, which a frozen (LoRA) norm does not need.
Exact norm_bytes(const ModelSpec& m, const Dims& d) {
  const Exact td = d.tokens * d.hidden_split;
  if (m.norm == NormKind::kLayerNorm) return td * d.stream + d.tokens * 2 * kFp32Bytes;
  return td * kFp32Bytes + d.tokens * kFp32Bytes + (d.lora ? Exact(0) : td * d.stream);
}

// A linear layer's saved input: its own weight gradient needs it. A frozen layer saves nothing
// (autograd keeps only what a requires-grad input needs); a LoRA adapter saves its input for A
// (one tensor for adapters that share it, unless adapter dropout makes one copy each, plus a
// bool mask) and A's output for B.
Exact linear_inputs(const Dims& d, Exact width, unsigned targets_sharing_input, bool input_needs_grad = true) {
  const Exact input = d.tokens * width * d.act;
  if (!d.lora) return input;
  const unsigned hit = d.targets & targets_sharing_input;
  const Exact adapters = static_cast<std::int64_t>(__builtin_popcount(hit));
  const bool base_keeps_input = d.quantized_base_saves_input && input_needs_grad;
  if (adapters.value() == 0) return base_keeps_input ? input : Exact(0);
  // Adapter dropout keeps a bool mask only when its input needs a gradient, and a dropped copy of
  // the input per adapter; without dropout all adapters (and a 4-bit base) share the input.
  const Exact mask = input_needs_grad ? d.tokens * width * kMaskBytes : Exact(0);
  Exact bytes = d.lora_dropout ? adapters * (input + mask) + (base_keeps_input ? input : Exact(0)) : input;
  return bytes + adapters * d.tokens * d.rank * d.act;
}

// Which of q, k and v need a gradient. Every block after the first gets a gradient through its
// input; under LoRA the first block's input (a frozen embedding's output) does not, so there only
// the adapted projections' outputs do, and autograd saves only what those gradients need.
struct GradFlow {
  bool q = true, k = true, v = true;
  bool first_lora_layer = false;  // the block's input needs no gradient
};

GradFlow grad_flow(const Dims& d, bool first_layer) {
  if (!(d.lora && first_layer)) return {};
  return {(d.targets & kLoraQ) != 0, (d.targets & kLoraK) != 0, (d.targets & kLoraV) != 0, true};
}

// The attention sublayer (Korthikanti et al. 2022 §4.1, for Hugging Face's eager code, GQA,
// fp32 softmax and FlashAttention). Eager: Q·Kᵀ saves a contiguous copy of k repeated to every
// query head (for q's gradient) and of q (for k's); P·V saves the probabilities (for v's) and a
// copy of repeated v (for the probabilities'). Grouped K/V heads therefore save nothing extra in
// eager attention, nor anything less.
void attention_terms(const Config& c, const Dims& d, const GradFlow& g, std::vector<NamedBytes>& t) {
  const ModelSpec& m = c.model;
  const FamilyTraits traits = family_traits(m);
  const bool selective = c.training.checkpointing == Checkpointing::kSelective;
  const Exact q_width = d.heads * d.head_dim, v_width = d.heads * d.v_head_dim;
  const Exact scores = d.batch * d.heads * d.seq * d.full_seq;
  const bool scores_grad = g.q || g.k;
  const bool input_grad = !(d.lora && g.first_lora_layer);

  if (m.attention_type == AttentionType::kMla) {
    // The compressed latents: q_a (q_lora_rank) and kv_a (kv_lora_rank + rope), each normed and
    // fed to an up-projection.
    const Exact latent = Exact(m.q_lora_rank) + m.kv_lora_rank + m.qk_rope_head_dim;
    add(t, "attention.mla_latents", d.tokens * latent * (Exact(kFp32Bytes) + d.act * 2));
  }
  add(t, "attention.qkv_input", linear_inputs(d, d.hidden_split, kLoraQ | kLoraK | kLoraV, input_grad));
  if (c.training.attention == AttentionImpl::kFlash) {
    // FlashAttention (Dao et al. 2022) saves q, k and v unrepeated, the output (also the o_proj
    // input) and an fp32 log-sum-exp per query row.
    if (g.q || g.k || g.v) {
      add(t, "attention.flash_qkv", d.tokens * (q_width + d.kv_heads * (d.head_dim + d.v_head_dim)) * d.act);
      add(t, "attention.flash_output", d.tokens * v_width * d.act);
      add(t, "attention.flash_logsumexp", d.batch * d.heads * d.seq * kFp32Bytes);
    }
    if (d.lora) add(t, "attention.o_input", linear_inputs(d, v_width, kLoraO));
  } else {
    if (!selective) {  // selective recomputation drops exactly this core (Korthikanti et al. §5)
      add(t, "attention.q_k_copies", d.tokens * q_width * d.act * (int(g.q) + int(g.k)));
      // GPT-2 divides the scores by a 0-dim tensor, which the division saves.
      if (!traits.softmax_in_fp32 && scores_grad) add(t, "attention.scale_divisor", d.act);
      // Softmax saves its output for its own gradient; P·V saves the probabilities in model dtype
      // for v's gradient: the same storage when the softmax ran in model dtype.
      if (scores_grad) add(t, "attention.softmax_output", scores * d.softmax);
      if (d.dropout) {
        add(t, "attention.dropout_mask", scores * kMaskBytes);
        if (g.v) add(t, "attention.dropped_probabilities", scores * d.act);
      } else if (g.v && (d.softmax != d.act || !scores_grad)) {
        add(t, "attention.probabilities", scores * d.act);
      }
      if (scores_grad) add(t, "attention.v_copy", d.tokens * v_width * d.act);
    }
    add(t, "attention.o_input", linear_inputs(d, v_width, kLoraO));
  }
  if (d.dropout && traits.residual_dropout) add(t, "attention.residual_dropout_mask", d.tokens * d.hidden_split * kMaskBytes);
}

// The MLP: plain (up → GELU → down) saves GELU's input and output; gated (down(act(gate x)·up x))
// saves gate x, act(gate x), up x and the product (the down projection's input, unless frozen).
Exact mlp_inner(const ModelSpec& m, const Dims& d, Exact tokens, Exact ff) {
  const std::int64_t kept = m.mlp == MlpKind::kGated ? 3 : 1;
  return tokens * ff * d.act * kept;
}

void dense_mlp_terms(const ModelSpec& m, const Dims& d, bool input_grad, std::vector<NamedBytes>& t) {
  const unsigned input_targets = m.mlp == MlpKind::kGated ? (kLoraGate | kLoraUp) : kLoraUp;
  add(t, "mlp.input", linear_inputs(d, d.hidden_split, input_targets, input_grad));
  add(t, "mlp.inner", mlp_inner(m, d, d.tokens, d.ff));
  add(t, "mlp.down_input", linear_inputs(d, d.ff, kLoraDown));
}

// Mixture of experts as Hugging Face's Mixtral block dispatches it: an fp32 router softmax, top-k
// indices and renormalised weights, the nonzero() index pairs of each expert, and per routed
// token the gathered input, the expert's MLP tensors and the weighted combine.
void moe_terms(const Config& c, const Dims& d, std::vector<NamedBytes>& t) {
  const ModelSpec& m = c.model;
  const Exact k = m.num_experts_per_tok, routed = d.tokens * k;
  const Exact expert_ff = ceil_div(m.moe_intermediate_size, c.parallel.tensor);
  const bool inputs_kept = !d.lora || d.quantized_base_saves_input;  // trainable, or 4-bit bitsandbytes
  if (inputs_kept) add(t, "moe.router_input", d.tokens * d.hidden_split * d.act);
  add(t, "moe.router_softmax", d.tokens * m.num_experts * kFp32Bytes);
  add(t, "moe.topk", d.tokens * k * kIndexBytes + d.tokens * k * kFp32Bytes + d.tokens * kFp32Bytes);
  add(t, "moe.dispatch_indices", routed * kIndexBytes * 2);
  if (inputs_kept) add(t, "moe.expert_inputs", routed * d.hidden * d.act);
  add(t, "moe.experts_inner", mlp_inner(m, d, routed, expert_ff) + (inputs_kept ? routed * expert_ff * d.act : Exact(0)));
  add(t, "moe.combine", routed * (d.hidden * 2 + 1) * d.act);
  const Exact shared_ff = m.shared_expert_intermediate_size > 0
                              ? Exact(m.shared_expert_intermediate_size)
                              : Exact(m.num_shared_experts) * m.moe_intermediate_size;
  if (shared_ff.value() > 0) {
    const Exact ff = ceil_div(shared_ff, c.parallel.tensor);
    add(t, "moe.shared_expert", mlp_inner(m, d, d.tokens, ff) + (inputs_kept ? d.tokens * ff * d.act : Exact(0)));
  }
}

std::vector<NamedBytes> block_terms(const Config& c, const Dims& d, bool moe, bool first_layer = false) {
  const ModelSpec& m = c.model;
  const GradFlow g = grad_flow(d, first_layer);
  std::vector<NamedBytes> t;
  // A norm saves only if its input needs a gradient: under LoRA, not the first block's first norm,
  // nor its second one when no attention projection is adapted.
  const bool attention_adapted = d.targets & (kLoraQ | kLoraK | kLoraV | kLoraO);
  std::int64_t norms = m.norms_per_block;
  if (d.lora && first_layer) norms = std::max<std::int64_t>(0, norms - (attention_adapted ? 1 : 2));
  add(t, "norms", norm_bytes(m, d) * norms);
  if (!(d.lora && first_layer && !attention_adapted)) attention_terms(c, d, g, t);
  if (moe) moe_terms(c, d, t);
  else dense_mlp_terms(m, d, !(d.lora && first_layer && !attention_adapted), t);
  // A frozen MLP keeps its activation's tensors only if its input needs a gradient.
  if (d.lora && first_layer && !attention_adapted && !(d.targets & (kLoraGate | kLoraUp))) {
    std::erase_if(t, [](const NamedBytes& term) { return term.name == "mlp.inner"; });
  }
  if (d.dropout && family_traits(m).residual_dropout) {
    add(t, "mlp.residual_dropout_mask", d.tokens * d.hidden_split * kMaskBytes);
  }
  return t;
}

// torchtitan's op-level selective activation checkpointing (torchtitan/models/llama3/
// parallelize.py, _save_list): inside each checkpointed block only the outputs of saved ops are
// kept — every second matrix multiply (counted in forward order within the block) and the fused
// attention kernel's output and log-sum-exp — plus the block's input; the rest is recomputed.
std::vector<NamedBytes> selective_op_terms(const Config& c, const Dims& d, bool moe) {
  const ModelSpec& m = c.model;
  std::vector<Exact> matmul_widths;  // output width of each matmul, in forward order
  if (m.attention_type == AttentionType::kMla) {
    const Exact h = d.heads, qk = d.head_dim;
    if (m.q_lora_rank > 0) matmul_widths.push_back(m.q_lora_rank);
    matmul_widths.push_back(h * qk);
    matmul_widths.push_back(Exact(m.kv_lora_rank) + m.qk_rope_head_dim);
    matmul_widths.push_back(h * (Exact(m.qk_nope_head_dim) + d.v_head_dim));
  } else {
    matmul_widths.push_back(d.heads * d.head_dim);
    matmul_widths.push_back(d.kv_heads * d.head_dim);
    matmul_widths.push_back(d.kv_heads * d.v_head_dim);
  }
  matmul_widths.push_back(d.hidden_split);  // o
  Exact tokens_through_mlp = d.tokens;
  Exact ff = d.ff;
  if (moe) {  // the router, then each routed token through its expert
    matmul_widths.push_back(m.num_experts);
    tokens_through_mlp = d.tokens * m.num_experts_per_tok;
    ff = ceil_div(m.moe_intermediate_size, c.parallel.tensor);
  }
  std::vector<NamedBytes> t;
  Exact attention_side = 0;
  for (std::size_t i = 0; i < matmul_widths.size(); i += 2) attention_side += d.tokens * matmul_widths[i] * d.act;
  // The MLP's matmuls continue the count: gate, up, down (or up, down).
  std::vector<Exact> mlp_widths;
  if (m.mlp == MlpKind::kGated) mlp_widths.push_back(ff);
  mlp_widths.push_back(ff);
  mlp_widths.push_back(d.hidden_split);
  Exact mlp_side = 0;
  for (std::size_t i = 0; i < mlp_widths.size(); ++i) {
    if ((matmul_widths.size() + i) % 2 == 0) mlp_side += tokens_through_mlp * mlp_widths[i] * d.act;
  }
  add(t, "selective_op.block_input", d.tokens * d.hidden_split * d.stream);
  add(t, "selective_op.attention_matmul_outputs", attention_side);
  if (c.training.attention == AttentionImpl::kFlash) {
    add(t, "selective_op.attention_output", d.tokens * d.heads * d.v_head_dim * d.act +
                                                d.batch * d.heads * d.seq * kFp32Bytes);
  }
  add(t, "selective_op.mlp_matmul_outputs", mlp_side);
  return t;
}

Exact sum(const std::vector<NamedBytes>& terms) {
  Exact total = 0;
  for (const NamedBytes& term : terms) total += term.bytes;
  return total;
}

// Saved outside the blocks: the token ids (embedding backward), a learned table's position ids
// (shape 1×T), the embedding dropout mask, the rotary cos/sin tables all layers share, and the
// final norm. A frozen embedding (LoRA) saves no ids.
Exact outside_bytes(const Config& c, const Dims& d) {
  const ModelSpec& m = c.model;
  Exact bytes = 0;
  if (!d.lora) {
    bytes += d.tokens * kIndexBytes;
    if (m.position_embedding == PositionKind::kLearned) bytes += d.seq * kIndexBytes;
    if (d.dropout && family_traits(m).residual_dropout) bytes += d.tokens * d.hidden_split * kMaskBytes;
  }
  if (m.position_embedding == PositionKind::kRotary) bytes += d.seq * d.head_dim * d.act * 2;
  if (m.final_norm) bytes += norm_bytes(m, d);
  return bytes;
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
    case Checkpointing::kSelectiveOp:
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
  // AMP: autocast caches one 16-bit copy of each weight for the step. FP8 (Transformer Engine):
  // an FP8 copy and its transpose: also 2 bytes per weight.
  return matmul_weights * 2;
}

ActivationModel activation_model(const Config& c, const ParameterCount& params) {
  const ModelSpec& m = c.model;
  const Training& tr = c.training;
  const Parallel& p = c.parallel;
  const Dims d = make_dims(c);
  ActivationModel out;

  const bool all_moe = m.num_experts > 0 && params.dense_layer_count.value() == 0;
  out.layer_terms = block_terms(c, d, all_moe);
  const Exact dense_layer = sum(block_terms(c, d, false));
  const Exact moe_layer = m.num_experts > 0 ? sum(block_terms(c, d, true)) : Exact(0);
  out.embedding_saved_bytes = outside_bytes(c, d);

  // The busiest pipeline stage holds ceil(L/pp) layers for up to `pipeline` micro-batches in
  // flight (1F1B: Narayanan et al. 2021).
  const Exact layers_per_stage = ceil_div(m.num_hidden_layers, p.pipeline);
  const Exact in_flight = p.pipeline > 1 ? Exact(std::min(p.pipeline, tr.grad_accum_steps)) : Exact(1);
  const Exact dense_share = std::min<std::int64_t>(params.dense_layer_count.value(), layers_per_stage.value());
  const Exact moe_share = layers_per_stage - dense_share;
  // The first stage's first block, which under LoRA saves less (see block_terms).
  const bool first_is_moe = params.dense_layer_count.value() == 0;
  const Exact first_layer = sum(block_terms(c, d, first_is_moe, true));
  const Exact first_layer_saving = (first_is_moe ? moe_layer : dense_layer) - first_layer;

  const Exact block_input = d.tokens * d.hidden_split * d.stream;
  Exact body;
  if (tr.checkpointing == Checkpointing::kSelectiveOp) {
    const Exact dense_op = sum(selective_op_terms(c, d, false));
    const Exact moe_op = m.num_experts > 0 ? sum(selective_op_terms(c, d, true)) : Exact(0);
    body = dense_op * dense_share + moe_op * moe_share;
    out.layer_terms = selective_op_terms(c, d, all_moe);
  } else if (tr.checkpointing == Checkpointing::kFull) {
    // Full recomputation keeps each block's input (Chen et al. 2016) and its other tensor
    // arguments: eager attention's additive causal mask (T × T in model dtype).
    body = block_input * layers_per_stage;
    if (tr.attention == AttentionImpl::kEager && family_traits(m).softmax_in_fp32) {
      body += d.seq * d.full_seq * d.act;
    }
  } else {
    body = dense_layer * dense_share + moe_layer * moe_share - first_layer_saving;
  }
  out.saved_bytes = (body + out.embedding_saved_bytes) * in_flight;
  if (tr.activation_offload) {
    // Offloading streams saved tensors to the host; about one layer's worth stays on the GPU.
    out.saved_bytes = dense_layer + out.embedding_saved_bytes;
    out.notes.push_back("Activation offload: saved tensors stream to CPU memory; about one layer stays on the GPU.");
  }

  // Backward working memory: the gradients of one layer's largest intermediates, plus, under full
  // checkpointing, that layer's recomputed activations.
  const Exact scores = d.batch * d.heads * d.seq * d.full_seq;
  const Exact attention_grads = tr.attention == AttentionImpl::kEager ? scores * kFp32Bytes * 2 : Exact(0);
  const Exact mlp_grads = d.tokens * d.ff * d.act * 3;
  out.layer_backward_working_bytes = max(attention_grads, mlp_grads) + block_input * 2;
  if (tr.checkpointing == Checkpointing::kFull || tr.checkpointing == Checkpointing::kSelectiveOp) {
    out.layer_backward_working_bytes += max(dense_layer, moe_layer);  // the block recomputed for its backward
  }

  // Logits and loss (Hugging Face ForCausalLMLoss, transformers ≥ 4.46): logits in model dtype, an
  // fp32 upcast, log_softmax's fp32 output (the one tensor saved), int64 labels. Backward holds the
  // saved log-probabilities, the incoming gradient and log_softmax's gradient: three fp32 V-wide
  // tensors at once.
  if (m.output_head == OutputHead::kLm) {
    const Exact vocab = ceil_div(m.vocab_size, p.tensor);
    Exact rows = d.tokens;
    if (tr.chunked_loss) {
      // Chunked / fused linear cross-entropy (Liger-Kernel's rule): chunks of
      // B·T / ceil(V / d) rows, so a chunk's logits are about as large as the hidden states.
      rows = ceil_div(d.tokens, ceil_div(m.vocab_size, m.hidden_size));
      out.notes.push_back("Chunked loss: logits exist one chunk at a time.");
    }
    const bool head_trainable = !d.lora || (d.targets & kLoraHead);
    const Exact head_input = head_trainable ? d.tokens * d.hidden_split * d.act : Exact(0);
    const Exact labels = d.tokens * kIndexBytes;
    const Exact log_probs = rows * vocab * kFp32Bytes;
    const Exact upcast = d.act == kFp32Bytes ? Exact(0) : rows * vocab * kFp32Bytes;
    out.logits_forward_bytes = head_input + rows * vocab * d.act + upcast + log_probs + labels;
    // log_softmax's backward holds its saved output, the incoming gradient and its result (three
    // fp32 V-wide tensors); then only the logits' gradient (and its cast to the model dtype)
    // stays for the head's matmul backward.
    const Exact grad_cast = d.act == kFp32Bytes ? Exact(0) : rows * vocab * d.act;
    out.logits_grad_bytes = log_probs + grad_cast;
    out.head_input_bytes = d.tokens * d.hidden_split * d.act;
    out.logits_backward_bytes = head_input + labels + max(log_probs * 3, out.logits_grad_bytes);
    out.logits_peak_bytes = max(out.logits_forward_bytes, out.logits_backward_bytes);
  }
  return out;
}

}  // namespace memfit
