// The step-time model (docs/step_time.md). Times are seconds on the busiest GPU; FLOPs and bytes
// are doubles here (rates, not exact counts: the memory model is where bytes are exact).
#include "memfit/step_time.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "finetune.hpp"
#include "memfit/estimate.hpp"
#include "memfit/implementation.hpp"
#include "memfit/recipes.hpp"
#include "optimizer_states.hpp"
#include "vision.hpp"

namespace memfit {

namespace {

// NCCL's measured bus bandwidth is about 80 % of the link rate on NVLink and InfiniBand
// (nccl-tests all_reduce_perf on DGX systems); the same share is assumed for HBM-bound kernels
// (the optimizer step) against the datasheet bandwidth.
constexpr double kLinkEfficiency = 0.8;
constexpr double kMemoryEfficiency = 0.8;
// Per-collective latency (assumed, the order of NCCL's small-message times): inside a node and
// across nodes.
constexpr double kLatencyIntraS = 15e-6;
constexpr double kLatencyInterS = 40e-6;
// DeepSpeed's CPU Adam updates on the order of a billion parameters per second per process
// (assumed from ZeRO-Offload, Ren et al. 2021, which reports CPU-Adam at several times PyTorch's
// CPU Adam); the transfers over PCIe are counted separately.
constexpr double kCpuAdamParamsPerS = 1e9;
// Backward costs twice the forward: a weight gradient and an input gradient per matmul (Kaplan
// et al. 2020; Narayanan et al. 2021). A frozen weight (LoRA's base) needs only the input gradient.
constexpr double kBackwardPasses = 2.0;
constexpr double kFrozenBackwardPasses = 1.0;
// The tokens to train when none are given (default_train_tokens, step_time.hpp).
constexpr double kPretrainTokensPerParameter = 20.0;
constexpr double kFinetuneTrainTokens = 1e8;

// What the step does after its forward pass, in forward passes: a backward (two matmuls per
// weight, one for a frozen base), or MeZO's second forward (zo_step: loss at θ + εz, then θ − εz).
double backward_passes(const StepTimeModel& m) {
  if (m.forward_only) return 1.0;
  if (m.partial_backward_passes >= 0) return m.partial_backward_passes;
  return m.lora ? kFrozenBackwardPasses : kBackwardPasses;
}
double attention_backward_passes(const StepTimeModel& m) {
  if (m.forward_only) return 1.0;
  return m.partial_attention_backward_passes >= 0 ? m.partial_attention_backward_passes : kBackwardPasses;
}

struct Link {
  double bytes_per_s;
  double latency_s;
};

// A group of `size` ranks, `stride` ranks apart in the global order (tensor innermost, then
// context, expert / data, pipeline outermost: Megatron-LM's default order). Inside one node it
// runs over NVLink (or the node's links). Across nodes NCCL runs one ring per NIC, so a group
// whose ranks fill k GPUs of each node moves data at k NICs' rate, never faster than the node's
// links: multi-node all-reduce bus bandwidth on DGX systems is about 8 NICs' worth (nccl-tests).
Link link_for(const StepTimeModel& m, std::int64_t stride, std::int64_t size) {
  const double intra = m.gpu->intra_node_gb_per_s * 1e9 * kLinkEfficiency;
  if (stride * size <= m.link_domain) return {intra, kLatencyIntraS};
  const std::int64_t per_node = stride < m.link_domain ? std::min(size, m.link_domain / stride) : 1;
  const double network = m.gpu->inter_node_gb_per_s * 1e9 * kLinkEfficiency * double(per_node);
  return {std::min(intra, network), kLatencyInterS};
}

// Ring collectives (Patarasuk & Yuan 2009, as NCCL runs them): an all-reduce moves 2(g−1)/g of
// the buffer through each link, an all-gather or reduce-scatter (g−1)/g of the full buffer, an
// all-to-all (g−1)/g of what each rank sends.
double all_reduce_s(double bytes, std::int64_t g, Link l) {
  return g <= 1 ? 0 : 2.0 * (g - 1) / g * bytes / l.bytes_per_s + l.latency_s;
}
double all_gather_s(double bytes, std::int64_t g, Link l) {
  return g <= 1 ? 0 : double(g - 1) / g * bytes / l.bytes_per_s + l.latency_s;
}

struct Passes {
  double linear_recompute = 0, attention_recompute = 0;
};

// What each checkpointing mode runs again in backward: full recomputes each block's forward
// (Chen et al. 2016); Megatron's selective recomputes the attention core only (Korthikanti et al.
// 2022 §5); torchtitan's op-level policy keeps every second matmul output and the attention
// output, so recomputes half the matmuls.
// The share of blocks full checkpointing recomputes (training.checkpointed_layers; 0 otherwise).
double full_recompute_share(const StepTimeModel& m, const Layout& l) {
  if (l.checkpointing != Checkpointing::kFull) return 0.0;
  if (l.checkpointed_layers < 0 || m.layers <= 0) return 1.0;
  return std::min(1.0, double(l.checkpointed_layers) / m.layers);
}

Passes recompute_passes(const StepTimeModel& m, const Layout& l) {
  switch (l.checkpointing) {
    case Checkpointing::kFull: return {full_recompute_share(m, l), full_recompute_share(m, l)};
    case Checkpointing::kSelective: return {0.0, 1.0};
    case Checkpointing::kSelectiveOp: return {0.5, 0.0};
    case Checkpointing::kNone: break;
  }
  return {};
}

// FLOP/s the busiest GPU sustains for the blocks' matmuls, attention and the head: the peak of
// the recipe's matmul dtype times the card's ceiling. Transformer Engine runs the blocks' linear
// layers in FP8 and keeps attention and the output head in bf16.
struct Rates {
  double linear = 0, attention = 0, head = 0, peak16 = 0;
  const char* missing = nullptr;  // the dtype the card lacks
};

Rates rates_for(const Gpu& g, Precision p) {
  Rates r;
  const double bf16 = g.peak_bf16_tflops * 1e12 * g.ceiling_16bit;
  const double fp16 = g.peak_fp16_tflops * 1e12 * g.ceiling_16bit;
  r.peak16 = (g.has_bf16() ? g.peak_bf16_tflops : g.peak_fp16_tflops) * 1e12;
  switch (p) {
    case Precision::kFp32: r.linear = r.attention = r.head = g.peak_fp32_tflops * 1e12 * g.ceiling_16bit; break;
    case Precision::kFp16Mixed:
    case Precision::kFp16Master:
    case Precision::kSeed14p: r.linear = r.attention = r.head = fp16; break;
    case Precision::kFp8Mixed:
      r.linear = g.peak_fp8_tflops * 1e12 * g.ceiling_fp8;
      r.attention = r.head = bf16;
      break;
    case Precision::kBf16Mixed:
    case Precision::kBf16Master:
    case Precision::kBf16:
    case Precision::kBf16Autocast:
    case Precision::kBf16Fsdp: r.linear = r.attention = r.head = bf16; break;
  }
  r.missing = card_lacks(g, p);
  return r;
}

// One micro-batch through the busiest stage's blocks (and the head) on one GPU.
struct MicroBatch {
  double forward_s = 0, backward_s = 0, recompute_s = 0;
  double linear_forward_s = 0, attention_forward_s = 0;  // what collectives can hide behind
  double total() const { return forward_s + backward_s + recompute_s; }
};

struct StageShape {
  double layers_on_stage = 0, stage_fraction = 0, tokens = 0;  // tokens of one micro-batch per GPU
};

StageShape shape_of(const StepTimeModel& m, const Layout& l) {
  StageShape s;
  s.layers_on_stage = std::ceil(m.layers / double(l.pipeline));
  s.stage_fraction = s.layers_on_stage / m.layers;
  s.tokens = double(l.micro_batch_size) * m.seq_len / double(l.tensor * l.context);
  return s;
}

MicroBatch micro_batch(const StepTimeModel& m, const Layout& l, const StageShape& s, const Rates& r) {
  const Passes re = recompute_passes(m, l);
  const double backward = backward_passes(m);
  const double linear = s.tokens * s.stage_fraction * m.block_matmul_flops / r.linear;
  const double attention = s.tokens * s.layers_on_stage * m.attention_flops_per_layer / r.attention;
  const double head = s.tokens * m.head_matmul_flops / r.head;  // the last stage holds the head
  MicroBatch mb;
  mb.linear_forward_s = linear;
  mb.attention_forward_s = attention;
  mb.forward_s = linear + attention + head;
  mb.backward_s = backward * (linear + head) + attention_backward_passes(m) * attention;
  mb.recompute_s = re.linear_recompute * linear + re.attention_recompute * attention;
  // A quantised frozen base (QLoRA NF4, int8) is dequantised to 16 bit for every pass that uses
  // it: read the packed weight, write and read back a 16-bit one (bitsandbytes).
  if (m.lora && m.base_bits < 16) {
    const double elements = s.stage_fraction * m.block_parameters / double(l.tensor);
    const double bytes = elements * (double(m.base_bits) / 8.0 + 4.0);
    const double passes = 1.0 + kFrozenBackwardPasses + re.linear_recompute;
    mb.forward_s += passes * bytes / (m.gpu->memory_bandwidth_gb_per_s * 1e9 * kMemoryEfficiency);
  }
  return mb;
}

// Per micro-batch, exposed: tensor parallelism's collectives. Megatron's blocks all-reduce the
// attention and MLP outputs in forward and their input gradients in backward (Shoeybi et al.
// 2019), four per block, two more when the block is recomputed; sequence parallelism replaces
// each all-reduce with an all-gather and a reduce-scatter of the same volume (Korthikanti et al.
// 2022). Overlapped (tp_comm_overlap), they hide behind the block's GEMMs.
double tensor_parallel_s(const StepTimeModel& m, const Layout& l, const StageShape& s, const MicroBatch& mb,
                         double act_bytes) {
  if (l.tensor <= 1) return 0;
  const double bytes = double(l.micro_batch_size) * m.seq_len / double(l.context) * m.hidden * act_bytes;
  const double per_block = 4.0 + 2.0 * full_recompute_share(m, l);
  const double t = s.layers_on_stage * per_block * all_reduce_s(bytes, l.tensor, link_for(m, 1, l.tensor));
  const double gemms = mb.linear_forward_s * (1.0 + kBackwardPasses);
  return m.options.tp_comm_overlap ? std::max(0.0, t - gemms) : t;
}

// Context parallelism's ring (Liu et al. 2023; Megatron's CP, torchtitan's ring attention): each
// layer passes its keys and values around the cp ranks, cp − 1 hops, once in forward, and keys,
// values and their gradients in backward; hidden behind the attention it overlaps with.
double context_parallel_s(const StepTimeModel& m, const Layout& l, const StageShape& s, const MicroBatch& mb,
                          double act_bytes) {
  if (l.context <= 1) return 0;
  const double kv_bytes =
      double(l.micro_batch_size) * m.seq_len / double(l.context) * m.kv_width / double(l.tensor) * act_bytes;
  const Link link = link_for(m, l.tensor, l.context);
  const double passes = 1.0 + 2.0 + full_recompute_share(m, l);
  const double t = s.layers_on_stage * passes * (l.context - 1) * (kv_bytes / link.bytes_per_s + link.latency_s);
  return std::max(0.0, t - mb.attention_forward_s * (1.0 + kBackwardPasses));
}

// Expert parallelism: each MoE layer sends every token's hidden state to its k experts' ranks
// and back (dispatch and combine all-to-all), in forward, backward and recomputation; exposed.
double expert_parallel_s(const StepTimeModel& m, const Layout& l, const StageShape& s, double act_bytes) {
  if (l.expert <= 1 || m.moe_layers <= 0) return 0;
  const double bytes = double(l.micro_batch_size) * m.seq_len / double(l.context * l.tensor) * m.experts_per_token *
                       m.hidden * act_bytes;
  const double passes = 2.0 + full_recompute_share(m, l);
  const double moe_layers_on_stage = s.stage_fraction * m.moe_layers;
  return moe_layers_on_stage * passes * 2.0 * all_gather_s(bytes, l.expert, link_for(m, l.tensor * l.context, l.expert));
}

// Parameters the busiest GPU holds before ZeRO: its stage's blocks (routed experts split over
// expert parallelism) and, approximately, half the embedding and head when pipelined (the first
// stage holds one, the last the other), all divided by tensor parallelism.
double local_parameters(const StepTimeModel& m, const Layout& l, const StageShape& s) {
  const double blocks = (m.block_parameters - m.expert_parameters + m.expert_parameters / double(l.expert)) *
                        s.stage_fraction;
  return (blocks + m.outside_parameters * (l.pipeline > 1 ? 0.5 : 1.0)) / double(l.tensor);
}

std::int64_t zero_group(const Layout& l) {
  const std::int64_t data_ranks = l.num_gpus / (l.tensor * l.pipeline);  // data × context
  return l.shard_degree > 0 ? l.shard_degree : data_ranks;
}

// ZeRO-3 / FSDP, per micro-batch: gather each unit's weights for forward and again for backward,
// reduce-scatter its gradients (FSDP and DeepSpeed reduce every micro-batch); prefetching hides
// this behind the micro-batch's compute. Offloaded parameters also cross PCIe both ways.
double zero3_micro_batch_s(const StepTimeModel& m, const Layout& l, const StageShape& s, const PrecisionRecipe& r,
                           double compute_s) {
  if (l.zero_stage < 3) return 0;
  const double params = local_parameters(m, l, s);
  const std::int64_t g = zero_group(l);
  const Link link = link_for(m, l.tensor, g);
  double t = 2.0 * all_gather_s(params * double(r.gathered.value()), g, link) +
             all_gather_s(params * m.trainable_fraction * double(r.gradients.value()), g, link);
  t += 3.0 * s.layers_on_stage * link.latency_s;  // a unit per block
  if (l.offload_params) t += 2.0 * params / double(g) * double(r.weights.value()) / (m.gpu->host_link_gb_per_s * 1e9);
  return std::max(0.0, t - compute_s);
}

// Once per step: data parallelism's gradient reduction (an all-reduce without ZeRO; a
// reduce-scatter, and an all-gather of the updated weights, with ZeRO-1/2: Megatron's distributed
// optimizer), overlapped with the last micro-batch's backward and, for the gather, the next
// step's first forward; hybrid sharding adds an all-reduce of each shard across replica groups.
double data_parallel_s(const StepTimeModel& m, const Layout& l, const StageShape& s, const PrecisionRecipe& r,
                       const MicroBatch& mb) {
  const std::int64_t data_ranks = l.num_gpus / (l.tensor * l.pipeline);
  if (data_ranks <= 1) return 0;
  const double params = local_parameters(m, l, s);
  const double grads = params * m.trainable_fraction * double(r.gradients.value());
  if (l.zero_stage == 0) {
    return std::max(0.0, all_reduce_s(grads, data_ranks, link_for(m, l.tensor, data_ranks)) - mb.backward_s);
  }
  if (l.zero_stage <= 2) {
    const Link link = link_for(m, l.tensor, data_ranks);
    const double scatter = all_gather_s(grads, data_ranks, link);
    const double gather = all_gather_s(params * m.trainable_fraction * double(r.weights.value()), data_ranks, link);
    return std::max(0.0, scatter - mb.backward_s) + std::max(0.0, gather - mb.forward_s);
  }
  const std::int64_t shards = zero_group(l), replicas = data_ranks / std::max<std::int64_t>(1, shards);
  if (replicas <= 1) return 0;
  const double shard_grads = grads / double(shards);
  return std::max(0.0, all_reduce_s(shard_grads, replicas, link_for(m, l.tensor * shards, replicas)) - mb.backward_s);
}

// The optimizer step reads and writes weights, master weights and states and reads gradients:
// bound by memory bandwidth (or, offloaded, by the CPU and PCIe).
double optimizer_s(const StepTimeModel& m, const Layout& l, const StageShape& s, const PrecisionRecipe& r) {
  const double shards = l.zero_stage >= 1 ? double(zero_group(l)) : 1.0;
  const double params = local_parameters(m, l, s) * m.trainable_fraction / shards;
  const double per_param = 2.0 * double((r.weights + r.master).value()) +
                           2.0 * m.optimizer_states * double(r.optimizer_state.value()) + double(r.gradients.value());
  if (!l.offload_optimizer) return params * per_param / (m.gpu->memory_bandwidth_gb_per_s * 1e9 * kMemoryEfficiency);
  const double pcie = params * double((r.gradients + r.weights).value()) / (m.gpu->host_link_gb_per_s * 1e9);
  return params / kCpuAdamParamsPerS + pcie;
}

double activation_bytes(Precision p) { return double(recipe_for(p).compute.value()); }

// Pipeline: every stage runs m micro-batches; the first waits (p − 1) micro-batch times before
// its first backward and the last idles as long at the end: (p − 1) / v of a micro-batch with v
// interleaved chunks (Narayanan et al. 2021, §2.2). Activations and gradients cross each stage
// boundary once per micro-batch and chunk; in the steady state the sends overlap with compute
// (Megatron's overlap_p2p_comm), so only the warm-up's and cool-down's p − 1 sends each wait.
// A sequential schedule (device_map model parallelism) runs one stage at a time: each of the m
// micro-batches waits p − 1 stage times, and every send waits.
void pipeline(const StepTimeModel& m, const Layout& l, double micro_batch_s, double act_bytes, StepTimeParts& p) {
  if (l.pipeline <= 1) return;
  const double waits = m.sequential_pipeline ? double(l.grad_accum_steps) : 1.0;
  p.pipeline_bubble_s = double(l.pipeline - 1) / double(l.virtual_stages) * micro_batch_s * waits;
  const double bytes = double(l.micro_batch_size) * m.seq_len / double(l.context) * m.hidden * act_bytes /
                       (l.sequence_parallel ? double(l.tensor) : 1.0);
  const Link link = link_for(m, l.num_gpus / l.pipeline, l.pipeline);
  p.pipeline_p2p_s = 2.0 * double(l.pipeline - 1) * (bytes / link.bytes_per_s + link.latency_s) * waits;
}

// Tokens, FLOPs, MFU and the cost of `train_tokens`, from the step time.
void totals(const StepTimeModel& m, const Layout& l, const Passes& re, StepTime& t) {
  const double backward = backward_passes(m);
  const double linear = m.block_matmul_flops + m.head_matmul_flops;
  const double attention = m.layers * m.attention_flops_per_layer;
  t.model_flops_per_token = (1.0 + backward) * linear + (1.0 + attention_backward_passes(m)) * attention;
  t.hardware_flops_per_token =
      t.model_flops_per_token + re.linear_recompute * m.block_matmul_flops + re.attention_recompute * attention;
  t.tokens_per_step = double(l.micro_batch_size) * double(l.grad_accum_steps) * m.seq_len * double(l.data_parallel());
  t.tokens_per_s = t.tokens_per_step / t.step_time_s;
  t.tokens_per_s_per_gpu = t.tokens_per_s / double(l.num_gpus);
  const double peak16 = (m.gpu->has_bf16() ? m.gpu->peak_bf16_tflops : m.gpu->peak_fp16_tflops) * 1e12;
  t.mfu = t.model_flops_per_token * t.tokens_per_s_per_gpu / peak16;
  t.hfu = t.hardware_flops_per_token * t.tokens_per_s_per_gpu / peak16;
  t.train_tokens = m.options.train_tokens;
  // Training runs whole steps: never less than one, however few the tokens.
  t.train_time_s = std::max(t.train_tokens / t.tokens_per_s, t.step_time_s);
  t.gpu_hours = t.train_time_s / 3600.0 * double(l.num_gpus);
  t.price_per_gpu_hour = m.price_per_gpu_hour;
  t.cost_usd = t.gpu_hours * m.price_per_gpu_hour;
}

// Matmul weights (elements of 2-D weights) of one component, all layers.
double matmul_elements(const ParameterCount& p, Component c) {
  double n = 0;
  for (const TensorGroup& g : p.groups) {
    if (g.component == c && !g.cols.is_zero()) n += double(g.elements().value());
  }
  return n;
}

// Forward FLOPs per token: 2 per multiply-add of every matmul weight the token meets (Kaplan et
// al. 2020): attention projections, the dense MLP, the router, the k routed experts and the
// shared experts of MoE layers; and the head. Attention's own matmuls (QKᵀ, PV) add
// 2 · heads · (d_qk + d_v) per attended position; a causal model's token attends to (T + 1) / 2
// positions on average (FlashAttention skips the masked half).
void flops_of(const Config& c, const ParameterCount& p, StepTimeModel& m) {
  const ModelSpec& s = c.model;
  const double routed = s.num_experts > 0 ? double(s.num_experts_per_tok) / double(s.num_experts) : 0.0;
  const double block = matmul_elements(p, Component::kAttention) + matmul_elements(p, Component::kMlp) +
                       matmul_elements(p, Component::kRouter) + routed * matmul_elements(p, Component::kExperts) +
                       matmul_elements(p, Component::kSharedExperts);
  m.block_matmul_flops = 2.0 * block;
  const bool lm_head = s.output_head == OutputHead::kLm;
  m.head_matmul_flops = 2.0 * ((lm_head ? double(s.vocab_size) * double(s.hidden_size) : 0.0) +
                               matmul_elements(p, Component::kPooler));
  const bool mla = s.attention_type == AttentionType::kMla;
  const double d_qk = mla ? double(s.qk_nope_head_dim + s.qk_rope_head_dim) : double(s.head_size());
  const double d_v = mla ? double(s.v_head_dim) : double(s.head_size());
  const bool causal = lm_head && s.type_vocab_size == 0;
  m.attention_context = causal ? (double(c.training.seq_len) + 1.0) / 2.0 : double(c.training.seq_len);
  m.attention_flops_per_layer = 2.0 * double(s.num_attention_heads) * (d_qk + d_v) * m.attention_context;
  if (s.hybrid_attention() && s.num_hidden_layers > 0) {
    // A Gated DeltaNet layer's chunked delta rule (Yang et al. 2024, §3): per token and value head,
    // q·kᵀ and the scores times v inside its 64-token chunk, and the state's read (q·S) and update
    // (kᵀ·v), K × V each; the layers in proportion to their kind.
    const double k = double(s.linear_key_head_dim), v = double(s.linear_value_head_dim);
    const double linear = 2.0 * double(s.linear_num_value_heads) * (64.0 * (k + v) + 2.0 * k * v);
    const double share = double(std::min(s.linear_attention_layers, s.num_hidden_layers)) / double(s.num_hidden_layers);
    m.attention_flops_per_layer = (1.0 - share) * m.attention_flops_per_layer + share * linear;
  }
  m.kv_width = (mla ? double(s.num_attention_heads) : double(s.kv_heads())) * (d_qk + d_v);
}

// Full-size state tensors the step reads and writes per trainable parameter, in the recipe's
// state dtype: an 8-bit state counts a quarter, a 4-bit one an eighth; factored or projected
// states (Adafactor, GaLore, Adam-mini's second moment) are taken as nothing; LOMO and AdaLomo
// update inside backward. A bandwidth estimate, not memory: optimizer_states.cpp has the bytes.
double optimizer_state_tensors(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
    case Optimizer::kPagedAdamW:
    case Optimizer::kSophia:
    case Optimizer::kScheduleFreeAdamW: return 2.0;
    case Optimizer::kSoap: return 3.0;  // Adam's moments and the eigenbases
    case Optimizer::kShampoo: return 2.0;
    case Optimizer::kSgdMomentum:
    case Optimizer::kLion:
    case Optimizer::kMuon:
    case Optimizer::kAdamMini:
    case Optimizer::kCame: return 1.0;
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit: return 0.5;
    case Optimizer::kAdamW4bit: return 0.25;
    case Optimizer::kLion8bit:
    case Optimizer::kSgdMomentum8bit: return 0.25;
    case Optimizer::kGaloreAdamW:
    case Optimizer::kGaloreAdamW8bit:
    case Optimizer::kApollo:
    case Optimizer::kAdafactor:
    case Optimizer::kSgd:
    case Optimizer::kLomo:
    case Optimizer::kAdaLomo: return 0.0;
    // MeZO perturbs every weight three times (+εz, −2εz, +εz) and updates it once, drawing z again
    // each time (zo_perturb_parameters, zo_update): four read-modify-writes of the weights.
    case Optimizer::kMezo: return 4.0;
  }
  return 2.0;
}

}  // namespace

