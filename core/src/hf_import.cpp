#include "memfit/hf_import.hpp"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <optional>

#include "field_table.hpp"
#include "memfit/parameters.hpp"
#include "text.hpp"

namespace memfit {

namespace {

constexpr std::int64_t kMaxSize = 100'000'000;  // any single dimension; the config's own ranges apply after

// The schema's upper bound for a memfit field. Counts that the importer or the estimate work
// through (layers, experts) are held to it here, when read, so that no work in proportion to
// a hostile count is done before the configuration's own range check would refuse it.
std::int64_t schema_max(const char* path) {
  const detail::Field* field = detail::find_field(path);
  return field ? field->max_int : kMaxSize;
}
std::int64_t max_layers() { return schema_max("model.num_hidden_layers"); }
std::int64_t max_experts() { return schema_max("model.num_experts"); }

// A value named in a message: scalars and short strings as JSON, anything longer by its kind,
// so that a hostile value (a 16 MiB string, a million-entry list) is not echoed back whole.
std::string describe(const Json& value) {
  constexpr std::size_t kMaxEchoedStringBytes = 64;
  if (value.is_array() || value.is_object()) return Json::kind_name(value.kind());
  if (value.is_string() && value.as_string().size() > kMaxEchoedStringBytes) {
    return "a string of " + detail::group_digits(static_cast<std::int64_t>(value.as_string().size())) + " bytes";
  }
  return value.dump();
}

// Reads typed keys from a config.json object, recording a named error for each bad one.
class Reader {
 public:
  Reader(const Json& json, HfImport& out) : json_(json), out_(out) {}

  // The first present key among `keys` (families spell the same thing differently: n_embd,
  // hidden_size, d_model). Missing and required: an error naming the first spelling.
  std::int64_t integer(std::initializer_list<const char*> keys, std::int64_t fallback, bool required,
                       std::int64_t min = 0, std::int64_t max = kMaxSize) {
    for (const char* key : keys) {
      const Json* v = json_.find(key);
      if (!v || v->is_null()) continue;
      const auto n = v->as_exact_integer();
      // A key that is also a memfit field's name (hidden_size, num_attention_heads...) is held to
      // that field's range, so that the message states the range the configuration will hold it to.
      if (max == kMaxSize) {
        const detail::Field* field = detail::find_field(("model." + std::string(key)).c_str());
        if (field && field->max_int > 0) max = field->max_int;
      }
      if (!n || *n < min || *n > max) {
        out_.errors.push_back({key, "must be an integer from " + detail::group_digits(min) + " to " +
                                        detail::group_digits(max) + "; got " + describe(*v)});
        return fallback;
      }
      return *n;
    }
    if (required) {
      out_.errors.push_back({*keys.begin(), "is missing (required for model_type \"" + model_type_ + "\")"});
    }
    return fallback;
  }

  bool boolean(const char* key, bool fallback) {
    const Json* v = json_.find(key);
    if (!v || v->is_null()) return fallback;
    if (!v->is_bool()) {
      out_.errors.push_back({key, "must be true or false; got " + describe(*v)});
      return fallback;
    }
    return v->as_bool();
  }

  // A string key: the fallback when absent; an error naming the key when not a string.
  std::string text(const char* key, const char* fallback) {
    const Json* v = json_.find(key);
    if (!v || v->is_null()) return fallback;
    if (!v->is_string()) {
      out_.errors.push_back({key, "must be a string; got " + describe(*v)});
      return fallback;
    }
    return v->as_string();
  }

  bool has(const char* key) const {
    const Json* v = json_.find(key);
    return v && !v->is_null();
  }

  const Json* raw(const char* key) const { return json_.find(key); }

  void set_model_type(std::string t) { model_type_ = std::move(t); }
  const std::string& model_type() const { return model_type_; }
  void error(std::string key, std::string message) { out_.errors.push_back({std::move(key), std::move(message)}); }

 private:
  const Json& json_;
  HfImport& out_;
  std::string model_type_;
};

// The attention's shape a config class gives a file that leaves the key out (transformers 5.24's
// dataclass defaults), where it is not what the file's other sizes imply: num_key_value_heads (0:
// as many as the query heads) and head_dim (0: hidden_size / num_attention_heads). A null key is
// the classes' None: as many heads, hidden / heads. The vision-language text classes are read as
// their family (text_alias) but keep their own defaults.
struct AttentionDefaults {
  const char* type;
  std::int64_t kv_heads, head_dim;
};
const AttentionDefaults* attention_defaults(const std::string& type) {
  static constexpr AttentionDefaults kDefaults[] = {
      {"mistral", 8, 0},      {"ministral", 8, 0},     {"ministral3", 8, 128},       {"smollm3", 4, 0},
      {"seed_oss", 8, 128},   {"exaone4", 32, 0},      {"mixtral", 8, 0},            {"qwen2", 32, 0},
      {"qwen2_moe", 16, 0},   {"qwen3", 32, 128},      {"qwen3_moe", 4, 0},          {"gemma", 16, 256},
      {"gemma2", 4, 256},     {"glm4_moe", 8, 0},      {"stablelm", 32, 0},          {"starcoder2", 2, 0},
      {"gpt_oss", 8, 64},     {"qwen2_vl_text", 8, 0}, {"qwen2_5_vl_text", 8, 0},    {"qwen3_vl_text", 32, 128},
      {"qwen3_vl_moe_text", 16, 0}, {"phimoe", 8, 0}, {"dots1", 32, 0},
  };
  for (const AttentionDefaults& d : kDefaults) {
    if (type == d.type) return &d;
  }
  return nullptr;
}

// A text config read as another family's (text_alias): the keys its own class fills differently.
void fill_attention_defaults(Json& language, const std::string& text_class) {
  const AttentionDefaults* d = attention_defaults(text_class);
  if (!d) return;
  if (d->kv_heads > 0 && !language.find("num_key_value_heads")) language.set("num_key_value_heads", Json::integer(d->kv_heads));
  if (d->head_dim > 0 && !language.find("head_dim")) language.set("head_dim", Json::integer(d->head_dim));
}

// Fields every decoder family spells the Llama way.
// required: the sizes must be in the file; otherwise the values already in `m` (the class's
// defaults) stand in for the keys it leaves out, as transformers' config class fills them.
void read_llama_like(Reader& r, ModelSpec& m, bool tie_default, bool required = true) {
  m.vocab_size = r.integer({"vocab_size"}, m.vocab_size, required, 1);
  m.hidden_size = r.integer({"hidden_size"}, m.hidden_size, required, 1);
  m.num_hidden_layers = r.integer({"num_hidden_layers"}, m.num_hidden_layers, required, 1, max_layers());
  m.num_attention_heads = r.integer({"num_attention_heads"}, m.num_attention_heads, required, 1);
  const AttentionDefaults* d = required ? attention_defaults(r.model_type()) : nullptr;
  const std::int64_t kv_absent = d && !r.raw("num_key_value_heads") ? d->kv_heads : 0;
  const std::int64_t head_absent = d && !r.raw("head_dim") ? d->head_dim : 0;
  // A null key is read as the classes' None where they accept it (Llama's, Qwen2's, ERNIE 4.5's, ...):
  // as many key/value heads as query heads, hidden / heads wide. Classes that refuse null, or keep
  // it and cannot build, give no count to follow; memfit reads them the same way.
  const auto null_key = [&](const char* key) { return r.raw(key) && r.raw(key)->is_null(); };
  m.num_key_value_heads = r.integer({"num_key_value_heads"}, required || null_key("num_key_value_heads") ? kv_absent
                                                                                                          : m.num_key_value_heads,
                                    false, 1);
  if (kv_absent > 0 && m.num_attention_heads > 0 && m.num_attention_heads % kv_absent != 0) {
    r.error("num_key_value_heads", "is missing, and the class's default of " + detail::group_digits(kv_absent) +
                                       " does not divide num_attention_heads (" +
                                       detail::group_digits(m.num_attention_heads) +
                                       "): transformers builds the projections that wide and cannot run them; state "
                                       "the model's own value");
    m.num_key_value_heads = 0;
  }
  m.head_dim = r.integer({"head_dim"}, required || null_key("head_dim") ? head_absent : m.head_dim, false, 1);
  m.intermediate_size = r.integer({"intermediate_size"}, m.intermediate_size, required, 1);
  m.max_position_embeddings = r.integer({"max_position_embeddings"}, 4096, false, 1, 1'000'000'000);
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", tie_default);
  m.mlp = MlpKind::kGated;
  m.norm = NormKind::kRmsNorm;
  m.norm_bias = false;
  m.position_embedding = PositionKind::kRotary;
  // Only the classes that have these keys read them (transformers 5.24 on the meta device, each set
  // apart): the others build their projections as their code says, whatever the file holds (a
  // reader sets those after this one).
  static constexpr std::string_view kReadsAttentionBias[] = {
      "llama", "granite", "smollm3", "seed_oss", "olmo", "arcee", "nemotron", "apertus", "qwen3", "qwen3_moe",
      "gemma", "gemma2", "olmo2", "olmo3", "deepseek_v3", "deepseek_v2", "mistral4", "glm4_moe_lite", "glm4_moe",
      "dots1", "glm", "glm4", "olmoe", "llama4_text", "cohere", "cohere2", "gemma3_text", "gpt_oss", "phimoe"};
  static constexpr std::string_view kReadsMlpBias[] = {"llama", "granite", "smollm3", "seed_oss", "arcee", "nemotron",
                                                      "deepseek_v2"};
  const auto reads = [&](const auto& types) {
    return std::find(std::begin(types), std::end(types), r.model_type()) != std::end(types);
  };
  m.attention_bias = reads(kReadsAttentionBias) && r.boolean("attention_bias", false);
  m.mlp_bias = reads(kReadsMlpBias) && r.boolean("mlp_bias", false);
  m.norms_per_block = 2;
  m.final_norm = true;
}

// A config class's default sizes (transformers' dataclass defaults), for the families whose
// files may leave them out: read_llama_like(..., required = false) then keeps them.
struct ClassSizes {
  std::int64_t vocab, hidden, intermediate, layers, heads, kv_heads, head_dim;
};
void read_llama_like_over(const ClassSizes& d, Reader& r, ModelSpec& m, bool tie_default) {
  m.vocab_size = d.vocab;
  m.hidden_size = d.hidden;
  m.intermediate_size = d.intermediate;
  m.num_hidden_layers = d.layers;
  m.num_attention_heads = d.heads;
  m.num_key_value_heads = d.kv_heads;
  m.head_dim = d.head_dim;
  read_llama_like(r, m, tie_default, false);
}

// Qwen2-MoE / Qwen3-MoE: a layer is sparse when (index + 1) % decoder_sparse_step == 0 and the
// index is not in mlp_only_layers; the rest are dense. Only the number of each matters here, and
// it is counted without visiting the layers: floor(L / step) layers are sparse by the step, less
// the distinct listed indices among them. The list is refused unread when it is longer than the
// layer count (already bounded by the schema); indices outside the model have no effect, as in
// transformers' Qwen2MoeDecoderLayer.
// A key listing layer indices (Qwen-MoE's mlp_only_layers, Llama 4's moe_layers), read as
// transformers reads `layer_idx in list`: the distinct indices inside the model, sorted (absent or
// null: none). Not a list of integers, or longer than the model: an error naming the key.
std::vector<std::int64_t> read_layer_indices(Reader& r, HfImport& out, const char* key, std::int64_t layers) {
  std::vector<std::int64_t> indices;
  const Json* list = r.raw(key);
  if (!list || list->is_null()) return indices;
  if (!list->is_array()) {
    out.errors.push_back({key, "must be a list of layer indices; got " + describe(*list)});
    return indices;
  }
  if (static_cast<std::int64_t>(list->items().size()) > layers) {
    out.errors.push_back({key, "holds " + detail::group_digits(static_cast<std::int64_t>(list->items().size())) +
                                   " layer indices; the model has " + detail::group_digits(layers) +
                                   " layers (num_hidden_layers)"});
    return indices;
  }
  for (const Json& item : list->items()) {
    const auto n = item.as_exact_integer();
    if (!n) {
      out.errors.push_back({key, "must hold integer layer indices; got " + describe(item)});
      return {};
    }
    if (*n >= 0 && *n < layers) indices.push_back(*n);
  }
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  return indices;
}

void read_qwen_moe_layers(Reader& r, ModelSpec& m, HfImport& out) {
  // Qwen3MoeConfig keeps num_local_experts (attribute_map's num_experts beside it loses: measured,
  // transformers 5.24); Qwen2MoeConfig has num_experts alone.
  m.num_experts = r.model_type() == "qwen2_moe" ? r.integer({"num_experts"}, 0, true, 1, max_experts())
                                                : r.integer({"num_local_experts", "num_experts"}, 0, true, 1, max_experts());
  m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 0, true, 1, max_experts());
  m.moe_intermediate_size = r.integer({"moe_intermediate_size"}, 0, true, 1);
  const std::int64_t step = r.integer({"decoder_sparse_step"}, 1, false, 1);
  const std::int64_t layers = m.num_hidden_layers;
  const bool layers_known = std::none_of(out.errors.begin(), out.errors.end(),
                                         [](const Issue& e) { return e.field == "num_hidden_layers"; });
  // Listed indices that the step makes sparse.
  std::int64_t listed = 0;
  if (layers_known) {
    for (const std::int64_t n : read_layer_indices(r, out, "mlp_only_layers", layers)) {
      if ((n + 1) % step == 0) ++listed;
    }
  }
  const std::int64_t sparse = layers / step - listed;
  m.first_k_dense_replace = layers - sparse;
  // Every step-th layer sparse: the dense layers alternate with them (a pipeline stage holds its
  // share of each). Layers listed dense (mlp_only_layers) are taken as the first ones.
  m.moe_layers_interleaved = sparse > 0 && sparse < layers && step > 1;
}

// transformers' ACT2FN names, by what the activation saves for backward (config.hpp HiddenAct).
// gelu_pytorch_tanh (F.gelu(approximate="tanh")) saves its input as the erf GELU does.
bool hidden_act_from_name(const std::string& name, HiddenAct& act) {
  if (name == "gelu" || name == "gelu_fast") act = HiddenAct::kGelu;
  else if (name == "gelu_pytorch_tanh") act = HiddenAct::kGeluPytorchTanh;
  else if (name == "gelu_new") act = HiddenAct::kGeluNew;
  else if (name == "relu") act = HiddenAct::kRelu;
  else if (name == "relu2") act = HiddenAct::kRelu2;
  else if (name == "silu" || name == "swish") act = HiddenAct::kSilu;
  else return false;
  return true;
}

void read_hidden_act(Reader& r, const char* key, const char* fallback, ModelSpec& m, HfImport& out) {
  const std::string name = r.text(key, fallback);
  if (!hidden_act_from_name(name, m.hidden_act)) {
    out.errors.push_back({key, describe(Json::string(name)) + " is not supported; supported: gelu, gelu_new, "
                                                              "gelu_pytorch_tanh, relu, relu2, silu"});
  }
}

// T5 / T5 v1.1 / Flan-T5 / mT5 (Raffel et al. 2020; transformers' T5Config): an encoder and a
// decoder of pre-norm blocks with RMS-style T5LayerNorm (no mean, no bias), no biases anywhere, a
// relative position bias table in the first block of each stack, and feed_forward_proj "relu"
// (v1.0) or "gated-gelu" (v1.1, Flan: wi_0 / wi_1 with gelu_new). transformers 5 ties lm_head to
// the shared embedding whatever tie_word_embeddings says (T5Config.__post_init__ keeps the flag only
// as scale_decoder_outputs), but loading a checkpoint that stores its own lm_head.weight unties it
// again (PreTrainedModel.tie_weights: two different stored values are not tied); v1.1, Flan-T5 and
// mT5 store one, so tie_word_embeddings false counts it, as their published sizes do.
void read_t5(Reader& r, ModelSpec& m, HfImport& out) {
  m.vocab_size = r.integer({"vocab_size"}, 32128, true, 1);
  m.hidden_size = r.integer({"d_model", "hidden_size"}, 512, true, 1);
  m.num_hidden_layers = r.integer({"num_layers", "num_hidden_layers"}, 6, true, 1, max_layers());
  m.num_decoder_layers = r.integer({"num_decoder_layers"}, m.num_hidden_layers, false, 1, max_layers());
  m.num_attention_heads = r.integer({"num_heads", "num_attention_heads"}, 8, true, 1);
  m.head_dim = r.integer({"d_kv", "head_dim"}, 64, false, 1);
  // MT5Config's defaults are mT5-small's gated-GELU FFN of 1024, T5Config's the original T5's ReLU one of 2048.
  const bool mt5 = r.model_type() == "mt5";
  m.intermediate_size = r.integer({"d_ff"}, mt5 ? 1024 : 2048, false, 1);
  m.relative_attention_num_buckets = r.integer({"relative_attention_num_buckets"}, 32, false, 1);
  m.max_position_embeddings = r.integer({"n_positions"}, 512, false, 1, 1'000'000'000);
  const std::string proj = r.text("feed_forward_proj", mt5 ? "gated-gelu" : "relu");
  const bool gated = proj.rfind("gated-", 0) == 0;
  const std::string act = gated ? proj.substr(6) : proj;
  // T5Config maps "gated-gelu" to gelu_new (the tanh approximation v1.1 was trained with).
  if (!hidden_act_from_name(gated && act == "gelu" ? "gelu_new" : act, m.hidden_act)) {
    out.errors.push_back({"feed_forward_proj", describe(Json::string(proj)) + " is not supported; supported: relu, "
                                                                             "gelu, gelu_new, silu, each optionally gated-"});
  }
  m.mlp = gated ? MlpKind::kGated : MlpKind::kPlain;
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
  m.is_encoder_decoder = true;
  m.norm = NormKind::kRmsNorm;
  m.norm_bias = false;
  m.position_embedding = PositionKind::kRelativeBias;
  m.attention_bias = m.mlp_bias = false;
  m.norms_per_block = 2;
  m.final_norm = true;
}

// BERT's, BART's and BLOOM's layers: a plain MLP, LayerNorms with biases, biases on every linear,
// learned positions (BLOOM: none) and a LayerNorm on the embeddings.
void bert_style_layers(ModelSpec& m) {
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  m.position_embedding = PositionKind::kLearned;
  m.attention_bias = m.mlp_bias = true;
  m.embedding_norm = true;
}

// BART (Lewis et al. 2020; transformers' BartConfig): post-norm encoder and decoder blocks with
// biased projections and LayerNorm, learned positions with 2 extra rows per stack
// (BartLearnedPositionalEmbedding's offset), layernorm_embedding in each stack, a GELU MLP and an
// lm_head tied to the shared embedding (final_logits_bias is a buffer, not a parameter).
void read_bart(Reader& r, ModelSpec& m, HfImport& out) {
  m.vocab_size = r.integer({"vocab_size"}, 50265, true, 1);
  m.hidden_size = r.integer({"d_model", "hidden_size"}, 1024, true, 1);
  m.num_hidden_layers = r.integer({"encoder_layers"}, 12, true, 1, max_layers());
  m.num_decoder_layers = r.integer({"decoder_layers"}, 12, true, 1, max_layers());
  m.num_attention_heads = r.integer({"encoder_attention_heads"}, 16, true, 1);
  m.decoder_attention_heads = r.integer({"decoder_attention_heads"}, 16, true, 1);
  m.intermediate_size = r.integer({"encoder_ffn_dim"}, 4096, true, 1);
  m.decoder_ffn_dim = r.integer({"decoder_ffn_dim"}, 4096, true, 1);
  m.max_position_embeddings = r.integer({"max_position_embeddings"}, 1024, true, 1);
  m.position_embedding_offset = 2;
  read_hidden_act(r, "activation_function", "gelu", m, out);
  m.normalize_before = r.boolean("normalize_before", false);
  if (m.normalize_before) {
    out.errors.push_back({"normalize_before", "true (mBART-style pre-norm BART) is not supported for model_type "
                                              "\"bart\""});
  }
  m.final_norm = r.boolean("add_final_layer_norm", false);
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
  m.is_encoder_decoder = true;
  bert_style_layers(m);
  m.norms_per_block = 2;
}

// The block and embeddings every BERT-style encoder shares: post-norm blocks of two LayerNorms
// with biases, a plain MLP, biases on every linear, learned positions and an embedding LayerNorm,
// no final norm; the bare model (output_head none) unless a file names a task class.
void post_norm_encoder(ModelSpec& m) {
  bert_style_layers(m);
  m.final_norm = false;
  m.normalize_before = false;
  m.output_head = OutputHead::kNone;
}

// BERT-style encoders (RoBERTa, XLM-RoBERTa, DeBERTa-v2/v3): word, position and token-type
// embeddings and their LayerNorm, post-norm blocks (two LayerNorms each), a pooler on the bare
// model, and a masked-LM head (dense, GELU, LayerNorm, decoder tied to the word embeddings, a
// vocabulary bias) when output_head is lm.
void read_bert_like(Reader& r, ModelSpec& m, HfImport& out) {
  m.vocab_size = r.integer({"vocab_size"}, 30522, true, 1);
  m.hidden_size = r.integer({"hidden_size"}, 768, true, 1);
  m.num_hidden_layers = r.integer({"num_hidden_layers"}, 12, true, 1, max_layers());
  m.num_attention_heads = r.integer({"num_attention_heads"}, 12, true, 1);
  m.intermediate_size = r.integer({"intermediate_size"}, 3072, true, 1);
  m.max_position_embeddings = r.integer({"max_position_embeddings"}, 512, true, 1);
  m.type_vocab_size = r.integer({"type_vocab_size"}, 2, false, 0);
  read_hidden_act(r, "hidden_act", "gelu", m, out);
  post_norm_encoder(m);
  m.pooler = true;
  m.lm_head_transform = true;
  m.lm_head_bias = true;
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
  const std::string position_type = r.text("position_embedding_type", "absolute");
  if (position_type != "absolute") {
    out.errors.push_back({"position_embedding_type", describe(Json::string(position_type)) +
                                                         " is not supported; supported: absolute"});
  }
}

// DeBERTa-v2 / v3 (He et al. 2021, 2023; transformers' DebertaV2Model): disentangled attention
// over content and log-bucketed relative positions (one relative embedding table shared by all
// layers, with its LayerNorm when norm_rel_ebd is "layer_norm"), absolute positions only when
// position_biased_input, no pooler on the bare model (ContextPooler belongs to the
// classification head).
void read_deberta_v2(Reader& r, ModelSpec& m, HfImport& out) {
  read_bert_like(r, m, out);
  m.type_vocab_size = r.integer({"type_vocab_size"}, 0, false, 0);
  m.pooler = false;
  if (!r.boolean("position_biased_input", true)) m.position_embedding = PositionKind::kNone;
  // The encoder builds the relative embeddings' LayerNorm whenever norm_rel_ebd names it, with or
  // without relative attention (modeling_deberta_v2.py DebertaV2Encoder), which alone uses it.
  m.norm_rel_ebd = r.text("norm_rel_ebd", "none").find("layer_norm") != std::string::npos;
  if (r.boolean("relative_attention", false)) {
    m.attention_type = AttentionType::kDisentangled;
    m.position_buckets = r.integer({"position_buckets"}, 0, false, -1);
    if (m.position_buckets < 0) m.position_buckets = 0;
    m.max_relative_positions = r.integer({"max_relative_positions"}, -1, false, -1'000'000'000, 1'000'000'000);
    if (m.max_relative_positions < 1) m.max_relative_positions = -1;
    m.share_att_key = r.boolean("share_att_key", false);
    bool c2p = false, p2c = false, valid = true;
    if (const Json* types = r.raw("pos_att_type"); types && !types->is_null()) {
      // A list (["p2c", "c2p"]) or, in older configs, a "p2c|c2p" string; a list is refused unread
      // when longer than the two names it can hold.
      const auto name = [&](std::string_view s) {
        if (s == "c2p") c2p = true;
        else if (s == "p2c") p2c = true;
        else valid = false;
      };
      if (types->is_string()) {
        const std::string& text = types->as_string();
        const std::size_t bar = text.find('|');
        name(std::string_view(text).substr(0, bar));
        if (bar != std::string::npos) name(std::string_view(text).substr(bar + 1));
      } else if (types->is_array() && types->items().size() <= 2) {
        for (const Json& item : types->items()) {
          if (item.is_string()) name(item.as_string());
          else valid = false;
        }
      } else {
        valid = false;
      }
    }
    if (!valid || (!c2p && !p2c)) {
      out.errors.push_back({"pos_att_type", "must name c2p, p2c or both (a list, or \"p2c|c2p\") when "
                                            "relative_attention is true"});
    }
    m.pos_att_type = c2p && p2c ? PosAttType::kC2pP2c : c2p ? PosAttType::kC2p : PosAttType::kP2c;
  }
  if (r.integer({"conv_kernel_size"}, 0, false, 0) > 0) {
    out.errors.push_back({"conv_kernel_size", "greater than 0 (the convolution of deberta-v2-xlarge) is not "
                                              "supported yet"});
  }
  if (r.integer({"embedding_size"}, m.hidden_size, false, 1) != m.hidden_size) {
    out.errors.push_back({"embedding_size", "differs from hidden_size (an embed_proj projection); not supported yet"});
  }
}

void read_gpt2_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // GPT-2 (Radford et al. 2019): Conv1D projections with bias, learned positions, tied head.
  m.vocab_size = r.integer({"vocab_size"}, 50257, true, 1);
  m.hidden_size = r.integer({"n_embd", "hidden_size"}, 768, true, 1);
  m.num_hidden_layers = r.integer({"n_layer", "num_hidden_layers"}, 12, true, 1, max_layers());
  m.num_attention_heads = r.integer({"n_head", "num_attention_heads"}, 12, true, 1);
  m.intermediate_size = r.integer({"n_inner"}, 4 * m.hidden_size, false, 1);
  m.max_position_embeddings = r.integer({"n_positions", "max_position_embeddings"}, 1024, true, 1);
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  m.position_embedding = PositionKind::kLearned;
  m.attention_bias = m.mlp_bias = true;
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
}

void read_gpt_neox_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // GPT-NeoX / Pythia: fused biased qkv, LayerNorm with bias, two norms per block whether or not
  // the residual is parallel, untied embed_out without bias.
  read_llama_like(r, m, false);
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  m.attention_bias = r.boolean("attention_bias", true);
  m.mlp_bias = true;
  m.block = r.boolean("use_parallel_residual", true) ? BlockLayout::kParallel : BlockLayout::kSequential;
}

void read_opt_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // OPT: learned positions with 2 extra rows (the padding offset), biased projections, tied head.
  m.vocab_size = r.integer({"vocab_size"}, 50272, true, 1);
  m.hidden_size = r.integer({"hidden_size"}, 768, true, 1);
  m.num_hidden_layers = r.integer({"num_hidden_layers"}, 12, true, 1, max_layers());
  m.num_attention_heads = r.integer({"num_attention_heads"}, 12, true, 1);
  m.intermediate_size = r.integer({"ffn_dim"}, 3072, true, 1);
  m.max_position_embeddings = r.integer({"max_position_embeddings"}, 2048, true, 1);
  m.position_embedding_offset = 2;
  const std::int64_t proj = r.integer({"word_embed_proj_dim"}, m.hidden_size, false, 1);
  if (proj != m.hidden_size) {
    out.errors.push_back({"word_embed_proj_dim", "differs from hidden_size (as in opt-350m); this projected "
                                                 "embedding is not supported yet"});
  }
  m.final_norm = r.boolean("do_layer_norm_before", true);
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  m.position_embedding = PositionKind::kLearned;
  m.attention_bias = m.mlp_bias = r.boolean("enable_bias", true);
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
}

