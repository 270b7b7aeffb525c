// The configuration: defaults, presets with overrides, and every error naming its field and range.
#include <gtest/gtest.h>

#include <string>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

std::string first_error(const std::string& text) {
  const ConfigParse p = parse_config_text(text);
  return p.errors.empty() ? std::string() : p.errors[0].field + " " + p.errors[0].message;
}

TEST(Config, DefaultIsValidAndRoundTrips) {
  const Config c = default_config();
  EXPECT_TRUE(validate(c).empty());
  const ConfigParse again = parse_config(config_to_json(c));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(config_to_json(again.config).dump(), config_to_json(c).dump());
  EXPECT_TRUE(again.warnings.empty());
}

TEST(Config, PresetThenExplicitFieldsOverride) {
  const ConfigParse p = parse_config_text(R"({"model":{"preset":"llama-2-7b","num_hidden_layers":2}})");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.config.model.hidden_size, 4096);
  EXPECT_EQ(p.config.model.num_hidden_layers, 2);
  EXPECT_EQ(p.config.model.preset, "llama-2-7b");
}

TEST(Config, ErrorsNameTheFieldAndTheRange) {
  EXPECT_EQ(first_error(R"({"training":{"seq_len":"abc"}})"),
            "training.seq_len must be an integer from 1 to 100,000,000; got \"abc\"");
  EXPECT_EQ(first_error(R"({"training":{"micro_batch_size":0}})"),
            "training.micro_batch_size must be an integer from 1 to 1,000,000; got 0");
  EXPECT_EQ(first_error(R"({"training":{"micro_batch_size":2.5}})"),
            "training.micro_batch_size must be an integer from 1 to 1,000,000; got 2.5");
  EXPECT_EQ(first_error(R"({"training":{"precision":"fp4"}})"),
            "training.precision must be one of fp32, fp16_mixed, bf16_mixed, fp16_master, bf16_master, bf16, "
            "fp8_mixed, seed_14p, bf16_fsdp or bf16_autocast; got \"fp4\"");
  EXPECT_EQ(first_error(R"({"training":{"dropout":1.5}})"), "training.dropout must be a number from 0 to 0.99; got 1.5");
  EXPECT_EQ(first_error(R"({"training":{"chunked_loss":"yes"}})"), "training.chunked_loss must be true or false; got \"yes\"");
  EXPECT_EQ(first_error(R"({"model":{"preset":"gpt-5"}})").rfind("model.preset must be the id of a preset", 0), 0u);
  EXPECT_EQ(first_error(R"({"hardware":{"gpu":"tpu"}})").rfind("hardware.gpu must be the id of a GPU", 0), 0u);
  EXPECT_EQ(first_error(R"({"training":{"finetune":{"lora_targets":["q","x"]}}})").rfind(
                "training.finetune.lora_targets must be a list of module names from q, k, v, o, gate, up, down, head or qkv", 0),
            0u);
  EXPECT_EQ(first_error(R"({"model":{"hidden_size":30,"num_attention_heads":4,"head_dim":0}})"),
            "model.num_attention_heads must divide model.hidden_size (30) when model.head_dim is not given; got 4");
  EXPECT_EQ(first_error(R"({"parallel":{"num_gpus":6,"tensor":4}})"),
            "parallel.num_gpus must be a multiple of tensor × pipeline × context (4); got 6");
  EXPECT_EQ(first_error(R"({"model":{"preset":"gpt2"},"training":{"seq_len":4096}})"),
            "training.seq_len must be at most model.max_position_embeddings (1,024) for learned positions; got 4,096");
  EXPECT_EQ(first_error("[1,2]"), "(configuration) must be a JSON object; got an array");
  EXPECT_EQ(first_error(R"({"training":5})"), "training must be an object; got a number");
  EXPECT_EQ(first_error("{\"training\":").rfind("(configuration) is not valid JSON: line 1", 0), 0u);
}

TEST(Config, EveryBadFieldIsReportedNotJustTheFirst) {
  const ConfigParse p = parse_config_text(R"({"training":{"seq_len":-1,"micro_batch_size":"x"},"parallel":{"zero_stage":7}})");
  EXPECT_EQ(p.errors.size(), 3u);
}

TEST(Config, UnknownKeysAreWarningsNotErrors) {
  const ConfigParse p = parse_config_text(R"({"model":{"rope_theta":500000},"trainin":{}})");
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p.warnings.size(), 2u);
  EXPECT_EQ(p.warnings[0].field, "model.rope_theta");
  EXPECT_EQ(p.warnings[1].field, "trainin");
}

TEST(Config, SequenceLengthDefaultsToTheLearnedPositionTable) {
  const ConfigParse p = parse_config_text(R"({"model":{"preset":"gpt2"}})");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.config.training.seq_len, 1024);
}

TEST(Config, SchemaListsEveryFieldWithItsRange) {
  const Json schema = config_schema();
  bool found = false;
  for (const Json& f : schema.items()) {
    if (f.find("field")->as_string() == "training.seq_len") {
      found = true;
      EXPECT_EQ(*f.find("min")->as_exact_integer(), 1);
      EXPECT_EQ(*f.find("max")->as_exact_integer(), 100'000'000);
    }
  }
  EXPECT_TRUE(found);
}

TEST(Config, AnEmptyPresetIsAModelFromScratch) {
  // "preset": "" names no preset: the fields not given take the plain defaults, not the default
  // preset's hidden details (tools/validate/cuda_grid.py found a GPT-2 shape given 8 kv heads).
  const ConfigParse parsed = parse_config_text(R"({"model":{"preset":"","hidden_size":64,"num_attention_heads":4}})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.config.model.num_key_value_heads, 0);
  EXPECT_EQ(parsed.config.model.vocab_size, ModelSpec{}.vocab_size);
}

}  // namespace
}  // namespace memfit
