#include "optimizer_states.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "finetune.hpp"
#include "memfit/implementation.hpp"

namespace memfit {

namespace {

constexpr std::int64_t kAdamStates = 2;  // exp_avg and exp_avg_sq

// What a trainable tensor is to optimizers that treat tensors differently (Muon and GaLore split
// hidden matrices from the rest; Adam-mini partitions by role).
enum class Role {
  kHiddenMatrix,  // a matrix inside the blocks (a projection, a router, a PEFT adapter matrix)
  kQueryKey,      // a q or k projection: Adam-mini keeps one second moment per head
  kEmbedding,     // token / position / token-type embeddings
  kHead,          // the output head
  kOtherMatrix,   // a matrix outside the blocks (BERT's pooler)
  kNorm,          // a norm's weight or bias
  kBias,          // any other vector
};

struct StateTensor {
  Shape shape;
  Role role;
};

bool is_norm(const TensorGroup& g) {
  return g.component == Component::kBlockNorms || g.component == Component::kFinalNorm ||
         g.component == Component::kEmbeddingNorm || std::strstr(g.name, "norm") != nullptr;
}

Role role_of(const TensorGroup& g) {
  if (g.cols.is_zero()) return is_norm(g) ? Role::kNorm : Role::kBias;
  switch (g.component) {
    case Component::kTokenEmbedding:
    case Component::kPositionEmbedding:
    case Component::kTokenTypeEmbedding: return Role::kEmbedding;
    case Component::kHead: return Role::kHead;
    case Component::kPooler: return Role::kOtherMatrix;
    default: break;
  }
  const bool qk = (g.lora_target == kLoraQ || g.lora_target == kLoraK) && std::strstr(g.name, "_proj") &&
                  std::strlen(g.name) == std::strlen("q_proj");
  return qk ? Role::kQueryKey : Role::kHiddenMatrix;
}

// The tensors the optimizer sees, with their roles. A PEFT method's tensors are adapters: its
// matrices count as hidden matrices, its vectors as biases.
std::vector<StateTensor> state_tensors(const Config& c, const ParameterCount& params) {
  std::vector<StateTensor> out;
  if (!is_peft(c)) {
    const TensorGroup* previous = nullptr;
    for (const TensorGroup& g : params.groups) {
      // A LayerNorm's bias follows its weight as a group of the same name (parameters.cpp).
      const bool norm_bias = previous && is_norm(g) && g.cols.is_zero() && previous->cols.is_zero() &&
                             std::strcmp(previous->name, g.name) == 0 && previous->component == g.component;
      out.push_back({{g.rows, g.cols, g.count}, norm_bias ? Role::kBias : role_of(g)});
      previous = norm_bias ? nullptr : &g;
    }
    return out;
  }
  for (const Shape& s : trainable_shapes(c, params)) {
    out.push_back({s, s.cols.is_zero() ? Role::kBias : Role::kHiddenMatrix});
  }
  return out;
}

bool is_matrix(const Shape& s) { return !s.cols.is_zero(); }
Count total_elements(const std::vector<StateTensor>& tensors) {
  Count n = 0;
  for (const StateTensor& t : tensors) n += t.shape.elements();
  return n;
}

// bitsandbytes 8-bit optimizers (Dettmers et al. 2022; bitsandbytes/optim/optimizer.py
// Optimizer1State / Optimizer2State.init_state): a tensor under min_8bit_size = 4096 elements keeps
// fp32 states; a larger one one byte per state element and an fp32 absmax per 256-element block
// per state. The 256-entry fp32 quantisation maps (qmap1 "dynamic", qmap2 "udynamic") are shared
// by every tensor: stored once.
constexpr std::int64_t kBnbMin8bitElements = 4096;
constexpr std::int64_t kBnbBlockElements = 256;
constexpr Bytes kBnbQuantMapBytes = Count(256) * kFp32Bytes;

// One state of one tensor of n elements under a bitsandbytes optimizer: its buffer (what a paged
// optimizer may page) and, for an 8-bit state, its block-wise absmax (never paged).
struct BnbState {
  Bytes buffer;
  Bytes scales;
  bool eight_bit;
};
BnbState bnb_state(Count n, bool eight_bit_optimizer) {
  if (!eight_bit_optimizer || n.value() < kBnbMin8bitElements) return {n * kFp32Bytes, Bytes{0}, false};
  return {n * kByte, ceil_div(n, kBnbBlockElements) * kFp32Bytes, true};
}

Bytes bnb_8bit_bytes(const std::vector<Shape>& shapes, std::int64_t states) {
  Bytes total{0};
  bool any_8bit = false;
  for (const Shape& s : shapes) {
    const BnbState state = bnb_state(s.elements_each(), true);
    any_8bit = any_8bit || state.eight_bit;
    total += (state.buffer + state.scales) * s.count * states;
  }
  return any_8bit ? total + kBnbQuantMapBytes * states : total;
}

// torchao's low-bit AdamW (torchao/optim/adam.py _AdamBase._new_buffer, subclass_4bit.py
// OptimState4bit.zeros): a tensor of at least 4096 elements that divide into 128-element blocks
// keeps each moment as packed 4-bit codes (two per byte), an fp32 scale per block and its own
// 16-entry fp32 quantisation map; any other tensor keeps zeros_like(p), the parameter's dtype.
constexpr std::int64_t kTorchaoMinQuantisedElements = 4096;
constexpr std::int64_t kTorchao4bitBlockElements = 128;
constexpr Bytes kTorchao4bitMapBytes = Count(16) * kFp32Bytes;

Bytes torchao_4bit_bytes(const std::vector<StateTensor>& tensors, Bytes element) {
  Bytes total{0};
  for (const StateTensor& t : tensors) {
    const Count n = t.shape.elements_each();
    const bool quantised = n.value() >= kTorchaoMinQuantisedElements && n.value() % kTorchao4bitBlockElements == 0;
    const Bytes each = quantised ? ceil_div(n, 2) * kByte + ceil_div(n, kTorchao4bitBlockElements) * kFp32Bytes +
                                       kTorchao4bitMapBytes
                                 : n * element;
    total += each * t.shape.count * kAdamStates;
  }
  return total;
}

std::vector<Shape> shapes_of(const std::vector<StateTensor>& tensors) {
  std::vector<Shape> shapes;
  for (const StateTensor& t : tensors) shapes.push_back(t.shape);
  return shapes;
}

// Adafactor (Shazeer & Stern 2018) as transformers implements it with its defaults (beta1 None: no
// first moment), and AdaLomo (lomo_optim/adalomo.py), which keeps the same statistics: a matrix a
// row vector (shape[:-1]) and a column vector (shape[:-2] + shape[-1:]), a vector a full second
// moment. Both upcast the gradient first: the statistics are fp32 whatever the parameters' dtype.
Bytes factored_second_moment_elements_bytes(const std::vector<StateTensor>& tensors) {
  Bytes total{0};
  for (const StateTensor& t : tensors) {
    const Shape& s = t.shape;
    const Count each = is_matrix(s) ? s.lead * (s.rows + s.cols) : s.elements_each();
    total += each * s.count * kFp32Bytes;
  }
  return total;
}

// CAME (Luo et al. 2023; came_pytorch/CAME.py): Adafactor's factored second moment, a full first
// moment exp_avg, and a factored confidence (exp_avg_res_row / _col); a vector keeps exp_avg and a
// full exp_avg_sq. The gradient is upcast to fp32 first, so every state is fp32.
Bytes came_bytes(const std::vector<StateTensor>& tensors) {
  Bytes total{0};
  for (const StateTensor& t : tensors) {
    const Shape& s = t.shape;
    const Count factored = is_matrix(s) ? s.lead * (s.rows + s.cols) * 2 : s.elements_each();
    total += (s.elements_each() + factored) * s.count * kFp32Bytes;
  }
  return total;
}

// How a low-rank optimizer keeps its projection (galore_bytes).
struct LowRankProjection {
  // Q-GaLore --proj_quant (q_galore_projector.py _quantize): uint8 codes, one per element whatever
  // proj_bits, with a scale and a zero in the projection's dtype per group of 256 (--proj_group_size).
  bool quantized = false;
  // APOLLO (random_projector.py GradientProjector): stable_randn of r × min(m, n), cast to the
  // gradient's dtype and stored ("we store the projection matrix instead of re-generation"), never
  // an SVD factor; and one scalar per matrix for its norm-growth limiter.
  bool random = false;
};

// GaLore (Zhao et al. 2024; galore_torch/galore_projector.py, proj_type "std"): a hidden matrix
// [m, n] keeps Adam's two moments of its projected gradient, [m, r] when m ≥ n (right projection)
// else [r, n] (r capped by the SVD at k = min(m, n)), and the projection. get_orthogonal_matrix
// returns Vh[:r, :] or U[:, :r] of torch.linalg.svd(full_matrices=False): for an fp32 gradient a
// view that keeps the whole k × k factor alive (k² fp32 elements, measured), for a 16-bit one a
// compact r × k copy (`.type(original_type)`). `element` is the gradient's dtype here (the
// recipe's state element: fp32 except under pure bf16). Every other tensor runs plain AdamW (HF
// Trainer's optim_target_modules: the blocks' linear layers). `eight_bit`: GaLoreAdamW8bit keeps
// the moments as bitsandbytes does. APOLLO (Zhu et al. 2024; apollo_torch apollo.py AdamW.step)
// keeps the same moments over a random projection.
Bytes galore_bytes(const std::vector<StateTensor>& tensors, std::int64_t rank, bool eight_bit, Bytes element,
                   LowRankProjection projection = {}) {
  constexpr std::int64_t kProjGroup = 256;
  std::vector<Shape> moments;
  Bytes projections{0};
  for (const StateTensor& t : tensors) {
    const Shape& s = t.shape;
    if (t.role != Role::kHiddenMatrix && t.role != Role::kQueryKey) {
      moments.push_back(s);
      continue;
    }
    const Count m = s.rows, n = s.cols, r = min(Count(rank), min(m, n));
    moments.push_back({max(m, n), r, s.count * s.lead});
    const bool svd_view = element == kFp32Bytes && !projection.quantized && !projection.random;
    const Count codes = (svd_view ? min(m, n) : r) * min(m, n) * s.count * s.lead;
    projections += projection.quantized ? codes * Bytes{1} + ceil_div(codes, Count(kProjGroup)) * element * 2
                                        : codes * element;
    if (projection.random) projections += s.count * s.lead * element;  // the limiter's scalar
  }
  if (eight_bit) return bnb_8bit_bytes(moments, kAdamStates) + projections;
  Count n = 0;
  for (const Shape& s : moments) n += s.elements();
  return n * element * kAdamStates + projections;
}

// Adam-mini (Zhang et al. 2024; adam_mini/adam_mini.py v1.1.1): a full first moment m and one
// second moment per block: a bias keeps a full v; q and k one per head (numel / (d·d/h)); the
// embeddings, the head, v, o and the MLP one per output row; any other tensor (the norms) one.
Bytes adam_mini_bytes(const std::vector<StateTensor>& tensors, const ModelSpec& m, Bytes element) {
  Count v = 0;
  const Count head_numel = Count(m.hidden_size) * m.hidden_size / m.num_attention_heads;
  for (const StateTensor& t : tensors) {
    const Shape& s = t.shape;
    switch (t.role) {
      case Role::kBias: v += s.elements(); break;
      case Role::kQueryKey: v += max(s.elements_each() / head_numel, Count(1)) * s.count; break;
      case Role::kNorm:
      case Role::kOtherMatrix: v += s.count; break;
      default: v += s.lead * s.rows * s.count; break;
    }
  }
  return (total_elements(tensors) + v) * element;
}

// Muon (Jordan 2024; KellerJordan/Muon muon.py MuonWithAuxAdam): the blocks' matrices keep one
// momentum buffer; the embeddings, the head and every vector run AdamW (exp_avg, exp_avg_sq).
Bytes muon_bytes(const std::vector<StateTensor>& tensors, Bytes element) {
  Count momentum = 0, adam = 0;
  for (const StateTensor& t : tensors) {
    const bool hidden = t.role == Role::kHiddenMatrix || t.role == Role::kQueryKey;
    (hidden ? momentum : adam) += t.shape.elements();
  }
  return (momentum + adam * kAdamStates) * element;
}

// Preconditioned optimizers: distributed Shampoo and SOAP.

// Σ over a dimension's blocks of d(d+1)/2, blocks of `limit` and a remainder (torch.split).
Count packed_triangles(Count dim, Count limit) {
  const Count whole = dim / limit, rest = dim - whole * limit;
  return whole * (limit * (limit + 1) / 2) + rest * (rest + 1) / 2;
}

// A tensor's dimensions as distributed Shampoo blocks them (shampoo_utils.py merge_small_dims with
// target dimensionality 1): size-1 dimensions squeezed, then, from the last, neighbours merged
// while their product stays within max_preconditioner_dim.
std::vector<Count> shampoo_dims(const Shape& s, Count limit) {
  std::vector<Count> dims;
  for (Count d : {s.lead, s.rows, s.cols}) {
    if (d.value() > 1) dims.push_back(d);
  }
  if (dims.empty()) return {Count(1)};
  std::vector<Count> merged{dims.back()};
  for (std::size_t i = dims.size() - 1; i-- > 0;) {
    if (merged.back() * dims[i] <= limit) merged.back() = merged.back() * dims[i];
    else merged.push_back(dims[i]);
  }
  return merged;
}

// Distributed Shampoo (Shi et al. 2023; facebookresearch/optimizers distributed_shampoo at f606606,
// defaults): every tensor is cut into blocks of at most max_preconditioner_dim (1024) per
// dimension; each block keeps its filtered gradient (betas[0] = 0.9; the parameter's dtype) and,
// per dimension d, a Kronecker factor and its inverse root, both fp32 and stored as packed upper
// triangles of d(d + 1)/2 (use_symmetric_packing). No grafting, no momentum by default.
Bytes shampoo_bytes(const std::vector<StateTensor>& tensors, std::int64_t max_dim, Bytes element) {
  constexpr std::int64_t kDefaultMaxDim = 1024;  // DistributedShampoo max_preconditioner_dim
  const Count limit = max_dim > 0 ? max_dim : kDefaultMaxDim;
  Count factors = 0;
  for (const StateTensor& t : tensors) {
    const std::vector<Count> dims = shampoo_dims(t.shape, limit);
    Count blocks_total = 1;
    for (Count d : dims) blocks_total = blocks_total * ceil_div(d, limit);
    for (Count d : dims) factors += packed_triangles(d, limit) * (blocks_total / ceil_div(d, limit)) * t.shape.count;
  }
  constexpr std::int64_t kFactorAndRoot = 2;
  return total_elements(tensors) * element + factors * kFactorAndRoot * kFp32Bytes;
}

// SOAP (Vyas et al. 2024; nikhilvyas/SOAP soap.py at a1e5535, defaults): Adam's two moments in
// the gradient's dtype, and for each dimension d ≤ max_precond_dim (10000) of a matrix the
// preconditioner GG and its eigenbasis Q, d × d fp32 each; vectors are not preconditioned
// (precondition_1d False) and neither is a longer dimension.
Bytes soap_bytes(const std::vector<StateTensor>& tensors, std::int64_t max_dim, Bytes element) {
  constexpr std::int64_t kDefaultMaxDim = 10000;  // SOAP max_precond_dim
  const Count limit = max_dim > 0 ? max_dim : kDefaultMaxDim;
  Count squares = 0;
  for (const StateTensor& t : tensors) {
    const Shape& s = t.shape;
    if (!is_matrix(s)) continue;
    if (s.lead.value() > 1 && s.lead <= limit) squares += s.lead * s.lead * s.count;
    for (Count d : {s.rows, s.cols}) {
      if (d <= limit) squares += d * d * s.count;
    }
  }
  constexpr std::int64_t kPreconditionerAndBasis = 2;
  return total_elements(tensors) * element * kAdamStates + squares * kPreconditionerAndBasis * kFp32Bytes;
}

}  // namespace

bool is_paged(Optimizer o) { return o == Optimizer::kPagedAdamW || o == Optimizer::kPagedAdamW8bit; }

// bitsandbytes/optim/optimizer.py (0.42 to today): get_state_buffer pages a state only when
// `p.numel() >= 1e5` ("> 1 MB"); a smaller tensor's states are torch.zeros_like on the device. The
// 8-bit optimizer's absmax1 / absmax2 (one fp32 per 256-element block) and its two quantisation
// maps are plain device tensors whatever the size; tensors under min_8bit_size (4096) keep fp32
// states (init_state).
constexpr std::int64_t kBnbMinPagedElements = 100'000;

Bytes paged_states_on_device(const Config& c, const ParameterCount& params) {
  const Optimizer o = c.training.optimizer;
  if (!is_paged(o)) return Bytes{0};
  Bytes total{0};
  bool any_8bit = false;
  for (const StateTensor& t : state_tensors(c, params)) {
    const Count n = t.shape.elements_each();
    const BnbState state = bnb_state(n, o == Optimizer::kPagedAdamW8bit);
    any_8bit = any_8bit || state.eight_bit;
    const Bytes buffer = n.value() >= kBnbMinPagedElements ? Bytes{0} : state.buffer;
    total += (buffer + state.scales) * t.shape.count * kAdamStates;
  }
  return any_8bit ? total + kBnbQuantMapBytes * kAdamStates : total;
}

bool updates_in_backward(const Training& t) {
  return t.optimizer_in_backward || t.optimizer == Optimizer::kLomo || t.optimizer == Optimizer::kAdaLomo;
}

bool states_follow_parameter_dtype(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
    case Optimizer::kSgdMomentum:
    case Optimizer::kLion:
    case Optimizer::kSophia:
    case Optimizer::kScheduleFreeAdamW: return true;
    default: return false;
  }
}

