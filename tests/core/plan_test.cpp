// The planner against brute force (every layout of its space, each with a full estimate and its
// step time), and what its plans promise: a full estimate that fits, ranked by step time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

Config config(const char* json) {
  const ConfigParse p = parse_config_text(json);
  EXPECT_TRUE(p.ok());
  return p.config;
}

// Llama 3.2 1B on L4s (24 GB): memory binds at every count, so the bounds and the monotone
// caches all come into play; the space is small enough to estimate every layout.
constexpr const char* kSmall =
    R"({"model":{"preset":"llama-3.2-1b"},"training":{"seq_len":4096,"goal":"full_finetune"},"hardware":{"gpu":"l4-24gb"}})";

TEST(Plan, FindsWhatBruteForceFinds) {
  const Config c = config(kSmall);
  PlanOptions o;
  o.gpus_min = 1;
  o.gpus_max = 8;
  o.global_batch_tokens = 64 * 4096;
  o.top = 3;
  const PlanResult r = plan(c, o);
  ASSERT_TRUE(r.ok());
  const StepTimeModel model = step_time_model(c, count_parameters(c.model), o.step_time);
  std::map<std::int64_t, double> best;  // brute force: fastest fitting layout per GPU count
  for (std::int64_t gpus : {1, 2, 4, 8}) {
    best[gpus] = std::numeric_limits<double>::infinity();
    for (const Layout& l : plan_space(c, o, gpus)) {
      Config full = c;
      apply_layout(l, full);
      const Estimate e = estimate(full);
      if (e.ok() && e.fit.verdict == Verdict::kFits) best[gpus] = std::min(best[gpus], step_seconds(model, l));
    }
  }
  ASSERT_EQ(r.best_per_gpu_count.size(), 4u);
  for (const Plan& p : r.best_per_gpu_count) {
    SCOPED_TRACE(p.config.parallel.num_gpus);
    EXPECT_NEAR(p.time.step_time_s, best[p.config.parallel.num_gpus], 1e-12 * p.time.step_time_s);
  }
  EXPECT_NEAR(r.plans.front().time.step_time_s, best[8], 1e-12 * best[8]);
  // Bounds did most of the deciding: far fewer full estimates than layouts.
  EXPECT_LT(r.counts.estimates * 20, r.counts.layouts);
}

TEST(Plan, EveryPlanFitsByItsFullEstimateAndTheyAreRanked) {
  PlanOptions o;
  o.gpus_min = 1;
  o.gpus_max = 1024;
  const PlanResult r = plan(config(R"({"model":{"preset":"llama-3-70b"},"training":{"seq_len":8192,"goal":"pretrain"}})"), o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.plans.size(), 10u);
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const Plan& p = r.plans[i];
    const Estimate again = estimate(p.config);
    EXPECT_EQ(again.device_total_bytes, p.estimate.device_total_bytes);
    EXPECT_EQ(again.fit.verdict, Verdict::kFits);
    if (i > 0) EXPECT_LE(r.plans[i - 1].time.step_time_s, p.time.step_time_s);
    // The global batch is the one planned: 4 Mi tokens (the pre-training default).
    EXPECT_DOUBLE_EQ(p.time.tokens_per_step, 4194304.0);
  }
  // 70B does not fit on one H100 in any layout; it does on 8 (with ZeRO-3 and offload) and the
  // fastest plans use all 1024.
  EXPECT_EQ(r.best_per_gpu_count.front().config.parallel.num_gpus, 8);
  EXPECT_EQ(r.plans.front().config.parallel.num_gpus, 1024);
  EXPECT_GT(r.counts.layouts, 500'000);
}

