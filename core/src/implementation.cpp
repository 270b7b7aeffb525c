#include <type_traits>
#include "memfit/implementation.hpp"

#include <array>
#include <cstddef>

#include "field_table.hpp"
#include "memfit/hf_import.hpp"

namespace memfit {

namespace {

// Knob values shorthand for the table below.
using A = AttentionImpl;
using S = SoftmaxDtype;
using L = LogitsDtype;
using M = AttentionMask;
using X = LossKernel;
using N = NormKernel;
using K = KvSaved;
using P = Projections;
using G = ActivationKernel;
using B = LoraBaseDtype;
using D = LoadPath;
using F = LoraAdapterDtype;

constexpr Implementation knobs(Framework f, A attention, S softmax, L logits, M mask, X loss, N norm, K kv,
                               P projections, G activation, Switch keeps_logits, B lora_base, F adapters, D load) {
  Implementation i;
  i.framework = f;
  i.attention = attention;
  i.softmax_dtype = softmax;
  i.logits_dtype = logits;
  i.attention_mask = mask;
  i.loss = loss;
  i.norm_kernel = norm;
  i.kv_saved = kv;
  i.projections = projections;
  i.activation_kernel = activation;
  i.loop_keeps_logits = keeps_logits;
  i.lora_base_dtype = lora_base;
  i.lora_adapter_dtype = adapters;
  i.load = load;
  i.compile = Switch::kNo;    // no framework compiles unless asked (torchtitan and torchtune: compile = false)
  i.use_cache = Switch::kNo;  // transformers' gradient checkpointing and every other profile: no cache in training
  // transformers >= 4.49 (loss/loss_utils.py ForCausalLMLoss pads the labels) and every other
  // profile's eager loss: no shifted copy of the logits.
  i.loss_shift_copy = Switch::kNo;
  i.moe_dispatch = MoeDispatch::kLoop;
  // torch's checkpoint_wrapper (CheckpointImpl.NO_REENTRANT by default: torchtune's, torchtitan's,
  // LitGPT's activation checkpointing) and engines with checkpointing of their own.
  i.checkpoint_impl = CheckpointImpl::kNonReentrant;
  return i;
}

// unsloth's offloaded checkpointer recomputes on a detached leaf copy of the block's input as the
// reentrant one does (unsloth_zoo/gradient_checkpointing.py, Unsloth_Offloaded_Gradient_Checkpointer).
// transformers' gradient_checkpointing_enable passed use_reentrant=True unless told otherwise from
// 4.35 to 4.x (modeling_utils.py: `gradient_checkpointing_kwargs = {"use_reentrant": True}`) and
// passes False since transformers 5 (huggingface/transformers#43203), which the hf profile models:
// a run on transformers 4 sets training.checkpoint_impl to reentrant.
constexpr Implementation reentrant(Implementation i) {
  i.checkpoint_impl = CheckpointImpl::kReentrant;
  return i;
}

// The profiles whose mixture-of-experts code runs grouped GEMMs: transformers 5 (integrations/moe.py,
// experts_implementation "grouped_mm" by default) and the engines that run its models (deepspeed,
// unsloth, liger), and torchtitan (models/moe: use_grouped_mm). LitGPT's LLaMAMoE and Megatron's
// default SequentialMLP loop over experts; torchtune's is left at loop (not read).
constexpr Implementation grouped_experts(Implementation i) {
  i.moe_dispatch = MoeDispatch::kGrouped;
  return i;
}

// transformers' own code (the hf profile); TRL's SFTTrainer runs it with its own loss.
constexpr Implementation kTransformersKnobs =
    grouped_experts(knobs(Framework::kHf, A::kSdpa, S::kFp32, L::kFp32, M::kAdditive, X::kEager, N::kEager, K::kKvHeads,
                          P::kSeparate, G::kEager, Switch::kNo, B::kHalf, F::kFp32, D::kDirect));

constexpr Implementation trl_knobs(Implementation i) {
  i.framework = Framework::kTrl;
  i.loss = X::kChunkedRecompute;
  return i;
}

constexpr std::int64_t kDeepspeedReduceBucketElements = 500'000'000;  // deepspeed/runtime/zero/config.py: reduce_bucket_size 5e8

// One row per framework, in the Framework enum's order (checked below). Sources: docs/frameworks.md,
// which cites the file and line of every cell; measured on the CPU where the framework runs there
// (tools/frameworks/out/measurements.json).
const std::array<ImplementationProfile, 12> kProfiles = {{
    {Framework::kHf, "hf",
     "transformers with Trainer / accelerate: torch SDPA (GQA passed through), an eager Python RMSNorm, the "
     "loss on fp32 logits, separate q/k/v and gate/up projections",
     "transformers/modeling_utils.py (default sdpa); models/llama/modeling_llama.py (RMSNorm, eager softmax in "
     "fp32); loss/loss_utils.py ForCausalLMLoss (logits.float()); integrations/sdpa_attention.py (enable_gqa)",
     kTransformersKnobs, 0, 0, false, false, true, 0, false, false, true},
    {Framework::kTorchtune, "torchtune",
     "torchtune recipes: SDPA with K/V expanded to every head, F.rms_norm on an fp32 copy, "
     "CEWithChunkedOutputLoss (8 chunks, every chunk's fp32 log-probabilities kept)",
     "torchtune/modules/attention.py (expand before SDPA); modules/rms_norm.py (F.rms_norm(x.float())); "
     "modules/loss/ce_chunked_output_loss.py (num_output_chunks=8)",
     knobs(Framework::kTorchtune, A::kSdpa, S::kFp32, L::kFp32, M::kImplicit, X::kChunked, N::kFusedFp32,
           K::kQueryHeads, P::kSeparate, G::kEager, Switch::kNo, B::kHalf, F::kWeights, D::kDirect),
     8, 0, false, false, false, 0},
    {Framework::kTorchtitan, "torchtitan",
     "torchtitan: FSDP2 mixed precision, flash/flex attention after repeat_kv, nn.RMSNorm (fused), the "
     "chunked loss wrapper (head and loss per chunk, backward per chunk)",
     "torchtitan/components/loss.py (ChunkedLossWrapper, num_chunks 8); models/common/nn_modules.py (nn.RMSNorm)",
     grouped_experts(knobs(Framework::kTorchtitan, A::kFlash, S::kFp32, L::kFp32, M::kImplicit, X::kFusedLinearCe, N::kFused,
           K::kQueryHeads, P::kSeparate, G::kEager, Switch::kNo, B::kHalf, F::kWeights, D::kDirect)),
     8, 0, false, false, false, 0},
    {Framework::kLitgpt, "litgpt",
     "LitGPT: SDPA after repeat_interleave, a fused qkv projection, an all-fp32 RMSNorm, 128-row chunked "
     "cross-entropy on a shifted copy of the logits, the loop keeps the logits",
     "litgpt/model.py (qkv, repeat_interleave, RMSNorm in fp32); litgpt/utils.py chunked_cross_entropy; "
     "litgpt/finetune/full.py (logits held through backward); litgpt/lora.py (LoRAQKVLinear.zero_pad); "
     "litgpt/model.py GptNeoxMLP (F.gelu with approximate); lightning/fabric/plugins/precision/bitsandbytes.py "
     "(every nn.Linear quantised, the head too, from an fp16 copy)",
     knobs(Framework::kLitgpt, A::kSdpa, S::kFp32, L::kCompute, M::kImplicit, X::kChunked, N::kEagerFp32,
           K::kQueryHeads, P::kQkvFused, G::kEager, Switch::kYes, B::kWeights, F::kWeights, D::kDirect),
     0, 128, true, true, false, 0, true, true, false, true, true},
    {Framework::kMegatron, "megatron",
     "Megatron-LM local layers: unfused core attention with the fused masked softmax (16-bit probabilities), "
     "fused QKV and FC1, vocab-parallel cross-entropy on fp32 logits",
     "megatron/core/fusions/fused_softmax.py; megatron/core/tensor_parallel/cross_entropy.py",
     knobs(Framework::kMegatron, A::kEager, S::kCompute, L::kFp32, M::kImplicit, X::kEager, N::kFused,
           K::kQueryHeads, P::kFused, G::kFused, Switch::kNo, B::kHalf, F::kWeights, D::kDirect),
     0, 0, false, false, false, 0},
    {Framework::kMegatronTe, "megatron_te",
     "Megatron-LM with Transformer Engine: TE's flash/fused attention (GQA native), LayerNorm fused into the "
     "QKV and FC1 GEMMs, vocab-parallel cross-entropy on fp32 logits",
     "megatron/core/extensions/transformer_engine.py (TELayerNormColumnParallelLinear, TEDotProductAttention)",
     knobs(Framework::kMegatronTe, A::kFlash, S::kFp32, L::kFp32, M::kImplicit, X::kEager, N::kFused,
           K::kKvHeads, P::kFused, G::kFused, Switch::kNo, B::kHalf, F::kWeights, D::kDirect),
     0, 0, false, false, false, 0},
    {Framework::kDeepspeed, "deepspeed",
     "a transformers model under the DeepSpeed engine: as hf, plus the gradient reduce bucket of 5e8 elements "
     "(ZeRO-2's at every backward, ZeRO-3's for the run)",
     "deepspeed/runtime/zero/config.py (reduce_bucket_size 5e8); runtime/zero/stage_1_and_2.py and stage3.py (IPG bucket)",
     grouped_experts(knobs(Framework::kDeepspeed, A::kSdpa, S::kFp32, L::kFp32, M::kAdditive, X::kEager, N::kEager,
           K::kKvHeads, P::kSeparate, G::kEager, Switch::kNo, B::kHalf, F::kFp32, D::kDirect)),
     0, 0, false, false, true, kDeepspeedReduceBucketElements, false, false, true},
    {Framework::kNanogpt, "nanogpt",
     "nanoGPT: SDPA (flash) or a manual path whose masked_fill keeps a boolean mask per layer, a fused c_attn, "
     "nn.GELU, cross-entropy on the logits as computed, the loop keeps the logits",
     "karpathy/nanoGPT model.py (CausalSelfAttention, masked_fill, nn.GELU); train.py (logits, loss = model(X, Y))",
     knobs(Framework::kNanogpt, A::kSdpa, S::kCompute, L::kCompute, M::kBoolean, X::kEager, N::kEager,
           K::kKvHeads, P::kFused, G::kFused, Switch::kYes, B::kHalf, F::kWeights, D::kDirect),
     0, 0, false, false, false, 0},
    {Framework::kLlmC, "llm_c",
     "llm.c: cuDNN flash attention, fused LayerNorm, GeLU recomputed, a fused classifier that writes the "
     "logits' gradient in place",
     "karpathy/llm.c train_gpt2.cu (fill_in_activation_sizes, recompute, fused_classifier)",
     knobs(Framework::kLlmC, A::kFlash, S::kFp32, L::kCompute, M::kImplicit, X::kFusedCe, N::kFused,
           K::kKvHeads, P::kFused, G::kFused, Switch::kNo, B::kHalf, F::kWeights, D::kDirect),
     0, 0, false, false, false, 0},
    {Framework::kUnsloth, "unsloth",
     "unsloth: flash attention, Triton RMSNorm, RoPE and SwiGLU (gradients written over its inputs), a fused "
     "cross-entropy that keeps the logits and a log-sum-exp and writes the gradient in place",
     "unsloth/kernels/cross_entropy_loss.py; kernels/rms_layernorm.py; kernels/rope_embedding.py; kernels/swiglu.py",
     reentrant(grouped_experts(knobs(Framework::kUnsloth, A::kFlash, S::kFp32, L::kCompute, M::kImplicit, X::kFusedCe, N::kFused,
           K::kKvHeads, P::kSeparate, G::kFusedInplace, Switch::kNo, B::kHalf, F::kFp32, D::kDirect))),
     0, 0, false, false, true, 0, false, false, true},
    {Framework::kLiger, "liger",
     "transformers with Liger-Kernel: fused RMSNorm, RoPE and SwiGLU (gradients written over its inputs), fused "
     "linear cross-entropy (no full logits; the head's gradients computed in forward)",
     "linkedin/Liger-Kernel src/liger_kernel/transformers/monkey_patch.py; ops/fused_linear_cross_entropy.py; "
     "ops/swiglu.py",
     grouped_experts(knobs(Framework::kLiger, A::kSdpa, S::kFp32, L::kFp32, M::kAdditive, X::kFusedLinearCe, N::kFused,
           K::kKvHeads, P::kSeparate, G::kFusedInplace, Switch::kNo, B::kHalf, F::kFp32, D::kDirect)),
     0, 0, false, false, true, 0, false, false, true},
    {Framework::kTrl, "trl",
     "TRL's SFTTrainer: hf with TRL's loss (chunked_nll, its default from 1.7): head and loss per 256 tokens, "
     "recomputed in backward",
     "trl/trainer/sft_trainer.py (_chunked_cross_entropy_loss)",
     trl_knobs(kTransformersKnobs), 0, 256, false, false, true, 0, false, false, true},
}};

bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kProfiles.size(); ++i) {
    if (static_cast<std::size_t>(kProfiles[i].framework) != i) return false;
  }
  return true;
}

