// The planner natively: layouts decided per second and the 70B over 1–1024 GPUs latency
// (bench/plan_bench.mjs runs the same cases through the wasm module and prints the ratio).
#include <benchmark/benchmark.h>

#include "memfit/memfit.hpp"

namespace {

struct PlanCase {
  const char* config;
  const char* options;
};

// The same JSON as bench/plan_bench.mjs.
constexpr PlanCase kPlanCases[] = {
    {R"({"model":{"preset":"llama-3-70b"},"training":{"seq_len":8192,"goal":"pretrain"}})",
     R"({"gpus_min":1,"gpus_max":1024})"},
    {R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096}})", R"({"gpus_min":1,"gpus_max":64})"},
    {R"({"model":{"preset":"mixtral-8x7b"},"training":{"seq_len":4096,"goal":"pretrain"}})",
     R"({"gpus_min":8,"gpus_max":256})"},
};

// The planner alone, on parsed inputs; counters: layouts decided per second, layouts timed one by
// one per second, full estimates per plan.
void BM_Plan(benchmark::State& state) {
  const PlanCase& c = kPlanCases[state.range(0)];
  const memfit::Config config = memfit::parse_config_text(c.config).config;
  memfit::PlanOptions options;
  memfit::read_plan_options(*memfit::parse_json(c.options).value, options);
  memfit::PlanSearchCounts counts;
  for (auto _ : state) {
    const memfit::PlanResult r = memfit::plan(config, options);
    counts = r.counts;
    benchmark::DoNotOptimize(r.plans.size());
  }
  state.counters["layouts_per_s"] =
      benchmark::Counter(static_cast<double>(counts.layouts) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["timed_per_s"] =
      benchmark::Counter(static_cast<double>(counts.timed) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["estimates"] = static_cast<double>(counts.estimates);
  state.counters["quick"] = static_cast<double>(counts.quick_estimates);
}
BENCHMARK(BM_Plan)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

// What the page calls: JSON text in, JSON text out.
void BM_PlanJson(benchmark::State& state) {
  const PlanCase& c = kPlanCases[state.range(0)];
  for (auto _ : state) benchmark::DoNotOptimize(memfit::plan_json(c.config, c.options).dump());
}
BENCHMARK(BM_PlanJson)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

void BM_StepTime(benchmark::State& state) {
  const memfit::Config config =
      memfit::parse_config_text(R"({"model":{"preset":"llama-3-70b"},"parallel":{"num_gpus":64,"tensor":8,"pipeline":2,"zero_stage":1}})").config;
  const memfit::StepTimeModel model =
      memfit::step_time_model(config, memfit::count_parameters(config.model), memfit::StepTimeOptions{});
  const memfit::Layout layout = memfit::layout_of(config);
  for (auto _ : state) benchmark::DoNotOptimize(memfit::step_time(model, layout).step_time_s);
}
BENCHMARK(BM_StepTime);

}  // namespace
