#include "activations.hpp"

#include <algorithm>

#include "finetune.hpp"
#include "optimizer_states.hpp"
#include "placement.hpp"
#include "memfit/implementation.hpp"
#include "memfit/recipes.hpp"
#include "peft.hpp"
#include "vision.hpp"

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
  Bytes base_weights;  // the unquantised weights' dtype as the stream had it (the weights' under LoRA)
  Bytes softmax;  // the softmax output element
  bool compute_softmax;  // GPT-2-style eager code: softmax in the compute dtype, scores scaled by a 0-dim tensor
  Implementation impl;   // every knob resolved
  bool autocast;         // torch.autocast: fp32 ops (softmax, pow, layer_norm) keep fp32 results
  std::int64_t input_casts_qkv;  // copies of an attention input that q, k, v save (autocast casts per matmul)
  std::int64_t input_casts_mlp;  // copies of an MLP input that gate and up save
  bool adapter_input_copies;     // each LoRA adapter saves its own cast of its input (PEFT's fp32 adapters)
  bool adapters_cast;            // fp32 adapters under autocast: what each saves is autocast's cast of its input
  bool factors_cast;             // fp32 adapter factors cast to a 16-bit stacked weight's dtype (ParamWrapper)
  Bytes adapter_element;         // an element of what an adapter's matmuls save
  bool attention_output_copied;  // a copy of the attention output feeds the output projection (LitGPT)
  bool lora_qkv_padded;          // the q/k/v adapters' output is zero-padded with a saved index_copy (LitGPT)
  bool gelu_kernel;              // gelu_new as torch's tanh GELU kernel (LitGPT), not transformers' Python code
  // MLA through transformers' attention integrations (DeepSeek-V2/V3 classes): v is a view of
  // kv_b_proj's output, whose k_nope half the kernel's saved v keeps alive (SDPA), or v is
  // zero-padded to the q/k head dim, so the kernel's v and output are that wide and o_proj reads a
  // cropped copy (flash). Zero where neither applies.
  Count mla_value_view_extra;    // per head: the k_nope values kept alive beside v (SDPA)
  Count mla_value_pad;           // per head: the zero padding of v and of the output (flash)
  bool dropout;
  bool residual_dropout;  // dropout masks on the embeddings and both residual branches
  bool attention_softcap;  // the scores go through tanh soft-capping (Gemma 2)
  bool attention_sinks;    // a learned logit per head joins each softmax row (gpt-oss)
  bool lora;
  unsigned targets;  // LoRA target bits
  ExpertTargeting targeting;  // where gate / up / down / router land on a mixture of experts (peft.hpp)
  Bytes mlp_act;              // an element of the MLP's intermediate tensors (d.act, or fp32 out of a
                              // bitsandbytes linear fed fp32: an fp32 stream, a LayerNorm under autocast)
  bool fused_gate_up;         // gate and up are one adapted layer (peft.hpp AdapterLayout)
  Count rank;
  bool lora_dropout;
  Count largest_4bit_linear;     // a 4-bit bitsandbytes base's largest block linear on this GPU (0: none)
  bool quantized_base_saves_input;  // bitsandbytes 4-bit linears keep their input for backward
  bool quantized_inputs_retained;   // ... as ctx attributes, which backward does not release
  bool experts_unquantized;         // a bitsandbytes base leaves the stacked experts as they are
  // What a GPTQ base's CUDA kernel keeps for backward: the dequantised fp16 weight of each of one
  // block's quantised linears (set by activation_model, which has the parameter groups; 0 otherwise).
  Bytes gptq_weights_dense, gptq_weights_moe;
  PeftActivation peft;              // what a PEFT method changes (peft.cpp)
};

// torch FSDP1 reshards a unit whose flat parameter needs no gradient from a hook on the unit's
// inputs (torch/distributed/fsdp/_runtime_utils.py, _register_post_backward_reshard_only_hook:
// register_multi_grad_hook on the inputs that require grad, kept in
// flat_param._post_backward_hook_state until _finalize_params removes it at backward's end). Under
// reentrant checkpointing the unit runs under no_grad in forward and registers the hook when
// backward recomputes it, on the detached leaf copy of its input (torch/utils/checkpoint.py,
// CheckpointFunction.backward: detach_variable); the hook holds that leaf's grad accumulator, which
// holds the leaf, and backward writes the leaf's .grad: each block's input and its gradient stay
// until the whole backward ends, instead of going with the block's backward. Frozen units are what
// a PEFT method under FSDP1 has where its tensors are units of their own (PEFT's
// fsdp_auto_wrap_policy under the HF Trainer, torchtune's: fsdp1_keeps_adapters_apart), whatever
// use_orig_params says; FSDP2 (torchtitan, torchtune) has no such hook.
// On one GPU too: FSDP1 falls back to NO_SHARD there but still registers the hooks. Not under
// pipeline stages, which no FSDP1 stack here runs (and whose final callback runs per micro-batch).
bool fsdp1_keeps_recomputed_inputs(const Config& c, const Implementation& impl) {
  // Frozen units exist where the adapters are units of their own, whatever use_orig_params says (a
  // unit mixing them without use_orig_params cannot be built: refused, validate.cpp).
  return runs_fsdp1(c) && c.parallel.zero_stage >= 2 && c.parallel.pipeline == 1 && is_peft(c) &&
         fsdp1_keeps_adapters_apart(c) &&
         c.training.checkpointing == Checkpointing::kFull && impl.checkpoint_impl == CheckpointImpl::kReentrant &&
         !forward_only(c.training);
}

Dims make_dims(const Config& c) {
  const ModelSpec& m = c.model;
  const Parallel& p = c.parallel;
  const PrecisionRecipe& r = recipe_of(c);
  const Implementation impl = resolve_implementation(c);
  Dims d;
  d.batch = c.training.micro_batch_size;
  d.peft = peft_activation(c);
  d.full_seq = Count(c.training.seq_len) + d.peft.extra_tokens + d.peft.extra_keys;
  d.seq = ceil_div(Count(c.training.seq_len) + d.peft.extra_tokens, p.context);
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
  d.lora = is_peft(c);
  d.act = r.compute;
  // The stream takes the embedding's dtype: fp32 under AMP (fp32 weights, not autocast), and a
  // LoRA base keeps its own (16-bit, unless the implementation loads it in fp32).
  d.stream = d.lora ? lora_base_bytes(r, impl) : r.stream;
  const bool kbit_upcast = kbit_fp32_stream(c.training.finetune);
  if (kbit_upcast) d.stream = kFp32Bytes;
  d.base_weights = d.stream;  // before a quantised base's fp32 outputs turn the stream fp32 (below)
  // bitsandbytes' Linear4bit / Linear8bitLt return their output in the input's dtype
  // (bitsandbytes/nn/modules.py: `.to(inp_dtype)`), where an nn.Linear under autocast gives the
  // compute dtype: an MLP whose input is fp32 (the fp32 stream after prepare_model_for_kbit_training,
  // or a native LayerNorm's output, which autocast computes in fp32) gets fp32 projections, and its
  // activation and gated product keep fp32 tensors (measured with a real bitsandbytes 4-bit base on
  // the CPU: tools/frameworks/families.py, QLoRA steps). unsloth's own LoRA MLP kernels run in the
  // compute dtype.
  const bool bnb_base = bnb_peft_base(c) && impl.framework != Framework::kUnsloth;
  // (OLMo-1's weightless LayerNorm casts its fp32 result back to the input's dtype.)
  const bool fp32_norm_output =
      r.autocast && m.norm == NormKind::kLayerNorm && m.norm_weight && impl.norm_kernel == NormKernel::kEager;
  // Nemotron's LayerNorm1P normalises a cast to the autocast dtype: its output is 16-bit whatever
  // the stream's dtype, so the matmuls after it make no casts of their own.
  const bool norm_output_16bit = r.autocast && m.norm == NormKind::kLayerNorm && impl.norm_kernel == NormKernel::kCompute;
  d.mlp_act = bnb_base && (d.stream == kFp32Bytes || fp32_norm_output) ? kFp32Bytes : d.act;
  // The MLP's fp32 output then turns the residual stream fp32 from the first block on.
  if (bnb_base && fp32_norm_output) d.stream = kFp32Bytes;
  // Squared ReLU's pow and xIELU's expm1 run in fp32 under autocast (mlp_inner), so a bitsandbytes
  // down projection returns fp32 and the stream is fp32 from the second block on (taken for every
  // block; measured: families.py, arcee and apertus QLoRA).
  // (A norm that computes in the autocast dtype, Nemotron's, still hands the MLP a 16-bit input.)
  if (bnb_base && r.autocast && (m.hidden_act == HiddenAct::kRelu2 || m.hidden_act == HiddenAct::kXielu)) {
    d.stream = kFp32Bytes;
    if (!norm_output_16bit) d.mlp_act = kFp32Bytes;
  }
  // DoRA's, IA3's and RoAd's fp32 results over a bitsandbytes base under autocast
  // (peft_returns_fp32): an adapted o_proj or down_proj makes the residual stream fp32 (taken for
  // every block), and any adapted layer but q, k and v the MLP's activation (measured: families.py's
  // tiny models with a real 4-bit base, docs/frameworks.md).
  const Finetune& ft = c.training.finetune;
  if (peft_returns_fp32(c)) {
    if (ft.lora_targets & (kLoraO | kLoraDown)) d.stream = kFp32Bytes;
    if ((ft.lora_targets & (kLoraGate | kLoraUp | kLoraO | kLoraDown)) && !norm_output_16bit) d.mlp_act = kFp32Bytes;
  }
  d.impl = impl;
  d.autocast = r.autocast;
  d.compute_softmax = impl.softmax_dtype == SoftmaxDtype::kCompute;
  // Autocast runs softmax in fp32 whatever the model code asks for.
  d.softmax = (!d.compute_softmax || r.autocast) ? kFp32Bytes : d.act;
  // Under autocast, an fp32 input (the fp32 residual stream's norm output) is cast to 16 bit by
  // every matmul that reads it; autocast caches casts of weights only, so separate q, k and v
  // projections save three copies, separate gate and up two (docs/frameworks.md, finding 1).
  const bool casts = (r.autocast || kbit_upcast) && d.stream == kFp32Bytes && !norm_output_16bit;
  // MLA's two down-projections (q_a or q, and kv_a_proj_with_mqa) read the same input: two copies.
  // (Under LoRA the frozen base keeps no input, and each adapter's own cast is counted per adapter:
  // linear_inputs, Dims::adapters_cast.)
  d.input_casts_qkv = !casts || d.lora                            ? 1
                      : m.attention_type == AttentionType::kMla   ? 2
                      : projects_qkv_separately(impl.projections) ? 3
                                                                  : 1;
  d.input_casts_mlp = casts && !d.lora && !fuses_gate_up(impl.projections) && m.mlp == MlpKind::kGated ? 2 : 1;
  // PEFT keeps adapters in fp32 and casts each adapter's input to the adapter's dtype
  // (peft/tuners/lora/layer.py, _cast_input_dtype): one copy per adapter, 16-bit again under
  // autocast, fp32 without it.
  // (The dtype PEFT gives them, not accelerate's FSDP upcast: FSDP gathers what it cast in its
  // param_dtype for compute.)
  // PEFT's LoRA layers over a bitsandbytes base cast only when autocast is off
  // (peft/tuners/lora/bnb.py, Linear4bit and Linear8bitLt forward: `requires_conversion = not
  // torch.is_autocast_enabled()`): under autocast a 16-bit input reaches the adapters as it is,
  // shared, and an fp32 one is cast by autocast for each (measured: families.py, QLoRA steps).
  // LoRA's (and LoRA-FA's, a LoRA layer), AdaLoRA's and HiRA's bitsandbytes layers ask (hira/bnb.py),
  // and DoRA's LoRA layer hands the same uncast input to its variant (peft/tuners/lora/variants.py,
  // DoraLinearVariant; measured); the methods without one wrap the 4-bit linear as any linear and
  // cast (LoHa, LoKr, FourierFT, VB-LoRA, ...), and PVeRA's and RandLoRA's cast whatever autocast
  // does. IA3's and RoAd's ask too, and cast nothing under autocast: they keep the 4-bit layer's
  // output (or IA3's feedforward input) as it is (peft.cpp, LayerShare::fp32_results).
  const bool fp32_adapters = impl.lora_adapter_dtype == LoraAdapterDtype::kFp32;
  const bool no_peft_cast = bnb_adapters_uncast(c);
  const bool input_16bit = d.stream != kFp32Bytes || norm_output_16bit;  // what the projections read
  d.adapter_input_copies = fp32_adapters && input_16bit && !no_peft_cast;
  // (PEFT's ParamWrapper on stacked experts is no bitsandbytes layer: its fp32 factors are cast to
  // the stacked weight's dtype.)
  d.factors_cast = fp32_adapters && d.base_weights != kFp32Bytes;
  d.adapters_cast = fp32_adapters && r.autocast && !(no_peft_cast && input_16bit);
  d.adapter_element = fp32_adapters && !r.autocast ? kFp32Bytes : d.act;
  d.attention_output_copied = implementation_profile(impl.framework).attention_output_copied;
  d.lora_qkv_padded = implementation_profile(impl.framework).lora_qkv_padded;
  d.gelu_kernel = implementation_profile(impl.framework).gelu_kernel;
  d.mla_value_view_extra = d.mla_value_pad = 0;
  if (m.attention_type == AttentionType::kMla && implementation_profile(impl.framework).transformers_attention) {
    // integrations/sdpa_attention.py hands SDPA the split view (modeling_deepseek_v3.py expand_kv:
    // torch.split(kv_nope, [qk_nope_head_dim, v_head_dim])); integrations/flash_attention.py pads
    // value to the query's head dim and crops the output after (FlashAttention needs one head dim).
    if (impl.attention == AttentionImpl::kSdpa) d.mla_value_view_extra = m.qk_nope_head_dim;
    if (impl.attention == AttentionImpl::kFlash && d.head_dim > d.v_head_dim) d.mla_value_pad = d.head_dim - d.v_head_dim;
  }
  d.dropout = c.training.dropout > 0.0;
  d.residual_dropout = d.dropout && m.residual_dropout;
  d.attention_softcap = m.attention_softcap;
  // gpt-oss (models/gpt_oss/modeling_gpt_oss.py eager_attention_forward) concatenates its sinks (a
  // parameter, in the weights' dtype) to the scores and runs softmax(dtype=combined.dtype): an
  // explicit dtype, which autocast leaves alone, so the softmax runs in the promotion of the scores'
  // and the sinks' dtypes (fp32 over fp32 weights, 16-bit over a 16-bit base), one column wider;
  // the row maximum it subtracts first keeps its int64 indices (measured: families.py,
  // moe_lora.py).
  d.attention_sinks = m.attention_sinks;
  if (m.attention_sinks) d.softmax = max(d.act, d.lora ? d.base_weights : r.weights);
  d.targets = d.lora && d.peft.lora_style ? c.training.finetune.lora_targets : 0;
  const AdapterLayout layout = adapter_layout(c);
  d.targeting = layout.experts;
  d.fused_gate_up = layout.fused_gate_up;
  d.rank = c.training.finetune.lora_rank;
  d.lora_dropout = c.training.finetune.lora_dropout > 0.0;
  // bitsandbytes' MatMul4Bit before 0.43.2 keeps its input A in ctx.tensors even though the 4-bit
  // weight is frozen (bitsandbytes/autograd/_functions.py, `ctx.tensors = (A, B)`; PR #1270 made it
  // `(None, B)`), unlike a frozen nn.Linear, which keeps nothing. unsloth's fused LoRA functions
  // keep each adapted group's input X with save_for_backward whatever the bitsandbytes version
  // (unsloth/kernels/fast_lora.py, LoRA_MLP / LoRA_QKV / LoRA_W): the same bytes, released by
  // backward like any saved tensor. A ctx attribute is not a saved tensor: backward leaves it, and
  // it lives as long as the graph does (activation_model: retained_bytes).
  d.quantized_base_saves_input = quantized_base_keeps_input(c);
  d.quantized_inputs_retained = bnb_inputs_retained(c, impl.framework);
  d.experts_unquantized = experts_left_unquantized(c);
  return d;
}

