// Suggestions respect the goal and the card, and each says what it saves and what it costs.
#include <gtest/gtest.h>

#include <string>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

std::vector<Suggestion> suggestions_for(const char* json) {
  const ConfigParse p = parse_config_text(json);
  EXPECT_TRUE(p.ok());
  return suggest(p.config);
}

bool any_title(const std::vector<Suggestion>& list, const std::string& part) {
  for (const Suggestion& s : list) {
    if (s.title.find(part) != std::string::npos) return true;
  }
  return false;
}

// Llama 3 8B, micro-batch 4 × 4096 on an A100 80GB: does not fit as it is.
constexpr const char* kTooBig =
    R"({"model":{"preset":"llama-3-8b"},"training":{"micro_batch_size":4,"seq_len":4096%s},"hardware":{"gpu":"a100-80gb"}})";

std::string with(const char* extra) {
  char text[512];
  std::snprintf(text, sizeof text, kTooBig, extra);
  return text;
}

// QA pass, Dec 4: the combined plan took QLoRA first (it saves the most on its own) and then
// checkpointing, though LoRA on the 16-bit base fits once checkpointing is on: the gentler change
// is the one offered.
TEST(Suggest, ACombinedPlanKeepsTheGentlestChangesThatFit) {
  const auto list = suggestions_for(with("").c_str());
  ASSERT_FALSE(list.empty());
  const Suggestion& first = list.front();
  EXPECT_EQ(first.verdict, Verdict::kFits);
  EXPECT_NE(first.title.find("LoRA (rank 16)"), std::string::npos) << first.title;
  EXPECT_NE(first.title.find("Full activation checkpointing"), std::string::npos) << first.title;
  EXPECT_EQ(first.title.find("QLoRA"), std::string::npos) << first.title;
  EXPECT_EQ(first.patch.find("training")->find("finetune")->find("base_bits")->as_exact_integer(), std::optional<std::int64_t>(16));
}

// QA pass, Dec 3: Mixtral QLoRA on two A100s with ZeRO off was offered a larger GPU, not the
// sharding on the GPUs it has; and its experts, left 16-bit by transformers 5, had no way out.
TEST(Suggest, ShardOnTheGpusYouHaveAndQuantiseTheExperts) {
  const auto list = suggestions_for(R"({"model":{"preset":"mixtral-8x7b"},"training":{"seq_len":4096,"checkpointing":"full",)"
                                    R"("finetune":{"method":"lora","base_bits":4}},"parallel":{"num_gpus":2},)"
                                    R"("hardware":{"gpu":"a100-80gb"}})");
  bool shard = false, experts = false;
  for (const Suggestion& s : list) {
    if (s.title == "ZeRO-3 / FSDP on the 2 GPUs") shard = s.verdict == Verdict::kFits;
    if (s.title == "Quantise the experts too") experts = s.saved_bytes.value() > 40LL * (1LL << 30);
  }
  EXPECT_TRUE(shard);
  EXPECT_TRUE(experts);
}

