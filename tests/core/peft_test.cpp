// Parameter-efficient methods: memfit's trainable and total counts against PEFT's own
// get_nb_trainable_parameters() on real model configurations (tests/fixtures/peft/, written by
// tools/frameworks/peft_fixture.py from PEFT 0.21 and LitGPT 0.5 on the meta device), published
// print_trainable_parameters() outputs, worked examples, and the memory effects of each method.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

Json fixture() {
  std::ifstream in(std::string(MEMFIT_SOURCE_DIR) + "/tests/fixtures/peft/peft_counts.json");
  std::ostringstream s;
  s << in.rdbuf();
  JsonParseResult parsed = parse_json(s.str());
  EXPECT_TRUE(parsed.value.has_value()) << parsed.error;
  return parsed.value ? *parsed.value : Json::object();
}

Estimate estimate_case(const std::string& preset, const Json& finetune) {
  Json config = Json::object();
  config.set("model", Json::object()).set("preset", Json::string(preset));
  Json& training = config.set("training", Json::object());
  training.set("seq_len", Json::integer(256));
  training.set("finetune", finetune);
  const ConfigParse parsed = parse_config(config);
  EXPECT_TRUE(parsed.ok()) << preset << " " << finetune.dump() << ": "
                           << (parsed.errors.empty() ? "" : parsed.errors[0].field + " " + parsed.errors[0].message);
  return estimate(parsed.config);
}

// Every case of the fixture, exactly: the trainable count and PEFT's "all params".
TEST(Peft, EveryMethodMatchesPeftOnRealModels) {
  const Json doc = fixture();
  const Json* cases = doc.find("cases");
  ASSERT_NE(cases, nullptr);
  std::set<std::string> methods, models;
  for (const Json& c : cases->items()) {
    const std::string preset = c.find("preset")->as_string();
    const Json& finetune = *c.find("finetune");
    ASSERT_EQ(c.find("error"), nullptr) << preset << " " << finetune.dump() << ": " << c.find("error")->as_string();
    const Estimate e = estimate_case(preset, finetune);
    ASSERT_TRUE(e.ok()) << preset << " " << finetune.dump() << ": " << e.errors[0].message;
    EXPECT_EQ(e.trainable_parameter_count.value(), *c.find("trainable")->as_exact_integer())
        << preset << " " << finetune.dump();
    EXPECT_EQ(e.parameter_count.value(), *c.find("total")->as_exact_integer()) << preset << " " << finetune.dump();
    methods.insert(finetune.find("method")->as_string());
    models.insert(preset);
  }
  // Every method memfit offers is checked, on the models the brief names.
  for (const char* m : {"lora", "dora", "lora_fa", "adalora", "vera", "ia3", "prompt_tuning", "prefix_tuning",
                        "p_tuning", "llama_adapter", "llama_adapter_v2", "oft", "boft", "ln_tuning", "trainable_tokens",
                        "loha", "lokr", "fourierft", "hra", "miss", "vblora", "randlora", "c3a", "road", "waveft",
                        "delora", "gralora", "tinylora", "shira", "hira", "multitask_prompt_tuning", "cpt", "cartridge",
                        "adamss", "beft", "lily", "poly", "frod", "pvera", "glora", "unilora", "osf", "psoft", "peanut",
                        "supertuning", "deft", "xlora", "shadow"}) {
    EXPECT_TRUE(methods.count(m)) << m << " has no PEFT case";
  }
  // Mixtral and Qwen3-MoE: transformers 5's stacked experts, one adapter per projection; Qwen1.5-MoE:
  // stacked experts PEFT does not map, whose module names reach the shared expert only; Phi-3: fused
  // qkv_proj and gate_up_proj, each one adapted layer.
  // T5 and BART: PEFT's prompt per stack of an encoder-decoder.
  for (const char* p : {"llama-2-7b", "llama-3-8b", "mistral-7b-v0.1", "qwen2.5-7b", "gpt2", "opt-125m",
                        "bert-base-uncased", "mixtral-8x7b", "qwen3-30b-a3b", "qwen1.5-moe-a2.7b", "phi-3-mini-4k",
                        "t5-base", "bart-base"}) {
    EXPECT_TRUE(models.count(p)) << p << " has no PEFT case";
  }
}

