// Relations the memory model must keep, and the result contract.
#include <gtest/gtest.h>

#include <string>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

Config llama(std::int64_t batch = 1, std::int64_t seq = 2048) {
  Config c = default_config();
  c.model = *preset_model("llama-2-7b");
  c.training.micro_batch_size = batch;
  c.training.seq_len = seq;
  return c;
}

std::int64_t peak(const Config& c) {
  const Estimate e = estimate(c);
  EXPECT_TRUE(e.ok()) << (e.errors.empty() ? "" : e.errors[0].message);
  return e.peak_allocated_bytes.value();
}

TEST(Estimate, BytesPerParameterOfEachRecipe) {
  Config c = llama();
  const std::int64_t p = 6'738'415'616;
  c.training.precision = Precision::kBf16Mixed;  // AMP: 4 + 4 + 8
  Estimate e = estimate(c);
  EXPECT_EQ(e.breakdown.parameters.value(), 4 * p);
  EXPECT_EQ(e.breakdown.gradients.value(), 4 * p);
  EXPECT_EQ(e.breakdown.optimizer_states.value(), 8 * p);
  EXPECT_EQ(e.breakdown.master_weights.value(), 0);
  c.training.precision = Precision::kBf16Master;  // Megatron: 2 + 4 + 4 + 8 = 18
  e = estimate(c);
  EXPECT_EQ((e.breakdown.parameters + e.breakdown.gradients + e.breakdown.master_weights +
             e.breakdown.optimizer_states).value(), 18 * p);
  c.training.precision = Precision::kBf16;  // pure bf16: 2 + 2 + 4
  e = estimate(c);
  EXPECT_EQ((e.breakdown.parameters + e.breakdown.gradients + e.breakdown.optimizer_states).value(), 8 * p);
}

std::int64_t activations(const Config& c) { return estimate(c).breakdown.activations.value(); }

TEST(Estimate, MonotoneInBatchSequenceAndLayers) {
  // Activations grow strictly; the peak never falls, and grows once activations dominate it (at
  // small batches the optimizer step, not the forward pass, is the high point).
  EXPECT_LT(activations(llama(1)), activations(llama(2)));
  EXPECT_LT(activations(llama(1, 512)), activations(llama(1, 1024)));
  EXPECT_LE(peak(llama(1)), peak(llama(2)));
  EXPECT_LT(peak(llama(2)), peak(llama(8)));
  EXPECT_LT(peak(llama(8, 1024)), peak(llama(8, 2048)));
  Config shallow = llama(), deep = llama();
  shallow.model.num_hidden_layers = 8;
  EXPECT_LT(peak(shallow), peak(deep));
}

TEST(Estimate, CheckpointingAndFlashOnlyReduceActivations) {
  Config none = llama(4), selective = llama(4), full = llama(4);
  none.training.implementation.attention = selective.training.implementation.attention = full.training.implementation.attention = AttentionImpl::kEager;
  selective.training.checkpointing = Checkpointing::kSelective;
  full.training.checkpointing = Checkpointing::kFull;
  const Estimate a = estimate(none), b = estimate(selective), c = estimate(full);
  EXPECT_GT(a.breakdown.activations, b.breakdown.activations);
  EXPECT_GT(b.breakdown.activations, c.breakdown.activations);
  EXPECT_EQ(a.breakdown.parameters, c.breakdown.parameters);
  Config flash = llama(4);
  EXPECT_LT(estimate(flash).breakdown.activations, a.breakdown.activations);
}

TEST(Estimate, ZeroShardsExactlyWhatItShards) {
  Config base = llama();
  base.parallel.num_gpus = 8;
  base.parallel.ddp_bucket_view = true;  // plain DDP without its buckets' second copy of the gradients
  const Estimate z0 = estimate(base);
  Config c = base;
  c.parallel.zero_stage = 1;
  const Estimate z1 = estimate(c);
  EXPECT_EQ(z1.breakdown.optimizer_states.value(), z0.breakdown.optimizer_states.value() / 8);
  EXPECT_EQ(z1.breakdown.gradients, z0.breakdown.gradients);
  c.parallel.zero_stage = 2;
  const Estimate z2 = estimate(c);
  EXPECT_EQ(z2.breakdown.gradients.value(), z0.breakdown.gradients.value() / 8);
  EXPECT_EQ(z2.breakdown.parameters, z0.breakdown.parameters);
  c.parallel.zero_stage = 3;
  const Estimate z3 = estimate(c);
  EXPECT_EQ(z3.breakdown.parameters.value(), z0.breakdown.parameters.value() / 8);
  EXPECT_EQ(z3.breakdown.activations, z0.breakdown.activations);  // activations are not sharded
}

TEST(Estimate, MemoryStrictlyFallsAsTensorParallelismGrows) {
  std::int64_t previous = INT64_MAX;
  for (std::int64_t tp : {1, 2, 4, 8}) {
    Config c = llama(2);
    c.parallel.num_gpus = 8;
    c.parallel.tensor = tp;
    const std::int64_t now = peak(c);
    EXPECT_LT(now, previous) << "tp " << tp;
    previous = now;
  }
}

TEST(Estimate, PeakIsTheLargestPhaseNotASum) {
  const Estimate e = estimate(llama(2));
  std::int64_t largest = 0, sum = 0;
  for (const Phase& p : e.phases) {
    largest = std::max(largest, p.bytes.value());
    sum += p.bytes.value();
  }
  EXPECT_EQ(e.peak_allocated_bytes.value(), largest);
  EXPECT_LT(e.peak_allocated_bytes.value(), sum);
  EXPECT_GE(e.peak_reserved_bytes, e.peak_allocated_bytes);
  EXPECT_EQ(e.device_total_bytes, e.peak_reserved_bytes + e.breakdown.overhead);
}

TEST(Estimate, GradientAccumulationAddsNoActivationMemory) {
  Config one = llama(2), many = llama(2);
  many.training.grad_accum_steps = 16;
  EXPECT_EQ(estimate(one).breakdown.activations, estimate(many).breakdown.activations);
}

// seeds/002: "For a 7B model fine-tuned with LoRA at rank 16, the adapter might have fewer than
// 10M trainable parameters" — true for PEFT's default targets (q, v): 32 · 2 · 16 · (4096 + 4096).
// Full fine-tuning of the top blocks only (LLaMA-Factory freeze tuning; LLaMA-Pro; LISA): Llama 2
// 7B's blocks hold 202,383,360 parameters each (4 x 4096² + 3 x 4096 x 11008 + 2 x 4096), its
// embedding and head 32000 x 4096 each. The states and gradients are the trained blocks'; the blocks
// below the lowest trained one save nothing and keep no autocast copy; backward costs less.
TEST(Estimate, SomeBlocksTrain) {
  const auto run = [](std::int64_t trained, std::int64_t lowest = -1, bool embeddings = false, bool head = false) {
    Config c = parse_config_text(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16_mixed",)"
                                 R"("optimizer":"adamw","seq_len":2048}})").config;
    c.training.finetune.trainable_layers = trained;
    c.training.finetune.lowest_trainable_layer = lowest;
    c.training.finetune.train_embeddings = embeddings;
    c.training.finetune.train_head = head;
    return estimate(c);
  };
  const std::int64_t block = 202'383'360, table = 32'000LL * 4096;
  const Estimate all = run(-1), top4 = run(4), pro = run(4, 8), lisa = run(2, -1, true, true);
  ASSERT_TRUE(all.ok() && top4.ok() && pro.ok() && lisa.ok());
  EXPECT_EQ(top4.trainable_parameter_count.value(), 4 * block);
  EXPECT_EQ(top4.breakdown.gradients.value(), 4 * block * 4);
  EXPECT_EQ(top4.breakdown.optimizer_states.value(), 4 * block * 8);
  EXPECT_EQ(lisa.trainable_parameter_count.value(), 2 * block + 2 * table);
  EXPECT_EQ(top4.breakdown.parameters, all.breakdown.parameters);
  // Saved activations: 4 of 32 blocks' worth (the embedding saves nothing); from block 8 up, 24;
  // with the embedding trained, all of them.
  const std::int64_t per_block = (all.breakdown.activations.value() - 0) / 32;
  EXPECT_NEAR(double(top4.breakdown.activations.value()), double(per_block * 4), double(per_block) / 8);
  EXPECT_NEAR(double(pro.breakdown.activations.value()), double(per_block * 24), double(per_block) / 8);
  EXPECT_EQ(lisa.breakdown.activations, all.breakdown.activations);
  // autocast's cached bf16 copies: the 4 trained blocks' linears, and the head's copy, saved for its
  // input gradient.
  const std::int64_t linears = 4LL * 4096 * 4096 + 3LL * 4096 * 11008;
  EXPECT_EQ(top4.breakdown.weight_copies.value(), (4 * linears + table) * 2);
  EXPECT_LT(step_time(top4.config).step_time_s, step_time(all.config).step_time_s);
}

