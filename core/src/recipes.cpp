#include "memfit/recipes.hpp"

#include <array>

namespace memfit {

namespace {

constexpr Bytes kNone{0};

// One row per recipe, in the Precision enum's order (checked below).
constexpr std::array<PrecisionRecipe, 10> kRecipes = {{
    {.id = Precision::kFp32,
     .name = "fp32",
     .description = "fp32 weights, gradients and optimizer states",
     .weights = kFp32Bytes, .master = kNone, .gradients = kFp32Bytes, .optimizer_state = kFp32Bytes,
     .compute = kFp32Bytes, .stream = kFp32Bytes, .autocast_copy = kNone, .gathered = kFp32Bytes,
     .frozen_base = kFp32Bytes, .autocast = false},
    // PyTorch AMP (torch.autocast; HF Trainer fp16=True / bf16=True): fp32 weights, gradients and
    // states; autocast caches a 16-bit copy of each matmul weight for the step.
    {.id = Precision::kFp16Mixed,
     .name = "fp16_mixed",
     .description = "PyTorch AMP: fp32 weights, gradients and states; fp16 autocast copies of the weights and "
                    "fp16 activations",
     .weights = kFp32Bytes, .master = kNone, .gradients = kFp32Bytes, .optimizer_state = kFp32Bytes,
     .compute = kHalfBytes, .stream = kFp32Bytes, .autocast_copy = kHalfBytes, .gathered = kHalfBytes,
     .frozen_base = kHalfBytes, .autocast = true},
    {.id = Precision::kBf16Mixed,
     .name = "bf16_mixed",
     .description = "PyTorch AMP: fp32 weights, gradients and states; bf16 autocast copies of the weights and "
                    "bf16 activations",
     .weights = kFp32Bytes, .master = kNone, .gradients = kFp32Bytes, .optimizer_state = kFp32Bytes,
     .compute = kHalfBytes, .stream = kFp32Bytes, .autocast_copy = kHalfBytes, .gathered = kHalfBytes,
     .frozen_base = kHalfBytes, .autocast = true},
    // Megatron-LM / DeepSpeed: 16-bit weights, fp32 main gradients and master weights.
    {.id = Precision::kFp16Master,
     .name = "fp16_master",
     .description = "Megatron / DeepSpeed: fp16 weights, fp32 main gradients, fp32 master weights, fp32 "
                    "optimizer states",
     .weights = kHalfBytes, .master = kFp32Bytes, .gradients = kFp32Bytes, .optimizer_state = kFp32Bytes,
     .compute = kHalfBytes, .stream = kHalfBytes, .autocast_copy = kNone, .gathered = kHalfBytes,
     .frozen_base = kHalfBytes, .autocast = false},
    {.id = Precision::kBf16Master,
     .name = "bf16_master",
     .description = "Megatron / DeepSpeed: bf16 weights, fp32 main gradients, fp32 master weights, fp32 "
                    "optimizer states",
     .weights = kHalfBytes, .master = kFp32Bytes, .gradients = kFp32Bytes, .optimizer_state = kFp32Bytes,
     .compute = kHalfBytes, .stream = kHalfBytes, .autocast_copy = kNone, .gathered = kHalfBytes,
     .frozen_base = kHalfBytes, .autocast = false},
    // Pure bf16 (torchtune, LitGPT bf16-true): the optimizer's states take the parameters' dtype.
    {.id = Precision::kBf16,
     .name = "bf16",
     .description = "pure bf16: weights, gradients and optimizer states all bf16 (no master copy)",
     .weights = kHalfBytes, .master = kNone, .gradients = kHalfBytes, .optimizer_state = kHalfBytes,
     .compute = kHalfBytes, .stream = kHalfBytes, .autocast_copy = kNone, .gathered = kHalfBytes,
     .frozen_base = kHalfBytes, .autocast = false},
    // Transformer Engine FP8: an FP8 copy of each matmul weight and its transpose (2 bytes).
    {.id = Precision::kFp8Mixed,
     .name = "fp8_mixed",
     .description = "Transformer Engine FP8: bf16 weights with FP8 copies for the matmuls, fp32 main gradients, "
                    "fp32 master weights and states",
     .weights = kHalfBytes, .master = kFp32Bytes, .gradients = kFp32Bytes, .optimizer_state = kFp32Bytes,
     .compute = kHalfBytes, .stream = kHalfBytes, .autocast_copy = kHalfBytes, .gathered = kHalfBytes,
     .frozen_base = kHalfBytes, .autocast = false},
    // The seeds' convention (seeds/001 estimate_memory, the 14P rule); estimated by its own path.
    {.id = Precision::kSeed14p,
     .name = "seed_14p",
     .description = "the seeds' convention: 2-byte parameters, 4-byte gradients, 8-byte Adam states, no master "
                    "copy",
     .weights = kHalfBytes, .master = kNone, .gradients = kFp32Bytes, .optimizer_state = kFp32Bytes,
     .compute = kHalfBytes, .stream = kHalfBytes, .autocast_copy = kNone, .gathered = kHalfBytes,
     .frozen_base = kHalfBytes, .autocast = false},
    // FSDP MixedPrecision(param_dtype=bf16) (accelerate, torchtitan): fp32 sharded weights,
    // gradients and states; each unit's weights gathered in bf16 for compute.
    {.id = Precision::kBf16Fsdp,
     .name = "bf16_fsdp",
     .description = "FSDP mixed precision (param_dtype bf16): fp32 weights, gradients and states kept sharded; "
                    "each unit's weights gathered in bf16 for compute; bf16 activations",
     .weights = kFp32Bytes, .master = kNone, .gradients = kFp32Bytes, .optimizer_state = kFp32Bytes,
     .compute = kHalfBytes, .stream = kHalfBytes, .autocast_copy = kNone, .gathered = kHalfBytes,
     .frozen_base = kHalfBytes, .autocast = false},
    // transformers ≥ 5 keeps a bf16 checkpoint in bf16 (from_pretrained dtype="auto"), and
    // Trainer bf16=True runs it under torch.autocast: bf16 weights, gradients and AdamW states
    // (they take the parameters' dtype), nothing to cast for the matmuls, but autocast's fp32 ops
    // (softmax, layer_norm, pow) still save fp32 tensors (docs/frameworks.md, finding 7).
    {.id = Precision::kBf16Autocast,
     .name = "bf16_autocast",
     .description = "bf16 weights, gradients and optimizer states under torch.autocast (transformers 5 default "
                    "loading with Trainer bf16=True)",
     .weights = kHalfBytes, .master = kNone, .gradients = kHalfBytes, .optimizer_state = kHalfBytes,
     .compute = kHalfBytes, .stream = kHalfBytes, .autocast_copy = kNone, .gathered = kHalfBytes,
     .frozen_base = kHalfBytes, .autocast = true},
}};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kRecipes.size(); ++i) {
    if (static_cast<std::size_t>(kRecipes[i].id) != i) return false;
  }
  return true;
}
static_assert(rows_in_enum_order(), "kRecipes rows must follow the Precision enum");

