// Properties over seeded random valid configurations: memory never falls when the model or the
// batch grows; sharding, checkpointing and offload never raise the GPU peak; every result is
// finite. The one exception is the rule written beside `documented_exception`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

// 100,000 by default (issue: "checked on 100,000 seeded random valid configurations");
// MEMFIT_PROPERTY_CASES overrides it for a quicker local run.
int cases() {
  const char* env = std::getenv("MEMFIT_PROPERTY_CASES");
  return env ? std::atoi(env) : 100'000;
}

class Generator {
 public:
  // Settings added later draw from a stream of their own, so the configurations drawn before them
  // stay the same (the relations keep being checked on the same cases).
  explicit Generator(std::uint64_t seed) : rng_(seed), later_(seed ^ 0x9e3779b97f4a7c15ULL) {}

  template <class T>
  const T& pick(const std::vector<T>& v) { return v[index(v.size())]; }
  std::size_t index(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng_); }
  std::int64_t power_of_two(int max_log2) { return std::int64_t{1} << index(static_cast<std::size_t>(max_log2) + 1); }

  Config config() {
    static const std::vector<std::string> ids = [] {
      std::vector<std::string> out;
      for (const Preset& p : presets()) out.push_back(p.id);
      return out;
    }();
    Config c = default_config();
    c.model = *preset_model(pick(ids));
    Training& t = c.training;
    t.micro_batch_size = 1 + static_cast<std::int64_t>(index(8));
    t.seq_len = 64 * power_of_two(6);
    if (c.model.position_embedding == PositionKind::kLearned) t.seq_len = std::min(t.seq_len, c.model.max_position_embeddings);
    t.grad_accum_steps = coin(0.7) ? 1 : 4;
    t.precision = static_cast<Precision>(index(9));
    t.optimizer = static_cast<Optimizer>(index(8));
    t.optimizer_impl = static_cast<OptimizerImpl>(index(5));
    t.checkpointing = static_cast<Checkpointing>(index(4));
    const bool decoder_only = !c.model.is_encoder_decoder && c.model.normalize_before &&
                              c.model.attention_type != AttentionType::kDisentangled;
    if (t.checkpointing == Checkpointing::kFull && decoder_only && std::bernoulli_distribution(0.3)(later_)) {
      t.checkpointed_layers = std::uniform_int_distribution<std::int64_t>(0, c.model.num_hidden_layers)(later_);
    }
    t.implementation.attention = coin() ? AttentionImpl::kFlash : AttentionImpl::kEager;
    t.implementation.chunked_loss = coin(0.3);
    // Every loss kernel (compiled_ce and loss_parallel included) and the shifted copy of transformers 4.46-4.48.
    if (std::bernoulli_distribution(0.3)(later_)) {
      t.implementation.loss = static_cast<LossKernel>(std::uniform_int_distribution<int>(1, 6)(later_));
    }
    if (std::bernoulli_distribution(0.2)(later_)) t.implementation.loss_shift_copy = Switch::kYes;
    t.dropout = coin(0.3) ? 0.1 : 0.0;
    t.activation_offload = coin(0.15);
    if (coin(0.4)) {
      t.finetune.method = FinetuneMethod::kLora;
      t.finetune.lora_rank = power_of_two(7);
      t.finetune.lora_targets = 1u + static_cast<unsigned>(index(255));
      t.finetune.base_bits = pick(std::vector<std::int64_t>{4, 8, 16});
    }
    Parallel& p = c.parallel;
    p.tensor = coin(0.7) ? 1 : 2;
    if (c.model.num_attention_heads % p.tensor != 0) p.tensor = 1;
    p.pipeline = coin(0.8) ? 1 : 2;
    p.num_gpus = p.tensor * p.pipeline * power_of_two(3);
    p.zero_stage = static_cast<std::int64_t>(index(4));
    p.sequence_parallel = p.tensor > 1 && coin();
    c.hardware.gpu = pick(std::vector<std::string>{"a100-80gb", "h100-sxm-80gb", "rtx-4090-24gb", "l4-24gb"});
    // The relations concern allocated bytes; a stated fragmentation skips the allocator replay,
    // which would make a million estimates a matter of minutes.
    c.hardware.fragmentation = 0.0;
    return c;
  }

 private:
  std::mt19937_64 rng_;
  std::mt19937_64 later_;
};