void read_bert_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // BertModel (Devlin et al. 2019): word + position + token-type embeddings and their LayerNorm,
  // post-norm blocks (two LayerNorms each), a pooler, no language-model head.
  m.vocab_size = r.integer({"vocab_size"}, 30522, true, 1);
  m.hidden_size = r.integer({"hidden_size"}, 768, true, 1);
  m.num_hidden_layers = r.integer({"num_hidden_layers"}, 12, true, 1, max_layers());
  m.num_attention_heads = r.integer({"num_attention_heads"}, 12, true, 1);
  m.intermediate_size = r.integer({"intermediate_size"}, 3072, true, 1);
  m.max_position_embeddings = r.integer({"max_position_embeddings"}, 512, true, 1);
  m.type_vocab_size = r.integer({"type_vocab_size"}, 2, false, 0);
  post_norm_encoder(m);
  m.pooler = true;
}

// DistilBERT (Sanh et al. 2019; transformers' DistilBertModel): BERT's post-norm blocks at half
// the depth, word and position embeddings with their LayerNorm (no token types), no pooler. The
// block adds its attention output undropped (TransformerBlock: sa_layer_norm(attention_output +
// hidden_states)); the FFN drops out after lin2. Its heads are BERT's in shape: the masked-LM head
// (vocab_transform with bias, the activation, vocab_layer_norm, vocab_projector tied to the word
// embeddings with a bias), the classifier (pre_classifier d x d with bias, ReLU, classifier), the
// token classifier. DistilBertConfig's attribute_map reads hidden_size, num_attention_heads and
// num_hidden_layers in place of dim, n_heads and n_layers when a file has both; every key takes
// the class's default when absent (distilbert-base: 6 layers of 768, 12 heads, an FFN of 3072).
void read_distilbert_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  m.vocab_size = r.integer({"vocab_size"}, 30522, false, 1);
  m.hidden_size = r.integer({"hidden_size", "dim"}, 768, false, 1);
  m.num_hidden_layers = r.integer({"num_hidden_layers", "n_layers"}, 6, false, 1, max_layers());
  m.num_attention_heads = r.integer({"num_attention_heads", "n_heads"}, 12, false, 1);
  m.intermediate_size = r.integer({"hidden_dim"}, 4 * 768, false, 1);
  m.max_position_embeddings = r.integer({"max_position_embeddings"}, 512, false, 1);
  // Sinusoidal positions are written into the same nn.Embedding, a parameter all the same.
  m.type_vocab_size = 0;
  read_hidden_act(r, "activation", "gelu", m, out);
  post_norm_encoder(m);
  m.attention_output_dropout = false;
  m.pooler = false;
  m.lm_head_transform = true;
  m.lm_head_bias = true;
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
}

void read_t5_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  read_t5(r, m, out);
}

void read_bart_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  read_bart(r, m, out);
}

void read_roberta_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& out) {
  // RoBERTa (Liu et al. 2019): BERT's shape; positions start after padding_idx + 1, which its
  // config already counts in max_position_embeddings (514 = 512 + 2); one token type.
  read_bert_like(r, m, out);
  m.type_vocab_size = r.integer({"type_vocab_size"}, 2, false, 0);  // RobertaConfig's default; the checkpoints say 1
  if (m.max_position_embeddings <= 2) {
    out.errors.push_back({"max_position_embeddings", "must be more than 2 for model_type \"" + type +
                                                         "\" (its first two rows are the padding offset)"});
  } else {
    // The table's first padding_idx + 1 = 2 rows are never a real position.
    m.max_position_embeddings -= 2;
    m.position_embedding_offset = 2;
  }
}

void read_deberta_v2_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  read_deberta_v2(r, m, out);
}

// The rotated part of each head, int(head_dim x partial_rotary_factor), 0.5 by the classes'
// default (GLM's, Nemotron's): transformers 5 reads rope_parameters, or rope_scaling in files written
// before it, or the key at the top; a factor outside (0, 1], or one that rotates nothing, is named.
void read_partial_rotary(Reader& r, ModelSpec& m, HfImport& out, double fallback = 0.5) {
  const Json* factor = nullptr;
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const Json* rope = r.raw(key);
    if (!factor && rope && rope->is_object()) factor = rope->find("partial_rotary_factor");
  }
  if (!factor || factor->is_null()) factor = r.raw("partial_rotary_factor");
  double fraction = fallback;
  if (factor && !factor->is_null()) {
    if (!factor->is_number() || !(factor->as_double() > 0.0) || factor->as_double() > 1.0) {
      out.errors.push_back({"partial_rotary_factor", "must be a number above 0 and at most 1; got " + describe(*factor)});
      return;
    }
    fraction = factor->as_double();
  }
  m.rotary_dim = static_cast<std::int64_t>(static_cast<double>(m.head_size()) * fraction);
  if (m.rotary_dim == 0) {
    out.errors.push_back({"partial_rotary_factor", "rotates no dimension of a " + detail::group_digits(m.head_size()) +
                                                       "-wide head; got " +
                                                       (factor ? describe(*factor) : "the default " + Json::number(fallback).dump())});
  }
}