Json read_fixture(const char* name) {
  std::ifstream in(std::string(MEMFIT_SOURCE_DIR) + "/tests/fixtures/peft/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  JsonParseResult parsed = parse_json(s.str());
  EXPECT_TRUE(parsed.value.has_value()) << parsed.error;
  return parsed.value ? *parsed.value : Json::object();
}

// A configuration of a fixture's tiny Llama (peft_saved.json, peft_transients.json): eager
// attention, the fixture's batch and length, at `precision`, rank 8 unless the case says; on the CPU
// every buffer is where the model computes (no per-forward device copies, as for a model moved to
// the GPU after wrapping).
Config tiny_config(const Json& doc, const std::string& precision, const Json& case_finetune,
                   const std::string& checkpointing = "none") {
  Json config = Json::object();
  config.set("model", *doc.find("memfit_model"));
  Json& training = config.set("training", Json::object());
  training.set("precision", Json::string(precision));
  training.set("attention", Json::string("eager"));
  training.set("micro_batch_size", *doc.find("micro_batch_size"));
  training.set("seq_len", *doc.find("seq_len"));
  training.set("checkpointing", Json::string(checkpointing));
  training.set("checkpoint_impl", Json::string("non_reentrant"));
  Json finetune = case_finetune;
  if (!finetune.find("lora_rank")) finetune.set("lora_rank", Json::integer(8));
  finetune.set("loaded_before_wrapping", Json::boolean(false));
  training.set("finetune", finetune);
  const ConfigParse parsed = parse_config(config);
  EXPECT_TRUE(parsed.ok()) << finetune.dump() << ": " << (parsed.ok() ? "" : parsed.errors[0].message);
  return parsed.config;
}

// memfit's per-layer saved bytes for a peft_saved.json case.
std::int64_t tiny_layer_bytes(const Json& doc, const char* precision, const Json& case_finetune) {
  std::int64_t layer = 0;
  for (const NamedBytes& term : estimate(tiny_config(doc, precision, case_finetune)).activation_terms_per_layer) {
    layer += term.bytes.value();
  }
  return layer;
}

// A step's forward and backward high points less the weights and states that are there before it
// (what torch.profiler's memory events count from the step's start).
std::pair<std::int64_t, std::int64_t> step_peaks(const Estimate& e) {
  const std::int64_t resident =
      (e.breakdown.parameters + e.breakdown.optimizer_states + e.breakdown.master_weights).value();
  std::int64_t forward = 0, backward = 0;
  for (const Phase& p : e.phases) {
    const std::string name = p.name;
    if (name.rfind("forward", 0) == 0) forward = std::max(forward, p.bytes.value() - resident);
    if (name == "backward") backward = p.bytes.value() - resident;
  }
  return {forward, backward};
}

// What each method saves in one block, against PEFT's real layers (tools/frameworks/peft_saved.py:
// saved_tensors_hooks on a tiny fp32 Llama with eager attention, the last block). Every method is
// exact but three: OFT, whose per-target copy of its input memfit keeps as autocast makes it (fp32
// on the CPU shares one), and HRA and WaveFT, within 0.3 % (small index and vector tensors).
TEST(Peft, SavedTensorsMatchPeftLayers) {
  const Json doc = read_fixture("peft_saved.json");
  const Json* cases = doc.find("cases");
  ASSERT_NE(cases, nullptr);
  for (const Json& c : cases->items()) {
    const Json& finetune = *c.find("finetune");
    const std::int64_t layer = tiny_layer_bytes(doc, "fp32", finetune);
    const std::int64_t measured = *c.find("saved_bytes")->find("layer1")->as_exact_integer();
    const std::string method = finetune.find("method")->as_string();
    if (method == "shadow") continue;  // per step, not per block: ShadowsSideNetworkIsCounted
    if (method == "oft") {
      EXPECT_GE(layer, measured);
      EXPECT_LE(layer, measured * 107 / 100);
    } else if (method == "hra" || method == "waveft") {
      EXPECT_NEAR(static_cast<double>(layer), static_cast<double>(measured), measured * 0.003) << finetune.dump();
    } else {
      EXPECT_EQ(layer, measured) << finetune.dump();
    }
  }
}

// On a bf16 model PEFT keeps adapters in fp32 (autocast_adapter_dtype) and what each method builds
// from them is fp32 too: Lily, Poly, Uni-LoRA, OSF, PEANuT, DEFT and X-LoRA cast their input to them
// (an fp32 copy per adapted layer, not the shared bf16 input; PEANuT also casts the weight), LoHa,
// LoKr, HiRA, FourierFT, WaveFT, C3A and HRA cast it for F.linear with their fp32 update (HRA casts
// the frozen weight as well), and the A x of LoRA-FA, the sub-block outputs of GraLoRA, VeRA's and
// TinyLoRA's products, MiSS's sums, RandLoRA's update, OFT's cast input, RoAd's cast base output,
// DoRA's LoRA branch and IA3's scaled feed-forward input are fp32. BOFT casts its permutations to
// x's dtype. Each method's difference from LoRA on the same targets, as peft_saved.py measured it on
// the tiny bf16 Llama: exact for all but four. HRA, WaveFT and BOFT are within 0.3 % of the layer
// (as on the fp32 model: small index and vector tensors), AdaMSS within 2 %. DeLoRA multiplies x by
// its fp32 norm buffer, which makes everything after it fp32; AdaLoRA's ranknum, re-wrapped as a
// trained Parameter by the cast to fp32, makes its division save the [t, out] numerator.
TEST(Peft, AdaptersOverABf16ModelKeepWhatTheyBuildInFp32) {
  const Json doc = read_fixture("peft_saved.json");
  const Json* cases = doc.find("cases_bf16");
  ASSERT_NE(cases, nullptr);
  const auto layer = [&](const Json& finetune) { return tiny_layer_bytes(doc, "bf16", finetune); };
  const Json& lora = cases->items().at(0);
  ASSERT_EQ(lora.find("finetune")->find("method")->as_string(), "lora");
  const std::int64_t lora_measured = *lora.find("saved_bytes")->find("layer1")->as_exact_integer();
  const std::int64_t lora_memfit = layer(*lora.find("finetune"));
  std::size_t exact = 0;
  for (const Json& c : cases->items()) {
    const std::int64_t measured = *c.find("saved_bytes")->find("layer1")->as_exact_integer();
    const std::int64_t memfit = layer(*c.find("finetune")) - lora_memfit + lora_measured;
    const std::string method = c.find("finetune")->find("method")->as_string();
    const double tolerance = method == "hra" || method == "waveft" || method == "boft" ? 0.003
                             : method == "adamss"                                       ? 0.02
                                                                                        : 0.0;
    if (tolerance == 0.0) {
      EXPECT_EQ(memfit, measured) << c.find("finetune")->dump();
      ++exact;
    } else {
      EXPECT_NEAR(static_cast<double>(memfit), static_cast<double>(measured), measured * tolerance) << method;
    }
  }
  EXPECT_EQ(exact, 32u);
}

// The same bf16 model under torch.autocast (memfit's bf16_mixed over a 16-bit base, the Trainer's
// bf16=True), every method: the adapters' matmuls give bf16, OSF's and Uni-LoRA's rebuilt factors
// too, FRoD makes its sparse λ_s dense, GLoRA casts its factors, and Poly and PEANuT leave their
// input as it is; what an explicit cast or a non-autocast op makes stays fp32 (C3A's x.to(float32),
// RoAd's cast base output, IA3's feed-forward input, LoKr's Kronecker and FourierFT's ifft2
// updates, whose cast x F.linear then copies to 16 bits per adapter, as HiRA's); HRA's Householder
// products and WaveFT's map are 16-bit, and RandLoRA's F.linear keeps a 16-bit copy of its frozen
// basis. Exact for ten; within 6 % of the layer for the rest (LoRA's own layer is 14,336 bytes short
// here: the bf16 casts autocast makes of its A and B).
TEST(Peft, UnderAutocastAdaptersComputeInBf16) {
  const Json doc = read_fixture("peft_saved.json");
  const Json* cases = doc.find("cases_bf16_autocast");
  ASSERT_NE(cases, nullptr);
  const std::vector<std::string> exact_methods = {"beft", "glora", "supertuning", "frod", "osf",
                                                  "unilora", "loha", "road", "c3a", "shira"};
  std::size_t exact = 0, checked = 0;
  for (const Json& c : cases->items()) {
    const Json& ft = *c.find("finetune");
    const std::int64_t layer = tiny_layer_bytes(doc, "bf16_mixed", ft);
    const std::int64_t measured = *c.find("saved_bytes")->find("layer1")->as_exact_integer();
    const std::string method = ft.find("method")->as_string();
    if (std::find(exact_methods.begin(), exact_methods.end(), method) != exact_methods.end()) {
      EXPECT_EQ(layer, measured) << method;
      ++exact;
    } else {
      EXPECT_NEAR(static_cast<double>(layer), static_cast<double>(measured), measured * 0.06) << method;
    }
    ++checked;
  }
  EXPECT_EQ(exact, 10u);
  EXPECT_EQ(checked, 36u);
}

// Every method's step peaks on PEFT's real layers (tools/frameworks/peft_transients.py, the bf16 tiny
// Llama with fp32 adapters on q, v and down_proj, one training step under torch.profiler's CPU memory
// events), as the difference from LoRA's on the same targets: the
// pieces of a dense update built beside it in forward (LoHa's two factor products, LoKr's
// Kronecker before its scale, FourierFT's spectrum and ifft2's complex output, HRA's reflections,
// BOFT's identity and fp32 block diagonal, ...), the update's gradient and what the method's
// backward builds from it, and under checkpointing what each layer would have saved, built and
// dropped in forward. On the bf16 model and under autocast (bf16_mixed), with and without
// checkpointing: within 0.5 MiB and 10 % of the measured difference (the step's own peaks: 1-100 MB
// here), forward and backward, for every method but the regimes listed below.
TEST(Peft, EveryMethodsStepPeaksMatchPeftsRealLayers) {
  const Json doc = read_fixture("peft_transients.json");
  const Json* cases = doc.find("methods");
  ASSERT_NE(cases, nullptr);
  const auto peaks = [&](const Json& finetune, const std::string& precision, const std::string& checkpointing) {
    return step_peaks(estimate(tiny_config(doc, precision, finetune, checkpointing)));
  };
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> lora_measured, lora_memfit;
  const auto regime = [](const Json& c) {
    return c.find("precision")->as_string() + " " + c.find("checkpointing")->as_string();
  };
  for (const Json& c : cases->items()) {
    if (c.find("finetune")->find("method")->as_string() != "lora") continue;
    const Json& m = *c.find("measured");
    lora_measured[regime(c)] = {*m.find("forward_peak_bytes")->as_exact_integer(),
                                *m.find("backward_peak_bytes")->as_exact_integer()};
    lora_memfit[regime(c)] =
        peaks(*c.find("finetune"), c.find("precision")->as_string(), c.find("checkpointing")->as_string());
  }
  ASSERT_EQ(lora_measured.size(), 4u);
  std::set<std::string> off;
  std::size_t checked = 0;
  for (const Json& c : cases->items()) {
    const std::string method = c.find("finetune")->find("method")->as_string();
    if (c.find("error") || method == "lora") continue;
    const std::string r = regime(c);
    const Json& m = *c.find("measured");
    const double forward = static_cast<double>(*m.find("forward_peak_bytes")->as_exact_integer() - lora_measured[r].first);
    const double backward =
        static_cast<double>(*m.find("backward_peak_bytes")->as_exact_integer() - lora_measured[r].second);
    const auto memfit = peaks(*c.find("finetune"), c.find("precision")->as_string(), c.find("checkpointing")->as_string());
    const double memfit_forward = static_cast<double>(memfit.first - lora_memfit[r].first);
    const double memfit_backward = static_cast<double>(memfit.second - lora_memfit[r].second);
    // The floor: memfit's LoRA backward high point on this tiny model is about 0.45 MB under the
    // measured one (the CPU loss's and embedding's gradients), which every difference inherits.
    // Where the difference is large (2 MiB and more: the dense updates), it must also be within 35 %.
    const auto close = [](double memfit_bytes, double measured) {
      return std::abs(memfit_bytes - measured) <= 524288.0 + 0.10 * std::abs(measured) &&
             (std::abs(measured) < 2097152.0 || std::abs(memfit_bytes - measured) <= 0.35 * std::abs(measured));
    };
    if (!close(memfit_forward, forward)) off.insert(method + " " + r + " forward");
    if (!close(memfit_backward, backward)) off.insert(method + " " + r + " backward");
    ++checked;
  }
  // Not matched (each listed, so that a change either way is seen): FRoD's backward (its projections'
  // gradients), OSF's backward under checkpointing and everything under autocast (its factors rebuilt
  // from fp32 bases), and HRA under autocast, whose running product stays fp32 beside the 16-bit
  // copies autocast makes for each reflection's matmul.
  const std::set<std::string> expected_off = {
      "frod bf16 none backward",          "frod bf16 full backward",         "frod bf16_mixed none backward",
      "frod bf16_mixed full backward",    "osf bf16 full backward",          "osf bf16_mixed none forward",
      "osf bf16_mixed none backward",     "osf bf16_mixed full forward",     "osf bf16_mixed full backward",
      "hra bf16_mixed none forward",      "hra bf16_mixed none backward",    "hra bf16_mixed full forward",
      "hra bf16_mixed full backward",
  };
  EXPECT_EQ(off, expected_off);
  EXPECT_EQ(checked, 158u);
}

// DoRA rebuilds every adapted layer's dense update in each forward to norm the weight (an [in, in]
// identity through the adapters, the base weight cast to their dtype, s·ΔW and W + s·ΔW), saves
// none of it, and frees it as the layer returns: a high point in forward, and under checkpointing
// again in backward as each block is recomputed. Measured on PEFT's real layers in one training
// step (tools/frameworks/peft_transients.py: torch.profiler's CPU memory events, a tiny Llama whose
// down_proj has 1,024 inputs): DoRA's peaks less LoRA's on the same targets. Where down_proj is
// adapted the temporaries dominate, and memfit's difference is within 6 % of the measured one; with
// checkpointing off, backward holds nothing more than what DoRA saves.
TEST(Peft, DoraBuildsItsDenseUpdateInEveryForward) {
  const Json doc = read_fixture("peft_transients.json");
  const Json* cases = doc.find("cases");
  ASSERT_NE(cases, nullptr);
  const auto peaks = [&](const Json& c, const char* method) {
    Json finetune = Json::object();
    finetune.set("method", Json::string(method));
    finetune.set("lora_rank", *doc.find("lora_rank"));
    finetune.set("lora_targets", *c.find("lora_targets"));
    return step_peaks(estimate(tiny_config(doc, c.find("precision")->as_string(), finetune,
                                           c.find("checkpointing")->as_string())));
  };
  const auto measured = [](const Json& c, const char* key) {
    return *c.find("dora")->find(key)->as_exact_integer() - *c.find("lora")->find(key)->as_exact_integer();
  };
  std::size_t checked = 0;
  for (const Json& c : cases->items()) {
    const std::string targets = c.find("lora_targets")->dump();
    if (targets.find("down") == std::string::npos) continue;
    const auto lora = peaks(c, "lora"), dora = peaks(c, "dora");
    const double forward = static_cast<double>(measured(c, "forward_peak_bytes"));
    const double backward = static_cast<double>(measured(c, "backward_peak_bytes"));
    EXPECT_NEAR(static_cast<double>(dora.first - lora.first), forward, forward * 0.06) << c.dump();
    if (c.find("checkpointing")->as_string() == "full") {
      EXPECT_NEAR(static_cast<double>(dora.second - lora.second), backward, backward * 0.06) << c.dump();
    } else {
      EXPECT_NEAR(static_cast<double>(dora.second - lora.second), backward, 128.0 * 1024) << c.dump();
    }
    ++checked;
  }
  EXPECT_EQ(checked, 8u);
}

Config llama2(FinetuneMethod method) {
  Config c = default_config();
  c.model = *preset_model("llama-2-7b");
  c.training.seq_len = 512;
  c.training.finetune.method = method;
  return c;
}

// Where a method's tensors outside its adapter dicts live (training.finetune.loaded_before_wrapping), as
// PEFT's GPU benchmark measured between steps (tools/accuracy/peft_gpu.py): BOFT's permutations
// [1, in, in] fp32 stay on the CPU for a model wrapped on the GPU and are on it for one moved after;
// PSOFT's A keeps the SVD's whole basis [min(in, out), in] fp32 where the SVD ran (on the GPU), and
// only its r rows once moved. Llama-2-7B, q and v: every in is 4096 and every out 4096.
TEST(Peft, WhereBoftsAndPsoftsBuffersLive) {
  Config boft = llama2(FinetuneMethod::kBoft);
  boft.training.finetune.lora_targets = kLoraQ | kLoraV;
  boft.training.finetune.block_size = 4;
  boft.training.finetune.boft_n_butterfly_factor = 1;
  const std::int64_t on_gpu = estimate(boft).breakdown.parameters.value();
  boft.training.finetune.loaded_before_wrapping = false;
  EXPECT_EQ(estimate(boft).breakdown.parameters.value() - on_gpu, 32LL * 2 * 4096 * 4096 * 4);

  Config psoft = llama2(FinetuneMethod::kPsoft);
  psoft.training.finetune.lora_targets = kLoraQ | kLoraV;
  psoft.training.finetune.lora_rank = 32;
  const std::int64_t basis = estimate(psoft).breakdown.parameters.value();
  psoft.training.finetune.loaded_before_wrapping = false;
  EXPECT_EQ(basis - estimate(psoft).breakdown.parameters.value(), 32LL * 2 * (4096 - 32) * 4096 * 4);
}

// AdaLoRA's rank allocator keeps three tensors the size of every lora_A, lora_B and lora_E
// (adalora/layer.py RankAllocator.update_ipt), in the adapters' dtype (fp32 by default).
TEST(Peft, AdaLorasRankAllocatorKeepsThreeCopiesOfTheAdapters) {
  Config c = llama2(FinetuneMethod::kAdaLora);
  c.training.finetune.lora_targets = kLoraQ | kLoraV;
  c.training.finetune.lora_rank = 12;
  Config lora = c;
  lora.training.finetune.method = FinetuneMethod::kLora;
  const std::int64_t r = 12, per_module = r * 4096 + 4096 * r + r;
  // AdaLoRA's E [r] and ranknum [1] are fp32 parameters too; the allocator's three copies are buffers.
  EXPECT_EQ(estimate(c).breakdown.parameters.value() - estimate(lora).breakdown.parameters.value(),
            32LL * 2 * ((r + 1) * 4 + per_module * 3 * 4));
}

// Counts PEFT's GPU benchmark printed for Llama-3.2-3B (method_comparison/MetaMathQA results,
// num_trainable_params; tests/fixtures/peft/peft_gpu_runs.json): LoKr r 32 on q and v with
// decompose_factor 4 (each side factored (4, dim / 4)), and IA3 on every linear with up, gate and
// down as feedforward_modules (scaling their inputs).
TEST(Peft, LokrDecomposeFactorAndIa3FeedforwardModules) {
  Config lokr = default_config();
  lokr.model = *preset_model("llama-3.2-3b");
  lokr.training.finetune.method = FinetuneMethod::kLokr;
  lokr.training.finetune.lora_targets = kLoraQ | kLoraV;
  lokr.training.finetune.lora_rank = 32;
  lokr.training.finetune.decompose_factor = 4;
  EXPECT_EQ(estimate(lokr).trainable_parameter_count.value(), 2'294'656);

  Config ia3 = lokr;
  ia3.training.finetune.method = FinetuneMethod::kIa3;
  ia3.training.finetune.lora_targets = kLoraQ | kLoraK | kLoraV | kLoraO | kLoraGate | kLoraUp | kLoraDown;
  ia3.training.finetune.feedforward_modules = kLoraGate | kLoraUp | kLoraDown;
  EXPECT_EQ(estimate(ia3).trainable_parameter_count.value(), 630'784);
  ia3.training.finetune.feedforward_modules = kLoraDown;  // gate and up then scale their 8,192-wide outputs
  EXPECT_EQ(estimate(ia3).trainable_parameter_count.value(), 630'784 + 28LL * 2 * (8192 - 3072));
  // IA3Config refuses feedforward modules outside the targets; the default (down) is simply unused.
  ia3.training.finetune.lora_targets = kLoraK | kLoraV;
  EXPECT_TRUE(validate(ia3).empty());
  ia3.training.finetune.feedforward_modules = kLoraGate;
  const std::vector<Issue> issues = validate(ia3);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "training.finetune.feedforward_modules");
}

// Published print_trainable_parameters() outputs. PEFT's LoRA developer guide and countless
// tutorials print, for Llama-2-7B with r = 8 on q_proj and v_proj:
// "trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622"
// (e.g. huggingface/peft docs; 32 layers · 2 · 8 · (4096 + 4096) = 4,194,304).
TEST(Peft, PublishedLlama2LoraCount) {
  Config c = llama2(FinetuneMethod::kLora);
  c.training.finetune.lora_rank = 8;
  c.training.finetune.lora_targets = kLoraQ | kLoraV;
  const Estimate e = estimate(c);
  EXPECT_EQ(e.trainable_parameter_count.value(), 4'194'304);
  EXPECT_EQ(e.parameter_count.value(), 6'742'609'920);
}

using Counts = std::pair<std::int64_t, std::int64_t>;

Counts counts(const ModelSpec& m, FinetuneMethod method, std::int64_t rank,
                                              unsigned targets) {
  Config c = default_config();
  c.model = m;
  c.training.seq_len = 512;
  c.training.finetune.method = method;
  c.training.finetune.lora_rank = rank;
  c.training.finetune.lora_targets = targets;
  const Estimate e = estimate(c);
  EXPECT_TRUE(e.ok());
  return {e.trainable_parameter_count.value(), e.parameter_count.value()};
}

// PEFT's own docs (huggingface/peft at 5d602fd):
// - docs/source/quicktour.md: meta-llama/Llama-3.2-1B, LoraConfig(target_modules=["q_proj"], r=8):
//   "trainable params: 524,288 || all params: 1,236,338,688 || trainable%: 0.0424"
// - README.md: Qwen/Qwen2.5-3B-Instruct, LoraConfig(r=16), PEFT's default targets q_proj, v_proj:
//   "trainable params: 3,686,400 || all params: 3,089,625,088 || trainable%: 0.1193"
// - docs/source/package_reference/hira.md: facebook/opt-125m, HiraConfig(r=32, target_modules=
//   ["k_proj", "q_proj", "v_proj", "fc1", "fc2"]): "trainable params: 4,718,592 || all params: 129,957,888"
TEST(Peft, PeftDocsPublishedCounts) {
  EXPECT_EQ(counts(*preset_model("llama-3.2-1b"), FinetuneMethod::kLora, 8, kLoraQ),
            (Counts{524'288, 1'236'338'688}));
  ModelSpec qwen3b = *preset_model("qwen2.5-0.5b");  // Qwen2.5-3B's config.json: same family, tied
  qwen3b.hidden_size = 2048;
  qwen3b.num_hidden_layers = 36;
  qwen3b.num_attention_heads = 16;
  qwen3b.num_key_value_heads = 2;
  qwen3b.intermediate_size = 11008;
  EXPECT_EQ(counts(qwen3b, FinetuneMethod::kLora, 16, kLoraQ | kLoraV),
            (Counts{3'686'400, 3'089'625'088}));
  EXPECT_EQ(counts(*preset_model("opt-125m"), FinetuneMethod::kHira, 32, kLoraQ | kLoraK | kLoraV | kLoraUp | kLoraDown),
            (Counts{4'718'592, 129'957'888}));
}

// Worked examples on a tiny model: d 8, L 2, h 4, kv 2 (head 2), d_ff 16, V 100.
ModelSpec tiny() {
  ModelSpec m;
  m.vocab_size = 100;
  m.hidden_size = 8;
  m.num_hidden_layers = 2;
  m.num_attention_heads = 4;
  m.num_key_value_heads = 2;
  m.intermediate_size = 16;
  m.max_position_embeddings = 64;
  return m;
}

std::int64_t trainable(const ModelSpec& m, const Finetune& f) {
  Config c = default_config();
  c.model = m;
  c.training.seq_len = 16;
  c.training.finetune = f;
  const Estimate e = estimate(c);
  EXPECT_TRUE(e.ok()) << (e.errors.empty() ? "" : e.errors[0].field + " " + e.errors[0].message);
  return e.trainable_parameter_count.value();
}

TEST(Peft, TinyWorkedExamples) {
  Finetune f;
  f.lora_rank = 2;
  f.lora_targets = kLoraQ | kLoraV;  // q: 8 → 8, v: 8 → 4, two layers
  f.method = FinetuneMethod::kLora;
  EXPECT_EQ(trainable(tiny(), f), 2 * (2 * (8 + 8) + 2 * (8 + 4)));  // 2 · (32 + 24) = 112
  f.method = FinetuneMethod::kDora;  // + magnitudes of 8 and 4
  EXPECT_EQ(trainable(tiny(), f), 112 + 2 * (8 + 4));
  f.method = FinetuneMethod::kLoraFa;  // B only: 8·2 + 4·2
  EXPECT_EQ(trainable(tiny(), f), 2 * (16 + 8));
  f.method = FinetuneMethod::kAdaLora;  // + E [r, 1] and ranknum [1] per adapted layer
  EXPECT_EQ(trainable(tiny(), f), 112 + 2 * 2 * 2 + 2 * 2);
  f.method = FinetuneMethod::kVera;  // λ_b [out] + λ_d [r]
  EXPECT_EQ(trainable(tiny(), f), 2 * ((8 + 2) + (4 + 2)));
  f.method = FinetuneMethod::kIa3;
  f.lora_targets = kLoraK | kLoraV | kLoraDown;  // out 4, out 4, down's input 16
  EXPECT_EQ(trainable(tiny(), f), 2 * (4 + 4 + 16));
  f.method = FinetuneMethod::kOft;  // in 8 < block 32: one block of 8, 8·7/2 = 28 entries
  f.lora_targets = kLoraQ | kLoraV;
  EXPECT_EQ(trainable(tiny(), f), 2 * 2 * 28);
  f.method = FinetuneMethod::kPromptTuning;  // 20 · 8
  EXPECT_EQ(trainable(tiny(), f), 160);
  f.method = FinetuneMethod::kPrefixTuning;  // 20 virtual tokens · 2 layers · k and v · kv width 4
  EXPECT_EQ(trainable(tiny(), f), 20 * 2 * 2 * 4);
  f.method = FinetuneMethod::kLlamaAdapter;  // start layer 2 of 2 is refused; start 1: one layer
  f.adapter_start_layer = 1;
  EXPECT_EQ(trainable(tiny(), f), 10 * 8 + 1);
  f.method = FinetuneMethod::kLnTuning;  // two norms per block and the final norm, d each
  EXPECT_EQ(trainable(tiny(), f), (2 * 2 + 1) * 8);
  f.method = FinetuneMethod::kTrainableTokens;
  EXPECT_EQ(trainable(tiny(), f), 10 * 8);
}

// A fused q/k/v target is one adapter d → q + k + v wide: GPT-2's c_attn under LoRA r = 8 gives
// 12 · 8 · (768 + 2304) = 294,912 (PEFT's default for gpt2), DoRA adds 12 · 2304.
TEST(Peft, FusedQkvTarget) {
  Config c = default_config();
  c.model = *preset_model("gpt2");
  c.training.seq_len = 512;
  c.training.finetune.method = FinetuneMethod::kDora;
  c.training.finetune.lora_rank = 8;
  c.training.finetune.lora_targets = kLoraQkv;
  EXPECT_EQ(estimate(c).trainable_parameter_count.value(), 294'912 + 12 * 2304);
  c.training.finetune.lora_targets = kLoraQkv | kLoraQ;
  EXPECT_FALSE(estimate(c).ok());
}

// PEFT's prepare_model_for_kbit_training keeps the base's unquantised tensors in fp32: for a 4-bit
// Llama-2-7B the embedding, the head and the norms (262,410,240 parameters) take 2 more bytes each.
TEST(Peft, PrepareKbitUpcastsTheUnquantisedBase) {
  Config c = llama2(FinetuneMethod::kLora);
  c.training.precision = Precision::kBf16;
  c.training.finetune.base_bits = 4;
  const std::int64_t plain = estimate(c).breakdown.parameters.value();
  c.training.finetune.prepare_kbit = true;
  const std::int64_t norms = (32 * 2 + 1) * 4096;
  EXPECT_EQ(estimate(c).breakdown.parameters.value() - plain, (2 * 32000 * 4096 + norms) * 2);
}

// ... and with the fp32 embedding the residual stream is fp32 too (bitsandbytes' Linear4bit returns
// its input's dtype): under full checkpointing each block keeps its fp32 input, 2 more bytes per
// element of the 32 layers' inputs than the 16-bit stream; the 16-bit base keeps its stream.
TEST(Peft, PrepareKbitKeepsAnFp32Stream) {
  Config c = llama2(FinetuneMethod::kLora);
  c.training.precision = Precision::kBf16Autocast;
  c.training.checkpointing = Checkpointing::kFull;
  c.training.finetune.base_bits = 4;
  const Estimate plain = estimate(c);
  c.training.finetune.prepare_kbit = true;
  const Estimate prepared = estimate(c);
  ASSERT_TRUE(plain.ok() && prepared.ok());
  const std::int64_t tokens = c.training.micro_batch_size * c.training.seq_len;
  EXPECT_GE(prepared.breakdown.activations.value() - plain.breakdown.activations.value(), 32 * tokens * 4096 * 2);
  c.training.finetune.base_bits = 16;
  const Estimate sixteen = estimate(c);
  c.training.finetune.prepare_kbit = false;
  EXPECT_EQ(sixteen.breakdown.activations.value(), estimate(c).breakdown.activations.value());
}

// A GPTQ base holds auto-gptq's QuantLinear buffers (qlinear_cuda_old.py): for Llama-2-7B at 4 bits
// and group_size 128, q/k/v/o take 8,732,672 B each (qweight 512 x 4096 int32, qzeros 32 x 512 int32,
// scales 32 x 4096 fp16, g_idx 4096 int32), gate/up 23,441,408 B and down 23,469,056 B (86 groups of
// its 11,008 inputs), against 404,750,336 B of bf16 weights per layer.
TEST(Peft, GptqBaseHoldsAutoGptqsBuffers) {
  Config c = llama2(FinetuneMethod::kLora);
  c.training.precision = Precision::kBf16;
  const std::int64_t sixteen = estimate(c).breakdown.parameters.value();
  c.training.finetune.base_bits = 4;
  c.training.finetune.quant_method = QuantMethod::kGptq;
  const Estimate gptq = estimate(c);
  ASSERT_TRUE(gptq.ok());
  const std::int64_t per_layer = 4 * 8'732'672 + 2 * 23'441'408 + 23'469'056;
  EXPECT_EQ(sixteen - gptq.breakdown.parameters.value(), 32 * (404'750'336 - per_layer));
  // 8 bits: four weights per int32.
  c.training.finetune.base_bits = 8;
  c.training.finetune.gptq_group_size = 0;  // group_size -1: one scale and zero per output
  const std::int64_t q = 4096 * 4096 + 1024 * 4 + 4096 * 2 + 4096 * 4;
  const std::int64_t gu = 11008 * 4096 + 2752 * 4 + 11008 * 2 + 4096 * 4;
  const std::int64_t down = 4096 * 11008 + 1024 * 4 + 4096 * 2 + 11008 * 4;
  EXPECT_EQ(sixteen - estimate(c).breakdown.parameters.value(), 32 * (404'750'336 - (4 * q + 2 * gu + down)));
}

// ... and its linears keep their dequantised fp16 weight for the input's gradient (torch.matmul(
// x.half(), weight) in the dequantising path): without checkpointing, every block but the first
// (whose input needs no gradient under LoRA) keeps 404,750,336 B more than a 16-bit base.
TEST(Peft, GptqBaseKeepsDequantisedWeights) {
  Config c = llama2(FinetuneMethod::kLora);
  c.training.precision = Precision::kBf16;
  c.training.checkpointing = Checkpointing::kNone;
  const Estimate sixteen = estimate(c);
  c.training.finetune.base_bits = 4;
  c.training.finetune.quant_method = QuantMethod::kGptq;
  const Estimate gptq = estimate(c);
  ASSERT_TRUE(sixteen.ok() && gptq.ok());
  EXPECT_EQ(gptq.breakdown.activations.value() - sixteen.breakdown.activations.value(), 31 * 404'750'336LL);
  // Under full checkpointing only the block being recomputed holds them.
  c.training.checkpointing = Checkpointing::kFull;
  const Estimate recomputed = estimate(c);
  c.training.finetune.quant_method = QuantMethod::kBitsandbytes;
  const Estimate bnb = estimate(c);
  EXPECT_EQ(recomputed.breakdown.activations, bnb.breakdown.activations);
  EXPECT_GT(recomputed.peak_allocated_bytes, bnb.peak_allocated_bytes);
  // Fused kernels (auto-gptq's triton QuantLinearFunction) keep only the packed buffers, which the
  // base already holds: less than bitsandbytes, whose MatMul4Bit keeps its input.
  c.training.checkpointing = Checkpointing::kNone;
  c.training.finetune.quant_method = QuantMethod::kGptq;
  c.training.finetune.gptq_kernel = GptqKernel::kFused;
  const Estimate fused = estimate(c);
  EXPECT_EQ(fused.breakdown.activations, sixteen.breakdown.activations);
}

// ChatGLM's own quantization (quantization.py QuantizedLinear): int8 codes, or two int4 values per
// byte, and an fp16 scale per output row; the base's other tensors stay 16-bit. Llama 2 7B's block
// linears: q, k, v, o 4096 x 4096, gate and up 11008 x 4096, down 4096 x 11008; 32 blocks. Its
// W8A16Linear saves its input for backward (save_for_backward), which bitsandbytes' 4-bit linear
// of today does not.
TEST(Peft, ChatglmQuantizationKeepsCodesAndRowScales) {
  const auto run = [](const char* method, std::int64_t bits) {
    Config c = parse_config_text(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16","seq_len":512,)"
                                 R"("finetune":{"method":"lora","lora_targets":["q","v"]}}})").config;
    c.training.finetune.base_bits = bits;
    c.training.finetune.quant_method = std::string(method) == "chatglm" ? QuantMethod::kChatglm : QuantMethod::kBitsandbytes;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e;
  };
  const Estimate half = run("bitsandbytes", 16), int8 = run("chatglm", 8), int4 = run("chatglm", 4);
  const std::int64_t elements = 4LL * 4096 * 4096 + 3LL * 4096 * 11008;
  const std::int64_t rows = 4LL * 4096 + 2 * 11008 + 4096;
  EXPECT_EQ(half.breakdown.parameters.value() - int8.breakdown.parameters.value(), 32 * (elements * 2 - (elements + rows * 2)));
  EXPECT_EQ(half.breakdown.parameters.value() - int4.breakdown.parameters.value(),
            32 * (elements * 2 - (elements / 2 + rows * 2)));
  EXPECT_GT(int4.breakdown.activations.value(), run("bitsandbytes", 4).breakdown.activations.value());
}

// A bitsandbytes linear returns its input's dtype, where autocast gives a 16-bit output: after a
// LayerNorm (fp32 under autocast) a 4-bit base's MLP runs in fp32 and keeps more than a 16-bit base's.
// The estimate says so, since the smaller base costing more activation memory surprises.
TEST(Peft, FourBitBaseAfterAnFp32LayerNormSaysWhyItsActivationsAreLarger) {
  const auto run = [](int bits) {
    Json config = Json::object();
    config.set("model", Json::object()).set("preset", Json::string("phi-2"));
    Json& training = config.set("training", Json::object());
    training.set("precision", Json::string("bf16_mixed"));
    Json& finetune = training.set("finetune", Json::object());
    finetune.set("method", Json::string("lora"));
    finetune.set("base_bits", Json::integer(bits));
    const ConfigParse parsed = parse_config(config);
    EXPECT_TRUE(parsed.ok());
    return estimate(parsed.config);
  };
  const auto says = [](const Estimate& e) {
    for (const std::string& n : e.notes) if (n.find("return their input's dtype") != std::string::npos) return true;
    return false;
  };
  const Estimate sixteen = run(16), four = run(4);
  ASSERT_TRUE(sixteen.ok() && four.ok());
  EXPECT_GT(four.breakdown.activations, sixteen.breakdown.activations);
  EXPECT_TRUE(says(four));
  EXPECT_FALSE(says(sixteen));
}

// bitsandbytes before 0.43.2 keeps each 4-bit linear's input as a ctx attribute (`ctx.tensors =
// (A, B)`; PR #1270 dropped it): the four inputs of every block (q/k/v, o, gate/up, down: 4096,
// 4096, 4096 and 11008 wide), except the first block's q/k/v (a frozen embedding's output needs
// no gradient); PEFT's fp32 adapters save casts of their own, so nothing is shared. Backward does
// not free ctx attributes: they stay until the graph goes, after backward in a loop that drops
// its outputs, or beside the next forward in one that holds them. 0.43.2 and later keep nothing
// more than a 16-bit base.
TEST(Peft, OldBitsandbytesKeepsInputsUntilTheGraphGoes) {
  Config c = llama2(FinetuneMethod::kLora);
  c.training.precision = Precision::kBf16;
  c.training.checkpointing = Checkpointing::kNone;
  c.training.micro_batch_size = 2;
  const Estimate sixteen = estimate(c);
  c.training.finetune.base_bits = 4;
  const Estimate current = estimate(c);
  c.training.finetune.bnb_keeps_input = true;
  const Estimate old = estimate(c);
  ASSERT_TRUE(sixteen.ok() && current.ok() && old.ok());
  const std::int64_t tokens = 2 * 512;
  EXPECT_EQ(current.breakdown.activations, sixteen.breakdown.activations);
  const std::int64_t retained = (32 * (4096 * 3 + 11008) - 4096) * tokens * 2;
  // While the graph lives, o_proj's kept input is the attention output FlashAttention saved: one
  // storage, so the saved activations grow by the rest.
  const std::int64_t saved_extra = retained - 32 * 4096 * tokens * 2;
  EXPECT_EQ(old.breakdown.activations.value() - current.breakdown.activations.value(), saved_extra);
  const auto phase = [](const Estimate& e, const char* name) {
    for (const Phase& p : e.phases) if (p.name == name) return p.bytes.value();
    return std::int64_t{-1};
  };
  // transformers' Trainer drops the loss after backward: the inputs are there at backward's end only.
  EXPECT_EQ(phase(old, "optimizer_step") - phase(current, "optimizer_step"), 0);
  // LitGPT's loop holds the logits, and the graph with them, until the next forward returns.
  c.training.implementation.loop_keeps_logits = Switch::kYes;
  const Estimate held = estimate(c);
  c.training.finetune.bnb_keeps_input = false;
  const Estimate held_current = estimate(c);
  EXPECT_EQ(phase(held, "optimizer_step") - phase(held_current, "optimizer_step"), retained);
  EXPECT_EQ(phase(held, "forward") - phase(held_current, "forward"), retained + saved_extra);
  EXPECT_GT(held.peak_allocated_bytes, old.peak_allocated_bytes);
  // With varying lengths the micro-batch before the longest one is of average length (the lengths
  // the allocator replay draws: samples from an eighth of seq_len up to it, a micro-batch of two
  // padded to its longer one, 1/8 + 7/8 x 2/3 = 0.71 of seq_len on average): its inputs are fewer.
  c.training.sequence_lengths = SequenceLengths::kVarying;
  const Estimate varying_current = estimate(c);
  c.training.finetune.bnb_keeps_input = true;
  const Estimate varying = estimate(c);
  const std::int64_t before = phase(varying, "forward") - phase(varying_current, "forward") - saved_extra;
  EXPECT_GT(before, retained * 2 / 3);
  EXPECT_LT(before, retained * 3 / 4);
}

// Under full checkpointing the kept inputs depend on how the blocks are checkpointed. Reentrant
// checkpointing runs a block's first forward under no_grad (MatMul4Bit sets no ctx.tensors) and its
// recomputation is a graph of its own, freed by that block's backward: nothing more is kept.
// Non-reentrant checkpointing runs the first forward with grad and drops only what
// save_for_backward saved, so the ctx attributes of every block stay until the graph goes
// (ms-swift 1.x's default; PEFT's examples ask for use_reentrant True with QLoRA for this reason).
TEST(Peft, OldBitsandbytesUnderNonReentrantCheckpointingKeepsEveryBlocksInputs) {
  Config c = llama2(FinetuneMethod::kLora);
  c.training.precision = Precision::kBf16;
  c.training.checkpointing = Checkpointing::kFull;
  c.training.micro_batch_size = 2;
  c.training.finetune.base_bits = 4;
  const auto with = [&](CheckpointImpl impl, bool keeps) {
    Config v = c;
    v.training.implementation.checkpoint_impl = impl;
    v.training.finetune.bnb_keeps_input = keeps;
    const Estimate e = estimate(v);
    EXPECT_TRUE(e.ok());
    return e;
  };
  const Estimate reentrant_current = with(CheckpointImpl::kReentrant, false);
  const Estimate reentrant_old = with(CheckpointImpl::kReentrant, true);
  const Estimate non_reentrant_current = with(CheckpointImpl::kNonReentrant, false);
  const Estimate non_reentrant_old = with(CheckpointImpl::kNonReentrant, true);
  EXPECT_EQ(reentrant_old.breakdown.activations, reentrant_current.breakdown.activations);
  // Under reentrant checkpointing only the block being recomputed keeps its inputs as ctx
  // attributes, until its backward is done: at most one block's more at the backward high point.
  const std::int64_t tokens = 2 * 512;
  const std::int64_t one_block = (4096 * 3 + 11008) * tokens * 2;
  const std::int64_t more = reentrant_old.peak_allocated_bytes.value() - reentrant_current.peak_allocated_bytes.value();
  EXPECT_GE(more, 0);
  EXPECT_LE(more, one_block);
  EXPECT_EQ(non_reentrant_current.breakdown.activations, reentrant_current.breakdown.activations);
  const std::int64_t retained = (32 * (4096 * 3 + 11008) - 4096) * tokens * 2;
  EXPECT_EQ(non_reentrant_old.breakdown.activations.value() - non_reentrant_current.breakdown.activations.value(),
            retained);
  EXPECT_GT(non_reentrant_old.peak_allocated_bytes.value() - non_reentrant_current.peak_allocated_bytes.value(),
            retained / 2);
  // Left to the hf profile (transformers 5: non-reentrant), a run on that old bitsandbytes is a
  // transformers 4 run: reentrant, as echoed in the result.
  const Estimate automatic = with(CheckpointImpl::kAuto, true);
  EXPECT_EQ(automatic.implementation.checkpoint_impl, CheckpointImpl::kReentrant);
  EXPECT_EQ(automatic.peak_allocated_bytes, reentrant_old.peak_allocated_bytes);
  EXPECT_EQ(with(CheckpointImpl::kAuto, false).implementation.checkpoint_impl, CheckpointImpl::kNonReentrant);
}

// modules_to_save: PEFT trains a deep copy of the embedding and the head beside the frozen
// originals (print_trainable_parameters counts both copies as trainable and in "all params"). The
// copies keep the base's bf16 while PEFT's LoRA adapters are fp32: bf16 weights, gradients and
// AdamW states for the 2 · 32000 · 4096 copied parameters.
TEST(Peft, ModulesToSaveTrainsCopiesInTheBaseDtype) {
  Config c = llama2(FinetuneMethod::kLora);
  c.training.precision = Precision::kBf16Autocast;
  const Estimate plain = estimate(c);
  c.training.finetune.modules_to_save = kSaveEmbedding | kSaveHead;
  const Estimate saved = estimate(c);
  ASSERT_TRUE(plain.ok() && saved.ok());
  const std::int64_t copies = 2LL * 32000 * 4096;
  EXPECT_EQ(saved.trainable_parameter_count.value() - plain.trainable_parameter_count.value(), copies);
  EXPECT_EQ(saved.breakdown.parameters.value() - plain.breakdown.parameters.value(), copies * 2);
  EXPECT_EQ(saved.breakdown.gradients.value() - plain.breakdown.gradients.value(), copies * 2);
  EXPECT_EQ(saved.breakdown.optimizer_states.value() - plain.breakdown.optimizer_states.value(), copies * 2 * 2);
  // The head's input is saved for its weight's gradient.
  EXPECT_GT(saved.breakdown.logits_and_loss.value(), plain.breakdown.logits_and_loss.value());
  // PEFT 0.21.2 on a tiny Llama (LoraConfig(r=8, target_modules=["q_proj", "v_proj"],
  // modules_to_save=["embed_tokens", "lm_head"])) prints "trainable params: 131,584 || all params:
  // 333,632", with the copies in bf16 and lora_A / lora_B in fp32.
  const ConfigParse tiny = parse_config_text(
      R"({"model":{"vocab_size":1000,"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,)"
      R"("num_key_value_heads":2,"intermediate_size":128,"tie_word_embeddings":false,"mlp":"gated","norm":"rmsnorm",)"
      R"("position_embedding":"rotary"},"training":{"precision":"bf16_autocast","finetune":{"method":"lora",)"
      R"("lora_rank":8,"lora_targets":["q","v"],"modules_to_save":["embed","head"]}}})");
  ASSERT_TRUE(tiny.ok());
  const Estimate e = estimate(tiny.config);
  EXPECT_EQ(e.trainable_parameter_count.value(), 131'584);
  EXPECT_EQ(e.parameter_count.value(), 333'632);
}

TEST(Peft, ValidationNamesTheField) {
  Config c = llama2(FinetuneMethod::kC3a);
  c.training.finetune.lora_targets = kLoraQ;
  c.training.finetune.block_size = 3000;  // does not divide 4096
  const Estimate e = estimate(c);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.errors[0].field, "training.finetune.block_size");
  c = llama2(FinetuneMethod::kLlamaAdapter);
  c.training.finetune.adapter_start_layer = 32;
  EXPECT_EQ(estimate(c).errors.at(0).field, "training.finetune.adapter_start_layer");
  c = llama2(FinetuneMethod::kLora);
  c.training.finetune.base_bits = 4;
  c.training.finetune.quant_block_size = 100;
  EXPECT_EQ(estimate(c).errors.at(0).field, "training.finetune.quant_block_size");
}

// Cartridge (PEFT's cartridge/model.py) keeps its first virtual token frozen and refuses gradient
// checkpointing: both are named; with neither problem it trains (n − 1) tokens' keys and values.
TEST(Peft, CartridgeKeepsAFrozenTokenAndRefusesCheckpointing) {
  Config c = llama2(FinetuneMethod::kCartridge);
  c.training.finetune.num_virtual_tokens = 1;
  EXPECT_EQ(estimate(c).errors.at(0).field, "training.finetune.num_virtual_tokens");
  c.training.finetune.num_virtual_tokens = 20;
  c.training.checkpointing = Checkpointing::kFull;
  EXPECT_EQ(estimate(c).errors.at(0).field, "training.checkpointing");
  c.training.checkpointing = Checkpointing::kNone;
  const Estimate e = estimate(c);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e.trainable_parameter_count.value(), 19LL * 32 * 2 * 4096);  // 19 tokens × L × keys and values
  EXPECT_EQ(e.parameter_count.value(), 6'738'415'616LL + 20LL * 32 * 2 * 4096);
}

// GPT-2's projections are transformers' Conv1D, which most PEFT tuners refuse (their
// _create_new_module takes nn.Linear only): named on the method; LoRA and the methods that take
// Conv1D estimate, and nanoGPT's GPT-2 (nn.Linear) takes any.
TEST(Peft, Gpt2sConv1dTakesOnlyTheMethodsThatAcceptIt) {
  const auto run = [](const char* method, const char* framework) {
    return estimate_json(std::string(R"({"model":{"preset":"gpt2"},"training":{"seq_len":512,"framework":")") +
                         framework + R"(","finetune":{"method":")" + method + R"(","lora_targets":["qkv"]}}})");
  };
  for (const char* m : {"loha", "glora", "osf", "lily", "beft"}) {
    const Json r = run(m, "hf");
    ASSERT_FALSE(r.find("errors")->items().empty()) << m;
    EXPECT_EQ(r.find("errors")->items().at(0).find("field")->as_string(), "training.finetune.method") << m;
  }
  for (const char* m : {"lora", "deft", "frod", "pvera", "unilora"}) {
    EXPECT_TRUE(run(m, "hf").find("errors")->items().empty()) << m;
  }
  EXPECT_TRUE(run("glora", "nanogpt").find("errors")->items().empty());
}

// What PEFT refuses of the newer methods, each named on its field: a quantised base under the
// methods that read the weight, tensor parallelism under those that decompose it at init, PSOFT's
// rank beyond a layer's smaller side, Poly on a mixture's experts, CPT and X-LoRA off a decoder,
// gradient checkpointing and too many cached positions under prefix tuning.
TEST(Peft, NewerMethodsRefuseWhatPeftRefuses) {
  const auto first_field = [](const std::string& training, const std::string& rest = "") {
    const Json r = estimate_json(R"({"model":{"preset":"llama-2-7b"},"training":{)" + training + "}" + rest + "}");
    const auto& errors = r.find("errors")->items();
    return errors.empty() ? std::string() : errors.at(0).find("field")->as_string();
  };
  EXPECT_EQ(first_field(R"("finetune":{"method":"glora","base_bits":4})"), "training.finetune.base_bits");
  EXPECT_EQ(first_field(R"("finetune":{"method":"osf"})", R"(,"parallel":{"num_gpus":2,"tensor":2})"), "parallel.tensor");
  EXPECT_EQ(first_field(R"("finetune":{"method":"psoft","lora_rank":5000})"), "training.finetune.lora_rank");
  EXPECT_EQ(first_field(R"("finetune":{"method":"psoft","lora_rank":64})"), "");
  EXPECT_EQ(first_field(R"("checkpointing":"full","finetune":{"method":"prefix_tuning"})"), "training.checkpointing");
  EXPECT_EQ(first_field(R"("finetune":{"method":"pvera","base_bits":4})"), "");
  const Json moe = estimate_json(R"({"model":{"preset":"mixtral-8x7b"},"training":{"moe_dispatch":"loop",)"
                                 R"("finetune":{"method":"poly","lora_targets":["q","gate"]}}})");
  EXPECT_EQ(moe.find("errors")->items().at(0).find("field")->as_string(), "training.finetune.lora_targets");
  for (const char* preset : {"bert-base-uncased", "t5-base"}) {
    const Json r = estimate_json(std::string(R"({"model":{"preset":")") + preset +
                                 R"("},"training":{"finetune":{"method":"cpt"}}})");
    EXPECT_EQ(r.find("errors")->items().at(0).find("field")->as_string(), "training.finetune.method") << preset;
  }
  // transformers 5's encoders take no past keys and values (PEFT: "Model does not support past key
  // values which are required for prefix tuning"); an encoder-decoder does.
  for (const char* preset : {"bert-base-uncased", "roberta-base", "deberta-v3-base"}) {
    const Json r = estimate_json(std::string(R"({"model":{"preset":")") + preset +
                                 R"("},"training":{"finetune":{"method":"prefix_tuning"}}})");
    ASSERT_FALSE(r.find("errors")->items().empty()) << preset;
    EXPECT_EQ(r.find("errors")->items().at(0).find("field")->as_string(), "training.finetune.method") << preset;
  }
  const Json gpt2 = estimate_json(R"({"model":{"preset":"gpt2"},"training":{"seq_len":1024,)"
                                  R"("finetune":{"method":"cartridge","num_virtual_tokens":30}}})");
  EXPECT_EQ(gpt2.find("errors")->items().at(0).find("field")->as_string(), "training.finetune.num_virtual_tokens");
  // An encoder-decoder shifts only its decoder's positions: BART's 1,024-token source takes a prefix.
  const Json bart = estimate_json(R"({"model":{"preset":"bart-base"},"training":{"seq_len":1024,"target_len":128,)"
                                  R"("finetune":{"method":"prefix_tuning","num_virtual_tokens":20}}})");
  EXPECT_TRUE(bart.find("errors")->items().empty());
  EXPECT_EQ(first_field(R"("checkpointing":"full","finetune":{"method":"xlora"})"), "training.checkpointing");
  for (const char* preset : {"falcon-7b", "pythia-1b"}) {
    for (const char* method : {"xlora", "shadow"}) {
      const Json r = estimate_json(std::string(R"({"model":{"preset":")") + preset +
                                   R"("},"training":{"finetune":{"method":")" + method + R"("}}})");
      ASSERT_FALSE(r.find("errors")->items().empty()) << preset << " " << method;
      EXPECT_EQ(r.find("errors")->items().at(0).find("field")->as_string(), "training.finetune.method");
    }
  }
}

