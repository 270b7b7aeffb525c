// The implementation (training.framework and its knobs) apart from the model's shape: one field
// each, echoed in the result; the model's type names the transformers class that runs the shape.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

Json run(const std::string& config) {
  const Json r = estimate_json(config);
  EXPECT_TRUE(r.find("ok")->as_bool()) << r.dump();
  return r;
}

std::int64_t field(const Json& r, const char* key) { return *r.find(key)->as_exact_integer(); }

// Liger's fused linear cross-entropy makes the head's gradient in forward as zeros_like(weight):
// under FSDP mixed precision with full sharding the weight it sees is the gathered bf16 one, so the
// gradient is bf16 (Llama 3 8B's 128,256 x 4,096 head: 2 bytes each), where unsharded (ZeRO-2) the
// module's weight is the fp32 one.
TEST(Implementation, LigerHeadGradientInTheGatheredWeightsDtype) {
  const auto loss = [](int zero) {
    const Json r = estimate_json(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"liger",)"
                                 R"("precision":"bf16_fsdp"},"parallel":{"num_gpus":8,"zero_stage":)" +
                                 std::to_string(zero) + "}}");
    return *r.find("breakdown")->find("logits_and_loss")->as_exact_integer();
  };
  EXPECT_EQ(loss(2) - loss(3), 128256LL * 4096 * 2);
}

TEST(Implementation, TheClassFollowsTheModelTypeNotThePreset) {
  // model_type names the transformers class that runs the shape: GPT-2's shape called "llama" runs
  // Llama's code (an fp32 softmax and a mask tensor), and Llama's shape called "gpt2" runs GPT-2's.
  // The shape, and so every parameter, stays.
  const Json gpt2 = run(R"({"model":{"preset":"gpt2"},"training":{"attention":"eager"}})");
  const Json renamed = run(R"({"model":{"preset":"gpt2","model_type":"llama"},"training":{"attention":"eager"}})");
  EXPECT_EQ(field(gpt2, "parameter_count"), field(renamed, "parameter_count"));
  EXPECT_EQ(gpt2.find("implementation")->find("softmax_dtype")->as_string(), "compute");
  EXPECT_EQ(renamed.find("implementation")->find("softmax_dtype")->as_string(), "fp32");
  EXPECT_EQ(renamed.find("implementation")->find("attention_mask")->as_string(), "additive");
  EXPECT_GT(field(renamed, "peak_allocated_bytes"), field(gpt2, "peak_allocated_bytes"));
  const Json llama = run(R"({"model":{"preset":"llama-3-8b","model_type":"gpt2"}})");
  EXPECT_EQ(llama.find("implementation")->find("softmax_dtype")->as_string(), "compute");
  // The configuration echoes the knobs as given: the class's values appear resolved only.
  EXPECT_EQ(gpt2.find("config")->find("training")->find("softmax_dtype")->as_string(), "auto");
}

TEST(Implementation, TheDefaultProfileIsEchoedResolved) {
  const Json r = run(R"({"model":{"preset":"llama-3-8b"}})");
  const Json& impl = *r.find("implementation");
  EXPECT_EQ(impl.find("framework")->as_string(), "hf");
  EXPECT_EQ(impl.find("softmax_dtype")->as_string(), "fp32");  // auto → the hf profile
  EXPECT_EQ(impl.find("logits_dtype")->as_string(), "fp32");
  EXPECT_EQ(impl.find("attention_mask")->as_string(), "additive");
  EXPECT_EQ(r.find("config")->find("training")->find("softmax_dtype")->as_string(), "auto");  // as given
}

TEST(Implementation, AGpt2PresetRunsAsTransformersGpt2Class) {
  // The importer reads GPT-2's class once: softmax in the compute dtype, no per-layer mask tensor.
  const Json r = run(R"({"model":{"preset":"gpt2"}})");
  EXPECT_EQ(r.find("implementation")->find("softmax_dtype")->as_string(), "compute");
  EXPECT_EQ(r.find("implementation")->find("attention_mask")->as_string(), "implicit");
  // A knob given explicitly wins over the preset's class.
  const Json s = run(R"({"model":{"preset":"gpt2"},"training":{"softmax_dtype":"fp32"}})");
  EXPECT_EQ(s.find("implementation")->find("softmax_dtype")->as_string(), "fp32");
  // An imported config.json's model carries its model_type, and with it the same class.
  const Json imported = import_hf_json(R"({"model_type":"gpt2","n_embd":64,"n_head":4,"n_layer":2,)"
                                       R"("n_positions":128,"vocab_size":1000})");
  EXPECT_EQ(imported.find("model")->find("model_type")->as_string(), "gpt2");
  EXPECT_EQ(imported.find("training"), nullptr);  // nothing for the caller to apply
  EXPECT_TRUE(imported.find("model")->find("residual_dropout")->as_bool());
  Json config = Json::object();
  config.set("model", *imported.find("model"));
  const Json from_file = run(config.dump());
  EXPECT_EQ(from_file.find("implementation")->find("softmax_dtype")->as_string(), "compute");
  EXPECT_EQ(from_file.find("implementation")->find("attention_mask")->as_string(), "implicit");
  EXPECT_EQ(from_file.find("implementation")->find("projections")->as_string(), "fused");
}

// DeepSpeed and Liger run the transformers class too: its knobs apply there as under hf. BERT's
// class runs its softmax and hands its logits to the loss in the compute dtype (modeling_bert.py),
// and BERT is the post-norm encoder it is; Liger's RMSNorm replaces a class's own norm (Gemma's
// fp32 one), so that knob stays the profile's.
TEST(Implementation, TheClassKnobsApplyUnderDeepspeedAndLiger) {
  const Json bert = run(R"({"model":{"preset":"bert-base-uncased","output_head":"token_classification","num_labels":9},)"
                        R"("training":{"framework":"deepspeed","precision":"fp16_master","attention":"eager"}})");
  EXPECT_EQ(bert.find("implementation")->find("softmax_dtype")->as_string(), "compute");
  EXPECT_EQ(bert.find("implementation")->find("logits_dtype")->as_string(), "compute");
  EXPECT_FALSE(bert.find("config")->find("model")->find("normalize_before")->as_bool());
  EXPECT_GT(field(*bert.find("breakdown"), "logits_and_loss"), 0);  // the head's logits and loss are counted
  const Json gemma = run(R"({"model":{"preset":"gemma-2b"},"training":{"framework":"liger"}})");
  EXPECT_EQ(gemma.find("implementation")->find("norm_kernel")->as_string(), "fused");
  const Json gemma_hf = run(R"({"model":{"preset":"gemma-2b"}})");
  EXPECT_EQ(gemma_hf.find("implementation")->find("norm_kernel")->as_string(), "eager_fp32");
}

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(MEMFIT_SOURCE_DIR) + "/tests/fixtures/hf/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The class is the model_type's however the model came in: Gemma 2's config.json pasted gives what
// its preset gives, under every framework that runs the class and compiled too (before, the
// importer's knobs were explicit settings: hf only, and its fp32 norm kept under compile).
TEST(Implementation, AnImportedConfigRunsAsItsPresetUnderEveryFramework) {
  const Json imported = import_hf_json(read_fixture("google__gemma-2-9b.json"));
  ASSERT_TRUE(imported.find("ok")->as_bool());
  for (const char* training : {R"({})", R"({"framework":"deepspeed"})", R"({"framework":"liger"})",
                               R"({"framework":"trl"})", R"({"compile":"yes"})", R"({"framework":"torchtitan"})"}) {
    Json from_file = Json::object();
    from_file.set("model", *imported.find("model"));
    from_file.set("training", *parse_json(training).value);
    const Json a = run(from_file.dump());
    const Json b = run(std::string(R"({"model":{"preset":"gemma-2-9b"},"training":)") + training + "}");
    EXPECT_EQ(a.find("implementation")->dump(), b.find("implementation")->dump()) << training;
    EXPECT_EQ(field(a, "peak_allocated_bytes"), field(b, "peak_allocated_bytes")) << training;
  }
  const Json deepspeed = run(R"({"model":{"preset":"gemma-2-9b"},"training":{"framework":"deepspeed"}})");
  EXPECT_EQ(deepspeed.find("implementation")->find("attention")->as_string(), "eager");  // no SDPA path
  EXPECT_EQ(deepspeed.find("implementation")->find("norm_kernel")->as_string(), "eager_fp32");
  const Json compiled = run(R"({"model":{"preset":"gemma-2-9b"},"training":{"compile":"yes"}})");
  EXPECT_EQ(compiled.find("implementation")->find("norm_kernel")->as_string(), "fused");
}

// Liger patches what its table names for the model_type (monkey_patch.py,
// MODEL_TYPE_TO_APPLY_LIGER_FN) and leaves the rest to transformers' class.
TEST(Implementation, LigerPatchesWhatItsTableNamesForTheModelType) {
  const auto impl = [](const std::string& model) {
    const Json r = run(R"({"model":)" + model + R"(,"training":{"framework":"liger"}})");
    return *r.find("implementation");
  };
  // Llama: the RMSNorm, the SwiGLU and the fused linear cross-entropy.
  const Json llama = impl(R"({"preset":"llama-3-8b"})");
  EXPECT_EQ(llama.find("norm_kernel")->as_string(), "fused");
  EXPECT_EQ(llama.find("activation_kernel")->as_string(), "fused_inplace");
  EXPECT_EQ(llama.find("loss")->as_string(), "fused_linear_ce");
  // DeepSeek-V3 is not in Liger's table: transformers' own code, as under hf.
  const Json deepseek = impl(R"({"preset":"deepseek-v3"})");
  const Json deepseek_hf = *run(R"({"model":{"preset":"deepseek-v3"}})").find("implementation");
  for (const char* knob : {"norm_kernel", "activation_kernel", "loss", "attention", "softmax_dtype"}) {
    EXPECT_EQ(deepseek.find(knob)->as_string(), deepseek_hf.find(knob)->as_string()) << knob;
  }
  EXPECT_FALSE(liger_patches("deepseek_v3").known);
  const Json notes = *run(R"({"model":{"preset":"deepseek-v3"},"training":{"framework":"liger"}})").find("notes");
  bool said = false;
  for (const Json& n : notes.items()) said = said || n.as_string().find("no patches for model_type \"deepseek_v3\"") != std::string::npos;
  EXPECT_TRUE(said) << notes.dump();
  // Nemotron: ReLU² and the fused loss; its LayerNorm1P stays the class's (compute dtype).
  const Json nemotron = impl(R"({"preset":"llama-3-8b","model_type":"nemotron"})");
  EXPECT_EQ(nemotron.find("norm_kernel")->as_string(), "compute");
  EXPECT_EQ(nemotron.find("loss")->as_string(), "fused_linear_ce");
  // Granite: no fused linear cross-entropy (its logits are scaled); Liger's cross-entropy instead.
  EXPECT_EQ(impl(R"({"preset":"llama-3-8b","model_type":"granite"})").find("loss")->as_string(), "fused_ce");
  // gpt-oss: its clamped experts stay transformers' own.
  EXPECT_EQ(impl(R"({"preset":"llama-3-8b","model_type":"gpt_oss"})").find("activation_kernel")->as_string(), "eager");
  // A multimodal file: Liger keys on the wrapper's model_type (model.multimodal_type). Qwen3-VL's
  // patch leaves the MLP; Mistral 3 is not in the table, though its language model (Mistral) is.
  const auto wrapped = [&](const std::string& outer, const std::string& inner) {
    const Json imported = import_hf_json(R"({"model_type":")" + outer + R"(","text_config":{"model_type":")" + inner +
                                         R"(","vocab_size":32000,"hidden_size":1024,"num_hidden_layers":2,)"
                                         R"("num_attention_heads":8,"num_key_value_heads":8,"head_dim":128,)"
                                         R"("intermediate_size":2048,"max_position_embeddings":4096}})");
    EXPECT_TRUE(imported.find("ok")->as_bool()) << imported.dump();
    EXPECT_EQ(imported.find("model")->find("multimodal_type")->as_string(), outer);
    Json config = Json::object();
    config.set("model", *imported.find("model"));
    config.set("training", *parse_json(R"({"framework":"liger"})").value);
    return run(config.dump());
  };
  const Json qwen3_vl = wrapped("qwen3_vl", "qwen3_vl_text");
  EXPECT_EQ(qwen3_vl.find("implementation")->find("activation_kernel")->as_string(), "eager");
  EXPECT_EQ(qwen3_vl.find("implementation")->find("norm_kernel")->as_string(), "fused");
  const Json mistral3 = wrapped("mistral3", "mistral");
  EXPECT_EQ(mistral3.find("implementation")->find("loss")->as_string(), "eager");
  bool mistral3_said = false;
  for (const Json& n : mistral3.find("notes")->items()) {
    mistral3_said = mistral3_said || n.as_string().find("no patches for model_type \"mistral3\"") != std::string::npos;
  }
  EXPECT_TRUE(mistral3_said);
  EXPECT_EQ(wrapped("llava", "llama").find("implementation")->find("loss")->as_string(), "fused_linear_ce");
  // A knob set by the user stays as set.
  const Json set = run(R"({"model":{"preset":"deepseek-v3"},"training":{"framework":"liger","loss":"fused_linear_ce"}})");
  EXPECT_EQ(set.find("implementation")->find("loss")->as_string(), "fused_linear_ce");
}

