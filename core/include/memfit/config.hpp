// The configuration: one schema for the core, the command line, the wasm boundary, presets and
// the shareable link. Field names follow Hugging Face config.json keys where one exists.
//
// Every field's JSON key, range and meaning lives in one table (config.cpp, `config_fields()`),
// which drives reading, writing, validation and the page's form. Sizes are plain integers;
// byte counts are computed by the memory model, never stored here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memfit/json.hpp"

namespace memfit {

enum class MlpKind { kPlain, kGated };               // gated: SwiGLU / GeGLU (gate, up, down)
enum class NormKind { kLayerNorm, kRmsNorm };        // LayerNorm has a bias when norm_bias is set
// rotary / none have no parameters; relative_bias: T5's bucketed bias table added to the scores
// (relative_attention_num_buckets × heads, in the first block of each stack).
enum class PositionKind { kLearned, kRotary, kNone, kRelativeBias };
// MLA: DeepSeek-V2/V3 multi-head latent attention; disentangled: DeBERTa-v2/v3 (content and
// relative-position scores, He et al. 2021, eq. 2–4).
enum class AttentionType { kStandard, kMla, kDisentangled };
// Qwen3 / Gemma3 per head_dim; OLMo-2 over the projection; Llama 4 a weightless L2 norm of each
// head, computed in fp32 (modeling_llama4.py Llama4TextL2Norm).
enum class QkNorm { kNone, kPerHead, kFullWidth, kL2 };
// The dtype of rotary tables each layer builds for itself (model.rotary_per_layer): fp32 (ERNIE 4.5
// upcasts them) or the residual stream's (GLM-4: its rotary embedding returns cos and sin in its
// input's dtype, and each layer repeat-interleaves them).
enum class RotaryTableDtype { kFp32, kStream };
enum class BlockLayout { kSequential, kParallel };   // parallel: attention and MLP read the same input
// The task head. lm: a vocabulary projection (a causal LM, a seq2seq LM, or an encoder's masked-LM
// head); none: the bare model (BertModel, with its pooler); sequence_classification: on an encoder
// a dense layer with tanh over one token then num_labels outputs (BERT's pooler + classifier,
// RoBERTa's and BART's classification head, DeBERTa's ContextPooler + classifier), on a decoder a
// num_labels projection without bias of every token, read at each sequence's last one
// (GenericForSequenceClassification's score: a reward model with one label); token_classification:
// a num_labels projection of every token (on an encoder-decoder: the encoder alone, as
// T5ForTokenClassification).
enum class OutputHead { kLm, kNone, kSequenceClassification, kTokenClassification };
// The MLP's activation (config.json hidden_act / activation_function), for what it saves: gelu
// (erf), gelu_pytorch_tanh and silu keep their input; relu keeps its output; gelu_new is
// transformers' NewGELUActivation written in Python ops (four saved tensors). auto: the MLP kind's
// usual activation (GELU or SiLU: one saved input).
// kClampedSwiglu: gpt-oss experts, (clamp(up) + 1) · clamp(gate) · σ(1.702 · clamp(gate)).
enum class HiddenAct { kAuto, kGelu, kRelu, kGeluNew, kSilu, kGeluPytorchTanh, kClampedSwiglu, kRelu2, kXielu };  // model.hidden_act
// DeBERTa's relative-position score terms: content-to-position, position-to-content, or both.
enum class PosAttType { kC2pP2c, kC2p, kP2c };
// The vision encoder and projector a multimodal model loads beside its language model
// (model.vision_type), by the transformers class that builds them.
enum class VisionTower { kNone, kQwen2Vl, kQwen25Vl, kQwen3Vl, kGemma3, kLlava, kMistral3, kPaliGemma };
// The vision encoder class under a LLaVA wrapper (model.vision_encoder; LlavaModel builds whatever
// vision_config names): CLIP (LLaVA-1.5), SigLIP (LLaVA-Interleave), Pixtral (Pixtral-12B). auto:
// the wrapper's own (LLaVA's CLIP; Gemma 3's SigLIP and Mistral 3's Pixtral are fixed).
enum class VisionEncoder { kAuto, kClip, kSiglip, kPixtral };
// Which of a vision tower's parts a full fine-tune trains (training.finetune.train_vision): none,
// the projector (Qwen's mergers, the multi_modal_projector: LLaMA-Factory's
// freeze_multi_modal_projector false, ms-swift's freeze_aligner false), the encoder without it
// (freeze_vision_tower / freeze_vit false), or both. auto: both under TRL, none elsewhere
// (resolve_train_vision, vision.cpp).
enum class VisionTrain { kAuto, kNone, kProjector, kEncoder, kAll };

enum class Precision {
  kFp32,        // everything fp32
  kFp16Mixed,   // PyTorch AMP: fp32 weights, grads, states; fp16 autocast copies
  kBf16Mixed,   // PyTorch AMP with bf16
  kFp16Master,  // Megatron / DeepSpeed: fp16 weights, fp32 master weights and main grads
  kBf16Master,  // the same with bf16
  kBf16,        // pure bf16: weights, grads and optimizer states all bf16
  kFp8Mixed,    // Transformer Engine FP8: bf16 weights + fp8 copies, fp32 master and grads
  kSeed14p,     // the seeds' convention: 2-byte params, 4-byte grads, 8-byte Adam, no master
  kBf16Fsdp,    // FSDP MixedPrecision(param_dtype=bf16): fp32 sharded weights, grads, states; bf16 compute
  kBf16Autocast,  // bf16 weights, gradients and states, with torch.autocast (transformers ≥ 5 loads a
                  // bf16 checkpoint in bf16; Trainer bf16=True adds autocast)
};

// Optimizers, in the order of their JSON spellings (field_table.cpp). What each one keeps per
// trainable parameter is derived from its library's code in optimizer_states.cpp.
enum class Optimizer {
  kAdamW, kAdamW8bit, kPagedAdamW, kPagedAdamW8bit, kAdafactor, kSgd, kSgdMomentum, kLion,
  kGaloreAdamW,      // GaLore (Zhao et al. 2024): Adam moments in a rank-r projection of each matrix
  kGaloreAdamW8bit,  // the same with bitsandbytes 8-bit moments
  kAdamMini,         // Adam-mini (Zhang et al. 2024): one second moment per block
  kMuon,             // Muon (Jordan 2024): momentum only on hidden matrices, AdamW on the rest
  kLomo,             // LOMO (Lv et al. 2023): fused SGD in backward, no state, no stored gradients
  kAdaLomo,          // AdaLomo (Lv et al. 2023): fused, factored second moment, no stored gradients
  kShampoo,          // distributed Shampoo (Shi et al. 2023): block-wise Kronecker preconditioners
  kSoap,             // SOAP (Vyas et al. 2024): Adam in Shampoo's eigenbasis
  kCame,             // CAME (Luo et al. 2023): Adafactor with a factored confidence
  kSophia,           // Sophia-G (Liu et al. 2023): momentum and a diagonal Hessian estimate
  kScheduleFreeAdamW,  // schedule-free AdamW (Defazio et al. 2024): z and v; y is the parameter
  kLion8bit,         // bitsandbytes 8-bit Lion (block-wise, one state)
  kSgdMomentum8bit,  // bitsandbytes 8-bit SGD with momentum
  kAdamW4bit,        // torchao AdamW4bit (Li et al. 2023): 4-bit block-wise moments
  kMezo,             // MeZO (Malladi et al. 2023): zeroth-order SGD, forward passes only, no gradients or state
  kApollo,           // APOLLO (Zhu et al. 2024): Adam moments in a random rank-r projection, scaling the raw gradient
};

// How the optimizer step runs: PyTorch's multi-tensor (foreach) default keeps one state-sized
// temporary for all parameters at once; fused kernels (torch fused=True, DeepSpeed FusedAdam,
// bitsandbytes) update in place; the per-parameter loop keeps one parameter-sized temporary.
// foreach_legacy is the multi-tensor step of PyTorch 2.0 and earlier, which adds eps out of place
// and so keeps two state-sized temporaries. auto: the framework's own default
// (resolved_optimizer_impl, implementation.hpp).
enum class OptimizerImpl { kAuto, kForeach, kFused, kForLoop, kForeachLegacy };

// The multi-tensor (foreach) step, in either PyTorch's current or its 2.0-and-older form.
constexpr bool multi_tensor(OptimizerImpl i) {
  return i == OptimizerImpl::kForeach || i == OptimizerImpl::kForeachLegacy;
}

// How long the micro-batches are. fixed: every one is seq_len tokens (packed data, or padding to
// the cap). varying: each is padded to its own longest sample (dynamic padding, transformers'
// DataCollatorWithPadding / DataCollatorForSeq2Seq), so lengths range up to seq_len; the caching
// allocator keeps segments cut for every length it has seen and reserves more than for one shape.
enum class SequenceLengths { kFixed, kVarying };

// Activation checkpointing. selective: Megatron's (Korthikanti et al. 2022), the attention core
// is recomputed; selective_op: torchtitan's op-level policy, which keeps only every second matmul
// output and the attention kernel's output; full: each block's input only.
enum class Checkpointing { kNone, kSelective, kFull, kSelectiveOp };
// A fine-tuning method: full, or a parameter-efficient method of Hugging Face PEFT (or LitGPT's
// LLaMA-Adapter v2), in the order of their JSON spellings. What each trains is in peft.cpp.
enum class FinetuneMethod {
  kFull, kLora, kDora, kLoraFa, kAdaLora, kVera, kIa3, kPromptTuning, kPrefixTuning, kPTuning,
  kLlamaAdapter, kLlamaAdapterV2, kOft, kBoft, kLnTuning, kTrainableTokens, kLoha, kLokr,
  kFourierFt, kHra, kMiss, kVbLora, kRandLora, kC3a, kRoad, kWaveFt, kDeLora, kGraLora, kTinyLora,
  kShira, kHira, kMultitaskPromptTuning, kCpt, kCartridge, kAdamss, kBeft, kLily, kPoly, kFrod, kPvera, kGlora,
  kUnilora, kOsf, kPsoft, kPeanut, kSupertuning, kDeft, kXlora, kShadow,
};
// bitsandbytes' 4-bit data types (QLoRA): same storage, different code book.
enum class QuantType { kNf4, kFp4 };
// What bitsandbytes packs the 4-bit codes into (bnb_4bit_quant_storage): the bytes are the same,
// but torch's sharding takes only a floating storage. uint8 (bitsandbytes' default): FSDP1 cannot
// flatten it with a block's 16-bit tensors, and accelerate's FSDP2 leaves such weights out of
// fully_shard, whole on every GPU; bf16 (any floating dtype): sharded and gathered like the rest.
// auto: what a sharded QLoRA recipe sets (bf16, as the FSDP-QLoRA recipes do).
enum class QuantStorage { kAuto, kUint8, kBf16 };
// Who quantised the frozen base: bitsandbytes (QLoRA's NF4 / FP4, LLM.int8(): quantised at load),
// or GPTQ (auto-gptq's QuantLinear over a pre-quantised checkpoint: packed int32 weights with
// per-group fp16 scales and packed zeros).
enum class QuantMethod { kBitsandbytes, kGptq, kChatglm };
// How a GPTQ linear runs in training. dequantize: auto-gptq's CUDA QuantLinear (qlinear_cuda_old.py,
// qlinear_cuda.py) unpacks the weight to fp16 with PyTorch ops for inputs of 128 rows or more and
// calls torch.matmul, which keeps that fp16 weight for backward. fused: kernels that read the packed
// weight (auto-gptq's triton QuantLinearFunction saves only the packed buffers; exllama's kernel
// keeps nothing).
enum class GptqKernel { kDequantize, kFused };
// P-tuning's prompt encoder (PEFT PromptEncoderReparameterizationType).
enum class PromptEncoder { kMlp, kLstm };

// What the run is for: it decides which changes memfit may suggest (no LoRA for pre-training)
// and what the planner searches. auto: peft for a parameter-efficient method, else full_finetune.
enum class Goal { kAuto, kPretrain, kFullFinetune, kPeft };
// torchao's Float8 training (convert_to_float8_training: every nn.Linear a Float8Linear), by
// scaling: none, tensorwise (dynamic, one scale per tensor) or rowwise (one per row); mxfp8 is
// torchao's MX training (torchao.prototype.mx_formats, MXLinear): fp8 elements with one E8M0 scale
// per 32, on Blackwell's block-scaled matmuls.
enum class Float8 { kNone, kTensorwise, kRowwise, kMxfp8 };

// Trained weights kept in low precision between steps (Q-GaLore, Zhang et al. 2024:
// q_galore_torch/utils/quantization.py QGaLoreLinear): the blocks' linear weights as uint8 codes
// with an fp32 scale and zero per group of weight_quant_group_size, dequantized for every matmul and
// re-quantized with stochastic rounding at each update; no 16-bit copy is kept.
enum class WeightQuant { kNone, kInt8 };

// The implementation: the code that runs the model, apart from the model's shape. A framework
// names a profile (implementation.cpp, one row per framework); each knob below can override it,
// and `kAuto` means "as the framework's profile says". docs/frameworks.md cites each behaviour.
enum class Framework {
  kHf,          // Hugging Face transformers (+ Trainer / accelerate)
  kTorchtune,
  kTorchtitan,
  kLitgpt,
  kMegatron,    // Megatron-LM, local (non-Transformer-Engine) layers
  kMegatronTe,  // Megatron-LM with Transformer Engine layers
  kDeepspeed,   // a transformers model under the DeepSpeed engine
  kNanogpt,
  kLlmC,
  kUnsloth,
  kLiger,       // transformers with Liger-Kernel's patches
  kTrl,         // TRL's SFTTrainer over a transformers model (its own loss)
};
// flash: FlashAttention; sdpa: torch's scaled_dot_product_attention (FlashAttention-2 for 16-bit
// inputs, the memory-efficient kernel for fp32); eager: the matmul-softmax-matmul code.
enum class AttentionImpl { kAuto, kFlash, kEager, kSdpa };
// Eager attention's softmax: upcast to fp32 (transformers' Llama-era classes) or in the compute
// dtype (GPT-2-era classes, nanoGPT's manual path, Megatron's fused kernel).
enum class SoftmaxDtype { kAuto, kFp32, kCompute };
// The logits the loss reads: upcast to fp32 (transformers' ForCausalLMLoss) or in the compute dtype.
enum class LogitsDtype { kAuto, kFp32, kCompute };
// How eager attention learns causality: an additive T×T mask passed to every layer (transformers'
// Llama-era classes), an implicit one (a buffer or is_causal: nothing per layer), or a boolean
// T×T mask that masked_fill saves in every layer (nanoGPT's manual path). alibi: Baichuan-13B's
// remote code, which materialises the ALiBi slopes and the padding mask as one B×H×T×T bias in
// the compute dtype every step, passed to every layer's attention, beside an H×T×T cache it keeps
// on the model between steps.
enum class AttentionMask { kAuto, kAdditive, kImplicit, kBoolean, kAlibi };
// The loss: eager cross-entropy over all logits; chunked (torchtune / LitGPT: per-chunk
// cross-entropy, every chunk's log-probabilities kept); fused_ce (a fused kernel keeps the logits
// and a log-sum-exp per row and writes the gradient in place: unsloth, llm.c, compiled CE);
// fused_linear_ce (the head and the loss per chunk, gradients computed in forward: Liger,
// torchtitan's chunked loss); compiled_ce (the eager cross-entropy under torch.compile, as
// torchtitan compiles its loss: the upcast and log-softmax fuse, the 16-bit logits and two fp32
// values per row are kept, and backward writes a new 16-bit gradient beside the saved logits);
// loss_parallel (PyTorch's DTensor cross-entropy on vocab-sharded logits, torchtitan under tensor
// parallelism: an fp32 log-softmax written as Python tensor arithmetic, and a backward that builds
// the gradient from three V-wide temporaries beside the saved log-probabilities); chunked_recompute
// (TRL's SFTTrainer, loss_type chunked_nll: the head and the loss 256 valid tokens at a time, each
// chunk under activation checkpointing, recomputed in backward; no logits are kept).
enum class LossKernel { kAuto, kEager, kChunked, kFusedCe, kFusedLinearCe, kCompiledCe, kLossParallel, kChunkedRecompute };
// What an RMSNorm saves: eager (transformers: fp32 x, rstd, the normalised x in the input dtype),
// eager_fp32 (LitGPT: fp32 x, fp32 normalised x, rstd), fused (Triton / TE kernels: x and rstd),
// fused_fp32 (torch's fused rms_norm on an fp32 copy: fp32 x and rstd), python_layernorm (a
// LayerNorm written as Python arithmetic in fp32, transformers' CohereLayerNorm: x - mean twice, the
// rstd and the fp32 normalised x; an RMSNorm model reads it as eager_fp32), compute (a LayerNorm
// whose input, weight and bias are cast to the autocast dtype and normalised with autocast off,
// transformers' NemotronLayerNorm1P: the 16-bit x, mean and rstd, and the weight's cast; an RMSNorm
// model reads it as fused).
enum class NormKernel { kAuto, kEager, kEagerFp32, kFused, kFusedFp32, kPythonLayerNorm, kCompute };
// How a mixture-of-experts block holds and runs its experts: loop (an nn.Linear per expert
// projection, one expert at a time on the tokens routed to it: transformers 4's Mixtral block,
// LitGPT, Megatron's SequentialMLP) or grouped (each projection of all experts one stacked 3-D
// parameter, the routed tokens sorted by expert through one grouped GEMM each way: transformers 5's
// default experts_implementation, integrations/moe.py grouped_mm_experts_forward, which runs in the
// experts' weight dtype: fp32 under autocast over fp32 weights; torchtitan's GroupedExperts). The
// stacked parameters are why PEFT adapts them with one adapter per projection and bitsandbytes
// leaves them unquantised (peft.cpp, finetune.cpp).
// dense: every expert on every token, the router's sigmoid scores weighting each expert's copy
// of the input (transformers' Llama 4: modeling_llama4.py Llama4TextMoe repeats the tokens once
// per expert and runs the experts as two batched matmuls).
enum class MoeDispatch { kAuto, kLoop, kGrouped, kDense };
// What runs a Gated DeltaNet layer's delta rule and convolution: flash-linear-attention's and
// causal-conv1d's CUDA kernels, or transformers' torch fallback when they are not installed.
enum class LinearAttentionKernel { kAuto, kFla, kTorch };
// Keys and values a fused attention kernel saves: at the key/value heads (GQA passed through) or
// repeated to every query head first.
enum class KvSaved { kAuto, kKvHeads, kQueryHeads };
// q, k, v (and gate, up) as separate matmuls or one fused matmul each (qkv_fused: q, k, v fused,
// gate and up separate): under autocast every separate matmul saves its own 16-bit cast of an fp32
// input.
enum class Projections { kAuto, kSeparate, kFused, kQkvFused, kGateUpFused };
// An activation function written as Python arithmetic (transformers' gelu_new: four tensors
// saved) or as one kernel (one tensor; Liger's SwiGLU keeps two of a gated MLP's three).
// The MLP activation: Python arithmetic, one kernel, or one kernel whose backward writes the
// gradients over the inputs it saved (Liger's and unsloth's Triton SwiGLU / GeGLU).
enum class ActivationKernel { kAuto, kEager, kFused, kFusedInplace };
// A LoRA base's dtype: 16-bit, fp32, or that of the recipe's weights (LitGPT materialises the
// model in the precision's parameter dtype: fp32 under bf16-mixed).
enum class LoraBaseDtype { kAuto, kHalf, kFp32, kWeights };
// How the weights reach the GPU: directly in their dtype (meta init, shard by shard), as fp32
// first then cast, or a checkpoint with its optimizer states loaded onto the GPU (nanoGPT resume).
enum class LoadPath { kAuto, kDirect, kFp32ThenCast, kCheckpointOnGpu };
// LoRA adapters' dtype: fp32 (PEFT's autocast_adapter_dtype default: adapter weights, gradients and
// states in fp32, and each adapter casts its input to fp32 first) or the recipe's weights dtype.
enum class LoraAdapterDtype { kAuto, kFp32, kWeights };
enum class Switch { kAuto, kYes, kNo };
// How activation checkpointing recomputes a block: reentrant (torch.utils.checkpoint with
// use_reentrant=True: the block runs under no_grad, and backward recomputes it on detached leaf
// copies of its inputs; transformers' gradient_checkpointing_enable default) or non-reentrant
// (saved-tensor hooks: torch's checkpoint_wrapper default, torchtune, torchtitan, LitGPT).
enum class CheckpointImpl { kAuto, kReentrant, kNonReentrant };

struct Implementation {
  Framework framework = Framework::kHf;              // training.framework
  AttentionImpl attention = AttentionImpl::kAuto;    // training.attention
  SoftmaxDtype softmax_dtype = SoftmaxDtype::kAuto;
  LogitsDtype logits_dtype = LogitsDtype::kAuto;
  AttentionMask attention_mask = AttentionMask::kAuto;
  LossKernel loss = LossKernel::kAuto;
  NormKernel norm_kernel = NormKernel::kAuto;
  KvSaved kv_saved = KvSaved::kAuto;
  Projections projections = Projections::kAuto;
  ActivationKernel activation_kernel = ActivationKernel::kAuto;
  Switch loop_keeps_logits = Switch::kAuto;  // the loop holds the logits through backward and the next forward
  LoraBaseDtype lora_base_dtype = LoraBaseDtype::kAuto;
  LoraAdapterDtype lora_adapter_dtype = LoraAdapterDtype::kAuto;
  LoadPath load = LoadPath::kAuto;
  // torch.compile over the model: AOTAutograd's min-cut partitioner saves what backward cannot
  // cheaply recompute, so a norm keeps its input and rstd and a gated activation its two inputs
  // (norm_kernel and activation_kernel left at auto resolve to fused).
  Switch compile = Switch::kAuto;
  // use_cache left on in training: every layer returns its keys and values with the model's
  // outputs (transformers turns it off only under its own gradient checkpointing).
  Switch use_cache = Switch::kAuto;
  // The eager loss shifts the logits with a contiguous copy while the 16-bit logits are still held
  // (shift_logits = logits[..., :-1, :].contiguous(): loss_utils.py's ForCausalLMLoss in transformers
  // 4.46-4.48, whose caller keeps the 16-bit logits for its outputs; Qwen-1's and GPTBigCode's own
  // losses, which copy the 16-bit logits). transformers 4.49 shifts the labels instead
  // (nn.functional.pad): no copy. Before 4.46 each model's forward rebinds logits = logits.float(),
  // freeing the 16-bit logits as the copy is made: the same peak as no copy.
  Switch loss_shift_copy = Switch::kAuto;
  MoeDispatch moe_dispatch = MoeDispatch::kAuto;
  LinearAttentionKernel linear_attention_kernel = LinearAttentionKernel::kAuto;
  CheckpointImpl checkpoint_impl = CheckpointImpl::kAuto;
  bool chunked_loss = false;  // before training.loss: true means loss fused_linear_ce (old links)
};

// LoRA target modules, as a bit set (names as PEFT users write them).
// `qkv` is one fused q/k/v projection (GPT-2's c_attn, GPT-NeoX / Falcon query_key_value, Phi-3
// qkv_proj): one adapter of d → (q + 2 kv) width where PEFT sees a single module.
enum LoraTarget : unsigned {
  kLoraQ = 1u << 0, kLoraK = 1u << 1, kLoraV = 1u << 2, kLoraO = 1u << 3,
  kLoraGate = 1u << 4, kLoraUp = 1u << 5, kLoraDown = 1u << 6, kLoraHead = 1u << 7,
  kLoraQkv = 1u << 8,
  // The router (d → experts): an nn.Linear in transformers 4, a module holding a weight in
  // transformers 5, which PEFT adapts through the parameter (all-linear reaches it either way).
  kLoraRouter = 1u << 9,
  // Every projection of a Gated DeltaNet layer (Qwen3.5's in_proj_qkv, in_proj_z, in_proj_b,
  // in_proj_a and out_proj), which PEFT's all-linear reaches and q/k/v/o do not.
  kLoraLinearAttn = 1u << 10,
};

struct ModelSpec {
  std::string preset;      // informational once resolved: which preset the fields came from
  std::string model_type;  // Hugging Face family, when known
  // The multimodal wrapper's model_type whose language model this is (qwen3_vl, mistral3; the
  // importer sets it), empty for a text model: what Liger-Kernel keys its patches on.
  std::string multimodal_type;
  std::int64_t vocab_size = 32000;
  std::int64_t hidden_size = 4096;
  std::int64_t num_hidden_layers = 32;
  std::int64_t num_attention_heads = 32;
  std::int64_t num_key_value_heads = 0;  // 0: same as num_attention_heads (multi-head attention)
  std::int64_t head_dim = 0;             // 0: hidden_size / num_attention_heads
  std::int64_t intermediate_size = 11008;
  MlpKind mlp = MlpKind::kGated;
  HiddenAct hidden_act = HiddenAct::kAuto;
  NormKind norm = NormKind::kRmsNorm;
  bool norm_bias = true;   // LayerNorm bias, as nn.LayerNorm has by default (ignored for RMSNorm)
  // The norms have a learned weight. OLMo-1's LayerNorm has neither weight nor bias
  // (modeling_olmo.py OlmoLayerNorm: F.layer_norm(x.float(), shape, None, None), cast back).
  bool norm_weight = true;
  // q, k and v clamped in place to ±clip_qkv (OLMo-7B-0424, modeling_olmo.py): what each clamp keeps.
  bool clip_qkv = false;
  PositionKind position_embedding = PositionKind::kRotary;
  std::int64_t max_position_embeddings = 4096;
  std::int64_t position_embedding_offset = 0;  // OPT stores 2 extra position rows
  bool tie_word_embeddings = false;
  OutputHead output_head = OutputHead::kLm;
  bool lm_head_bias = false;
  bool attention_bias = false;       // bias on q, k, v and o
  bool qkv_bias = false;             // bias on q, k, v only (Qwen2)
  bool mlp_bias = false;
  BlockLayout block = BlockLayout::kSequential;
  std::int64_t norms_per_block = 2;  // hidden-size norms in each block (Falcon-7B 1, Gemma-2 4)
  bool final_norm = true;
  QkNorm qk_norm = QkNorm::kNone;
  // The q and k norms read the rotated heads (Hunyuan: modeling_hunyuan_v1_dense.py normalises
  // after apply_rotary_pos_emb), whose element is the promotion of the projection's and of the
  // rotary tables' (the residual stream's: fp32 under autocast), not the projection's own.
  bool qk_norm_after_rotary = false;
  // Rotary positions whose cos and sin every layer rebuilds in fp32 (ERNIE 4.5's interleaved
  // rotary: modeling_ernie4_5.py apply_rotary_pos_emb repeat-interleaves the shared tables and
  // multiplies in fp32), so each layer's products keep their own pair instead of sharing one.
  bool rotary_per_layer = false;
  RotaryTableDtype rotary_table_dtype = RotaryTableDtype::kFp32;
  // The rotated part of each head where only part is (GLM-4: half of it, partial_rotary_factor);
  // 0: the whole head. Read for the per-layer tables.
  std::int64_t rotary_dim = 0;
  // The layers whose attention normalises q and k (qk_norm); 0 = every layer. Llama 4 normalises
  // only in its rotary layers (three of four: no_rope_layers).
  std::int64_t qk_norm_layers = 0;
  // Dense and MoE layers alternate (Llama 4 Maverick: interleave_moe_layer_step 2), so a pipeline
  // stage holds its share of each; otherwise the first_k_dense_replace dense layers come first.
  bool moe_layers_interleaved = false;
  // Hybrid linear attention (Qwen3.5: Gated DeltaNet, Yang et al. 2024, "Gated Delta Networks"):
  // this many blocks mix tokens with a gated delta rule instead of attention, spread evenly among
  // the full-attention blocks (Qwen3.5: three of every four, full_attention_interval 4). Each holds
  // in_proj_qkv (d -> 2·Hk·K + Hv·V), in_proj_z (d -> Hv·V), in_proj_b and in_proj_a (d -> Hv), a
  // depthwise causal conv1d over the q/k/v channels, dt_bias and A_log (Hv each), a gated RMSNorm
  // over each value head and out_proj (Hv·V -> d) (transformers' Qwen3_5GatedDeltaNet).
  std::int64_t linear_attention_layers = 0;
  std::int64_t linear_num_key_heads = 16;    // Hk
  std::int64_t linear_num_value_heads = 32;  // Hv
  std::int64_t linear_key_head_dim = 128;    // K
  std::int64_t linear_value_head_dim = 128;  // V
  std::int64_t linear_conv_kernel_dim = 4;
  // Qwen3-Next projects q, k, v and z with one linear (in_proj_qkvz) and b and a with another
  // (in_proj_ba); Qwen3.5 with four.
  bool linear_attention_fused = false;
  // The attention's output is multiplied by sigmoid of a gate that q_proj projects beside the
  // queries (Qwen3.5's attn_output_gate: q_proj twice as wide).
  bool attention_output_gate = false;
  // Each sublayer normalises its input (pre-norm); OLMo-2 instead normalises each sublayer's output
  // before the residual add and has no input norm (modeling_olmo2.py: post_attention_layernorm and
  // post_feedforward_layernorm only). It decides which norms the first LoRA block saves.
  bool input_norm = true;
  // Dropout on the embeddings and on both residual branches of every block (GPT-2, OPT, BERT:
  // resid_pdrop / hidden_dropout_prob); Llama-era models drop only attention probabilities.
  bool residual_dropout = false;
  // ... and on the attention branch among them: DistilBERT's block adds the attention output to
  // its input without dropping out (modeling_distilbert.py TransformerBlock), only the FFN's.
  bool attention_output_dropout = true;
  // A decoder's token classifier drops out the hidden states it scores, in training whatever
  // training.dropout says (GenericForTokenClassification: classifier_dropout, else hidden_dropout,
  // else 0.1): a bool mask and the dropped copy, which the score keeps. auto: the class's default
  // for model_type (0.1, but 0 where its config's hidden_dropout is: Falcon, BLOOM, StableLM).
  Switch head_dropout = Switch::kAuto;
  // Gemma 2's soft-capping: tanh(x / cap) * cap on the attention scores (eager attention keeps the
  // tanh output, one scores-sized tensor) and on the logits (one logits-sized tensor kept).
  bool attention_softcap = false;
  bool logit_softcap = false;
  // gpt-oss: a learned logit per head that joins every softmax row and is dropped after (one
  // parameter per head and layer).
  bool attention_sinks = false;
  // Encoders (BERT).
  std::int64_t type_vocab_size = 0;  // token-type embedding rows
  bool embedding_norm = false;       // a norm right after the embeddings
  bool pooler = false;               // BERT pooler: dense hidden→hidden with bias (output_head none)
  // Post-norm blocks (BERT, RoBERTa, DeBERTa, BART: normalize_before false) add the residual and
  // then normalise; pre-norm blocks (GPT-2, Llama, T5, mBART) normalise each sublayer's input.
  bool normalize_before = true;
  // Task heads.
  std::int64_t num_labels = 2;       // sequence / token classification outputs (transformers' default)
  // An encoder's masked-LM head: dense hidden→hidden, activation and LayerNorm before the
  // vocabulary projection (BertLMPredictionHead, RobertaLMHead, DeBERTa's LMPredictionHead).
  bool lm_head_transform = false;
  // Encoder-decoder models (T5, BART). num_hidden_layers, num_attention_heads, intermediate_size
  // describe the encoder; the decoder's are below (0: as the encoder's). Each decoder block adds a
  // cross-attention over the encoder output, with its own norm.
  bool is_encoder_decoder = false;
  std::int64_t num_decoder_layers = 0;
  std::int64_t decoder_attention_heads = 0;
  std::int64_t decoder_ffn_dim = 0;
  std::int64_t relative_attention_num_buckets = 32;  // T5's bias table rows (position_embedding relative_bias)
  // DeBERTa-v2/v3 disentangled attention (attention_type disentangled).
  std::int64_t position_buckets = 0;         // log-bucketed relative positions; 0: max_relative_positions
  std::int64_t max_relative_positions = -1;  // < 1: max_position_embeddings
  PosAttType pos_att_type = PosAttType::kC2pP2c;
  bool share_att_key = false;                // position projections reuse the content q/k projections
  bool norm_rel_ebd = false;                 // a LayerNorm on the relative embeddings (norm_rel_ebd "layer_norm")
  // Mixture of experts. num_experts == 0: every layer is dense.
  std::int64_t num_experts = 0;
  std::int64_t num_experts_per_tok = 0;
  std::int64_t num_shared_experts = 0;
  std::int64_t moe_intermediate_size = 0;
  std::int64_t shared_expert_intermediate_size = 0;  // 0: num_shared_experts · moe_intermediate_size
  bool shared_expert_gate = false;                   // Qwen2-MoE: sigmoid gate hidden→1
  bool router_bias = false;                          // DeepSeek-V3 e_score_correction_bias (experts)
  std::int64_t first_k_dense_replace = 0;            // leading dense layers (DeepSeek)
  // How many times a MoE block multiplies its input by uniform noise in training (Mixtral's and
  // MiniMax-M2's router_jitter_noise: once; Phi-3.5-MoE's input_jitter_noise: twice), each multiply
  // keeping its noise for backward.
  std::int64_t moe_input_jitter = 0;
  // Multi-head latent attention (attention_type = mla).
  AttentionType attention_type = AttentionType::kStandard;
  std::int64_t q_lora_rank = 0;  // 0: a direct q projection
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  // A multimodal model's vision encoder and projector (the importer reads them from vision_config,
  // a missing key as its config class fills it; 0 = the released checkpoints' size). memfit estimates
  // text-only steps: the tower is loaded and frozen, its weights held as the base's are (sharded,
  // quantised by bitsandbytes, cast by prepare_model_for_kbit_training), and never run.
  VisionTower vision_type = VisionTower::kNone;
  std::int64_t vision_depth = 0;
  std::int64_t vision_hidden_size = 0;        // the encoder's width (Qwen2-VL: embed_dim)
  std::int64_t vision_intermediate_size = 0;  // its MLP's (Qwen2-VL: embed_dim · mlp_ratio)
  std::int64_t vision_out_hidden_size = 0;    // the projector's output; 0 = the language model's width
  std::int64_t vision_patch_size = 0;
  std::int64_t vision_temporal_patch_size = 0;
  std::int64_t vision_in_channels = 0;
  std::int64_t vision_spatial_merge_size = 0;
  std::int64_t vision_num_position_embeddings = 0;  // learned positions (Qwen3-VL; SigLIP, CLIP: per patch)
  std::int64_t vision_deepstack_layers = 3;         // Qwen3-VL's deepstack mergers (its class's default)
  std::int64_t vision_num_heads = 0;                // the encoder's attention heads; 0 = 16, the released count
  // SigLIP's attention-pooling head (vision_use_head: SiglipVisionConfig's default is on, Gemma 3's
  // checkpoints turn it off; auto = off) and the projector's biases (multimodal_projector_bias; auto
  // = the class's: LLaVA on, Mistral 3 off).
  Switch vision_use_head = Switch::kAuto;
  Switch vision_projector_bias = Switch::kAuto;
  VisionEncoder vision_encoder = VisionEncoder::kAuto;  // the encoder under LLaVA
  // The encoder layer whose output LLaVA and Mistral 3 project (vision_feature_layer, transformers'
  // index into the hidden states: -1 the last block's output, -2 the one before, k > 0 the k-th
  // block's); 0 = the class's default (LLaVA -2, Mistral 3 -1). Gemma 3 projects the last.
  std::int64_t vision_feature_layer = 0;
  std::int64_t vision_tokens_per_image = 0;  // Gemma 3's mm_tokens_per_image; 0 = 256
  // When non-zero, the memory model uses this count instead of the counted architecture: the
  // seeds' scaling table uses nominal sizes ("LLaMA-7B": 7e9) with the 14P rule.
  std::int64_t nominal_parameter_count = 0;

