// Checks on a typed configuration: each field's range (as JSON input is held to), then the rules
// between fields. Every message names the field and what is allowed.
#include <string>
#include <vector>

#include "field_table.hpp"
#include "memfit/config.hpp"
#include "memfit/gpus.hpp"
#include "text.hpp"

namespace memfit {

namespace {

using detail::Field;
using detail::FieldKind;
using detail::group_digits;

class Checks {
 public:
  void add(const char* field, std::string message) { errors_.push_back({field, std::move(message)}); }
  std::vector<Issue> take() { return std::move(errors_); }
  bool empty() const { return errors_.empty(); }

 private:
  std::vector<Issue> errors_;
};

// Ranges first, so that a configuration built in C++ is held to the same limits as JSON.
void check_ranges(const Config& c, Checks& out) {
  Config& m = const_cast<Config&>(c);  // the table's accessors are shared by reader and writer
  for (const Field& f : detail::config_fields()) {
    if (f.kind == FieldKind::kInt && (f.int_ref(m) < f.min_int || f.int_ref(m) > f.max_int)) {
      out.add(f.path, "must be " + detail::int_range_text(f) + "; got " + group_digits(f.int_ref(m)));
    } else if (f.kind == FieldKind::kReal && !(f.real_ref(m) >= f.min_real && f.real_ref(m) <= f.max_real)) {
      out.add(f.path, "must be " + detail::real_range_text(f) + "; got " + detail::plain_number(f.real_ref(m)));
    }
  }
}

void check_attention(const ModelSpec& m, Checks& out) {
  if (m.attention_type == AttentionType::kStandard) {
    if (m.head_dim == 0 && m.hidden_size % m.num_attention_heads != 0) {
      out.add("model.num_attention_heads", "must divide model.hidden_size (" + group_digits(m.hidden_size) +
                                               ") when model.head_dim is not given; got " +
                                               group_digits(m.num_attention_heads));
    }
    if (m.num_key_value_heads > m.num_attention_heads || m.num_attention_heads % m.kv_heads() != 0) {
      out.add("model.num_key_value_heads", "must divide model.num_attention_heads (" +
                                               group_digits(m.num_attention_heads) + "); got " +
                                               group_digits(m.num_key_value_heads));
    }
    return;
  }
  if (m.kv_lora_rank < 1) out.add("model.kv_lora_rank", "must be at least 1 for attention_type mla");
  if (m.qk_nope_head_dim + m.qk_rope_head_dim < 1) {
    out.add("model.qk_nope_head_dim", "qk_nope_head_dim + qk_rope_head_dim must be at least 1 for attention_type mla");
  }
  if (m.v_head_dim < 1) out.add("model.v_head_dim", "must be at least 1 for attention_type mla");
}

void check_mlp(const ModelSpec& m, Checks& out) {
  const bool has_dense_layers = m.num_experts == 0 || m.first_k_dense_replace > 0;
  if (has_dense_layers && m.intermediate_size < 1) {
    out.add("model.intermediate_size", "must be at least 1 (the model has dense MLP layers)");
  }
  if (m.num_experts == 0) return;
  if (m.num_experts_per_tok < 1 || m.num_experts_per_tok > m.num_experts) {
    out.add("model.num_experts_per_tok", "must be from 1 to model.num_experts (" + group_digits(m.num_experts) +
                                             "); got " + group_digits(m.num_experts_per_tok));
  }
  if (m.moe_intermediate_size < 1) out.add("model.moe_intermediate_size", "must be at least 1 when model.num_experts > 0");
  if (m.first_k_dense_replace > m.num_hidden_layers) {
    out.add("model.first_k_dense_replace",
            "must be at most model.num_hidden_layers (" + group_digits(m.num_hidden_layers) + ")");
  }
}

void check_training(const Config& c, Checks& out) {
  const ModelSpec& m = c.model;
  const Training& t = c.training;
  if (m.position_embedding == PositionKind::kLearned && t.seq_len > m.max_position_embeddings &&
      t.precision != Precision::kSeed14p) {
    out.add("training.seq_len", "must be at most model.max_position_embeddings (" +
                                    group_digits(m.max_position_embeddings) + ") for learned positions; got " +
                                    group_digits(t.seq_len));
  }
  if (t.finetune.method != FinetuneMethod::kLora) return;
  if (t.finetune.lora_targets == 0) out.add("training.finetune.lora_targets", "must name at least one module for LoRA");
  if (t.finetune.base_bits != 4 && t.finetune.base_bits != 8 && t.finetune.base_bits != 16) {
    out.add("training.finetune.base_bits", "must be 16 (frozen 16-bit base), 8 (int8) or 4 (QLoRA NF4); got " +
                                               group_digits(t.finetune.base_bits));
  }
}

void check_parallel(const Config& c, Checks& out) {
  const ModelSpec& m = c.model;
  const Parallel& p = c.parallel;
  const std::int64_t model_parallel = p.tensor * p.pipeline * p.context;
  if (p.num_gpus % model_parallel != 0) {
    out.add("parallel.num_gpus", "must be a multiple of tensor × pipeline × context (" +
                                     group_digits(model_parallel) + "); got " + group_digits(p.num_gpus));
  }
  if (p.pipeline > m.num_hidden_layers) {
    out.add("parallel.pipeline", "must be at most model.num_hidden_layers (" + group_digits(m.num_hidden_layers) + ")");
  }
  if (m.attention_type == AttentionType::kStandard && m.num_attention_heads % p.tensor != 0) {
    out.add("parallel.tensor", "must divide model.num_attention_heads (" + group_digits(m.num_attention_heads) + ")");
  }
  if (p.expert > 1 && (m.num_experts == 0 || m.num_experts % p.expert != 0)) {
    out.add("parallel.expert", "must divide model.num_experts (" + group_digits(m.num_experts) + ")");
  }
  if (p.virtual_stages > 1 && (p.pipeline < 2 || p.pipeline * p.virtual_stages > m.num_hidden_layers)) {
    out.add("parallel.virtual_stages", "must be 1 without pipeline parallelism, and pipeline × virtual_stages at "
                                       "most model.num_hidden_layers (" + group_digits(m.num_hidden_layers) + ")");
  }
  const std::int64_t data_ranks = p.num_gpus / (p.tensor * p.pipeline);
  if (p.shard_degree > 0 && p.num_gpus % model_parallel == 0 && data_ranks % p.shard_degree != 0) {
    out.add("parallel.shard_degree", "must divide the ranks that hold the same layers (num_gpus / (tensor × "
                                     "pipeline) = " + group_digits(data_ranks) + "); got " +
                                     group_digits(p.shard_degree));
  }
}

}  // namespace

std::vector<Issue> validate(const Config& c) {
  Checks checks;
  check_ranges(c, checks);
  if (!checks.empty()) return checks.take();
  check_attention(c.model, checks);
  check_mlp(c.model, checks);
  check_training(c, checks);
  check_parallel(c, checks);
  if (!find_gpu(c.hardware.gpu)) {
    checks.add("hardware.gpu",
               "must be the id of a GPU in the table (see `memfit --list-gpus`); got \"" + c.hardware.gpu + "\"" +
                   gpu_suggestion_text(c.hardware.gpu));
  }
  return checks.take();
}

}  // namespace memfit