void read_llama_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // Ministral (Ministral 8B; modeling_ministral.py) is Mistral's block with sliding-window and full
  // layers (layer_types): the same weights, and with flash or SDPA no saved tensor depends on the
  // window. Ministral 3 (the text_config of Mistral 3's 2512 models; modeling_ministral3.py) is
  // Mistral's block whose rotated queries are scaled by position (get_llama_4_attn_scale): a factor
  // that needs no gradient, so the multiply saves nothing the block did not. SmolLM3Config ties the
  // head unless the file says otherwise; the others' classes do not.
  read_llama_like(r, m, type == "smollm3");
}

// clip_qkv (OLMo-7B-0424's 8.0): q, k and v clamped in place (modeling_olmo.py).
void read_clip_qkv(Reader& r, ModelSpec& m, HfImport& out) {
  const Json* clip = r.raw("clip_qkv");
  if (clip && !clip->is_null() && !clip->is_number()) {
    out.errors.push_back({"clip_qkv", "must be a number or null; got " + describe(*clip)});
  }
  m.clip_qkv = clip && clip->is_number();
}

void read_olmo_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // OLMo-1 (OlmoForCausalLM, modeling_olmo.py): Llama's block and SwiGLU MLP with LayerNorms that
  // have neither weight nor bias (OlmoLayerNorm), an untied head by OlmoConfig's default.
  // clip_qkv (OLMo-7B-0424's 8.0) clamps q, k and v in place.
  read_llama_like(r, m, false);
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = false;
  m.norm_weight = false;
  read_clip_qkv(r, m, out);
}

void read_arcee_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // Arcee (AFM-4.5B; ArceeForCausalLM, modeling_arcee.py): Llama's block with a plain up / down MLP
  // whose activation is squared ReLU by ArceeConfig's default (hidden_act relu2).
  read_llama_like(r, m, false);
  m.mlp = MlpKind::kPlain;
}

void read_apertus_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // Apertus (ApertusForCausalLM, modeling_apertus.py): Llama's grouped-query attention with an
  // RMSNorm on each query and key head, a plain up / down MLP whose activation is xIELU by
  // ApertusConfig's default (two learned scalars per layer), an untied head.
  read_llama_like(r, m, false);
  m.mlp = MlpKind::kPlain;
  m.qk_norm = QkNorm::kPerHead;
}

void read_nemotron_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // Nemotron-4 / Minitron (NemotronForCausalLM, modeling_nemotron.py): Llama's grouped-query
  // attention with rotary positions on part of each head (partial_rotary_factor, 0.5 by
  // NemotronConfig's default), a plain up / down MLP with squared ReLU (hidden_act relu2 by
  // default), LayerNorm1P norms (a weight stored minus one, and a bias) run in the autocast dtype,
  // an untied head.
  read_llama_like(r, m, false);
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  read_partial_rotary(r, m, out);
}

void read_seed_oss_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& out) {
  // Seed-OSS: Llama's layout; attention_bias puts a bias on q, k and v, attention_out_bias on o
  // (modeling_seed_oss.py SeedOssAttention).
  read_llama_like(r, m, false);
  const bool qkv = r.boolean("attention_bias", true);  // SeedOssConfig's default
  const bool o = r.boolean("attention_out_bias", false);
  if (o && !qkv) {
    out.errors.push_back({"attention_out_bias", "true without attention_bias is not supported for model_type \"" +
                                                    type + "\" (memfit has no bias on o_proj alone)"});
  }
  m.qkv_bias = qkv && !o;
  m.attention_bias = qkv && o;
}

void read_exaone4_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // EXAONE 4.0: OLMo-2's block (norms after attention and after the MLP, none on the input) with
  // Qwen3's RMSNorm on each query and key head (modeling_exaone4.py Exaone4Attention).
  read_llama_like(r, m, false);
  m.qk_norm = QkNorm::kPerHead;
  m.input_norm = false;
}

// A key read only for being a positive number (a jitter probability, router_jitter_noise or
// input_jitter_noise, multiplies the mixture's input by uniform noise in training; remote-code keys
// a class does not read). Anything else: no.
bool positive_number(Reader& r, const char* key) {
  const Json* v = r.raw(key);
  return v && v->is_number() && v->as_double() > 0;
}

void read_mixtral_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // Mixtral: every layer's MLP is num_local_experts gated experts of intermediate_size.
  read_llama_like(r, m, false);
  // num_experts is MixtralConfig's alias of num_local_experts, and wins when both are there.
  m.num_experts = r.integer({"num_experts", "num_local_experts"}, 8, true, 1, max_experts());
  m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 2, true, 1, max_experts());
  m.moe_intermediate_size = m.intermediate_size;
  m.moe_input_jitter = positive_number(r, "router_jitter_noise") ? 1 : 0;  // MixtralSparseMoeBlock's
}

void read_phimoe_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // Phi-3.5-MoE (PhimoeForCausalLM, modeling_phimoe.py): Mixtral's block (stacked experts of
  // intermediate_size, no shared expert) with LayerNorms (a weight and a bias) instead of RMSNorms,
  // attention_bias on q, k, v and o, lm_head_bias on the untied head, and a router that picks its two
  // experts by sparsemixer (a Heun-style estimate through a custom autograd function).
  read_llama_like(r, m, false);
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  m.num_experts = r.integer({"num_local_experts"}, 16, false, 1, max_experts());
  m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 2, false, 1, max_experts());
  m.moe_intermediate_size = m.intermediate_size;
  m.lm_head_bias = r.boolean("lm_head_bias", false);
  // sparsemixer picks exactly two experts whatever top_k says (transformers dropped the original
  // code's assert): read as two.
  if (m.num_experts_per_tok != 2) {
    out.warnings.push_back({"num_experts_per_tok", "is " + detail::group_digits(m.num_experts_per_tok) +
                                                       ", but PhimoeForCausalLM's sparsemixer always routes two "
                                                       "experts a token; read as 2"});
    m.num_experts_per_tok = 2;
  }
  // The block and its router each multiply the input by uniform noise (input_jitter_noise).
  m.moe_input_jitter = positive_number(r, "input_jitter_noise") ? 2 : 0;
}

void read_minimax_m2_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // MiniMax-M2 (MiniMaxM2ForCausalLM, modeling_minimax_m2.py): Mixtral's block (every layer's MLP
  // num_local_experts stacked gated experts of intermediate_size, no shared expert) with FlexOlmo's
  // attention (an RMSNorm over the whole query and key projections, always: the remote code's
  // use_qk_norm and qk_norm_type are not read), rotary positions on rotary_dim of each head (64 of
  // 128 in the released files; the class turns it into partial_rotary_factor, an explicit factor
  // winning, and rotates whole heads without either), and a sigmoid router whose choice adds a
  // per-expert correction bias (a buffer on the MoE block in transformers 5, a stored tensor in the
  // checkpoint: counted, as DeepSeek-V3's). MiniMaxM2Config's defaults (transformers 5.24) are
  // MiniMax-M2's and stand in for the keys a file leaves out.
  read_llama_like_over(ClassSizes{200064, 3072, 1536, 62, 48, 8, 128}, r, m, false);
  if (!r.has("max_position_embeddings")) m.max_position_embeddings = 196608;
  // num_experts is MiniMaxM2Config's alias of num_local_experts: it wins when both are there.
  m.num_experts = r.integer({"num_experts", "num_local_experts"}, 256, false, 1, max_experts());
  m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 8, false, 1, max_experts());
  m.moe_intermediate_size = m.intermediate_size;
  m.qk_norm = QkNorm::kFullWidth;
  m.router_bias = true;
  m.moe_input_jitter = positive_number(r, "router_jitter_noise") ? 1 : 0;  // MiniMaxM2SparseMoeBlock's
  const std::int64_t head = m.head_size();
  const std::int64_t rotary = r.integer({"rotary_dim"}, 0, false, 1, head > 0 ? head : kMaxSize);
  read_partial_rotary(r, m, out, rotary > 0 && head > 0 ? static_cast<double>(rotary) / static_cast<double>(head) : 1.0);
  if (m.rotary_dim == head) m.rotary_dim = 0;  // every dimension: the whole head
  // Keys of MiniMax's own modeling code that transformers' class does not build.
  const Json* mtp = r.raw("use_mtp");
  if (mtp && mtp->is_bool() && mtp->as_bool() && positive_number(r, "num_mtp_modules")) {
    out.warnings.push_back({"num_mtp_modules", "the multi-token-prediction modules are not part of the trained "
                                               "model's forward pass and are not counted"});
  }
  if (positive_number(r, "shared_intermediate_size")) {
    out.warnings.push_back({"shared_intermediate_size", "is not read by transformers' MiniMaxM2ForCausalLM, which "
                                                        "builds no shared expert; none is counted"});
  }
}

void read_qwen2_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // Qwen2: bias on q, k and v only.
  read_llama_like(r, m, false);
  m.qkv_bias = true;
}

void read_qwen2_moe_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  read_llama_like(r, m, false);
  m.qkv_bias = true;
  read_qwen_moe_layers(r, m, out);
  // Qwen2MoeConfig's default: Qwen1.5-MoE-A2.7B's shared expert of 5632.
  m.shared_expert_intermediate_size = r.integer({"shared_expert_intermediate_size"}, 5632, false, 0);
  m.num_shared_experts = m.shared_expert_intermediate_size > 0 ? 1 : 0;
  m.shared_expert_gate = m.shared_expert_intermediate_size > 0;
}

void read_qwen3_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& out) {
  // Qwen3: RMSNorm on each query and key head; no biases.
  read_llama_like(r, m, false);
  m.qk_norm = QkNorm::kPerHead;
  if (type == "qwen3_moe") read_qwen_moe_layers(r, m, out);
}

void read_gemma_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // Gemma: GeGLU, explicit head_dim (256 in 2B/7B), tied head. Gemma 2 adds a norm after
  // attention and around the MLP: four per block.
  read_llama_like(r, m, true);
  if (type == "gemma2") m.norms_per_block = 4;
  // Soft-capping is on when its key holds a number (Gemma 2: 50 and 30; Gemma 3: null).
  const auto capped = [&](const char* key) { const Json* v = r.raw(key); return v && v->is_number(); };
  m.attention_softcap = capped("attn_logit_softcapping");
  m.logit_softcap = capped("final_logit_softcapping");
}

void read_phi_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // Phi-1/1.5/2: parallel block with one LayerNorm, biased projections, plain MLP, head with bias.
  read_llama_like(r, m, false);
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  m.attention_bias = m.mlp_bias = true;
  m.block = BlockLayout::kParallel;
  m.norms_per_block = 1;
  m.lm_head_bias = true;
  if (r.boolean("qk_layernorm", false)) {
    out.errors.push_back({"qk_layernorm", "true is not supported for model_type \"phi\""});
  }
}

void read_phi3_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // Phi-3: fused qkv and gate_up projections, which count the same as separate ones.
  read_llama_like(r, m, false);
}

void read_falcon_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // Falcon: parallel attention+MLP; the 7B layout has one LayerNorm and multi-query attention,
  // the "new decoder architecture" (40B/180B) has two LayerNorms and num_kv_heads groups.
  m.vocab_size = r.integer({"vocab_size"}, 65024, true, 1);
  m.hidden_size = r.integer({"hidden_size", "n_embed"}, 4544, true, 1);
  m.num_hidden_layers = r.integer({"num_hidden_layers", "n_layer"}, 32, true, 1, max_layers());
  m.num_attention_heads = r.integer({"num_attention_heads", "n_head"}, 71, true, 1);
  m.intermediate_size = r.integer({"ffn_hidden_size"}, 4 * m.hidden_size, false, 1);
  m.max_position_embeddings = r.integer({"max_position_embeddings"}, 2048, false, 1);
  const bool new_arch = r.boolean("new_decoder_architecture", false);
  if (new_arch) {
    m.num_key_value_heads = r.integer({"num_kv_heads", "n_head_kv"}, m.num_attention_heads, false, 1);
    m.norms_per_block = 2;
  } else {
    m.num_key_value_heads = r.boolean("multi_query", true) ? 1 : 0;
    m.norms_per_block = r.boolean("parallel_attn", true) ? 1 : 2;
  }
  m.block = new_arch || r.boolean("parallel_attn", true) ? BlockLayout::kParallel : BlockLayout::kSequential;
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  m.attention_bias = m.mlp_bias = r.boolean("bias", false);
  m.position_embedding = r.boolean("alibi", false) ? PositionKind::kNone : PositionKind::kRotary;
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
}

void read_olmo2_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // OLMo-2: norms after attention and after the MLP (no input norm), and RMSNorm on the full
  // query and key projections.
  read_llama_like(r, m, false);
  m.qk_norm = QkNorm::kFullWidth;
  m.input_norm = false;
}

// The multi-token-prediction layers a checkpoint ships beside the model (DeepSeek-V3's
// num_nextn_predict_layers, GLM-4.5's num_nextn_predict_layers): transformers builds none of them.
void warn_mtp_layers(Reader& r, HfImport& out) {
  if (r.integer({"num_nextn_predict_layers"}, 0, false, 0) > 0) {
    out.warnings.push_back({"num_nextn_predict_layers",
                            "the multi-token-prediction layer is not part of the trained model's "
                            "forward pass and is not counted"});
  }
}

// Multi-head latent attention and DeepSeek's mixture (first_k_dense_replace dense layers, then MoE
// layers of n_routed_experts beside n_shared_experts), shared by DeepSeek-V2/V3 and Mistral 4.
// `d` holds the config class's defaults for the keys a file may leave out (0 experts_per_tok beside
// experts: required, DeepseekV2Config having none).
struct MlaDefaults {
  std::int64_t q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim;
  std::int64_t routed_experts, experts_per_tok, shared_experts, moe_intermediate_size, first_k_dense_replace;
};
// How a class spells and reads the keys beside them: the attribute_map aliases that win over the
// key they name (DeepseekV3Config, Mistral4Config and Glm4MoeLiteConfig map num_local_experts onto
// n_routed_experts, DeepseekV2Config num_experts; Glm4MoeLiteConfig head_dim onto
// qk_rope_head_dim), whether the class has first_k_dense_replace and moe_layer_freq at all, and
// the least a size may be (the new classes build zero-width layers for 0: refused).
struct MlaKeys {
  const char* experts_alias;
  const char* rope_alias;
  bool first_k_dense_replace, moe_layer_freq;
  std::int64_t least;  // for q_lora_rank (null: one query projection) and n_routed_experts
};
void read_mla_moe(const MlaDefaults& d, const MlaKeys& k, Reader& r, ModelSpec& m, HfImport& out) {
  const auto size = [&](std::initializer_list<const char*> keys, std::int64_t fallback, std::int64_t min) {
    return r.integer(keys, fallback, false, min);
  };
  m.attention_type = AttentionType::kMla;
  // The latent attention has no key/value heads to group: transformers' classes never read
  // num_key_value_heads in it (a file's value, or its class default, is not the query heads').
  m.num_key_value_heads = m.num_attention_heads;
  // q_lora_rank null: the queries are one projection (DeepSeek-V2-Lite).
  const Json* q_rank = r.raw("q_lora_rank");
  m.q_lora_rank = q_rank && q_rank->is_null() ? 0 : size({"q_lora_rank"}, d.q_lora_rank, k.least);
  m.kv_lora_rank = size({"kv_lora_rank"}, d.kv_lora_rank, 1);
  m.qk_rope_head_dim = k.rope_alias ? size({k.rope_alias, "qk_rope_head_dim"}, d.qk_rope_head_dim, 0)
                                    : size({"qk_rope_head_dim"}, d.qk_rope_head_dim, 0);
  m.qk_nope_head_dim = size({"qk_nope_head_dim"}, d.qk_nope_head_dim, 0);
  m.v_head_dim = size({"v_head_dim"}, d.v_head_dim, 1);
  m.num_experts = r.integer({k.experts_alias, "n_routed_experts"}, d.routed_experts, false, k.least, max_experts());
  m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, d.experts_per_tok, m.num_experts > 0 && d.experts_per_tok == 0, 0, max_experts());
  m.num_shared_experts = r.integer({"n_shared_experts"}, d.shared_experts, false, 0);
  m.moe_intermediate_size =
      r.integer({"moe_intermediate_size"}, d.moe_intermediate_size, m.num_experts > 0 && d.moe_intermediate_size == 0, 0);
  // A layer is a mixture when its index reaches first_k_dense_replace: more than the layers makes them all dense.
  m.first_k_dense_replace = std::min<std::int64_t>(
      k.first_k_dense_replace ? r.integer({"first_k_dense_replace"}, d.first_k_dense_replace, false, 0) : d.first_k_dense_replace,
      m.num_hidden_layers);
  if (k.moe_layer_freq && r.integer({"moe_layer_freq"}, 1, false, 1) != 1) {
    out.errors.push_back({"moe_layer_freq", "values other than 1 are not supported"});
  }
  warn_mtp_layers(r, out);
}

