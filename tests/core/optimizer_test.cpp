// Optimizer states: memfit's bytes against the real libraries (tests/fixtures/optimizers/, written
// by tools/frameworks/optimizer_states.py: one step of each optimizer on a tiny fp32 Llama on the
// CPU), worked examples, and what fused-update optimizers do to gradients and the step.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

Json fixture() {
  std::ifstream in(std::string(MEMFIT_SOURCE_DIR) + "/tests/fixtures/optimizers/optimizer_states.json");
  std::ostringstream s;
  s << in.rdbuf();
  JsonParseResult parsed = parse_json(s.str());
  EXPECT_TRUE(parsed.value.has_value()) << parsed.error;
  return parsed.value ? *parsed.value : Json::object();
}

Estimate estimate_with(const Json& model, const std::string& optimizer, const Json& options) {
  Json config = Json::object();
  config.set("model", model);
  Json& training = config.set("training", Json::object());
  training.set("precision", Json::string("fp32"));
  training.set("seq_len", Json::integer(16));
  training.set("optimizer", Json::string(optimizer));
  for (const auto& [key, value] : options.members()) training.set(key, value);
  const ConfigParse parsed = parse_config(config);
  EXPECT_TRUE(parsed.ok()) << optimizer << ": " << (parsed.errors.empty() ? "" : parsed.errors[0].message);
  return estimate(parsed.config);
}

TEST(Optimizers, StatesMatchTheLibrariesToTheByte) {
  const Json doc = fixture();
  const Json* model = doc.find("memfit_model");
  const Json* cases = doc.find("cases");
  ASSERT_TRUE(model && cases);
  std::set<std::string> seen;
  for (const Json& c : cases->items()) {
    const std::string name = c.find("optimizer")->as_string();
    ASSERT_EQ(c.find("error"), nullptr) << name << ": " << c.find("error")->as_string();
    const Estimate e = estimate_with(*model, name, *c.find("options"));
    ASSERT_TRUE(e.ok()) << name;
    EXPECT_EQ(e.breakdown.optimizer_states.value(), *c.find("state_bytes")->as_exact_integer())
        << name << " " << c.find("options")->dump();
    seen.insert(name);
  }
  for (const char* o : {"adamw", "sgd_momentum", "adafactor", "adamw_8bit", "lion", "lion_8bit", "sgd_momentum_8bit",
                        "galore_adamw", "adam_mini", "muon", "lomo", "adalomo", "shampoo", "soap", "came", "sophia",
                        "schedule_free_adamw", "adamw_4bit"}) {
    EXPECT_TRUE(seen.count(o)) << o << " has no measured case";
  }
}

// The bytes of an estimate's phase by name; -1 if absent.
std::int64_t phase_of(const Estimate& e, const char* name) {
  for (const Phase& p : e.phases) {
    if (std::string(p.name) == name) return p.bytes.value();
  }
  return -1;
}

Config tiny(Optimizer o) {
  Config c = default_config();
  c.model = ModelSpec{};
  c.model.vocab_size = 1000;
  c.model.hidden_size = 64;
  c.model.num_hidden_layers = 2;
  c.model.num_attention_heads = 4;
  c.model.num_key_value_heads = 2;
  c.model.intermediate_size = 128;
  c.model.max_position_embeddings = 128;
  c.training.seq_len = 16;
  c.training.precision = Precision::kFp32;
  c.training.optimizer = o;
  return c;
}

// AdamW's optimizer-state bytes on tiny() minus those of a rank-16 low-rank optimizer.
std::int64_t states_saved_at_rank_16(Optimizer low_rank) {
  Config c = tiny(low_rank);
  c.training.galore_rank = 16;
  const Estimate low = estimate(c);
  c.training.optimizer = Optimizer::kAdamW;
  const Estimate adam = estimate(c);
  EXPECT_TRUE(low.ok() && adam.ok());
  return adam.breakdown.optimizer_states.value() - low.breakdown.optimizer_states.value();
}

// GaLore, worked (fp32 gradients, rank 16): q [64, 64] keeps two 64 × 16 moments and, as a view
// of torch.linalg.svd's Vh, the whole 64 × 64 factor; k [32, 64] (rows < cols: left projection)
// two 16 × 64 moments and U's 32 × 32.
TEST(Optimizers, GaloreWorkedExample) {
  // Per layer, elements AdamW keeps minus GaLore's: q 8192 − (2048 + 4096) = 2048; k 4096 −
  // (2048 + 1024) = 1024; v as k; o as q; gate, up [128, 64] and down [64, 128]: 16384 − (4096 +
  // 4096) = 8192 each.
  const std::int64_t saved_per_layer = 2048 + 1024 + 1024 + 2048 + 3 * 8192;
  EXPECT_EQ(states_saved_at_rank_16(Optimizer::kGaloreAdamW), 2 * saved_per_layer * 4);
}