// QLoRA on bitsandbytes before 0.43.2 under non-reentrant checkpointing keeps every block's 4-bit
// linears' inputs: a newer bitsandbytes, or reentrant checkpointing, saves them (the same amount
// here, where every block is checkpointed); neither is offered where it saves nothing.
TEST(Suggest, OldBitsandbytesUpgradeOrReentrantCheckpointing) {
  const char* old_bnb = R"({"model":{"preset":"llama-3-8b"},"training":{"micro_batch_size":4,"seq_len":4096,)"
                        R"("checkpointing":"full","checkpoint_impl":"non_reentrant","finetune":{"method":"lora",)"
                        R"("base_bits":4,"bnb_keeps_input":true}},"hardware":{"gpu":"rtx-4090-24gb"}})";
  std::int64_t upgrade = 0, reentrant = 0;
  for (const Suggestion& s : suggestions_for(old_bnb)) {
    if (s.title == "bitsandbytes 0.43.2 or later") upgrade = s.saved_bytes.value();
    if (s.title == "Reentrant checkpointing (use_reentrant=True)") reentrant = s.saved_bytes.value();
  }
  // 4 × 4096 tokens × 32 blocks × (3 × 4096 + 14336) inputs × 2 bytes, less the first block's q/k/v.
  EXPECT_GT(upgrade, 25LL << 30);
  EXPECT_EQ(reentrant, upgrade);
  const auto current = suggestions_for(R"({"model":{"preset":"llama-3-8b"},"training":{"micro_batch_size":4,)"
                                       R"("seq_len":4096,"checkpointing":"full","finetune":{"method":"lora","base_bits":4}},)"
                                       R"("hardware":{"gpu":"rtx-4090-24gb"}})");
  EXPECT_FALSE(any_title(current, "bitsandbytes 0.43.2"));
  EXPECT_FALSE(any_title(current, "Reentrant checkpointing"));
}

TEST(Suggest, NoAdaptersForPretraining) {
  const auto finetune = suggestions_for(with("").c_str());
  EXPECT_TRUE(any_title(finetune, "LoRA"));
  const auto pretrain = suggestions_for(with(R"(,"goal":"pretrain")").c_str());
  ASSERT_FALSE(pretrain.empty());
  EXPECT_FALSE(any_title(pretrain, "LoRA"));
  for (const Suggestion& s : pretrain) EXPECT_EQ(s.patch.find("training") ? s.patch.find("training")->find("finetune") : nullptr, nullptr) << s.title;
}

// A reward model (a sequence classifier) that moves to adapters keeps training its score, as
// PEFT's SEQ_CLS task type does; a language model's LoRA saves no module.
TEST(Suggest, AdaptersOnAClassifierKeepTrainingItsHead) {
  const auto classifier = suggestions_for(
      with(R"(},"model":{"preset":"llama-3-8b","output_head":"sequence_classification","num_labels":1)").c_str());
  bool found = false;
  for (const Suggestion& s : classifier) {
    const Json* finetune = s.patch.find("training") ? s.patch.find("training")->find("finetune") : nullptr;
    if (!finetune || !finetune->find("method")) continue;
    found = true;
    const Json* saved = finetune->find("modules_to_save");
    ASSERT_NE(saved, nullptr) << s.title;
    EXPECT_EQ(saved->dump(), R"(["head"])") << s.title;
  }
  EXPECT_TRUE(found);
  // Freeze tuning that leaves the head frozen keeps it frozen under adapters too.
  for (const Suggestion& s : suggestions_for(
           with(R"(,"finetune":{"trainable_layers":4,"train_head":false}},"model":{"preset":"llama-3-8b",)"
                R"("output_head":"sequence_classification","num_labels":1)").c_str())) {
    const Json* finetune = s.patch.find("training") ? s.patch.find("training")->find("finetune") : nullptr;
    if (finetune && finetune->find("method")) EXPECT_EQ(finetune->find("modules_to_save"), nullptr) << s.title;
  }
  for (const Suggestion& s : suggestions_for(with("").c_str())) {
    const Json* finetune = s.patch.find("training") ? s.patch.find("training")->find("finetune") : nullptr;
    if (finetune) EXPECT_EQ(finetune->find("modules_to_save"), nullptr) << s.title;
  }
}

TEST(Suggest, ChunkedLossOnlyWhereTheLossHoldsTheLogits) {
  EXPECT_TRUE(any_title(suggestions_for(with("").c_str()), "Chunked cross-entropy"));
  // Liger's fused linear loss and TRL's chunks never hold the whole logits.
  EXPECT_FALSE(any_title(suggestions_for(with(R"(,"framework":"trl")").c_str()), "Chunked cross-entropy"));
  EXPECT_FALSE(any_title(suggestions_for(with(R"(,"framework":"liger")").c_str()), "Chunked cross-entropy"));
}

