#include "memfit/suggest.hpp"

#include <algorithm>
#include <optional>
#include <string_view>

#include "finetune.hpp"
#include "memfit/gpus.hpp"
#include "memfit/implementation.hpp"
#include "memfit/patch.hpp"
#include "memfit/solve.hpp"
#include "memfit/step_time.hpp"
#include "vision.hpp"

namespace memfit {

namespace {

struct Candidate {
  std::string title;
  std::string detail;
  Json patch;
  int disruption;           // 0: free; larger: changes the training more
  bool fixes_card = false;  // makes the run possible on this card (kept even if it saves nothing)
  bool on_card_precision = false;  // worked out on top of the card's precision change (with_precision)
};

// Whether a change swaps the card (its patch sets hardware.gpu): the user's own card is what the
// combined plan keeps.
bool changes_card(const Candidate& c) {
  const Json* hardware = c.patch.find("hardware");
  return hardware && hardware->find("gpu");
}

// A one-field patch: {"section": {"key": value}} (key may be a dotted path inside the section).
Json patch(const char* path, Json value) {
  Json p = Json::object();
  set_path(p, path, std::move(value));
  return p;
}

// The estimate of the configuration a patch leads to (errors when the patched one is invalid).
Estimate estimate_patched(const Config& c, const Json& p) {
  ConfigParse parsed = apply_patch(c, p);
  if (!parsed.ok()) {
    Estimate e;
    e.errors = std::move(parsed.errors);
    return e;
  }
  return estimate(parsed.config);
}

Json lora_patch(const Config& c, std::int64_t base_bits) {
  Json p = patch("training.finetune.method", Json::string("lora"));
  set_path(p, "training.finetune.base_bits", Json::integer(base_bits));
  // A vision tower is held frozen beside the adapters (validate.cpp refuses training it there).
  if (c.training.finetune.train_vision != VisionTrain::kAuto && c.training.finetune.train_vision != VisionTrain::kNone) {
    set_path(p, "training.finetune.train_vision", Json::string("auto"));
  }
  // A classifier (a reward model) trains its head beside the adapters, as PEFT's SEQ_CLS and
  // TOKEN_CLS task types set modules_to_save, where the fine-tune it replaces trained it too.
  const Finetune& f = c.training.finetune;
  if (c.model.classifies() &&
      f.method == FinetuneMethod::kFull && (!trains_some_layers(c) || f.train_head) &&
      !(f.modules_to_save & kSaveHead)) {
    Json targets = Json::array();
    if (c.training.finetune.modules_to_save & kSaveEmbedding) targets.push(Json::string("embed"));
    targets.push(Json::string("head"));
    set_path(p, "training.finetune.modules_to_save", targets);
  }
  return p;
}

// Changes that keep the results the same: kernels and the optimizer's implementation.
void add_free_changes(const Config& c, std::vector<Candidate>& out) {
  const Training& t = c.training;
  const Implementation impl = resolve_implementation(c);
  // Eager attention the run asked for or its model's class runs (not a profile's own eager code,
  // Megatron's local layers, which have no flash path).
  if (class_applied(c).attention == AttentionImpl::kEager) {
    out.push_back({"FlashAttention", "same results; no T×T scores stored",
                   patch("training.attention", Json::string("flash")), 0});
  }
  // The switch (a fused linear cross-entropy) applies where the loss is the framework's, and helps
  // only where that loss holds the whole logits (not Liger's, nor TRL's chunks).
  // (Under Liger the loss is what Liger patches for the model_type: Granite's cannot be the fused
  // linear one, and a model_type Liger does not patch is left as it is.)
  const LossKernel loss = impl.loss;
  const bool liger = t.implementation.framework == Framework::kLiger;
  if (!t.implementation.chunked_loss && t.implementation.loss == LossKernel::kAuto &&
      loss != LossKernel::kFusedLinearCe && loss != LossKernel::kChunkedRecompute && !liger &&
      c.model.output_head == OutputHead::kLm) {
    out.push_back({"Chunked cross-entropy", "same results; the fp32 logits exist one chunk at a time",
                   patch("training.chunked_loss", Json::boolean(true)), 1});
  }
  // FSDP's no_sync under accumulation holds full gradients until the last micro-batch; reducing
  // every micro-batch keeps them sharded (kept only where the estimate shows it saves memory).
  // (torchtitan's pipeline schedules defer it with no setting to change.)
  if (c.parallel.zero_stage >= 2 && c.parallel.num_gpus > 1 && t.grad_accum_steps > 1 &&
      c.parallel.gradient_sync != GradientSync::kEveryMicroBatch &&
      t.implementation.framework != Framework::kTorchtitan) {
    out.push_back({"Reduce gradients every micro-batch",
                   "same results; one reduce-scatter per micro-batch instead of one per step (accelerate: "
                   "GradientAccumulationPlugin(sync_each_batch=True); Fabric: no no_backward_sync)",
                   patch("parallel.gradient_sync", Json::string("every_micro_batch")), 1});
  }
  // A PEFT method under accelerate's FSDP1: reentrant checkpointing keeps the frozen units' inputs
  // to the end of backward, and a method whose tensors share its blocks' units (IA3, VeRA, ...)
  // gets gradients for the whole base under use_orig_params; FSDP2 shards each parameter on its own
  // and does neither (kept only where the estimate shows it saves memory). A 4-bit base keeps the
  // floating storage FSDP1 needed, so FSDP2 shards it too (fsdp2_leaves_4bit_whole).
  if (is_peft(c) && c.parallel.zero_stage >= 2 && c.parallel.num_gpus > 1 &&
      runs_accelerate(t.implementation.framework) && runs_fsdp1(c)) {
    out.push_back({"FSDP2 (accelerate fsdp_version: 2)",
                   "same results; each parameter sharded on its own: no frozen unit holds its inputs to the end of "
                   "backward, and no frozen weight gets a gradient",
                   patch("parallel.fsdp_version", Json::string("2")), 1});
  }
  // accelerate's FSDP2 shards 4-bit weights only in a floating storage (fsdp2_leaves_4bit_whole).
  if (fsdp2_leaves_4bit_whole(c) && c.parallel.zero_stage >= 3 && c.parallel.num_gpus > 1) {
    out.push_back({"4-bit weights stored as bf16 (bnb_4bit_quant_storage)",
                   "same results; FSDP2 shards the quantised base across the GPUs instead of leaving it whole on each",
                   patch("training.finetune.quant_storage", Json::string("bf16")), 1});
  }
  if (t.optimizer == Optimizer::kAdamW && multi_tensor(resolved_optimizer_impl(c))) {
    out.push_back({"Fused AdamW (fused=True)", "same results; no step-sized temporary",
                   patch("training.optimizer_impl", Json::string("fused")), 1});
  }
  // bitsandbytes before 0.43.2 keeps every 4-bit linear's input (finetune.hpp,
  // bnb_inputs_retained): a newer bitsandbytes keeps none; with the old one, reentrant
  // checkpointing keeps them out of the checkpointed blocks (kept only where they save memory).
  if (bnb_inputs_retained(c, impl.framework)) {
    out.push_back({"bitsandbytes 0.43.2 or later", "same results; its 4-bit layers keep no copy of their input",
                   patch("training.finetune.bnb_keeps_input", Json::boolean(false)), 0});
    if (t.checkpointing == Checkpointing::kFull && impl.checkpoint_impl == CheckpointImpl::kNonReentrant) {
      out.push_back({"Reentrant checkpointing (use_reentrant=True)",
                     "same results; the old bitsandbytes then keeps no inputs of the checkpointed blocks",
                     patch("training.checkpoint_impl", Json::string("reentrant")), 1});
    }
  }
}

// The largest smaller micro-batch that fits, with gradient accumulation keeping the effective
// batch (or micro-batch 1 when none fits).
void add_smaller_micro_batch(const Config& c, std::vector<Candidate>& out) {
  const Training& t = c.training;
  for (std::int64_t b = t.micro_batch_size / 2; b >= 1; b /= 2) {
    const std::int64_t accumulation = t.grad_accum_steps * ((t.micro_batch_size + b - 1) / b);
    Json p = patch("training.micro_batch_size", Json::integer(b));
    set_path(p, "training.grad_accum_steps", Json::integer(accumulation));
    const Estimate e = estimate_patched(c, p);
    if (e.ok() && (e.fit.verdict == Verdict::kFits || b == 1)) {
      out.push_back({"Micro-batch " + std::to_string(b) + " with " + std::to_string(accumulation) +
                         "× gradient accumulation",
                     "same effective batch; more, smaller steps", std::move(p), 3});
      return;
    }
  }
}

// The fewest GPUs of the same kind that fit with ZeRO-3 / FSDP full sharding: the headline's
// solver (solve.cpp, min-gpus), so both say the same count.
void add_more_gpus(const Config& c, std::vector<Candidate>& out) {
  const Solution s = solve(c, SolveTarget::kMinGpus, GpuFamily::kZero3);
  if (!s.ok() || !s.found || s.value < 2 || s.value > 1024) return;
  // Not where the count only chases what every GPU keeps whole (solve.cpp, sharding_saturated).
  if (s.sharding_saturated) return;
  const std::int64_t g = s.value;
  Json p = patch("parallel.num_gpus", Json::integer(g));
  set_path(p, "parallel.zero_stage", Json::integer(3));
  out.push_back({std::to_string(g) + " GPUs with ZeRO-3 / FSDP",
                 "shards weights, gradients and states " + std::to_string(g) + " ways", std::move(p), 7});
}

// Whether a card runs the training settings (estimate.hpp's card_lacks).
bool runs_training(const Gpu& g, const Training& t) { return card_lacks(g, t) == nullptr; }

// Who makes a card: the first word of its name ("NVIDIA", "AMD").
std::string_view maker(const Gpu& g) {
  const std::string_view name = g.name;
  return name.substr(0, name.find(' '));
}

// The smallest card in the table that fits the run as it is, when larger than the chosen one: one
// from the same maker when any fits (the run's software stack, CUDA or ROCm, stays as it is), and
// among cards of about that size (within 5 %) the cheapest whose price is sourced.
void add_larger_gpu(const Config& c, std::vector<Candidate>& out) {
  const Gpu* current = find_gpu(c.hardware.gpu);
  if (!current) return;
  const Estimate here = estimate(c);
  if (!here.ok()) return;
  std::vector<const Gpu*> fitting;
  for (const Fit& f : here.fits) {
    if (f.verdict == Verdict::kFits && runs_training(*f.gpu, c.training) &&
        f.gpu->usable_bytes() > current->usable_bytes()) {
      fitting.push_back(f.gpu);
    }
  }
  const bool same_maker_fits = std::any_of(fitting.begin(), fitting.end(),
                                           [&](const Gpu* g) { return maker(*g) == maker(*current); });
  if (same_maker_fits) {
    fitting.erase(std::remove_if(fitting.begin(), fitting.end(), [&](const Gpu* g) { return maker(*g) != maker(*current); }),
                  fitting.end());
  }
  if (fitting.empty()) return;
  const Gpu* smallest = *std::min_element(fitting.begin(), fitting.end(), [](const Gpu* a, const Gpu* b) {
    return a->usable_bytes() < b->usable_bytes();
  });
  const Gpu* best = smallest;
  for (const Gpu* g : fitting) {
    const bool about_as_small = static_cast<double>(g->usable_bytes().value()) <=
                                1.05 * static_cast<double>(smallest->usable_bytes().value());
    if (about_as_small && g->price_per_hour > 0 && (best->price_per_hour <= 0 || g->price_per_hour < best->price_per_hour)) {
      best = g;
    }
  }
  // It saves nothing (the same bytes, on a card with room for them): kept as fixing the run.
  out.push_back({std::string("A larger GPU: ") + best->name, "the run as it is",
                 patch("hardware.gpu", Json::string(best->id)), 8, true});
}

// Precision changes the card can run: FSDP's mixed precision instead of AMP (the weights are
// gathered in bf16, so autocast keeps no bf16 copy of them), fp16 where the card has no bf16 (or
// no FP8) for the recipe asked.
void add_precision_changes(const Config& c, std::vector<Candidate>& out) {
  const Gpu* gpu = find_gpu(c.hardware.gpu);
  if (!gpu) return;
  const Precision p = c.training.precision;
  if (p == Precision::kBf16Mixed && gpu->has_bf16() && c.training.finetune.method == FinetuneMethod::kFull) {
    Json change = patch("training.precision", Json::string("bf16_fsdp"));
    if (c.parallel.zero_stage < 3) set_path(change, "parallel.zero_stage", Json::integer(3));
    out.push_back({"FSDP mixed precision (bf16_fsdp)",
                   "weights gathered in bf16 by FSDP (MixedPrecision param_dtype=bf16): no autocast copy of every weight",
                   std::move(change), 2});
  }
  if (const char* lacks = card_lacks(*gpu, p)) {
    const bool master = p == Precision::kBf16Master || p == Precision::kBf16 || p == Precision::kFp8Mixed;
    out.push_back({std::string(master ? "fp16_master" : "fp16_mixed") + ": the " + gpu->name + " has no " + lacks,
                   "fp16 with loss scaling, which this card runs",
                   patch("training.precision", Json::string(master ? "fp16_master" : "fp16_mixed")), 1, true});
  }
}

// The precision change a card needs before any other change can run on it (bf16 on a T4 or a
// V100), or nothing.
std::optional<Candidate> runnable_precision(const Config& c) {
  const Gpu* gpu = find_gpu(c.hardware.gpu);
  if (!gpu || !card_lacks(*gpu, c.training.precision)) return std::nullopt;
  std::vector<Candidate> changes;
  add_precision_changes(c, changes);
  for (Candidate& change : changes) {
    if (change.fixes_card) return std::move(change);
  }
  return std::nullopt;
}

// A change worked out on top of the card's precision change: both in one patch.
Candidate with_precision(const Candidate& precision, Candidate change) {
  Json merged = precision.patch;
  merge_patch(merged, change.patch);
  change.patch = std::move(merged);
  const bool master = precision.patch.find("training")->find("precision")->as_string() == "fp16_master";
  change.title += master ? " + FP16 weights with an fp32 master copy" : " + FP16 mixed precision";
  change.detail += "; " + precision.detail;
  change.disruption = std::max(change.disruption, precision.disruption);
  change.on_card_precision = true;  // what it saves is counted from the run in that precision
  return change;
}

void add_candidates(const Config& c, std::vector<Candidate>& out) {
  const Training& t = c.training;
  if (t.precision == Precision::kSeed14p) return;  // the seeds' convention is for reproducing them
  add_free_changes(c, out);
  if (!t.every_layer_recomputed(c.model.num_hidden_layers)) {
    Json change = patch("training.checkpointing", Json::string("full"));
    if (t.checkpointed_layers >= 0) set_path(change, "training.checkpointed_layers", Json::integer(-1));
    out.push_back({"Full activation checkpointing", "about 33 % more compute (the forward runs twice)",
                   std::move(change), 2});
  }
  if (t.optimizer == Optimizer::kAdamW) {
    out.push_back({"8-bit AdamW (bitsandbytes)", "optimizer states in 8 bits; usually the same quality",
                   patch("training.optimizer", Json::string("adamw_8bit")), 3});
  }
  if (t.micro_batch_size > 1) add_smaller_micro_batch(c, out);
  add_precision_changes(c, out);
  // A full fine-tune that trains a vision tower: hold it frozen, as LLaMA-Factory and ms-swift do by
  // default (its gradients and optimizer states go; its weights stay).
  if (resolve_train_vision(c) != VisionTrain::kNone) {
    out.push_back({"Freeze the vision tower", "the language model trains as before; the tower keeps its pretrained "
                                              "weights (LLaMA-Factory's and ms-swift's default)",
                   patch("training.finetune.train_vision", Json::string("none")), 3});
  }
  // LoRA changes what is trained: not for pre-training (a run that already trains adapters may
  // still go to a 4-bit base).
  const bool adapters_allowed = resolved_goal(t) != Goal::kPretrain || t.finetune.method == FinetuneMethod::kLora;
  if (!adapters_allowed) {
    // skip LoRA and QLoRA
  } else if (t.finetune.method == FinetuneMethod::kFull) {
    out.push_back({"LoRA (rank " + std::to_string(t.finetune.lora_rank) + ") instead of a full fine-tune",
                   "trains adapters only; the base stays frozen in 16 bit", lora_patch(c, 16), 5});
  }
  if (adapters_allowed && t.finetune.base_bits != 4) {
    out.push_back({"QLoRA (4-bit NF4 base)",
                   "frozen base quantised to 4 bits; each matmul dequantises its weight first, so steps are "
                   "slower",
                   lora_patch(c, 4), 6});
  }
  if (c.parallel.num_gpus == 1) add_more_gpus(c, out);
  // Several GPUs already, not fully sharded: shard on them before asking for more.
  if (c.parallel.num_gpus > 1 && c.parallel.zero_stage < 3) {
    out.push_back({"ZeRO-3 / FSDP on the " + std::to_string(c.parallel.num_gpus) + " GPUs",
                   "shards weights, gradients and states " +
                       std::to_string(c.parallel.num_gpus / (c.parallel.tensor * c.parallel.pipeline)) + " ways",
                   patch("parallel.zero_stage", Json::integer(3)), 4});
  }
  // bitsandbytes quantises nn.Linear modules only: transformers 5's stacked experts stay 16-bit
  // (finetune.hpp, experts_left_unquantized). Experts as one nn.Linear each (transformers 4's
  // loop over experts, unsloth's kernels) are quantised with the rest.
  if (experts_left_unquantized(c)) {
    out.push_back({"Quantise the experts too",
                   "experts as nn.Linear modules, which bitsandbytes quantises (transformers 4.x; unsloth does it "
                   "for transformers 5): the 4-bit base covers the experts",
                   patch("training.moe_dispatch", Json::string("loop")), 5});
  }
  add_larger_gpu(c, out);
}

// Whether a change alters what is trained (LoRA, QLoRA, another PEFT method, frozen layers).
bool changes_what_is_trained(const Candidate& o) {
  const Json* training = o.patch.find("training");
  return training && training->find("finetune");
}

// The changes' patches merged in order.
Json merged_patch(const std::vector<Candidate>& changes) {
  Json merged = Json::object();
  for (const Candidate& o : changes) merge_patch(merged, o.patch);
  return merged;
}

// Whether the changes together fit `c`'s card.
bool fits_together(const Config& c, const std::vector<Candidate>& changes) {
  const Estimate e = estimate_patched(c, merged_patch(changes));
  return e.ok() && e.fit.verdict == Verdict::kFits;
}

// When no single change is enough on this card: apply, greedily, the change that saves the most, up to four
// times, until the run fits. Then the plan is made gentler while it still fits: a change it does
// not need is dropped, and a change is swapped for a less disruptive one (LoRA on a 16-bit base
// instead of QLoRA once checkpointing has made the room; the greedy step took QLoRA because it
// saves more on its own). The plan is the merge of the chosen patches. `keep_trained`: only
// changes that train the same weights (a full fine-tune stays one: checkpointing, more GPUs, 8-bit
// states), for the user whose method is not up for change.
std::optional<Candidate> combined_plan(const Config& c, bool keep_trained = false) {
  std::vector<Candidate> chosen;
  std::vector<Candidate> gentler;  // the first step's options: the changes to `c` itself
  Config planned = c;
  Estimate current = estimate(c);
  const auto allowed = [keep_trained](const Candidate& o) {
    return !changes_card(o) && !(keep_trained && changes_what_is_trained(o));  // keep the card
  };
  for (int step = 0; step < 4 && current.ok() && current.fit.verdict != Verdict::kFits; ++step) {
    std::vector<Candidate> options;
    add_candidates(planned, options);
    if (step == 0) gentler = options;
    const Candidate* best = nullptr;
    Bytes best_bytes = current.device_total_bytes;
    for (const Candidate& o : options) {
      if (!allowed(o)) continue;
      const Estimate e = estimate_patched(planned, o.patch);
      if (e.ok() && e.device_total_bytes < best_bytes) {
        best = &o;
        best_bytes = e.device_total_bytes;
      }
    }
    if (!best) break;
    chosen.push_back(*best);
    planned = apply_patch(c, merged_patch(chosen)).config;
    current = estimate(planned);
  }
  if (chosen.size() < 2 || !current.ok() || current.fit.verdict != Verdict::kFits) return std::nullopt;
  for (std::size_t i = 0; i < chosen.size() && chosen.size() > 2;) {
    std::vector<Candidate> without = chosen;
    without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
    if (fits_together(c, without)) chosen = std::move(without);
    else ++i;
  }
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    for (const Candidate& o : gentler) {
      if (!allowed(o) || o.disruption >= chosen[i].disruption || o.title == chosen[i].title) continue;
      std::vector<Candidate> swapped = chosen;
      swapped[i] = o;
      if (!fits_together(c, swapped)) continue;
      chosen = std::move(swapped);
      break;
    }
  }
  Candidate plan{"", "these changes together", merged_patch(chosen), 0};
  for (const Candidate& o : chosen) {
    plan.title += (plan.title.empty() ? "" : " + ") + o.title;
    plan.disruption = std::max(plan.disruption, o.disruption);
  }
  return plan;
}

// What the change costs in time per token (more GPUs also change the tokens per step).
void add_time_cost(const StepTime& before, const Config& after_config, Suggestion& s) {
  const StepTime after = step_time(after_config);
  if (!before.ok() || !after.ok() || before.tokens_per_s <= 0 || after.tokens_per_s <= 0) return;
  s.timed = true;
  s.step_time_s = after.step_time_s;
  s.time_per_token_change = before.tokens_per_s / after.tokens_per_s - 1.0;
}

}  // namespace