// bf16_autocast's weights, gradients and states after accelerate's FSDP preparation has cast them
// to fp32 (recipe_trained_in_fp32): what bf16_fsdp stores, with autocast on.
constexpr PrecisionRecipe kBf16AutocastUpcast = {
    .id = Precision::kBf16Autocast,
    .name = "bf16_autocast",
    .description = "bf16 weights loaded, cast to fp32 by accelerate's FSDP preparation (mixed precision on): fp32 "
                   "weights, gradients and optimizer states kept sharded, gathered in bf16, under torch.autocast",
    .weights = kFp32Bytes, .master = kNone, .gradients = kFp32Bytes, .optimizer_state = kFp32Bytes,
    .compute = kHalfBytes, .stream = kHalfBytes, .autocast_copy = kNone, .gathered = kHalfBytes,
    .frozen_base = kHalfBytes, .autocast = true};

}  // namespace

const PrecisionRecipe& recipe_for(Precision precision) { return kRecipes[static_cast<std::size_t>(precision)]; }

const PrecisionRecipe& recipe_trained_in_fp32(Precision precision) {
  // The other recipes accelerate's mixed precision runs under (fp16_mixed, bf16_mixed, bf16_fsdp)
  // already keep fp32 weights.
  return precision == Precision::kBf16Autocast ? kBf16AutocastUpcast : recipe_for(precision);
}

}  // namespace memfit
