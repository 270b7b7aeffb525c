// Reproducers of problems found by trying memfit as a user would (issue: "Reliable under any
// input"), each kept as a test.
#include <gtest/gtest.h>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

Estimate run(const std::string& json) {
  const ConfigParse parsed = parse_config_text(json);
  EXPECT_TRUE(parsed.ok()) << (parsed.errors.empty() ? "" : parsed.errors[0].field + " " + parsed.errors[0].message);
  return estimate(parsed.config);
}

std::vector<Issue> errors_of(const std::string& json) { return parse_config_text(json).errors; }

TEST(Reliability, SeedConventionLoraChargesGradientsAndStatesForAdaptersOnly) {
  // seeds/002: the base needs 2P bytes; gradients (4) and Adam states (8) apply to the adapters.
  const std::string base = R"({"model":{"preset":"seed-llama-7b"},"training":{"precision":"seed_14p","finetune":)";
  const Estimate full = run(base + R"({"method":"full"}}})");
  const Estimate lora = run(base + R"({"method":"lora","lora_rank":16,"lora_targets":["q","v"]}}})");
  const std::int64_t adapters = lora.trainable_parameter_count.value();
  EXPECT_EQ(adapters, 32LL * 16 * (4096 + 4096) * 2);  // 32 layers × r · (in + out) × {q, v}
  EXPECT_EQ(lora.breakdown.gradients.value(), 4 * adapters);
  EXPECT_EQ(lora.breakdown.optimizer_states.value(), 8 * adapters);
  EXPECT_EQ(lora.breakdown.parameters.value(), 2 * (7'000'000'000 + adapters));
  EXPECT_LT(lora.device_total_bytes, full.device_total_bytes);
}

TEST(Reliability, NominalCountScalesEveryWeightTerm) {
  // Doubling the nominal count doubles the weights, autocast's copies and a LoRA base alike.
  const auto with = [](std::int64_t nominal, const char* finetune) {
    return run(std::string(R"({"model":{"preset":"llama-2-7b","nominal_parameter_count":)") + std::to_string(nominal) +
               R"(},"training":{"precision":"bf16_mixed","finetune":)" + finetune + "}}");
  };
  const std::int64_t counted = 6'738'415'616;
  const Estimate one = with(counted, R"({"method":"full"})"), two = with(2 * counted, R"({"method":"full"})");
  EXPECT_EQ(two.breakdown.parameters.value(), 2 * one.breakdown.parameters.value());
  EXPECT_NEAR(static_cast<double>(two.breakdown.weight_copies.value()),
              2.0 * static_cast<double>(one.breakdown.weight_copies.value()), 2.0);
  const Estimate lora1 = with(counted, R"({"method":"lora"})"), lora2 = with(2 * counted, R"({"method":"lora"})");
  const std::int64_t adapters = lora1.trainable_parameter_count.value() * 4;  // fp32 adapters under AMP
  EXPECT_NEAR(static_cast<double>(lora2.breakdown.parameters.value() - adapters),
              2.0 * static_cast<double>(lora1.breakdown.parameters.value() - adapters), 2.0);
}

TEST(Reliability, AGivenFragmentationIsAPointAndNegativesOtherThanAutoAreRefused) {
  const Estimate e = run(R"({"hardware":{"fragmentation":0.5}})");
  EXPECT_EQ(e.peak_reserved_low_bytes, e.peak_reserved_bytes);
  EXPECT_EQ(e.peak_reserved_high_bytes, e.peak_reserved_bytes);
  EXPECT_LE(e.device_total_low_bytes, e.device_total_bytes);
  EXPECT_GE(e.device_total_high_bytes, e.device_total_bytes);
  const auto errors = errors_of(R"({"hardware":{"fragmentation":-0.5}})");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].field, "hardware.fragmentation");
  EXPECT_EQ(errors[0].message, "must be -1 (automatic) or a number from 0 to 1; got -0.5");
  EXPECT_TRUE(errors_of(R"({"hardware":{"fragmentation":-1}})").empty());
}

