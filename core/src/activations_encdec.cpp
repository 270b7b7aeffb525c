// What an encoder-decoder (T5, Flan-T5, mT5, BART) or a post-norm encoder (RoBERTa, XLM-R,
// DeBERTa-v2/v3) saves for backward in one training step, and its task head's loss.
//
// Every term is read off the op sequence of transformers 5's classes (modeling_t5.py,
// modeling_bart.py, modeling_roberta.py, modeling_deberta_v2.py) and checked against what they
// really save (tools/frameworks/measure_encdec.py: saved_tensors_hooks on tiny models, CUDA autocast
// emulated, CUDA's sdpa kernels emulated where the CPU takes another path; the results are in
// tools/frameworks/out/encdec.json and pinned by tests/core/encdec_test.cpp).
//
// Symbols: B sequences, S source tokens (the encoder), T target tokens (the decoder), d hidden,
// h heads of size k (D = h·k), f the MLP inner size, V the vocabulary; s the compute element
// (2 under AMP and pure bf16, 4 in fp32), st the residual stream's element (fp32 under AMP).
// Under AMP every linear layer casts its fp32 input to bf16 itself (autocast caches casts of
// weights only), so two linears reading one fp32 tensor save two copies.
#include <algorithm>

#include "activations.hpp"
#include "finetune.hpp"
#include "memfit/implementation.hpp"
#include "memfit/recipes.hpp"