// Every plan is one an engine memfit exports to can run as exported (not a mix of one engine's
// precision with another's checkpointing); a framework that names an engine keeps to it.
TEST(Plan, EveryPlanRunsOnAnEngine) {
  const Engine all[] = {Engine::kDeepSpeed, Engine::kFsdp, Engine::kTorchtitan, Engine::kMegatron, Engine::kTorchtune};
  PlanOptions o;
  o.gpus_min = 8;
  o.gpus_max = 64;
  const char* configs[] = {
      R"({"model":{"preset":"llama-3-70b"}})",
      R"({"model":{"preset":"mistral-7b-v0.3"},"training":{"finetune":{"method":"lora"}},"hardware":{"gpu":"a100-80gb"}})",
      R"({"model":{"preset":"mixtral-8x7b"},"training":{"goal":"pretrain"}})",
  };
  for (const char* text : configs) {
    SCOPED_TRACE(text);
    const PlanResult r = plan(config(text), o);
    ASSERT_TRUE(r.ok());
    ASSERT_FALSE(r.plans.empty());
    for (const Plan& p : r.plans) {
      EXPECT_TRUE(std::any_of(std::begin(all), std::end(all), [&](Engine e) { return export_plan(p.config, e).ok(); }))
          << config_to_json(p.config).dump();
    }
  }
  // Ten plans are ten layouts, not one layout with its interleaving or context split varied.
  const PlanResult big = plan(config(configs[0]), o);
  std::set<std::string> families;
  for (const Plan& p : big.plans) {
    const Parallel& q = p.config.parallel;
    const std::string family = std::to_string(q.num_gpus) + "/" + std::to_string(q.tensor) + "/" + std::to_string(q.pipeline) +
                               "/" + std::to_string(q.expert) + "/" + to_string(p.config.training.precision) + "/" +
                               to_string(p.config.training.checkpointing) + "/" + std::to_string(q.zero_stage) + "/" +
                               std::to_string(q.shard_degree) + "/" + std::to_string(q.offload_optimizer) +
                               std::to_string(q.offload_params);
    EXPECT_TRUE(families.insert(family).second) << family;
  }
  EXPECT_EQ(big.plans.size(), 10u);
  // torchtune with what only its distributed recipes take: its single-device layouts are left out,
  // and the engine is not dropped for a refusal that depends on the layout.
  for (const char* text : {R"({"model":{"preset":"llama-3.2-1b"},"training":{"framework":"torchtune","precision":"bf16","optimizer_in_backward":true,"finetune":{"method":"lora"}}})",
                           R"({"model":{"preset":"llama-3.2-3b"},"training":{"framework":"torchtune","precision":"bf16","seq_len":8192}})"}) {
    SCOPED_TRACE(text);
    PlanOptions one;
    one.gpus_min = 1;
    one.gpus_max = 8;
    one.global_batch_tokens = 65536;
    const PlanResult tt = plan(config(text), one);
    ASSERT_TRUE(tt.ok());
    ASSERT_FALSE(tt.plans.empty());
    for (const Plan& p : tt.plans) EXPECT_TRUE(export_plan(p.config, Engine::kTorchtune).ok()) << config_to_json(p.config).dump();
    for (const Plan& p : tt.best_per_gpu_count) EXPECT_TRUE(export_plan(p.config, Engine::kTorchtune).ok()) << config_to_json(p.config).dump();
  }
  const PlanResult megatron = plan(config(R"({"model":{"preset":"llama-3-70b"},"training":{"framework":"megatron"}})"), o);
  ASSERT_TRUE(megatron.ok());
  ASSERT_FALSE(megatron.plans.empty());
  for (const Plan& p : megatron.plans) EXPECT_TRUE(export_plan(p.config, Engine::kMegatron).ok()) << config_to_json(p.config).dump();
}

