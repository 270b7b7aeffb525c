// The step-time model against published training throughputs (each with the configuration that
// produced it and its source), plus relations the model must keep. docs/step_time.md prints the
// same table; MEMFIT_PRINT_STEP_TIME=1 prints it from this test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

struct PublishedCase {
  const char* name;
  std::string config;           // memfit configuration JSON: model, layout, batch, precision, card
  bool tp_comm_overlap;         // the run overlapped tensor-parallel communication, as its recipe states
  double published;             // tokens per second per GPU, as published
  double pinned;                // what memfit predicts today (pinned: a change to the model moves it)
  const char* source;
};

// NeMo's GPT-3 shapes (NeMo-Framework-Launcher conf/training/gpt3/{5b,20b}_fp8_performance.yaml;
// 175B: Megatron-LM examples/pretrain_gpt3_175B.sh): learned positions, LayerNorm, a GELU MLP of
// 4d, biases, tied embeddings, the GPT-2 vocabulary padded to 50304 (51200 for TP 8).
std::string gpt3(int layers, int hidden, int heads, int vocab) {
  return R"("model":{"preset":"","vocab_size":)" + std::to_string(vocab) + R"(,"hidden_size":)" +
         std::to_string(hidden) + R"(,"num_hidden_layers":)" + std::to_string(layers) +
         R"(,"num_attention_heads":)" + std::to_string(heads) + R"(,"intermediate_size":)" +
         std::to_string(4 * hidden) +
         R"(,"mlp":"plain","norm":"layernorm","position_embedding":"learned","max_position_embeddings":2048,)"
         R"("tie_word_embeddings":true,"attention_bias":true,"mlp_bias":true})";
}

