#include "finetune.hpp"

#include "vision.hpp"

#include "memfit/implementation.hpp"

namespace memfit {

bool accelerate_upcasts_trained(const Config& c) {
  const Framework f = c.training.implementation.framework;
  const Precision p = c.training.precision;
  // fsdp2_prepare_model skips the cast for a model holding bitsandbytes Params4bit
  // (`not model_has_params4bit`); FSDP1's prepare_model casts regardless.
  return runs_accelerate(f) && runs_torch_data_parallel(f) && c.parallel.zero_stage >= 2 &&
         (recipe_for(p).autocast || p == Precision::kBf16Fsdp) && !(runs_fsdp2(c) && bnb_4bit_base(c));
}

const PrecisionRecipe& recipe_of(const Config& c) {
  return !is_peft(c) && accelerate_upcasts_trained(c) ? recipe_trained_in_fp32(c.training.precision)
                                                      : recipe_for(c.training.precision);
}

namespace {

// bitsandbytes 4-bit storage (Dettmers et al. 2023, QLoRA; bitsandbytes/functional.py
// quantize_4bit, ≥ 0.46): two weights per byte, an fp32 absmax per `blocksize` weights and a
// 16-entry fp32 code book per tensor. Double quantisation (compress_statistics) stores the absmax
// as uint8 instead, with an fp32 offset (their mean) and a nested QuantState of blocks of 256
// (quantize_blockwise): an fp32 absmax per 256 absmax values and its own copy of the 256-entry
// fp32 dynamic code (`code.to(A.device, copy=True)`, since bitsandbytes 0.46.0).
constexpr std::int64_t k4bitCodeEntries = 16;           // get_4bit_type: NF4 / FP4 tables
constexpr std::int64_t kNestedBlockElements = 256;      // quantize_blockwise(blocksize=256)
constexpr std::int64_t kNestedCodeEntries = 256;        // create_dynamic_map(): 8-bit dynamic map
constexpr Bytes kCodeBookBytes = Count(k4bitCodeEntries) * kFp32Bytes;
constexpr Bytes kNestedCodeBytes = Count(kNestedCodeEntries) * kFp32Bytes;

// LLM.int8() (Dettmers et al. 2022): one byte per weight and an fp32 scale per output row.
Bytes int8_bytes(const TensorGroup& g) { return g.elements_each() * kByte + g.rows * kFp32Bytes; }

Bytes four_bit_bytes(const TensorGroup& g, const Finetune& f) {
  const Count n = g.elements_each();
  const Count blocks = ceil_div(n, f.quant_block_size);
  const Bytes packed = ceil_div(n, 2) * kByte + kCodeBookBytes;
  if (!f.double_quant) return packed + blocks * kFp32Bytes;
  const Bytes nested = ceil_div(blocks, kNestedBlockElements) * kFp32Bytes + kNestedCodeBytes;
  return packed + blocks * kByte + kFp32Bytes + nested;
}

// auto-gptq's QuantLinear buffers (auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py __init__): qweight
// int32 [in·bits/32, out], qzeros int32 [groups, out·bits/32], scales fp16 [groups, out] and g_idx
// int32 [in], with groups = ceil(in / group_size) (one group for group_size -1).
// ChatGLM's own weight-only quantization (THUDM's quantization.py, QuantizedLinear): the weight as
// int8, or two int4 values per byte (compress_int4_weight), and an fp16 scale per output row
// (weight.abs().max(dim=-1) / (2^(bits-1) - 1)); no zero point.
Bytes chatglm_bytes(const TensorGroup& g, const Finetune& f) {
  return ceil_div(g.elements_each() * f.base_bits, 8) * kByte + g.rows * Bytes{2};
}

Bytes gptq_bytes(const TensorGroup& g, const Finetune& f) {
  const Count out = g.rows, in = g.cols;
  const Count groups = f.gptq_group_size > 0 ? ceil_div(in, f.gptq_group_size) : Count(1);
  const Count bits = f.base_bits;
  constexpr Bytes kInt32{4}, kFp16{2};
  const Bytes qweight = ceil_div(in * bits, 32) * out * kInt32;
  const Bytes qzeros = groups * ceil_div(out * bits, 32) * kInt32;
  return qweight + qzeros + groups * out * kFp16 + in * kInt32;
}

std::vector<Shape> all_parameters(const ParameterCount& params) {
  std::vector<Shape> shapes;
  for (const TensorGroup& g : params.groups) shapes.push_back({g.rows, g.cols, g.count});
  return shapes;
}

}  // namespace

std::int64_t lowest_backward_layer(const Config& c) {
  const Finetune& f = c.training.finetune;
  // A vision tower that trains feeds the language model at its input: backward runs through every
  // block to reach it, as it does to a trained embedding.
  if (!trains_some_layers(c) || f.train_embeddings || resolve_train_vision(c) != VisionTrain::kNone) return 0;
  const std::int64_t layers = c.model.num_hidden_layers;
  return f.lowest_trainable_layer >= 0 ? f.lowest_trainable_layer : std::max<std::int64_t>(0, layers - f.trainable_layers);
}

ParameterCount trained_view(const Config& c, const ParameterCount& params) {
  if (!trains_some_layers(c)) return params;
  const Finetune& f = c.training.finetune;
  const Count layers = max(Count(c.model.num_hidden_layers), Count(1));
  ParameterCount out = params;
  // The trained blocks: the top trainable_layers, or from lowest_trainable_layer up.
  const std::int64_t lowest = f.lowest_trainable_layer >= 0
                                  ? f.lowest_trainable_layer
                                  : std::max<std::int64_t>(0, c.model.num_hidden_layers - f.trainable_layers);
  for (TensorGroup& g : out.groups) {
    if (g.layer != LayerKind::kNone && g.mixer != Mixer::kAll) {
      // A hybrid model's attention or Gated DeltaNet groups: the trained blocks of their kind.
      std::int64_t blocks = 0;
      for (std::int64_t i = lowest; i < lowest + f.trainable_layers && i < c.model.num_hidden_layers; ++i) {
        blocks += params.in_layer(g, i) ? 1 : 0;
      }
      g.count = params.per_layer(g) * blocks;
      continue;
    }
    if (g.layer != LayerKind::kNone) {
      g.count = mul_div(g.count, Count(f.trainable_layers), layers);
      continue;
    }
    // A vision tower's parts in `groups` train (with_trained_vision moved only those).
    if (is_vision(g.component)) continue;
    // A tied head is the token embedding: it trains if either does.
    const bool tied_head = g.component == Component::kTokenEmbedding && c.model.tie_word_embeddings;
    // (A classification model's head is its classifier.)
    const bool head = g.component == Component::kHead || g.component == Component::kClassifier || tied_head;
    const bool trains = (is_embedding(g.component) && f.train_embeddings) || (head && f.train_head);
    if (!trains) g.count = Count(0);
  }
  Count total = 0;
  for (const TensorGroup& g : out.groups) total += g.elements_each() * g.count;
  out.total_count = total;
  return out;
}

std::vector<Shape> trainable_shapes(const Config& c, const ParameterCount& params) {
  if (!is_peft(c)) return all_parameters(trained_view(c, params));
  return peft_parameters(c, params).trainable;
}

TrainableCounts trainable_counts(const Config& c, const ParameterCount& params, Count base_parameter_count) {
  if (trains_some_layers(c)) {
    const Count trained = trained_view(c, params).total_count;
    return {mul_div(trained, base_parameter_count, max(params.total_count, Count(1))), Count(0), Bytes{0}};
  }
  if (!is_peft(c)) return {base_parameter_count, Count(0), Bytes{0}};
  const PeftParameters p = peft_parameters(c, params);
  return {p.trainable_count(), p.added_count(), p.buffer_bytes};
}

bool head_quantized(const Config& c) {
  const Finetune& f = c.training.finetune;
  // A head in modules_to_save trains as a 16-bit copy (peft.cpp), which the forward uses.
  return is_peft(c) && f.base_bits < 16 && f.quant_method == QuantMethod::kBitsandbytes &&
         !(f.modules_to_save & kSaveHead) &&
         implementation_profile(c.training.implementation.framework).bnb_quantizes_head;
}

bool quantized_base_keeps_input(const Config& c) {
  const Finetune& f = c.training.finetune;
  const bool unsloth = c.training.implementation.framework == Framework::kUnsloth;
  const bool bnb_4bit = f.base_bits == 4 && f.quant_method == QuantMethod::kBitsandbytes;
  // ChatGLM's W8A16Linear (quantization.py) saves its input with save_for_backward, int8 or int4.
  const bool chatglm = f.base_bits < 16 && f.quant_method == QuantMethod::kChatglm;
  return is_peft(c) && ((bnb_4bit && (f.bnb_keeps_input || unsloth)) || chatglm);
}

bool bnb_peft_base(const Config& c) {
  const Finetune& f = c.training.finetune;
  return is_peft(c) && f.base_bits < 16 && f.quant_method == QuantMethod::kBitsandbytes;
}

bool bnb_adapters_uncast(const Config& c) {
  const FinetuneMethod m = c.training.finetune.method;
  const bool lora_layer = m == FinetuneMethod::kLora || m == FinetuneMethod::kLoraFa || m == FinetuneMethod::kDora ||
                          m == FinetuneMethod::kAdaLora || m == FinetuneMethod::kHira;
  return lora_layer && bnb_peft_base(c) && resolve_implementation(c).framework != Framework::kUnsloth &&
         recipe_of(c).autocast;
}

bool peft_returns_fp32(const Config& c) {
  const Finetune& f = c.training.finetune;
  const Implementation impl = resolve_implementation(c);
  const bool bnb = bnb_peft_base(c) && impl.framework != Framework::kUnsloth;
  const bool autocast = recipe_of(c).autocast, fp32_adapters = impl.lora_adapter_dtype == LoraAdapterDtype::kFp32;
  switch (f.method) {
    case FinetuneMethod::kDora: return bnb && autocast && fp32_adapters;
    // IA3's layer casts x to fp32 without autocast and takes the dtype to return from the base
    // output it then gives: fp32 either way (ia3/bnb.py `expected_dtype = result.dtype`).
    case FinetuneMethod::kIa3: return bnb && (!autocast || fp32_adapters);
    // RoAd's casts x back, not its result (road/bnb.py `x = x.to(expected_dtype)`): the rotation's
    // dtype, the adapters', with or without autocast.
    case FinetuneMethod::kRoad: return bnb && fp32_adapters;
    default: return false;
  }
}

QuantizedBase quantized_base(const Config& c) { return {experts_left_unquantized(c), head_quantized(c)}; }

// Only the linear layers inside the blocks are quantised, and the head's weight where the quantiser
// takes every nn.Linear (head_quantized; its bias is copied as it is: Lightning's _convert_layers);
// otherwise embeddings, norms and the head stay in 16 bit, as bitsandbytes / transformers leave
// them, or in fp32 after PEFT's prepare_model_for_kbit_training (peft/utils/other.py: every fp16 /
// bf16 parameter of a k-bit model is cast with param.data.to(torch.float32)).
bool quantized_tensor(const TensorGroup& g, const Finetune& f, const QuantizedBase& base) {
  if (f.base_bits == 16) return false;
  const bool quantized = g.linear || (base.head_quantized && g.component == Component::kHead && !g.cols.is_zero());
  return quantized && !(base.experts_unquantized && g.component == Component::kExperts);
}

Bytes frozen_bytes_each(const TensorGroup& g, const Finetune& f, Bytes unquantized, const QuantizedBase& base) {
  const bool upcast = kbit_upcast(f);
  const Bytes kept = upcast ? max(unquantized, kFp32Bytes) : unquantized;
  if (f.base_bits == 16) return g.elements_each() * unquantized;
  if (!quantized_tensor(g, f, base)) return g.elements_each() * kept;
  if (f.quant_method == QuantMethod::kGptq) return gptq_bytes(g, f);
  if (f.quant_method == QuantMethod::kChatglm) return chatglm_bytes(g, f);
  return f.base_bits == 8 ? int8_bytes(g) : four_bit_bytes(g, f);
}

Bytes quant_state_bytes_each(const TensorGroup& g, const Finetune& f, const QuantizedBase& base) {
  if (f.base_bits != 4 || f.quant_method != QuantMethod::kBitsandbytes || !quantized_tensor(g, f, base)) return Bytes{0};
  return four_bit_bytes(g, f) - ceil_div(g.elements_each(), 2) * kByte;
}

bool fsdp2_leaves_4bit_whole(const Config& c) {
  return bnb_4bit_base(c) && c.training.finetune.quant_storage == QuantStorage::kUint8 && c.parallel.zero_stage >= 2 &&
         runs_accelerate(c.training.implementation.framework) && runs_fsdp2(c);
}

Count largest_trainable_tensor(const Config& c, const ParameterCount& params) {
  Count largest = 0;
  for (const Shape& s : trainable_shapes(c, params)) largest = max(largest, s.elements_each());
  return largest;
}

}  // namespace memfit