TEST(Estimate, SomeBlocksTrainIsRangeChecked) {
  Config c = parse_config_text(R"({"model":{"preset":"llama-2-7b"}})").config;
  c.training.finetune.trainable_layers = 33;
  ASSERT_EQ(estimate(c).errors.size(), 1u);
  EXPECT_EQ(estimate(c).errors[0].field, "training.finetune.trainable_layers");
  c.training.finetune.trainable_layers = 4;
  c.training.finetune.lowest_trainable_layer = 29;
  ASSERT_EQ(estimate(c).errors.size(), 1u);
  EXPECT_EQ(estimate(c).errors[0].field, "training.finetune.lowest_trainable_layer");
  c.training.finetune.lowest_trainable_layer = 28;
  EXPECT_TRUE(estimate(c).ok());
  c.training.finetune.method = FinetuneMethod::kLora;
  ASSERT_EQ(estimate(c).errors.size(), 1u);
  EXPECT_EQ(estimate(c).errors[0].field, "training.finetune.trainable_layers");
}

TEST(Estimate, LoraTrainableCountMatchesTheSeedClaim) {
  Config c = llama();
  c.training.finetune.method = FinetuneMethod::kLora;
  c.training.finetune.lora_rank = 16;
  c.training.finetune.lora_targets = kLoraQ | kLoraV;
  const Estimate e = estimate(c);
  EXPECT_EQ(e.trainable_parameter_count.value(), 32 * 2 * 16 * (4096 + 4096));
  EXPECT_LT(e.trainable_parameter_count.value(), 10'000'000);
  // q, k, v and o at rank 16 is 16.8M: above the seed's "fewer than 10M".
  c.training.finetune.lora_targets = kLoraQ | kLoraK | kLoraV | kLoraO;
  EXPECT_EQ(estimate(c).trainable_parameter_count.value(), 32 * 4 * 16 * (4096 + 4096));
}

TEST(Estimate, AbsurdButValidSizesAreFiniteOrANamedError) {
  Config c = default_config();
  c.model.nominal_parameter_count = 10'000'000'000'000;  // 10T parameters
  c.training.seq_len = 1'000'000;                       // 1M tokens
  c.training.checkpointing = Checkpointing::kFull;
  const Estimate e = estimate(c);
  ASSERT_TRUE(e.ok());
  EXPECT_GT(e.peak_allocated_bytes.value(), 160'000'000'000'000);
  EXPECT_EQ(e.fit.verdict, Verdict::kDoesNotFit);
  c.training.implementation.attention = AttentionImpl::kEager;
  c.training.micro_batch_size = 1'000'000;
  const Estimate huge = estimate(c);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.errors[0].message.find("exceeds"), std::string::npos);
}

TEST(Estimate, ResultJsonHasTheContractFields) {
  const Json r = estimate_json(R"({"model":{"preset":"gpt2"},"training":{"micro_batch_size":2}})");
  ASSERT_TRUE(r.find("ok")->as_bool());
  for (const char* key : {"parameter_count", "trainable_parameter_count", "breakdown", "peak_allocated_bytes",
                          "peak_reserved_bytes", "device_total_bytes", "phases", "fits", "gpus"}) {
    EXPECT_NE(r.find(key), nullptr) << key;
  }
  for (const char* key : {"parameters", "gradients", "optimizer_states", "master_weights", "activations",
                          "logits_and_loss", "overhead"}) {
    EXPECT_NE(r.find("breakdown")->find(key), nullptr) << key;
  }
  const std::string verdict = r.find("fits")->find("verdict")->as_string();
  EXPECT_TRUE(verdict == "fits" || verdict == "tight" || verdict == "does_not_fit");
}


}  // namespace
}  // namespace memfit