Layout layout_of(const Config& c) {
  const Parallel& p = c.parallel;
  Layout l;
  l.num_gpus = p.num_gpus;
  l.tensor = p.tensor;
  l.pipeline = p.pipeline;
  l.virtual_stages = p.virtual_stages;
  l.context = p.context;
  l.expert = p.expert;
  l.zero_stage = p.zero_stage;
  l.shard_degree = p.shard_degree;
  l.sequence_parallel = p.sequence_parallel;
  l.offload_optimizer = p.offload_optimizer;
  l.offload_params = p.offload_params;
  l.precision = c.training.precision;
  l.checkpointing = c.training.checkpointing;
  l.checkpointed_layers = c.training.checkpointed_layers;
  l.micro_batch_size = c.training.micro_batch_size;
  l.grad_accum_steps = c.training.grad_accum_steps;
  return l;
}

void apply_layout(const Layout& l, Config& c) {
  Parallel& p = c.parallel;
  p.num_gpus = l.num_gpus;
  p.tensor = l.tensor;
  p.pipeline = l.pipeline;
  p.virtual_stages = l.virtual_stages;
  p.context = l.context;
  p.expert = l.expert;
  p.zero_stage = l.zero_stage;
  p.shard_degree = l.shard_degree;
  p.sequence_parallel = l.sequence_parallel;
  p.offload_optimizer = l.offload_optimizer;
  p.offload_params = l.offload_params;
  c.training.precision = l.precision;
  c.training.checkpointing = l.checkpointing;
  c.training.checkpointed_layers = l.checkpointed_layers;
  c.training.micro_batch_size = l.micro_batch_size;
  c.training.grad_accum_steps = l.grad_accum_steps;
}

