// From the allocated peak to what the card sees: the caching allocator's reserve, the CUDA
// context, where published runs landed, and the verdict on each GPU (core-internal).
#pragma once

#include "memfit/estimate.hpp"

namespace memfit {

// `bytes` × factor, rounded up; an overflowed or too large result keeps the overflow flag.
Bytes scale(Bytes bytes, double factor);

struct StepSimulation;

// The NCCL communicators one rank joins (one per parallel group of two or more ranks it uses:
// data, tensor, pipeline, context, expert; hybrid sharding's two data groups) and their buffers.
struct Communicators {
  int count = 0;
  Bytes bytes;
  const char* groups = "one per parallel group";  // which groups they serve, for the note
};
Communicators nccl_communicators(const Config& config);

// Peak reserved (point and range) from the allocated peak: the user's factor, else the replayed
// allocator's (never past `capacity`, what the card hands out, where the tensors fit it), else a
// fixed one.
void allocator_reserve(const Config& config, const StepSimulation& simulation, Bytes capacity, Estimate& e);

// The measured band, the device totals and the verdict on the chosen GPU and on every GPU.
void fit_on_gpus(const Config& config, const Gpu& gpu, Estimate& e);

// The verdict on one card: the estimate against the card, the top of the measured band against
// the budget share of it.
Fit make_fit(const Gpu& gpu, Bytes need, Bytes need_high, double budget_fraction);

}  // namespace memfit