namespace memfit {

namespace {

constexpr Bytes kMaskBytes = kByte;  // CUDA native_dropout keeps a bool mask
// LayerNorm keeps a float32 mean and rstd per row on CUDA (layer_norm_cuda_kernel).
constexpr Bytes kLayerNormStatsBytes = kFp32Bytes * 2;
// torch's sdpa pads a float attention mask whose strides are not multiples of 8 (attention.cpp
// preprocess_mask, pad_bias<8>); the memory-efficient kernel keeps its log-sum-exp rows padded
// to 32 (kAlignLSE).
constexpr std::int64_t kBiasAlignment = 8;
constexpr std::int64_t kLseAlignment = 32;

Count round_up(Count n, std::int64_t multiple) { return ceil_div(n, Count(multiple)) * multiple; }

// The attention kernel a step runs. eager: transformers' eager_attention_forward (scores, softmax,
// probabilities); fused: sdpa's FlashAttention-2 (16-bit inputs) or memory-efficient kernel
// (fp32), neither keeping scores; biased: the memory-efficient kernel with T5's relative position
// bias as its float mask (FlashAttention takes no mask, sdp_utils.cpp check_for_attn_mask).
enum class Kernel { kEager, kFused, kBiased };

struct Run {
  Count batch, src, tgt;     // B, S, T
  Count hidden;              // d
  Bytes act, stream;         // s, st
  Bytes softmax;             // eager softmax output: fp32 under autocast, else the compute dtype
  bool autocast = false;
  bool dropout = false;           // attention-probability and MLP-activation dropout
  bool residual_dropout = false;  // dropout on the embeddings and residual branches
  Kernel kernel = Kernel::kEager;
  bool lora = false;
  bool adapters_uncast = false;  // PEFT's bitsandbytes LoRA layer under autocast: no cast to the adapters
  bool fp32_adapters = false;    // PEFT's autocast_adapter_dtype: adapters in fp32 over a 16-bit base
  Bytes adapter_element{2};      // what an adapter's matmuls save: fp32 adapters without autocast, else s
  Bytes mlp_act{2};              // the MLP's first projection's output: fp32 out of a 4-bit linear fed fp32
  unsigned targets = 0;
  Count rank;
  Count tensor;  // tensor-parallel degree (heads and MLP widths split)
};

Run make_run(const Config& c) {
  const ModelSpec& m = c.model;
  const PrecisionRecipe& r = recipe_of(c);
  const Implementation impl = resolve_implementation(c);
  Run run;
  run.batch = c.training.micro_batch_size;
  run.src = c.training.seq_len;
  // A sequence classifier's decoder reads the source shifted right (T5ForSequenceClassification,
  // BartForSequenceClassification: decoder_input_ids = shift_right(input_ids)).
  run.tgt = m.output_head == OutputHead::kSequenceClassification ? c.training.seq_len : c.training.decoder_len();
  run.hidden = m.hidden_size;
  run.lora = is_peft(c);
  run.act = r.compute;
  run.mlp_act = r.compute;
  run.stream = run.lora ? lora_base_bytes(r, impl) : r.stream;
  if (kbit_fp32_stream(c.training.finetune)) run.stream = kFp32Bytes;
  run.autocast = r.autocast;
  run.softmax = (impl.softmax_dtype == SoftmaxDtype::kFp32 || r.autocast) ? kFp32Bytes : r.compute;
  run.dropout = c.training.dropout > 0.0;
  run.residual_dropout = run.dropout && m.residual_dropout;
  // DeBERTa's disentangled attention has no fused kernel in transformers: it always runs eager.
  const bool eager = impl.attention == AttentionImpl::kEager || m.attention_type == AttentionType::kDisentangled;
  run.kernel = eager ? Kernel::kEager
                     : m.position_embedding == PositionKind::kRelativeBias ? Kernel::kBiased : Kernel::kFused;
  run.targets = run.lora ? c.training.finetune.lora_targets : 0;
  // Over a bitsandbytes base under autocast PEFT's LoRA layers hand the adapters their input uncast
  // (bnb_adapters_uncast), and a 4-bit linear returns its input's dtype: the fp32 output of a
  // LayerNorm (BART, BERT-style encoders) gives an fp32 MLP. (Measured: measure_encdec.py's QLoRA
  // cases.)
  run.adapters_uncast = bnb_adapters_uncast(c);
  run.fp32_adapters = impl.lora_adapter_dtype == LoraAdapterDtype::kFp32;
  run.adapter_element = run.fp32_adapters && !run.autocast ? kFp32Bytes : run.act;
  // (After prepare_model_for_kbit_training the norms' fp32 weights give fp32 outputs too.)
  run.mlp_act = bnb_peft_base(c) && (run.stream == kFp32Bytes || (run.autocast && m.norm == NormKind::kLayerNorm))
                    ? kFp32Bytes
                    : run.act;
  run.rank = c.training.finetune.lora_rank;
  run.tensor = c.parallel.tensor;
  return run;
}

// One stack's shape: its tokens per sequence, attention heads (this GPU's share), head size and
// MLP width.
struct Stack {
  Count seq;  // S or T
  Count heads, head_dim, ff;
  bool decoder = false;
  Count tokens(const Run& r) const { return r.batch * seq; }
  Count width() const { return heads * head_dim; }  // D on this GPU
};

Stack encoder_stack(const ModelSpec& m, const Run& r) {
  return {r.src, ceil_div(Count(m.num_attention_heads), r.tensor), m.head_size(),
          ceil_div(Count(m.intermediate_size), r.tensor), false};
}

Stack decoder_stack(const ModelSpec& m, const Run& r) {
  const std::int64_t heads = m.decoder_heads();
  const Count head_dim = m.head_dim > 0 ? Count(m.head_dim) : Count(m.hidden_size / std::max<std::int64_t>(heads, 1));
  return {r.tgt, ceil_div(Count(heads), r.tensor), head_dim, ceil_div(Count(m.decoder_ff()), r.tensor), true};
}

bool builds_decoder(const ModelSpec& m) {
  return m.is_encoder_decoder && m.output_head != OutputHead::kTokenClassification;
}

void add(std::vector<NamedBytes>& terms, const char* name, Bytes bytes) {
  if (!bytes.is_zero()) terms.push_back({name, bytes});
}

Bytes sum(const std::vector<NamedBytes>& terms) {
  Bytes total{0};
  for (const NamedBytes& t : terms) total += t.bytes;
  return total;
}

// ---------------------------------------------------------------------------------------------
// Norms and linear inputs

// One norm over `tokens` rows of d. T5LayerNorm (hidden.to(fp32).pow(2).mean → hidden *
// rsqrt(var + eps) → weight * hidden.to(weight dtype)) keeps the fp32 input of pow, the original
// input for the first multiply when that is not already fp32, the rsqrt, and the normalised
// input for the weight's gradient (not for a frozen LoRA weight). LayerNorm keeps its input and a
// float32 mean and rstd; autocast runs it in fp32, casting a 16-bit (LoRA base) input, weight and
// bias to fp32 copies that it keeps.
Bytes norm_bytes(const ModelSpec& m, const Run& r, Count tokens) {
  const Count elements = tokens * r.hidden;
  if (m.norm == NormKind::kLayerNorm) {
    const Bytes input = r.autocast ? kFp32Bytes : r.stream;
    const bool cast_weights = r.autocast && r.stream != kFp32Bytes;
    const Bytes weights = cast_weights ? r.hidden * kFp32Bytes * (m.norm_bias ? 2 : 1) : Bytes{0};
    return elements * input + tokens * kLayerNormStatsBytes + weights;
  }
  const Bytes original = r.stream == kFp32Bytes ? Bytes{0} : elements * r.stream;
  const Bytes normalised = r.lora ? Bytes{0} : elements * r.stream;
  return elements * kFp32Bytes + original + tokens * kFp32Bytes + normalised;
}

// A norm's output element: LayerNorm's is fp32 under autocast; T5LayerNorm returns its weight's
// dtype (fp32 in full AMP, the base's 16 bits under LoRA).
Bytes norm_output_element(const ModelSpec& m, const Run& r) {
  return m.norm == NormKind::kLayerNorm && r.autocast ? kFp32Bytes : r.stream;
}

// The element of the copy of its input each adapter keeps, or zero when the adapters share the
// input as it is. PEFT casts an adapter's input to its fp32 weights' dtype (LoraLayer.
// _cast_input_dtype): without autocast a 16-bit input becomes one fp32 copy per adapter (an fp32
// one is not copied); under autocast the lora_A matmul casts that copy back to 16 bits, again one
// per adapter, except that PEFT's bitsandbytes layers hand a 16-bit input over uncast.
// (Adapters in the base's dtype cast nothing themselves; autocast still casts an fp32 input for each.)
Bytes adapter_copy_element(const Run& r, Bytes input) {
  if (r.autocast) {
    if (!r.fp32_adapters) return input == r.act ? Bytes{0} : r.act;
    return r.adapters_uncast && input == r.act ? Bytes{0} : r.act;
  }
  return r.fp32_adapters && input != kFp32Bytes ? kFp32Bytes : Bytes{0};
}

// Whether each linear (or LoRA adapter) reading one norm output keeps a copy of its own (see
// stream_input_bytes).
bool copies_per_reader(const ModelSpec& m, const Run& r) {
  if (r.lora) return !adapter_copy_element(r, norm_output_element(m, r)).is_zero();
  return r.autocast && norm_output_element(m, r) != r.act;
}

// Whether the encoder output every cross-attention reads is counted once, outside the blocks (the
// blocks keep no copies of their own, and some linear or adapter keeps it).
bool encoder_output_outside(const ModelSpec& m, const Run& r) {
  return !copies_per_reader(m, r) && (!r.lora || (r.targets & (kLoraK | kLoraV)));
}

// The saved input of `readers` linear layers reading one norm output: under autocast an fp32
// tensor is cast by each linear to its own bf16 copy; otherwise they share the tensor. Under LoRA a
// frozen linear keeps nothing and each adapter keeps its input (lora_A's, its own copy when PEFT
// casts it: adapter_copy_element) and its rank-r output (lora_B's).
Bytes stream_input_bytes(const ModelSpec& m, const Run& r, Count tokens, Count width, std::int64_t readers,
                         unsigned target_bits) {
  const Bytes element = norm_output_element(m, r);
  if (r.lora) {
    const Count adapters = static_cast<std::int64_t>(__builtin_popcount(r.targets & target_bits));
    if (adapters.is_zero()) return Bytes{0};
    const Bytes copy = adapter_copy_element(r, element);
    const Bytes input = copy.is_zero() ? tokens * width * element : tokens * width * copy * adapters;
    return input + adapters * tokens * r.rank * r.adapter_element;
  }
  const bool casts = r.autocast && element != r.act;
  return casts ? tokens * width * r.act * readers : tokens * width * element;
}

// The saved input of one linear layer reading a compute-dtype tensor nobody else keeps (the
// attention output in eager attention, the down projection's input).
Bytes compute_input_bytes(const Run& r, Count tokens, Count width, unsigned target_bit) {
  if (r.lora) {
    if (!(r.targets & target_bit)) return Bytes{0};
    const Bytes copy = adapter_copy_element(r, r.act);
    return tokens * width * (copy.is_zero() ? r.act : copy) + tokens * r.rank * r.adapter_element;
  }
  return tokens * width * r.act;
}

// ---------------------------------------------------------------------------------------------
// Attention

// eager_attention_forward (T5, BART, BERT-style): matmul(q, kᵀ) keeps contiguous copies of the
// transposed q and k; softmax keeps its output (fp32 under autocast); matmul(probabilities, v)
// keeps the probabilities in the compute dtype (a cast copy under autocast, the dropped copy and a
// bool mask under dropout) and a contiguous copy of v. `query_rows` attend to `key_rows`.
void eager_core(const Run& r, const Stack& st, Count query_rows, Count key_rows, std::vector<NamedBytes>& t) {
  const Count scores = r.batch * st.heads * query_rows * key_rows;
  const Count qk = r.batch * st.heads * st.head_dim;
  add(t, "attention.q_k_copies", qk * (query_rows + key_rows) * r.act);
  add(t, "attention.softmax_output", scores * r.softmax);
  if (r.dropout) {
    add(t, "attention.dropout_mask", scores * kMaskBytes);
    add(t, "attention.dropped_probabilities", scores * r.act);
  } else if (r.softmax != r.act) {
    add(t, "attention.probabilities", scores * r.act);
  }
  add(t, "attention.v_copy", qk * key_rows * r.act);
}

// sdpa's fused kernels keep q, k and v (the projections' outputs, as views), the output (which
// the o projection reads as it is) and a float32 log-sum-exp per query row: FlashAttention-2 for
// 16-bit inputs, the memory-efficient kernel (rows padded to 32) for fp32 or with a bias.
// Dropout happens inside the kernel (a philox seed, nothing per element).
void fused_core(const Run& r, const Stack& st, Count query_rows, Count key_rows, std::vector<NamedBytes>& t) {
  const Count width = st.width();
  add(t, "attention.sdpa_qkv", r.batch * width * (query_rows + key_rows * 2) * r.act);
  add(t, "attention.sdpa_output", r.batch * query_rows * width * r.act);
  const bool efficient = r.kernel == Kernel::kBiased || r.act == kFp32Bytes;
  const Count lse_rows = efficient ? round_up(query_rows, kLseAlignment) : query_rows;
  add(t, "attention.sdpa_logsumexp", r.batch * st.heads * lse_rows * kFp32Bytes);
}

// T5 under sdpa: the bias handed to the memory-efficient kernel, (1, h, rows, cols) in the
// compute dtype, padded to 8 columns when unaligned. create_position_bias_mask makes a new one in
// every layer (a contiguous copy of the permuted bias table; the decoder's torch.where with the
// causal mask, which also keeps that bool mask); under autocast each is a bf16 cast.
Bytes position_bias_bytes(const Run& r, const Stack& st, Count rows, Count cols) {
  return st.heads * rows * round_up(cols, kBiasAlignment) * r.act;
}

// The self-attention sublayer of one block: the q/k/v input, the kernel's tensors, the o input
// (T5 under sdpa: its bias, and the decoder's causal condition).
void attention_terms(const ModelSpec& m, const Run& r, const Stack& st, std::vector<NamedBytes>& t) {
  const Count tokens = st.tokens(r);
  const Count rows = st.seq;
  add(t, "attention.qkv_input", stream_input_bytes(m, r, tokens, r.hidden, 3, kLoraQ | kLoraK | kLoraV));
  if (r.kernel == Kernel::kEager) {
    eager_core(r, st, rows, rows, t);
    add(t, "attention.o_input", compute_input_bytes(r, tokens, st.width(), kLoraO));
  } else {
    fused_core(r, st, rows, rows, t);
    if (r.kernel == Kernel::kBiased) {
      add(t, "attention.position_bias", position_bias_bytes(r, st, rows, rows));
      // torch.where keeps its condition for the bias table's gradient (none when frozen, LoRA)
      if (st.decoder && !r.lora) add(t, "attention.causal_mask", rows * rows * kMaskBytes);
    }
  }
}

// A decoder block's cross-attention: queries from the decoder (T rows) over the encoder output
// (S rows), whose k and v inputs are counted here only when each block keeps its own copy.
void cross_attention_terms(const ModelSpec& m, const Run& r, const Stack& dec, bool shared_bias,
                           std::vector<NamedBytes>& t) {
  const Count tokens = dec.tokens(r);
  add(t, "cross_attention.q_input", stream_input_bytes(m, r, tokens, r.hidden, 1, kLoraQ));
  // Under autocast k and v (or their adapters) copy the encoder output in every decoder block;
  // otherwise all blocks read the one tensor (counted once, outside the blocks).
  if (copies_per_reader(m, r)) {
    add(t, "cross_attention.kv_input", stream_input_bytes(m, r, r.batch * r.src, r.hidden, 2, kLoraK | kLoraV));
  } else if (r.lora) {  // the shared input is counted outside; each block's adapters keep their A x
    const Count adapters = static_cast<std::int64_t>(__builtin_popcount(r.targets & (kLoraK | kLoraV)));
    add(t, "cross_attention.kv_adapters", adapters * r.batch * r.src * r.rank * r.adapter_element);
  }
  if (r.kernel == Kernel::kEager) {
    eager_core(r, dec, dec.seq, r.src, t);
    add(t, "cross_attention.o_input", compute_input_bytes(r, tokens, dec.width(), kLoraO));
  } else {
    fused_core(r, dec, dec.seq, r.src, t);
    // T5's cross-attention bias is a zeros tensor made once in the compute dtype; only an unaligned
    // one is padded (a new copy) in every block.
    if (r.kernel == Kernel::kBiased && !shared_bias) {
      add(t, "cross_attention.position_bias", position_bias_bytes(r, dec, dec.seq, r.src));
    }
  }
  // cross_attention's terms are named like the self-attention's; prefix them
  for (NamedBytes& term : t) {
    if (term.name.rfind("attention.", 0) == 0) term.name = "cross_" + term.name;
  }
}

// DeBERTa's disentangled self-attention (modeling_deberta_v2.py DisentangledSelfAttention, eager
// only): the content q, k, v (contiguous per head), kᵀ / √(k·scale_factor) for the content scores,
// per relative term the position projection repeated per sequence (pos_key for c2p, pos_query for
// p2c), its score against the content (B·h × S × 2·span), the gather index (S × S int64), and for
// p2c the content k once more; then softmax, the bool mask filled in, the probabilities and v.
void disentangled_terms(const ModelSpec& m, const Run& r, const Stack& st, std::vector<NamedBytes>& t) {
  const Count tokens = st.tokens(r), d = r.hidden, width = st.width();
  const Count rel_rows = m.relative_embedding_rows();
  const bool c2p = m.pos_att_type != PosAttType::kP2c, p2c = m.pos_att_type != PosAttType::kC2p;
  const std::int64_t terms = std::int64_t(c2p) + std::int64_t(p2c);
  add(t, "attention.qkv_input", stream_input_bytes(m, r, tokens, d, 3, kLoraQ | kLoraK | kLoraV));
  // Under autocast the relative embeddings are cast by each position projection in every layer;
  // otherwise (and without pos_dropout) all layers read one tensor, counted outside the blocks.
  if (r.autocast) add(t, "attention.relative_input", rel_rows * d * r.act * terms);
  if (r.dropout) {
    add(t, "attention.relative_dropout", rel_rows * d * (kMaskBytes + (r.autocast ? Bytes{0} : r.stream)));
  }
  add(t, "attention.content_qkv", tokens * width * r.act * (3 + std::int64_t(p2c)));
  add(t, "attention.position_projections", r.batch * rel_rows * width * r.act * terms);
  add(t, "attention.relative_scores", r.batch * st.heads * st.seq * rel_rows * r.act * terms);
  add(t, "attention.relative_index", st.seq * st.seq * kInt64Bytes * terms);
  const Count scores = r.batch * st.heads * st.seq * st.seq;
  add(t, "attention.mask", r.batch * st.seq * st.seq * kMaskBytes);
  add(t, "attention.softmax_output", scores * r.softmax);
  if (r.dropout) {
    add(t, "attention.dropout_mask", scores * kMaskBytes);
    add(t, "attention.dropped_probabilities", scores * r.act);
  } else if (r.softmax != r.act) {
    add(t, "attention.probabilities", scores * r.act);
  }
  add(t, "attention.o_input", compute_input_bytes(r, tokens, width, kLoraO));
}

// ---------------------------------------------------------------------------------------------
// MLP

HiddenAct activation(const ModelSpec& m) {
  if (m.hidden_act != HiddenAct::kAuto) return m.hidden_act;
  return m.mlp == MlpKind::kGated ? HiddenAct::kSilu : HiddenAct::kGelu;
}

// T5's feed-forward casts its hidden state to the output weight's dtype before wo
// (modeling_t5.py T5DenseActDense: hidden_states.to(self.wo.weight.dtype)): under autocast wo then
// casts that fp32 copy back, so wo's input is never the activation's own tensor. T5 is the family
// with the relative bias table.
bool casts_before_down(const ModelSpec& m) { return m.position_embedding == PositionKind::kRelativeBias; }

// The MLP after its input: what the activation keeps (relu its output; gelu and silu their input;
// gelu_new — 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) in Python ops — x for pow, the tanh output,
// 0.5·x and 1 + tanh, in fp32 under autocast because pow runs in fp32), for a gated MLP both
// factors of the product, dropout's mask, and the down projection's input.
Bytes mlp_inner_bytes(const ModelSpec& m, const Run& r, Count tokens, Count ff) {
  const Count n = tokens * ff;
  const bool gated = m.mlp == MlpKind::kGated;
  const bool frozen = r.lora;  // a frozen MLP keeps its activation's tensors (its input needs a gradient)
  Bytes saved{0};
  Bytes out_element = r.act;  // the activation's output
  bool out_kept = false;      // ... already kept by the activation itself
  switch (activation(m)) {
    case HiddenAct::kRelu:
      saved += n * r.mlp_act;
      out_element = r.mlp_act;
      out_kept = true;
      break;
    case HiddenAct::kGeluNew: {
      const Bytes wide = r.autocast ? kFp32Bytes : r.act;
      saved += n * (wide * 3 + r.act);
      out_element = wide;
      break;
    }
    case HiddenAct::kRelu2: {  // relu's output, and square's fp32 copy of it under autocast (pow)
      const bool promoted = r.autocast && r.act != kFp32Bytes;
      saved += n * (r.act + (promoted ? kFp32Bytes : Bytes{0}));
      if (promoted) out_element = kFp32Bytes;
      break;
    }
    case HiddenAct::kAuto:
    case HiddenAct::kGelu:
    case HiddenAct::kGeluPytorchTanh:
    case HiddenAct::kSilu:
    case HiddenAct::kClampedSwiglu:  // no encoder uses these; validate() refuses them there
    case HiddenAct::kXielu:
      saved += n * r.mlp_act;  // the activation's input, the first projection's output
      out_element = r.mlp_act;
      break;
  }
  Bytes hidden_element = out_element;  // what reaches the down projection
  bool hidden_kept = out_kept;
  if (gated) {
    if (!out_kept) saved += n * out_element;
    saved += n * r.act;  // the up projection's output
    hidden_element = max(out_element, r.act);
    hidden_kept = false;
  }
  // T5 and BART drop out between the activation and the down projection (dropout_rate,
  // activation_dropout); BERT-style encoders do not.
  if (r.dropout && m.is_encoder_decoder) {
    saved += n * kMaskBytes;
    hidden_kept = false;
  }
  const bool cast = r.autocast && (hidden_element != r.act || casts_before_down(m));
  if (frozen && !(r.targets & kLoraDown)) return saved;
  // The down adapter keeps its own copy of its input when PEFT or autocast casts it
  // (adapter_copy_element), beside whatever the activation keeps (ReLU's output).
  const Bytes copy = frozen ? adapter_copy_element(r, hidden_element) : Bytes{0};
  if (!copy.is_zero()) saved += n * copy;
  else if (cast) saved += n * r.act;
  else if (!hidden_kept) saved += n * hidden_element;
  if (frozen) saved += tokens * r.rank * r.adapter_element;
  return saved;
}

void mlp_terms(const ModelSpec& m, const Run& r, Count tokens, Count ff, std::vector<NamedBytes>& t) {
  const bool gated = m.mlp == MlpKind::kGated;
  add(t, "mlp.input", stream_input_bytes(m, r, tokens, r.hidden, gated ? 2 : 1, gated ? (kLoraGate | kLoraUp) : kLoraUp));
  add(t, "mlp.inner", mlp_inner_bytes(m, r, tokens, ff));
}

// ---------------------------------------------------------------------------------------------
// Blocks

// One encoder block (or a BERT-style encoder's block): norms around (T5: before) the attention
// and the MLP, the two sublayers, and the residual branches' dropout masks.
std::vector<NamedBytes> encoder_block_terms(const ModelSpec& m, const Run& r, const Stack& st) {
  std::vector<NamedBytes> t;
  const Count tokens = st.tokens(r);
  add(t, "norms", norm_bytes(m, r, tokens) * m.norms_per_block);
  if (m.attention_type == AttentionType::kDisentangled) disentangled_terms(m, r, st, t);
  else attention_terms(m, r, st, t);
  mlp_terms(m, r, tokens, st.ff, t);
  // (DistilBERT adds its attention output undropped: one mask, the MLP's.)
  if (r.residual_dropout) {
    add(t, "residual_dropout_masks", tokens * r.hidden * kMaskBytes * (m.attention_output_dropout ? 2 : 1));
  }
  return t;
}

// One decoder block: causal self-attention, cross-attention over the encoder output, the MLP,
// three norms and three residual dropouts.
std::vector<NamedBytes> decoder_block_terms(const ModelSpec& m, const Run& r, const Stack& dec) {
  std::vector<NamedBytes> t;
  const Count tokens = dec.tokens(r);
  add(t, "norms", norm_bytes(m, r, tokens) * (m.norms_per_block + 1));
  attention_terms(m, r, dec, t);
  std::vector<NamedBytes> cross;
  cross_attention_terms(m, r, dec, r.src.value() % kBiasAlignment == 0, cross);
  t.insert(t.end(), cross.begin(), cross.end());
  mlp_terms(m, r, tokens, dec.ff, t);
  if (r.residual_dropout) add(t, "residual_dropout_masks", tokens * r.hidden * kMaskBytes * 3);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Outside the blocks

// Token ids (the embedding's backward), position ids where they are made per token (RoBERTa and
// BART's encoder count positions from the ids; BERT's come from a buffer, BART's decoder makes
// one row), token types (gathered along the positions), T5's relative-position bucket indices
// (S × S and T × T int64, one table per stack), the embedding norm and dropout, DeBERTa's input
// mask multiply, the final norms and dropouts, the encoder output that every cross-attention
// reads, T5's shared cross-attention bias, and DeBERTa's relative embeddings.
Bytes outside_bytes(const ModelSpec& m, const Run& r, Checkpointing checkpointing) {
  const Count src_tokens = r.batch * r.src, tgt_tokens = r.batch * r.tgt;
  const bool decoder = builds_decoder(m);
  Bytes bytes{0};
  if (!r.lora) {
    bytes += src_tokens * kInt64Bytes;
    if (decoder) bytes += tgt_tokens * kInt64Bytes;
    // RoBERTa counts its positions from the ids (padding-aware, one per token) and gathers the
    // token types along them; BERT slices both from buffers (its token types: one gathered row).
    const bool positions_per_token = m.position_embedding_offset > 0;
    if (m.position_embedding == PositionKind::kLearned) {
      if (m.is_encoder_decoder) {  // BART: the encoder's positions per token, the decoder's one row
        bytes += src_tokens * kInt64Bytes;
        if (decoder) bytes += Count(r.tgt) * kInt64Bytes;
      } else if (positions_per_token) {
        bytes += src_tokens * kInt64Bytes;
      }
    }
    if (m.type_vocab_size > 0) bytes += (positions_per_token ? src_tokens : Count(r.src)) * kInt64Bytes;
    // T5's bucket indices are saved inside the first block, which full checkpointing recomputes.
    if (m.position_embedding == PositionKind::kRelativeBias && checkpointing != Checkpointing::kFull) {
      bytes += Count(r.src) * r.src * kInt64Bytes;
      if (decoder) bytes += Count(r.tgt) * r.tgt * kInt64Bytes;
    }
  }
  const Count stacks_tokens = src_tokens + (decoder ? tgt_tokens : Count(0));
  // Under LoRA the frozen embedding's output needs no gradient: its norm and dropout keep nothing.
  if (m.embedding_norm && !r.lora) {
    bytes += norm_bytes(m, r, src_tokens) + (decoder ? norm_bytes(m, r, tgt_tokens) : Bytes{0});
  }
  if (r.residual_dropout && !r.lora) bytes += stacks_tokens * r.hidden * kMaskBytes;
  if (m.attention_type == AttentionType::kDisentangled) {
    bytes += src_tokens * r.stream;  // embeddings * mask.unsqueeze(-1).to(dtype)
    const Count rows = m.relative_embedding_rows();
    if (m.norm_rel_ebd) bytes += rows * kLayerNormStatsBytes;  // the input is the table itself
    if (!r.autocast && !r.dropout) bytes += rows * r.hidden * r.stream;
  }
  if (m.final_norm) {
    bytes += norm_bytes(m, r, src_tokens) + (decoder ? norm_bytes(m, r, tgt_tokens) : Bytes{0});
    if (r.residual_dropout) bytes += stacks_tokens * r.hidden * kMaskBytes;
  }
  if (decoder) {
    if (encoder_output_outside(m, r)) {
      bytes += r.lora ? src_tokens * r.hidden * norm_output_element(m, r)
                      : stream_input_bytes(m, r, src_tokens, r.hidden, 2, kLoraK | kLoraV);
    }
    if (r.kernel == Kernel::kBiased && r.src.value() % kBiasAlignment == 0) {
      bytes += position_bias_bytes(r, decoder_stack(m, r), r.tgt, r.src);
    }
  }
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// The whole step

// Under LoRA the first block of each stack reads the frozen embedding's output, which needs no
// gradient: a pre-norm block's first norm keeps nothing, and eager attention keeps the copy of q
// only if k is adapted (for k's gradient) and the copy of k only if q is.
Bytes first_block_saving(const ModelSpec& m, const Run& r, const Stack& st) {
  if (!r.lora) return Bytes{0};
  Bytes saving{0};
  if (m.normalize_before) saving += norm_bytes(m, r, st.tokens(r));
  if (r.kernel == Kernel::kEager && m.attention_type != AttentionType::kDisentangled) {
    const Count per_row = r.batch * st.heads * st.head_dim;
    if (!(r.targets & kLoraK)) saving += per_row * st.seq * r.act;
    if (!(r.targets & kLoraQ)) saving += per_row * st.seq * r.act;
  }
  return saving;
}

struct Body {
  Bytes encoder_layer, decoder_layer;
  Bytes first_block_saving;  // what the first block of each stack keeps less (LoRA)
  Count encoder_layers, decoder_layers;
  std::vector<NamedBytes> terms;  // one encoder block's and one decoder block's terms, named by stack
  Bytes largest_layer;
};

Body body(const Config& c, const Run& r) {
  const ModelSpec& m = c.model;
  Body b;
  // An encoder-only model's busiest pipeline stage holds ceil(L / pp) blocks (an encoder-decoder
  // runs unsplit: validate.cpp).
  b.encoder_layers = ceil_div(Count(m.num_hidden_layers), c.parallel.pipeline);
  b.decoder_layers = builds_decoder(m) ? m.decoder_layers() : 0;
  const std::vector<NamedBytes> enc = encoder_block_terms(m, r, encoder_stack(m, r));
  b.encoder_layer = sum(enc);
  for (const NamedBytes& t : enc) b.terms.push_back({(m.is_encoder_decoder ? "encoder." : "") + t.name, t.bytes});
  if (!b.decoder_layers.is_zero()) {
    const std::vector<NamedBytes> dec = decoder_block_terms(m, r, decoder_stack(m, r));
    b.decoder_layer = sum(dec);
    for (const NamedBytes& t : dec) b.terms.push_back({"decoder." + t.name, t.bytes});
  }
  b.largest_layer = max(b.encoder_layer, b.decoder_layer);
  b.first_block_saving = first_block_saving(m, r, encoder_stack(m, r)) +
                         (b.decoder_layers.is_zero() ? Bytes{0} : first_block_saving(m, r, decoder_stack(m, r)));
  return b;
}

// Selective recomputation drops the eager attention core (Korthikanti et al. 2022 §5).
bool recomputed_core(const std::string& name) {
  for (const char* core : {"q_k_copies", "softmax_output", "probabilities", "dropped_probabilities",
                           "dropout_mask", "v_copy", "relative_scores", "content_qkv", "position_projections"}) {
    if (name.size() >= std::string(core).size() && name.rfind(core) == name.size() - std::string(core).size()) {
      return true;
    }
  }
  return false;
}

Bytes without_core(const std::vector<NamedBytes>& terms, const std::string& prefix) {
  Bytes total{0};
  for (const NamedBytes& t : terms) {
    if (t.name.rfind(prefix, 0) == 0 && !recomputed_core(t.name)) total += t.bytes;
  }
  return total;
}

Bytes stack_sum(const std::vector<NamedBytes>& terms, const std::string& prefix) {
  Bytes total{0};
  for (const NamedBytes& t : terms) {
    if (t.name.rfind(prefix, 0) == 0) total += t.bytes;
  }
  return total;
}

// Under full checkpointing, the tensors handed to every block as arguments, which each checkpoint
// region keeps (torch.utils.checkpoint keeps its inputs, not its saved tensors): T5's position
// biases made in the first block of each stack (the permuted table, in the stream dtype; the
// cross-attention's zeros, in the compute dtype), the eager decoder's additive causal mask
// (B × 1 × T × T), the encoder output under autocast (otherwise already kept by the
// cross-attentions), and DeBERTa's float attention mask (B × 1 × S × S fp32), relative positions
// (S × S int64) and normalised relative embeddings.
Bytes checkpoint_argument_bytes(const ModelSpec& m, const Run& r, const Body& b) {
  const Count src = r.src, tgt = r.tgt;
  Bytes bytes{0};
  if (m.position_embedding == PositionKind::kRelativeBias) {
    const Stack enc = encoder_stack(m, r), dec = decoder_stack(m, r);
    if (b.encoder_layers > Count(1)) bytes += enc.heads * src * src * r.stream;
    if (b.decoder_layers > Count(1)) {
      bytes += dec.heads * tgt * tgt * r.stream;
      const bool zeros_already_kept = r.kernel == Kernel::kBiased && src.value() % kBiasAlignment == 0;
      if (!zeros_already_kept) bytes += dec.heads * tgt * src * r.act;
    }
  }
  if (!b.decoder_layers.is_zero()) {
    if (r.kernel == Kernel::kEager) bytes += r.batch * tgt * tgt * r.stream;
    if (!encoder_output_outside(m, r)) bytes += r.batch * src * r.hidden * norm_output_element(m, r);
  }
  if (m.attention_type == AttentionType::kDisentangled) {
    const Count rows = m.relative_embedding_rows();
    bytes += r.batch * src * src * kFp32Bytes + src * src * kInt64Bytes;
    if (r.autocast || r.dropout) bytes += rows * r.hidden * r.stream;
  }
  return bytes;
}

// What the blocks keep by checkpointing mode. Full (transformers' gradient_checkpointing, each
// block a torch.utils.checkpoint region) keeps each block's hidden-state input and the tensors
// every block is handed (checkpoint_argument_bytes).
Bytes blocks_bytes(const Config& c, const Run& r, const Body& b) {
  const ModelSpec& m = c.model;
  const std::string enc_prefix = m.is_encoder_decoder ? "encoder." : "";
  switch (c.training.checkpointing) {
    case Checkpointing::kFull:
      return r.batch * r.hidden * r.stream * (Count(r.src) * b.encoder_layers + Count(r.tgt) * b.decoder_layers) +
             checkpoint_argument_bytes(m, r, b);
    case Checkpointing::kSelective:
    case Checkpointing::kSelectiveOp:
      if (r.kernel == Kernel::kEager) {
        return without_core(b.terms, enc_prefix) * b.encoder_layers + without_core(b.terms, "decoder.") * b.decoder_layers;
      }
      break;
    case Checkpointing::kNone: break;
  }
  return b.encoder_layer * b.encoder_layers + b.decoder_layer * b.decoder_layers - b.first_block_saving;
}

// Backward's working memory: one layer's largest gradients (eager scores or the MLP), two
// hidden-size gradients, and the block recomputed under checkpointing.
Bytes backward_working_bytes(const Config& c, const Run& r, const Body& b) {
  const ModelSpec& m = c.model;
  const Stack enc = encoder_stack(m, r);
  const Count rows = max(r.src, builds_decoder(m) ? r.tgt : Count(0));
  const Bytes attention_grads =
      r.kernel == Kernel::kEager ? r.batch * enc.heads * rows * r.src * kFp32Bytes * 2 : Bytes{0};
  const Count ff = max(enc.ff, builds_decoder(m) ? decoder_stack(m, r).ff : Count(0));
  const Bytes mlp_grads = r.batch * rows * ff * r.act * 3;
  Bytes working = max(attention_grads, mlp_grads) + r.batch * rows * r.hidden * r.stream * 2;
  if (c.training.checkpointing == Checkpointing::kFull) working += b.largest_layer;
  else if (c.training.checkpointing != Checkpointing::kNone && r.kernel == Kernel::kEager) {
    const std::string enc_prefix = m.is_encoder_decoder ? "encoder." : "";
    working += max(stack_sum(b.terms, enc_prefix) - without_core(b.terms, enc_prefix),
                   stack_sum(b.terms, "decoder.") - without_core(b.terms, "decoder."));
  }
  return working;
}

}  // namespace

bool uses_encoder_activation_model(const ModelSpec& m) { return m.encoder_family(); }

ActivationModel encoder_activation_model(const Config& c, const ParameterCount& params) {
  (void)params;
  const Run r = make_run(c);
  const Body b = body(c, r);
  ActivationModel out;
  out.layer_terms = b.terms;
  out.every_block_recomputed = c.training.checkpointing == Checkpointing::kFull;  // never only some (validate.cpp)
  out.embedding_saved_bytes = outside_bytes(c.model, r, c.training.checkpointing);
  // Up to `pipeline` micro-batches are in flight on the first stage (1F1B).
  const std::int64_t in_flight =
      c.parallel.pipeline > 1 ? std::min(c.parallel.pipeline, c.training.grad_accum_steps) : 1;
  out.saved_bytes = (blocks_bytes(c, r, b) + out.embedding_saved_bytes) * in_flight;
  if (c.training.activation_offload) {
    // One block's tensors stay on the GPU while its backward runs: none under full checkpointing
    // (the recomputed block is backward's working memory), one block without its recomputed
    // attention core under selective.
    Bytes resident = b.largest_layer;
    if (c.training.checkpointing == Checkpointing::kFull) resident = Bytes{0};
    else if (c.training.checkpointing != Checkpointing::kNone && r.kernel == Kernel::kEager) {
      const std::string enc_prefix = c.model.is_encoder_decoder ? "encoder." : "";
      resident = max(without_core(b.terms, enc_prefix), without_core(b.terms, "decoder."));
    }
    out.saved_bytes = resident + out.embedding_saved_bytes;
    out.notes.push_back("Activation offload: saved tensors stream to CPU memory; about one layer stays on the GPU.");
  }
  out.layer_backward_working_bytes = backward_working_bytes(c, r, b);
  if (c.model.attention_type == AttentionType::kDisentangled &&
      c.training.implementation.attention != AttentionImpl::kEager) {
    out.notes.push_back("DeBERTa's disentangled attention runs eagerly (transformers has no fused kernel for it); "
                        "its scores are counted.");
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The head and the loss

namespace {

// A classification head's saved tensors before its loss. The pooled token is a view of the last
// hidden state, so its dense layer keeps that whole tensor alive unless autocast or dropout makes
// a B × d copy; tanh (DeBERTa's ContextPooler: GELU) keeps its output, which the output projection
// reads (a dropped copy and a mask under dropout).
Bytes pooled_head_bytes(const Run& r, Count rows_in_storage) {
  const Count pooled = r.batch * r.hidden;
  Bytes bytes{0};
  if (r.dropout) bytes += pooled * (kMaskBytes + r.stream);
  else bytes += r.autocast ? pooled * r.act : rows_in_storage * r.hidden * r.stream;
  bytes += pooled * r.act;  // the activation's output, read by the output projection
  if (r.dropout) bytes += pooled * (kMaskBytes + r.act);
  return bytes;
}

}  // namespace

LossModel encoder_loss_model(const Config& c) {
  const ModelSpec& m = c.model;
  const Run r = make_run(c);
  const Implementation impl = resolve_implementation(c);
  LossModel out;
  const bool seq2seq = builds_decoder(m);
  const Count rows = r.batch * (seq2seq ? r.tgt : r.src);  // tokens the head sees
  // The loss reads fp32 logits when the code upcasts them or autocast runs cross_entropy in fp32.
  const Bytes loss_element = impl.logits_dtype == LogitsDtype::kFp32 || r.autocast ? kFp32Bytes : r.act;
  Bytes head_saved{0};
  Count logit_rows = rows, outputs = 0;
  switch (m.output_head) {
    case OutputHead::kLm: {
      outputs = ceil_div(Count(m.vocab_size), r.tensor);
      if (m.lm_head_transform) {
        // dense (its input), GELU (its input), LayerNorm (input, fp32 under autocast, and stats),
        // then the vocabulary projection's input.
        head_saved += stream_input_bytes(m, r, rows, r.hidden, 1, 0) + rows * r.hidden * r.act +
                      rows * r.hidden * (r.autocast ? kFp32Bytes : r.act) + rows * kLayerNormStatsBytes;
      }
      const bool head_trainable =
          !r.lora || (r.targets & kLoraHead) || (c.training.finetune.modules_to_save & kSaveHead);
      if (head_trainable) head_saved += stream_input_bytes(m, r, rows, r.hidden, 1, kLoraHead);
      break;
    }
    case OutputHead::kSequenceClassification:
      outputs = m.num_labels;
      logit_rows = r.batch;
      head_saved += pooled_head_bytes(r, seq2seq ? Count(0) : rows);
      break;
    case OutputHead::kTokenClassification:
      outputs = m.num_labels;
      head_saved += r.dropout ? rows * r.hidden * (kMaskBytes + r.stream) : stream_input_bytes(m, r, rows, r.hidden, 1, 0);
      break;
    case OutputHead::kNone:
      if (m.pooler) head_saved += pooled_head_bytes(r, rows);
      out.forward_bytes = out.backward_bytes = out.peak_bytes = head_saved;
      return out;
  }
  const Bytes labels = logit_rows * kInt64Bytes;
  const Bytes log_probs = logit_rows * outputs * loss_element;
  const Bytes logits = logit_rows * outputs * r.act;
  const Bytes upcast = loss_element == r.act ? Bytes{0} : log_probs;  // the fp32 copy cross_entropy reads
  out.forward_bytes = head_saved + logits + upcast + log_probs + labels;
  out.grad_bytes = log_probs + (loss_element == r.act ? Bytes{0} : logits);
  out.head_input_bytes = rows * r.hidden * r.act;
  out.backward_bytes = head_saved + labels + max(log_probs * 3, out.grad_bytes);
  out.peak_bytes = max(out.forward_bytes, out.backward_bytes);
  return out;
}

}  // namespace memfit
