// Sharded memory: under ZeRO-3 the autocast / FP8 weight copies exist for the gathered unit only,
// hybrid sharding shards within its group, and interleaved pipelines hold more micro-batches.
#include <gtest/gtest.h>

#include <algorithm>

#include "memfit/memfit.hpp"
#include "activations.hpp"
#include "phases.hpp"
#include "placement.hpp"
#include "memfit/recipes.hpp"

namespace memfit {
namespace {

Config llama70b(Precision precision, std::int64_t gpus, std::int64_t zero) {
  Config c = parse_config_text(R"({"model":{"preset":"llama-3-70b"},"training":{"seq_len":4096,)"
                               R"("checkpointing":"full"}})").config;
  c.training.precision = precision;
  c.parallel.num_gpus = gpus;
  c.parallel.zero_stage = zero;
  return c;
}

// The bytes of one of an estimate's phases ("forward", "backward", "optimizer_step"); -1 if absent.
std::int64_t phase_bytes(const Estimate& e, const char* name) {
  for (const Phase& p : e.phases) {
    if (p.name == std::string(name)) return p.bytes.value();
  }
  return -1;
}

// The bug of issue 9: bf16_mixed (AMP) with ZeRO-3 counted every autocast copy on every GPU
// (about 129 GiB for 70B), so a 70B model never fit, even on 64 GPUs.
TEST(Sharding, Zero3KeepsAutocastCopiesForTheGatheredUnitOnly) {
  const Estimate e = estimate(llama70b(Precision::kBf16Mixed, 64, 3));
  ASSERT_TRUE(e.ok());
  // One Llama-3-70B block: 4d² attention with GQA (d = 8192, kv 1024 wide) + 3·d·28672 MLP +
  // 2 norms = 855,654,400 parameters; its bf16 copy is 2 bytes each, in the same proportion of
  // the whole model's matmul weights as the block is of all parameters.
  EXPECT_LT(e.breakdown.weight_copies.value(), 2LL << 30);
  EXPECT_GT(e.breakdown.weight_copies.value(), 1LL << 30);
  EXPECT_EQ(e.fit.verdict, Verdict::kFits);
  // Without ZeRO-3 every GPU holds every copy: 2 bytes per matmul weight.
  const Estimate zero1 = estimate(llama70b(Precision::kBf16Mixed, 64, 1));
  EXPECT_GT(zero1.breakdown.weight_copies.value(), 120LL << 30);
  // FP8 copies (Transformer Engine) follow the same rule; bf16_fsdp gathers in bf16, no copies.
  EXPECT_LT(estimate(llama70b(Precision::kFp8Mixed, 64, 3)).breakdown.weight_copies.value(), 2LL << 30);
  EXPECT_TRUE(estimate(llama70b(Precision::kBf16Fsdp, 64, 3)).breakdown.weight_copies.is_zero());
}

TEST(Sharding, HybridShardingShardsWithinItsGroup) {
  Config full = llama70b(Precision::kBf16Fsdp, 64, 3);
  Config hybrid = full;
  hybrid.parallel.shard_degree = 8;
  const Estimate a = estimate(full), b = estimate(hybrid);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(b.breakdown.optimizer_states.value(), a.breakdown.optimizer_states.value() * 8);
  hybrid.parallel.shard_degree = 7;  // must divide the 64 data-parallel ranks
  EXPECT_FALSE(estimate(hybrid).ok());
}

// Expert parallelism is carved out of the data-parallel ranks, so ZeRO shards the experts only
// over the ranks that hold the same experts (QA report, Dec 3: with EP 8 on 8 GPUs the experts were
// divided by 8 twice and Mixtral's full fine-tune came out at 19 GiB a GPU, under the model's own
// 87 GiB of states per GPU). Whatever the expert degree, ZeRO-3 leaves every GPU 1/8 of it all.
TEST(Sharding, ExpertsAreShardedOverTheirOwnDataParallelGroup) {
  const auto run = [](std::int64_t expert, std::int64_t zero) {
    Config c = parse_config_text(R"({"model":{"preset":"mixtral-8x7b"},"training":{"seq_len":2048,)"
                                 R"("checkpointing":"full"},"parallel":{"num_gpus":8}})").config;
    c.parallel.expert = expert;
    c.parallel.zero_stage = zero;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e.breakdown;
  };
  for (const std::int64_t ep : {2, 4, 8}) {
    const Breakdown a = run(1, 3), b = run(ep, 3);
    EXPECT_NEAR(double(b.parameters.value()), double(a.parameters.value()), 1e-6 * double(a.parameters.value())) << ep;
    EXPECT_NEAR(double(b.optimizer_states.value()), double(a.optimizer_states.value()),
                1e-6 * double(a.optimizer_states.value())) << ep;
  }
  // ZeRO-1 with EP 8: each GPU keeps its own expert's states whole (its expert-data-parallel group
  // is one rank) and 1/8 of the rest: 1/8 of all states, as with EP 1; its weights are the dense
  // part whole and one expert in eight.
  const Breakdown z1 = run(8, 1), z1_ep1 = run(1, 1);
  EXPECT_NEAR(double(z1.optimizer_states.value()), double(z1_ep1.optimizer_states.value()),
              1e-6 * double(z1_ep1.optimizer_states.value()));
  EXPECT_LT(z1.parameters.value(), z1_ep1.parameters.value() / 4);
}

TEST(Sharding, InterleavedPipelineHoldsOnePlusPMinusOneOverPVMicroBatches) {
  Config c = llama70b(Precision::kBf16Master, 64, 1);
  c.parallel.tensor = 8;
  c.parallel.pipeline = 4;
  c.training.grad_accum_steps = 16;
  const Bytes plain = estimate(c).breakdown.activations;
  c.parallel.virtual_stages = 5;
  const Bytes interleaved = estimate(c).breakdown.activations;
  // 1F1B holds p = 4 micro-batches of L/p layers; interleaving with v = 5 holds
  // (p−1)·2 + (v−1)·p + 1 = 23 chunks of L/(p·v) layers = 4.6 micro-batches' worth:
  // 1 + (p − 1)/(p·v) = 1.15 times as much.
  EXPECT_EQ(interleaved.value(), plain.value() / 4 * 23 / 5);
  c.parallel.pipeline = 1;
  EXPECT_FALSE(estimate(c).ok());  // virtual stages need a pipeline
}

// Naive model parallelism (transformers' device_map="auto"): one micro-batch passes every stage
// before the next, so a stage holds one micro-batch's activations however many are accumulated,
// and one GPU works at a time.
TEST(Sharding, SequentialStagesHoldOneMicroBatch) {
  Config c = llama70b(Precision::kBf16, 4, 0);
  c.parallel.pipeline = 4;
  c.training.checkpointing = Checkpointing::kNone;
  c.training.grad_accum_steps = 16;
  const Estimate one_f_one_b = estimate(c);
  c.parallel.pipeline_schedule = PipelineSchedule::kSequential;
  const Estimate sequential = estimate(c);
  c.training.grad_accum_steps = 1;
  const Estimate single = estimate(c);
  ASSERT_TRUE(one_f_one_b.ok() && sequential.ok() && single.ok());
  EXPECT_EQ(sequential.breakdown.activations, single.breakdown.activations);
  // 1F1B keeps up to four micro-batches in flight on the first stage.
  EXPECT_GT(one_f_one_b.breakdown.activations.value(), 3 * sequential.breakdown.activations.value());
  // One stage works at a time: the step takes about four times the compute of one stage.
  c.training.grad_accum_steps = 16;
  Config overlapped = c;
  overlapped.parallel.pipeline_schedule = PipelineSchedule::kOneFOneB;
  EXPECT_GT(step_time(c).step_time_s, 3.0 * step_time(overlapped).step_time_s * 16.0 / 19.0);
  // Interleaving needs 1F1B; the launchers' exports run 1F1B only.
  c.parallel.virtual_stages = 2;
  const Estimate interleaved = estimate(c);
  ASSERT_FALSE(interleaved.ok());
  EXPECT_EQ(interleaved.errors.at(0).field, "parallel.virtual_stages");
  c.parallel.virtual_stages = 1;
  EXPECT_EQ(export_plan(c, Engine::kMegatron).errors.back().field, "parallel.pipeline_schedule");
}

// DeepSpeed ZeRO 1/2 allocate the reduce bucket at every backward, whole (reduce_bucket_size
// elements in the model's dtype), and a second under overlap_comm: on one GPU too, and however few
// parameters train (Qwen-1's Q-LoRA runs: ds_config_zero2.json, 2e8 elements, overlap_comm on).
TEST(Sharding, DeepSpeedReduceBucketsAreWholeAndDoubledByOverlapComm) {
  const auto backward = [](bool overlap, std::int64_t elements, std::int64_t stage = 2) {
    Config c = parse_config_text(R"({"model":{"preset":"llama-3.2-1b"},"training":{"framework":"deepspeed",)"
                                 R"("precision":"bf16_master","method":"lora","seq_len":512}})").config;
    c.parallel.zero_stage = stage;
    c.parallel.overlap_comm = overlap;
    c.parallel.reduce_bucket_elements = elements;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return phase_bytes(e, "backward");
  };
  const std::int64_t none = backward(false, 0);
  EXPECT_EQ(backward(false, 200'000'000) - none, 200'000'000 * 2);   // more than LoRA's ~11 M trainable
  EXPECT_EQ(backward(true, 200'000'000) - none, 2 * 200'000'000 * 2);
  // Stage 1: the engine turns contiguous_gradients and overlap_comm off, so no bucket.
  EXPECT_EQ(backward(true, 200'000'000, 1), backward(false, 0, 1));
}

// DeepSpeed's ZeRO optimizers step on fp32 gradients made at the step: the gradient partition
// flattened into a new tensor and cast to fp32; ZeRO-3 sub-group by sub-group (1e9 elements).
// bf16_master holds fp32 main gradients already: the flattened copy is the fp32 one (4 bytes).
TEST(Sharding, DeepSpeedStepsOnAnFp32CopyOfTheGradientPartition) {
  const auto step = [](const char* framework, std::int64_t stage, std::int64_t gpus) {
    Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-3.2-1b"},"training":{"framework":")") +
                                 framework + R"(","precision":"bf16_master","optimizer_impl":"fused","seq_len":512}})")
                   .config;
    c.parallel.zero_stage = stage;
    c.parallel.num_gpus = gpus;
    c.parallel.reduce_bucket_elements = 0;  // ZeRO-3's gradient bucket apart (DeepSpeedZero3KeepsItsGradientBucket)
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return phase_bytes(e, "optimizer_step");
  };
  const std::int64_t params = *estimate_json(R"({"model":{"preset":"llama-3.2-1b"}})").find("parameter_count")->as_exact_integer();
  // ZeRO-2 on 4 GPUs: a quarter of the parameters at 4 bytes.
  const std::int64_t z2 = step("deepspeed", 2, 4) - step("hf", 2, 4);
  EXPECT_NEAR(static_cast<double>(z2), static_cast<double>(params) / 4 * 4, 64.0);
  // ZeRO-3 on one GPU: DeepSpeed keeps 16-bit gradients (2 bytes, not fp32 main grads' 4) and at
  // the step flattens and casts one sub-group at a time (Llama-3.2-1B has 1.24e9 elements): 1e9,
  // passed by part of the block tensor that closes it (at most 8,192 x 2,048), at 2 + 4 bytes each.
  const std::int64_t z3 = step("deepspeed", 3, 1) - step("hf", 3, 1);
  EXPECT_GE(z3, std::int64_t{1'000'000'000} * 6 - params * 2);
  EXPECT_LT(z3, (std::int64_t{1'000'000'000} + 8192 * 2048) * 6 - params * 2);
}

// DeepSpeed stores gradients in the model's 16-bit dtype under ZeRO (engine.py get_data_types);
// without ZeRO its bf16 optimizer accumulates in fp32.
TEST(Sharding, DeepSpeedKeepsSixteenBitGradientsUnderZero) {
  const auto gradients = [](std::int64_t stage) {
    Config c = parse_config_text(R"({"model":{"preset":"llama-3.2-1b"},"training":{"framework":"deepspeed",)"
                                 R"("precision":"bf16_master"},"parallel":{"num_gpus":4}})")
                   .config;
    c.parallel.zero_stage = stage;
    return estimate(c).breakdown.gradients.value();
  };
  const std::int64_t params = *estimate_json(R"({"model":{"preset":"llama-3.2-1b"}})").find("parameter_count")->as_exact_integer();
  EXPECT_EQ(gradients(0), params * 4);
  EXPECT_EQ(gradients(2), params / 4 * 2);
}

// DeepSpeed's optimizer offload keeps the gradient partitions on the host with the states: ZeRO-3
// keeps none on the GPU (but its reduce bucket), ZeRO-2 one buffer the size of the largest parameter (Llama 3.2 1B: the
// 128,256 x 2,048 embedding, bf16). Other frameworks' offload keeps them where they were.
TEST(Sharding, DeepSpeedOptimizerOffloadKeepsGradientsOnTheHost) {
  const auto run = [](std::int64_t stage, const char* framework) {
    Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-3.2-1b"},"training":{"framework":")") +
                                 framework + R"(","precision":"bf16_master"},"parallel":{"num_gpus":4,)"
                                 R"("offload_optimizer":true}})")
                   .config;
    c.parallel.zero_stage = stage;
    return estimate(c);
  };
  const std::int64_t params = *estimate_json(R"({"model":{"preset":"llama-3.2-1b"}})").find("parameter_count")->as_exact_integer();
  const std::int64_t embedding = 128256LL * 2048 * 2;
  // ZeRO-3: only its reduce bucket stays (reduce_bucket_size, DeepSpeed's 5e8 elements, bf16).
  EXPECT_EQ(run(3, "deepspeed").breakdown.gradients.value(), 500'000'000LL * 2);
  EXPECT_EQ(run(2, "deepspeed").breakdown.gradients.value(), embedding);
  EXPECT_EQ(run(2, "deepspeed").breakdown.offloaded_bytes.value() - run(2, "hf").breakdown.offloaded_bytes.value(), params / 4 * 2 - embedding);
  EXPECT_GT(run(3, "hf").breakdown.gradients.value(), 0);
}

// FSDP (1 and 2) does not reshard the root unit after forward: the parameters outside the wrapped
// blocks stay gathered in the compute dtype until the end of backward. DeepSpeed's ZeRO-3 gathers
// and releases module by module, except what the step uses again within stage3_max_reuse_distance
// (1e9) parameters: the head, whose backward comes next; a block comes back after 2·128,256·4,096
// > 1e9 parameters of head, so none stays. Llama-3-8B: untied embedding and head (2 · 128,256 ·
// 4,096) and the final norm (4,096), bf16.
TEST(Sharding, FsdpKeepsTheRootUnitGatheredThroughForwardAndBackward) {
  const auto phase = [](const char* framework, const char* name, std::int64_t reuse = 1'000'000'000) {
    Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":")") +
                                 framework + R"(","precision":"bf16_fsdp","seq_len":2048}})").config;
    c.parallel.zero_stage = 3;
    c.parallel.num_gpus = 8;
    c.parallel.zero3_max_reuse_distance = reuse;
    c.parallel.reduce_bucket_elements = 0;  // DeepSpeed's gradient bucket apart (DeepSpeedZero3KeepsItsGradientBucket)
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return phase_bytes(e, name);
  };
  const std::int64_t root = (std::int64_t{2} * 128256 * 4096 + 4096) * 2, head = std::int64_t{128256} * 4096 * 2;
  EXPECT_EQ(phase("hf", "forward") - phase("deepspeed", "forward"), root - head);
  EXPECT_EQ(phase("hf", "backward") - phase("deepspeed", "backward"), root - head);
  EXPECT_EQ(phase("hf", "forward") - phase("deepspeed", "forward", 0), root);
}