std::string preset(const char* id) { return std::string(R"("model":{"preset":")") + id + R"("})"; }

// A run: precision, checkpointing, micro-batch, sequence, accumulation; then the layout.
std::string run(const std::string& model, const char* precision, const char* ckpt, int mbs, int seq, int accum,
                int gpus, int tp, int pp, int vp, int cp, int zero, const char* gpu, const char* extra = "") {
  char text[640];
  std::snprintf(text, sizeof text,
                R"({%s,"training":{"precision":"%s","checkpointing":"%s","micro_batch_size":%d,"seq_len":%d,)"
                R"("grad_accum_steps":%d%s},"parallel":{"num_gpus":%d,"tensor":%d,"pipeline":%d,)"
                R"("virtual_stages":%d,"context":%d,"zero_stage":%d,"sequence_parallel":%s},"hardware":{"gpu":"%s"}})",
                model.c_str(), precision, ckpt, mbs, seq, accum, extra, gpus, tp, pp, vp, cp, zero,
                tp > 1 ? "true" : "false", gpu);
  return text;
}

constexpr const char* kNemo =
    "NeMo 24.12 performance summary, DGX-H100, FP8 (docs.nvidia.com/nemo-framework/user-guide/24.12/nemotoolkit/"
    "performance/performance_summary.html)";
constexpr const char* kTitan =
    "torchtitan docs/performance.md (commit 041336434916): 64 A100 80GB, FSDP2, bf16 compute, fp32 reduce";
constexpr const char* kMegatron =
    "Megatron-LM README (commit 7cabbe67bc, 2021-01-27): GPT-3 175B on 1024 A100, ~32 s per iteration of 1536 x "
    "2048 tokens; settings from examples/pretrain_gpt3_175B.sh";
constexpr const char* kLora = R"(,"finetune":{"method":"lora","lora_targets":["q","k","v","o","gate","up","down"]})";

// NeMo rows: Megatron-core with the distributed optimizer (ZeRO-1), sequence parallelism with
// TP, TP communication overlap (ub_tp_comm_overlap), no recomputation in the performance recipes.
// Accumulation = GBS / (MBS × DP). The fine-tuning table lists no VP column; its pipelined rows
// take the virtual stages of the same release's pre-training rows for the same model (13B: 10,
// 70B: 20; Megatron-Bridge's Llama 70B LoRA recipe is likewise PP4 VP20).
const std::vector<PublishedCase>& cases() {
  static const std::vector<PublishedCase> list = {
      {"NeMo GPT3-5B, 64 H100, FP8", run(gpt3(24, 4096, 32, 50304), "fp8_mixed", "none", 4, 2048, 8, 64, 1, 1, 1, 1, 1, "h100-sxm-80gb"), true, 23406, 24049, kNemo},
      {"NeMo GPT3-20B, 64 H100, FP8, TP2", run(gpt3(44, 6144, 48, 50304), "fp8_mixed", "none", 2, 2048, 4, 64, 2, 1, 1, 1, 1, "h100-sxm-80gb"), true, 5851, 6004, kNemo},
      {"NeMo GPT3-175B, 128 H100, FP8, TP4 PP8 VP6", run(gpt3(96, 12288, 96, 50304), "fp8_mixed", "none", 1, 2048, 64, 128, 4, 8, 6, 1, 1, "h100-sxm-80gb"), true, 716, 670, kNemo},
      {"NeMo GPT3-175B, 512 H100, FP8, TP4 PP8 VP6", run(gpt3(96, 12288, 96, 50304), "fp8_mixed", "none", 2, 2048, 64, 512, 4, 8, 6, 1, 1, "h100-sxm-80gb"), true, 825, 685, kNemo},
      {"NeMo Llama 2 7B, 8 H100, FP8", run(preset("llama-2-7b"), "fp8_mixed", "none", 1, 4096, 16, 8, 1, 1, 1, 1, 1, "h100-sxm-80gb"), true, 16934, 17439, kNemo},
      {"NeMo Llama 2 13B, 16 H100, FP8, PP4 VP10", run(preset("llama-2-13b"), "fp8_mixed", "none", 1, 4096, 32, 16, 1, 4, 10, 1, 1, "h100-sxm-80gb"), true, 8715, 8637, kNemo},
      {"NeMo Llama 2 70B, 64 H100, FP8, TP4 PP4 VP20", run(preset("llama-2-70b"), "fp8_mixed", "none", 1, 4096, 32, 64, 4, 4, 20, 1, 1, "h100-sxm-80gb"), true, 1728, 1721, kNemo},
      {"NeMo Llama 3 8B, 8 H100, FP8, CP2", run(preset("llama-3-8b"), "fp8_mixed", "none", 1, 8192, 32, 8, 1, 1, 1, 2, 1, "h100-sxm-80gb"), true, 12273, 13814, kNemo},
      {"NeMo Llama 3 70B, 64 H100, FP8, TP4 PP4 CP2 VP5", run(preset("llama-3-70b"), "fp8_mixed", "none", 1, 8192, 64, 64, 4, 4, 5, 2, 1, "h100-sxm-80gb"), true, 1524, 1544, kNemo},
      {"NeMo Llama 2 7B SFT, 8 H100, FP8", run(preset("llama-2-7b"), "fp8_mixed", "none", 1, 4096, 4, 8, 1, 1, 1, 1, 1, "h100-sxm-80gb"), true, 16891, 17300, kNemo},
      {"NeMo Llama 2 13B SFT, 8 H100, FP8, PP4 (VP10)", run(preset("llama-2-13b"), "fp8_mixed", "none", 1, 4096, 16, 8, 1, 4, 10, 1, 1, "h100-sxm-80gb"), true, 10176, 8496, kNemo},
      {"NeMo Llama 2 70B SFT, 16 H100, FP8, TP4 PP4 (VP20)", run(preset("llama-2-70b"), "fp8_mixed", "none", 1, 4096, 32, 16, 4, 4, 20, 1, 1, "h100-sxm-80gb"), true, 1816, 1744, kNemo},
      {"NeMo Llama 2 7B LoRA, 8 H100, FP8", run(preset("llama-2-7b"), "fp8_mixed", "none", 1, 4096, 4, 8, 1, 1, 1, 1, 1, "h100-sxm-80gb", kLora), true, 24824, 24813, kNemo},
      {"NeMo Llama 2 13B LoRA, 8 H100, FP8", run(preset("llama-2-13b"), "fp8_mixed", "none", 1, 4096, 4, 8, 1, 1, 1, 1, 1, "h100-sxm-80gb", kLora), true, 14629, 13224, kNemo},
      {"NeMo Llama 2 70B LoRA, 8 H100, FP8, TP2 PP4 (VP20)", run(preset("llama-2-70b"), "fp8_mixed", "none", 1, 4096, 32, 8, 2, 4, 20, 1, 1, "h100-sxm-80gb", kLora), true, 2621, 2572, kNemo},
      {"torchtitan Llama 3 8B, 64 A100, op-level AC", run(preset("llama-3-8b"), "bf16_fsdp", "selective_op", 1, 8192, 1, 64, 1, 1, 1, 1, 3, "a100-80gb"), false, 2973, 3040, kTitan},
      {"torchtitan Llama 3 70B, 64 A100, full AC", run(preset("llama-3-70b"), "bf16_fsdp", "full", 1, 8192, 1, 64, 1, 1, 1, 1, 3, "a100-80gb"), false, 331, 298, kTitan},
      {"torchtitan Llama 2 13B, 64 A100, no AC", run(preset("llama-2-13b"), "bf16_fsdp", "none", 2, 4096, 1, 64, 1, 1, 1, 1, 3, "a100-80gb"), false, 2162, 2163, kTitan},
      {"torchtitan Llama 2 13B, 64 A100, op-level AC", run(preset("llama-2-13b"), "bf16_fsdp", "selective_op", 2, 4096, 1, 64, 1, 1, 1, 1, 3, "a100-80gb"), false, 1904, 1874, kTitan},
      {"torchtitan Llama 2 70B, 64 A100, op-level AC", run(preset("llama-2-70b"), "bf16_fsdp", "selective_op", 1, 4096, 1, 64, 1, 1, 1, 1, 3, "a100-80gb"), false, 355, 357, kTitan},
      {"torchtitan Llama 2 70B, 64 A100, full AC", run(preset("llama-2-70b"), "bf16_fsdp", "full", 2, 4096, 1, 64, 1, 1, 1, 1, 3, "a100-80gb"), false, 353, 311, kTitan},
      {"Megatron-LM GPT-3 175B, 1024 A100, TP8 PP16", run(gpt3(96, 12288, 96, 51200), "fp16_master", "full", 1, 2048, 192, 1024, 8, 16, 1, 1, 0, "a100-80gb"), false, 96.0, 100, kMegatron},
  };
  return list;
}

TEST(StepTime, PublishedThroughputs) {
  const bool print = std::getenv("MEMFIT_PRINT_STEP_TIME") != nullptr;
  double sum_abs = 0;
  for (const PublishedCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const ConfigParse parsed = parse_config_text(c.config);
    ASSERT_TRUE(parsed.ok()) << (parsed.errors.empty() ? "" : parsed.errors[0].field + " " + parsed.errors[0].message);
    StepTimeOptions options;
    options.tp_comm_overlap = c.tp_comm_overlap;
    const StepTime t = step_time(parsed.config, options);
    ASSERT_TRUE(t.ok());
    const double error = t.tokens_per_s_per_gpu / c.published - 1.0;
    sum_abs += std::fabs(error);
    if (print) {
      std::printf("| %s | %.0f | %.0f | %+.1f %% | mfu %.1f %% |\n", c.name, c.published, t.tokens_per_s_per_gpu,
                  100 * error, 100 * t.mfu);
    }
    EXPECT_LT(std::fabs(error), 0.25);  // the aim: every published case within 25 %
    EXPECT_NEAR(t.tokens_per_s_per_gpu, c.pinned, c.pinned * 0.005) << "the model moved: update the pin and "
                                                                       "docs/step_time.md together";
  }
  if (print) std::printf("mean |error| %.1f %% over %zu cases\n", 100 * sum_abs / cases().size(), cases().size());
}

Config config_for(const char* json) {
  const ConfigParse parsed = parse_config_text(json);
  EXPECT_TRUE(parsed.ok());
  return parsed.config;
}

TEST(StepTime, RelationsHold) {
  Config c = config_for(R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,"precision":"bf16_master"},)"
                        R"("parallel":{"num_gpus":8,"zero_stage":1},"hardware":{"gpu":"h100-sxm-80gb"}})");
  const StepTime base = step_time(c);
  ASSERT_TRUE(base.ok());
  // Recomputation costs time: full checkpointing re-runs the forward (about a third more FLOPs).
  Config full = c;
  full.training.checkpointing = Checkpointing::kFull;
  const StepTime recomputed = step_time(full);
  EXPECT_GT(recomputed.step_time_s, base.step_time_s * 1.25);
  EXPECT_GT(recomputed.parts.recompute_s, 0);
  EXPECT_NEAR(recomputed.mfu * recomputed.step_time_s, base.mfu * base.step_time_s, 1e-9);  // MFU excludes recompute
  // FP8 runs the blocks' GEMMs at twice the rate.
  Config fp8 = c;
  fp8.training.precision = Precision::kFp8Mixed;
  EXPECT_LT(step_time(fp8).step_time_s, base.step_time_s);
  // Twice the data-parallel GPUs: twice the tokens per step, nearly twice the tokens per second.
  Config more = c;
  more.parallel.num_gpus = 16;
  const StepTime doubled = step_time(more);
  EXPECT_DOUBLE_EQ(doubled.tokens_per_step, 2 * base.tokens_per_step);
  EXPECT_GT(doubled.tokens_per_s, 1.8 * base.tokens_per_s);
  // A pipeline adds its bubble; interleaving shrinks it by the number of virtual stages.
  Config piped = c;
  piped.parallel.pipeline = 4;
  piped.training.grad_accum_steps = 8;
  const double bubble = step_time(piped).parts.pipeline_bubble_s;
  piped.parallel.virtual_stages = 2;
  EXPECT_NEAR(step_time(piped).parts.pipeline_bubble_s * 2, bubble, bubble * 0.01);
  // Cost: GPU-hours at the table's price (Lambda's H100 SXM, $3.78 an hour).
  EXPECT_NEAR(base.cost_usd, base.gpu_hours * 3.78, 1e-6 * base.cost_usd);
}