// One block's activation term by name (0 when the block has none).
std::int64_t term(const Json& r, const std::string& name) {
  for (const Json& t : r.find("activation_terms_per_layer")->items()) {
    if (t.find("name")->as_string() == name) return *t.find("bytes")->as_exact_integer();
  }
  return 0;
}

TEST(Implementation, MlaThroughTransformersAttentionKeepsWhatItsIntegrationsKeep) {
  // DeepSeek-V3 (MLA: 128 heads, q/k head dim 128 + 64, v head dim 128) under autocast, one layer's terms.
  const std::int64_t tokens = 1024, heads = 128, nope = 128, qk = 192, v = 128, hidden = 7168;
  const std::string base = R"({"model":{"preset":"deepseek-v3"},"training":{"micro_batch_size":1,"seq_len":1024,)"
                           R"("precision":"bf16_mixed","attention":")";
  // SDPA gets v as a view of kv_b_proj's output: its k_nope half stays alive with it.
  const Json sdpa = run(base + R"(sdpa"}})");
  EXPECT_EQ(term(sdpa, "attention.mla_value_storage"), tokens * heads * nope * 2);
  EXPECT_EQ(term(sdpa, "attention.mla_value_padding"), 0);
  // FlashAttention gets v zero-padded to the q/k head dim: v and the output are that wide, and
  // o_proj reads a cropped copy.
  const Json flash = run(base + R"(flash"}})");
  EXPECT_EQ(term(flash, "attention.mla_value_padding"), tokens * heads * (qk - v) * 2 * 2);
  EXPECT_EQ(term(flash, "attention.o_input"), tokens * heads * v * 2);
  EXPECT_EQ(term(flash, "attention.mla_value_storage"), 0);
  // Both down-projections cast the fp32 norm output for themselves.
  EXPECT_EQ(term(sdpa, "attention.qkv_input"), 2 * tokens * hidden * 2);
  // Another framework's own attention code keeps neither.
  const Json titan = run(R"({"model":{"preset":"deepseek-v3"},"training":{"framework":"torchtitan","micro_batch_size":1,)"
                         R"("seq_len":1024,"precision":"bf16_mixed"}})");
  EXPECT_EQ(term(titan, "attention.mla_value_padding") + term(titan, "attention.mla_value_storage"), 0);
}

TEST(Implementation, ModelClassesKeepTheirOwnNorms) {
  // Qwen3: an RMSNorm on each query and key head, on bf16 projections under autocast: the fp32
  // upcast, one rstd per head and token, the bf16 normalised copy (tools/frameworks/families.py).
  const Json qwen3 = run(R"({"model":{"preset":"qwen3-30b-a3b"},"training":{"micro_batch_size":1,"seq_len":1024,)"
                         R"("precision":"bf16_mixed"}})");
  const std::int64_t tokens = 1024, heads = 32, kv = 4, head_dim = 128;
  EXPECT_EQ(term(qwen3, "attention.qk_norms"),
            tokens * (heads + kv) * head_dim * (4 + 2) + tokens * (heads + kv) * 4);
  EXPECT_EQ(term(run(R"({"model":{"preset":"llama-3-8b"}})"), "attention.qk_norms"), 0);
  // Gemma's norms keep the normalised x in fp32; an explicit knob still wins.
  const Json gemma = run(R"({"model":{"preset":"gemma-2b"}})");
  EXPECT_EQ(gemma.find("implementation")->find("norm_kernel")->as_string(), "eager_fp32");
  const Json asked = run(R"({"model":{"preset":"gemma-2b"},"training":{"norm_kernel":"fused"}})");
  EXPECT_EQ(asked.find("implementation")->find("norm_kernel")->as_string(), "fused");
  EXPECT_LT(term(asked, "norms"), term(gemma, "norms"));
  // Compiled, the class's norm fuses like any other (the class knob applies to eager code).
  const Json compiled = run(R"({"model":{"preset":"gemma-2b"},"training":{"compile":"yes"}})");
  EXPECT_EQ(compiled.find("implementation")->find("norm_kernel")->as_string(), "fused");
}

TEST(Implementation, AParallelBlocksOneNormIsSavedOnceWithoutAutocast) {
  // Falcon-7B: ln output feeds attention and the MLP; pure bf16 has no per-matmul cast.
  const Json pure = run(R"({"model":{"preset":"falcon-7b"},"training":{"precision":"bf16","seq_len":512}})");
  EXPECT_EQ(term(pure, "mlp.input"), 0);
  EXPECT_GT(term(pure, "attention.qkv_input"), 0);
  // Under autocast each matmul casts the fp32 stream on its own: the MLP's copy is its own.
  const Json mixed = run(R"({"model":{"preset":"falcon-7b"},"training":{"precision":"bf16_mixed","seq_len":512}})");
  EXPECT_GT(term(mixed, "mlp.input"), 0);
}

TEST(Implementation, LoraAdaptersThatKeepTheirInputShareItsStorage) {
  // An adapter that neither casts nor drops out its input saves the tensor itself: in a parallel
  // block with one norm (Falcon-7B) the attention's and the MLP's adapters read the same normalised
  // input, one storage; OPT's fc2 adapter reads ReLU's output, which ReLU keeps anyway (measured with
  // PEFT: tools/frameworks/families.py, LoRA steps).
  const std::string lora = R"("precision":"fp32","micro_batch_size":1,"seq_len":512,"finetune":{"method":"lora",)"
                           R"("lora_rank":8,"lora_dropout":0,"lora_targets":)";
  const Json falcon = run(R"({"model":{"preset":"falcon-7b"},"training":{)" + lora + R"(["qkv","o","up","down"]}}})");
  const std::int64_t tokens = 512, r = 8, d = 4544;
  EXPECT_EQ(term(falcon, "mlp.input"), tokens * r * 4);  // only the up adapter's A output
  EXPECT_GT(term(falcon, "attention.qkv_input"), tokens * d * 4);
  // With adapter dropout each adapter keeps its own dropped copy: nothing is shared.
  const Json dropped = run(R"({"model":{"preset":"falcon-7b"},"training":{)" +
                           std::string(R"("precision":"fp32","micro_batch_size":1,"seq_len":512,"finetune":)") +
                           R"({"method":"lora","lora_rank":8,"lora_dropout":0.1,"lora_targets":["qkv","o","up","down"]}}})");
  EXPECT_GT(term(dropped, "mlp.input"), tokens * d * 4);
  const std::string opt = R"({"model":{"preset":"opt-125m"},"training":{)" + lora;
  const Json down = run(opt + R"(["q","v","down"]}}})");
  const Json attention = run(opt + R"(["q","v"]}}})");
  EXPECT_EQ(term(down, "mlp.inner"), 0);
  EXPECT_GT(term(down, "mlp.down_input"), 0);
  EXPECT_GT(term(attention, "mlp.inner"), 0);
  EXPECT_EQ(term(attention, "mlp.down_input"), 0);
}

TEST(Implementation, ExpertsLoopOrGroupedGemms) {
  // transformers 5 (the hf profile) runs the experts as grouped GEMMs; transformers 4 looped.
  const std::string base = R"({"model":{"preset":"mixtral-8x7b"},"training":{"micro_batch_size":1,"seq_len":1024,)";
  const Json grouped = run(base + R"("precision":"bf16"}})");
  EXPECT_EQ(grouped.find("implementation")->find("moe_dispatch")->as_string(), "grouped");
  const Json loop = run(base + R"("precision":"bf16","moe_dispatch":"loop"}})");
  // Both keep the routed rows, gate/up, activation and product; the loop also keeps a second
  // hidden-width copy per routed row in its combine (index_add_ of the weighted output).
  const std::int64_t routed = 1024 * 2, hidden = 4096;
  EXPECT_EQ(term(loop, "moe.combine") - term(grouped, "moe.combine"), routed * hidden * 2);
  // Grouped GEMMs are not autocast ops: over fp32 weights they run, and keep their tensors, in fp32.
  const Json mixed = run(base + R"("precision":"bf16_mixed"}})");
  EXPECT_EQ(term(mixed, "moe.experts_inner"), 2 * term(grouped, "moe.experts_inner"));
}

Json errors_of(const std::string& config) { return estimate_json(config); }

std::string first_error_field(const Json& r) {
  const Json* errors = r.find("errors");
  return errors && !errors->items().empty() ? errors->items()[0].find("field")->as_string() : "";
}