// DeepSpeed ZeRO-3's reuse distance on a small vocabulary: Llama-2-7B's head (32,000 · 4,096 =
// 131M) comes back at once; block L − k comes back after 2k blocks (202M each) and the head twice,
// so blocks 32 and 31 stay gathered (2·202M + 262M < 1e9 < 4·202M + 262M): one more block than
// the one in use, and the head, at forward's end; the block alone at the top block's backward.
TEST(Sharding, DeepspeedKeepsWhatItReusesSoon) {
  const auto run = [](std::int64_t reuse) {
    Config c = parse_config_text(R"({"model":{"preset":"llama-2-7b"},"training":{"framework":"deepspeed",)"
                                 R"("precision":"bf16_master","seq_len":2048,"checkpointing":"full"}})").config;
    c.parallel.zero_stage = 3;
    c.parallel.num_gpus = 8;
    c.parallel.zero3_max_reuse_distance = reuse;
    c.parallel.reduce_bucket_elements = 0;  // DeepSpeed's gradient bucket apart (DeepSpeedZero3KeepsItsGradientBucket)
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e;
  };
  const Estimate none = run(0), kept = run(1'000'000'000);
  const std::int64_t block = 202'383'360, head = std::int64_t{32000} * 4096;
  EXPECT_EQ(phase_bytes(kept, "forward") - phase_bytes(none, "forward"), (block + head) * 2);
}

// The field the first error of a configuration names ("" when it estimates).
std::string refused_field(const char* json) {
  const Estimate e = estimate(parse_config_text(json).config);
  return e.errors.empty() ? std::string() : e.errors.front().field;
}

// Llama-2-7B under FSDP mixed precision (bf16_fsdp), full checkpointing, T = 2,048, ZeRO-3 over
// `gpus`, as `framework` runs it; `parallel` adds members to the parallel section.
Config fsdp_llama_2_7b(const std::string& framework, std::int64_t gpus, const std::string& parallel = "") {
  Config c = parse_config_text(R"({"model":{"preset":"llama-2-7b"},"training":{"framework":")" + framework +
                               R"(","precision":"bf16_fsdp","seq_len":2048,"checkpointing":"full",)"
                               R"("optimizer_impl":"foreach"},"parallel":{)" +
                               parallel + "}}")
                 .config;
  c.parallel.zero_stage = 3;
  c.parallel.num_gpus = gpus;
  return c;
}

