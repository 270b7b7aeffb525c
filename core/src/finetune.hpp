// What a fine-tuning method trains and what it keeps frozen (core-internal): the trainable tensors
// the optimizer sees, the parameters a method adds, and the bytes of a frozen (possibly quantised)
// base. What each PEFT method adds is in peft.cpp.
#pragma once

#include <vector>

#include "memfit/config.hpp"
#include "memfit/parameters.hpp"
#include "memfit/recipes.hpp"
#include "memfit/units.hpp"
#include "peft.hpp"

namespace memfit {

// A parameter-efficient method: the base is frozen and the method's own parameters are trained.
inline bool is_peft(const Config& c) { return c.training.finetune.method != FinetuneMethod::kFull; }

// A parameter-efficient method over a bitsandbytes 4-bit (QLoRA) base.
inline bool bnb_4bit_base(const Config& c) {
  const Finetune& f = c.training.finetune;
  return is_peft(c) && f.base_bits == 4 && f.quant_method == QuantMethod::kBitsandbytes;
}

// bitsandbytes' MatMul4Bit before 0.43.2 keeps each 4-bit linear's input A as a ctx attribute
// (bitsandbytes/autograd/_functions.py, `ctx.tensors = (A, B)`; PR #1270 made it `(None, B)`),
// which backward does not free (activation_model: retained_bytes). unsloth's fused LoRA functions
// save those inputs with save_for_backward instead, whatever the version: not retained.
inline bool bnb_inputs_retained(const Config& c, Framework framework) {
  return bnb_4bit_base(c) && c.training.finetune.bnb_keeps_input && framework != Framework::kUnsloth;
}

// accelerate's FSDP preparation under mixed precision (the HF Trainer's bf16 / fp16: a recipe under
// autocast, or bf16_fsdp) keeps what the optimizer steps in fp32, as DeepSpeed does, whatever the
// model was loaded in: FSDP1 casts every unit's flat parameter that requires a gradient to fp32
// (accelerate/accelerator.py, prepare_model: "Upcasted low precision parameters ... because mixed
// precision turned on in FSDP"), a unit mixing frozen and trained parameters whole; FSDP2 casts
// every trained parameter (accelerate/utils/fsdp_utils.py, fsdp2_prepare_model), unless the model
// holds bitsandbytes 4-bit weights. Measured on accelerate's own code:
// tools/frameworks/accelerate_upcast.py.
bool accelerate_upcasts_trained(const Config& c);

// The recipe a configuration's tensors follow: training.precision's, except where accelerate's FSDP
// upcast holds a full fine-tune's 16-bit weights, gradients and states in fp32 (bf16_autocast then
// stores what bf16_fsdp does). The memory model reads this; the step-time model keeps the
// precision's own recipe (its rates and traffic per layout, step_time.cpp).
const PrecisionRecipe& recipe_of(const Config& c);

// A PEFT method's trained tensors are fp32: PEFT's own (training.lora_adapter_dtype fp32, its
// autocast_adapter_dtype) or after accelerate's FSDP upcast. `implementation` resolved.
inline bool peft_trains_in_fp32(const Config& c, const Implementation& implementation) {
  return is_peft(c) &&
         (implementation.lora_adapter_dtype == LoraAdapterDtype::kFp32 || accelerate_upcasts_trained(c));
}

// Bytes per element of the trained weights' gradients between backward and the step. DeepSpeed
// keeps them in the model's 16-bit dtype under ZeRO (engine.py get_data_types: grad_accum_dtype
// defaults to the model dtype, fp32 only for bf16 without ZeRO, whose BF16_Optimizer accumulates
// in fp32; its fp16 optimizer keeps fp16 gradients too) and casts them to fp32 at the step
// (phases.cpp, deepspeed_fp32_gradients); Megatron's master recipes accumulate in fp32 main grads.
inline Bytes stored_gradient_bytes(const Config& c, const PrecisionRecipe& r) {
  const Framework f = c.training.implementation.framework;
  const bool deepspeed_16bit = f == Framework::kDeepspeed && !r.master.is_zero() &&
                               (c.parallel.zero_stage >= 1 || c.training.precision == Precision::kFp16Master);
  // llm.c allocates the gradients like the parameters, in floatX (train_gpt2.cu, gpt2_backward:
  // malloc_and_point_parameters(&model->grads, model->param_elements, model->param_sizeof)), beside
  // its fp32 master copy.
  const bool llm_c_16bit = f == Framework::kLlmC && !r.master.is_zero();
  return deepspeed_16bit || llm_c_16bit ? r.weights : r.gradients;
}

// Bytes per element of a parameter-efficient base that stays unquantised: 16-bit, fp32, or the
// recipe's weights (training.lora_base_dtype; `implementation` resolved).
inline Bytes lora_base_bytes(const PrecisionRecipe& r, const Implementation& implementation) {
  switch (implementation.lora_base_dtype) {
    case LoraBaseDtype::kFp32: return kFp32Bytes;
    case LoraBaseDtype::kWeights: return r.weights;
    case LoraBaseDtype::kAuto:
    case LoraBaseDtype::kHalf: break;
  }
  return r.frozen_base;
}

// PEFT's prepare_model_for_kbit_training on an 8/4-bit base (peft/utils/other.py) casts every
// remaining 16-bit parameter to fp32: the embedding's output, and with it the residual stream, is
// then fp32 (bitsandbytes' Linear4bit / Linear8bitLt compute in their compute dtype and return the
// input's dtype, and the norms' fp32 weights keep their outputs fp32), so each quantised linear
// casts its fp32 input to the compute dtype itself, autocast or not. A GPTQ model is left as it is
// (`if not is_gptq_quantized:` guards the cast).
inline bool kbit_upcast(const Finetune& f) {
  return f.prepare_kbit && f.base_bits != 16 && f.quant_method != QuantMethod::kGptq;
}
inline bool kbit_fp32_stream(const Finetune& f) { return f.method != FinetuneMethod::kFull && kbit_upcast(f); }

// bitsandbytes quantises nn.Linear modules only (transformers/integrations/bitsandbytes.py
// replace_with_bnb_linear), so transformers 5's stacked 3-D expert parameters stay in their load
// dtype under a 4- or 8-bit base, and in fp32 after prepare_model_for_kbit_training
// (bitsandbytes issue #1849: "the dominant share of an MoE's weights ... silently skipped and stay
// full precision"). unsloth quantises them itself (unsloth-zoo PR #527, Params4bit experts).
inline bool experts_left_unquantized(const Config& c) {
  const Finetune& f = c.training.finetune;
  return is_peft(c) && f.base_bits < 16 && f.quant_method == QuantMethod::kBitsandbytes && stacked_experts(c) &&
         c.training.implementation.framework != Framework::kUnsloth;
}

// Full fine-tuning of some blocks only (training.finetune.trainable_layers >= 0).
inline bool trains_some_layers(const Config& c) {
  return !is_peft(c) && c.training.finetune.trainable_layers >= 0;
}
// The lowest block backward reaches: 0 when the embedding trains or every block does, else the
// lowest trained block (the top trainable_layers blocks unless lowest_trainable_layer says).
std::int64_t lowest_backward_layer(const Config& config);
// `params` restricted to what trains when only some blocks do: each block group scaled to the
// trained share of the blocks it holds, the embeddings and the head only when they train. Every
// other configuration: `params` as it is.
ParameterCount trained_view(const Config& config, const ParameterCount& params);

// The tensors the optimizer sees: every parameter for a full fine-tune, the method's otherwise.
std::vector<Shape> trainable_shapes(const Config& config, const ParameterCount& params);

// What the method trains, and what it adds to sum(p.numel()) (a full fine-tune: every parameter,
// nothing added).
struct TrainableCounts {
  Count trainable;
  Count added;
  Bytes buffer_bytes;  // frozen buffers a method registers (see PeftParameters)
};
TrainableCounts trainable_counts(const Config& config, const ParameterCount& params, Count base_parameter_count);

// Whether a bitsandbytes base quantises the output head as well as the blocks' linear layers
// (ImplementationProfile::bnb_quantizes_head: LitGPT under Lightning's plugin).
bool head_quantized(const Config& config);
// The quantised base's linears keep their input for backward: bitsandbytes 4-bit before 0.43.2
// (training.finetune.bnb_keeps_input) or under unsloth's fused LoRA functions, and ChatGLM's own
// W8A16Linear (activations.cpp, Dims::quantized_base_saves_input).
bool quantized_base_keeps_input(const Config& config);
// PEFT's DoRA, IA3 and RoAd over a bitsandbytes base with fp32 adapters: each adapted layer returns
// fp32, an fp32 vector [out] (or [in]) times a 16-bit tensor: DoRA's magnitude in
// (m/‖W′‖ − 1)·base_result + m/‖W′‖·lora_result·s (lora/dora.py), IA3's scale on the base output or,
// feedforward, on the input the 4-bit layer then returns in fp32 (ia3/layer.py), RoAd's rotation
// columns (road/layer.py _apply_road). DoRA's bitsandbytes layer casts back only with autocast off
// (lora/bnb.py Linear4bit and Linear8bitLt: `requires_conversion`); IA3's returns fp32 without
// autocast too, whatever its adapters' dtype, and RoAd's never casts its result back (ia3/bnb.py,
// road/bnb.py).
bool peft_returns_fp32(const Config& config);
// A PEFT run over a bitsandbytes base (4- or 8-bit).
bool bnb_peft_base(const Config& config);
// PEFT's LoRA-layer methods over a bitsandbytes base under autocast: the layer hands its input to
// the adapters as it is, uncast (lora/bnb.py, adalora/bnb.py, hira/bnb.py: `requires_conversion =
// not torch.is_autocast_enabled()`; DoRA's variant gets the same input). LoRA, LoRA-FA, DoRA,
// AdaLoRA and HiRA.
bool bnb_adapters_uncast(const Config& config);

// Which modules of a quantised base the quantiser covers besides the blocks' linear layers.
struct QuantizedBase {
  bool experts_unquantized = false;  // the routed experts stay as loaded (experts_left_unquantized)
  bool head_quantized = false;       // the output head is quantised too (head_quantized)
};
QuantizedBase quantized_base(const Config& config);

// One tensor of a parameter-efficient run's frozen base: 16-bit (or fp32) weights, int8, or 4-bit
// (bitsandbytes NF4 / FP4, with or without double quantisation); `base` says which modules beyond
// the blocks' linear layers the quantiser covers.
Bytes frozen_bytes_each(const TensorGroup& g, const Finetune& finetune, Bytes unquantized, const QuantizedBase& base);
// Whether the quantiser covers one tensor of that base (the ones frozen_bytes_each gives quantised).
bool quantized_tensor(const TensorGroup& g, const Finetune& finetune, const QuantizedBase& base);
// Of frozen_bytes_each, what a bitsandbytes 4-bit tensor keeps beside its packed codes: the
// QuantState (absmax, code book, the nested state under double quantisation). It is an attribute of
// the Params4bit and of its module, not a parameter, so FSDP and ZeRO-3 shard only the codes and
// every GPU holds the whole state (measured: tools/frameworks/fsdp2_4bit.py). Zero for other tensors.
Bytes quant_state_bytes_each(const TensorGroup& g, const Finetune& finetune, const QuantizedBase& base);

// Whether accelerate's FSDP2 leaves a bitsandbytes 4-bit base out of its sharding: frozen
// Params4bit that are not floating point (quant_storage uint8) go to fully_shard's ignored_params
// (accelerate utils/fsdp_utils.py, fsdp2_prepare_model: "Excluding from FSDP2 sharding to prevent
// quant_state corruption", accelerate #3987), so each GPU holds the quantised weights whole and
// gathers none of them.
bool fsdp2_leaves_4bit_whole(const Config& config);

// The largest trainable tensor's elements (the per-parameter optimizer loop's temporary).
Count largest_trainable_tensor(const Config& config, const ParameterCount& params);

}  // namespace memfit