template <class E>
E pick(E requested, E profile) {
  return requested == E::kAuto ? profile : requested;
}

}  // namespace

const ImplementationProfile& implementation_profile(Framework framework) {
  static const bool ordered = rows_in_enum_order();
  (void)ordered;  // checked by tests/core/implementation_test.cpp as well
  return kProfiles[static_cast<std::size_t>(framework)];
}

Config config_as_run(const Config& c) {
  Config run = c;
  if (c.training.implementation.framework == Framework::kLitgpt) run.model.tie_word_embeddings = false;
  // A fused projection is one module to PEFT (training.projections fused: GPT-2's c_attn, Falcon's
  // query_key_value, Phi-3's qkv_proj and gate_up_proj, Megatron's linear_qkv and linear_fc1): a
  // target naming part of it adapts all of it, as PEFT's own default targets for these models do
  // (peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING: gpt2 -> c_attn).
  // LitGPT's fused qkv (qkv_fused) adapts q, k and v one by one; GLM-4's gate_up_proj
  // (gate_up_fused) is one module beside separate q, k and v.
  Finetune& f = run.training.finetune;
  const Implementation impl = resolve_implementation(c);
  const bool fused = impl.projections == Projections::kFused;
  if (f.method != FinetuneMethod::kFull && fuses_gate_up(impl.projections)) {
    constexpr unsigned kQkv = kLoraQ | kLoraK | kLoraV;
    if (fused && (f.lora_targets & kQkv) && c.model.attention_type == AttentionType::kStandard) {
      f.lora_targets = (f.lora_targets & ~kQkv) | kLoraQkv;
    }
    if ((f.lora_targets & (kLoraGate | kLoraUp)) && c.model.mlp == MlpKind::kGated) f.lora_targets |= kLoraGate | kLoraUp;
  }
  if (falcon_left_unquantized(c)) {
    // transformers 5 leaves Falcon's linears as they are under bitsandbytes (see the header): a
    // 16-bit base, which prepare_model_for_kbit_training then casts whole to fp32.
    f.base_bits = 16;
    if (f.prepare_kbit && run.training.implementation.lora_base_dtype == LoraBaseDtype::kAuto) {
      run.training.implementation.lora_base_dtype = LoraBaseDtype::kFp32;
    }
  }
  return run;
}

