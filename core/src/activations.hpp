// What autograd saves for backward, term by term (core-internal).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/estimate.hpp"
#include "memfit/exact.hpp"
#include "memfit/parameters.hpp"

namespace memfit {

struct ActivationModel {
  Exact saved_bytes;             // embedding + blocks + final norm, end of forward, busiest stage
  Exact embedding_saved_bytes;   // what the embedding keeps (freed last in backward)
  std::vector<NamedBytes> layer_terms;  // its terms
  Exact logits_forward_bytes;    // head + loss high point during forward
  Exact logits_backward_bytes;   // head + loss high point at the start of backward
  Exact logits_grad_bytes;       // the logits' gradient (fp32, plus its cast) alive through the head's backward
  Exact head_input_bytes;        // the head's saved input (and the size of the gradient it returns)
  Exact logits_peak_bytes;       // the larger of the two (breakdown.logits_and_loss)
  Exact layer_backward_working_bytes;  // one layer's backward temporaries (+ recompute)
  std::vector<std::string> notes;
};

ActivationModel activation_model(const Config& config, const ParameterCount& params);

// The seeds' formula (seeds/000, seeds/001): L·B·T·(34d + 5hT) bytes, or B·T·(34d + 5hT) with
// full checkpointing. 34 and 5 include the 2 bytes per fp16 element (Korthikanti et al. 2022).
Exact seed_activation_bytes(const Config& config);

// Autocast's cached 16-bit copies (AMP) or Transformer Engine's FP8 copies of the matmul weights.
Exact weight_copy_bytes(const Config& config, const ParameterCount& params);

}  // namespace memfit