// The element of each adapter's own cast of its input (PEFT's fp32 adapters beside a 16-bit stream, or
// autocast recasting it), else zero: the adapters then share the input.
Bytes adapter_input_copy(const Dims& d) {
  return d.adapter_input_copies || d.adapters_cast ? d.adapter_element : Bytes{0};
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
// token. An RMSNorm saves what its implementation keeps (training.norm_kernel): transformers'
// Python RMSNorm (x.float(); x · rsqrt(mean(x²) + ε); weight · x.to(dtype)) keeps the fp32 input
// (an upcast copy when the stream is 16-bit), the fp32 rsqrt, and the normalised x for the
// weight's gradient, which a frozen (LoRA) norm does not need; LitGPT's keeps the normalised x in
// fp32 too; fused kernels keep the input and the rsqrt only (on an fp32 copy for torch's
// F.rms_norm(x.float())).
// An RMSNorm over `elements` values of `input` bytes each in `rows` rows (one rstd each), as
// training.norm_kernel keeps it.
Bytes rms_norm_bytes(const Dims& d, Count elements, Count rows, Bytes input) {
  const Bytes rstd = rows * kFp32Bytes;
  const bool frozen = d.lora && !d.peft.norms_trained;
  switch (d.impl.norm_kernel) {
    case NormKernel::kEagerFp32:
    case NormKernel::kPythonLayerNorm: return elements * kFp32Bytes + rstd + (frozen ? Bytes{0} : elements * kFp32Bytes);
    case NormKernel::kFused:
    case NormKernel::kCompute: return elements * input + rstd;
    case NormKernel::kFusedFp32: return elements * kFp32Bytes + rstd;
    case NormKernel::kAuto:
    case NormKernel::kEager: break;
  }
  return elements * kFp32Bytes + rstd + (frozen ? Bytes{0} : elements * input);
}

// `input`: the bytes of one input element of an RMSNorm: the stream's, or the sublayer output's for
// a block without input norms (OLMo-2, EXAONE 4), whose norms read the attention's and the MLP's
// outputs (16-bit under autocast) before the residual add.
Bytes norm_bytes(const ModelSpec& m, const Dims& d, Bytes input) {
  const Count td = d.tokens * d.hidden_split;
  const Bytes rstd = d.tokens * kFp32Bytes;
  // transformers' CohereLayerNorm: x.float(); mean; (x - mean).pow(2).mean(); (x - mean) * rsqrt(...);
  // weight.float() * that. Each (x - mean) is a new fp32 tensor (pow keeps one, the product the
  // other), the product the rstd, the weight's product the normalised x when the weight trains, and
  // the weight's fp32 copy when the weight is 16-bit (measured: families.py). Python arithmetic:
  // autocast changes none of it.
  if (m.norm == NormKind::kLayerNorm && d.impl.norm_kernel == NormKernel::kPythonLayerNorm) {
    const bool frozen = d.lora && !d.peft.norms_trained;
    const bool weight_16bit = d.lora || d.stream != kFp32Bytes;
    return td * kFp32Bytes * 2 + rstd + (frozen ? Bytes{0} : td * kFp32Bytes) +
           (weight_16bit ? Count(m.hidden_size) * kFp32Bytes : Bytes{0});
  }
  // OLMo-1's weightless LayerNorm (modeling_olmo.py OlmoLayerNorm) normalises x.to(float32) and
  // casts the result back: layer_norm keeps the fp32 input (a copy when the stream is 16-bit) and
  // its mean and rstd, whatever autocast does; there is no weight to cast.
  if (m.norm == NormKind::kLayerNorm && !m.norm_weight) return td * kFp32Bytes + rstd * 2;
  // Nemotron's LayerNorm1P (modeling_nemotron.py) casts its input, weight + 1 and bias to the
  // autocast dtype and normalises them with autocast off: layer_norm keeps that x (the stream's own
  // tensor when it is already 16-bit), its mean and rstd, and the cast of weight + 1, a new tensor
  // (in the stream's dtype without autocast) (measured: tools/frameworks/families.py, nemotron).
  if (m.norm == NormKind::kLayerNorm && d.impl.norm_kernel == NormKernel::kCompute) {
    const Bytes element = d.autocast ? d.act : d.stream;
    return td * element + rstd * 2 + Count(m.hidden_size) * element;
  }
  // Autocast runs layer_norm in fp32 (its fp32 op list): a 16-bit input is saved as an fp32 copy,
  // and the weight's fp32 cast with it.
  // Compiled, the cast is fused into the norm's kernel and the 16-bit input is what is saved.
  if (m.norm == NormKind::kLayerNorm && d.autocast && d.stream != kFp32Bytes && d.impl.compile != Switch::kYes) {
    return td * kFp32Bytes + rstd * 2 + Count(m.hidden_size) * kFp32Bytes;
  }
  if (m.norm == NormKind::kLayerNorm) return td * d.stream + rstd * 2;
  return rms_norm_bytes(d, td, d.tokens, input);
}

Bytes norm_bytes(const ModelSpec& m, const Dims& d) { return norm_bytes(m, d, d.stream); }

// RMSNorms on the queries and keys (Qwen3, Gemma 3: over each head, one rstd per head and token;
// OLMo-2: over the whole projection, one per token), kept as the block's norms are
// (training.norm_kernel), on the projections' output, which is 16-bit under autocast; measured on
// the CPU with transformers' classes (tools/frameworks/families.py).
// Llama 4's weightless L2 norm (Llama4TextL2Norm: x.float() * rsqrt(mean(x²) + eps)) keeps the
// fp32 copy of each head and its rstd, whatever the compute dtype. A model that normalises only
// some layers (qk_norm_layers) is charged its share in each. In the first LoRA block a projection
// that is not adapted reads an input without a gradient: its output needs none, and its frozen
// norm keeps nothing (`q_grad`, `k_grad`).
Bytes qk_norm_bytes(const ModelSpec& m, const Dims& d, bool q_grad = true, bool k_grad = true) {
  if (m.qk_norm == QkNorm::kNone) return Bytes{0};
  const bool per_head = m.qk_norm == QkNorm::kPerHead || m.qk_norm == QkNorm::kL2;
  const Count q = q_grad ? d.tokens * d.heads * d.head_dim : Count(0);
  const Count k = k_grad ? d.tokens * d.kv_heads * d.head_dim : Count(0);
  // After the rotary positions the heads are q·cos + rotate(q)·sin, promoted to the tables' dtype:
  // the stream's (measured: families.py hunyuan_v1_dense, fp32 under autocast).
  const Bytes input = m.qk_norm_after_rotary ? max(d.act, d.stream) : d.act;
  const Bytes bytes = m.qk_norm == QkNorm::kL2
                          ? (q + k + d.tokens * ((q_grad ? d.heads : Count(0)) + (k_grad ? d.kv_heads : Count(0)))) *
                                kFp32Bytes
                          : (q_grad ? rms_norm_bytes(d, q, per_head ? d.tokens * d.heads : d.tokens, input) : Bytes{0}) +
                                (k_grad ? rms_norm_bytes(d, k, per_head ? d.tokens * d.kv_heads : d.tokens, input)
                                        : Bytes{0});
  const std::int64_t layers = m.num_hidden_layers, normed = m.qk_norm_layers;
  return normed > 0 && normed < layers ? mul_div(bytes, Count(normed), Count(layers)) : bytes;
}

// A linear layer's saved input: its own weight gradient needs it. A frozen layer saves nothing
// (autograd keeps only what a requires-grad input needs); a LoRA adapter saves its input for A
// (one tensor for adapters that share it, unless adapter dropout makes one copy each, plus a
// bool mask) and A's output for B.
// Whether each LoRA adapter keeps its own copy of its input: a dropped-out one, PEFT's cast to its
// fp32 adapters, or autocast's cast under them; otherwise the adapters keep the input itself.
bool adapters_copy_input(const Dims& d) { return d.lora_dropout || d.adapter_input_copies || d.adapters_cast; }

// `modules_per_target`: how many modules one target names here (a Gated DeltaNet's linear_attn
// names its four input projections at once).
Bytes linear_inputs(const Dims& d, Count width, unsigned targets_sharing_input, bool input_needs_grad = true,
                    Bytes element = Bytes{0}, std::int64_t modules_per_target = 1) {
  // The input's element: the compute dtype, or what the layer before gave (Dims::mlp_act).
  const Bytes input = d.tokens * width * (element.is_zero() ? d.act : element);
  if (!d.lora) return input;
  const unsigned hit = d.targets & targets_sharing_input;
  // A fused gate_up is one adapter for both targets.
  const bool fused = d.fused_gate_up && (hit & (kLoraGate | kLoraUp)) == (kLoraGate | kLoraUp);
  const Count adapters =
      static_cast<std::int64_t>(__builtin_popcount(hit) - (fused ? 1 : 0)) * Count(modules_per_target);
  const bool base_keeps_input = d.quantized_base_saves_input && input_needs_grad;
  if (adapters.is_zero()) return base_keeps_input ? input : Bytes{0};
  // Adapter dropout keeps a bool mask only when its input needs a gradient, and a dropped copy of
  // the input per adapter; without dropout all adapters (and a 4-bit base) share the input.
  const Bytes mask = input_needs_grad ? d.tokens * width * kMaskBytes : Bytes{0};
  const Bytes adapter_input = d.tokens * width * d.adapter_element;
  const Bytes kept_base = base_keeps_input ? input : Bytes{0};
  const Bytes bytes = adapters_copy_input(d)
                          ? adapters * (adapter_input + (d.lora_dropout ? mask : Bytes{0})) + kept_base
                          : input;
  return bytes + adapters * d.tokens * d.rank * d.adapter_element;
}

// Whether what linear_inputs counts for `targets` holds the input tensor itself rather than a copy:
// a trained linear's input, a 4-bit base that keeps its input, or LoRA adapters that neither cast
// their input (PEFT's cast to fp32 adapters, autocast's to the compute dtype) nor drop it out.
// Another consumer of the same tensor then keeps the same storage. An input in another dtype than
// the compute dtype (`element`) reaches a quantised base or an adapter as a cast copy.
bool keeps_raw_input(const Dims& d, unsigned targets, bool input_needs_grad = true, Bytes element = Bytes{0}) {
  if (!d.lora) return true;
  if (!element.is_zero() && element != d.act) return false;
  if (d.quantized_base_saves_input && input_needs_grad) return true;
  return (d.targets & targets) != 0 && !adapters_copy_input(d);
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
  const unsigned g = d.peft.grad_targets;
  return {(g & kLoraQ) != 0, (g & kLoraK) != 0, (g & kLoraV) != 0, true};
}

// FlashAttention (Dao et al. 2022) saves q, k and v unrepeated, the output (also the o_proj
// input) and an fp32 log-sum-exp per query row.
// torch's SDPA takes FlashAttention-2 for 16-bit inputs and the memory-efficient kernel for fp32,
// whose log-sum-exp rows are padded to a multiple of 32 (tools/frameworks: cuda_rules.sdpa_lse_pad).
// Keys and values are saved as the kernel receives them: at the key/value heads, or repeated to
// every query head by code that expands them first (training.kv_saved).
void flash_attention_terms(const Dims& d, const GradFlow& g, std::vector<NamedBytes>& t) {
  const Count q_width = d.heads * d.head_dim, v_width = d.heads * d.v_head_dim;
  const Count kv_heads = d.impl.kv_saved == KvSaved::kQueryHeads ? d.heads : d.kv_heads;
  constexpr std::int64_t kMemEfficientLseRows = 32;
  const bool padded = d.impl.attention == AttentionImpl::kSdpa && d.act == kFp32Bytes;
  const Count lse_rows = padded ? ceil_div(d.seq, kMemEfficientLseRows) * kMemEfficientLseRows : d.seq;
  if (g.q || g.k || g.v) {
    add(t, "attention.flash_qkv", d.tokens * (q_width + kv_heads * (d.head_dim + d.v_head_dim)) * d.act);
    add(t, "attention.flash_output", d.tokens * v_width * d.act);
    add(t, "attention.flash_logsumexp", d.batch * d.heads * lse_rows * kFp32Bytes);
    if (d.mla_value_view_extra > 0) add(t, "attention.mla_value_storage", d.tokens * d.heads * d.mla_value_view_extra * d.act);
    if (d.mla_value_pad > 0) add(t, "attention.mla_value_padding", d.tokens * d.heads * d.mla_value_pad * d.act * 2);
  }
  if (d.lora) {
    // The output the kernel saved is the tensor the output projection's adapter reads (the kernel's
    // [B, T, heads, d] layout makes the transpose back a view), unless the code copies it: one
    // storage (measured: tools/frameworks, torchtune LoRA on every projection, pure bf16).
    Bytes o = linear_inputs(d, v_width, kLoraO);
    const bool kernel_output_read = (g.q || g.k || g.v) && !d.attention_output_copied && d.mla_value_pad == 0;
    if (kernel_output_read && keeps_raw_input(d, kLoraO)) o = o - d.tokens * v_width * d.act;
    add(t, "attention.o_input", o);
  } else if (d.attention_output_copied || d.mla_value_pad > 0) {
    add(t, "attention.o_input", d.tokens * v_width * d.act);
  }
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
    // masked_fill with a boolean T × T mask saves the mask (nanoGPT's manual path).
    if (d.impl.attention_mask == AttentionMask::kBoolean && scores_grad) {
      add(t, "attention.causal_mask", d.seq * d.full_seq * kMaskBytes);
    }
    // GPT-2 divides the scores by a 0-dim tensor, which the division saves.
    if (d.compute_softmax && scores_grad) add(t, "attention.scale_divisor", d.act);
    // Softmax saves its output for its own gradient; P·V saves the probabilities in the compute
    // dtype for v's gradient: the same storage when the softmax ran in the compute dtype.
    // Soft-capping (Gemma 2) keeps tanh's output, in the scores' dtype, for tanh's backward.
    if (scores_grad && d.attention_softcap) add(t, "attention.softcap_tanh", scores * d.act);
    if (scores_grad) {
      const Count rows = d.batch * d.heads * d.seq;
      add(t, "attention.softmax_output", (scores + (d.attention_sinks ? rows : Count(0))) * d.softmax);
      if (d.attention_sinks) add(t, "attention.sink_max_indices", rows * kInt64Bytes);
    }
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

// A Gated DeltaNet token mixer (Yang et al. 2024) as transformers' Qwen3_5GatedDeltaNet runs it on a
// GPU with flash-linear-attention and causal-conv1d installed (its fast path; docs/frameworks.md,
// "Hybrid linear attention"). t tokens, Hk key heads of K, Hv value heads of V, C = 2·Hk·K + Hv·V.
// * in_proj_qkv, in_proj_z, in_proj_b and in_proj_a read the block's normed input (saved as any
//   linear's input, once, or per projection where autocast casts it);
// * causal_conv1d_fn (Dao-AILab causal-conv1d, CausalConv1dFn) keeps its input, in_proj_qkv's
//   output (t·C) and recomputes the convolution and the SiLU in backward;
// * chunk_gated_delta_rule (fla, ChunkGatedDeltaRuleFunction) keeps q and k after its L2 norm with
//   their fp32 rstd, a contiguous copy of v (a slice of the convolution's output), the fp32
//   chunk-local cumulative decay g, beta and A, the solved (I + A)^-1 of each 64-token chunk
//   (t·Hv·64, in k's dtype); it recomputes the chunk states in backward;
// * beta = sigmoid(b) keeps its output (the tensor the kernel keeps too); the decay
//   -exp(A_log)·softplus(a + dt_bias) keeps softplus's fp32 input and, while A_log trains, its
//   fp32 output;
// * the gated RMSNorm (Qwen3_5RMSNormGated: plain torch, in fp32) keeps the fp32 copy of the
//   kernel's output, its rstd, the 16-bit normalised x (for the weight's gradient), the weight's
//   product, the gate's fp32 copy and the SiLU's fp32 output; out_proj reads its 16-bit result.
// Tokens per chunk of the chunked delta rule (fla's and transformers' fallback: chunk_size 64).
constexpr std::int64_t kDeltaRuleChunk = 64;

void linear_attention_terms(const Config& c, const Dims& d, const GradFlow& g, std::vector<NamedBytes>& t) {
  const ModelSpec& m = c.model;
  const bool input_grad = !(d.lora && g.first_lora_layer);
  const Count hk = m.linear_num_key_heads, hv = m.linear_num_value_heads;
  const Count key = m.linear_key_width(), value = m.linear_value_width(), channels = key * 2 + value;
  constexpr std::int64_t kChunk = kDeltaRuleChunk;
  // in_proj_qkv, in_proj_z, in_proj_b, in_proj_a (Qwen3-Next: in_proj_qkvz, in_proj_ba, whose
  // q, k and v the layer concatenates into the convolution's input: a new tensor of the same size).
  const std::int64_t input_projections = m.linear_attention_fused ? 2 : 4;
  // The projections' outputs: the compute dtype, or fp32 out of bitsandbytes linears fed fp32
  // (Dims::mlp_act), which the whole mixer then computes in.
  const Bytes e = d.mlp_act;
  // Autocast casts an fp32 input once per matmul reading it: each input projection.
  const std::int64_t casts = d.input_casts_qkv > 1 ? input_projections : 1;
  add(t, "linear_attention.input",
      linear_inputs(d, d.hidden_split, kLoraLinearAttn, input_grad, Bytes{0}, input_projections) * casts);
  if (d.impl.linear_attention_kernel == LinearAttentionKernel::kTorch) {
    // transformers' fallbacks without flash-linear-attention and causal-conv1d (modeling_qwen3_5.py).
    // causal_conv1d_fn: F.conv1d (under autocast in the compute dtype, else on the input cast to the
    // weight's dtype, the stream's), whose output (T + kernel - 1 positions) the SiLU keeps.
    // torch_chunk_gated_delta_rule, in fp32 whatever it is given, over q and k repeated to the Hv
    // value heads, with n = B·Hv·T positions before and n' = B·Hv·T' after padding T to whole
    // 64-token chunks: the L2 norms' fp32 inputs and rsqrt (at n); the padded key, query and value,
    // beta and the decays' exponentials, the pairwise decay (64 a position), the two score matmuls
    // and their decayed products, the two triangular solves' outputs, the decayed key and query,
    // and the chunk loop's v_new and per-chunk states (K x V), and the 64 x 64 mask. Under autocast
    // every matmul also keeps 16-bit casts of its operands (the transposed keys, the loop's state,
    // v_new, scores and chunk slices). Measured with saved-tensor hooks for 16-bit inputs, exact
    // over thirteen shapes with CUDA's autocast lists and eight without (fp32 inputs keep a few
    // copies more).
    const Bytes w = d.autocast ? d.act : d.stream;
    add(t, "linear_attention.conv_input", d.tokens * channels * w);
    add(t, "linear_attention.conv_output", d.batch * channels * (d.seq + Count(m.linear_conv_kernel_dim) - 1) * w);
    const Count chunks = ceil_div(d.seq, Count(kChunk));
    const Count n = d.batch * hv * d.seq, padded = d.batch * hv * chunks * kChunk, states = d.batch * hv * chunks;
    const Count k = m.linear_key_head_dim, v = m.linear_value_head_dim;
    Bytes rule = d.autocast
                           ? n * k * Bytes{8} + n * Bytes{8} + padded * k * Bytes{30} - d.batch * hv * kChunk * k * Bytes{4} +
                                 padded * v * Bytes{12} + padded * kChunk * Bytes{14} + padded * Bytes{16} +
                                 states * (k * v * Bytes{8} + Bytes{4})
                           : (n * k * 2 + n * 2 + padded * k * 6 + padded * v * 3 + padded * kChunk * 5 + padded * 4 +
                              states * (k * v + 1)) *
                                 kFp32Bytes;
    // The chunk loop's last state update makes the final state, which the training forward discards
    // (output_final_state false): autograd frees what that update saved as the layer returns. Under
    // autocast those are the fp32 state it decayed (the matmuls reading it saved 16-bit casts) and
    // the 16-bit casts of the last chunk's keys and v_new; with one chunk also the keys' decay
    // factors and chunk_decay, which no other update reads. (Measured with the saved-tensor
    // tracker that counts what autograd still holds: families.py, qwen3_5_text's torch fallback.)
    // Without autocast the matmuls keep the fp32 tensors themselves, and the formula stands as fitted.
    if (d.autocast) {
      const Count heads = d.batch * hv;
      rule = rule - heads * (k * v * kFp32Bytes + Count(kChunk) * (k + v) * Bytes{2});
      if (chunks == Count(1)) rule = rule - heads * (Count(kChunk) + Count(1)) * kFp32Bytes;
    }
    add(t, "linear_attention.torch_delta_rule", rule + Count(kChunk * kChunk) * kMaskBytes);
  } else {
    add(t, "linear_attention.conv_input", d.tokens * channels * e);
    const Bytes kernel = d.tokens * key * 2 * e + d.tokens * hk * 2 * kFp32Bytes +  // q, k and their rstd
                         d.tokens * value * e +                                     // v
                         d.tokens * hv * kFp32Bytes +                               // g (cumulative)
                         d.tokens * hv * kChunk * e;                                // A
    add(t, "linear_attention.kernel", kernel);
  }
  // beta (sigmoid's output, the kernel's too), softplus's input, and its output for A_log's gradient.
  add(t, "linear_attention.gates", d.tokens * hv * e + d.tokens * hv * kFp32Bytes * (d.lora ? 1 : 2));
  const Bytes product = max(d.base_weights, e);
  Bytes norm = d.tokens * value * kFp32Bytes * 3 + d.tokens * hv * kFp32Bytes + d.tokens * value * product;
  if (!d.lora) norm += d.tokens * value * e;  // the normalised x the weight's gradient reads
  add(t, "linear_attention.gated_norm", norm);
  add(t, "linear_attention.out_proj_input", linear_inputs(d, value, kLoraLinearAttn, true, e));
}

// Qwen3.5's output gate (attention_output_gate): the attention's output times sigmoid(gate), the
// gate a slice of q_proj's output. sigmoid keeps its output, and o_proj reads the product.
// The gate is in q_proj's output dtype: the compute dtype, or fp32 out of a bitsandbytes linear fed
// fp32 (Dims::mlp_act), whose product with the 16-bit attention output is fp32 too. The product
// keeps the attention's output for the gate's gradient: the tensor a fused kernel keeps already,
// eager attention's own transposed copy otherwise. Where q_proj's output is fp32, the query norm's
// x.float() is its q half itself, a view that keeps the gate half alive too (measured: families.py,
// qwen3_5_text fp32 and QLoRA after prepare_model_for_kbit_training, LoRA on q/k/v/o, on the
// Gated DeltaNet only and on the MLP only).
void output_gate_terms(const Dims& d, std::vector<NamedBytes>& t) {
  const Count width = d.heads * d.v_head_dim;
  const Bytes e = d.mlp_act;
  Bytes bytes = d.tokens * width * e + linear_inputs(d, width, kLoraO, true, e);
  if (d.impl.attention == AttentionImpl::kEager) bytes += d.tokens * width * d.act;
  if (e == kFp32Bytes) bytes += d.tokens * d.heads * d.head_dim * kFp32Bytes;
  add(t, "attention.output_gate", bytes);
}

// The attention sublayer: MLA's latents, the q/k/v projections' input, the kernel's tensors.
void attention_terms(const Config& c, const Dims& d, const GradFlow& g, std::vector<NamedBytes>& t) {
  const ModelSpec& m = c.model;
  const bool input_grad = !(d.lora && g.first_lora_layer);
  if (m.attention_type == AttentionType::kMla) {
    // The compressed latents: q_a's (q_lora_rank) and kv_a's first kv_lora_rank values, each an
    // RMSNorm (as the block's norms keep it) on the projection's output whose result an
    // up-projection reads. kv_a's last qk_rope_head_dim values (the shared rotary key) go to RoPE,
    // which keeps only cos and sin, except where the norm's fp32 input is a view of the whole
    // output (no cast: fp32 compute), which keeps it alive. Measured: tools/frameworks/families.py,
    // deepseek_v3 (modeling_deepseek_v3.py DeepseekV3Attention).
    // The up-projections q_b (target q) and kv_b (target v) read the normalised latents: saved as
    // any linear's input (a LoRA adapter's own cast copy under autocast over fp32 adapters, nothing
    // for a frozen one); the block's input reaches q_a (or q_proj) and kv_a (target k) only.
    // In the first LoRA block a latent needs a gradient only if its down-projection is adapted.
    const Count q = Count(m.q_lora_rank), kv = Count(m.kv_lora_rank);
    const bool kv_grad = input_grad || (d.targets & kLoraK), q_grad = input_grad || (d.targets & kLoraQ);
    Bytes latents = rms_norm_bytes(d, d.tokens * kv, d.tokens, d.act) + linear_inputs(d, kv, kLoraV, kv_grad);
    if (!q.is_zero()) latents += rms_norm_bytes(d, d.tokens * q, d.tokens, d.act) + linear_inputs(d, q, kLoraQ, q_grad);
    if (d.act == kFp32Bytes) latents += d.tokens * Count(m.qk_rope_head_dim) * kFp32Bytes;
    add(t, "attention.mla_latents", latents);
  }
  const unsigned reading_input = m.attention_type == AttentionType::kMla ? kLoraQ | kLoraK
                                                                         : kLoraQ | kLoraK | kLoraV | kLoraQkv;
  add(t, "attention.qkv_input", linear_inputs(d, d.hidden_split, reading_input, input_grad) * d.input_casts_qkv);
  // OLMo's clip_qkv clamps each projection's output in place (modeling_olmo.py OlmoAttention:
  // query_states.clamp_(...), and k and v): each clamp keeps a q-, k- or v-sized tensor for its
  // backward (measured: tools/frameworks/families.py, olmo_clip_qkv), in the projections' output
  // dtype: fp32 out of bitsandbytes linears fed fp32, as the MLP's (Dims::mlp_act).
  if (m.clip_qkv) add(t, "attention.qkv_clamp", d.tokens * (d.heads + 2 * d.kv_heads) * d.head_dim * d.mlp_act);
  // The layer's own cos and sin (1, T, rotated part of the head), kept by the q·cos and
  // rotate(q)·sin products: fp32 (ERNIE 4.5), or the stream's dtype over half the head (GLM-4's
  // apply_rotary_pos_emb repeat-interleaves the shared tables' first half; modeling_glm.py)
  // (measured: tools/frameworks/families.py, ernie4_5, glm, glm4).
  if (m.position_embedding == PositionKind::kRotary && m.rotary_per_layer &&
      implementation_profile(d.impl.framework).rotary_saved) {
    const Count rotated = m.rotary_dim > 0 ? Count(m.rotary_dim) : d.head_dim;
    const Bytes element = m.rotary_table_dtype == RotaryTableDtype::kStream ? d.stream : kFp32Bytes;
    add(t, "attention.rotary_tables", d.seq * rotated * element * 2);
  }
  if (d.lora && d.lora_qkv_padded && d.impl.projections == Projections::kQkvFused) {
    // LitGPT's LoRAQKVLinear runs the q/k/v adapters as one grouped conv1d and zero-pads their
    // output into the qkv width with result.index_copy(1, lora_ind, after_B): index_copy's
    // backward keeps the source, one element per adapted output column (measured on the CPU:
    // tools/frameworks, litgpt-llama-s1-sdpa-bf16_mixed-lora, IndexCopy bf16[B, T, q + v]). With
    // q, k and v all adapted there is nothing to pad (litgpt/lora.py zero_pad: `if
    // all(self.enable_lora): return x`; measured: litgpt-llama-s1-sdpa-bf16-lora-mlp).
    const unsigned hit = d.targets & (kLoraQ | kLoraK | kLoraV | kLoraQkv);
    const bool all = (hit & kLoraQkv) || (hit & (kLoraQ | kLoraK | kLoraV)) == (kLoraQ | kLoraK | kLoraV);
    const Count width = (hit & kLoraQ ? d.heads * d.head_dim : Count(0)) +
                        (hit & kLoraK ? d.kv_heads * d.head_dim : Count(0)) +
                        (hit & kLoraV ? d.kv_heads * d.v_head_dim : Count(0));
    if (!all && !width.is_zero()) add(t, "attention.lora_qkv_padded", d.tokens * width * d.act);
  }
  add(t, "attention.qk_norms", qk_norm_bytes(m, d, g.q || d.peft.norms_trained, g.k || d.peft.norms_trained));
  if (d.impl.attention != AttentionImpl::kEager) {
    flash_attention_terms(d, g, t);
  } else {
    eager_attention_terms(d, g, c.training.checkpointing == Checkpointing::kSelective, t);
  }
  if (m.attention_output_gate) {
    // o_proj reads the gated product, not the attention's output (output_gate_terms).
    std::erase_if(t, [](const NamedBytes& term) { return term.name == "attention.o_input"; });
    output_gate_terms(d, t);
  }
  if (d.residual_dropout && m.attention_output_dropout) {
    add(t, "attention.residual_dropout_mask", d.tokens * d.hidden_split * kMaskBytes);
  }
}

// The MLP: plain (up → GELU → down) saves GELU's input and output; gated (down(act(gate x)·up x))
// saves gate x, act(gate x), up x and the product (the down projection's input, unless frozen).
// A fused SwiGLU (Liger) keeps gate x and up x and recomputes the SiLU. transformers' gelu_new is
// Python arithmetic, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): pow keeps x, tanh its output, the
// last product both factors (0.5·x and 1 + tanh): four tensors, three of them fp32 under autocast,
// whose fp32 op list holds pow (activations.py NewGELUActivation; docs/frameworks.md finding 2).
// LitGPT runs the same approximation as torch's kernel, F.gelu(x, approximate="tanh"): its input only.
// The intermediate-wide tensors a gated MLP's activation keeps (the down projection's input
// apart): gate x, act(gate x) and up x in eager code, gate x and up x under a fused kernel.
// gpt-oss's clamped SwiGLU (modeling_gpt_oss.py GptOssExperts._apply_gate) keeps six: the gate/up
// output (both clamps read strided halves of it), the clamped gate and its sigmoid (their
// product), and up + 1 and the gated product (the last product).
std::int64_t gated_activation_tensors(const ModelSpec& m, const Dims& d) {
  const bool fused =
      d.impl.activation_kernel == ActivationKernel::kFused || d.impl.activation_kernel == ActivationKernel::kFusedInplace;
  if (fused) return 2;
  return m.hidden_act == HiddenAct::kClampedSwiglu ? 6 : 3;
}

Bytes mlp_inner(const ModelSpec& m, const Dims& d, Count tokens, Count ff) {
  const Count elements = tokens * ff;
  const bool eager =
      d.impl.activation_kernel != ActivationKernel::kFused && d.impl.activation_kernel != ActivationKernel::kFusedInplace;
  const Bytes act = d.mlp_act;
  if (m.mlp == MlpKind::kGated) return elements * act * gated_activation_tensors(m, d);
  if (eager && m.hidden_act == HiddenAct::kGeluNew && !d.gelu_kernel) {
    const Bytes promoted = d.autocast ? kFp32Bytes : act;
    return elements * (promoted * 3 + act);
  }
  // Squared ReLU (transformers' ReLUSquaredActivation: square(relu(x))): relu keeps its output, and
  // square, which is pow(x, 2) and on autocast's fp32 list, keeps its input: the same tensor, or
  // under autocast an fp32 copy of it beside it. The down projection's input is square's output.
  // Liger's kernel (LigerReLUSquaredFunction, ops/relu_squared.py) saves its input alone: the last
  // line. (Other fused profiles run transformers' or their own eager squared ReLU here: not measured.)
  if (m.hidden_act == HiddenAct::kRelu2 && (eager || d.impl.framework != Framework::kLiger)) {
    const Bytes promoted = d.autocast && act != kFp32Bytes ? kFp32Bytes : Bytes{0};
    return elements * (act + promoted);
  }
  // xIELU in Python (transformers' XIELUActivation._xielu_python: where(x > 0, alpha_p·x·x + beta·x,
  // (expm1(min(x, eps)) - x)·alpha_n + beta·x)): x itself, alpha_p·x (promoted to the learned
  // scalars' dtype, the weights'), expm1's output and expm1 - x (fp32 under autocast: expm1 is on
  // its fp32 list), the where's bool condition, and the two scalars through softplus (measured:
  // tools/frameworks/families.py, apertus). The where's output is the down projection's input.
  // Under autocast softplus, on its fp32 list, makes the scalars fp32, and alpha_p·x with them.
  // Frozen scalars (LoRA) need no gradient, so the product with alpha_n keeps alpha_n alone.
  if (m.hidden_act == HiddenAct::kXielu) {
    const Bytes scalars = d.autocast ? kFp32Bytes : d.base_weights;
    const Bytes promoted = max(act, scalars), wide = d.autocast ? kFp32Bytes : act;
    return elements * (act + promoted + wide * (d.lora ? 1 : 2) + kMaskBytes) + scalars * 2;
  }
  return elements * act;
}

// `input_grad`: whether the MLP's input needs a gradient; `attention_input_grad`: the attention's.
void dense_mlp_terms(const ModelSpec& m, const Dims& d, bool input_grad, bool attention_input_grad,
                     std::vector<NamedBytes>& t) {
  const unsigned input_targets = m.mlp == MlpKind::kGated ? (kLoraGate | kLoraUp) : kLoraUp;
  // A parallel block with one norm (GPT-J, Falcon-7B, Phi, Cohere) hands the same normalised tensor
  // to attention and the MLP: one storage, saved once with the attention's input, where both sides
  // keep the tensor itself: a full fine-tune without autocast (under it every matmul makes its own
  // cast; measured: tools/frameworks/families.py, gptj fp32), or LoRA adapters on both sides that
  // neither cast nor drop out their input (each keeps its own A output; measured with PEFT on the
  // same tiny models, fp32).
  const unsigned attention_targets = kLoraQ | kLoraK | kLoraV | kLoraQkv;
  const bool one_input = m.block == BlockLayout::kParallel && m.norms_per_block == 1 && d.act == d.stream &&
                         (d.lora || !d.autocast);
  const bool shared_with_attention = one_input && keeps_raw_input(d, attention_targets, attention_input_grad) &&
                                     keeps_raw_input(d, input_targets, input_grad);
  Bytes input = linear_inputs(d, d.hidden_split, input_targets, input_grad) * d.input_casts_mlp;
  if (shared_with_attention) input = input - d.tokens * d.hidden_split * d.act;
  add(t, "mlp.input", input);
  // ReLU's backward reads its output, which is the down projection's input: one storage, counted
  // there (OPT's fc1 -> ReLU -> fc2; measured: tools/frameworks/families.py, opt, and with PEFT's
  // LoRA on fc2). GELU keeps its input.
  const bool relu_output_is_down_input = m.mlp == MlpKind::kPlain && m.hidden_act == HiddenAct::kRelu &&
                                         keeps_raw_input(d, kLoraDown, true, d.mlp_act);
  if (!relu_output_is_down_input) add(t, "mlp.inner", mlp_inner(m, d, d.tokens, d.ff));
  add(t, "mlp.down_input", linear_inputs(d, d.ff, kLoraDown, true, d.mlp_act));
}

// The shared experts' MLP width on this GPU (Qwen-MoE's one shared expert, DeepSeek's n of them; 0: none).
Count shared_expert_ff(const Config& c) {
  const ModelSpec& m = c.model;
  const Count shared = m.shared_expert_intermediate_size > 0 ? Count(m.shared_expert_intermediate_size)
                                                             : Count(m.num_shared_experts) * m.moe_intermediate_size;
  return ceil_div(shared, c.parallel.tensor);
}

// LoRA on the routed experts (training.finetune.lora_targets gate / up / down) and the router.
struct ExpertAdapters {
  bool gate_up = false, down = false, router = false;
};

ExpertAdapters expert_adapters(const Dims& d) {
  if (!d.lora) return {};
  const unsigned g = targets_reaching(d.peft.grad_targets, Component::kExperts, d.targeting);
  const unsigned router = targets_reaching(d.peft.grad_targets, Component::kRouter, d.targeting);
  return {(g & (kLoraGate | kLoraUp)) != 0, (g & kLoraDown) != 0, (router & kLoraRouter) != 0};
}

// The same block's dims with the LoRA targets that reach `component`'s linears (a dense layer's
// MLP or the shared experts of a mixture-of-experts model: peft.hpp ExpertTargeting).
Dims reaching(const Dims& d, Component component) {
  Dims out = d;
  out.targets = targets_reaching(d.targets, component, d.targeting);
  out.peft.grad_targets = targets_reaching(d.peft.grad_targets, component, d.targeting);
  return out;
}

// Stacked experts' LoRA (PEFT's ParamWrapper on transformers 5's 3-D parameters) and what one MoE
// layer saves for it beyond the grouped GEMMs' own inputs: peft/tuners/lora/layer.py
// _activate_lora parametrizes each adapted parameter as W + s·B·A (_LoraFactorsProxy: one baddbmm
// in the weight's dtype, with the adapter factors cast to it), so every forward builds a whole
// copy of the stack, which the grouped GEMM saves (it needs the weight for its input's gradient),
// and the baddbmm keeps the cast factors. Measured: tools/frameworks/moe_lora.py.
// This GPU's experts (expert parallelism) and its slice of each expert's inner width (tensor
// parallelism: gate_up's output, down's input).
Bytes stacked_adapter_bytes(const Config& c, const Dims& d, Bytes weight) {
  const Finetune& f = c.training.finetune;
  Count merged = 0, factors = 0;
  for (const AdaptedLinear& a : adapted_linears(count_parameters(c.model), f.lora_targets, adapter_layout(c))) {
    if (a.component != Component::kExperts) continue;
    const Count experts = ceil_div(a.stack, c.parallel.expert);
    const bool down = a.target == kLoraDown;
    const Count in = down ? ceil_div(a.in, c.parallel.tensor) : a.in;
    const Count out = down ? a.out : ceil_div(a.out, c.parallel.tensor);
    merged += experts * in * out;
    factors += expert_adapter_rank(f, a) * experts * (in + out);
  }
  // The factors are cast only when they are not already in the weight's dtype (fp32 adapters
  // over a 16-bit base); a cast of nothing is the parameter itself, which is not an activation.
  const bool cast = d.factors_cast;
  return merged * weight + (cast ? factors * weight : Bytes{0});
}

// The shared experts (an nn.Linear MLP every token runs) beside the routed ones.
void shared_expert_terms(const Config& c, const Dims& d, bool inputs_kept, std::vector<NamedBytes>& t) {
  const ModelSpec& m = c.model;
  const ExpertAdapters adapters = expert_adapters(d);
  const Count ff = shared_expert_ff(c);
  if (!ff.is_zero()) {
    add(t, "moe.shared_expert", mlp_inner(m, d, d.tokens, ff) + (inputs_kept ? d.tokens * ff * d.act : Bytes{0}));
    // LoRA on the shared experts' nn.Linear projections: what a dense MLP's adapters keep (their
    // input, A's output). An adapter that keeps the tensor itself shares it with what is counted
    // above: the block's input with the router's, the product with a 4-bit base's kept input.
    const Dims s = reaching(d, Component::kSharedExperts);
    if (d.lora && (s.targets & (kLoraGate | kLoraUp | kLoraDown))) {
      Dims a = s;
      a.quantized_base_saves_input = false;  // the base's own inputs are counted above
      const unsigned up = m.mlp == MlpKind::kGated ? (kLoraGate | kLoraUp) : kLoraUp;
      Bytes up_inputs = linear_inputs(a, d.hidden_split, up);
      if (keeps_raw_input(a, up) && (inputs_kept || adapters.router)) {
        up_inputs = up_inputs - d.tokens * d.hidden_split * d.act;
      }
      Bytes down_inputs = linear_inputs(a, ff, kLoraDown, true, d.mlp_act);
      if (keeps_raw_input(a, kLoraDown) && inputs_kept) down_inputs = down_inputs - d.tokens * ff * d.mlp_act;
      add(t, "moe.shared_expert_adapters", up_inputs + down_inputs);
    }
    // Under autocast over an fp32 stream each of the shared expert's matmuls (gate, up, and
    // Qwen2-MoE's sigmoid gate) casts the block's input on its own; the router's cast is counted
    // above. Qwen2-MoE's gate keeps its sigmoid and the shared expert's output for their product
    // (measured: families.py, qwen2_moe).
    const bool casts = d.autocast && d.stream == kFp32Bytes && inputs_kept;
    const std::int64_t own_casts = (m.mlp == MlpKind::kGated ? 2 : 1) + (m.shared_expert_gate ? 1 : 0);
    if (casts) add(t, "moe.shared_expert_inputs", d.tokens * d.hidden * d.act * own_casts);
    // Both in the linears' output dtype: fp32 out of bitsandbytes linears fed fp32 (Dims::mlp_act;
    // measured: families.py, qwen3_5_moe_text QLoRA after prepare_model_for_kbit_training).
    if (m.shared_expert_gate) add(t, "moe.shared_expert_gate", d.tokens * d.hidden * d.mlp_act + d.tokens * d.mlp_act);
  }
}

// Every expert on every token (transformers' Llama 4, modeling_llama4.py Llama4TextMoe.forward):
// the router (an nn.Linear) keeps its input; topk's indices (which scatter_ reuses) and the fp32
// sigmoid of the scattered scores; the tokens repeated once per expert and multiplied by that
// expert's score (a transposed copy of the scores): the product keeps both factors, the repeated
// tokens when the scores need a gradient and the scores when the tokens do; then two batched
// matmuls over all experts, the first keeping its input when the stack needs a gradient, an eager
// SwiGLU on its output (one gate/up storage and the activation: Liger and unsloth patch the MLP
// classes, not Llama4TextExperts), the second keeping the product when its stack needs a gradient.
// LoRA on the stacks (PEFT's target_parameters: W + s·B·A rebuilt every forward) keeps the merged
// stacks, which the batched matmuls read in the compute dtype, and the factors' casts.
// Measured: tools/frameworks/families.py, llama4_text (and its stacked-expert LoRA step).
void dense_moe_terms(const Config& c, const Dims& d, std::vector<NamedBytes>& t) {
  const ModelSpec& m = c.model;
  const Count experts = ceil_div(Count(m.num_experts), c.parallel.expert);
  const Count k = m.num_experts_per_tok, all = d.tokens * experts;
  const Count expert_ff = ceil_div(Count(m.moe_intermediate_size), c.parallel.tensor);
  const ExpertAdapters adapters = expert_adapters(d);
  // The block's input, kept for the router's weight when it trains (and by an old bitsandbytes
  // base's shared expert, which keeps its input: moe_terms).
  const bool inputs_kept = !d.lora || d.quantized_base_saves_input;
  if (inputs_kept) add(t, "moe.router_input", d.tokens * d.hidden_split * d.act);
  if (adapters.router) {
    add(t, "moe.router_adapter", linear_inputs(reaching(d, Component::kRouter), d.hidden_split, kLoraRouter));
  }
  add(t, "moe.router_scores", d.tokens * k * kInt64Bytes + d.tokens * Count(m.num_experts) * kFp32Bytes);
  // The scores need a gradient through the router's output, the repeated tokens (in the residual
  // stream's dtype) through the block's input: both do in every layer but a LoRA model's first.
  add(t, "moe.scaled_inputs", all * d.hidden * d.stream + all * d.act);
  const bool up_input = !d.lora || adapters.gate_up, down_input = !d.lora || adapters.down;
  if (up_input) add(t, "moe.expert_inputs", all * d.hidden * d.act);
  Dims eager = d;
  if (eager.impl.activation_kernel == ActivationKernel::kFusedInplace) eager.impl.activation_kernel = ActivationKernel::kEager;
  const std::int64_t kept = m.mlp == MlpKind::kGated ? gated_activation_tensors(m, eager) : 1;
  add(t, "moe.experts_inner", all * expert_ff * d.act * (kept + (down_input ? 1 : 0)));
  if (d.lora) add(t, "moe.merged_expert_weights", stacked_adapter_bytes(c, d, d.act));
  shared_expert_terms(c, d, inputs_kept, t);
}

// Mixture of experts as Hugging Face's Mixtral block dispatches it: an fp32 router softmax, top-k
// indices and renormalised weights, the nonzero() index pairs of each expert, and per routed
// token the gathered input, the expert's MLP tensors and the weighted combine.
void moe_terms(const Config& c, const Dims& d, std::vector<NamedBytes>& t) {
  const ModelSpec& m = c.model;
  const Count k = m.num_experts_per_tok, routed = d.tokens * k;
  const Count expert_ff = ceil_div(Count(m.moe_intermediate_size), c.parallel.tensor);
  const bool inputs_kept = !d.lora || d.quantized_base_saves_input;  // trainable, or 4-bit bitsandbytes
  const ExpertAdapters adapters = expert_adapters(d);
  const bool stacked = d.impl.moe_dispatch == MoeDispatch::kGrouped;
  if (d.impl.moe_dispatch == MoeDispatch::kDense) {
    dense_moe_terms(c, d, t);
    return;
  }
  // ERNIE 4.5's router runs with autocast off on fp32 copies (modeling_ernie4_5_moe.py,
  // Ernie4_5_MoeTopKRouter: F.linear(hidden_states.float(), self.weight.float()) under
  // maybe_autocast(enabled=False)): a trained router keeps its input in fp32 (measured:
  // families.py, ernie4_5_moe; its weight stays fp32, _keep_in_fp32_modules_strict).
  const Bytes router_element = m.model_type == "ernie4_5_moe" ? kFp32Bytes : d.act;
  if (inputs_kept || adapters.router) add(t, "moe.router_input", d.tokens * d.hidden_split * router_element);
  if (adapters.router && !inputs_kept) {
    // The adapted router: its weight merged with the adapter (stacked: a ParamWrapper), or
    // LoRA's A·x (an nn.Linear router: transformers 4, LitGPT).
    add(t, "moe.router_adapter", stacked ? Count(m.num_experts) * d.hidden * d.act
                                         : d.tokens * d.rank * d.adapter_element);
  }
  // Input jitter in training: each in-place multiply keeps its noise, in the dtype of the norm's
  // output that feeds the mixture (a LayerNorm's is fp32 under autocast: Phi-3.5-MoE's).
  if (m.moe_input_jitter > 0) {
    const Bytes noise = d.autocast && m.norm == NormKind::kLayerNorm ? kFp32Bytes : d.stream;
    add(t, "moe.input_jitter", d.tokens * d.hidden_split * noise * m.moe_input_jitter);
  }
  if (m.model_type == "phimoe") {
    // Phi-3.5-MoE's sparsemixer (modeling_phimoe.py) picks each of its two experts in turn: a softmax
    // over the masked scores, the bool mask, the chosen index and the multiplier its custom autograd
    // function keeps, once per pick (measured: families.py, phimoe).
    // Its softmax has no dtype: fp32 under autocast, the model's dtype without.
    const Bytes scores = d.autocast ? kFp32Bytes : d.act;
    add(t, "moe.sparsemixer", k * (d.tokens * Count(m.num_experts) * (scores + Bytes{1}) +
                                   d.tokens * (kInt64Bytes + scores)));
  } else {
    add(t, "moe.router_softmax", d.tokens * m.num_experts * kFp32Bytes);
    add(t, "moe.topk", d.tokens * k * kInt64Bytes + d.tokens * k * kFp32Bytes + d.tokens * kFp32Bytes);
  }
  if (stacked) {
    // transformers 5's grouped_mm_experts_forward (integrations/moe.py): the routed rows gathered in
    // expert order (the gather, the routing weights' and the restoring gather each keep their int64
    // indices), one grouped GEMM up (its input kept when the experts train) into gate and up (one
    // storage, kept by the activation and the product), the product (the down GEMM's input), the
    // down output and the routing weights (their product's two factors), and the int32 group
    // offsets. The GEMMs are not autocast ops: they run in the experts' weight dtype, fp32 under
    // autocast over fp32 weights (measured: tools/frameworks/families.py, qwen3_moe).
    // torchtitan casts both sides to bf16 itself (models/moe: _run_experts_grouped_mm).
    // bitsandbytes leaves the stacked experts unquantised (it replaces nn.Linear modules only), so a
    // 4-bit base keeps no input for them; under LoRA a GEMM keeps its input when its weight, merged
    // with an adapter, needs a gradient.
    // Quantised experts (unsloth's) are dequantised to the compute dtype for their GEMMs.
    const bool experts_quantized = d.lora && c.training.finetune.base_bits < 16 && !d.experts_unquantized;
    const Bytes el = d.impl.framework == Framework::kTorchtitan || experts_quantized ? d.act : d.base_weights;
    const bool base_input = experts_quantized && d.quantized_base_saves_input;
    const bool up_input = !d.lora || adapters.gate_up || base_input;
    const bool down_input = !d.lora || adapters.down || base_input;
    add(t, "moe.dispatch_indices", routed * kInt64Bytes * 3 + Count(m.num_experts) * Bytes{4});
    if (up_input) add(t, "moe.expert_inputs", routed * d.hidden * el);
    // Gated: the gate/up output (one storage, two halves) and what the activation keeps beside it
    // (gated_activation_tensors); plain: the activation's input. Then the down GEMM's input when
    // its weight needs a gradient.
    const std::int64_t kept = m.mlp == MlpKind::kGated ? gated_activation_tensors(m, d) : 1;
    add(t, "moe.experts_inner", routed * expert_ff * el * (kept + (down_input ? 1 : 0)));
    add(t, "moe.combine", routed * d.hidden * el + routed * d.act);
    if (d.lora) add(t, "moe.merged_expert_weights", stacked_adapter_bytes(c, d, el));
  } else {
    add(t, "moe.dispatch_indices", routed * kInt64Bytes * 2);
    // An nn.Linear per expert: LoRA adapters on them keep what a dense layer's keep, on the rows
    // routed to each expert (linear_inputs).
    Dims e = d;
    e.tokens = routed;
    const Bytes up_inputs = !d.lora ? routed * d.hidden * d.act : linear_inputs(e, d.hidden, kLoraGate | kLoraUp);
    const Bytes down_inputs = !d.lora ? routed * expert_ff * d.act : linear_inputs(e, expert_ff, kLoraDown);
    add(t, "moe.expert_inputs", up_inputs);
    add(t, "moe.experts_inner", mlp_inner(m, d, routed, expert_ff) + down_inputs);
    add(t, "moe.combine", routed * (d.hidden * 2 + 1) * d.act);
  }
  shared_expert_terms(c, d, inputs_kept, t);
}


// `linear`: a hybrid model's Gated DeltaNet block (linear_attention_terms) instead of attention.
std::vector<NamedBytes> block_terms(const Config& c, const Dims& d, bool moe, bool first_layer = false,
                                    bool linear = false) {
  const ModelSpec& m = c.model;
  first_layer = first_layer && !d.peft.input_needs_grad;  // trained prompts, norms or tokens below it
  const GradFlow g = grad_flow(d, first_layer);
  std::vector<NamedBytes> t;
  // A norm saves only if its input needs a gradient: under LoRA, not the first block's first norm,
  // nor its second one when no attention projection is adapted.
  const bool attention_adapted =
      d.peft.grad_targets & (linear ? unsigned{kLoraLinearAttn} : unsigned{kLoraQ | kLoraK | kLoraV | kLoraO});
  const bool frozen_first_attention = d.lora && first_layer && !attention_adapted;
  std::int64_t norms = m.norms_per_block;
  // A parallel block's norms all read the block's input (GPT-NeoX's two: measured with PEFT's LoRA,
  // tools/frameworks), which in the first block needs no gradient: none of them saves.
  // Without input norms (OLMo-2) the first norm reads the attention's output, the second the MLP's:
  // each saves when its sublayer's output needs a gradient.
  if (d.lora && first_layer) {
    const bool mlp_adapted = d.peft.grad_targets & (kLoraGate | kLoraUp | kLoraDown);
    // Four norms (Gemma 2, GLM-4-0414): with the attention frozen, the norms after it and before
    // the MLP read nothing that needs a gradient either; the one after the MLP does if the MLP is
    // adapted (measured: families.py, LoRA on the MLP only).
    const std::int64_t dropped = m.block == BlockLayout::kParallel ? norms
                                 : !m.input_norm                    ? (attention_adapted ? 0 : mlp_adapted ? 1 : 2)
                                 : m.norms_per_block == 4           ? (attention_adapted ? 1 : mlp_adapted ? 3 : 4)
                                                                    : (attention_adapted ? 1 : 2);
    norms = std::max<std::int64_t>(0, norms - dropped);
  }
  // Four norms a block (Gemma 2, GLM-4-0414): two read the stream, the two after the attention and
  // the MLP read their outputs (16-bit under autocast), which an eager RMSNorm keeps normalised in
  // that dtype (measured: families.py, glm4).
  // (The MLP's output is fp32 out of bitsandbytes linears fed fp32: Dims::mlp_act.)
  const std::int64_t after_sublayers = m.input_norm && m.norms_per_block == 4 ? std::min<std::int64_t>(2, norms) : 0;
  Bytes norm_total = norm_bytes(m, d, m.input_norm ? d.stream : d.act) * (norms - after_sublayers);
  if (after_sublayers >= 1) norm_total += norm_bytes(m, d, d.mlp_act);
  if (after_sublayers >= 2) norm_total += norm_bytes(m, d, d.act);
  // A parallel block whose two LayerNorms read the same input (GPT-NeoX / Pythia) saves that
  // input once: the second norm adds its statistics only. Under autocast too when the stream is
  // fp32 (layer_norm's fp32 cast is then no copy; measured: families.py, gpt_neox).
  if (m.block == BlockLayout::kParallel && m.norm == NormKind::kLayerNorm && norms == 2 &&
      (!d.autocast || d.stream == kFp32Bytes) && d.impl.norm_kernel != NormKernel::kPythonLayerNorm) {
    norm_total = norm_total - d.tokens * d.hidden_split * d.stream;
  }
  add(t, "norms", norm_total);
  if (!frozen_first_attention) {
    if (linear) linear_attention_terms(c, d, g, t);
    else attention_terms(c, d, g, t);
  }
  const Dims mlp = reaching(d, Component::kMlp);
  // The MLP's input needs a gradient unless it is the first LoRA block's frozen input: always in a
  // parallel block (its norm reads the block's input), else when no attention projection is adapted.
  const bool mlp_input_grad = !(d.lora && first_layer && (m.block == BlockLayout::kParallel || !attention_adapted));
  if (moe) moe_terms(c, d, t);
  else dense_mlp_terms(m, mlp, mlp_input_grad, !(d.lora && first_layer), t);
  // A frozen MLP keeps its activation's tensors only if its input needs a gradient.
  if (!mlp_input_grad && !(mlp.peft.grad_targets & (kLoraGate | kLoraUp))) {
    std::erase_if(t, [](const NamedBytes& term) { return term.name == "mlp.inner"; });
  }
  if (d.residual_dropout) add(t, "mlp.residual_dropout_mask", d.tokens * d.hidden_split * kMaskBytes);
  // llm.c allocates every forward buffer once and keeps it for the step (train_gpt2.cu,
  // fill_in_activation_sizes): beside what autograd would save, the attention and MLP projections'
  // outputs (attproj, fcproj), each B·T·C per layer.
  if (d.impl.framework == Framework::kLlmC) {
    add(t, "attention.projection_output", d.tokens * d.hidden_split * d.act);
    add(t, "mlp.projection_output", d.tokens * d.hidden_split * d.act);
  }
  // auto-gptq's QuantLinear, for inputs of at least kernel_switch_threshold (128) rows, unpacks and
  // dequantises the whole weight with PyTorch ops and calls torch.matmul(x.half(), weight)
  // (qlinear_cuda_old.py / qlinear_cuda.py forward): autograd keeps that fp16 weight to compute the
  // input's gradient, once per quantised linear, whatever the number of tokens.
  if (!first_layer) add(t, "base.gptq_dequantized_weights", moe ? d.gptq_weights_moe : d.gptq_weights_dense);
  for (NamedBytes& term : peft_layer_terms(c, d.batch, d.seq, d.act, adapter_input_copy(d), d.stream)) {
    add(t, term.name.c_str(), term.bytes);
  }
  return t;
}

// What one block's bitsandbytes 4-bit linears keep as ctx attributes (Dims::quantized_inputs_retained):
// the input of every quantised linear whose input needs a gradient, once per distinct input, as
// block_terms counts them (q/k/v share one input, gate/up another).
Bytes retained_inputs(const Config& c, const Dims& d, bool moe, bool first_layer = false) {
  if (!d.quantized_inputs_retained) return Bytes{0};
  const ModelSpec& m = c.model;
  first_layer = first_layer && !d.peft.input_needs_grad;
  const bool attention_adapted = d.peft.grad_targets & (kLoraQ | kLoraK | kLoraV | kLoraO);
  const bool frozen_first_attention = first_layer && !attention_adapted;
  Bytes kept{0};
  if (!frozen_first_attention) {
    if (!first_layer) kept += d.tokens * d.hidden_split * d.act;   // q, k, v
    kept += d.tokens * d.heads * d.v_head_dim * d.act;              // o
  }
  if (moe) {
    const Count routed = d.tokens * m.num_experts_per_tok;
    const Count expert_ff = ceil_div(Count(m.moe_intermediate_size), c.parallel.tensor);
    // Stacked experts that bitsandbytes left unquantised keep no ctx inputs.
    const Count expert_inputs = d.experts_unquantized ? Count(0) : routed * d.hidden + routed * expert_ff;
    return kept + (d.tokens * d.hidden_split + expert_inputs + d.tokens * shared_expert_ff(c)) * d.act;
  }
  const bool mlp_input_grad = !(first_layer && (m.block == BlockLayout::kParallel || !attention_adapted));
  if (mlp_input_grad) kept += d.tokens * d.hidden_split * d.act;  // gate / up
  return kept + d.tokens * d.ff * d.act;                          // down
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
  // Compiled, the policy becomes tags on the traced graph's nodes, and the min-cut partitioner
  // (torch/_functorch/partitioners.py, min_cut_rematerialization_partition) saves only values that
  // backward reads: MUST_SAVE forbids recomputing a node (should_ban_recomputation: "marked
  // MUST_SAVE", as a matmul is banned anyway), it does not keep an output nobody reads.
  // A dense block's last matmul (the down projection) feeds only the residual sum, the next block's
  // saved input, so its output is not kept; a MoE's expert outputs are, for the routing weights'
  // gradient.
  const bool drops_last = d.impl.compile == Switch::kYes && !moe;
  Bytes mlp_side{0};
  for (std::size_t i = 0; i < mlp_widths.size(); ++i) {
    if (drops_last && i + 1 == mlp_widths.size()) continue;
    if ((widths.size() + i) % 2 == 0) mlp_side += tokens_through_mlp * mlp_widths[i] * d.act;
  }
  std::vector<NamedBytes> t;
  add(t, "selective_op.block_input", d.tokens * d.hidden_split * d.stream);
  add(t, "selective_op.attention_matmul_outputs", attention_side);
  if (d.impl.attention != AttentionImpl::kEager) {
    add(t, "selective_op.attention_output",
        d.tokens * d.heads * d.v_head_dim * d.act + d.batch * d.heads * d.seq * kFp32Bytes);
  }
  add(t, "selective_op.mlp_matmul_outputs", mlp_side);
  return t;
}

// Saved outside the blocks: the token ids (embedding backward), a learned table's position ids
// (shape 1×T), the embedding dropout mask, the rotary cos/sin tables all layers share (unless each
// layer builds its own: rotary_per_layer), and the
// final and embedding norms. A frozen embedding (LoRA) saves no ids.
// ShadowPEFT's side network (shadow/model.py): a one-block copy of the model, every weight trained,
// run on the (frozen, shared) embeddings before the model: one fine-tuned block's saved tensors
// (its first norm's input, which needs no gradient, counted all the same: t·d·4 + t·4 over), its
// final norm and its own rotary tables; and
// its auxiliary loss, the log-softmax of lm_head(s0) over the vocabulary in the compute dtype and
// the int64 targets.
Bytes shadow_backbone_bytes(const Config& c, const Dims& d) {
  Config full = c;
  full.training.finetune = Finetune{};
  // The mirror's weights are in the base's dtype: a 16-bit base under autocast is bf16 weights
  // computed under autocast, not AMP's fp32 weights with their casts.
  const PrecisionRecipe& r = recipe_of(c);
  if (r.autocast && d.stream != kFp32Bytes) full.training.precision = Precision::kBf16Autocast;
  const Dims fd = make_dims(full);
  Bytes bytes{0};
  for (const NamedBytes& term : block_terms(full, fd, false, true, false)) bytes += term.bytes;
  const ModelSpec& m = c.model;
  if (m.final_norm) bytes += norm_bytes(m, fd);
  if (m.position_embedding == PositionKind::kRotary) bytes += d.seq * d.head_dim * d.act * 2;
  const Count targets = d.batch * (d.seq - 1);
  const Bytes log_probs = r.autocast ? kFp32Bytes : d.act;  // log_softmax runs in fp32 under autocast
  return bytes + targets * m.vocab_size * log_probs + targets * kInt64Bytes;
}

Bytes outside_bytes(const Config& c, const Dims& d) {
  const ModelSpec& m = c.model;
  Bytes bytes{0};
  if (!d.lora) {
    bytes += d.tokens * kInt64Bytes;
    if (m.position_embedding == PositionKind::kLearned) bytes += d.seq * kInt64Bytes;
    if (d.residual_dropout) bytes += d.tokens * d.hidden_split * kMaskBytes;
  }
  // transformers computes the rotary cos/sin (1, T, rotated part of the head) every forward and
  // the q·cos / k·sin products save them; frameworks that index a precomputed buffer save nothing new.
  if (m.position_embedding == PositionKind::kRotary && !m.rotary_per_layer &&
      implementation_profile(d.impl.framework).rotary_saved) {
    const Count rotated = m.rotary_dim > 0 ? Count(m.rotary_dim) : d.head_dim;
    bytes += d.seq * rotated * d.act * 2;
  }
  if (m.final_norm) bytes += norm_bytes(m, d);
  // A norm right after the embeddings (BLOOM's word_embeddings_layernorm) saves its input, unless
  // the embedding is frozen (LoRA): its output then needs no gradient (measured: families.py, bloom).
  if (m.embedding_norm && !d.lora) bytes += norm_bytes(m, d);
  // Baichuan-13B's ALiBi bias (modeling_baichuan.py, BaichuanModel.forward): inverted padding mask
  // + alibi_mask.unsqueeze(0), one B×H×T×T tensor in the compute dtype, handed to every layer. A
  // checkpointed layer saves it as an input and SDPA's memory-efficient kernel by reference: one
  // tensor through backward, freed with the first layer's. Eager attention without checkpointing
  // saves its own scores instead, and the bias dies with the forward.
  if (d.impl.attention_mask == AttentionMask::kAlibi &&
      (c.training.checkpointing != Checkpointing::kNone || d.impl.attention != AttentionImpl::kEager)) {
    bytes += d.batch * d.heads * d.seq * d.full_seq * d.act;
  }
  if (c.training.finetune.method == FinetuneMethod::kShadow) bytes += shadow_backbone_bytes(c, d);
  return bytes + peft_outside_bytes(c, d.tokens, d.act);
}

// Per-layer saved bytes of each kind of block, and how many of each the busiest stage holds.
struct Blocks {
  Bytes dense, moe;          // one layer of each kind (a hybrid model's: the mean over its two mixers)
  Bytes largest;             // the largest single block (a hybrid model's larger mixer's)
  Bytes first_layer_saving;  // what the first block saves less under LoRA (see block_terms)
  Bytes recomputed_core;     // under selective checkpointing: the attention core one block recomputes
  Count dense_layers, moe_layers, layers;  // on the busiest pipeline stage
  Count recomputed;                        // of those, the blocks full checkpointing recomputes
};

Blocks blocks(const Config& c, const ParameterCount& params, const Dims& d) {
  const ModelSpec& m = c.model;
  Blocks b;
  b.dense = sum(block_terms(c, d, false));
  b.moe = m.num_experts > 0 ? sum(block_terms(c, d, true)) : Bytes{0};
  b.largest = max(b.dense, b.moe);
  if (m.hybrid_attention()) {
    // Every block has the same MLP (validate.cpp); the mixers differ, and the stage holds them in
    // proportion (one stage: validate.cpp). A mean block times the layers is the exact total.
    const Count layers = max(Count(m.num_hidden_layers), Count(1)), linear = params.linear_layer_count;
    const bool moe = m.num_experts > 0;
    const Bytes attending = sum(block_terms(c, d, moe)), gated = sum(block_terms(c, d, moe, false, true));
    (moe ? b.moe : b.dense) = mul_div(attending, layers - linear, layers) + mul_div(gated, linear, layers);
    b.largest = max(attending, gated);
  }
  // The busiest pipeline stage holds ceil(L/pp) layers.
  b.layers = ceil_div(Count(m.num_hidden_layers), c.parallel.pipeline);
  b.dense_layers = min(params.dense_layer_count, b.layers);
  // Interleaved layers: the stage holds its share of the MoE layers (as placement's choose_stage).
  if (m.moe_layers_interleaved) b.dense_layers = b.layers - interleaved_moe_layers(params, m, b.layers);
  b.moe_layers = b.layers - b.dense_layers;
  // checkpointed_layers counts the model's blocks; each stage recomputes its share (Megatron's
  // block method: N per stage).
  const std::int64_t total = m.num_hidden_layers;
  b.recomputed = total > 0 ? min(b.layers, ceil_div(Count(c.training.recomputed_layers(total)) * b.layers, Count(total)))
                           : Count(0);
  const bool first_is_moe = params.dense_layer_count.is_zero();
  // What the first block keeps less (its input needs no gradient under a PEFT method), and, for a
  // hybrid model, all that the blocks below the first adapted one keep (below).
  b.first_layer_saving = Bytes{0};
  std::int64_t leading = 0;
  const std::int64_t stage_layers = std::min(b.layers.value(), m.num_hidden_layers);
  if (d.lora && m.hybrid_attention() && !d.peft.input_needs_grad && adapts_linears_method(c.training.finetune.method)) {
    // A hybrid model's blocks below the first one a PEFT method adapts keep nothing without
    // checkpointing (their input needs no gradient and nothing in them trains: Qwen3.5's three
    // leading Gated DeltaNet blocks under q/k/v/o targets), and that first adapted block keeps what
    // a first block does. (Under full checkpointing PEFT's enable_input_require_grads gives every
    // block's input a gradient: body_bytes counts every block.)
    constexpr unsigned kMlpTargets = kLoraGate | kLoraUp | kLoraDown | kLoraRouter;
    const unsigned g = d.peft.grad_targets;
    const bool linear_adapted = (g & (kLoraLinearAttn | kMlpTargets)) != 0;
    const bool full_adapted = (g & (kLoraQ | kLoraK | kLoraV | kLoraO | kLoraQkv | kMlpTargets)) != 0;
    while (leading < stage_layers && !(params.is_linear_layer(leading) ? linear_adapted : full_adapted)) {
      b.first_layer_saving += sum(block_terms(c, d, first_is_moe, false, params.is_linear_layer(leading)));
      ++leading;
    }
  }
  if (leading < std::max<std::int64_t>(stage_layers, 1)) {
    const bool linear = params.is_linear_layer(leading);
    b.first_layer_saving += sum(block_terms(c, d, first_is_moe, false, linear)) -
                            sum(block_terms(c, d, first_is_moe, true, linear));
  }
  if (c.training.checkpointing == Checkpointing::kSelective) {
    // What selective recomputation drops from a block (the eager attention core, Korthikanti et
    // al. §5) exists again, for one block at a time, while that block's backward runs.
    Config kept = c;
    kept.training.checkpointing = Checkpointing::kNone;
    b.recomputed_core = max(sum(block_terms(kept, d, false)) - b.dense,
                            m.num_experts > 0 ? sum(block_terms(kept, d, true)) - b.moe : Bytes{0});
  }
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
      // arguments: eager attention's additive causal mask (T × T in the compute dtype). Blocks left
      // out of it (training.checkpointed_layers) keep everything, dense and MoE in proportion. Under
      // a PEFT method transformers' gradient_checkpointing_enable makes the embedding's output need a
      // gradient (enable_input_require_grads): every block keeps its input and saves as any block
      // does, a hybrid model's unadapted leading blocks too (phases.cpp).
      Bytes body = d.tokens * d.hidden_split * d.stream * b.recomputed;
      if (b.recomputed > Count(0) && d.impl.attention == AttentionImpl::kEager &&
          d.impl.attention_mask == AttentionMask::kAdditive) {
        body += d.seq * d.full_seq * d.act;
      }
      const Count kept = b.layers - b.recomputed;
      if (kept > Count(0)) body += mul_div(b.dense * b.dense_layers + b.moe * b.moe_layers, kept, b.layers);
      return body;
    }
    case Checkpointing::kNone:
    case Checkpointing::kSelective:
      break;
  }
  // A method that trains nothing below some block (LLaMA-Adapter) saves nothing there.
  const Count frozen = min(d.peft.frozen_bottom_layers, b.dense_layers);
  return b.dense * (b.dense_layers - frozen) + b.moe * b.moe_layers - b.first_layer_saving;
}

