#include "fit.hpp"

#include "step_events.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace memfit {

namespace {

#include "accuracy_band.inc"

// PyTorch's caching allocator rounds every block up to 512 bytes and carves large requests from
// 2 MiB / 20 MiB segments; what it reserves beyond what tensors hold is fragmentation. The seeds
// put it at 10–20 %; measured training loops with expandable segments off typically show 5–15 %
// (see docs/accuracy.md). The point estimate is the middle of the measured range.
constexpr double kFragmentationPoint = 0.08;
constexpr double kFragmentationLow = 0.03;
constexpr double kFragmentationHigh = 0.20;
// What the allocator replay leaves out, as a share of the peak: blocks freed on one stream but
// still in use on another (FSDP / ZeRO all-gathers, NCCL), and library workspaces inside the
// allocator (cuBLAS's 4–32 MiB per stream).
constexpr double kUnreplayedShare = 0.10;

// The CUDA context without lazy module loading (CUDA < 11.7, or CUDA_MODULE_LOADING=EAGER): every
// kernel image is loaded at start. Hugging Face measured 1343 MB (MiB) on a V100 for
// `torch.ones((1, 1)).to("cuda")` ("Efficient Training on a Single GPU"); the device total's
// upper bound allows for it.
constexpr Bytes kEagerContextBytes{1343LL << 20};

// NCCL's buffers for one communicator, allocated by NCCL (cudaMalloc / cuMem), not through
// PyTorch's caching allocator: max_memory_reserved never sees them, nvidia-smi does. Measured on
// 4x A100 with NVLink through PyTorch after one 4 MB all-reduce per group: 544 MiB for a group of
// two GPUs, 688 MiB for a larger one (NVIDIA/nccl#964). They scale with NCCL's channel count,
// which follows the links (more on H100 NVLink, fewer over PCIe); the A100 figures stand for all.
constexpr Bytes kCommunicatorPairBytes{544LL << 20};
constexpr Bytes kCommunicatorGroupBytes{688LL << 20};
// A communicator of one rank connects no rings or trees (NCCL 2.14-2.21 src/init.cc skips them when
// nRanks == 1; later releases in src/transport/generic.cc), yet its init still holds device memory:
// 484 MiB measured by nccl-tests once the CUDA context existed, on an RTX 3090 with CUDA 13, an
// SM86-only NCCL build and runtime connect (NVIDIA/nccl#2366); 996 MiB there with eager connect
// (NCCL_RUNTIME_CONNECT=0). The releases before 2.22, which always connect eagerly, were not measured.
constexpr Bytes kCommunicatorSingleBytes{484LL << 20};

}  // namespace

Communicators nccl_communicators(const Config& c) {
  Communicators out;
  const Parallel& p = c.parallel;
  if (p.num_gpus <= 1) {
    // The DeepSpeed engine talks to its data-parallel group even when that group is this one GPU:
    // it broadcasts the model from rank 0 at start (runtime/engine.py _broadcast_model, called from
    // _configure_distributed_model) and all-reduces the overflow flag and the gradient norm at every
    // step (runtime/zero/stage_1_and_2.py has_overflow, get_grad_norm_direct), with no shortcut for
    // a world of one; torch.distributed's NCCL backend creates a one-rank communicator for them.
    if (c.training.implementation.framework == Framework::kDeepspeed) {
      out.count = 1;
      out.bytes = kCommunicatorSingleBytes;
      out.groups = "DeepSpeed's data-parallel group of one GPU";
    }
    return out;
  }
  const auto join = [&out](std::int64_t ranks) {
    if (ranks < 2) return;
    ++out.count;
    out.bytes += ranks == 2 ? kCommunicatorPairBytes : kCommunicatorGroupBytes;
  };
  const std::int64_t model = std::max<std::int64_t>(1, p.tensor * p.pipeline * p.context);
  const std::int64_t data = p.num_gpus / model;
  if (p.zero_stage > 0 && p.shard_degree > 1 && p.shard_degree < data) {
    join(p.shard_degree);          // hybrid sharding: gathers and reduce-scatters within a group
    join(data / p.shard_degree);   // and the all-reduce across groups
  } else {
    join(data);
  }
  join(p.tensor);
  join(p.pipeline);
  join(p.context);
  join(p.expert);
  return out;
}

Bytes scale(Bytes bytes, double factor) {
  // Sizes stay far below 2^53 whenever they have not overflowed, so the rounding here is exact to
  // the byte for every realistic input; overflowed values keep their flag.
  const double scaled = std::ceil(static_cast<double>(bytes.value()) * factor);
  if (bytes.overflow() || !(scaled < 9.0e18)) return Bytes(Exact(INT64_MAX) * 2);
  return Bytes(static_cast<std::int64_t>(scaled));
}

