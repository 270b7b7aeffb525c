// Precision recipes: the bytes of every kind of tensor a training step holds, one row per
// `training.precision`. Every byte count in the core that depends on the precision is read from
// this table (recipes.cpp); nothing else names a dtype size for a recipe.
#pragma once

#include "memfit/config.hpp"
#include "memfit/units.hpp"

namespace memfit {

struct PrecisionRecipe {
  Precision id;
  const char* name;
  const char* description;
  Bytes weights;          // per parameter, as the model stores it
  Bytes master;           // per trainable parameter: an fp32 master copy (0: none)
  Bytes gradients;        // per trainable parameter
  Bytes optimizer_state;  // one element of a 32-bit optimizer's state (pure bf16 keeps 2)
  Bytes compute;          // an element of a matmul input or output: what activations are saved in
  Bytes stream;           // an element of the residual stream (AMP: fp32, from the fp32 embedding)
  Bytes autocast_copy;    // per matmul weight: autocast's cached 16-bit copy / TE's FP8 copies (0: none)
  Bytes gathered;         // per parameter of a unit ZeRO-3 / FSDP gathers for compute
  Bytes frozen_base;      // per frozen parameter of a LoRA base loaded in 16 bit (or fp32)
  bool autocast;          // torch.autocast: softmax and loss run in fp32 whatever the code asks
};

const PrecisionRecipe& recipe_for(Precision precision);
// The recipe with its trained 16-bit weights, gradients and states held in fp32 instead, as
// accelerate's FSDP preparation leaves them under mixed precision (recipe_of, finetune.hpp).
const PrecisionRecipe& recipe_trained_in_fp32(Precision precision);

}  // namespace memfit