// The bytes of one weight of a bitsandbytes 4-bit linear dequantised for a matmul whose other
// operand is `act` wide: the quantisation state's dtype (the weight's dtype when it was quantised:
// the load dtype, 16-bit; fp16 under Lightning's plugin, ImplementationProfile::bnb_quantized_from_fp16),
// plus MatMul4Bit's .to(A.dtype) copy where that dtype differs (fp16 state, bf16 or fp32 compute).
Bytes bnb_dequantized_element(const Config& c, Bytes act) {
  const ImplementationProfile& p = implementation_profile(c.training.implementation.framework);
  if (!p.bnb_quantized_from_fp16) return Bytes{2};
  const Precision precision = c.training.precision;
  const bool fp16_compute = precision == Precision::kFp16Mixed || precision == Precision::kFp16Master;
  return fp16_compute ? Bytes{2} : Bytes{2} + act;
}

// Backward working memory: the gradients of one layer's largest intermediates, plus, under full
// checkpointing, that layer's recomputed activations (the total; in `out`, the recomputed part and
// the sizes of the gradient tensors).
Bytes layer_backward_working_bytes(const Config& c, const Dims& d, const Blocks& b, ActivationModel& out) {
  const Training& tr = c.training;
  Bytes& recomputed = out.layer_recomputed_bytes;
  recomputed = Bytes{0};
  const Count scores = d.batch * d.heads * d.seq * d.full_seq;
  const Bytes attention_grads =
      d.impl.attention == AttentionImpl::kEager ? scores * kFp32Bytes * 2 : Bytes{0};
  // A gated MLP's backward holds the down projection's input gradient, then the gradients of the
  // activation's output and of up, then of gate; a kernel that writes the gate and up gradients
  // over the tensors it saved (Liger-Kernel ops/swiglu.py, _swiglu_backward_kernel; unsloth
  // kernels/swiglu.py, _DWf_DW_dfg_kernel) adds only the first.
  const bool in_place = d.impl.activation_kernel == ActivationKernel::kFusedInplace && c.model.mlp == MlpKind::kGated;
  const Count grads_per_element = in_place ? 1 : 3;
  Bytes mlp_grads = d.tokens * d.ff * d.act * grads_per_element;
  // A mixture of experts run as a loop (transformers 4's MixtralSparseMoeBlock: one expert's rows
  // at a time, index_add_ into the output) goes back through one expert's chain at a time, and
  // autograd frees each node's saved tensors as it runs: the MLP's gradients are one expert's rows
  // (tokens · top-k / experts on average), not every token's. Dense blocks beside it, and shared
  // experts (every token), keep the whole-batch size.
  const ModelSpec& m = c.model;
  if (m.num_experts > 0 && d.impl.moe_dispatch == MoeDispatch::kLoop && m.num_shared_experts == 0 &&
      m.num_experts_per_tok > 0) {
    const Count expert_ff = m.moe_intermediate_size > 0 ? ceil_div(Count(m.moe_intermediate_size), c.parallel.tensor) : d.ff;
    const Count rows = ceil_div(d.tokens * Count(m.num_experts_per_tok), Count(m.num_experts));
    const Bytes expert_grads = rows * expert_ff * d.act * grads_per_element;
    mlp_grads = m.first_k_dense_replace > 0 ? max(mlp_grads, expert_grads) : expert_grads;
  }
  Bytes mlp_grad_tensor = mlp_grads / grads_per_element.value();
  if (m.num_experts > 0 && d.impl.moe_dispatch == MoeDispatch::kDense) {
    // Every expert's rows at once (Llama4TextMoe): the batched matmuls' gradients are the down
    // input's (E·T·ff), then the SwiGLU's (gate and up), each over every expert (an eager SwiGLU's
    // three, whatever kernel the MLP classes get).
    const Count all = d.tokens * ceil_div(Count(m.num_experts), c.parallel.expert);
    const Count expert_ff = ceil_div(Count(m.moe_intermediate_size), c.parallel.tensor);
    const Bytes expert_tensor = all * expert_ff * d.act;
    if (expert_tensor * Count(3) > mlp_grads) {
      mlp_grads = expert_tensor * Count(3);
      mlp_grad_tensor = expert_tensor;
    }
  }
  // A Gated DeltaNet's backward (fla's chunk_gated_delta_rule_bwd; measured with Triton's
  // interpreter): it recomputes w, u and the chunk states h ([B, T/64, Hv, K, V]) and holds, until
  // it returns, dh of the same size, the value-sized dv, dv2 and v_new, the key-sized dq and dk at
  // the value heads (then summed to the key heads) and dw, fp32 gate gradients, and the L2 norms'
  // input gradients; all in the kernel's dtype.
  // transformers' torch fallback instead (torch_chunk_gated_delta_rule, all fp32): while autograd
  // walks the chunk loop back it accumulates full-size gradients of the chunked query, key and
  // decayed keys (K wide, at the value heads), of the new values and the output (V wide) and of
  // the intra-chunk scores (64 wide), each chunk's select_backward adding a zero-filled full-size
  // tensor of one of them at a time, and the state's gradient twice (B·Hv·K·V). Measured on the
  // CPU (tools/frameworks/gdn_fallback_backward.py): within 4 % over eleven shapes of four chunks or
  // more; two chunks or fewer keep less (the first select_backward's tensor becomes the sum).
  Bytes linear_attention_grads{0};
  if (m.hybrid_attention()) {
    const Bytes e = d.mlp_act;
    const Count hk = m.linear_num_key_heads, hv = m.linear_num_value_heads, k = m.linear_key_head_dim,
                v = m.linear_value_head_dim;
    const Count chunks = ceil_div(d.seq, Count(kDeltaRuleChunk));
    const bool grouped = m.linear_num_value_heads != m.linear_num_key_heads;
    if (d.impl.linear_attention_kernel == LinearAttentionKernel::kTorch) {
      const Count padded = d.batch * chunks * Count(kDeltaRuleChunk);
      const Count widest = max(max(k, v), Count(kDeltaRuleChunk));
      linear_attention_grads = padded * hv * (k * 3 + v * 2 + Count(kDeltaRuleChunk) + widest) * kFp32Bytes +
                               d.batch * hv * k * v * kFp32Bytes * 2;
    } else {
      linear_attention_grads = d.tokens * hv * (k * 3 + v * 4) * e + d.batch * chunks * hv * k * v * e * 2 +
                               d.tokens * hk * k * e * (grouped ? 3 : 2) + d.tokens * hv * Bytes{8} + d.tokens * hv * e;
    }
  }
  Bytes working = max(max(attention_grads, mlp_grads), linear_attention_grads) + d.tokens * d.hidden_split * d.stream * 2;
  // The scores' two gradients, or the MLP's, one per intermediate.
  out.layer_gradient_tensor_bytes[0] = attention_grads > mlp_grads ? attention_grads / 2 : mlp_grad_tensor;
  out.layer_gradient_tensor_bytes[1] = d.tokens * d.hidden_split * d.stream;  // the block's input's and output's
  // LoRA on stacked experts: the grouped GEMM's backward returns the gradient of the whole merged
  // weight (W + s·B·A needs one for B and A), the size of the stack, before the baddbmm's backward
  // reduces it to the factors' (the larger of gate_up's and down's, one at a time).
  const ExpertAdapters adapters = expert_adapters(d);
  if (stacked_experts(c) && (adapters.gate_up || adapters.down)) {
    const Count experts = ceil_div(Count(c.model.num_experts), c.parallel.expert);
    const Count expert_ff = ceil_div(Count(c.model.moe_intermediate_size), c.parallel.tensor);
    const Count up_rows = c.model.mlp == MlpKind::kGated ? expert_ff * 2 : expert_ff;
    const Count largest = adapters.gate_up ? up_rows : expert_ff;
    working += experts * largest * d.hidden * d.stream;
  }
  if (tr.float8 != Float8::kNone) {
    // torchao's Float8Linear backward casts grad_output to fp8 twice (two layouts), the weight and
    // the input once more (torchao/float8/float8_linear.py, matmul_with_hp_or_float8_args): one
    // byte per element of each, for the largest linear at a time (the MLP's), and the weight's fp8
    // copy unless FSDP gathered it in fp8 already.
    const Count h = d.hidden, ff = d.ff;
    // (torchao's all-gather hook runs under FSDP2's ZeRO-3 sharding only.)
    const bool fp8_gathered = tr.float8 == Float8::kTensorwise && c.parallel.float8_all_gather &&
                              c.parallel.zero_stage >= 3 && runs_fsdp2(c);
    const Count weight = fp8_gathered ? Count(0) : h * ff;
    Bytes casts = max(d.tokens * (h + ff * 2), d.tokens * (ff + h * 2)) * Bytes{1} + weight * Bytes{1};
    // MX training (torchao/prototype/mx_formats, mx_mm.backward) casts the same four operands, each
    // along the reduction dimension in blocks of 32 with one E8M0 (1-byte) scale per block; the
    // transposed (dim1) casts run in one kernel (the mxfp8_cublas recipe's CUDA or Triton dim1
    // kernel, or Inductor's fusion under compile), with no 16-bit transposed copy.
    if (tr.float8 == Float8::kMxfp8) casts += ceil_div(casts, 32);
    working += casts;
  }
  // A 4-bit bitsandbytes base: each MatMul4Bit backward makes its input's gradient with the whole
  // weight dequantised, matmul(grad, dequantize_4bit(W).to(grad.dtype).t()) (bitsandbytes/autograd/
  // _functions.py, 0.42 to today), one linear at a time: the largest on top of the block's
  // gradients (bnb_dequantized_element: 2 bytes a weight, 4 under Lightning's fp16 state).
  // (unsloth's fused LoRA functions dequantise with their own kernels, fast_dequantize: not this.)
  if (d.impl.framework != Framework::kUnsloth) working += d.largest_4bit_linear * bnb_dequantized_element(c, d.act);
  // With only some blocks checkpointed (the first ones of the stage, as Megatron's block method
  // picks them), backward reaches them after the blocks above have freed everything, so their
  // recomputation never sets the high point: the block is counted when every block is recomputed.
  if (tr.checkpointing == Checkpointing::kFull && b.recomputed == b.layers) {
    // The block recomputed for its backward; its input, saved by the checkpoint, is the tensor its
    // first op saves again (the recomputation reads the saved input itself), so it is not new.
    recomputed = max(b.largest - d.tokens * d.hidden_split * d.stream, Bytes{0});
  } else if (tr.checkpointing == Checkpointing::kSelectiveOp) {
    recomputed = b.largest;  // the block recomputed for its backward
  } else if (tr.checkpointing == Checkpointing::kSelective) {
    recomputed = b.recomputed_core;  // the attention core recomputed for its backward
  }
  return working + recomputed;
}

}  // namespace

