// Solvers: each answer fits and the next step does not (checked here with estimate() itself), and
// the binding term is the one that crosses.
#include <gtest/gtest.h>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

Config config(const char* json) {
  const ConfigParse p = parse_config_text(json);
  EXPECT_TRUE(p.ok());
  return p.config;
}

bool fits(Config c) {
  const Estimate e = estimate(c);
  return e.ok() && e.fit.verdict == Verdict::kFits;
}

TEST(Solve, LargestMicroBatchIsExact) {
  const Config c = config(R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,"checkpointing":"full","precision":"bf16_master"},"parallel":{"num_gpus":8,"zero_stage":3}})");
  const Solution s = solve(c, SolveTarget::kMaxMicroBatch);
  ASSERT_TRUE(s.ok() && s.found);
  Config at = c, past = c;
  at.training.micro_batch_size = s.value;
  past.training.micro_batch_size = s.value + 1;
  EXPECT_TRUE(fits(at));
  EXPECT_FALSE(fits(past));
  EXPECT_EQ(s.next_value, s.value + 1);
  // Past the answer it is the batch's own tensors that grow: the logits of a 128k vocabulary.
  EXPECT_TRUE(s.binding == "logits_and_loss" || s.binding == "activations") << s.binding;
  EXPECT_LT(s.estimates, 25);
}

TEST(Solve, LongestSequenceStopsAtLearnedPositions) {
  // GPT-2 on an H100 is limited by its 1024 learned positions, not by memory.
  const Solution s = solve(config(R"({"model":{"preset":"gpt2"},"training":{"micro_batch_size":1}})"), SolveTarget::kMaxSeqLen);
  ASSERT_TRUE(s.found);
  EXPECT_EQ(s.value, 1024);
  EXPECT_EQ(s.binding.rfind("training.seq_len", 0), 0u) << s.binding;
}

TEST(Solve, FewestGpusIsExactWithinItsFamily) {
  const Config c = config(R"({"model":{"preset":"llama-3-70b"},"training":{"seq_len":8192,"checkpointing":"full","precision":"bf16_master"}})");
  const Solution s = solve(c, SolveTarget::kMinGpus, GpuFamily::kZero3);
  ASSERT_TRUE(s.found);
  Config at = c, fewer = c;
  at.parallel.zero_stage = fewer.parallel.zero_stage = 3;
  at.parallel.num_gpus = s.value;
  fewer.parallel.num_gpus = s.value - 1;
  EXPECT_TRUE(fits(at));
  EXPECT_FALSE(fits(fewer));
  // The binding term is the largest thing each GPU would hold with one GPU fewer.
  const Estimate e = estimate(fewer);
  const std::pair<const char*, Bytes> terms[] = {
      {"parameters", e.breakdown.parameters},       {"gradients", e.breakdown.gradients},
      {"optimizer_states", e.breakdown.optimizer_states}, {"master_weights", e.breakdown.master_weights},
      {"activations", e.breakdown.activations},     {"logits_and_loss", e.breakdown.logits_and_loss},
      {"weight_copies", e.breakdown.weight_copies}};
  const auto* largest = &terms[0];
  for (const auto& t : terms) {
    if (t.second > largest->second) largest = &t;
  }
  EXPECT_EQ(s.binding, largest->first);
  // Tensor parallelism alone: the smallest degree that divides the 64 heads and fits.
  const Solution t = solve(c, SolveTarget::kMinGpus, GpuFamily::kTensor);
  ASSERT_TRUE(t.found);
  EXPECT_EQ(64 % t.value, 0);
}

TEST(Solve, NothingFitsNamesWhatIsTooLarge) {
  const Solution s = solve(config(R"({"model":{"preset":"llama-3-70b"},"hardware":{"gpu":"t4-16gb"},"training":{"precision":"fp16_mixed"}})"),
                           SolveTarget::kMaxMicroBatch);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s.found);
  EXPECT_EQ(s.binding, "optimizer_states");
}

TEST(Solve, LargestModelByLayersAndByWidth) {
  const Config c = config(R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,"checkpointing":"full"},"hardware":{"gpu":"a100-80gb"}})");
  const Solution layers = solve(c, SolveTarget::kMaxLayers);
  ASSERT_TRUE(layers.found);
  Config past = c;
  past.model.num_hidden_layers = layers.value + 1;
  EXPECT_FALSE(fits(past));
  const Solution width = solve(c, SolveTarget::kMaxWidth);
  ASSERT_TRUE(width.found);
  EXPECT_EQ(width.value % 128, 0);  // whole heads of 128
  EXPECT_EQ(width.config.model.hidden_size, width.value);
  // A vision tower's projector, written with the language model's width (as the importer reads
  // Qwen-VL's out_hidden_size), follows the new width.
  Config vl = c;
  vl.model.vision_type = VisionTower::kQwen25Vl;
  vl.model.vision_out_hidden_size = vl.model.hidden_size;
  const Solution wide = solve(vl, SolveTarget::kMaxWidth);
  ASSERT_TRUE(wide.found);
  EXPECT_EQ(wide.config.model.vision_out_hidden_size, wide.config.model.hidden_size);
}

TEST(Solve, TargetsAndFamiliesBySpelling) {
  SolveTarget t;
  GpuFamily f;
  EXPECT_TRUE(parse_solve_target("max_micro_batch", t));
  EXPECT_EQ(t, SolveTarget::kMaxMicroBatch);
  EXPECT_TRUE(parse_gpu_family("as-configured", f));
  EXPECT_EQ(f, GpuFamily::kAsConfigured);
  EXPECT_FALSE(parse_solve_target("max-gpus", t));
  const Json bad = solve_json("{}", "max-gpus", "");
  EXPECT_FALSE(bad.find("ok")->as_bool());
  EXPECT_EQ(bad.find("errors")->items()[0].find("field")->as_string(), "(target)");
}

}  // namespace
}  // namespace memfit