// The planner asks the exporters once per layout class (plan.cpp, Planner::runnable): whether an
// engine refuses a layout must not depend on the GPU count beyond one GPU or several and whether
// data × context ranks remain beside tensor parallelism, nor on the micro-batch.
TEST(Plan, ExportRefusalsDependOnTheGpuCountOnlyByClass) {
  const Config base = config(R"({"model":{"preset":"llama-3-8b"}})");
  const Engine engines[] = {Engine::kDeepSpeed, Engine::kFsdp, Engine::kTorchtitan, Engine::kMegatron, Engine::kTorchtune};
  const Precision precisions[] = {Precision::kBf16, Precision::kBf16Master, Precision::kBf16Fsdp, Precision::kBf16Mixed,
                                  Precision::kFp8Mixed};
  const Checkpointing modes[] = {Checkpointing::kNone, Checkpointing::kFull, Checkpointing::kSelectiveOp};
  int compared = 0;
  for (std::int64_t tp : {1, 2}) for (std::int64_t cp : {1, 2}) for (std::int64_t pp : {1, 2}) for (int zero : {0, 1, 2, 3})
  for (Precision prec : precisions) for (Checkpointing ckpt : modes) for (bool offload : {false, true}) {
    if (offload && zero < 2) continue;
    std::map<std::pair<int, std::pair<bool, bool>>, bool> seen;  // (engine, class) → refuses the layout
    for (std::int64_t gpus : {tp * cp * pp, 2 * tp * cp * pp, 8 * tp * cp * pp, 64 * tp * cp * pp}) {
      for (std::int64_t mb : {1, 4}) {
        Layout l;
        l.num_gpus = gpus; l.tensor = tp; l.context = cp; l.pipeline = pp; l.zero_stage = zero; l.precision = prec;
        l.checkpointing = ckpt; l.offload_optimizer = l.offload_params = offload; l.sequence_parallel = tp > 1;
        l.micro_batch_size = mb;
        Config c = base;
        apply_layout(l, c);
        if (!validate(c).empty()) continue;
        const std::pair<bool, bool> cls{gpus == 1, gpus / (tp * cp) > 1};
        for (Engine e : engines) {
          const Export x = export_plan(c, e);
          const bool refuses = std::any_of(x.errors.begin(), x.errors.end(), [](const Issue& i) {
            return i.field == "parallel" || i.field.rfind("parallel.", 0) == 0 || i.field == "training.precision" ||
                   i.field == "training.checkpointing" || i.field == "training.checkpointed_layers";
          });
          const auto [it, added] = seen.try_emplace({static_cast<int>(e), cls}, refuses);
          if (!added) {
            ++compared;
            EXPECT_EQ(it->second, refuses) << to_string(e) << " gpus " << gpus << " mb " << mb << " " << config_to_json(c).dump();
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(Plan, RespectsTheGoalAndTheCard) {
  PlanOptions o;
  o.gpus_min = o.gpus_max = 8;
  // V100s have no bf16: only fp16 recipes; A100s no FP8.
  const PlanResult v100 = plan(config(R"({"model":{"preset":"llama-3.2-1b"},"training":{"seq_len":2048},"hardware":{"gpu":"v100-32gb"}})"), o);
  ASSERT_FALSE(v100.plans.empty());
  for (const Plan& p : v100.plans) {
    EXPECT_TRUE(p.config.training.precision == Precision::kFp16Master ||
                p.config.training.precision == Precision::kFp16Mixed);
  }
  const PlanResult a100 = plan(config(R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,"goal":"pretrain"},"hardware":{"gpu":"a100-80gb"}})"), o);
  for (const Plan& p : a100.plans) EXPECT_NE(p.config.training.precision, Precision::kFp8Mixed);
  // Pure bf16 is for fine-tuning only.
  for (const Plan& p : a100.plans) EXPECT_NE(p.config.training.precision, Precision::kBf16);
}

// The planner's memory bound shares one activation entry between recipes with the same element
// sizes and autocast; they must save the same bytes (if a recipe ever adds another difference,
// this fails and the planner's key must grow).
TEST(Plan, RecipesAlikeInActivationsSaveTheSame) {
  for (const char* ckpt : {"none", "selective_op", "full"}) {
    Config c = config(R"({"model":{"preset":"mixtral-8x7b"},"training":{"seq_len":4096,"micro_batch_size":2},"parallel":{"num_gpus":16,"tensor":2,"sequence_parallel":true,"pipeline":2,"zero_stage":1}})");
    c.training.checkpointing = ckpt == std::string("none") ? Checkpointing::kNone
                               : ckpt == std::string("full") ? Checkpointing::kFull : Checkpointing::kSelectiveOp;
    Bytes reference;
    bool first = true;
    for (Precision p : {Precision::kBf16Master, Precision::kFp8Mixed, Precision::kBf16Fsdp, Precision::kBf16}) {
      c.training.precision = p;
      const Estimate e = estimate(c);
      ASSERT_TRUE(e.ok());
      const PrecisionRecipe& r = recipe_for(p);
      ASSERT_EQ(r.compute, kHalfBytes);
      ASSERT_EQ(r.stream, kHalfBytes);
      ASSERT_FALSE(r.autocast);
      const Bytes saved = e.breakdown.activations + e.breakdown.logits_and_loss;
      if (!first) EXPECT_EQ(saved, reference) << to_string(p) << " " << ckpt;
      reference = saved;
      first = false;
    }
  }
}

// A plan without tokens to train says which default its time and cost assume; one with them does not.
// A GPU count that is not a power of two (QA report, Dec 3: `plan --gpus 6` searched nothing and
// said no layout fits): the batch the planner chooses is rounded up to a multiple of it; a batch
// the user gives that no data-parallel degree divides is named as the reason nothing was tried.
TEST(Plan, SixGpusShareTheBatchOrSayWhyNot) {
  const Config c = config(kSmall);
  PlanOptions o;
  o.gpus_min = o.gpus_max = 6;
  o.top = 1;
  const PlanResult chosen = plan(c, o);
  ASSERT_TRUE(chosen.ok());
  ASSERT_FALSE(chosen.plans.empty());
  EXPECT_EQ(chosen.plans.front().config.parallel.num_gpus, 6);
  EXPECT_EQ(chosen.global_batch_tokens % (6 * c.training.seq_len), 0);
  o.global_batch_tokens = 7 * c.training.seq_len;   // 7 sequences: no data-parallel degree of 6 GPUs divides it
  const PlanResult given = plan(c, o);
  ASSERT_TRUE(given.ok());
  EXPECT_TRUE(given.plans.empty());
  bool said = false;
  for (const std::string& n : given.notes) said = said || n.find("none was tried") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Plan, SaysWhichTokensToTrainItAssumes) {
  Config c = config(R"({"model":{"preset":"llama-3-8b"},"training":{"goal":"pretrain"},"hardware":{"gpu":"h100-sxm-80gb"}})");
  PlanOptions o;
  o.gpus_min = 8;
  o.gpus_max = 8;
  o.top = 1;
  const PlanResult r = plan(c, o);
  ASSERT_TRUE(r.errors.empty());
  ASSERT_FALSE(r.plans.empty());
  const auto said = [](const PlanResult& p) {
    for (const std::string& n : p.notes) if (n.find("tokens to train not given") != std::string::npos) return n;
    return std::string();
  };
  EXPECT_NE(said(r).find("20 per parameter"), std::string::npos) << said(r);
  EXPECT_DOUBLE_EQ(r.plans[0].time.train_tokens, 20.0 * double(count_parameters(c.model).total_count.value()));
  o.step_time.train_tokens = 1e12;
  const PlanResult given = plan(c, o);
  EXPECT_EQ(said(given), "");
  EXPECT_DOUBLE_EQ(given.plans[0].time.train_tokens, 1e12);
}

TEST(Plan, OptionsAreReadAndChecked) {
  PlanOptions o;
  EXPECT_TRUE(read_plan_options(*parse_json(R"({"gpus_min":2,"gpus_max":64,"top":3,"rank_by":"cost"})").value, o).empty());
  EXPECT_EQ(o.gpus_max, 64);
  EXPECT_EQ(o.rank_by, RankBy::kCost);
  const std::vector<Issue> bad = read_plan_options(*parse_json(R"({"gpus":4,"rank_by":"speed"})").value, o);
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].field, "gpus");
  EXPECT_EQ(bad[1].field, "rank_by");
  // Ranges as the configuration's fields say them: grouped digits, and what was given.
  const std::vector<Issue> range = read_plan_options(*parse_json(R"({"gpus_max":"abc","global_batch_tokens":0})").value, o);
  ASSERT_EQ(range.size(), 2u);
  EXPECT_EQ(range[0].message, "must be an integer from 1 to 1,000,000; got \"abc\"");
  EXPECT_EQ(range[1].message, "must be an integer from 1 to 1,099,511,627,776; got 0");
}

}  // namespace
}  // namespace memfit
