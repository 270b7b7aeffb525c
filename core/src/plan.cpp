// The planner (plan.hpp): a best-first search over layouts, exact in memory.
//
// For each GPU count, largest first, the structures (precision, tensor, pipeline, virtual stages,
// context, expert degrees, checkpointing) are opened in the order of a time no layout of theirs
// can beat, and their layouts (ZeRO / offload variant × micro-batch) are tried in increasing step
// time across all opened structures. Trying a layout: its variant's memory bound (what every
// layout of it holds at the end of forward or at the optimizer step, which the peak can never be
// below), the layout's own bound, an estimate without the allocator replay (which only adds),
// then the full estimate. Memory never falls as the micro-batch grows (with the accumulation
// that keeps the global batch) and never rises as GPUs are added, so one failure also fails the
// larger micro-batches of the variant, here and on fewer GPUs.
#include "memfit/plan.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <tuple>

#include "activations.hpp"
#include "finetune.hpp"
#include "memfit/exports.hpp"
#include "memfit/gpus.hpp"
#include "memfit/implementation.hpp"
#include "memfit/recipes.hpp"
#include "placement.hpp"
#include "vision.hpp"
#include "text.hpp"

namespace memfit {

namespace {

// Default global batches when the configuration's is too small to spread over the GPUs: Llama 3
// pre-trained with 4M-token batches at first (Dubey et al. 2024, §3.4.1); fine-tuning runs are
// commonly around a million tokens per step (128 sequences of 8k). Assumptions, always echoed.
constexpr std::int64_t kPretrainBatchTokens = std::int64_t{1} << 22;
constexpr std::int64_t kFinetuneBatchTokens = std::int64_t{1} << 20;
// Context parallelism only where each rank keeps at least this many tokens of a sequence: below
// it the ring's per-hop latency outweighs the attention it hides behind (assumed).
constexpr std::int64_t kMinTokensPerContextRank = 1024;
// Interleaving candidates: chunks per stage (Megatron needs layers divisible by stages × chunks).
constexpr std::int64_t kVirtualStageChoices[] = {2, 4, 5, 8, 10, 20};
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A short list without heap allocation (the search makes millions of them).
template <class T, std::size_t N>
struct Small {
  std::array<T, N> items;  // only the first `count` are meaningful
  std::size_t count = 0;
  void push_back(T v) {
    if (count < N) items[count++] = v;
  }
  std::size_t size() const { return count; }
  bool empty() const { return count == 0; }
  const T& front() const { return items[0]; }
  const T& back() const { return items[count - 1]; }
  const T& operator[](std::size_t i) const { return items[i]; }
  const T* begin() const { return items.data(); }
  const T* end() const { return items.data() + count; }
};

// A structure's micro-batches: 2^first, 2^(first + 1), ... 2^(first + count − 1) — consecutive
// powers of two (see micro_batches()), so two numbers say them all.
struct MicroBatches {
  int first = 0, count = 0;
  struct Iterator {
    int i;
    std::int64_t operator*() const { return std::int64_t{1} << i; }
    Iterator& operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return i != o.i; }
  };
  std::size_t size() const { return static_cast<std::size_t>(count); }
  bool empty() const { return count == 0; }
  std::int64_t front() const { return std::int64_t{1} << first; }
  std::int64_t back() const { return std::int64_t{1} << (first + count - 1); }
  std::int64_t operator[](std::size_t i) const { return std::int64_t{1} << (first + static_cast<int>(i)); }
  Iterator begin() const { return {first}; }
  Iterator end() const { return {first + count}; }
};

struct Structure {
  Precision precision;
  std::int64_t tensor, pipeline, virtual_stages, context, expert;
  Checkpointing checkpointing;
  double compute_bound_s = 0;  // a step time no layout of the structure beats (time_bound)
  MicroBatches batches;        // its micro-batches (filled by the search)
  std::size_t variant_count = 0;
};

struct Variant {
  std::int64_t zero_stage = 0, shard_degree = 0;
  bool offload_optimizer = false, offload_params = false;
};
using Variants = Small<Variant, 8>;

// A layout that fits, with its time.
struct Candidate {
  Layout layout;
  double step_time_s = 0;
  double metric = 0;  // what the ranking sorts by
};

// A plan's family: what a user would call a different layout. Interleaving (virtual stages) and
// context parallelism at a doubled micro-batch are variants of one family, which can time within
// a hair of each other; the plans list the fastest of each family, so that ten plans are ten
// alternatives, not one layout ten ways. (ZeRO and offload are in the key, but a structure keeps
// only its fastest fitting variant, so two plans never differ by those alone.)
using FamilyKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, int, std::int64_t,
                             std::int64_t, bool, bool>;
FamilyKey family_of(const Layout& l) {
  return {l.num_gpus, l.tensor, l.pipeline, l.expert, static_cast<int>(l.precision), static_cast<int>(l.checkpointing),
          l.zero_stage, l.shard_degree, l.offload_optimizer, l.offload_params};
}

// What the memory search remembers per structure and variant across GPU counts: the smallest
// micro-batch known not to fit on a larger GPU count (so not on this one either).
using MemoryKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int,
                             std::int64_t, std::int64_t, bool, bool>;

// Hash of a tuple of integers (the search's cache keys), boost's hash_combine.
struct TupleHash {
  template <class... T>
  std::size_t operator()(const std::tuple<T...>& t) const {
    std::size_t h = 0;
    std::apply([&h](const auto&... v) { ((h ^= std::hash<std::int64_t>{}(static_cast<std::int64_t>(v)) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)), ...); }, t);
    return h;
  }
};

MemoryKey memory_key(const Layout& l) {
  return {static_cast<int>(l.precision), l.tensor, l.pipeline, l.virtual_stages, l.context, l.expert,
          static_cast<int>(l.checkpointing), l.zero_stage, l.shard_degree, l.offload_optimizer, l.offload_params};
}

MemoryKey memory_key(const Structure& s, const Variant& v) {
  return {static_cast<int>(s.precision), s.tensor, s.pipeline, s.virtual_stages, s.context, s.expert,
          static_cast<int>(s.checkpointing), v.zero_stage, v.shard_degree, v.offload_optimizer, v.offload_params};
}