TEST(Implementation, LoraOnStackedExpertsIsOneAdapterPerProjection) {
  // transformers 5 stacks each expert projection (grouped): PEFT wraps the 3-D parameter with one
  // adapter, A [r·E, in] and B [out, r·E], gate and up fused at rank 2r (tools/frameworks/moe_lora.py).
  const std::string base = R"({"model":{"preset":"mixtral-8x7b"},"training":{"micro_batch_size":1,"seq_len":1024,)"
                           R"("precision":"bf16","finetune":{"method":"lora","lora_rank":8,"lora_targets":)";
  const Json attention = run(base + R"(["q","k","v","o"]}}})");
  const Json stacked = run(base + R"(["q","k","v","o","gate","up","down"]}}})");
  const Json loop = run(base + R"(["q","k","v","o","gate","up","down"]},"moe_dispatch":"loop"}})");
  const std::int64_t layers = 32, experts = 8, r = 8, d = 4096, ff = 14336;
  const std::int64_t per_expert = experts * (2 * r * (d + ff) + r * (ff + d));      // an adapter per nn.Linear
  const std::int64_t fused = 2 * r * experts * (d + 2 * ff) + r * experts * (ff + d);  // gate_up_proj + down_proj
  EXPECT_EQ(field(loop, "trainable_parameter_count") - field(attention, "trainable_parameter_count"),
            layers * per_expert);
  EXPECT_EQ(field(stacked, "trainable_parameter_count") - field(attention, "trainable_parameter_count"),
            layers * fused);
  // Named through target_parameters (gpt-oss's only way), gate_up_proj keeps rank r.
  const Json by_parameter = run(base + R"(["q","k","v","o","gate","up","down"],"target_parameters":true}}})");
  EXPECT_EQ(field(by_parameter, "trainable_parameter_count") - field(attention, "trainable_parameter_count"),
            layers * (r * experts * (d + 2 * ff) + r * experts * (ff + d)));
  // Each forward folds the adapter into a whole copy of the stack, which the grouped GEMM keeps,
  // and the baddbmm keeps the fp32 adapter factors' bf16 casts.
  EXPECT_EQ(term(stacked, "moe.merged_expert_weights"), (experts * 3 * ff * d + fused) * 2);
  EXPECT_EQ(term(loop, "moe.merged_expert_weights"), 0);
  EXPECT_EQ(term(attention, "moe.merged_expert_weights"), 0);
  // The experts' inputs are kept once their weights need a gradient, in either form.
  EXPECT_GT(term(stacked, "moe.expert_inputs"), 0);
  EXPECT_GT(term(loop, "moe.expert_inputs"), 0);
  EXPECT_EQ(term(attention, "moe.expert_inputs"), 0);
  // The router is a target of its own (all-linear reaches it): A [r, d], B [E, r] per layer.
  const Json router = run(base + R"(["q","k","v","o","router"]}}})");
  EXPECT_EQ(field(router, "trainable_parameter_count") - field(attention, "trainable_parameter_count"),
            layers * r * (d + experts));
}

TEST(Implementation, StackedExpertsTakeWhatPeftAllows) {
  const std::string mixtral = R"({"model":{"preset":"mixtral-8x7b"},"training":{"finetune":)";
  // DoRA (any variant) cannot wrap a stacked parameter; an nn.Linear per expert can.
  EXPECT_EQ(first_error_field(errors_of(mixtral + R"({"method":"dora","lora_targets":["q","gate","up"]}}})")),
            "training.finetune.lora_targets");
  EXPECT_TRUE(errors_of(mixtral + R"({"method":"dora","lora_targets":["q","gate","up"]},"moe_dispatch":"loop"}})")
                  .find("ok")->as_bool());
  // gate and up are one fused parameter: both or neither.
  EXPECT_EQ(first_error_field(errors_of(mixtral + R"({"method":"lora","lora_targets":["q","gate"]}}})")),
            "training.finetune.lora_targets");
  // A router needs experts.
  EXPECT_EQ(first_error_field(errors_of(
                R"({"model":{"preset":"llama-3-8b"},"training":{"finetune":{"method":"lora","lora_targets":["router"]}}})")),
            "training.finetune.lora_targets");
}

TEST(Implementation, ModuleNamesReachWhatPeftMapsOnStackedExperts) {
  // PEFT rewrites the expert names to the stacked parameters only for the families in transformers'
  // conversion table (peft/utils/transformers_weight_conversion.py): DeepSeek-V3 is, and its dense
  // first layers' MLPs and shared experts (nn.Linear modules of the same names) lose their adapters;
  // Qwen2-MoE is not, so the names reach the shared expert only (tools/frameworks/moe_lora.py).
  const std::string tail = R"(,"training":{"micro_batch_size":1,"seq_len":512,"precision":"bf16",)"
                           R"("finetune":{"method":"lora","lora_rank":8,"lora_targets":)";
  const auto lora = [&](const std::string& preset, const std::string& targets, const std::string& finetune = "",
                        const std::string& training = "") {
    return run(R"({"model":{"preset":")" + preset + "\"}" + tail + targets + finetune + "}" + training + "}}");
  };
  const auto trainable = [](const Json& r) { return field(r, "trainable_parameter_count"); };
  const std::string attention = R"(["q","k","v","o"])", mlp = R"(["q","k","v","o","gate","up","down"])";

  // Qwen1.5-MoE: 24 layers, one shared expert 5632 wide, 60 routed experts 1408 wide, d 2048.
  const std::int64_t r = 8, d = 2048, shared_ff = 5632, layers = 24;
  const Json qwen_attention = lora("qwen1.5-moe-a2.7b", attention), qwen_mlp = lora("qwen1.5-moe-a2.7b", mlp);
  EXPECT_EQ(trainable(qwen_mlp) - trainable(qwen_attention), layers * 3 * r * (d + shared_ff));
  EXPECT_EQ(term(qwen_mlp, "moe.merged_expert_weights"), 0);
  EXPECT_GT(term(qwen_mlp, "moe.shared_expert_adapters"), 0);
  EXPECT_EQ(term(qwen_attention, "moe.shared_expert_adapters"), 0);
  // Named through target_parameters, the routed experts are adapted and the shared expert is not.
  const Json qwen_parameters = lora("qwen1.5-moe-a2.7b", mlp, R"(,"target_parameters":true)");
  const std::int64_t experts = 60, expert_ff = 1408;
  EXPECT_EQ(trainable(qwen_parameters) - trainable(qwen_attention),
            layers * (r * experts * (d + 2 * expert_ff) + r * experts * (expert_ff + d)));
  EXPECT_GT(term(qwen_parameters, "moe.merged_expert_weights"), 0);
  // As an nn.Linear per expert (transformers 4), a name reaches every MLP.
  const Json qwen_loop = lora("qwen1.5-moe-a2.7b", mlp, "", R"(,"moe_dispatch":"loop")");
  EXPECT_EQ(trainable(qwen_loop) - trainable(qwen_attention),
            layers * (3 * r * (d + shared_ff) + experts * 3 * r * (d + expert_ff)));

  // DeepSeek-V3: 3 dense layers (MLP 18432 wide) and 58 MoE layers with one shared expert 2048 wide.
  const std::int64_t dd = 7168, moe_layers = 58, routed = 256, dff = 2048;
  const Json ds_attention = lora("deepseek-v3", attention), ds_mlp = lora("deepseek-v3", mlp);
  EXPECT_EQ(trainable(ds_mlp) - trainable(ds_attention),
            moe_layers * (2 * r * routed * (dd + 2 * dff) + r * routed * (dff + dd)));
  const Json ds_loop = lora("deepseek-v3", mlp, "", R"(,"moe_dispatch":"loop")");
  EXPECT_EQ(trainable(ds_loop) - trainable(ds_attention),
            3 * 3 * r * (dd + 18432) + moe_layers * (routed + 1) * 3 * r * (dd + dff));

  // gpt-oss has neither: its expert names alone reach nothing, which PEFT refuses.
  EXPECT_EQ(first_error_field(errors_of(
                R"({"model":{"preset":"gpt-oss-20b"},"training":{"finetune":{"method":"lora","lora_targets":["gate","up","down"]}}})")),
            "training.finetune.lora_targets");
  EXPECT_TRUE(errors_of(R"({"model":{"preset":"gpt-oss-20b"},"training":{"finetune":{"method":"lora",)"
                        R"("lora_targets":["gate","up","down"],"target_parameters":true}}})")
                  .find("ok")->as_bool());
}

TEST(Implementation, AdaptersOverAQuantisedBaseShareWhatIsAlreadyKept) {
  // The shared expert's adapters read the block's input and the product, which an old bitsandbytes
  // base (bnb_keeps_input) already keeps: only their A outputs are new.
  const std::string moe = R"({"model":{"preset":"qwen1.5-moe-a2.7b"},"training":{"precision":"bf16","seq_len":512,)"
                          R"("lora_adapter_dtype":"weights","finetune":{"method":"lora","lora_rank":8,"lora_dropout":0,)"
                          R"("base_bits":4,"bnb_keeps_input":true,"lora_targets":)";
  const Json shared = run(moe + R"(["q","v","gate","up","down"]}}})");
  EXPECT_EQ(term(shared, "moe.shared_expert_adapters"), 512 * 8 * 2 * 3);
  // Over an fp32 stream (prepare_model_for_kbit_training) OPT's ReLU output is fp32 and fc2's adapter
  // keeps its own 16-bit cast: adapting fc2 adds to what is saved, never takes away.
  const std::string opt = R"({"model":{"preset":"opt-125m"},"training":{"precision":"bf16_mixed","seq_len":512,)"
                          R"("finetune":{"method":"lora","lora_rank":8,"base_bits":4,"prepare_kbit":true,"lora_targets":)";
  const Json without = run(opt + R"(["q","v"]}}})");
  const Json with_down = run(opt + R"(["q","v","down"]}}})");
  EXPECT_GT(field(*with_down.find("breakdown"), "activations"), field(*without.find("breakdown"), "activations"));
  EXPECT_GT(term(with_down, "mlp.inner"), 0);
}

TEST(Implementation, TransformersLeavesFalconUnquantised) {
  // transformers 5's bitsandbytes integration replaces modules whose type is exactly nn.Linear:
  // Falcon's FalconLinear stays 16-bit (fp32 after prepare_model_for_kbit_training); LitGPT's
  // Falcon is quantised as asked.
  const std::string falcon = R"({"model":{"preset":"falcon-7b"},"training":{"finetune":{"method":"lora","base_bits":4,)";
  const Json hf = run(falcon + R"("prepare_kbit":false}}})");
  const Json sixteen = run(R"({"model":{"preset":"falcon-7b"},"training":{"finetune":{"method":"lora"}}})");
  const Json prepared = run(falcon + R"("prepare_kbit":true}}})");
  const Json litgpt = run(falcon + R"("prepare_kbit":false},"framework":"litgpt"}})");
  const auto weights = [](const Json& r) { return field(*r.find("breakdown"), "parameters"); };
  EXPECT_EQ(weights(hf), weights(sixteen));
  EXPECT_GT(weights(prepared), weights(hf) * 19 / 10);
  EXPECT_LT(weights(litgpt), weights(hf) * 6 / 10);  // 4-bit linears and head (Lightning's plugin)
}

TEST(Implementation, AFusedGateUpIsOneAdapter) {
  // Phi-3's gate_up_proj (training.projections fused on import): PEFT adapts it with one adapter
  // A [r, d], B [2ff, r], and cannot adapt half of it (peft_counts.json has the real counts).
  const std::string phi3 = R"({"model":{"preset":"phi-3-mini-4k"},"training":{"precision":"fp32","seq_len":512,)"
                           R"("finetune":{"method":"lora","lora_rank":8,"lora_dropout":0,"lora_targets":)";
  const Json attention = run(phi3 + R"(["qkv","o"]}}})");
  const Json mlp = run(phi3 + R"(["qkv","o","gate","up"]}}})");
  const std::int64_t layers = 32, r = 8, d = 3072, ff = 8192;
  EXPECT_EQ(field(mlp, "trainable_parameter_count") - field(attention, "trainable_parameter_count"),
            layers * r * (d + 2 * ff));
  // One adapter reads the MLP's input: its A output once, the input shared with nothing else.
  EXPECT_EQ(term(mlp, "mlp.input"), 512 * d * 4 + 512 * r * 4);
  // Naming part of a fused layer adapts all of it, as PEFT's targets name modules (q, v -> qkv_proj).
  const Json gate = run(phi3 + R"(["q","v","gate"]}}})");
  EXPECT_EQ(field(gate, "trainable_parameter_count"), field(mlp, "trainable_parameter_count") -
                                                          layers * r * 2 * d);  // no o adapter
  EXPECT_EQ(field(run(phi3 + R"(["q","v"]}}})"), "trainable_parameter_count"),
            field(run(phi3 + R"(["qkv"]}}})"), "trainable_parameter_count"));
  // Separate projections (transformers' Llama) keep two adapters.
  const Json split = run(phi3 + R"(["qkv","o","gate","up"]},"projections":"separate"}})");
  EXPECT_EQ(field(split, "trainable_parameter_count") - field(attention, "trainable_parameter_count"),
            layers * 2 * r * (d + ff));
}