  bool hybrid_attention() const { return linear_attention_layers > 0; }
  // The encoder-decoders and the BERT-style encoders (post-norm; DeBERTa's disentangled attention),
  // whose step activations_encdec.cpp models and whose classification heads are their classes'
  // dense-then-output heads; the rest are decoders, whose heads are a score projection.
  // Whether a decoder's token classifier drops out before its score (head_dropout; auto: its
  // class's default, GenericForTokenClassification's 0.1 unless the config class's hidden_dropout
  // is 0, as FalconConfig's, BloomConfig's and StableLmConfig's are).
  bool token_head_drops() const {
    if (head_dropout != Switch::kAuto) return head_dropout == Switch::kYes;
    const std::string& t = model_type;
    return !(t == "falcon" || t == "RefinedWeb" || t == "RefinedWebModel" || t == "bloom" || t == "stablelm");
  }
  bool classifies() const {
    return output_head == OutputHead::kSequenceClassification || output_head == OutputHead::kTokenClassification;
  }
  bool encoder_family() const {
    return is_encoder_decoder || attention_type == AttentionType::kDisentangled || !normalize_before;
  }
  std::int64_t full_attention_layers() const { return num_hidden_layers - linear_attention_layers; }
  std::int64_t linear_key_width() const { return linear_num_key_heads * linear_key_head_dim; }      // Hk·K
  std::int64_t linear_value_width() const { return linear_num_value_heads * linear_value_head_dim; }  // Hv·V
  std::int64_t kv_heads() const { return num_key_value_heads > 0 ? num_key_value_heads : num_attention_heads; }
  std::int64_t decoder_layers() const { return num_decoder_layers > 0 ? num_decoder_layers : num_hidden_layers; }
  std::int64_t decoder_heads() const {
    return decoder_attention_heads > 0 ? decoder_attention_heads : num_attention_heads;
  }
  std::int64_t decoder_ff() const { return decoder_ffn_dim > 0 ? decoder_ffn_dim : intermediate_size; }
  // Rows of DeBERTa's relative embedding table: 2 × (position_buckets, or the relative span).
  std::int64_t relative_embedding_rows() const {
    const std::int64_t span = position_buckets > 0            ? position_buckets
                              : max_relative_positions > 0 ? max_relative_positions
                                                           : max_position_embeddings;
    return 2 * span;
  }
  std::int64_t head_size() const {
    return head_dim > 0 ? head_dim : (num_attention_heads > 0 ? hidden_size / num_attention_heads : 0);
  }
};

// The fine-tuning method and its sizes (PEFT's config names where PEFT has one). Every size has a
// default that reproduces the method's PEFT default or, where PEFT has none, its paper's.
// training.finetune.modules_to_save, in the order of its JSON names ("embed", "head").
inline constexpr unsigned kSaveEmbedding = 1u << 0, kSaveHead = 1u << 1;

struct Finetune {
  FinetuneMethod method = FinetuneMethod::kFull;
  std::int64_t lora_rank = 16;  // r of every rank-based method (AdaLoRA: init_r)
  unsigned lora_targets = kLoraQ | kLoraK | kLoraV | kLoraO;  // the modules a method adapts
  double lora_dropout = 0.0;    // PEFT's lora_dropout on the adapters' input
  bool use_rslora = false;      // rsLoRA: scaling α/√r instead of α/r (no memory effect)
  // The model is on the GPU when get_peft_model wraps it (from_pretrained with a device_map, any
  // quantised base, PEFT's own benchmark) rather than wrapped on the CPU and moved after (Trainer's
  // move). It decides where the tensors a method keeps outside its adapter-keyed dicts live: BOFT's
  // permutation buffer stays on the CPU where it was made (BaseTunerLayer's move takes only the
  // adapter's own entries), FRoD keeps its projections there by design, and PSOFT's A, a view of
  // the full SVD basis computed on the GPU, keeps that whole basis there (moved later, the view
  // alone is copied).
  bool loaded_before_wrapping = true;
  // IA3's feedforward_modules among its targets: these scale their input (a vector of in), the
  // others their output (PEFT's default for Llama-style models: down_proj).
  unsigned feedforward_modules = kLoraDown;
  // LoKr's decompose_factor: each side factored as (factor, dim / factor) where it divides, else
  // the divisor pair nearest the square root not above it; -1 = nearest the square root.
  std::int64_t decompose_factor = -1;
  // Stacked experts named through PEFT's target_parameters (gate_up_proj and down_proj each at
  // rank r: the only way to reach gpt-oss's) rather than the checkpoint's module names, which PEFT
  // maps onto them with gate and up fused at rank 2r (transformers_weight_conversion.py).
  bool target_parameters = false;
  std::int64_t base_bits = 16;  // 16: frozen 16-bit base; 8: int8 base; 4: QLoRA 4-bit
  QuantType quant_type = QuantType::kNf4;   // bnb_4bit_quant_type
  QuantStorage quant_storage = QuantStorage::kAuto;  // bnb_4bit_quant_storage
  QuantMethod quant_method = QuantMethod::kBitsandbytes;
  GptqKernel gptq_kernel = GptqKernel::kDequantize;
  std::int64_t gptq_group_size = 128;       // GPTQ group_size (input rows per scale and zero); 0: one group
  bool double_quant = true;                 // bnb_4bit_use_double_quant
  // bitsandbytes before 0.43.2 (July 2024): MatMul4Bit keeps each 4-bit linear's input A as a ctx
  // attribute (`ctx.tensors = (A, B)`), which backward does not release: it lives as long as the
  // graph. From 0.43.2 on it keeps `(None, B)` (bitsandbytes PR #1270).
  bool bnb_keeps_input = false;
  // torchao's NF4 before 0.2 (May 2024; torchtune's QLoRA of that time): each weight is quantised in
  // one piece, comparing every element with the 16 NF4 values at once (NF4Tensor.
  // quantize_tensor_nearest: (value - nf4).abs() on a numel × 16 tensor, twice for a moment); from
  // torchao PR #196 in chunks of 2^20 elements.
  bool nf4_whole_tensor = false;
  // LitGPT's finetune scripts (lora.py, adapter.py, adapter_v2.py) since PR #1770 (2024-10-04), under
  // a bitsandbytes --quantize: the token embedding is swapped for bnb's StableEmbedding after the
  // adapters were marked trainable, so the old 16-bit embedding stays referenced for the whole run
  // and the new one, requiring grad but in no optimizer, accumulates a 16-bit gradient that no step
  // clears. auto: yes under framework litgpt with a bitsandbytes 4- or 8-bit base.
  Switch stable_embedding = Switch::kAuto;
  std::int64_t quant_block_size = 64;       // bitsandbytes' 4-bit blocksize
  bool prepare_kbit = false;  // PEFT prepare_model_for_kbit_training: non-quantised base parameters in fp32
  std::int64_t num_virtual_tokens = 20;     // prompt / prefix / p-tuning
  std::int64_t encoder_hidden_size = 0;     // p-tuning / prefix projection; 0 = the token dimension
  bool prefix_projection = false;           // prefix tuning through a two-layer MLP
  PromptEncoder encoder_reparameterization_type = PromptEncoder::kMlp;  // p-tuning
  std::int64_t adapter_len = 10;            // LLaMA-Adapter prompt length (LitGPT adapter_prompt_length)
  std::int64_t adapter_start_layer = 2;     // LLaMA-Adapter: layers from here up are adapted
  std::int64_t block_size = 0;              // OFT / BOFT / C3A block size; 0 = the method's default
  std::int64_t boft_n_butterfly_factor = 1;  // BOFT butterfly factors
  std::int64_t n_frequency = 0;             // FourierFT / WaveFT coefficients; 0 = the method's default
  std::int64_t num_trainable_tokens = 10;   // trainable_tokens: rows of the embedding trained
  std::int64_t num_adapters = 2;            // X-LoRA: the LoRA adapters (experts) it mixes
  // PEFT's modules_to_save: a trainable copy of the token embedding and / or the output head beside
  // the frozen original (kSaveEmbedding | kSaveHead), with any method.
  unsigned modules_to_save = 0;
  // Full fine-tuning of some blocks only (method full): the number trained (-1: all), the lowest
  // of them (0-based; -1: they are the top trainable_layers blocks), and whether the token
  // embedding and the output head train too. LLaMA-Factory's freeze tuning
  // (freeze_trainable_layers, freeze_extra_modules), LLaMA-Pro's added blocks, LISA's sampled
  // layers with embeddings and head.
  std::int64_t trainable_layers = -1;
  std::int64_t lowest_trainable_layer = -1;
  bool train_embeddings = false;
  bool train_head = false;
  VisionTrain train_vision = VisionTrain::kAuto;  // a vision tower's trained parts (full fine-tuning)
};

struct Training {
  std::int64_t micro_batch_size = 1;
  std::int64_t seq_len = 2048;     // tokens per sequence; an encoder-decoder's source length
  std::int64_t target_len = 0;     // an encoder-decoder's target (decoder) length; 0: seq_len
  // Images through a vision tower (model.vision_type) per sequence, and the patches of each before
  // the merger (Qwen-VL: (height / 14) x (width / 14)). 0 images: text-only steps.
  std::int64_t images_per_sample = 0;
  std::int64_t image_patches = 0;
  std::int64_t grad_accum_steps = 1;
  Precision precision = Precision::kBf16Mixed;
  Optimizer optimizer = Optimizer::kAdamW;
  OptimizerImpl optimizer_impl = OptimizerImpl::kAuto;
  SequenceLengths sequence_lengths = SequenceLengths::kFixed;
  std::int64_t galore_rank = 128;              // GaLore projection rank (galore-torch README default)
  std::int64_t galore_update_interval = 200;   // GaLore update_proj_gap (steps between SVDs)
  std::int64_t max_preconditioner_dim = 0;     // Shampoo / SOAP block size; 0 = the library's default
  Checkpointing checkpointing = Checkpointing::kNone;
  // Under full checkpointing, how many of the model's blocks are recomputed (-1: all): Megatron's
  // --recompute-method block checkpoints the first N blocks of each pipeline stage, torchtitan's
  // layer-level selective checkpointing every k-th block; the others keep all their activations.
  std::int64_t checkpointed_layers = -1;
  Implementation implementation;
  double dropout = 0.0;
  bool optimizer_in_backward = false;
  // zero_grad(set_to_none=True), PyTorch's default since 2.0 (pytorch/pytorch#92731): gradients are
  // freed after each step. False (the default before 2.0, and nn.Module.zero_grad's, which the HF
  // Trainer of that time called) zeroes them in place: they stay allocated through the next forward.
  bool zero_grad_set_to_none = true;
  bool activation_offload = false;
  Goal goal = Goal::kAuto;
  Float8 float8 = Float8::kNone;
  WeightQuant weight_quant = WeightQuant::kNone;
  std::int64_t weight_quant_group_size = 256;  // Q-GaLore --weight_group_size
  // Q-GaLore --proj_quant: GaLore's projection matrices as uint8 codes (--proj_bits 4 values, one
  // per byte, unpacked) with a scale and zero in the gradient's dtype per 256 elements.
  bool galore_proj_quant = false;
  Finetune finetune;