std::vector<std::int64_t> powers_of_two(std::int64_t limit) {
  std::vector<std::int64_t> out;
  for (std::int64_t v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

// The precision recipes a run may use on this card: Megatron / DeepSpeed's master-weight bf16,
// FSDP's and AMP's mixed precision, pure bf16 for fine-tuning only (torchtune; risky for
// pre-training), FP8 where the card has it; fp16 counterparts on cards without bf16. LoRA keeps
// the recipes PEFT users run (AMP and pure bf16).
std::vector<Precision> precisions_for(const Config& c, const Gpu& g, bool keep) {
  if (keep) return {c.training.precision};
  const Goal goal = resolved_goal(c.training);
  std::vector<Precision> out;
  if (!g.has_bf16()) {
    out = {Precision::kFp16Master, Precision::kFp16Mixed};
    return out;
  }
  if (goal == Goal::kPeft) return {Precision::kBf16Mixed, Precision::kBf16};
  out = {Precision::kBf16Master, Precision::kBf16Fsdp, Precision::kBf16Mixed};
  if (goal == Goal::kFullFinetune) out.push_back(Precision::kBf16);
  if (g.has_fp8()) out.push_back(Precision::kFp8Mixed);
  return out;
}

// The GPU counts searched: the given range's powers of two and whole multiples of a node whose
// node count is a power of two, plus both ends.
std::vector<std::int64_t> gpu_counts(std::int64_t lo, std::int64_t hi, std::int64_t per_node) {
  std::vector<std::int64_t> out = {lo, hi};
  for (std::int64_t n = 1; n <= hi; n *= 2) {
    if (n >= lo) out.push_back(n);
    if (n * per_node >= lo && n * per_node <= hi) out.push_back(n * per_node);
  }
  std::sort(out.begin(), out.end(), std::greater<>());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// An export's refusal that is about the layout (what apply_layout sets: the parallel degrees,
// ZeRO and offload, the precision recipe, the checkpointing) rather than the model or the method.
bool layout_issue(const Issue& i) {
  return i.field == "parallel" || i.field.rfind("parallel.", 0) == 0 || i.field == "training.precision" ||
         i.field == "training.checkpointing" || i.field == "training.checkpointed_layers";
}

bool refuses_layout(const Export& e) {
  return std::any_of(e.errors.begin(), e.errors.end(), layout_issue);
}

class Planner {
 public:
  Planner(const Config& base, const PlanOptions& options)
      // The bounds, the timing and the layouts tried see the model as its framework builds it, with
      // the vision tower's trained parts among its parameters as estimate() places them.
      : base_(base), options_(options),
        params_(memory_parameters(config_as_run(base))),
        model_(step_time_model(config_as_run(base), params_, options.step_time)),
        gpu_(*find_gpu(base.hardware.gpu)), scratch_(config_as_run(base)) {
    per_node_ = model_.link_domain;  // whole servers, or whole NVLink racks
    overhead_ = base.hardware.overhead_bytes >= 0 ? Bytes(base.hardware.overhead_bytes) : gpu_.context_bytes;
    budget_ = Bytes(static_cast<std::int64_t>(static_cast<double>(gpu_.usable_bytes().value()) *
                                              base.hardware.budget_fraction));
    base_count_ = base.model.nominal_parameter_count > 0 ? Count(base.model.nominal_parameter_count)
                                                         : params_.total_count;
    trainable_ = trainable_counts(scratch_, params_, base_count_).trainable;
  }

  PlanResult run();
  std::vector<Layout> space(std::int64_t gpus);

 private:
  void setup(std::int64_t lo, std::int64_t hi, PlanResult& r);
  void search_gpu_count(std::int64_t gpus);
  std::vector<Structure> structures(std::int64_t gpus);
  Variants variants(const Structure& s, std::int64_t gpus) const;
  MicroBatches micro_batches(const Structure& s, std::int64_t gpus) const;
  struct Item {
    double metric;
    std::uint32_t structure;
    std::uint8_t variant, batch;  // indexes into the structure's variants and micro-batches
  };
  // What the search keeps of a structure once it is opened: its variants, and for each variant
  // that passed its bound, its entry in fails_from_ (looked up once, not per layout tried).
  struct Opened {
    Variants variants;
    std::array<std::int64_t*, 8> fails_from{};
  };
  // The layouts of the opened structures, fastest first (ties in enumeration order: every build
  // returns the same plans), with what is known of each structure and variant.
  struct Frontier {
    explicit Frontier(const std::vector<Structure>& s)
        : structures(s), kept(s.size(), false), slot(s.size(), 0) {}
    const std::vector<Structure>& structures;
    std::vector<bool> kept;                 // the structure's plan is found
    std::vector<std::uint32_t> slot;        // where an opened structure is in `opened`
    std::vector<Opened> opened;
    std::int64_t decided = 0;               // layouts decided by their variant's bound, never timed
    std::vector<Item> heap;
    static bool later(const Item& a, const Item& b) {
      if (a.metric != b.metric) return a.metric > b.metric;
      if (a.structure != b.structure) return a.structure > b.structure;
      if (a.variant != b.variant) return a.variant > b.variant;
      return a.batch > b.batch;
    }
    bool empty() const { return heap.empty(); }
    const Item& top() const { return heap.front(); }
    void push(Item i) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), later);
    }
    Item pop() {
      std::pop_heap(heap.begin(), heap.end(), later);
      const Item i = heap.back();
      heap.pop_back();
      return i;
    }
  };
  void open(Frontier& f, std::uint32_t index, std::int64_t gpus);
  bool try_item(Frontier& f, const Item& item, std::int64_t gpus);
  bool below_memory_bound(const Structure& s, const Variant& v, std::int64_t gpus, const MicroBatches& batches);
  const StaticBytes& statics_of(const Layout& l) const;
  Bytes activations_of(const Layout& l) const;
  bool exceeds_budget(Bytes bound, std::int64_t gpus) const;
  bool fits(const Layout& l, std::int64_t& fails_from, bool& unrunnable);
  double time_bound(const Structure& s, std::int64_t gpus) const;
  bool over_budget(const Layout& l) const;
  Layout layout(const Structure& s, const Variant& v, std::int64_t gpus, std::int64_t micro_batch) const;
  Config config_for(const Layout& l) const;
  const Config& scratch(const Layout& l) const;
  double metric(double step_time_s, std::int64_t gpus) const {
    return options_.rank_by == RankBy::kCost ? step_time_s * double(gpus) : step_time_s;
  }
  double threshold(std::int64_t gpus) const;
  void keep(const Candidate& c);
  Plan finish(const Candidate& c);
  void choose_engines(PlanResult& r);
  bool runnable(const Layout& l);

  const Config& base_;
  const PlanOptions& options_;
  ParameterCount params_;
  StepTimeModel model_;
  const Gpu& gpu_;
  std::int64_t per_node_ = 8, global_sequences_ = 0;
  Bytes overhead_, budget_;
  Count base_count_, trainable_;
  std::vector<Precision> precisions_;
  std::vector<Checkpointing> checkpointing_;
  PlanSearchCounts counts_;
  std::vector<Candidate> found_;               // the best layout of each structure × count
  std::map<std::int64_t, Candidate> best_per_count_;
  std::vector<double> top_metrics_;            // the best `top` metrics so far, kept sorted
  double best_here_ = kInfinity;               // the best metric of the GPU count being searched
  double band_ratio_[2] = {0.0, 0.0};          // the measured band's top over the device total (one GPU, several)
  std::map<MemoryKey, std::int64_t> fails_from_;  // smallest micro-batch known not to fit (any count)
  using StaticsKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool,
                                std::int64_t>;
  using ActivationKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, std::int64_t,
                                   std::int64_t>;
  mutable std::unordered_map<StaticsKey, StaticBytes, TupleHash> statics_;
  mutable std::unordered_map<ActivationKey, Bytes, TupleHash> activations_;  // saved + logits and loss (forward)
  mutable Config scratch_;
  using SeenKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int,
                             std::int64_t, std::int64_t, bool, bool, std::int64_t, std::int64_t>;
  std::unordered_map<SeenKey, Estimate, TupleHash> fitting_;  // the full estimates of layouts that fit
  // The engines memfit exports to (exports.cpp) that a plan must run on, one at least; empty: no
  // engine runs this configuration whatever its layout, and the layouts are not filtered.
  std::vector<Engine> engines_;
  std::map<FamilyKey, double> family_best_;  // the best metric of each family found
  // Every Layout field an export's refusal can depend on (apply_layout writes them all into the
  // exported configuration). The micro-batch and the accumulation are refused by no engine, and
  // the GPU count matters only as one GPU or several, and whether data × context ranks remain
  // beside tensor parallelism (torchtune's recipes; exports.cpp): the check is one per structure
  // and variant, not per count (tests/core/plan_test.cpp checks the classes against the exports).
  using RunKey = std::tuple<int, bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                            std::int64_t, std::int64_t, bool, bool, bool, int, std::int64_t>;
  std::map<RunKey, bool> runs_;
};

