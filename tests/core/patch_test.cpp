// One merge rule for patches (suggestions, flags, the page).
#include <gtest/gtest.h>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

Json parse(const char* text) { return *parse_json(text).value; }

TEST(Patch, ObjectsMergeKeyByKeyOtherValuesReplace) {
  Json base = parse(R"({"training":{"seq_len":2048,"finetune":{"method":"full","lora_rank":8}},"x":[1,2]})");
  merge_patch(base, parse(R"({"training":{"finetune":{"method":"lora"}},"x":[3],"parallel":{"num_gpus":8}})"));
  EXPECT_EQ(base.dump(), R"({"training":{"seq_len":2048,"finetune":{"method":"lora","lora_rank":8}},"x":[3],)"
                         R"("parallel":{"num_gpus":8}})");
}

TEST(Patch, SetPathCreatesObjectsOnTheWay) {
  Json root = Json::object();
  set_path(root, "training.finetune.lora_rank", Json::integer(64));
  set_path(root, "training.seq_len", Json::integer(4096));
  EXPECT_EQ(root.dump(), R"({"training":{"finetune":{"lora_rank":64},"seq_len":4096}})");
}

TEST(Patch, APatchedConfigurationIsValidatedLikeATypedOne) {
  const Config c = default_config();
  const ConfigParse ok = apply_patch(c, parse(R"({"training":{"micro_batch_size":8}})"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.config.training.micro_batch_size, 8);
  EXPECT_EQ(ok.config.model.hidden_size, c.model.hidden_size);  // the rest stays
  const ConfigParse bad = apply_patch(c, parse(R"({"training":{"micro_batch_size":0}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors[0].field, "training.micro_batch_size");
}

TEST(Patch, TheBoundaryFunctionMergesText) {
  const Json r = merge_patch_json(R"({"model":{"preset":"gpt2"}})", R"({"training":{"seq_len":512}})");
  ASSERT_TRUE(r.find("ok")->as_bool());
  EXPECT_EQ(r.find("config")->dump(), R"({"model":{"preset":"gpt2"},"training":{"seq_len":512}})");
  EXPECT_FALSE(merge_patch_json("[1]", "{}").find("ok")->as_bool());
}

}  // namespace
}  // namespace memfit