  std::int64_t decoder_len() const { return target_len > 0 ? target_len : seq_len; }
  // Of `layers` blocks, how many full checkpointing recomputes (0 under the other modes).
  std::int64_t recomputed_layers(std::int64_t layers) const {
    if (checkpointing != Checkpointing::kFull) return 0;
    return checkpointed_layers < 0 ? layers : (checkpointed_layers < layers ? checkpointed_layers : layers);
  }
  // Full checkpointing of every block (checkpointed_layers -1 or all of them).
  bool every_layer_recomputed(std::int64_t layers) const {
    return checkpointing == Checkpointing::kFull && recomputed_layers(layers) == layers;
  }
};

// How pipeline stages take micro-batches. one_f_one_b: 1F1B (Megatron, torchtitan, DeepSpeed),
// up to `pipeline` micro-batches in flight on the first stage. sequential: one micro-batch passes
// every stage before the next starts (transformers / accelerate device_map="auto" in one process:
// naive model parallelism), so one micro-batch is in flight and one GPU works at a time.
enum class PipelineSchedule { kOneFOneB, kSequential };
// When sharded gradients are reduced under gradient accumulation. every_micro_batch: each
// micro-batch's backward reduce-scatters (DeepSpeed ZeRO-2/3, torchtune, torchtitan without a
// pipeline). last_micro_batch: the others accumulate the full, unsharded gradients and only the
// last reduces them (FSDP1's no_sync() under accelerate / the HF Trainer and Lightning Fabric;
// FSDP2's set_requires_gradient_sync(False) in torch.distributed.pipelining's schedules).
// auto: by training.framework and the pipeline.
enum class GradientSync { kAuto, kEveryMicroBatch, kLastMicroBatch };
// ZeRO-3 / FSDP after a unit's forward: always reshard (free the gathered weights until backward
// gathers them again) or never (keep them gathered until the unit's backward: FSDP2's
// reshard_after_forward=False). auto: never under torchtitan with a pipeline (its "default"
// fsdp_reshard_after_forward policy), always otherwise.
enum class ReshardAfterForward { kAuto, kAlways, kNever };
// Which torch FSDP shards the model. 1: FullyShardedDataParallel, one flat parameter per unit
// (accelerate's default, fsdp_version 1; LitGPT through Lightning). 2: fully_shard, each
// parameter its own dim-0 shard (torchtitan, torchtune; accelerate's fsdp_version 2). auto: the
// framework's.
enum class FsdpVersion { kAuto, kOne, kTwo };

struct Parallel {
  std::int64_t num_gpus = 1;
  std::int64_t tensor = 1;
  std::int64_t pipeline = 1;
  std::int64_t context = 1;
  std::int64_t expert = 1;
  // Interleaved 1F1B: model chunks per pipeline stage (Megatron's virtual pipeline size); 1 = plain 1F1B.
  std::int64_t virtual_stages = 1;
  PipelineSchedule pipeline_schedule = PipelineSchedule::kOneFOneB;
  std::int64_t zero_stage = 0;
  // Ranks ZeRO / FSDP shard over; 0 = every rank holding the same layers (full sharding). Smaller
  // is hybrid sharding (FSDP HYBRID_SHARD, torchtitan dp_shard, DeepSpeed MiCS): shards within a
  // group, replicated across groups.
  std::int64_t shard_degree = 0;
  bool sequence_parallel = false;
  bool offload_optimizer = false;
  bool offload_params = false;
  bool float8_all_gather = false;  // torchao enable_fsdp_float8_all_gather: gathered linears in fp8
  // FSDP1 with use_orig_params=True: a unit that mixes frozen and trainable parameters keeps
  // gradients for all of them (torch/distributed/fsdp/_flat_param.py), so LoRA pays for the base.
  bool fsdp_use_orig_params = false;
  FsdpVersion fsdp_version = FsdpVersion::kAuto;
  // torchtitan's async tensor parallelism (enable_async_tensor_parallel: Inductor's micro-pipeline
  // TP, torch's fused all-gather / reduce-scatter matmuls over a symmetric-memory workspace).
  bool async_tp = false;
  // FSDP1 limit_all_gathers (True by default since PyTorch 2.1): False lets the CPU issue
  // all-gathers far ahead of the GPU, and the caching allocator holds each gathered unit until the
  // GPU is done with it, so the reserve grows (up to the card) while the step's need does not.
  bool fsdp_limit_all_gathers = true;
  GradientSync gradient_sync = GradientSync::kAuto;
  // torch DDP's gradient_as_bucket_view (default False): the reducer keeps its own flat buckets, as
  // large as all the gradients, beside param.grad; True makes the gradients views into them.
  bool ddp_bucket_view = false;
  ReshardAfterForward reshard_after_forward = ReshardAfterForward::kAuto;
  // DeepSpeed reduce_bucket_size (elements): ZeRO-2's gradient reduce buckets, and ZeRO-3's
  // contiguous gradient bucket (__ipg_bucket_flat_buffer, kept for the run); -1: the framework's.
  std::int64_t reduce_bucket_elements = -1;
  bool overlap_comm = false;                  // DeepSpeed ZeRO 1/2: two reduce buckets (double buffering)
  // DeepSpeed ZeRO-3 stage3_max_reuse_distance (elements): a gathered parameter used again within
  // this many parameters of the step's trace is not released (1e9, DeepSpeed's default).
  std::int64_t zero3_max_reuse_distance = 1'000'000'000;
  // DeepSpeed ZeRO-3 sub_group_size (elements): the step turns the 16-bit gradient partitions into
  // fp32 one sub-group at a time (stage3.py, _prepare_fp32_grad_for_sub_group); 1e9 by default.
  std::int64_t zero_sub_group_size = 1'000'000'000;
  // DeepSpeed ZeRO++ (Wang et al. 2023), ZeRO-3 only. hpZ (zero_hpz_partition_size > 1): after a
  // module's forward each rank keeps a secondary partition of its parameters, numel / hpz in their
  // dtype, for backward's all-gather inside the group (partition_parameters.py,
  // _partition_param_sec: ds_secondary_tensor, on the parameters' device). qwZ
  // (zero_quantized_weights): the all-gather moves int8 codes and dequantizes them into the
  // 16-bit parameters.
  std::int64_t zero_hpz_partition_size = 1;
  bool zero_quantized_weights = false;
  // qgZ (zero_quantized_gradients): gradients reduced through int4 codes in two all-to-alls.
  bool zero_quantized_gradients = false;
};

struct Hardware {
  std::string gpu = "h100-sxm-80gb";
  std::int64_t overhead_bytes = -1;   // -1: by convention / GPU generation
  double budget_fraction = 0.85;      // plan to this share of the card (the seeds: 80–85 %)
  double fragmentation = -1.0;        // -1: simulated (the caching allocator replays the step); else reserved / allocated − 1
  bool expandable_segments = false;   // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  std::int64_t gpus_per_node = 0;     // 0: the card's usual server (the GPU table)
  double price_per_gpu_hour = -1.0;   // USD; -1: the GPU table's default price
};

struct Config {
  ModelSpec model;
  Training training;
  Parallel parallel;
  Hardware hardware;
};

// A problem with the input, always naming the field ("training.seq_len") and what is allowed.
struct Issue {
  std::string field;
  std::string message;
};

struct ConfigParse {
  Config config;
  std::vector<Issue> errors;    // the configuration cannot be estimated
  std::vector<Issue> warnings;  // estimated, but the user should know (unknown keys, ...)
  bool ok() const { return errors.empty(); }
};

// The default configuration (the page's first view).
Config default_config();

// Reads a configuration from JSON. Missing fields keep their defaults (or the preset's values
// when model.preset names one); present fields are type-checked and range-checked.
ConfigParse parse_config(const Json& json);
ConfigParse parse_config_text(std::string_view text);

// Cross-field and range checks on an already-typed configuration.
std::vector<Issue> validate(const Config& config);
// Settings that run but do nothing or waste memory: warnings shown with the result.
std::vector<Issue> advisories(const Config& config);

// Writes every field (the normalised configuration).
Json config_to_json(const Config& config);

// The field catalogue: for every field its key, kind, default, range or choices and help text,
// so front ends can build forms and messages from the core's one source of truth.
Json config_schema();

// Enum spellings (the JSON values).
const char* to_string(Precision p);
const char* to_string(Optimizer o);
const char* to_string(Checkpointing c);
const char* to_string(Goal g);

// The goal with `auto` resolved (peft for LoRA, else full_finetune).
Goal resolved_goal(const Training& training);
const char* to_string(FinetuneMethod m);

}  // namespace memfit