void allocator_reserve(const Config& c, const StepSimulation& sim, Bytes capacity, Estimate& e) {
  // llm.c has no caching allocator: it cudaMallocs each buffer once and keeps it (train_gpt2.cu),
  // so what it holds is what it allocated.
  if (c.training.implementation.framework == Framework::kLlmC && c.hardware.fragmentation < 0) {
    e.fragmentation = 0.0;
    e.peak_reserved_bytes = e.peak_reserved_low_bytes = e.peak_reserved_high_bytes = e.peak_allocated_bytes;
    return;
  }
  const bool given = c.hardware.fragmentation >= 0;
  if (given) {
    // A factor the user states is a statement, not an estimate: the range is that one point.
    e.fragmentation = c.hardware.fragmentation;
    e.peak_reserved_bytes = e.peak_reserved_low_bytes = e.peak_reserved_high_bytes =
        scale(e.peak_allocated_bytes, 1.0 + e.fragmentation);
    return;
  }
  if (sim.ok && sim.peak_allocated_bytes.value() > 0) {
    // The replayed allocator's reserve over its own allocated peak, applied to the step's peak.
    // The range runs from no fragmentation at all to what the replay leaves out (other streams
    // holding freed blocks, NCCL and cuBLAS workspaces): kUnreplayedShare of the peak.
    e.fragmentation_simulated = true;
    e.allocator_segments = sim.segment_count;
    e.fragmentation = std::max(0.0, static_cast<double>(sim.peak_reserved_bytes.value()) /
                                        static_cast<double>(sim.peak_allocated_bytes.value()) - 1.0);
    e.fragmentation = std::round(e.fragmentation * 1e6) / 1e6;
    e.peak_reserved_bytes = scale(e.peak_allocated_bytes, 1.0 + e.fragmentation);
    // The replay ran on the card (simulate_step): where the step's tensors fit it, the allocator
    // cannot hold more than the card hands out, whatever the replay's ratio scales to.
    if (capacity.value() > 0 && e.peak_allocated_bytes <= capacity) {
      e.peak_reserved_bytes = min(e.peak_reserved_bytes, capacity);
      e.fragmentation = std::round((static_cast<double>(e.peak_reserved_bytes.value()) /
                                        static_cast<double>(e.peak_allocated_bytes.value()) - 1.0) * 1e6) / 1e6;
    }
    e.peak_reserved_low_bytes = e.peak_allocated_bytes;
    e.peak_reserved_high_bytes = scale(e.peak_allocated_bytes, 1.0 + e.fragmentation + kUnreplayedShare);
    return;
  }
  e.fragmentation = kFragmentationPoint;
  e.peak_reserved_bytes = scale(e.peak_allocated_bytes, 1.0 + kFragmentationPoint);
  e.peak_reserved_low_bytes = scale(e.peak_allocated_bytes, 1.0 + kFragmentationLow);
  e.peak_reserved_high_bytes = scale(e.peak_allocated_bytes, 1.0 + kFragmentationHigh);
}

Fit make_fit(const Gpu& gpu, Bytes need, Bytes need_high, double budget_fraction) {
  Fit f;
  f.gpu = &gpu;
  f.budget_bytes = Bytes(static_cast<std::int64_t>(static_cast<double>(gpu.usable_bytes().value()) * budget_fraction));
  f.need_bytes = need;
  f.need_high_bytes = max(need, need_high);
  f.headroom_bytes = gpu.usable_bytes() - need;
  f.budget_left_bytes = f.budget_bytes - f.need_high_bytes;
  // Fits only when the top of the measured band stays within the budget; tight when the estimate
  // fits the card but the band crosses the budget; does not fit when the estimate exceeds the card.
  if (need.overflow() || need > gpu.usable_bytes()) f.verdict = Verdict::kDoesNotFit;
  else if (f.need_high_bytes > f.budget_bytes) f.verdict = Verdict::kTight;
  else f.verdict = Verdict::kFits;
  return f;
}