// FSDP1 with limit_all_gathers=False: the CPU runs ahead and each gathered unit, freed on the CPU
// with the compute stream recorded, waits for the GPU. max_memory_allocated does not see it
// (PyTorch's free() drops it from allocated at once) but the reserve grows, up to the card, and
// the fit stays on the step's need. FSDP2 (torchtitan) and DeepSpeed have no such switch.
TEST(Sharding, Fsdp1WithoutTheRateLimiterReservesMoreButNeedsTheSame) {
  const auto run = [](bool limit, const char* framework, const char* gpu) {
    Config c = fsdp_llama_2_7b(framework, 4);
    c.parallel.fsdp_limit_all_gathers = limit;
    c.hardware.gpu = gpu;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e;
  };
  const Estimate limited = run(true, "hf", "h100-sxm-80gb"), ahead = run(false, "hf", "h100-sxm-80gb");
  EXPECT_EQ(limited.runahead_peak_reserved_bytes.value(), 0);
  EXPECT_EQ(ahead.peak_allocated_bytes, limited.peak_allocated_bytes);
  EXPECT_EQ(ahead.device_total_bytes, limited.device_total_bytes);
  EXPECT_EQ(ahead.fit.need_bytes, limited.fit.need_bytes);
  // Forward alone piles up all 32 blocks' bf16 parameters (202,383,360 each): 12 GiB more.
  EXPECT_GT(ahead.runahead_peak_reserved_bytes.value(), ahead.peak_reserved_bytes.value() + 32LL * 202'383'360 * 2);
  EXPECT_EQ(ahead.runahead_device_total_bytes, ahead.runahead_peak_reserved_bytes + ahead.breakdown.overhead);
  // On a 40 GB card the pile stops at the card (within the last segment that no longer fit), and
  // the step still fits as it did.
  const Estimate small = run(false, "hf", "a100-40gb");
  const std::int64_t card = find_gpu("a100-40gb")->usable_bytes().value();
  EXPECT_LE(small.runahead_device_total_bytes.value(), card);
  EXPECT_GT(small.runahead_device_total_bytes.value(), card - (1LL << 30));
  EXPECT_EQ(small.fit.verdict, run(true, "hf", "a100-40gb").fit.verdict);
  EXPECT_EQ(run(false, "deepspeed", "h100-sxm-80gb").runahead_peak_reserved_bytes.value(), 0);
  EXPECT_EQ(run(false, "torchtitan", "h100-sxm-80gb").runahead_peak_reserved_bytes.value(), 0);
}

// torchao Float8 linears save what nn.Linear saves (the bf16 input); backward casts grad_output
// twice, the input and the weight once, one byte each, for one linear at a time; with FSDP's fp8
// all-gather the gathered linear weights take one byte. Llama-3-8B: h 4096, MLP 14336, 7 linears
// per block (4096·(4096 + 1024·2 + 4096) + 3·4096·14336 = 218,103,808 weights), B·T = 4096.
TEST(Sharding, Float8LinearsSaveTheSameAndCastForAMoment) {
  const auto run = [](const char* float8, bool all_gather, std::int64_t gpus, const char* gpu = "h100-sxm-80gb") {
    // Eager attention: the recomputed block (its T×T scores) sets backward's high point, where the
    // casts are seen.
    Config c = parse_config_text(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp","seq_len":4096,)"
                                 R"("checkpointing":"full","attention":"eager"}})").config;
    c.training.float8 = parse_config_text(std::string(R"({"training":{"float8":")") + float8 + "\"}}").config.training.float8;
    c.parallel.zero_stage = 3;
    c.parallel.num_gpus = gpus;
    c.parallel.fsdp_version = FsdpVersion::kTwo;  // torchao's float8 all-gather is FSDP2's
    c.parallel.float8_all_gather = all_gather;
    c.hardware.gpu = gpu;
    return estimate(c);
  };
  const Estimate bf16 = run("none", false, 8), fp8 = run("tensorwise", false, 8), gathered = run("tensorwise", true, 8);
  ASSERT_TRUE(bf16.ok() && fp8.ok() && gathered.ok());
  EXPECT_EQ(fp8.breakdown.activations.value(), bf16.breakdown.activations.value());
  const std::int64_t tokens = 4096, h = 4096, ff = 14336;
  const std::int64_t casts = tokens * (h + 2 * ff), weight = h * ff;
  EXPECT_EQ(phase_bytes(fp8, "backward") - phase_bytes(bf16, "backward"), casts + weight);
  // fp8 all-gather: the gathered block's linear weights at 1 byte instead of 2, and no weight cast.
  const std::int64_t linear = 4096 * (4096 + 1024 * 2 + 4096) + 3 * 4096 * ff;
  EXPECT_EQ(phase_bytes(gathered, "forward") - phase_bytes(bf16, "forward"), -linear);
  EXPECT_EQ(phase_bytes(gathered, "backward") - phase_bytes(bf16, "backward"), casts - linear);
  // torch._scaled_mm needs FP8 tensor cores.
  const Estimate a100 = run("rowwise", false, 8, "a100-80gb");
  ASSERT_FALSE(a100.ok());
  EXPECT_EQ(a100.errors.front().field, "training.float8");
  // MX training: the same four casts, each with one 1-byte E8M0 scale per 32 elements, and only on
  // Blackwell's block-scaled matmuls.
  const Estimate b200 = run("none", false, 8, "b200-180gb"), mx = run("mxfp8", false, 8, "b200-180gb");
  ASSERT_TRUE(b200.ok() && mx.ok());
  EXPECT_EQ(mx.breakdown.activations.value(), b200.breakdown.activations.value());
  const std::int64_t mx_casts = casts + weight;
  EXPECT_EQ(phase_bytes(mx, "backward") - phase_bytes(b200, "backward"), mx_casts + (mx_casts + 31) / 32);
  const Estimate hopper = run("mxfp8", false, 8);
  ASSERT_FALSE(hopper.ok());
  EXPECT_EQ(hopper.errors.front().field, "training.float8");
  EXPECT_NE(hopper.errors.front().message.find("Blackwell"), std::string::npos);
}

// Gradient sync at the last micro-batch (FSDP's no_sync under accelerate / Lightning Fabric, a
// pipeline schedule over FSDP2): the micro-batches before it hold every unit's gradient unsharded,
// in the gathered dtype under FSDP1 (bf16 here) and in the reduce dtype under FSDP2 (fp32); the
// step still sees the fp32 shards. Llama-2-7B has 6,738,415,616 parameters.
TEST(Sharding, DeferredGradientSyncHoldsUnshardedGradients) {
  const auto run = [](const char* framework, const char* sync, std::int64_t accumulation, std::int64_t pipeline = 1) {
    Config c = fsdp_llama_2_7b(framework, 8, std::string(R"("gradient_sync":")") + sync + "\"");
    c.parallel.pipeline = pipeline;
    c.training.grad_accum_steps = accumulation;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e;
  };
  const std::int64_t params = 6'738'415'616;
  const Estimate deferred = run("hf", "auto", 4), every = run("hf", "every_micro_batch", 4);
  EXPECT_EQ(every.breakdown.gradients.value(), params * 4 / 8);
  EXPECT_EQ(deferred.breakdown.gradients.value(), params * 2);
  EXPECT_EQ(phase_bytes(deferred, "forward") - phase_bytes(every, "forward"), params * 2 - params * 4 / 8);
  EXPECT_EQ(phase_bytes(deferred, "optimizer_step"), phase_bytes(every, "optimizer_step"));
  EXPECT_GT(deferred.peak_reserved_bytes, every.peak_reserved_bytes);
  // One micro-batch per step has nothing to defer; torchtune and DeepSpeed reduce every micro-batch.
  EXPECT_EQ(run("hf", "auto", 1).breakdown.gradients.value(), params * 4 / 8);
  EXPECT_EQ(run("torchtune", "auto", 4).breakdown.gradients.value(), params * 4 / 8);
  EXPECT_EQ(run("deepspeed", "auto", 4).breakdown.gradients, run("deepspeed", "every_micro_batch", 4).breakdown.gradients);
  // FSDP2 under torchtitan's pipeline schedules accumulates in fp32 (4 ranks shard each stage).
  EXPECT_EQ(run("torchtitan", "auto", 4).breakdown.gradients.value(), params * 4 / 8);
  // The busiest of 2 stages: 16 blocks of 202,383,360, the final norm (4,096) and the head
  // (131,072,000), unsharded, in fp32.
  EXPECT_EQ(run("torchtitan", "auto", 4, 2).breakdown.gradients.value(),
            (16 * std::int64_t{202'383'360} + 4096 + 131'072'000) * 4);
  // bf16_master is DeepSpeed's recipe: whatever script drives it, the engine reduces every micro-batch.
  Config master = parse_config_text(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16_master",)"
                                    R"("grad_accum_steps":4},"parallel":{"num_gpus":8,"zero_stage":3}})")
                      .config;
  EXPECT_EQ(estimate(master).breakdown.gradients.value(), params * 4 / 8);  // fp32 main gradients, sharded
  // DeepSpeed's engine refuses no_sync with partitioned gradients: an error naming the field.
  EXPECT_EQ(refused_field(R"({"model":{"preset":"llama-2-7b"},"training":{"framework":"deepspeed"},)"
                          R"("parallel":{"num_gpus":8,"zero_stage":2,"gradient_sync":"last_micro_batch"}})"),
            "parallel.gradient_sync");
}