// Q-GaLore (q_galore_torch): the blocks' linear weights as uint8 codes with a bf16 scale and zero
// per 256 (6,476,005,376 of Llama 2 7B's 6,738,415,616 parameters: 32 x (4 x 4096² + 3 x 4096 x
// 11008)), the rest in bf16; with --proj_quant each r x k projection as one-byte codes with two
// bf16 values per 256. Checked against the arithmetic, not a run.
TEST(Optimizers, QGaloreInt8WeightsAndOneByteProjections) {
  Config c = parse_config_text(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16",)"
                               R"("optimizer":"galore_adamw_8bit","galore_rank":1024,"optimizer_in_backward":true,)"
                               R"("seq_len":256}})").config;
  const Estimate plain = estimate(c);
  c.training.weight_quant = WeightQuant::kInt8;
  const Estimate int8 = estimate(c);
  c.training.galore_proj_quant = true;
  const Estimate both = estimate(c);
  ASSERT_TRUE(plain.ok() && int8.ok() && both.ok());
  const std::int64_t linear = 6'476'005'376, others = 6'738'415'616 - linear;
  EXPECT_EQ(plain.breakdown.parameters.value(), (linear + others) * 2);
  EXPECT_EQ(int8.breakdown.parameters.value(), others * 2 + linear + linear / 256 * 2 * 2);
  EXPECT_EQ(int8.breakdown.optimizer_states, plain.breakdown.optimizer_states);
  // Projections: per block q, k, v, o keep 1024 x 4096 and gate, up, down 1024 x 4096 (the
  // smaller side is 4096 for every one), 7 x 4,194,304 codes; 2 bytes each before, 1 + 4/256 after.
  const std::int64_t codes = 32LL * 7 * 1024 * 4096;
  EXPECT_EQ(int8.breakdown.optimizer_states.value() - both.breakdown.optimizer_states.value(),
            codes * 2 - (codes + codes / 256 * 2 * 2));
  // The in-backward update of the largest linear weight (4096 x 11008) holds eight bf16 tensors of
  // its size for a moment (dequantized weight, its clone, the stochastic-rounding temporaries).
  EXPECT_GE(phase_of(both, "backward"), both.breakdown.parameters.value() + 4096LL * 11008 * 2 * 8);
}

TEST(Optimizers, Int8WeightsAreForTheTrainedWeightsOfAOneDtypeModel) {
  Config c = parse_config_text(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16",)"
                               R"("weight_quant":"int8","finetune":{"method":"lora"}}})").config;
  std::vector<Issue> errors = estimate(c).errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].field, "training.weight_quant");
  c.training.finetune.method = FinetuneMethod::kFull;
  c.training.precision = Precision::kBf16Mixed;
  errors = estimate(c).errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("master"), std::string::npos);
}

// APOLLO, worked (fp32, rank 16): GaLore's moments, but the stored projection is the random
// r x min(m, n) matrix whatever the dtype (no SVD factor), plus the limiter's scalar. Per layer,
// AdamW's elements minus APOLLO's: q and o [64, 64]: 8192 - (2048 + 1024 + 1) = 5119; k and v
// [32, 64]: 4096 - (2048 + 512 + 1) = 1535; gate, up [128, 64] and down [64, 128]:
// 16384 - (4096 + 1024 + 1) = 11263.
TEST(Optimizers, ApolloWorkedExample) {
  const std::int64_t saved_per_layer = 2 * 5119 + 2 * 1535 + 3 * 11263;
  EXPECT_EQ(states_saved_at_rank_16(Optimizer::kApollo), 2 * saved_per_layer * 4);
}

// LOMO and AdaLomo fuse the update into backward: no stored gradients, no optimizer phase.
TEST(Optimizers, FusedUpdatesStoreNoGradients) {
  for (Optimizer o : {Optimizer::kLomo, Optimizer::kAdaLomo}) {
    const Estimate e = estimate(tiny(o));
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e.breakdown.gradients.value(), 0);
    for (const Phase& p : e.phases) EXPECT_STRNE(p.name, "optimizer_step");
  }
  EXPECT_GT(estimate(tiny(Optimizer::kSgd)).breakdown.gradients.value(), 0);
}

// MeZO (Malladi et al. 2023): two forward passes under torch.no_grad and an in-place update. Llama
// 2 7B in bf16 at B·T = 2 · 512: no gradients, no state, no master copy, nothing saved but one
// block's tensors while it runs; no backward phase; the update holds the largest weight (the
// 32000 x 4096 embedding) three more times. Its step is two forwards: two thirds of a training
// step's FLOPs (forward and a backward of twice its cost).
TEST(Optimizers, MezoRunsForwardPassesOnly) {
  Config c = default_config();
  c.model = *preset_model("llama-2-7b");
  c.training.precision = Precision::kBf16Master;
  c.training.seq_len = 512;
  c.training.micro_batch_size = 2;
  c.training.checkpointing = Checkpointing::kNone;
  const Estimate adam = estimate(c);
  c.training.optimizer = Optimizer::kMezo;
  const Estimate e = estimate(c);
  ASSERT_TRUE(e.ok() && adam.ok());
  EXPECT_EQ(e.breakdown.gradients.value(), 0);
  EXPECT_EQ(e.breakdown.optimizer_states.value(), 0);
  EXPECT_EQ(e.breakdown.master_weights.value(), 0);
  EXPECT_LT(e.breakdown.activations.value() * 20, adam.breakdown.activations.value());
  std::int64_t update = -1;
  for (const Phase& p : e.phases) {
    EXPECT_STRNE(p.name, "backward");
    if (std::string(p.name) == "optimizer_step") update = p.bytes.value();
  }
  EXPECT_EQ(update, e.breakdown.parameters.value() + 3LL * 32000 * 4096 * 2);
  EXPECT_LT(e.peak_allocated_bytes.value(), e.breakdown.parameters.value() * 11 / 10);
  const StepTime forward_only = step_time(c);
  c.training.optimizer = Optimizer::kAdamW;
  const StepTime trained = step_time(c);
  ASSERT_TRUE(forward_only.ok() && trained.ok());
  EXPECT_NEAR(forward_only.model_flops_per_token * 3, trained.model_flops_per_token * 2,
              1e-6 * trained.model_flops_per_token);
}