namespace {

// Which measured population a configuration belongs to: its implementation profile, its method
// (full, LoRA, QLoRA / int8 base, another PEFT method) and one GPU or several
// (tools/accuracy/band.py writes the table in that order).
static_assert(kMeasuredBandFrameworkCount == static_cast<int>(Framework::kTrl) + 1,
              "the measured band table needs a row per framework (tools/accuracy/accuracy.py PROFILES)");

const MeasuredBand& measured_band(const Config& c, Estimate& e) {
  const int framework = static_cast<int>(e.implementation.framework);
  int method = 0;
  if (c.training.finetune.method == FinetuneMethod::kLora) method = c.training.finetune.base_bits < 16 ? 2 : 1;
  const bool multi = c.parallel.num_gpus > 1;
  const int index = (framework * kMeasuredBandMethodCount + method) * 2 + (multi ? 1 : 0);
  const MeasuredBand& band = kMeasuredBands[index];
  e.measured_band_population = std::string(kMeasuredBandFrameworks[framework]) + " · " +
                               kMeasuredBandMethods[method] + " · " + (multi ? "several GPUs" : "one GPU");
  e.measured_band_fallback = band.fallback;
  return band;
}

}  // namespace

void fit_on_gpus(const Config& c, const Gpu& gpu, Estimate& e) {
  // Where published GPU runs like this one landed relative to memfit (docs/accuracy.md); not under
  // the seeds' convention, whose numbers are the seeds' own.
  double high_ratio = 1.0, band_low_ratio = 1.0;
  if (c.training.precision != Precision::kSeed14p) {
    const MeasuredBand& band = measured_band(c, e);
    e.measured_band_low_bytes = scale(e.peak_allocated_bytes, band.low_ratio);
    e.measured_band_high_bytes = scale(e.peak_allocated_bytes, band.high_ratio);
    e.measured_band_cases = band.fallback ? kMeasuredBandCases : band.cases;
    high_ratio = std::max(1.0, band.high_ratio);
    band_low_ratio = band.low_ratio;
  }
  e.device_total_bytes = e.peak_reserved_bytes + e.breakdown.overhead;
  e.device_total_low_bytes = e.peak_reserved_low_bytes + e.breakdown.overhead;
  // Unless the overhead is given, the top of the range allows for a context loaded eagerly.
  const bool overhead_given = c.hardware.overhead_bytes >= 0;
  const Bytes context = e.breakdown.overhead - e.communicator_bytes;
  e.device_total_high_bytes = e.peak_reserved_high_bytes + e.communicator_bytes +
                              (overhead_given ? context : max(context, kEagerContextBytes));
  if (e.runahead_peak_reserved_bytes.value() > 0) {
    e.runahead_device_total_bytes = e.runahead_peak_reserved_bytes + e.breakdown.overhead;
  }
  const Bytes band_top = scale(e.device_total_bytes, high_ratio);
  if (e.measured_band_cases > 0) {
    e.device_total_band_low_bytes = scale(e.device_total_bytes, band_low_ratio);  // as the allocated band's
    e.device_total_band_high_bytes = band_top;
  }
  e.fit = make_fit(gpu, e.device_total_bytes, band_top, c.hardware.budget_fraction);
  e.fit.lacks = card_lacks(gpu, c.training);
  // Each card with its own CUDA context (unless the overhead is given, or is the seeds' fixed
  // 512 MiB): the table's rows are that card's device total, not the chosen card's.
  const bool card_context = !overhead_given && c.training.precision != Precision::kSeed14p;
  for (const Gpu& g : gpu_table()) {
    const Bytes outside = card_context ? g.context_bytes + e.communicator_bytes : e.breakdown.overhead;
    const Bytes need = e.device_total_bytes - e.breakdown.overhead + outside;
    e.fits.push_back(make_fit(g, need, scale(need, high_ratio), c.hardware.budget_fraction));
    e.fits.back().lacks = card_lacks(g, c.training);
  }
}

const char* card_lacks(const Gpu& g, Precision p, Float8 float8) {
  if (float8 == Float8::kMxfp8 && !g.has_mx()) return "MXFP8";
  if (float8 != Float8::kNone && !g.has_fp8()) return "FP8";
  switch (p) {
    case Precision::kFp32:
    case Precision::kFp16Mixed:
    case Precision::kFp16Master:
    case Precision::kSeed14p: return nullptr;
    case Precision::kFp8Mixed: return g.has_fp8() ? nullptr : "FP8";
    case Precision::kBf16Mixed:
    case Precision::kBf16Master:
    case Precision::kBf16:
    case Precision::kBf16Fsdp:
    case Precision::kBf16Autocast: return g.has_bf16() ? nullptr : "bf16";
  }
  return nullptr;
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kFits: return "fits";
    case Verdict::kTight: return "tight";
    case Verdict::kDoesNotFit: return "does_not_fit";
  }
  return "unknown";
}

}  // namespace memfit
