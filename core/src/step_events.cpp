#include "step_events.hpp"

#include <algorithm>
#include <array>

#include "finetune.hpp"
#include "memfit/implementation.hpp"
#include "optimizer_states.hpp"
#include "phases.hpp"

namespace memfit {

namespace {

// Requests beyond this many bytes, or steps beyond this many layers or tensors, are not replayed:
// an absurd configuration, where the fixed fragmentation factor stands in. The largest real models
// hold about 130 layers on a GPU and a few thousand parameter tensors.
constexpr std::int64_t kLargestReplayedBytes = std::int64_t{1} << 50;
constexpr std::int64_t kMostReplayedLayers = 512;
constexpr std::int64_t kMostReplayedTensors = 100'000;

// The allocator and the live tensors of the replay, by id. PyTorch's caching allocator serves a
// stream only from segments made for that stream (a block freed on one stream is not reused on
// another: CUDACachingAllocator's pools are keyed by stream), so what an FSDP unit gathers on its
// unshard stream (FSDP1's unsharded flat parameter, FSDP2's all-gather output) is a second pool,
// and the gradient shards, made on FSDP1's post-backward stream or FSDP2's reduce-scatter stream, a
// third: the step reserves all.
class Replay {
 public:
  enum Stream { kCompute = 0, kUnshard = 1, kReduce = 2, kStreams = 3 };

  Replay(SegmentMode segments, Bytes capacity)
      : pools_{CachingAllocator(options(segments, capacity)), CachingAllocator(options(segments, capacity)),
               CachingAllocator(options(segments, capacity))},
        capacity_(capacity) {}

  int take(Bytes bytes) { return take_in(kCompute, bytes); }
  // On the unshard / all-gather stream.
  int take_side(Bytes bytes) { return take_in(kUnshard, bytes); }
  // On FSDP1's post-backward stream (_post_backward_hook runs _reduce_grad under it), or FSDP2's
  // reduce-scatter stream (foreach_reduce makes its output there).
  int take_reduce(Bytes bytes) { return take_in(kReduce, bytes); }
  void give(int id) {
    if (id >= 0) pool(id).free(handles_[static_cast<std::size_t>(id)].handle);
  }
  void give(std::vector<int>& ids) {
    for (int id : ids) give(id);
    ids.clear();
  }
  // Freed on the CPU while another stream still uses it (CachingAllocator::free_recorded).
  void give_recorded(int id) {
    if (id >= 0) pool(id).free_recorded(handles_[static_cast<std::size_t>(id)].handle);
  }
  void synchronize() {
    for (CachingAllocator& a : pools_) a.synchronize_and_free_events();
  }
  // Allocates each of `sizes` and appends the ids.
  void take(const std::vector<Bytes>& sizes, std::vector<int>& ids) {
    for (Bytes b : sizes) ids.push_back(take(b));
  }
  void mark(const char* name, const char* label) { marks_.push_back({name, label, allocated()}); }

  bool failed() const { return failed_; }
  const CachingAllocator& allocator() const { return pools_[kCompute]; }
  // mallocs that found the card full and freed the cache to retry, every stream's pool.
  std::int64_t retries() const {
    std::int64_t n = 0;
    for (const CachingAllocator& a : pools_) n += a.stats().alloc_retry_count.value();
    return n;
  }
  // All pools together, at their joint high points.
  Bytes peak_allocated_bytes() const { return Bytes{peak_allocated_}; }
  Bytes peak_reserved_bytes() const { return Bytes{peak_reserved_}; }
  Bytes peak_request_bytes() const { return peak_request_; }
  int peak_stage() const { return peak_stage_; }
  std::vector<Phase>& marks() { return marks_; }

 private:
  struct Live {
    Handle handle;
    int stream;
  };
  static AllocatorOptions options(SegmentMode segments, Bytes capacity) {
    AllocatorOptions o;
    o.segment_mode = segments;
    o.timeline_stride = 0;
    if (capacity.value() > 0) o.device_capacity_bytes = capacity;
    return o;
  }
  Bytes allocated() const {
    Bytes sum{0};
    for (const CachingAllocator& a : pools_) sum += a.allocated_bytes();
    return sum;
  }
  Bytes reserved() const {
    Bytes sum{0};
    for (const CachingAllocator& a : pools_) sum += a.reserved_bytes();
    return sum;
  }
  CachingAllocator& pool(int id) { return pools_[handles_[static_cast<std::size_t>(id)].stream]; }
  int take_in(int stream, Bytes bytes) {
    if (bytes.overflow() || bytes.value() > kLargestReplayedBytes) failed_ = true;
    if (failed_ || bytes.value() <= 0) return -1;
    CachingAllocator& a = pools_[stream];
    // The streams' pools draw on one card: each may map what the others do not hold, and when the
    // card is full PyTorch's release_cached_blocks frees the cached segments of every stream before
    // it gives up.
    const auto fit_to_card = [&] {
      if (capacity_.value() > 0) a.set_device_capacity(max(Bytes{0}, capacity_ - (reserved() - a.reserved_bytes())));
    };
    fit_to_card();
    const std::int64_t reserved_before = reserved().value();
    Handle h = a.allocate(bytes);
    if (!h.ok() && capacity_.value() > 0 && h.error == AllocError::kOutOfMemory) {
      for (int other = 0; other < kStreams; ++other) {
        if (other != stream) pools_[other].empty_cache();
      }
      fit_to_card();
      h = a.allocate(bytes);
    }
    if (!h.ok()) {
      failed_ = true;
      return -1;
    }
    peak_allocated_ = std::max(peak_allocated_, allocated().value());
    const std::int64_t now = reserved().value();
    if (now > peak_reserved_) {
      peak_reserved_ = now;
      // The request named is the last one at a new high that cut a large segment: a small-pool
      // 2 MiB segment on top of the high point says nothing about why the reserve is high.
      if (now - reserved_before >= kLargeBufferBytes.value() || peak_request_.value() == 0) {
        peak_request_ = bytes;
        peak_stage_ = static_cast<int>(marks_.size() % 3);  // three marks per micro-batch
      }
    }
    handles_.push_back({h, stream});
    return static_cast<int>(handles_.size() - 1);
  }