// reshard_after_forward never (torchtitan's default policy under a pipeline): every block of the
// stage stays gathered in bf16 between its forward and its backward, instead of one at a time.
TEST(Sharding, TorchtitanKeepsAPipelineStageGathered) {
  const auto run = [](const char* reshard) {
    Config c = fsdp_llama_2_7b("torchtitan", 8, std::string(R"("reshard_after_forward":")") + reshard + "\"");
    c.parallel.pipeline = 2;
    c.parallel.gradient_sync = GradientSync::kEveryMicroBatch;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e;
  };
  const std::int64_t block = 202'383'360;  // 16 blocks per stage
  const Estimate kept = run("auto"), freed = run("always");
  EXPECT_EQ(run("never").peak_allocated_bytes, kept.peak_allocated_bytes);
  EXPECT_EQ(phase_bytes(kept, "forward") - phase_bytes(freed, "forward"), (16 * block - block) * 2);
  // DeepSpeed's ZeRO-3 has no such switch (its reuse distance decides): an error naming the field.
  EXPECT_EQ(refused_field(R"({"model":{"preset":"llama-2-7b"},"training":{"framework":"deepspeed"},)"
                          R"("parallel":{"num_gpus":8,"zero_stage":3,"reshard_after_forward":"never"}})"),
            "parallel.reshard_after_forward");
}

// torch DDP keeps its all-reduce buckets beside the gradients unless gradient_as_bucket_view: a
// second copy of Llama-2-7B's fp32 gradients (AMP) on every rank; none on one GPU or under
// DeepSpeed's engine, and none once the gradients are views into the buckets.
TEST(Sharding, DdpBucketsAreASecondCopyOfTheGradients) {
  const auto gradients = [](const char* framework, std::int64_t gpus, bool view) {
    Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-2-7b"},"training":{"framework":")") +
                                 framework + R"(","precision":"bf16_mixed","seq_len":1024}})")
                   .config;
    c.parallel.num_gpus = gpus;
    c.parallel.ddp_bucket_view = view;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e.breakdown.gradients.value();
  };
  const std::int64_t params = 6'738'415'616;
  EXPECT_EQ(gradients("hf", 8, false), params * 4 * 2);
  EXPECT_EQ(gradients("hf", 8, true), params * 4);
  EXPECT_EQ(gradients("hf", 1, false), params * 4);
  EXPECT_EQ(gradients("deepspeed", 8, false), params * 4);
}


// DeepSpeed ZeRO++: hpZ keeps a secondary partition, 1/hpz of the 16-bit parameters, on every GPU
// (on the host when the parameters are offloaded); qwZ gathers int8 codes beside the gathered
// 16-bit block for a moment. Llama-2-7B: 6,738,415,616 parameters, 202,383,360 per block.
TEST(Sharding, ZeroPlusPlusSecondaryPartitionAndInt8Gather) {
  const auto run = [](std::int64_t hpz, bool qwz, bool offload = false, const char* framework = "deepspeed",
                      std::int64_t gpus = 16) {
    Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-2-7b"},"training":{"framework":")") +
                                 framework + R"(","precision":"bf16_master","checkpointing":"full"},)"
                                 R"("parallel":{"num_gpus":16,"zero_stage":3}})").config;
    c.parallel.num_gpus = gpus;
    c.parallel.zero_hpz_partition_size = hpz;
    c.parallel.zero_quantized_weights = qwz;
    c.parallel.offload_params = offload;
    c.parallel.reduce_bucket_elements = 0;  // the gradient bucket apart (DeepSpeedZero3KeepsItsGradientBucket)
    return estimate(c);
  };
  const Estimate plain = run(1, false), hpz = run(8, false), qwz = run(1, true);
  ASSERT_TRUE(plain.ok() && hpz.ok() && qwz.ok());
  const std::int64_t params = 6738415616, block = 202383360;
  EXPECT_EQ(hpz.breakdown.parameters.value() - plain.breakdown.parameters.value(), params * 2 / 8);
  EXPECT_EQ(phase_bytes(qwz, "forward") - phase_bytes(plain, "forward"), block);
  EXPECT_EQ(qwz.breakdown.parameters.value(), plain.breakdown.parameters.value());
  // qgZ: the largest gradient (the 32,000 x 4,096 embedding) as int4 codes and their receive
  // buffer, then the node's share (8 GPUs an H100 node) twice in int4 and once in 16 bits.
  Config with_qgz = plain.config;
  with_qgz.parallel.zero_quantized_gradients = true;
  const Estimate qgz = estimate(with_qgz);
  ASSERT_TRUE(qgz.ok());
  const std::int64_t embedding = std::int64_t{32000} * 4096;
  EXPECT_EQ(phase_bytes(qgz, "backward") - phase_bytes(plain, "backward"), embedding + embedding / 8 * 3);
  // Offloaded parameters take their secondary partition to the host.
  const Estimate off = run(1, false, true), off_hpz = run(8, false, true);
  ASSERT_TRUE(off.ok() && off_hpz.ok());
  EXPECT_EQ(off_hpz.breakdown.parameters.value(), 0);
  EXPECT_EQ(off_hpz.breakdown.offloaded_bytes.value() - off.breakdown.offloaded_bytes.value(), params * 2 / 8);
  // The group is min(hpz, world size): the tutorial's 8 on 4 GPUs keeps a quarter.
  const Estimate four = run(1, false, false, "deepspeed", 4), four_hpz = run(8, false, false, "deepspeed", 4);
  ASSERT_TRUE(four.ok() && four_hpz.ok());
  EXPECT_EQ(four_hpz.breakdown.parameters.value() - four.breakdown.parameters.value(), params * 2 / 4);
  // Outside ZeRO-3 DeepSpeed ignores ZeRO++, and so does memfit (the planner tries other stages).
  Config stage2 = hpz.config;
  stage2.parallel.zero_stage = 2;
  Config plain2 = stage2;
  plain2.parallel.zero_hpz_partition_size = 1;
  const Estimate z2 = estimate(stage2), z2_plain = estimate(plain2);
  ASSERT_TRUE(z2.ok() && z2_plain.ok());
  EXPECT_EQ(z2.peak_allocated_bytes, z2_plain.peak_allocated_bytes);
  // DeepSpeed's only, and the group must divide the data-parallel ranks.
  const Estimate fsdp = run(8, false, false, "hf"), uneven = run(6, false);
  ASSERT_FALSE(fsdp.ok());
  EXPECT_EQ(fsdp.errors.front().field, "parallel.zero_hpz_partition_size");
  ASSERT_FALSE(uneven.ok());
  EXPECT_EQ(uneven.errors.front().field, "parallel.zero_hpz_partition_size");
}

// A block's backward under FSDP makes its gradients whole, in the gathered dtype, until its
// post-backward hook reduce-scatters them; FSDP2 first copies them into a flat reduce-scatter input in
// the reduce dtype and keeps it until the next block's reduce-scatter (_fsdp_param_group.py,
// post_backward: comm_ctx.reduce_scatter_state). Llama-3-8B's block: 218,112,000 parameters.
TEST(Sharding, FsdpBlockGradientsAreWholeUntilTheirReduceScatter) {
  const auto unit = [](const std::string& training, const std::string& parallel) {
    const Config c = parse_config_text(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp",)" +
                                       training + R"(},"parallel":{"num_gpus":8,"zero_stage":3)" + parallel + "}}")
                         .config;
    const ParameterCount params = count_parameters(c.model);
    return fsdp_unit_gradients(c, params, placement(c, params, params.total_count), recipe_for(c.training.precision));
  };
  const std::int64_t block = 218'112'000;
  const FsdpUnitGradients titan = unit(R"("framework":"torchtitan")", "");
  EXPECT_EQ(titan.unsharded.value(), block * 2);
  EXPECT_EQ(titan.reduce_input.value(), block * 4);  // fp32 reduce dtype
  const FsdpUnitGradients fsdp1 = unit(R"("framework":"hf")", "");
  EXPECT_EQ(fsdp1.unsharded.value(), block * 2);
  EXPECT_TRUE(fsdp1.reduce_input.is_zero());  // FSDP1 reduce-scatters the flat gradient itself
  // LoRA's gradients are the adapters'; a deferred sync holds every gradient whole already;
  // DeepSpeed reduces through its own buckets.
  EXPECT_TRUE(unit(R"("framework":"hf","finetune":{"method":"lora"})", "").unsharded.is_zero());
  EXPECT_TRUE(unit(R"("framework":"hf","grad_accum_steps":4)", R"(,"gradient_sync":"auto")").unsharded.is_zero());
  EXPECT_TRUE(unit(R"("framework":"deepspeed")", "").unsharded.is_zero());
}