bool falcon_left_unquantized(const Config& c) {
  const Finetune& f = c.training.finetune;
  return f.method != FinetuneMethod::kFull && f.base_bits < 16 && f.quant_method == QuantMethod::kBitsandbytes &&
         runs_transformers_class(c.training.implementation.framework) && c.model.model_type == "falcon";
}

bool runs_torch_data_parallel(Framework f) {
  return f != Framework::kDeepspeed && f != Framework::kMegatron && f != Framework::kMegatronTe &&
         f != Framework::kLlmC;
}

bool runs_fsdp2(Framework f) { return f == Framework::kTorchtitan || f == Framework::kTorchtune; }

bool runs_accelerate(Framework f) {
  return f == Framework::kHf || f == Framework::kTrl || f == Framework::kLiger || f == Framework::kUnsloth;
}

OptimizerImpl resolved_optimizer_impl(const Config& c) {
  if (c.training.optimizer_impl != OptimizerImpl::kAuto) return c.training.optimizer_impl;
  // (LitGPT's pretrain.py passes fused=True on CUDA; its fine-tuning scripts pass nothing.)
  const bool litgpt_finetune =
      c.training.implementation.framework == Framework::kLitgpt && resolved_goal(c.training) != Goal::kPretrain;
  return litgpt_finetune ? OptimizerImpl::kForeach : OptimizerImpl::kFused;
}