PipelineInFlight pipeline_in_flight(const Parallel& p, std::int64_t micro_batches) {
  if (p.pipeline <= 1 || p.pipeline_schedule == PipelineSchedule::kSequential) return {1, 1};
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
    case Checkpointing::kFull: {
      // The seeds: "one layer's activations"; blocks left out of checkpointing keep theirs.
      const std::int64_t recomputed = c.training.recomputed_layers(m.num_hidden_layers);
      return per_layer * (m.num_hidden_layers - recomputed + (recomputed > 0 ? 1 : 0));
    }
    case Checkpointing::kSelective:               // Korthikanti et al.: the 5hT term is recomputed
    case Checkpointing::kSelectiveOp:
      return b * t * d * kPerHiddenBytes * m.num_hidden_layers;
  }
  return per_layer;
}

ActivationModel activation_model(const Config& c, const ParameterCount& params) {
  if (uses_encoder_activation_model(c.model)) return encoder_activation_model(c, params);
  const ModelSpec& m = c.model;
  const Training& tr = c.training;
  Dims d = make_dims(c);
  const Finetune& f = c.training.finetune;
  // The largest block linear bitsandbytes quantises (not the stacked experts it leaves as they are,
  // experts_left_unquantized), split by tensor parallelism.
  if (d.lora && f.base_bits == 4 && f.quant_method == QuantMethod::kBitsandbytes) {
    for (const TensorGroup& g : params.groups) {
      if (!g.linear || g.layer == LayerKind::kNone || (d.experts_unquantized && g.component == Component::kExperts)) continue;
      d.largest_4bit_linear = max(d.largest_4bit_linear, ceil_div(g.elements_each(), c.parallel.tensor));
    }
  }
  if (d.lora && f.base_bits < 16 && f.quant_method == QuantMethod::kGptq && f.gptq_kernel == GptqKernel::kDequantize) {
    // One block's (a hybrid model's larger mixer's).
    for (const bool linear : {false, true}) {
      Bytes dense{0}, moe{0};
      for (const TensorGroup& g : params.groups) {
        if (!g.linear || g.layer == LayerKind::kNone) continue;
        const Bytes each = g.elements_each() * Bytes{2} / c.parallel.tensor;  // fp16
        (g.layer == LayerKind::kMoe ? moe : dense) += each * params.per_layer_in(g, linear);
      }
      d.gptq_weights_dense = max(d.gptq_weights_dense, dense);
      d.gptq_weights_moe = max(d.gptq_weights_moe, moe);
    }
  }
  const Blocks b = blocks(c, params, d);
  ActivationModel out;

  const bool all_moe = m.num_experts > 0 && params.dense_layer_count.is_zero();
  out.layer_terms = tr.checkpointing == Checkpointing::kSelectiveOp ? selective_op_terms(c, d, all_moe)
                                                                     : block_terms(c, d, all_moe);
  if (m.hybrid_attention()) {
    // A hybrid model's mean block: each term over the blocks that have it.
    const Count layers = max(Count(m.num_hidden_layers), Count(1)), linear = params.linear_layer_count;
    std::vector<NamedBytes> mean;
    const auto fold = [&](const std::vector<NamedBytes>& terms, Count share) {
      for (const NamedBytes& term : terms) {
        const Bytes part = mul_div(term.bytes, share, layers);
        auto it = std::find_if(mean.begin(), mean.end(), [&](const NamedBytes& x) { return x.name == term.name; });
        if (it == mean.end()) mean.push_back({term.name, part});
        else it->bytes += part;
      }
    };
    fold(block_terms(c, d, all_moe), layers - linear);
    fold(block_terms(c, d, all_moe, false, true), linear);
    out.layer_terms = std::move(mean);
  }
  out.embedding_saved_bytes = outside_bytes(c, d);
  out.every_block_recomputed = tr.checkpointing == Checkpointing::kFull && b.recomputed == b.layers;
  const PipelineInFlight in_flight = pipeline_in_flight(c.parallel, tr.grad_accum_steps);
  Bytes body = body_bytes(c, d, b);
  const std::int64_t lowest = lowest_backward_layer(c);
  if (lowest > 0) {
    // Only some blocks train and the embedding does not: nothing below the lowest trained block
    // needs a gradient, so those blocks (and the embedding) run without autograd saving anything.
    // The blocks from there up save what a full fine-tune's do (a frozen block among them keeps a
    // little less: its linears need no input for a weight gradient).
    const std::int64_t layers = std::max<std::int64_t>(1, m.num_hidden_layers);
    body = mul_div(body, Count(std::max<std::int64_t>(0, layers - lowest)), Count(layers));
    out.embedding_saved_bytes = Bytes{0};
  }
  // Images through a vision tower (training.images_per_sample): what the tower keeps is saved
  // before the language model's first block and freed last in backward, as the embedding's is;
  // activation offload moves its blocks' tensors to the host as it does the language model's.
  const VisionSaved tower = vision_saved(c);
  out.embedding_saved_bytes += tower.outside + (tr.activation_offload ? Bytes{0} : tower.blocks);
  out.saved_bytes = mul_div(body + out.embedding_saved_bytes, in_flight.chunks, in_flight.chunks_per_stage);
  // ShadowPEFT's layer wraps the decoder block (shadow/layer.py), so its injection and update run
  // outside the checkpointed block and keep their tensors in every recomputed block too.
  if (f.method == FinetuneMethod::kShadow && tr.checkpointing == Checkpointing::kFull) {
    Bytes shadow{0};
    for (const NamedBytes& term : peft_layer_terms(c, d.batch, d.seq, d.act, Bytes{0}, d.stream)) shadow += term.bytes;
    out.saved_bytes += shadow * b.recomputed;
  }
  if (tr.activation_offload) {
    // Offloading streams saved tensors to the host; one layer's worth is on the GPU while its
    // backward runs. Under full or op-level checkpointing that layer is the one recomputed, which
    // the backward working memory already holds, so only the embedding's tensors stay.
    const bool recomputed = out.every_block_recomputed || tr.checkpointing == Checkpointing::kSelectiveOp;
    // (Never more than kept without offloading: a hybrid model's frozen blocks keep nothing.)
    out.saved_bytes = min(out.saved_bytes, (recomputed ? Bytes{0} : b.largest) + out.embedding_saved_bytes);
    out.notes.push_back("Activation offload: saved tensors stream to CPU memory; about one layer stays on the GPU.");
  }
  out.layer_backward_working_bytes = layer_backward_working_bytes(c, d, b, out);
  {
    // Recomputation sets the backward high point only where the top block is recomputed too (with
    // some blocks checkpointed, layer_recomputed_bytes is zero: the bottom blocks' never set it).
    const bool recomputed = out.every_block_recomputed || tr.checkpointing == Checkpointing::kSelectiveOp;
    const auto temporaries = [&](PeftMoment moment) {
      return peft_temporaries(c, d.batch, d.seq, d.act, adapter_input_copy(d), d.stream, moment);
    };
    // (MeZO's forward saves nothing, and the block's tensors it holds are counted already.)
    out.layer_forward_temporaries = temporaries(forward_only(tr) ? PeftMoment::kNoGrad
                                                : recomputed ? PeftMoment::kForwardDropped
                                                             : PeftMoment::kForwardKept);
    if (!forward_only(tr)) {
      if (recomputed) out.layer_recompute_temporaries = temporaries(PeftMoment::kForwardKept);
      out.layer_backward_temporaries = temporaries(PeftMoment::kBackward);
    }
    const Bytes high = total(recomputed ? out.layer_recompute_temporaries : out.layer_forward_temporaries);
    if (high >= Bytes{64LL << 20}) {  // said where it can matter
      const bool dora = f.method == FinetuneMethod::kDora;
      char text[400];
      std::snprintf(text, sizeof text,
                    "%s: every adapted layer's forward builds %s: %.2f GiB at once in the largest, freed as the "
                    "layer returns%s.",
                    dora ? "DoRA" : to_string(f.method),
                    dora ? "its dense update again to norm the weight (an identity [in, in], the update and the "
                           "adapted weight [out, in], in the adapters' dtype)"
                         : "tensors it does not keep (the pieces of its update before their product)",
                    static_cast<double>(high.value()) / 1073741824.0,
                    recomputed ? ", and again as each block is recomputed in backward" : "");
      out.notes.push_back(text);
    }
  }
  // A method whose own saved tensors outweigh the block's (HRA's and BOFT's dense products, LoHa's
  // delta weights, built in forward for backward): said, since it can cost more than a full
  // fine-tune's activations.
  Bytes method_bytes{0}, block_bytes{0};
  for (const NamedBytes& term : out.layer_terms) {
    block_bytes += term.bytes;
    if (term.name.rfind("peft.", 0) == 0) method_bytes += term.bytes;  // none for LoRA (peft_layer_terms)
  }
  if (!method_bytes.is_zero() && method_bytes * 2 > block_bytes) {
    char text[320];
    std::snprintf(text, sizeof text,
                  "%s: what its PEFT layers build in forward and keep for backward is %.0f %% of each block's "
                  "activations (%.2f GiB a block%s); LoRA on the same layers keeps a small part of that.",
                  to_string(tr.finetune.method),
                  100.0 * static_cast<double>(method_bytes.value()) / static_cast<double>(block_bytes.value()),
                  static_cast<double>(method_bytes.value()) / 1073741824.0,
                  out.every_block_recomputed ? ", held only while that block is recomputed in backward" : "");
    out.notes.push_back(text);
  }
  if (d.mlp_act == kFp32Bytes && d.act != kFp32Bytes && d.lora && f.base_bits < 16 && !forward_only(tr)) {
    // Said because it surprises: the same run with a 16-bit base keeps less (make_dims: bnb_base).
    out.notes.push_back("bitsandbytes base: its linears return their input's dtype, fp32 after prepare_model_for_"
                        "kbit_training or a LayerNorm under autocast: the MLP runs in fp32, more than a 16-bit base.");
  }
  if (forward_only(tr)) {
    // MeZO's forward passes run under torch.no_grad: autograd saves nothing, and a block's
    // tensors live only while the block runs; one block's worth is the high point.
    out.saved_bytes = b.largest;
    out.embedding_saved_bytes = Bytes{0};
    out.layer_backward_working_bytes = out.layer_recomputed_bytes = Bytes{0};
    out.every_block_recomputed = false;
    out.notes.push_back("MeZO: forward passes only, under torch.no_grad; nothing is saved for backward, and one "
                        "block's tensors exist at a time.");
    return out;
  }
  // bitsandbytes' ctx attributes outlive backward: the inputs of the blocks that are not recomputed
  // (under reentrant checkpointing a recomputed block's forward runs under no_grad, so no ctx keeps
  // anything, and its recomputation is a graph of its own that goes with its backward). Non-reentrant
  // checkpointing runs the block's first forward with grad and only drops what save_for_backward
  // saves (torch/utils/checkpoint.py, _checkpoint_hook: saved_tensors_hooks): MatMul4Bit's
  // `ctx.tensors = (A, B)` is a plain attribute, so every block keeps its 4-bit linears' inputs until
  // the step's graph is freed, recomputed or not (bitsandbytes 0.41.3 autograd/_functions.py; PEFT's
  // examples/sft/README.md: QLoRA needs use_reentrant True "else QLoRA leads to high GPU memory
  // consumption"; ms-swift 1.x made non-reentrant its default, swift/llm/utils/model.py
  // fix_gradient_checkpointing_warning).
  const bool first_forward_keeps_ctx = tr.checkpointing == Checkpointing::kFull &&
                                       d.impl.checkpoint_impl == CheckpointImpl::kNonReentrant;
  const Count not_recomputed =
      tr.checkpointing == Checkpointing::kFull && !first_forward_keeps_ctx ? b.layers - b.recomputed : b.layers;
  if (d.quantized_inputs_retained && tr.checkpointing != Checkpointing::kSelectiveOp && not_recomputed > Count(0)) {
    Bytes retained = mul_div(retained_inputs(c, d, false) * b.dense_layers +
                                 (m.num_experts > 0 ? retained_inputs(c, d, true) * b.moe_layers : Bytes{0}),
                             not_recomputed, b.layers);
    const bool first_is_moe = params.dense_layer_count.is_zero();
    if (not_recomputed == b.layers) {
      retained = retained - (retained_inputs(c, d, first_is_moe) - retained_inputs(c, d, first_is_moe, true));
    }
    out.retained_bytes = mul_div(retained, in_flight.chunks, in_flight.chunks_per_stage);
    // The recomputed blocks' share is held on top of their checkpoints (which is all the saved bytes
    // count for them), from their forward to the end of the step.
    if (first_forward_keeps_ctx) out.saved_bytes += mul_div(out.retained_bytes, b.recomputed, b.layers);
    out.retained_until_next_forward = d.impl.loop_keeps_logits == Switch::kYes;
    out.notes.push_back(std::string("bitsandbytes before 0.43.2: each 4-bit linear keeps its input as a ctx attribute, "
                                    "which backward does not free; they go with the step's graph") +
                        (out.retained_until_next_forward ? ", which the loop holds (with the logits) until the next "
                                                           "forward returns." : ", after backward.") +
                        (first_forward_keeps_ctx && b.recomputed > Count(0)
                             ? " Under non-reentrant checkpointing the recomputed blocks keep theirs too, from their "
                               "first forward (use_reentrant=True avoids it)."
                             : ""));
  }
  // With part of the stack checkpointed the bottom block's high point still counts the other
  // blocks' tensors, which their backward has freed by then: an overestimate there (and the
  // allocator replay models the hold only where every block is recomputed).
  if (fsdp1_keeps_recomputed_inputs(c, d.impl) && b.recomputed > Count(0)) {
    out.frozen_unit_input_bytes = d.tokens * d.hidden_split * d.stream;
    out.frozen_unit_blocks = b.recomputed;
    out.notes.push_back("FSDP1 with frozen units under reentrant checkpointing: every recomputed block's input and "
                        "its gradient stay until backward ends (the units' reshard-only hooks hold them).");
  }
  if (d.impl.use_cache == Switch::kYes) {
    // transformers' attention returns (key_states, value_states) after the rotary embedding, at the
    // key/value heads, before any repeat_kv (models/llama/modeling_llama.py, past_key_value). They
    // are the very tensors a fused kernel saves at the key/value heads, or eager attention of a
    // model without grouped queries; where the block is recomputed, or what is saved is repeated to
    // every query head, the cache is memory of its own.
    //
    // A fused projection (GPT-2's and GPTBigCode's c_attn) returns its keys and values as views of
    // its output (split, view, transpose: GPTBigCode's `present = key_value`, a slice of c_attn's
    // output), so the cache keeps that whole output alive, queries included, in the projection's
    // output dtype: fp32 out of a bitsandbytes linear fed fp32 (Dims::mlp_act), which the kernels
    // save only as their 16-bit casts. memfit counts it as the keys' tensor; the values' is the
    // rotated keys of a rotary model.
    const bool recomputed = tr.checkpointing == Checkpointing::kFull;
    const bool repeated = d.kv_heads != d.heads &&
                          (d.impl.attention == AttentionImpl::kEager || d.impl.kv_saved == KvSaved::kQueryHeads);
    const bool fused_view = d.impl.projections == Projections::kFused && m.attention_type != AttentionType::kMla;
    const Bytes projected = fused_view ? d.mlp_act : d.act;
    const Count cache_layers = m.hybrid_attention() ? mul_div(b.layers, Count(m.full_attention_layers()),
                                                              max(Count(m.num_hidden_layers), Count(1)))
                                                    : b.layers;
    // The returned keys and values alias what the attention kernel saved: no memory of their own
    // until backward frees the saved tensors, after which a loop holding its outputs keeps them
    // (to the step's end, and beside the next forward until it returns).
    // Prefix tuning's virtual keys and values are in the cache too (past_key_values, joined to every
    // layer's own).
    const Count cached_rows = d.tokens + (prefixes_keys_values(tr.finetune.method)
                                              ? d.batch * Count(tr.finetune.num_virtual_tokens) : Count(0));
    out.kv_cache_total_bytes = cached_rows * d.kv_heads * (d.head_dim + d.v_head_dim) * d.act * cache_layers;
    out.kv_cache_kept = d.impl.loop_keeps_logits == Switch::kYes;
    Bytes key{0}, value{0};
    if (fused_view) {
      key = d.tokens * (d.heads * d.head_dim + d.kv_heads * (d.head_dim + d.v_head_dim)) * projected;
      // Rotary models (GPT-NeoX, Falcon, Phi-3) return rotated keys, new tensors, beside the
      // values' view of the fused output.
      value = m.position_embedding == PositionKind::kRotary ? d.tokens * d.kv_heads * d.head_dim * d.act : Bytes{0};
      // The views keep the whole fused output after backward, whether or not it was saved.
      out.kv_cache_total_bytes = max(out.kv_cache_total_bytes, (key + value) * cache_layers);
    } else {
      key = d.tokens * d.kv_heads * d.head_dim * d.act;
      value = d.tokens * d.kv_heads * d.v_head_dim * d.act;
    }
    if (recomputed || repeated || projected != d.act) {
      out.kv_cache_key_bytes = key;
      out.kv_cache_value_bytes = value;
      // A hybrid model's attention layers only (its Gated DeltaNet layers' cache holds a fixed-size
      // state, not counted).
      out.kv_cache_bytes = (out.kv_cache_key_bytes + out.kv_cache_value_bytes) * cache_layers;
      out.kv_cache_total_bytes = max(out.kv_cache_total_bytes, out.kv_cache_bytes);
      out.notes.push_back("use_cache in training: every layer's keys and values are returned with the outputs" +
                          std::string(out.kv_cache_kept ? ", which the loop holds through backward." :
                                                          ", until the loss is computed."));
    } else if (out.kv_cache_kept) {  // the tensors attention saved: held once backward lets them go
      out.notes.push_back("use_cache in training: every layer's keys and values are returned with the outputs"
                          ", which the loop holds through backward.");
    }
  }
  return out;
}