void read_deepseek_v3_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& out) {
  // DeepSeek-V2/V3: multi-head latent attention, first_k_dense_replace dense layers, then MoE
  // layers with n_routed_experts + n_shared_experts. V3's noaux_tc routing adds a per-expert
  // correction bias parameter.
  read_llama_like(r, m, false);
  // DeepSeek's own code (DeepSeek-VL2's language model) can turn the latent attention off
  // (use_mla false, kv_lora_rank null): a plain attention in this block, which memfit does not read.
  if (const Json* mla = r.raw("use_mla"); mla && mla->is_bool() && !mla->as_bool()) {
    out.errors.push_back({"use_mla", "false (plain multi-head attention in a DeepSeek-V2 block) is not supported: memfit "
                                     "reads DeepSeek-V2's multi-head latent attention"});
    return;
  }
  // The keys of the latent attention and the mixture a file leaves out take DeepseekV3Config's and
  // DeepseekV2Config's defaults (transformers 5.24), as the classes fill them (V2's
  // num_experts_per_tok has none: required beside experts).
  const bool v3 = type == "deepseek_v3";
  read_mla_moe(v3 ? MlaDefaults{1536, 512, 64, 128, 128, 256, 8, 1, 2048, 3} : MlaDefaults{1536, 512, 64, 128, 128, 64, 0, 2, 1407, 0},
               MlaKeys{v3 ? "num_local_experts" : "num_experts", nullptr, true, true, 0}, r, m, out);
  // DeepseekV2Config's mlp_bias puts biases on the dense MLPs and the shared experts but not on the
  // stacked experts (transformers 5.24), a split memfit's one mlp_bias does not make.
  if (!v3 && m.mlp_bias) {
    out.errors.push_back({"mlp_bias", "true is not supported for model_type \"deepseek_v2\" (biases on its dense and "
                                      "shared MLPs but not on its routed experts)"});
  }
  // DeepseekV3TopkRouter always holds e_score_correction_bias (a buffer in transformers 5, a stored
  // tensor in the checkpoint: counted); DeepSeek-V2's router never does, whatever topk_method says.
  m.router_bias = v3;
}

void read_mistral4_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // Mistral 4 (Mistral4ForCausalLM, modeling_mistral4.py; the language model of Mistral Small 4,
  // which Mistral 3's wrapper holds beside its Pixtral tower): DeepSeek-V3's block (its latent
  // attention, with interleaved rotary pairs by default, its experts and shared expert) under a
  // softmax router without a correction bias (Mistral4TopkRouter: weight only, in the model's
  // dtype), with the queries scaled by position (get_llama_4_attn_scale: a factor that needs no
  // gradient, so the multiply saves nothing the block did not). Mistral4Config's defaults
  // (transformers 5.24) are Mistral Small 4's (its docstring's checkpoint,
  // mistralai/Mistral-Small-4-119B-2603: 118,972,826,624 parameters as transformers builds them),
  // and stand in for any key the file leaves out, as the class fills them.
  read_llama_like_over(ClassSizes{131072, 4096, 12288, 36, 32, 32, 0}, r, m, false);
  if (!r.has("max_position_embeddings")) m.max_position_embeddings = 1048576;
  read_mla_moe(MlaDefaults{1024, 256, 64, 64, 128, 128, 4, 1, 2048, 0}, MlaKeys{"num_local_experts", nullptr, true, false, 1},
               r, m, out);
  m.router_bias = false;
}

void read_glm4_moe_lite_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // GLM-4.7-Flash (Glm4MoeLiteForCausalLM, modeling_glm4_moe_lite.py): DeepSeek-V3's latent
  // attention (Glm4MoeLiteAttention is DeepseekV3Attention) over GLM-4.5's mixture (a sigmoid router
  // with a per-expert correction bias, a buffer counted as DeepSeek-V3's and GLM-4.5's are, and one
  // shared expert). Which layers are dense is mlp_layer_types ("dense" / "sparse" per layer; absent:
  // the first dense, the rest sparse): the class has no first_k_dense_replace, and a file's is not
  // read by it. Glm4MoeLiteConfig's defaults (transformers 5.24) are GLM-4.7-Flash's and stand in
  // for the keys a file leaves out, as the class fills them.
  read_llama_like_over(ClassSizes{154880, 2048, 10240, 47, 20, 20, 0}, r, m, false);
  if (!r.has("max_position_embeddings")) m.max_position_embeddings = 202752;
  read_mla_moe(MlaDefaults{768, 512, 64, 192, 256, 64, 4, 1, 1536, 0},
               MlaKeys{"num_local_experts", "head_dim", false, false, 1}, r, m, out);
  m.router_bias = true;
  const std::int64_t layers = m.num_hidden_layers;
  m.first_k_dense_replace = std::min<std::int64_t>(1, layers);
  m.moe_layers_interleaved = false;
  if (const Json* types = r.raw("mlp_layer_types"); types && !types->is_null()) {
    const bool listed = types->is_array() && static_cast<std::int64_t>(types->items().size()) == layers;
    std::int64_t dense = 0;
    bool valid = listed, dense_after_sparse = false, seen_sparse = false;
    if (listed) {
      for (const Json& t : types->items()) {
        const bool is_dense = t.is_string() && t.as_string() == "dense";
        if (!is_dense && !(t.is_string() && t.as_string() == "sparse")) valid = false;
        dense += is_dense ? 1 : 0;
        dense_after_sparse = dense_after_sparse || (is_dense && seen_sparse);
        seen_sparse = seen_sparse || !is_dense;
      }
    }
    if (!valid) {
      out.errors.push_back({"mlp_layer_types", "must list \"dense\" or \"sparse\" for each of the " +
                                                   detail::group_digits(layers) + " layers; got " + describe(*types)});
      return;
    }
    m.first_k_dense_replace = dense;
    // Dense layers after a sparse one: a pipeline stage holds its share of each.
    m.moe_layers_interleaved = dense_after_sparse;
  } else if (const Json* k = r.raw("first_k_dense_replace"); k && !k->is_null() && !(k->is_number() && k->as_double() == 1.0)) {
    out.warnings.push_back({"first_k_dense_replace",
                            "is not read by Glm4MoeLiteConfig: the first layer is dense and the rest sparse unless "
                            "mlp_layer_types says otherwise"});
  }
}

void read_glm_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& out) {
  // GLM-4 (GlmForCausalLM, modeling_glm.py: glm-4-9b-chat-hf) and GLM-4-0414 (Glm4ForCausalLM,
  // modeling_glm4.py): Llama's grouped-query attention with a bias on q, k and v only
  // (attention_bias; o_proj has none), one gate_up_proj for the gated MLP (reference projections
  // gate_up_fused), an untied head; rotary positions on part of each head (no weights). GLM-4-0414
  // adds a norm after attention and after the MLP: four per block, as Gemma 2. GlmConfig's and
  // Glm4Config's defaults (transformers 5.24) are the 9B models'.
  read_llama_like_over(ClassSizes{151552, 4096, 13696, 40, 32, 2, 128}, r, m, false);
  m.qkv_bias = r.boolean("attention_bias", true);
  m.attention_bias = false;
  m.mlp_bias = false;  // GlmMLP's linears have none
  if (type == "glm4") m.norms_per_block = 4;
  // Each layer repeat-interleaves the first half of the shared cos and sin over the rotated part
  // (int(head_dim x partial_rotary_factor), 0.5 by the classes' default) and keeps them.
  m.rotary_per_layer = true;
  m.rotary_table_dtype = RotaryTableDtype::kStream;
  read_partial_rotary(r, m, out);
}

void read_glm4_moe_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // GLM-4.5 / GLM-4.6 (Glm4MoeForCausalLM, modeling_glm4_moe.py): Llama's grouped-query attention
  // with a bias on q, k and v only (attention_bias; o_proj has none), an RMSNorm on each query and
  // key head when use_qk_norm, rotary positions on part of each head (no weights); DeepSeek-V3's
  // mixture: first_k_dense_replace dense layers of intermediate_size, then n_routed_experts of
  // moe_intermediate_size beside one shared MLP of n_shared_experts x moe_intermediate_size, under
  // a sigmoid router with a per-expert correction bias (a buffer in transformers 5, a stored tensor
  // in the checkpoint: counted, as DeepSeek-V3's). Glm4MoeConfig's defaults are GLM-4.5-Air's.
  read_llama_like(r, m, false);
  m.qkv_bias = r.boolean("attention_bias", false);
  m.attention_bias = false;
  if (r.boolean("use_qk_norm", false)) m.qk_norm = QkNorm::kPerHead;
  m.num_experts = r.integer({"num_local_experts", "n_routed_experts"}, 128, false, 1, max_experts());  // the alias wins
  m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 8, false, 1, max_experts());
  m.num_shared_experts = r.integer({"n_shared_experts"}, 1, false, 0);
  m.moe_intermediate_size = r.integer({"moe_intermediate_size"}, 1408, false, 1);
  m.first_k_dense_replace = r.integer({"first_k_dense_replace"}, 1, false, 0);
  m.router_bias = true;
  warn_mtp_layers(r, out);
}

void read_hunyuan_dense_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // Hunyuan dense (HunYuanDenseV1ForCausalLM, modeling_hunyuan_v1_dense.py): Llama's block with an
  // RMSNorm on every query and key head (query_layernorm, key_layernorm; always built, whatever the
  // remote code's use_qk_norm says), applied after the rotary positions, and a bias on q, k, v and o
  // when attention_bias.
  // HunYuanDenseV1Config's head_dim defaults to None, which its attention cannot scale by.
  if (!r.raw("head_dim") || r.raw("head_dim")->is_null()) {
    out.errors.push_back({"head_dim", "is missing: HunYuanDenseV1Config's default (None) does not build; state the "
                                      "model's own (hidden_size / num_attention_heads in the released files)"});
  }
  read_llama_like(r, m, false);
  m.qkv_bias = m.attention_bias = r.boolean("attention_bias", false);
  m.qk_norm = QkNorm::kPerHead;
  m.qk_norm_after_rotary = true;
}

void read_dots1_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // dots.llm1 (Dots1ForCausalLM, modeling_dots1.py): GLM-4.5's layers (DeepSeek-V3's mixture:
  // first_k_dense_replace dense layers, then n_routed_experts beside n_shared_experts x
  // moe_intermediate_size under a sigmoid router with a per-expert correction bias, a buffer in
  // transformers 5 counted as DeepSeek-V3's is) with rotary positions on the whole head, an RMSNorm
  // on every query and key head always, a bias on q, k, v and o when attention_bias, and layers of
  // sliding-window attention (layer_types, else those from max_window_layers on when sliding_window
  // is set), whose window keeps no other tensor. Dots1Config has no default mixture (None): the
  // file must say it.
  read_llama_like(r, m, false);
  m.qkv_bias = m.attention_bias = r.boolean("attention_bias", false);
  m.qk_norm = QkNorm::kPerHead;
  // (The alias wins; a file with neither is told the class's own key.)
  const auto given = [&](const char* key) { return r.raw(key) && !r.raw(key)->is_null(); };
  const bool named = given("num_local_experts") || given("n_routed_experts");
  m.num_experts = r.integer({named && given("num_local_experts") ? "num_local_experts" : "n_routed_experts", "n_routed_experts"}, 0, true, 1,
                            max_experts());
  m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 0, true, 1, max_experts());
  m.num_shared_experts = r.integer({"n_shared_experts"}, 0, true, 0);
  m.moe_intermediate_size = r.integer({"moe_intermediate_size"}, 1408, false, 1);
  m.first_k_dense_replace = std::min(r.integer({"first_k_dense_replace"}, 0, false, 0), m.num_hidden_layers);
  m.router_bias = true;
  if (m.num_experts_per_tok > m.num_experts && m.num_experts > 0) {
    out.errors.push_back({"num_experts_per_tok", "must be at most n_routed_experts (" +
                                                     detail::group_digits(m.num_experts) + ")"});
  }
}

void read_olmoe_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& out) {
  // OLMoE (OlmoeForCausalLM, modeling_olmoe.py): Llama's block with OLMo-2's RMSNorm over the whole
  // query and key projections, and every layer's MLP num_experts experts of intermediate_size
  // under a softmax router without a bias; no shared expert, untied head.
  read_llama_like(r, m, false);
  m.qk_norm = QkNorm::kFullWidth;
  m.num_experts = r.integer({"num_local_experts", "num_experts"}, 64, false, 1, max_experts());  // the alias wins
  m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 8, false, 1, max_experts());
  m.moe_intermediate_size = m.intermediate_size;
  if (const Json* clip = r.raw("clip_qkv"); clip && clip->is_number()) {
    // OlmoeAttention clamps its normalised q and k and its v in place; unlike OLMo's clamps
    // (model.clip_qkv), what these keep has not been measured (OLMoE's released files leave it null).
    out.errors.push_back({"clip_qkv", "a number (clamping q, k and v) is not supported for model_type \"" + type +
                                          "\"; the released OLMoE files leave it null"});
  }
}

void read_ernie4_5_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& out) {
  // ERNIE 4.5 (Ernie4_5ForCausalLM / Ernie4_5_MoeForCausalLM, modeling_ernie4_5*.py): Llama's
  // block with a bias on every projection when use_bias, a head tied to the embedding by the
  // config's default, and rotary tables each layer rebuilds in fp32 (rotary_per_layer). The mixture (ernie4_5_moe): layer i is sparse when (i + 1) is a multiple of
  // moe_layer_interval and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last
  // layer), with moe_num_experts experts of moe_intermediate_size, moe_k per token, one shared MLP
  // of moe_num_shared_experts x moe_intermediate_size, and an fp32 router whose per-expert
  // correction bias is a (frozen) parameter.
  // Ernie4_5Config's / Ernie4_5_MoeConfig's defaults (0.3B's; 21B-A3B's) for the keys a file leaves out.
  const bool moe = type == "ernie4_5_moe";
  read_llama_like_over(moe ? ClassSizes{103424, 2560, 12288, 28, 20, 4, 0} : ClassSizes{103424, 1024, 3072, 18, 16, 2, 128},
                       r, m, true);
  m.rotary_per_layer = true;
  const bool bias = r.boolean("use_bias", false);
  m.attention_bias = m.mlp_bias = bias;
  if (type != "ernie4_5_moe") return;
  if (bias) {
    // transformers' stacked experts (Ernie4_5_MoeExperts) have no bias while every other projection
    // and the head do: a split memfit's one MLP bias cannot count. The released files leave it off.
    out.errors.push_back({"use_bias", "true is not supported for model_type \"ernie4_5_moe\" (its routed experts "
                                      "have no bias while its other projections do); the released files leave it "
                                      "false"});
    return;
  }
  m.num_experts = r.integer({"moe_num_experts", "num_experts"}, 64, false, 1, max_experts());
  m.num_experts_per_tok = r.integer({"moe_k", "num_experts_per_tok"}, 6, false, 1, max_experts());
  m.num_shared_experts = r.integer({"moe_num_shared_experts"}, 2, false, 0);
  m.moe_intermediate_size = r.integer({"moe_intermediate_size"}, 1536, false, 1);
  m.router_bias = true;
  const std::int64_t layers = m.num_hidden_layers;
  const std::int64_t start = r.integer({"moe_layer_start_index"}, 1, false, 0);
  std::int64_t end = r.integer({"moe_layer_end_index"}, -1, false, -1);
  if (end == -1) end = layers - 1;
  const std::int64_t interval = r.integer({"moe_layer_interval"}, 1, false, 1);
  // Sparse layers: the multiples of the interval among 1 + start .. 1 + min(end, layers - 1).
  const std::int64_t last = std::min(end, layers - 1) + 1, first = start + 1;
  const std::int64_t sparse = last < first ? 0 : last / interval - (first - 1) / interval;
  // Sparse layers every interval-th, or ending before the last layer: not one block at the end.
  m.moe_layers_interleaved = sparse < layers && (interval > 1 || last < layers);
  if (sparse == 0) {
    out.errors.push_back({"moe_layer_start_index", "with moe_layer_end_index and moe_layer_interval leaves no "
                                                   "layer sparse: the file describes a dense model"});
    return;
  }
  m.first_k_dense_replace = layers - sparse;
}

