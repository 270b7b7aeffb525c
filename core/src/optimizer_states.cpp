#include "optimizer_states.hpp"

#include <vector>

#include "finetune.hpp"

namespace memfit {

namespace {

// bitsandbytes 8-bit optimizers (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
// Quantization"): tensors with fewer than min_8bit_size = 4096 elements keep 32-bit states; larger
// ones keep one byte per state element plus an fp32 absmax per 256-element block and state.
constexpr std::int64_t kBnbMin8bitElements = 4096;
constexpr std::int64_t kBnbBlockElements = 256;
constexpr std::int64_t kAdamStates = 2;  // exp_avg and exp_avg_sq

Bytes adam_8bit_bytes(const std::vector<Shape>& shapes) {
  Bytes total{0};
  for (const Shape& s : shapes) {
    const Count n = s.elements_each();
    const Bytes each = n.value() < kBnbMin8bitElements
                           ? n * kFp32Bytes * kAdamStates
                           : (n * kByte + ceil_div(n, kBnbBlockElements) * kFp32Bytes) * kAdamStates;
    total += each * s.count;
  }
  return total;
}

// Adafactor (Shazeer & Stern 2018), as Hugging Face transformers implements it with its defaults
// (beta1 = None: no first moment): a matrix keeps a row vector (shape[:-1]) and a column vector
// (shape[:-2] + shape[-1:]) of second-moment statistics; a vector keeps a full second moment.
// It upcasts the gradient first: its statistics are fp32 whatever the parameters' dtype.
Bytes adafactor_bytes(const std::vector<Shape>& shapes) {
  Bytes total{0};
  for (const Shape& s : shapes) {
    const Count each = s.cols.is_zero() ? s.rows : s.rows + s.cols;
    total += each * s.count * kFp32Bytes;
  }
  return total;
}

}  // namespace

bool is_paged(Optimizer o) { return o == Optimizer::kPagedAdamW || o == Optimizer::kPagedAdamW8bit; }

Bytes optimizer_state_bytes(Optimizer optimizer, const ParameterCount& params, Count trainable, bool lora,
                            const Finetune& finetune, Bytes state_element) {
  switch (optimizer) {
    case Optimizer::kAdamW:
    case Optimizer::kPagedAdamW:
      return trainable * state_element * kAdamStates;
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit:
      return adam_8bit_bytes(trainable_shapes(params, lora, finetune));
    case Optimizer::kAdafactor:
      return adafactor_bytes(trainable_shapes(params, lora, finetune));
    case Optimizer::kSgd:
      return Bytes{0};
    case Optimizer::kSgdMomentum:
    case Optimizer::kLion:
      return trainable * state_element;  // momentum_buffer / exp_avg
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
      return p * kSeedStateBytes * kAdamStates;
    case Optimizer::kLion:
    case Optimizer::kSgd:  // the seeds' "sgd": 1 (a momentum buffer)
    case Optimizer::kSgdMomentum:
      return p * kSeedStateBytes;
    case Optimizer::kAdafactor:
      // The seeds' 0.1 states per parameter × 4 bytes = 0.4 bytes per parameter, rounded to the byte.
      return Bytes((p * kSeedStateBytes + Bytes{5}).exact() / 10);
  }
  return Bytes{0};
}

Bytes optimizer_step_temporary_bytes(const Training& t, Count sharded_trainable, Count largest_tensor,
                                     const PrecisionRecipe& r) {
  // torch.optim.AdamW's multi-tensor (foreach) path, PyTorch's default on CUDA, computes
  // sqrt(exp_avg_sq) for all parameters at once: one temporary the size of one state
  // (torch/optim/adamw.py, _multi_tensor_adamw); the per-parameter loop does the same one tensor
  // at a time. Fused, paged and 8-bit kernels update in place.
  if (t.optimizer != Optimizer::kAdamW) return Bytes{0};
  switch (t.optimizer_impl) {
    case OptimizerImpl::kForeach: return sharded_trainable * r.optimizer_state;
    case OptimizerImpl::kForLoop: return largest_tensor * r.optimizer_state;
    case OptimizerImpl::kFused: return Bytes{0};
  }
  return Bytes{0};
}

}  // namespace memfit
