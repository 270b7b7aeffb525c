#include "optimizer_states.hpp"

#include <vector>

namespace memfit {

namespace {

// bitsandbytes 8-bit optimizers (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
// Quantization"): tensors with fewer than min_8bit_size = 4096 elements keep 32-bit states; larger
// ones keep one byte per state element plus an fp32 absmax per 256-element block and state.
constexpr std::int64_t kBnbMin8bitElements = 4096;
constexpr std::int64_t kBnbBlockElements = 256;
constexpr std::int64_t kFp32Bytes = 4;

struct Shape {
  Exact rows, cols, count;  // cols 0: a vector
  Exact elements_each() const { return cols.value() == 0 ? rows : rows * cols; }
};

// The tensors the optimizer sees: every parameter for a full fine-tune; LoRA's A [r, in] and
// B [out, r] matrices on each targeted layer otherwise.
std::vector<Shape> trainable_shapes(const ParameterCount& params, bool lora, const Finetune& f) {
  std::vector<Shape> shapes;
  for (const TensorGroup& g : params.groups) {
    if (!lora) {
      shapes.push_back({g.rows, g.cols, g.count});
    } else if (g.cols.value() > 0 && (g.lora_target & f.lora_targets)) {
      shapes.push_back({f.lora_rank, g.cols, g.count});
      shapes.push_back({g.rows, f.lora_rank, g.count});
    }
  }
  return shapes;
}

Exact adam_8bit_bytes(const std::vector<Shape>& shapes) {
  Exact total = 0;
  for (const Shape& s : shapes) {
    const Exact n = s.elements_each();
    const Exact each = n.value() < kBnbMin8bitElements ? n * 2 * kFp32Bytes
                                                        : n * 2 + ceil_div(n, kBnbBlockElements) * 2 * kFp32Bytes;
    total += each * s.count;
  }
  return total;
}

// Adafactor (Shazeer & Stern 2018), as Hugging Face transformers implements it with its defaults
// (beta1 = None: no first moment): a matrix keeps a row vector (shape[:-1]) and a column vector
// (shape[:-2] + shape[-1:]) of second-moment statistics; a vector keeps a full second moment.
Exact adafactor_bytes(const std::vector<Shape>& shapes, std::int64_t element_bytes) {
  Exact total = 0;
  for (const Shape& s : shapes) {
    const Exact each = s.cols.value() == 0 ? s.rows : s.rows + s.cols;
    total += each * s.count * element_bytes;
  }
  return total;
}

}  // namespace

bool is_paged(Optimizer o) { return o == Optimizer::kPagedAdamW || o == Optimizer::kPagedAdamW8bit; }

Exact optimizer_state_bytes(Optimizer optimizer, const ParameterCount& params, Exact trainable_count, bool lora,
                            const Finetune& finetune, std::int64_t state_element_bytes) {
  switch (optimizer) {
    case Optimizer::kAdamW:
    case Optimizer::kPagedAdamW:
      return trainable_count * 2 * state_element_bytes;  // exp_avg and exp_avg_sq
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit:
      return adam_8bit_bytes(trainable_shapes(params, lora, finetune));
    case Optimizer::kAdafactor:
      // Hugging Face's Adafactor upcasts the gradient first: its statistics are fp32 whatever
      // the parameters' dtype.
      return adafactor_bytes(trainable_shapes(params, lora, finetune), 4);
    case Optimizer::kSgd:
      return 0;
    case Optimizer::kSgdMomentum:
    case Optimizer::kLion:
      return trainable_count * state_element_bytes;  // momentum_buffer / exp_avg
  }
  return 0;
}

Exact seed_optimizer_state_bytes(Optimizer optimizer, Exact p) {
  constexpr std::int64_t kSeedStateBytes = 4;  // seeds/001 optim_dtype_bytes (FP32)
  switch (optimizer) {
    case Optimizer::kAdamW:
    case Optimizer::kPagedAdamW:
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit:
      return p * 2 * kSeedStateBytes;
    case Optimizer::kLion:
    case Optimizer::kSgd:  // the seeds' "sgd": 1 (a momentum buffer)
    case Optimizer::kSgdMomentum:
      return p * kSeedStateBytes;
    case Optimizer::kAdafactor:
      // The seeds' 0.1 states per parameter × 4 bytes = 0.4 bytes per parameter, rounded to the byte.
      return (p * 4 + 5) / 10;
  }
  return 0;
}

Exact largest_trainable_tensor(const ParameterCount& params, bool lora, const Finetune& f) {
  Exact largest = 0;
  for (const Shape& s : trainable_shapes(params, lora, f)) largest = max(largest, s.elements_each());
  return largest;
}

Exact optimizer_step_temporary_bytes(const Config& c, Exact sharded_trainable, Exact largest_tensor,
                                     const Recipe& r) {
  // torch.optim.AdamW's multi-tensor (foreach) path, PyTorch's default on CUDA, computes
  // sqrt(exp_avg_sq) for all parameters at once: one temporary the size of one state
  // (torch/optim/adamw.py, _multi_tensor_adamw); the per-parameter loop does the same one tensor
  // at a time. Fused, paged and 8-bit kernels update in place.
  if (c.training.optimizer != Optimizer::kAdamW) return 0;
  switch (c.training.optimizer_impl) {
    case OptimizerImpl::kForeach: return sharded_trainable * r.state_element_bytes;
    case OptimizerImpl::kForLoop: return largest_tensor * r.state_element_bytes;
    case OptimizerImpl::kFused: return 0;
  }
  return 0;
}

}  // namespace memfit
