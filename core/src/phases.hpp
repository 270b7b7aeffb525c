// The step's phases: forward, backward and the optimizer step, each at its high point
// (core-internal).
#pragma once

#include <vector>

#include "activations.hpp"
#include "memfit/estimate.hpp"
#include "placement.hpp"

namespace memfit {

std::vector<Phase> step_phases(const Config& config, const ParameterCount& params, const Placement& place,
                               const StaticBytes& statics, const ActivationModel& activations,
                               const LossModel& loss, Bytes weight_copies, const PrecisionRecipe& recipe);

}  // namespace memfit