// ShadowPEFT's layer wraps the decoder block: under full checkpointing its injection and update
// tensors stay in every block (PEFT's tiny Llama kept 469 and 268 KB in its two blocks, against 1.17
// and 0.96 MB without checkpointing), so checkpointing saves less than for LoRA.
TEST(Peft, ShadowsBlockTensorsOutliveCheckpointing) {
  const auto activations = [](const char* method, const char* checkpointing) {
    const Json r = estimate_json(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,)"
                                             R"("checkpointing":")") + checkpointing +
                                 R"(","finetune":{"method":")" + method + R"("}}})");
    return *r.find("breakdown")->find("activations")->as_exact_integer();
  };
  const std::int64_t kept = 32LL * 4096 * (4096 + 8) * 4 + 31LL * 4096 * (4096 * 5 + 8 * 4) * 4;
  EXPECT_GE(activations("shadow", "full") - activations("lora", "full"), kept);
}

// The buffers PEFT creates beside a method's adapters take the adapters' dtype: fp32 under its
// autocast_adapter_dtype, the base's with training.lora_adapter_dtype weights. OSF on Llama-2-7B's q
// and v keeps its initial factors, 2,048 × (4,096 + 4,096 + 1) per layer and target, as buffers.
TEST(Peft, MethodBuffersTakeTheAdaptersDtype) {
  const auto parameters = [](const char* adapter_dtype) {
    const Json r = estimate_json(std::string(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16_mixed",)"
                                             R"("lora_adapter_dtype":")") + adapter_dtype +
                                 R"(","finetune":{"method":"osf","lora_targets":["q","v"]}}})");
    return *r.find("breakdown")->find("parameters")->as_exact_integer();
  };
  EXPECT_EQ(parameters("fp32") - parameters("weights"), 2LL * 2048 * (4096 + 4096 + 1) * 32 * 2);
}