std::vector<Suggestion> suggest(const Config& c) {
  std::vector<Candidate> candidates;
  add_candidates(c, candidates);
  const Estimate now = estimate(c);
  if (!now.ok()) return {};
  // On a card without the precision asked for, every other change keeps a recipe the card cannot
  // run: each is worked out again on top of the precision the card runs, in one patch.
  const std::optional<Candidate> precision = runnable_precision(c);
  std::optional<Config> runnable;
  if (precision) {
    ConfigParse fixed = apply_patch(c, precision->patch);
    if (fixed.ok()) runnable = std::move(fixed.config);
  }
  if (runnable) {
    std::vector<Candidate> more;
    add_candidates(*runnable, more);
    for (Candidate& change : more) {
      const Json* training = change.patch.find("training");
      if (changes_card(change) || (training && training->find("precision"))) continue;
      candidates.push_back(with_precision(*precision, std::move(change)));
    }
  }
  std::vector<Estimate> results;
  for (const Candidate& cand : candidates) results.push_back(estimate_patched(c, cand.patch));
  // A combined plan when no single change fits on the user's own card: a larger card fitting is
  // its own suggestion, and the most disruptive one.
  bool fits_on_this_card = false;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!changes_card(candidates[i]) && results[i].ok() && results[i].fit.verdict == Verdict::kFits) {
      fits_on_this_card = true;
    }
  }
  if (now.fit.verdict != Verdict::kFits && !fits_on_this_card) {
    // The plan that saves the most, and, when that one turns a full fine-tune into adapters, the
    // best plan that keeps it one (a 70B model: QLoRA, or 8-bit states and checkpointing on enough
    // GPUs).
    const Config& base = runnable ? *runnable : c;
    std::optional<Candidate> plans[2] = {combined_plan(base), std::nullopt};
    if (plans[0] && changes_what_is_trained(*plans[0]) && base.training.finetune.method == FinetuneMethod::kFull) {
      plans[1] = combined_plan(base, true);
    }
    for (std::optional<Candidate>& plan : plans) {
      if (!plan) continue;
      if (runnable) plan = with_precision(*precision, std::move(*plan));
      results.insert(results.begin(), estimate_patched(c, plan->patch));
      candidates.insert(candidates.begin(), std::move(*plan));
    }
  }
  std::vector<Suggestion> out;
  std::vector<int> disruption;
  const StepTime time_now = step_time(c);
  // A change on top of the card's precision saves (or not) against the run in that precision,
  // which is the run the card can do.
  const Estimate runnable_now = runnable ? estimate(*runnable) : Estimate{};
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Estimate& e = results[i];
    const Estimate& base = candidates[i].on_card_precision && runnable_now.ok() ? runnable_now : now;
    // A change must help, and a precision the card lacks is not a change it can make. Where the
    // device totals tie (the allocator's replayed reserve moves in steps, and a run over the card
    // replays as much as the card holds), what the step allocates decides.
    const bool helps = e.ok() && (e.device_total_bytes < base.device_total_bytes || candidates[i].fixes_card ||
                                  (e.device_total_bytes == base.device_total_bytes &&
                                   e.peak_allocated_bytes < base.peak_allocated_bytes));
    const Gpu* gpu = e.ok() ? find_gpu(e.config.hardware.gpu) : nullptr;
    if (!helps || !gpu || !runs_training(*gpu, e.config.training)) continue;
    Suggestion s;
    s.title = candidates[i].title;
    s.detail = candidates[i].detail;
    s.patch = candidates[i].patch;
    s.device_total_bytes = e.device_total_bytes;
    s.verdict = e.fit.verdict;
    s.saved_bytes = base.device_total_bytes - e.device_total_bytes;
    add_time_cost(time_now, e.config, s);
    out.push_back(std::move(s));
    disruption.push_back(candidates[i].disruption);
  }
  // Fitting changes first; among them the least disruptive; otherwise the largest saving.
  std::vector<std::size_t> order(out.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const bool fa = out[a].verdict == Verdict::kFits, fb = out[b].verdict == Verdict::kFits;
    if (fa != fb) return fa;
    if (fa) return disruption[a] < disruption[b];
    return out[a].device_total_bytes < out[b].device_total_bytes;
  });
  std::vector<Suggestion> sorted;
  for (std::size_t i : order) sorted.push_back(std::move(out[i]));
  return sorted;
}

}  // namespace memfit
