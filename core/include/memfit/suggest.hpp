// What to change when a run does not fit: single changes to the configuration, each estimated.
#pragma once

#include <string>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/estimate.hpp"

namespace memfit {

// A change is a patch (a partial configuration, see patch.hpp); the configuration it leads to is
// `apply_patch(config, patch)`, never stored beside it.
struct Suggestion {
  std::string title;    // "Full activation checkpointing"
  std::string detail;   // what it costs or changes besides memory
  Json patch;           // the configuration change, as a partial configuration
  Bytes device_total_bytes;
  Verdict verdict;
  Bytes saved_bytes;    // device_total_bytes now minus with the change (what it saves per GPU)
  // The change's cost in time (step_time.hpp): the step time with it, and the relative change in
  // time per token of the whole job (+0.33: a third slower; negative: faster). 0 and false when
  // the step-time model cannot time one side (a precision the card lacks).
  double step_time_s = 0;
  double time_per_token_change = 0;
  bool timed = false;
};

// Changes that lower the per-GPU memory, best first: those that make the run fit on the chosen
// GPU before those that do not, the least disruptive first. They respect the goal (no LoRA for
// pre-training) and the card (no bf16 recipe on a card without bf16, FP8 only where the card has
// it; a larger card is one that runs the run's precision).
std::vector<Suggestion> suggest(const Config& config);

}  // namespace memfit
