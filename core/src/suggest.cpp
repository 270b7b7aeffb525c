#include "memfit/suggest.hpp"

#include <algorithm>
#include <optional>

#include "text.hpp"

namespace memfit {

namespace {

Json patch(const char* section, const char* key, Json value) {
  Json inner = Json::object();
  inner.set(key, std::move(value));
  Json outer = Json::object();
  outer.set(section, std::move(inner));
  return outer;
}

// LoRA with the given frozen-base bits, as a configuration and as a patch.
Config with_lora(const Config& c, std::int64_t base_bits) {
  Config n = c;
  n.training.finetune.method = FinetuneMethod::kLora;
  n.training.finetune.base_bits = base_bits;
  return n;
}

Json lora_patch(std::int64_t base_bits) {
  Json finetune = Json::object();
  finetune.set("method", Json::string("lora"));
  finetune.set("base_bits", Json::integer(base_bits));
  Json training = Json::object();
  training.set("finetune", std::move(finetune));
  Json p = Json::object();
  p.set("training", std::move(training));
  return p;
}

struct Candidate {
  std::string title;
  std::string detail;
  Json patch;
  Config config;
  int disruption;  // 0: free; larger: changes the training more
};

void add_candidates(const Config& c, std::vector<Candidate>& out) {
  const Training& t = c.training;
  if (t.precision == Precision::kSeed14p) return;  // the seeds' convention is for reproducing them
  if (t.attention == AttentionImpl::kEager) {
    Config n = c;
    n.training.attention = AttentionImpl::kFlash;
    out.push_back({"FlashAttention", "same results; no T×T scores stored",
                   patch("training", "attention", Json::string("flash")), n, 0});
  }
  if (!t.chunked_loss && c.model.output_head == OutputHead::kLm) {
    Config n = c;
    n.training.chunked_loss = true;
    out.push_back({"Chunked cross-entropy", "same results; the fp32 logits exist one chunk at a time",
                   patch("training", "chunked_loss", Json::boolean(true)), n, 1});
  }
  if (t.optimizer == Optimizer::kAdamW && t.optimizer_impl == OptimizerImpl::kForeach) {
    Config n = c;
    n.training.optimizer_impl = OptimizerImpl::kFused;
    out.push_back({"Fused AdamW (fused=True)", "same results; no step-sized temporary",
                   patch("training", "optimizer_impl", Json::string("fused")), n, 1});
  }
  if (t.checkpointing != Checkpointing::kFull) {
    Config n = c;
    n.training.checkpointing = Checkpointing::kFull;
    out.push_back({"Full activation checkpointing", "about 33 % more compute (the forward runs twice)",
                   patch("training", "checkpointing", Json::string("full")), n, 2});
  }
  if (t.optimizer == Optimizer::kAdamW) {
    Config n = c;
    n.training.optimizer = Optimizer::kAdamW8bit;
    out.push_back({"8-bit AdamW (bitsandbytes)", "optimizer states in 8 bits; usually the same quality",
                   patch("training", "optimizer", Json::string("adamw_8bit")), n, 3});
  }
  if (t.micro_batch_size > 1) {
    // The largest smaller micro-batch, with gradient accumulation keeping the effective batch.
    for (std::int64_t b = t.micro_batch_size / 2; b >= 1; b /= 2) {
      Config n = c;
      n.training.micro_batch_size = b;
      n.training.grad_accum_steps = t.grad_accum_steps * ((t.micro_batch_size + b - 1) / b);
      Json p = Json::object();
      Json training = Json::object();
      training.set("micro_batch_size", Json::integer(b));
      training.set("grad_accum_steps", Json::integer(n.training.grad_accum_steps));
      p.set("training", std::move(training));
      const Estimate e = estimate(n);
      const bool last = b == 1;
      if (e.ok() && (e.fit.verdict == Verdict::kFits || last)) {
        out.push_back({"Micro-batch " + std::to_string(b) + " with " + std::to_string(n.training.grad_accum_steps) +
                           "× gradient accumulation",
                       "same effective batch; more, smaller steps", std::move(p), n, 3});
        break;
      }
    }
  }
  if (t.finetune.method == FinetuneMethod::kFull) {
    Config n = with_lora(c, 16);
    out.push_back({"LoRA (rank " + std::to_string(n.training.finetune.lora_rank) + ") instead of a full fine-tune",
                   "trains adapters only; the base stays frozen in 16 bit", lora_patch(16), n, 5});
  }
  if (t.finetune.base_bits != 4) {
    out.push_back({"QLoRA (4-bit NF4 base)", "frozen base quantised to 4 bits; bitsandbytes layers keep their inputs for backward, and matmuls are slower", lora_patch(4),
                   with_lora(c, 4), 6});
  }
  if (c.parallel.num_gpus == 1) {
    // The fewest GPUs of the same kind that fit with ZeRO-3 / FSDP full sharding.
    for (std::int64_t g = 2; g <= 1024; g *= 2) {
      Config n = c;
      n.parallel.num_gpus = g;
      n.parallel.zero_stage = 3;
      const Estimate e = estimate(n);
      if (e.ok() && e.fit.verdict == Verdict::kFits) {
        Json par = Json::object();
        par.set("num_gpus", Json::integer(g));
        par.set("zero_stage", Json::integer(3));
        Json p = Json::object();
        p.set("parallel", std::move(par));
        out.push_back({std::to_string(g) + " GPUs with ZeRO-3 / FSDP", "shards weights, gradients and states " +
                                                                            std::to_string(g) + " ways",
                       std::move(p), n, 7});
        break;
      }
    }
  }
  // The smallest card in the table that fits as it is.
  const Estimate here = estimate(c);
  if (here.ok()) {
    const Gpu* best = nullptr;
    for (const Fit& f : here.fits) {
      if (f.verdict == Verdict::kFits && (!best || f.gpu->memory_bytes < best->memory_bytes)) best = f.gpu;
    }
    if (best && best->id != c.hardware.gpu) {
      const Gpu* current = find_gpu(c.hardware.gpu);
      if (current && best->memory_bytes > current->memory_bytes) {
        Config n = c;
        n.hardware.gpu = best->id;
        out.push_back({std::string("A larger GPU: ") + best->name, "the run as it is",
                       patch("hardware", "gpu", Json::string(best->id)), n, 8});
      }
    }
  }
}

// Overlays `extra` onto `base`, object by object.
void merge(Json& base, const Json& extra) {
  for (const auto& [key, value] : extra.members()) {
    const Json* existing = base.find(key);
    if (value.is_object() && existing && existing->is_object()) {
      Json merged = *existing;
      merge(merged, value);
      base.set(key, std::move(merged));
    } else {
      base.set(key, value);
    }
  }
}

// When no single change is enough: apply, greedily, the change that saves the most, up to four
// times, until the run fits.
std::optional<Candidate> combined_plan(const Config& c) {
  Candidate plan{"", "", Json::object(), c, 0};
  Estimate current = estimate(c);
  for (int step = 0; step < 4 && current.ok() && current.fit.verdict != Verdict::kFits; ++step) {
    std::vector<Candidate> options;
    add_candidates(plan.config, options);
    const Candidate* best = nullptr;
    Exact best_bytes = current.device_total_bytes;
    for (const Candidate& o : options) {
      if (o.title.rfind("A larger GPU", 0) == 0) continue;  // keep the card; that is its own suggestion
      const Estimate e = estimate(o.config);
      if (e.ok() && e.device_total_bytes < best_bytes) {
        best = &o;
        best_bytes = e.device_total_bytes;
      }
    }
    if (!best) break;
    plan.title += (plan.title.empty() ? "" : " + ") + best->title;
    merge(plan.patch, best->patch);
    plan.config = best->config;
    plan.disruption = std::max(plan.disruption, best->disruption);
    current = estimate(plan.config);
  }
  if (plan.title.find(" + ") == std::string::npos || !current.ok() || current.fit.verdict != Verdict::kFits) {
    return std::nullopt;
  }
  plan.detail = "these changes together";
  return plan;
}

}  // namespace

std::vector<Suggestion> suggest(const Config& c) {
  std::vector<Candidate> candidates;
  add_candidates(c, candidates);
  const Estimate now = estimate(c);
  if (now.ok() && now.fit.verdict != Verdict::kFits) {
    bool single_fits = false;
    for (const Candidate& cand : candidates) {
      const Estimate e = estimate(cand.config);
      single_fits = single_fits || (e.ok() && e.fit.verdict == Verdict::kFits);
    }
    if (!single_fits) {
      if (auto plan = combined_plan(c)) candidates.insert(candidates.begin(), std::move(*plan));
    }
  }
  std::vector<Suggestion> out;
  std::vector<int> disruption;
  for (Candidate& cand : candidates) {
    const Estimate e = estimate(cand.config);
    if (!e.ok() || !now.ok() || !(e.device_total_bytes < now.device_total_bytes)) continue;  // must help
    out.push_back({cand.title, cand.detail, cand.patch, cand.config, e.device_total_bytes, e.fit.verdict});
    disruption.push_back(cand.disruption);
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