namespace {

// What every loss kernel shares: the sizes of one step's logits on this GPU.
struct LossShape {
  Dims d;
  Count vocab;           // V on this GPU (vocab-parallel under tensor parallelism)
  Bytes loss_element;    // an element of what the loss reads: fp32 when upcast or under autocast
  Bytes head_input;      // the head's saved input (nothing when the head is frozen)
  Bytes labels;          // int64 labels
  Bytes logits;          // all logits in the compute dtype
  bool softcap = false;  // the logits are soft-capped (tanh keeps its output)
};

// Eager cross-entropy (transformers' ForCausalLMLoss): logits, their fp32 upcast, log_softmax's
// output (the one tensor saved), labels. Backward holds the saved log-probabilities, the incoming
// gradient and log_softmax's gradient (three V-wide tensors); then the logits' gradient and its
// cast to the compute dtype stay for the head's matmul backward.
//
// transformers 4.46-4.48 shifted the logits themselves (logits[..., :-1, :].contiguous()) inside
// ForCausalLMLoss, the caller still holding the 16-bit logits: one more copy beside the upcast while
// log_softmax runs (training.loss_shift_copy).
// In backward the slice's gradient is a new full-size tensor, made after log_softmax's backward has
// released its saved output, so three V-wide tensors remain the most at once.
void eager_loss(const LossShape& s, LossModel& out) {
  const Bytes log_probs = s.d.tokens * s.vocab * s.loss_element;
  const bool cast = s.loss_element != s.d.act;
  const Bytes upcast = cast ? log_probs : Bytes{0};
  // The copy is of the logits as the code holds them when it shifts: fp32 after an explicit
  // .float() (transformers), the compute dtype where autocast casts later, inside the loss (Qwen-1).
  const Bytes shift_copy = s.d.impl.loss_shift_copy != Switch::kYes ? Bytes{0}
                           : s.d.impl.logits_dtype == LogitsDtype::kFp32 ? s.d.tokens * s.vocab * kFp32Bytes
                                                                          : s.logits;
  // Soft-capped logits (Gemma 2): tanh keeps its output, a second logits-sized tensor, until the
  // loss's gradient reaches it.
  const Bytes softcap = s.softcap ? s.logits : Bytes{0};
  out.forward_bytes = s.head_input + s.logits + softcap + upcast + shift_copy + log_probs + s.labels;
  out.grad_bytes = log_probs + (cast ? s.logits : Bytes{0});
  out.backward_bytes = s.head_input + s.labels + softcap + max(log_probs * 3, out.grad_bytes);
}

// Per-chunk cross-entropy that keeps every chunk's log-probabilities (torchtune's
// CEWithChunkedOutputLoss, LitGPT's chunked_cross_entropy): the saved total is the eager one, the
// fp32 transient is one chunk's. LitGPT first copies the shifted logits.
void chunked_loss(const LossShape& s, const ImplementationProfile& p, LossModel& out) {
  const Count chunk_rows = p.loss_chunk_rows > 0 ? min(Count(p.loss_chunk_rows), s.d.tokens)
                                                 : ceil_div(s.d.tokens, std::max<std::int64_t>(1, p.loss_chunks));
  const Bytes log_probs = s.d.tokens * s.vocab * s.loss_element;
  const Bytes chunk = chunk_rows * s.vocab * s.loss_element;
  const Bytes copy = p.loss_copies_logits ? s.logits : Bytes{0};
  const Bytes upcast = s.loss_element != s.d.act && p.loss_copies_logits ? chunk : Bytes{0};
  const Bytes softcap = s.softcap ? s.logits : Bytes{0};  // the full logits were capped before chunking
  out.forward_bytes = s.head_input + s.logits + softcap + copy + upcast + log_probs + s.labels;
  out.grad_bytes = s.logits + (s.loss_element != s.d.act ? chunk : Bytes{0});
  out.backward_bytes = s.head_input + s.labels + softcap + log_probs + chunk * 2;
}

// A head quantised with bitsandbytes (head_quantized: LitGPT under Lightning's plugin) runs
// MatMul4Bit, which dequantises the whole weight for every call: forward computes
// linear(A, dequantize_4bit(W).to(A.dtype).t()) and backward matmul(grad, dequantize_4bit(W)
// .to(grad.dtype).t()) (bitsandbytes/autograd/_functions.py, 0.42 to today). The dequantised copy
// is in the quantisation state's dtype, fp16 where the weights were quantised from an fp16 copy
// (ImplementationProfile::bnb_quantized_from_fp16), and .to() adds one in the compute dtype when
// that differs: 4 bytes a weight under bf16 compute, both alive as the cast runs. LitGPT's head
// runs in 128-token chunks (lm_head_chunk_size), one at a time: the copy of the last chunk's
// forward sits beside the logits of the chunks before it; in backward, beside the logits' gradient.
void head_dequantized(const Config& c, const LossShape& s, const ImplementationProfile& p, LossModel& out) {
  const Bytes element = bnb_dequantized_element(c, s.d.act);
  const bool cast = element > Bytes{2};
  const Count weights = s.vocab * Count(c.model.hidden_size);
  out.head_dequant_bytes = weights * element;
  // The logits of the head calls before the last (none where the head runs once, or inside a fused
  // loss one chunk at a time): LitGPT's chunks are lm_head_chunk_size positions of every sequence.
  const std::int64_t calls = head_calls(c);
  const std::int64_t seq = std::max<std::int64_t>(1, c.training.seq_len);
  const Bytes logits_before =
      calls <= 1 ? Bytes{0}
      : p.loss_chunk_rows > 0
          ? mul_div(s.logits, Count(std::min(seq, p.loss_chunk_rows * (calls - 1))), Count(seq))
          : mul_div(s.logits, Count(calls - 1), Count(calls));
  out.forward_bytes = max(out.forward_bytes, s.head_input + s.labels + logits_before + out.head_dequant_bytes);
  out.notes.push_back(std::string("The output head is quantised too (Lightning's bitsandbytes plugin): each of its matmuls "
                                  "dequantises the whole weight") + (cast ? ", to fp16 then the compute dtype." : "."));
}

// A fused cross-entropy kernel (unsloth, llm.c's fused classifier, a compiled loss): it keeps the
// logits and one fp32 log-sum-exp per row, and writes the logits' gradient into the logits.
void fused_loss(const LossShape& s, LossModel& out) {
  const Bytes lse = s.d.tokens * kFp32Bytes;
  out.forward_bytes = s.head_input + s.logits + lse + s.labels;
  out.grad_bytes = s.logits;
  out.backward_bytes = out.forward_bytes;
}

// The eager cross-entropy under torch.compile (torchtitan's build_cross_entropy_loss compiles
// cross_entropy(pred.float(), labels) when training.compile is on, torchtitan/components/loss.py,
// from pytorch/torchtitan#1033 of 2025-04-02): Inductor fuses the upcast, log-softmax and gather
// into reductions, so forward keeps the 16-bit logits (the graph's input), the labels and two fp32
// values per row (the row maximum and the log-sum-exp), and no V-wide fp32 tensor exists. Backward
// is one kernel that writes the logits' gradient as a new 16-bit tensor while the saved logits are
// still held. (Checked with torch 2.13's Inductor on the CPU: the saved tensors are the input, the
// labels and two T×1 fp32 tensors; the gradient does not alias the input.)
void compiled_loss(const LossShape& s, LossModel& out) {
  const Bytes per_row = s.d.tokens * kFp32Bytes * 2;
  out.forward_bytes = s.head_input + s.logits + per_row + s.labels;
  out.grad_bytes = s.logits;
  out.backward_bytes = out.forward_bytes + s.logits;
}

// PyTorch's loss_parallel (torch/distributed/tensor/parallel/loss.py), which torchtitan enables with
// tensor parallelism (the output projection's ColwiseParallel keeps the logits sharded on the
// vocabulary, and train.py runs the loss inside the loss_parallel() context). Its handlers replace
// aten's fused kernels with tensor arithmetic in the computation dtype (fp32 for 16-bit logits):
// _log_softmax copies a 16-bit input to fp32, then holds the input, shifted = x - max and exp(shifted)
// at once (a third V-wide fp32 tensor beside the input where aten's kernel writes only its output),
// and writes the result beside the input and the shifted copy. Backward's
// _nll_loss_and_log_softmax_backward computes (zeros_like(x) + exp(x)) * grad_output from the saved
// log-probabilities: four V-wide tensors at once where aten's two kernels hold three.
void loss_parallel_loss(const LossShape& s, LossModel& out) {
  const Bytes fp32 = s.d.tokens * s.vocab * kFp32Bytes;
  const Bytes log_probs = s.d.tokens * s.vocab * s.loss_element;  // the result, in the loss's input dtype
  const bool cast = s.loss_element != s.d.act;
  // The fp32 input: the explicit upcast (or autocast's), or _log_softmax's own x.to(float32) of
  // 16-bit logits; nothing when the logits are fp32 already.
  const Bytes input = s.d.act == kFp32Bytes ? Bytes{0} : fp32;
  // Beside the input, shifted and exp(shifted) (then the fp32 result in exp's place); a 16-bit
  // result is one more cast at the end.
  const Bytes inside = fp32 * 2 + (log_probs == fp32 ? Bytes{0} : log_probs);
  out.forward_bytes = s.head_input + s.logits + input + inside + s.labels;
  out.grad_bytes = log_probs + (cast ? s.logits : Bytes{0});
  out.backward_bytes = s.head_input + s.labels + max(log_probs * 4, out.grad_bytes);
}

// Fused linear cross-entropy (Liger-Kernel; torchtitan's chunked loss with per-chunk backward):
// the head and the loss run one chunk of rows at a time, next_power_of_2(ceil(B·T / ceil(V / d)))
// rows (Liger's rule, ops/fused_linear_cross_entropy.py) or the framework's chunk count; the
// head's input gradient (B·T·d) and weight gradient are computed during forward and kept.
void fused_linear_loss(const LossShape& s, const ImplementationProfile& p, const ModelSpec& m, Bytes head_grad,
                       LossModel& out) {
  Count rows = ceil_div(s.d.tokens, ceil_div(Count(m.vocab_size), Count(m.hidden_size)));
  if (p.loss_chunks > 0) {
    rows = ceil_div(s.d.tokens, p.loss_chunks);
  } else {
    Count pow2 = 1;
    while (pow2 < rows) pow2 = pow2 * 2;
    rows = min(pow2, s.d.tokens);
  }
  // Liger's kernel writes the chunk's gradient into its logits (one tensor); a chunked loss in
  // PyTorch (torchtitan) upcasts the chunk and keeps its log-probabilities until the chunk's backward.
  const Bytes chunk = rows * s.vocab * s.d.act + (p.loss_chunks > 0 ? rows * s.vocab * s.loss_element * 2 : Bytes{0});
  const Bytes input_grad = s.d.tokens * s.d.hidden_split * s.d.act;
  out.forward_bytes = s.head_input + chunk + s.labels + input_grad + head_grad;
  out.backward_bytes = s.head_input + s.labels + input_grad + head_grad;
  out.grad_bytes = Bytes{0};
  out.head_grad_in_forward = true;
}

// TRL's SFTTrainer loss (loss_type chunked_nll, the default from TRL 1.7; trl/trainer/sft_trainer.py,
// _chunked_cross_entropy_loss and _chunk). The decoder's last hidden state is shifted and its valid
// rows packed in label order (hidden[..., :-1, :].reshape, then hidden[order]): n rows of d, kept
// with the int64 sort order and labels (about 36 bytes a row in all). Each chunk of 256 rows runs
// under torch.utils.checkpoint: logits = h.float() @ w.float().t() (both cast to bf16 again under
// autocast), log_softmax, the loss, argmax, and the entropy -(exp(log_p) · log_p); nothing of it is
// kept, and its backward recomputes it. High points (measured on TRL 1.9's own code,
// tools/frameworks/trl_loss.py: 16 cases within 0.03 %):
//   forward   the chunk's matmul (the .float() copies of h and of a 16-bit w, the autocast casts,
//             the logits) or its entropy (the logits and three fp32 V-wide tensors);
//   backward  the recomputed chunk beside the head weight's gradient so far and the packed rows'
//             gradient (with the matmul's saved operands: w in its matmul dtype, h when w trains);
//             the matmul's own backward (the logits' fp32 gradient, h's and w's gradients); and,
//             the head training over two chunks or more, autograd's out-of-place sum of the chunks'
//             weight gradients (the running sum, the new one and their sum: three V × d tensors),
//             the last of which comes after the packed rows are released.
constexpr std::int64_t kTrlChunkRows = 256;  // trl/trainer/sft_trainer.py _CHUNKED_LM_HEAD_CHUNK_SIZE
constexpr std::int64_t kTrlRowBytes = 36;    // int64 sort order, shifted and packed labels, masks (measured)

void chunked_recompute_loss(const Config& c, const LossShape& s, bool head_trainable, LossModel& out) {
  const Dims& d = s.d;
  // Every position but each sequence's last has a target (labels[..., 1:]); under context
  // parallelism the labels come shifted already (shift_labels).
  const Count n = c.parallel.context > 1 ? d.tokens : d.batch * max(d.seq - 1, Count(1));
  const Count rows = min(Count(kTrlChunkRows), n);
  const Count chunks = ceil_div(n, Count(kTrlChunkRows));
  const Count h = d.hidden, v = s.vocab;
  const Bytes eh = d.stream;  // the last hidden state: the residual stream's dtype
  // The head weight: the recipe's weights, or a frozen base's dtype.
  const Bytes ew = d.lora ? d.stream : recipe_of(c).weights;
  const Bytes em = d.autocast ? d.act : kFp32Bytes;  // the matmul's operands and the logits
  const Bytes kept = n * h * eh + n * Bytes{kTrlRowBytes};
  const Bytes h_copy = eh != kFp32Bytes ? rows * h * kFp32Bytes : Bytes{0};  // h.float()
  const Bytes w_copy = ew != kFp32Bytes ? v * h * kFp32Bytes : Bytes{0};     // w.float()
  const Bytes casts = d.autocast ? (rows * h + v * h) * d.act : Bytes{0};
  const Bytes logits = rows * v * em;
  const Bytes matmul = h_copy + w_copy + casts + logits;
  // Soft-capped logits (Gemma 2): tanh's output is one more chunk-sized fp32 tensor.
  const Bytes entropy = logits + rows * v * kFp32Bytes * (s.softcap ? 4 : 3);
  out.forward_bytes = kept + max(matmul, entropy);
  const Bytes packed_grad = n * h * eh;
  const Bytes head_grad = head_trainable ? v * h * ew : Bytes{0};
  const Bytes w_saved = d.autocast ? v * h * d.act : w_copy;
  const Bytes h_saved = head_trainable ? (d.autocast ? rows * h * d.act : h_copy) : Bytes{0};
  const Bytes recompute = head_grad + packed_grad + max(matmul, w_saved + h_saved + entropy);
  const Bytes matmul_backward = head_grad + packed_grad + w_saved + h_saved + rows * v * kFp32Bytes + rows * h * em +
                                (head_trainable ? v * h * em : Bytes{0});
  const Bytes accumulate = head_trainable && chunks >= Count(2)
                               ? v * h * ew * 3 + packed_grad + rows * h * eh - (chunks == Count(2) ? n * h * eh : Bytes{0})
                               : Bytes{0};
  out.backward_bytes = kept + max(max(recompute, matmul_backward), accumulate);
  out.grad_bytes = Bytes{0};
  out.head_input_bytes = d.tokens * d.hidden_split * eh;  // the gradient handed to the blocks
}

}  // namespace

