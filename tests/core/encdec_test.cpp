// Encoder-decoder (T5, Flan-T5, mT5, BART) and encoder (DistilBERT, RoBERTa, XLM-R, DeBERTa-v3) models:
// worked parameter counts, task heads against published and transformers' counts, the saved
// activations of tools/frameworks/measure_encdec.py's measured cases (pinned, and within 1 % of
// what transformers' classes really save), relations, and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(MEMFIT_SOURCE_DIR) + "/tests/fixtures/hf/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

ModelSpec imported(const std::string& text) {
  const HfImport r = import_hf_config_text(text);
  EXPECT_TRUE(r.errors.empty()) << (r.errors.empty() ? "" : r.errors[0].field + ": " + r.errors[0].message);
  return r.model;
}

std::int64_t count(const ModelSpec& m) { return count_parameters(m).total_count.value(); }

ModelSpec preset(const char* id, OutputHead head = OutputHead::kLm, std::int64_t labels = 2) {
  ModelSpec m = *preset_model(id);
  m.output_head = head;
  m.num_labels = labels;
  return m;
}

// ------------------------------------------------------------------------------ worked counts

TEST(EncoderDecoder, TinyT5WorkedExample) {
  // V 100, d 8, 2 heads of d_kv 4 (D 8), d_ff 16 (relu), 2 encoder and 3 decoder blocks, 4 buckets.
  const ModelSpec m = imported(R"({"model_type":"t5","vocab_size":100,"d_model":8,"num_heads":2,"d_kv":4,
      "d_ff":16,"num_layers":2,"num_decoder_layers":3,"relative_attention_num_buckets":4})");
  // shared embedding 100·8 = 800 (encoder and decoder embed_tokens are tied to it)
  // encoder block: q, k, v, o 4·8·8 = 256; wi 16·8 + wo 8·16 = 256; 2 norms · 8 = 16 → 528
  // decoder block: self 256 + cross 256 + MLP 256 + 3 norms 24 → 792
  // relative bias tables 4 buckets · 2 heads = 8 per stack; final norms 8 per stack
  const ParameterCount p = count_parameters(m);
  EXPECT_EQ(p.per_encoder_layer_count.value(), 528);
  EXPECT_EQ(p.per_decoder_layer_count.value(), 792);
  EXPECT_EQ(p.component_count(Component::kCrossAttention).value(), 3 * 256);
  EXPECT_EQ(p.component_count(Component::kRelativePosition).value(), 2 * 8);
  EXPECT_EQ(p.total_count.value(), 800 + 2 * 528 + 3 * 792 + 16 + 16);  // tied head (T5 v1.0)
  ModelSpec untied = m;
  untied.tie_word_embeddings = false;  // T5 v1.1 / Flan-T5: the head is its own 100·8
  EXPECT_EQ(count(untied), 4264 + 800);
  // A token classifier is T5ForTokenClassification: the encoder alone and a d→labels layer.
  ModelSpec tokens = m;
  tokens.output_head = OutputHead::kTokenClassification;
  tokens.num_labels = 3;
  EXPECT_EQ(count(tokens), 800 + 2 * 528 + 8 + 8 + (3 * 8 + 3));
}

TEST(EncoderDecoder, TinyBartWorkedExample) {
  const ModelSpec m = imported(R"({"model_type":"bart","vocab_size":100,"d_model":8,"encoder_layers":1,
      "decoder_layers":2,"encoder_attention_heads":2,"decoder_attention_heads":2,"encoder_ffn_dim":16,
      "decoder_ffn_dim":16,"max_position_embeddings":10})");
  // shared 800; positions (10 + 2)·8 per stack → 192; layernorm_embedding 16 per stack → 32
  // attention with biases 4·(64 + 8) = 288; fc1 16·8 + 16 = 144, fc2 8·16 + 8 = 136; LayerNorm 16
  // encoder block 288 + 280 + 2·16 = 600; decoder block 2·288 + 280 + 3·16 = 904; no final norms
  EXPECT_EQ(count(m), 800 + 192 + 32 + 600 + 2 * 904);
}

// ------------------------------------------------------------------------------ published counts

TEST(EncoderDecoder, FlanT5CountsItsOwnHeadAsTheCheckpointStoresIt) {
  // transformers 5's from_config ties Flan-T5's head (T5Config forces tie_word_embeddings) and
  // counts 222,903,552; the checkpoint stores lm_head.weight and loads untied: 247,577,856, the
  // Hub's safetensors total.
  ModelSpec m = imported(read_fixture("google__flan-t5-base.json"));
  EXPECT_EQ(count(m), 247'577'856);
  m.tie_word_embeddings = true;
  EXPECT_EQ(count(m), 222'903'552);
  EXPECT_EQ(count(imported(read_fixture("google-t5__t5-base.json"))), 222'903'552);  // T5 v1.0: tied
}