// ShadowPEFT on the tiny fp32 Llama (peft_saved.py, its shadow case without dropout): the whole step's
// saved tensors (both blocks, the side network's block and final norm, the auxiliary and main losses)
// within 10 % of what PEFT's real layers keep. Not exact: memfit averages the blocks' update terms
// over the layers, and its side network is one fine-tuned block of its own model.
TEST(Peft, ShadowsSideNetworkIsCounted) {
  const Json doc = read_fixture("peft_saved.json");
  const Json* shadow = nullptr;
  for (const Json& c : doc.find("cases")->items()) {
    if (c.find("finetune")->find("method")->as_string() == "shadow") shadow = &c;
  }
  ASSERT_NE(shadow, nullptr);
  std::int64_t measured = 0;
  for (const char* part : {"layer0", "layer1", "outside"}) {
    measured += *shadow->find("saved_bytes")->find(part)->as_exact_integer();
  }
  Json config = Json::object();
  config.set("model", *doc.find("memfit_model"));
  Json& training = config.set("training", Json::object());
  training.set("precision", Json::string("fp32"));
  training.set("attention", Json::string("eager"));
  training.set("micro_batch_size", *doc.find("micro_batch_size"));
  training.set("seq_len", *doc.find("seq_len"));
  training.set("finetune", Json::object()).set("method", Json::string("shadow"));
  const ConfigParse parsed = parse_config(config);
  ASSERT_TRUE(parsed.ok());
  const Estimate e = estimate(parsed.config);
  const std::int64_t memfit = e.breakdown.activations.value() + e.breakdown.logits_and_loss.value();
  EXPECT_NEAR(static_cast<double>(memfit), static_cast<double>(measured), measured * 0.10);
  // The side network's block is in it: the same run without it would keep far less.
  std::int64_t side = 0;
  for (const NamedBytes& t : e.activation_terms_per_layer) {
    if (t.name.rfind("peft.shadow", 0) == 0) side += t.bytes.value();
  }
  EXPECT_GT(side, 0);
}