bool runs_fsdp2(const Config& c) {
  const Framework f = c.training.implementation.framework;
  if (!runs_torch_data_parallel(f)) return false;
  switch (c.parallel.fsdp_version) {
    case FsdpVersion::kOne: return false;
    case FsdpVersion::kTwo: return true;
    case FsdpVersion::kAuto: break;
  }
  return runs_fsdp2(f);
}

bool fsdp1_wraps_adapters_apart(Framework f) { return runs_accelerate(f) || f == Framework::kTorchtune; }

bool peft_trains_leaf_modules(FinetuneMethod m) {
  switch (m) {
    case FinetuneMethod::kLora:
    case FinetuneMethod::kDora:
    case FinetuneMethod::kLoraFa:
    case FinetuneMethod::kOft:  // OFTRotationModule: a leaf module with its own trainable weight
    case FinetuneMethod::kLnTuning:
    case FinetuneMethod::kPromptTuning:
    case FinetuneMethod::kPrefixTuning:
    case FinetuneMethod::kPTuning:
    case FinetuneMethod::kMultitaskPromptTuning:  // its prompt embedding, as prompt tuning's
    case FinetuneMethod::kCpt:                    // its delta embedding
    case FinetuneMethod::kCartridge: return true;  // its key/value embedding, as prefix tuning's
    default: return false;
  }
}