namespace memfit {
namespace {

ModelSpec tiny_linear_model() {
  // One block, d 64, d_ff 128, h 4, V 100: the q/k/v/o weights have 4,096 elements each
  // (the bitsandbytes 8-bit threshold), the MLP weights 8,192, the norms 64.
  ModelSpec m;
  m.vocab_size = 100;
  m.hidden_size = 64;
  m.num_hidden_layers = 1;
  m.num_attention_heads = 4;
  m.intermediate_size = 128;
  return m;
}

TEST(Optimizers, EightBitAdamKeepsSmallTensorsIn32Bit) {
  Config c = default_config();
  c.model = tiny_linear_model();
  c.training.optimizer = Optimizer::kAdamW8bit;
  // ≥ 4,096 elements: 2 bytes + 2 · 4 bytes per 256-element block.
  //   embedding 6,400: 12,800 + 8·25 = 13,000; head the same; q,k,v,o 4,096: 8,192 + 8·16 = 8,320 each;
  //   gate, up, down 8,192: 16,384 + 8·32 = 16,640 each.
  // < 4,096 elements: fp32 m and v, 8 bytes each: 3 norms × 64 → 1,536.
  // The two 256-entry fp32 quantisation maps (qmap1, qmap2), shared by all tensors: 2,048.
  const std::int64_t expected = 2 * 13'000 + 4 * 8'320 + 3 * 16'640 + 1'536 + 2'048;
  EXPECT_EQ(estimate(c).breakdown.optimizer_states.value(), expected);
}

TEST(Optimizers, AdafactorFactorsMatricesIntoRowsAndColumns) {
  Config c = default_config();
  c.model = tiny_linear_model();
  c.training.optimizer = Optimizer::kAdafactor;
  // fp32 row + column statistics: embedding and head [100, 64] → 164 each; q,k,v,o [64, 64] → 128;
  // gate, up [128, 64] → 192; down [64, 128] → 192; norms: a full 64-vector each.
  const std::int64_t elements = 2 * 164 + 4 * 128 + 3 * 192 + 3 * 64;
  EXPECT_EQ(estimate(c).breakdown.optimizer_states.value(), elements * 4);
}

TEST(Optimizers, PagedStatesAreShownApartFromAllocatedMemory) {
  Config c = default_config();
  c.model = *preset_model("llama-2-7b");
  c.training.optimizer = Optimizer::kPagedAdamW;
  const Estimate e = estimate(c);
  // bitsandbytes pages the fp32 states of tensors of 1e5 elements or more; the 65 RMSNorm weights
  // (4,096 each) keep theirs in device memory (get_state_buffer: torch.zeros_like).
  const std::int64_t norms = 65 * 4'096;
  EXPECT_EQ(e.breakdown.optimizer_states.value(), 8 * norms);
  EXPECT_EQ(e.breakdown.offloaded_bytes.value(), 8 * (6'738'415'616 - norms));
}

// The same for LoRA adapters: at rank 16 on a 4,096-wide model every factor with a 4,096 side is
// 65,536 elements, under bitsandbytes' paging threshold, so its fp32 states stay on the device;
// those with an 11,008 side (the MLP's) are paged. 8-bit: the block scales stay too.
TEST(Optimizers, PagedStatesOfSmallAdaptersStayOnTheDevice) {
  Config c = default_config();
  c.model = *preset_model("llama-2-7b");
  c.training.precision = Precision::kBf16;
  c.training.finetune.method = FinetuneMethod::kLora;
  c.training.finetune.lora_rank = 16;
  c.training.finetune.lora_targets = kLoraQ | kLoraK | kLoraV | kLoraO | kLoraGate | kLoraUp | kLoraDown;
  c.training.optimizer = Optimizer::kPagedAdamW;
  const Estimate e = estimate(c);
  // Per block: A of q, k, v, o, gate, up (16 x 4,096) and B of q, k, v, o, down (4,096 x 16) are
  // small; A of down (16 x 11,008) and B of gate and up (11,008 x 16) are paged.
  const std::int64_t small = 32 * 11 * 16 * 4'096, paged = 32 * 3 * 16 * 11'008;
  EXPECT_EQ(e.breakdown.optimizer_states.value(), 8 * small);
  EXPECT_EQ(e.breakdown.offloaded_bytes.value(), 8 * paged);
  c.training.optimizer = Optimizer::kPagedAdamW8bit;
  const Estimate eight = estimate(c);
  // Two uint8 states of the small tensors, and both states' fp32 scales per 256 elements of every
  // tensor, with the two 256-entry fp32 maps.
  const std::int64_t scales = 2 * 4 * (small + paged) / 256;
  EXPECT_EQ(eight.breakdown.optimizer_states.value(), 2 * small + scales + 2 * 256 * 4);
  EXPECT_EQ(eight.breakdown.offloaded_bytes.value(), 2 * paged);
  // Nothing is lost between the two: what stays and what is paged add up to the unpaged optimizer's.
  c.training.optimizer = Optimizer::kAdamW8bit;
  EXPECT_EQ(estimate(c).breakdown.optimizer_states.value(),
            eight.breakdown.optimizer_states.value() + eight.breakdown.offloaded_bytes.value());
}

// Training some blocks only: the small tensors that stay are those of the trained blocks (two
// RMSNorm weights each), not the whole model's.
TEST(Optimizers, PagedStatesOfTheTrainedBlocksOnly) {
  Config c = default_config();
  c.model = *preset_model("llama-2-7b");
  c.training.optimizer = Optimizer::kPagedAdamW;
  c.training.finetune.trainable_layers = 2;
  EXPECT_EQ(estimate(c).breakdown.optimizer_states.value(), 8 * 2 * 2 * 4'096);
}

TEST(Finetuning, QloraQuantisesTheBlockLinearsOnly) {
  Config c = default_config();
  c.model = tiny_linear_model();
  c.training.precision = Precision::kBf16;
  c.training.finetune.method = FinetuneMethod::kLora;
  c.training.finetune.base_bits = 4;
  c.training.finetune.lora_rank = 8;
  c.training.finetune.lora_targets = kLoraQ | kLoraV;
  c.training.implementation.lora_adapter_dtype = LoraAdapterDtype::kWeights;  // bf16 adapters, as torchtune's
  // NF4 with double quantisation per linear of n weights: n/2 + n/64 (8-bit absmax) +
  // 4·ceil(blocks/256) (nested absmax) + 64 (the 16-entry code) + 4 (offset) + 1,024 (the nested
  // state's own 256-entry code, bitsandbytes ≥ 0.46).
  //   q,k,v,o (4,096): 2,048 + 64 + 4 + 1,092 = 3,208; gate, up, down (8,192): 4,096 + 128 + 4 + 1,092 = 5,320.
  // 16-bit: embedding and head 6,400 each, norms 3 × 64: 12,992 parameters → 25,984 bytes.
  // Adapters (bf16): q and v, r 8: 8·(64 + 64) = 1,024 each → 2,048 params · 2 bytes.
  const std::int64_t expected = 4 * 3'208 + 3 * 5'320 + 25'984 + 2 * 2'048;
  const Estimate e = estimate(c);
  EXPECT_EQ(e.breakdown.parameters.value(), expected);
  EXPECT_EQ(e.trainable_parameter_count.value(), 2'048);
  EXPECT_EQ(e.breakdown.gradients.value(), 2 * 2'048);
}

// seeds/002: with LoRA "the effective multiplier [falls] from 14x to something closer to 2-3x of
// the base model size". Static bytes (weights, gradients, states) per base parameter:
TEST(Finetuning, LoraStaticMultiplierIsAboutTwoNotFourteen) {
  Config c = default_config();
  c.model = *preset_model("llama-2-7b");
  c.training.precision = Precision::kBf16Mixed;
  c.training.finetune.method = FinetuneMethod::kLora;
  c.training.finetune.lora_rank = 16;
  c.training.finetune.lora_targets = kLoraQ | kLoraV;
  const Estimate e = estimate(c);
  const double statics = static_cast<double>((e.breakdown.parameters + e.breakdown.gradients +
                                               e.breakdown.optimizer_states + e.breakdown.master_weights).value());
  const double per_parameter = statics / 6'738'415'616.0;
  EXPECT_GT(per_parameter, 2.0);
  EXPECT_LT(per_parameter, 2.1);  // 2 bytes of frozen base + 16 bytes × 8.4M adapter parameters
  EXPECT_NEAR(e.static_bytes_per_parameter, per_parameter, 1e-6);  // reported to 6 decimals
}

}  // namespace
}  // namespace memfit

namespace memfit {
namespace {

TEST(Suggestions, EveryChangeHelpsAndItsPatchReproducesIt) {
  const std::string base = R"({"model":{"preset":"llama-3-8b"},"training":{"micro_batch_size":4,"seq_len":4096},)"
                           R"("hardware":{"gpu":"a100-80gb"}})";
  const Json before = estimate_json(base);
  const std::int64_t now = *before.find("device_total_bytes")->as_exact_integer();
  const Json result = suggestions_json(base);
  ASSERT_TRUE(result.find("ok")->as_bool());
  const auto& list = result.find("suggestions")->items();
  ASSERT_FALSE(list.empty());
  // Nothing single fits here, so the first suggestion combines changes, and it fits.
  EXPECT_EQ(list[0].find("verdict")->as_string(), "fits");
  EXPECT_NE(list[0].find("title")->as_string().find(" + "), std::string::npos);
  for (const Json& s : list) {
    const std::int64_t after = *s.find("device_total_bytes")->as_exact_integer();
    EXPECT_LT(after, now) << s.find("title")->as_string();
    // The patch, applied to the configuration, gives exactly the suggested estimate.
    Json merged = *parse_json(base).value;
    merge_patch(merged, *s.find("patch"));
    EXPECT_EQ(*estimate_json(merged.dump()).find("device_total_bytes")->as_exact_integer(), after)
        << s.find("title")->as_string();
  }
}

TEST(Suggestions, ACombinedPlanKeepsTheCardWhenOnlyALargerCardFitsAlone) {
  // Qwen2.5 7B LoRA, 4 × 4,096 tokens on an RTX 4090: only a larger card fits as one change; the
  // plan that keeps the user's card comes first, and the larger card stays on the list.
  const std::string base = R"({"model":{"preset":"qwen2.5-7b"},"training":{"micro_batch_size":4,"seq_len":4096,)"
                           R"("finetune":{"method":"lora"}},"hardware":{"gpu":"rtx-4090-24gb"}})";
  const Json result = suggestions_json(base);
  ASSERT_TRUE(result.find("ok")->as_bool());
  const auto& list = result.find("suggestions")->items();
  ASSERT_GE(list.size(), 2u);
  EXPECT_EQ(list[0].find("verdict")->as_string(), "fits");
  EXPECT_NE(list[0].find("title")->as_string().find(" + "), std::string::npos) << list[0].find("title")->as_string();
  EXPECT_EQ(list[0].find("patch")->find("hardware"), nullptr);
  bool larger = false;
  for (const Json& s : list) larger = larger || s.find("title")->as_string().rfind("A larger GPU", 0) == 0;
  EXPECT_TRUE(larger);
}

// The larger card a suggestion names: of the user's card's maker when one fits, and among cards of
// about the smallest size that fits, the cheapest with a sourced price.
std::string larger_gpu_patch(const std::string& config) {
  const Json result = suggestions_json(config);
  if (!result.find("ok")->as_bool()) return "not ok";
  for (const Json& s : result.find("suggestions")->items()) {
    if (s.find("title")->as_string().rfind("A larger GPU", 0) == 0) {
      return s.find("patch")->find("hardware")->find("gpu")->as_string();
    }
  }
  return "none";
}

TEST(Suggestions, ALargerCardIsOfTheSameMakerAndTheCheapestOfItsSize) {
  // Llama 3.1 8B LoRA at 4,096 tokens needs about 44 GiB: the 48 GB NVIDIA cards are tight, the
  // MI250's 64 GB die is the smallest card that fits, but an RTX 4090's owner gets an NVIDIA card:
  // of the 80 GB ones (H100 79.65 GiB, A100 80 GiB), the A100 80GB ($2.50/h) before the H100s.
  const std::string lora = R"({"model":{"preset":"llama-3.1-8b"},"training":{"seq_len":4096,)"
                           R"("finetune":{"method":"lora"}},"hardware":{"gpu":"rtx-4090-24gb"}})";
  EXPECT_EQ(larger_gpu_patch(lora), "a100-80gb");
  // From AMD's smaller card, AMD's larger one, though NVIDIA's 80 GB cards are smaller.
  const std::string full = R"({"model":{"preset":"llama-3.1-8b"},"training":{"seq_len":4096,"checkpointing":"full","optimizer":"adamw_8bit"},)"
                           R"("hardware":{"gpu":"mi250-64gb"}})";
  EXPECT_EQ(larger_gpu_patch(full), "mi300x-192gb");
}

TEST(Suggestions, MoreGpusOnlyWhileShardingStillLowersTheNeed) {
  // LoRA on Llama 3.1 8B, 2 x 4,096 tokens, on an RTX 4090: after checkpointing, what each GPU keeps
  // whole (activations, logits) is near the card's budget, and ZeRO-3 crept under it only at 1,003
  // GPUs (sharding the 15 GiB base 1,003 ways); no count of GPUs is offered for that.
  const std::string base = R"({"model":{"preset":"llama-3.1-8b"},"training":{"micro_batch_size":2,"seq_len":4096,)"
                           R"("finetune":{"method":"lora","lora_targets":["q","v"]}},"hardware":{"gpu":"rtx-4090-24gb"}})";
  const Json result = suggestions_json(base);
  ASSERT_TRUE(result.find("ok")->as_bool());
  for (const Json& s : result.find("suggestions")->items()) {
    EXPECT_EQ(s.find("title")->as_string().find("GPUs with ZeRO-3"), std::string::npos) << s.find("title")->as_string();
  }
  // Where sharding is what makes it fit (a 70B model checkpointed, bf16 under FSDP), the count is offered.
  const Json big = suggestions_json(R"({"model":{"preset":"llama-3-70b"},"training":{"checkpointing":"full",)"
                                    R"("precision":"bf16_fsdp","goal":"pretrain"}})");
  bool offered = false;
  for (const Json& s : big.find("suggestions")->items()) offered = offered || s.find("title")->as_string().find("GPUs with ZeRO-3") != std::string::npos;
  EXPECT_TRUE(offered);
}

TEST(Suggestions, AFullFineTuneAlsoGetsAPlanThatKeepsItOne) {
  // A full fine-tune of Llama 3 70B on one H100: the plan that saves the most turns it into QLoRA;
  // a second plan keeps every weight trained (8-bit states, checkpointing, sharding over GPUs), and
  // both fit. Applied, the second gives its number and leaves the method alone.
  const std::string base = R"({"model":{"preset":"llama-3-70b"}})";
  const Json result = suggestions_json(base);
  ASSERT_TRUE(result.find("ok")->as_bool());
  int plans = 0;
  bool kept = false;
  for (const Json& s : result.find("suggestions")->items()) {
    if (s.find("detail")->as_string() != "these changes together") continue;
    ++plans;
    EXPECT_EQ(s.find("verdict")->as_string(), "fits") << s.find("title")->as_string();
    const Json* training = s.find("patch")->find("training");
    if (training && training->find("finetune")) continue;
    kept = true;
    EXPECT_NE(s.find("patch")->find("parallel"), nullptr) << s.find("title")->as_string();
    Json merged = *parse_json(base).value;
    merge_patch(merged, *s.find("patch"));
    const Json after = estimate_json(merged.dump());
    EXPECT_EQ(*after.find("device_total_bytes")->as_exact_integer(), *s.find("device_total_bytes")->as_exact_integer());
    EXPECT_EQ(after.find("config")->find("training")->find("finetune")->find("method")->as_string(), "full");
  }
  EXPECT_EQ(plans, 2);
  EXPECT_TRUE(kept);
  // A LoRA run gets one plan: QLoRA keeps the same adapters trained.
  const Json lora = suggestions_json(R"({"model":{"preset":"llama-3.1-8b"},"training":{"seq_len":4096,)"
                                     R"("finetune":{"method":"lora"}},"hardware":{"gpu":"rtx-4090-24gb"}})");
  int lora_plans = 0;
  for (const Json& s : lora.find("suggestions")->items()) lora_plans += s.find("detail")->as_string() == "these changes together";
  EXPECT_EQ(lora_plans, 1);
}

TEST(Suggestions, TheSeedsConventionGetsNone) {
  const Json r = suggestions_json(R"({"model":{"preset":"seed-llama-70b"},"training":{"precision":"seed_14p"}})");
  EXPECT_TRUE(r.find("suggestions")->items().empty());
}

}  // namespace
}  // namespace memfit

namespace memfit {
namespace {

TEST(Estimate, ExpertParallelismDividesOnlyTheRoutedExperts) {
  Config c = default_config();
  c.model = *preset_model("mixtral-8x7b");
  c.parallel.num_gpus = 8;
  const Estimate one = estimate(c);
  c.parallel.expert = 8;
  const Estimate eight = estimate(c);
  const ParameterCount p = count_parameters(c.model);
  const Count experts = p.component_count(Component::kExperts);
  // bf16_mixed keeps 4-byte weights: the routed experts shrink 8-fold, everything else stays.
  EXPECT_EQ((one.breakdown.parameters - eight.breakdown.parameters).value(), (experts - experts / 8).value() * 4);
  EXPECT_EQ(eight.breakdown.activations, one.breakdown.activations);
}

}  // namespace
}  // namespace memfit

namespace memfit {
namespace {

TEST(Estimate, MeasuredBandScalesThePeakAndIsAbsentForTheSeeds) {
  // The band is empirical (docs/accuracy.md): it need not contain the estimate itself — where
  // published runs sit above memfit, it says so.
  const Estimate e = estimate(default_config());
  EXPECT_GE(e.measured_band_cases, 10);  // a population with its own band (or the whole set's)
  EXPECT_EQ(e.measured_band_population, "hf · full · one GPU");
  EXPECT_LT(e.measured_band_low_bytes, e.measured_band_high_bytes);
  const double peak = static_cast<double>(e.peak_allocated_bytes.value());
  EXPECT_GT(static_cast<double>(e.measured_band_low_bytes.value()), 0.5 * peak);
  EXPECT_LT(static_cast<double>(e.measured_band_high_bytes.value()), 3.0 * peak);
  Config seed = default_config();
  seed.training.precision = Precision::kSeed14p;
  EXPECT_EQ(estimate(seed).measured_band_cases, 0);
  EXPECT_EQ(estimate_json(R"({"training":{"precision":"seed_14p"}})").find("measured_band_bytes"), nullptr);
}

}  // namespace
}  // namespace memfit

namespace memfit {
namespace {

TEST(Checkpointing, TorchtitanOpLevelPolicyKeepsEverySecondMatmul) {
  Config c = default_config();
  c.model = ModelSpec{};
  c.model.vocab_size = 16;
  c.model.hidden_size = 8;
  c.model.num_hidden_layers = 1;
  c.model.num_attention_heads = 2;
  c.model.intermediate_size = 16;
  c.training.precision = Precision::kBf16;
  c.training.micro_batch_size = 1;
  c.training.seq_len = 4;
  c.training.checkpointing = Checkpointing::kSelectiveOp;
  // Matmuls in forward order: q 8, k 8, v 8, o 8, gate 16, up 16, down 8 (output widths). Kept:
  // the 1st, 3rd, 5th, 7th → q, v, gate, down = 40 per token × 4 tokens × 2 bytes = 320.
  // Flash output 4 · 8 · 2 = 64 and log-sum-exp 4 bytes × 2 heads × 4 rows = 32; block input 64.
  const Estimate e = estimate(c);
  Bytes per_layer{0};
  for (const NamedBytes& t : e.activation_terms_per_layer) per_layer += t.bytes;
  EXPECT_EQ(per_layer.value(), 320 + 64 + 32 + 64);
  // Between no checkpointing and full checkpointing, for a real model.
  Config big = default_config();
  big.training.seq_len = 8192;
  const auto acts = [&](Checkpointing k) {
    big.training.checkpointing = k;
    return estimate(big).breakdown.activations.value();
  };
  EXPECT_LT(acts(Checkpointing::kSelectiveOp), acts(Checkpointing::kNone) / 2);
  EXPECT_GT(acts(Checkpointing::kSelectiveOp), acts(Checkpointing::kFull));
}

TEST(Finetuning, PeftKeepsAdaptersInFp32) {
  // PEFT's default (autocast_adapter_dtype=True) upcasts adapters over a 16-bit base: fp32 weights,
  // gradients and AdamW states, even under a pure bf16 recipe (peft/tuners/tuners_utils.py).
  Config c = default_config();
  c.model = tiny_linear_model();
  c.training.precision = Precision::kBf16;
  c.training.finetune.method = FinetuneMethod::kLora;
  c.training.finetune.lora_rank = 8;
  c.training.finetune.lora_targets = kLoraQ | kLoraV;
  const Estimate peft = estimate(c);  // framework hf: fp32 adapters
  c.training.implementation.lora_adapter_dtype = LoraAdapterDtype::kWeights;
  const Estimate bf16 = estimate(c);
  EXPECT_EQ(peft.breakdown.gradients.value(), 4 * 2'048);
  EXPECT_EQ(bf16.breakdown.gradients.value(), 2 * 2'048);
  EXPECT_EQ(peft.breakdown.optimizer_states.value(), 8 * 2'048);
  EXPECT_EQ((peft.breakdown.parameters - bf16.breakdown.parameters).value(), 2 * 2'048);
}

TEST(Verdict, NeverContradictsItsBand) {
  // "fits" only when the top of the band fits the budget; "tight" when the estimate fits the card
  // but the band crosses the budget; "does not fit" when the estimate exceeds the card.
  for (const char* gpu : {"rtx-4090-24gb", "a100-40gb", "a100-80gb", "h200-141gb"}) {
    for (std::int64_t seq : {512, 2048, 8192}) {
      Config c = default_config();
      c.model = *preset_model("llama-3.2-1b");
      c.training.seq_len = seq;
      c.hardware.gpu = gpu;
      const Estimate e = estimate(c);
      const Fit& f = e.fit;
      ASSERT_GE(f.need_high_bytes, f.need_bytes);
      const Bytes memory = f.gpu->usable_bytes();
      if (f.verdict == Verdict::kFits) EXPECT_LE(f.need_high_bytes, f.budget_bytes);
      if (f.verdict == Verdict::kTight) EXPECT_TRUE(f.need_high_bytes > f.budget_bytes && f.need_bytes <= memory);
      if (f.verdict == Verdict::kDoesNotFit) EXPECT_GT(f.need_bytes, memory);
      // What is left under the budget: never negative when it fits, always negative when it does not.
      EXPECT_EQ(f.budget_left_bytes, f.budget_bytes - f.need_high_bytes);
      EXPECT_EQ(f.budget_left_bytes >= Bytes{0}, f.verdict == Verdict::kFits);
    }
  }
}

// A card holds what CUDA reports as its total, not nvidia-smi's: an RTX 3090's 24,576 MiB are
// 23.70 GiB to CUDA (PyTorch's "23.70 GiB total capacity"), so a run that would show 23.85 GiB in
// nvidia-smi does not fit it.
TEST(Verdict, CountsAgainstWhatCudaReportsNotNvidiaSmi) {
  const Gpu& rtx3090 = *find_gpu("rtx-3090-24gb");
  ASSERT_EQ(rtx3090.memory_bytes, Bytes{24576LL << 20});
  ASSERT_EQ(rtx3090.cuda_total_bytes, Bytes{2370LL * (1LL << 30) / 100});
  EXPECT_EQ(rtx3090.usable_bytes(), rtx3090.cuda_total_bytes);
  Config c = default_config();
  c.model = *preset_model("llama-3.2-1b");
  c.training.seq_len = 512;
  c.hardware.gpu = "rtx-3090-24gb";
  c.hardware.fragmentation = 0.0;
  c.hardware.overhead_bytes = 0;
  const Bytes allocated = estimate(c).peak_allocated_bytes;
  const Bytes shown = Bytes{2385LL * (1LL << 30) / 100};  // 23.85 GiB: under 24 GiB, over 23.70
  ASSERT_LT(allocated, shown);
  c.hardware.overhead_bytes = (shown - allocated).value();
  const Estimate e = estimate(c);
  EXPECT_EQ(e.device_total_bytes, shown);
  EXPECT_EQ(e.fit.verdict, Verdict::kDoesNotFit);
  EXPECT_LT(e.fit.headroom_bytes, Bytes{0});
  // A card without a published reading keeps nvidia-smi's total.
  const Gpu& h100_96 = *find_gpu("h100-96gb");
  EXPECT_EQ(h100_96.cuda_total_bytes, Bytes{0});
  EXPECT_EQ(h100_96.usable_bytes(), h100_96.memory_bytes);
  // The same memory under two names holds the same.
  EXPECT_EQ(find_gpu("h800-80gb")->usable_bytes(), find_gpu("h100-sxm-80gb")->usable_bytes());
  EXPECT_EQ(find_gpu("a100-pcie-80gb")->usable_bytes(), find_gpu("a100-80gb")->usable_bytes());
  EXPECT_EQ(find_gpu("h200-nvl-141gb")->usable_bytes(), find_gpu("h200-141gb")->usable_bytes());
  EXPECT_EQ(find_gpu("l20-48gb")->usable_bytes(), find_gpu("l40s-48gb")->usable_bytes());
  // Every reading is below the card's nvidia-smi total, by at most 3 %; 26 cards have one (a
  // misspelt id in gpus.cpp's readings would silently leave its card at nvidia-smi's total).
  int read = 0;
  for (const Gpu& g : gpu_table()) {
    if (g.cuda_total_bytes.value() == 0) continue;
    ++read;
    EXPECT_LT(g.cuda_total_bytes, g.memory_bytes) << g.id;
    EXPECT_GT(g.cuda_total_bytes.value(), g.memory_bytes.value() * 97 / 100) << g.id;
  }
  EXPECT_EQ(read, 26);
}

// Full checkpointing of some blocks only (training.checkpointed_layers): each block left out keeps
// all its activations, each recomputed one its input; every block is the plain full mode, none the
// saved activations of no checkpointing.
TEST(Estimate, CheckpointingSomeBlocksInterpolates) {
  const auto saved = [](Checkpointing mode, std::int64_t blocks) {
    Config c = llama();
    c.training.checkpointing = mode;
    c.training.checkpointed_layers = blocks;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e.breakdown.activations.value();
  };
  const std::int64_t layers = llama().model.num_hidden_layers;
  EXPECT_EQ(saved(Checkpointing::kFull, layers), saved(Checkpointing::kFull, -1));
  EXPECT_EQ(saved(Checkpointing::kFull, 0), saved(Checkpointing::kNone, -1));
  const std::int64_t step = saved(Checkpointing::kFull, 0) - saved(Checkpointing::kFull, 1);
  EXPECT_GT(step, 0);
  EXPECT_NEAR(static_cast<double>(saved(Checkpointing::kFull, layers / 2)),
              static_cast<double>(saved(Checkpointing::kFull, 0) - step * (layers / 2)), 64.0);
  // The peak lies between the two modes, and more checkpointed blocks never raise it.
  Config half = llama();
  half.training.checkpointing = Checkpointing::kFull;
  half.training.checkpointed_layers = layers / 2;
  Config all = half, none = half;
  all.training.checkpointed_layers = -1;
  none.training.checkpointing = Checkpointing::kNone;
  EXPECT_LE(estimate(all).peak_allocated_bytes, estimate(half).peak_allocated_bytes);
  EXPECT_LE(estimate(half).peak_allocated_bytes, estimate(none).peak_allocated_bytes);
}

// zero_grad(set_to_none=False), PyTorch 1.x's default, zeroes the gradients in place: the next
// step's forward runs beside them (BERT-large, 335,141,888 fp32 gradients), as with accumulation.
TEST(Estimate, GradientsZeroedInPlaceStayThroughTheNextForward) {
  const auto forward = [](bool set_to_none) {
    Config c = parse_config_text(R"({"model":{"preset":"bert-large-uncased"},"training":{"precision":"fp32",)"
                                 R"("micro_batch_size":4,"seq_len":512,"attention":"eager"}})")
                   .config;
    c.training.zero_grad_set_to_none = set_to_none;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    for (const Phase& p : e.phases) {
      if (p.name == "forward") return p.bytes.value();
    }
    return std::int64_t{0};
  };
  EXPECT_EQ(forward(false) - forward(true), std::int64_t{335'141'888} * 4);
}


// QA pass, Dec 4: every row of the GPU table took the chosen card's CUDA context. Each card's row
// is its own device total: the chosen card's context out, its own in; a given overhead stays.
TEST(Estimate, EachCardsRowCarriesItsOwnContext) {
  const Config c = parse_config_text(R"({"model":{"preset":"llama-3-8b"},"training":{"finetune":{"method":"lora"}}})").config;
  const Estimate e = estimate(c);
  ASSERT_TRUE(e.ok());
  const Gpu& chosen = *find_gpu(c.hardware.gpu);
  for (const Fit& f : e.fits) {
    EXPECT_EQ(f.need_bytes, e.device_total_bytes - chosen.context_bytes + f.gpu->context_bytes) << f.gpu->id;
  }
  Config given = c;
  given.hardware.overhead_bytes = 1 << 30;
  const Estimate g = estimate(given);
  for (const Fit& f : g.fits) EXPECT_EQ(f.need_bytes, g.device_total_bytes) << f.gpu->id;
}


// QA pass, Dec 4: the device total moved by steps with the sequence length (2.5 % of reserve at
// 2048 tokens, 15 % at 4096) with nothing said. Where the replayed reserve is high, a note names
// the request that found no cached block, and the remedy; expandable segments take it away.
TEST(Estimate, AHighReserveSaysWhichRequestMadeIt) {
  const auto note = [](const Estimate& e) {
    for (const std::string& n : e.notes) {
      if (n.rfind("The allocator reserves ", 0) == 0) return n;
    }
    return std::string();
  };
  Config c =
      parse_config_text(R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,"optimizer_impl":"foreach"}})")
          .config;
  const Estimate high = estimate(c);
  ASSERT_TRUE(high.fragmentation_simulated);
  ASSERT_GE(high.fragmentation, 0.10);
  EXPECT_NE(note(high).find("request found no cached block that large"), std::string::npos) << note(high);
  EXPECT_NE(note(high).find("expandable_segments:True"), std::string::npos);
  c.hardware.expandable_segments = true;
  const Estimate expandable = estimate(c);
  EXPECT_LT(expandable.fragmentation, 0.05);
  EXPECT_EQ(note(expandable), "");
  c.hardware.expandable_segments = false;
  c.training.seq_len = 2048;
  EXPECT_EQ(note(estimate(c)), "");
}

// A request under a GiB is named in MiB (it read "a 0.00 GiB request"), and the request named is
// the last one at a new high that cut a large segment, not a 2 MiB small-pool segment that came
// after it (a 70B GPTQ LoRA step read "a 0.00 GiB request in the optimizer step").
TEST(Estimate, AHighReserveNamesItsRequestInUnitsThatShowIt) {
  const auto note = [](const Estimate& e) {
    for (const std::string& n : e.notes) {
      if (n.rfind("The allocator reserves ", 0) == 0) return n;
    }
    return std::string();
  };
  const Estimate tiny = estimate(parse_config_text(
      R"({"model":{"model_type":"gpt2","vocab_size":1000,"hidden_size":64,"num_hidden_layers":2,)"
      R"("num_attention_heads":4,"intermediate_size":256,"max_position_embeddings":128},)"
      R"("training":{"micro_batch_size":2,"seq_len":32,"precision":"fp32","attention":"eager"}})").config);
  ASSERT_TRUE(tiny.ok());
  EXPECT_NE(note(tiny).find("a 1 MiB request"), std::string::npos) << note(tiny);
  // torchtune's Llama 3.2 3B full fine-tune without checkpointing: the logits' gradient in backward.
  const Estimate large = estimate(parse_config_text(
      R"({"model":{"preset":"llama-3.2-3b"},"training":{"framework":"torchtune","precision":"bf16",)"
      R"("micro_batch_size":2,"seq_len":4096,"attention":"flash","optimizer":"adamw","optimizer_impl":"foreach",)"
      R"("checkpointing":"none","dropout":0.0,"loss":"eager"},"hardware":{"gpu":"a100-80gb"}})").config);
  ASSERT_TRUE(large.ok());
  EXPECT_NE(note(large).find("in the backward pass, a 5.87 GiB request"), std::string::npos) << note(large);
}

}  // namespace
}  // namespace memfit

namespace memfit {
namespace {

// A multimodal model's vision tower (model.vision_type) is loaded and frozen: it adds its bytes to
// the weights, in the frozen base's dtype, and nothing else; ZeRO-3 shards it, parameter offload
// moves it; engines that do not build the multimodal class, and tensor or pipeline splits, are
// refused. Qwen2.5-VL-7B's tower: 676,550,144 parameters (transformers 5.24).
// Qwen2.5-VL-7B's config.json keys: its language model and its vision tower.
HfImport qwen25_vl_7b() {
  return import_hf_config_text(
      R"({"model_type":"qwen2_5_vl","hidden_size":3584,"intermediate_size":18944,"num_hidden_layers":28,)"
      R"("num_attention_heads":28,"num_key_value_heads":4,"vocab_size":152064,"max_position_embeddings":128000,)"
      R"("tie_word_embeddings":false,"vision_config":{"depth":32,"hidden_size":1280,"out_hidden_size":3584,)"
      R"("intermediate_size":3420}})");
}

TEST(Estimate, AVisionTowerIsHeldFrozenWithTheWeights) {
  const HfImport vl = qwen25_vl_7b();
  ASSERT_TRUE(vl.errors.empty());
  constexpr std::int64_t kTower = 676'550'144;
  Config with = default_config();
  with.model = vl.model;
  with.training.finetune.method = FinetuneMethod::kLora;
  Config without = with;
  without.model.vision_type = VisionTower::kNone;
  const auto added = [](const Config& a, const Config& b) {
    const Estimate x = estimate(a), y = estimate(b);
    EXPECT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(x.breakdown.activations.value(), y.breakdown.activations.value());
    EXPECT_EQ(x.breakdown.gradients.value(), y.breakdown.gradients.value());
    EXPECT_EQ(x.breakdown.optimizer_states.value(), y.breakdown.optimizer_states.value());
    EXPECT_EQ(x.trainable_parameter_count.value(), y.trainable_parameter_count.value());
    return x.breakdown.parameters.value() - y.breakdown.parameters.value();
  };
  EXPECT_EQ(estimate(with).parameters.vision_count.value(), kTower);
  EXPECT_EQ(added(with, without), 2 * kTower);  // a 16-bit base
  with.training.finetune.method = without.training.finetune.method = FinetuneMethod::kFull;
  EXPECT_EQ(added(with, without), 4 * kTower);  // AMP loads the model in fp32
  with.parallel.num_gpus = without.parallel.num_gpus = 4;
  with.parallel.zero_stage = without.parallel.zero_stage = 3;
  EXPECT_EQ(added(with, without), 4 * kTower / 4);
  // FSDP's SHARD_GRAD_OP keeps the tower's own, never-run units sharded and holds its root-unit
  // pieces (Qwen2.5-VL: the patch embedding and the merger) whole, as that unit runs; DeepSpeed's
  // ZeRO-2 holds it all whole.
  const std::int64_t root = 5120LL * 5120 + 5120 + 5120LL * 3584 + 3584 + 1280 + 1176LL * 1280;
  with.parallel.zero_stage = without.parallel.zero_stage = 2;
  EXPECT_EQ(added(with, without), 4 * (kTower - root) / 4 + 4 * root);
  with.training.implementation.framework = without.training.implementation.framework = Framework::kDeepspeed;
  with.training.precision = without.training.precision = Precision::kBf16Master;
  EXPECT_EQ(added(with, without), 2 * kTower);
  with.training.implementation.framework = without.training.implementation.framework = Framework::kHf;
  with.training.precision = without.training.precision = Precision::kBf16Mixed;
  with.parallel.zero_stage = without.parallel.zero_stage = 3;
  // The note says what the tower adds on this GPU, and the bytes per parameter leave it out.
  EXPECT_EQ(estimate(with).vision_bytes.value(), 4 * kTower / 4);
  EXPECT_EQ(estimate(with).static_bytes_per_parameter, estimate(without).static_bytes_per_parameter);
  with.parallel.offload_params = without.parallel.offload_params = true;
  EXPECT_EQ(added(with, without), 0);
  EXPECT_EQ(estimate(with).breakdown.offloaded_bytes.value() - estimate(without).breakdown.offloaded_bytes.value(), 4 * kTower / 4);
  // The JSON says how large the tower is.
  const Json j = estimate_to_json(estimate(with));
  EXPECT_EQ(j.find("vision_parameter_count")->as_exact_integer().value_or(0), kTower);
  // Refused where memfit cannot place it.
  const auto refused = [](Config c, const char* field) {
    const Estimate e = estimate(c);
    bool named = false;
    for (const Issue& i : e.errors) named = named || i.field == field;
    EXPECT_TRUE(named) << field;
  };
  Config split = default_config();
  split.model = vl.model;
  split.parallel.num_gpus = 2;
  split.parallel.tensor = 2;
  refused(split, "parallel.tensor");
  split.parallel.tensor = 1;
  split.parallel.pipeline = 2;
  refused(split, "parallel.pipeline");
  Config torchtune = default_config();
  torchtune.model = vl.model;
  torchtune.training.implementation.framework = Framework::kTorchtune;
  refused(torchtune, "training.framework");
  // FSDP1 without use_orig_params cannot flatten the root unit's frozen tower pieces beside the
  // trained embeddings (a full fine-tune): a warning says so, and the FSDP export turns it on.
  Config fsdp1 = default_config();
  fsdp1.model = vl.model;
  fsdp1.parallel.num_gpus = 4;
  fsdp1.parallel.zero_stage = 3;
  fsdp1.parallel.fsdp_version = FsdpVersion::kOne;
  fsdp1.parallel.fsdp_use_orig_params = false;
  bool advised = false;
  for (const Issue& w : estimate(fsdp1).warnings) advised = advised || w.field == "parallel.fsdp_use_orig_params";
  EXPECT_TRUE(advised);
  Config exported = fsdp1;
  exported.training.precision = Precision::kBf16Fsdp;  // what accelerate's FSDP export takes
  EXPECT_NE(export_plan(exported, Engine::kFsdp).text.find("fsdp_use_orig_params: true"), std::string::npos);
  fsdp1.parallel.fsdp_use_orig_params = true;
  const Estimate fsdp1_ok = estimate(fsdp1);
  EXPECT_TRUE(fsdp1_ok.ok());
  // The root unit gathers the tower's outer pieces (Qwen2.5-VL: the patch embedding and the merger,
  // 5120² + 5120 + 5120 × 3584 + 3584 + 1280 + 1176 × 1280 elements) beside the embeddings and head:
  // the forward's high point grows by the sharded tower plus them, in bf16.
  Config fsdp1_text = fsdp1;
  fsdp1_text.model.vision_type = VisionTower::kNone;
  EXPECT_EQ(fsdp1_ok.phases[1].bytes.value() - estimate(fsdp1_text).phases[1].bytes.value(),
            4 * kTower / 4 + 2 * root);
  // The engines that build their own, text-only model cannot take it.
  for (const Engine engine : {Engine::kMegatron, Engine::kTorchtitan, Engine::kTorchtune}) {
    const Export x = export_plan(fsdp1, engine);
    bool named = false;
    for (const Issue& i : x.errors) named = named || i.field == "model.vision_type";
    EXPECT_TRUE(named);
  }
  exported.parallel.fsdp_use_orig_params = true;
  EXPECT_TRUE(export_plan(exported, Engine::kFsdp).errors.empty());
  Config seeds = default_config();
  seeds.model = vl.model;
  seeds.training.precision = Precision::kSeed14p;
  refused(seeds, "model.vision_type");
  Config gemma = default_config();
  gemma.model = vl.model;
  gemma.model.vision_type = VisionTower::kGemma3;
  gemma.model.vision_encoder = VisionEncoder::kClip;  // only LLaVA's encoder is a choice
  refused(gemma, "model.vision_encoder");
  Config encoder = default_config();
  encoder.model = *preset_model("bert-base-uncased");
  encoder.model.vision_type = VisionTower::kQwen2Vl;
  refused(encoder, "model.vision_type");
}

// Whether the estimate refuses the configuration naming `field`.
void refused_image(const Config& c, const char* field) {
  bool named = false;
  for (const Issue& i : estimate(c).errors) named = named || i.field == field;
  EXPECT_TRUE(named) << field;
}

// training.finetune.train_vision: the tower's parts a full fine-tune trains hold weights,
// gradients and optimizer states as the language model's do; what stays frozen is held as before.
// training.images_per_sample: what images leave saved in a Qwen-VL tower (measured from the real
// classes: tools/frameworks/vision_images.py, compare.py check_vision_images), freed last in
// backward. Qwen2.5-VL-7B (32 blocks, width 1280, MLP 3420, 16 heads, 14-pixel patches of 2 frames)
// under AMP: per patch and block 32·e + 8·ff + 4 a head + 8 (norms, qkv, q and k after the rotary,
// the attention output and log-sum-exp, the MLP), the rotary tables once (cos and sin, fp32, the
// head dim each), the merger's 12·e + 8 and the patch embedding's 16-bit input (3·2·14² a patch).
TEST(Estimate, ImagesThroughAQwenVlTowerAreSavedForBackward) {
  const HfImport vl = qwen25_vl_7b();
  ASSERT_TRUE(vl.errors.empty());
  EXPECT_EQ(vl.model.vision_num_heads, 16);
  constexpr std::int64_t n = 1024, e = 1280;
  Config c = default_config();  // bf16_mixed, one sequence a micro-batch
  c.model = vl.model;
  c.training.finetune.train_vision = VisionTrain::kAll;
  const Estimate text = estimate(c);
  c.training.images_per_sample = 1;
  c.training.image_patches = n;
  const Estimate images = estimate(c);
  ASSERT_TRUE(images.ok()) << images.errors[0].message;
  const std::int64_t expected = n * 32 * (32 * e + 8 * 3420 + 4 * 16 + 8) + 8 * n * (e / 16) + n * (12 * e + 8) +
                                n * 3 * 2 * 14 * 14 * 2;
  EXPECT_EQ(images.vision_activation_bytes.value(), expected);
  EXPECT_EQ(images.breakdown.activations.value() - text.breakdown.activations.value(), expected);
  EXPECT_TRUE(text.vision_activation_bytes.is_zero());
  // Checkpointed, each block keeps its 16-bit input; the rest as before, the rotary tables aside.
  c.training.checkpointing = Checkpointing::kFull;
  EXPECT_EQ(estimate(c).vision_activation_bytes.value(), n * 32 * 2 * e + n * (12 * e + 8) + n * 3 * 2 * 14 * 14 * 2);
  // A frozen tower keeps nothing, but under checkpointing gradient_checkpointing_enable's
  // enable_input_require_grads makes the patch embedding's output require grad: each checkpointed
  // block keeps its input, and the merger what it needs to pass a gradient back (LoRA's usual run
  // with images).
  c.training.finetune.method = FinetuneMethod::kLora;
  c.training.finetune.train_vision = VisionTrain::kAuto;
  EXPECT_EQ(estimate(c).vision_activation_bytes.value(), n * 32 * 2 * e + n * (6 * e + 8));
  c.training.checkpointing = Checkpointing::kNone;
  EXPECT_TRUE(estimate(c).vision_activation_bytes.is_zero());
  // Refused where it is not modelled, each naming its field.
  const auto refused = [](Config x, const char* field) {
    bool named = false;
    for (const Issue& i : estimate(x).errors) named = named || i.field == field;
    EXPECT_TRUE(named) << field;
  };
  Config no_patches = c;
  no_patches.training.image_patches = 0;
  refused(no_patches, "training.image_patches");
  Config eager = c;
  eager.training.implementation.attention = AttentionImpl::kEager;
  refused(eager, "training.attention");
  Config gemma = c;  // Gemma 3's SigLIP sees every image at 896 pixels: 4,096 patches
  gemma.model.vision_type = VisionTower::kGemma3;
  refused(gemma, "training.image_patches");
  Config too_many = c;
  too_many.training.image_patches = 4 * 2048 + 4;  // 2,049 tokens of 2 × 2 patches, past seq_len 2,048
  refused(too_many, "training.image_patches");
  Config heads = c;
  heads.model.vision_num_heads = 7;  // 1280 is no multiple of 7
  refused(heads, "model.vision_num_heads");
  // Qwen3-VL's input embeddings take no hook: its frozen encoder keeps nothing, checkpointed or not.
  Config qwen3 = c;
  qwen3.model.vision_type = VisionTower::kQwen3Vl;
  qwen3.training.checkpointing = Checkpointing::kFull;
  EXPECT_TRUE(estimate(qwen3).ok());
  EXPECT_TRUE(estimate(qwen3).vision_activation_bytes.is_zero());
  // Activation offload moves the encoder blocks' tensors to the host with the language model's.
  Config offload = c;
  offload.training.finetune.method = FinetuneMethod::kFull;
  offload.training.finetune.train_vision = VisionTrain::kAll;
  const Estimate kept = estimate(offload);
  offload.training.activation_offload = true;
  const Estimate moved = estimate(offload);
  EXPECT_EQ(moved.vision_activation_bytes.value(), kept.vision_activation_bytes.value());
  EXPECT_LT(moved.breakdown.activations.value() + n * 32 * (32 * e + 8 * 3420 + 64 + 8) / 2, kept.breakdown.activations.value());
}

// Images through the plain ViT towers (tools/frameworks/vision_images.py: 4,320 cases of Gemma 3,
// LLaVA over CLIP, SigLIP and Pixtral, and Mistral 3, exact in compare.py). Released sizes under
// Qwen2.5-VL-7B's language model (d = 3,584), one image a sequence unless said.
TEST(Estimate, ImagesThroughAViTTowerAreSavedForBackward) {
  const HfImport vl = qwen25_vl_7b();
  ASSERT_TRUE(vl.errors.empty());
  constexpr std::int64_t d = 3584;
  Config c = default_config();  // bf16_mixed: a full fine-tune's fp32 weights under autocast
  c.model = vl.model;
  c.model.vision_type = VisionTower::kGemma3;
  c.model.vision_depth = c.model.vision_hidden_size = c.model.vision_intermediate_size = 0;
  c.model.vision_num_heads = c.model.vision_patch_size = c.model.vision_num_position_embeddings = 0;
  c.training.finetune.train_vision = VisionTrain::kAll;
  c.training.images_per_sample = 1;  // image_patches 0: SigLIP's fixed 64 × 64 patches
  {
    // Gemma 3's SigLIP (27 blocks, width 1152, MLP 4304, 16 heads, 14-pixel patches): per token and
    // block 24·e + 4·ff + 4 a head + 16 under AMP; the pixels' 16-bit copy, the post_layernorm
    // (input and fp32 statistics), and the projector: the pool's input, the RMSNorm's fp32 tensors
    // and the projection's input over the 256 pooled tokens.
    constexpr std::int64_t n = 4096, e = 1152, ff = 4304, L = 27, m = 256;
    const Estimate r = estimate(c);
    ASSERT_TRUE(r.ok()) << r.errors[0].message;
    const std::int64_t outside = n * 3 * 14 * 14 * 2 + n * (4 * e + 8) + 4 * n * e + 10 * m * e + 4 * m + 4 * e;
    EXPECT_EQ(r.vision_activation_bytes.value(), n * (24 * e + 4 * ff + 4 * 16 + 16) * L + outside);
    Config ckpt = c;  // checkpointed: each block's fp32 input (the position embedding is fp32)
    ckpt.training.checkpointing = Checkpointing::kFull;
    EXPECT_EQ(estimate(ckpt).vision_activation_bytes.value(), n * e * 4 * L + outside);
    Config tokens = c;  // 16 tokens an image: 4 × 4 windows of 16 × 16 patches
    tokens.model.vision_tokens_per_image = 16;
    EXPECT_EQ(estimate(tokens).vision_activation_bytes.value(),
              n * (24 * e + 4 * ff + 4 * 16 + 16) * L + n * 3 * 14 * 14 * 2 + n * (4 * e + 8) + 4 * n * e + 10 * 16 * e +
                  4 * 16 + 4 * e);
  }
  {
    // LLaVA-1.5's CLIP (24 blocks, width 1024, MLP 4096, 16 heads; 576 patches and the class token)
    // in 16-bit weights, the encoder trained, two images: vision_feature_layer -2 leaves the last
    // block's saves to die, so 23 blocks keep theirs (16·e + 6·ff + 4 a head + 16: quick_gelu keeps
    // its sigmoid and product); pre_layrnorm; the frozen projector's GELU and linear_2 inputs.
    Config llava = c;
    llava.model.vision_type = VisionTower::kLlava;
    llava.training.precision = Precision::kBf16;
    llava.training.finetune.train_vision = VisionTrain::kEncoder;
    llava.training.images_per_sample = 2;
    constexpr std::int64_t k = 2, p = 576, n = k * (p + 1), e = 1024, ff = 4096;
    const std::int64_t block = n * (16 * e + 6 * ff + 4 * 16 + 16);
    const std::int64_t outside = k * p * 3 * 14 * 14 * 2 + n * (2 * e + 8) + 2 * k * p * d;
    EXPECT_EQ(estimate(llava).vision_activation_bytes.value(), block * 23 + outside);
    llava.model.vision_feature_layer = -1;
    EXPECT_EQ(estimate(llava).vision_activation_bytes.value(), block * 24 + outside);
    llava.model.vision_feature_layer = -30;
    refused_image(llava, "model.vision_feature_layer");
  }
  {
    // Mistral 3's Pixtral (24 blocks, width 1024, 14-pixel patches, merged 2 × 2) in fp32,
    // checkpointed, everything trained, a 448-pixel image: 1,024 patches, 256 tokens. Under SDPA the
    // images' block-diagonal mask (n × n fp32) is kept once; FlashAttention-2 takes none.
    Config mistral = c;
    mistral.model.vision_type = VisionTower::kMistral3;
    mistral.training.precision = Precision::kFp32;
    mistral.training.checkpointing = Checkpointing::kFull;
    mistral.training.image_patches = 1024;
    mistral.training.implementation.attention = AttentionImpl::kSdpa;
    constexpr std::int64_t n = 1024, e = 1024, m = 256;
    const std::int64_t flash = n * e * 4 * 24 + n * 3 * 14 * 14 * 4 + n * (8 * e + 4) + 12 * n * e + 4 * n +
                               4 * m * e + 8 * m * d;
    EXPECT_EQ(estimate(mistral).vision_activation_bytes.value(), flash + 4 * n * n);
    mistral.training.implementation.attention = AttentionImpl::kFlash;
    EXPECT_EQ(estimate(mistral).vision_activation_bytes.value(), flash);
    mistral.training.image_patches = 1026;  // not whole merged patches
    refused_image(mistral, "training.image_patches");
  }
  {
    // A frozen tower under checkpointing keeps each block's input (the input hook) and what its
    // frozen projector passes a gradient through, in the dtypes the run's weights give. LoRA over a
    // 16-bit base under bf16_mixed (16-bit weights under autocast): SigLIP's stream is bf16.
    constexpr std::int64_t n = 4096, e = 1152, L = 27, m = 256;
    Config lora = c;
    lora.training.finetune.method = FinetuneMethod::kLora;
    lora.training.finetune.train_vision = VisionTrain::kAuto;
    lora.training.checkpointing = Checkpointing::kFull;
    const std::int64_t frozen = n * (4 * e + 8) + 4 * n * e + 4 * m * e + 4 * m + 4 * e;
    EXPECT_EQ(estimate(lora).vision_activation_bytes.value(), n * e * 2 * L + frozen);
    // QLoRA: bitsandbytes' Linear4bit returns its input's dtype, so after LayerNorm 2's fp32 output
    // the stream is fp32 from the first block's MLP on (its own input bf16: 2 bytes a token less);
    // prepare_model_for_kbit_training's fp32 position embedding makes the first one fp32 too.
    Config qlora = lora;
    qlora.training.finetune.base_bits = 4;
    qlora.training.finetune.quant_method = QuantMethod::kBitsandbytes;
    EXPECT_EQ(estimate(qlora).vision_activation_bytes.value(), n * e * 4 * L - 2 * n * e + frozen);
    qlora.training.finetune.prepare_kbit = true;
    EXPECT_EQ(estimate(qlora).vision_activation_bytes.value(), n * e * 4 * L + frozen);
    Config eight = qlora;  // an 8-bit tower is not measured
    eight.training.finetune.base_bits = 8;
    refused_image(eight, "training.finetune.base_bits");
    // A full fine-tune in 16-bit weights under autocast (bf16_autocast) keeps what AMP keeps in SigLIP.
    Config autocast = c;
    autocast.training.precision = Precision::kBf16Autocast;
    const Estimate amp = estimate(c), sixteen = estimate(autocast);
    ASSERT_TRUE(sixteen.ok()) << sixteen.errors[0].message;
    EXPECT_EQ(sixteen.vision_activation_bytes, amp.vision_activation_bytes);
  }
  Config none = default_config();  // no tower to run images through
  none.training.images_per_sample = 1;
  refused_image(none, "training.images_per_sample");
  Config positions = c;  // a CLIP of one position has no patch
  positions.model.vision_type = VisionTower::kLlava;
  positions.model.vision_num_position_embeddings = 1;
  refused_image(positions, "model.vision_num_position_embeddings");
  Config many = c;  // Pixtral's n² terms overflow here, but SigLIP has none: nothing is refused
  many.training.checkpointing = Checkpointing::kFull;
  many.training.micro_batch_size = 2;
  many.training.images_per_sample = 100'000;
  many.training.seq_len = 100'000'000;
  EXPECT_TRUE(estimate(many).ok());
  Config fixed = c;  // SigLIP and CLIP take no other image size
  fixed.training.image_patches = 1024;
  refused_image(fixed, "training.image_patches");
  Config tokens = c;  // 200 tokens pool no square grid
  tokens.model.vision_tokens_per_image = 200;
  refused_image(tokens, "model.vision_tokens_per_image");
}


TEST(Estimate, AVisionTowerTrainsWhereTheRunTrainsIt) {
  const HfImport vl = qwen25_vl_7b();
  ASSERT_TRUE(vl.errors.empty());
  constexpr std::int64_t kTower = 676'550'144;
  // Qwen2.5-VL's merger (the projector LLaMA-Factory and ms-swift name): its RMSNorm over the
  // encoder's width and two biased linears, 4 × 1280 wide, out to the language model's 3584.
  constexpr std::int64_t kProjector = 1280 + 5120LL * 5120 + 5120 + 3584LL * 5120 + 3584;
  Config frozen = default_config();  // bf16_mixed (AMP), AdamW, one GPU
  frozen.model = vl.model;
  frozen.training.finetune.train_vision = VisionTrain::kNone;
  const Estimate base = estimate(frozen);
  ASSERT_TRUE(base.ok());
  const auto trains = [&](VisionTrain part, Framework framework = Framework::kHf) {
    Config c = frozen;
    c.training.finetune.train_vision = part;
    c.training.implementation.framework = framework;
    return estimate(c);
  };
  for (const auto& [part, trained] : {std::pair{VisionTrain::kAll, kTower}, std::pair{VisionTrain::kProjector, kProjector},
                                      std::pair{VisionTrain::kEncoder, kTower - kProjector}}) {
    const Estimate e = trains(part);
    ASSERT_TRUE(e.ok());
    // The weights are held as before (fp32 under AMP, trained or not); the trained part adds its
    // fp32 gradients and AdamW's two fp32 moments; the counts say which parameters train.
    EXPECT_EQ(e.breakdown.parameters.value(), base.breakdown.parameters.value());
    EXPECT_EQ(e.breakdown.gradients.value() - base.breakdown.gradients.value(), 4 * trained);
    EXPECT_EQ(e.breakdown.optimizer_states.value() - base.breakdown.optimizer_states.value(), 8 * trained);
    EXPECT_EQ(e.trainable_parameter_count.value() - base.trainable_parameter_count.value(), trained);
    EXPECT_EQ(e.parameter_count.value(), base.parameter_count.value());  // the language model's
    EXPECT_EQ(e.vision_bytes.value(), 4 * (kTower - trained));          // what stays frozen
    EXPECT_EQ(estimate_to_json(e).find("vision_trained_parameter_count")->as_exact_integer().value_or(0), trained);
    // The note says how many tokens an image adds to the sequence (Qwen2.5-VL: 14-pixel patches
    // merged 2 × 2).
    bool tokens = false;
    for (const std::string& n : e.notes) tokens = tokens || n.find("(height / 28) × (width / 28) tokens an image") != std::string::npos;
    EXPECT_TRUE(tokens);
    EXPECT_EQ(e.static_bytes_per_parameter, 16.0);
  }
  // A tower that trains runs: under AMP, autocast keeps a 16-bit copy of each weight and bias its
  // matmuls and patch convolution read (not its RMSNorms: 2 × 32 blocks and the merger's, 1280 wide);
  // under ZeRO-3 one of the language model's units bounds the copies.
  const Estimate all = trains(VisionTrain::kAll);
  EXPECT_EQ(all.breakdown.weight_copies.value() - base.breakdown.weight_copies.value(),
            2 * (kTower - 2 * 1280 * 32 - 1280));
  // Training some blocks only: a trained tower feeds the language model at its input, so backward
  // runs through every block, as for a trained embedding.
  Config some = frozen;
  some.training.finetune.trainable_layers = 4;
  Config embeddings = some;
  embeddings.training.finetune.train_embeddings = true;
  some.training.finetune.train_vision = VisionTrain::kProjector;
  EXPECT_EQ(estimate(some).breakdown.activations.value(), estimate(embeddings).breakdown.activations.value());
  // auto: TRL's SFTTrainer freezes nothing; the other stacks are taken to freeze it.
  EXPECT_EQ(trains(VisionTrain::kAuto, Framework::kTrl).trainable_parameter_count.value(),
            base.trainable_parameter_count.value() + kTower);
  EXPECT_EQ(trains(VisionTrain::kAuto).trainable_parameter_count.value(), base.trainable_parameter_count.value());
  // ZeRO-3 on 4 GPUs shards the trained tower's gradients and states with the model's.
  Config sharded = frozen;
  sharded.parallel.num_gpus = 4;
  sharded.parallel.zero_stage = 3;
  const Estimate sharded_frozen = estimate(sharded);
  sharded.training.finetune.train_vision = VisionTrain::kAll;
  const Estimate sharded_all = estimate(sharded);
  EXPECT_EQ(sharded_all.breakdown.optimizer_states.value() - sharded_frozen.breakdown.optimizer_states.value(),
            8 * kTower / 4);
  EXPECT_EQ(sharded_all.breakdown.weight_copies.value(), sharded_frozen.breakdown.weight_copies.value());
  // FSDP1's root unit mixes frozen and trained parameters only where part of the tower stays
  // frozen (use_orig_params then needed); with all of it training, nothing there is frozen.
  const auto advised = [](Config c) {
    c.parallel.fsdp_version = FsdpVersion::kOne;
    c.parallel.fsdp_use_orig_params = false;
    bool said = false;
    for (const Issue& w : estimate(c).warnings) said = said || w.field == "parallel.fsdp_use_orig_params";
    return said;
  };
  EXPECT_FALSE(advised(sharded));
  sharded.training.finetune.train_vision = VisionTrain::kProjector;
  EXPECT_TRUE(advised(sharded));
  // Under a PEFT method the tower is held frozen beside the adapters: another choice is refused.
  Config lora = frozen;
  lora.training.finetune.method = FinetuneMethod::kLora;
  lora.training.finetune.train_vision = VisionTrain::kAll;
  bool named = false;
  for (const Issue& i : estimate(lora).errors) named = named || i.field == "training.finetune.train_vision";
  EXPECT_TRUE(named);
  lora.training.finetune.train_vision = VisionTrain::kAuto;
  lora.training.implementation.framework = Framework::kTrl;
  EXPECT_TRUE(estimate(lora).ok());
  EXPECT_EQ(estimate(lora).vision_bytes.value(), 2 * kTower);
}

}  // namespace
}  // namespace memfit
