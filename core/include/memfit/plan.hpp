// The planner: every layout of a model on a card — data × tensor × pipeline (with virtual
// stages) × context × expert parallelism, ZeRO stage and flavour (full shard, shard-grad-op,
// hybrid), sequence parallelism, activation checkpointing, micro-batch and accumulation, offload,
// and each precision recipe the card supports — kept when it fits under the budget rule, ranked
// by estimated step time.
//
// The search is exact with respect to memory: every returned plan's numbers come from a full
// `estimate()`, and a layout is discarded only when an estimate (or memory's monotonicity in the
// micro-batch and the GPU count, from one) says it does not fit, or when a lower bound — what the
// step certainly holds at the end of forward or at the optimizer step — already exceeds the
// budget. Layouts are tried fastest first, so everything slower than the plans found is decided
// without being tried (tests/core/plan_test.cpp checks the result against brute force).
#pragma once

#include <cstdint>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/estimate.hpp"
#include "memfit/json.hpp"
#include "memfit/step_time.hpp"

namespace memfit {

enum class RankBy { kStepTime, kCost };

struct PlanOptions {
  std::int64_t gpus_min = 0;  // 0: the configuration's num_gpus (both 0: that count only)
  std::int64_t gpus_max = 0;
  // The global batch in tokens; 0: the configuration's (micro-batch × accumulation × data
  // parallel × sequence), or, when that is too small to spread over the GPUs, a default: 4 Mi
  // tokens for pre-training (Llama 3's first batch, Dubey et al. 2024 §3.4), 1 Mi for fine-tuning.
  std::int64_t global_batch_tokens = 0;
  int top = 10;
  RankBy rank_by = RankBy::kStepTime;
  bool keep_precision = false;  // search only the configuration's precision recipe
  StepTimeOptions step_time;
};

struct Plan {
  Config config;   // the full configuration (model, training, layout, card)
  Estimate estimate;
  StepTime time;
};

struct PlanSearchCounts {
  std::int64_t layouts = 0;          // layouts in the searched space, each decided
  std::int64_t timed = 0;            // layouts timed one by one (the rest decided in bulk by a bound)
  std::int64_t pruned_by_time = 0;   // never tried: no faster than a plan already found
  std::int64_t pruned_by_memory = 0; // tried and found not to fit (by a bound or an estimate)
  std::int64_t not_runnable = 0;     // within the memory bound, but no engine memfit exports to runs the layout
  std::int64_t quick_estimates = 0;  // estimates without the allocator replay (which only adds)
  std::int64_t estimates = 0;        // full estimates run
};

struct PlanResult {
  std::vector<Issue> errors;
  std::vector<std::string> notes;       // defaults taken, limits met
  std::int64_t global_batch_tokens = 0;
  std::vector<Plan> plans;              // the best layouts, fastest (or cheapest) first
  std::vector<Plan> best_per_gpu_count; // the fastest fitting layout of each GPU count searched
  PlanSearchCounts counts;
  bool ok() const { return errors.empty(); }
};

PlanResult plan(const Config& config, const PlanOptions& options);

// Every layout of `gpus` GPUs in the planner's search space, with no bound applied: what the
// tests check the search against by brute force.
std::vector<Layout> plan_space(const Config& config, const PlanOptions& options, std::int64_t gpus);

// Reads {"gpus_min", "gpus_max", "global_batch_tokens", "train_tokens", "top", "rank_by",
// "keep_precision", "tp_comm_overlap"}; unknown keys are errors.
std::vector<Issue> read_plan_options(const Json& json, PlanOptions& out);

// {"ok", "errors", "global_batch_tokens", "plans": [{"config", "peak_allocated_bytes",
// "device_total_bytes", "fits", "breakdown", "phases", "step_time_s", "tokens_per_s", "mfu",
// "cost_usd", "parts", ...}], "best_per_gpu_count": [{"num_gpus", "patch", "device_total_bytes",
// "step_time_s", "tokens_per_s", "mfu", "cost_usd", ...}], "search": {...}, "notes": [...]}.
Json plan_result_to_json(const PlanResult& r);
Json plan_to_json(const Plan& p);

}  // namespace memfit