double default_train_tokens(const Config& c, const ParameterCount& p, std::string* why) {
  if (resolved_goal(c.training) == Goal::kPretrain) {
    if (why) *why = "20 per parameter, the compute-optimal count for pre-training (Hoffmann et al. 2022)";
    return kPretrainTokensPerParameter * double(p.total_count.value());
  }
  if (why) *why = "a fine-tuning set of 100M tokens over its epochs";
  return kFinetuneTrainTokens;
}

StepTimeModel step_time_model(const Config& c, const ParameterCount& p, const StepTimeOptions& options) {
  StepTimeModel m;
  m.gpu = find_gpu(c.hardware.gpu);
  m.options = options;
  if (!(m.options.train_tokens > 0)) m.options.train_tokens = default_train_tokens(c, p);
  m.link_domain = gpu_link_domain(c.hardware.gpu, c.hardware.gpus_per_node);
  m.price_per_gpu_hour = c.hardware.price_per_gpu_hour >= 0 ? c.hardware.price_per_gpu_hour
                                                            : (m.gpu ? m.gpu->price_per_hour : 0.0);
  const ModelSpec& s = c.model;
  m.seq_len = double(c.training.seq_len);
  m.hidden = double(s.hidden_size);
  m.layers = double(s.num_hidden_layers);
  m.dense_layers = double(p.dense_layer_count.value());
  m.moe_layers = double(p.moe_layer_count.value());
  m.experts_per_token = double(s.num_experts_per_tok);
  flops_of(c, p, m);
  m.block_parameters = double(p.block_count().value());
  m.expert_parameters = double(p.component_count(Component::kExperts).value());
  m.outside_parameters = double(p.total_count.value()) - m.block_parameters;
  // A parameter-efficient method trains a small part and leaves the base frozen (its matmuls need
  // input gradients only).
  m.lora = is_peft(c);
  m.forward_only = forward_only(c.training);
  m.base_bits = c.training.finetune.base_bits;
  m.sequential_pipeline = c.parallel.pipeline_schedule == PipelineSchedule::kSequential;
  if (m.lora || trains_some_layers(c)) {
    m.trainable_fraction = double(trainable_counts(c, p, p.total_count).trainable.value()) /
                           std::max(1.0, double(p.total_count.value()));
  }
  if (trains_some_layers(c)) {
    const double layers = std::max(1.0, double(c.model.num_hidden_layers));
    const double trained = double(c.training.finetune.trainable_layers);
    const double in_backward = layers - double(lowest_backward_layer(c));
    m.partial_backward_passes =
        (trained * kBackwardPasses + std::max(0.0, in_backward - trained) * kFrozenBackwardPasses) / layers;
    m.partial_attention_backward_passes = kBackwardPasses * in_backward / layers;
  }
  m.optimizer_states = optimizer_state_tensors(c.training.optimizer);
  return m;
}

