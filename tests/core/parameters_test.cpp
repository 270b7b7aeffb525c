// Parameter counts: tiny worked examples, every preset against its published count, and the
// vendored config.json fixtures through the importer.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "memfit/memfit.hpp"
#include "activations.hpp"
#include "peft.hpp"

namespace memfit {
namespace {

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(MEMFIT_SOURCE_DIR) + "/tests/fixtures/hf/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::int64_t count_of(const std::string& fixture) {
  const HfImport imported = import_hf_config_text(read_fixture(fixture));
  EXPECT_TRUE(imported.errors.empty()) << fixture << ": " << (imported.errors.empty() ? "" : imported.errors[0].message);
  return count_parameters(imported.model).total_count.value();
}

TEST(Parameters, TinyLlamaWorkedExample) {
  // V 100, d 8, L 2, h 4, kv 2 (head 2), d_ff 16, gated, RMSNorm, untied.
  ModelSpec m;
  m.vocab_size = 100;
  m.hidden_size = 8;
  m.num_hidden_layers = 2;
  m.num_attention_heads = 4;
  m.num_key_value_heads = 2;
  m.intermediate_size = 16;
  // embedding 100·8 = 800; head 800; final norm 8
  // per layer: q 8·8 = 64, k 4·8 = 32, v 32, o 64 → 192; MLP 3·8·16 = 384; norms 2·8 = 16 → 592
  const ParameterCount p = count_parameters(m);
  EXPECT_EQ(p.per_dense_layer_count.value(), 592);
  EXPECT_EQ(p.total_count.value(), 800 + 800 + 8 + 2 * 592);
  EXPECT_EQ(p.component_count(Component::kAttention).value(), 2 * 192);
  m.tie_word_embeddings = true;
  EXPECT_EQ(count_parameters(m).total_count.value(), 800 + 8 + 2 * 592);
}

TEST(Parameters, TinyMoeCountsExpertsRouterAndSharedExperts) {
  ModelSpec m;
  m.vocab_size = 10;
  m.hidden_size = 4;
  m.num_hidden_layers = 3;
  m.num_attention_heads = 2;
  m.intermediate_size = 8;
  m.num_experts = 4;
  m.num_experts_per_tok = 2;
  m.moe_intermediate_size = 2;
  m.num_shared_experts = 1;
  m.first_k_dense_replace = 1;
  // attention 4·16 = 64, norms 8: 72 per layer
  // dense MLP 3·4·8 = 96; MoE: router 4·4 = 16, experts 4·(3·4·2) = 96, shared 3·4·2 = 24 → 136
  const ParameterCount p = count_parameters(m);
  EXPECT_EQ(p.per_dense_layer_count.value(), 72 + 96);
  EXPECT_EQ(p.per_moe_layer_count.value(), 72 + 136);
  EXPECT_EQ(p.total_count.value(), 40 + 40 + 4 + 168 + 2 * 208);
  // Per token: 2 of 4 experts (12 parameters each) in each of the 2 MoE layers.
  EXPECT_EQ(p.active_count.value(), p.total_count.value() - 2 * 2 * 24);
}

TEST(Parameters, RotaryAndMasksAreBuffersNotParameters) {
  ModelSpec m = *preset_model("llama-2-7b");
  const std::int64_t rotary = count_parameters(m).total_count.value();
  m.position_embedding = PositionKind::kNone;
  EXPECT_EQ(count_parameters(m).total_count.value(), rotary);
}

// Every preset with a published exact count reproduces it (sources in tools/presets.json and
// tests/fixtures/hf/SOURCES.md).
TEST(Parameters, EveryPresetMatchesItsPublishedCount) {
  int checked = 0;
  for (const Preset& p : presets()) {
    const auto model = preset_model(p.id);
    ASSERT_TRUE(model.has_value()) << p.id;
    if (p.published_parameter_count == 0) continue;
    EXPECT_EQ(count_parameters(*model).total_count.value(), p.published_parameter_count) << p.id;
    ++checked;
  }
  EXPECT_GE(checked, 46);
  EXPECT_GE(presets().size(), 50u);
}

TEST(Parameters, PublishedCountsFromTheIssue) {
  // The counts the project was asked to reproduce, through the presets.
  const std::pair<const char*, std::int64_t> expected[] = {
      {"gpt2", 124'439'808},           {"gpt2-medium", 354'823'168},      {"gpt2-large", 774'030'080},
      {"bert-large-uncased", 335'141'888}, {"pythia-1b", 1'011'781'632},   {"llama-2-7b", 6'738'415'616},
      {"llama-2-13b", 13'015'864'320}, {"llama-2-70b", 68'976'648'192},   {"llama-3-8b", 8'030'261'248},
      {"llama-3-70b", 70'553'706'496}, {"llama-3.2-1b", 1'235'814'400},   {"llama-3.2-3b", 3'212'749'824},
      {"mistral-7b-v0.1", 7'241'732'096}, {"mixtral-8x7b", 46'702'792'704}, {"qwen2.5-0.5b", 494'032'768},
      {"qwen2.5-7b", 7'615'616'512},   {"gemma-2b", 2'506'172'416},       {"gemma-2-9b", 9'241'705'984},
      {"phi-3-mini-4k", 3'821'079'552}, {"deepseek-v3", 671'026'419'200},
  };
  for (const auto& [id, count] : expected) {
    EXPECT_EQ(count_parameters(*preset_model(id)).total_count.value(), count) << id;
  }
}

// The full vendored config.json of each preset imports to the same count as the preset (the
// preset keeps only the keys the importer reads).
TEST(Parameters, FixturesImportToThePresetCounts) {
  const std::pair<const char*, const char*> pairs[] = {
      {"gpt2", "gpt2.json"}, {"gpt2-xl", "gpt2-xl.json"}, {"opt-125m", "facebook__opt-125m.json"},
      {"bert-base-uncased", "bert-base-uncased.json"}, {"pythia-1b", "EleutherAI__pythia-1b.json"},
      {"llama-3-8b", "meta-llama__Meta-Llama-3-8B.json"}, {"mixtral-8x7b", "mistralai__Mixtral-8x7B-v0.1.json"},
      {"qwen2.5-7b", "Qwen__Qwen2.5-7B.json"}, {"qwen1.5-moe-a2.7b", "Qwen__Qwen1.5-MoE-A2.7B.json"},
      {"qwen3-30b-a3b", "Qwen__Qwen3-30B-A3B.json"}, {"gemma-2b", "google__gemma-2b.json"},
      {"gemma-2-9b", "google__gemma-2-9b.json"}, {"phi-2", "microsoft__phi-2.json"},
      {"phi-3-mini-4k", "microsoft__Phi-3-mini-4k-instruct.json"}, {"falcon-7b", "tiiuae__falcon-7b-instruct.json"},
      {"olmo-2-7b", "allenai__OLMo-2-1124-7B.json"}, {"deepseek-v3", "deepseek-ai__DeepSeek-V3.json"},
      {"qwen2.5-1.5b", "Qwen__Qwen2.5-1.5B.json"}, {"qwen2.5-3b", "Qwen__Qwen2.5-3B.json"},
      {"qwen2.5-14b", "Qwen__Qwen2.5-14B.json"}, {"qwen2.5-32b", "Qwen__Qwen2.5-32B.json"},
      {"qwen2.5-72b", "Qwen__Qwen2.5-72B-Instruct.json"}, {"qwen3-0.6b", "Qwen__Qwen3-0.6B.json"},
      {"qwen3-1.7b", "Qwen__Qwen3-1.7B.json"}, {"qwen3-4b", "Qwen__Qwen3-4B.json"}, {"qwen3-8b", "Qwen__Qwen3-8B.json"},
      {"qwen3-14b", "Qwen__Qwen3-14B.json"}, {"qwen3-32b", "Qwen__Qwen3-32B.json"},
      {"qwen3-235b-a22b", "Qwen__Qwen3-235B-A22B-Instruct-2507.json"}, {"gemma-3-1b", "google__gemma-3-1b-it.json"},
      {"phi-4", "microsoft__phi-4.json"}, {"llama-4-scout", "meta-llama__Llama-4-Scout-17B-16E-Instruct.json"},
      {"olmoe-1b-7b", "allenai__OLMoE-1B-7B-0125-Instruct.json"}, {"glm-4.5-air", "zai-org__GLM-4.5-Air.json"},
      {"qwen3.5-9b", "Qwen__Qwen3.5-9B.json"}, {"qwen3.5-27b", "Qwen__Qwen3.5-27B.json"},
      {"qwen3.5-35b-a3b", "Qwen__Qwen3.5-35B-A3B.json"}, {"qwen3-next-80b-a3b", "Qwen__Qwen3-Next-80B-A3B-Instruct.json"},
      {"glm-4-9b-0414", "zai-org__GLM-4-9B-0414.json"}, {"mistral-small-4", "mistralai__Mistral-Small-4-119B-2603.json"},
      {"glm-4.7-flash", "zai-org__GLM-4.7-Flash.json"}, {"minimax-m2", "MiniMaxAI__MiniMax-M2.json"},
  };
  for (const auto& [id, file] : pairs) {
    EXPECT_EQ(count_of(file), count_parameters(*preset_model(id)).total_count.value()) << id;
  }
  // Same architecture, different checkpoints.
  EXPECT_EQ(count_of("Qwen__Qwen2.5-7B-Instruct.json"), 7'615'616'512);
  EXPECT_EQ(count_of("Qwen__Qwen2-7B.json"), 7'615'616'512);
}

// Families imported from config.json alone (no preset): transformers 5.24's own classes, built on
// the meta device from the same files, count exactly these (tools/frameworks/families.py,
// out/families.json).
TEST(Parameters, ImportedFamiliesMatchTransformersCounts) {
  const std::pair<const char*, std::int64_t> expected[] = {
      {"bigscience__bloom-560m.json", 559'214'592},
      {"bigcode__gpt_bigcode-santacoder.json", 1'124'886'528},
      {"EleutherAI__gpt-j-6b.json", 6'050'882'784},
      {"stabilityai__stablelm-3b-4e1t.json", 2'795'443'200},
      {"stabilityai__stablelm-2-zephyr-1_6b.json", 1'644'515'328},
      {"bigcode__starcoder2-7b.json", 7'173'923'840},
      {"CohereForAI__aya-23-8B.json", 8'028'033'024},
      {"google__gemma-3-1b-it.json", 999'885'952},
      {"ibm-granite__granite-3.3-8b-instruct.json", 8'170'864'640},
      {"HuggingFaceTB__SmolLM3-3B.json", 3'075'098'624},
      {"ByteDance-Seed__Seed-OSS-36B-Instruct.json", 36'151'104'512},
      {"LGAI-EXAONE__EXAONE-4.0-1.2B.json", 1'279'391'488},
      // gpt-oss: the model card's totals are 20.91B and 116.83B.
      {"openai__gpt-oss-20b.json", 20'914'757'184},
      {"openai__gpt-oss-120b.json", 116'829'156'672},
      {"allenai__OLMoE-1B-7B-0125-Instruct.json", 6'919'161'856},
      {"baidu__ERNIE-4.5-0.3B-PT.json", 360'748'032},
      // Llama 4's language models (the multimodal files' text_config): Scout and Maverick.
      {"meta-llama__Llama-4-Scout-17B-16E-Instruct.json", 107'769'861'120},
      {"meta-llama__Llama-4-Maverick-17B-128E-Instruct.json", 400'711'848'960},
      // GLM-4.5: memfit also counts each MoE layer's e_score_correction_bias (one value per routed
      // expert), a buffer in transformers 5 and a stored tensor in the checkpoint, as DeepSeek-V3's:
      // transformers' counts are 106,852,245,504 (Air: 45 MoE layers x 128 experts fewer) and
      // 352,797,814,784 (89 x 160 fewer). The multi-token-prediction layer is not counted.
      {"zai-org__GLM-4.5-Air.json", 106'852'245'504 + 45 * 128},
      {"zai-org__GLM-4.5.json", 352'797'814'784 + 89 * 160},
      // Qwen3.5's language models (the multimodal files' text_config): three Gated DeltaNet layers to
      // one gated attention layer; the MoE models' every layer a mixture with a gated shared expert.
      // transformers 5.24's Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM on the meta device.
      {"Qwen__Qwen3.5-9B.json", 8'953'803'264},
      {"Qwen__Qwen3.5-27B.json", 26'895'998'464},
      {"Qwen__Qwen3.5-35B-A3B.json", 34'660'610'688},
      {"Qwen__Qwen3.5-122B-A10B.json", 122'111'526'912},
      {"Qwen__Qwen3.5-397B-A17B.json", 396'346'350'336},
      // Qwen3-Next-80B-A3B: the same layers, the Gated DeltaNet's projections fused (Qwen3NextForCausalLM).
      {"Qwen__Qwen3-Next-80B-A3B-Instruct.json", 79'674'391'296},
      // GLM-4 (GlmForCausalLM) and GLM-4-0414 (Glm4ForCausalLM, two more norms a block): one fused
      // gate_up_proj, which counts as gate and up.
      {"zai-org__glm-4-9b-chat-hf.json", 9'399'951'360},
      {"zai-org__GLM-4-9B-0414.json", 9'400'279'040},
      // Mistral Small 4's language model (Mistral 3's wrapper over Mistral4ForCausalLM: DeepSeek-V3's
      // latent attention and experts, a router without a correction bias).
      {"mistralai__Mistral-Small-4-119B-2603.json", 118'972'826'624},
      // GLM-4.7-Flash (Glm4MoeLiteForCausalLM: DeepSeek-V3's latent attention over GLM-4.5's mixture),
      // with its 46 MoE layers' correction biases (64 experts), buffers in transformers 5.
      {"zai-org__GLM-4.7-Flash.json", 29'943'390'976 + 46 * 64},
      // MiniMax-M2 (MiniMaxM2ForCausalLM: Mixtral's block, norms over the whole query and key
      // projections), with its 62 MoE layers' correction biases (256 experts), buffers in transformers 5.
      {"MiniMaxAI__MiniMax-M2.json", 228'689'748'992 + 62 * 256},
  };
  for (const auto& [file, count] : expected) EXPECT_EQ(count_of(file), count) << file;
}

// A fixture with one key left out, or changed, at the top or inside text_config: `value` null
// removes the key.
std::int64_t count_edited(const std::string& fixture, const std::string& key, std::optional<Json> value,
                          const char* nested = nullptr, std::vector<Issue>* errors = nullptr) {
  const std::optional<Json> parsed = parse_json(read_fixture(fixture)).value;
  EXPECT_TRUE(parsed.has_value()) << fixture;
  const auto edit = [&](const Json& object) {
    Json out = Json::object();
    for (const auto& [k, v] : object.members()) {
      if (k != key) out.set(k, v);
    }
    if (value) out.set(key, *value);
    return out;
  };
  Json file = Json::object();
  for (const auto& [k, v] : parsed->members()) file.set(k, nested && k == nested ? edit(v) : v);
  if (!nested) file = edit(file);
  const HfImport imported = import_hf_config(file);
  if (errors) *errors = imported.errors;
  EXPECT_TRUE(errors || imported.errors.empty())
      << fixture << " " << key << ": " << (imported.errors.empty() ? "" : imported.errors[0].message);
  return imported.errors.empty() ? count_parameters(imported.model).total_count.value() : -1;
}

// The keys a file leaves out take the config class's defaults, as transformers 5.24 fills them (each
// count: the class on the meta device). Found by deleting every key of every fixture in turn.
TEST(HfImport, ClassDefaultsStandInForKeysAFileLeavesOut) {
  const std::optional<Json> gone;
  // num_key_value_heads and head_dim: the class's numbers, not the query heads' or hidden / heads.
  EXPECT_EQ(count_edited("mistralai__Mistral-7B-v0.1.json", "num_key_value_heads", gone), 7'241'732'096);
  EXPECT_EQ(count_edited("mistralai__Mixtral-8x7B-v0.1.json", "num_key_value_heads", gone), 46'702'792'704);
  EXPECT_EQ(count_edited("Qwen__Qwen3-30B-A3B.json", "num_key_value_heads", gone), 30'532'122'624);
  EXPECT_EQ(count_edited("ByteDance-Seed__Seed-OSS-36B-Instruct.json", "head_dim", gone), 36'151'104'512);
  EXPECT_EQ(count_edited("openai__gpt-oss-20b.json", "head_dim", gone), 20'914'757'184);
  EXPECT_EQ(count_edited("google__gemma-2-2b.json", "head_dim", gone), 2'614'341'888);
  // A class default that does not divide the file's heads is refused by name (transformers builds
  // k_proj that wide and fails in the first forward): Qwen2Config's 32 against Qwen2.5-7B's 28.
  std::vector<Issue> errors;
  EXPECT_EQ(count_edited("Qwen__Qwen2.5-7B.json", "num_key_value_heads", gone, nullptr, &errors), -1);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].field, "num_key_value_heads");
  // Other sizes and switches.
  EXPECT_EQ(count_edited("FacebookAI__roberta-base.json", "type_vocab_size", gone), 124'646'400);
  EXPECT_EQ(count_edited("google__mt5-base.json", "d_ff", gone), 525'778'176);
  EXPECT_EQ(count_edited("google__mt5-base.json", "feed_forward_proj", gone), 582'401'280);
  EXPECT_EQ(count_edited("ByteDance-Seed__Seed-OSS-36B-Instruct.json", "attention_bias", gone), 36'151'104'512);
  EXPECT_EQ(count_edited("Qwen__Qwen1.5-MoE-A2.7B.json", "shared_expert_intermediate_size", gone), 14'315'784'192);
  // DeBERTa's encoder builds the relative embeddings' LayerNorm without relative attention too.
  EXPECT_EQ(count_edited("microsoft__deberta-v3-base.json", "relative_attention", gone), 183'438'336);
  // DeepSeek-V3's mixture and query rank (the 58 MoE layers' correction biases counted).
  for (const char* key : {"first_k_dense_replace", "n_routed_experts", "n_shared_experts", "q_lora_rank"}) {
    EXPECT_EQ(count_edited("deepseek-ai__DeepSeek-V3.json", key, gone), 671'026'404'352 + 58 * 256) << key;
  }
  // A null key is the class's None: as many key/value heads as query heads, hidden / heads wide
  // (Ernie4_5Config, whose own defaults are 2 and 128).
  EXPECT_EQ(count_edited("baidu__ERNIE-4.5-0.3B-PT.json", "num_key_value_heads", Json::null()), 426'808'320);
  EXPECT_EQ(count_edited("baidu__ERNIE-4.5-0.3B-PT.json", "head_dim", Json::null()), 318'280'704);
  // Which key ties a wrapper's head: Mistral 3's outer key, else its text config's false (a file
  // from before transformers 5 over a checkpoint that stores its own head, which from_pretrained
  // unties; from_config alone would tie: 118,435,955,712), else true; Qwen3.5's outer key alone
  // (default false); Llama 4's text_config alone (default false).
  EXPECT_EQ(count_edited("mistralai__Mistral-Small-4-119B-2603.json", "tie_word_embeddings", gone), 118'972'826'624);
  EXPECT_EQ(count_edited("mistralai__Mistral-Small-4-119B-2603.json", "tie_word_embeddings", Json::boolean(true)),
            118'435'955'712);
  EXPECT_EQ(count_edited("Qwen__Qwen3.5-9B.json", "tie_word_embeddings", Json::boolean(true), "text_config"),
            8'953'803'264);
  EXPECT_EQ(count_edited("meta-llama__Llama-4-Scout-17B-16E-Instruct.json", "tie_word_embeddings", Json::boolean(true)),
            107'769'861'120);
}

// The keys the new readers' classes spell otherwise or do not read (transformers 5.24, the meta
// device): attribute_map aliases win, unread keys are not checked, no MLP bias is built.
TEST(HfImport, MlaAndMiniMaxReadersFollowTheirClassesKeys) {
  const auto count = [](const std::string& text) {
    const HfImport r = import_hf_config_text(text);
    EXPECT_TRUE(r.errors.empty()) << text << ": " << (r.errors.empty() ? "" : r.errors[0].message);
    return r.errors.empty() ? count_parameters(r.model).total_count.value() : -1;
  };
  // num_local_experts is Mistral4Config's and Glm4MoeLiteConfig's alias of n_routed_experts.
  EXPECT_EQ(count(R"({"model_type":"mistral4","num_local_experts":16,"n_routed_experts":128})"),
            count(R"({"model_type":"mistral4","n_routed_experts":16})"));
  EXPECT_EQ(count(R"({"model_type":"glm4_moe_lite","num_local_experts":16})"),
            count(R"({"model_type":"glm4_moe_lite","n_routed_experts":16})"));
  // MiniMaxM2Config's alias runs the other way: num_experts wins over num_local_experts.
  EXPECT_EQ(count(R"({"model_type":"minimax_m2","num_experts":16,"num_local_experts":8})"),
            count(R"({"model_type":"minimax_m2","num_local_experts":16})"));
  // Glm4MoeLiteConfig's head_dim is qk_rope_head_dim.
  EXPECT_EQ(count(R"({"model_type":"glm4_moe_lite","head_dim":32,"qk_rope_head_dim":8})"),
            count(R"({"model_type":"glm4_moe_lite","qk_rope_head_dim":32})"));
  // Keys the classes do not read change nothing: moe_layer_freq (Mistral 4, GLM-4.7-Flash),
  // first_k_dense_replace (GLM-4.7-Flash), mlp_bias (all three), attention_bias (MiniMax-M2), and
  // num_key_value_heads under latent attention.
  const std::int64_t mistral4 = count(R"({"model_type":"mistral4"})");
  EXPECT_EQ(count(R"({"model_type":"mistral4","moe_layer_freq":2,"mlp_bias":true,"num_key_value_heads":7})"), mistral4);
  const std::int64_t glm = count(R"({"model_type":"glm4_moe_lite"})");
  EXPECT_EQ(count(R"({"model_type":"glm4_moe_lite","moe_layer_freq":2,"first_k_dense_replace":-1,"mlp_bias":true})"), glm);
  const std::int64_t minimax = count(R"({"model_type":"minimax_m2"})");
  EXPECT_EQ(count(R"({"model_type":"minimax_m2","mlp_bias":true,"attention_bias":true,"num_mtp_modules":"x"})"), minimax);
  // A zero-width query rank or expert count (the new classes would build empty layers) is refused by
  // name; null q_lora_rank is one query projection.
  EXPECT_EQ(import_hf_config_text(R"({"model_type":"mistral4","q_lora_rank":0})").errors.at(0).field, "q_lora_rank");
  EXPECT_EQ(import_hf_config_text(R"({"model_type":"glm4_moe_lite","n_routed_experts":0})").errors.at(0).field,
            "n_routed_experts");
}

// The older readers hold to their classes too (transformers 5.24, AutoConfig on both key orders):
// an expert-count alias wins over the key it names except Qwen3-MoE's (num_local_experts kept),
// Qwen2-MoE has none; DeepSeek-V3's router always holds its correction bias and V2's never;
// first_k_dense_replace past the layers makes them all dense; PaliGemma ties by its outer key.
TEST(HfImport, OlderReadersFollowTheirClassesAliasesAndRouters) {
  const auto count = [](const std::string& text) {
    const HfImport r = import_hf_config_text(text);
    EXPECT_TRUE(r.errors.empty()) << text << ": " << (r.errors.empty() ? "" : r.errors[0].message);
    return r.errors.empty() ? count_parameters(r.model).total_count.value() : -1;
  };
  const std::string small = R"("vocab_size":100,"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":2,)"
                            R"("num_key_value_heads":2,"intermediate_size":32,"num_experts_per_tok":2,)";
  const auto file = [&](const std::string& type, const std::string& rest) {
    return "{\"model_type\":\"" + type + "\"," + small + rest + "}";
  };
  for (const char* type : {"mixtral", "gpt_oss"}) {
    EXPECT_EQ(count(file(type, R"("num_experts":4,"num_local_experts":8)")), count(file(type, R"("num_local_experts":4)"))) << type;
  }
  EXPECT_EQ(count(file("glm4_moe", R"("num_local_experts":4,"n_routed_experts":8,"moe_intermediate_size":16)")),
            count(file("glm4_moe", R"("n_routed_experts":4,"moe_intermediate_size":16)")));
  EXPECT_EQ(count(file("olmoe", R"("num_local_experts":4,"num_experts":8)")), count(file("olmoe", R"("num_experts":4)")));
  EXPECT_EQ(count(file("qwen3_moe", R"("num_local_experts":4,"num_experts":8,"moe_intermediate_size":16)")),
            count(file("qwen3_moe", R"("num_experts":4,"moe_intermediate_size":16)")));
  // DeepSeek: the bias by class, not by topk_method; first_k_dense_replace held to the layers.
  const std::string mla = R"("kv_lora_rank":8,"qk_rope_head_dim":8,"qk_nope_head_dim":8,"v_head_dim":8,)"
                          R"("n_routed_experts":4,"n_shared_experts":1,"q_lora_rank":16,"moe_intermediate_size":16,)"
                          R"("first_k_dense_replace":0)";
  EXPECT_EQ(count(file("deepseek_v3", mla)) - count(file("deepseek_v3", mla + R"(,"topk_method":"noaux_tc")")), 0);
  EXPECT_EQ(count(file("deepseek_v2", mla + R"(,"topk_method":"noaux_tc")")), count(file("deepseek_v2", mla)));
  EXPECT_EQ(count(file("deepseek_v3", mla)) - count(file("deepseek_v2", mla)), 2 * 4);  // V3's biases, two MoE layers
  const HfImport deep = import_hf_config_text(file("deepseek_v3", R"("kv_lora_rank":8,"qk_rope_head_dim":8,"qk_nope_head_dim":8,"v_head_dim":8)"));
  ASSERT_TRUE(deep.errors.empty()) << deep.errors[0].message;
  EXPECT_EQ(deep.model.first_k_dense_replace, 2);  // DeepseekV3Config's 3, over a two-layer model: both dense
  // The latent attention's sizes a file leaves out take the classes' defaults too (transformers 5.24:
  // 415,496,448 and 295,362,816; V3's one MoE layer's 256 correction biases counted).
  EXPECT_EQ(count(R"({"model_type":"deepseek_v3","vocab_size":1000,"hidden_size":256,"num_hidden_layers":4,)"
                  R"("num_attention_heads":4,"intermediate_size":512})"),
            415'496'448 + 256);
  EXPECT_EQ(count(R"({"model_type":"deepseek_v2","vocab_size":1000,"hidden_size":256,"num_hidden_layers":4,)"
                  R"("num_attention_heads":4,"intermediate_size":512,"num_experts_per_tok":2})"),
            295'362'816);
  // A class default that does not divide the file's heads is named as the missing key.
  const HfImport kv = import_hf_config_text(R"({"model_type":"mistral","vocab_size":100,"hidden_size":60,)"
                                            R"("num_hidden_layers":1,"num_attention_heads":6,"intermediate_size":32})");
  ASSERT_FALSE(kv.errors.empty());
  EXPECT_EQ(kv.errors[0].field, "num_key_value_heads");
  EXPECT_NE(kv.errors[0].message.find("is missing"), std::string::npos) << kv.errors[0].message;
  // attention_bias and mlp_bias only where the class has them: Llama's both, Qwen3's the attention's;
  // Mistral's, Mixtral's and Qwen2's (q, k and v always biased, o never) neither.
  const std::string dense = R"("vocab_size":100,"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":2,)"
                            R"("num_key_value_heads":2,"intermediate_size":32)";
  const auto biased = [&](const std::string& type, const std::string& keys) {
    return count("{\"model_type\":\"" + type + "\"," + dense + keys + "}");
  };
  EXPECT_GT(biased("llama", R"(,"attention_bias":true)"), biased("llama", ""));
  EXPECT_GT(biased("llama", R"(,"mlp_bias":true)"), biased("llama", ""));
  EXPECT_GT(biased("qwen3", R"(,"attention_bias":true)"), biased("qwen3", ""));
  EXPECT_EQ(biased("qwen3", R"(,"mlp_bias":true)"), biased("qwen3", ""));
  for (const char* type : {"mistral", "qwen2", "exaone4", "starcoder2"}) {
    EXPECT_EQ(biased(type, R"(,"attention_bias":true,"mlp_bias":true)"), biased(type, "")) << type;
  }
  EXPECT_EQ(import_hf_config_text(file("deepseek_v2", mla + R"(,"mlp_bias":true)")).errors.at(0).field, "mlp_bias");
  // PaliGemma: the outer key, else the text config's false, else true.
  const std::string gemma = R"("text_config":{"model_type":"gemma","vocab_size":100,"hidden_size":64,)"
                            R"("num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":32,)"
                            R"("intermediate_size":32)";
  const std::int64_t tied = count(R"({"model_type":"paligemma",)" + gemma + "}}");
  EXPECT_EQ(count(R"({"model_type":"paligemma","tie_word_embeddings":true,)" + gemma + R"(,"tie_word_embeddings":false}})"), tied);
  EXPECT_EQ(count(R"({"model_type":"paligemma",)" + gemma + R"(,"tie_word_embeddings":false}})"), tied + 100 * 64);
  EXPECT_EQ(count(R"({"model_type":"paligemma","tie_word_embeddings":false,)" + gemma + R"(,"tie_word_embeddings":true}})"),
            tied + 100 * 64);
}

// PaliGemma's SigLIP tower and one-linear projector, counted as transformers 5.24's
// PaliGemmaForConditionalGeneration builds them on the meta device: PaliGemma 1 at 224 pixels,
// PaliGemma 2 (a Gemma 2 language model) at 448 and with the pooling head on, and PaliGemmaConfig's
// own defaults (its vision sub-config's MLP of 4096, no vision_config in the file). Images through
// it are refused by name; a projection_dim other than the language model's width leaves it out.
TEST(HfImport, PaliGemmaCountsItsSiglipTowerAndProjector) {
  const std::string pg1_text = R"("text_config":{"model_type":"gemma","hidden_size":2048,"intermediate_size":16384,)"
                               R"("num_hidden_layers":18,"num_attention_heads":8,"num_key_value_heads":1,"vocab_size":257216})";
  const std::string siglip = R"({"model_type":"siglip_vision_model","hidden_size":1152,"intermediate_size":4304,)"
                             R"("num_hidden_layers":27,"num_attention_heads":16,"patch_size":14,)";
  const std::string pg2_text = R"("text_config":{"model_type":"gemma2","hidden_size":2304,"intermediate_size":9216,)"
                               R"("num_hidden_layers":26,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,)"
                               R"("vocab_size":257216})";
  const struct { std::string file; std::int64_t text, vision; } cases[] = {
      {R"({"model_type":"paligemma","projection_dim":2048,"vision_config":)" + siglip +
           R"("image_size":224,"vision_use_head":false},)" + pg1_text + "}",
       2'508'662'784, 414'803'696},
      {R"({"model_type":"paligemma","projection_dim":2304,"vision_config":)" + siglip +
           R"("image_size":448,"vision_use_head":false},)" + pg2_text + "}",
       2'617'143'552, 415'983'600},
      {R"({"model_type":"paligemma","projection_dim":2304,"vision_config":)" + siglip +
           R"("image_size":224,"vision_use_head":true},)" + pg2_text + "}",
       2'617'143'552, 430'337'216},
      {R"({"model_type":"paligemma","text_config":{"model_type":"gemma","hidden_size":2048,"intermediate_size":16384,)"
       R"("num_hidden_layers":18,"num_attention_heads":8,"num_key_value_heads":1,"vocab_size":257152}})",
       2'508'531'712, 401'858'816},
  };
  for (const auto& c : cases) {
    const HfImport r = import_hf_config_text(c.file);
    ASSERT_TRUE(r.errors.empty()) << r.errors[0].message;
    EXPECT_EQ(r.model.vision_type, VisionTower::kPaliGemma);
    const ParameterCount counts = count_parameters(r.model);
    EXPECT_EQ(counts.total_count.value(), c.text) << c.file;
    EXPECT_EQ(counts.vision_count.value(), c.vision) << c.file;
  }
  // Images are refused naming the field; a tower whose projection does not fit is left out, named.
  Config c = default_config();
  c.model = import_hf_config_text(cases[0].file).model;
  c.training.images_per_sample = 1;
  const Estimate e = estimate(c);
  ASSERT_FALSE(e.errors.empty());
  EXPECT_EQ(e.errors[0].field, "training.images_per_sample");
  // A projection_dim other than the language model's width is counted as the class builds it, named.
  const HfImport wide = import_hf_config_text(R"({"model_type":"paligemma","projection_dim":4096,"vision_config":)" + siglip +
                                              R"("image_size":224,"vision_use_head":false},)" + pg1_text + "}");
  ASSERT_TRUE(wide.errors.empty());
  EXPECT_EQ(count_parameters(wide.model).vision_count.value(), 417'165'040);
  EXPECT_TRUE(std::any_of(wide.warnings.begin(), wide.warnings.end(),
                          [](const Issue& w) { return w.field == "projection_dim"; }));
  // A vision_config in the file is SiglipVisionConfig(**it): SigLIP's own defaults for what it leaves
  // out (its head on, 12 layers of 768 at patch 16), PaliGemma's only when it is absent.
  const auto vision = [&](const std::string& config) {
    const HfImport r = import_hf_config_text(R"({"model_type":"paligemma","vision_config":)" + config + "," + pg1_text + "}");
    EXPECT_TRUE(r.errors.empty());
    return count_parameters(r.model).vision_count.value();
  };
  EXPECT_EQ(vision("{}"), 94'459'136);
  EXPECT_EQ(vision(siglip + R"("image_size":224})"), 430'042'048);
}

// A wrapper whose file has no text_config builds its default text model (transformers 5.24,
// AutoConfig.for_model(model_type=...) on the meta device): Mistral3Config's and PaliGemmaConfig's
// text sub-configs are their init_kwargs (Mistral Small 3.1's, PaliGemma 3B's), the others their text
// class's defaults; the towers as memfit counts them where it does.
TEST(HfImport, AWrapperWithoutTextConfigBuildsItsDefaultTextModel) {
  const struct { const char* type; std::int64_t text, vision; } cases[] = {
      {"gemma3", 2'628'658'432, 94'654'464},        {"mistral3", 22'901'314'560, 438'958'080},
      {"llava", 6'738'415'616, 324'487'168},        {"paligemma", 2'508'531'712, 401'858'816},
      {"llama4", 107'769'861'120, 0},               {"qwen3_5", 8'953'803'264, 0},
      {"qwen3_5_moe", 34'660'610'688, 0},           {"qwen3_vl", 12'049'461'248, 566'949'104},
      {"qwen3_vl_moe", 13'485'121'536, 566'949'104},
  };
  for (const auto& c : cases) {
    for (const char* text : {"", ",\"text_config\":null"}) {
      const HfImport r = import_hf_config_text(std::string("{\"model_type\":\"") + c.type + "\"" + text + "}");
      ASSERT_TRUE(r.errors.empty()) << c.type << ": " << r.errors[0].field << " " << r.errors[0].message;
      const ParameterCount counts = count_parameters(r.model);
      EXPECT_EQ(counts.total_count.value(), c.text) << c.type;
      EXPECT_EQ(counts.vision_count.value(), c.vision) << c.type;
    }
  }
  // A text_config that is there but empty is its text class's defaults: PaliGemma's GemmaConfig.
  const HfImport empty = import_hf_config_text(R"({"model_type":"paligemma","text_config":{}})");
  ASSERT_TRUE(empty.errors.empty()) << empty.errors[0].message;
  EXPECT_EQ(count_parameters(empty.model).total_count.value(), 8'537'680'896);
}

// Phi-3.5-MoE's shapes through transformers 5.24's PhimoeForCausalLM (the meta device), with and
// without its biased attention and head; its stacked experts are not in PEFT's mapping.
TEST(HfImport, PhimoeIsMixtralsBlockWithLayerNormsAndBiases) {
  const std::string shapes = R"("vocab_size":32064,"hidden_size":4096,"intermediate_size":6400,"num_hidden_layers":32,)"
                             R"("num_attention_heads":32,"num_key_value_heads":8,"num_local_experts":16,)"
                             R"("num_experts_per_tok":2,"max_position_embeddings":131072)";
  const HfImport plain = import_hf_config_text(R"({"model_type":"phimoe",)" + shapes + "}");
  const HfImport biased =
      import_hf_config_text(R"({"model_type":"phimoe","attention_bias":true,"lm_head_bias":true,)" + shapes + "}");
  ASSERT_TRUE(plain.errors.empty() && biased.errors.empty());
  EXPECT_EQ(count_parameters(plain.model).total_count.value(), 41'872'793'600);
  EXPECT_EQ(count_parameters(biased.model).total_count.value(), 41'873'153'344);
  EXPECT_EQ(biased.model.norm, NormKind::kLayerNorm);
  EXPECT_EQ(biased.model.moe_input_jitter, 0);
  // sparsemixer routes two experts whatever top_k says; input_jitter_noise multiplies the mixture's
  // input twice in training, each keeping its noise (measured: families.py, phimoe_jitter).
  const HfImport three = import_hf_config_text(R"({"model_type":"phimoe","input_jitter_noise":0.01,)" +
                                               shapes.substr(0, shapes.find("\"num_experts_per_tok\"")) +
                                               R"("num_experts_per_tok":3,"max_position_embeddings":131072})");
  ASSERT_TRUE(three.errors.empty()) << three.errors[0].message;
  EXPECT_EQ(three.model.num_experts_per_tok, 2);
  EXPECT_EQ(three.model.moe_input_jitter, 2);
  EXPECT_TRUE(std::any_of(three.warnings.begin(), three.warnings.end(),
                          [](const Issue& w) { return w.field == "num_experts_per_tok"; }));
  Config jitter = default_config();
  jitter.model = three.model;
  Config still = jitter;
  still.model.moe_input_jitter = 0;
  jitter.training.precision = still.training.precision = Precision::kFp32;
  // Two T x H fp32 noises in each of the 32 layers (micro-batch x sequence tokens).
  const Count tokens = Count(jitter.training.micro_batch_size * jitter.training.seq_len);
  EXPECT_EQ((estimate(jitter).breakdown.activations - estimate(still).breakdown.activations).value(),
            (tokens * 4096 * 4 * 2 * 32).value());
  Config c = default_config();
  c.model = biased.model;
  c.training.finetune.method = FinetuneMethod::kLora;
  EXPECT_EQ(expert_targeting(c), ExpertTargeting::kUnmapped);
}

// MiniMax-M2 as transformers 5.24's MiniMaxM2ForCausalLM builds it: rotary_dim becomes
// partial_rotary_factor (an explicit factor wins; neither: the whole head), the query and key norms
// are always there, and the remote code's MTP modules and shared expert are not built.
TEST(HfImport, MiniMaxM2RotatesRotaryDimOfEachHead) {
  const std::string file = read_fixture("MiniMaxAI__MiniMax-M2.json");
  const HfImport m2 = import_hf_config_text(file);
  ASSERT_TRUE(m2.errors.empty());
  EXPECT_EQ(m2.model.rotary_dim, 64);
  EXPECT_EQ(m2.model.qk_norm, QkNorm::kFullWidth);
  EXPECT_TRUE(m2.model.router_bias);
  EXPECT_EQ(m2.model.moe_intermediate_size, 1536);
  EXPECT_EQ(m2.model.num_shared_experts, 0);
  EXPECT_TRUE(std::any_of(m2.warnings.begin(), m2.warnings.end(),
                          [](const Issue& w) { return w.field == "num_mtp_modules"; }));
  const HfImport whole = import_hf_config_text(R"({"model_type": "minimax_m2"})");
  ASSERT_TRUE(whole.errors.empty());
  EXPECT_EQ(whole.model.rotary_dim, 0);  // the whole head
  EXPECT_EQ(count_parameters(whole.model).total_count.value(), 228'689'748'992 + 62 * 256);
  const HfImport factor = import_hf_config_text(
      R"({"model_type": "minimax_m2", "rotary_dim": 64, "rope_parameters": {"partial_rotary_factor": 0.25}})");
  ASSERT_TRUE(factor.errors.empty());
  EXPECT_EQ(factor.model.rotary_dim, 32);
  const HfImport too_wide = import_hf_config_text(R"({"model_type": "minimax_m2", "rotary_dim": 129})");
  ASSERT_FALSE(too_wide.errors.empty());
  EXPECT_EQ(too_wide.errors[0].field, "rotary_dim");
  const HfImport shared = import_hf_config_text(R"({"model_type": "minimax_m2", "shared_intermediate_size": 512})");
  ASSERT_TRUE(shared.errors.empty());
  EXPECT_EQ(shared.model.num_shared_experts, 0);
  EXPECT_TRUE(std::any_of(shared.warnings.begin(), shared.warnings.end(),
                          [](const Issue& w) { return w.field == "shared_intermediate_size"; }));
}

// GLM-4.7-Flash's dense layers are mlp_layer_types' (transformers 5.24's Glm4MoeLiteConfig has no
// first_k_dense_replace: absent, the first layer is dense and the rest sparse), as the class builds
// them on the meta device.
TEST(HfImport, Glm4MoeLiteReadsItsDenseLayersFromMlpLayerTypes) {
  const std::string flash = read_fixture("zai-org__GLM-4.7-Flash.json");
  const auto with = [&](const std::string& key_value) {
    std::string text = flash;
    text.insert(text.find('{') + 1, key_value + ",");
    return import_hf_config_text(text);
  };
  const HfImport plain = import_hf_config_text(flash);
  ASSERT_TRUE(plain.errors.empty());
  EXPECT_EQ(plain.model.first_k_dense_replace, 1);
  EXPECT_TRUE(plain.model.router_bias);
  EXPECT_EQ(plain.model.attention_type, AttentionType::kMla);
  // Three leading dense layers: 28,842,124,032 in transformers, and 44 correction biases.
  std::string three = "\"mlp_layer_types\": [\"dense\", \"dense\", \"dense\"";
  for (int i = 0; i < 44; ++i) three += ", \"sparse\"";
  const HfImport leading = with(three + "]");
  ASSERT_TRUE(leading.errors.empty()) << leading.errors[0].message;
  EXPECT_EQ(count_parameters(leading.model).total_count.value(), 28'842'124'032 + 44 * 64);
  EXPECT_FALSE(leading.model.moe_layers_interleaved);
  // A dense layer after a sparse one: the same counts, placed apart.
  std::string late = "\"mlp_layer_types\": [\"sparse\", \"dense\", \"dense\", \"dense\"";
  for (int i = 0; i < 43; ++i) late += ", \"sparse\"";
  const HfImport interleaved = with(late + "]");
  ASSERT_TRUE(interleaved.errors.empty());
  EXPECT_EQ(interleaved.model.first_k_dense_replace, 3);
  EXPECT_TRUE(interleaved.model.moe_layers_interleaved);
  // A list of the wrong length or with another word is named.
  const HfImport short_list = with("\"mlp_layer_types\": [\"dense\"]");
  ASSERT_FALSE(short_list.errors.empty());
  EXPECT_EQ(short_list.errors[0].field, "mlp_layer_types");
  // first_k_dense_replace is not read by the class: a warning, the counts unchanged.
  std::string k3 = flash;
  k3.replace(k3.find("\"first_k_dense_replace\": 1"), 26, "\"first_k_dense_replace\": 3");
  const HfImport ignored = import_hf_config_text(k3);
  ASSERT_TRUE(ignored.errors.empty());
  EXPECT_EQ(ignored.model.first_k_dense_replace, 1);
  EXPECT_TRUE(std::any_of(ignored.warnings.begin(), ignored.warnings.end(),
                          [](const Issue& w) { return w.field == "first_k_dense_replace"; }));
}

// Mistral 4 (transformers 5.24's Mistral4ForCausalLM, Mistral3ForConditionalGeneration on the meta
// device): every key the file leaves out takes Mistral4Config's default, which are Mistral Small 4's;
// under Mistral 3's wrapper the Pixtral tower is counted apart (119,401,483,264 in all); PEFT's
// module names do not reach its stacked experts (not in PEFT's conversion table).
TEST(HfImport, Mistral4IsDeepSeekV3sBlockUnderASoftmaxRouter) {
  const HfImport small4 = import_hf_config_text(read_fixture("mistralai__Mistral-Small-4-119B-2603.json"));
  ASSERT_TRUE(small4.errors.empty()) << small4.errors[0].field << ": " << small4.errors[0].message;
  const ModelSpec& m = small4.model;
  EXPECT_EQ(m.model_type, "mistral4");
  EXPECT_EQ(m.multimodal_type, "mistral3");
  EXPECT_EQ(m.attention_type, AttentionType::kMla);
  EXPECT_FALSE(m.router_bias);
  EXPECT_EQ(m.num_experts, 128);
  EXPECT_EQ(m.num_experts_per_tok, 4);
  EXPECT_EQ(m.num_shared_experts, 1);
  EXPECT_EQ(m.first_k_dense_replace, 0);
  const ParameterCount counts = count_parameters(m);
  EXPECT_EQ(counts.total_count.value() + counts.vision_count.value(), 119'401'483'264);
  EXPECT_EQ(counts.vision_count.value(), 428'656'640);
  // A bare file: the class's defaults.
  const HfImport bare = import_hf_config_text(R"({"model_type": "mistral4"})");
  ASSERT_TRUE(bare.errors.empty()) << bare.errors[0].field << ": " << bare.errors[0].message;
  EXPECT_EQ(count_parameters(bare.model).total_count.value(), 118'972'826'624);
  EXPECT_EQ(bare.model.max_position_embeddings, 1'048'576);
  EXPECT_EQ(bare.model.q_lora_rank, 1024);
  // q_lora_rank null: one query projection (4096 x 32 x 128) instead of the two (4096 x 1024 + 1024
  // + 1024 x 4096) in each of the 36 layers.
  const HfImport no_q_rank = import_hf_config_text(R"({"model_type": "mistral4", "q_lora_rank": null})");
  ASSERT_TRUE(no_q_rank.errors.empty());
  EXPECT_EQ(count_parameters(no_q_rank.model).total_count.value(),
            118'972'826'624 + 36 * (4096LL * 4096 - 2 * 4096LL * 1024 - 1024));
  // A bad size is named.
  const HfImport bad = import_hf_config_text(R"({"model_type": "mistral4", "kv_lora_rank": 0})");
  ASSERT_FALSE(bad.errors.empty());
  EXPECT_EQ(bad.errors[0].field, "kv_lora_rank");
  // LoRA on gate, up and down reaches the shared experts only.
  Config c = default_config();
  c.model = m;
  c.training.finetune.method = FinetuneMethod::kLora;
  EXPECT_EQ(expert_targeting(c), ExpertTargeting::kUnmapped);
}

TEST(HfImport, FamilyLayouts) {
  const auto model = [](const std::string& file) { return import_hf_config_text(read_fixture(file)).model; };
  // gpt-oss: a sink per head, biases everywhere, every MLP 32 clamped-SwiGLU experts with biases
  // under a biased router; no SDPA path (eager attention by default); the model card's 3.61B
  // active parameters without the embedding.
  const HfImport oss = import_hf_config_text(read_fixture("openai__gpt-oss-20b.json"));
  EXPECT_TRUE(oss.model.attention_sinks);
  EXPECT_TRUE(oss.model.attention_bias && oss.model.mlp_bias && oss.model.router_bias);
  EXPECT_EQ(oss.model.num_experts, 32);
  EXPECT_EQ(oss.model.num_experts_per_tok, 4);
  EXPECT_EQ(oss.model.hidden_act, HiddenAct::kClampedSwiglu);
  EXPECT_FALSE(oss.model.tie_word_embeddings);
  EXPECT_EQ(class_reference(oss.model.model_type).attention, AttentionImpl::kEager);
  const ParameterCount oss_count = count_parameters(oss.model);
  EXPECT_EQ(oss_count.active_count.value() - oss.model.vocab_size * oss.model.hidden_size, 3'608'307'264);
  // BLOOM: ALiBi (no position table), a LayerNorm on the embeddings, a tied head.
  const ModelSpec bloom = model("bigscience__bloom-560m.json");
  EXPECT_EQ(bloom.position_embedding, PositionKind::kNone);
  EXPECT_TRUE(bloom.embedding_norm);
  EXPECT_TRUE(bloom.tie_word_embeddings);
  // SantaCoder: multi-query attention.
  EXPECT_EQ(model("bigcode__gpt_bigcode-santacoder.json").kv_heads(), 1);
  // GPT-J and Cohere: one norm feeding attention and the MLP in parallel; GPT-J's head has a bias.
  const ModelSpec gptj = model("EleutherAI__gpt-j-6b.json");
  EXPECT_EQ(gptj.block, BlockLayout::kParallel);
  EXPECT_EQ(gptj.norms_per_block, 1);
  EXPECT_TRUE(gptj.lm_head_bias);
  EXPECT_FALSE(gptj.attention_bias);
  const ModelSpec cohere = model("CohereForAI__aya-23-8B.json");
  EXPECT_EQ(cohere.block, BlockLayout::kParallel);
  EXPECT_FALSE(cohere.norm_bias);
  // Gemma 3: four norms a block and a norm on each query and key head.
  const ModelSpec gemma3 = model("google__gemma-3-1b-it.json");
  EXPECT_EQ(gemma3.norms_per_block, 4);
  EXPECT_EQ(gemma3.qk_norm, QkNorm::kPerHead);
  // Granite and SmolLM3 are Llama's layout (tied heads here); Seed-OSS has biases on q, k and v
  // only and drops out on both residual branches.
  const ModelSpec granite = model("ibm-granite__granite-3.3-8b-instruct.json");
  EXPECT_TRUE(granite.tie_word_embeddings);
  EXPECT_EQ(granite.norms_per_block, 2);
  EXPECT_TRUE(model("HuggingFaceTB__SmolLM3-3B.json").tie_word_embeddings);
  const ModelSpec seed = model("ByteDance-Seed__Seed-OSS-36B-Instruct.json");
  EXPECT_TRUE(seed.qkv_bias);
  EXPECT_FALSE(seed.attention_bias);
  EXPECT_TRUE(seed.residual_dropout);
  // EXAONE 4: norms after attention and the MLP only, a norm on each query and key head, Llama's
  // RMSNorm kernel (the weight on the 16-bit normalised x), not OLMo-2's.
  const HfImport exaone = import_hf_config_text(read_fixture("LGAI-EXAONE__EXAONE-4.0-1.2B.json"));
  EXPECT_FALSE(exaone.model.input_norm);
  EXPECT_EQ(exaone.model.qk_norm, QkNorm::kPerHead);
  EXPECT_NE(class_reference(exaone.model.model_type).norm_kernel, NormKernel::kEagerFp32);
  // OLMo-3 is read as OLMo-2 (its sliding-window layers change nothing memfit counts).
  std::string olmo3 = read_fixture("allenai__OLMo-2-1124-7B.json");
  const std::string olmo2_type = "\"model_type\": \"olmo2\"";
  olmo3.replace(olmo3.find(olmo2_type), olmo2_type.size(), "\"model_type\": \"olmo3\"");
  const HfImport o3 = import_hf_config_text(olmo3);
  ASSERT_TRUE(o3.errors.empty());
  EXPECT_EQ(count_parameters(o3.model).total_count.value(), count_of("allenai__OLMo-2-1124-7B.json"));
  EXPECT_EQ(class_reference(o3.model.model_type).norm_kernel, NormKernel::kEagerFp32);
  // GLM-4.5: biases on q, k and v only, per-head query/key norms, DeepSeek-V3's mixture (3 dense
  // layers, 160 routed experts and a shared one, 8 per token, the correction bias).
  const HfImport glm = import_hf_config_text(read_fixture("zai-org__GLM-4.5.json"));
  ASSERT_TRUE(glm.errors.empty());
  EXPECT_TRUE(glm.model.qkv_bias && !glm.model.attention_bias && glm.model.router_bias);
  EXPECT_EQ(glm.model.qk_norm, QkNorm::kPerHead);
  EXPECT_EQ(glm.model.num_experts, 160);
  EXPECT_EQ(glm.model.num_experts_per_tok, 8);
  EXPECT_EQ(glm.model.num_shared_experts, 1);
  EXPECT_EQ(glm.model.first_k_dense_replace, 3);
  ASSERT_FALSE(glm.warnings.empty());
  EXPECT_EQ(glm.warnings[0].field, "num_nextn_predict_layers");
  // OLMoE: OLMo-2's full-width query/key norms, 64 experts of intermediate_size, 8 per token.
  const ModelSpec olmoe = model("allenai__OLMoE-1B-7B-0125-Instruct.json");
  EXPECT_EQ(olmoe.qk_norm, QkNorm::kFullWidth);
  EXPECT_EQ(olmoe.num_experts, 64);
  EXPECT_EQ(olmoe.moe_intermediate_size, olmoe.intermediate_size);
  // ERNIE 4.5: each layer's own fp32 rotary tables, a tied head.
  const ModelSpec ernie = model("baidu__ERNIE-4.5-0.3B-PT.json");
  EXPECT_TRUE(ernie.rotary_per_layer && ernie.tie_word_embeddings);
  // ERNIE 4.5's mixture: layers moe_layer_start_index..moe_layer_end_index at moe_layer_interval are
  // sparse; Ernie4_5_MoeConfig's defaults (21B-A3B: 64 experts, 6 per token, two shared).
  const auto ernie_moe = [](const std::string& extra) {
    return import_hf_config_text(R"({"model_type":"ernie4_5_moe","vocab_size":1000,"hidden_size":64,)"
                                 R"("num_hidden_layers":10,"num_attention_heads":4,"intermediate_size":128)" +
                                 extra + "}");
  };
  const HfImport e21 = ernie_moe("");
  ASSERT_TRUE(e21.errors.empty());
  EXPECT_EQ(e21.model.first_k_dense_replace, 1);
  EXPECT_EQ(e21.model.num_experts, 64);
  EXPECT_EQ(e21.model.num_shared_experts, 2);
  EXPECT_EQ(ernie_moe(R"(,"moe_layer_interval":2,"moe_layer_end_index":6)").model.first_k_dense_replace, 7);
  EXPECT_FALSE(ernie_moe(R"(,"moe_layer_start_index":9,"moe_layer_interval":4)").errors.empty());
  const HfImport biased = ernie_moe(R"(,"use_bias":true)");
  ASSERT_FALSE(biased.errors.empty());
  EXPECT_EQ(biased.errors[0].field, "use_bias");
  // Llama 4 Maverick: MoE every other layer (24 of 48) beside dense MLPs of intermediate_size_mlp,
  // 128 experts, no query/key norm; the class runs every expert on every token.
  const HfImport maverick = import_hf_config_text(read_fixture("meta-llama__Llama-4-Maverick-17B-128E-Instruct.json"));
  ASSERT_TRUE(maverick.errors.empty()) << maverick.errors[0].message;
  EXPECT_EQ(maverick.model.first_k_dense_replace, 24);
  EXPECT_EQ(maverick.model.num_experts, 128);
  EXPECT_EQ(maverick.model.intermediate_size, 16384);
  EXPECT_EQ(maverick.model.moe_intermediate_size, 8192);
  EXPECT_EQ(maverick.model.qk_norm, QkNorm::kNone);
  EXPECT_EQ(class_reference(maverick.model.model_type).moe_dispatch, MoeDispatch::kDense);
  // What memfit cannot count the way the class builds it is refused by name.
  const auto error_of = [](const std::string& text) {
    const HfImport r = import_hf_config_text(text);
    return r.errors.empty() ? std::string() : r.errors[0].field + ": " + r.errors[0].message;
  };
  // Classes with another family's weights, on that family's file (a test shape): Cohere2 on
  // Aya-23-8B's (Command R7B's shapes), Ministral and Ministral 3 on Mistral-7B-v0.3's, counted as
  // transformers 5.24's classes count them (tools/frameworks/families.py).
  const struct { const char* fixture; const char* from; const char* to; std::int64_t count; } as_class[] = {
      {"CohereForAI__aya-23-8B.json", "cohere", "cohere2", 8'028'033'024},
      {"mistralai__Mistral-7B-v0.3.json", "mistral", "ministral", 7'248'023'552},
      {"mistralai__Mistral-7B-v0.3.json", "mistral", "ministral3", 7'248'023'552},
      // Arcee's plain up / down MLP on Llama-2-7B's shapes.
      {"meta-llama__Llama-2-7b-hf.json", "llama", "arcee", 5'295'575'040},
      // Nemotron's LayerNorm1P norms (a weight and a bias each) and plain MLP on the same shapes.
      {"meta-llama__Llama-2-7b-hf.json", "llama", "nemotron", 5'295'841'280},
  };
  for (const auto& c : as_class) {
    std::string text = read_fixture(c.fixture);
    const std::string key = std::string("\"model_type\": \"") + c.from + "\"";
    ASSERT_NE(text.find(key), std::string::npos) << c.fixture;
    text.replace(text.find(key), key.size(), std::string("\"model_type\": \"") + c.to + "\"");
    const HfImport imported = import_hf_config_text(text);
    ASSERT_TRUE(imported.errors.empty()) << c.to << ": " << imported.errors[0].message;
    EXPECT_EQ(count_parameters(imported.model).total_count.value(), c.count) << c.to;
  }
  // Apertus on the same shapes with xIELU: its two learned scalars in each of the 32 MLPs.
  std::string apertus = read_fixture("meta-llama__Llama-2-7b-hf.json");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"\"model_type\": \"llama\"", "\"model_type\": \"apertus\""},
                                 {"\"hidden_act\": \"silu\"", "\"hidden_act\": \"xielu\""}}) {
    apertus.replace(apertus.find(from), from.size(), to);
  }
  const HfImport apertus_import = import_hf_config_text(apertus);
  ASSERT_TRUE(apertus_import.errors.empty()) << apertus_import.errors[0].message;
  EXPECT_EQ(count_parameters(apertus_import.model).total_count.value(), 5'295'583'296);
  EXPECT_EQ(apertus_import.model.qk_norm, QkNorm::kPerHead);
  // OLMo-1: LayerNorms without weight or bias (1,176,764,416 for OLMo-1B, as a training log of
  // it reports: tests/fixtures/hf/SOURCES.md); clip_qkv a number or null.
  const HfImport olmo = import_hf_config_text(read_fixture("allenai__OLMo-1B-hf.json"));
  ASSERT_TRUE(olmo.errors.empty()) << olmo.errors[0].message;
  EXPECT_EQ(count_parameters(olmo.model).total_count.value(), 1'176'764'416);
  EXPECT_FALSE(olmo.model.norm_weight);
  EXPECT_FALSE(olmo.model.clip_qkv);
  std::string olmo_clip = read_fixture("allenai__OLMo-1B-hf.json");
  const std::string no_clip = "\"clip_qkv\": null";
  olmo_clip.replace(olmo_clip.find(no_clip), no_clip.size(), "\"clip_qkv\": 8.0");
  EXPECT_TRUE(import_hf_config_text(olmo_clip).model.clip_qkv);
  olmo_clip.replace(olmo_clip.find("8.0"), 3, "\"8\"");
  EXPECT_NE(error_of(olmo_clip).find("clip_qkv: must be a number or null"), std::string::npos) << error_of(olmo_clip);
  std::string cohere_plus = read_fixture("CohereForAI__aya-23-8B.json");
  const std::string off = "\"use_qk_norm\": false";
  cohere_plus.replace(cohere_plus.find(off), off.size(), "\"use_qk_norm\": true");
  EXPECT_NE(error_of(cohere_plus).find("use_qk_norm: true"), std::string::npos) << error_of(cohere_plus);
  std::string seed_o_only = read_fixture("ByteDance-Seed__Seed-OSS-36B-Instruct.json");
  const std::string qkv_on = "\"attention_bias\": true";
  seed_o_only.replace(seed_o_only.find(qkv_on), qkv_on.size(), "\"attention_bias\": false");
  const std::string o_off = "\"attention_out_bias\": false";
  seed_o_only.replace(seed_o_only.find(o_off), o_off.size(), "\"attention_out_bias\": true");
  EXPECT_NE(error_of(seed_o_only).find("attention_out_bias"), std::string::npos) << error_of(seed_o_only);
  EXPECT_NE(error_of(R"({"model_type":"stablelm","vocab_size":10,"hidden_size":8,"num_hidden_layers":1,)"
                     R"("num_attention_heads":2,"num_key_value_heads":2,"intermediate_size":16,"qk_layernorm":true})")
                .find("qk_layernorm"),
            std::string::npos);
}

TEST(Parameters, FamilyStructure) {
  // Falcon-7B: one LayerNorm per parallel block, multi-query attention.
  const ModelSpec falcon = *preset_model("falcon-7b");
  EXPECT_EQ(falcon.norms_per_block, 1);
  EXPECT_EQ(falcon.kv_heads(), 1);
  // OPT's learned positions carry 2 extra rows.
  const ParameterCount opt = count_parameters(*preset_model("opt-125m"));
  EXPECT_EQ(opt.component_count(Component::kPositionEmbedding).value(), (2048 + 2) * 768);
  // OLMo-2 norms queries and keys over the full projection width.
  EXPECT_EQ(preset_model("olmo-2-7b")->qk_norm, QkNorm::kFullWidth);
  // Gemma 2: four norms per block.
  EXPECT_EQ(preset_model("gemma-2-9b")->norms_per_block, 4);
}

TEST(HfImport, HostileInputsGiveNamedErrors) {
  const auto first_error = [](const std::string& text) {
    const HfImport r = import_hf_config_text(text);
    std::string all;  // every error, so each check finds its own among them
    for (const Issue& i : r.errors) all += i.field + ": " + i.message + "\n";
    return all;
  };
  EXPECT_NE(first_error("{not json").find("config.json"), std::string::npos);
  EXPECT_NE(first_error("[]").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(first_error("{}").find("model_type: is missing"), std::string::npos);
  EXPECT_NE(first_error(R"({"model_type":"whisper"})").find("\"whisper\" is not supported; supported: gpt2"), std::string::npos);
  EXPECT_NE(first_error(R"({"model_type":"llama","hidden_size":"4096"})").find("hidden_size: must be an integer"),
            std::string::npos);
  const std::string base = R"("model_type":"llama","vocab_size":100,"intermediate_size":64,"num_hidden_layers":2)";
  EXPECT_NE(first_error("{" + base + R"(,"hidden_size":-5,"num_attention_heads":4})").find("hidden_size: must be"),
            std::string::npos);
  EXPECT_NE(first_error("{" + base + R"(,"hidden_size":1e300,"num_attention_heads":4})").find("hidden_size"),
            std::string::npos);
  EXPECT_NE(first_error("{" + base + R"(,"hidden_size":30,"num_attention_heads":4})")
                .find("num_attention_heads: must divide hidden_size (30)"),
            std::string::npos);
  EXPECT_NE(first_error("{" + base + R"(,"hidden_size":32,"num_attention_heads":4,"num_key_value_heads":3})")
                .find("num_key_value_heads: must divide num_attention_heads (4)"),
            std::string::npos);
  EXPECT_NE(first_error("{" + base + R"(,"num_attention_heads":4})").find("hidden_size: is missing"),
            std::string::npos);
  EXPECT_NE(first_error(R"({"model_type":"llama","vocab_size":99999999999999999999999})").find("vocab_size"),
            std::string::npos);
}

TEST(HfImport, HugeButValidSizesStayFinite) {
  const HfImport r = import_hf_config_text(
      R"({"model_type":"llama","vocab_size":10000000,"hidden_size":100000,"intermediate_size":100000000,
          "num_hidden_layers":100000,"num_attention_heads":100000})");
  ASSERT_TRUE(r.errors.empty());
  const ParameterCount p = count_parameters(r.model);
  // 3·10^13 per layer × 10^5 layers = 3·10^18 parameters: still exact in int64 ...
  EXPECT_FALSE(p.overflow);
  EXPECT_GT(p.total_count.value(), 3'000'000'000'000'000'000);
  Config c = default_config();
  c.model = r.model;
  const Estimate e = estimate(c);
  // ... but their bytes are not: the estimate says so instead of wrapping.
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.errors[0].message.find("exceeds"), std::string::npos);
}

// A hybrid model's blocks (Qwen3.5-9B: 24 Gated DeltaNet and 8 attention layers): the saved
// activations are each kind's blocks' own, the one block a unit gathers the larger kind's; LoRA's
// linear_attn reaches the Gated DeltaNet's five projections and q/k/v/o the attention layers only;
// a pipeline split is refused, naming the field.
TEST(Parameters, HybridBlocksKeepEachKindsOwn) {
  const HfImport imported = import_hf_config_text(read_fixture("Qwen__Qwen3.5-9B.json"));
  ASSERT_TRUE(imported.errors.empty());
  Config c;
  c.model = imported.model;
  c.training.implementation.norm_kernel = class_reference(imported.model.model_type).norm_kernel;
  c.training.micro_batch_size = 1;
  c.training.seq_len = 1024;
  const auto saved = [&](std::int64_t linear) {
    Config k = c;
    k.model.linear_attention_layers = linear;
    const Estimate e = estimate(k);
    EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.errors[0].message);
    return e.breakdown.activations.value();
  };
  const std::int64_t hybrid = saved(24), attending = saved(0), gated = saved(32);
  // The embedding's and final norm's tensors are the same in all three: the blocks differ by 24
  // layers' kind, to within the rounding of the mean block (a byte a layer).
  EXPECT_NEAR(static_cast<double>(hybrid - attending), static_cast<double>(gated - attending) * 24 / 32, 64.0);
  EXPECT_NE(gated, attending);
  // Without flash-linear-attention transformers' torch fallback keeps far more (fp32 chunk
  // intermediates): measured 1.7 times the whole tiny model's activations (families.py).
  Config fallback = c;
  fallback.training.implementation.linear_attention_kernel = LinearAttentionKernel::kTorch;
  EXPECT_GT(estimate(fallback).breakdown.activations.value(), hybrid * 3 / 2);
  // Its backward (autograd back through the chunk loop, fp32) holds what was measured on the CPU
  // for the same shape (tools/frameworks/gdn_fallback_backward.py: B 1, T 1024, 2 key and 4 value
  // heads of 64: 7,471,360 bytes), beside the block's input and output gradients; the MLP's and
  // attention's gradients are smaller here.
  Config narrow = fallback;
  narrow.model.linear_num_key_heads = 2;
  narrow.model.linear_num_value_heads = 4;
  narrow.model.linear_key_head_dim = narrow.model.linear_value_head_dim = 64;
  narrow.model.intermediate_size = 64;
  narrow.model.hidden_size = 256;
  narrow.model.num_attention_heads = 2;
  narrow.model.num_key_value_heads = 1;
  narrow.model.head_dim = 64;
  const ActivationModel a = activation_model(narrow, count_parameters(narrow.model));
  const std::int64_t streams = a.layer_gradient_tensor_bytes[1].value() * 2;  // the block's input's and output's
  EXPECT_EQ(streams, 2 * 1024 * 256 * 4);  // fp32 stream under bf16_mixed
  EXPECT_NEAR(static_cast<double>(a.layer_backward_working_bytes.value() - streams), 7'471'360.0, 7'471'360.0 * 0.01);
  // At Qwen3.5's head sizes (B 1, T 512, 4 key and 8 value heads of 128): measured 14,156,032
  // bytes; the model holds one state gradient more than this shape showed (+3.7 %).
  Config qwen_heads = narrow;
  qwen_heads.training.seq_len = 512;
  qwen_heads.model.linear_num_key_heads = 4;
  qwen_heads.model.linear_num_value_heads = 8;
  qwen_heads.model.linear_key_head_dim = qwen_heads.model.linear_value_head_dim = 128;
  const ActivationModel w = activation_model(qwen_heads, count_parameters(qwen_heads.model));
  const std::int64_t wide_streams = w.layer_gradient_tensor_bytes[1].value() * 2;
  EXPECT_NEAR(static_cast<double>(w.layer_backward_working_bytes.value() - wide_streams), 14'156'032.0,
              14'156'032.0 * 0.04);

  const ParameterCount p = count_parameters(c.model);
  EXPECT_EQ(p.linear_layer_count.value(), 24);
  for (std::int64_t i = 0; i < 32; ++i) EXPECT_EQ(p.is_linear_layer(i), (i + 1) % 4 != 0) << i;
  Count attention = 0, linear = 0, rest = 0;
  for (const TensorGroup& g : p.groups) {
    if (g.layer == LayerKind::kNone) continue;
    (g.mixer == Mixer::kFullAttention ? attention : g.mixer == Mixer::kLinearAttention ? linear : rest) +=
        g.elements_each() * p.per_layer(g);
  }
  EXPECT_EQ(p.per_dense_layer_count, max(attention, linear) + rest);

  Config lora = c;
  lora.training.finetune.method = FinetuneMethod::kLora;
  lora.training.finetune.lora_rank = 8;
  lora.training.finetune.lora_targets = kLoraLinearAttn;
  const std::int64_t d = 4096, qkv = 2 * 16 * 128 + 32 * 128, value = 32 * 128, heads = 32;
  EXPECT_EQ(estimate(lora).trainable_parameter_count.value(),
            24 * 8 * ((d + qkv) + (d + value) + 2 * (d + heads) + (value + d)));
  lora.training.finetune.lora_targets = kLoraQ | kLoraO;
  EXPECT_EQ(estimate(lora).trainable_parameter_count.value(), 8 * 8 * ((d + 2 * 16 * 256) + (16 * 256 + d)));

  Config piped = c;
  piped.parallel.num_gpus = 2;
  piped.parallel.pipeline = 2;
  const Estimate refused = estimate(piped);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.errors[0].field, "parallel.pipeline");
  Config plain;
  plain.training.finetune.method = FinetuneMethod::kLora;
  plain.training.finetune.lora_targets = kLoraLinearAttn;
  ASSERT_FALSE(estimate(plain).ok());
  EXPECT_EQ(estimate(plain).errors[0].field, "training.finetune.lora_targets");

  // Training the top block only: an attention block (layer 31), its attention, MLP and norms.
  Config top = c;
  top.training.finetune.trainable_layers = 1;
  std::int64_t attention_block = 0;
  for (const TensorGroup& g : p.groups) {
    if (g.layer != LayerKind::kNone) attention_block += (g.elements_each() * p.per_layer_in(g, false)).value();
  }
  EXPECT_EQ(estimate(top).trainable_parameter_count.value(), attention_block);
  EXPECT_EQ(attention_block, 209'723'904);
  // The layer search keeps the mix (three Gated DeltaNet blocks of four) and finds an answer.
  Config lora_search = c;
  lora_search.training.finetune.method = FinetuneMethod::kLora;
  EXPECT_TRUE(solve(lora_search, SolveTarget::kMaxLayers).found);
  // The width search grows the Gated DeltaNet's heads with the attention's (head sizes kept, two
  // value heads per key head as in Qwen3.5), and the step past the answer does not fit.
  const Solution width = solve(lora_search, SolveTarget::kMaxWidth);
  ASSERT_TRUE(width.found);
  const ModelSpec& wide = width.config.model;
  EXPECT_EQ(wide.linear_num_key_heads, c.model.linear_num_key_heads * wide.num_attention_heads / c.model.num_attention_heads);
  EXPECT_EQ(wide.linear_num_value_heads, 2 * wide.linear_num_key_heads);
  EXPECT_EQ(wide.linear_key_head_dim, c.model.linear_key_head_dim);
  EXPECT_NE(wide.linear_num_key_heads, c.model.linear_num_key_heads);
  // A GPU-count search by tensor splits is refused up front, naming the field.
  EXPECT_EQ(solve(lora_search, SolveTarget::kMinGpus, GpuFamily::kTensor).errors.at(0).field, "parallel.tensor");
  EXPECT_TRUE(solve(lora_search, SolveTarget::kMinGpus, GpuFamily::kZero3).found);
  // Engines that build their own models, PEFT methods that need attention in every layer, and an
  // encoder are refused, each naming its field.
  const auto names = [](const Export& e, const std::string& field) {
    return std::any_of(e.errors.begin(), e.errors.end(), [&](const Issue& i) { return i.field == field; });
  };
  EXPECT_TRUE(names(export_plan(c, Engine::kMegatron), "model.linear_attention_layers"));
  EXPECT_TRUE(names(export_plan(c, Engine::kTorchtune), "model.linear_attention_layers"));
  EXPECT_TRUE(export_plan(c, Engine::kDeepSpeed).errors.empty());
  Config prefix = c;
  prefix.training.finetune.method = FinetuneMethod::kPrefixTuning;
  EXPECT_EQ(estimate(prefix).errors.at(0).field, "training.finetune.method");
  Config bert;
  bert.model = *preset_model("bert-base-uncased");
  bert.model.linear_attention_layers = 6;
  EXPECT_EQ(estimate(bert).errors.at(0).field, "model.linear_attention_layers");
}

}  // namespace
}  // namespace memfit