struct Outcome {
  bool ok;
  std::int64_t peak;
};

Outcome run(const Config& c) {
  const Estimate e = estimate(c);
  return {e.ok(), e.ok() ? e.peak_allocated_bytes.value() : 0};
}

// A change that must not lower the peak (growth) or must not raise it (a memory-saving feature).
struct Relation {
  const char* name;
  bool (*applies)(const Config&);
  void (*change)(Config&);
  bool grows;  // true: peak(after) ≥ peak(before); false: peak(after) ≤ peak(before)
};

bool always(const Config&) { return true; }

const std::vector<Relation>& relations() {
  static const std::vector<Relation> list = {
      {"one more layer", always, [](Config& c) { ++c.model.num_hidden_layers; }, true},
      {"one more sequence in the micro-batch", always, [](Config& c) { ++c.training.micro_batch_size; }, true},
      {"twice the sequence length",
       [](const Config& c) { return c.model.position_embedding != PositionKind::kLearned; },
       [](Config& c) { c.training.seq_len *= 2; }, true},
      {"a wider model (one more unit per head)",
       [](const Config& c) { return c.model.head_dim == 0 && c.model.attention_type == AttentionType::kStandard; },
       [](Config& c) { c.model.hidden_size += c.model.num_attention_heads; }, true},
      {"a larger vocabulary", always, [](Config& c) { c.model.vocab_size += 1000; }, true},
      {"a higher ZeRO stage", [](const Config& c) { return c.parallel.zero_stage < 3; },
       [](Config& c) { ++c.parallel.zero_stage; }, false},
      {"full checkpointing", always,
       [](Config& c) {
         c.training.checkpointing = Checkpointing::kFull;
         c.training.checkpointed_layers = -1;
       },
       false},
      {"one more checkpointed block",
       [](const Config& c) {
         return c.training.checkpointing == Checkpointing::kFull && c.training.checkpointed_layers >= 0 &&
                c.training.checkpointed_layers < c.model.num_hidden_layers;
       },
       [](Config& c) { ++c.training.checkpointed_layers; }, false},
      {"activation offload", always, [](Config& c) { c.training.activation_offload = true; }, false},
      {"optimizer offload", [](const Config& c) { return c.parallel.zero_stage >= 1; },
       [](Config& c) { c.parallel.offload_optimizer = true; }, false},
  };
  return list;
}