TEST(EncoderDecoder, TaskHeadsMatchPublishedAndTransformersCounts) {
  // Published (index id 29090630826 in tests/fixtures/hf/SOURCES.md): sequence classifiers.
  EXPECT_EQ(count(preset("roberta-base", OutputHead::kSequenceClassification, 3)), 124'647'939);
  EXPECT_EQ(count(preset("roberta-large", OutputHead::kSequenceClassification, 2)), 355'361'794);
  EXPECT_EQ(count(preset("deberta-v3-base", OutputHead::kSequenceClassification, 2)), 184'423'682);
  EXPECT_EQ(count(preset("deberta-v3-large", OutputHead::kSequenceClassification, 2)), 435'063'810);
  // transformers 5.24 on the meta device (tools/frameworks/out/encdec.json, parameter_counts):
  EXPECT_EQ(count(preset("roberta-base", OutputHead::kLm)), 124'697'433);        // RobertaForMaskedLM
  EXPECT_EQ(count(preset("xlm-roberta-base", OutputHead::kLm)), 278'295'186);    // XLMRobertaForMaskedLM
  EXPECT_EQ(count(preset("deberta-v3-base", OutputHead::kLm)), 184'551'780);     // DebertaV2ForMaskedLM
  EXPECT_EQ(count(preset("roberta-base", OutputHead::kTokenClassification, 3)), 124'057'347);
  EXPECT_EQ(count(preset("t5-base", OutputHead::kSequenceClassification, 3)), 223'496'451);
  EXPECT_EQ(count(preset("t5-base", OutputHead::kTokenClassification, 3)), 109'630'851);
  EXPECT_EQ(count(preset("bart-base", OutputHead::kSequenceClassification, 3)), 140'013'315);
  EXPECT_EQ(count(preset("t5-base", OutputHead::kNone)), 222'903'552);  // T5Model
}

TEST(EncoderDecoder, DistilBertCountsAsItsClassesBuildIt) {
  // Published: DistilBertModel 66,362,880 (KerasHub's distil_bert_base_en_uncased "params"); a
  // printed Keras summary of the sequence classifier adds pre_classifier 590,592 and a 2-label
  // classifier 1,538 (index id 43934580619).
  EXPECT_EQ(count(preset("distilbert-base-uncased", OutputHead::kNone)), 66'362'880);
  EXPECT_EQ(count(preset("distilbert-base-uncased", OutputHead::kSequenceClassification, 2)),
            66'362'880 + 590'592 + 1'538);
  // transformers 5.24 on the meta device (tools/frameworks/out/encdec.json, parameter_counts):
  EXPECT_EQ(count(preset("distilbert-base-uncased", OutputHead::kLm)), 66'985'530);  // DistilBertForMaskedLM
  EXPECT_EQ(count(preset("distilbert-base-uncased", OutputHead::kTokenClassification, 2)), 66'364'418);
  // The full file imports to the preset's model (dim, n_layers, n_heads, hidden_dim, activation).
  const ModelSpec m = imported(read_fixture("distilbert__distilbert-base-uncased.json"));
  EXPECT_EQ(m.hidden_size, 768);
  EXPECT_EQ(m.num_hidden_layers, 6);
  EXPECT_EQ(m.intermediate_size, 3072);
  EXPECT_FALSE(m.attention_output_dropout);
  EXPECT_EQ(count(m), 66'362'880);
  // DistilBertConfig's attribute_map: hidden_size, num_attention_heads and num_hidden_layers win
  // over dim, n_heads and n_layers.
  const ModelSpec aliased = imported(R"({"model_type":"distilbert","dim":768,"hidden_size":512,"n_heads":8,"n_layers":2})");
  EXPECT_EQ(aliased.hidden_size, 512);
  // Its attention branch does not drop out: one residual mask a block (the FFN's), where BERT's
  // blocks keep two, B x T x d bytes each.
  auto activations = [](const char* extra) {
    const Json r = estimate_json(std::string(R"({"model":{"preset":"distilbert-base-uncased",)") + extra +
                                 R"("output_head":"sequence_classification"},"training":{"micro_batch_size":2,)"
                                 R"("seq_len":128,"dropout":0.1}})");
    EXPECT_TRUE(r.find("ok")->as_bool()) << r.dump();
    return r.find("breakdown")->find("activations")->as_exact_integer().value_or(0);
  };
  EXPECT_EQ(activations(R"("attention_output_dropout":true,)") - activations(""), 6 * 2 * 128 * 768);
}