TEST(Implementation, BitsandbytesLeavesStackedExpertsUnquantised) {
  // bitsandbytes replaces nn.Linear modules only: transformers 5's stacked experts keep the load
  // dtype (fp32 after prepare_model_for_kbit_training); unsloth quantises them itself.
  const std::string base = R"({"model":{"preset":"mixtral-8x7b"},"training":{"finetune":{"method":"lora",)"
                           R"("base_bits":4,"prepare_kbit":false})";
  const Json stacked = run(base + "}}");
  const Json loop = run(base + R"(,"moe_dispatch":"loop"}})");
  const Json unsloth = run(base + R"(,"framework":"unsloth"}})");
  const std::int64_t expert_weights = 32LL * 8 * 3 * 14336 * 4096;
  const std::int64_t stacked_bytes = *stacked.find("breakdown")->find("parameters")->as_exact_integer();
  const std::int64_t loop_bytes = *loop.find("breakdown")->find("parameters")->as_exact_integer();
  // 16-bit experts against 4-bit ones (half a byte each, plus their block scales).
  EXPECT_GT(stacked_bytes - loop_bytes, expert_weights * 2 - expert_weights / 2 - expert_weights / 8);
  EXPECT_LT(stacked_bytes - loop_bytes, expert_weights * 2 - expert_weights / 2);
  EXPECT_EQ(*unsloth.find("breakdown")->find("parameters")->as_exact_integer(), loop_bytes);
  // The result says why, and what changes it.
  const auto says = [](const Json& r, const char* text) {
    for (const Json& n : r.find("notes")->items()) {
      if (n.as_string().find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(says(stacked, "stay unquantised, in 16 bit"));
  EXPECT_FALSE(says(loop, "stay unquantised"));
  EXPECT_FALSE(says(unsloth, "stay unquantised"));
}

TEST(Implementation, TrlRunsTheTransformersClassWithItsChunkedLoss) {
  // TRL's SFTTrainer (loss_type chunked_nll, its default from 1.7): the hf profile with a loss that
  // never holds the logits; the class's knobs still apply (Gemma 2: eager attention).
  const std::string lora = R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,"micro_batch_size":2,)"
                           R"("finetune":{"method":"lora"},"framework":")";
  const Json hf = run(lora + R"(hf"}})");
  const Json trl = run(lora + R"(trl"}})");
  EXPECT_EQ(trl.find("implementation")->find("loss")->as_string(), "chunked_recompute");
  const auto loss = [](const Json& r) { return *r.find("breakdown")->find("logits_and_loss")->as_exact_integer(); };
  // transformers' loss holds B·T·V fp32 log-probabilities; TRL's, 256 rows of them and the head's
  // weight copies (the frozen bf16 head cast to fp32 and back to bf16 for each chunk).
  const std::int64_t v = 128256, d = 4096;
  EXPECT_GT(loss(hf), 2LL * 4096 * v * 4);
  EXPECT_LT(loss(trl), v * d * 6 + 2LL * 4096 * d * 2 * 2 + 256LL * v * 4 * 6);
  EXPECT_GT(loss(trl), v * d * 6);
  const Json gemma = run(R"({"model":{"preset":"gemma-2-2b"},"training":{"framework":"trl"}})");
  EXPECT_EQ(gemma.find("implementation")->find("attention")->as_string(), "eager");
  // SFTConfig checkpoints by default; the result says so when the configuration does not.
  const auto notes = [](const Json& r) { return r.find("notes")->dump(); };
  EXPECT_NE(notes(trl).find("gradient_checkpointing=True"), std::string::npos);
  EXPECT_EQ(notes(hf).find("gradient_checkpointing=True"), std::string::npos);
}

TEST(Implementation, ClassSpecificSavedTensors) {
  // OPT: ReLU keeps its output, which is fc2's saved input: no separate activation term.
  const Json opt = run(R"({"model":{"preset":"opt-125m"},"training":{"precision":"fp32","seq_len":512}})");
  EXPECT_EQ(term(opt, "mlp.inner"), 0);
  EXPECT_GT(term(opt, "mlp.down_input"), 0);
  // Gemma 2: eager attention by default (no SDPA path), and the scores' tanh output kept.
  const Json gemma2 = run(R"({"model":{"preset":"gemma-2-2b"},"training":{"seq_len":512}})");
  EXPECT_EQ(gemma2.find("implementation")->find("attention")->as_string(), "eager");
  const std::int64_t scores = 1LL * 8 * 512 * 512;  // heads x T x T, micro-batch 1
  EXPECT_EQ(term(gemma2, "attention.softcap_tanh"), scores * 2);
  const Json flash = run(R"({"model":{"preset":"gemma-2-2b"},"training":{"seq_len":512,"attention":"flash"}})");
  EXPECT_EQ(flash.find("implementation")->find("attention")->as_string(), "flash");
  EXPECT_EQ(term(flash, "attention.softcap_tanh"), 0);
  // The capped logits keep a second logits-sized tensor.
  const Json uncapped =
      run(R"({"model":{"preset":"gemma-2-2b","logit_softcap":false},"training":{"seq_len":512,"attention":"flash"}})");
  const auto loss = [](const Json& r) { return *r.find("breakdown")->find("logits_and_loss")->as_exact_integer(); };
  EXPECT_EQ(loss(flash) - loss(uncapped), 512LL * 256000 * 2);
}

TEST(Implementation, SoftmaxDtypeIsOneFieldWithTheExpectedBytes) {
  // Pure bf16, eager attention, B = 1, T = 1024, Llama-2-7B (32 heads, 32 layers). An fp32
  // softmax keeps its fp32 output (4 bytes per score) and P·V a bf16 copy (2); a compute-dtype
  // softmax keeps one bf16 tensor for both, and the scale divisor (2 bytes, GPT-2's 0-dim tensor).
  const std::string base = R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16","attention":"eager",)"
                           R"("seq_len":1024,"softmax_dtype":)";
  const Json fp32 = run(base + R"("fp32"}})"), compute = run(base + R"("compute"}})");
  const std::int64_t scores_per_layer = 32LL * 1024 * 1024;
  const std::int64_t per_layer = scores_per_layer * 4 - 2;
  EXPECT_EQ(field(*fp32.find("breakdown"), "activations") - field(*compute.find("breakdown"), "activations"),
            32 * per_layer);
  // Under autocast the softmax is fp32 whatever the code asks: the knob changes nothing.
  const std::string amp = R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16_mixed",)"
                          R"("attention":"eager","seq_len":1024,"softmax_dtype":)";
  EXPECT_EQ(field(*run(amp + R"("fp32"}})").find("breakdown"), "activations") -
                field(*run(amp + R"("compute"}})").find("breakdown"), "activations"),
            32 * -2);
}

TEST(Implementation, LogitsKeptInTheComputeDtype) {
  // B·T = 4096 tokens, V = 128,256: an fp32 upcast is 4096 · V · 4 bytes more at the loss.
  const std::string base = R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16","seq_len":4096,)"
                           R"("logits_dtype":)";
  const Json fp32 = run(base + R"("fp32"}})"), compute = run(base + R"("compute"}})");
  EXPECT_GT(field(*fp32.find("breakdown"), "logits_and_loss"), field(*compute.find("breakdown"), "logits_and_loss"));
  EXPECT_EQ(field(*fp32.find("breakdown"), "activations"), field(*compute.find("breakdown"), "activations"));
}

TEST(Implementation, TheAdditiveMaskIsKeptByFullCheckpointing) {
  // Full checkpointing keeps each layer's tensor arguments: an additive T × T mask (bf16) once.
  const std::string base = R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16","attention":"eager",)"
                           R"("checkpointing":"full","seq_len":2048,"attention_mask":)";
  const Json additive = run(base + R"("additive"}})"), implicit = run(base + R"("implicit"}})");
  EXPECT_EQ(field(*additive.find("breakdown"), "activations") - field(*implicit.find("breakdown"), "activations"),
            2048LL * 2048 * 2);
}

TEST(Implementation, CompileSavesWhatTheFusedKernelsSave) {
  // torch.compile's partitioner recomputes a norm's output and silu(gate)·up in backward: the same
  // bytes as naming the fused kernels, and a knob set by hand still wins.
  const std::string base = R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16","seq_len":2048,)";
  const Json eager = run(base + R"("checkpointing":"none"}})");
  const Json compiled = run(base + R"("checkpointing":"none","compile":"yes"}})");
  const Json fused = run(base + R"("checkpointing":"none","norm_kernel":"fused","activation_kernel":"fused"}})");
  EXPECT_EQ(compiled.find("breakdown")->dump(), fused.find("breakdown")->dump());
  EXPECT_LT(field(*compiled.find("breakdown"), "activations"), field(*eager.find("breakdown"), "activations"));
  EXPECT_EQ(compiled.find("implementation")->find("compile")->as_string(), "yes");
  EXPECT_EQ(compiled.find("implementation")->find("norm_kernel")->as_string(), "fused");
  const Json kept = run(base + R"("checkpointing":"none","compile":"yes","norm_kernel":"eager"}})");
  EXPECT_EQ(kept.find("implementation")->find("norm_kernel")->as_string(), "eager");
  EXPECT_EQ(run(base + R"("checkpointing":"none"}})").find("implementation")->find("compile")->as_string(), "no");

  // A LayerNorm under autocast over 16-bit weights (a 16-bit residual stream): eager saves an fp32 copy of its 16-bit input (and of its weight);
  // compiled, the cast is inside the fused kernel and the 16-bit input is saved. GPT-2 small, 12
  // layers, two norms each and a final one, at B·T = 1024 tokens of width 768.
  const std::string gpt2 = R"({"model":{"preset":"gpt2"},"training":{"precision":"bf16_autocast","seq_len":1024,)"
                           R"("checkpointing":"none","activation_kernel":"fused",)";
  const Json ln_eager = run(gpt2 + R"("compile":"no"}})");
  const Json ln_compiled = run(gpt2 + R"("compile":"yes"}})");
  const std::int64_t norms = 12 * 2 + 1, tokens = 1024, width = 768;
  EXPECT_EQ(field(*ln_eager.find("breakdown"), "activations") - field(*ln_compiled.find("breakdown"), "activations"),
            norms * (tokens * width * 2 + width * 4));
}

TEST(Implementation, AnInPlaceSwigluBackwardAllocatesOneGradient) {
  // Liger's and unsloth's SwiGLU backward writes the gate and up gradients over the tensors it
  // saved: one block's backward holds the down projection's input gradient only, two B·T·ff
  // tensors fewer than a kernel that allocates them (Llama 3 8B: ff 14336, bf16, B·T = 4096; LoRA
  // and a fused linear loss, so that the top block's backward is the step's high point). What
  // forward saves is the same.
  const std::string base = R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16","seq_len":4096,)"
                           R"("checkpointing":"none","loss":"fused_linear_ce","finetune":{"method":"lora"},)"
                           R"("activation_kernel":)";
  const Json fused = run(base + R"("fused"}})"), in_place = run(base + R"("fused_inplace"}})");
  EXPECT_EQ(field(*fused.find("breakdown"), "activations"), field(*in_place.find("breakdown"), "activations"));
  const auto backward = [](const Json& j) {
    for (const Json& p : j.find("phases")->items()) {
      if (p.find("name")->as_string() == "backward") return *p.find("bytes")->as_exact_integer();
    }
    return std::int64_t{-1};
  };
  EXPECT_EQ(backward(fused) - backward(in_place), 2LL * 4096 * 14336 * 2);
  const Json liger = run(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"liger"}})");
  EXPECT_EQ(liger.find("implementation")->find("activation_kernel")->as_string(), "fused_inplace");
}