bool stores_gradients(const Training& t) {
  return t.optimizer != Optimizer::kLomo && t.optimizer != Optimizer::kAdaLomo && t.optimizer != Optimizer::kMezo;
}

bool forward_only(const Training& t) { return t.optimizer == Optimizer::kMezo; }

bool gradients_kept_between_steps(const Training& t) {
  return (t.grad_accum_steps > 1 || !t.zero_grad_set_to_none) && !updates_in_backward(t);
}

Bytes optimizer_state_bytes(const Config& c, const ParameterCount& params, Count trainable, Bytes element) {
  const Training& t = c.training;
  const std::vector<StateTensor> tensors = state_tensors(c, params);
  switch (t.optimizer) {
    case Optimizer::kPagedAdamW:  // bitsandbytes' 32-bit optimizers keep fp32 states (optim_bits 32: init_state)
      return trainable * kFp32Bytes * kAdamStates;
    case Optimizer::kAdamW:
    case Optimizer::kSophia:              // SophiaG (sophia.py): exp_avg and hessian
    case Optimizer::kScheduleFreeAdamW:   // adamw_schedulefree.py: z and exp_avg_sq (inner_momentum 0)
      return trainable * element * kAdamStates;
    case Optimizer::kSgdMomentum:
    case Optimizer::kLion:
      return trainable * element;  // momentum_buffer / exp_avg
    case Optimizer::kSgd:
    case Optimizer::kLomo:
    case Optimizer::kMezo: return Bytes{0};
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit: return bnb_8bit_bytes(shapes_of(tensors), kAdamStates);
    case Optimizer::kAdamW4bit: return torchao_4bit_bytes(tensors, element);
    case Optimizer::kLion8bit:
    case Optimizer::kSgdMomentum8bit: return bnb_8bit_bytes(shapes_of(tensors), 1);
    case Optimizer::kAdafactor:
    case Optimizer::kAdaLomo: return factored_second_moment_elements_bytes(tensors);
    case Optimizer::kCame: return came_bytes(tensors);
    case Optimizer::kGaloreAdamW: return galore_bytes(tensors, t.galore_rank, false, element, {t.galore_proj_quant});
    case Optimizer::kGaloreAdamW8bit: return galore_bytes(tensors, t.galore_rank, true, element, {t.galore_proj_quant});
    case Optimizer::kApollo: return galore_bytes(tensors, t.galore_rank, false, element, {false, true});
    case Optimizer::kAdamMini: return adam_mini_bytes(tensors, c.model, element);
    case Optimizer::kMuon: return muon_bytes(tensors, element);
    case Optimizer::kShampoo: return shampoo_bytes(tensors, t.max_preconditioner_dim, element);
    case Optimizer::kSoap: return soap_bytes(tensors, t.max_preconditioner_dim, element);
  }
  return Bytes{0};
}