Layout Planner::layout(const Structure& s, const Variant& v, std::int64_t gpus, std::int64_t micro_batch) const {
  Layout l;
  l.num_gpus = gpus;
  l.tensor = s.tensor;
  l.pipeline = s.pipeline;
  l.virtual_stages = s.virtual_stages;
  l.context = s.context;
  l.expert = s.expert;
  l.sequence_parallel = s.tensor > 1;  // same traffic as plain TP, less memory: always on with TP
  l.precision = s.precision;
  l.checkpointing = s.checkpointing;
  l.zero_stage = v.zero_stage;
  l.shard_degree = v.shard_degree;
  l.offload_optimizer = v.offload_optimizer;
  l.offload_params = v.offload_params;
  l.micro_batch_size = micro_batch;
  l.grad_accum_steps = global_sequences_ / (l.data_parallel() * micro_batch);
  return l;
}

Config Planner::config_for(const Layout& l) const {
  Config c = base_;
  apply_layout(l, c);
  return c;
}

// Every structure of `gpus` GPUs with its compute bound. Tensor parallelism stays inside a node
// and divides the heads (and the key/value heads); pipelines of powers of two up to the layer
// count, interleaved where the layers divide evenly; context parallelism for long sequences only;
// expert parallelism inside the data-parallel ranks; the data-parallel degree divides the batch.
std::vector<Structure> Planner::structures(std::int64_t gpus) {
  const ModelSpec& m = base_.model;
  const std::int64_t layers = m.num_hidden_layers, seq = base_.training.seq_len;
  const bool standard = m.attention_type == AttentionType::kStandard;
  const bool sequential = base_.parallel.pipeline_schedule == PipelineSchedule::kSequential;
  std::vector<Structure> out;
  out.reserve(4096);
  for (std::int64_t tp : powers_of_two(std::min(per_node_, gpus))) {
    if (m.num_attention_heads % tp != 0 || (standard && m.kv_heads() % tp != 0)) continue;
    for (std::int64_t pp : powers_of_two(std::min(layers, gpus / tp))) {
      // Interleaving needs the 1F1B schedule (validate.cpp): none with sequential stages.
      std::vector<std::int64_t> chunks = {1};
      for (std::int64_t v : kVirtualStageChoices) {
        if (pp > 1 && layers % (pp * v) == 0 && !sequential) chunks.push_back(v);
      }
      for (std::int64_t cp : powers_of_two(gpus / (tp * pp))) {
        if (cp > 1 && (seq % (2 * cp) != 0 || seq / cp < kMinTokensPerContextRank)) continue;
        if (gpus % (tp * pp * cp) != 0 || global_sequences_ % (gpus / (tp * pp * cp)) != 0) continue;
        // Expert parallelism divides the data-parallel size (validate.cpp).
        const std::int64_t data = gpus / (tp * pp * cp);
        for (std::int64_t ep : powers_of_two(m.num_experts > 0 ? data : 1)) {
          if (ep > 1 && (m.num_experts % ep != 0 || data % ep != 0)) continue;
          for (std::int64_t v : chunks) {
            for (Precision p : precisions_) {
              for (Checkpointing c : checkpointing_) out.push_back({p, tp, pp, v, cp, ep, c, 0, MicroBatches{}, 0});
            }
          }
        }
      }
    }
  }
  return out;
}