TEST(Implementation, UseCacheInTrainingKeepsEveryLayersKeysAndValues) {
  // Llama-2-7B (32 layers, MHA, width 4096), bf16, B·T = 4·2048: each layer returns keys and values
  // of 4·2048·4096·2 bytes each. Under full checkpointing they are memory of their own; a loop that
  // keeps its outputs holds them through backward and the optimizer step.
  const std::string base = R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16","micro_batch_size":4,)"
                           R"("seq_len":2048,"checkpointing":"full","loop_keeps_logits":"yes",)";
  const Json off = run(base + R"("use_cache":"no"}})");
  const Json on = run(base + R"("use_cache":"yes"}})");
  const std::int64_t cache = 32 * 2 * (std::int64_t{4} * 2048 * 4096 * 2);
  const auto phase = [](const Json& r, const char* name) {
    for (const Json& p : r.find("phases")->items()) {
      if (p.find("name")->as_string() == name) return *p.find("bytes")->as_exact_integer();
    }
    return std::int64_t{-1};
  };
  // The end of forward holds the previous step's cache (the loop lets its outputs go only when this
  // forward returns) beside this one's; backward and the step this one's.
  EXPECT_EQ(phase(on, "forward") - phase(off, "forward"), 2 * cache);
  EXPECT_EQ(phase(on, "backward") - phase(off, "backward"), cache);
  EXPECT_EQ(phase(on, "optimizer_step") - phase(off, "optimizer_step"), cache);
  EXPECT_EQ(field(on, "between_steps_bytes") - field(off, "between_steps_bytes"), cache);
  EXPECT_EQ(on.find("implementation")->find("use_cache")->as_string(), "yes");
  // Dropped with the loss: only the end of forward holds them.
  const Json dropped = run(base.substr(0, base.find(R"("loop_keeps_logits")")) + R"("loop_keeps_logits":"no","use_cache":"yes"}})");
  const Json dropped_off = run(base.substr(0, base.find(R"("loop_keeps_logits")")) + R"("loop_keeps_logits":"no","use_cache":"no"}})");
  EXPECT_EQ(phase(dropped, "forward") - phase(dropped_off, "forward"), cache);
  EXPECT_EQ(phase(dropped, "backward"), phase(dropped_off, "backward"));
  // Without checkpointing the attention saves those very tensors (MHA, sdpa): nothing more while
  // they are saved; after backward frees them the loop's outputs still hold them, through the
  // optimizer step and beside the next forward (one micro-batch of 2048 tokens here).
  const std::string plain = R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16","seq_len":2048,)"
                            R"("checkpointing":"none","loop_keeps_logits":"yes",)";
  const Json plain_on = run(plain + R"("use_cache":"yes"}})");
  const Json plain_off = run(plain + R"("use_cache":"no"}})");
  const std::int64_t one = cache / 4;
  // Backward: nothing more at its start; at its end (the saved tensors freed) the held cache, when
  // that end is backward's high point.
  EXPECT_GE(phase(plain_on, "backward"), phase(plain_off, "backward"));
  EXPECT_LE(phase(plain_on, "backward") - phase(plain_off, "backward"), one);
  EXPECT_EQ(phase(plain_on, "forward") - phase(plain_off, "forward"), one);
  EXPECT_EQ(phase(plain_on, "optimizer_step") - phase(plain_off, "optimizer_step"), one);
  EXPECT_EQ(field(plain_on, "between_steps_bytes") - field(plain_off, "between_steps_bytes"), one);
}

TEST(Implementation, GptBigCodeKeepsItsCacheAsViewsOfTheFusedProjection) {
  // transformers' GPTBigCodeModel leaves use_cache on under gradient checkpointing: every block's
  // present is key_value, a slice of c_attn's output, so the whole output (queries included) lives
  // until the loss is computed. SantaCoder: 24 blocks of width 2048, 16 query heads and one key /
  // value head of 128; B·T = 4·2048.
  const std::string config = R"({"model_type":"gpt_bigcode","vocab_size":49280,"n_embd":2048,"n_layer":24,)"
                             R"("n_head":16,"n_positions":2048,"multi_query":true,"use_cache":true})";
  const HfImport imported = import_hf_config_text(config);
  ASSERT_TRUE(imported.errors.empty());
  EXPECT_EQ(class_reference(imported.model.model_type).use_cache, Switch::kYes);
  EXPECT_EQ(class_reference("gpt_bigcode").use_cache, Switch::kYes);
  // A file that turns the cache off is told how to say so (the class keeps it by default).
  const HfImport off = import_hf_config_text(R"({"model_type":"gpt_bigcode","vocab_size":49280,"n_embd":2048,)"
                                             R"("n_layer":24,"n_head":16,"n_positions":2048,"use_cache":false})");
  ASSERT_TRUE(off.errors.empty());
  bool warned = false;
  for (const Issue& w : off.warnings) warned = warned || (w.field == "use_cache" && w.message.find("training.use_cache") != std::string::npos);
  EXPECT_TRUE(warned);
  const std::string model = R"({"model":{"preset":"gpt2","model_type":"gpt_bigcode","hidden_size":2048,)"
                            R"("num_hidden_layers":24,"num_attention_heads":16,"num_key_value_heads":1,)"
                            R"("intermediate_size":8192,"vocab_size":49280,"max_position_embeddings":2048},)";
  const std::string training = R"("training":{"micro_batch_size":4,"seq_len":2048,"checkpointing":"full",)"
                               R"("attention":"flash","projections":"fused",)";
  const auto phase = [](const Json& r, const char* name) {
    for (const Json& p : r.find("phases")->items()) {
      if (p.find("name")->as_string() == name) return *p.find("bytes")->as_exact_integer();
    }
    return std::int64_t{-1};
  };
  const std::int64_t tokens = 4 * 2048, width = 2048 + 2 * 128;
  // Full fine-tuning in bf16: c_attn's output is bf16.
  const Json full_on = run(model + training + R"("precision":"bf16","use_cache":"yes"}})");
  const Json full_off = run(model + training + R"("precision":"bf16","use_cache":"no"}})");
  EXPECT_EQ(phase(full_on, "forward") - phase(full_off, "forward"), 24 * tokens * width * 2);
  // QLoRA under autocast: the LayerNorm's fp32 output into a bitsandbytes linear gives an fp32
  // c_attn output (bitsandbytes/nn/modules.py `.to(inp_dtype)`), and that is what is kept.
  const std::string qlora = R"("precision":"bf16_autocast","finetune":{"method":"lora","base_bits":4,)"
                            R"("lora_targets":["qkv"]},)";
  const Json q_on = run(model + training + qlora + R"("use_cache":"yes"}})");
  const Json q_off = run(model + training + qlora + R"("use_cache":"no"}})");
  EXPECT_EQ(phase(q_on, "forward") - phase(q_off, "forward"), 24 * tokens * width * 4);
}

TEST(Implementation, Fsdp1FrozenUnitsKeepTheRecomputedInputsUnderReentrantCheckpointing) {
  // torch FSDP1 reshards a unit of frozen parameters from a hook on its inputs, registered when
  // reentrant checkpointing recomputes the block on a detached copy of its input and removed only
  // at backward's end: every block's input and its gradient are alive at the end of backward.
  // Llama-2-7B LoRA on 2 GPUs (FULL_SHARD, use_orig_params off), bf16, B·T = 4·2048: 32 blocks of
  // 4·2048·4096·2 bytes, twice.
  // A fused linear cross-entropy keeps the loss small, so the blocks' backward is the high point.
  const std::string base = R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16","micro_batch_size":4,)"
                           R"("seq_len":2048,"checkpointing":"full","loss":"fused_linear_ce","finetune":{"method":"lora"},)";
  const std::string fsdp = R"("parallel":{"num_gpus":2,"zero_stage":3}})";
  const auto phase = [](const Json& r, const char* name) {
    for (const Json& p : r.find("phases")->items()) {
      if (p.find("name")->as_string() == name) return *p.find("bytes")->as_exact_integer();
    }
    return std::int64_t{-1};
  };
  const Json reentrant = run(base + R"("checkpoint_impl":"reentrant"},)" + fsdp);
  const Json plain = run(base + R"("checkpoint_impl":"non_reentrant"},)" + fsdp);
  EXPECT_EQ(reentrant.find("implementation")->find("checkpoint_impl")->as_string(), "reentrant");
  const std::int64_t one = std::int64_t{4} * 2048 * 4096 * 2, inputs = 32 * one;
  // The bottom block's backward runs beside the other 31 blocks' input gradients (their inputs are
  // the checkpoints, alive in both); a plain backward's high point is the top block's, beside the
  // head's input gradient (one block input).
  EXPECT_EQ(phase(reentrant, "backward") - phase(plain, "backward"), inputs - one - one);
  EXPECT_EQ(phase(reentrant, "forward"), phase(plain, "forward"));
  // The hf profile's checkpointing is transformers 5's, non-reentrant (huggingface/transformers#43203;
  // transformers 4 passed use_reentrant=True); unsloth's offloaded checkpointer recomputes as the
  // reentrant one does.
  const Json hf = run(base + R"("framework":"hf"},)" + fsdp);
  EXPECT_EQ(hf.find("implementation")->find("checkpoint_impl")->as_string(), "non_reentrant");
  EXPECT_EQ(phase(hf, "backward"), phase(plain, "backward"));
  EXPECT_EQ(run(base + R"("framework":"unsloth"}})").find("implementation")->find("checkpoint_impl")->as_string(),
            "reentrant");
  // The HF Trainer gives the adapters units of their own (PEFT's fsdp_auto_wrap_policy), so the
  // blocks' units stay frozen under use_orig_params too (tools/frameworks/fsdp1_units.py).
  const std::string orig = R"("parallel":{"num_gpus":2,"zero_stage":3,"fsdp_use_orig_params":true}})";
  EXPECT_EQ(phase(run(base + R"("checkpoint_impl":"reentrant"},)" + orig), "backward") -
                phase(run(base + R"("checkpoint_impl":"non_reentrant"},)" + orig), "backward"),
            inputs - one - one);
  // Not where no unit is frozen (LitGPT's Block units with use_orig_params mix the adapters in),
  // under FSDP2 (torchtune), without FSDP units (ZeRO-1), or for a full fine-tune.
  EXPECT_EQ(phase(run(base + R"("framework":"litgpt","checkpoint_impl":"reentrant"},)" + orig), "backward"),
            phase(run(base + R"("framework":"litgpt","checkpoint_impl":"non_reentrant"},)" + orig), "backward"));
  EXPECT_EQ(phase(run(base + R"("framework":"torchtune","checkpoint_impl":"reentrant"},)" + fsdp), "backward"),
            phase(run(base + R"("framework":"torchtune","checkpoint_impl":"non_reentrant"},)" + fsdp), "backward"));
  EXPECT_EQ(phase(run(base + R"("checkpoint_impl":"reentrant"},"parallel":{"num_gpus":2,"zero_stage":1}})"), "backward"),
            phase(run(base + R"("checkpoint_impl":"non_reentrant"},"parallel":{"num_gpus":2,"zero_stage":1}})"), "backward"));
  const std::string full = R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16","micro_batch_size":4,)"
                           R"("seq_len":2048,"checkpointing":"full","loss":"fused_linear_ce",)";
  EXPECT_EQ(phase(run(full + R"("checkpoint_impl":"reentrant"},)" + fsdp), "backward"),
            phase(run(full + R"("checkpoint_impl":"non_reentrant"},)" + fsdp), "backward"));
}