Bytes seed_optimizer_state_bytes(Optimizer optimizer, Count p) {
  constexpr Bytes kSeedStateBytes{4};  // seeds/001 optim_dtype_bytes (FP32)
  switch (optimizer) {
    case Optimizer::kAdamW:
    case Optimizer::kPagedAdamW:
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit:
    case Optimizer::kAdamW4bit:
    case Optimizer::kGaloreAdamW:
    case Optimizer::kGaloreAdamW8bit:
    case Optimizer::kApollo:
    case Optimizer::kAdamMini:
    case Optimizer::kShampoo:
    case Optimizer::kSoap:
    case Optimizer::kCame:
    case Optimizer::kSophia:
    case Optimizer::kScheduleFreeAdamW:
      return p * kSeedStateBytes * kAdamStates;
    case Optimizer::kLion:
    case Optimizer::kSgd:  // the seeds' "sgd": 1 (a momentum buffer)
    case Optimizer::kSgdMomentum:
    case Optimizer::kMuon:
    case Optimizer::kLion8bit:
    case Optimizer::kSgdMomentum8bit:
      return p * kSeedStateBytes;
    case Optimizer::kLomo:
    case Optimizer::kMezo: return Bytes{0};
    case Optimizer::kAdafactor:
    case Optimizer::kAdaLomo:
      // The seeds' 0.1 states per parameter × 4 bytes = 0.4 bytes per parameter, rounded to the byte.
      return Bytes((p * kSeedStateBytes + Bytes{5}).exact() / 10);
  }
  return Bytes{0};
}