// The micro-batches of a structure: powers of two that divide each data-parallel rank's share of
// the global batch (the accumulation makes up the rest); interleaving needs the micro-batch count
// to be a multiple of the pipeline degree (Megatron-LM).
MicroBatches Planner::micro_batches(const Structure& s, std::int64_t gpus) const {
  const std::int64_t per_rank = global_sequences_ / (gpus / (s.tensor * s.pipeline * s.context));
  MicroBatches out;
  // b divides per_rank, and with interleaving b × pipeline does: both hold for a prefix of the
  // powers of two (the pipeline degree is one too).
  for (std::int64_t b = 1; b <= per_rank && per_rank % b == 0; b *= 2) {
    if (s.virtual_stages > 1 && (per_rank / b) % s.pipeline != 0) break;
    ++out.count;
  }
  // An optimizer stepped inside backward cannot accumulate gradients (validate.cpp): only the
  // micro-batch that is the rank's whole share is a layout.
  if (base_.training.optimizer_in_backward) {
    if (out.count > 0 && out.back() == per_rank) {
      out.first = out.count - 1;
      out.count = 1;
    } else {
      out.count = 0;
    }
  }
  return out;
}

// ZeRO / FSDP variants: none (DDP / Megatron), stage 1 (distributed optimizer), 2 (shard-grad-op),
// 3 (full shard), 3 sharded inside each node and replicated across (hybrid), and the offloads
// (optimizer states to the CPU with stage 2 or 3; parameters too with stage 3). FSDP's mixed
// precision exists only with FSDP's sharding.
Variants Planner::variants(const Structure& s, std::int64_t gpus) const {
  const std::int64_t data_ranks = gpus / (s.tensor * s.pipeline);
  const bool fsdp = s.precision == Precision::kBf16Fsdp;
  Variants out;
  if (!fsdp) out.push_back({0, 0, false, false});
  if (data_ranks > 1 || fsdp) {
    if (!fsdp && data_ranks > 1) {
      out.push_back({1, 0, false, false});
      out.push_back({2, 0, false, false});
    }
    out.push_back({3, 0, false, false});
    const std::int64_t in_node = per_node_ / s.tensor;
    if (in_node > 1 && in_node < data_ranks && data_ranks % in_node == 0) out.push_back({3, in_node, false, false});
  }
  if (!fsdp) out.push_back({2, 0, true, false});
  out.push_back({3, 0, true, false});
  out.push_back({3, 0, true, true});
  return out;
}

// What a layout certainly holds, whatever the step's peak turns out to be: at the end of
// forward, the weights, master weights and optimizer states after sharding and offload (the
// core's own placement), the gradients waiting between micro-batches, the saved activations of
// the micro-batches in flight and the logits and loss; at the optimizer step, the statics and
// every gradient. Plus the CUDA context. Statics depend on the sharding and the GPU count, the
// activations and logits on the batch and the model-parallel split: each is computed once per
// distinct key.
const StaticBytes& Planner::statics_of(const Layout& l) const {
  const StaticsKey sk{static_cast<int>(l.precision), l.tensor, l.pipeline, l.expert, l.zero_stage, l.shard_degree,
                      l.offload_optimizer, l.offload_params, l.num_gpus};
  auto st = statics_.find(sk);
  if (st == statics_.end()) {
    const Config& c = scratch(l);
    const Placement place = placement(c, params_, base_count_);
    std::vector<std::string> notes;
    st = statics_.emplace(sk, static_bytes(c, params_, place, recipe_of(c), notes)).first;
  }
  return st->second;
}

// The saved activations and the logits and loss at the end of forward.
Bytes Planner::activations_of(const Layout& l) const {
  // The accumulation matters to the activations only through the micro-batches a pipeline keeps
  // in flight (pipeline_in_flight, activations.cpp), so that is the key, not the accumulation.
  Parallel split;
  split.pipeline = l.pipeline;
  split.virtual_stages = l.virtual_stages;
  const PipelineInFlight flight = pipeline_in_flight(split, l.grad_accum_steps);
  // Recipes differ in what activations keep only through their element sizes and autocast (the
  // recipe fields activations.cpp reads); recipes alike there share the entry
  // (tests/core/plan_test.cpp checks that they save the same bytes).
  const PrecisionRecipe& r = recipe_for(l.precision);
  const int dtypes = static_cast<int>(r.compute.value() * 1000 + r.stream.value() * 100 + r.frozen_base.value() * 10 +
                                      (r.autocast ? 1 : 0));
  const ActivationKey ak{dtypes, l.tensor, l.pipeline, l.pipeline > 1 ? l.virtual_stages : 1,
                         l.context, static_cast<int>(l.checkpointing), l.micro_batch_size, flight.chunks.value()};
  auto act = activations_.find(ak);
  if (act == activations_.end()) {
    const Config& c = scratch(l);
    act = activations_.emplace(ak, activation_model(c, params_).saved_bytes + loss_model(c, params_).forward_bytes).first;
  }
  return act->second;
}

// The base configuration with a layout written into it, without copying the configuration.
const Config& Planner::scratch(const Layout& l) const {
  apply_layout(l, scratch_);
  return scratch_;
}

// "Fits" holds the top of the measured band (the device total × the band's high ratio for the
// run's population, fit.cpp) to the budget; the allocator's reserve is never below what is
// allocated. The band's ratio is read off the first full estimate of each population (one GPU,
// several), slightly shrunk so that rounding can only loosen the bound.
bool Planner::exceeds_budget(Bytes bound, std::int64_t gpus) const {
  if (bound.overflow()) return true;
  const double ratio = band_ratio_[gpus > 1 ? 1 : 0];
  return static_cast<double>(bound.value()) * (ratio > 0 ? ratio * (1.0 - 1e-6) : 1.0) >
         static_cast<double>(budget_.value());
}

// Whether the layout's memory bound (statics_of, activations_of) exceeds the budget. The
// activations only add to the end of forward, so a layout whose statics alone exceed it is
// decided without them (most layouts of a large model on few GPUs).
bool Planner::over_budget(const Layout& l) const {
  const bool in_backward = base_.training.optimizer_in_backward;
  const StaticBytes& b = statics_of(l);
  const Bytes statics = b.weights + b.master + b.states;
  const Bytes waiting = l.grad_accum_steps > 1 && !in_backward ? b.gradients : Bytes{0};
  const Bytes optimizer = statics + (in_backward ? Bytes{0} : b.gradients);
  if (exceeds_budget(max(statics + waiting, optimizer) + overhead_, l.num_gpus)) return true;
  return exceeds_budget(max(statics + waiting + activations_of(l), optimizer) + overhead_, l.num_gpus);
}