// Relations: Shampoo's blocks shrink its factors as max_preconditioner_dim falls; SOAP skips sides
// longer than its limit; Muon keeps between SGD-momentum's one state and AdamW's two.
TEST(Optimizers, Relations) {
  Config c = tiny(Optimizer::kShampoo);
  const std::int64_t whole = estimate(c).breakdown.optimizer_states.value();
  c.training.max_preconditioner_dim = 48;
  EXPECT_LT(estimate(c).breakdown.optimizer_states.value(), whole);
  const auto states = [](Optimizer o) { return estimate(tiny(o)).breakdown.optimizer_states.value(); };
  EXPECT_LT(states(Optimizer::kSgdMomentum), states(Optimizer::kMuon));
  EXPECT_LT(states(Optimizer::kMuon), states(Optimizer::kAdamW));
  EXPECT_LT(states(Optimizer::kAdamMini), states(Optimizer::kAdamW));
  EXPECT_LT(states(Optimizer::kLion8bit), states(Optimizer::kLion));
}

// The multi-tensor AdamW step's temporaries: sqrt(exp_avg_sq) for every trainable tensor (one
// state's size); PyTorch <= 2.0 also adds eps out of place (two); fused kernels none.
TEST(Optimizers, MultiTensorStepTemporaries) {
  const auto step = [](const char* impl) {
    const Estimate e = estimate(parse_config_text(std::string(R"({"model":{"preset":"llama-3.2-1b"},"training":{)"
                                                              R"("precision":"fp32","seq_len":256,"optimizer_impl":")") +
                                                  impl + R"("}})")
                                    .config);
    EXPECT_TRUE(e.ok());
    for (const Phase& p : e.phases)
      if (std::string(p.name) == "optimizer_step") return p.bytes.value();
    ADD_FAILURE() << "no optimizer_step phase";
    return std::int64_t{0};
  };
  const std::int64_t params =
      *estimate_json(R"({"model":{"preset":"llama-3.2-1b"}})").find("parameter_count")->as_exact_integer();
  const std::int64_t fused = step("fused");
  EXPECT_EQ(step("foreach") - fused, params * 4);
  EXPECT_EQ(step("foreach_legacy") - fused, params * 8);
}

// optimizer_impl auto is the framework's own step: transformers' Trainer defaults to
// adamw_torch_fused on PyTorch >= 2.8, DeepSpeed, torchtune's configs, torchtitan, Megatron, nanoGPT
// and llm.c step in place; LitGPT's fine-tuning scripts build torch.optim.AdamW with neither flag,
// PyTorch's foreach. An explicit choice is kept under every framework.
TEST(Optimizers, AutoIsTheFrameworksOwnStep) {
  const auto step = [](const char* framework, const char* impl) {
    const Estimate e = estimate(parse_config_text(std::string(R"({"model":{"preset":"llama-3.2-1b"},"training":{)"
                                                              R"("precision":"fp32","seq_len":256,"framework":")") +
                                                  framework + R"(","optimizer_impl":")" + impl + R"("}})")
                                    .config);
    EXPECT_TRUE(e.ok()) << framework << " " << impl;
    for (const Phase& p : e.phases)
      if (std::string(p.name) == "optimizer_step") return p.bytes.value();
    ADD_FAILURE() << "no optimizer_step phase";
    return std::int64_t{0};
  };
  for (const char* framework : {"hf", "trl", "deepspeed", "torchtune", "torchtitan", "nanogpt"}) {
    EXPECT_EQ(step(framework, "auto"), step(framework, "fused")) << framework;
    EXPECT_GT(step(framework, "foreach"), step(framework, "fused")) << framework;
  }
  EXPECT_EQ(step("litgpt", "auto"), step("litgpt", "foreach"));
  // LitGPT's pretrain.py passes fused=True on CUDA.
  const Config pretrain =
      parse_config_text(R"({"training":{"framework":"litgpt","goal":"pretrain"}})").config;
  EXPECT_EQ(resolved_optimizer_impl(pretrain), OptimizerImpl::kFused);
  EXPECT_EQ(parse_config_text("{}").config.training.optimizer_impl, OptimizerImpl::kAuto);
}

}  // namespace
}  // namespace memfit