// An NVLink Switch rack is one GPU-link domain across its servers: a tensor-parallel group of 16
// GB200s in an NVL72 rack runs its collectives at NVLink's rate, one of 16 B200s in two HGX servers
// over their NICs, though the cards' NVLink and compute are alike. The server stays four GPUs
// (what a launcher starts on one host).
TEST(StepTime, AnNvlinkRackIsOneLinkDomain) {
  EXPECT_EQ(gpu_link_domain("gb200-186gb", 0), 72);
  EXPECT_EQ(gpus_per_node("gb200-186gb", 0), 4);
  EXPECT_EQ(gpu_link_domain("b200-180gb", 0), 8);
  EXPECT_EQ(gpu_link_domain("b200-180gb", 16), 16);  // a stated server size is the domain where no rack is
  const std::string head = R"({"model":{"preset":"llama-2-7b"},"training":{"seq_len":4096,"precision":"bf16_master"},)"
                           R"("parallel":{"num_gpus":16,"tensor":16},"hardware":{"gpu":")";
  const StepTime rack = step_time(config_for((head + R"(gb200-186gb"}})").c_str()));
  const StepTime servers = step_time(config_for((head + R"(b200-180gb"}})").c_str()));
  ASSERT_TRUE(rack.ok());
  ASSERT_TRUE(servers.ok());
  EXPECT_GT(rack.parts.tensor_parallel_s, 0);
  EXPECT_LT(rack.parts.tensor_parallel_s * 2, servers.parts.tensor_parallel_s);
}