// True when no micro-batch of this variant can fit: by the bound, neither the smallest one (the
// least memory of those that accumulate) nor the one without accumulation.
bool Planner::below_memory_bound(const Structure& s, const Variant& v, std::int64_t gpus,
                                 const MicroBatches& batches) {
  if (!over_budget(layout(s, v, gpus, batches.front()))) return false;
  const Layout largest = layout(s, v, gpus, batches.back());
  return largest.grad_accum_steps > 1 || batches.size() == 1 || over_budget(largest);
}

bool Planner::fits(const Layout& l, std::int64_t& fails_from, bool& unrunnable) {
  if (l.grad_accum_steps > 1 && l.micro_batch_size >= fails_from) return false;
  // Each layout is tried once (a structure, variant and micro-batch is one item of one count's
  // frontier), so nothing here is asked twice.
  // The bound first: cheaper than an estimate, and what fails most layouts that fail.
  if (over_budget(l)) {
    if (l.grad_accum_steps > 1) fails_from = std::min(fails_from, l.micro_batch_size);
    return false;
  }
  // Past the bound, before any estimate: a layout no engine runs is not a plan (exporting costs
  // less than an estimate, and its answer is cached per structure and variant).
  if (!runnable(l)) {
    unrunnable = true;
    return false;
  }
  // The step's allocated peak does not depend on the allocator replay, and the replay only adds
  // to it: a configuration that does not fit with no fragmentation at all does not fit.
  Config plain = config_for(l);
  const double fragmentation = plain.hardware.fragmentation;
  if (fragmentation < 0) {
    plain.hardware.fragmentation = 0.0;
    const Estimate lean = estimate(plain);
    ++counts_.quick_estimates;
    if (!lean.ok() || lean.fit.verdict != Verdict::kFits) {
      if (l.grad_accum_steps > 1) fails_from = std::min(fails_from, l.micro_batch_size);
      return false;
    }
    plain.hardware.fragmentation = fragmentation;
  }
  const Estimate e = estimate(plain);
  ++counts_.estimates;
  const bool ok = e.ok() && e.fit.verdict == Verdict::kFits;
  if (e.ok() && e.device_total_bytes.value() > 0 && e.fit.need_high_bytes >= e.device_total_bytes) {
    band_ratio_[l.num_gpus > 1 ? 1 : 0] = static_cast<double>(e.fit.need_high_bytes.value()) /
                                          static_cast<double>(e.device_total_bytes.value());
  }
  // Without accumulation no gradients wait between micro-batches, so the largest micro-batch can
  // need less than a smaller one: only failures with accumulation bound the larger ones.
  if (!ok && l.grad_accum_steps > 1) fails_from = std::min(fails_from, l.micro_batch_size);
  // The plan's own estimate, reported as it is.
  if (ok) fitting_.emplace(std::tuple_cat(memory_key(l), std::make_tuple(l.num_gpus, l.micro_batch_size)), e);
  return ok;
}

double Planner::threshold(std::int64_t gpus) const {
  (void)gpus;  // the count being searched: its best so far is kept in best_here_
  const std::size_t top = static_cast<std::size_t>(std::max(1, options_.top));
  const double kth = top_metrics_.size() >= top ? top_metrics_[top - 1] : kInfinity;
  return std::max(best_here_, kth);
}

void Planner::keep(const Candidate& c) {
  best_here_ = std::min(best_here_, c.metric);
  found_.push_back(c);
  auto best = best_per_count_.find(c.layout.num_gpus);
  if (best == best_per_count_.end() || c.metric < best->second.metric) best_per_count_[c.layout.num_gpus] = c;
  // The threshold counts families (family_of): the best metric of each, the `top` best kept.
  auto [family, added] = family_best_.try_emplace(family_of(c.layout), c.metric);
  if (!added) {
    if (family->second <= c.metric) return;
    const auto old = std::lower_bound(top_metrics_.begin(), top_metrics_.end(), family->second);
    if (old != top_metrics_.end() && *old == family->second) top_metrics_.erase(old);
    family->second = c.metric;
  }
  top_metrics_.insert(std::upper_bound(top_metrics_.begin(), top_metrics_.end(), c.metric), c.metric);
  if (top_metrics_.size() > static_cast<std::size_t>(std::max(1, options_.top))) top_metrics_.pop_back();
}

// The engines a plan may run on: the one the configuration's framework names (Megatron-LM for
// megatron and megatron_te, torchtitan, torchtune, DeepSpeed), else any of the five; less those
// that refuse the configuration for what no layout changes (LoRA under Megatron-LM or
// torchtitan, frozen blocks, Q-GaLore's INT8 weights). A plan mixing what no one engine runs
// (Megatron's FP8 recipe with torchtitan's op-level checkpointing and DeepSpeed's offload) is
// not a plan anyone can launch.
void Planner::choose_engines(PlanResult& r) {
  std::vector<Engine> named;
  switch (base_.training.implementation.framework) {
    case Framework::kMegatron:
    case Framework::kMegatronTe: named = {Engine::kMegatron}; break;
    case Framework::kTorchtitan: named = {Engine::kTorchtitan}; break;
    case Framework::kTorchtune: named = {Engine::kTorchtune}; break;
    case Framework::kDeepspeed: named = {Engine::kDeepSpeed}; break;
    default:
      named = {Engine::kDeepSpeed, Engine::kFsdp, Engine::kTorchtitan, Engine::kMegatron, Engine::kTorchtune};
  }
  engines_.clear();
  for (Engine e : named) {
    const Export x = export_plan(base_, e);
    if (std::all_of(x.errors.begin(), x.errors.end(), layout_issue)) engines_.push_back(e);
  }
  if (engines_.empty()) {
    r.notes.push_back("no engine memfit exports to runs this configuration: layouts not checked");
  } else if (named.size() == 1) {
    r.notes.push_back(std::string("only layouts ") + to_string(named.front()) + " runs (training.framework)");
  }
}