void read_llama4_text_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // Llama 4's language model (Llama4ForCausalLM, modeling_llama4.py; the text_config of Llama 4
  // Scout and Maverick): Llama's attention without biases, a weightless fp32 L2 norm on q and k in
  // the rotary layers (use_qk_norm; every no_rope_layer_interval-th layer has neither rotary
  // positions nor the norm), and MoE layers (moe_layers, else every interleave_moe_layer_step-th)
  // of num_local_experts experts of intermediate_size beside one shared expert of the same width,
  // under a top-k sigmoid router (an nn.Linear without bias); the other layers are dense MLPs of
  // intermediate_size_mlp. Llama4TextConfig's defaults are Scout's.
  read_llama_like_over({202048, 5120, 8192, 48, 40, 8, 128}, r, m, false);
  const std::int64_t expert_ff = m.intermediate_size;
  m.intermediate_size = r.integer({"intermediate_size_mlp"}, 16384, false, 1);
  m.moe_intermediate_size = expert_ff;
  m.num_experts = r.integer({"num_local_experts"}, 16, false, 1, max_experts());
  m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 1, false, 1, max_experts());
  m.num_shared_experts = 1;
  const std::int64_t layers = m.num_hidden_layers;
  // Llama4TextConfig.__post_init__: moe_layers defaults to every step-th layer from step - 1.
  std::int64_t sparse = 0;
  bool last_layers = false;
  if (r.has("moe_layers")) {
    const std::size_t errors = out.errors.size();
    const std::vector<std::int64_t> listed = read_layer_indices(r, out, "moe_layers", layers);
    if (out.errors.size() > errors) return;
    sparse = static_cast<std::int64_t>(listed.size());
    // Listed as the last layers, the dense ones come first (memfit's default order).
    last_layers = sparse > 0 && listed[0] == layers - sparse;
  } else {
    const std::int64_t step = r.integer({"interleave_moe_layer_step"}, 1, false, 1);
    sparse = layers / step;
  }
  if (sparse == 0) {
    out.errors.push_back({"moe_layers", "leaves no layer sparse: memfit reads Llama 4 as a mixture of experts"});
    return;
  }
  m.first_k_dense_replace = layers - sparse;
  m.moe_layers_interleaved = sparse < layers && !last_layers;  // Maverick: every other layer
  // Rotary layers: no_rope_layers holds 1 for a layer with rotary positions, else every
  // no_rope_layer_interval-th layer (counting from 1) has none.
  // transformers reads the list's first num_hidden_layers entries as truth values (an empty list
  // is the default); a shorter list fails there (IndexError).
  std::int64_t rope_layers = 0;
  const Json* list = r.raw("no_rope_layers");
  if (list && !list->is_null() && !list->is_array()) {
    out.errors.push_back({"no_rope_layers", "must be a list of 0 or 1 per layer; got " + describe(*list)});
    return;
  }
  if (list && list->is_array() && !list->items().empty()) {
    if (static_cast<std::int64_t>(list->items().size()) < layers) {
      out.errors.push_back({"no_rope_layers", "holds " + detail::group_digits(static_cast<std::int64_t>(
                                                              list->items().size())) +
                                                  " entries; the model has " + detail::group_digits(layers) +
                                                  " layers (num_hidden_layers)"});
      return;
    }
    for (std::int64_t i = 0; i < layers; ++i) {
      const Json& item = list->items()[static_cast<std::size_t>(i)];
      const auto n = item.as_exact_integer();
      if (item.is_bool() ? item.as_bool() : (n && *n != 0)) ++rope_layers;
      else if (!item.is_bool() && !n) {
        out.errors.push_back({"no_rope_layers", "must hold 0 or 1 per layer; got " + describe(item)});
        return;
      }
    }
  } else {
    const std::int64_t interval = r.integer({"no_rope_layer_interval"}, 4, false, 1);
    rope_layers = layers - layers / interval;
  }
  if (r.boolean("use_qk_norm", true) && rope_layers > 0) {
    m.qk_norm = QkNorm::kL2;
    m.qk_norm_layers = rope_layers;
  }
}

// Qwen3.5 (Qwen3_5TextModel / Qwen3_5MoeTextModel, modeling_qwen3_5.py, modeling_qwen3_5_moe.py):
// layer_types says which blocks are Gated DeltaNet ("linear_attention") and which attend
// ("full_attention"); without it the class builds full attention at every
// full_attention_interval-th block (4). The attention projects q with its output gate (q_proj
// twice as wide, whatever attn_output_gate says: the class reads no such key), norms q and k per
// head, rotates part of each head (no weights); every block's MLP is SwiGLU (dense) or, for the
// MoE model, num_experts stacked experts with a shared expert under a sigmoid gate, in every layer
// (the class reads neither decoder_sparse_step nor mlp_only_layers). The multi-token-prediction
// layers (mtp_*) are not built (_keys_to_ignore_on_load_unexpected).
// Qwen3-Next (Qwen3NextForCausalLM, modeling_qwen3_next.py) is the same model with q, k, v and z
// projected by one linear (in_proj_qkvz) and b and a by another (in_proj_ba), and Qwen-MoE's sparse
// layers (decoder_sparse_step, mlp_only_layers: every layer in the released checkpoint;
// Qwen3NextConfig's defaults are Qwen3-Next-80B-A3B's but for intermediate_size).
void read_qwen3_5_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& out) {
  const bool next = type == "qwen3_next";
  const bool moe = next || type == "qwen3_5_moe_text";
  read_llama_like_over(next  ? ClassSizes{151936, 2048, 5632, 48, 16, 2, 256}
                       : moe ? ClassSizes{248320, 2048, 0, 40, 16, 2, 256}
                             : ClassSizes{248320, 4096, 12288, 32, 16, 4, 256},
                       r, m, false);
  m.linear_attention_fused = next;
  m.qk_norm = QkNorm::kPerHead;
  m.attention_output_gate = true;
  m.linear_num_key_heads = r.integer({"linear_num_key_heads"}, 16, false, 1);
  m.linear_num_value_heads = r.integer({"linear_num_value_heads"}, 32, false, 1);
  m.linear_key_head_dim = r.integer({"linear_key_head_dim"}, 128, false, 1);
  m.linear_value_head_dim = r.integer({"linear_value_head_dim"}, 128, false, 1);
  m.linear_conv_kernel_dim = r.integer({"linear_conv_kernel_dim"}, 4, false, 1);
  if (m.linear_num_value_heads % m.linear_num_key_heads != 0) {
    out.errors.push_back({"linear_num_value_heads", "must be a multiple of linear_num_key_heads (" +
                                                        detail::group_digits(m.linear_num_key_heads) + "); got " +
                                                        detail::group_digits(m.linear_num_value_heads)});
  }
  const std::int64_t layers = m.num_hidden_layers;
  std::int64_t linear = 0;
  bool spread = true;  // the kinds alternate as memfit spreads them (ParameterCount::is_linear_layer)
  const Json* types = r.raw("layer_types");
  if (types && !types->is_null()) {
    if (!types->is_array() || static_cast<std::int64_t>(types->items().size()) != layers) {
      out.errors.push_back({"layer_types", "must list one of \"linear_attention\" or \"full_attention\" for each of "
                                           "the " + detail::group_digits(layers) + " layers (num_hidden_layers)"});
      return;
    }
    std::vector<bool> is_linear;
    for (const Json& item : types->items()) {
      const bool ok = item.is_string() && (item.as_string() == "linear_attention" || item.as_string() == "full_attention");
      if (!ok) {
        out.errors.push_back({"layer_types", "must hold \"linear_attention\" or \"full_attention\"; got " + describe(item)});
        return;
      }
      is_linear.push_back(item.as_string() == "linear_attention");
      linear += is_linear.back() ? 1 : 0;
    }
    const std::int64_t full = layers - linear;
    for (std::int64_t i = 0; i < layers && linear > 0; ++i) {
      spread = spread && is_linear[static_cast<std::size_t>(i)] == ((i + 1) * full / layers == i * full / layers);
    }
  } else {
    const std::int64_t interval = r.integer({"full_attention_interval"}, 4, false, 1);
    linear = layers - layers / interval;
    // The class's pattern closes each span of `interval` with attention; memfit spreads the same
    // count evenly, which is the class's order when the spans divide the stack (or none attends).
    spread = layers % interval == 0 || linear == layers;
  }
  m.linear_attention_layers = linear;
  if (!spread) {
    out.warnings.push_back({"layer_types", "the Gated DeltaNet and attention layers are not evenly interleaved; memfit "
                                           "counts each kind exactly but spreads them evenly over the stack when it "
                                           "orders the step's events"});
  }
  if (next) {
    m.num_experts = r.integer({"num_experts"}, 512, false, 1, max_experts());
    m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 10, false, 1, max_experts());
    m.moe_intermediate_size = r.integer({"moe_intermediate_size"}, 512, false, 1);
    const std::int64_t step = r.integer({"decoder_sparse_step"}, 1, false, 1);
    const bool listed = !read_layer_indices(r, out, "mlp_only_layers", layers).empty();
    if (step != 1 || listed) {
      out.errors.push_back({listed ? "mlp_only_layers" : "decoder_sparse_step",
                            "dense layers among the sparse ones are not supported beside Gated DeltaNet layers: every "
                            "block must have the same MLP (decoder_sparse_step 1, mlp_only_layers empty)"});
    }
  } else if (moe) {
    m.num_experts = r.integer({"num_experts"}, 256, false, 1, max_experts());
    m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 8, false, 1, max_experts());
    m.moe_intermediate_size = r.integer({"moe_intermediate_size"}, 512, false, 1);
  }
  if (moe) {
    m.shared_expert_intermediate_size = r.integer({"shared_expert_intermediate_size"}, 512, false, 0);
    m.num_shared_experts = m.shared_expert_intermediate_size > 0 ? 1 : 0;
    m.shared_expert_gate = m.shared_expert_intermediate_size > 0;
  }
  if (r.integer({"mtp_num_hidden_layers"}, 0, false, 0) > 0) {
    out.warnings.push_back({"mtp_num_hidden_layers", "the multi-token-prediction layers are not part of the trained "
                                                     "model's forward pass (transformers does not build them) and "
                                                     "are not counted"});
  }
}

void read_gpt_bigcode_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& out) {
  // GPTBigCode (SantaCoder, StarCoder; transformers' modeling_gpt_bigcode.py): GPT-2's layout with
  // one fused c_attn whose key and value are a single head each when multi_query (the default),
  // biases everywhere, learned positions and a head tied to the embedding.
  read_gpt2_family("gpt2", r, m, out);
  m.num_key_value_heads = r.boolean("multi_query", true) ? 1 : 0;
}

void read_gptj_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // GPT-J (modeling_gptj.py): one LayerNorm (ln_1) feeding attention and MLP in parallel, rotary
  // positions on rotary_dim of each head, q/k/v/out without bias, fc_in/fc_out with bias, and an
  // untied lm_head with a bias.
  m.vocab_size = r.integer({"vocab_size"}, 50400, true, 1);
  m.hidden_size = r.integer({"n_embd", "hidden_size"}, 4096, true, 1);
  m.num_hidden_layers = r.integer({"n_layer", "num_hidden_layers"}, 28, true, 1, max_layers());
  m.num_attention_heads = r.integer({"n_head", "num_attention_heads"}, 16, true, 1);
  m.intermediate_size = r.integer({"n_inner"}, 4 * m.hidden_size, false, 1);
  m.max_position_embeddings = r.integer({"n_positions", "max_position_embeddings"}, 2048, false, 1, 1'000'000'000);
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  m.position_embedding = PositionKind::kRotary;
  m.attention_bias = false;
  m.mlp_bias = true;
  m.block = BlockLayout::kParallel;
  m.norms_per_block = 1;
  m.lm_head_bias = true;
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
}

void read_bloom_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // BLOOM (modeling_bloom.py): a LayerNorm right after the word embeddings, ALiBi instead of
  // position embeddings (no table), fused query_key_value, biases everywhere, a 4h GELU MLP and a
  // head tied to the embedding.
  m.vocab_size = r.integer({"vocab_size"}, 250880, true, 1);
  m.hidden_size = r.integer({"hidden_size", "n_embed"}, 64, true, 1);
  m.num_hidden_layers = r.integer({"n_layer", "num_hidden_layers"}, 2, true, 1, max_layers());
  m.num_attention_heads = r.integer({"n_head", "num_attention_heads"}, 8, true, 1);
  m.intermediate_size = 4 * m.hidden_size;
  m.max_position_embeddings = r.integer({"seq_length", "max_position_embeddings"}, 2048, false, 1, 1'000'000'000);
  bert_style_layers(m);
  m.position_embedding = PositionKind::kNone;  // ALiBi
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
}

void read_stablelm_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& out) {
  // StableLM (modeling_stablelm.py): Llama's shapes with LayerNorm (weight and bias), partial
  // rotary, optional q/k/v bias (use_qkv_bias) and an untied head; with use_parallel_residual one
  // LayerNorm feeds attention and MLP in parallel.
  read_llama_like(r, m, false);
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  m.qkv_bias = r.boolean("use_qkv_bias", false);
  if (r.boolean("use_parallel_residual", false)) {
    m.block = BlockLayout::kParallel;
    m.norms_per_block = 1;
  }
  if (r.boolean("qk_layernorm", false)) {
    // One LayerNorm per head (StableLmLayerNormPerHead), not one shared by the heads as memfit's
    // per-head norm counts.
    out.errors.push_back({"qk_layernorm", "true (a LayerNorm for each query and key head) is not supported for "
                                          "model_type \"" + type + "\""});
  }
}

void read_starcoder2_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // StarCoder2 (modeling_starcoder2.py): grouped-query attention with rotary positions, LayerNorm
  // with bias, a plain c_fc / c_proj MLP, biases on every projection when use_bias (the default),
  // dropout on both residual branches, and a head tied to the embedding by the config's default.
  read_llama_like(r, m, true);
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = true;
  m.attention_bias = m.mlp_bias = r.boolean("use_bias", true);
  m.residual_dropout = true;
}

void read_cohere_family(const std::string& type, Reader& r, ModelSpec& m, HfImport& out) {
  // Cohere / Command-R / Aya (modeling_cohere.py): one LayerNorm without bias (CohereLayerNorm)
  // feeding attention and a SwiGLU MLP in parallel, no biases, a head tied to the embedding.
  // Cohere2 (Command R7B, Command A; modeling_cohere2.py) is the same block and the same weights,
  // its layers sliding-window (with rotary positions) or full attention (without): no weight and,
  // with flash or SDPA, no saved tensor depends on the window.
  read_llama_like(r, m, true);
  m.norm = NormKind::kLayerNorm;
  m.norm_bias = false;
  m.block = BlockLayout::kParallel;
  m.norms_per_block = 1;
  if (r.boolean("use_qk_norm", false)) {
    // A (heads x head_dim) LayerNorm weight on queries and keys: one per head, not shared.
    out.errors.push_back({"use_qk_norm", "true (Command R+'s per-head query and key norms) is not supported for "
                                         "model_type \"" + type + "\""});
  }
}

void read_gemma3_text_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // Gemma 3 text (Gemma3ForCausalLM, modeling_gemma3.py): Gemma 2's four norms a block, plus an
  // RMSNorm over each query and key head (one head_dim weight each); tied head. Gemma3TextConfig's
  // defaults (configuration_gemma3.py) fill the keys a file leaves out: gemma-3-4b's text_config
  // gives its sizes and relies on them for the vocabulary and the heads.
  read_llama_like_over({262208, 2304, 9216, 26, 8, 4, 256}, r, m, true);
  m.norms_per_block = 4;
  m.qk_norm = QkNorm::kPerHead;
}

void read_gpt_oss_family(const std::string& /*type*/, Reader& r, ModelSpec& m, HfImport& /*out*/) {
  // gpt-oss (GptOssForCausalLM, modeling_gpt_oss.py): Llama-style attention with biases on q, k, v
  // and o and a learned sink logit per head; every layer's MLP is num_local_experts experts of
  // intermediate_size with biases (gate_up_proj_bias, down_proj_bias) under a router with a bias,
  // run as a clamped SwiGLU; untied head. GptOssConfig's defaults are gpt-oss-120b's.
  read_llama_like(r, m, false);
  m.attention_bias = r.boolean("attention_bias", true);
  m.attention_sinks = true;
  m.num_experts = r.integer({"num_experts", "num_local_experts"}, 128, false, 1, max_experts());  // the alias wins
  m.num_experts_per_tok = r.integer({"num_experts_per_tok"}, 4, false, 1, max_experts());
  m.moe_intermediate_size = m.intermediate_size;
  m.mlp_bias = true;
  m.router_bias = true;
  m.hidden_act = HiddenAct::kClampedSwiglu;
}