StepTime step_time(const Config& c, const StepTimeOptions& options) {
  StepTime t;
  t.errors = validate(c);
  if (!t.errors.empty()) return t;
  const Config run = config_as_run(c);
  // The model as estimate() and the planner place it: a vision tower's trained parts with it.
  return step_time(step_time_model(run, memory_parameters(run), options), layout_of(run));
}

const std::vector<const char*>& step_time_assumptions() {
  static const std::vector<const char*> list = {
      "compute: FLOPs per token (6 per matmul weight for training, 4 for a frozen LoRA base, plus attention's "
      "QK\u1d40 and PV over (T+1)/2 positions when causal, plus what checkpointing recomputes) at the card's peak "
      "times its ceiling (the share of peak published runs reach)",
      "communication: ring collectives at 80 % of the link rate; groups inside a node use NVLink / the node's "
      "links, groups across nodes the network (tensor innermost, then context, data, pipeline outermost)",
      "overlap: data-parallel reduction hides behind the last backward, ZeRO-3 gathers behind each micro-batch, the "
      "context-parallel ring behind attention; tensor-parallel collectives only with tp_comm_overlap; expert "
      "all-to-all and pipeline sends are exposed",
      "pipeline: 1F1B bubble of (p - 1) / v micro-batches; the busiest stage holds ceil(L / p) layers and the head",
      "not modelled: data loading, kernel launch gaps, stragglers, load imbalance between experts",
  };
  return list;
}