// parallel.fsdp_version chooses the FSDP under the Hugging Face stack (accelerate's fsdp_version):
// 2 makes an hf run shard as fully_shard does (a block's gradients copied into a reduce-scatter
// input, in accelerate's reduce dtype, bf16; gathers copied out of a flat all-gather output); 1 makes
// torchtune's FSDP1. Under FSDP2 a LoRA's frozen base gets no gradient and keeps no
// recomputed inputs, whatever FSDP1 would have done.
TEST(Sharding, FsdpVersionChoosesTheShardingUnderAnyTorchStack) {
  const auto config = [](const std::string& training, const std::string& parallel) {
    const ConfigParse p = parse_config_text(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp",)" +
                                            training + R"(},"parallel":{"num_gpus":8,"zero_stage":3)" + parallel + "}}");
    EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors[0].field + " " + p.errors[0].message);
    return p.config;
  };
  const auto unit = [](const Config& c) {
    const ParameterCount params = count_parameters(c.model);
    return fsdp_unit_gradients(c, params, placement(c, params, params.total_count), recipe_for(c.training.precision));
  };
  const std::int64_t block = 218'112'000;
  EXPECT_TRUE(runs_fsdp2(config(R"("framework":"hf")", R"(,"fsdp_version":"2")")));
  EXPECT_TRUE(runs_fsdp2(config(R"("framework":"hf")", R"(,"fsdp_version":2)")));  // as accelerate writes it
  EXPECT_FALSE(runs_fsdp2(config(R"("framework":"hf")", "")));
  EXPECT_FALSE(runs_fsdp2(config(R"("framework":"torchtune")", R"(,"fsdp_version":"1")")));
  // accelerate reduces in its mixed-precision dtype (bf16), torchtitan in fp32.
  EXPECT_EQ(unit(config(R"("framework":"hf")", R"(,"fsdp_version":"2")")).reduce_input.value(), block * 2);
  EXPECT_EQ(unit(config(R"("framework":"torchtitan")", "")).reduce_input.value(), block * 4);
  EXPECT_TRUE(unit(config(R"("framework":"torchtune")", R"(,"fsdp_version":"1")")).reduce_input.is_zero());
  // Accumulating under a deferred sync (accelerate's no_sync: set_requires_gradient_sync(False) on an
  // FSDP2 model) holds every gradient unsharded in the reduce dtype, bf16 under accelerate as under
  // FSDP1's bf16 flat parameter, not the fp32 of the kept shards.
  for (const char* version : {"1", "2"}) {
    const Config c = config(R"("framework":"hf","grad_accum_steps":4)", std::string(R"(,"fsdp_version":")") + version + "\"");
    const Estimate e = estimate(c);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e.breakdown.gradients.value(), e.parameter_count.value() * 2) << version;
  }
  // A LoRA under FSDP1 block units (LitGPT) with use_orig_params pays for the blocks' frozen
  // gradients; under FSDP2 the switch (FSDP1's) changes nothing: the page hides it there, so it must
  // not block the estimate either. Under the HF Trainer the adapters are units of their own (PEFT's
  // fsdp_auto_wrap_policy) and no unit mixes: nothing to pay (tools/frameworks/fsdp1_units.py).
  const std::string blocks = R"("framework":"litgpt","checkpointing":"full","seq_len":2048,"finetune":{"method":"lora"})";
  const Estimate orig = estimate(config(blocks, R"(,"fsdp_version":"1","fsdp_use_orig_params":true)"));
  const Estimate fsdp2 = estimate(config(blocks, R"(,"fsdp_version":"2")"));
  const Estimate fsdp2_orig = estimate(config(blocks, R"(,"fsdp_version":"2","fsdp_use_orig_params":true)"));
  ASSERT_TRUE(orig.ok() && fsdp2.ok() && fsdp2_orig.ok());
  // (LitGPT's Lightning strategy always sets use_orig_params: the field's false changes nothing.)
  EXPECT_EQ(estimate(config(blocks, R"(,"fsdp_version":"1")")).device_total_bytes, orig.device_total_bytes);
  EXPECT_EQ(orig.breakdown.gradients.value() - fsdp2.breakdown.gradients.value(),
            32 * block / 8 * 4);  // the 32 blocks' fp32 flat parameters (bf16_fsdp), sharded 8 ways; the root trains nothing
  EXPECT_EQ(fsdp2_orig.device_total_bytes, fsdp2.device_total_bytes);
  const std::string lora = R"("framework":"hf","checkpointing":"full","seq_len":2048,"finetune":{"method":"lora"})";
  EXPECT_EQ(estimate(config(lora, R"(,"fsdp_use_orig_params":true)")).device_total_bytes,
            estimate(config(lora, "")).device_total_bytes);
  // FSDP1's frozen units under reentrant checkpointing keep every recomputed block's input (and its
  // gradient) until backward ends; FSDP2 registers no such hook.
  const std::string reentrant = lora + R"(,"checkpoint_impl":"reentrant")";
  const Config one = config(reentrant, ""), two = config(reentrant, R"(,"fsdp_version":"2")");
  EXPECT_EQ(activation_model(one, count_parameters(one.model)).frozen_unit_blocks.value(), 32);
  EXPECT_EQ(activation_model(two, count_parameters(two.model)).frozen_unit_blocks.value(), 0);
  // Named where it cannot apply.
  const ConfigParse deepspeed = parse_config_text(
      R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"deepspeed"},"parallel":{"num_gpus":8,"zero_stage":3,"fsdp_version":"2"}})");
  ASSERT_FALSE(deepspeed.ok());
  EXPECT_EQ(deepspeed.errors.at(0).field, "parallel.fsdp_version");
  const ConfigParse titan = parse_config_text(
      R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"torchtitan"},"parallel":{"num_gpus":8,"zero_stage":3,"fsdp_version":"1"}})");
  ASSERT_FALSE(titan.ok());
  EXPECT_EQ(titan.errors.at(0).field, "parallel.fsdp_version");
}

// accelerate's FSDP2 gives Llama-3-8B's token embedding a unit of its own and the final norm with
// the untied head another (fsdp2_prepare_model, accelerate >= 1.14): nothing is left in the root to
// keep gathered through the step; the tail (4,096 + 128,256 · 4,096 parameters in bf16) is gathered
// across forward's end, and the embedding (128,256 · 4,096) again at backward's end, where its
// gradient is whole but the head's was reduce-scattered already. torchtitan (its own wrapping),
// FSDP1 and a tied head keep all of it in the root.
TEST(Sharding, AccelerateFsdp2GivesTheEmbeddingAndTheTailUnitsOfTheirOwn) {
  const auto parts = [](const char* framework, const char* model, const char* version) {
    const Config c = parse_config_text(std::string(R"({"model":{"preset":")") + model + R"("},"training":{"framework":")" +
                                       framework + R"(","precision":"bf16_fsdp"},"parallel":{"num_gpus":8,"zero_stage":3,)"
                                       R"("fsdp_version":")" + version + R"("}})")
                         .config;
    const ParameterCount params = count_parameters(c.model);
    const Placement p = placement(c, params, params.total_count);
    const PrecisionRecipe& r = recipe_for(c.training.precision);
    const FsdpRootUnits units = fsdp_root_units(c, params, p, r);
    return std::tuple{fsdp_root_gathered_bytes(c, params, p, r).value(), units.tail.value(), units.embedding.value(),
                      fsdp_root_at_backward_end(c, params, p, r).value(),
                      gathered_across_forward_end(c, params, p, r).head.value()};
  };
  const std::int64_t embedding = std::int64_t{128256} * 4096, tail = embedding + 4096;
  const auto [kept, tail_bytes, embedding_bytes, end, across] = parts("hf", "llama-3-8b", "2");
  EXPECT_EQ(kept, 0);
  EXPECT_EQ(tail_bytes, tail * 2);
  EXPECT_EQ(embedding_bytes, embedding * 2);
  EXPECT_EQ(across, tail * 2);
  // At backward's end: the embedding gathered, its gradient whole (bf16) and copied into the
  // reduce-scatter input (bf16: accelerate reduces in the mixed-precision dtype).
  EXPECT_EQ(end, embedding * (2 + 2 + 2));
  for (const auto& [framework, model, version] :
       {std::tuple{"torchtitan", "llama-3-8b", "auto"}, std::tuple{"hf", "llama-3-8b", "1"}, std::tuple{"hf", "llama-3.2-1b", "2"}}) {
    const auto [k, t, e, end_, a] = parts(framework, model, version);
    EXPECT_GT(k, 0) << framework << " " << model;
    EXPECT_EQ(t + e + a, 0) << framework << " " << model;
  }
  // Under ZeRO-2 nothing is resharded after forward, but the units are still carved: at backward's
  // end only the embedding's gradient is whole (bf16, and its bf16 reduce-scatter input); FSDP1's
  // root holds the head's too.
  const auto end_zero2 = [](const char* version) {
    const Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp"},)"
                                                   R"("parallel":{"num_gpus":8,"zero_stage":2,"fsdp_version":")") +
                                       version + R"("}})")
                         .config;
    const ParameterCount params = count_parameters(c.model);
    return fsdp_root_at_backward_end(c, params, placement(c, params, params.total_count), recipe_for(c.training.precision))
        .value();
  };
  EXPECT_EQ(end_zero2("2"), embedding * (2 + 2));
  EXPECT_EQ(end_zero2("1"), (embedding + tail) * 2);
  // A LoRA's embedding gets no gradient: gathered again in backward only where checkpointing made its
  // output require grad (transformers' enable_input_require_grads), which fires FSDP2's hook.
  const auto again = [](const char* checkpointing) {
    const Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp",)"
                                                   R"("finetune":{"method":"lora"},"checkpointing":")") +
                                       checkpointing + R"("},"parallel":{"num_gpus":8,"zero_stage":3,"fsdp_version":"2"}})")
                         .config;
    const ParameterCount params = count_parameters(c.model);
    return fsdp_root_units(c, params, placement(c, params, params.total_count), recipe_for(c.training.precision))
        .embedding_in_backward;
  };
  EXPECT_TRUE(again("full"));
  EXPECT_FALSE(again("none"));
}

