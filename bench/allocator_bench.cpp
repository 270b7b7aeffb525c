// The caching-allocator model replaying a training step of a Llama-2-70B-shaped model: how many
// events per second, and how long one step takes. Run with --benchmark_repetitions for medians
// (the cases below ask for 15 repetitions and report mean, median and deviation).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "allocator.hpp"

namespace {

using memfit::AllocatorEvent;
using memfit::Bytes;

// Llama-2-70B: hidden 8192, MLP 28672, 64 query heads and 8 key/value heads of 128, vocabulary
// 32000, 80 layers; one sequence of 4096 tokens; bf16 weights and activations, fp32 Adam states.
struct StepShape {
  std::int64_t layers = 80;
  std::int64_t hidden = 8192;
  std::int64_t mlp = 28672;
  std::int64_t heads = 64;
  std::int64_t kv_width = 8 * 128;
  std::int64_t vocab = 32000;
  std::int64_t tokens = 4096;
};

class StepEvents {
 public:
  std::int64_t alloc(std::int64_t bytes) {
    events_.push_back(memfit::alloc_event(next_id_, Bytes{bytes}));
    return next_id_++;
  }
  void free(std::int64_t id) { events_.push_back(memfit::free_event(id)); }
  // A temporary: allocated and freed straight away (a kernel's workspace, an out-of-place op).
  void scratch(std::int64_t bytes) { free(alloc(bytes)); }
  std::vector<AllocatorEvent> take() { return std::move(events_); }