Json step_time_to_json(const StepTime& t) {
  Json j = Json::object();
  j.set("ok", Json::boolean(t.ok()));
  j.set("errors", issues_to_json(t.errors));
  if (!t.ok()) return j;
  j.set("step_time_s", Json::number(t.step_time_s));
  j.set("tokens_per_step", Json::number(t.tokens_per_step));
  j.set("tokens_per_s", Json::number(t.tokens_per_s));
  j.set("tokens_per_s_per_gpu", Json::number(t.tokens_per_s_per_gpu));
  j.set("model_flops_per_token", Json::number(t.model_flops_per_token));
  j.set("hardware_flops_per_token", Json::number(t.hardware_flops_per_token));
  j.set("mfu", Json::number(t.mfu));
  j.set("hfu", Json::number(t.hfu));
  j.set("train_tokens", Json::number(t.train_tokens));
  j.set("train_time_s", Json::number(t.train_time_s));
  j.set("gpu_hours", Json::number(t.gpu_hours));
  j.set("price_per_gpu_hour", Json::number(t.price_per_gpu_hour));
  j.set("cost_usd", Json::number(t.cost_usd));
  const StepTimeParts& p = t.parts;
  Json parts = Json::object();
  parts.set("compute_s", Json::number(p.compute_s));
  parts.set("recompute_s", Json::number(p.recompute_s));
  parts.set("tensor_parallel_s", Json::number(p.tensor_parallel_s));
  parts.set("context_parallel_s", Json::number(p.context_parallel_s));
  parts.set("expert_parallel_s", Json::number(p.expert_parallel_s));
  parts.set("data_parallel_s", Json::number(p.data_parallel_s));
  parts.set("pipeline_bubble_s", Json::number(p.pipeline_bubble_s));
  parts.set("pipeline_p2p_s", Json::number(p.pipeline_p2p_s));
  parts.set("optimizer_s", Json::number(p.optimizer_s));
  j.set("parts", std::move(parts));
  Json assumptions = Json::array();
  for (const char* a : step_time_assumptions()) assumptions.push(Json::string(a));
  j.set("assumptions", std::move(assumptions));
  return j;
}