// The gradient of the head's weight (or of the tied embedding it shares), made in backward.
// element: the gradient's bytes per element (the recipe's gradients unless the kernel makes it in
// the weight's own dtype).
Bytes head_weight_grad_bytes(const Config& c, const ParameterCount& params, Bytes element) {
  const ModelSpec& m = c.model;
  if (m.output_head != OutputHead::kLm || is_peft(c)) return Bytes{0};
  const Finetune& f = c.training.finetune;
  if (trains_some_layers(c) && !f.train_head && !(m.tie_word_embeddings && f.train_embeddings)) return Bytes{0};
  const Count head = m.tie_word_embeddings ? params.component_count(Component::kTokenEmbedding)
                                           : params.component_count(Component::kHead);
  return head * element / c.parallel.tensor;
}

namespace {

// A decoder's classification head (modeling_layers.py GenericForSequenceClassification and
// GenericForTokenClassification; GPT-2's, OPT's, GPT-NeoX's, Falcon's, BLOOM's and GPTBigCode's
// own classes do the same): the score projects every token's final hidden state to num_labels
// outputs, keeping that input when it trains (a full fine-tune; under PEFT, as modules_to_save,
// which the SEQ_CLS and TOKEN_CLS task types set). The sequence classifier gathers each sequence's
// last non-padding token's logits (a new B x L tensor; the gather keeps an int64 arange and the
// argmax's int64 positions) and hands them to MSELoss with one label (a reward model: problem_type
// regression, which keeps that tensor and the labels) or to cross_entropy (its B x L
// log-probabilities and int64 labels); no backward keeps the score's B x T x L logits. The token classifier drops out
// first (a bool mask and the dropped copy, which the score then keeps) and its loss upcasts the
// logits to fp32 (ForTokenClassification: logits.float()) before cross_entropy, except GPT-2's,
// Falcon's, BLOOM's and GPTBigCode's own classes, which hand them to CrossEntropyLoss as they are
// (fp32 under autocast all the same).
LossModel decoder_classifier_loss(const Config& c) {
  const ModelSpec& m = c.model;
  const Dims d = make_dims(c);
  const Finetune& f = c.training.finetune;
  LossModel out;
  const bool trains = trains_some_layers(c) ? f.train_head : !d.lora || (f.modules_to_save & kSaveHead);
  const Count labels = m.num_labels;
  const Count rows = d.tokens * d.hidden_split;
  const Bytes logits = d.tokens * labels * d.act;
  out.head_input_bytes = rows * d.act;
  if (m.output_head == OutputHead::kTokenClassification) {
    // (Only a trained score keeps the dropped copy; the mask is kept for the blocks' gradient.)
    const bool drops = d.dropout || m.token_head_drops();
    const Bytes dropped = drops ? rows * (kMaskBytes + (trains ? d.act : Bytes{0})) : Bytes{0};
    const Bytes input = trains && !drops ? rows * d.act : Bytes{0};
    const std::string& t = m.model_type;
    const bool as_they_are = t == "gpt2" || t == "falcon" || t == "RefinedWeb" || t == "RefinedWebModel" ||
                             t == "bloom" || t == "gpt_bigcode";
    const Bytes element = as_they_are && !d.autocast ? d.act : kFp32Bytes;
    const Bytes log_probs = d.tokens * labels * element;
    const Bytes upcast = element != d.act ? log_probs : Bytes{0};  // the fp32 copy log_softmax reads
    const Bytes token_labels = d.tokens * kInt64Bytes;
    out.forward_bytes = dropped + input + logits + upcast + log_probs + token_labels;
    out.grad_bytes = log_probs + (upcast.is_zero() ? Bytes{0} : logits);
    out.backward_bytes = dropped + input + token_labels + max(log_probs * 3, out.grad_bytes);
    return out;
  }
  const Count sequences = d.batch;
  const Bytes pooled = sequences * labels * d.act;
  const Bytes gather = sequences * kInt64Bytes * 2;
  const bool regression = labels == 1;
  const Bytes targets = regression ? sequences * d.act : sequences * kInt64Bytes;
  const Bytes kept = (trains ? rows * d.act : Bytes{0}) + gather + pooled /* MSE's input, or the log-probabilities */ + targets;
  out.forward_bytes = kept + logits + (regression ? Bytes{0} : pooled);
  out.grad_bytes = logits + pooled;
  out.backward_bytes = kept + out.grad_bytes;
  return out;
}

}  // namespace