// Whether an engine of engines_ runs the layout (its export has no refusal about the layout).
bool Planner::runnable(const Layout& l) {
  if (engines_.empty()) return true;
  const RunKey key{static_cast<int>(l.precision), l.num_gpus == 1, l.num_gpus / (l.tensor * l.context) > 1, l.tensor,
                   l.pipeline, l.virtual_stages, l.context,
                   l.expert, l.zero_stage, l.shard_degree, l.sequence_parallel, l.offload_optimizer, l.offload_params,
                   static_cast<int>(l.checkpointing), l.checkpointed_layers};
  auto it = runs_.find(key);
  if (it == runs_.end()) {
    const Config c = config_for(l);
    const bool any = std::any_of(engines_.begin(), engines_.end(),
                                 [&](Engine e) { return !refuses_layout(export_plan(c, e)); });
    it = runs_.emplace(key, any).first;
  }
  return it->second;
}

// A time no layout of the structure beats: its compute and its tensor / context / expert
// communication (the same for every ZeRO variant, and least with the largest micro-batch, which
// has the fewest per-collective latencies), and its bubble (about proportional to the
// micro-batch, so least with the smallest). Data-parallel communication, pipeline sends and the
// optimizer step only add.
double Planner::time_bound(const Structure& s, std::int64_t gpus) const {
  StepTimeParts p;
  if (!(step_seconds(model_, layout(s, Variant{}, gpus, s.batches.back()), &p) < kInfinity)) return kInfinity;
  const double bubble = p.pipeline_bubble_s * double(s.batches.front()) / double(s.batches.back());
  return p.compute_s + p.tensor_parallel_s + p.context_parallel_s + p.expert_parallel_s + bubble;
}

// One GPU count, best first: structures are opened (every variant × micro-batch timed) in the
// order of their time bound, and their layouts tried from the fastest of all opened ones. A
// structure is opened before any layout slower than its bound is tried, so layouts are tried in
// exactly increasing step time: the first that fits is the count's best, and every full estimate
// goes to a layout that could still be among the plans. Memory: a variant is held to its bound
// once, when its structure is opened, each layout to its own bound, then the estimate without
// the allocator replay (which only adds), then the full estimate.
void Planner::search_gpu_count(std::int64_t gpus) {
  best_here_ = kInfinity;
  std::vector<Structure> list = structures(gpus);
  std::int64_t layouts_here = 0;
  for (Structure& s : list) {
    s.batches = micro_batches(s, gpus);
    s.variant_count = variants(s, gpus).size();
    s.compute_bound_s = s.batches.empty() ? kInfinity : time_bound(s, gpus);
    layouts_here += static_cast<std::int64_t>(s.batches.size() * s.variant_count);
  }
  // The structures not yet opened, least bound first and ties in enumeration order: a heap, since
  // most are never opened (a sorted list costs more than the few pops).
  std::vector<std::uint32_t> unopened(list.size());
  for (std::size_t i = 0; i < unopened.size(); ++i) unopened[i] = static_cast<std::uint32_t>(i);
  const auto opens_later = [&](std::uint32_t a, std::uint32_t b) {
    if (list[a].compute_bound_s != list[b].compute_bound_s) return list[a].compute_bound_s > list[b].compute_bound_s;
    return a > b;
  };
  std::make_heap(unopened.begin(), unopened.end(), opens_later);
  Frontier frontier(list);
  std::int64_t tried = 0;
  while (true) {
    const double limit = threshold(gpus);
    while (!unopened.empty() && metric(list[unopened.front()].compute_bound_s, gpus) < limit &&
           (frontier.empty() || metric(list[unopened.front()].compute_bound_s, gpus) <= frontier.top().metric)) {
      std::pop_heap(unopened.begin(), unopened.end(), opens_later);
      const std::uint32_t index = unopened.back();
      unopened.pop_back();
      open(frontier, index, gpus);
    }
    if (frontier.empty() || frontier.top().metric >= limit) break;
    const Item item = frontier.pop();
    ++tried;
    if (frontier.kept[item.structure]) continue;
    if (try_item(frontier, item, gpus)) frontier.kept[item.structure] = true;
  }
  counts_.layouts += layouts_here;
  counts_.pruned_by_time += layouts_here - tried - frontier.decided;  // never tried: slower than what was found
}

// Times every variant × micro-batch of a structure into the frontier, except the variants whose
// memory bound already rules out every micro-batch: those are decided here, untimed (most
// variants of a large model on few GPUs; they would only have been popped to be dropped).
void Planner::open(Frontier& f, std::uint32_t index, std::int64_t gpus) {
  const Structure& s = f.structures[index];
  f.slot[index] = static_cast<std::uint32_t>(f.opened.size());
  Opened& o = f.opened.emplace_back();
  o.variants = variants(s, gpus);
  const Variants& list = o.variants;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (below_memory_bound(s, list[i], gpus, s.batches)) {
      counts_.pruned_by_memory += static_cast<std::int64_t>(s.batches.size());
      f.decided += static_cast<std::int64_t>(s.batches.size());
      continue;
    }
    // std::map's nodes stay put as it grows: the pointer holds for the whole search.
    o.fails_from[i] = &fails_from_.emplace(memory_key(s, list[i]), std::numeric_limits<std::int64_t>::max()).first->second;
    for (std::size_t k = 0; k < s.batches.size(); ++k) {
      const double seconds = step_seconds(model_, layout(s, list[i], gpus, s.batches[k]));
      ++counts_.timed;
      if (seconds < kInfinity) {
        f.push({metric(seconds, gpus), index, static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(k)});
      }
    }
  }
}

// Whether a layout fits (its variant passed its bound when the structure was opened).
bool Planner::try_item(Frontier& f, const Item& item, std::int64_t gpus) {
  const Structure& s = f.structures[item.structure];
  const Opened& o = f.opened[f.slot[item.structure]];
  const Layout l = layout(s, o.variants[item.variant], gpus, s.batches[item.batch]);
  bool unrunnable = false;
  if (!fits(l, *o.fails_from[item.variant], unrunnable)) {
    ++(unrunnable ? counts_.not_runnable : counts_.pruned_by_memory);
    return false;
  }
  keep({l, item.metric * (options_.rank_by == RankBy::kCost ? 1.0 / double(gpus) : 1.0), item.metric});
  return true;
}

