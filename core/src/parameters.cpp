#include "memfit/parameters.hpp"

#include <algorithm>

#include "vision.hpp"

namespace memfit {

namespace {

class GroupBuilder {
 public:
  explicit GroupBuilder(std::vector<TensorGroup>& out) : out_(out) {}

  // A linear layer out×in, `count` times, with an optional bias; `in_block` marks matmuls inside
  // the transformer blocks (the ones QLoRA quantises and autocast casts).
  void linear(Component c, const char* name, Count out_features, Count in_features, Count count, bool bias,
              unsigned lora_target, bool in_block = true) {
    out_.push_back({c, name, out_features, in_features, count, in_block, lora_target, layer_, mixer_});
    if (bias) out_.push_back({c, name, out_features, 0, count, false, 0, layer_, mixer_});
  }
  void vector(Component c, const char* name, Count size, Count count) {
    out_.push_back({c, name, size, 0, count, false, 0, layer_, mixer_});
  }
  void matrix(Component c, const char* name, Count rows, Count cols, Count count, unsigned lora_target = 0) {
    out_.push_back({c, name, rows, cols, count, false, lora_target, layer_, mixer_});
  }
  // LayerNorm has weight and (optionally) bias; RMSNorm has a weight only; OLMo-1's has neither.
  void norm(const ModelSpec& m, Component c, const char* name, Count size, Count count) {
    if (!m.norm_weight) return;
    vector(c, name, size, count);
    if (m.norm == NormKind::kLayerNorm && m.norm_bias) vector(c, name, size, count);
  }

  void set_layer(LayerKind kind) { layer_ = kind; }
  void set_mixer(Mixer mixer) { mixer_ = mixer; }