TEST(Suggest, EachSaysWhatItSavesAndWhatItCosts) {
  for (const Suggestion& s : suggestions_for(with("").c_str())) {
    SCOPED_TRACE(s.title);
    EXPECT_GT(s.saved_bytes.value(), 0);
    EXPECT_TRUE(s.timed);
    if (s.title == "Full activation checkpointing") {
      // The forward runs again in backward: about a third more compute.
      EXPECT_GT(s.time_per_token_change, 0.2);
      EXPECT_LT(s.time_per_token_change, 0.4);
    }
  }
}

TEST(Suggest, FsdpMixedPrecisionWhenItSavesMemory) {
  const auto list = suggestions_for(with("").c_str());
  ASSERT_TRUE(any_title(list, "bf16_fsdp"));
  for (const Suggestion& s : list) {
    if (s.title.find("bf16_fsdp") == std::string::npos) continue;
    EXPECT_EQ(s.patch.find("training")->find("precision")->as_string(), "bf16_fsdp");
  }
}

TEST(Suggest, OnlyWhatTheCardRuns) {
  // A bf16 run on a V100 (no bf16): the fp16 recipe is offered, and no larger card without bf16.
  const auto v100 = suggestions_for(R"({"model":{"preset":"llama-3.2-1b"},"training":{"seq_len":2048},"hardware":{"gpu":"v100-16gb"}})");
  EXPECT_TRUE(any_title(v100, "has no bf16"));
  for (const Suggestion& s : v100) {
    const Json* hw = s.patch.find("hardware");
    if (!hw) continue;
    const Gpu* g = find_gpu(hw->find("gpu")->as_string());
    ASSERT_NE(g, nullptr);
    EXPECT_TRUE(g->has_bf16()) << s.title;
  }
  // An FP8 run that does not fit on an H100: a larger card must have FP8 too.
  const auto fp8 = suggestions_for(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"fp8_mixed","micro_batch_size":8,"seq_len":4096}})");
  for (const Suggestion& s : fp8) {
    if (const Json* hw = s.patch.find("hardware")) EXPECT_TRUE(find_gpu(hw->find("gpu")->as_string())->has_fp8()) << s.title;
  }
  // The same for torchao's Float8 linears in a bf16 run: a larger card is one with FP8 matmuls.
  // Llama-3.2-1B on an L4 needs about 27 GiB: the L40S (FP8) and the RTX A6000 (none) both fit.
  const auto float8 = suggestions_for(R"({"model":{"preset":"llama-3.2-1b"},"training":{"precision":"bf16_mixed",)"
                                      R"("float8":"rowwise","seq_len":2048},"hardware":{"gpu":"l4-24gb"}})");
  int cards = 0;
  for (const Suggestion& s : float8) {
    if (const Json* hw = s.patch.find("hardware")) {
      ++cards;
      EXPECT_TRUE(find_gpu(hw->find("gpu")->as_string())->has_fp8()) << s.title;
    }
  }
  EXPECT_GT(cards, 0);
}