TEST(Implementation, BaichuanAlibiBiasIsOneTensorPerStepAndACacheBetweenSteps) {
  // 32 heads, B·T = 2·1024, bf16: the step's B×H×T×T bias (kept through backward by the
  // checkpointed layers) and the model's H×T×T table (a module buffer, counted with the weights).
  const std::string base = R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16","micro_batch_size":2,)"
                           R"("seq_len":1024,"checkpointing":"full","attention":"sdpa",)";
  const Json causal = run(base + R"("attention_mask":"implicit"}})");
  const Json alibi = run(base + R"("attention_mask":"alibi"}})");
  const std::int64_t t = 1024, heads = 32;
  EXPECT_EQ(field(*alibi.find("breakdown"), "activations") - field(*causal.find("breakdown"), "activations"),
            2 * heads * t * t * 2);
  EXPECT_EQ(field(*alibi.find("breakdown"), "parameters") - field(*causal.find("breakdown"), "parameters"),
            heads * t * t * 2);
  // Eager attention without checkpointing saves its own scores; the bias dies with the forward.
  const std::string eager = R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16","seq_len":1024,)"
                            R"("checkpointing":"none","attention":"eager",)";
  EXPECT_EQ(field(*run(eager + R"("attention_mask":"alibi"}})").find("breakdown"), "activations"),
            field(*run(eager + R"("attention_mask":"implicit"}})").find("breakdown"), "activations"));
}

TEST(Implementation, TorchtuneCompilesItsChunkedLossIntoAFusedCrossEntropy) {
  // torchtune's compile_loss: each chunk's upcast and log-softmax fuse; what stays is the fused
  // cross-entropy's (16-bit logits and a log-sum-exp per row), as if training.loss were fused_ce.
  const std::string base = R"({"model":{"preset":"llama-3.2-1b"},"training":{"framework":"torchtune","precision":"bf16",)"
                           R"("seq_len":2048,"checkpointing":"full","loss":"chunked",)";
  const Json compiled = run(base + R"("compile":"yes"}})");
  EXPECT_EQ(compiled.find("implementation")->find("loss")->as_string(), "fused_ce");
  const Json fused = run(base.substr(0, base.find(R"("loss")")) + R"("loss":"fused_ce","compile":"yes"}})");
  EXPECT_EQ(compiled.find("breakdown")->find("logits_and_loss")->dump(), fused.find("breakdown")->find("logits_and_loss")->dump());
  // Not compiled, or another framework's chunked loss: as stated.
  EXPECT_EQ(run(base + R"("compile":"no"}})").find("implementation")->find("loss")->as_string(), "chunked");
  const std::string litgpt = R"({"model":{"preset":"llama-3.2-1b"},"training":{"framework":"litgpt","loss":"chunked","compile":"yes"}})";
  EXPECT_EQ(run(litgpt).find("implementation")->find("loss")->as_string(), "chunked");
}

TEST(Implementation, ACompiledCrossEntropyKeepsTheLogitsAndWritesANewGradient) {
  // torchtitan compiles cross_entropy(pred.float(), labels) with the model: no V-wide fp32 tensor,
  // two fp32 values per row kept, and backward's 16-bit gradient beside the saved logits (where a
  // fused kernel writes it into them).
  const std::string base = R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"torchtitan",)"
                           R"("precision":"bf16_fsdp","seq_len":8192,"checkpointing":"selective_op","compile":"yes",)";
  const std::string tail = R"(},"parallel":{"num_gpus":8,"zero_stage":3}})";
  const Json compiled = run(base + R"("loss":"compiled_ce")" + tail);
  const Json fused = run(base + R"("loss":"fused_ce")" + tail);
  const Json eager = run(base + R"("loss":"eager")" + tail);
  EXPECT_EQ(compiled.find("implementation")->find("loss")->as_string(), "compiled_ce");
  const std::int64_t tokens = 8192, vocab = 128256;
  const auto loss = [](const Json& r) { return field(*r.find("breakdown"), "logits_and_loss"); };
  EXPECT_EQ(loss(compiled) - loss(fused), tokens * vocab * 2 + tokens * 4);
  EXPECT_LT(loss(compiled), loss(eager));
  EXPECT_LT(field(compiled, "peak_allocated_bytes"), field(eager, "peak_allocated_bytes"));
}

TEST(Implementation, LossParallelHoldsOneMoreFp32LogitTensorThanAtensKernels) {
  // torch.distributed.tensor.parallel.loss_parallel (torchtitan under tensor parallelism): the
  // log-softmax as tensor arithmetic keeps input, shifted and exp(shifted) at once, and backward's
  // (zeros_like(x) + exp(x)) * grad_output holds four fp32 V-wide tensors where aten holds three.
  const std::string base = R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"torchtitan",)"
                           R"("precision":"bf16_fsdp","seq_len":8192,"micro_batch_size":4,"checkpointing":"full","compile":"no",)";
  const std::string tail = R"(},"parallel":{"num_gpus":16,"tensor":8,"sequence_parallel":true,"zero_stage":3}})";
  const Json parallel = run(base + R"("loss":"loss_parallel")" + tail);
  const Json eager = run(base + R"("loss":"eager")" + tail);
  ASSERT_EQ(parallel.find("implementation")->find("loss")->as_string(), "loss_parallel");
  const std::int64_t tokens = 4 * 8192, vocab_shard = 128256 / 8;
  const auto loss = [](const Json& r) { return field(*r.find("breakdown"), "logits_and_loss"); };
  EXPECT_EQ(loss(parallel) - loss(eager), tokens * vocab_shard * 4);
  EXPECT_GT(field(parallel, "peak_allocated_bytes"), field(eager, "peak_allocated_bytes"));
  // Without the upcast (the logits read in bf16), _log_softmax still computes in fp32: its own copy,
  // shifted and exp, and a bf16 result; backward's four tensors are then bf16.
  const Json bf16 = run(base + R"("loss":"loss_parallel","logits_dtype":"compute")" + tail);
  const std::int64_t h = tokens * vocab_shard * 2, f = tokens * vocab_shard * 4;
  const std::int64_t head_input = tokens * 4096 / 8 * 2, labels = tokens * 8;  // sequence-parallel head input
  EXPECT_EQ(loss(bf16), head_input + labels + std::max(h + f * 3 + h, h * 4));
}

TEST(Implementation, TransformersBefore449ShiftTheLogitsWithACopy) {
  // shift_logits = logits[..., :-1, :].contiguous() after logits.float(): while log_softmax runs,
  // the bf16 logits, the fp32 upcast, its shifted copy and the fp32 log-probabilities coexist (14
  // bytes a logit, 2 more than backward's three fp32 tensors). In the compute dtype (Qwen-1's and
  // GPTBigCode's loss, no upcast) the copy is 2 bytes a logit and does not pass backward's three.
  const std::string base = R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,"checkpointing":"full",)"
                           R"("finetune":{"method":"lora"},"precision":"bf16",)";
  const auto loss = [](const Json& r) { return field(*r.find("breakdown"), "logits_and_loss"); };
  const Json plain = run(base + R"("loss_shift_copy":"no"}})");
  const Json copied = run(base + R"("loss_shift_copy":"yes"}})");
  EXPECT_EQ(copied.find("implementation")->find("loss_shift_copy")->as_string(), "yes");
  EXPECT_EQ(plain.find("implementation")->find("loss_shift_copy")->as_string(), "no");  // auto: transformers 4.49+
  const std::int64_t logits = std::int64_t{4096} * 128256;
  EXPECT_EQ(loss(copied) - loss(plain), logits * 2);
  const std::string compute = base + R"("logits_dtype":"compute",)";
  EXPECT_EQ(loss(run(compute + R"("loss_shift_copy":"yes"}})")), loss(run(compute + R"("loss_shift_copy":"no"}})")));
}

// llm.c allocates every buffer once and keeps it (train_gpt2.cu at the ZeRO-1 merge, 750c5fd): bf16
// parameters and gradients (param_sizeof), fp32 m, v and master copy, the activations of
// fill_in_activation_sizes (a fused classifier's one B·T·Vp buffer among them) and GradActTensors'
// bt4c and residual3. No caching allocator: what it reserves is what it allocated. GPT-2 124M,
// B 4, T 1024, Vp 50304, cuDNN attention.
TEST(Implementation, LlmCHoldsEveryBufferItEverAllocated) {
  const Json r = run(R"({"model":{"preset":"gpt2","vocab_size":50304},"training":{"framework":"llm_c",)"
                     R"("precision":"bf16_master","micro_batch_size":4,"seq_len":1024,"attention":"flash",)"
                     R"("checkpointing":"none","dropout":0.0}})");
  const std::int64_t P = field(r, "parameter_count");
  const std::int64_t B = 4, T = 1024, C = 768, L = 12, NH = 12, Vp = 50304;
  const std::int64_t acts = B * T * C + L * B * T * C + 2 * L * B * T + L * B * T * C + L * B * NH * T * 2 +
                            3 * L * B * T * C + 2 * L * B * T + 2 * L * B * T * 4 * C + 2 * L * B * T * C +
                            B * T * C + 2 * B * T + L * B * T * 3 * C + B * T * Vp;
  const std::int64_t llm_c = P * (2 + 2 + 8 + 4) + acts * 2 + B * T * 5 * C * 2;
  EXPECT_NEAR(static_cast<double>(field(r, "peak_allocated_bytes")), static_cast<double>(llm_c), llm_c * 1e-3);
  // Nothing is freed between steps either.
  EXPECT_EQ(field(r, "between_steps_bytes"), field(r, "peak_allocated_bytes"));
  EXPECT_EQ(field(r, "peak_reserved_bytes"), field(r, "peak_allocated_bytes"));
  const Json& breakdown = *r.find("breakdown");
  EXPECT_EQ(field(breakdown, "gradients"), field(breakdown, "parameters"));
}

// LitGPT holds lm_head and transformer.wte apart, and its checkpoint converter copies a tied
// model's embedding into the head: Gemma-2B (V 256,000 × d 2,048) has a second 524,288,000-weight
// matrix there, in bf16, with its gradient and AdamW states; the echoed model keeps its tie.
TEST(Implementation, LitgptUntiesTheOutputHead) {
  const auto config = [](const char* framework) {
    return std::string(R"({"model":{"preset":"gemma-2b"},"training":{"framework":")") + framework +
           R"(","precision":"bf16","seq_len":512}})";
  };
  const Json hf = run(config("hf")), litgpt = run(config("litgpt"));
  const std::int64_t head = std::int64_t{256'000} * 2048;
  EXPECT_EQ(field(litgpt, "parameter_count") - field(hf, "parameter_count"), head);
  EXPECT_EQ(*litgpt.find("breakdown")->find("parameters")->as_exact_integer() -
                *hf.find("breakdown")->find("parameters")->as_exact_integer(),
            head * 2);
  EXPECT_TRUE(litgpt.find("config")->find("model")->find("tie_word_embeddings")->as_bool());
}