// Tokens to train when none are given: 20 per parameter for pre-training (Hoffmann et al. 2022),
// 100M for a fine-tune; a number given is used as is, and the time and cost follow it.
TEST(StepTime, TokensToTrainDefaultByGoal) {
  Config c = config_for(R"({"model":{"preset":"llama-3-8b"},"training":{"goal":"pretrain"},)"
                        R"("parallel":{"num_gpus":8,"zero_stage":3},"hardware":{"gpu":"h100-sxm-80gb"}})");
  const double params = double(count_parameters(c.model).total_count.value());
  const StepTime pretrain = step_time(c);
  ASSERT_TRUE(pretrain.ok());
  EXPECT_DOUBLE_EQ(pretrain.train_tokens, 20 * params);
  EXPECT_NEAR(pretrain.train_time_s, pretrain.train_tokens / pretrain.tokens_per_s, 1e-9 * pretrain.train_time_s);
  c.training.goal = Goal::kFullFinetune;
  EXPECT_DOUBLE_EQ(step_time(c).train_tokens, 1e8);
  c.training.finetune.method = FinetuneMethod::kLora;
  c.training.goal = Goal::kAuto;
  EXPECT_DOUBLE_EQ(step_time(c).train_tokens, 1e8);
  StepTimeOptions given;
  given.train_tokens = 3e9;
  const StepTime stated = step_time(c, given);
  EXPECT_DOUBLE_EQ(stated.train_tokens, 3e9);
  EXPECT_NEAR(stated.cost_usd, 30 * step_time(c).cost_usd, 1e-9 * stated.cost_usd);
}

TEST(StepTime, PrecisionsTheCardLacksAreErrors) {
  Config c = config_for(R"({"training":{"precision":"fp8_mixed"}})");
  c.hardware.gpu = "a100-80gb";  // a configuration the reader refuses (Transformer Engine's FP8 on Ampere)
  StepTime t = step_time(c);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.errors[0].field, "training.precision");
  c.hardware.gpu = "v100-32gb";
  c.training.precision = Precision::kBf16Mixed;
  EXPECT_FALSE(step_time(c).ok());
  c.training.precision = Precision::kFp16Mixed;
  EXPECT_TRUE(step_time(c).ok());
}

}  // namespace
}  // namespace memfit