// Under FSDP1 with use_orig_params a unit mixing trainable and frozen tensors gives its whole flat
// parameter a gradient. The HF Trainer's policy (PEFT's fsdp_auto_wrap_policy) takes out leaf modules
// with a trainable weight, so LoRA's adapters leave the blocks' units frozen, but IA3's vectors sit
// inside the wrapped linear layer and its blocks mix; LitGPT's Block units mix for any method, and
// its root (embeddings, final norm, head) only where the method trains there (adapter v2's ln_f).
// Llama-3-8B, bf16_fsdp (fp32 flat parameters), 8 GPUs: 32 blocks of 218,112,000 parameters.
TEST(Sharding, Fsdp1UnitsMixWhereTheMethodsTensorsShareThem) {
  // FSDP1 with use_orig_params against FSDP2, which gives a frozen parameter no gradient.
  const auto text = [](const char* framework, const char* method, const char* version, const char* extra) {
    return std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":")") + framework +
           R"(","precision":"bf16_fsdp",)" + extra + R"("finetune":{"method":")" + method +
           R"("}},"parallel":{"num_gpus":8,"zero_stage":3,"fsdp_use_orig_params":true,"fsdp_version":")" + version +
           "\"}}";
  };
  const auto extra_gradients = [&text](const char* framework, const char* method, const char* extra = "") {
    const auto run = [&](const char* version) {
      const Estimate e = estimate(parse_config_text(text(framework, method, version, extra)).config);
      EXPECT_TRUE(e.ok()) << framework << " " << method;
      return e.breakdown.gradients.value();
    };
    return run("1") - run("2");
  };
  const std::int64_t blocks = std::int64_t{32} * 218'112'000 / 8 * 4;
  EXPECT_EQ(extra_gradients("hf", "lora"), 0);
  // IA3's vectors stay in the blocks' units. FSDP1 cannot flatten PEFT's fp32 vectors with the bf16
  // base (one dtype per flat parameter): refused, naming the field. With the vectors in bf16
  // (autocast_adapter_dtype=False) accelerate casts each block's flat parameter, frozen weights and
  // all, to fp32 under mixed precision, so the blocks' gradients are fp32 (measured on accelerate's
  // own preparation: tools/frameworks/accelerate_upcast.py).
  const ConfigParse refused = parse_config_text(text("hf", "ia3", "1", ""));
  const Estimate e = estimate(refused.config);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.errors.front().field, "training.lora_adapter_dtype");
  EXPECT_EQ(extra_gradients("hf", "ia3", R"("lora_adapter_dtype":"weights",)"), blocks);
  // Without use_orig_params FSDP1 cannot flatten a unit that mixes frozen and trained tensors at
  // all ("Must flatten tensors with uniform requires_grad"); LoRA's adapters, units of their own
  // under the Trainer's policy, can.
  const auto refused_field = [](const char* method, const char* extra) {
    const Estimate e = estimate(parse_config_text(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{)") +
                                                  extra + R"("finetune":{"method":")" + method +
                                                  R"("}},"parallel":{"num_gpus":8,"zero_stage":3,"fsdp_version":"1"}})")
                                    .config);
    return e.ok() ? std::string() : e.errors.front().field;
  };
  EXPECT_EQ(refused_field("ia3", R"("precision":"bf16","lora_adapter_dtype":"weights",)"), "parallel.fsdp_use_orig_params");
  EXPECT_EQ(refused_field("lora", R"("precision":"bf16",)"), "");
  EXPECT_EQ(extra_gradients("litgpt", "lora"), blocks);
  EXPECT_EQ(extra_gradients("litgpt", "llama_adapter"), blocks);
  EXPECT_EQ(extra_gradients("litgpt", "llama_adapter_v2"), std::int64_t{8'030'261'248} / 8 * 4);
}

// accelerate's FSDP preparation keeps what trains in fp32 under mixed precision, whatever the model
// was loaded in (accelerator.py prepare_model for FSDP1, fsdp_utils.py fsdp2_prepare_model for
// FSDP2; measured on their own code: tools/frameworks/accelerate_upcast.py). A Llama-3-8B loaded in
// bf16 and trained with the Trainer's bf16=True over 4 GPUs stores what bf16_fsdp stores; DDP, a run
// without mixed precision, and stacks that do not prepare with accelerate keep bf16.
TEST(Sharding, AccelerateFsdpKeepsWhatTrainsInFp32) {
  const auto run = [](const char* framework, const char* precision, std::int64_t zero, const char* version,
                      const char* finetune = R"({"method":"full"})") {
    const Estimate e = estimate(parse_config_text(
        std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":")") + framework +
        R"(","precision":")" + precision + R"(","finetune":)" + finetune +
        R"(},"parallel":{"num_gpus":4,"zero_stage":)" + std::to_string(zero) + R"(,"fsdp_version":")" + version +
        "\"}}")
                                    .config);
    EXPECT_TRUE(e.ok()) << framework << " " << precision;
    return e;
  };
  const std::int64_t params = 8'030'261'248;
  for (const char* version : {"1", "2"}) {
    const Estimate upcast = run("hf", "bf16_autocast", 3, version);
    EXPECT_EQ(upcast.breakdown.parameters.value(), params / 4 * 4) << version;
    EXPECT_EQ(upcast.breakdown.gradients.value(), params / 4 * 4) << version;
    EXPECT_EQ(upcast.breakdown.optimizer_states.value(), params / 4 * 8) << version;
    const Estimate fsdp_mixed = run("hf", "bf16_fsdp", 3, version);
    EXPECT_EQ(upcast.breakdown.parameters, fsdp_mixed.breakdown.parameters);
    EXPECT_EQ(upcast.breakdown.optimizer_states, fsdp_mixed.breakdown.optimizer_states);
    // Without mixed precision (pure bf16: no bf16 flag) nothing is cast.
    EXPECT_EQ(run("hf", "bf16", 3, version).breakdown.parameters.value(), params / 4 * 2) << version;
  }
  // A partial fine-tune: only the four trained blocks (872,448,000 parameters) are cast.
  const std::int64_t trained = 872'448'000;
  EXPECT_EQ(run("hf", "bf16_autocast", 3, "2", R"({"method":"full","trainable_layers":4})").breakdown.parameters.value(),
            trained / 4 * 4 + (params - trained) / 4 * 2);
  EXPECT_EQ(run("hf", "bf16_autocast", 0, "auto").breakdown.parameters.value(), params * 2);
  EXPECT_EQ(run("torchtune", "bf16_autocast", 3, "auto").breakdown.parameters.value(), params / 4 * 2);
  // A LoRA's modules_to_save copy of the head (128,256 x 4,096) trains: fp32 under the upcast, bf16
  // (the base's dtype) without it. PEFT's own adapters are fp32 either way.
  const char* lora = R"({"method":"lora"})";
  const char* copy = R"({"method":"lora","modules_to_save":["head"]})";
  const std::int64_t head = std::int64_t{128'256} * 4'096 / 4;
  const auto grows = [&](const char* precision, auto part) {
    return part(run("hf", precision, 3, "2", copy)).value() - part(run("hf", precision, 3, "2", lora)).value();
  };
  const auto weights = [](const Estimate& e) { return e.breakdown.parameters; };
  const auto gradients = [](const Estimate& e) { return e.breakdown.gradients; };
  const auto states = [](const Estimate& e) { return e.breakdown.optimizer_states; };
  EXPECT_EQ(grows("bf16_autocast", weights), head * 4);
  EXPECT_EQ(grows("bf16_autocast", gradients), head * 4);
  EXPECT_EQ(grows("bf16_autocast", states), head * 8);
  EXPECT_EQ(grows("bf16", weights), head * 2);
  EXPECT_EQ(grows("bf16", states), head * 4);
  // fsdp2_prepare_model skips the cast for a model holding bitsandbytes 4-bit weights
  // (`not model_has_params4bit`): a QLoRA's head copy stays bf16 under FSDP2.
  const char* qlora = R"({"method":"lora","base_bits":4,"quant_storage":"bf16"})";
  const char* qlora_copy = R"({"method":"lora","base_bits":4,"quant_storage":"bf16","modules_to_save":["head"]})";
  EXPECT_EQ(run("hf", "bf16_autocast", 3, "2", qlora_copy).breakdown.parameters.value() -
                run("hf", "bf16_autocast", 3, "2", qlora).breakdown.parameters.value(),
            head * 2);
  // FSDP1 flattens a unit into one dtype: PEFT's fp32 vectors cannot share a block with a bf16-stored
  // 4-bit base either (refused); OFT's rotations are leaf modules with their own weight, units of
  // their own under the Trainer's policy, so nothing mixes and the run is accepted.
  const auto first_error = [](const char* finetune) {
    const Estimate e = estimate(parse_config_text(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{)"
                                                              R"("precision":"bf16_autocast","finetune":)") +
                                                  finetune + R"(},"parallel":{"num_gpus":4,"zero_stage":3,)"
                                                             R"("fsdp_version":"1","fsdp_use_orig_params":true}})")
                                    .config);
    return e.ok() ? std::string() : e.errors.front().field;
  };
  EXPECT_EQ(first_error(R"({"method":"ia3","base_bits":4,"quant_storage":"bf16"})"), "training.lora_adapter_dtype");
  EXPECT_EQ(first_error(R"({"method":"oft"})"), "");
}

