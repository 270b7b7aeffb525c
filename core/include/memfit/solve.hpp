// Solvers: the largest micro-batch, the longest sequence, the fewest GPUs, the largest model that
// fit the card under the budget rule. Each is exact: a search over full estimates (memory grows
// with the batch, the sequence, the layers and the width, and shrinks as sharding spreads it),
// never a division, and each names the term that binds: the breakdown term that crosses the
// limit, and the step phase where the peak is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/estimate.hpp"
#include "memfit/json.hpp"

namespace memfit {

enum class SolveTarget { kMaxMicroBatch, kMaxSeqLen, kMinGpus, kMaxLayers, kMaxWidth };

// Which layouts min-gpus may use: data parallelism with ZeRO-3 / FSDP full sharding (the
// default), with ZeRO-1 or -2, or with the configuration's own stage (each keeping the
// configured tensor × pipeline × context block); or tensor or pipeline parallelism alone.
enum class GpuFamily { kZero3, kZero2, kZero1, kAsConfigured, kTensor, kPipeline };

struct Solution {
  std::vector<Issue> errors;   // the configuration or the request is invalid
  bool found = false;          // false: nothing in range fits (value is then 0)
  std::int64_t value = 0;      // the answer: micro-batch, tokens, GPUs, layers or hidden size
  Config config;               // the configuration that achieves it (or the smallest tried)
  Estimate estimate;           // its full estimate
  // What binds: the breakdown term that grows most between the answer and the next step (for
  // min-gpus: the largest term one GPU fewer would hold), and the phase of the peak there;
  // "model.max_position_embeddings" and the like when a validation rule, not memory, stops it.
  std::string binding;
  std::string binding_phase;
  std::int64_t next_value = 0;     // the next value tried past the answer (0: none)
  Bytes next_device_total_bytes;   // what it would need
  Bytes next_need_high_bytes;      // and the top of its measured band (what "fits" holds to the budget)
  // min-gpus: the answer's configuration on half as many GPUs (0: not tried) and what it needs.
  // Sharding is saturated when that is under 2 % more than the answer's need: the count only
  // chases what every GPU keeps whole (activations, logits), creeping under the budget.
  std::int64_t half_value = 0;
  Bytes half_device_total_bytes;
  bool sharding_saturated = false;
  int estimates = 0;               // full estimates the search ran
  bool ok() const { return errors.empty(); }
};

Solution solve(const Config& config, SolveTarget target, GpuFamily family = GpuFamily::kZero3);

const char* to_string(SolveTarget target);
const char* to_string(GpuFamily family);
// "max-micro-batch" / "max_micro_batch" → the target; false when unknown.
bool parse_solve_target(std::string_view text, SolveTarget& out);
bool parse_gpu_family(std::string_view text, GpuFamily& out);

// {"ok", "errors", "target", "found", "value", "config", "binding", "binding_phase",
//  "peak_allocated_bytes", "device_total_bytes", "budget_bytes", "next": {...}, "estimates"}.
Json solution_to_json(const Solution& s, SolveTarget target);

}  // namespace memfit