Plan Planner::finish(const Candidate& c) {
  Plan p;
  p.config = config_for(c.layout);
  // Every kept layout was found to fit by its full estimate; that estimate is the one reported.
  const auto found = fitting_.find(std::tuple_cat(memory_key(c.layout), std::make_tuple(c.layout.num_gpus,
                                                                                         c.layout.micro_batch_size)));
  p.estimate = found != fitting_.end() ? found->second : estimate(p.config);
  p.time = step_time(model_, c.layout);
  return p;
}

// The global batch, in sequences: as given, else the configuration's when it gives every GPU of
// the largest count at least one sequence, else the default for the goal.
std::int64_t global_sequences(const Config& c, const PlanOptions& o, std::int64_t min_gpus, std::int64_t max_gpus,
                              PlanResult& r) {
  const Training& t = c.training;
  const std::int64_t data = c.parallel.num_gpus / (c.parallel.tensor * c.parallel.pipeline * c.parallel.context);
  std::int64_t tokens = o.global_batch_tokens;
  if (tokens <= 0) {
    tokens = t.micro_batch_size * t.grad_accum_steps * data * t.seq_len;
    if (tokens / t.seq_len >= max_gpus) {
      r.notes.push_back("global batch not given: the configuration's " + detail::group_digits(tokens) +
                        " tokens (set global_batch_tokens)");
    } else {
      tokens = resolved_goal(t) == Goal::kPretrain ? kPretrainBatchTokens : kFinetuneBatchTokens;
      r.notes.push_back("global batch not given: " + detail::group_digits(tokens) + " tokens (the default for the goal; "
                        "set global_batch_tokens)");
    }
  }
  std::int64_t sequences = std::max<std::int64_t>(1, tokens / t.seq_len);
  if (sequences * t.seq_len != tokens) {
    r.notes.push_back("global batch rounded to whole sequences: " + detail::group_digits(sequences * t.seq_len) + " tokens");
  }
  // A batch the planner chose for one GPU count that does not divide it (6, 12, 24 GPUs) is rounded
  // up to a multiple of it, so that its data-parallel ranks share the batch evenly.
  if (o.global_batch_tokens <= 0 && min_gpus == max_gpus && sequences % min_gpus != 0) {
    sequences += min_gpus - sequences % min_gpus;
    r.notes.push_back("global batch rounded up to " + detail::group_digits(sequences) + " sequences (" +
                      detail::group_digits(sequences * t.seq_len) + " tokens), a multiple of the " +
                      detail::group_digits(min_gpus) + " GPUs");
  }
  return sequences;
}

// What every search shares: the global batch, the precisions and checkpointing modes to try.
void Planner::setup(std::int64_t lo, std::int64_t hi, PlanResult& r) {
  (void)lo;
  global_sequences_ = global_sequences(base_, options_, lo, hi, r);
  choose_engines(r);
  r.global_batch_tokens = global_sequences_ * base_.training.seq_len;
  precisions_ = precisions_for(base_, gpu_, options_.keep_precision);
  // Megatron's selective recomputation drops eager attention's scores; FlashAttention stores none,
  // so with it selective saves nothing over none and only adds the recomputed attention.
  checkpointing_ = {Checkpointing::kNone, Checkpointing::kSelectiveOp, Checkpointing::kFull};
  if (resolve_implementation(base_).attention == AttentionImpl::kEager) {
    checkpointing_.push_back(Checkpointing::kSelective);
  }
}

std::vector<Layout> Planner::space(std::int64_t gpus) {
  PlanResult r;
  setup(gpus, std::max(gpus, options_.gpus_max), r);
  std::vector<Layout> out;
  for (Structure& s : structures(gpus)) {
    s.batches = micro_batches(s, gpus);
    for (const Variant& v : variants(s, gpus)) {
      for (std::int64_t b : s.batches) {
        const Layout l = layout(s, v, gpus, b);
        if (runnable(l)) out.push_back(l);
      }
    }
  }
  return out;
}

PlanResult Planner::run() {
  PlanResult r;
  const std::int64_t lo = options_.gpus_min > 0 ? options_.gpus_min : base_.parallel.num_gpus;
  const std::int64_t hi = std::max(lo, options_.gpus_max > 0 ? options_.gpus_max : lo);
  setup(lo, hi, r);
  if (resolved_goal(base_.training) == Goal::kPretrain && is_peft(base_)) {
    r.notes.push_back("the goal is pre-training but the configuration trains LoRA adapters; planned as given");
  }
  if (!(options_.step_time.train_tokens > 0)) {
    std::string why;
    const double tokens = default_train_tokens(base_, params_, &why);
    r.notes.push_back("tokens to train not given: " + detail::group_digits(static_cast<std::int64_t>(tokens)) + " (" +
                      why + "; set train_tokens)");
  }
  // The step-time model holds the tokens to train, given or defaulted.
  if (double(r.global_batch_tokens) > model_.options.train_tokens) {
    r.notes.push_back("one step covers all the tokens to train");
  }
  for (std::int64_t gpus : gpu_counts(lo, hi, per_node_)) search_gpu_count(gpus);
  std::stable_sort(found_.begin(), found_.end(), [](const Candidate& a, const Candidate& b) { return a.metric < b.metric; });
  const std::size_t top = static_cast<std::size_t>(std::max(1, options_.top));
  std::set<FamilyKey> listed;
  for (std::size_t i = 0; i < found_.size() && r.plans.size() < top; ++i) {
    if (listed.insert(family_of(found_[i].layout)).second) r.plans.push_back(finish(found_[i]));
  }
  for (const auto& [gpus, c] : best_per_count_) r.best_per_gpu_count.push_back(finish(c));
  if (found_.empty()) {
    r.notes.push_back(std::string(engines_.empty() ? "no layout" : "no layout that an engine runs") + " fits " +
                      std::string(gpu_.name) + " within the budget on " + detail::group_digits(lo) +
                      (hi > lo ? "–" + detail::group_digits(hi) : "") + (hi == 1 ? " GPU" : " GPUs") +
                      (counts_.layouts == 0 ? " (none was tried: no data-parallel degree of these GPU counts divides "
                                              "the global batch of " + detail::group_digits(global_sequences_) +
                                              " sequences; set global_batch_tokens to a multiple of the GPU count)"
                                            : ""));
  }
  r.counts = counts_;
  return r;
}

}  // namespace

