// Exact parameter counts: what `sum(p.numel() for p in model.parameters())` gives for a real
// PyTorch / Hugging Face module built from the same description. Buffers (rotary inv_freq,
// causal masks) are not parameters and are never counted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/units.hpp"

namespace memfit {

enum class Component {
  kTokenEmbedding, kPositionEmbedding, kTokenTypeEmbedding, kEmbeddingNorm,
  kAttention, kMlp, kRouter, kExperts, kSharedExperts, kBlockNorms,
  kFinalNorm, kHead,
  kCrossAttention,    // an encoder-decoder's decoder attending to the encoder output
  kRelativePosition,  // T5's relative bias tables, DeBERTa's relative embeddings (and their norm)
  kClassifier,        // a classification head (its dense layer and its output projection)
  kPooler,            // the last of the language model's: the JSON lists components up to it
  kVisionTower,       // a multimodal model's vision encoder (ParameterCount::vision)
  kVisionProjector,   // and its projector into the language model (Qwen's mergers, multi_modal_projector)
};
const char* to_string(Component c);
bool is_block_component(Component c);  // inside the transformer blocks
// The input side outside the blocks (token, position and token-type embeddings, an embedding
// norm): on the first pipeline stage, and trained with the embedding.
inline bool is_embedding(Component c) {
  return c == Component::kTokenEmbedding || c == Component::kPositionEmbedding ||
         c == Component::kTokenTypeEmbedding || c == Component::kEmbeddingNorm;
}

// A multimodal model's vision encoder or projector (ParameterCount::vision; in `groups` where they
// train: with_trained_vision).
inline bool is_vision(Component c) { return c == Component::kVisionTower || c == Component::kVisionProjector; }

// Which blocks a tensor group belongs to: none (embeddings, final norm, head), the dense blocks or
// the mixture-of-experts blocks; its count is then layers × tensors per layer. An encoder-decoder's
// blocks are of two shapes (the decoder's have a cross-attention) and are all kNone: such a model
// is placed whole (validate.cpp refuses pipeline parallelism for it).
enum class LayerKind { kNone, kDense, kMoe };
// Which blocks' token mixer a group belongs to: every block's (kAll: the MLP, the norms, and the
// attention of a model whose blocks all attend), or, in a hybrid model (Qwen3.5), only the
// full-attention blocks' or only the Gated DeltaNet blocks'.
enum class Mixer { kAll, kFullAttention, kLinearAttention };

// A set of identical parameter tensors: `count` tensors of shape [rows, cols] (cols == 0: a
// vector of `rows`). Shapes matter beyond the count: Adafactor factors by rows and columns,
// 8-bit optimizers keep small tensors in 32 bit, LoRA attaches to linear layers by shape.
struct TensorGroup {
  Component component;
  const char* name;        // e.g. "q_proj.weight"
  Count rows;              // PyTorch Linear weight shape is [out_features, in_features]
  Count cols;              // 0 for vectors (biases, norms)
  Count count;             // how many such tensors in the whole model
  bool linear = false;     // a matmul weight inside the blocks (quantised by QLoRA, cast by autocast)
  unsigned lora_target = 0;  // the LoraTarget bit this weight answers to, 0 if none
  LayerKind layer = LayerKind::kNone;
  Mixer mixer = Mixer::kAll;
  // A vision tower's group inside a module its classes list in _no_split_modules (its blocks,
  // SigLIP's and CLIP's embeddings, SigLIP's pooling head): an FSDP unit of its own, outside the
  // root unit, under accelerate's transformer auto-wrap.
  bool unit = false;
  // A vision tower's tensor a matmul or convolution reads (weights and biases of its linears and
  // patch convolutions, Gemma 3's projection): autocast casts it when images run through the tower.
  bool cast = false;
  Count elements_each() const { return cols.is_zero() ? rows : rows * cols; }
  Count elements() const { return elements_each() * count; }
};

struct ParameterCount {
  std::vector<TensorGroup> groups;
  Count total_count;
  Count dense_layer_count;      // blocks with a dense MLP
  Count moe_layer_count;        // blocks with experts
  Count linear_layer_count;     // of all blocks, those with a Gated DeltaNet instead of attention
  Count per_dense_layer_count;  // parameters in one dense block
  Count per_moe_layer_count;    // parameters in one MoE block
  Count encoder_layer_count;    // an encoder-decoder's stacks (0 otherwise)
  Count decoder_layer_count;
  Count per_encoder_layer_count;
  Count per_decoder_layer_count;
  Count active_count;           // parameters used per token (MoE: routed experts_per_tok only)
  bool overflow = false;

  Count component_count(Component c) const;
  Count block_count() const;  // everything inside the transformer blocks
  // How many of a block group's tensors one layer holds (its count over the layers of its kind).
  Count per_layer(const TensorGroup& g) const;
  // The same in a block whose mixer is linear attention or not: 0 where the group is the other
  // mixer's (a hybrid model's blocks are of two sizes; the larger is what one unit gathers).
  Count per_layer_in(const TensorGroup& g, bool linear_block) const;
  // Whether block `index` (0-based) of the stack holds the group: the Gated DeltaNet blocks are
  // spread evenly, the full-attention ones closing each span (Qwen3.5: layers 3, 7, 11, ...).
  bool in_layer(const TensorGroup& g, std::int64_t index) const;
  bool is_linear_layer(std::int64_t index) const;
  std::int64_t layers = 0;      // blocks in the stack (the decoder-only / encoder-only ones)
  // A multimodal model's vision encoder and projector (model.vision_type), kept out of `groups` and
  // of every count above: what is held frozen. The parts a full fine-tune trains
  // (training.finetune.train_vision) move into `groups` for the memory model (with_trained_vision).
  std::vector<TensorGroup> vision;
  Count vision_count;
};

ParameterCount count_parameters(const ModelSpec& model);

}  // namespace memfit