 private:
  std::vector<TensorGroup>& out_;
  LayerKind layer_ = LayerKind::kNone;
  Mixer mixer_ = Mixer::kAll;
};

// The heads of one attention: how many query and key/value heads, and the size of each.
struct HeadShape {
  Count heads, kv_heads, head_dim;
};

HeadShape self_attention_heads(const ModelSpec& m) {
  return {m.num_attention_heads, m.kv_heads(), m.head_size()};
}

// An encoder-decoder's decoder heads: decoder_attention_heads (BART), with T5's explicit d_kv
// (head_dim) or else hidden / heads.
HeadShape decoder_attention_heads(const ModelSpec& m) {
  const std::int64_t heads = m.decoder_heads();
  return {heads, heads, m.head_dim > 0 ? Count(m.head_dim) : Count(m.hidden_size / std::max<std::int64_t>(heads, 1))};
}

// Standard multi-head / grouped-query attention (Vaswani et al. 2017; Ainslie et al. 2023 for GQA):
// q: d → h·d_head, k and v: d → h_kv·d_head, o: h·d_head → d. A decoder's cross-attention has the
// same four projections, reading the encoder output for k and v.
// Qwen3.5's q_proj also projects the output gate (attention_output_gate): twice the queries' width.
void projection_parameters(const ModelSpec& m, Component c, const HeadShape& shape, Count layers, GroupBuilder& b,
                           bool output_gate = false) {
  const Count d = m.hidden_size, q_width = shape.heads * shape.head_dim, kv_width = shape.kv_heads * shape.head_dim;
  const bool qkv_bias = m.attention_bias || m.qkv_bias;
  b.linear(c, "q_proj", output_gate ? q_width * 2 : q_width, d, layers, qkv_bias, kLoraQ);
  b.linear(c, "k_proj", kv_width, d, layers, qkv_bias, kLoraK);
  b.linear(c, "v_proj", kv_width, d, layers, qkv_bias, kLoraV);
  b.linear(c, "o_proj", d, q_width, layers, m.attention_bias, kLoraO);
}

void attention_parameters(const ModelSpec& m, Count layers, GroupBuilder& b) {
  const HeadShape shape = self_attention_heads(m);
  projection_parameters(m, Component::kAttention, shape, layers, b, m.attention_output_gate);
  if (m.attention_sinks) b.vector(Component::kAttention, "sinks", m.num_attention_heads, layers);
  const Count q_width = shape.heads * shape.head_dim, kv_width = shape.kv_heads * shape.head_dim;
  if (m.qk_norm == QkNorm::kPerHead) {  // Qwen3: RMSNorm over each head's d_head
    b.norm(m, Component::kAttention, "q_norm", m.head_size(), layers);
    b.norm(m, Component::kAttention, "k_norm", m.head_size(), layers);
  } else if (m.qk_norm == QkNorm::kFullWidth) {  // OLMo-2: over the whole projection width
    b.norm(m, Component::kAttention, "q_norm", q_width, layers);
    b.norm(m, Component::kAttention, "k_norm", kv_width, layers);
  }
}

// DeBERTa's disentangled attention (He et al. 2021, §3.1; transformers' DisentangledSelfAttention):
// content q, k, v (with bias) and the output dense; without share_att_key, separate projections of
// the relative embeddings: pos_key_proj for content-to-position, pos_query_proj for
// position-to-content.
void disentangled_attention_parameters(const ModelSpec& m, Count layers, GroupBuilder& b) {
  projection_parameters(m, Component::kAttention, self_attention_heads(m), layers, b);
  if (m.share_att_key) return;
  const Count d = m.hidden_size, width = Count(m.num_attention_heads) * m.head_size();
  if (m.pos_att_type != PosAttType::kP2c) b.linear(Component::kAttention, "pos_key_proj", width, d, layers, true, 0);
  if (m.pos_att_type != PosAttType::kC2p) b.linear(Component::kAttention, "pos_query_proj", width, d, layers, true, 0);
}

// DeepSeek-V2/V3 multi-head latent attention (DeepSeek-V2 report, §2.1): queries through an
// optional low-rank bottleneck, keys and values through a shared compressed latent of rank
// kv_lora_rank plus a decoupled rotary key of qk_rope_head_dim shared by all heads.
void latent_attention_parameters(const ModelSpec& m, Count layers, GroupBuilder& b) {
  const Count d = m.hidden_size, h = m.num_attention_heads;
  const Count qk_head = Count(m.qk_nope_head_dim) + m.qk_rope_head_dim;
  if (m.q_lora_rank > 0) {
    b.linear(Component::kAttention, "q_a_proj", m.q_lora_rank, d, layers, m.attention_bias, kLoraQ);
    b.vector(Component::kAttention, "q_a_layernorm", m.q_lora_rank, layers);
    b.linear(Component::kAttention, "q_b_proj", h * qk_head, m.q_lora_rank, layers, false, kLoraQ);
  } else {
    b.linear(Component::kAttention, "q_proj", h * qk_head, d, layers, false, kLoraQ);
  }
  b.linear(Component::kAttention, "kv_a_proj_with_mqa", Count(m.kv_lora_rank) + m.qk_rope_head_dim, d, layers,
           m.attention_bias, kLoraK);
  b.vector(Component::kAttention, "kv_a_layernorm", m.kv_lora_rank, layers);
  b.linear(Component::kAttention, "kv_b_proj", h * (Count(m.qk_nope_head_dim) + m.v_head_dim), m.kv_lora_rank, layers,
           false, kLoraV);
  b.linear(Component::kAttention, "o_proj", d, h * m.v_head_dim, layers, m.attention_bias, kLoraO);
}

// A Gated DeltaNet token mixer (transformers' Qwen3_5GatedDeltaNet): q, k and v projected together
// (2·Hk·K + Hv·V), the output gate z (Hv·V), beta's and the decay's inputs b and a (Hv each; Qwen3-Next's
// Qwen3NextGatedDeltaNet: q, k, v and z in one linear, b and a in another), a
// depthwise causal convolution over the q/k/v channels (weight [channels, 1, kernel], no bias),
// dt_bias and A_log (Hv each), the gated RMSNorm's weight over one value head (V) and out_proj.
void linear_attention_parameters(const ModelSpec& m, Count layers, GroupBuilder& b) {
  const Count d = m.hidden_size, value = m.linear_value_width(), hv = m.linear_num_value_heads;
  const Count channels = Count(m.linear_key_width()) * 2 + value;
  if (m.linear_attention_fused) {  // Qwen3-Next: the same widths in two linears
    b.linear(Component::kAttention, "in_proj_qkvz", channels + value, d, layers, false, kLoraLinearAttn);
    b.linear(Component::kAttention, "in_proj_ba", hv * 2, d, layers, false, kLoraLinearAttn);
  } else {
    b.linear(Component::kAttention, "in_proj_qkv", channels, d, layers, false, kLoraLinearAttn);
    b.linear(Component::kAttention, "in_proj_z", value, d, layers, false, kLoraLinearAttn);
    b.linear(Component::kAttention, "in_proj_b", hv, d, layers, false, kLoraLinearAttn);
    b.linear(Component::kAttention, "in_proj_a", hv, d, layers, false, kLoraLinearAttn);
  }
  b.matrix(Component::kAttention, "conv1d", channels, m.linear_conv_kernel_dim, layers);
  b.vector(Component::kAttention, "dt_bias", hv, layers);
  b.vector(Component::kAttention, "A_log", hv, layers);
  b.vector(Component::kAttention, "linear_attn.norm", m.linear_value_head_dim, layers);
  b.linear(Component::kAttention, "out_proj", d, value, layers, false, kLoraLinearAttn);
}

// One MLP of inner size ff: plain (up, act, down) or gated (down(act(gate x) · up x)).
void mlp_parameters(const ModelSpec& m, Component c, Count ff, Count count, GroupBuilder& b) {
  const Count d = m.hidden_size;
  if (m.mlp == MlpKind::kGated) b.linear(c, "gate_proj", ff, d, count, m.mlp_bias, kLoraGate);
  b.linear(c, "up_proj", ff, d, count, m.mlp_bias, kLoraUp);
  b.linear(c, "down_proj", d, ff, count, m.mlp_bias, kLoraDown);
  // xIELU's alpha_p and alpha_n (transformers' XIELUActivation: one element each) in every MLP.
  if (m.hidden_act == HiddenAct::kXielu) b.vector(c, "act_fn.alpha", 1, count * 2);
}

// A mixture-of-experts MLP (Shazeer et al. 2017; Mixtral, DeepSeekMoE): a router d → E, E routed
// experts, optional shared experts that every token uses, and Qwen2-MoE's shared-expert gate.
void moe_parameters(const ModelSpec& m, Count layers, GroupBuilder& b) {
  // Not a quantised linear: bitsandbytes skips the router (transformers 5: not an nn.Linear), but
  // LoRA can target it.
  b.matrix(Component::kRouter, "router", m.num_experts, m.hidden_size, layers, kLoraRouter);
  if (m.router_bias) b.vector(Component::kRouter, "router_bias", m.num_experts, layers);
  mlp_parameters(m, Component::kExperts, m.moe_intermediate_size, layers * m.num_experts, b);
  const Count shared_ff = m.shared_expert_intermediate_size > 0
                              ? Count(m.shared_expert_intermediate_size)
                              : Count(m.num_shared_experts) * m.moe_intermediate_size;
  if (shared_ff.value() > 0) mlp_parameters(m, Component::kSharedExperts, shared_ff, layers, b);
  if (m.shared_expert_gate) b.matrix(Component::kSharedExperts, "shared_expert_gate", 1, m.hidden_size, layers);
}

// The blocks' token mixer: a Gated DeltaNet, or the model's attention (kAll, kFullAttention).
void mixer_parameters(const ModelSpec& m, Count layers, GroupBuilder& b, Mixer mixer) {
  if (mixer == Mixer::kLinearAttention) linear_attention_parameters(m, layers, b);
  else if (m.attention_type == AttentionType::kMla) latent_attention_parameters(m, layers, b);
  else if (m.attention_type == AttentionType::kDisentangled) disentangled_attention_parameters(m, layers, b);
  else attention_parameters(m, layers, b);
}

void block_parameters(const ModelSpec& m, Count layers, bool moe, GroupBuilder& b, Mixer mixer = Mixer::kAll) {
  if (layers.value() == 0) return;
  mixer_parameters(m, layers, b, mixer);
  if (moe) moe_parameters(m, layers, b);
  else mlp_parameters(m, Component::kMlp, m.intermediate_size, layers, b);
  if (m.norms_per_block > 0) b.norm(m, Component::kBlockNorms, "block_norm", m.hidden_size, layers * m.norms_per_block);
}

// An encoder-decoder's decoder block: self-attention, cross-attention over the encoder output
// (each with its own norm: T5LayerCrossAttention, BART's encoder_attn_layer_norm) and the MLP.
void decoder_block_parameters(const ModelSpec& m, Count layers, GroupBuilder& b) {
  if (layers.value() == 0) return;
  const HeadShape heads = decoder_attention_heads(m);
  projection_parameters(m, Component::kAttention, heads, layers, b);
  projection_parameters(m, Component::kCrossAttention, heads, layers, b);
  mlp_parameters(m, Component::kMlp, m.decoder_ff(), layers, b);
  b.norm(m, Component::kBlockNorms, "block_norm", m.hidden_size, layers * (m.norms_per_block + 1));
}

Count sum(const std::vector<TensorGroup>& groups) {
  Count total = 0;
  for (const TensorGroup& g : groups) total += g.elements();
  return total;
}

// How many stacks an encoder-decoder builds: both, or the encoder alone under a token
// classification head (T5ForTokenClassification is T5EncoderModel + a classifier).
bool builds_decoder(const ModelSpec& m) {
  return m.is_encoder_decoder && m.output_head != OutputHead::kTokenClassification;
}

// The token embedding (one table: an encoder-decoder's encoder and decoder share it, as
// transformers ties encoder.embed_tokens and decoder.embed_tokens to `shared`), and per stack the
// learned position table (BART: max_position_embeddings + 2 rows each), token types and the
// embedding norm.
void embedding_parameters(const ModelSpec& m, Count stacks, GroupBuilder& b) {
  const Count d = m.hidden_size;
  b.matrix(Component::kTokenEmbedding, "embed_tokens", m.vocab_size, d, 1);
  if (m.position_embedding == PositionKind::kLearned) {
    b.matrix(Component::kPositionEmbedding, "embed_positions",
             Count(m.max_position_embeddings) + m.position_embedding_offset, d, stacks);
  }
  if (m.type_vocab_size > 0) b.matrix(Component::kTokenTypeEmbedding, "token_type_embeddings", m.type_vocab_size, d, 1);
  if (m.embedding_norm) b.norm(m, Component::kEmbeddingNorm, "embedding_norm", d, stacks);
}

// Relative positions: T5's bias table (buckets × heads, in the first block of each stack: the
// encoder's bidirectional one and the decoder's causal one); DeBERTa's relative embeddings
// (2 × span rows of hidden size, shared by every layer) and their LayerNorm.
void relative_position_parameters(const ModelSpec& m, GroupBuilder& b) {
  if (m.position_embedding == PositionKind::kRelativeBias) {
    b.matrix(Component::kRelativePosition, "relative_attention_bias", m.relative_attention_num_buckets,
             m.num_attention_heads, 1);
    if (builds_decoder(m)) {
      b.matrix(Component::kRelativePosition, "decoder_relative_attention_bias", m.relative_attention_num_buckets,
               m.decoder_heads(), 1);
    }
  }
  if (m.attention_type == AttentionType::kDisentangled) {
    b.matrix(Component::kRelativePosition, "rel_embeddings", m.relative_embedding_rows(), m.hidden_size, 1);
  }
  // DeBERTa's encoder builds this LayerNorm whenever norm_rel_ebd names it, relative attention or not.
  if (m.norm_rel_ebd) b.norm(m, Component::kRelativePosition, "rel_embeddings_norm", m.hidden_size, 1);
}

// The task head. lm: the vocabulary projection (absent when tied to the token embedding), its
// bias, and an encoder's masked-LM transform (dense with bias, then a norm); none: the pooler of
// the bare model; sequence classification: on an encoder dense d→d and out_proj d→num_labels, both
// with bias (BERT's pooler + classifier count the same), on a decoder the score d→num_labels
// without bias (modeling_layers.py GenericForSequenceClassification; GPT-2's, OPT's, GPT-NeoX's,
// Falcon's, BLOOM's and GPTBigCode's own classes build the same); token classification:
// d→num_labels with bias (GenericForTokenClassification's token_classification_bias default).
void head_parameters(const ModelSpec& m, GroupBuilder& b) {
  const Count d = m.hidden_size;
  switch (m.output_head) {
    case OutputHead::kLm:
      if (m.lm_head_transform) {
        b.linear(Component::kHead, "lm_head.transform", d, d, 1, true, 0, false);
        b.norm(m, Component::kHead, "lm_head.transform_norm", d, 1);
      }
      if (!m.tie_word_embeddings) b.linear(Component::kHead, "lm_head", m.vocab_size, d, 1, false, kLoraHead, false);
      if (m.lm_head_bias) b.vector(Component::kHead, "lm_head.bias", m.vocab_size, 1);
      break;
    case OutputHead::kNone:
      if (m.pooler) b.linear(Component::kPooler, "pooler", d, d, 1, true, 0, false);
      break;
    case OutputHead::kSequenceClassification:
      if (!m.encoder_family()) {
        b.linear(Component::kClassifier, "score", m.num_labels, d, 1, false, 0, false);
        break;
      }
      b.linear(Component::kClassifier, "classifier.dense", d, d, 1, true, 0, false);
      b.linear(Component::kClassifier, "classifier.out_proj", m.num_labels, d, 1, true, 0, false);
      break;
    case OutputHead::kTokenClassification:
      b.linear(Component::kClassifier, "classifier", m.num_labels, d, 1, true, 0, false);
      break;
  }
}

// An encoder-decoder's two stacks: L_e encoder blocks and L_d decoder blocks, each stack with its
// final norm (T5; BART has none). Per-layer sizes are reported per stack; the larger one is the
// unit ZeRO-3 gathers.
void encoder_decoder_blocks(const ModelSpec& m, ParameterCount& out, GroupBuilder& b) {
  out.encoder_layer_count = m.num_hidden_layers;
  out.decoder_layer_count = builds_decoder(m) ? m.decoder_layers() : 0;
  std::vector<TensorGroup> one;
  GroupBuilder one_builder(one);
  block_parameters(m, 1, false, one_builder);
  out.per_encoder_layer_count = sum(one);
  one.clear();
  decoder_block_parameters(m, 1, one_builder);
  out.per_decoder_layer_count = out.decoder_layer_count.is_zero() ? Count(0) : sum(one);
  out.dense_layer_count = out.encoder_layer_count + out.decoder_layer_count;
  out.per_dense_layer_count = max(out.per_encoder_layer_count, out.per_decoder_layer_count);
  block_parameters(m, out.encoder_layer_count, false, b);
  decoder_block_parameters(m, out.decoder_layer_count, b);
}

// A hybrid stack (Qwen3.5): every block has the same MLP (dense, or experts: validate.cpp), and
// either attention or a Gated DeltaNet. One block's size is the larger kind's.
void hybrid_stack_blocks(const ModelSpec& m, ParameterCount& out, GroupBuilder& b) {
  const bool moe = m.num_experts > 0;
  const Count layers = m.num_hidden_layers, linear = std::min(m.linear_attention_layers, m.num_hidden_layers);
  (moe ? out.moe_layer_count : out.dense_layer_count) = layers;
  out.linear_layer_count = linear;
  std::vector<TensorGroup> one;
  GroupBuilder one_builder(one);
  block_parameters(m, 1, moe, one_builder);
  Count per_block = sum(one);
  one.clear();
  block_parameters(m, 1, moe, one_builder, Mixer::kLinearAttention);
  per_block = max(per_block, sum(one));
  (moe ? out.per_moe_layer_count : out.per_dense_layer_count) = per_block;

  // The attention's groups (and the Gated DeltaNet's) are their kind's; the MLP's and the norms'
  // are every block's, counted once over all of them.
  b.set_layer(moe ? LayerKind::kMoe : LayerKind::kDense);
  for (const Mixer mixer : {Mixer::kFullAttention, Mixer::kLinearAttention}) {
    const Count blocks = mixer == Mixer::kLinearAttention ? linear : layers - linear;
    if (blocks.is_zero()) continue;
    b.set_mixer(mixer);
    mixer_parameters(m, blocks, b, mixer);
  }
  b.set_mixer(Mixer::kAll);
  if (moe) moe_parameters(m, layers, b);
  else mlp_parameters(m, Component::kMlp, m.intermediate_size, layers, b);
  if (m.norms_per_block > 0) b.norm(m, Component::kBlockNorms, "block_norm", m.hidden_size, layers * m.norms_per_block);
  b.set_layer(LayerKind::kNone);
}

// A decoder-only or encoder-only stack: dense blocks, then mixture-of-experts blocks.
void single_stack_blocks(const ModelSpec& m, ParameterCount& out, GroupBuilder& b) {
  if (m.hybrid_attention()) {
    hybrid_stack_blocks(m, out, b);
    return;
  }
  const std::int64_t dense_layers =
      m.num_experts > 0 ? std::min(m.first_k_dense_replace, m.num_hidden_layers) : m.num_hidden_layers;
  out.dense_layer_count = dense_layers;
  out.moe_layer_count = Count(m.num_hidden_layers) - dense_layers;

  // One layer of each kind, to report per-layer sizes; then the whole stack.
  std::vector<TensorGroup> one;
  GroupBuilder one_builder(one);
  block_parameters(m, 1, false, one_builder);
  out.per_dense_layer_count = sum(one);
  if (m.num_experts > 0) {
    one.clear();
    block_parameters(m, 1, true, one_builder);
    out.per_moe_layer_count = sum(one);
  }
  b.set_layer(LayerKind::kDense);
  block_parameters(m, out.dense_layer_count, false, b);
  b.set_layer(LayerKind::kMoe);
  block_parameters(m, out.moe_layer_count, true, b);
  b.set_layer(LayerKind::kNone);
}

}  // namespace

const char* to_string(Component c) {
  switch (c) {
    case Component::kTokenEmbedding: return "token_embedding";
    case Component::kPositionEmbedding: return "position_embedding";
    case Component::kTokenTypeEmbedding: return "token_type_embedding";
    case Component::kEmbeddingNorm: return "embedding_norm";
    case Component::kAttention: return "attention";
    case Component::kMlp: return "mlp";
    case Component::kRouter: return "router";
    case Component::kExperts: return "experts";
    case Component::kSharedExperts: return "shared_experts";
    case Component::kBlockNorms: return "block_norms";
    case Component::kFinalNorm: return "final_norm";
    case Component::kHead: return "head";
    case Component::kCrossAttention: return "cross_attention";
    case Component::kRelativePosition: return "relative_position";
    case Component::kClassifier: return "classifier";
    case Component::kPooler: return "pooler";
    case Component::kVisionTower: return "vision_tower";
    case Component::kVisionProjector: return "vision_projector";
  }
  return "unknown";
}

bool is_block_component(Component c) {
  switch (c) {
    case Component::kAttention:
    case Component::kCrossAttention:
    case Component::kMlp:
    case Component::kRouter:
    case Component::kExperts:
    case Component::kSharedExperts:
    case Component::kBlockNorms: return true;
    default: return false;
  }
}

Count ParameterCount::component_count(Component c) const {
  Count total = 0;
  for (const TensorGroup& g : groups) {
    if (g.component == c) total += g.elements();
  }
  return total;
}

Count ParameterCount::per_layer(const TensorGroup& g) const {
  if (g.mixer == Mixer::kLinearAttention) return g.count / max(linear_layer_count, Count(1));
  if (g.mixer == Mixer::kFullAttention) {
    return g.count / max(Count(layers) - linear_layer_count, Count(1));
  }
  switch (g.layer) {
    case LayerKind::kDense: return g.count / max(dense_layer_count, Count(1));
    case LayerKind::kMoe: return g.count / max(moe_layer_count, Count(1));
    case LayerKind::kNone: break;
  }
  return g.count;
}

Count ParameterCount::per_layer_in(const TensorGroup& g, bool linear_block) const {
  if (g.mixer != Mixer::kAll && (g.mixer == Mixer::kLinearAttention) != linear_block) return 0;
  return per_layer(g);
}

bool ParameterCount::is_linear_layer(std::int64_t index) const {
  const std::int64_t linear = linear_layer_count.value(), full = layers - linear;
  if (linear <= 0 || layers <= 0) return false;
  // Block i attends when a new one of the `full` attention blocks ends at it: floor((i+1)·full/L)
  // steps up (every 4th with 3 of 4 linear: indices 3, 7, 11, ...).
  return (index + 1) * full / layers == index * full / layers;
}

bool ParameterCount::in_layer(const TensorGroup& g, std::int64_t index) const {
  if (g.mixer == Mixer::kAll) return true;
  return is_linear_layer(index) == (g.mixer == Mixer::kLinearAttention);
}

Count ParameterCount::block_count() const {
  Count total = 0;
  for (const TensorGroup& g : groups) {
    if (is_block_component(g.component)) total += g.elements();
  }
  return total;
}


ParameterCount count_parameters(const ModelSpec& m) {
  ParameterCount out;
  GroupBuilder b(out.groups);
  const Count stacks = builds_decoder(m) ? 2 : 1;
  out.layers = m.num_hidden_layers;
  embedding_parameters(m, stacks, b);
  if (m.is_encoder_decoder) encoder_decoder_blocks(m, out, b);
  else single_stack_blocks(m, out, b);
  if (m.final_norm) b.norm(m, Component::kFinalNorm, "final_norm", m.hidden_size, stacks);
  relative_position_parameters(m, b);
  head_parameters(m, b);

  out.total_count = sum(out.groups);
  // Per token, an MoE layer runs experts_per_tok of its experts.
  Count inactive = 0;
  if (m.num_experts > 0 && out.moe_layer_count.value() > 0) {
    const Count per_expert = out.component_count(Component::kExperts) / (out.moe_layer_count * m.num_experts);
    inactive = out.moe_layer_count * (Count(m.num_experts) - m.num_experts_per_tok) * per_expert;
  }
  out.active_count = out.total_count - inactive;
  vision_parameters(m, out.vision);
  out.vision_count = sum(out.vision);
  out.overflow = out.total_count.overflow() || out.active_count.overflow() || out.vision_count.overflow();
  return out;
}

}  // namespace memfit