// Poly mixes its skills into one LoRA pair per sequence (poly/layer.py: einsum over the task's
// routing weights, [B, in, r] and [B, r, out], saved for backward): at the same tokens, more
// sequences keep more. GLoRA, PEANuT and Super-Tuning keep a dense copy of every adapted weight,
// whatever the tokens.
TEST(Peft, PolyKeepsAPairPerSequenceAndDenseRebuildsKeepAWeight) {
  const auto method_bytes = [](FinetuneMethod m, std::int64_t batch, std::int64_t seq) {
    Config c = llama2(m);
    c.training.finetune.lora_targets = kLoraQ | kLoraV;
    c.training.finetune.lora_rank = 8;
    c.training.micro_batch_size = batch;
    c.training.seq_len = seq;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    std::int64_t bytes = 0;
    for (const NamedBytes& t : e.activation_terms_per_layer) {
      if (t.name == "peft.adapters") bytes += t.bytes.value();
    }
    return bytes;
  };
  // Two sequences more: 2 × 4 B × r (in + out) for q and for v.
  EXPECT_EQ(method_bytes(FinetuneMethod::kPoly, 4, 256) - method_bytes(FinetuneMethod::kPoly, 2, 512),
            2LL * 4 * 8 * 2 * (4096 + 4096) + 2LL * 2 * 4 * (4 * 6 + 1));
  for (FinetuneMethod m : {FinetuneMethod::kGlora, FinetuneMethod::kSupertuning}) {
    // bf16 weights: 2 bytes for each of q's and v's 4096 × 4096 entries, at any length.
    EXPECT_GE(method_bytes(m, 1, 64), 2LL * 2 * 4096 * 4096);
    EXPECT_EQ(method_bytes(m, 1, 64), method_bytes(m, 1, 512));
  }
}

