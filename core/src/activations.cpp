#include "activations.hpp"

#include <algorithm>

#include "finetune.hpp"
#include "memfit/implementation.hpp"
#include "memfit/recipes.hpp"

namespace memfit {

namespace {

// What a training step saves for backward, as eager PyTorch modules save it on a GPU. Every term
// below was derived from the op sequence and checked against autograd's saved tensors
// (tools/validate: saved_tensors_hooks on real modules; docs/accuracy.md). Symbols: t = B·T
// tokens on this GPU, d hidden, D = h·d_head, s bytes of a compute-dtype element. The element
// sizes come from the precision recipe (recipes.cpp); what the code does with them from the
// implementation profile (implementation.cpp).
constexpr Bytes kMaskBytes = kByte;  // dropout masks are torch.bool on CUDA

struct Dims {
  Count batch, seq, full_seq, tokens;  // B, T on this GPU (context parallel), T attended to, B·T
  Count hidden, hidden_split;          // d; d or d / tp where sequence parallelism splits it
  Count heads, kv_heads, head_dim, v_head_dim;
  Count ff;                            // dense MLP inner size on this GPU
  Bytes act;      // s: a matmul input/output element
  Bytes stream;   // the residual stream element (fp32 under AMP)
  Bytes softmax;  // the softmax output element
  bool compute_softmax;  // GPT-2-style eager code: softmax in the compute dtype, scores scaled by a 0-dim tensor
  bool dropout;
  bool residual_dropout;  // dropout masks on the embeddings and both residual branches
  bool lora;
  unsigned targets;  // LoRA target bits
  Count rank;
  bool lora_dropout;
  bool quantized_base_saves_input;  // bitsandbytes 4-bit linears keep their input for backward
};

Dims make_dims(const Config& c) {
  const ModelSpec& m = c.model;
  const Parallel& p = c.parallel;
  const PrecisionRecipe& r = recipe_for(c.training.precision);
  const Implementation impl = resolve_implementation(c.training.implementation);
  Dims d;
  d.batch = c.training.micro_batch_size;
  d.full_seq = c.training.seq_len;
  d.seq = ceil_div(Count(c.training.seq_len), p.context);
  d.tokens = d.batch * d.seq;
  d.hidden = m.hidden_size;
  d.hidden_split = p.sequence_parallel ? ceil_div(Count(m.hidden_size), p.tensor) : Count(m.hidden_size);
  d.heads = ceil_div(Count(m.num_attention_heads), p.tensor);
  d.kv_heads = ceil_div(Count(m.kv_heads()), p.tensor);
  if (m.attention_type == AttentionType::kMla) {
    d.head_dim = Count(m.qk_nope_head_dim) + m.qk_rope_head_dim;
    d.v_head_dim = m.v_head_dim;
    d.kv_heads = d.heads;  // MLA expands its latent to full per-head keys and values
  } else {
    d.head_dim = d.v_head_dim = m.head_size();
  }
  d.ff = ceil_div(Count(m.intermediate_size), p.tensor);
  d.lora = is_lora(c);
  d.act = r.compute;
  // The stream takes the embedding's dtype: fp32 under AMP (fp32 weights, not autocast), and a
  // LoRA base loaded in 16 bit keeps it 16-bit even under autocast.
  d.stream = d.lora ? r.frozen_base : r.stream;
  d.compute_softmax = impl.softmax_dtype == SoftmaxDtype::kCompute;
  // Autocast runs softmax in fp32 whatever the model code asks for.
  d.softmax = (!d.compute_softmax || r.autocast) ? kFp32Bytes : d.act;
  d.dropout = c.training.dropout > 0.0;
  d.residual_dropout = d.dropout && m.residual_dropout;
  d.targets = d.lora ? c.training.finetune.lora_targets : 0;
  d.rank = c.training.finetune.lora_rank;
  d.lora_dropout = c.training.finetune.lora_dropout > 0.0;
  // bitsandbytes' MatMul4Bit keeps its input A in ctx.tensors even though the 4-bit weight is
  // frozen (bitsandbytes/autograd/_functions.py), unlike a frozen nn.Linear, which keeps nothing.
  d.quantized_base_saves_input = d.lora && c.training.finetune.base_bits == 4;
  return d;
}

void add(std::vector<NamedBytes>& terms, const char* name, Bytes bytes) {
  if (!bytes.is_zero()) terms.push_back({name, bytes});
}

Bytes sum(const std::vector<NamedBytes>& terms) {
  Bytes total{0};
  for (const NamedBytes& term : terms) total += term.bytes;
  return total;
}

// One hidden-size norm. LayerNorm (native kernel) saves its input and an fp32 mean and rstd per
// token. Hugging Face's RMSNorm (x.float(); x · rsqrt(mean(x²) + ε); weight · x.to(dtype)) saves
// the fp32 input (an upcast copy when the stream is 16-bit), the fp32 rsqrt, and the normalised
// x for the weight's gradient, which a frozen (LoRA) norm does not need.
Bytes norm_bytes(const ModelSpec& m, const Dims& d) {
  const Count td = d.tokens * d.hidden_split;
  if (m.norm == NormKind::kLayerNorm) return td * d.stream + d.tokens * kFp32Bytes * 2;
  return td * kFp32Bytes + d.tokens * kFp32Bytes + (d.lora ? Bytes{0} : td * d.stream);
}

// A linear layer's saved input: its own weight gradient needs it. A frozen layer saves nothing
// (autograd keeps only what a requires-grad input needs); a LoRA adapter saves its input for A
// (one tensor for adapters that share it, unless adapter dropout makes one copy each, plus a
// bool mask) and A's output for B.
Bytes linear_inputs(const Dims& d, Count width, unsigned targets_sharing_input, bool input_needs_grad = true) {
  const Bytes input = d.tokens * width * d.act;
  if (!d.lora) return input;
  const unsigned hit = d.targets & targets_sharing_input;
  const Count adapters = static_cast<std::int64_t>(__builtin_popcount(hit));
  const bool base_keeps_input = d.quantized_base_saves_input && input_needs_grad;
  if (adapters.is_zero()) return base_keeps_input ? input : Bytes{0};
  // Adapter dropout keeps a bool mask only when its input needs a gradient, and a dropped copy of
  // the input per adapter; without dropout all adapters (and a 4-bit base) share the input.
  const Bytes mask = input_needs_grad ? d.tokens * width * kMaskBytes : Bytes{0};
  const Bytes bytes = d.lora_dropout ? adapters * (input + mask) + (base_keeps_input ? input : Bytes{0}) : input;
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

// FlashAttention (Dao et al. 2022) saves q, k and v unrepeated, the output (also the o_proj
// input) and an fp32 log-sum-exp per query row.
void flash_attention_terms(const Dims& d, const GradFlow& g, std::vector<NamedBytes>& t) {
  const Count q_width = d.heads * d.head_dim, v_width = d.heads * d.v_head_dim;
  if (g.q || g.k || g.v) {
    add(t, "attention.flash_qkv", d.tokens * (q_width + d.kv_heads * (d.head_dim + d.v_head_dim)) * d.act);
    add(t, "attention.flash_output", d.tokens * v_width * d.act);
    add(t, "attention.flash_logsumexp", d.batch * d.heads * d.seq * kFp32Bytes);
  }
  if (d.lora) add(t, "attention.o_input", linear_inputs(d, v_width, kLoraO));
}

// Eager attention (Korthikanti et al. 2022 §4.1, for eager PyTorch code with GQA). Q·Kᵀ saves a
// contiguous copy of k repeated to every query head (for q's gradient) and of q (for k's); P·V
// saves the probabilities (for v's) and a copy of repeated v (for the probabilities'). Grouped
// K/V heads therefore save nothing extra in eager attention, nor anything less. Selective
// recomputation (Korthikanti et al. §5) drops exactly this core.
void eager_attention_terms(const Dims& d, const GradFlow& g, bool selective, std::vector<NamedBytes>& t) {
  const Count q_width = d.heads * d.head_dim, v_width = d.heads * d.v_head_dim;
  const Count scores = d.batch * d.heads * d.seq * d.full_seq;
  const bool scores_grad = g.q || g.k;
  if (!selective) {
    add(t, "attention.q_k_copies", d.tokens * q_width * d.act * (int(g.q) + int(g.k)));
    // GPT-2 divides the scores by a 0-dim tensor, which the division saves.
    if (d.compute_softmax && scores_grad) add(t, "attention.scale_divisor", d.act);
    // Softmax saves its output for its own gradient; P·V saves the probabilities in the compute
    // dtype for v's gradient: the same storage when the softmax ran in the compute dtype.
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

// The attention sublayer: MLA's latents, the q/k/v projections' input, the kernel's tensors.
void attention_terms(const Config& c, const Dims& d, const GradFlow& g, std::vector<NamedBytes>& t) {
  const ModelSpec& m = c.model;
  const bool input_grad = !(d.lora && g.first_lora_layer);
  if (m.attention_type == AttentionType::kMla) {
    // The compressed latents: q_a (q_lora_rank) and kv_a (kv_lora_rank + rope), each normed and
    // fed to an up-projection.
    const Count latent = Count(m.q_lora_rank) + m.kv_lora_rank + m.qk_rope_head_dim;
    add(t, "attention.mla_latents", d.tokens * latent * (kFp32Bytes + d.act * 2));
  }
  add(t, "attention.qkv_input", linear_inputs(d, d.hidden_split, kLoraQ | kLoraK | kLoraV, input_grad));
  if (c.training.implementation.attention == AttentionImpl::kFlash) {
    flash_attention_terms(d, g, t);
  } else {
    eager_attention_terms(d, g, c.training.checkpointing == Checkpointing::kSelective, t);
  }
  if (d.residual_dropout) add(t, "attention.residual_dropout_mask", d.tokens * d.hidden_split * kMaskBytes);
}

// The MLP: plain (up → GELU → down) saves GELU's input and output; gated (down(act(gate x)·up x))
// saves gate x, act(gate x), up x and the product (the down projection's input, unless frozen).
Bytes mlp_inner(const ModelSpec& m, const Dims& d, Count tokens, Count ff) {
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
  const Count k = m.num_experts_per_tok, routed = d.tokens * k;
  const Count expert_ff = ceil_div(Count(m.moe_intermediate_size), c.parallel.tensor);
  const bool inputs_kept = !d.lora || d.quantized_base_saves_input;  // trainable, or 4-bit bitsandbytes
  if (inputs_kept) add(t, "moe.router_input", d.tokens * d.hidden_split * d.act);
  add(t, "moe.router_softmax", d.tokens * m.num_experts * kFp32Bytes);
  add(t, "moe.topk", d.tokens * k * kInt64Bytes + d.tokens * k * kFp32Bytes + d.tokens * kFp32Bytes);
  add(t, "moe.dispatch_indices", routed * kInt64Bytes * 2);
  if (inputs_kept) add(t, "moe.expert_inputs", routed * d.hidden * d.act);
  add(t, "moe.experts_inner",
      mlp_inner(m, d, routed, expert_ff) + (inputs_kept ? routed * expert_ff * d.act : Bytes{0}));
  add(t, "moe.combine", routed * (d.hidden * 2 + 1) * d.act);
  const Count shared_ff = m.shared_expert_intermediate_size > 0
                              ? Count(m.shared_expert_intermediate_size)
                              : Count(m.num_shared_experts) * m.moe_intermediate_size;
  if (!shared_ff.is_zero()) {
    const Count ff = ceil_div(shared_ff, c.parallel.tensor);
    add(t, "moe.shared_expert", mlp_inner(m, d, d.tokens, ff) + (inputs_kept ? d.tokens * ff * d.act : Bytes{0}));
  }
}

std::vector<NamedBytes> block_terms(const Config& c, const Dims& d, bool moe, bool first_layer = false) {
  const ModelSpec& m = c.model;
  const GradFlow g = grad_flow(d, first_layer);
  std::vector<NamedBytes> t;
  // A norm saves only if its input needs a gradient: under LoRA, not the first block's first norm,
  // nor its second one when no attention projection is adapted.
  const bool attention_adapted = d.targets & (kLoraQ | kLoraK | kLoraV | kLoraO);
  const bool frozen_first_attention = d.lora && first_layer && !attention_adapted;
  std::int64_t norms = m.norms_per_block;
  if (d.lora && first_layer) norms = std::max<std::int64_t>(0, norms - (attention_adapted ? 1 : 2));
  add(t, "norms", norm_bytes(m, d) * norms);
  if (!frozen_first_attention) attention_terms(c, d, g, t);
  if (moe) moe_terms(c, d, t);
  else dense_mlp_terms(m, d, !frozen_first_attention, t);
  // A frozen MLP keeps its activation's tensors only if its input needs a gradient.
  if (frozen_first_attention && !(d.targets & (kLoraGate | kLoraUp))) {
    std::erase_if(t, [](const NamedBytes& term) { return term.name == "mlp.inner"; });
  }
  if (d.residual_dropout) add(t, "mlp.residual_dropout_mask", d.tokens * d.hidden_split * kMaskBytes);
  return t;
}

// The output width of each matmul of one block's attention, in forward order.
std::vector<Count> attention_matmul_widths(const ModelSpec& m, const Dims& d) {
  std::vector<Count> widths;
  if (m.attention_type == AttentionType::kMla) {
    if (m.q_lora_rank > 0) widths.push_back(m.q_lora_rank);
    widths.push_back(d.heads * d.head_dim);
    widths.push_back(Count(m.kv_lora_rank) + m.qk_rope_head_dim);
    widths.push_back(d.heads * (Count(m.qk_nope_head_dim) + d.v_head_dim));
  } else {
    widths.push_back(d.heads * d.head_dim);
    widths.push_back(d.kv_heads * d.head_dim);
    widths.push_back(d.kv_heads * d.v_head_dim);
  }
  widths.push_back(d.hidden_split);  // o
  return widths;
}

// torchtitan's op-level selective activation checkpointing (torchtitan/models/llama3/
// parallelize.py, _save_list): inside each checkpointed block only the outputs of saved ops are
// kept — every second matrix multiply (counted in forward order within the block) and the fused
// attention kernel's output and log-sum-exp — plus the block's input; the rest is recomputed.
std::vector<NamedBytes> selective_op_terms(const Config& c, const Dims& d, bool moe) {
  const ModelSpec& m = c.model;
  std::vector<Count> widths = attention_matmul_widths(m, d);
  Count tokens_through_mlp = d.tokens;
  Count ff = d.ff;
  if (moe) {  // the router, then each routed token through its expert
    widths.push_back(m.num_experts);
    tokens_through_mlp = d.tokens * m.num_experts_per_tok;
    ff = ceil_div(Count(m.moe_intermediate_size), c.parallel.tensor);
  }
  Bytes attention_side{0};
  for (std::size_t i = 0; i < widths.size(); i += 2) attention_side += d.tokens * widths[i] * d.act;
  // The MLP's matmuls continue the count: gate, up, down (or up, down).
  std::vector<Count> mlp_widths;
  if (m.mlp == MlpKind::kGated) mlp_widths.push_back(ff);
  mlp_widths.push_back(ff);
  mlp_widths.push_back(d.hidden_split);
  Bytes mlp_side{0};
  for (std::size_t i = 0; i < mlp_widths.size(); ++i) {
    if ((widths.size() + i) % 2 == 0) mlp_side += tokens_through_mlp * mlp_widths[i] * d.act;
  }
  std::vector<NamedBytes> t;
  add(t, "selective_op.block_input", d.tokens * d.hidden_split * d.stream);
  add(t, "selective_op.attention_matmul_outputs", attention_side);
  if (c.training.implementation.attention == AttentionImpl::kFlash) {
    add(t, "selective_op.attention_output",
        d.tokens * d.heads * d.v_head_dim * d.act + d.batch * d.heads * d.seq * kFp32Bytes);
  }
  add(t, "selective_op.mlp_matmul_outputs", mlp_side);
  return t;
}

// Saved outside the blocks: the token ids (embedding backward), a learned table's position ids
// (shape 1×T), the embedding dropout mask, the rotary cos/sin tables all layers share, and the
// final norm. A frozen embedding (LoRA) saves no ids.
Bytes outside_bytes(const Config& c, const Dims& d) {
  const ModelSpec& m = c.model;
  Bytes bytes{0};
  if (!d.lora) {
    bytes += d.tokens * kInt64Bytes;
    if (m.position_embedding == PositionKind::kLearned) bytes += d.seq * kInt64Bytes;
    if (d.residual_dropout) bytes += d.tokens * d.hidden_split * kMaskBytes;
  }
  if (m.position_embedding == PositionKind::kRotary) bytes += d.seq * d.head_dim * d.act * 2;
  if (m.final_norm) bytes += norm_bytes(m, d);
  return bytes;
}

// Per-layer saved bytes of each kind of block, and how many of each the busiest stage holds.
struct Blocks {
  Bytes dense, moe;          // one layer of each kind
  Bytes first_layer_saving;  // what the first block saves less under LoRA (see block_terms)
  Count dense_layers, moe_layers, layers;  // on the busiest pipeline stage
};

Blocks blocks(const Config& c, const ParameterCount& params, const Dims& d) {
  const ModelSpec& m = c.model;
  Blocks b;
  b.dense = sum(block_terms(c, d, false));
  b.moe = m.num_experts > 0 ? sum(block_terms(c, d, true)) : Bytes{0};
  // The busiest pipeline stage holds ceil(L/pp) layers.
  b.layers = ceil_div(Count(m.num_hidden_layers), c.parallel.pipeline);
  b.dense_layers = min(params.dense_layer_count, b.layers);
  b.moe_layers = b.layers - b.dense_layers;
  const bool first_is_moe = params.dense_layer_count.is_zero();
  b.first_layer_saving = (first_is_moe ? b.moe : b.dense) - sum(block_terms(c, d, first_is_moe, true));
  return b;
}

// What the blocks of the busiest stage save for one micro-batch, by checkpointing mode.
Bytes body_bytes(const Config& c, const Dims& d, const Blocks& b) {
  const Training& tr = c.training;
  switch (tr.checkpointing) {
    case Checkpointing::kSelectiveOp:
      return sum(selective_op_terms(c, d, false)) * b.dense_layers +
             (c.model.num_experts > 0 ? sum(selective_op_terms(c, d, true)) : Bytes{0}) * b.moe_layers;
    case Checkpointing::kFull: {
      // Full recomputation keeps each block's input (Chen et al. 2016) and its other tensor
      // arguments: eager attention's additive causal mask (T × T in the compute dtype).
      Bytes body = d.tokens * d.hidden_split * d.stream * b.layers;
      const Implementation impl = resolve_implementation(tr.implementation);
      if (impl.attention == AttentionImpl::kEager && impl.attention_mask == AttentionMask::kAdditive) {
        body += d.seq * d.full_seq * d.act;
      }
      return body;
    }
    case Checkpointing::kNone:
    case Checkpointing::kSelective:
      break;
  }
  return b.dense * b.dense_layers + b.moe * b.moe_layers - b.first_layer_saving;
}

// Backward working memory: the gradients of one layer's largest intermediates, plus, under full
// checkpointing, that layer's recomputed activations.
Bytes layer_backward_working_bytes(const Config& c, const Dims& d, const Blocks& b) {
  const Training& tr = c.training;
  const Count scores = d.batch * d.heads * d.seq * d.full_seq;
  const Bytes attention_grads =
      tr.implementation.attention == AttentionImpl::kEager ? scores * kFp32Bytes * 2 : Bytes{0};
  const Bytes mlp_grads = d.tokens * d.ff * d.act * 3;
  Bytes working = max(attention_grads, mlp_grads) + d.tokens * d.hidden_split * d.stream * 2;
  if (tr.checkpointing == Checkpointing::kFull || tr.checkpointing == Checkpointing::kSelectiveOp) {
    working += max(b.dense, b.moe);  // the block recomputed for its backward
  }
  return working;
}

}  // namespace

PipelineInFlight pipeline_in_flight(const Parallel& p, std::int64_t micro_batches) {
  if (p.pipeline <= 1) return {1, 1};
  // 1F1B keeps up to `pipeline` micro-batches in flight on the first stage (Narayanan et al. 2021).
  if (p.virtual_stages <= 1) return {std::min(p.pipeline, micro_batches), 1};
  // Interleaved 1F1B: the first stage warms up with (p − 1)·2 + (v − 1)·p chunk-micro-batches and
  // holds one more in the steady state (Megatron-LM, schedules.py, num_warmup_microbatches), each
  // chunk L / (p·v) layers: 1 + (p − 1) / (p·v) micro-batches' worth (Korthikanti et al. 2022 §4.2.3).
  const std::int64_t chunks = (p.pipeline - 1) * 2 + (p.virtual_stages - 1) * p.pipeline + 1;
  return {std::min(chunks, micro_batches * p.virtual_stages), p.virtual_stages};
}

Bytes seed_activation_bytes(const Config& c) {
  const ModelSpec& m = c.model;
  const Count b = c.training.micro_batch_size, t = c.training.seq_len, d = m.hidden_size,
              h = m.num_attention_heads;
  constexpr Bytes kPerHiddenBytes{34}, kPerScoreBytes{5};
  const Bytes per_layer = b * t * (d * kPerHiddenBytes + h * t * kPerScoreBytes);
  switch (c.training.checkpointing) {
    case Checkpointing::kNone: return per_layer * m.num_hidden_layers;
    case Checkpointing::kFull: return per_layer;  // the seeds: "one layer's activations"
    case Checkpointing::kSelective:               // Korthikanti et al.: the 5hT term is recomputed
    case Checkpointing::kSelectiveOp:
      return b * t * d * kPerHiddenBytes * m.num_hidden_layers;
  }
  return per_layer;
}

Bytes weight_copy_bytes(const Config& c, const ParameterCount& params) {
  const PrecisionRecipe& r = recipe_for(c.training.precision);
  // LoRA keeps a frozen 16-bit (or quantised) base: nothing to cast.
  if (r.autocast_copy.is_zero() || is_lora(c)) return Bytes{0};
  Count matmul_weights = 0;
  for (const TensorGroup& g : params.groups) {
    if (g.linear || g.component == Component::kHead) matmul_weights += g.elements();
  }
  if (c.model.output_head == OutputHead::kLm && c.model.tie_word_embeddings) {
    matmul_weights += params.component_count(Component::kTokenEmbedding);
  }
  return matmul_weights * r.autocast_copy;
}

ActivationModel activation_model(const Config& c, const ParameterCount& params) {
  const ModelSpec& m = c.model;
  const Training& tr = c.training;
  const Dims d = make_dims(c);
  const Blocks b = blocks(c, params, d);
  ActivationModel out;

  const bool all_moe = m.num_experts > 0 && params.dense_layer_count.is_zero();
  out.layer_terms = tr.checkpointing == Checkpointing::kSelectiveOp ? selective_op_terms(c, d, all_moe)
                                                                     : block_terms(c, d, all_moe);
  out.embedding_saved_bytes = outside_bytes(c, d);
  const PipelineInFlight in_flight = pipeline_in_flight(c.parallel, tr.grad_accum_steps);
  out.saved_bytes = mul_div(body_bytes(c, d, b) + out.embedding_saved_bytes, in_flight.chunks, in_flight.chunks_per_stage);
  if (tr.activation_offload) {
    // Offloading streams saved tensors to the host; about one layer's worth stays on the GPU.
    out.saved_bytes = b.dense + out.embedding_saved_bytes;
    out.notes.push_back("Activation offload: saved tensors stream to CPU memory; about one layer stays on the GPU.");
  }
  out.layer_backward_working_bytes = layer_backward_working_bytes(c, d, b);
  return out;
}

// Logits and loss (Hugging Face ForCausalLMLoss, transformers ≥ 4.46): logits in the compute
// dtype, an fp32 upcast, log_softmax's output (the one tensor saved), int64 labels. Backward holds
// the saved log-probabilities, the incoming gradient and log_softmax's gradient: three V-wide
// tensors at once.
LossModel loss_model(const Config& c) {
  const ModelSpec& m = c.model;
  LossModel out;
  if (m.output_head != OutputHead::kLm) return out;
  const Dims d = make_dims(c);
  const Implementation impl = resolve_implementation(c.training.implementation);
  // The loss reads fp32 logits when the code upcasts them, or when autocast casts cross_entropy's
  // input to fp32.
  const Bytes loss_element =
      impl.logits_dtype == LogitsDtype::kFp32 || recipe_for(c.training.precision).autocast ? kFp32Bytes : d.act;
  const Count vocab = ceil_div(Count(m.vocab_size), c.parallel.tensor);
  Count rows = d.tokens;
  if (impl.chunked_loss) {
    // Chunked / fused linear cross-entropy (Liger-Kernel's rule): chunks of
    // B·T / ceil(V / d) rows, so a chunk's logits are about as large as the hidden states.
    rows = ceil_div(d.tokens, ceil_div(Count(m.vocab_size), Count(m.hidden_size)));
    out.notes.push_back("Chunked loss: logits exist one chunk at a time.");
  }
  const bool head_trainable = !d.lora || (d.targets & kLoraHead);
  const Bytes head_input = head_trainable ? d.tokens * d.hidden_split * d.act : Bytes{0};
  const Bytes labels = d.tokens * kInt64Bytes;
  const Bytes log_probs = rows * vocab * loss_element;
  const Bytes upcast = loss_element == d.act ? Bytes{0} : rows * vocab * loss_element;
  out.forward_bytes = head_input + rows * vocab * d.act + upcast + log_probs + labels;
  // log_softmax's backward holds its saved output, the incoming gradient and its result (three
  // V-wide tensors); then only the logits' gradient (and its cast to the compute dtype) stays for
  // the head's matmul backward.
  const Bytes grad_cast = loss_element == d.act ? Bytes{0} : rows * vocab * d.act;
  out.grad_bytes = log_probs + grad_cast;
  out.head_input_bytes = d.tokens * d.hidden_split * d.act;
  out.backward_bytes = head_input + labels + max(log_probs * 3, out.grad_bytes);
  out.peak_bytes = max(out.forward_bytes, out.backward_bytes);
  return out;
}

}  // namespace memfit