// The documented exceptions (docs/properties.md):
// - A nominal parameter count (the seeds' "LLaMA-7B" = 7e9) stays fixed while the shape grows, so
//   a wider or deeper shape spreads the same parameters thinner: per-block quantities (ZeRO-3's
//   gathered block) can fall. Shape relations hold for counted models only.
bool documented_exception(const Relation& r, const Config& before, std::int64_t rise) {
  const std::string name = r.name;
  // - A higher ZeRO stage (2 → 3) under FSDP: the root unit (embeddings, final norm, head) is held
  //   as its shard and, from forward to the end of backward, gathered (FSDP does not reshard the
  //   root after forward). Where the parameters outside the blocks dominate (a quantized base, a
  //   large vocabulary, few layers) that outweighs what sharding the blocks saves: the peak rises by
  //   at most the root's gathered bytes.
  //   And at the end of backward (ZeRO 2 or 3 under FSDP) the root unit's gradients are whole until
  //   its reduce-scatter, which runs last, beside FSDP2's reduce-scatter copy: where the outside
  //   dominates and the data ranks are few, that outweighs what sharding the other gradients saves.
  //   (An encoder-decoder's blocks carry no layer kind: the outside is what no block component is.)
  if (name == "a higher ZeRO stage" && before.parallel.zero_stage >= 1) {
    std::int64_t outside = 0;
    for (const TensorGroup& g : count_parameters(before.model).groups) {
      if (g.layer == LayerKind::kNone && !is_block_component(g.component)) outside += g.elements().value();
    }
    // 2 → 3 gathers the root (at most 4 bytes a parameter); 1 → 2 adds its whole gradients and
    // FSDP2's copy of them (at most 4 + 4 + 4).
    const std::int64_t bytes = before.parallel.zero_stage == 2 ? 4 : 12;
    // 1 → 2 under FSDP also makes each block's gradients unsharded in backward until its
    // reduce-scatter, beside FSDP2's copy of the block above's (phases.hpp, fsdp_unit_gradients):
    // at most 4 + 4 bytes a parameter of the largest block.
    const ParameterCount counted = count_parameters(before.model);
    const std::int64_t block = before.parallel.zero_stage == 1
                                   ? std::max(counted.per_dense_layer_count, counted.per_moe_layer_count).value() * 8 /
                                         before.parallel.tensor
                                   : 0;
    // - 1 → 2 under FSDP1 with a PEFT method and reentrant full checkpointing: the frozen units'
    //   reshard-only hooks keep every recomputed block's input and its gradient until backward ends
    //   (ActivationModel::frozen_unit_input_bytes): at most two fp32 tensors of B x T x d a block.
    const Implementation impl = resolve_implementation(before.training.implementation);
    const bool frozen_units = before.parallel.zero_stage == 1 && before.training.finetune.method != FinetuneMethod::kFull &&
                              before.training.checkpointing == Checkpointing::kFull &&
                              impl.checkpoint_impl == CheckpointImpl::kReentrant;
    const std::int64_t kept = frozen_units ? 2 * 4 * before.training.micro_batch_size * before.training.seq_len *
                                                 before.model.hidden_size * before.model.num_hidden_layers
                                           : 0;
    if (rise <= outside * bytes / before.parallel.tensor + kept + block) return true;
  }
  // - Full checkpointing from selective recomputation: backward re-runs a whole block (its tensors
  //   beside its recomputed attention core) where selective re-runs only the core, the rest being
  //   kept already. When what full checkpointing keeps is about what selective keeps (T5 at a long
  //   sequence: each stack's position bias, heads x T x T, is a checkpoint argument of every block),
  //   the whole block recomputed outweighs the difference: the peak rises by at most one block's
  //   tensors.
  if (name == "full checkpointing" && (before.training.checkpointing == Checkpointing::kSelective ||
                                       before.training.checkpointing == Checkpointing::kSelectiveOp)) {
    Config none = before;
    none.training.checkpointing = Checkpointing::kNone;
    const Estimate e = estimate(none);
    const ModelSpec& mm = before.model;
    const std::int64_t blocks = mm.num_hidden_layers + (mm.is_encoder_decoder ? mm.decoder_layers() : 0);
    if (e.ok() && blocks > 0 && rise <= e.breakdown.activations.value() / blocks) return true;
  }
  // - Full checkpointing (or one more checkpointed block) from some blocks left out, on a model with
  //   dense and MoE blocks: the blocks left out count as the average block (dense and MoE in
  //   proportion: activations.cpp body_bytes, as torchtitan's every-n-th-block checkpointing
  //   spreads them), while backward recomputes a whole MoE block at the top: the peak can rise by
  //   at most one average block's tensors.
  if ((name == "full checkpointing" || name == "one more checkpointed block") &&
      before.training.checkpointing == Checkpointing::kFull && before.training.checkpointed_layers >= 0 &&
      before.model.num_experts > 0) {
    Config none = before;
    none.training.checkpointing = Checkpointing::kNone;
    const Estimate e = estimate(none);
    const std::int64_t blocks = before.model.num_hidden_layers;
    if (e.ok() && blocks > 0 && rise <= e.breakdown.activations.value() / blocks) return true;
  }
  // - Full checkpointing (or one more checkpointed block) of a hybrid model (Qwen3.5) under a PEFT
  //   method that leaves its leading blocks unadapted (or every block: the head only): without
  //   checkpointing those blocks keep nothing, their input needing no gradient; with it,
  //   transformers' gradient_checkpointing_enable gives the embedding's output a gradient
  //   (enable_input_require_grads), so every block keeps its input and saves as any block does.
  //   The peak can rise by at most what every block keeps with every module adapted.
  if ((name == "full checkpointing" || name == "one more checkpointed block") && before.model.hybrid_attention() &&
      before.training.finetune.method != FinetuneMethod::kFull) {
    Config every = before;
    every.training.checkpointing = Checkpointing::kNone;
    every.training.finetune.lora_targets = kLoraQ | kLoraK | kLoraV | kLoraO | kLoraLinearAttn | kLoraGate | kLoraUp |
                                           kLoraDown;
    const Estimate e = estimate(every);
    if (e.ok() && rise <= e.breakdown.activations.value()) return true;
  }
  // - Full checkpointing (or one more checkpointed block) under FSDP1 with a PEFT method,
  //   reentrant: the frozen units keep every recomputed block's input and its gradient until
  //   backward ends (above); where the activations were small before (offloaded to the host), that
  //   can raise the peak, by at most those tensors.
  if ((name == "full checkpointing" || name == "one more checkpointed block") && before.parallel.zero_stage >= 2 &&
      before.training.finetune.method != FinetuneMethod::kFull &&
      resolve_implementation(before.training.implementation).checkpoint_impl == CheckpointImpl::kReentrant &&
      rise <= 2 * 4 * before.training.micro_batch_size * before.training.seq_len * before.model.hidden_size *
                  before.model.num_hidden_layers) {
    return true;
  }
  const bool shape = name == "one more layer" || name == "a wider model (one more unit per head)" ||
                     name == "a larger vocabulary";
  if (shape && before.model.nominal_parameter_count > 0) return true;
  // The seeds' formula (seed_14p) keeps one whole layer under full checkpointing, its B·T·5hT
  // scores included, and L layers of 34d without scores under selective: with many heads at a long
  // sequence (T5-11B: 128 heads of a 1024-wide model) the one whole layer is the larger.
  const ModelSpec& m = before.model;
  const std::int64_t blocks = m.num_hidden_layers + (m.is_encoder_decoder ? m.decoder_layers() : 0);
  return name == "full checkpointing" && before.training.precision == Precision::kSeed14p &&
         5 * m.num_attention_heads * before.training.seq_len > 34 * m.hidden_size * (blocks - 1);
}