TEST(Reliability, NonsenseIsRefusedNamingBothFields) {
  const auto first = [](const std::string& json) {
    const auto e = errors_of(json);
    return e.empty() ? std::string("(none)") : e[0].field + " " + e[0].message;
  };
  EXPECT_EQ(first(R"({"training":{"seq_len":4096},"parallel":{"num_gpus":24,"context":3}})"),
            "parallel.context must divide training.seq_len (4,096): each context-parallel rank holds an equal slice; got 3");
  EXPECT_EQ(first(R"({"parallel":{"num_gpus":8,"zero_stage":2,"offload_params":true}})"),
            "parallel.offload_params needs parallel.zero_stage 3 (parameter offload is ZeRO-3 / FSDP's); got zero_stage 2");
  EXPECT_EQ(first(R"({"parallel":{"offload_optimizer":true}})"),
            "parallel.offload_optimizer needs parallel.zero_stage 1 or more (DeepSpeed's ZeRO-Offload); got zero_stage 0");
  EXPECT_EQ(first(R"({"training":{"optimizer_in_backward":true,"grad_accum_steps":4}})"),
            "training.optimizer_in_backward cannot be combined with training.grad_accum_steps > 1 (4): the update "
            "happens during backward");
  EXPECT_EQ(first(R"({"training":{"finetune":{"method":"full","base_bits":4}}})"),
            "training.finetune.base_bits must be 16 with training.finetune.method full: a quantised base is frozen, so "
            "only adapters (lora) can train on it; got 4");
  EXPECT_EQ(first(R"({"training":{"finetune":{"method":"lora","base_bits":5}}})"),
            "training.finetune.base_bits must be 16 (frozen 16-bit base), 8 (int8) or 4 (QLoRA NF4); got 5");
  EXPECT_EQ(first(R"({"model":{"preset":"mixtral-8x7b"},"parallel":{"num_gpus":4,"expert":8}})"),
            "parallel.expert must divide the data-parallel size (parallel.num_gpus / (tensor × pipeline × context) = "
            "4); got 8");
}

TEST(Reliability, SettingsThatDoNothingAreWarnings) {
  const Estimate e = run(R"({"parallel":{"num_gpus":2,"tensor":2,"zero_stage":1,"sequence_parallel":false}})");
  ASSERT_EQ(e.warnings.size(), 1u);
  EXPECT_EQ(e.warnings[0].field, "parallel.zero_stage");
  const Estimate sp = run(R"({"parallel":{"sequence_parallel":true}})");
  ASSERT_EQ(sp.warnings.size(), 1u);
  EXPECT_EQ(sp.warnings[0].field, "parallel.sequence_parallel");
}

TEST(Reliability, OneMoreLayerNeverLowersAPipelineStage) {
  // DeepSeek-V3 over 2 stages, QLoRA: stages are counted layer by layer, not as a share.
  std::int64_t previous = 0;
  for (int layers = 58; layers <= 66; ++layers) {
    const Estimate e = run(R"({"model":{"preset":"deepseek-v3","num_hidden_layers":)" + std::to_string(layers) +
                           R"(},"training":{"finetune":{"method":"lora","base_bits":4}},"parallel":{"num_gpus":4,)"
                           R"("pipeline":2,"tensor":2,"zero_stage":3}})");
    EXPECT_GE(e.peak_allocated_bytes.value(), previous) << layers;
    previous = e.peak_allocated_bytes.value();
  }
}

TEST(Reliability, CheckpointingNeverRaisesThePeakUnderActivationOffload) {
  for (const char* mode : {"selective", "selective_op", "full"}) {
    const std::string base = R"({"model":{"preset":"llama-3-8b"},"training":{"activation_offload":true,"attention":)"
                             R"("eager","seq_len":4096,"checkpointing":")";
    EXPECT_LE(run(base + mode + "\"}}").peak_allocated_bytes, run(base + "none\"}}").peak_allocated_bytes) << mode;
  }
}

TEST(Reliability, TheDocumentedExceptionANominalCountSpreadThinner) {
  // The seeds' LLaMA-7B keeps 7e9 parameters however many layers its shape has: under ZeRO-3 the
  // gathered block is 1/L of them, so one more layer gathers less.
  const auto peak = [](int layers) {
    return run(R"({"model":{"preset":"seed-llama-7b","num_hidden_layers":)" + std::to_string(layers) +
               R"(},"training":{"precision":"bf16","seq_len":16,"finetune":{"method":"lora"}},)"
               R"("parallel":{"num_gpus":2,"zero_stage":3}})")
        .peak_allocated_bytes;
  };
  EXPECT_LT(peak(33), peak(32));
  // A counted model of the same shape does not.
  const auto counted = [](int layers) {
    return run(R"({"model":{"preset":"llama-2-7b","num_hidden_layers":)" + std::to_string(layers) +
               R"(},"training":{"precision":"bf16","seq_len":16,"finetune":{"method":"lora"}},)"
               R"("parallel":{"num_gpus":2,"zero_stage":3}})")
        .peak_allocated_bytes;
  };
  EXPECT_GE(counted(33), counted(32));
}

TEST(Reliability, StrayKeysAreNamedTwentyAtATimeAndLongValuesByTheirLength) {
  std::string json = R"({"model":{)";
  for (int i = 0; i < 50; ++i) json += (i ? "," : "") + std::string("\"k") + std::to_string(i) + "\":1";
  json += "}}";
  const ConfigParse parsed = parse_config_text(json);
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed.warnings.size(), 21u);
  EXPECT_EQ(parsed.warnings.back().message, "30 more keys are not memfit fields and were ignored");
  const ConfigParse long_value = parse_config_text(R"({"training":{"precision":")" + std::string(1000, 'x') + "\"}}");
  ASSERT_FALSE(long_value.ok());
  EXPECT_EQ(long_value.errors[0].message.substr(long_value.errors[0].message.size() - 27), "got a string of 1,000 bytes");
}

}  // namespace
}  // namespace memfit
