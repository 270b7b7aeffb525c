// The seeds' scaling table (seeds/001 "Scaling Analysis"): the five models of the seeds under the
// configuration's training settings, with and without full checkpointing.
#include <algorithm>

#include "api_common.hpp"
#include "memfit/memfit.hpp"

namespace memfit {

namespace {

constexpr const char* kScalingPresets[] = {"seed-gpt2-small", "seed-gpt2-large", "seed-llama-7b", "seed-llama-13b",
                                           "seed-llama-70b"};

Json scaling_row(const Config& training_settings, const char* id) {
  Config c = training_settings;
  c.model = *preset_model(id);
  // A full fine-tune of each model: a parameter-efficient method's settings (a quantised base,
  // adapters, trained blocks) belong to the configured model and are left out.
  c.training.finetune = Finetune{};
  c.training.finetune.method = FinetuneMethod::kFull;
  c.parallel = Parallel{};
  // The rows report allocated bytes only: no allocator replay is needed for them.
  c.hardware.fragmentation = 0.0;
  // Learned positions cap T; the seeds' table ignores that (GPT-2 at T = 2048), as does this one.
  c.model.max_position_embeddings = std::max(c.model.max_position_embeddings, c.training.seq_len);
  Config checkpointed = c;
  c.training.checkpointing = Checkpointing::kNone;
  checkpointed.training.checkpointing = Checkpointing::kFull;
  checkpointed.training.checkpointed_layers = -1;  // every block, whatever the configuration says
  const Estimate plain = estimate(c), ckpt = estimate(checkpointed);
  Json row = Json::object();
  row.set("preset", Json::string(id));
  row.set("name", Json::string(find_preset(id)->name));
  if (!plain.ok() || !ckpt.ok()) {
    row.set("errors", issues_to_json(plain.ok() ? ckpt.errors : plain.errors));
    return row;
  }
  const Breakdown& b = plain.breakdown;
  const Bytes statics = b.parameters + b.gradients + b.optimizer_states + b.master_weights;
  const bool seed = c.training.precision == Precision::kSeed14p;
  // The seeds' "Total" is static + activations; other recipes report the step's real peak.
  const auto total = [&](const Estimate& e) { return seed ? statics + e.breakdown.activations : e.peak_allocated_bytes; };
  row.set("parameter_count", Json::integer(plain.parameter_count.value()));
  row.set("static_bytes", Json::integer(statics.value()));
  row.set("activation_bytes", Json::integer((b.activations + b.logits_and_loss).value()));
  row.set("activation_checkpointed_bytes",
          Json::integer((ckpt.breakdown.activations + ckpt.breakdown.logits_and_loss).value()));
  row.set("total_bytes", Json::integer(total(plain).value()));
  row.set("total_checkpointed_bytes", Json::integer(total(ckpt).value()));
  return row;
}

}  // namespace

Json scaling_table_json(std::string_view config_text) {
  ConfigParse parsed = parse_config_text(config_text);
  if (!parsed.ok()) return failure_json(parsed.errors, parsed.warnings);
  Json rows = Json::array();
  for (const char* id : kScalingPresets) rows.push(scaling_row(parsed.config, id));
  Json j = Json::object();
  j.set("ok", Json::boolean(true));
  j.set("errors", Json::array());
  j.set("rows", std::move(rows));
  return j;
}

}  // namespace memfit