// QA pass 3, Dec 3: on a T4 (no bf16) the default bf16 run was offered only a larger card and
// fp16 alone (which does not fit): every other change kept bf16, which the card cannot run. They are
// worked out on top of fp16 now, in one patch, and the ones that fit come first.
TEST(Suggest, OnACardWithoutTheRecipeEveryChangeComesWithTheRecipeItRuns) {
  const char* t4 = R"({"model":{"preset":"llama-3.2-1b"},"hardware":{"gpu":"t4-16gb"}})";
  const auto list = suggestions_for(t4);
  ASSERT_FALSE(list.empty());
  const ConfigParse base = parse_config_text(t4);
  int with_fp16 = 0;
  for (const Suggestion& s : list) {
    const ConfigParse after = apply_patch(base.config, s.patch);
    ASSERT_TRUE(after.ok()) << s.title;
    // Every suggestion runs on the card it leaves the run on.
    EXPECT_EQ(card_lacks(*find_gpu(after.config.hardware.gpu), after.config.training), nullptr) << s.title;
    const Json* training = s.patch.find("training");
    if (training && training->find("precision") && s.patch.find("hardware") == nullptr) ++with_fp16;
  }
  EXPECT_GE(with_fp16, 4);  // fp16 alone, and LoRA, QLoRA, checkpointing... with it
  // What a change on top of fp16 saves is counted from the fp16 run (the one the card can do).
  Config fp16 = base.config;
  fp16.training.precision = Precision::kFp16Mixed;
  const Bytes fp16_total = estimate(fp16).device_total_bytes;
  for (const Suggestion& s : list) {
    const Json* training = s.patch.find("training");
    if (!training || !training->find("precision") || s.patch.find("hardware") || s.patch.members().size() == 1 &&
        training->members().size() == 1) {
      continue;  // not a change on top of fp16 (fp16 alone, or a card)
    }
    EXPECT_EQ(s.saved_bytes, fp16_total - s.device_total_bytes) << s.title;
  }
  EXPECT_TRUE(any_title(list, "LoRA"));
  // The first suggestion fits on the T4 itself, with fp16.
  EXPECT_EQ(list.front().verdict, Verdict::kFits);
  EXPECT_EQ(list.front().patch.find("hardware"), nullptr) << list.front().title;
  EXPECT_EQ(apply_patch(base.config, list.front().patch).config.training.precision, Precision::kFp16Mixed);
}

// LoRA under LitGPT's FSDP accumulates full unsharded gradients (no_sync): reducing every
// micro-batch is offered, and only where it saves memory (DeepSpeed already reduces each one).
TEST(Suggest, ReduceEveryMicroBatchWhenNoSyncHoldsFullGradients) {
  // use_orig_params is FSDP1's (LitGPT's Lightning strategy); torchtune's FSDP2 has no such option.
  const auto list = [](const char* framework) {
    const bool fsdp1 = std::string(framework) == "litgpt";
    return suggestions_for((std::string(R"({"model":{"preset":"llama-2-13b"},"training":{"framework":")") + framework +
                            R"(","precision":"bf16","seq_len":2048,"grad_accum_steps":8,"finetune":{"method":"lora"}},)"
                            R"("parallel":{"num_gpus":2,"zero_stage":3,"fsdp_use_orig_params":)" +
                            (fsdp1 ? "true" : "false") + R"(},"hardware":{"gpu":"rtx4090"}})")
                               .c_str());
  };
  EXPECT_TRUE(any_title(list("litgpt"), "every micro-batch"));
  EXPECT_FALSE(any_title(list("torchtune"), "every micro-batch"));
}