// bitsandbytes packs 4-bit codes into bnb_4bit_quant_storage. accelerate's FSDP2 leaves uint8
// ones out of fully_shard (ignored_params): every GPU holds Llama-2-70B's quantised linears whole
// (about 33 GiB: 15.9 GiB more on each of 2 GPUs than sharded) and gathers none of them; FSDP1
// cannot flatten them at all (an error naming the field). torchtune's own NF4 tensors, one GPU
// and the floating storage that sharded recipes set (auto) are unchanged.
TEST(Sharding, Fsdp2LeavesUint8FourBitWeightsWhole) {
  const auto run = [](const char* framework, std::int64_t gpus, const char* storage) {
    const Estimate e = estimate(parse_config_text(
        std::string(R"({"model":{"preset":"llama-2-70b"},"training":{"framework":")") + framework +
        R"(","checkpointing":"full","finetune":{"method":"lora","base_bits":4,"quant_storage":")" + storage +
        R"("}},"parallel":{"zero_stage":3,"fsdp_version":"2","num_gpus":)" + std::to_string(gpus) + "}}")
                                    .config);
    EXPECT_TRUE(e.ok()) << framework << " " << storage;
    return e;
  };
  const Estimate sharded = run("hf", 2, "auto"), whole = run("hf", 2, "uint8");
  // Each of the 80 blocks' linears hold 855,638,016 weights, two to a byte: the other GPU's half of
  // those codes (the quantisation state, no parameter, is whole on each GPU either way).
  const std::int64_t more = whole.breakdown.parameters.value() - sharded.breakdown.parameters.value();
  EXPECT_EQ(more, std::int64_t{80} * 855'638'016 / 2 / 2);
  EXPECT_EQ(run("hf", 2, "bf16").peak_allocated_bytes, sharded.peak_allocated_bytes);
  EXPECT_EQ(run("hf", 1, "uint8").peak_allocated_bytes, run("hf", 1, "auto").peak_allocated_bytes);
  EXPECT_EQ(run("torchtune", 2, "uint8").peak_allocated_bytes, run("torchtune", 2, "auto").peak_allocated_bytes);
  // None of it is gathered: the forward phase grows by the whole weights only, less the gathered
  // block's 4-bit linears.
  EXPECT_EQ(phase_bytes(whole, "forward") - phase_bytes(sharded, "forward"), more - 855'638'016 / 2);
  // The quantisation state (absmax, code book, nested state) is no parameter: whole on each GPU, so
  // what double quantisation changes is the same on 1 GPU and on 2.
  const auto state_change = [](std::int64_t gpus) {
    const auto weights = [&](bool dq) {
      const Estimate e = estimate(parse_config_text(
          std::string(R"({"model":{"preset":"llama-2-70b"},"training":{"finetune":{"method":"lora","base_bits":4,)"
                      R"("double_quant":)") + (dq ? "true" : "false") +
          R"(}},"parallel":{"zero_stage":3,"num_gpus":)" + std::to_string(gpus) + "}}")
                                      .config);
      EXPECT_TRUE(e.ok());
      return e.breakdown.parameters.value();
    };
    return weights(false) - weights(true);
  };
  EXPECT_GT(state_change(1), 1LL << 30);
  EXPECT_EQ(state_change(2), state_change(1));
  // Nor does ZeRO-3's parameter offload move it: it stays on the GPU (about 0.5 GiB of each GPU's
  // half of Llama-2-70B's nf4 base with double quantisation).
  const Estimate offloaded = estimate(parse_config_text(
      R"({"model":{"preset":"llama-2-70b"},"training":{"finetune":{"method":"lora","base_bits":4}},)"
      R"("parallel":{"zero_stage":3,"num_gpus":2,"offload_params":true}})").config);
  ASSERT_TRUE(offloaded.ok());
  EXPECT_GT(offloaded.breakdown.parameters.value(), 1LL << 28);
  EXPECT_LT(offloaded.breakdown.parameters.value(), 1LL << 30);
  EXPECT_TRUE(std::any_of(whole.notes.begin(), whole.notes.end(),
                          [](const std::string& n) { return n.find("uint8") != std::string::npos; }));
  EXPECT_EQ(refused_field(R"({"model":{"preset":"llama-2-70b"},"training":{"finetune":{"method":"lora","base_bits":4,)"
                          R"("quant_storage":"uint8"}},"parallel":{"zero_stage":3,"num_gpus":2}})"),
            "training.finetune.quant_storage");
  // Blocks kept gathered from forward to backward (reshard_after_forward never) hold the 4-bit
  // base as stored, as a unit gathered one at a time does, not as 16-bit copies.
  const auto kept = [&](int bits) {
    const auto with = [&](const char* reshard) {
      const Estimate e = estimate(parse_config_text(
          std::string(R"({"model":{"preset":"llama-2-70b"},"training":{"checkpointing":"full","finetune":{"method":"lora",)"
                      R"("base_bits":)") + std::to_string(bits) +
          R"(}},"parallel":{"zero_stage":3,"fsdp_version":"2","num_gpus":8,"reshard_after_forward":")" + reshard + "\"}}")
                                      .config);
      EXPECT_TRUE(e.ok());
      return phase_bytes(e, "forward");
    };
    return with("never") - with("always");
  };
  const std::int64_t four = kept(4), sixteen = kept(16);
  EXPECT_GT(four, 0);
  EXPECT_LT(four * 3, sixteen);
}

// FSDP's root unit (embeddings, final norm, head) reduce-scatters last: at the end of backward its
// parameters are still gathered (bf16), its gradients whole (bf16), and FSDP2 copies them into its
// reduce-scatter input in the reduce dtype (torchtitan: fp32). A thousand more tokens in Llama-3-8B's
// vocabulary add 2·1000·4096 root parameters: 2 + 2 + 4 bytes each at that moment, beside 16 bytes
// each of sharded weights, gradients and AdamW states over 8 GPUs.
TEST(Sharding, FsdpRootGradientsAreWholeAtTheEndOfBackward) {
  const auto backward = [](std::int64_t vocab, const char* framework) {
    Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":")") +
                                 framework + R"(","precision":"bf16_fsdp","seq_len":4096,"checkpointing":"full"},)"
                                 R"("parallel":{"num_gpus":8,"zero_stage":3}})").config;
    c.model.vocab_size = vocab;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return phase_bytes(e, "backward");
  };
  const std::int64_t root = 2 * 1000 * 4096, sharded = root / 8 * 16;
  EXPECT_EQ(backward(129256, "torchtitan") - backward(128256, "torchtitan"), root * (2 + 2 + 4) + sharded);
  // LoRA trains nothing in the root: its gathered parameters and their bf16 shards, no gradient.
  const auto lora = [](std::int64_t vocab) {
    Config c = parse_config_text(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"torchtitan",)"
                                 R"("precision":"bf16_fsdp","seq_len":4096,"checkpointing":"full",)"
                                 R"("finetune":{"method":"lora"}},"parallel":{"num_gpus":8,"zero_stage":3}})").config;
    c.model.vocab_size = vocab;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return phase_bytes(e, "backward");
  };
  EXPECT_EQ(lora(129256) - lora(128256), root * 2 + root / 8 * 2);
  // FSDP1 (hf) accumulating 4 micro-batches with the sync deferred to the last one already holds every
  // gradient unsharded: the root's are not counted twice. Short sequences and narrow MLPs, so that
  // the end of backward is the high point (not the top block's, with its unit's unsharded gradients).
  const auto end = [](std::int64_t vocab, const char* sync) {
    Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"hf",)"
                                             R"("precision":"bf16_fsdp","seq_len":256,"checkpointing":"full",)"
                                             R"("grad_accum_steps":4},"parallel":{"num_gpus":8,"zero_stage":3,)"
                                             R"("gradient_sync":")") + sync + R"("}})")
                   .config;
    c.model.vocab_size = vocab;
    c.model.intermediate_size = 2048;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return std::pair{phase_bytes(e, "backward"), e.breakdown.gradients.value()};
  };
  const auto [deferred_hi, deferred_grads] = end(129256, "auto");
  const auto [deferred_lo, deferred_grads_lo] = end(128256, "auto");
  const auto [every_hi, every_grads] = end(129256, "every_micro_batch");
  const auto [every_lo, every_grads_lo] = end(128256, "every_micro_batch");
  EXPECT_EQ((deferred_hi - deferred_lo) - (every_hi - every_lo),
            (deferred_grads - deferred_grads_lo) - (every_grads - every_grads_lo));
}

// The caching allocator serves a stream only from segments made for it: what FSDP gathers on its
// unshard / all-gather stream (FSDP2's flat all-gather output, copied out into the unsharded
// parameters on the compute stream) stays reserved in that stream's pool. With expandable segments
// (little fragmentation otherwise), torchtitan's Llama-3-8B on 8 GPUs reserves at least the root
// unit's flat output (2 · 128,256 · 4,096 + 4,096 parameters in bf16) beyond its allocated peak.
TEST(Sharding, FsdpGathersInTheirOwnStreamsPool) {
  Config c = parse_config_text(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"torchtitan",)"
                               R"("precision":"bf16_fsdp","seq_len":4096,"checkpointing":"full"},)"
                               R"("parallel":{"num_gpus":8,"zero_stage":3},"hardware":{"expandable_segments":true}})")
                 .config;
  const Estimate e = estimate(c);
  ASSERT_TRUE(e.ok());
  const std::int64_t root = (std::int64_t{2} * 128256 * 4096 + 4096) * 2;
  EXPECT_GE(e.peak_reserved_bytes.value() - e.peak_allocated_bytes.value(), root);
}

