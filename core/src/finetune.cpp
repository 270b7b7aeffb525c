#include "finetune.hpp"

namespace memfit {

namespace {

// QLoRA's NF4 storage (Dettmers et al. 2023; bitsandbytes Params4bit with double quantisation):
// half a byte per weight, an 8-bit absmax per 64-weight block, an fp32 second-level absmax per
// 256 blocks, and per tensor a 16-entry fp32 code table plus an fp32 offset.
constexpr std::int64_t kNf4BlockElements = 64;
constexpr std::int64_t kNf4SecondLevelBlocks = 256;
constexpr Bytes kNf4PerTensorBytes{16 * 4 + 4};

// LLM.int8() (Dettmers et al. 2022): one byte per weight and an fp32 scale per output row.
Bytes int8_bytes(const TensorGroup& g) { return g.elements_each() * kByte + g.rows * kFp32Bytes; }

Bytes nf4_bytes(const TensorGroup& g) {
  const Count n = g.elements_each();
  const Count blocks = ceil_div(n, kNf4BlockElements);
  return ceil_div(n, 2) * kByte + blocks * kByte + ceil_div(blocks, kNf4SecondLevelBlocks) * kFp32Bytes +
         kNf4PerTensorBytes;
}

}  // namespace

std::vector<Shape> trainable_shapes(const ParameterCount& params, bool lora, const Finetune& f) {
  std::vector<Shape> shapes;
  for (const TensorGroup& g : params.groups) {
    if (!lora) {
      shapes.push_back({g.rows, g.cols, g.count});
    } else if (!g.cols.is_zero() && (g.lora_target & f.lora_targets)) {
      shapes.push_back({f.lora_rank, g.cols, g.count});
      shapes.push_back({g.rows, f.lora_rank, g.count});
    }
  }
  return shapes;
}

Count lora_count_each(const TensorGroup& g, const Finetune& f) {
  if (g.cols.is_zero() || !(g.lora_target & f.lora_targets)) return 0;
  return f.lora_rank * (g.rows + g.cols);
}

Count lora_parameter_count(const ParameterCount& params, const Finetune& f) {
  Count total = 0;
  for (const TensorGroup& g : params.groups) total += lora_count_each(g, f) * g.count;
  return total;
}

// Only the linear layers inside the blocks are quantised; embeddings, norms and the head stay in
// 16 bit, as bitsandbytes / transformers leave them.
Bytes frozen_bytes_each(const TensorGroup& g, std::int64_t base_bits, Bytes unquantized) {
  if (!g.linear || base_bits == 16) return g.elements_each() * unquantized;
  return base_bits == 8 ? int8_bytes(g) : nf4_bytes(g);
}

Bytes frozen_base_bytes(const ParameterCount& params, std::int64_t base_bits, Bytes unquantized) {
  Bytes total{0};
  for (const TensorGroup& g : params.groups) total += frozen_bytes_each(g, base_bits, unquantized) * g.count;
  return total;
}

Count largest_trainable_tensor(const ParameterCount& params, bool lora, const Finetune& f) {
  Count largest = 0;
  for (const Shape& s : trainable_shapes(params, lora, f)) largest = max(largest, s.elements_each());
  return largest;
}

}  // namespace memfit
