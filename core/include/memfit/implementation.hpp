// Implementation profiles: how the code that runs the model behaves, one row per framework
// (implementation.cpp). A configuration names a framework (training.framework); each knob of
// the profile can be overridden on its own (training.softmax_dtype, training.loss, ...); `auto`
// takes the profile's value. The result echoes the resolved values. docs/frameworks.md cites the
// framework code behind every cell.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memfit/config.hpp"

namespace memfit {

struct ImplementationProfile {
  Framework framework;
  const char* name;         // "hf"
  const char* description;  // in words
  const char* source;       // where the behaviour is in the framework's code
  Implementation knobs;     // every knob's value (never kAuto)
  // Facts of the framework that are not knobs of their own.
  std::int64_t loss_chunks;      // chunked losses: chunks of B·T (0: by loss_chunk_rows or Liger's rule)
  std::int64_t loss_chunk_rows;  // chunked losses: rows per chunk (0: by loss_chunks)
  bool loss_copies_logits;       // the loss input is a shifted copy of the logits (LitGPT)
  bool attention_output_copied;  // the attention output is transposed into a copy for the output projection (LitGPT)
  bool rotary_saved;             // rotary cos/sin computed per forward and saved (transformers), not a buffer
  std::int64_t reduce_bucket_elements;  // gradient reduce bucket under ZeRO-2 and ZeRO-3 (DeepSpeed: 5e8)
  // LoRA on the fused qkv: the adapters' output is zero-padded to the qkv width by an out-of-place
  // index_copy, whose backward keeps its source (LitGPT's LoRAQKVLinear.zero_pad).
  bool lora_qkv_padded = false;
  // GELU of every approximation as one torch kernel that saves its input (LitGPT's
  // F.gelu(x, approximate=config.gelu_approximate)), never transformers' Python gelu_new.
  bool gelu_kernel = false;
  // Attention runs through transformers' modeling code and its attention integrations
  // (transformers/integrations/sdpa_attention.py, flash_attention.py): hf and the profiles on it.
  bool transformers_attention = false;
  // A bitsandbytes base quantises the output head too: Lightning Fabric's BitsandbytesPrecision
  // (LitGPT's --quantize bnb.*) swaps every torch.nn.Linear for its 4- or 8-bit class while the
  // model is built (lightning/fabric/plugins/precision/bitsandbytes.py, module_init_context), and
  // LitGPT's lm_head is one (LoRALinear.linear in litgpt/lora.py). transformers keeps the output
  // embedding in 16 bit (integrations/bitsandbytes.py, get_keys_to_not_convert).
  bool bnb_quantizes_head = false;
  // The 4-bit weights are quantised from an fp16 copy (Lightning's _Linear4bit.quantize:
  // weight.to(dtype=torch.half) before bitsandbytes' quantize_4bit), so the quantisation state
  // records fp16: every dequantize_4bit returns fp16, and MatMul4Bit's .to(A.dtype) makes a second
  // copy under bf16 compute (bitsandbytes/autograd/_functions.py MatMul4Bit forward and backward).
  // transformers quantises the weight in the dtype it was loaded in, the compute dtype.
  bool bnb_quantized_from_fp16 = false;
};

const ImplementationProfile& implementation_profile(Framework framework);

// The implementation with every `auto` resolved (never kAuto; chunked_loss folded into loss).
Implementation resolve_implementation(const Implementation& requested);
// The same, for a whole configuration: where the checkpointing implementation is left to the
// profile but the run names bitsandbytes before 0.43.2 (training.finetune.bnb_keeps_input), the
// profiles that follow transformers' own default (hf, trl, deepspeed, liger: non-reentrant since
// transformers 5) take that of transformers 4, the versions of that bitsandbytes: reentrant.
// The class knobs of the model's transformers class (class_reference of model.model_type) apply
// there first, under the frameworks that run that class, where the configuration leaves them at
// auto; under Liger, what Liger leaves unpatched for the model_type runs as the class does.
Implementation resolve_implementation(const Config& c);
// The knobs as asked, with the model's class knobs (and under Liger what it leaves to the class) where
// they were left at auto; the rest still auto.
Implementation class_applied(const Config& c);

// What Liger-Kernel patches for a model_type: liger_kernel/transformers/monkey_patch.py,
// MODEL_TYPE_TO_APPLY_LIGER_FN and the defaults of each apply_liger_kernel_to_* function, which
// transformers' Trainer (use_liger_kernel, _apply_liger_kernel_to_instance) and
// AutoLigerKernelForCausalLM apply. A model_type not in that table is left as it is ("... is not
// supported by Liger kernel"): `known` false, nothing patched.
struct LigerPatches {
  bool known;       // in Liger's table
  bool norm;        // the class's RMSNorm replaced by LigerRMSNorm
  bool mlp;         // the MLP's activation by Liger's SwiGLU / GEGLU / ReLU² kernel
  LossKernel loss;  // fused_linear_ce by default; Granite's liger_cross_entropy; eager when unpatched
};
LigerPatches liger_patches(std::string_view model_type);
// The same for a model: a multimodal wrapper's language model gets what Liger's wrapper function
// applies (model.multimodal_type).
LigerPatches liger_patches(const ModelSpec& model);

// Under the frameworks that run the transformers class itself (hf, and TRL's SFTTrainer, which
// patches only the loss) a model runs as its class does: the class's knobs (class_reference of its
// model_type) replace those still at auto; so they do under DeepSpeed and Liger, whose profiles run
// that class too (apply_class_reference, called by resolve_implementation). A class's norm applies
// to eager code only: compiled, the norms fuse (resolve_implementation).
bool runs_transformers_class(Framework framework);
// The frameworks whose model is the transformers class, run as it is or inside another engine: hf,
// trl, deepspeed (the class under the DeepSpeed engine) and liger (Liger's kernels patched into its
// norms, rotary, MLP and loss). Their attention and heads are the class's.
bool runs_transformers_model(Framework framework);
// What training.projections (resolved) makes one matmul: q, k and v as separate matmuls (separate,
// gate_up_fused); gate and up as one (fused, gate_up_fused: GLM-4's gate_up_proj).
bool projects_qkv_separately(Projections projections);
bool fuses_gate_up(Projections projections);
void apply_class_reference(const Implementation& reference, Implementation& impl);

const char* to_string(Framework f);

// The configuration with the model as the framework builds it. LitGPT never ties the output head
// to the token embedding: its GPT holds a separate lm_head (nn.Linear) and transformer.wte
// (nn.Embedding) (litgpt/model.py), and scripts/convert_hf_checkpoint.py copies
// transformer.wte.weight into lm_head.weight when a Hugging Face checkpoint has no head of its own
// (Gemma, Falcon, ...), so load_state_dict fills two tensors. Every other framework keeps the tie.
// A part of a fused projection named as a LoRA target stands for the whole fused layer, and a
// Falcon base that transformers does not quantise is 16-bit (falcon_left_unquantized).
Config config_as_run(const Config& config);

// transformers 5 quantises with bitsandbytes only modules whose type is exactly nn.Linear (or
// Conv1D): integrations/bitsandbytes.py replace_with_bnb_linear, `type(module) is nn.Linear`
// (transformers 4 tested isinstance). Falcon's FalconLinear subclass is left as it is: the whole
// base stays 16-bit under a 4- or 8-bit config (measured: transformers 5.24 on the CPU).
bool falcon_left_unquantized(const Config& config);

// Whether the framework's data parallelism is torch's own (DDP, FSDP1 / FSDP2). DeepSpeed,
// Megatron and llm.c shard, gather and reduce with engines of their own.
bool runs_torch_data_parallel(Framework framework);
// Whether its sharding is FSDP2 (fully_shard: torchtitan, torchtune) rather than FSDP1, by
// default; parallel.fsdp_version chooses (runs_fsdp2(config)).
bool runs_fsdp2(Framework framework);
// Whether the run shards with FSDP2: parallel.fsdp_version, or the framework's own.
bool runs_fsdp2(const Config& config);
// Whether its FSDP1 wraps every leaf module with a trainable weight as a unit of its own: the HF
// Trainer installs PEFT's fsdp_auto_wrap_policy for a PEFT model (transformers trainer.py,
// _fsdp_qlora_plugin_updates: for a LoraConfig in transformers 4, any PEFT config in transformers 5,
// which the hf profile follows), torchtune's FSDP1 LoRA recipe its lora_fsdp_wrap_policy. LitGPT
// wraps whole Blocks (FSDPStrategy(auto_wrap_policy={Block})). Measured: tools/frameworks/fsdp1_units.py.
bool fsdp1_wraps_adapters_apart(Framework framework);
// Whether a PEFT method trains only such leaf modules' weights (LoRA's A and B, DoRA's magnitude
// layer, LN tuning's norm copies) or the prompt modules PEFT's policy names (PromptEmbedding,
// PrefixEncoder, PromptEncoder); IA3, VeRA, AdaLoRA, OFT and the rest keep parameter dicts inside
// the wrapped linear layer, which stays in its block's unit.
bool peft_trains_leaf_modules(FinetuneMethod method);
// Both: under FSDP1 no unit mixes the method's trainable tensors with the frozen base.
bool fsdp1_keeps_adapters_apart(const Config& config);
// Whether FSDP1 shards a PEFT method whose tensors share the blocks' units with the frozen base
// (not fsdp1_keeps_adapters_apart): such units need use_orig_params and one dtype (validate.cpp), get
// a gradient whole and are cast to fp32 whole by accelerate (placement.cpp).
bool fsdp1_units_mix(const Config& config);
// Whether FSDP1 runs with use_orig_params=True: parallel.fsdp_use_orig_params, except under LitGPT,
// whose Lightning FSDPStrategy always sets it (lightning/fabric/strategies/fsdp.py:
// _fsdp_kwargs.setdefault("use_orig_params", True); LitGPT's scripts pass nothing else).
bool fsdp1_uses_orig_params(const Config& config);
// Whether its sharding, where it shards, is FSDP1 (FullyShardedDataParallel): torch's data
// parallelism, not FSDP2. FSDP1's options (use_orig_params, limit_all_gathers) apply only then.
bool runs_fsdp1(const Config& config);
// Whether its distributed training goes through accelerate (the HF Trainer, TRL and the stacks that
// patch a transformers model under them).
bool runs_accelerate(Framework framework);

// The optimizer step a configuration runs: training.optimizer_impl, or under auto its framework's
// default. transformers' TrainingArguments defaults to adamw_torch_fused on PyTorch >= 2.8
// (training_args.py default_optim, huggingface/transformers#37358); DeepSpeed steps with its own
// FusedAdam (or CPU Adam, offloaded); torchtune's recipe configs set fused: True; torchtitan's
// optimizer implementation defaults to "fused" (components/optimizer/optimizer.py); Megatron uses
// Apex / Transformer Engine FusedAdam; nanoGPT passes fused=True on CUDA (model.py
// configure_optimizers); llm.c updates in its own kernel. LitGPT's fine-tuning scripts build
// torch.optim.AdamW with neither flag (utils.py instantiate_torch_optimizer): PyTorch's foreach.
OptimizerImpl resolved_optimizer_impl(const Config& config);

// The knobs' JSON keys (all under training.), in the order the result echoes them.
inline constexpr const char* kImplementationKeys[] = {
    "framework", "attention", "softmax_dtype", "logits_dtype", "attention_mask", "loss", "norm_kernel",
    "kv_saved", "projections", "activation_kernel", "loop_keeps_logits", "lora_base_dtype", "lora_adapter_dtype",
    "load", "compile", "use_cache", "loss_shift_copy", "moe_dispatch", "checkpoint_impl"};

}  // namespace memfit
