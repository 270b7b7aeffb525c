// What a fine-tuning method trains and what it keeps frozen (core-internal).
#pragma once

#include <vector>

#include "memfit/config.hpp"
#include "memfit/parameters.hpp"
#include "memfit/recipes.hpp"
#include "memfit/units.hpp"

namespace memfit {

inline bool is_lora(const Config& c) { return c.training.finetune.method == FinetuneMethod::kLora; }

// Bytes per element of a LoRA base that stays unquantised: 16-bit, fp32, or the recipe's weights
// (training.lora_base_dtype; `implementation` resolved).
inline Bytes lora_base_bytes(const PrecisionRecipe& r, const Implementation& implementation) {
  switch (implementation.lora_base_dtype) {
    case LoraBaseDtype::kFp32: return kFp32Bytes;
    case LoraBaseDtype::kWeights: return r.weights;
    case LoraBaseDtype::kAuto:
    case LoraBaseDtype::kHalf: break;
  }
  return r.frozen_base;
}

// A trainable tensor shape, `count` times (cols 0: a vector).
struct Shape {
  Count rows, cols, count;
  Count elements_each() const { return cols.is_zero() ? rows : rows * cols; }
};

// The tensors the optimizer sees: every parameter for a full fine-tune; LoRA's A [r, in] and
// B [out, r] on each targeted linear layer otherwise (Hu et al. 2021).
std::vector<Shape> trainable_shapes(const ParameterCount& params, bool lora, const Finetune& finetune);

// LoRA's trainable parameters: r · (in + out) on every targeted linear layer; per tensor of a group.
Count lora_parameter_count(const ParameterCount& params, const Finetune& finetune);
Count lora_count_each(const TensorGroup& g, const Finetune& finetune);

// The frozen base of a LoRA run: 16-bit (or fp32) weights, int8, or QLoRA's NF4; per tensor of a group.
Bytes frozen_base_bytes(const ParameterCount& params, std::int64_t base_bits, Bytes unquantized);
Bytes frozen_bytes_each(const TensorGroup& g, std::int64_t base_bits, Bytes unquantized);

// The largest trainable tensor's elements (the per-parameter optimizer loop's temporary).
Count largest_trainable_tensor(const ParameterCount& params, bool lora, const Finetune& finetune);

}  // namespace memfit