bool fsdp1_uses_orig_params(const Config& c) {
  return c.parallel.fsdp_use_orig_params || c.training.implementation.framework == Framework::kLitgpt;
}

bool fsdp1_keeps_adapters_apart(const Config& c) {
  return fsdp1_wraps_adapters_apart(c.training.implementation.framework) &&
         peft_trains_leaf_modules(c.training.finetune.method);
}

bool fsdp1_units_mix(const Config& c) {
  return c.training.finetune.method != FinetuneMethod::kFull && c.parallel.zero_stage >= 2 && runs_fsdp1(c) &&
         !fsdp1_keeps_adapters_apart(c);
}

bool runs_fsdp1(const Config& c) {
  return runs_torch_data_parallel(c.training.implementation.framework) && !runs_fsdp2(c);
}

Implementation resolve_implementation(const Implementation& r) {
  const Implementation& p = implementation_profile(r.framework).knobs;
  Implementation out = r;
  out.attention = pick(r.attention, p.attention);
  out.softmax_dtype = pick(r.softmax_dtype, p.softmax_dtype);
  out.logits_dtype = pick(r.logits_dtype, p.logits_dtype);
  out.attention_mask = pick(r.attention_mask, p.attention_mask);
  // chunked_loss (before training.loss existed) asked for the fused linear cross-entropy.
  out.loss = r.loss == LossKernel::kAuto && r.chunked_loss ? LossKernel::kFusedLinearCe : pick(r.loss, p.loss);
  out.norm_kernel = pick(r.norm_kernel, p.norm_kernel);
  out.kv_saved = pick(r.kv_saved, p.kv_saved);
  out.projections = pick(r.projections, p.projections);
  out.activation_kernel = pick(r.activation_kernel, p.activation_kernel);
  out.loop_keeps_logits = pick(r.loop_keeps_logits, p.loop_keeps_logits);
  out.lora_base_dtype = pick(r.lora_base_dtype, p.lora_base_dtype);
  out.lora_adapter_dtype = pick(r.lora_adapter_dtype, p.lora_adapter_dtype);
  out.load = pick(r.load, p.load);
  // torch.compile (torch/_functorch/partitioners.py, min_cut_rematerialization_partition): the
  // forward graph saves the fewest bytes from which backward can recompute every fusible
  // (pointwise or reduction) op. Matmul inputs that are pointwise functions of a saved tensor are
  // recomputed: an RMSNorm's normalised output from its input and rstd (no fp32 copy either), a
  // SwiGLU's silu(gate)·up from gate and up. That is what the fused kernels save; a knob the user
  // set stays as set.
  out.compile = pick(r.compile, p.compile);
  out.use_cache = pick(r.use_cache, p.use_cache);
  out.loss_shift_copy = pick(r.loss_shift_copy, p.loss_shift_copy);
  out.checkpoint_impl = pick(r.checkpoint_impl, p.checkpoint_impl);
  out.moe_dispatch = pick(r.moe_dispatch, p.moe_dispatch);
  // The kernels the model card's setup installs (flash-linear-attention, causal-conv1d).
  if (out.linear_attention_kernel == LinearAttentionKernel::kAuto) out.linear_attention_kernel = LinearAttentionKernel::kFla;
  if (out.compile == Switch::kYes) {
    if (r.norm_kernel == NormKernel::kAuto) out.norm_kernel = NormKernel::kFused;
    if (r.activation_kernel == ActivationKernel::kAuto) out.activation_kernel = ActivationKernel::kFused;
    // torchtune compiles its chunked loss with the model (torchtune/training/_compile.py,
    // compile_loss: CEWithChunkedOutputLoss.compute_cross_entropy under torch.compile): each
    // chunk's fp32 upcast and log-softmax fuse, and a chunk keeps its 16-bit logits and a
    // log-sum-exp per row, what the fused cross-entropy keeps.
    if (out.framework == Framework::kTorchtune && out.loss == LossKernel::kChunked) out.loss = LossKernel::kFusedCe;
  }
  out.chunked_loss = out.loss == LossKernel::kFusedLinearCe;
  return out;
}

