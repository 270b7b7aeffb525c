// The seeds' convention (precision: seed_14p), estimated by their own rules (core-internal).
#pragma once

#include "memfit/estimate.hpp"

namespace memfit {

// P·(2 + 4 + optimizer) bytes, activations L·B·T·(34d + 5hT), a 512 MiB overhead, no logits, no
// master copy, no phases: the total is a plain sum (seeds/001 estimate_memory, the 14P rule).
void estimate_seed_convention(const Config& config, Estimate& e);

}  // namespace memfit
