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
};

// Changes that lower the per-GPU memory, best first: those that make the run fit on the chosen
// GPU before those that do not, the least disruptive first.
std::vector<Suggestion> suggest(const Config& config);

}  // namespace memfit