bool runs_transformers_class(Framework f) { return f == Framework::kHf || f == Framework::kTrl; }

bool runs_transformers_model(Framework f) {
  return runs_transformers_class(f) || f == Framework::kDeepspeed || f == Framework::kLiger;
}

bool projects_qkv_separately(Projections p) { return p == Projections::kSeparate || p == Projections::kGateUpFused; }

bool fuses_gate_up(Projections p) { return p == Projections::kFused || p == Projections::kGateUpFused; }

LigerPatches liger_patches(std::string_view t) {
  // A model described without a model_type is taken as Llama's layout, which Liger patches whole.
  if (t.empty()) return {true, true, true, LossKernel::kFusedLinearCe};
  // apply_liger_kernel_to_nemotron: ReLU² and the fused loss; LayerNorm1P and its partial rotary
  // are left to transformers.
  if (t == "nemotron") return {true, false, true, LossKernel::kFusedLinearCe};
  // apply_liger_kernel_to_granite: the fused linear cross-entropy raises (Granite scales its
  // logits), and cross_entropy=True by default puts liger_cross_entropy in transformers' loss
  // (transformers.loss.loss_utils nn.functional.cross_entropy): the logits exist, and the kernel
  // writes their gradient over them in forward.
  if (t == "granite") return {true, true, true, LossKernel::kFusedCe};
  // apply_liger_kernel_to_gpt_oss: swiglu=False (its clamped experts are transformers' own).
  if (t == "gpt_oss") return {true, true, false, LossKernel::kFusedLinearCe};
  static constexpr std::string_view kWhole[] = {
      "llama",   "mistral",      "ministral",        "mixtral",      "smollm3",   "qwen2",  "qwen3",
      "qwen3_moe", "gemma",      "gemma2",           "gemma3_text",  "phi3",      "olmo2",  "olmo3",
      "exaone4", "glm4",         "llama4_text",      "qwen3_5_text", "qwen3_5_moe_text", "qwen3_next"};
  for (std::string_view known : kWhole) {
    if (t == known) return {true, true, true, LossKernel::kFusedLinearCe};
  }
  return {false, false, false, LossKernel::kEager};
}