namespace {

// GaLore's step on one hidden matrix [m, n] (galore_projector.py get_orthogonal_matrix, every
// update_proj_gap steps): an fp32 copy of a 16-bit gradient, then torch.linalg.svd's U [m, k],
// S [k] and Vh [k, n] in fp32 (k = min(m, n), full_matrices False); project_back's full-size
// update in the gradient's dtype.
Bytes galore_temporary_bytes(const std::vector<StateTensor>& tensors, const PrecisionRecipe& r) {
  Bytes largest{0};
  for (const StateTensor& t : tensors) {
    if (!is_matrix(t.shape) || (t.role != Role::kHiddenMatrix && t.role != Role::kQueryKey)) continue;
    const Count m = t.shape.rows, n = t.shape.cols, k = min(m, n);
    const Bytes upcast = r.gradients == kFp32Bytes ? Bytes{0} : m * n * kFp32Bytes;
    const Bytes svd = upcast + (m * k + k + k * n) * kFp32Bytes;
    largest = max(largest, max(svd, m * n * r.gradients));
  }
  return largest;
}

// APOLLO's step on one hidden matrix [m, n] (apollo.py AdamW.step): the gradient scaled by the
// channel- or tensor-wise factor (p.grad * scaling_factor), divided by the norm-growth limiter and
// multiplied by sqrt(scale): two tensors of the matrix's size in the gradient's dtype at once;
// regenerating the projection (every update_proj_gap steps) reads the gradient as an fp32 copy
// first (get_orthogonal_matrix: module_params.data.float()).
Bytes apollo_temporary_bytes(const std::vector<StateTensor>& tensors, const PrecisionRecipe& r) {
  Bytes largest{0};
  for (const StateTensor& t : tensors) {
    if (!is_matrix(t.shape) || (t.role != Role::kHiddenMatrix && t.role != Role::kQueryKey)) continue;
    const Count mn = t.shape.rows * t.shape.cols;
    const Bytes upcast = r.gradients == kFp32Bytes ? Bytes{0} : mn * kFp32Bytes;
    largest = max(largest, max(upcast, mn * r.gradients * 2));
  }
  return largest;
}

// Muon's Newton–Schulz iteration on one matrix (muon.py zeropower_via_newtonschulz5): X in bf16
// [m, n], A = X Xᵀ and B = bA + cA² [k, k] (k = min(m, n)), and the next X: two m·n and two k·k
// bf16 tensors alive together, for the largest hidden matrix.
Bytes muon_temporary_bytes(const std::vector<StateTensor>& tensors) {
  Bytes largest{0};
  for (const StateTensor& t : tensors) {
    if (!is_matrix(t.shape) || (t.role != Role::kHiddenMatrix && t.role != Role::kQueryKey)) continue;
    const Count m = t.shape.rows, n = t.shape.cols, k = min(m, n);
    largest = max(largest, (m * n * 2 + k * k * 2) * kHalfBytes);
  }
  return largest;
}

}  // namespace