TEST(Properties, RandomConfigurationsKeepTheRelations) {
  Generator gen(20261201);
  int checked = 0, skipped = 0, exceptions = 0;
  std::map<std::string, int> by_rule;
  for (int i = 0; i < cases(); ++i) {
    const Config c = gen.config();
    const Outcome base = run(c);
    if (!base.ok) {
      ++skipped;
      continue;
    }
    ++checked;
    ASSERT_GE(base.peak, 0);
    for (const Relation& r : relations()) {
      if (!r.applies(c)) continue;
      Config changed = c;
      r.change(changed);
      const Outcome after = run(changed);
      if (!after.ok) continue;  // the change made it invalid (e.g. past a learned position table)
      const bool holds = r.grows ? after.peak >= base.peak : after.peak <= base.peak;
      if (!holds && documented_exception(r, c, after.peak - base.peak)) {
        ++exceptions;
        ++by_rule[r.name];
        continue;
      }
      ASSERT_TRUE(holds) << r.name << ": " << base.peak << " → " << after.peak << " for "
                         << config_to_json(c).dump();
    }
  }
  EXPECT_GT(checked, cases() / 2) << "too many generated configurations were invalid (" << skipped << ")";
  RecordProperty("checked", checked);
  RecordProperty("documented_exceptions", exceptions);
  for (const auto& [rule, n] : by_rule) RecordProperty("exceptions: " + rule, n);
}

TEST(Properties, EveryResultIsFiniteOrANamedError) {
  Generator gen(7);
  for (int i = 0; i < cases() / 10; ++i) {
    Config c = gen.config();
    c.model.num_hidden_layers *= 1000;  // absurd but valid sizes
    c.training.micro_batch_size *= 1000;
    const Json r = estimate_to_json(estimate(c));
    if (!r.find("ok")->as_bool()) {
      ASSERT_FALSE(r.find("errors")->items().empty());
      continue;
    }
    for (const char* key : {"peak_allocated_bytes", "peak_reserved_bytes", "device_total_bytes"}) {
      ASSERT_TRUE(r.find(key)->as_exact_integer().has_value()) << key;
      ASSERT_GE(*r.find(key)->as_exact_integer(), 0) << key;
    }
  }
}

}  // namespace
}  // namespace memfit