// Each model_type's reader (transformers' config class of that name: what its modeling code builds).
struct FamilyReader {
  std::vector<const char*> types;
  void (*read)(const std::string& type, Reader& r, ModelSpec& m, HfImport& out);
};

const std::vector<FamilyReader>& family_readers() {
  static const std::vector<FamilyReader> readers = {
      {{"gpt2"}, read_gpt2_family},
      {{"gpt_neox"}, read_gpt_neox_family},
      {{"opt"}, read_opt_family},
      {{"bert"}, read_bert_family},
      {{"distilbert"}, read_distilbert_family},
      {{"t5", "mt5"}, read_t5_family},
      {{"bart"}, read_bart_family},
      {{"roberta", "xlm-roberta"}, read_roberta_family},
      {{"deberta-v2"}, read_deberta_v2_family},
      // Granite's multipliers (embeddings, residual branches, attention scale, logits) and SmolLM3's
      // layers without rotary positions change no shape and keep nothing more for backward.
      {{"llama", "mistral", "ministral", "ministral3", "granite", "smollm3"}, read_llama_family},
      {{"seed_oss"}, read_seed_oss_family},
      {{"olmo"}, read_olmo_family},
      {{"arcee"}, read_arcee_family},
      {{"nemotron"}, read_nemotron_family},
      {{"apertus"}, read_apertus_family},
      {{"exaone4"}, read_exaone4_family},
      {{"mixtral"}, read_mixtral_family},
      {{"phimoe"}, read_phimoe_family},
      {{"minimax_m2"}, read_minimax_m2_family},
      {{"qwen2"}, read_qwen2_family},
      {{"qwen2_moe"}, read_qwen2_moe_family},
      {{"qwen3", "qwen3_moe"}, read_qwen3_family},
      {{"gemma", "gemma2"}, read_gemma_family},
      {{"phi"}, read_phi_family},
      {{"phi3"}, read_phi3_family},
      {{"falcon", "RefinedWeb", "RefinedWebModel"}, read_falcon_family},
      {{"olmo2", "olmo3"}, read_olmo2_family},
      {{"deepseek_v3", "deepseek_v2"}, read_deepseek_v3_family},
      {{"mistral4"}, read_mistral4_family},
      {{"glm4_moe_lite"}, read_glm4_moe_lite_family},
      {{"glm4_moe"}, read_glm4_moe_family},
      {{"dots1"}, read_dots1_family},
      {{"hunyuan_v1_dense"}, read_hunyuan_dense_family},
      {{"glm", "glm4"}, read_glm_family},
      {{"olmoe"}, read_olmoe_family},
      {{"ernie4_5", "ernie4_5_moe"}, read_ernie4_5_family},
      {{"llama4_text"}, read_llama4_text_family},
      {{"gpt_bigcode"}, read_gpt_bigcode_family},
      {{"gptj"}, read_gptj_family},
      {{"bloom"}, read_bloom_family},
      {{"stablelm"}, read_stablelm_family},
      {{"starcoder2"}, read_starcoder2_family},
      {{"cohere", "cohere2"}, read_cohere_family},
      {{"gemma3_text"}, read_gemma3_text_family},
      {{"gpt_oss"}, read_gpt_oss_family},
      {{"qwen3_5_text", "qwen3_5_moe_text", "qwen3_next"}, read_qwen3_5_family},
  };
  return readers;
}

// The reader of a model_type, or nullptr when memfit does not know it.
const FamilyReader* find_family(const std::string& type) {
  for (const FamilyReader& f : family_readers()) {
    for (const char* t : f.types) {
      if (type == t) return &f;
    }
  }
  return nullptr;
}

// The MLP's activation function: config.json's activation_function (GPT-2, OPT), hidden_act or
// hidden_activation (Gemma), else the class's default.
HiddenAct default_hidden_act(const std::string& type) {
  if (type == "gpt2" || type == "phi") return HiddenAct::kGeluNew;
  if (type == "opt") return HiddenAct::kRelu;
  // BLOOM's BloomGelu trains through a custom autograd function that saves only its input, as
  // gelu_pytorch_tanh does.
  if (type == "gemma" || type == "gemma2" || type == "gemma3_text" || type == "gpt_bigcode" || type == "starcoder2" ||
      type == "bloom") {
    return HiddenAct::kGeluPytorchTanh;
  }
  if (type == "gptj") return HiddenAct::kGeluNew;
  if (type == "arcee" || type == "nemotron") return HiddenAct::kRelu2;
  if (type == "apertus") return HiddenAct::kXielu;
  if (type == "bert" || type == "gpt_neox" || type == "falcon" || type == "RefinedWeb" || type == "RefinedWebModel") {
    return HiddenAct::kGelu;
  }
  return HiddenAct::kSilu;
}

void read_class_hidden_act(const std::string& type, const Json& json, ModelSpec& m, HfImport& out) {
  m.hidden_act = default_hidden_act(type);
  for (const char* key : {"activation_function", "hidden_activation", "hidden_act"}) {
    const Json* v = json.find(key);
    if (!v || !v->is_string()) continue;
    const std::string& name = v->as_string();
    // xIELU is a decoder's only (Apertus): the encoders' readers do not take it.
    if (name == "xielu") m.hidden_act = HiddenAct::kXielu;
    else if (!hidden_act_from_name(name, m.hidden_act) && name.size() <= 40) {
      out.warnings.push_back({key, "\"" + name + "\" is read as the class's default activation"});
    }
    return;
  }
}


}  // namespace

QkvModules hf_qkv_modules(const std::string& t) {
  if (t == "gpt2" || t == "gpt_neox" || t == "falcon" || t == "RefinedWeb" || t == "RefinedWebModel" || t == "phi3" ||
      t == "gpt_bigcode" || t == "bloom") {
    return QkvModules::kFused;
  }
  return find_family(t) ? QkvModules::kSeparate : QkvModules::kUnknown;
}

const char* supported_hf_model_types() {
  return "gpt2, gpt_neox, opt, bert, distilbert, roberta, xlm-roberta, deberta-v2, t5, mt5, bart, llama, mistral, ministral, ministral3, mixtral, "
         "granite, smollm3, seed_oss, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, gemma3_text, phi, "
         "phi3, falcon, olmo, olmo2, olmo3, exaone4, deepseek_v2, deepseek_v3, mistral4, minimax_m2, phimoe, gpt_bigcode, gptj, bloom, stablelm, "
         "starcoder2, cohere, cohere2, gpt_oss, arcee, nemotron, apertus, glm, glm4, glm4_moe, glm4_moe_lite, dots1, hunyuan_v1_dense, olmoe, ernie4_5, ernie4_5_moe, llama4_text, qwen3_5_text, "
         "qwen3_5_moe_text, qwen3_next";
}

// Text classes that are a family memfit reads under its own name: Qwen2-VL's and Qwen2.5-VL's
// decoder is Qwen2's (Qwen2VLTextModel: bias on q, k and v, grouped-query attention, SwiGLU;
// the multimodal rotary sections are chosen once in Qwen2VLRotaryEmbedding, shared by every
// layer as Llama's tables are), Qwen3-VL's is Qwen3's (Qwen3VLTextModel, with per-head q/k
// norms; DeepStack adds visual features to the first layers' hidden states only when there
// are images).
namespace {

const char* text_alias(const std::string& type) {
  static const std::pair<const char*, const char*> kTextAlias[] = {
      {"qwen2_vl_text", "qwen2"}, {"qwen2_5_vl_text", "qwen2"}, {"qwen3_vl_text", "qwen3"},
      {"qwen3_vl_moe_text", "qwen3_moe"}};
  for (const auto& [name, family] : kTextAlias) {
    if (type == name) return family;
  }
  return nullptr;
}

// The wrappers whose vision tower memfit counts, with each class's own defaults for the keys a file
// leaves out (Qwen2VLVisionConfig, Qwen2_5_VLVisionConfig, Qwen3VLVisionConfig, SiglipVisionConfig,
// CLIPVisionConfig, PixtralVisionConfig; Mistral3Config's spatial_merge_size and LlavaConfig's and
// Mistral3Config's multimodal_projector_bias). Qwen2-VL's width and MLP ratio: embed_dim 1280,
// mlp_ratio 4.
struct VisionTowerClass {
  const char* type;
  VisionTower tower;
  std::int64_t depth, hidden, ff, out, patch, positions;
  bool projector_bias;
};

const VisionTowerClass* find_vision_tower(std::string_view type) {
  static const VisionTowerClass kTowers[] = {
      {"qwen2_vl", VisionTower::kQwen2Vl, 32, 1280, 0, 3584, 14, 0, false},
      {"qwen2_5_vl", VisionTower::kQwen25Vl, 32, 3584, 3420, 3584, 14, 0, false},
      {"qwen3_vl", VisionTower::kQwen3Vl, 27, 1152, 4304, 3584, 16, 2304, false},
      {"qwen3_vl_moe", VisionTower::kQwen3Vl, 27, 1152, 4304, 3584, 16, 2304, false},  // the same tower class
      {"gemma3", VisionTower::kGemma3, 12, 768, 3072, 0, 16, 0, false},
      {"llava", VisionTower::kLlava, 12, 768, 3072, 0, 32, 0, true},
      {"mistral3", VisionTower::kMistral3, 24, 1024, 4096, 0, 16, 0, false},
      // A PaliGemma vision_config is SiglipVisionConfig(**it): SigLIP's class defaults (PaliGemma's own
      // init_kwargs stand in only for an absent one: import_hf_config).
      {"paligemma", VisionTower::kPaliGemma, 12, 768, 3072, 0, 16, 0, true}};
  for (const VisionTowerClass& tower : kTowers) {
    if (type == tower.type) return &tower;
  }
  return nullptr;
}

// The vision encoder and projector of a multimodal file (vision.cpp counts them as transformers
// 5.24's classes build them; a key the file leaves out keeps the class's default, as the vision
// config class fills it). Qwen2-VL names the encoder's width embed_dim, its MLP's a ratio of it and
// the projector's output hidden_size; Qwen2.5-VL and Qwen3-VL hidden_size, intermediate_size and
// out_hidden_size. Gemma 3's SigLIP, LLaVA's CLIP and Mistral 3's Pixtral are read as their
// vision_config's class (SiglipVisionConfig, CLIPVisionConfig, PixtralVisionConfig: num_hidden_layers,
// hidden_size, intermediate_size, patch_size, image_size, num_channels), with the wrapper's own keys
// (multimodal_projector_bias, Mistral 3's spatial_merge_size). A size that is not a positive integer
// up to a million, another vision class under the wrapper, or several feature layers concatenated
// (vision_feature_layer a list) leave the tower out, with a warning.
void read_vision_tower(const std::string& type, const Json& outer, const Json& v, ModelSpec& m,
                       std::vector<Issue>& warnings) {
  ModelSpec read = m;
  const VisionTowerClass* d = find_vision_tower(type);
  if (!d) return;
  const VisionTower t = d->tower;
  read.vision_type = t;
  read.vision_depth = d->depth;
  read.vision_hidden_size = d->hidden;
  read.vision_intermediate_size = d->ff;
  read.vision_out_hidden_size = d->out;
  read.vision_patch_size = d->patch;
  read.vision_num_position_embeddings = d->positions;
  read.vision_temporal_patch_size = read.vision_in_channels = 0;
  read.vision_spatial_merge_size = 0;
  read.vision_deepstack_layers = 3;
  read.vision_feature_layer = read.vision_tokens_per_image = 0;
  read.vision_num_heads = 16;  // the num_heads of Qwen2VLVisionConfig, Qwen2_5_VLVisionConfig, Qwen3VLVisionConfig
  // Gemma 3's SigLIP pools with its head, as SiglipVisionConfig's default does under PaliGemma (its
  // own sub-config, used when the file has no vision_config, turns it off).
  read.vision_use_head = t == VisionTower::kGemma3 || t == VisionTower::kPaliGemma ? Switch::kYes : Switch::kAuto;
  read.vision_projector_bias = d->projector_bias ? Switch::kYes : Switch::kNo;
  Issue bad;
  const auto refuse = [&](std::string field, std::string message) {
    if (bad.field.empty()) bad = {std::move(field), std::move(message)};
  };
  const auto size_in = [&](const Json& where, const char* prefix, const char* key, std::int64_t& into) {
    const Json* value = where.find(key);
    if (!value) return;
    const std::optional<std::int64_t> n = value->as_exact_integer();
    if (n && *n >= 1 && *n <= 1'000'000) into = *n;
    else refuse(std::string(prefix) + key, "must be a whole number from 1 to 1,000,000; got " + describe(*value));
  };
  const auto size = [&](const char* key, std::int64_t& into) { size_in(v, "vision_config.", key, into); };
  const auto flag = [&](const Json& where, std::string field, const char* key, Switch& into) {
    const Json* value = where.find(key);
    if (!value) return;
    if (value->is_bool()) into = value->as_bool() ? Switch::kYes : Switch::kNo;
    else refuse(std::move(field), "must be true or false; got " + describe(*value));
  };
  const bool paligemma = t == VisionTower::kPaliGemma;
  if (t == VisionTower::kGemma3 || t == VisionTower::kLlava || t == VisionTower::kMistral3 || paligemma) {
    const char* vision_class = t == VisionTower::kGemma3 || paligemma ? "siglip_vision_model"
                               : t == VisionTower::kLlava ? "clip_vision_model" : "pixtral";
    // LLaVA builds the encoder vision_config names (LlavaModel: AutoModel.from_config): CLIP,
    // SigLIP (LLaVA-Interleave) or Pixtral (Pixtral-12B), each with its config class's defaults.
    VisionEncoder encoder = VisionEncoder::kAuto;
    std::int64_t image = t == VisionTower::kMistral3 ? 1024 : 224;
    if (const Json* cls = v.find("model_type"); cls && t == VisionTower::kLlava && cls->is_string() &&
                                                (cls->as_string() == "siglip_vision_model" || cls->as_string() == "pixtral")) {
      const bool pixtral = cls->as_string() == "pixtral";
      encoder = pixtral ? VisionEncoder::kPixtral : VisionEncoder::kSiglip;
      read.vision_depth = pixtral ? 24 : 12;  // PixtralVisionConfig's and SiglipVisionConfig's defaults
      read.vision_hidden_size = pixtral ? 1024 : 768;
      read.vision_intermediate_size = pixtral ? 4096 : 3072;
      read.vision_patch_size = 16;
      image = pixtral ? 1024 : 224;
      read.vision_use_head = Switch::kYes;  // SiglipVisionConfig's vision_use_head
    } else if (cls && !(cls->is_string() && cls->as_string() == vision_class)) {
      refuse("vision_config.model_type", describe(*cls) + " is not a vision class memfit knows under " +
                                             describe(Json::string(type)) + " (\"" + vision_class + "\"" +
                                             (t == VisionTower::kLlava ? ", \"siglip_vision_model\" or \"pixtral\")" : ")"));
    }
    read.vision_encoder = encoder;
    // LLaVA's vision_feature_select_strategy: "default" drops each image's first token (CLIP's class
    // token), "full" keeps them all. memfit measured CLIP under default and SigLIP and Pixtral under
    // full; the other pairings keep about one token an image more or less.
    if (const Json* strategy = outer.find("vision_feature_select_strategy");
        t == VisionTower::kLlava && strategy && strategy->is_string()) {
      const bool full = strategy->as_string() == "full", clip = encoder == VisionEncoder::kAuto;
      if (clip == full) {
        warnings.push_back({"vision_feature_select_strategy",
                            describe(*strategy) + " with " + (clip ? "CLIP" : "this encoder") + ": images through the "
                            "tower are estimated as with " + (clip ? "\"default\"" : "\"full\"") +
                            ", one token an image " + (clip ? "fewer" : "more") + " than the class keeps"});
      }
    }
    if (const Json* layers = outer.find("vision_feature_layer"); layers && layers->is_array()) {
      refuse("vision_feature_layer", "several layers concatenated into the projector are not modelled");
    } else if (layers && !layers->is_number()) {
      refuse("vision_feature_layer", "must be a whole number (an index into the hidden states); got " + describe(*layers));
    }
    size("num_hidden_layers", read.vision_depth);
    size("hidden_size", read.vision_hidden_size);
    size("intermediate_size", read.vision_intermediate_size);
    size("num_channels", read.vision_in_channels);
    size("image_size", image);
    size("patch_size", read.vision_patch_size);
    // SiglipVisionConfig's and CLIPVisionConfig's default heads, PixtralVisionConfig's.
    read.vision_num_heads = t == VisionTower::kMistral3 || encoder == VisionEncoder::kPixtral ? 16 : 12;
    size("num_attention_heads", read.vision_num_heads);  // (images through the tower check it divides the width)
    // The layer LLaVA and Mistral 3 project (transformers' index into the hidden states; 0 is the
    // patch embeddings' output, which no block reaches: kept as the index -(depth + 1), the same
    // hidden state counted from the end, so images through it are refused by name).
    if (paligemma) {
      // PaliGemmaMultiModalProjector maps the last hidden state to projection_dim (the outer key,
      // PaliGemmaConfig's 2048), which the language model's embeddings must take as they are.
      std::int64_t projection = 2048;
      size_in(outer, "", "projection_dim", projection);
      read.vision_out_hidden_size = projection;
      if (projection != m.hidden_size) {
        warnings.push_back({"projection_dim", std::string(outer.find("projection_dim") ? "" : "(PaliGemmaConfig's default) ") +
                                                  detail::group_digits(projection) +
                                                  " is not the language model's hidden_size (" +
                                                  detail::group_digits(m.hidden_size) +
                                                  "): the projector is counted as the class builds it, but image "
                                                  "features that wide could not replace token embeddings"});
      }
    } else if (t != VisionTower::kGemma3) {
      if (const Json* layer = outer.find("vision_feature_layer"); layer && layer->is_number()) {
        const std::optional<std::int64_t> index = layer->as_exact_integer();
        if (!index || *index < -100'000 || *index > 100'000) {
          refuse("vision_feature_layer", "must be a whole number from -100,000 to 100,000; got " + describe(*layer));
        } else {
          read.vision_feature_layer = *index != 0 ? *index : -(read.vision_depth + 1);
        }
      }
    } else {
      size_in(outer, "", "mm_tokens_per_image", read.vision_tokens_per_image);
    }
    if (image < read.vision_patch_size) refuse("vision_config.image_size", "must be at least its patch_size");
    // SigLIP: one learned position per patch; CLIP: one more, for its class token. Pixtral's are rotary.
    const std::int64_t side = image / read.vision_patch_size;
    const bool clip = t == VisionTower::kLlava && encoder == VisionEncoder::kAuto;
    if (t != VisionTower::kMistral3 && encoder != VisionEncoder::kPixtral) {
      read.vision_num_position_embeddings = side * side + (clip ? 1 : 0);
    }
    if (read.vision_num_position_embeddings > 1'000'000) {
      refuse("vision_config.image_size", "makes more than 1,000,000 patches ((image_size / patch_size)²)");
    }
    flag(v, "vision_config.vision_use_head", "vision_use_head", read.vision_use_head);
    flag(outer, "multimodal_projector_bias", "multimodal_projector_bias", read.vision_projector_bias);
    if (t == VisionTower::kMistral3) size_in(outer, "", "spatial_merge_size", read.vision_spatial_merge_size);
  } else {
    const bool qwen2 = t == VisionTower::kQwen2Vl;
    size("depth", read.vision_depth);
    size(qwen2 ? "embed_dim" : "hidden_size", read.vision_hidden_size);
    size(qwen2 ? "hidden_size" : "out_hidden_size", read.vision_out_hidden_size);
    if (qwen2) {
      std::int64_t ratio = 4;
      size("mlp_ratio", ratio);
      read.vision_intermediate_size = read.vision_hidden_size * ratio;
      if (read.vision_intermediate_size > 1'000'000) {
        refuse("vision_config.mlp_ratio", "makes the MLP wider than 1,000,000 (embed_dim × mlp_ratio)");
      }
    } else {
      size("intermediate_size", read.vision_intermediate_size);
    }
    size("patch_size", read.vision_patch_size);
    size("temporal_patch_size", read.vision_temporal_patch_size);
    size("in_channels", read.vision_in_channels);
    size("spatial_merge_size", read.vision_spatial_merge_size);
    size("num_heads", read.vision_num_heads);  // (images through the tower check it divides the width)
    if (t == VisionTower::kQwen3Vl) {
      size("num_position_embeddings", read.vision_num_position_embeddings);
      if (const Json* list = v.find("deepstack_visual_indexes")) {
        if (list->is_array() && list->items().size() <= 100) read.vision_deepstack_layers = static_cast<std::int64_t>(list->items().size());
        else refuse("vision_config.deepstack_visual_indexes", "must be a list of at most 100 layers");
      }
    }
  }
  if (bad.field.empty() && count_parameters(read).vision_count.overflow()) {
    refuse("vision_config", "the vision tower's sizes overflow its count");
  }
  if (!bad.field.empty()) {
    warnings.push_back({bad.field, bad.message + "; the vision tower is left out of the estimate"});
    return;
  }
  m = read;
}

// The task class a file was saved from (architectures): a ...ForSequenceClassification file (a
// reward model is LlamaForSequenceClassification with one label) or a ...ForTokenClassification
// one carries its classifier, not the language-model head, and its label count as
// PreTrainedConfig reads it (configuration_utils.py: num_labels, else the size of id2label, else 2).
// Other classes (...ForCausalLM, ...ForMaskedLM, ...ForConditionalGeneration) keep the family's
// head.
void read_task_head(const Json& json, Reader& r, ModelSpec& m, HfImport& out) {
  const Json* architectures = json.find("architectures");
  if (!architectures || !architectures->is_array() || architectures->items().empty()) return;
  const Json& first = architectures->items().front();
  if (!first.is_string()) return;
  const std::string name = first.as_string();
  const auto ends_with = [&](std::string_view suffix) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  OutputHead head;
  if (ends_with("ForSequenceClassification")) head = OutputHead::kSequenceClassification;
  else if (ends_with("ForTokenClassification")) head = OutputHead::kTokenClassification;
  else return;
  m.output_head = head;
  const Json* id2label = json.find("id2label");
  if (id2label && !id2label->is_null() && (!id2label->is_object() || id2label->members().empty()) &&
      !json.find("num_labels")) {
    out.errors.push_back({"id2label", "must be an object with one entry per label (the classifier's outputs); got " +
                                          describe(*id2label)});
    return;
  }
  const std::int64_t mapped = id2label && id2label->is_object() ? std::int64_t(id2label->members().size()) : 2;
  m.num_labels = r.integer({"num_labels"}, mapped, false, 1, 1'000'000);
  if (!m.encoder_family()) {
    // GenericForSequenceClassification finds each sequence's last token by pad_token_id and refuses
    // a batch of more than one without it.
    // (Classes whose config fills a padding token of their own need none in the file.)
    static constexpr std::string_view kPadDefault[] = {"gemma", "gemma2", "gemma3_text", "hunyuan_v1_dense", "phi3",
                                                       "olmo", "olmo2", "olmo3", "seed_oss", "glm", "glm4",
                                                       "smollm3", "ministral3", "mistral4"};
    const bool class_pads = std::find(std::begin(kPadDefault), std::end(kPadDefault), m.model_type) != std::end(kPadDefault);
    const Json* pad = json.find("pad_token_id");
    if (head == OutputHead::kSequenceClassification && (class_pads ? pad && pad->is_null() : !pad || pad->is_null())) {
      out.warnings.push_back({"pad_token_id", "is not set: " + name + " refuses micro-batches of more than one "
                                              "sequence without it (set it to the tokenizer's padding token)"});
    }
    // GenericForTokenClassification (and GPT-2's, Falcon's, BLOOM's and GPTBigCode's own) drops out
    // before its score with the config's classifier_dropout, else its hidden_dropout, else 0.1. A
    // file that states one says it (GPTNeoXConfig fills classifier_dropout, 0.1, so its
    // hidden_dropout is not read); else the class's default (ModelSpec::token_head_drops).
    if (head == OutputHead::kTokenClassification) {
      const auto number = [&](const char* key) {
        const Json* v = json.find(key);
        return v && v->is_number() ? std::optional<double>(v->as_double()) : std::nullopt;
      };
      std::optional<double> p = number("classifier_dropout");
      if (!p && m.model_type != "gpt_neox") p = number("hidden_dropout");
      const bool drops = p ? *p > 0 : m.token_head_drops();
      m.head_dropout = drops ? Switch::kYes : Switch::kNo;
    }
  }
  out.warnings.push_back({"architectures", name + ": read with its classification head (" +
                                               detail::group_digits(m.num_labels) + " label" +
                                               (m.num_labels == 1 ? "" : "s") +
                                               "), not a language-model head (model.output_head " +
                                               (head == OutputHead::kSequenceClassification ? "sequence_classification"
                                                                                            : "token_classification") +
                                               ")"});
}

}  // namespace