// An fp32 base under autocast: every frozen linear saves its own 16-bit cast for backward
// (autocast caches casts of weights that require grad only), the head once per call (LitGPT runs
// it in 128-position chunks); under full checkpointing the head's casts are kept and the block
// being recomputed holds its own while its backward runs. A 16-bit base casts nothing.
TEST(Peft, AnFp32BaseUnderAutocastSavesEachFrozenLinearsCast) {
  const auto copies = [](const char* framework, const char* checkpointing, const char* base) {
    const Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16_mixed",)"
                                                   R"("seq_len":1024,"finetune":{"method":"lora"},"framework":")") +
                                       framework + R"(","checkpointing":")" + checkpointing +
                                       R"(","lora_base_dtype":")" + base + R"("}})")
                         .config;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e.breakdown.weight_copies.value();
  };
  const std::int64_t head = 32000LL * 4096, blocks = 2147483648LL + 4328521728LL;  // llama-2-7b's linears
  EXPECT_EQ(copies("hf", "none", "fp32"), 2 * (blocks + head));
  EXPECT_EQ(copies("hf", "full", "fp32"), 2 * (head + blocks / 32));
  EXPECT_EQ(copies("litgpt", "full", "fp32"), 2 * head * (1024 / 128) + 2 * blocks / 32);
  EXPECT_EQ(copies("hf", "none", "half"), 0);
}