// ------------------------------------------------------------------------------ measured activations

struct MeasuredCase {
  const char* name;
  const char* hf_config;  // the tiny config.json transformers built the model from
  const char* settings;   // memfit fields over the import ({"model": {...}, "training": {...}})
  std::int64_t measured;  // bytes the real classes saved (CUDA-equivalent)
  std::int64_t memfit;    // memfit's breakdown.activations, pinned
};

const MeasuredCase kMeasured[] = {
#include "encdec_measured_cases.inc"
};

// As `memfit --hf-config FILE --set ...`: the imported model, its class's knobs, then the settings.
std::int64_t memfit_activations(const MeasuredCase& c) {
  const Json imported = import_hf_json(c.hf_config);
  EXPECT_TRUE(imported.find("ok")->as_bool()) << c.name;
  const Json settings = *parse_json(c.settings).value;
  Json model = *imported.find("model");
  for (const auto& [k, v] : settings.find("model")->members()) model.set(k, v);
  Json training = Json::object();  // the class's knobs follow from model_type
  for (const auto& [k, v] : settings.find("training")->members()) training.set(k, v);
  Json root = Json::object();
  root.set("model", model);
  root.set("training", training);
  const Json result = estimate_json(root.dump());
  EXPECT_TRUE(result.find("ok")->as_bool()) << c.name << ": " << result.find("errors")->dump();
  return result.find("breakdown")->find("activations")->as_exact_integer().value_or(-1);
}

TEST(EncoderDecoder, MeasuredSavedActivationsArePinnedAndWithinOnePercent) {
  ASSERT_GE(std::size(kMeasured), 60u);
  for (const MeasuredCase& c : kMeasured) {
    const std::int64_t bytes = memfit_activations(c);
    EXPECT_EQ(bytes, c.memfit) << c.name;
    const double ratio = static_cast<double>(bytes) / static_cast<double>(c.measured);
    EXPECT_LT(std::abs(ratio - 1.0), 0.01) << c.name << ": memfit " << bytes << ", measured " << c.measured;
  }
}

// ------------------------------------------------------------------------------ relations

Estimate run(const char* preset_id, const std::string& extra = "") {
  const Json result = estimate_json(R"({"model":{"preset":")" + std::string(preset_id) +
                                    R"("},"training":{"micro_batch_size":2,"seq_len":256)" + extra + "}}");
  EXPECT_TRUE(result.find("ok")->as_bool()) << preset_id << extra << ": " << result.find("errors")->dump();
  Estimate e;
  e.breakdown.activations = Bytes(result.find("breakdown")->find("activations")->as_exact_integer().value_or(0));
  e.breakdown.logits_and_loss =
      Bytes(result.find("breakdown")->find("logits_and_loss")->as_exact_integer().value_or(0));
  e.peak_allocated_bytes = Bytes(result.find("peak_allocated_bytes")->as_exact_integer().value_or(0));
  return e;
}

TEST(EncoderDecoder, LongerTargetsSaveMoreAndOnlyTheDecoderSeesThem) {
  const Bytes t64 = run("flan-t5-base", R"(,"target_len":64)").breakdown.activations;
  const Bytes t128 = run("flan-t5-base", R"(,"target_len":128)").breakdown.activations;
  const Bytes t256 = run("flan-t5-base", R"(,"target_len":256)").breakdown.activations;
  EXPECT_LT(t64, t128);
  EXPECT_LT(t128, t256);
  // 0 means "as long as the source".
  EXPECT_EQ(run("flan-t5-base").breakdown.activations, t256);
  EXPECT_EQ(run("flan-t5-base", R"(,"target_len":256)").breakdown.logits_and_loss,
            run("flan-t5-base").breakdown.logits_and_loss);
  // The LM loss reads the target's logits only.
  EXPECT_LT(run("t5-small", R"(,"target_len":32)").breakdown.logits_and_loss,
            run("t5-small", R"(,"target_len":64)").breakdown.logits_and_loss);
}

TEST(EncoderDecoder, CheckpointingAndLoraSaveLess) {
  for (const char* id : {"t5-small", "flan-t5-base", "bart-base", "roberta-base", "deberta-v3-base"}) {
    const Bytes none = run(id).breakdown.activations;
    EXPECT_LT(run(id, R"(,"checkpointing":"full")").breakdown.activations, none) << id;
    EXPECT_LT(run(id, R"(,"finetune":{"method":"lora"})").breakdown.activations, none) << id;
    EXPECT_LT(run(id, R"(,"attention":"flash")").breakdown.activations,
              run(id, R"(,"attention":"eager")").breakdown.activations + Bytes(1))
        << id;
  }
}

