// Solvers by search over full estimates (solve.hpp). Memory is monotone in what each solver
// varies (more micro-batch, sequence, layers or width never needs less; more ZeRO shards never
// need more), so an exponential walk then a bisection finds the exact boundary; tensor and
// pipeline degrees are not monotone in general and are scanned in order.
#include "memfit/solve.hpp"

#include <algorithm>
#include <numeric>

namespace memfit {

namespace {

using Apply = void (*)(Config&, std::int64_t, const Config& base);

// The fields' own upper limits (field_table.cpp): the searches stop there.
constexpr std::int64_t kMaxMicroBatch = 1'000'000;
constexpr std::int64_t kMaxSeqLen = 100'000'000;
constexpr std::int64_t kMaxLayers = 100'000;
constexpr std::int64_t kMaxHidden = 1'000'000;
constexpr std::int64_t kMaxGpus = 1'000'000;

struct Probe {
  std::int64_t value = 0;
  Config config;
  Estimate estimate;
  bool fits = false;
};

class Search {
 public:
  Search(const Config& base, Apply apply) : base_(base), apply_(apply) {}

  Probe probe(std::int64_t value) {
    Probe p;
    p.value = value;
    p.config = base_;
    apply_(p.config, value, base_);
    p.estimate = estimate(p.config);
    ++count_;
    p.fits = p.estimate.ok() && p.estimate.fit.verdict == Verdict::kFits;
    return p;
  }
  int count() const { return count_; }