// What transformers' class for a model_type does where it differs from the hf profile. Every entry
// depends on the class alone, so a model typed in with that model_type, a preset and an imported
// config.json get the same code.
Implementation class_reference(std::string_view t) {
  Implementation r;  // every knob kAuto: the profile's
  // GPT-2's, OPT's and BERT's eager attention runs the softmax in the compute dtype with no mask
  // tensor passed to each layer (modeling_gpt2.py eager_attention_forward: softmax(attn_weights,
  // dim=-1) then .type(value.dtype)). So does the seeds' SimpleTransformer (the seed_gpt presets).
  if (t == "gpt2" || t == "opt" || t == "bert" || t == "seed_gpt") {
    r.softmax_dtype = SoftmaxDtype::kCompute;
    r.attention_mask = AttentionMask::kImplicit;
  }
  // BERT's heads (BertForTokenClassification, BertForSequenceClassification, BertForMaskedLM) give
  // their logits to CrossEntropyLoss as they are, as RoBERTa's do (below): no fp32 upcast.
  if (t == "bert") r.logits_dtype = LogitsDtype::kCompute;
  // The encoder-decoder and encoder families (modeling_t5.py, modeling_bart.py, modeling_roberta.py,
  // modeling_deberta_v2.py) run eager softmax in the compute dtype and give the logits to
  // CrossEntropyLoss as they are (no fp32 upcast); so does DistilBERT (modeling_distilbert.py:
  // softmax without a dtype, mlm_loss_fct and CrossEntropyLoss on the logits).
  if (t == "t5" || t == "mt5" || t == "bart" || t == "roberta" || t == "xlm-roberta" || t == "deberta-v2" ||
      t == "distilbert") {
    r.softmax_dtype = SoftmaxDtype::kCompute;
    r.logits_dtype = LogitsDtype::kCompute;
  }
  // Classes that project q, k and v with one matmul (GPT-2's c_attn, GPT-NeoX's and Falcon's
  // query_key_value, Phi-3's qkv_proj and gate_up_proj).
  if (hf_qkv_modules(std::string(t)) == QkvModules::kFused) r.projections = Projections::kFused;
  // GLM-4's gated MLP is one gate_up_proj; its q, k and v are separate (modeling_glm.py GlmMLP).
  if (t == "glm" || t == "glm4") r.projections = Projections::kGateUpFused;
  // GPTBigCode keeps use_cache on in training: unlike Llama's, its model class does not turn the
  // cache off under gradient checkpointing (transformers 4.48 modeling_gpt_bigcode.py,
  // GPTBigCodeModel.forward: `presents.append(outputs[1])` with use_cache from the config, whose
  // default is true, no `use_cache = False` beside `self.gradient_checkpointing and self.training`),
  // and no trainer turns it off: every block's `present` is returned with the outputs.
  if (t == "gpt_bigcode") r.use_cache = Switch::kYes;
  // Gemma's RMSNorm keeps its normalised x in fp32 (modeling_gemma*.py GemmaRMSNorm: the output is
  // x.float() normalised times (1 + weight.float()), cast back after): every norm saves the fp32
  // input, the rstd and the fp32 normalised x (measured: tools/frameworks/families.py, gemma3_text).
  // OLMo-2's and OLMo-3's multiply by the weight before the cast back (modeling_olmo2.py
  // Olmo2RMSNorm, modeling_olmo3.py).
  // Qwen3.5's zero-centred RMSNorm does the same with (1 + weight) (modeling_qwen3_5.py Qwen3_5RMSNorm).
  if (t == "gemma" || t == "gemma2" || t == "gemma3_text" || t == "olmo2" || t == "olmo3" || t == "qwen3_5_text" ||
      t == "qwen3_5_moe_text" || t == "qwen3_next") {
    r.norm_kernel = NormKernel::kEagerFp32;
  }
  // Nemotron's LayerNorm1P runs in the autocast dtype (modeling_nemotron.py NemotronLayerNorm1P).
  if (t == "nemotron") r.norm_kernel = NormKernel::kCompute;
  // Cohere's LayerNorm is Python arithmetic in fp32 (CohereLayerNorm, Cohere2LayerNorm).
  if (t == "cohere" || t == "cohere2") r.norm_kernel = NormKernel::kPythonLayerNorm;
  // Classes without an SDPA path run eager attention when transformers picks the default (BLOOM;
  // Gemma 2, whose soft-capping SDPA cannot do: modeling_gemma2.py _supports_sdpa = False).
  // gpt-oss's sinks have no SDPA path either (modeling_gpt_oss.py _supports_sdpa = False).
  if (t == "bloom" || t == "gemma2" || t == "gpt_oss") r.attention = AttentionImpl::kEager;
  // Llama 4's MoE runs every expert on every token (Llama4TextMoe.forward).
  if (t == "llama4_text") r.moe_dispatch = MoeDispatch::kDense;
  return r;
}

