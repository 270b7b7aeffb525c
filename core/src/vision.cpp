// A multimodal model's vision encoder and projector (model.vision_type): its tensors, counted as
// transformers' classes build them, and the bytes it holds frozen beside the language model. Apart
// from parameters.cpp and placement.cpp, and compiled for size in the planner's fast core
// (core/CMakeLists.txt): a step never runs it, so nothing here is in a hot loop.
#include "vision.hpp"

#include <algorithm>

#include "finetune.hpp"
#include "memfit/implementation.hpp"
#include "optimizer_states.hpp"
#include "peft.hpp"
#include "text.hpp"

namespace memfit {

namespace {

// TensorGroups of the tower (no LoRA target, outside the language model's blocks: layer kNone).
// `linear` marks nn.Linear weights, which a bitsandbytes base quantises. `unit` marks the groups
// inside a module the classes list in _no_split_modules (the blocks; SigLIP's and CLIP's
// embeddings; SigLIP's pooling head), which FSDP's transformer auto-wrap (accelerate's default
// policy, from the model's _no_split_modules) gives units of their own, never gathered by a
// text-only step. The rest (Qwen's patch embedding and mergers, Pixtral's patch convolution, the
// projectors, the outer norms) sits in the root unit, gathered with it. The projector's groups are
// Component::kVisionProjector: the modules LLaMA-Factory's freeze_multi_modal_projector and
// ms-swift's freeze_aligner name (Qwen's merger and Qwen3-VL's deepstack mergers, the wrappers'
// multi_modal_projector), the rest kVisionTower.
struct Builder {
  std::vector<TensorGroup>& out;
  bool unit = false;
  void push(TensorGroup g, bool cast) {
    g.unit = unit;
    g.cast = cast;
    out.push_back(g);
  }
  void linear(Component c, const char* name, Count rows, Count cols, Count count, bool bias) {
    push({c, name, rows, cols, count, true, 0, LayerKind::kNone, Mixer::kAll}, true);
    if (bias) vector(c, name, rows, count, true);
  }
  // `cast`: read by a matmul or convolution (a convolution's weight and bias, Gemma 3's projection).
  void vector(Component c, const char* name, Count size, Count count, bool cast = false) {
    push({c, name, size, 0, count, false, 0, LayerKind::kNone, Mixer::kAll}, cast);
  }
  void matrix(Component c, const char* name, Count rows, Count cols, Count count, bool cast = false) {
    push({c, name, rows, cols, count, false, 0, LayerKind::kNone, Mixer::kAll}, cast);
  }
};

// A size of 0 takes `fallback`: the released checkpoints'.
Count size_or(std::int64_t value, std::int64_t fallback) { return Count(value > 0 ? value : fallback); }

// How a tower's tensor is stored under this run's base: only bitsandbytes quantises the tower's
// nn.Linear weights (a GPTQ checkpoint quantises the language model's layers only).
TensorGroup as_stored(TensorGroup g, const Config& c) {
  g.linear = g.linear && is_peft(c) && c.training.finetune.quant_method == QuantMethod::kBitsandbytes;
  return g;
}

// The encoder: Gemma 3's SigLIP, Mistral 3's Pixtral, or under LLaVA the one vision_config names
// (model.vision_encoder: CLIP by default).
VisionEncoder vit_encoder(const ModelSpec& m) {
  return m.vision_type == VisionTower::kGemma3 || m.vision_type == VisionTower::kPaliGemma ? VisionEncoder::kSiglip
         : m.vision_type == VisionTower::kMistral3 ? VisionEncoder::kPixtral
         : m.vision_encoder == VisionEncoder::kAuto ? VisionEncoder::kClip
                                                    : m.vision_encoder;
}

// SigLIP's and CLIP's learned positions: one a patch (CLIP's one more, for its class token); 0
// taking the released checkpoints' (CLIP ViT-L/14 at 336 pixels, LLaVA-Interleave's SigLIP at 384,
// Gemma 3's at 896, PaliGemma's at 224).
Count vit_positions(const ModelSpec& m) {
  const std::int64_t released = vit_encoder(m) == VisionEncoder::kClip       ? 577
                                : m.vision_type == VisionTower::kLlava       ? 729
                                : m.vision_type == VisionTower::kPaliGemma   ? 256
                                                                             : 4096;
  return size_or(m.vision_num_position_embeddings, released);
}

// The plain ViTs' encoder and sizes, 0 taking the released checkpoints' (Gemma 3's and
// LLaVA-Interleave's SigLIP so400m, at 896 and 384 pixels; LLaVA-1.5's CLIP ViT-L/14 at 336; Pixtral's
// encoder, Mistral 3's with 14-pixel patches and Pixtral-12B's with 16).
struct VitSizes {
  VisionEncoder encoder;
  Count depth, e, ff, heads, patch, channels;
};
VitSizes vit_sizes(const ModelSpec& m) {
  const VisionEncoder encoder = vit_encoder(m);
  const bool siglip = encoder == VisionEncoder::kSiglip;
  return {encoder,
          size_or(m.vision_depth, siglip ? 27 : 24),
          size_or(m.vision_hidden_size, siglip ? 1152 : 1024),
          size_or(m.vision_intermediate_size, siglip ? 4304 : 4096),
          size_or(m.vision_num_heads, 16),
          size_or(m.vision_patch_size, m.vision_type == VisionTower::kLlava && encoder == VisionEncoder::kPixtral ? 16 : 14),
          size_or(m.vision_in_channels, 3)};
}

// The plain ViTs other wrappers load, as transformers 5.24 builds them, with their projectors (LLaVA
// over whichever of them its vision_config names: model.vision_encoder):
// Gemma 3's SigLIP (SiglipVisionModel: a biased patch Conv2d, a learned position per patch, blocks of
// two LayerNorms, q, k, v and out_proj and a two-linear MLP, all biased, a final LayerNorm, and with
// vision_use_head an attention-pooling head: a probe, nn.MultiheadAttention's packed in_proj and its
// out_proj, a LayerNorm and an MLP) and Gemma3MultiModalProjector (an RMSNorm over the vision width
// and a [vision, text] projection Parameter); LLaVA's CLIP (CLIPVisionModel: a class embedding, an
// unbiased patch Conv2d, a position per patch and one for the class token, pre- and post-LayerNorms
// around the same blocks) and LlavaMultiModalProjector (two linears, vision -> text -> text, biased
// by multimodal_projector_bias); Mistral 3's Pixtral (PixtralVisionModel: an unbiased patch Conv2d,
// RMSNorms, unbiased q, k, v, o and a gated MLP, rotary positions) and Mistral3MultiModalProjector
// (an RMSNorm, the patch merger's unbiased linear over spatial_merge_size² patches, then the two
// linears). nn.Linear weights are marked linear; the pooling head's packed in_proj and out_proj
// (bitsandbytes leaves nn.MultiheadAttention's alone), the convolutions and Gemma 3's projection are not.
void vit_parameters(const ModelSpec& m, std::vector<TensorGroup>& out) {
  Builder b{out};
  const bool llava = m.vision_type == VisionTower::kLlava;
  const VisionEncoder encoder = vit_encoder(m);
  const bool siglip = encoder == VisionEncoder::kSiglip, clip = encoder == VisionEncoder::kClip;
  const bool pixtral = encoder == VisionEncoder::kPixtral;
  const VitSizes sizes = vit_sizes(m);
  const Count depth = sizes.depth, e = sizes.e, ff = sizes.ff, patch = sizes.patch, channels = sizes.channels;
  const Count out_width = Count(m.hidden_size);
  const Component v = Component::kVisionTower;
  const bool biased = !pixtral;
  const auto norm = [&](const char* name, Count width, Count count) {
    b.vector(v, name, width, count);
    if (!pixtral) b.vector(v, name, width, count);  // LayerNorm's bias (Pixtral's are RMSNorms)
  };
  b.unit = !pixtral;  // SiglipVisionEmbeddings, CLIPVisionEmbeddings
  b.matrix(v, "patch_embedding", e, channels * patch * patch, 1, true);
  if (siglip) b.vector(v, "patch_embedding.bias", e, 1, true);
  if (clip) b.vector(v, "class_embedding", e, 1);
  if (!pixtral) b.matrix(v, "position_embedding", vit_positions(m), e, 1);
  b.unit = false;
  if (clip) norm("pre_layrnorm", e, 1);
  if (pixtral) norm("ln_pre", e, 1);
  b.unit = true;  // the encoder layers
  norm("layer_norm1", e, depth);
  norm("layer_norm2", e, depth);
  b.linear(v, "self_attn.q_proj", e, e, depth, biased);
  b.linear(v, "self_attn.k_proj", e, e, depth, biased);
  b.linear(v, "self_attn.v_proj", e, e, depth, biased);
  b.linear(v, "self_attn.out_proj", e, e, depth, biased);
  if (pixtral) {
    b.linear(v, "feed_forward.gate_proj", ff, e, depth, false);
    b.linear(v, "feed_forward.up_proj", ff, e, depth, false);
    b.linear(v, "feed_forward.down_proj", e, ff, depth, false);
  } else {
    b.linear(v, "mlp.fc1", ff, e, depth, true);
    b.linear(v, "mlp.fc2", e, ff, depth, true);
    b.unit = false;
    norm("post_layernorm", e, 1);
  }
  b.unit = siglip;  // SiglipMultiheadAttentionPoolingHead
  if (siglip && m.vision_use_head == Switch::kYes) {
    // (nn.MultiheadAttention's out_proj is left unquantised: measured, vision_tower.py.)
    b.vector(v, "head.probe", e, 1);
    b.matrix(v, "head.attention.in_proj_weight", e * 3, e, 1);
    b.vector(v, "head.attention.in_proj_bias", e * 3, 1);
    b.matrix(v, "head.attention.out_proj", e, e, 1);
    b.vector(v, "head.attention.out_proj.bias", e, 1);
    norm("head.layernorm", e, 1);
    b.linear(v, "head.mlp.fc1", ff, e, 1, true);
    b.linear(v, "head.mlp.fc2", e, ff, 1, true);
  }
  b.unit = false;
  const Component projector = Component::kVisionProjector;
  // PaliGemmaMultiModalProjector: one biased linear, vision width -> projection_dim
  // (model.vision_out_hidden_size; 0 = the language model's width).
  if (m.vision_type == VisionTower::kPaliGemma) {
    b.linear(projector, "multi_modal_projector.linear", size_or(m.vision_out_hidden_size, m.hidden_size), e, 1, true);
    return;
  }
  if (m.vision_type == VisionTower::kGemma3) {
    b.vector(projector, "mm_soft_emb_norm", e, 1);
    b.matrix(projector, "mm_input_projection_weight", e, out_width, 1, true);
    return;
  }
  const bool projector_bias = m.vision_projector_bias == Switch::kAuto ? llava : m.vision_projector_bias == Switch::kYes;
  if (m.vision_type == VisionTower::kMistral3) {
    const Count merge = size_or(m.vision_spatial_merge_size, 2);
    b.vector(projector, "multi_modal_projector.norm", e, 1);
    b.linear(projector, "multi_modal_projector.patch_merger.merging_layer", e, e * merge * merge, 1, false);
  }
  b.linear(projector, "multi_modal_projector.linear_1", out_width, e, 1, projector_bias);
  b.linear(projector, "multi_modal_projector.linear_2", out_width, out_width, 1, projector_bias);
}

// The vision encoder and projector of Qwen2-VL, Qwen2.5-VL and Qwen3-VL, as transformers 5.24's
// classes build them (Qwen2VisionTransformerPretrainedModel, Qwen2_5_VisionTransformerPretrainedModel,
// Qwen3VLVisionModel; a size of 0 takes the released checkpoints' and the projector's output the
// language model's width; the importer writes every size a file gives or its class defaults): a patch
// embedding (a Conv3d over temporal_patch_size × patch_size² pixels of in_channels; Qwen3-VL's with
// a bias), depth blocks (two norms, a fused qkv and proj with biases, an MLP with biases: Qwen2.5-VL's
// gated, the others' two linears), a final merger of spatial_merge_size² patches (a norm, then two
// biased linears out to the language model's width), and Qwen3-VL's learned positions and deepstack
// mergers (one per deepstack_visual_indexes entry, each as the final merger with its norm over the
// merged width). Norms: LayerNorm with a bias, Qwen2.5-VL's RMSNorm. The nn.Linear weights are
// marked linear: bitsandbytes quantises them as it does the language model's (transformers'
// get_keys_to_not_convert spares only the output embedding and the last module).
// A Qwen-VL encoder's sizes, 0 taking the released checkpoints'.
struct QwenSizes {
  Count depth, e, ff, patch;
};
QwenSizes qwen_sizes(const ModelSpec& m) {
  const bool qwen3 = m.vision_type == VisionTower::kQwen3Vl, qwen25 = m.vision_type == VisionTower::kQwen25Vl;
  const Count e = size_or(m.vision_hidden_size, qwen3 ? 1152 : 1280);
  const Count ff = m.vision_intermediate_size > 0 ? Count(m.vision_intermediate_size)
                   : qwen3                       ? Count(4304)
                   : qwen25                      ? Count(3420)
                                                 : e * 4;  // Qwen2-VL: embed_dim × mlp_ratio 4
  return {size_or(m.vision_depth, qwen3 ? 27 : 32), e, ff, size_or(m.vision_patch_size, qwen3 ? 16 : 14)};
}

void qwen_vl_parameters(const ModelSpec& m, std::vector<TensorGroup>& out) {
  Builder b{out};
  const bool qwen3 = m.vision_type == VisionTower::kQwen3Vl, qwen25 = m.vision_type == VisionTower::kQwen25Vl;
  const QwenSizes sizes = qwen_sizes(m);
  const Count depth = sizes.depth, e = sizes.e, ff = sizes.ff, patch = sizes.patch;
  const Count out_width = size_or(m.vision_out_hidden_size, m.hidden_size);
  const Count frames = size_or(m.vision_temporal_patch_size, 2), channels = size_or(m.vision_in_channels, 3);
  const Count merge = size_or(m.vision_spatial_merge_size, 2);
  const Count deepstack = qwen3 ? Count(m.vision_deepstack_layers) : Count(0);
  const Component v = Component::kVisionTower;
  const auto norm = [&](Component part, const char* name, Count width, Count count) {
    b.vector(part, name, width, count);
    if (!qwen25) b.vector(part, name, width, count);  // LayerNorm's bias
  };
  b.matrix(v, "patch_embed.proj", e, channels * frames * patch * patch, 1, true);
  if (qwen3) b.vector(v, "patch_embed.proj.bias", e, 1, true);
  if (qwen3) b.matrix(v, "pos_embed", size_or(m.vision_num_position_embeddings, 2304), e, 1);
  b.unit = true;  // the vision blocks
  norm(v, "blocks.norm1", e, depth);
  norm(v, "blocks.norm2", e, depth);
  b.linear(v, "blocks.attn.qkv", e * 3, e, depth, true);
  b.linear(v, "blocks.attn.proj", e, e, depth, true);
  if (qwen25) {
    b.linear(v, "blocks.mlp.gate_proj", ff, e, depth, true);
    b.linear(v, "blocks.mlp.up_proj", ff, e, depth, true);
    b.linear(v, "blocks.mlp.down_proj", e, ff, depth, true);
  } else {
    b.linear(v, "blocks.mlp.fc1", ff, e, depth, true);
    b.linear(v, "blocks.mlp.fc2", e, ff, depth, true);
  }
  b.unit = false;
  const Count wide = e * merge * merge;
  const Component projector = Component::kVisionProjector;
  norm(projector, "merger.norm", e, 1);
  b.linear(projector, "merger.mlp.0", wide, wide, 1, true);
  b.linear(projector, "merger.mlp.2", out_width, wide, 1, true);
  if (deepstack.value() > 0) {
    norm(projector, "deepstack_merger.norm", wide, deepstack);
    b.linear(projector, "deepstack_merger.linear_fc1", wide, wide, deepstack, true);
    b.linear(projector, "deepstack_merger.linear_fc2", out_width, wide, deepstack, true);
  }
}

}  // namespace

void vision_parameters(const ModelSpec& m, std::vector<TensorGroup>& out) {
  switch (m.vision_type) {
    case VisionTower::kNone: return;
    case VisionTower::kQwen2Vl:
    case VisionTower::kQwen25Vl:
    case VisionTower::kQwen3Vl: qwen_vl_parameters(m, out); return;
    case VisionTower::kGemma3:
    case VisionTower::kLlava:
    case VisionTower::kMistral3:
    case VisionTower::kPaliGemma: vit_parameters(m, out); return;
  }
}

VisionTrain resolve_train_vision(const Config& c) {
  if (c.model.vision_type == VisionTower::kNone || is_peft(c)) return VisionTrain::kNone;
  const VisionTrain v = c.training.finetune.train_vision;
  if (v != VisionTrain::kAuto) return v;
  return c.training.implementation.framework == Framework::kTrl ? VisionTrain::kAll : VisionTrain::kNone;
}

ParameterCount with_trained_vision(const Config& c, ParameterCount params) {
  const VisionTrain v = resolve_train_vision(c);
  if (v == VisionTrain::kNone) return params;
  std::vector<TensorGroup> frozen;
  for (const TensorGroup& g : params.vision) {
    const bool projector = g.component == Component::kVisionProjector;
    const bool trains = v == VisionTrain::kAll || (v == VisionTrain::kProjector) == projector;
    if (!trains) {
      frozen.push_back(g);
      continue;
    }
    params.groups.push_back(g);
    params.total_count += g.elements();
    params.vision_count = params.vision_count - g.elements();
  }
  params.vision = std::move(frozen);
  return params;
}

namespace {

// What autograd saves when images run through a Qwen-VL tower, in bytes per patch (n patches a
// micro-batch), measured from transformers 5.24's classes with SDPA's flash kernel (FlashAttention
// saves the same: q, k, v, the output and an fp32 log-sum-exp a head) and fitted exactly, term by
// term, over the widths (tools/frameworks/vision_images.py; every coefficient an integer):
// - an encoder that trains: per block block_e·e + block_ff·ff + 4·heads + block_1 (norms' inputs
//   and statistics, qkv's input and output, q and k after the rotary, the attention output, proj's
//   input, the MLP's inputs and activations), the rotary tables once (cos and sin, fp32, n × head
//   dim each), the patch embedding's input (C·T·P² a patch) and out_e·e + out_1 (the merger);
// - under checkpointing (transformers' non-reentrant checkpoint of each vision block): each block's
//   input, ckpt_e·e, and the rest outside the blocks as above; and for a frozen Qwen2-VL or
//   Qwen2.5-VL encoder too, whose patch embedding's output enable_input_require_grads makes require
//   grad (kInputHooked), with the merger's inputs;
// - only the projector training: what the mergers keep for their weights' gradients.
// Counted as savetrack's counted() does: what autograd still holds once the features are made. A
// LayerNorm's mean and rstd are fp32 in every precision, as CUDA's kernel keeps them (T_ACC in
// aten/src/ATen/native/cuda/layer_norm_kernel.cu; the CPU's keeps a bf16 input's in bf16, which the
// tool counts as on the GPU).
struct ImageTerms {
  int block_e, block_ff, block_1, ckpt_e;
  int out_e, out_1, deepstack_e, deepstack_1;              // the whole tower trains
  int enc_out_e, enc_out_1, enc_deepstack_e, enc_deepstack_1;  // the encoder alone (a frozen merger's linears
                                                           // keep no input)
  int proj_e, proj_1, proj_deepstack_e, proj_deepstack_1;  // the projector alone, its input needing no grad
  int ckpt_first_e;  // the first checkpointed block's input where it differs from the others' (n·e, once)
};
// [tower: Qwen2-VL, Qwen2.5-VL, Qwen3-VL][column, image_column: fp32; AMP (fp32 weights under
// autocast); 16-bit weights; 16-bit weights under autocast; a bitsandbytes 4-bit base; the same after
// prepare_model_for_kbit_training]. Where the checkpoint's input hook makes the encoder's output
// require grad (kInputHooked), the mergers keep what they keep when the encoder trains: a projector
// that trains as when the whole tower does (out), a frozen one as when the encoder alone does
// (enc_out); measured so, not fitted apart. 16-bit weights under autocast keep what AMP keeps in
// Qwen2-VL and Qwen3-VL (the same tensors, module for module) and what 16-bit weights keep in
// Qwen2.5-VL (its RMSNorms return the stream's bf16: autocast casts nothing more). A 4-bit base holds
// the tower frozen, so only the hooked checkpoint's terms are read: bitsandbytes' Linear4bit returns
// its input's dtype, so after a LayerNorm (fp32 under autocast) Qwen2-VL's stream turns fp32 at the
// first block's MLP (its first checkpointed input bf16: ckpt_first_e); Qwen2.5-VL's RMSNorms keep
// it bf16 until prepare_model_for_kbit_training makes their weights fp32.
constexpr ImageTerms kImageTerms[3][6] = {
    {{44, 12, 16, 4, 16, 8, 0, 0, 8, 8, 0, 0, 16, 8, 0, 0, 0},
     {26, 6, 16, 2, 10, 8, 0, 0, 6, 8, 0, 0, 10, 8, 0, 0, 0},
     {22, 6, 16, 2, 8, 8, 0, 0, 4, 8, 0, 0, 8, 8, 0, 0, 0},
     {26, 6, 16, 2, 10, 8, 0, 0, 6, 8, 0, 0, 10, 8, 0, 0, 0},
     {0, 0, 0, 4, 0, 0, 0, 0, 8, 8, 0, 0, 0, 0, 0, 0, -2},
     {0, 0, 0, 4, 0, 0, 0, 0, 8, 8, 0, 0, 0, 0, 0, 0, -2}},
    {{52, 16, 8, 4, 20, 8, 0, 0, 8, 8, 0, 0, 16, 2, 0, 0, 0},
     {32, 8, 8, 2, 12, 8, 0, 0, 6, 8, 0, 0, 8, 2, 0, 0, 0},
     {30, 8, 8, 2, 12, 8, 0, 0, 6, 8, 0, 0, 8, 2, 0, 0, 0},
     {30, 8, 8, 2, 12, 8, 0, 0, 6, 8, 0, 0, 8, 2, 0, 0, 0},
     {0, 0, 0, 2, 0, 0, 0, 0, 6, 8, 0, 0, 0, 0, 0, 0, 0},
     {0, 0, 0, 4, 0, 0, 0, 0, 8, 8, 0, 0, 0, 0, 0, 0, -2}},
    {{44, 8, 16, 4, 16, 56, 12, 2, 8, 56, 4, 2, 16, 8, 16, 2, 0},
     {26, 4, 16, 2, 10, 56, 10, 2, 6, 56, 6, 2, 10, 8, 10, 2, 0},
     {22, 4, 16, 2, 8, 56, 6, 2, 4, 56, 2, 2, 8, 8, 8, 2, 0},
     {26, 4, 16, 2, 10, 56, 10, 2, 6, 56, 6, 2, 10, 8, 10, 2, 0},
     {},
     {}},
};
// Whether transformers' gradient_checkpointing_enable makes the tower's input require grad
// (enable_input_require_grads hooks the model's input embeddings, which for Qwen2-VL and
// Qwen2.5-VL reach the patch embedding): then a frozen encoder's checkpointed blocks keep their
// inputs. Qwen3-VL's get_input_embeddings is not implemented for the hook, and keeps nothing there.
constexpr bool kInputHooked[3] = {true, true, false};

// The measured column the run's tower follows (kImageTerms, the ViT tables): how its weights are held
// and whether autocast runs. fp32; AMP (fp32 weights under autocast: a full fine-tune's bf16_mixed);
// 16-bit weights (bf16, the master recipes, FSDP's bf16 param_dtype); 16-bit weights under autocast
// (bf16_autocast, and a PEFT base held in 16 bits under bf16_mixed: the Trainer's LoRA); a
// bitsandbytes 4-bit base under autocast, as loaded or after prepare_model_for_kbit_training. -1:
// not measured (an 8-bit base, a 4-bit one without autocast, FP8, the seeds' convention).
int image_column(const Config& c) {
  const Finetune& f = c.training.finetune;
  const Precision p = c.training.precision;
  const bool autocast = p == Precision::kBf16Mixed || p == Precision::kFp16Mixed || p == Precision::kBf16Autocast;
  if (bnb_peft_base(c)) return f.base_bits == 4 && autocast ? (kbit_upcast(f) ? 5 : 4) : -1;
  // A PEFT base's dtype (the tower is held as the base is: vision_tower_bytes), else the recipe's.
  const bool peft = is_peft(c);
  const bool base32 = peft && lora_base_bytes(recipe_of(c), resolve_implementation(c)) == kFp32Bytes;
  switch (p) {
    case Precision::kFp32: return 0;  // (the fp32 recipe's frozen base is fp32 too)
    case Precision::kBf16Mixed:
    case Precision::kFp16Mixed: return peft && !base32 ? 3 : 1;
    case Precision::kBf16Autocast: return base32 ? 1 : 3;
    case Precision::kBf16Fsdp: return 2;  // FSDP's bf16 param_dtype gathers any base in 16 bits to compute
    case Precision::kBf16:
    case Precision::kBf16Master:
    case Precision::kFp16Master: return base32 ? 0 : 2;
    default: return -1;
  }
}

int qwen_tower(VisionTower t) {
  return t == VisionTower::kQwen2Vl ? 0 : t == VisionTower::kQwen25Vl ? 1 : t == VisionTower::kQwen3Vl ? 2 : -1;
}

// SigLIP and CLIP see every image at their image_size: (image_size / patch_size)² patches, one
// learned position each (CLIP's one more, for its class token). 0 for Pixtral, which takes any size.
Count fixed_patches(const ModelSpec& m) {
  const VisionEncoder encoder = vit_encoder(m);
  if (encoder == VisionEncoder::kPixtral) return Count(0);
  const bool clip = encoder == VisionEncoder::kClip;
  return vit_positions(m) - Count(clip ? 1 : 0);
}

// The encoder blocks whose output reaches the features: Gemma 3 projects the last one's (after
// SigLIP's post_layernorm); LLaVA and Mistral 3 the hidden state vision_feature_layer names
// (transformers indexes the embeddings' output and each block's: -1 the last block's). The blocks
// after it run, but their graph dies in forward: they keep nothing. Out of range: 0.
Count used_blocks(const ModelSpec& m, Count depth) {
  if (m.vision_type == VisionTower::kGemma3) return depth;
  const std::int64_t layer =
      m.vision_feature_layer != 0 ? m.vision_feature_layer : m.vision_type == VisionTower::kLlava ? -2 : -1;
  const std::int64_t used = layer < 0 ? depth.value() + 1 + layer : layer;
  return used >= 1 && used <= depth.value() ? Count(used) : Count(0);
}

// The features an image gives the language model: Gemma 3's projector pools the patches to
// mm_tokens_per_image, LLaVA projects every patch (CLIP's class token dropped: strategy default),
// Mistral 3's patch merger joins spatial_merge_size² of them.
Count vit_image_features(const ModelSpec& m, Count patches) {
  switch (m.vision_type) {
    case VisionTower::kGemma3: return size_or(m.vision_tokens_per_image, 256);
    case VisionTower::kMistral3: {
      const Count merge = size_or(m.vision_spatial_merge_size, 2);
      return patches / (merge * merge);
    }
    default: return patches;
  }
}

// The whole number whose square is n, or 0.
std::int64_t square_side(std::int64_t n) {
  std::int64_t side = 0;
  while ((side + 1) * (side + 1) <= n) ++side;
  return side * side == n ? side : 0;
}

// What images leave saved in a plain-ViT tower, in bytes (tools/frameworks/vision_images.py's cases
// over 60 towers of their own sizes, fitted exactly by vision_images_fit.py, whose terms() these
// follow). k images a micro-batch, p patches each, n tokens through the encoder (k·p, CLIP's
// k·(p + 1) with its class token), L used blocks, e, ff, heads; m features an image and d the
// language model's width for the projector. Columns as image_column's; a 4-bit base's (the last
// two) only where a frozen tower keeps something: the checkpoint's hook, the outer norms, Pixtral's
// mask and the frozen projector (the other entries are never read).
struct VitBlock {
  int e, ff, one;
};
// An encoder block that trains, per token: norms' inputs and statistics (Pixtral's RMSNorms: input,
// rsqrt, the normalised input, its output), the q/k/v input (three 16-bit copies under autocast),
// SDPA's q, k, v, output and fp32 log-sum-exp a head (4·heads, added), the MLP's inputs and
// activation (CLIP's quick_gelu keeps its sigmoid and product: 3·ff; Pixtral's gated MLP gate, SiLU
// in and out, up, down's input). With 16-bit weights under autocast SigLIP and CLIP keep what AMP
// keeps (a LayerNorm under autocast runs in fp32 whatever its weights and hands the linears fp32),
// Pixtral what 16-bit weights keep (its RMSNorms return the stream's bf16: nothing more to cast).
constexpr VitBlock kSiglipBlock[6] = {{32, 8, 16}, {24, 4, 16}, {16, 4, 16}, {24, 4, 16}, {}, {}};
constexpr VitBlock kClipBlock[6] = {{32, 12, 16}, {24, 6, 16}, {16, 6, 16}, {24, 6, 16}, {}, {}};
constexpr VitBlock kPixtralBlock[6] = {{40, 16, 8}, {34, 8, 8}, {24, 8, 8}, {24, 8, 8}, {}, {}};
// The residual stream's bytes a token [SigLIP, CLIP, Pixtral][column], which checkpointing keeps at
// each block's input and the encoder hands the projector. fp32
// under AMP (an fp32 position embedding or ln_pre weight added in); with 16-bit weights under
// autocast SigLIP's and Pixtral's bf16, CLIP's fp32 (its pre_layrnorm, under autocast, returns fp32);
// under a 4-bit base SigLIP's and CLIP's fp32 (bitsandbytes' Linear4bit returns its input's dtype:
// the MLP takes LayerNorm 2's fp32 output and adds fp32 to the stream), Pixtral's bf16 until
// prepare_model_for_kbit_training makes its norms' weights fp32. SigLIP's first block's input, as
// loaded over a 4-bit base, is still bf16 (the convolution's output and a bf16 position embedding):
// 2 bytes a token less, once (kSiglipFirstNf4).
constexpr int kStreamBytes[3][6] = {{4, 4, 2, 2, 4, 4}, {4, 4, 2, 4, 4, 4}, {4, 4, 2, 2, 2, 4}};
constexpr int kSiglipFirstNf4 = -2;
// The outer LayerNorm (Gemma 3's SigLIP post_layernorm, CLIP's pre_layrnorm): its input (fp32 under
// autocast, autocast's copy of a 16-bit one) a token, and the fp32 mean and rstd.
constexpr int kOuterNormE[6] = {4, 4, 2, 4, 4, 4};
// Pixtral's block-diagonal SDPA mask (n × n), kept once in the patch embeddings' dtype (AMP's per
// block casts aside: vit_saved).
constexpr int kPixtralMask[6] = {4, 4, 2, 2, 2, 4};
// The projectors' terms: k·p·e, k·p, k·m·e, k·m·d, k·m and e.
struct ProjectorTerms {
  int kpe, kp, kme, kmd, km, e;
};
// [all: the encoder's graph reaches a projector that trains; frozen: it reaches a frozen one;
// alone: the projector trains on features that need no grad][column].
// Gemma3MultiModalProjector: the average pool's input (a contiguous copy), the RMSNorm's fp32 input,
// rsqrt and normalised input, (1 + weight) in fp32 once, the projection's input. With 16-bit weights
// under autocast as under AMP (SigLIP's post_layernorm returns fp32); frozen over a 4-bit base as a
// frozen one under AMP.
constexpr ProjectorTerms kGemma3Projector[3][6] = {
    {{4, 0, 12, 0, 4, 4}, {4, 0, 10, 0, 4, 4}, {2, 0, 10, 0, 4, 4}, {4, 0, 10, 0, 4, 4}, {}, {}},
    {{4, 0, 4, 0, 4, 4}, {4, 0, 4, 0, 4, 4}, {2, 0, 4, 0, 4, 4}, {4, 0, 4, 0, 4, 4}, {4, 0, 4, 0, 4, 4}, {4, 0, 4, 0, 4, 4}},
    {{0, 0, 8, 0, 0, 0}, {0, 0, 6, 0, 0, 0}, {0, 0, 6, 0, 0, 0}, {0, 0, 6, 0, 0, 0}, {}, {}}};
// LlavaMultiModalProjector: linear_1's input (its weight's gradient needs it whether or not the
// encoder's graph reaches it), GELU's and linear_2's inputs. Over CLIP (strategy default) linear_1
// reads the hidden state without its class token: a view of the whole, class token included, when
// the micro-batch is one image (a copy otherwise; autocast's 16-bit copy under AMP). Frozen over a
// 4-bit base, GELU's input only, in the stream's dtype (vit_saved: linear_1, a Linear4bit, returns
// its input's).
constexpr ProjectorTerms kLlavaProjector[3][6] = {
    {{4, 0, 0, 8, 0, 0}, {2, 0, 0, 4, 0, 0}, {2, 0, 0, 4, 0, 0}, {2, 0, 0, 4, 0, 0}, {}, {}},
    {{0, 0, 0, 4, 0, 0}, {0, 0, 0, 2, 0, 0}, {0, 0, 0, 2, 0, 0}, {0, 0, 0, 2, 0, 0}, {}, {}},
    {{4, 0, 0, 8, 0, 0}, {2, 0, 0, 4, 0, 0}, {2, 0, 0, 4, 0, 0}, {2, 0, 0, 4, 0, 0}, {}, {}}};
constexpr int kClipOneImage[6] = {4, 0, 2, 0, 0, 0};
// Mistral3MultiModalProjector: the RMSNorm over every patch, the patch merger's input (the unfolded
// grid), linear_1's input, GELU's and linear_2's inputs; with 16-bit weights under autocast as with
// 16-bit weights (the RMSNorm returns bf16); frozen over a 4-bit base, the RMSNorm's fp32 input and
// rsqrt, and GELU's input in the stream's dtype (vit_saved).
constexpr ProjectorTerms kMistral3Projector[3][6] = {
    {{12, 4, 4, 8, 0, 0}, {10, 4, 2, 4, 0, 0}, {8, 4, 2, 4, 0, 0}, {8, 4, 2, 4, 0, 0}, {}, {}},
    {{4, 4, 0, 4, 0, 0}, {4, 4, 0, 2, 0, 0}, {4, 4, 0, 2, 0, 0}, {4, 4, 0, 2, 0, 0}, {4, 4, 0, 0, 0, 0}, {4, 4, 0, 0, 0, 0}},
    {{8, 0, 4, 8, 0, 0}, {6, 0, 2, 4, 0, 0}, {4, 0, 2, 4, 0, 0}, {4, 0, 2, 4, 0, 0}, {}, {}}};

// The terms vision_images_fit.py names (BASIS), each a product of the run's sizes: the encoder
// blocks' first (which activation offload moves), then the rest.
enum VitTerm { kNeL, kNfL, kNhL, kNL, kNnL, kNeFirst, kNhd, kNn, kKpP, kNe, kN, kKpe, kKp, kKme, kKmd, kKm, kE,
               kOneImageE, kVitTerms };
constexpr int kFirstOutsideTerm = kNhd;

VisionSaved vit_saved(const Config& c, int column) {
  const Training& t = c.training;
  const ModelSpec& m = c.model;
  const VitSizes s = vit_sizes(m);
  const bool clip = s.encoder == VisionEncoder::kClip, pixtral = s.encoder == VisionEncoder::kPixtral;
  const Count k = Count(t.micro_batch_size) * Count(t.images_per_sample);
  const Count p = image_patches(c);
  const Count n = k * (p + Count(clip ? 1 : 0));
  const Count L = used_blocks(m, s.depth);
  const Count km = k * vit_image_features(m, p);
  const Count size[kVitTerms] = {n * s.e * L, n * s.ff * L, n * s.heads * L, n * L, n * n * L, n * s.e, n * (s.e / s.heads), n * n,
                                 k * p * s.channels * s.patch * s.patch, n * s.e, n, k * p * s.e, k * p, km * s.e,
                                 km * Count(m.hidden_size), km, s.e, k == Count(1) ? s.e : Count(0)};
  const VisionTrain trains = resolve_train_vision(c);
  const bool encoder = trains == VisionTrain::kAll || trains == VisionTrain::kEncoder;
  const bool projector = trains == VisionTrain::kAll || trains == VisionTrain::kProjector;
  const bool ckpt = t.checkpointing == Checkpointing::kFull;
  // The encoder's graph: its weights train, or the checkpoint's enable_input_require_grads hooks its
  // patch embedding (SigLIP's and CLIP's get_input_embeddings, Pixtral's patch_conv: every ViT here).
  const bool graph = encoder || ckpt;
  // Pixtral's SDPA takes a block-diagonal mask over the micro-batch's images, concatenated into one
  // sequence (n × n): kept once (fp32, or bf16 weights' 16 bits); under autocast each block casts
  // it apart, unless checkpointing holds the fp32 mask it is given. FlashAttention-2 takes none.
  const bool masked = pixtral && resolve_implementation(c).attention != AttentionImpl::kFlash;
  const int stream = kStreamBytes[pixtral ? 2 : clip ? 1 : 0][column];
  int coef[kVitTerms] = {};
  if (graph) {
    if (ckpt) {
      coef[kNeL] += stream;  // each block's input
      if (!pixtral && !clip && column == 4) coef[kNeFirst] += kSiglipFirstNf4;
    } else {
      const VitBlock& b = (pixtral ? kPixtralBlock : clip ? kClipBlock : kSiglipBlock)[column];
      coef[kNeL] += b.e;
      coef[kNfL] += b.ff;
      coef[kNhL] += 4;
      coef[kNL] += b.one;
      if (pixtral) coef[kNhd] += column >= 2 ? 4 : 8;  // the rotary cos and sin, in the embeddings' dtype
    }
    if (encoder) coef[kKpP] += column == 0 ? 4 : 2;  // the pixels (autocast's 16-bit copy)
    if (m.vision_type == VisionTower::kGemma3 || clip) {  // SigLIP's post_layernorm, CLIP's pre_layrnorm
      coef[kNe] += kOuterNormE[column];
      coef[kN] += 8;
    }
    if (pixtral) {  // ln_pre, an RMSNorm: its fp32 input and rsqrt, and the normalised input when it trains
      coef[kNe] += !encoder ? 4 : column == 0 ? 8 : 6;
      coef[kN] += 4;
      if (masked && column == 1 && !ckpt) coef[kNnL] += 2;
      else if (masked) coef[kNn] += kPixtralMask[column];
    }
  }
  if (graph || projector) {
    const int part = !graph ? 2 : projector ? 0 : 1;
    const ProjectorTerms& q = (m.vision_type == VisionTower::kGemma3    ? kGemma3Projector
                               : m.vision_type == VisionTower::kMistral3 ? kMistral3Projector
                                                                         : kLlavaProjector)[part][column];
    coef[kKpe] += q.kpe;
    coef[kKp] += q.kp;
    coef[kKme] += q.kme;
    coef[kKmd] += q.kmd;
    coef[kKm] += q.km;
    coef[kE] += q.e;
    if (clip && part != 1) coef[kOneImageE] += kClipOneImage[column];
    // A frozen projector over a 4-bit base: its Linear4bit layers return their input's dtype, so
    // LLaVA's and Mistral 3's GELU keeps its input in the stream's (Gemma 3's projection is no linear).
    if (column >= 4 && part == 1 && m.vision_type != VisionTower::kGemma3) coef[kKmd] += stream;
  }
  VisionSaved saved;
  for (int term = 0; term < kVitTerms; ++term) {
    // (A term the run does not have is left out, not multiplied by 0: its product may overflow.)
    if (coef[term] != 0) (term < kFirstOutsideTerm ? saved.blocks : saved.outside) += size[term] * Count(coef[term]) * Bytes{1};
  }
  return saved;
}

}  // namespace

Count image_patches(const Config& c) {
  const ModelSpec& m = c.model;
  if (c.training.image_patches > 0 || qwen_tower(m.vision_type) >= 0 || m.vision_type == VisionTower::kNone) {
    return Count(c.training.image_patches);
  }
  return fixed_patches(m);
}

ImagesUnmodelled images_unmodelled(const Config& c) {
  const Training& t = c.training;
  const ModelSpec& m = c.model;
  if (t.images_per_sample == 0 || m.vision_type == VisionTower::kNone) return {};
  // PaliGemma's steps with images attend bidirectionally over the image and prompt tokens (its
  // prefix-LM mask), which memfit has not measured: its tower is counted, held or trained, not run.
  if (m.vision_type == VisionTower::kPaliGemma) {
    return {"training.images_per_sample", "must be 0 under PaliGemma (model.vision_type paligemma): images through its "
                                          "tower and its prefix attention over image and prompt tokens are not "
                                          "modelled yet; its tower is counted with the weights"};
  }
  const bool qwen = qwen_tower(m.vision_type) >= 0;
  const Count fixed = qwen ? Count(0) : fixed_patches(m);
  if (!qwen && vit_encoder(m) != VisionEncoder::kPixtral && fixed.value() <= 0) {
    return {"model.vision_num_position_embeddings", "must be at least 2 for CLIP: one learned position a patch, "
                                                     "(image_size / patch_size)², and one for its class token"};
  }
  if (fixed.value() > 0 && t.image_patches > 0 && Count(t.image_patches) != fixed) {
    return {"training.image_patches", "must be 0 or " + detail::group_digits(fixed.value()) + ": this tower's " +
                                          (vit_encoder(m) == VisionEncoder::kClip ? "CLIP" : "SigLIP") +
                                          " sees every image at its image_size, (image_size / patch_size)² patches"};
  }
  if (image_patches(c).value() <= 0) {
    return {"training.image_patches", qwen ? "must be given with images: (height / 14) x (width / 14) for Qwen2-VL and "
                                             "Qwen2.5-VL, (height / 16) x (width / 16) for Qwen3-VL, from 1 to 10,000,000"
                                           : "must be given with images through Pixtral: (height / patch) x (width / "
                                             "patch), from 1 to 10,000,000"};
  }
  if (image_column(c) < 0) {
    if (bnb_peft_base(c)) {
      return {"training.finetune.base_bits", "must be 16, or 4 under autocast (bf16_mixed, fp16_mixed, bf16_autocast), "
             "with images through a bitsandbytes-quantised tower: an 8-bit one, or a 4-bit one without autocast, is "
             "not modelled"};
    }
    return {"training.precision", "must be fp32, bf16_mixed, fp16_mixed, bf16_autocast, bf16, bf16_master, fp16_master "
           "or bf16_fsdp with images through the tower"};
  }
  if (resolve_implementation(c).attention == AttentionImpl::kEager) {
    return {"training.attention", "must be sdpa or flash with images through the tower (eager attention's scores are "
           "not modelled there)"};
  }
  const Count e = qwen ? qwen_sizes(m).e : vit_sizes(m).e, heads = size_or(m.vision_num_heads, 16);
  if (e.value() % heads.value() != 0) {
    return {"model.vision_num_heads", "must divide the vision encoder's width (" + detail::group_digits(e.value()) + ")"};
  }
  const Count patches = image_patches(c);
  Count tokens{0};  // the image's tokens in the language model's sequence, at least
  if (qwen) {
    // The merger joins spatial_merge_size² patches into one token of the language model's sequence.
    const Count merge = size_or(m.vision_spatial_merge_size, 2);
    tokens = ceil_div(patches, merge * merge);
  } else {
    const Count depth = vit_sizes(m).depth;
    if (used_blocks(m, depth).value() == 0) {
      if (m.vision_feature_layer == 0) {
        return {"model.vision_depth", "must be at least 2 under LLaVA, whose default vision_feature_layer (-2) "
                                      "projects the output of the block before the last"};
      }
      return {"model.vision_feature_layer", "must name one of the encoder's " + detail::group_digits(depth.value()) +
                                                " blocks (-1 the last one's output, down to -" +
                                                detail::group_digits(depth.value()) + "; or 1 to " +
                                                detail::group_digits(depth.value()) + "), or be 0 for the class's"};
    }
    if (m.vision_type == VisionTower::kMistral3) {
      const Count merge = size_or(m.vision_spatial_merge_size, 2);
      if (patches.value() % (merge * merge).value() != 0) {
        return {"training.image_patches", "must be a multiple of " + detail::group_digits((merge * merge).value()) +
                                              " for Mistral 3: its processor resizes images to whole merged patches "
                                              "(spatial_merge_size² each)"};
      }
    }
    if (m.vision_type == VisionTower::kGemma3) {
      // The projector average-pools the patch grid to tokens_per_side² tokens: whole pooling windows.
      const std::int64_t side = square_side(patches.value());
      const std::int64_t per_side = square_side(size_or(m.vision_tokens_per_image, 256).value());
      if (side == 0) {
        return {"model.vision_num_position_embeddings", "must be a square for Gemma 3's SigLIP ((image_size / "
                                                         "patch_size)², one a patch), whose grid its projector pools"};
      }
      if (per_side == 0 || side % per_side != 0) {
        return {"model.vision_tokens_per_image", "must be a square whose side divides the image's patches a side (" +
                                                     detail::group_digits(side) + "): Gemma 3's projector pools the "
                                                     "patch grid in whole windows"};
      }
    }
    tokens = vit_image_features(m, patches);
  }
  tokens = tokens * Count(t.images_per_sample);
  if (tokens > Count(t.seq_len)) {
    // (SigLIP's and CLIP's patches are fixed: the images are what a sequence has too many of.)
    return {fixed.value() > 0 ? "training.images_per_sample" : "training.image_patches", "makes " + detail::group_digits(tokens.value()) +
                                          " image tokens a sequence, more than training.seq_len (" +
                                          detail::group_digits(t.seq_len) + "): the images' tokens are part of it"};
  }
  return {};
}

VisionSaved vision_saved(const Config& c) {
  const Training& t = c.training;
  const ModelSpec& m = c.model;
  // (MeZO's forward passes run under no_grad: nothing is saved.)
  if (t.images_per_sample == 0 || m.vision_type == VisionTower::kNone || forward_only(t) ||
      !images_unmodelled(c).field.empty()) {
    return {};
  }
  const int column = image_column(c);
  if (qwen_tower(m.vision_type) < 0) return vit_saved(c, column);
  const ImageTerms& k = kImageTerms[qwen_tower(m.vision_type)][column];
  const bool qwen3 = m.vision_type == VisionTower::kQwen3Vl;
  const QwenSizes sizes = qwen_sizes(m);
  const Count depth = sizes.depth, e = sizes.e, ff = sizes.ff, patch = sizes.patch;
  const Count heads = size_or(m.vision_num_heads, 16);
  const Count pixels = size_or(m.vision_in_channels, 3) * size_or(m.vision_temporal_patch_size, 2) * patch * patch;
  const Count deepstack = qwen3 ? Count(m.vision_deepstack_layers) : Count(0);
  const Count n = Count(t.micro_batch_size) * Count(t.images_per_sample) * Count(t.image_patches);
  const Bytes element{column == 0 ? 4 : 2};
  const VisionTrain trains = resolve_train_vision(c);
  const bool encoder = trains == VisionTrain::kAll || trains == VisionTrain::kEncoder;
  const bool ckpt = t.checkpointing == Checkpointing::kFull;
  const auto per_patch = [&](int on_e, int one) { return (e * Count(on_e) + Count(one)) * n * Bytes{1}; };
  // A frozen encoder's checkpointed blocks keep their inputs where the checkpoint's input hook
  // reaches the tower (kInputHooked).
  const bool hooked = ckpt && kInputHooked[qwen_tower(m.vision_type)];
  VisionSaved saved;
  const Bytes checkpointed = per_patch(k.ckpt_e, 0) * depth + per_patch(k.ckpt_first_e, 0);
  if (encoder) {
    saved.blocks = ckpt ? checkpointed
                        : (e * Count(k.block_e) + ff * Count(k.block_ff) + heads * Count(4) + Count(k.block_1)) * n *
                              depth * Bytes{1};
    const bool all = trains == VisionTrain::kAll;
    saved.outside = per_patch(all ? k.out_e : k.enc_out_e, all ? k.out_1 : k.enc_out_1) + pixels * n * element +
                    per_patch(all ? k.deepstack_e : k.enc_deepstack_e, all ? k.deepstack_1 : k.enc_deepstack_1) * deepstack +
                    (ckpt ? Bytes{0} : (e / heads) * n * Bytes{8});
  } else if (trains == VisionTrain::kProjector) {
    saved.blocks = hooked ? checkpointed : Bytes{0};
    saved.outside = (hooked ? per_patch(k.out_e, k.out_1) : per_patch(k.proj_e, k.proj_1)) +
                    per_patch(k.proj_deepstack_e, k.proj_deepstack_1) * deepstack;
  } else if (hooked) {
    saved.blocks = checkpointed;
    saved.outside = per_patch(k.enc_out_e, k.enc_out_1);
  }
  return saved;
}

std::string image_token_words(const ModelSpec& m) {
  const auto n = [](Count v) { return std::to_string(v.value()); };
  const Count merge = size_or(m.vision_spatial_merge_size, 2);
  switch (m.vision_type) {
    case VisionTower::kNone: return "";
    case VisionTower::kQwen2Vl:
    case VisionTower::kQwen25Vl:
    case VisionTower::kQwen3Vl: {
      // Qwen's processor cuts an image into patch-size squares and the merger joins merge² of them.
      const Count side = size_or(m.vision_patch_size, m.vision_type == VisionTower::kQwen3Vl ? 16 : 14) * merge;
      return "(height / " + n(side) + ") × (width / " + n(side) + ") tokens an image, resized to multiples of " + n(side) +
             " pixels";
    }
    case VisionTower::kGemma3:
      return detail::group_digits(size_or(m.vision_tokens_per_image, 256).value()) +
             " tokens an image (Gemma 3's mm_tokens_per_image), and the begin- and end-of-image tokens around them";
    case VisionTower::kMistral3: {
      const Count side = size_or(m.vision_patch_size, 14) * merge;
      return "(height / " + n(side) + ") × (width / " + n(side) + ") tokens an image, and one more for each row";
    }
    case VisionTower::kPaliGemma:  // SigLIP's fixed patches, as LLaVA's over SigLIP below
    case VisionTower::kLlava: break;
  }
  if (m.vision_encoder == VisionEncoder::kPixtral) {
    const Count side = size_or(m.vision_patch_size, 16);
    return "(height / " + n(side) + ") × (width / " + n(side) + ") tokens an image, and one more for each row";
  }
  // CLIP's class token is dropped (vision_feature_select_strategy default); SigLIP has none.
  return detail::group_digits(fixed_patches(m).value()) + " tokens an image (one per patch)";
}

ParameterCount memory_parameters(const Config& c) { return with_trained_vision(c, count_parameters(c.model)); }

bool vision_root_frozen(const Config& c) {
  if (c.model.vision_type == VisionTower::kNone) return false;
  const ParameterCount view = memory_parameters(c);
  return std::any_of(view.vision.begin(), view.vision.end(), [](const TensorGroup& g) { return !g.unit; });
}

// The vision tower's bytes (model.vision_type), whole: frozen, so held as the frozen base is. A
// PEFT method's base: its element, fp32 after prepare_model_for_kbit_training, nn.Linear weights
// quantised by bitsandbytes (GPTQ checkpoints quantise the language model's layers only: a
// tower's linears stay 16-bit). Full fine-tuning: the dtype the model was loaded in.
Bytes vision_tower_bytes(const Config& c, const ParameterCount& params, const PrecisionRecipe& r, TowerPart part,
                         bool unshardable) {
  const Finetune& f = c.training.finetune;
  const bool peft = is_peft(c);
  const Bytes element = !peft ? (accelerate_upcasts_trained(c) ? recipe_for(c.training.precision).weights : r.weights)
                              : lora_base_bytes(r, resolve_implementation(c));
  const QuantizedBase base = quantized_base(c);
  Bytes total{0};
  for (const TensorGroup& tensor : params.vision) {
    if (part == TowerPart::kUnits && !tensor.unit) continue;
    const TensorGroup g = as_stored(tensor, c);
    if (unshardable) {
      if (!bnb_4bit_base(c)) continue;
      total += (fsdp2_leaves_4bit_whole(c) && quantized_tensor(g, f, base) ? frozen_bytes_each(g, f, element, base)
                                                                          : quant_state_bytes_each(g, f, base)) *
               g.count;
      continue;
    }
    total += (peft ? frozen_bytes_each(g, f, element, base) : g.elements_each() * element) * g.count;
  }
  return total;
}

Bytes vision_root_gathered_bytes(const Config& c, const ParameterCount& params, const PrecisionRecipe& r) {
  const Finetune& f = c.training.finetune;
  const bool peft = is_peft(c);
  const Bytes element = r.gathered.is_zero() ? r.weights : r.gathered;
  const QuantizedBase base = quantized_base(c);
  Bytes total{0};
  for (const TensorGroup& tensor : params.vision) {
    if (tensor.unit) continue;
    const TensorGroup g = as_stored(tensor, c);
    total += (peft ? frozen_bytes_each(g, f, element, base) - quant_state_bytes_each(g, f, base)
                   : g.elements_each() * element) *
             g.count;
  }
  return total;
}

}  // namespace memfit