 private:
  const Config& base_;
  Apply apply_;
  int count_ = 0;
};

// The largest v in [lo, hi] that fits, when fitting is monotone (fits up to the answer):
// doubling until a value fails, then bisection. `answer` is the last fitting probe, `next` the
// first failing one (value 0 when hi itself fits).
struct Boundary {
  Probe answer, next;
  bool found = false;
};

Boundary largest_fitting(Search& s, std::int64_t lo, std::int64_t hi) {
  Boundary b;
  Probe p = s.probe(lo);
  if (!p.fits) {
    b.next = std::move(p);
    return b;
  }
  b.found = true;
  b.answer = std::move(p);
  while (b.answer.value < hi) {
    const std::int64_t step = std::min(hi, b.answer.value > hi / 2 ? hi : b.answer.value * 2);
    Probe q = s.probe(step);
    if (!q.fits) {
      b.next = std::move(q);
      break;
    }
    b.answer = std::move(q);
  }
  while (b.next.value > 0 && b.next.value - b.answer.value > 1) {
    Probe q = s.probe(b.answer.value + (b.next.value - b.answer.value) / 2);
    (q.fits ? b.answer : b.next) = std::move(q);
  }
  return b;
}

// The smallest k in [1, hi] that fits, when fitting is monotone the other way (fits from the
// answer on). `next` is then the largest failing value below the answer.
Boundary smallest_fitting(Search& s, std::int64_t hi) {
  Boundary b;
  std::int64_t k = 1;
  Probe p = s.probe(k);
  while (!p.fits && k < hi) {
    b.next = std::move(p);
    k = k > hi / 2 ? hi : k * 2;
    p = s.probe(k);
  }
  if (!p.fits) {
    b.next = std::move(p);
    return b;
  }
  b.found = true;
  b.answer = std::move(p);
  while (b.next.value > 0 && b.answer.value - b.next.value > 1) {
    Probe q = s.probe(b.next.value + (b.answer.value - b.next.value) / 2);
    (q.fits ? b.answer : b.next) = std::move(q);
  }
  return b;
}

// The first fitting candidate, in order (for degrees where memory is not monotone).
Boundary first_fitting(Search& s, const std::vector<std::int64_t>& candidates) {
  Boundary b;
  for (std::int64_t v : candidates) {
    Probe p = s.probe(v);
    if (p.fits) {
      b.found = true;
      b.answer = std::move(p);
      return b;
    }
    b.next = std::move(p);
  }
  return b;
}

std::vector<NamedBytes> terms(const Breakdown& b) {
  return {{"parameters", b.parameters},         {"gradients", b.gradients},
          {"optimizer_states", b.optimizer_states}, {"master_weights", b.master_weights},
          {"activations", b.activations},       {"logits_and_loss", b.logits_and_loss},
          {"weight_copies", b.weight_copies}};
}

const char* peak_phase(const Estimate& e) {
  const Phase* top = nullptr;
  for (const Phase& p : e.phases) {
    if (!top || p.bytes > top->bytes) top = &p;
  }
  return top ? top->name : "";
}

// The term that binds. Past a maximum: the term that grew most from the answer to the next
// value (what the extra step costs); otherwise the largest term where it does not fit. A
// configuration made invalid by the step (seq_len beyond learned positions) binds on that rule.
void name_binding(const Boundary& b, bool grows, Solution& out) {
  const Probe& failing = b.next;
  if (failing.value == 0) return;
  out.next_value = failing.value;
  if (!failing.estimate.ok()) {
    const Issue& issue = failing.estimate.errors.front();
    out.binding = issue.field + " (" + issue.message + ")";
    return;
  }
  out.next_device_total_bytes = failing.estimate.device_total_bytes;
  out.next_need_high_bytes = failing.estimate.fit.need_high_bytes;
  out.binding_phase = peak_phase(failing.estimate);
  const std::vector<NamedBytes> at_fail = terms(failing.estimate.breakdown);
  const std::vector<NamedBytes> at_fit =
      grows && b.found ? terms(b.answer.estimate.breakdown) : std::vector<NamedBytes>(at_fail.size());
  std::size_t best = 0;
  for (std::size_t i = 0; i < at_fail.size(); ++i) {
    const Bytes grew = at_fail[i].bytes - (grows && b.found ? at_fit[i].bytes : Bytes{0});
    const Bytes best_grew = at_fail[best].bytes - (grows && b.found ? at_fit[best].bytes : Bytes{0});
    if (grew > best_grew) best = i;
  }
  out.binding = at_fail[best].name;
}

// Width: heads grow in steps that keep the grouped-query ratio and divide by tensor
// parallelism; head_dim stays, and the MLP widths keep their ratio to the hidden size, as a
// Gated DeltaNet's key heads do to the attention heads (at least one; its value heads stay a
// multiple of its key heads, and both head sizes stay), and a vision projector's output stays the
// language model's width.
std::int64_t width_step(const Config& c) {
  const ModelSpec& m = c.model;
  const std::int64_t ratio = m.num_attention_heads / m.kv_heads();
  return std::lcm(ratio, c.parallel.tensor);
}

void apply_width(Config& c, std::int64_t k, const Config& base) {
  const ModelSpec& b = base.model;
  ModelSpec& m = c.model;
  const std::int64_t heads = k * width_step(base);
  m.head_dim = b.head_size();
  m.num_attention_heads = heads;
  m.num_key_value_heads = heads / (b.num_attention_heads / b.kv_heads());
  m.hidden_size = heads * m.head_dim;
  m.intermediate_size = b.intermediate_size * heads / b.num_attention_heads;
  m.moe_intermediate_size = b.moe_intermediate_size * heads / b.num_attention_heads;
  m.shared_expert_intermediate_size = b.shared_expert_intermediate_size * heads / b.num_attention_heads;
  if (b.hybrid_attention() && b.linear_num_key_heads > 0) {
    m.linear_num_key_heads = std::max<std::int64_t>(1, b.linear_num_key_heads * heads / b.num_attention_heads);
    m.linear_num_value_heads = m.linear_num_key_heads * std::max<std::int64_t>(1, b.linear_num_value_heads / b.linear_num_key_heads);
  }
  // A vision tower's projector feeds the language model: its output follows the new width (0, the
  // width itself, already does).
  if (b.vision_out_hidden_size == b.hidden_size) m.vision_out_hidden_size = m.hidden_size;
  m.nominal_parameter_count = 0;
}

std::int64_t model_parallel(const Config& c) {
  return c.parallel.tensor * c.parallel.pipeline * c.parallel.context;
}

std::int64_t family_stage(GpuFamily f, const Config& base) {
  switch (f) {
    case GpuFamily::kZero3: return 3;
    case GpuFamily::kZero2: return 2;
    case GpuFamily::kZero1: return 1;
    default: return base.parallel.zero_stage;
  }
}

Boundary min_gpus(Search& zero3, Search& tensor, Search& pipeline, const Config& base, GpuFamily family) {
  if (family == GpuFamily::kTensor) {
    std::vector<std::int64_t> degrees;
    for (std::int64_t t = 1; t <= 1024; ++t) {
      if (base.model.num_attention_heads % t == 0) degrees.push_back(t);
    }
    return first_fitting(tensor, degrees);
  }
  if (family == GpuFamily::kPipeline) {
    std::vector<std::int64_t> degrees(static_cast<std::size_t>(base.model.num_hidden_layers));
    std::iota(degrees.begin(), degrees.end(), 1);
    return first_fitting(pipeline, degrees);
  }
  return smallest_fitting(zero3, kMaxGpus / model_parallel(base));
}

void apply_micro_batch(Config& c, std::int64_t v, const Config&) { c.training.micro_batch_size = v; }
void apply_seq_len(Config& c, std::int64_t v, const Config&) { c.training.seq_len = v; }
// A hybrid model keeps its mix: the same share of Gated DeltaNet blocks (Qwen3.5: three of four,
// the attention blocks closing each span).
void apply_layers(Config& c, std::int64_t v, const Config& base) {
  c.model.num_hidden_layers = v;
  c.model.nominal_parameter_count = 0;
  const ModelSpec& m = base.model;
  if (m.hybrid_attention() && m.num_hidden_layers > 0) {
    c.model.linear_attention_layers = v - v * m.full_attention_layers() / m.num_hidden_layers;
  }
}
void apply_data_parallel(Config& c, std::int64_t k, const Config& base) { c.parallel.num_gpus = k * model_parallel(base); }
void apply_tensor(Config& c, std::int64_t t, const Config& base) {
  c.parallel.tensor = t;
  c.parallel.num_gpus = t * base.parallel.pipeline * base.parallel.context;
}
void apply_pipeline(Config& c, std::int64_t p, const Config& base) {
  c.parallel.pipeline = p;
  c.parallel.num_gpus = base.parallel.tensor * p * base.parallel.context;
}

// The base of a min-gpus search: the family's ZeRO stage, fully sharded, one data-parallel
// replica of the configured tensor × pipeline × context block to start from.
Config min_gpus_base(const Config& c, GpuFamily family) {
  Config base = c;
  base.parallel.zero_stage = family_stage(family, c);
  base.parallel.shard_degree = 0;
  base.parallel.num_gpus = model_parallel(c);
  if (family == GpuFamily::kTensor) base.parallel.tensor = 1;
  if (family == GpuFamily::kPipeline) {
    base.parallel.pipeline = 1;
    base.parallel.virtual_stages = 1;
  }
  return base;
}

Boundary run_search(const Config& c, SolveTarget target, GpuFamily family, int& estimates) {
  switch (target) {
    case SolveTarget::kMaxMicroBatch: {
      Search s(c, apply_micro_batch);
      Boundary b = largest_fitting(s, 1, kMaxMicroBatch);
      estimates = s.count();
      return b;
    }
    case SolveTarget::kMaxSeqLen: {
      Search s(c, apply_seq_len);
      Boundary b = largest_fitting(s, 1, kMaxSeqLen);
      estimates = s.count();
      return b;
    }
    case SolveTarget::kMaxLayers: {
      Search s(c, apply_layers);
      const std::int64_t lo = std::max({c.parallel.pipeline * c.parallel.virtual_stages, c.model.first_k_dense_replace,
                                        std::int64_t{1}});
      Boundary b = largest_fitting(s, lo, kMaxLayers);
      estimates = s.count();
      return b;
    }
    case SolveTarget::kMaxWidth: {
      Search s(c, apply_width);
      Boundary b = largest_fitting(s, 1, kMaxHidden / (width_step(c) * c.model.head_size()));
      estimates = s.count();
      return b;
    }
    case SolveTarget::kMinGpus: break;
  }
  const Config base = min_gpus_base(c, family);
  Search zero(base, apply_data_parallel), tensor(base, apply_tensor), pipeline(base, apply_pipeline);
  Boundary b = min_gpus(zero, tensor, pipeline, base, family);
  estimates = zero.count() + tensor.count() + pipeline.count();
  return b;
}

// The value reported for a probe: the field the solver varies, read back from its configuration.
std::int64_t reported(SolveTarget target, const Config& c) {
  switch (target) {
    case SolveTarget::kMaxMicroBatch: return c.training.micro_batch_size;
    case SolveTarget::kMaxSeqLen: return c.training.seq_len;
    case SolveTarget::kMaxLayers: return c.model.num_hidden_layers;
    case SolveTarget::kMaxWidth: return c.model.hidden_size;
    case SolveTarget::kMinGpus: return c.parallel.num_gpus;
  }
  return 0;
}

}  // namespace

Solution solve(const Config& c, SolveTarget target, GpuFamily family) {
  Solution out;
  out.errors = validate(c);
  if (target == SolveTarget::kMaxWidth && c.model.attention_type == AttentionType::kMla) {
    out.errors.push_back({"model.attention_type", "max-width varies standard attention heads; MLA models are not supported"});
  }
  // A hybrid model runs on one stage without tensor splits (validate.cpp): those families have
  // nothing to search.
  if (target == SolveTarget::kMinGpus && c.model.hybrid_attention() &&
      (family == GpuFamily::kTensor || family == GpuFamily::kPipeline)) {
    out.errors.push_back({family == GpuFamily::kTensor ? "parallel.tensor" : "parallel.pipeline",
                          "a model with Gated DeltaNet layers (model.linear_attention_layers) is not split by tensor or "
                          "pipeline parallelism: use the zero3, zero2, zero1 or as_configured family"});
  }
  if (!out.errors.empty()) return out;
  Boundary b = run_search(c, target, family, out.estimates);
  out.found = b.found;
  const Probe& shown = b.found ? b.answer : b.next;
  out.value = b.found ? reported(target, b.answer.config) : 0;
  out.config = shown.config;
  out.estimate = shown.estimate;
  name_binding(b, target != SolveTarget::kMinGpus, out);
  if (b.next.value > 0) out.next_value = reported(target, b.next.config);
  // Past a handful of GPUs, the answer on about half as many: the largest count at most half that
  // the layout takes (expert parallelism must still divide the data-parallel ranks).
  if (target == SolveTarget::kMinGpus && b.found && out.estimate.ok() && out.value > 8) {
    Config half = out.config;
    const std::int64_t block = model_parallel(half);
    for (std::int64_t k = out.value / 2 / block; k >= 1 && k > out.value / 4 / block; --k) {
      half.parallel.num_gpus = k * block;
      if (!validate(half).empty()) continue;
      const Estimate e = estimate(half);
      ++out.estimates;
      if (e.ok()) {
        out.half_value = half.parallel.num_gpus;
        out.half_device_total_bytes = e.device_total_bytes;
        out.sharding_saturated = static_cast<double>(e.device_total_bytes.value()) <
                                 1.02 * static_cast<double>(out.estimate.device_total_bytes.value());
      }
      break;
    }
  }
  return out;
}

const char* to_string(SolveTarget t) {
  switch (t) {
    case SolveTarget::kMaxMicroBatch: return "max-micro-batch";
    case SolveTarget::kMaxSeqLen: return "max-seq-len";
    case SolveTarget::kMinGpus: return "min-gpus";
    case SolveTarget::kMaxLayers: return "max-layers";
    case SolveTarget::kMaxWidth: return "max-width";
  }
  return "";
}

const char* to_string(GpuFamily f) {
  switch (f) {
    case GpuFamily::kZero3: return "zero3";
    case GpuFamily::kZero2: return "zero2";
    case GpuFamily::kZero1: return "zero1";
    case GpuFamily::kAsConfigured: return "as_configured";
    case GpuFamily::kTensor: return "tensor";
    case GpuFamily::kPipeline: return "pipeline";
  }
  return "";
}

namespace {

std::string dashed(std::string_view text) {
  std::string out(text);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

}  // namespace

bool parse_solve_target(std::string_view text, SolveTarget& out) {
  for (SolveTarget t : {SolveTarget::kMaxMicroBatch, SolveTarget::kMaxSeqLen, SolveTarget::kMinGpus,
                        SolveTarget::kMaxLayers, SolveTarget::kMaxWidth}) {
    if (dashed(text) == to_string(t)) {
      out = t;
      return true;
    }
  }
  return false;
}

bool parse_gpu_family(std::string_view text, GpuFamily& out) {
  for (GpuFamily f : {GpuFamily::kZero3, GpuFamily::kZero2, GpuFamily::kZero1, GpuFamily::kAsConfigured,
                      GpuFamily::kTensor, GpuFamily::kPipeline}) {
    if (dashed(text) == dashed(to_string(f))) {
      out = f;
      return true;
    }
  }
  return false;
}

Json solution_to_json(const Solution& s, SolveTarget target) {
  Json j = Json::object();
  j.set("ok", Json::boolean(s.ok()));
  j.set("errors", issues_to_json(s.errors));
  if (!s.ok()) return j;
  j.set("target", Json::string(to_string(target)));
  j.set("found", Json::boolean(s.found));
  j.set("value", s.found ? Json::integer(s.value) : Json::null());
  j.set("config", config_to_json(s.config));
  j.set("binding", Json::string(s.binding));
  j.set("binding_phase", Json::string(s.binding_phase));
  if (s.estimate.ok()) {
    j.set("peak_allocated_bytes", Json::integer(s.estimate.peak_allocated_bytes.value()));
    j.set("device_total_bytes", Json::integer(s.estimate.device_total_bytes.value()));
    j.set("need_high_bytes", Json::integer(s.estimate.fit.need_high_bytes.value()));
    j.set("budget_bytes", Json::integer(s.estimate.fit.budget_bytes.value()));
    j.set("verdict", Json::string(to_string(s.estimate.fit.verdict)));
  }
  if (s.next_value > 0) {
    Json next = Json::object();
    next.set("value", Json::integer(s.next_value));
    next.set("device_total_bytes", Json::integer(s.next_device_total_bytes.value()));
    next.set("need_high_bytes", Json::integer(s.next_need_high_bytes.value()));
    j.set("next", std::move(next));
  }
  if (s.half_value > 0) {
    Json half = Json::object();
    half.set("value", Json::integer(s.half_value));
    half.set("device_total_bytes", Json::integer(s.half_device_total_bytes.value()));
    j.set("half", std::move(half));
    j.set("sharding_saturated", Json::boolean(s.sharding_saturated));
  }
  j.set("estimates", Json::integer(s.estimates));
  return j;
}

}  // namespace memfit