 private:
  std::vector<AllocatorEvent> events_;
  std::int64_t next_id_ = 0;
};

// The step as eager PyTorch allocates it: weights and Adam states live throughout; the forward
// saves ~14 tensors per layer; the backward frees them layer by layer as the weight gradients
// land; the optimizer makes a temporary per parameter; zero_grad(set_to_none) frees the gradients.
std::vector<AllocatorEvent> training_step_events(const StepShape& s) {
  constexpr std::int64_t kBf16 = 2, kFp32 = 4;
  const std::int64_t h = s.hidden, t = s.tokens;
  const std::vector<std::int64_t> layer_weights = {
      h * h, h * s.kv_width, h * s.kv_width, h * h,  // q, k, v, o
      h * s.mlp, h * s.mlp, s.mlp * h,               // gate, up, down
      h, h,                                          // the two RMSNorm weights
  };
  std::vector<std::int64_t> weights;  // element counts, in creation order
  weights.push_back(s.vocab * h);     // embedding
  for (std::int64_t l = 0; l < s.layers; ++l) {
    weights.insert(weights.end(), layer_weights.begin(), layer_weights.end());
  }
  weights.push_back(h);            // final norm
  weights.push_back(s.vocab * h);  // lm_head

  StepEvents e;
  for (const std::int64_t n : weights) e.alloc(n * kBf16);
  for (const std::int64_t n : weights) {  // Adam exp_avg and exp_avg_sq
    e.alloc(n * kFp32);
    e.alloc(n * kFp32);
  }

  const std::int64_t row = t * h * kBf16, kv = t * s.kv_width * kBf16, wide = t * s.mlp * kBf16;
  std::vector<std::vector<std::int64_t>> saved(static_cast<std::size_t>(s.layers));
  std::int64_t x = e.alloc(row);  // embedding output
  for (auto& layer : saved) {
    layer.push_back(e.alloc(row));             // input RMSNorm output
    layer.push_back(e.alloc(t * kFp32));       // its rstd
    layer.push_back(e.alloc(row));             // q
    layer.push_back(e.alloc(kv));              // k
    layer.push_back(e.alloc(kv));              // v
    e.scratch(row);                            // rotary q
    e.scratch(kv);                             // rotary k
    layer.push_back(e.alloc(row));             // attention output
    layer.push_back(e.alloc(s.heads * t * kFp32));  // flash-attention logsumexp
    const std::int64_t o = e.alloc(row);       // o projection
    layer.push_back(x);                        // the residual input, saved by the norm
    x = e.alloc(row);                          // residual sum
    e.free(o);
    layer.push_back(e.alloc(row));             // post-attention RMSNorm output
    layer.push_back(e.alloc(t * kFp32));       // its rstd
    layer.push_back(e.alloc(wide));            // gate
    layer.push_back(e.alloc(wide));            // up
    layer.push_back(e.alloc(wide));            // silu(gate)
    layer.push_back(e.alloc(wide));            // silu(gate) * up
    const std::int64_t down = e.alloc(row);
    const std::int64_t next = e.alloc(row);    // residual sum
    e.free(down);
    layer.push_back(x);
    x = next;
  }
  const std::int64_t normed = e.alloc(row);
  const std::int64_t logits = e.alloc(t * s.vocab * kBf16);
  const std::int64_t logits_fp32 = e.alloc(t * s.vocab * kFp32);  // upcast for the loss
  e.scratch(t * s.vocab * kFp32);                                  // log-softmax
  e.free(logits);

  // Backward: the loss gradient, then layer by layer from the top.
  std::int64_t grad = e.alloc(t * s.vocab * kFp32);
  e.free(logits_fp32);
  const std::int64_t grad_head = e.alloc(s.vocab * h * kBf16);
  const std::int64_t grad_x = e.alloc(row);
  e.free(grad);
  e.free(normed);
  e.free(x);
  grad = grad_x;
  std::vector<std::int64_t> grads = {grad_head};
  for (auto layer = saved.rbegin(); layer != saved.rend(); ++layer) {
    for (const std::int64_t n : layer_weights) grads.push_back(e.alloc(n * kBf16));
    const std::int64_t g_wide = e.alloc(wide);
    const std::int64_t g_wide2 = e.alloc(wide);
    e.scratch(wide);
    e.free(g_wide);
    e.free(g_wide2);
    e.scratch(row);
    e.scratch(kv);
    e.scratch(kv);
    const std::int64_t g_next = e.alloc(row);
    for (const std::int64_t id : *layer) e.free(id);
    e.free(grad);
    grad = g_next;
  }
  grads.push_back(e.alloc(s.vocab * h * kBf16));  // embedding gradient
  e.free(grad);

  // The optimizer step: one temporary per parameter (foreach Adam's denominators), then the
  // gradients are freed.
  for (const std::int64_t n : weights) e.scratch(n * kFp32);
  for (const std::int64_t id : grads) e.free(id);
  return e.take();
}

void replay_case(benchmark::State& state, const std::vector<AllocatorEvent>& events,
                 memfit::SegmentMode mode) {
  memfit::AllocatorOptions options;
  options.segment_mode = mode;
  memfit::ReplayResult last;
  for (auto _ : state) {
    last = memfit::replay(events, options);
    benchmark::DoNotOptimize(last.stats.peak_reserved_bytes);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(events.size()));
  state.counters["events"] = static_cast<double>(events.size());
  constexpr double kGiB = 1 << 30;
  state.counters["peak_alloc_GiB"] = static_cast<double>(last.stats.peak_allocated_bytes.value()) / kGiB;
  state.counters["peak_reserved_GiB"] = static_cast<double>(last.stats.peak_reserved_bytes.value()) / kGiB;
}

// The 70B step: range(0) layers (80 for Llama-2-70B; 43 gives a step of about 5,000 events),
// range(1) the segment mode (0 cudaMalloc, 1 expandable).
void BM_AllocatorReplayStep(benchmark::State& state) {
  StepShape shape;
  shape.layers = state.range(0);
  const std::vector<AllocatorEvent> events = training_step_events(shape);
  replay_case(state, events, static_cast<memfit::SegmentMode>(state.range(1)));
}
BENCHMARK(BM_AllocatorReplayStep)
    ->ArgNames({"layers", "expandable"})
    ->ArgsProduct({{80, 43}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->Repetitions(15)
    ->ReportAggregatesOnly(true);

}  // namespace
