// What a parameter-efficient fine-tuning method adds to a model, what it trains, and what it
// changes in a training step (core-internal). One function per method, each derived from the
// method's code in Hugging Face PEFT 0.21 (peft/tuners/<method>/layer.py) or, for LLaMA-Adapter v2,
// LitGPT 0.5 (litgpt/adapter_v2.py); tests/core/peft_test.cpp checks every count against PEFT's own
// get_nb_trainable_parameters() on real model configurations (tests/fixtures/peft/).
#pragma once

#include <vector>

#include "memfit/config.hpp"
#include "memfit/estimate.hpp"
#include "memfit/parameters.hpp"
#include "memfit/units.hpp"

namespace memfit {

// A parameter tensor of shape [lead..., rows, cols], `count` times (cols 0: a vector of `rows`;
// lead: the product of any leading dimensions). The shape matters beyond its size: Adafactor-style
// optimizers factor the last two dimensions, 8-bit optimizers keep small tensors in 32 bit.
struct Shape {
  Count rows, cols, count;
  Count lead = 1;
  Count elements_each() const { return lead * (cols.is_zero() ? rows : rows * cols); }
  Count elements() const { return elements_each() * count; }
};

// One linear layer a method adapts: in → out features, `count` of them (one per layer), and the
// target it answers to (a LoraTarget bit). Stacked experts (transformers 5's 3-D expert
// parameters) are one adapted layer per MoE layer holding `stack` experts; PEFT fuses gate and up
// into gate_up_proj at twice the rank (`rank_factor` 2).
struct AdaptedLinear {
  Count in, out, count;
  unsigned target;
  Component component;
  Count stack = 1;
  std::int64_t rank_factor = 1;
  bool bias = false;  // the layer has a bias (GLoRA trains its C, D and E terms only then)
};

struct PeftParameters {
  std::vector<Shape> trainable;     // what the optimizer sees
  std::vector<Shape> frozen_added;  // parameters the method adds but does not train (LoRA-FA's A)
  Count trained_in_base = 0;        // base parameters trained in place (LLaMA-Adapter v2's norms)
  Bytes buffer_bytes{0};            // frozen buffers (VeRA / RandLoRA projections, BOFT permutations)
  Count saved_copies = 0;           // modules_to_save: trainable copies (in the base's dtype, not the adapters')
  Count trainable_count() const;
  Count added_count() const;  // what the method adds to sum(p.numel())
};

// Where LoRA's targets land on a model's MLPs. PEFT 0.21 meets transformers 5's stacked experts
// by rewriting the checkpoint's module names (peft/utils/transformers_weight_conversion.py,
// _convert_peft_config_moe), and only for the families transformers' conversion table maps
// (_MODEL_TO_CONVERSION_PATTERN, plus Mixtral): the expert names move from target_modules to
// target_parameters, so the routed experts (and the router, `gate.weight`) are adapted and every
// nn.Linear of the same names, a dense layer's MLP or a shared expert, loses its adapter. Elsewhere
// (Qwen2-MoE, gpt-oss) the names reach only nn.Linear modules: the dense MLPs and shared experts,
// never the routed experts or the router. Measured: tools/frameworks/moe_lora.py.
enum class ExpertTargeting {
  kModules,   // no stacked experts (a dense model, an nn.Linear per expert): a name reaches every MLP
  kMapped,    // names moved to the stacked experts (or training.finetune.target_parameters)
  kUnmapped,  // names left on the nn.Linear modules: dense MLPs and shared experts only
};
ExpertTargeting expert_targeting(const Config& config);

// The targets among `targets` that reach a tensor group of `component`.
unsigned targets_reaching(unsigned targets, Component component, ExpertTargeting targeting);

// How a run's modules meet LoRA's targets: where the expert names land, and whether a gated MLP's
// gate and up are one fused layer (training.projections fused: Phi-3's gate_up_proj, Megatron's
// linear_fc1), which PEFT adapts with one adapter d → 2·ff and cannot adapt by halves.
struct AdapterLayout {
  ExpertTargeting experts = ExpertTargeting::kModules;
  bool fused_gate_up = false;
};
AdapterLayout adapter_layout(const Config& config);

// The linear layers `targets` names, one entry per kind of layer (a fused `qkv` target joins each
// block's q, k and v into one d → q + k + v layer, as PEFT sees GPT-2's c_attn), where they reach
// (`layout`). Stacked experts are one entry per projection and MoE layer (gate and up as one
// gate_up_proj), `stack` experts wide.
std::vector<AdaptedLinear> adapted_linears(const ParameterCount& params, unsigned targets, AdapterLayout layout);

// The rank of one adapter on `a` per expert of its stack: LoRA's r, doubled on a fused gate_up_proj
// that PEFT reached through the checkpoint's module names (not through target_parameters).
Count expert_adapter_rank(const Finetune& finetune, const AdaptedLinear& a);

// Whether the routed experts are stacked 3-D parameters (training.moe_dispatch grouped:
// transformers 5, torchtitan) rather than an nn.Linear per expert projection.
bool stacked_experts(const Config& config);

// What `finetune.method` adds and trains on this model (empty for a full fine-tune); `params` may
// be one GPU's share.
PeftParameters peft_parameters(const Config& config, const ParameterCount& params);

// What a method changes in the tensors a training step saves for backward (read by
// activations.cpp; the per-layer terms below are added to each block's).
struct PeftActivation {
  Count extra_tokens = 0;          // prompt tuning / p-tuning: virtual tokens prepended to every sequence
  Count extra_keys = 0;            // prefix tuning: key/value positions every layer attends to as well
  bool lora_style = false;         // adapters that save their input and an r-wide intermediate (LoRA and kin)
  unsigned grad_targets = 0;       // projections whose outputs need a gradient (a fused qkv as q | k | v)
  bool input_needs_grad = false;   // the first block's input needs a gradient (trained prompts, norms, tokens)
  bool norms_trained = false;      // norms keep their normalised input for their weight's gradient
  Count frozen_bottom_layers = 0;  // LLaMA-Adapter: blocks below the first adapted one save nothing
};
PeftActivation peft_activation(const Config& config);

// What one block saves for a method beyond the LoRA-style adapters activations.cpp models itself:
// DoRA's base and adapter outputs, IA3's and RoAd's scaled activations, OFT's rotated inputs, the
// dense delta weights that LoHa, LoKr, FourierFT, WaveFT, HRA, HiRA, SHiRA and BOFT build in
// forward, prefix tuning's extra keys and values, LLaMA-Adapter's adaption attention. `seq` is the
// query length on this GPU (virtual tokens included); averaged over the model's layers.
// `input_copy`: the element of an adapter's own cast of its input where PEFT's fp32 adapters make
// one (a 16-bit stream, or autocast recasting it), else zero: the adapters then share the input.
std::vector<NamedBytes> peft_layer_terms(const Config& config, Count batch, Count seq, Bytes act, Bytes input_copy,
                                         Bytes stream);

// What a method's layers allocate for a moment, as the tensors alive at once in the largest adapted
// layer (the layers run one after another). In forward: what it makes beyond what it saves (DoRA's
// weight norm, the factors of a dense update before their product, an FFT's complex output), and,
// where checkpointing's forward drops what the layer saves (kForwardDropped), those saved tensors
// too, built and freed as the layer returns; under torch.no_grad (kNoGrad: MeZO, whose block
// tensors are counted already) only the former. In backward: the gradient of a dense update and
// what the method's backward builds from it. Arguments as peft_layer_terms'. Empty for LoRA and the
// methods that do not adapt linear layers.
enum class PeftMoment { kForwardKept, kForwardDropped, kNoGrad, kBackward };
std::vector<Bytes> peft_temporaries(const Config& config, Count batch, Count seq, Bytes act, Bytes input_copy,
                                    Bytes stream, PeftMoment moment);

// Tensors alive at once, together.
inline Bytes total(const std::vector<Bytes>& tensors) {
  Bytes sum{0};
  for (Bytes b : tensors) sum += b;
  return sum;
}

// What a method saves outside the blocks (LLaMA-Adapter v2's scaled head output).
Bytes peft_outside_bytes(const Config& config, Count tokens, Bytes act);

// Configuration rules a method's PEFT implementation enforces (block sizes dividing the features,
// targets it needs), as issues naming the field.
void validate_peft(const Config& config, std::vector<Issue>& errors);

// Methods that adapt linear layers (training.finetune.lora_targets applies), and of those the ones
// whose size is set by training.finetune.lora_rank (not IA3, OFT, BOFT, FourierFT, WaveFT, C3A, RoAd).
bool adapts_linears_method(FinetuneMethod method);
bool uses_rank_method(FinetuneMethod method);

// Methods that prepend trained virtual tokens to every sequence (prompt tuning, P-tuning, multitask
// prompt tuning, CPT), and those that hand every layer trained past keys and values (prefix tuning,
// Cartridge).
bool prepends_virtual_tokens(FinetuneMethod method);
bool prefixes_keys_values(FinetuneMethod method);

}  // namespace memfit
