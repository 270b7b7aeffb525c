// The configuration: defaults, presets with overrides, and every error naming its field and range.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

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

// A weightless norm is OLMo-1's LayerNorm only, and LN tuning has nothing to train on it.
TEST(Config, WeightlessNormsAreOlmosLayerNorm) {
  const auto issue = [](const std::string& model, const std::string& training) {
    const ConfigParse p = parse_config_text(R"({"model":{"preset":"llama-2-7b",)" + model + R"(},"training":{)" +
                                            training + "}}");
    const std::vector<Issue> issues = validate(p.config);
    return issues.empty() ? std::string() : issues[0].field + " " + issues[0].message;
  };
  EXPECT_EQ(issue(R"("norm":"layernorm","norm_bias":false,"norm_weight":false)", R"("seq_len":512)"), "");
  EXPECT_NE(issue(R"("norm_weight":false)", R"("seq_len":512)").find("model.norm_weight false is OLMo-1's LayerNorm"),
            std::string::npos);
  EXPECT_NE(issue(R"("norm":"layernorm","norm_bias":false,"norm_weight":false)",
                  R"("finetune":{"method":"ln_tuning"})")
                .find("training.finetune.method ln_tuning trains the norms' weights"),
            std::string::npos);
  // xIELU is Apertus's up / down MLP's.
  EXPECT_NE(issue(R"("hidden_act":"xielu")", R"("seq_len":512)").find("model.hidden_act xielu (Apertus) needs a plain MLP"),
            std::string::npos);
  EXPECT_EQ(issue(R"("hidden_act":"xielu","mlp":"plain")", R"("seq_len":512)"), "");
  const std::vector<Issue> bert = validate(
      parse_config_text(R"({"model":{"preset":"bert-base-uncased","hidden_act":"xielu"}})").config);
  ASSERT_FALSE(bert.empty());
  EXPECT_NE(bert[0].message.find("in a decoder"), std::string::npos) << bert[0].message;
  // OLMo's clamps are on a decoder's standard attention.
  EXPECT_EQ(issue(R"("clip_qkv":true)", R"("seq_len":512)"), "");
  EXPECT_NE(issue(R"("clip_qkv":true,"attention_type":"mla","kv_lora_rank":512,"qk_rope_head_dim":64,)"
                  R"("qk_nope_head_dim":128,"v_head_dim":128)", R"("seq_len":512)")
                .find("model.clip_qkv needs model.attention_type standard"),
            std::string::npos);
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
  // A choice in other letter case, and QLoRA (a combination of two settings), say what was meant.
  EXPECT_NE(first_error(R"({"training":{"precision":"BF16_Mixed"}})").find("got \"BF16_Mixed\" (did you mean \"bf16_mixed\"?)"),
            std::string::npos);
  EXPECT_NE(first_error(R"({"training":{"finetune":{"method":"QLoRA"}}})")
                .find("(QLoRA is method \"lora\" with training.finetune.base_bits 4)"),
            std::string::npos);
  EXPECT_NE(first_error(R"({"model":{"preset":"llama-3-70B"}})").find("(did you mean \"llama-3-70b\"?)"), std::string::npos);
  EXPECT_NE(first_error(R"({"model":{"preset":"meta-llama/Meta-Llama-3-8B"}})").find("(did you mean \"llama-3-8b\"?)"),
            std::string::npos);
  EXPECT_EQ(first_error(R"({"training":{"dropout":1.5}})"), "training.dropout must be a number from 0 to 0.99; got 1.5");
  EXPECT_EQ(first_error(R"({"training":{"chunked_loss":"yes"}})"), "training.chunked_loss must be true or false; got \"yes\"");
  EXPECT_EQ(first_error(R"({"model":{"preset":"gpt-5"}})").rfind("model.preset must be the id of a preset", 0), 0u);
  EXPECT_EQ(first_error(R"({"hardware":{"gpu":"tpu"}})").rfind("hardware.gpu must be the id of a GPU", 0), 0u);
  EXPECT_EQ(first_error(R"({"training":{"finetune":{"lora_targets":["q","x"]}}})").rfind(
                "training.finetune.lora_targets must be a list of module names from q, k, v, o, gate, up, down, head, qkv, router or linear_attn", 0),
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
  // A field whose -1 means "automatic" says so, rather than offering -1 as one more integer.
  EXPECT_EQ(first_error(R"({"hardware":{"overhead_bytes":-5}})"),
            "hardware.overhead_bytes must be -1 (automatic) or an integer from 0 to 1,099,511,627,776; got -5");
  // One whose -1 means all of them says "all".
  EXPECT_EQ(first_error(R"({"training":{"checkpointed_layers":-5}})"),
            "training.checkpointed_layers must be -1 (all) or an integer from 0 to 100,000; got -5");
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

// A configuration from (path, value) pairs: {"training":{"finetune":{"method":"lora"}}}.
using Flat = std::vector<std::pair<std::string, Json>>;
Json nest(const Flat& flat) {
  Json root = Json::object();
  std::vector<std::string> heads;
  std::map<std::string, Flat> inner;
  for (const auto& [path, value] : flat) {
    const std::size_t dot = path.find('.');
    if (dot == std::string::npos) {
      root.set(path, value);
      continue;
    }
    const std::string head = path.substr(0, dot);
    if (!inner.count(head)) heads.push_back(head);
    inner[head].push_back({path.substr(dot + 1), value});
  }
  for (const std::string& h : heads) root.set(h, nest(inner[h]));
  return root;
}

const Json& schema_entry(const std::string& path) {
  static const Json schema = config_schema();
  for (const Json& f : schema.items()) {
    if (f.find("field")->as_string() == path) return f;
  }
  ADD_FAILURE() << "no schema entry " << path;
  return schema;
}

// Whether one applies_when condition holds for `flat` (fields it leaves out at their defaults):
// a value in "in", at least "min", or one of an "any_of"'s conditions.
bool holds(const Json& c, const Flat& flat) {
  if (const Json* alternatives = c.find("any_of")) {
    for (const Json& alt : alternatives->items()) {
      if (holds(alt, flat)) return true;
    }
    return false;
  }
  const std::string field = c.find("field")->as_string();
  Json value = *schema_entry(field).find("default");
  for (const auto& [path, v] : flat) {
    if (path == field) value = v;
  }
  if (const Json* in = c.find("in")) {
    bool found = false;
    for (const Json& allowed : in->items()) found = found || allowed.dump() == value.dump();
    if (!found) return false;
  }
  if (const Json* min = c.find("min")) {
    if (value.as_double() < min->as_double()) return false;
  }
  return true;
}

// Whether the schema's applies_when conditions all hold for `flat`.
bool applies(const Json& entry, const Flat& flat) {
  const Json* conditions = entry.find("applies_when");
  if (!conditions) return true;
  for (const Json& c : conditions->items()) {
    if (!holds(c, flat)) return false;
  }
  return true;
}

// A valid value other than the default.
Json other_value(const Json& entry) {
  const std::string kind = entry.find("kind")->as_string();
  const Json& d = *entry.find("default");
  if (kind == "boolean") return Json::boolean(!d.as_bool());
  if (kind == "choice") {
    for (const Json& c : entry.find("choices")->items()) {
      if (c.as_string() != d.as_string()) return c;
    }
  }
  if (kind == "number") {
    const double lo = entry.find("min")->as_double(), hi = entry.find("max")->as_double();
    const double v = d.as_double() + (hi - lo) / 10;
    return Json::number(v <= hi ? v : d.as_double() - (hi - lo) / 10);
  }
  if (kind == "integer") {
    const std::int64_t v = *d.as_exact_integer();
    return Json::integer(v + 1 <= *entry.find("max")->as_exact_integer() ? v + 1 : v - 1);
  }
  if (kind == "list") {
    Json list = Json::array();
    list.push(entry.find("field")->as_string() == "training.finetune.lora_targets" ? Json::string("o")
                                                                                     : Json::string("head"));
    return list;
  }
  ADD_FAILURE() << "no other value for " << entry.dump();
  return d;
}

TEST(Config, AFieldThatDoesNotApplyChangesNoNumber) {
  // The schema says when the estimate reads a field (applies_when; the page disables the field
  // otherwise). Checked here against the estimate itself: under settings where a field does not
  // apply, any other value of it gives the same numbers, or an error naming that field.
  const std::vector<Flat> bases = {
      {},
      {{"training.finetune.method", Json::string("lora")}, {"training.finetune.base_bits", Json::integer(4)}},
      {{"training.finetune.method", Json::string("prompt_tuning")}},
      {{"training.finetune.method", Json::string("ia3")}, {"training.finetune.base_bits", Json::integer(8)},
       {"training.finetune.quant_method", Json::string("gptq")}},
      {{"training.optimizer", Json::string("galore_adamw")}, {"parallel.num_gpus", Json::integer(8)},
       {"parallel.zero_stage", Json::integer(2)}},
      // FSDP1's options under FSDP2 and under DeepSpeed's engine (a LoRA, where use_orig_params
      // would cost the frozen base's gradients under FSDP1).
      {{"training.finetune.method", Json::string("lora")}, {"parallel.num_gpus", Json::integer(4)},
       {"parallel.zero_stage", Json::integer(3)}, {"training.framework", Json::string("torchtune")}},
      // torchao's float8 all-gather is FSDP2's ZeRO-3 hook: nothing at ZeRO-2.
      {{"training.framework", Json::string("torchtitan")}, {"training.float8", Json::string("tensorwise")},
       {"parallel.num_gpus", Json::integer(8)}, {"parallel.zero_stage", Json::integer(2)}},
      // The HF Trainer's FSDP1 gives the adapters units of their own: use_orig_params moves nothing.
      {{"training.finetune.method", Json::string("lora")}, {"parallel.num_gpus", Json::integer(4)},
       {"parallel.zero_stage", Json::integer(3)}, {"training.checkpointing", Json::string("full")},
       {"training.checkpoint_impl", Json::string("reentrant")}},
      {{"training.finetune.method", Json::string("lora")}, {"parallel.num_gpus", Json::integer(4)},
       {"parallel.zero_stage", Json::integer(3)}, {"training.framework", Json::string("deepspeed")}},
      {{"training.finetune.method", Json::string("lora")}, {"parallel.num_gpus", Json::integer(4)},
       {"parallel.zero_stage", Json::integer(3)}, {"parallel.fsdp_version", Json::string("2")}},
  };
  // Every engine at each sharding stage: a field that only one framework's code reads must not
  // move another's numbers.
  std::vector<Flat> engines;
  for (const char* framework : {"deepspeed", "megatron", "torchtitan", "litgpt", "nanogpt", "llm_c"}) {
    for (const std::int64_t stage : {0, 2, 3}) {
      engines.push_back({{"training.framework", Json::string(framework)}, {"parallel.num_gpus", Json::integer(8)},
                         {"parallel.zero_stage", Json::integer(stage)}});
    }
  }
  std::vector<Flat> all_bases = bases;
  all_bases.insert(all_bases.end(), engines.begin(), engines.end());
  int checked = 0;
  const Json schema = config_schema();
  for (const Json& entry : schema.items()) {
    if (!entry.find("applies_when")) continue;
    const std::string path = entry.find("field")->as_string();
    for (const Flat& given : all_bases) {
      if (applies(entry, given)) continue;
      // A model field given alone describes a model without a preset (plain defaults): both sides
      // keep the default preset, so that only the field differs.
      Flat base = given;
      if (path.rfind("model.", 0) == 0) base.push_back({"model.preset", *schema_entry("model.preset").find("default")});
      Flat changed = base;
      changed.push_back({path, other_value(entry)});
      const Json before = estimate_json(nest(base).dump());
      const Json after = estimate_json(nest(changed).dump());
      ASSERT_TRUE(before.find("ok")->as_bool()) << nest(base).dump();
      if (!after.find("ok")->as_bool()) {
        EXPECT_NE(after.find("errors")->dump().find(path), std::string::npos) << nest(changed).dump();
        continue;
      }
      for (const char* key : {"peak_allocated_bytes", "peak_reserved_bytes", "device_total_bytes", "breakdown",
                              "trainable_parameter_count", "parameter_count"}) {
        ASSERT_TRUE(before.find(key) && after.find(key)) << key;
        EXPECT_EQ(before.find(key)->dump(), after.find(key)->dump()) << path << " under " << nest(base).dump();
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 60);
}

TEST(Config, AChoiceTheModelLacksIsRefusedAndOneItHasIsTaken) {
  // choices_apply_when names what a list choice needs of the model (the page leaves the choice out
  // of the offer otherwise). Checked against the estimate: with the condition failing the choice
  // is an error on its field; on a model that meets it, the same choice estimates.
  const Json& entry = schema_entry("training.finetune.lora_targets");
  const Json* conditioned = entry.find("choices_apply_when");
  ASSERT_NE(conditioned, nullptr);
  // A model for each condition to hold on: (condition's field, a preset that has it).
  const std::map<std::string, std::string> has = {{"model.num_experts", "mixtral-8x7b"},
                                                  {"model.linear_attention_layers", "qwen3.5-9b"},
                                                  {"model.attention_type", "llama-3-8b"}};
  const std::map<std::string, Json> lacks = {{"model.num_experts", Json::integer(0)},
                                             {"model.linear_attention_layers", Json::integer(0)},
                                             {"model.attention_type", Json::string("mla")}};
  int checked = 0;
  for (const auto& [key, conditions] : conditioned->members()) {
    bool listed = false;
    for (const Json& c : entry.find("choices")->items()) listed = listed || c.as_string() == key;
    EXPECT_TRUE(listed) << key << " is not one of the field's choices";
    for (const Json& c : conditions.items()) {
      const std::string field = c.find("field")->as_string();
      ASSERT_TRUE(has.count(field)) << field;
      Json targets = Json::array();
      targets.push(Json::string(key));
      const Flat lora = {{"training.finetune.method", Json::string("lora")},
                         {"training.finetune.lora_targets", targets}};
      Flat with = lora, without = lora;
      with.push_back({"model.preset", Json::string(has.at(field))});
      // DeepSeek-V3 for a model without standard attention; Llama 3 for one without the others.
      without.push_back({"model.preset", Json::string(field == "model.attention_type" ? "deepseek-v3" : "llama-3-8b")});
      without.push_back({field, lacks.at(field)});
      EXPECT_FALSE(holds(c, without)) << key;
      const Json refused = estimate_json(nest(without).dump());
      EXPECT_FALSE(refused.find("ok")->as_bool()) << nest(without).dump();
      bool named = false;
      for (const Json& e : refused.find("errors")->items()) {
        named = named || e.find("field")->as_string() == "training.finetune.lora_targets";
      }
      EXPECT_TRUE(named) << refused.find("errors")->dump();
      const Json taken = estimate_json(nest(with).dump());
      EXPECT_TRUE(taken.find("ok")->as_bool()) << nest(with).dump() << taken.dump().substr(0, 400);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3);
}

// qkv names one fused projection: on a transformers class whose q, k and v are separate modules
// (Llama) the estimate warns, naming the field, that PEFT would find no such module; on GPT-2's
// c_attn, and on remote code memfit cannot name (ChatGLM described on a Llama shape), it does not.
TEST(Config, AFusedQkvTargetOnSeparateProjectionsIsWarnedAbout) {
  const auto warned = [](const std::string& model) {
    const Json r = estimate_json(R"({"model":)" + model +
                                 R"(,"training":{"finetune":{"method":"lora","lora_targets":["qkv"]}}})");
    EXPECT_TRUE(r.find("ok")->as_bool()) << r.dump().substr(0, 300);
    for (const Json& w : r.find("warnings")->items()) {
      if (w.find("field")->as_string() == "training.finetune.lora_targets") return true;
    }
    return false;
  };
  EXPECT_TRUE(warned(R"({"preset":"llama-3-8b"})"));
  EXPECT_TRUE(warned(R"({"preset":"glm-4-9b-0414"})"));
  EXPECT_FALSE(warned(R"({"preset":"gpt2"})"));
  EXPECT_FALSE(warned(R"({"preset":"llama-2-7b","model_type":"chatglm"})"));
  EXPECT_EQ(hf_qkv_modules("falcon"), QkvModules::kFused);
  EXPECT_EQ(hf_qkv_modules("qwen"), QkvModules::kUnknown);
}

}  // namespace
}  // namespace memfit