// A LoRA under accelerate's FSDP1 with reentrant checkpointing (transformers 4's default) keeps
// every frozen unit's recomputed input until backward ends; FSDP2 does not: the suggestion to move.
// Not under FSDP2 already, nor under LitGPT (its Block units are not frozen), nor where nothing is
// kept (non-reentrant checkpointing: use_orig_params alone costs nothing under the Trainer, whose
// adapters are units of their own).
TEST(Suggest, Fsdp2ForALoraThatPaysForItsFrozenUnits) {
  const auto list = [](const char* framework, const char* impl, const char* parallel) {
    return suggestions_for((std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":")") + framework +
                            R"(","precision":"bf16_fsdp","seq_len":4096,"micro_batch_size":4,"checkpointing":"full",)"
                            R"("checkpoint_impl":")" +
                            impl + R"(","finetune":{"method":"lora"}},"parallel":{"num_gpus":4,"zero_stage":3)" + parallel +
                            R"(},"hardware":{"gpu":"rtx4090"}})")
                               .c_str());
  };
  // Liger's fused loss keeps the logits small, so backward's kept inputs make the high point.
  EXPECT_TRUE(any_title(list("liger", "reentrant", R"(,"fsdp_use_orig_params":true)"), "FSDP2"));
  EXPECT_TRUE(any_title(list("liger", "reentrant", ""), "FSDP2"));
  EXPECT_FALSE(any_title(list("liger", "non_reentrant", R"(,"fsdp_use_orig_params":true)"), "FSDP2"));
  EXPECT_FALSE(any_title(list("liger", "reentrant", R"(,"fsdp_version":"2")"), "FSDP2"));
  EXPECT_FALSE(any_title(list("litgpt", "reentrant", R"(,"fsdp_use_orig_params":true)"), "FSDP2"));
  const std::vector<Suggestion> qlora = suggestions_for(
      R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"liger","precision":"bf16_fsdp","seq_len":4096,)"
      R"("micro_batch_size":4,"checkpointing":"full","checkpoint_impl":"reentrant","finetune":{"method":"lora",)"
      R"("base_bits":4}},"parallel":{"num_gpus":4,"zero_stage":3,)"
      R"("fsdp_use_orig_params":true},"hardware":{"gpu":"rtx4090"}})");
  // A 4-bit base under FSDP1 is stored in a floating dtype (FSDP1 cannot flatten uint8), which
  // FSDP2 shards too: the frozen units' kept inputs go as for a 16-bit base.
  EXPECT_TRUE(any_title(qlora, "FSDP2"));
  // Under FSDP2 itself, 4-bit weights stored as uint8 stay whole on every GPU: bf16 storage shards them.
  const auto storage = [](const char* st) {
    return suggestions_for((std::string(R"({"model":{"preset":"llama-2-70b"},"training":{"checkpointing":"full",)"
                                        R"("finetune":{"method":"lora","base_bits":4,"quant_storage":")") + st +
                            R"("}},"parallel":{"num_gpus":2,"zero_stage":3,"fsdp_version":"2"},"hardware":{"gpu":"rtx-3090-24gb"}})")
                               .c_str());
  };
  EXPECT_TRUE(any_title(storage("uint8"), "bnb_4bit_quant_storage"));
  EXPECT_FALSE(any_title(storage("bf16"), "bnb_4bit_quant_storage"));
}

// A full fine-tune that trains a vision tower (training.finetune.train_vision): holding it frozen is
// offered, saving its gradients and optimizer states; LoRA's suggestion holds it frozen too (a PEFT
// method with a trained tower is refused).
TEST(Suggest, FreezeATrainedVisionTower) {
  const auto list = suggestions_for(R"({"model":{"preset":"qwen2.5-3b","vision_type":"qwen2_5_vl"},)"
                                    R"("training":{"seq_len":1024,"checkpointing":"full","finetune":{"train_vision":"all"}},)"
                                    R"("hardware":{"gpu":"l40s-48gb"}})");
  bool frozen = false, lora = false;
  for (const Suggestion& s : list) {
    // Qwen2.5-VL's 668,684,288 tower parameters (its 3B release: out_hidden_size 2048): fp32
    // gradients and AdamW's two fp32 moments, 12 bytes each.
    if (s.title == "Freeze the vision tower") frozen = s.saved_bytes.value() >= 12LL * 668'684'288 * 9 / 10;
    if (s.title.find("LoRA (rank 16)") == 0) lora = s.verdict == Verdict::kFits;
  }
  EXPECT_TRUE(frozen);
  EXPECT_TRUE(lora);
  // Nothing to freeze where the tower is held frozen already.
  EXPECT_FALSE(any_title(suggestions_for(R"({"model":{"preset":"qwen2.5-3b","vision_type":"qwen2_5_vl"},)"
                                         R"("training":{"seq_len":1024,"checkpointing":"full"},)"
                                         R"("hardware":{"gpu":"l40s-48gb"}})"),
                         "Freeze the vision tower"));
}

}  // namespace
}  // namespace memfit