LigerPatches liger_patches(const ModelSpec& m) {
  const std::string& w = m.multimodal_type;
  if (w.empty()) return liger_patches(m.model_type);
  // Liger's wrapper functions: Qwen3-VL's leaves the MLP (swiglu=False); LLaVA's and InternVL's,
  // Gemma 3's, PaliGemma's, Llama 4's, Qwen3.5's and Qwen2-VL's and Qwen2.5-VL's apply their
  // language model's patches; a wrapper not in the table (Mistral 3, InternVL's remote
  // internvl_chat) gets none.
  if (w == "qwen3_vl") return {true, true, false, LossKernel::kFusedLinearCe};
  static constexpr std::string_view kWrappers[] = {"llava",   "internvl", "gemma3",      "paligemma",  "llama4",
                                                   "qwen3_5", "qwen3_5_moe", "qwen2_vl", "qwen2_5_vl", "qwen3_vl_moe"};
  for (std::string_view known : kWrappers) {
    if (w == known) return liger_patches(m.model_type);
  }
  return {false, false, false, LossKernel::kEager};
}

Implementation class_applied(const Config& c) {
  Implementation requested = c.training.implementation;
  const Implementation reference = class_reference(c.model.model_type);
  apply_class_reference(reference, requested);
  if (requested.framework == Framework::kLiger) {
    // What Liger leaves unpatched for this model_type runs as transformers' class does.
    const LigerPatches patches = liger_patches(c.model);
    const auto take = [](auto& knob, auto value) {
      if (knob == std::decay_t<decltype(knob)>::kAuto) knob = value;
    };
    if (!patches.norm && requested.compile != Switch::kYes) {
      take(requested.norm_kernel, reference.norm_kernel == NormKernel::kAuto ? NormKernel::kEager : reference.norm_kernel);
    }
    if (!patches.mlp && requested.compile != Switch::kYes) take(requested.activation_kernel, ActivationKernel::kEager);
    if (!requested.chunked_loss) take(requested.loss, patches.loss);
  }
  return requested;
}

Implementation resolve_implementation(const Config& c) {
  Implementation out = resolve_implementation(class_applied(c));
  if (c.training.implementation.checkpoint_impl == CheckpointImpl::kAuto && c.training.finetune.bnb_keeps_input &&
      runs_transformers_model(out.framework)) {
    out.checkpoint_impl = CheckpointImpl::kReentrant;
  }
  return out;
}

void apply_class_reference(const Implementation& reference, Implementation& impl) {
  if (!runs_transformers_model(impl.framework)) return;
  const auto take = [](auto& knob, auto value) {
    if (knob == std::decay_t<decltype(knob)>::kAuto) knob = value;
  };
  take(impl.softmax_dtype, reference.softmax_dtype);
  take(impl.attention_mask, reference.attention_mask);
  take(impl.projections, reference.projections);
  take(impl.logits_dtype, reference.logits_dtype);
  take(impl.attention, reference.attention);
  take(impl.use_cache, reference.use_cache);
  take(impl.moe_dispatch, reference.moe_dispatch);
  // Compiled, the norms fuse (resolve_implementation); under Liger its RMSNorm replaces the class's
  // where it patches the class (resolve_implementation, liger_patches).
  if (impl.compile != Switch::kYes && impl.framework != Framework::kLiger) {
    take(impl.norm_kernel, reference.norm_kernel);
  }
}

const char* to_string(Framework f) {
  return detail::find_field("training.framework")->choices[static_cast<std::size_t>(f)];
}

}  // namespace memfit