// prepare_model_for_kbit_training leaves fp32 what bitsandbytes did not quantise: the head (and a
// mixture's routers) are then cast at every use under autocast and their 16-bit copies saved; a
// run without it keeps them 16-bit and casts nothing (measured: tools/frameworks/families.py,
// llama4_text QLoRA, the head's and the routers' casts).
TEST(Peft, QloraAfterPrepareKbitSavesTheHeadsCast) {
  const auto copies = [](bool prepare) {
    const Config c = parse_config_text(std::string(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":)"
                                                   R"("bf16_autocast","checkpointing":"full","finetune":{"method":"lora",)"
                                                   R"("base_bits":4,"prepare_kbit":)") +
                                       (prepare ? "true" : "false") + "}}}")
                         .config;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    return e.breakdown.weight_copies.value();
  };
  EXPECT_EQ(copies(true), 2 * 32000LL * 4096);
  EXPECT_EQ(copies(false), 0);
}

// Llama 4's layers run under the class's own every-expert dispatch: no expert parallelism; under a
// pipeline, Maverick's alternating MoE layers split evenly across the stages (each holds 12 of the
// 24), not all on the last; no_rope_layers is read as transformers reads it.
TEST(Peft, Llama4LayoutAndItsLimits) {
  Config c = parse_config_text(R"({"model":{"preset":"llama-4-scout"},"training":{"finetune":{"method":"lora"}},)"
                               R"("parallel":{"num_gpus":2,"expert":2}})")
                 .config;
  const std::vector<Issue> ep = validate(c);
  ASSERT_FALSE(ep.empty());
  EXPECT_EQ(ep[0].field, "parallel.expert");
  Config grouped = c;
  grouped.training.implementation.moe_dispatch = MoeDispatch::kGrouped;
  EXPECT_TRUE(validate(grouped).empty());
  const HfImport maverick = import_hf_config_text(R"({"model_type":"llama4_text","interleave_moe_layer_step":2,)"
                                                  R"("num_local_experts":128,"use_qk_norm":false})");
  ASSERT_TRUE(maverick.errors.empty());
  Config staged = parse_config_text(R"({"training":{"finetune":{"method":"lora"}},"parallel":{"num_gpus":2,"pipeline":2}})").config;
  staged.model = maverick.model;
  staged.training.implementation.moe_dispatch = MoeDispatch::kDense;
  const Estimate two = estimate(staged);
  ASSERT_TRUE(two.ok()) << (two.errors.empty() ? "" : two.errors[0].message);
  staged.parallel.pipeline = 1;
  staged.parallel.num_gpus = 1;
  const Estimate one = estimate(staged);
  ASSERT_TRUE(one.ok());
  // Half the layers each: half the frozen weights (the embedding or the head aside).
  EXPECT_LT(two.breakdown.parameters.value(), one.breakdown.parameters.value() * 6 / 10);
  const auto rope_error = [](const char* list) {
    const HfImport r = import_hf_config_text(std::string(R"({"model_type":"llama4_text","num_hidden_layers":4,)"
                                                         R"("no_rope_layers":)") + list + "}");
    return r.errors.empty() ? std::to_string(r.model.qk_norm_layers) : r.errors[0].field;
  };
  EXPECT_EQ(rope_error("[1,1,1,0,0,0]"), "3");  // the first num_hidden_layers entries
  EXPECT_EQ(rope_error("[true,false,true,true]"), "3");
  EXPECT_EQ(rope_error("[1,1]"), "no_rope_layers");
  EXPECT_EQ(rope_error("\"abc\""), "no_rope_layers");
  // A moe_layers list of the last layers keeps the dense layers first; Maverick's alternates.
  EXPECT_FALSE(import_hf_config_text(R"({"model_type":"llama4_text","num_hidden_layers":4,"moe_layers":[2,3]})")
                   .model.moe_layers_interleaved);
  EXPECT_TRUE(maverick.model.moe_layers_interleaved);
  // So do Qwen-MoE's every-step-th sparse layers and ERNIE 4.5's every-interval-th ones.
  const std::string small = R"("vocab_size":1000,"hidden_size":64,"num_hidden_layers":8,"num_attention_heads":4,)"
                            R"("intermediate_size":128,"moe_intermediate_size":32,)";
  EXPECT_TRUE(import_hf_config_text(R"({"model_type":"qwen3_moe",)" + small +
                                    R"("num_experts":8,"num_experts_per_tok":2,"decoder_sparse_step":2})")
                  .model.moe_layers_interleaved);
  EXPECT_FALSE(import_hf_config_text(R"({"model_type":"qwen3_moe",)" + small +
                                     R"("num_experts":8,"num_experts_per_tok":2})")
                   .model.moe_layers_interleaved);
  EXPECT_TRUE(import_hf_config_text(R"({"model_type":"ernie4_5_moe",)" + small + R"("moe_layer_interval":2})")
                  .model.moe_layers_interleaved);
  EXPECT_FALSE(import_hf_config_text(R"({"model_type":"ernie4_5_moe",)" + small + R"("moe_layer_start_index":1})")
                   .model.moe_layers_interleaved);
  // Its class has no FlashAttention-2 path; torchtitan's Llama 4 has its own attention.
  Config flash = parse_config_text(R"({"model":{"preset":"llama-4-scout"},"training":{"attention":"flash"}})").config;
  const std::vector<Issue> fa = validate(flash);
  ASSERT_FALSE(fa.empty());
  EXPECT_EQ(fa[0].field, "training.attention");
  flash.training.implementation.framework = Framework::kTorchtitan;
  EXPECT_TRUE(validate(flash).empty());
}

// Llama 4 (transformers' class: every expert on every token through torch.bmm, an autocast op):
// bitsandbytes leaves the expert stacks as loaded, fp32 after prepare_model_for_kbit_training, so
// every layer whose input needs a gradient saves a 16-bit copy of its whole stack; transformers'
// grouped GEMMs (Qwen3-MoE) are not autocast ops and cast nothing, but their routers are cast.
TEST(Peft, MixtureExpertCastsFollowTheDispatch) {
  const auto copies = [](const char* model, const char* dispatch) {
    Config c = parse_config_text(std::string(R"({"model":)") + model +
                                 R"(,"training":{"precision":"bf16_autocast","finetune":{"method":"lora",)"
                                 R"("base_bits":4,"prepare_kbit":true,"lora_targets":["q","v"]},"moe_dispatch":")" +
                                 dispatch + R"("}})")
                   .config;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok()) << (e.errors.empty() ? "" : e.errors[0].message);
    return e.breakdown.weight_copies.value();
  };
  const char* tiny_moe = R"({"preset":"","vocab_size":1000,"hidden_size":64,"num_hidden_layers":2,)"
                         R"("num_attention_heads":4,"intermediate_size":128,"num_experts":8,)"
                         R"("num_experts_per_tok":2,"moe_intermediate_size":32})";
  const std::int64_t head = 1000 * 64, routers = 2 * 8 * 64, stacks = 2 * 8 * 3 * 64 * 32;
  EXPECT_EQ(copies(tiny_moe, "grouped"), 2 * (head + routers));
  EXPECT_EQ(copies(tiny_moe, "dense"), 2 * (head + routers + stacks));
}