HfImport import_hf_config(const Json& json) {
  HfImport out;
  if (!json.is_object()) {
    out.errors.push_back({"config.json", "must be a JSON object; got " + std::string(Json::kind_name(json.kind()))});
    return out;
  }
  const Json* type = json.find("model_type");
  if (!type || !type->is_string()) {
    out.errors.push_back({"model_type", std::string(type ? "must be a string" : "is missing") +
                                            "; supported: " + supported_hf_model_types()});
    return out;
  }
  const std::string& t = type->as_string();
  const FamilyReader* family = find_family(t);
  if (!family) {
    // A text config saved alone (qwen2_vl_text, ...) is that family's file under another name.
    if (const char* family_name = text_alias(t)) {
      Json language = json;
      language.set("model_type", Json::string(family_name));
      fill_attention_defaults(language, t);
      HfImport alone = import_hf_config(language);
      alone.warnings.insert(alone.warnings.begin(),
                            {"model_type", describe(*type) + " is a vision-language model's text model, read as model_type \"" +
                                               family_name + "\""});
      return alone;
    }
    // A multimodal model (Gemma 3, Mistral 3, LLaVA, PaliGemma, Qwen-VL) nests its language
    // model's config in text_config (InternVL's remote code in llm_config, DeepSeek-VL2's in
    // language_config): that model is read, its vision encoder and projector are not.
    const char* nested = "text_config";
    const Json* text = nullptr;
    for (const char* key : {"text_config", "llm_config", "language_config"}) {
      const Json* found = json.find(key);
      if (!text && found && found->is_object()) {
        text = found;
        nested = key;
      }
    }
    // Qwen2-VL's and Qwen2.5-VL's files from before transformers nested them (the checkpoints on
    // the Hub) keep the language model's keys at the top, beside vision_config.
    const bool qwen_vl = t == "qwen2_vl" || t == "qwen2_5_vl";
    if (qwen_vl && !(text && text->is_object())) text = &json;
    // A text_config without its own model_type is the wrapper's default text class
    // (Gemma3Config: Gemma3TextConfig; Mistral3Config, LlavaConfig: CONFIG_MAPPING's mistral, llama).
    static const std::pair<const char*, const char*> kTextClass[] = {
        {"gemma3", "gemma3_text"}, {"mistral3", "mistral"}, {"llava", "llama"}, {"paligemma", "gemma"},
        {"llama4", "llama4_text"}, {"qwen3_5", "qwen3_5_text"}, {"qwen3_5_moe", "qwen3_5_moe_text"},
        {"qwen2_vl", "qwen2_vl_text"}, {"qwen2_5_vl", "qwen2_5_vl_text"}, {"qwen3_vl", "qwen3_vl_text"},
        {"qwen3_vl_moe", "qwen3_vl_moe_text"}};
    const bool wrapper = std::any_of(std::begin(kTextClass), std::end(kTextClass),
                                     [&](const auto& pair) { return t == pair.first; });
    // A wrapper whose file has no text_config (or a null one) builds its default text model, as its
    // config class fills it: read as an empty one (PaliGemma's with its sub-config's init_kwargs).
    Json default_text = Json::object();
    if (!text && wrapper) {
      const Json* given = json.find("text_config");
      if (!given || given->is_null()) {
        // PaliGemmaConfig's and Mistral3Config's text sub-configs have init_kwargs of their own
        // (PaliGemma 3B's Gemma; Mistral Small 3.1's Mistral); the others are their text class's defaults.
        using Size = std::pair<const char*, std::int64_t>;
        const std::vector<Size> init =
            t == "paligemma" ? std::vector<Size>{{"hidden_size", 2048}, {"num_hidden_layers", 18},
                                                 {"intermediate_size", 16384}, {"num_attention_heads", 8},
                                                 {"num_key_value_heads", 1}, {"vocab_size", 257152}}
            : t == "mistral3" ? std::vector<Size>{{"hidden_size", 5120}, {"num_hidden_layers", 40},
                                                  {"intermediate_size", 32768}, {"num_attention_heads", 32},
                                                  {"num_key_value_heads", 8}, {"head_dim", 128},
                                                  {"vocab_size", 131072}, {"max_position_embeddings", 131072}}
                              : std::vector<Size>{};
        for (const auto& [key, value] : init) default_text.set(key, Json::integer(value));
        text = &default_text;
      }
    }
    const Json* text_type = text && text->is_object() && text != &json ? text->find("model_type") : nullptr;
    Json implied;
    for (const auto& [outer, inner] : kTextClass) {
      if (t == outer && text && text->is_object() && !text_type) {
        implied = Json::string(inner);
        text_type = &implied;
      }
    }
    Json aliased;
    std::string text_class;  // the text config's own class, before the alias
    if (const char* family_name = text_type && text_type->is_string() ? text_alias(text_type->as_string()) : nullptr) {
      text_class = text_type->as_string();
      aliased = Json::string(family_name);
      text_type = &aliased;
    }
    if (text_type && text_type->is_string() && find_family(text_type->as_string())) {
      Json language = *text;
      language.set("model_type", *text_type);
      if (!text_class.empty()) fill_attention_defaults(language, text_class);
      // A wrapper's text_config is completed by its text config class, whose defaults stand in for
      // the keys it leaves out (transformers 5.24's sub-configs): llava-1.5-7b-hf's names no size of
      // its Vicuna-7B, Pixtral-12B's no head count. LlamaConfig's and MistralConfig's, Qwen3-VL's text
      // classes' (Qwen3VLTextConfig, Qwen3VLMoeTextConfig) and PaliGemma's Gemma's (GemmaConfig: its
      // own sub-config's init_kwargs stand in only for an absent text_config); their key/value heads
      // and head_dim come from the readers' class defaults (attention_defaults).
      using Size = std::pair<const char*, std::int64_t>;
      const bool llama = text != &json && text_type->as_string() == "llama";
      const bool mistral = text != &json && text_type->as_string() == "mistral";
      const std::vector<Size> class_sizes =
          llama || mistral
              ? std::vector<Size>{{"vocab_size", 32000}, {"hidden_size", 4096}, {"intermediate_size", mistral ? 14336 : 11008},
                                  {"num_hidden_layers", 32}, {"num_attention_heads", 32},
                                  {"max_position_embeddings", mistral ? 131072 : 2048}}
          : text_class == "qwen3_vl_text"
              ? std::vector<Size>{{"vocab_size", 151936}, {"hidden_size", 4096}, {"intermediate_size", 22016},
                                  {"num_hidden_layers", 32}, {"num_attention_heads", 32}}
          : text_class == "qwen3_vl_moe_text"
              ? std::vector<Size>{{"vocab_size", 151936}, {"hidden_size", 2048}, {"intermediate_size", 5632},
                                  {"num_hidden_layers", 24}, {"num_attention_heads", 16}, {"moe_intermediate_size", 1408},
                                  {"num_experts", 60}, {"num_experts_per_tok", 4}}
          : t == "paligemma" && text_type->as_string() == "gemma" && text != &default_text
              ? std::vector<Size>{{"vocab_size", 256000}, {"hidden_size", 3072}, {"intermediate_size", 24576},
                                  {"num_hidden_layers", 28}, {"num_attention_heads", 16}}
              : std::vector<Size>{};
      for (const auto& [key, value] : class_sizes) {
        if (!language.find(key)) language.set(key, Json::integer(value));
      }
      // The outer file can carry the tie. How the wrapper's class decides it (transformers 5.24,
      // measured on the meta device with the two keys set apart): Qwen2-VL, Qwen2.5-VL and LLaVA tie
      // when either key says so; Qwen3-VL, Qwen3-VL-MoE, Qwen3.5 and Qwen3.5-MoE follow the outer key
      // alone (default false); Llama 4 the text config's alone (its Llama4ForCausalLM is built from it;
      // default false). Gemma 3, Mistral 3 and PaliGemma read the outer key alone (default true), but
      // files written before transformers 5 state only the text config's, and from_pretrained unties
      // a head the checkpoint stores apart (PreTrainedModel.tie_weights): the outer key, else a text
      // config's false (the checkpoint's own head), else true. Other wrappers: the text config's own
      // key, else the outer one.
      const Json* outer_tie = json.find("tie_word_embeddings");
      if (outer_tie && !outer_tie->is_bool()) {
        // Checked here, so that a bad value is named where it is, not under the nested key.
        out.errors.push_back({"tie_word_embeddings", "must be true or false; got " + describe(*outer_tie)});
        return out;
      }
      const Json* text_tie = text->find("tie_word_embeddings");
      const bool text_says = text_tie && text_tie->is_bool();
      if (t == "qwen2_vl" || t == "qwen2_5_vl" || t == "llava") {
        if (outer_tie && outer_tie->as_bool() && (!text_tie || text_says)) language.set("tie_word_embeddings", *outer_tie);
      } else if (t == "qwen3_vl" || t == "qwen3_vl_moe" || t == "qwen3_5" || t == "qwen3_5_moe") {
        if (!text_tie || text_says) language.set("tie_word_embeddings", Json::boolean(outer_tie && outer_tie->as_bool()));
      } else if (t == "gemma3" || t == "mistral3" || t == "paligemma") {
        if (outer_tie) language.set("tie_word_embeddings", *outer_tie);
        else if (!text_tie) language.set("tie_word_embeddings", Json::boolean(true));
      } else if (t == "llama4") {
        // the text config's own
      } else if (outer_tie && !text_tie) {
        language.set("tie_word_embeddings", *outer_tie);
      }
      // The task class is the wrapper's (Gemma3ForSequenceClassification, Qwen3_5ForTokenClassification):
      // its score reads the language model's hidden states.
      for (const char* key : {"architectures", "num_labels", "id2label", "classifier_dropout"}) {
        const Json* value = json.find(key);
        if (value) language.set(key, *value);
      }
      HfImport inner = import_hf_config(language);
      inner.model.multimodal_type = t;
      const bool top = text == &json;
      const std::string prefix = top ? std::string() : std::string(nested) + ".";
      for (Issue& e : inner.errors) e.field = prefix + e.field;
      for (Issue& w : inner.warnings) w.field = prefix + w.field;
      // The vision tower, where memfit knows its class: held with the weights, never run.
      const Json* vision_config = json.find("vision_config");
      if (find_vision_tower(t) && inner.errors.empty()) {
        if (vision_config && vision_config->is_object()) {
          read_vision_tower(t, json, *vision_config, inner.model, inner.warnings);
        } else if (!vision_config || vision_config->is_null()) {
          // No vision_config: the class builds its default tower. LLaVA's and Mistral 3's are the
          // released checkpoints' (their config classes' init_kwargs: CLIP ViT-L/14-336, Pixtral),
          // which the core's sizes at 0 describe; the others' are their vision config class's.
          // PaliGemma's class fills an absent vision_config with its own init_kwargs over SigLIP's.
          Json implied_vision = Json::object();
          if (t == "paligemma") {
            for (const auto& [key, value] : {std::pair<const char*, std::int64_t>{"intermediate_size", 4096},
                                             {"hidden_size", 1152}, {"patch_size", 14}, {"image_size", 224},
                                             {"num_hidden_layers", 27}, {"num_attention_heads", 16}}) {
              implied_vision.set(key, Json::integer(value));
            }
            implied_vision.set("vision_use_head", Json::boolean(false));
          }
          read_vision_tower(t, json, implied_vision, inner.model, inner.warnings);
          ModelSpec& m = inner.model;
          if ((t == "llava" || t == "mistral3") && m.vision_type != VisionTower::kNone) {
            m.vision_depth = m.vision_hidden_size = m.vision_intermediate_size = 0;
            m.vision_patch_size = m.vision_num_position_embeddings = m.vision_num_heads = 0;
          }
        }
      }
      std::string message = describe(*type) + " is a multimodal model: memfit reads its language model (" +
                            (top ? std::string("the keys beside vision_config") : std::string(nested)) +
                            ", as model_type " + describe(*text_type) + ")";
      if (inner.model.vision_type != VisionTower::kNone) {
        const std::int64_t n = count_parameters(inner.model).vision_count.value();
        char gb[32];
        std::snprintf(gb, sizeof gb, "%.2f", static_cast<double>(n) * 2 / 1e9);
        message += " and its vision encoder and projector (" + detail::group_digits(n) + " parameters, " + gb +
                   " GB in 16 bits), which the estimate holds frozen with the weights. Its steps are text-only " +
                   (inner.model.vision_type == VisionTower::kPaliGemma
                        ? std::string("(images through PaliGemma's tower, with its prefix attention over image and "
                                      "prompt tokens, are not modelled yet)")
                        : std::string("unless training.images_per_sample says otherwise"));
      } else {
        message += "; the vision encoder and projector (vision_config) are not in the estimate (text-only training "
                   "never runs them, but their weights are loaded)";
      }
      inner.warnings.insert(inner.warnings.begin(), {"model_type", message});
      return inner;
    }
    // Families people ask for whose layers memfit cannot describe yet: say why, not only what is.
    // (transformers 5.24's modeling code of each.)
    static const std::pair<const char*, const char*> kNotYet[] = {
        {"jamba", "Mamba layers beside attention"},
        {"falcon_h1", "Mamba-2 heads beside attention in each layer"},
        {"granitemoehybrid", "Mamba-2 layers beside attention"},
        {"nemotron_h", "Mamba-2 layers beside attention"},
        {"bamba", "Mamba-2 layers beside attention"},
        {"zamba2", "Mamba-2 layers beside a shared attention block"},
        {"mamba", "Mamba layers and no attention"},
        {"mamba2", "Mamba-2 layers and no attention"},
        {"falcon_mamba", "Mamba layers and no attention"},
        {"lfm2", "short convolution layers beside attention"},
        {"lfm2_moe", "short convolution layers beside attention"},
        {"kimi_linear", "Kimi Delta Attention layers beside latent attention"},
        {"minimax", "lightning attention layers beside softmax attention"},
        {"gemma4", "per-layer input embeddings, layers that reuse another layer's keys and values, and full-attention "
                   "layers with a head size of their own"},
        {"gemma4_text", "per-layer input embeddings, layers that reuse another layer's keys and values, and "
                        "full-attention layers with a head size of their own"},
        {"gemma3n", "per-layer input embeddings, AltUp's parallel streams and layers that reuse another layer's keys "
                    "and values"},
        {"gemma3n_text", "per-layer input embeddings, AltUp's parallel streams and layers that reuse another layer's "
                         "keys and values"},
        {"deepseek_v32", "a sparse-attention indexer beside the latent attention"},
        {"glm_moe_dsa", "a sparse-attention indexer beside the latent attention"},
        {"mistral_large4", "a sparse-attention indexer beside the latent attention"},
        {"deepseek_v4", "compressed sparse attention and hyper-connections"},
    };
    std::string why;
    for (const auto& [name, reason] : kNotYet) {
      if (t == name || (text_type && text_type->is_string() && text_type->as_string() == name)) why = reason;
    }
    if (!why.empty()) why = "; it has " + why + ", which memfit does not describe yet";
    out.errors.push_back({"model_type", describe(*type) + " is not supported" +
                                            (text_type ? " (nor its " + std::string(nested) + "'s " + describe(*text_type) + ")" : std::string()) +
                                            why + "; supported: " + supported_hf_model_types()});
    return out;
  }
  Reader reader(json, out);
  reader.set_model_type(t);
  ModelSpec& m = out.model;
  m.model_type = t;
  family->read(t, reader, m, out);
  if (!out.errors.empty()) return out;
  read_task_head(json, reader, m, out);
  if (!out.errors.empty()) return out;
  // The classes that drop out on the embeddings and both residual branches (GPT-2's resid_pdrop,
  // OPT's and BERT's hidden_dropout_prob, the encoder-decoder and encoder families', GPTBigCode's,
  // GPT-J's and BLOOM's through dropout_add). Seed-OSS drops out on both residual branches
  // (modeling_seed_oss.py SeedOssMLP and SeedOssAttention) but not on the embeddings, whose mask
  // memfit counts with them: one tokens x hidden byte mask too many, against two a layer.
  if (t == "gpt2" || t == "opt" || t == "bert" || t == "distilbert" || m.is_encoder_decoder || t == "roberta" ||
      t == "xlm-roberta" || t == "deberta-v2" || t == "gpt_bigcode" || t == "gptj" || t == "bloom" || t == "seed_oss") {
    m.residual_dropout = true;
  }
  // GPTBigCode keeps the cache in training (class_reference); its file can turn it off.
  if (t == "gpt_bigcode" && !reader.boolean("use_cache", true)) {
    out.warnings.push_back({"use_cache", "is false: GPTBigCode then keeps no cache in training, but memfit reads the "
                                         "model, not this setting: set training.use_cache to no"});
  }
  if (m.hidden_act == HiddenAct::kAuto) read_class_hidden_act(t, json, m, out);
  // The file's dropout is a training setting in memfit (training.dropout, 0 unless set): say so
  // when the file drops out, since model.train() applies it and keeps its masks.
  for (const char* key : {"hidden_dropout_prob", "resid_pdrop", "dropout_rate", "dropout", "hidden_dropout",
                          "residual_dropout", "attention_probs_dropout_prob", "attn_pdrop", "attention_dropout"}) {
    const Json* v = json.find(key);
    if (v && v->is_number() && v->as_double() > 0 && v->as_double() < 1) {
      out.warnings.push_back({key, "is " + v->dump() + ": transformers drops out with it in training; memfit counts "
                                   "dropout from training.dropout (0 unless set), so set that to " + v->dump() +
                                   " to count the masks it keeps"});
      break;
    }
  }

  // The same structural checks as a typed-in configuration, named by config.json keys.
  if (m.head_dim == 0 && m.hidden_size % m.num_attention_heads != 0 && m.attention_type != AttentionType::kMla) {
    out.errors.push_back({"num_attention_heads", "must divide hidden_size (" + detail::group_digits(m.hidden_size) +
                                                     ") when head_dim is not given; got " +
                                                     detail::group_digits(m.num_attention_heads)});
  }
  if (m.is_encoder_decoder && m.head_dim == 0 && m.hidden_size % m.decoder_heads() != 0) {
    out.errors.push_back({"decoder_attention_heads", "must divide the hidden size (" +
                                                         detail::group_digits(m.hidden_size) + "); got " +
                                                         detail::group_digits(m.decoder_heads())});
  }
  if (m.num_key_value_heads > 0 && m.num_attention_heads % m.num_key_value_heads != 0) {
    out.errors.push_back({"num_key_value_heads", "must divide num_attention_heads (" +
                                                     detail::group_digits(m.num_attention_heads) + "); got " +
                                                     detail::group_digits(m.num_key_value_heads)});
  }
  return out;
}

HfImport import_hf_config_text(std::string_view text) {
  const JsonParseResult parsed = parse_json(text);
  if (!parsed.value) {
    HfImport out;
    out.errors.push_back({"config.json", json_parse_problem(parsed)});
    return out;
  }
  return import_hf_config(*parsed.value);
}

}  // namespace memfit
