// The step replayed through the caching allocator model: what it reserves, and that its tensors
// add up to the step the phases describe.
#include <gtest/gtest.h>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

Estimate run(const std::string& json) {
  const ConfigParse parsed = parse_config_text(json);
  EXPECT_TRUE(parsed.ok());
  return estimate(parsed.config);
}

TEST(StepReplay, ReservedIsAtLeastAllocatedAndComesFromTheReplay) {
  for (const char* preset : {"gpt2", "llama-3-8b", "mixtral-8x7b", "qwen3-30b-a3b", "gemma-2-9b"}) {
    const Estimate e = run(std::string(R"({"model":{"preset":")") + preset + R"("},"training":{"seq_len":1024}})");
    EXPECT_TRUE(e.fragmentation_simulated) << preset;
    EXPECT_GE(e.peak_reserved_bytes, e.peak_allocated_bytes) << preset;
    EXPECT_LE(e.peak_reserved_low_bytes, e.peak_reserved_bytes) << preset;
    EXPECT_GE(e.peak_reserved_high_bytes, e.peak_reserved_bytes) << preset;
    EXPECT_GT(e.allocator_segments.value(), 0) << preset;
    // PyTorch's allocator on a training step: a few percent to a few tens of percent.
    EXPECT_LT(e.fragmentation, 0.5) << preset;
  }
}

TEST(StepReplay, ExpandableSegmentsReserveNoMore) {
  const std::string base = R"({"model":{"preset":"llama-3-8b"},"training":{"micro_batch_size":2,"seq_len":2048},)";
  const Estimate plain = run(base + R"("hardware":{"expandable_segments":false}})");
  const Estimate expandable = run(base + R"("hardware":{"expandable_segments":true}})");
  EXPECT_LE(expandable.peak_reserved_bytes, plain.peak_reserved_bytes);
  EXPECT_EQ(expandable.peak_allocated_bytes, plain.peak_allocated_bytes);
}

TEST(StepReplay, AStatedFactorSkipsTheReplay) {
  const Estimate e = run(R"({"hardware":{"fragmentation":0.1}})");
  EXPECT_FALSE(e.fragmentation_simulated);
  EXPECT_DOUBLE_EQ(e.fragmentation, 0.1);
}

TEST(StepReplay, AbsurdSizesFallBackToTheFixedFactor) {
  const Estimate e = run(R"({"model":{"preset":"llama-3-8b","num_hidden_layers":50000}})");
  EXPECT_FALSE(e.fragmentation_simulated);
  EXPECT_GT(e.peak_reserved_bytes, e.peak_allocated_bytes);
}

}  // namespace
}  // namespace memfit