PlanResult plan(const Config& config, const PlanOptions& options) {
  PlanResult r;
  r.errors = validate(config);
  if (options.gpus_min < 0 || options.gpus_max < 0 || options.gpus_max > 1'000'000 ||
      (options.gpus_max > 0 && options.gpus_min > options.gpus_max)) {
    r.errors.push_back({"gpus_max", "must be at least gpus_min, and at most 1,000,000"});
  }
  if (!r.errors.empty()) return r;
  return Planner(config, options).run();
}

std::vector<Layout> plan_space(const Config& config, const PlanOptions& options, std::int64_t gpus) {
  if (!validate(config).empty()) return {};
  return Planner(config, options).space(gpus);
}

std::vector<Issue> read_plan_options(const Json& json, PlanOptions& o) {
  std::vector<Issue> errors;
  if (!json.is_object()) return {{"(options)", "must be a JSON object"}};
  const auto integer = [&](const std::string& key, const Json& v, std::int64_t lo, std::int64_t hi) -> std::int64_t {
    const auto n = v.as_exact_integer();
    if (!v.is_number() || !n || *n < lo || *n > hi) {
      // As the configuration's fields say it: grouped digits, and what was given.
      const std::string given = v.is_string() ? "\"" + v.as_string().substr(0, 40) + "\"" : v.dump().substr(0, 40);
      errors.push_back({key, "must be an integer from " + detail::group_digits(lo) + " to " + detail::group_digits(hi) +
                                 "; got " + given});
      return lo;
    }
    return *n;
  };
  for (const auto& [key, v] : json.members()) {
    if (key == "gpus_min") o.gpus_min = integer(key, v, 1, 1'000'000);
    else if (key == "gpus_max") o.gpus_max = integer(key, v, 1, 1'000'000);
    else if (key == "global_batch_tokens") o.global_batch_tokens = integer(key, v, 1, std::int64_t{1} << 40);
    else if (key == "top") o.top = static_cast<int>(integer(key, v, 1, 1000));
    else if (key == "train_tokens" && v.is_number() && v.as_double() > 0 && v.as_double() < 1e18) {
      o.step_time.train_tokens = v.as_double();
    } else if (key == "train_tokens") {
      errors.push_back({key, "must be a number of tokens above 0"});
    } else if (key == "rank_by" && v.is_string() && (v.as_string() == "step_time" || v.as_string() == "cost")) {
      o.rank_by = v.as_string() == "cost" ? RankBy::kCost : RankBy::kStepTime;
    } else if (key == "rank_by") {
      errors.push_back({key, "must be step_time or cost"});
    } else if ((key == "keep_precision" || key == "tp_comm_overlap") && v.is_bool()) {
      (key == "keep_precision" ? o.keep_precision : o.step_time.tp_comm_overlap) = v.as_bool();
    } else {
      errors.push_back({key, v.is_bool() || key == "keep_precision" || key == "tp_comm_overlap"
                                 ? "must be true or false"
                                 : "is not a planner option (gpus_min, gpus_max, global_batch_tokens, train_tokens, "
                                   "top, rank_by, keep_precision, tp_comm_overlap)"});
    }
  }
  return errors;
}

namespace {

// The memory of a plan, from its full estimate.
void memory_json(const Estimate& e, Json& j) {
  j.set("peak_allocated_bytes", Json::integer(e.peak_allocated_bytes.value()));
  j.set("peak_reserved_bytes", Json::integer(e.peak_reserved_bytes.value()));
  j.set("device_total_bytes", Json::integer(e.device_total_bytes.value()));
  j.set("fits", fit_to_json(e.fit));
}

// The fields a plan sets, as a patch on the configuration it was planned from (patch.hpp).
Json layout_patch(const Config& c) {
  const Json all = config_to_json(c);
  Json patch = Json::object();
  Json parallel = *all.find("parallel");
  patch.set("parallel", std::move(parallel));
  Json training = Json::object();
  for (const char* key : {"precision", "checkpointing", "micro_batch_size", "grad_accum_steps"}) {
    training.set(key, *all.find("training")->find(key));
  }
  patch.set("training", std::move(training));
  return patch;
}

}  // namespace

Json plan_to_json(const Plan& p) {
  Json j = step_time_to_json(p.time);
  j.set("config", config_to_json(p.config));
  memory_json(p.estimate, j);
  j.set("breakdown", breakdown_to_json(p.estimate.breakdown));
  j.set("phases", phases_to_json(p.estimate.phases));
  return j;
}

// A GPU count's best plan, briefly: the patch that makes it, its memory and its time.
Json plan_summary_json(const Plan& p) {
  Json j = Json::object();
  j.set("num_gpus", Json::integer(p.config.parallel.num_gpus));
  j.set("patch", layout_patch(p.config));
  memory_json(p.estimate, j);
  const Json t = step_time_to_json(p.time);
  for (const char* key : {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu", "train_time_s", "gpu_hours",
                          "cost_usd"}) {
    if (const Json* v = t.find(key)) j.set(key, *v);
  }
  return j;
}

Json plan_result_to_json(const PlanResult& r) {
  Json j = Json::object();
  j.set("ok", Json::boolean(r.ok()));
  j.set("errors", issues_to_json(r.errors));
  if (!r.ok()) return j;
  j.set("global_batch_tokens", Json::integer(r.global_batch_tokens));
  Json plans = Json::array();
  for (const Plan& p : r.plans) plans.push(plan_to_json(p));
  j.set("plans", std::move(plans));
  Json per_count = Json::array();
  for (const Plan& p : r.best_per_gpu_count) per_count.push(plan_summary_json(p));
  j.set("best_per_gpu_count", std::move(per_count));
  Json search = Json::object();
  search.set("layouts", Json::integer(r.counts.layouts));
  search.set("timed", Json::integer(r.counts.timed));
  search.set("pruned_by_time", Json::integer(r.counts.pruned_by_time));
  search.set("pruned_by_memory", Json::integer(r.counts.pruned_by_memory));
  search.set("not_runnable", Json::integer(r.counts.not_runnable));
  search.set("quick_estimates", Json::integer(r.counts.quick_estimates));
  search.set("estimates", Json::integer(r.counts.estimates));
  j.set("search", std::move(search));
  Json notes = Json::array();
  for (const std::string& n : r.notes) notes.push(Json::string(n));
  j.set("notes", std::move(notes));
  return j;
}

}  // namespace memfit