// LitGPT's LoRAQKVLinear zero-pads the q/v adapters' output into the fused qkv width with an
// out-of-place index_copy that keeps its source: B·T·(q + v widths) in bf16 per block (Llama-2-7B:
// 4,096 + 4,096 columns; B·T = 2,048). Adapting o only pads nothing; transformers has no such copy.
TEST(Implementation, LitgptKeepsItsZeroPaddedQkvAdapterOutput) {
  const auto padded = [](const char* framework, const char* targets) {
    const Json r = run(std::string(R"({"model":{"preset":"llama-2-7b"},"training":{"framework":")") + framework +
                       R"(","precision":"bf16","seq_len":1024,"micro_batch_size":2,"finetune":{"method":"lora",)" +
                       R"("lora_targets":)" + targets + "}}}");
    for (const Json& term : r.find("activation_terms_per_layer")->items()) {
      if (term.find("name")->as_string() == "attention.lora_qkv_padded") return *term.find("bytes")->as_exact_integer();
    }
    return std::int64_t{0};
  };
  EXPECT_EQ(padded("litgpt", R"(["q","v"])"), std::int64_t{2048} * (4096 + 4096) * 2);
  EXPECT_EQ(padded("litgpt", R"(["o"])"), 0);
  EXPECT_EQ(padded("hf", R"(["q","v"])"), 0);
}

// A four-norm block (Gemma 2) under a fused RMSNorm kernel (Liger's: it saves its input and the
// rstd): the two norms on the stream keep fp32 inputs under bf16_mixed, the two after the attention
// and the MLP keep those sublayers' 16-bit outputs. Gemma-2-9B, B·T = 2,048 tokens × 3,584.
TEST(Implementation, NormsAfterTheSublayersKeepTheSublayersDtype) {
  const Json r = run(R"({"model":{"preset":"gemma-2-9b"},"training":{"norm_kernel":"fused","seq_len":2048}})");
  std::int64_t norms = -1;
  for (const Json& term : r.find("activation_terms_per_layer")->items()) {
    if (term.find("name")->as_string() == "norms") norms = *term.find("bytes")->as_exact_integer();
  }
  const std::int64_t td = std::int64_t{2048} * 3584, rstd = std::int64_t{2048} * 4;
  EXPECT_EQ(norms, 2 * (td * 4 + rstd) + 2 * (td * 2 + rstd));
}

// Phi-2's gelu_new: transformers runs it as Python arithmetic (four saved tensors, three in fp32
// under autocast); LitGPT calls F.gelu(x, approximate="tanh"), one kernel that saves its input.
// B·T = 1,024 tokens × 10,240 columns, bf16.
TEST(Implementation, LitgptRunsGeluNewAsOneKernel) {
  const auto inner = [](const char* framework) {
    const Json r = run(std::string(R"({"model":{"preset":"phi-2"},"training":{"framework":")") + framework +
                       R"(","precision":"bf16","seq_len":1024}})");
    for (const Json& term : r.find("activation_terms_per_layer")->items()) {
      if (term.find("name")->as_string() == "mlp.inner") return *term.find("bytes")->as_exact_integer();
    }
    return std::int64_t{0};
  };
  EXPECT_EQ(inner("litgpt"), std::int64_t{1024} * 10240 * 2);
  EXPECT_EQ(inner("hf"), std::int64_t{1024} * 10240 * 2 * 4);
}

// Squared ReLU (Nemotron, Arcee; transformers' ReLUSquaredActivation): relu keeps its output and
// square, which is pow(x, 2) below the Python layer and on autocast's fp32 list, an fp32 copy of it
// under autocast; without autocast the two are one tensor (measured: families.py, arcee).
// 1,024 tokens × 11,008 columns of Llama-2-7B's shapes with a plain MLP.
TEST(Implementation, SquaredReluKeepsAnFp32CopyUnderAutocast) {
  const auto inner = [](const char* act, const char* precision) {
    return term(run(std::string(R"({"model":{"preset":"llama-2-7b","mlp":"plain","hidden_act":")") + act +
                    R"("},"training":{"precision":")" + precision + R"(","seq_len":1024}})"),
                "mlp.inner");
  };
  const std::int64_t n = std::int64_t{1024} * 11008;
  EXPECT_EQ(inner("relu2", "bf16_mixed"), n * (2 + 4));
  EXPECT_EQ(inner("gelu", "bf16_mixed"), n * 2);
  EXPECT_EQ(inner("relu2", "bf16"), n * 2);
  EXPECT_EQ(inner("relu2", "fp32"), n * 4);
}

// xIELU in transformers' Python (Apertus): x, alpha_p·x, expm1's output and expm1 - x, the bool
// condition and the two scalars; frozen scalars (LoRA) drop expm1 - x, and autocast makes the
// scalars (softplus) and expm1 fp32 (measured: families.py, apertus). 1,024 tokens × 11,008.
TEST(Implementation, XieluKeepsItsPythonIntermediates) {
  const auto inner = [](const char* precision, const char* method) {
    return term(run(std::string(R"({"model":{"preset":"llama-2-7b","mlp":"plain","hidden_act":"xielu"},)") +
                    R"("training":{"precision":")" + precision + R"(","seq_len":1024,"finetune":{"method":")" + method +
                    R"("}}})"),
                "mlp.inner");
  };
  const std::int64_t n = std::int64_t{1024} * 11008;
  EXPECT_EQ(inner("fp32", "full"), n * (4 + 4 + 4 * 2 + 1) + 4 * 2);
  EXPECT_EQ(inner("bf16_mixed", "full"), n * (2 + 4 + 4 * 2 + 1) + 4 * 2);
  EXPECT_EQ(inner("bf16_mixed", "lora"), n * (2 + 4 + 4 + 1) + 4 * 2);
  EXPECT_EQ(inner("bf16", "full"), n * (2 + 2 + 2 * 2 + 1) + 2 * 2);
}

// OLMo-1's weightless LayerNorm runs on an fp32 copy of its input and has no weight to cast; its
// clip_qkv clamps keep a copy of q, k and v each. OLMo-1B's shapes: 2,048 tokens × 2,048.
TEST(Implementation, OlmoWeightlessNormAndClampedQkv) {
  const auto terms = [](bool clip) {
    const Json r = run(std::string(R"({"model":{"vocab_size":50304,"hidden_size":2048,"num_hidden_layers":16,)"
                                   R"("num_attention_heads":16,"intermediate_size":8192,"norm":"layernorm",)"
                                   R"("norm_bias":false,"norm_weight":false,"clip_qkv":)") +
                       (clip ? "true" : "false") + R"(},"training":{"precision":"bf16","seq_len":2048}})");
    return std::pair{term(r, "norms"), term(r, "attention.qkv_clamp")};
  };
  const std::int64_t td = std::int64_t{2048} * 2048, rstd = std::int64_t{2048} * 4;
  EXPECT_EQ(terms(false).first, 2 * (td * 4 + 2 * rstd));
  EXPECT_EQ(terms(false).second, 0);
  EXPECT_EQ(terms(true).second, 3 * td * 2);
}

// PEFT's LoRA layers over a bitsandbytes base cast their input to the fp32 adapters only when
// autocast is off (peft/tuners/lora/bnb.py: requires_conversion = not torch.is_autocast_enabled()):
// under autocast the q and v adapters share the 16-bit input; over a 16-bit base each keeps
// autocast's cast of PEFT's fp32 copy. Llama-2-7B, 1,024 tokens x 4,096.
TEST(Implementation, PeftBitsandbytesAdaptersShareTheirInputUnderAutocast) {
  const auto qkv_input = [](const std::string& finetune, const char* precision = "bf16_mixed") {
    return term(run(std::string(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":")") + precision +
                    R"(","seq_len":1024,"finetune":{"lora_targets":["q","v"],)" + finetune + "}}}"),
                "attention.qkv_input");
  };
  const std::int64_t td = std::int64_t{1024} * 4096;
  EXPECT_EQ(qkv_input(R"("method":"lora","base_bits":16)") - qkv_input(R"("method":"lora","base_bits":4)"), td * 2);
  // LLM.int8() is the same bitsandbytes layer; AdaLoRA's asks too.
  EXPECT_EQ(qkv_input(R"("method":"lora","base_bits":8)"), qkv_input(R"("method":"lora","base_bits":4)"));
  EXPECT_EQ(qkv_input(R"("method":"adalora","base_bits":16)") - qkv_input(R"("method":"adalora","base_bits":4)"), td * 2);
  // Without autocast PEFT casts (to fp32 adapters); a GPTQ base's LoRA layer casts always; other
  // methods' layers cast over any base.
  EXPECT_EQ(qkv_input(R"("method":"lora","base_bits":4)", "bf16"), qkv_input(R"("method":"lora","base_bits":16)", "bf16"));
  EXPECT_EQ(qkv_input(R"("method":"lora","base_bits":4,"quant_method":"gptq")"), qkv_input(R"("method":"lora","base_bits":16)"));
  EXPECT_EQ(qkv_input(R"("method":"loha","base_bits":4)"), qkv_input(R"("method":"loha","base_bits":16)"));
  // HiRA's bitsandbytes layer asks too: its adapters keep the one 16-bit input (peft.cpp), where
  // over a 16-bit base each keeps its own cast.
  const auto hira_inputs = [](int bits) {
    return term(run(std::string(R"({"model":{"preset":"llama-2-7b"},"training":{"precision":"bf16_mixed","seq_len":1024,)") +
                    R"("finetune":{"method":"hira","lora_targets":["q","v"],"base_bits":)" + std::to_string(bits) + "}}}"),
                "peft.adapter_inputs");
  };
  EXPECT_EQ(hira_inputs(4), td * 2);
  EXPECT_EQ(hira_inputs(16), 2 * td * 2);
}