double step_seconds(const StepTimeModel& m, const Layout& l, StepTimeParts* parts) {
  const Rates rates = rates_for(*m.gpu, l.precision);
  if (rates.missing) return std::numeric_limits<double>::infinity();
  const PrecisionRecipe& r = recipe_for(l.precision);
  const StageShape s = shape_of(m, l);
  const MicroBatch mb = micro_batch(m, l, s, rates);
  const double act = activation_bytes(l.precision);
  StepTimeParts local;
  StepTimeParts& p = parts ? *parts : local;
  const double tp = tensor_parallel_s(m, l, s, mb, act), cp = context_parallel_s(m, l, s, mb, act),
               ep = expert_parallel_s(m, l, s, act), z3 = zero3_micro_batch_s(m, l, s, r, mb.total());
  const double micro_batch_s = mb.total() + tp + cp + ep + z3;
  const double micro_batches = double(l.grad_accum_steps);
  p.compute_s = micro_batches * mb.total();
  p.recompute_s = micro_batches * mb.recompute_s;
  p.tensor_parallel_s = micro_batches * tp;
  p.context_parallel_s = micro_batches * cp;
  p.expert_parallel_s = micro_batches * ep;
  p.data_parallel_s = micro_batches * z3 + data_parallel_s(m, l, s, r, mb);
  pipeline(m, l, micro_batch_s, act, p);
  p.optimizer_s = optimizer_s(m, l, s, r);
  return p.compute_s + p.tensor_parallel_s + p.context_parallel_s + p.expert_parallel_s + p.data_parallel_s +
         p.pipeline_bubble_s + p.pipeline_p2p_s + p.optimizer_s;
}

StepTime step_time(const StepTimeModel& m, const Layout& l) {
  StepTime t;
  if (rates_for(*m.gpu, l.precision).missing) {
    t.errors.push_back({"training.precision", std::string(to_string(l.precision)) + " needs " +
                                                  rates_for(*m.gpu, l.precision).missing +
                                                  " tensor cores, which the " + m.gpu->name + " does not have"});
    return t;
  }
  t.step_time_s = step_seconds(m, l, &t.parts);
  totals(m, l, recompute_passes(m, l), t);
  return t;
}

}  // namespace memfit