// DeepSpeed ZeRO-3 keeps one contiguous gradient bucket of reduce_bucket_size elements in the
// 16-bit dtype for the run (stage3.py, __ipg_bucket_flat_buffer), and backward's reduce-scatter
// interleaves a full bucket into a new tensor once more (coalesced_collectives.py). FSDP has none.
TEST(Sharding, DeepSpeedZero3KeepsItsGradientBucket) {
  const auto run = [](const char* framework, std::int64_t bucket, const char* optimizer = "adamw") {
    Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-2-7b"},"training":{"framework":")") +
                                 framework + R"(","precision":"bf16_master","checkpointing":"full","optimizer":")" +
                                 optimizer + R"("},"parallel":{"num_gpus":8,"zero_stage":3}})")
                   .config;
    c.parallel.reduce_bucket_elements = bucket;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e;
  };
  const Estimate none = run("deepspeed", 0), fallback = run("deepspeed", -1), auto_ = run("deepspeed", 4096 * 4096);
  const std::int64_t bucket = 500'000'000;  // DeepSpeed's default reduce_bucket_size
  EXPECT_EQ(fallback.breakdown.gradients.value() - none.breakdown.gradients.value(), bucket * 2);
  EXPECT_EQ(phase_bytes(fallback, "forward") - phase_bytes(none, "forward"), bucket * 2);
  EXPECT_EQ(phase_bytes(fallback, "backward") - phase_bytes(none, "backward"), bucket * 2 * 2);
  EXPECT_EQ(phase_bytes(auto_, "backward") - phase_bytes(none, "backward"), std::int64_t{4096} * 4096 * 2 * 2);
  // FSDP keeps no such bucket; LOMO builds no DeepSpeed optimizer.
  EXPECT_EQ(run("hf", bucket).peak_allocated_bytes, run("hf", 0).peak_allocated_bytes);
  EXPECT_EQ(run("deepspeed", bucket, "lomo").breakdown.gradients, run("deepspeed", 0, "lomo").breakdown.gradients);
}

// DeepSpeed ZeRO-3 steps sub-group by sub-group: the 16-bit gradients of one sub-group flattened
// and cast to fp32 (6 bytes an element for a moment). Llama-2-7B over 8 GPUs: 842,301,952 elements
// a GPU, one sub-group at 1e9; at 1e8 a sub-group closes at the first partition that takes it past
// 1e8, and a block's largest partition is 11,008 x 4,096 / 8 = 5,636,096 elements.
TEST(Sharding, DeepSpeedZero3StepsOneSubGroupAtATime) {
  const auto step = [](std::int64_t sub_group) {
    Config c = parse_config_text(R"({"model":{"preset":"llama-2-7b"},"training":{"framework":"deepspeed",)"
                                 R"("precision":"bf16_master","checkpointing":"full"},)"
                                 R"("parallel":{"num_gpus":8,"zero_stage":3,"reduce_bucket_elements":0}})")
                   .config;
    c.parallel.zero_sub_group_size = sub_group;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return phase_bytes(e, "optimizer_step");
  };
  const std::int64_t local = 842'301'952, saved = step(1'000'000'000) - step(100'000'000);
  EXPECT_GT(saved, (local - 100'000'000 - 5'636'096) * 6);
  EXPECT_LE(saved, (local - 100'000'000) * 6);
  EXPECT_EQ(step(1'000'000'000), step(2'000'000'000));
}

// torchtitan's async TP passes its fused matmuls' shards through the TP group's symmetric-memory
// workspace, outside the caching allocator: nvidia-smi's total grows by two output shards of a
// reduce-scatter matmul (16 · 8192 / 8 tokens of Llama-3-70B's 8192 in bf16, twice), the reserve and
// the allocated peak do not. It is torchtitan's, and an Inductor pass: refused by name elsewhere.
TEST(Communicators, AsyncTpWorkspaceIsInTheDeviceTotalNotTheReserve) {
  const auto run = [](const char* framework, const char* compile, bool async) {
    return parse_config_text(std::string(R"({"model":{"preset":"llama-3-70b"},"training":{"framework":")") + framework +
                             R"(","compile":")" + compile + R"(","precision":"bf16_fsdp","checkpointing":"full",)"
                             R"("micro_batch_size":16,"seq_len":8192},"parallel":{"num_gpus":256,"tensor":8,)"
                             R"("sequence_parallel":true,"zero_stage":3,"async_tp":)" + (async ? "true" : "false") +
                             R"(},"hardware":{"gpu":"h100-96gb"}})");
  };
  const ConfigParse plain = run("torchtitan", "yes", false), async = run("torchtitan", "yes", true);
  ASSERT_TRUE(plain.ok() && async.ok());
  const Estimate a = estimate(plain.config), b = estimate(async.config);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(b.peak_allocated_bytes, a.peak_allocated_bytes);
  EXPECT_EQ(b.peak_reserved_bytes, a.peak_reserved_bytes);
  EXPECT_EQ((b.device_total_bytes - a.device_total_bytes).value(), std::int64_t{16} * 8192 / 8 * 8192 * 2 * 2);
  EXPECT_EQ(run("hf", "yes", true).errors.at(0).field, "parallel.async_tp");
  EXPECT_EQ(run("torchtitan", "no", true).errors.at(0).field, "parallel.async_tp");
}

// NCCL's buffers: one communicator per parallel group of two or more ranks, outside PyTorch's
// allocator, in the device total and not in the reserve (NVIDIA/nccl#964: 544 MiB for two GPUs,
// 688 MiB for more, A100 NVLink).
TEST(Communicators, OnePerGroupInTheDeviceTotalNotTheReserve) {
  const auto run = [](const std::string& parallel, const std::string& hardware = "{}") {
    const ConfigParse p = parse_config_text(R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":1024},)"
                                            R"("parallel":)" + parallel + R"(,"hardware":)" + hardware + "}");
    EXPECT_TRUE(p.ok());
    return estimate(p.config);
  };
  constexpr std::int64_t kMiB = 1 << 20;
  const Estimate one = run(R"({"num_gpus":1})");
  EXPECT_EQ(one.communicator_bytes.value(), 0);
  EXPECT_EQ(one.communicators, 0);
  const Estimate pair = run(R"({"num_gpus":2,"zero_stage":3})");
  EXPECT_EQ(pair.communicators, 1);
  EXPECT_EQ(pair.communicator_bytes.value(), 544 * kMiB);
  const Estimate eight = run(R"({"num_gpus":8,"zero_stage":3})");
  EXPECT_EQ(eight.communicator_bytes.value(), 688 * kMiB);
  const Estimate tp = run(R"({"num_gpus":8,"tensor":2})");  // tensor groups of 2, data groups of 4
  EXPECT_EQ(tp.communicators, 2);
  EXPECT_EQ(tp.communicator_bytes.value(), (544 + 688) * kMiB);
  const Estimate hybrid = run(R"({"num_gpus":16,"zero_stage":3,"shard_degree":8})");  // 8 x 2
  EXPECT_EQ(hybrid.communicator_bytes.value(), (688 + 544) * kMiB);
  // Beside the context in the overhead and the device total; never in what the allocator holds,
  // and the GPU table's rows keep it with each card's own context.
  const Gpu& card = *find_gpu(eight.config.hardware.gpu);
  EXPECT_EQ(eight.breakdown.overhead, card.context_bytes + eight.communicator_bytes);
  EXPECT_EQ(eight.device_total_bytes, eight.peak_reserved_bytes + eight.breakdown.overhead);
  for (const Fit& f : eight.fits) {
    EXPECT_EQ(f.need_bytes, eight.peak_reserved_bytes + f.gpu->context_bytes + eight.communicator_bytes) << f.gpu->id;
  }
  // A stated overhead is the whole of it.
  const Estimate stated = run(R"({"num_gpus":8,"zero_stage":3})", R"({"overhead_bytes":1073741824})");
  EXPECT_EQ(stated.communicator_bytes.value(), 0);
  EXPECT_EQ(stated.breakdown.overhead.value(), 1073741824);
}

// The DeepSpeed engine broadcasts the model and all-reduces its overflow flag and gradient norm over
// its data-parallel group even when that group is one GPU, so one GPU under DeepSpeed carries a
// one-rank communicator (NVIDIA/nccl#2366: 484 MiB); the same run under the Trainer alone has none.
TEST(Communicators, DeepspeedOnOneGpuHasAOneRankCommunicator) {
  const auto run = [](const std::string& framework) {
    const ConfigParse p = parse_config_text(R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":1024,)"
                                            R"("framework":")" + framework +
                                            R"(","finetune":{"method":"lora"}},"parallel":{"num_gpus":1}})");
    EXPECT_TRUE(p.ok());
    return estimate(p.config);
  };
  const Estimate hf = run("hf"), ds = run("deepspeed");
  ASSERT_TRUE(hf.ok() && ds.ok());
  EXPECT_EQ(hf.communicators, 0);
  EXPECT_EQ(ds.communicators, 1);
  EXPECT_EQ(ds.communicator_bytes.value(), std::int64_t{484} << 20);
  // Outside the allocator: the device total carries it beside the context; the reserve does not.
  EXPECT_EQ(ds.device_total_bytes, ds.peak_reserved_bytes + ds.breakdown.overhead);
  EXPECT_EQ(ds.breakdown.overhead, find_gpu(ds.config.hardware.gpu)->context_bytes + ds.communicator_bytes);
  bool noted = false;
  for (const std::string& n : ds.notes) noted = noted || n.find("data-parallel group of one GPU") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace memfit