TEST(EncoderDecoder, EveryNewPresetEstimatesUnderEveryRecipe) {
  for (const char* id : {"t5-small", "t5-base", "t5-large", "t5-3b", "t5-11b", "flan-t5-base", "flan-t5-large",
                         "flan-t5-xl", "flan-t5-xxl", "mt5-base", "bart-base", "bart-large", "roberta-base",
                         "roberta-large", "xlm-roberta-base", "deberta-v3-base", "deberta-v3-large"}) {
    for (const char* precision : {"fp32", "bf16_mixed", "bf16", "bf16_master", "seed_14p"}) {
      const Estimate e = run(id, std::string(R"(,"precision":")") + precision + "\"");
      EXPECT_GT(e.peak_allocated_bytes.value(), 0) << id << " " << precision;
    }
  }
}

// ------------------------------------------------------------------------------ refusals

std::string errors_of(const std::string& config) {
  return estimate_json(config).find("errors")->dump();
}

TEST(EncoderDecoder, LayoutsAndShapesItCannotModelAreRefusedByName) {
  EXPECT_NE(errors_of(R"({"model":{"preset":"t5-small"},"parallel":{"num_gpus":2,"pipeline":2}})")
                .find("parallel.pipeline"),
            std::string::npos);
  EXPECT_NE(errors_of(R"({"model":{"preset":"bart-base","decoder_attention_heads":5}})")
                .find("model.decoder_attention_heads"),
            std::string::npos);
  EXPECT_NE(errors_of(R"({"model":{"preset":"t5-small","attention_type":"disentangled"}})")
                .find("model.attention_type"),
            std::string::npos);
  EXPECT_NE(errors_of(R"({"model":{"preset":"bart-base"},"training":{"seq_len":512,"target_len":2048}})")
                .find("training.target_len"),
            std::string::npos);
  // A target length on a model without a decoder is allowed, and named as doing nothing.
  const Json advisory = estimate_json(R"({"model":{"preset":"roberta-base"},"training":{"seq_len":128,"target_len":64}})");
  EXPECT_NE(advisory.find("warnings")->dump().find("training.target_len"), std::string::npos);
}

TEST(EncoderDecoder, ImporterRefusesWhatItDoesNotModel) {
  const auto errors = [](const std::string& text) {
    std::string all;
    for (const Issue& i : import_hf_config_text(text).errors) all += i.field + ": " + i.message + "\n";
    return all;
  };
  EXPECT_NE(errors(R"({"model_type":"t5","vocab_size":10,"d_model":8,"num_layers":1,"num_heads":2,
                      "feed_forward_proj":"gated-mish"})")
                .find("feed_forward_proj"),
            std::string::npos);
  EXPECT_NE(errors(R"({"model_type":"bart","vocab_size":10,"d_model":8,"encoder_layers":1,"decoder_layers":1,
                      "encoder_attention_heads":2,"decoder_attention_heads":2,"encoder_ffn_dim":8,
                      "decoder_ffn_dim":8,"max_position_embeddings":8,"normalize_before":true})")
                .find("normalize_before"),
            std::string::npos);
  std::string deberta = read_fixture("microsoft__deberta-v3-base.json");
  deberta.insert(deberta.find('{') + 1, R"("conv_kernel_size":3,)");
  EXPECT_NE(errors(deberta).find("conv_kernel_size"), std::string::npos);
  std::string long_list = read_fixture("microsoft__deberta-v3-base.json");
  long_list.replace(long_list.find("\"p2c\","), 6, R"("p2c","c2p","c2p",)");
  EXPECT_NE(errors(long_list).find("pos_att_type"), std::string::npos);
  std::string roberta = read_fixture("FacebookAI__roberta-base.json");
  roberta.replace(roberta.find("514"), 3, "2");
  EXPECT_NE(errors(roberta).find("max_position_embeddings"), std::string::npos);
}

TEST(EncoderDecoder, RobertaPositionsStartAfterThePaddingOffset) {
  // 514 rows, of which 2 are the padding offset: 512 positions, and the table still counts 514.
  const ModelSpec m = imported(read_fixture("FacebookAI__roberta-base.json"));
  EXPECT_EQ(m.max_position_embeddings, 512);
  EXPECT_EQ(m.position_embedding_offset, 2);
  EXPECT_EQ(count_parameters(m).component_count(Component::kPositionEmbedding).value(), 514 * 768);
  EXPECT_NE(errors_of(R"({"model":{"preset":"roberta-base"},"training":{"seq_len":513}})").find("training.seq_len"),
            std::string::npos);
}

}  // namespace
}  // namespace memfit