  std::array<CachingAllocator, kStreams> pools_;
  Bytes capacity_;
  std::vector<Live> handles_;
  std::vector<Phase> marks_;
  bool failed_ = false;
  std::int64_t peak_allocated_ = 0, peak_reserved_ = 0;
  Bytes peak_request_{0};
  int peak_stage_ = 0;
};

// Sizes that split `total` bytes in proportion to `weights` (each a tensor's element count):
// the replay keeps every byte total the estimate computed and takes its tensor sizes from the
// model's shapes.
std::vector<Bytes> split(Bytes total, const std::vector<Count>& weights) {
  Count sum = 0;
  for (Count w : weights) sum += w;
  std::vector<Bytes> out;
  if (sum.value() <= 0 || total.value() <= 0) return out;
  for (Count w : weights) out.push_back(mul_div(total, w, sum));
  return out;
}

// The element counts of the tensors one GPU holds, in module order: the layer groups per layer,
// the rest (embeddings, final norm, head) on their own. Routed experts are one stacked tensor
// per projection and layer (transformers' fused MoE experts). LoRA: the adapters' A and B.
struct Tensors {
  std::vector<Count> outside;                // embeddings, final norm, head
  std::vector<std::vector<Count>> layers;    // per local layer
  std::vector<Count> all() const {
    std::vector<Count> v = outside;
    for (const auto& l : layers) v.insert(v.end(), l.begin(), l.end());
    return v;
  }
};

// A group outside the blocks this GPU holds `held` tensors of, `each` elements apiece: one tensor,
// or a trained vision tower's one per block (up to 256, then merged), as its frozen tensors are
// held (simulate's weights).
void push_outside(Tensors& t, const TensorGroup& g, Count each, Count held) {
  const std::int64_t pieces = is_vision(g.component) ? std::min<std::int64_t>(held.value(), 256) : 1;
  for (std::int64_t k = 0; k < pieces && held.value() > 0; ++k) t.outside.push_back(each * held / pieces);
}

Tensors local_tensors(const ParameterCount& params, const Placement& p) {
  Tensors t;
  const Count layers = p.dense_layers + p.moe_layers;
  if (layers.value() > kMostReplayedLayers) return t;
  t.layers.resize(static_cast<std::size_t>(std::max<std::int64_t>(0, layers.value())));
  for (const TensorGroup& g : params.groups) {
    const Count each = g.elements_each() / p.tensor;
    if (g.layer == LayerKind::kNone) {
      push_outside(t, g, each, p.held(params, g));
      continue;
    }
    const Count per_layer = g.component == Component::kExperts ? params.per_layer(g) / p.expert : params.per_layer(g);
    const bool moe = g.layer == LayerKind::kMoe;
    const Count first = moe ? p.dense_layers : Count(0);
    const Count count = moe ? p.moe_layers : p.dense_layers;
    const bool stacked = g.component == Component::kExperts;
    for (std::int64_t i = 0; i < count.value() && static_cast<std::size_t>(first.value() + i) < t.layers.size(); ++i) {
      if (!params.in_layer(g, first.value() + i)) continue;
      auto& layer = t.layers[static_cast<std::size_t>(first.value() + i)];
      if (stacked) layer.push_back(each * per_layer);
      else for (std::int64_t k = 0; k < per_layer.value(); ++k) layer.push_back(each);
    }
  }
  return t;
}

// The tensors that train when only some blocks do (training.finetune.trainable_layers): the top
// blocks' share of this GPU's layers, and the embeddings or head where they train.
Tensors trained_tensors(const Config& c, const ParameterCount& params, const Placement& p, const Tensors& model) {
  Tensors t;
  const ParameterCount view = trained_view(c, params);
  for (std::size_t i = 0; i < params.groups.size(); ++i) {
    const TensorGroup& g = params.groups[i];
    if (g.layer == LayerKind::kNone && view.groups[i].count.value() > 0) {
      push_outside(t, g, g.elements_each() / p.tensor, p.held(params, g));
    }
  }
  const std::int64_t layers = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t all = std::max<std::int64_t>(1, c.model.num_hidden_layers);
  const std::int64_t trained = std::min(layers, (c.training.finetune.trainable_layers * layers + all - 1) / all);
  t.layers.resize(model.layers.size());
  for (std::int64_t i = layers - trained; i < layers; ++i) {
    t.layers[static_cast<std::size_t>(i)] = model.layers[static_cast<std::size_t>(i)];
  }
  return t;
}

// A parameter-efficient method's trainable tensors on this GPU (its adapters, prompts, ...), not
// tied to layers: their gradients arrive with the first layers' backward (they are small).
Tensors local_adapters(const Config& c, const ParameterCount& params, const Placement& p) {
  Tensors t;
  const PeftParameters peft = peft_parameters(c, local_parameters(params, p));
  for (const Shape& s : peft.trainable) {
    for (std::int64_t k = 0; k < s.count.value() && t.outside.size() < 20'000; ++k) t.outside.push_back(s.elements_each());
  }
  return t;
}

// `bytes` split as one block's terms are (layer_terms), the whole when there are none.
std::vector<Bytes> layer_saved_split(const ActivationModel& act, Bytes bytes) {
  if (act.layer_terms.empty()) return {bytes};
  std::vector<Count> weights;
  for (const NamedBytes& t : act.layer_terms) weights.push_back(Count(t.bytes.value()));
  return split(bytes, weights);
}

// One layer's saved tensors: the block terms scaled so that the layers hold the estimate's
// saved bytes (full checkpointing of every block keeps one tensor, the block's input; with some
// blocks left out, the average block in the terms' proportions).
std::vector<Bytes> layer_saved(const ActivationModel& act, Count layers, bool every_layer_recomputed) {
  const Bytes body = act.saved_bytes - act.embedding_saved_bytes - act.retained_bytes;
  const Bytes per_layer = layers.value() > 0 ? body / layers.value() : Bytes{0};
  if (every_layer_recomputed) return {per_layer};
  return layer_saved_split(act, per_layer);
}

struct Program {
  Tensors model, trainable;
  std::vector<Bytes> weights, master, states, gradients;  // per tensor (trainable order for the last three)
  std::vector<Bytes> reducer_buckets;  // torch DDP's all-reduce buckets (bucket_cap_mb, 25 MiB each)
  std::vector<Bytes> orphan_gradients;  // gradients no step clears (StaticBytes::orphan_gradients)
  Bytes zero_reduce_bucket;  // DeepSpeed ZeRO-3's gradient bucket, one block for the run
  std::vector<Bytes> saved, copies_per_layer, temporaries;
  Bytes gathered, embedding_saved;
  // One block's backward working memory: the block's recomputed tensors (its own sizes, as forward
  // made them), then the gradients of its largest intermediates.
  std::vector<Bytes> working;
  std::size_t working_recomputed = 0;  // how many of `working` are the recomputed tensors
  // What the block's PEFT layers allocate for a moment (DoRA's weight norm): in forward, and as the
  // block is recomputed, before its gradients.
  std::vector<Bytes> forward_temporaries, recompute_temporaries, backward_temporaries;
  FsdpUnitGradients unit_gradients;  // FSDP's unsharded gradients of a block (phases.hpp)
  Bytes root_gathered;  // FSDP's root unit, gathered from forward's start to backward's end
  Bytes root_embedding;  // accelerate's FSDP2 embedding unit: gathered for its forward, and again
  bool root_embedding_in_backward = false;  // for its backward where gradient reaches its output
  Bytes kv_keys, kv_values;  // per layer (training.use_cache)
  bool kv_cache_kept = false;
  // The rest of a kept cache, all layers: the keys and values attention saved, which the loop's
  // outputs hold once backward lets the saved tensors go (ActivationModel::kv_cache_total_bytes).
  Bytes kv_aliased;
  Bytes retained;  // per layer: ctx attributes backward leaves (ActivationModel::retained_bytes)
  bool retained_until_next_forward = false;
  bool forward_only = false;  // MeZO: the block's tensors go as it finishes; no backward
  bool gathers_run_ahead = false;  // FSDP1 without its rate limiter (fsdp_gathers_run_ahead)
  // Where a unit's gathered parameters come from (a separate stream's pool): FSDP1 allocates the
  // unsharded flat parameter on its unshard stream (_runtime_utils.py _unshard; _flat_param.py
  // _alloc_padded_unsharded_flat_param); FSDP2 all-gathers into a flat output on its all-gather
  // stream and copies it out into the unsharded parameters on the compute stream
  // (_fully_shard/_fsdp_collectives.py foreach_all_gather, foreach_all_gather_copy_out).
  enum class Gather { kCompute, kUnshardStream, kCopyOut } gather = Gather::kCompute;
  // FSDP1 reduce-scatters each unit's gradient into a new shard on its post-backward stream
  // (_post_backward_hook runs _reduce_grad under state._post_backward_stream; _get_reduce_scatter_tensors
  // makes new_sharded_grad with torch.empty_like there) and keeps it as _saved_grad_shard, which
  // _finalize_params makes the parameter's .grad: the step's gradient shards sit in that stream's
  // pool until zero_grad, where the compute stream cannot reuse them. FSDP2 does the same on its
  // reduce-scatter stream (one flat output a unit, the .grads views of it).
  bool grads_on_reduce_stream = false;
  Bytes reused_head, reused_blocks;  // gathered across forward's end (gathered_across_forward_end)
  const LossModel* loss;
  int states_per_tensor;
  bool grads_persist;  // accumulation: gradients live across micro-batches
  // Deferred gradient sync (defers_gradient_sync): the persistent gradients are the unsharded ones,
  // reduce-scattered into these sharded ones for the step.
  std::vector<Bytes> sharded_gradients;
  bool forward_transients;  // forward allocates each saved tensor beside a temporary (no full recomputation)
  // FSDP1's frozen units under reentrant checkpointing: the top `frozen_unit_blocks` blocks keep
  // their input and its gradient (one block's input each) until backward ends.
  Bytes frozen_unit_input;
  std::int64_t frozen_unit_blocks = 0;
  bool frozen_unit_inputs_offloaded = false;  // the inputs come back from the host: a copy each
};

// Gradients of layer `i`'s trainable tensors (or of the outside ones when i < 0), as sized.
std::vector<Bytes> gradient_slice(const Program& pr, std::int64_t i) {
  if (i >= static_cast<std::int64_t>(pr.trainable.layers.size())) return {};
  std::size_t offset = pr.trainable.outside.size();
  for (std::int64_t k = 0; k < i; ++k) offset += pr.trainable.layers[static_cast<std::size_t>(k)].size();
  const std::size_t n = i < 0 ? pr.trainable.outside.size() : pr.trainable.layers[static_cast<std::size_t>(i)].size();
  if (i < 0) offset = 0;
  std::vector<Bytes> out;
  for (std::size_t k = offset; k < offset + n && k < pr.gradients.size(); ++k) out.push_back(pr.gradients[k]);
  return out;
}

// Blocks alive across phases: ctx attributes of this micro-batch's graph (`retained`) and, when the
// loop holds its outputs, of the previous one's (`retained_before`), which goes when this forward
// has made the loss.
struct GraphKept {
  std::vector<int> retained, retained_before;
  // The previous micro-batch's outputs (its logits, a kept key/value cache) where the loop holds
  // them: they go when this forward has made the loss (the variable is reassigned).
  std::vector<int> outputs_before;
  int reused_head = -1, reused_blocks = -1;
};

// A unit's gathered parameters after it ran: freed, or under FSDP1 without the rate limiter left
// waiting on the compute stream's events (_free_unsharded_flat_param records the compute stream
// on a tensor the unshard stream allocated), which the GPU, behind the CPU, has not reached.
int take_gathered(Replay& r, const Program& pr, Bytes bytes) {
  switch (pr.gather) {
    case Program::Gather::kUnshardStream: return r.take_side(bytes);
    case Program::Gather::kCopyOut: {
      const int flat = r.take_side(bytes);
      const int unsharded = r.take(bytes);
      r.give(flat);
      return unsharded;
    }
    case Program::Gather::kCompute: break;
  }
  return r.take(bytes);
}

void release_gathered(Replay& r, const Program& pr, int gathered) {
  if (pr.gathers_run_ahead) r.give_recorded(gathered);
  else r.give(gathered);
}

void forward(Replay& r, const Program& pr, std::vector<std::vector<int>>& saved, std::vector<int>& copies,
             std::vector<int>& loss_kept, std::vector<int>& outside, GraphKept& graph) {
  outside.push_back(take_gathered(r, pr, pr.root_gathered));
  release_gathered(r, pr, take_gathered(r, pr, pr.root_embedding));
  outside.push_back(r.take(pr.embedding_saved));
  std::vector<int> cache;
  for (auto& layer : saved) {
    const int gathered = take_gathered(r, pr, pr.gathered);
    copies.push_back(r.take(pr.copies_per_layer.empty() ? Bytes{0} : pr.copies_per_layer.front()));
    // Each saved tensor comes out of an op whose other results are temporaries (the scores before
    // the softmax, the matmul output before the bias add, a dtype cast): one transient of the same
    // size, freed once the saved tensor exists. Under checkpointing the block runs again in
    // backward, so forward leaves no holes of its own.
    for (Bytes b : pr.saved) {
      const int transient = pr.forward_transients ? r.take(b) : -1;
      layer.push_back(r.take(b));
      r.give(transient);
    }
    std::vector<int> temporaries;
    r.take(pr.forward_temporaries, temporaries);
    r.give(temporaries);
    graph.retained.push_back(r.take(pr.retained));
    cache.push_back(r.take(pr.kv_keys));  // the keys and values the layer returns
    cache.push_back(r.take(pr.kv_values));
    release_gathered(r, pr, gathered);
  }
  const LossModel& l = *pr.loss;
  graph.reused_blocks = r.take(pr.reused_blocks);
  graph.reused_head = take_gathered(r, pr, pr.reused_head);
  // The logits a loop keeps are part of the loss's forward high point (their own block, which
  // outlives the rest): carved out of what forward holds beyond backward's start, or out of that.
  const Bytes beyond = max(Bytes{0}, l.forward_bytes - l.backward_bytes);
  const Bytes kept_beyond = min(l.kept_bytes, beyond);
  loss_kept.push_back(r.take(max(Bytes{0}, l.backward_bytes - l.head_input_bytes - (l.kept_bytes - kept_beyond))));
  loss_kept.push_back(r.take(l.kept_bytes));
  const int transient = r.take(beyond - kept_beyond);
  r.mark("forward", "End of forward (loss computed)");
  r.give(transient);
  r.give(graph.retained_before);
  r.give(graph.outputs_before);
  // The outputs go with the loss, unless the loop holds them to the step's end.
  if (pr.kv_cache_kept) loss_kept.insert(loss_kept.end(), cache.begin(), cache.end());
  else r.give(cache);
}

void backward(Replay& r, const Program& pr, std::vector<std::vector<int>>& saved, std::vector<int>& copies,
              std::vector<int>& loss_kept, std::vector<int>& outside, std::vector<int>& grads, GraphKept& graph) {
  const LossModel& l = *pr.loss;
  if (pr.forward_only) {  // nothing was saved for a backward pass: the forward's tensors go with it
    for (auto& layer : saved) r.give(layer);
    r.give(copies);
    r.give(outside);
    r.give(loss_kept.front());
    loss_kept.erase(loss_kept.begin());
    r.give(graph.retained);
    release_gathered(r, pr, graph.reused_head);
    r.give(graph.reused_blocks);
    return;
  }
  const int logits_grad = r.take(l.grad_bytes);
  const int dequantized = r.take(l.head_dequant_bytes);  // a quantised head's weight, for its backward matmul
  const int input_grad = r.take(l.head_input_bytes);
  r.give(dequantized);
  r.give(logits_grad);
  r.give(loss_kept.front());
  release_gathered(r, pr, graph.reused_head);  // the head's backward is done: its unit is released
  graph.reused_head = -1;
  const auto take_grads = [&r, &pr, &grads](std::int64_t i) {
    for (Bytes b : gradient_slice(pr, i)) grads.push_back(pr.grads_on_reduce_stream ? r.take_reduce(b) : r.take(b));
  };
  if (!pr.grads_persist && grads.empty()) take_grads(-1);
  std::vector<int> kept_inputs;  // FSDP1's frozen units: the recomputed inputs and their gradients
  int reduce_input = -1;         // FSDP2: the block above's reduce-scatter input
  const std::int64_t blocks = static_cast<std::int64_t>(saved.size());
  for (std::int64_t i = static_cast<std::int64_t>(saved.size()) - 1; i >= 0; --i) {
    const int gathered = take_gathered(r, pr, pr.gathered);
    // The block's recomputed tensors, what its PEFT layers make for a moment as they run again, and
    // what a PEFT layer's backward makes beside the gradient reaching the block, before the block's
    // own gradient tensors (block_backward_working in phases.cpp).
    std::vector<int> working, temporaries;
    const auto recomputed_end = pr.working.begin() + static_cast<std::ptrdiff_t>(pr.working_recomputed);
    r.take(std::vector<Bytes>(pr.working.begin(), recomputed_end), working);
    r.take(pr.recompute_temporaries, temporaries);
    r.give(temporaries);
    r.take(pr.backward_temporaries, temporaries);
    r.give(temporaries);
    r.take(std::vector<Bytes>(recomputed_end, pr.working.end()), working);
    const int unsharded = r.take(pr.unit_gradients.unsharded);  // the unit's gradients as autograd makes them
    if (!pr.grads_persist) take_grads(i);
    // Backward walks the block's ops in reverse: the gradient of each saved tensor's op output is
    // made, used, and dropped as the next one is made.
    int previous = -1;
    for (auto it = pr.saved.rbegin(); it != pr.saved.rend(); ++it) {
      const int grad = r.take(*it);
      r.give(previous);
      previous = grad;
    }
    // The block's last gradient is its input's, made while its working memory is still held; under
    // FSDP1's frozen units it stays, with the input, until backward ends.
    if (i >= blocks - pr.frozen_unit_blocks) {
      auto& layer = saved[static_cast<std::size_t>(i)];
      kept_inputs.insert(kept_inputs.end(), layer.begin(), layer.end());
      layer.clear();
      if (pr.frozen_unit_inputs_offloaded) kept_inputs.push_back(r.take(pr.frozen_unit_input));
      kept_inputs.push_back(r.take(pr.frozen_unit_input));
    }
    r.give(previous);
    r.give(working);
    // The post-backward hook: FSDP2 lets the block above's reduce-scatter input go and copies this
    // block's gradients into a new one; then the unsharded gradients go.
    if (!pr.unit_gradients.reduce_input.is_zero()) {
      r.give(reduce_input);
      reduce_input = r.take(pr.unit_gradients.reduce_input);
    }
    r.give(unsharded);
    r.give(graph.reused_blocks);  // the kept blocks go as their backward passes (all counted at the top one)
    graph.reused_blocks = -1;
    r.give(saved[static_cast<std::size_t>(i)]);
    // A kept cache's keys and values outlive the block's saved tensors: as much stays taken.
    if (!pr.kv_aliased.is_zero()) loss_kept.push_back(r.take(pr.kv_aliased / std::max<std::int64_t>(1, blocks)));
    r.give(copies[static_cast<std::size_t>(i)]);
    release_gathered(r, pr, gathered);
  }
  r.give(reduce_input);  // FSDP2's final callback waits for the last reduce-scatter
  const int embedding = take_gathered(r, pr, pr.root_embedding_in_backward ? pr.root_embedding : Bytes{0});
  r.give(input_grad);
  release_gathered(r, pr, embedding);
  r.give(outside);
  r.mark("backward", "Backward (end)");
  r.give(kept_inputs);  // FSDP1's _finalize_params (the final callback) removes the hooks
  // The loop reads the loss after backward (HF Trainer's NaN filter, a printed or logged loss),
  // which waits for the GPU: what waited on the unshard stream's events is free again.
  if (pr.gathers_run_ahead) r.synchronize();
  // The graph goes after backward, unless the loop holds it with the outputs until the next forward.
  if (pr.retained_until_next_forward) graph.retained_before = std::move(graph.retained);
  else r.give(graph.retained);
  graph.retained.clear();
  copies.clear();
  loss_kept.erase(loss_kept.begin());
}

void optimizer_step(Replay& r, const Program& pr, std::vector<int>& states, std::vector<int>& grads,
                    std::vector<int>& loss_kept, GraphKept& graph) {
  if (states.empty()) {
    for (int k = 0; k < pr.states_per_tensor; ++k) r.take(pr.states, states);  // created at the first step
  }
  std::vector<int> sharded;
  if (!pr.sharded_gradients.empty()) {
    // The last micro-batch reduced the accumulated gradients into their shards, unit by unit.
    r.give(grads);
    r.take(pr.sharded_gradients, sharded);
  }
  std::vector<int> temporaries;
  r.take(pr.temporaries, temporaries);
  r.mark("optimizer_step", "Optimizer step");
  r.give(temporaries);
  if (!pr.sharded_gradients.empty()) {
    r.give(sharded);                // zero_grad(set_to_none=True)
    r.take(pr.gradients, grads);    // the next step's first micro-batches accumulate again
  }
  if (!pr.grads_persist) r.give(grads);  // zero_grad(set_to_none=True)
  // A loop that holds its outputs drops them only when the next forward returns (as the phases
  // count them beside that forward: phases.cpp); elsewhere nothing is left in loss_kept.
  graph.outputs_before.insert(graph.outputs_before.end(), loss_kept.begin(), loss_kept.end());
  loss_kept.clear();
}

// FSDP1 flattens each unit's parameters into one FlatParameter and shards it as one contiguous
// range per rank (torch/distributed/fsdp/_flat_param.py: FlatParamHandle, flatten_tensors_into_flat_param,
// _get_shard: ceil(numel / world) elements each, rank 0 first). What a rank allocates is per unit:
// its weight shard and its gradient shard are one tensor each. The optimizer sees the FlatParameter
// itself (use_orig_params=False) or, with use_orig_params=True (HF Trainer's default: training_args.py
// fsdp_config "use_orig_params", "true"), a view per original parameter that overlaps the rank's
// range (_use_sharded_views): its states and foreach temporaries come per view. Rank 0's, the rank
// whose memory is usually reported. `tensors` (one unit's) becomes rank 0's shard; `views` gains
// the pieces of the original parameters the shard overlaps (the whole shard without views). With
// one shard and views this is FSDP2's unit: its parameters' own shards, one flat gradient.
void flatten_unit(std::vector<Count>& tensors, std::int64_t shards, bool orig_params, std::vector<Count>& views) {
  Count total = 0;
  for (Count n : tensors) total += n;
  const Count chunk = ceil_div(total, Count(shards));
  Count start = 0;
  for (Count n : tensors) {
    const Count overlap = orig_params ? min(start + n, chunk) - start : start.is_zero() ? chunk : Count(0);
    if (overlap.value() > 0) views.push_back(overlap);
    start += n;
  }
  tensors.clear();
  if (chunk.value() > 0) tensors.push_back(chunk);
}

Program program(const Config& c, const ParameterCount& params, const Placement& p, const StaticBytes& st,
                const ActivationModel& act, const LossModel& loss, Bytes weight_copies, Bytes temporaries,
                const PrecisionRecipe& r) {
  Program pr;
  const bool lora = is_peft(c);
  pr.model = local_tensors(params, p);
  pr.trainable = lora ? local_adapters(c, params, p)
                      : trains_some_layers(c) ? trained_tensors(c, params, p, pr.model) : pr.model;
  // The optimizer's tensors (master weights, states, foreach temporaries): per trainable tensor,
  // per FSDP1 view, or per DeepSpeed partition (below). A model that trains whole:
  const bool whole_model = !lora && !trains_some_layers(c);
  std::vector<Count> optimizer_tensors;
  const FsdpSharding fsdp = whole_model ? fsdp_sharding(c, p) : FsdpSharding::kNone;
  if (fsdp != FsdpSharding::kNone) {
    // FSDP1: a flat shard per unit (weights and gradients), the optimizer on its views. FSDP2 keeps
    // each parameter's shard, and its states, as a tensor of its own, but reduce-scatters a unit's
    // gradients into one flat output whose views become their .grad (_fsdp_collectives.py,
    // foreach_reduce: reduce_output, torch.as_strided per parameter).
    const bool fsdp1 = fsdp == FsdpSharding::kFsdp1;
    const std::int64_t shards = fsdp1 ? p.zero_shards : 1;
    const bool views = !fsdp1 || fsdp1_uses_orig_params(c);
    flatten_unit(pr.trainable.outside, shards, views, optimizer_tensors);  // the root unit
    for (auto& layer : pr.trainable.layers) flatten_unit(layer, shards, views, optimizer_tensors);
    if (fsdp1) pr.model = pr.trainable;
  }
  // DeepSpeed's ZeRO optimizers keep the fp32 master partition and its states flat: one tensor per
  // parameter group under ZeRO-1/2 (runtime/zero/stage_1_and_2.py: single_partition_of_fp32_groups),
  // one per sub-group of about sub_group_size elements under ZeRO-3 (stage3.py:
  // fp32_partitioned_groups_flat); the states are zeros_like them.
  if (whole_model && c.training.implementation.framework == Framework::kDeepspeed && c.parallel.zero_stage >= 1) {
    Count local = 0;
    for (Count n : pr.model.all()) local += n;
    local = ceil_div(local, Count(std::max<std::int64_t>(1, p.zero_shards)));
    const Count group = c.parallel.zero_stage >= 3 ? Count(std::max<std::int64_t>(1, c.parallel.zero_sub_group_size)) : local;
    for (Count left = local; left.value() > 0 && optimizer_tensors.size() < 4096; left -= min(left, group)) {
      optimizer_tensors.push_back(min(left, group));
    }
  }
  const std::vector<Count> model = pr.model.all(), trainable = pr.trainable.all();
  if (optimizer_tensors.empty()) optimizer_tensors = trainable;
  std::vector<Count> held = model;
  if (lora) held.insert(held.end(), trainable.begin(), trainable.end());
  pr.weights = split(st.weights - st.vision, held);
  if (st.vision.value() > 0) {
    // The vision tower's tensors, one per tensor up to 256 of a group (its blocks'), then merged.
    std::vector<Count> tower;
    for (const TensorGroup& g : params.vision) {
      const std::int64_t pieces = std::min<std::int64_t>(g.count.value(), 256);
      for (std::int64_t i = 0; i < pieces; ++i) tower.push_back(g.elements() / pieces);
    }
    const std::vector<Bytes> vision = split(st.vision, tower);
    pr.weights.insert(pr.weights.end(), vision.begin(), vision.end());
  }
  pr.master = split(st.master, optimizer_tensors);
  const Optimizer o = c.training.optimizer;
  pr.states_per_tensor = o == Optimizer::kSgd ? 0 : (o == Optimizer::kSgdMomentum || o == Optimizer::kLion) ? 1 : 2;
  pr.states = pr.states_per_tensor > 0 ? split(st.states / pr.states_per_tensor, optimizer_tensors) : std::vector<Bytes>{};
  pr.gradients = split(st.gradients, trainable);
  if (st.reducer_buckets.value() > 0) {
    constexpr std::int64_t kBucketBytes = 25LL << 20;  // DistributedDataParallel's bucket_cap_mb=25
    const std::int64_t n = (st.reducer_buckets.value() + kBucketBytes - 1) / kBucketBytes;
    pr.reducer_buckets = split(st.reducer_buckets, std::vector<Count>(static_cast<std::size_t>(n), Count(1)));
  }
  if (st.orphan_gradients.value() > 0) pr.orphan_gradients = {st.orphan_gradients};
  pr.zero_reduce_bucket = st.zero_reduce_bucket;
  if (st.accumulated_gradients > st.gradients) {
    pr.sharded_gradients = pr.gradients;
    pr.gradients = split(st.accumulated_gradients, trainable);
  }
  // foreach keeps one temporary per tensor at once; the per-parameter loop one at a time.
  if (multi_tensor(resolved_optimizer_impl(c))) pr.temporaries = split(temporaries, optimizer_tensors);
  else pr.temporaries = {temporaries};
  pr.grads_persist = gradients_kept_between_steps(c.training);
  const Count layers = static_cast<std::int64_t>(pr.model.layers.size());
  const bool every_layer = act.every_block_recomputed;
  pr.saved = layer_saved(act, layers, every_layer);
  if (layers.value() > 0 && !weight_copies.is_zero()) pr.copies_per_layer = {weight_copies / layers.value()};
  pr.gathered = gathered_layer_bytes(c, params, p, r);
  // Recomputation allocates the block's tensors one by one, as its forward did: autograd saves them
  // again (torch.utils.checkpoint), so the allocator sees the block's own sizes, not one buffer.
  const Bytes recomputed = min(act.layer_recomputed_bytes, act.layer_backward_working_bytes);
  const bool whole_block = c.training.checkpointing == Checkpointing::kFull ||
                           c.training.checkpointing == Checkpointing::kSelectiveOp;
  if (!recomputed.is_zero()) {
    pr.working = whole_block ? layer_saved_split(act, recomputed) : std::vector<Bytes>{recomputed};
  }
  pr.working_recomputed = pr.working.size();
  pr.forward_temporaries = act.layer_forward_temporaries;
  pr.recompute_temporaries = act.layer_recompute_temporaries;
  pr.backward_temporaries = act.layer_backward_temporaries;
  Bytes gradients = act.layer_backward_working_bytes - recomputed;
  for (const Bytes tensor : act.layer_gradient_tensor_bytes) {
    for (int k = 0; k < 3 && tensor.value() > 0 && gradients >= tensor; ++k) {
      pr.working.push_back(tensor);
      gradients -= tensor;
    }
  }
  pr.working.push_back(gradients);  // what is left (nothing is allocated for zero)
  pr.unit_gradients = fsdp_unit_gradients(c, params, p, r);
  pr.forward_transients = !every_layer;
  pr.embedding_saved = act.embedding_saved_bytes;
  pr.root_gathered = fsdp_root_gathered_bytes(c, params, p, r);
  const FsdpRootUnits root_units = fsdp_root_units(c, params, p, r);
  pr.root_embedding = root_units.embedding;
  pr.root_embedding_in_backward = root_units.embedding_in_backward;
  if (!pr.gathered.is_zero() && runs_torch_data_parallel(c.training.implementation.framework)) {
    pr.gather = runs_fsdp2(c) ? Program::Gather::kCopyOut : Program::Gather::kUnshardStream;
    // FSDP2's reduce-scatter output is made on its reduce-scatter stream, as FSDP1's shards on its
    // post-backward stream: a pool of its own either way.
    pr.grads_on_reduce_stream = pr.sharded_gradients.empty();
  }
  pr.kv_keys = act.kv_cache_key_bytes;
  pr.kv_values = act.kv_cache_value_bytes;
  pr.kv_cache_kept = act.kv_cache_kept;
  pr.kv_aliased = act.kv_cache_kept ? act.kv_cache_total_bytes - act.kv_cache_bytes : Bytes{0};
  if (every_layer) {
    pr.frozen_unit_input = act.frozen_unit_input_bytes;
    pr.frozen_unit_blocks = act.frozen_unit_blocks.value();
    pr.frozen_unit_inputs_offloaded = c.training.activation_offload;
  }
  pr.retained = layers.value() > 0 ? act.retained_bytes / layers.value() : Bytes{0};
  pr.retained_until_next_forward = act.retained_until_next_forward;
  pr.forward_only = forward_only(c.training);
  const ReusedGathered reused = gathered_across_forward_end(c, params, p, r);
  pr.reused_head = reused.head;
  pr.reused_blocks = reused.blocks;
  pr.loss = &loss;
  return pr;
}

// One micro-batch through the replay: forward, backward, and the optimizer step after it.
void micro_batch(Replay& replay, const Program& pr, std::vector<int>& states, std::vector<int>& grads,
                 std::vector<int>& copies, std::vector<int>& loss_kept, GraphKept& graph) {
  std::vector<std::vector<int>> saved(pr.model.layers.size());
  std::vector<int> outside;
  forward(replay, pr, saved, copies, loss_kept, outside, graph);
  backward(replay, pr, saved, copies, loss_kept, outside, grads, graph);
  optimizer_step(replay, pr, states, grads, loss_kept, graph);
}

StepSimulation replay_steps(const Program& full, const std::vector<Program>& earlier,
                            SegmentMode segments, Bytes capacity) {
  StepSimulation out;
  Replay replay(segments, capacity);
  std::vector<int> weights, master, states, grads, copies, loss_kept;
  GraphKept graph;
  replay.take(full.weights, weights);
  replay.take(full.master, master);
  std::vector<int> buckets;
  replay.take(full.reducer_buckets, buckets);
  std::vector<int> orphans;
  replay.take(full.orphan_gradients, orphans);
  replay.take(full.zero_reduce_bucket);
  if (full.grads_persist) replay.take(full.gradients, grads);
  for (const Program& pr : earlier) {
    if (replay.failed()) break;
    micro_batch(replay, pr, states, grads, copies, loss_kept, graph);
  }
  for (int step = 0; step < 2 && !replay.failed(); ++step) {
    if (step == 1) replay.marks().clear();
    micro_batch(replay, full, states, grads, copies, loss_kept, graph);
  }
  if (replay.failed()) return out;
  const AllocatorStats stats = replay.allocator().stats();
  out.peak_allocated_bytes = replay.peak_allocated_bytes();
  out.peak_reserved_bytes = replay.peak_reserved_bytes();
  out.segment_count = stats.peak_segment_count;
  out.alloc_retries = replay.retries();
  out.reserve_peak_request_bytes = replay.peak_request_bytes();
  out.reserve_peak_stage = replay.peak_stage();
  out.timeline = replay.marks();
  out.ok = true;
  return out;
}

}  // namespace

namespace {

// x with x^n = u for u in [0, 1], by bisection on multiplications only (std::pow would bring libm's
// tables into the WebAssembly build: 5 KiB gzipped).
double nth_root(double u, std::int64_t n) {
  if (n <= 1) return u;
  double low = 0.0, high = 1.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (low + high);
    double power = 1.0, base = mid;  // mid^n by squaring
    for (std::int64_t e = n; e > 0; e >>= 1) {
      if (e & 1) power *= base;
      base *= base;
    }
    (power < u ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

}  // namespace

std::vector<std::int64_t> varying_lengths(std::int64_t seq_len, std::int64_t micro_batch) {
  // Deterministic and spread out, in no sorted order: the golden-ratio sequence u over (0, 1), a
  // stand-in for shuffled samples whose lengths spread evenly over [seq_len / 8, seq_len]. Dynamic
  // padding pads a micro-batch to its longest sample (DataCollatorWithPadding and the collators
  // like it), and the longest of b such samples is at or below a fraction f with probability
  // ((f - 1/8) / (7/8))^b: its quantile at u is 1/8 + 7/8 u^(1/b). One sample per micro-batch
  // spreads over the whole range; 64 keep within a few percent of seq_len.
  std::vector<std::int64_t> out;
  if (seq_len < 2) return out;
  constexpr double kGolden = 0.6180339887498949;
  double u = 0.0;
  for (int k = 0; k < kVaryingMicroBatches; ++k) {
    u += kGolden;
    u -= static_cast<double>(static_cast<std::int64_t>(u));
    const double fraction = 0.125 + 0.875 * nth_root(u, micro_batch);
    out.push_back(std::max<std::int64_t>(1, static_cast<std::int64_t>(fraction * static_cast<double>(seq_len))));
  }
  return out;
}

StepSimulation simulate_step(const Config& c, const ParameterCount& params, const Placement& p,
                             const StaticBytes& st, const ActivationModel& act, const LossModel& loss,
                             Bytes weight_copies, Bytes temporaries, const PrecisionRecipe& r, SegmentMode segments,
                             const std::vector<EarlierBatch>& earlier, Bytes capacity) {
  StepSimulation out;
  const Count layers = p.dense_layers + p.moe_layers;
  if (layers.value() > kMostReplayedLayers || layers.overflow()) return out;
  const Program pr = program(c, params, p, st, act, loss, weight_copies, temporaries, r);
  std::size_t tensors = pr.weights.size() + pr.gradients.size() * 2 + pr.sharded_gradients.size() + pr.reducer_buckets.size() +
                        pr.saved.size() * pr.model.layers.size();
  if (tensors > static_cast<std::size_t>(kMostReplayedTensors)) return out;
  std::vector<Program> before;
  for (const EarlierBatch& b : earlier) {
    before.push_back(program(c, params, p, st, b.activations, b.loss, weight_copies, temporaries, r));
  }
  StepSimulation ahead;
  const bool runs_ahead = fsdp_gathers_run_ahead(c, p);
  if (runs_ahead) {
    // The worst case, the CPU a whole step ahead: every gathered unit stays until the loop reads
    // the loss, or until cudaMalloc fails and the allocator synchronizes (release_cached_blocks),
    // so the card bounds the reserve and the step still runs (cudaMalloc retries, not an error).
    Program runahead = pr;
    runahead.gathers_run_ahead = true;
    runahead.gather = Program::Gather::kCompute;  // the pile-up is modelled in one pool
    std::vector<Program> runahead_before = before;
    for (Program& b : runahead_before) {
      b.gathers_run_ahead = true;
      b.gather = Program::Gather::kCompute;
    }
    ahead = replay_steps(runahead, runahead_before, segments, capacity);
  }
  // On a card that fills, the allocator frees its unused cached segments and retries before it
  // fails (release_cached_blocks), so the card bounds what it reserves (a 7B full fine-tune at
  // micro-batch 8 on an A100 80GB: 85 GiB replayed without the bound, 72 with it; fms-acceleration
  // measured 71 GiB in nvidia-smi). Where even that finds no room the unbounded replay stands: the
  // replay's order of tensors is the model's, not the run's, so running out here is no proof that
  // the run does.
  if (capacity.value() > 0 || !before.empty()) out = replay_steps(pr, before, segments, capacity);
  if (!out.ok) {
    const bool ran_out = capacity.value() > 0;
    out = replay_steps(pr, {}, segments, Bytes{0});
    out.ran_out_on_card = ran_out && out.ok;
  }
  if (out.ok && ahead.ok) {
    out.runahead_peak_reserved_bytes = ahead.peak_reserved_bytes;
    out.runahead_peak_allocated_bytes = ahead.peak_allocated_bytes;
  } else if (out.ok && capacity.value() > 0 && runs_ahead) {
    // The step fits when the allocator gives back what waits on the GPU, but the replay that lets
    // the whole step's gathers pile up runs out of room: the pile reached the card, and the space
    // it handed back was in pieces the next gather could not use. The pile's high point is the card.
    out.runahead_peak_reserved_bytes = capacity;
    out.runahead_peak_allocated_bytes = out.peak_allocated_bytes;
  }
  return out;
}

bool fsdp_gathers_run_ahead(const Config& c, const Placement& p) {
  // FSDP1's switch: FSDP2 has no rate limiter to turn off (its all-gather outputs are freed in
  // order, without record_stream).
  return !c.parallel.fsdp_limit_all_gathers && c.parallel.zero_stage >= 3 && p.zero_shards > 1 && runs_fsdp1(c);
}

}  // namespace memfit