// An expert stack PEFT adapts (target_parameters) is rebuilt merged every forward, and the merged
// stack is what the matmul casts (counted with the activations): the frozen stack is not cast too.
// With down adapted only, the gate/up stack is still cast. Under a pipeline each stage recomputes a
// whole block of its own.
TEST(Peft, AdaptedExpertStacksAreCastOnceAndEachStageRecomputesABlock) {
  const auto copies = [](const char* targets, const char* checkpointing, int pipeline) {
    Config c = parse_config_text(std::string(R"({"model":{"preset":"","vocab_size":1000,"hidden_size":64,)"
                                             R"("num_hidden_layers":4,"num_attention_heads":4,"intermediate_size":128,)"
                                             R"("num_experts":8,"num_experts_per_tok":1,"moe_intermediate_size":32},)"
                                             R"("training":{"precision":"bf16_mixed","moe_dispatch":"dense",)"
                                             R"("lora_base_dtype":"fp32","checkpointing":")") +
                                 checkpointing + R"(","finetune":{"method":"lora","target_parameters":true,)"
                                                 R"("lora_targets":[)" + targets + "]}}}")
                   .config;
    c.parallel.pipeline = pipeline;
    c.parallel.num_gpus = pipeline;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok()) << (e.errors.empty() ? "" : e.errors[0].message);
    return e.breakdown.weight_copies.value();
  };
  const std::int64_t head = 1000 * 64, attention = 4 * (4 * 64 * 64), routers = 4 * 8 * 64;
  const std::int64_t gate_up = 4 * 8 * 2 * 64 * 32, down = 4 * 8 * 32 * 64;
  EXPECT_EQ(copies(R"("q","gate","up","down")", "none", 1), 2 * (head + attention + routers));
  EXPECT_EQ(copies(R"("q","down")", "none", 1), 2 * (head + attention + routers + gate_up));
  // Full checkpointing: the head, and one block (of four) per stage.
  EXPECT_EQ(copies(R"("q")", "full", 1), 2 * (head + (attention + routers + gate_up + down) / 4));
  // Two stages: the busiest holds the head and recomputes one whole block of its own, as one GPU does.
  EXPECT_EQ(copies(R"("q")", "full", 2), copies(R"("q")", "full", 1));
}

// PEFT's LoRA layer fails on Llama 4's router (an nn.Linear returning scores and logits together):
// memfit refuses the target there, and nowhere else.
TEST(Peft, Llama4RouterCannotTakeAnAdapter) {
  const auto errors = [](const char* dispatch) {
    return validate(parse_config_text(std::string(R"({"model":{"preset":"","vocab_size":1000,"hidden_size":64,)"
                                                  R"("num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,)"
                                                  R"("num_experts":8,"num_experts_per_tok":1,"moe_intermediate_size":32},)"
                                                  R"("training":{"moe_dispatch":")") +
                                      dispatch + R"(","finetune":{"method":"lora","lora_targets":["q","router"]}}})")
                        .config);
  };
  const std::vector<Issue> dense = errors("dense");
  ASSERT_FALSE(dense.empty());
  EXPECT_EQ(dense[0].field, "training.finetune.lora_targets");
  EXPECT_NE(dense[0].message.find("router"), std::string::npos);
  EXPECT_TRUE(errors("loop").empty());
}

// Only the blocks left out of full checkpointing keep their frozen casts; with every block
// recomputed, the one being recomputed holds its own (one per pipeline stage).
TEST(Peft, BlocksLeftOutOfCheckpointingKeepTheirCasts) {
  const auto copies = [](std::int64_t checkpointed) {
    Config c = parse_config_text(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16_mixed",)"
                                 R"("finetune":{"method":"lora"},"checkpointing":"full","lora_base_dtype":"fp32"}})")
                   .config;
    c.training.checkpointed_layers = checkpointed;
    return estimate(c).breakdown.weight_copies.value();
  };
  const std::int64_t head = 32000LL * 4096, blocks = 2147483648LL + 4328521728LL;
  EXPECT_EQ(copies(-1), 2 * (head + blocks / 32));
  EXPECT_EQ(copies(24), 2 * head + 2 * blocks / 4);  // 8 of 32 blocks keep theirs, freed before the recomputed
  EXPECT_EQ(copies(0), 2 * (head + blocks));
}

// torchao before 0.2 quantised each NF4 weight in one piece at load: the bf16 weight, its scaled
// copy and two numel × 16 bf16 differences for the largest quantised linear (Llama-2-7B's MLP,
// 4,096 × 11,008), on top of the quantised model: 68 bytes per element of it.
TEST(Peft, TorchaoNf4InOnePiecePeaksAtLoad) {
  const auto load = [](bool whole) {
    Config c = parse_config_text(R"({"model":{"preset":"llama-2-7b"},"training":{"framework":"torchtune",)"
                                 R"("precision":"bf16","finetune":{"method":"lora","base_bits":4}}})")
                   .config;
    c.training.finetune.nf4_whole_tensor = whole;
    const Estimate e = estimate(c);
    EXPECT_TRUE(e.ok());
    for (const Phase& p : e.phases) {
      if (p.name == "load") return std::pair{p.bytes.value(), e.breakdown.parameters.value()};
    }
    return std::pair{std::int64_t{0}, std::int64_t{0}};
  };
  const auto [whole, weights] = load(true);
  EXPECT_EQ(whole, weights + std::int64_t{4096} * 11008 * 68);
  EXPECT_LT(load(false).first, whole);
}

TEST(Peft, PrefixKeysFollowTheKernelTheRunResolvesTo) {
  // The prefix's keys and values are kept at the key/value heads by flash attention and repeated to
  // every query head by transformers' SDPA (a mask is passed): the kernel the profile resolves to
  // decides, as an explicit one does.
  const auto prefix = [](const std::string& training) {
    const Json r = estimate_json(R"({"model":{"preset":"llama-3-8b"},"training":{"finetune":{"method":"prefix_tuning"},)" +
                                 training + "}}");
    EXPECT_TRUE(r.find("ok")->as_bool()) << r.dump();
    for (const Json& t : r.find("activation_terms_per_layer")->items()) {
      if (t.find("name")->as_string() == "peft.prefix_keys_values") return *t.find("bytes")->as_exact_integer();
    }
    return std::int64_t{-1};
  };
  const std::int64_t flash = prefix(R"("attention":"flash")"), sdpa = prefix(R"("attention":"sdpa")");
  EXPECT_LT(flash, sdpa);  // 8 key/value heads against 32
  EXPECT_EQ(prefix(R"("framework":"unsloth")"), flash);  // unsloth's default kernel is flash
  EXPECT_EQ(prefix(R"("framework":"hf")"), sdpa);
}

// Prompt tuning on a model with learned positions: the default length leaves room for the virtual
// tokens; a length the user chose that leaves none is refused with the numbers and both ways out.
TEST(Peft, VirtualTokensFitTheLearnedPositions) {
  const Json defaulted = estimate_json(R"({"model":{"preset":"gpt2"},"training":{"finetune":{"method":"prompt_tuning"}}})");
  ASSERT_TRUE(defaulted.find("ok")->as_bool()) << defaulted.dump();
  EXPECT_EQ(*defaulted.find("config")->find("training")->find("seq_len")->as_exact_integer(), 1004);
  const Json chosen = estimate_json(R"({"model":{"preset":"gpt2"},"training":{"seq_len":1020,)"
                                    R"("finetune":{"method":"p_tuning","num_virtual_tokens":20}}})");
  ASSERT_FALSE(chosen.find("ok")->as_bool());
  const Json& e = chosen.find("errors")->items().at(0);
  EXPECT_EQ(e.find("field")->as_string(), "training.finetune.num_virtual_tokens");
  EXPECT_EQ(e.find("message")->as_string(),
            "must fit the learned positions with every sequence: training.seq_len 1,020 + 20 virtual tokens is more than "
            "model.max_position_embeddings (1,024); at most 4 virtual tokens, or training.seq_len at most 1,004");
  // Virtual tokens that fill the table: one error, on them, with no length to suggest.
  const Json full = estimate_json(R"({"model":{"preset":"gpt2"},"training":{"finetune":{"method":"prompt_tuning",)"
                                  R"("num_virtual_tokens":1024}}})");
  ASSERT_FALSE(full.find("ok")->as_bool());
  ASSERT_EQ(full.find("errors")->items().size(), 1u) << full.find("errors")->dump();
  EXPECT_EQ(full.find("errors")->items().at(0).find("message")->as_string().rfind(
                "must be less than model.max_position_embeddings (1,024)", 0), 0u);
}

// A method whose own saved tensors are most of a block's activations says so: HRA's Householder
// products on Llama 3 8B put its activations above a full fine-tune's; LoRA and DoRA say nothing.
TEST(Peft, AMethodWhoseOwnTensorsDominateSaysSo) {
  const auto note = [](const std::string& method) {
    const Json r = estimate_json(R"({"model":{"preset":"llama-3-8b"},"training":{"finetune":{"method":")" + method + R"("}}})");
    EXPECT_TRUE(r.find("ok")->as_bool()) << r.dump();
    for (const Json& n : r.find("notes")->items()) {
      if (n.as_string().find("keep for backward") != std::string::npos) return n.as_string();
    }
    return std::string();
  };
  const std::string hra = note("hra");
  EXPECT_EQ(hra.rfind("hra: what its PEFT layers build in forward and keep for backward is ", 0), 0u) << hra;
  EXPECT_NE(hra.find("% of each block's activations"), std::string::npos) << hra;
  EXPECT_EQ(hra.find("recomputed"), std::string::npos) << hra;
  // Under full checkpointing the block's tensors exist only while it is recomputed: said so.
  const Json ckpt = estimate_json(R"({"model":{"preset":"llama-3-8b"},"training":{"checkpointing":"full","finetune":{"method":"hra"}}})");
  bool said = false;
  for (const Json& n : ckpt.find("notes")->items()) said = said || n.as_string().find("held only while that block is recomputed") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(note("lora"), "");
  EXPECT_EQ(note("dora"), "");
  const Json full = estimate_json(R"({"model":{"preset":"llama-3-8b"}})");
  const Json hra_run = estimate_json(R"({"model":{"preset":"llama-3-8b"},"training":{"finetune":{"method":"hra"}}})");
  EXPECT_GT(*hra_run.find("breakdown")->find("activations")->as_exact_integer(),
            *full.find("breakdown")->find("activations")->as_exact_integer());
}

}  // namespace
}  // namespace memfit
