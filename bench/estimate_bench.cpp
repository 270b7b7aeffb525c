// Native benchmarks; bench/wasm_bench.mjs runs the same cases through the wasm module.
#include <benchmark/benchmark.h>

#include "memfit/memfit.hpp"

namespace {

constexpr const char* kCases[] = {
    R"({"model":{"preset":"seed-toy-70m"},"training":{"precision":"seed_14p","micro_batch_size":4,"seq_len":512}})",
    R"({"model":{"preset":"llama-3-8b"},"training":{"micro_batch_size":4,"seq_len":8192}})",
    R"({"model":{"preset":"deepseek-v3"},"training":{"checkpointing":"full"},"parallel":{"num_gpus":2048,"tensor":8,"pipeline":16,"zero_stage":1}})",
    R"({"model":{"preset":"llama-2-7b"},"training":{"optimizer":"adamw_8bit","finetune":{"method":"lora","base_bits":4}}})",
};

// The whole path a page update takes: parse JSON, validate, estimate, write the result JSON.
void BM_EstimateJson(benchmark::State& state) {
  const char* config = kCases[state.range(0)];
  for (auto _ : state) benchmark::DoNotOptimize(memfit::estimate_json(config).dump());
}
BENCHMARK(BM_EstimateJson)->DenseRange(0, 3);

// The estimate alone on a parsed configuration.
void BM_Estimate(benchmark::State& state) {
  const memfit::Config config = memfit::parse_config_text(kCases[state.range(0)]).config;
  for (auto _ : state) benchmark::DoNotOptimize(memfit::estimate(config).peak_allocated_bytes);
}
BENCHMARK(BM_Estimate)->DenseRange(0, 3);

void BM_ScalingTable(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(memfit::scaling_table_json(kCases[1]).dump());
}
BENCHMARK(BM_ScalingTable);

void BM_Presets(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(memfit::presets_json().dump());
}
BENCHMARK(BM_Presets);

}  // namespace