Bytes optimizer_step_temporary_bytes(const Config& c, const ParameterCount& params, Count sharded_trainable,
                                     Count largest_tensor, const PrecisionRecipe& r) {
  const Training& t = c.training;
  switch (t.optimizer) {
    case Optimizer::kAdamW:
      // torch.optim.AdamW's multi-tensor (foreach) path, PyTorch's default on CUDA, computes
      // sqrt(exp_avg_sq) for all parameters at once: one temporary the size of one state
      // (torch/optim/adamw.py, _multi_tensor_adamw); the per-parameter loop does the same one
      // tensor at a time. Fused, paged and 8-bit kernels update in place. Up to PyTorch 2.0 the
      // same function then wrote denom = torch._foreach_add(exp_avg_sq_sqrt, eps), a second
      // temporary alive with the first until addcdiv_ (2.1 made it _foreach_add_, in place).
      switch (resolved_optimizer_impl(c)) {
        case OptimizerImpl::kForeach: return sharded_trainable * r.optimizer_state;
        case OptimizerImpl::kForeachLegacy: return sharded_trainable * r.optimizer_state * 2;
        case OptimizerImpl::kForLoop: return largest_tensor * r.optimizer_state;
        case OptimizerImpl::kFused:
        case OptimizerImpl::kAuto: return Bytes{0};
      }
      return Bytes{0};
    case Optimizer::kScheduleFreeAdamW:
      // adamw_schedulefree.py (foreach): denom = _foreach_div(exp_avg_sq, ...) for all parameters.
      return sharded_trainable * r.optimizer_state;
    case Optimizer::kGaloreAdamW:
    case Optimizer::kGaloreAdamW8bit: return galore_temporary_bytes(state_tensors(c, params), r);
    case Optimizer::kApollo: return apollo_temporary_bytes(state_tensors(c, params), r);
    case Optimizer::kMuon: return muon_temporary_bytes(state_tensors(c, params));
    case Optimizer::kMezo:
      // MeZO's in-place perturbation and update (large_models/trainer.py, zo_perturb_parameters:
      // z = torch.normal(size=param.size(), dtype=param.dtype); param.data = param.data +
      // scaling * z * eps): z, the scaled noise and the new tensor beside the old, for the largest
      // parameter.
      return largest_tensor * r.weights * 3;
    default: return Bytes{0};
  }
}

Bytes fused_update_temporary_bytes(const Training& t, Count largest_tensor, const PrecisionRecipe& r) {
  // lomo_optim/lomo.py and adalomo.py fuse_update: grad_fp32 = p.grad.to(torch.float32), then
  // p.grad = None; the largest parameter's gradient and its fp32 copy exist together once.
  if (t.optimizer != Optimizer::kLomo && t.optimizer != Optimizer::kAdaLomo) return Bytes{0};
  return largest_tensor * (r.gradients + kFp32Bytes);
}

}  // namespace memfit