LossModel loss_model(const Config& c, const ParameterCount& params) {
  const ModelSpec& m = c.model;
  if (uses_encoder_activation_model(m)) {
    LossModel out = encoder_loss_model(c);
    out.head_grad_bytes = head_weight_grad_bytes(c, params, recipe_of(c).gradients);
    return out;
  }
  if (m.classifies()) {
    LossModel out = decoder_classifier_loss(c);
    // MeZO computes the loss under torch.no_grad: no backward, no gradients of the logits.
    if (forward_only(c.training)) out.backward_bytes = out.grad_bytes = out.head_input_bytes = Bytes{0};
    out.peak_bytes = max(out.forward_bytes, out.backward_bytes);
    return out;
  }
  LossModel out;
  if (m.output_head != OutputHead::kLm) return out;
  const PrecisionRecipe& r = recipe_of(c);
  LossShape s{make_dims(c), Count(0), Bytes{0}, Bytes{0}, Bytes{0}, Bytes{0}};
  const Implementation& impl = s.d.impl;
  // The loss reads fp32 logits when the code upcasts them, or when autocast casts cross_entropy's
  // input to fp32.
  s.loss_element = impl.logits_dtype == LogitsDtype::kFp32 || r.autocast ? kFp32Bytes : s.d.act;
  s.vocab = ceil_div(Count(m.vocab_size), c.parallel.tensor);
  const Finetune& f = c.training.finetune;
  const bool head_trainable =
      trains_some_layers(c) ? f.train_head || (m.tie_word_embeddings && f.train_embeddings)
                            : !s.d.lora || (s.d.targets & kLoraHead) || (f.modules_to_save & kSaveHead);
  s.head_input = head_trainable ? s.d.tokens * s.d.hidden_split * s.d.act : Bytes{0};
  s.labels = s.d.tokens * kInt64Bytes;
  s.logits = s.d.tokens * s.vocab * s.d.act;
  s.softcap = m.logit_softcap;
  out.head_input_bytes = s.d.tokens * s.d.hidden_split * s.d.act;
  out.head_grad_bytes = head_weight_grad_bytes(c, params, r.gradients);
  const ImplementationProfile& profile = implementation_profile(impl.framework);
  switch (impl.loss) {
    case LossKernel::kChunked: chunked_loss(s, profile, out); break;
    case LossKernel::kFusedCe: fused_loss(s, out); break;
    case LossKernel::kCompiledCe: compiled_loss(s, out); break;
    case LossKernel::kLossParallel: loss_parallel_loss(s, out); break;
    case LossKernel::kChunkedRecompute:
      chunked_recompute_loss(c, s, head_trainable, out);
      out.notes.push_back("TRL's chunked loss: no logits kept; head and loss per 256 tokens, again in backward.");
      break;
    case LossKernel::kFusedLinearCe: {
      // The head's gradient is made in forward as torch.zeros_like(weight) (Liger-Kernel
      // ops/fused_linear_cross_entropy.py, fused_linear_cross_entropy_forward): in the dtype of the
      // weight the module sees, which ZeRO-3 / FSDP gathers in its compute dtype (FSDP mixed
      // precision's param_dtype), whatever dtype the sharded gradients are kept in.
      if (c.parallel.zero_stage >= 3 && r.gathered.value() > 0) {
        out.head_grad_bytes = head_weight_grad_bytes(c, params, min(r.gathered, r.gradients));
      }
      fused_linear_loss(s, profile, m, out.head_grad_bytes, out);
      out.notes.push_back("Fused linear cross-entropy: logits exist one chunk at a time; the head's gradients "
                          "are computed during forward.");
      break;
    }
    case LossKernel::kAuto:
    case LossKernel::kEager: eager_loss(s, out); break;
  }
  if (head_quantized(c) && c.training.finetune.base_bits == 4) head_dequantized(c, s, profile, out);
  // LitGPT's and nanoGPT's loops hold the logits through backward and until the next forward
  // replaces them (litgpt/finetune/full.py; nanoGPT train.py).
  if (impl.loop_keeps_logits == Switch::kYes && impl.loss != LossKernel::kFusedLinearCe) out.kept_bytes = s.logits;
  if (forward_only(c.training)) {
    // MeZO computes the loss under torch.no_grad: no gradients of the logits or of the head.
    out.backward_bytes = out.grad_bytes = out.head_grad_bytes = out.kept_bytes = Bytes{0};
    out.head_input_bytes = Bytes{0};
    out.head_grad_in_forward = false;
  }
  out.peak_bytes = max(out.forward_bytes, out.backward_bytes);
  return out;
}

}  // namespace memfit