// DoRA over a bitsandbytes base under autocast returns fp32 (its fp32 magnitude promotes the sum,
// and the 4-bit layer casts back only with autocast off: peft_returns_fp32). An adapted o_proj or
// down_proj turns the stream fp32, and the MLP after it computes in fp32; q and v alone leave both
// 16-bit. The base output DoRA keeps is in its layer's input dtype. (Measured: families.py's QDoRA
// steps, within 0.3 % where no first block differs.) 1,024 tokens x 14,336 x 2 tensors x 2 bytes.
TEST(Implementation, DoraOverBitsandbytesReturnsFp32UnderAutocast) {
  const auto mlp = [](const std::string& finetune) {
    return term(run(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_mixed",)") +
                    R"("seq_len":1024,"finetune":{"base_bits":4,)" + finetune + "}}}"),
                "mlp.inner");
  };
  const std::int64_t inner16 = std::int64_t{1024} * 14336 * 3 * 2;
  EXPECT_EQ(mlp(R"("method":"dora","lora_targets":["q","v"])"), inner16);
  EXPECT_EQ(mlp(R"("method":"dora","lora_targets":["q","k","v","o"])"), inner16 * 2);
  EXPECT_EQ(mlp(R"("method":"lora","lora_targets":["q","k","v","o"])"), inner16);
  // With 16-bit adapters the magnitude is 16-bit: nothing promotes.
  const Json half = run(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_mixed","seq_len":1024,)"
                        R"("lora_adapter_dtype":"weights","finetune":{"base_bits":4,"method":"dora","lora_targets":["o"]}}})");
  EXPECT_EQ(term(half, "mlp.inner"), inner16);
  // Over a 16-bit base PEFT's layer casts its result back: 16-bit.
  EXPECT_EQ(mlp(R"("method":"dora","base_bits":16,"lora_targets":["q","k","v","o"])"), inner16);
  // IA3's fp32 scale and RoAd's fp32 rotation do the same over a 4-bit base (ia3/bnb.py,
  // road/bnb.py); IA3 on down_proj (feedforward: it scales the input, which the 4-bit layer then
  // returns in fp32) turns the stream fp32 too.
  EXPECT_EQ(mlp(R"("method":"ia3","lora_targets":["q","v","down"])"), inner16 * 2);
  EXPECT_EQ(mlp(R"("method":"ia3","lora_targets":["q","v"])"), inner16);
  EXPECT_EQ(mlp(R"("method":"road","lora_targets":["q","v","o"])"), inner16 * 2);
  // What IA3 keeps of q_proj's output is in its input's dtype: fp32 once the stream is (prepare_kbit).
  const auto adapters = [](const char* prepare) {
    return term(run(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_mixed",)") +
                    R"("seq_len":1024,"finetune":{"base_bits":4,"method":"ia3","lora_targets":["q"],"prepare_kbit":)" +
                    prepare + "}}}"),
                "peft.adapters");
  };
  EXPECT_EQ(adapters("true") - adapters("false"), std::int64_t{1024} * 4096 * 2);
  // Without autocast IA3's layer casts x to fp32 and returns what the base gives it, fp32, whatever
  // its adapters' dtype; RoAd's returns its rotation's dtype: fp32 adapters only.
  const auto pure = [](const std::string& finetune, const char* adapters_dtype) {
    return term(run(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16","seq_len":1024,)") +
                    R"("lora_adapter_dtype":")" + adapters_dtype + R"(","finetune":{"base_bits":4,)" + finetune + "}}}"),
                "mlp.inner");
  };
  EXPECT_EQ(pure(R"("method":"ia3","lora_targets":["q","v","o"])", "weights"), inner16 * 2);
  EXPECT_EQ(pure(R"("method":"road","lora_targets":["q","v","o"])", "fp32"), inner16 * 2);
  EXPECT_EQ(pure(R"("method":"road","lora_targets":["q","v","o"])", "weights"), inner16);
  EXPECT_EQ(pure(R"("method":"dora","lora_targets":["q","v","o"])", "fp32"), inner16);
  // DoRA with dropout runs F.linear again: its products keep that 16-bit output and the 16-bit LoRA
  // output (not the 4-bit layer's fp32 one), and F.linear keeps the dequantised weight's cast.
  const Json dropped = run(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_mixed","seq_len":1024,)"
                           R"("finetune":{"base_bits":4,"method":"dora","lora_targets":["q"],"prepare_kbit":true,)"
                           R"("lora_dropout":0.05}}})");
  EXPECT_EQ(term(dropped, "peft.adapters"),
            std::int64_t{1024} * 4096 * 2 * 2 + std::int64_t{4096} * 4096 * 2 + std::int64_t{4096} * 3 * 4);
  // PEFT's GPTQ LoRA layer refuses DoRA.
  const Json gptq = estimate_json(R"({"model":{"preset":"llama-3-8b"},"training":{"finetune":{"base_bits":4,)"
                                  R"("quant_method":"gptq","method":"dora"}}})");
  EXPECT_FALSE(gptq.find("ok")->as_bool());
}

// In the first LoRA block the block's input needs no gradient: a projection that is not adapted
// gives an output without one, and its frozen q/k norm keeps nothing (Qwen3's k_norm under LoRA on
// q and v). Measured: families.py's QDoRA q+v steps (qwen3, olmo2).
TEST(Implementation, AFrozenProjectionsNormKeepsNothingInTheFirstLoraBlock) {
  const auto acts = [](const char* targets, const char* qk_norm) {
    const Json r = run(std::string(R"({"model":{"preset":"qwen3-8b","qk_norm":")") + qk_norm +
                       R"("},"training":{"seq_len":1024,"finetune":{"method":"lora","lora_targets":)" + targets + "}}}");
    return *r.find("breakdown")->find("activations")->as_exact_integer();
  };
  // Qwen3 8B: 36 blocks, 32 query and 8 key heads of 128; a frozen eager RMSNorm keeps the fp32
  // copy of its input and one fp32 rstd a head and token.
  const std::int64_t tokens = 1024, q_norm = tokens * 32 * 128 * 4 + tokens * 32 * 4,
                     k_norm = tokens * 8 * 128 * 4 + tokens * 8 * 4;
  EXPECT_EQ(acts(R"(["q","v"])", "per_head") - acts(R"(["q","v"])", "none"), 36 * q_norm + 35 * k_norm);
  EXPECT_EQ(acts(R"(["q","k","v"])", "per_head") - acts(R"(["q","k","v"])", "none"), 36 * (q_norm + k_norm));
}

// Liger raises for Granite's fused linear cross-entropy; the suggestions do not offer it, nor
// FlashAttention to Megatron's local layers (its profile's eager attention has no flash path).
TEST(Implementation, LigerGraniteHasNoFusedLinearCrossEntropy) {
  const Json bad = estimate_json(R"({"model":{"preset":"llama-3-8b","model_type":"granite"},)"
                                 R"("training":{"framework":"liger","loss":"fused_linear_ce"}})");
  EXPECT_FALSE(bad.find("ok")->as_bool());
  EXPECT_NE(bad.dump().find("Liger has no fused linear cross-entropy for Granite"), std::string::npos);
  const Json granite = suggestions_json(R"({"model":{"preset":"llama-3-8b","model_type":"granite"},)"
                                        R"("training":{"framework":"liger"},"hardware":{"gpu":"rtx-4090-24gb"}})");
  EXPECT_EQ(granite.dump().find("training.chunked_loss"), std::string::npos);
  const Json megatron = suggestions_json(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"megatron"},)"
                                         R"("hardware":{"gpu":"rtx-4090-24gb"}})");
  EXPECT_EQ(megatron.dump().find("FlashAttention"), std::string::npos);
  const Json gemma2 = suggestions_json(R"({"model":{"preset":"gemma-2-9b"},"hardware":{"gpu":"rtx-4090-24gb"}})");
  EXPECT_NE(gemma2.dump().find("FlashAttention"), std::string::npos);  // the class's eager attention
}

// Nemotron's LayerNorm1P (norm_kernel compute) normalises a 16-bit cast of its input under
// autocast: x, mean and rstd and the weight's cast, no fp32 copy; and the q, k and v projections
// after it read that 16-bit output, so they keep one input between them. 1,024 tokens x 4,096.
TEST(Implementation, ComputeDtypeLayerNormKeepsTheSixteenBitInput) {
  const auto terms = [](const char* kernel) {
    const Json r = run(std::string(R"({"model":{"preset":"llama-2-7b","norm":"layernorm","norm_bias":true},)") +
                       R"("training":{"precision":"bf16_mixed","seq_len":1024,"norm_kernel":")" + kernel + R"("}})");
    return std::pair{term(r, "norms"), term(r, "attention.qkv_input")};
  };
  const std::int64_t td = std::int64_t{1024} * 4096, stats = std::int64_t{1024} * 4 * 2;
  EXPECT_EQ(terms("compute").first, 2 * (td * 2 + stats + 4096 * 2));
  EXPECT_EQ(terms("compute").second, td * 2);
  EXPECT_EQ(terms("eager").second, 3 * td * 2);  // the fp32 stream's norm output, cast by each projection
}

// LitGPT's StableEmbedding swap under a bitsandbytes base (finetune/lora.py since PR #1770): the old
// bf16 embedding stays referenced and the new one keeps a bf16 gradient no optimizer clears.
// Llama-3-8B's embedding: 128,256 x 4,096.
TEST(Implementation, LitgptStableEmbeddingKeepsTwoMoreEmbeddings) {
  const auto qlora = [](const char* framework, const char* swap) {
    return run(std::string(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":")") + framework +
               R"(","precision":"bf16","seq_len":512,"finetune":{"method":"lora","base_bits":4,"stable_embedding":")" +
               swap + R"("}}})");
  };
  const std::int64_t embedding = std::int64_t{128256} * 4096 * 2;
  const Json on = qlora("litgpt", "auto"), off = qlora("litgpt", "no"), hf = qlora("hf", "auto"), forced = qlora("hf", "yes");
  const auto part = [](const Json& r, const char* key) { return *r.find("breakdown")->find(key)->as_exact_integer(); };
  EXPECT_EQ(part(on, "parameters") - part(off, "parameters"), embedding);
  EXPECT_EQ(part(on, "gradients") - part(off, "gradients"), embedding);
  EXPECT_EQ(field(on, "peak_allocated_bytes") - field(off, "peak_allocated_bytes"), 2 * embedding);
  // Not transformers' (auto), unless asked for.
  EXPECT_EQ(part(forced, "gradients") - part(hf, "gradients"), embedding);
}

// LitGPT's QLoRA (--quantize bnb.nf4) quantises every nn.Linear, the head too (Lightning's
// BitsandbytesPrecision), from an fp16 copy: the head is stored in NF4 with an fp32 absmax per 64
// weights, and each of its matmuls dequantises the whole weight to fp16 and casts it to bf16 (4
// bytes a weight) beside the logits of the chunks before it. transformers keeps the head in 16 bit.
TEST(Implementation, LitgptQuantisesTheHeadAndDequantisesItForEachMatmul) {
  const auto config = [](const char* framework, std::int64_t vocab) {
    return std::string(R"({"model":{"preset":"llama-3-8b","vocab_size":)") + std::to_string(vocab) +
           R"(},"training":{"framework":")" + framework +
           R"(","precision":"bf16","micro_batch_size":1,"seq_len":256,"finetune":{"method":"lora",)"
           R"("lora_targets":["q","v"],"base_bits":4,"double_quant":false,"stable_embedding":"no"}}})";
  };
  const std::int64_t d = 4096, vocab = 128256, more = 64 * 1024;
  const auto parameters = [&](const char* framework, std::int64_t v) {
    return field(*run(config(framework, v)).find("breakdown"), "parameters");
  };
  // More vocabulary: a bf16 embedding row and, under LitGPT, an NF4 head row (half a byte and an
  // fp32 absmax per 64 weights); under transformers a bf16 head row.
  EXPECT_EQ(parameters("litgpt", vocab + more) - parameters("litgpt", vocab), more * d * 2 + more * d / 2 + more * d / 64 * 4);
  EXPECT_EQ(parameters("hf", vocab + more) - parameters("hf", vocab), more * d * 2 * 2);
  // 256 tokens are two 128-token head chunks: the second's dequantised weight beside the first's
  // logits (bf16) and the int64 labels.
  const Json litgpt = run(config("litgpt", vocab));
  EXPECT_EQ(field(*litgpt.find("breakdown"), "logits_and_loss"), 256 * 8 + 128 * vocab * 2 + vocab * d * 4);
  bool said = false;
  for (const Json& note : litgpt.find("notes")->items()) said |= note.as_string().find("output head is quantised") != std::string::npos;
  EXPECT_TRUE(said);
  const Json hf = run(config("hf", vocab));
  EXPECT_LT(field(*hf.find("breakdown"), "logits_and_loss"), vocab * d * 2);
  // In backward the copy is made again, for each chunk, beside everything forward saved.
  const Json* b = litgpt.find("breakdown");
  std::int64_t backward = 0;
  for (const Json& ph : litgpt.find("phases")->items()) {
    if (ph.find("name")->as_string() == "backward") backward = field(ph, "bytes");
  }
  EXPECT_GE(backward, field(*b, "parameters") + field(*b, "activations") + vocab * d * 4);
  // An 8-bit base quantises the head too, but MatMul8bitLt does not dequantise the whole weight in
  // forward: no such copy.
  const Json int8 = run(std::string(config("litgpt", vocab)).replace(config("litgpt", vocab).find("\"base_bits\":4"), 13, "\"base_bits\":8"));
  EXPECT_LT(field(*int8.find("breakdown"), "logits_and_loss"), vocab * d * 2);
}

}  // namespace
}  // namespace memfit
