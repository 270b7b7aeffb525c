#include "peft.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "finetune.hpp"
#include "memfit/implementation.hpp"
#include "memfit/recipes.hpp"
#include "text.hpp"

// Compiled for size (clang's minsize; the wasm modules build the rest -O3): what a method trains and
// saves is worked out a few times per estimate over a few dozen kinds of layer, never in a loop over
// layouts. With the sixteen methods of Dec 5 2026 it took 9.9 KB off the calculator's module and
// 8.7 KB off the planner's, gzipped; estimates and plans in node as fast within 2 % (A/B, one run).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((minsize)), apply_to = function)
#endif

namespace memfit {

namespace {

// PEFT 0.21 defaults where memfit's configuration leaves a size at 0 (peft/tuners/<m>/config.py).
constexpr std::int64_t kOftBlockSize = 32;            // OFTConfig.oft_block_size
constexpr std::int64_t kBoftBlockSize = 4;            // BOFTConfig.boft_block_size
constexpr std::int64_t kC3aBlockSize = 256;           // C3AConfig.block_size
constexpr std::int64_t kFourierFtFrequencies = 1000;  // FourierFTConfig.n_frequency
constexpr std::int64_t kWaveFtFrequencies = 2592;     // WaveFTConfig.n_frequency
constexpr std::int64_t kVbLoraVectors = 256;          // VBLoRAConfig.num_vectors
constexpr std::int64_t kVbLoraVectorLength = 256;     // VBLoRAConfig.vector_length
constexpr std::int64_t kVbLoraTopK = 2;               // VBLoRAConfig.topk
constexpr std::int64_t kGraLoraBlocks = 2;            // GraloraConfig.gralora_k
constexpr std::int64_t kTinyLoraU = 64;               // TinyLoraConfig.u (weight_tying 0: one per module)
constexpr std::int64_t kRoadGroupSize = 64;           // RoadConfig.group_size (variant road_1)
constexpr Bytes kBufferElement = kFp32Bytes;          // random projections are created in fp32
// PEFT 0.21.2's defaults for the sizes memfit does not expose (peft/tuners/<m>/config.py).
constexpr std::int64_t kAdamssSubspaces = 5;          // AdamssConfig.num_subspaces (subspace_rank 1)
constexpr std::int64_t kLilyExperts = 2;              // LilyConfig.num_B (stride_A 1: no A shared)
constexpr std::int64_t kPolySkills = 4;               // PolyConfig.n_skills (n_splits 1, n_tasks 1)
constexpr double kFrodSparseRate = 0.01;              // FrodConfig.sparse_rate
constexpr double kSupertuningSparsity = 0.99;         // SupertuningConfig.sparsity (r None: no LoRA)
constexpr std::int64_t kUniLoraTheta = 256;           // UniLoraConfig.theta_d_length

struct Builder {
  PeftParameters& out;
  void train(Count rows, Count cols, Count count, Count lead = 1) { out.trainable.push_back({rows, cols, count, lead}); }
  void freeze(Count rows, Count cols, Count count) { out.frozen_added.push_back({rows, cols, count}); }
};

Count linear_count(const std::vector<AdaptedLinear>& linears) {
  Count n = 0;
  for (const AdaptedLinear& a : linears) n += a.count;
  return n;
}

// LoRA (Hu et al. 2021; peft/tuners/lora/layer.py update_layer): A [r, in] and B [out, r]; DoRA
// adds a magnitude vector [out] (lora/dora.py); LoRA-FA freezes A (peft/optimizers/lorafa.py);
// DeLoRA adds a scalar λ (delora/layer.py); AdaLoRA an SVD-style E [r, 1] (adalora/layer.py);
// HiRA (hira/layer.py) has LoRA's A and B, applied as a Hadamard product with the weight.
// On stacked experts (peft/tuners/lora/layer.py ParamWrapper.update_layer): one adapter over the
// whole stack, A [r·E, in] and B [out, r·E], at rank 2r on the fused gate_up_proj
// (peft/utils/transformers_weight_conversion.py _convert_peft_config_moe: rank_pattern r × 2).
void low_rank(const std::vector<AdaptedLinear>& linears, const Finetune& f, Bytes adapter, Builder& b) {
  for (const AdaptedLinear& a : linears) {
    const Count r = expert_adapter_rank(f, a) * a.stack;
    if (f.method == FinetuneMethod::kLoraFa) b.freeze(r, a.in, a.count);
    else b.train(r, a.in, a.count);
    b.train(a.out, r, a.count);
    if (f.method == FinetuneMethod::kDora) b.train(a.out, 0, a.count);
    if (f.method == FinetuneMethod::kAdaLora) {
      b.train(r, 1, a.count);
      // ranknum [1]: created with requires_grad=False, but PEFT moves new adapters to the base
      // layer's device and nn.ParameterDict re-wraps the moved tensor as a Parameter that requires
      // grad (tuners_utils.py _move_adapter_to_device_of_base_layer): trained in practice.
      b.train(1, 0, a.count);
      // The rank allocator (adalora/layer.py RankAllocator.update_ipt, run by update_and_allocate
      // every step, as PEFT's AdaLoRA recipe requires) keeps, for every lora_A, lora_B and lora_E,
      // the importance |p · ∇p|, its moving average and the uncertainty's: three tensors of the
      // parameter's shape and dtype, from the first step to the end of training.
      b.out.buffer_bytes += (r * a.in + a.out * r + r) * a.count * Count(3) * adapter;
    }
    if (f.method == FinetuneMethod::kDeLora) b.train(1, 0, a.count);
  }
}

// VeRA (Kopiczko et al. 2024; vera/layer.py): λ_b [out] and λ_d [r] per layer; the shared random
// A [r, max in] and B [max out, r] are buffers (vera/model.py _init_vera_A_vera_B).
void vera(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  Count max_in = 0, max_out = 0;
  for (const AdaptedLinear& a : linears) {
    b.train(a.out, 0, a.count);
    b.train(f.lora_rank, 0, a.count);
    max_in = max(max_in, a.in);
    max_out = max(max_out, a.out);
  }
  b.out.buffer_bytes += Count(f.lora_rank) * (max_in + max_out) * kBufferElement;
}

// IA3 (Liu et al. 2022; ia3/layer.py): a learned vector scaling the output [out, 1], or, on a
// feed-forward module (memfit: `down`, PEFT's default feedforward_modules), the input [1, in].
void ia3(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  for (const AdaptedLinear& a : linears) {
    if (a.target & f.feedforward_modules) b.train(1, a.in, a.count);
    else b.train(a.out, 1, a.count);
  }
}

// OFT's block size when `in` is not a multiple of the one asked for (oft/layer.py
// adjust_oft_parameters): the nearest divisor of `in`, the smaller one on a tie.
std::int64_t oft_block_size(std::int64_t in, std::int64_t wanted) {
  if (wanted >= in) return in;
  std::int64_t higher = wanted;
  while (higher <= in && in % higher != 0) ++higher;
  std::int64_t lower = wanted;
  while (lower > 1 && in % lower != 0) --lower;
  return wanted - lower <= higher - wanted ? lower : higher;
}

// OFT (Qiu et al. 2023, PEFT ≥ 0.15; oft/layer.py OFTRotationModule): per layer in / b blocks,
// each a skew-symmetric b × b generator stored as its b(b−1)/2 upper entries.
void oft(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  for (const AdaptedLinear& a : linears) {
    const std::int64_t size = oft_block_size(a.in.value(), f.block_size > 0 ? f.block_size : kOftBlockSize);
    b.train(a.in / size, Count(size) * (size - 1) / 2, a.count);
  }
}

// BOFT (Liu et al. 2024; boft/layer.py update_layer): R [m, in / b, b, b] and a scale s [out, 1],
// with m butterfly factors; the m permutation matrices [m, in, in] are an fp32 buffer per layer,
// registered outside the adapter's dicts: on the GPU only for a model moved there after wrapping
// (loaded_before_wrapping false); each forward copies it over otherwise (self.boft_P.to(x)).
void boft(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  const std::int64_t size = f.block_size > 0 ? f.block_size : kBoftBlockSize;
  const Count m = f.boft_n_butterfly_factor;
  for (const AdaptedLinear& a : linears) {
    b.train(size, size, a.count, m * (a.in / size));
    b.train(a.out, 1, a.count);
    if (!f.loaded_before_wrapping) b.out.buffer_bytes += m * a.in * a.in * a.count * kBufferElement;
  }
}

// LoKr's factorization (lokr/layer.py factorization): (factor, dimension / factor) where the
// decompose_factor divides the dimension; else the divisor pair with the smallest sum whose smaller
// side does not pass the factor (−1: no bound), the smaller first.
std::pair<std::int64_t, std::int64_t> lokr_factors(std::int64_t dimension, std::int64_t factor) {
  if (factor > 0 && dimension % factor == 0) return {factor, dimension / factor};  // as given, unsorted
  const std::int64_t bound = factor == -1 ? dimension : factor;
  std::int64_t m = 1, n = dimension;
  while (m < n) {
    std::int64_t next = m + 1;
    while (dimension % next != 0) ++next;
    const std::int64_t other = dimension / next;
    if (next + other > m + n || next > bound) break;
    m = next;
    n = other;
  }
  return {std::min(m, n), std::max(m, n)};
}

// LoKr (Edalati et al. 2022; lokr/layer.py update_layer, decompose_both false): W = w1 ⊗ w2 with
// out = a·b and in = c·d; w1 [a, c] kept whole; w2 [b, d] whole when r ≥ max(b, d) / 2, else
// w2_a [b, r] · w2_b [r, d].
void lokr(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  for (const AdaptedLinear& a : linears) {
    const auto [out_a, out_b] = lokr_factors(a.out.value(), f.decompose_factor);
    const auto [in_c, in_d] = lokr_factors(a.in.value(), f.decompose_factor);
    b.train(out_a, in_c, a.count);
    if (2 * f.lora_rank >= std::max(out_b, in_d)) {
      b.train(out_b, in_d, a.count);
    } else {
      b.train(out_b, f.lora_rank, a.count);
      b.train(f.lora_rank, in_d, a.count);
    }
  }
}

// RandLoRA (Albert et al. 2025; randlora/layer.py, model.py): per layer λ [r, n] and γ [n, min]
// with n = ceil(min(in, out) / r) bases; the shared random bases A [r, 1, min] and
// B [max, n, r] (from the largest layer's sides) are buffers.
void randlora(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  const Count r = f.lora_rank;
  Count largest_in = 0, largest_out = 0;
  for (const AdaptedLinear& a : linears) {
    const Count side = min(a.in, a.out);
    const Count bases = ceil_div(side, r);
    b.train(r, bases, a.count);
    b.train(bases, side, a.count);
    largest_in = max(largest_in, a.in);
    largest_out = max(largest_out, a.out);
  }
  const Count small = min(largest_in, largest_out), large = max(largest_in, largest_out);
  b.out.buffer_bytes += (r * small + large * ceil_div(small, r) * r) * kBufferElement;
}

// Methods with one fixed shape per adapted layer.
void per_linear(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  const Count r = f.lora_rank;
  for (const AdaptedLinear& a : linears) {
    switch (f.method) {
      case FinetuneMethod::kLoha:  // LoHa (Hyeon-Woo et al. 2022; loha/layer.py): two low-rank pairs
        b.train(a.out, r, a.count * 2);
        b.train(r, a.in, a.count * 2);
        break;
      case FinetuneMethod::kHra: b.train(a.in, r, a.count); break;   // HRA (hra/layer.py): u [in, r]
      case FinetuneMethod::kMiss: b.train(r, a.out, a.count); break;  // MiSS/Bone (miss/layer.py): [r, out]
      case FinetuneMethod::kFourierFt:  // FourierFT (Gao et al. 2024): n spectral coefficients
        b.train(f.n_frequency > 0 ? f.n_frequency : kFourierFtFrequencies, 0, a.count);
        break;
      case FinetuneMethod::kWaveFt:  // WaveFT (waveft/layer.py): n wavelet coefficients
        b.train(f.n_frequency > 0 ? f.n_frequency : kWaveFtFrequencies, 0, a.count);
        break;
      case FinetuneMethod::kC3a: {  // C3A (c3a/layer.py): circular kernels [out / b, in / b, b]
        const std::int64_t size = f.block_size > 0 ? f.block_size : kC3aBlockSize;
        b.train(a.in / size, size, a.count, a.out / size);
        break;
      }
      case FinetuneMethod::kRoad:  // RoAd (road/layer.py, road_1): θ and α of out / 2 each
        b.train(a.out / 2, 0, a.count * 2);
        break;
      case FinetuneMethod::kGraLora:  // GraLoRA (gralora/layer.py): k blocks, A [k, in/k, r], B [k, r, out/k]
        b.train(a.in / kGraLoraBlocks, r, a.count, kGraLoraBlocks);
        b.train(r, a.out / kGraLoraBlocks, a.count, kGraLoraBlocks);
        break;
      case FinetuneMethod::kShira:  // SHiRA (shira/layer.py): r(in + out) sparse entries, at most in·out
        b.train(min(r * (a.in + a.out), a.in * a.out), 0, a.count);
        break;
      default: break;
    }
  }
}

// VB-LoRA (Li et al. 2024; vblora/layer.py): logits A [r, in / L, V] and B [out / L, r, V] per
// layer over one shared, trained vector bank [V, L].
void vblora(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  for (const AdaptedLinear& a : linears) {
    b.train(a.in / kVbLoraVectorLength, kVbLoraVectors, a.count, f.lora_rank);
    b.train(f.lora_rank, kVbLoraVectors, a.count, a.out / kVbLoraVectorLength);
  }
  b.train(kVbLoraVectors, kVbLoraVectorLength, 1);
}

// TinyLoRA (tinylora/layer.py, model.py; weight_tying 0): one vector v [u] per adapted module; the
// truncated SVD of its weight (A [r, in], B [out, r]) and the projections P [u, r, r] are buffers.
void tinylora(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  const Count r = f.lora_rank;
  b.train(kTinyLoraU, 0, linear_count(linears));
  for (const AdaptedLinear& a : linears) {
    b.out.buffer_bytes += (r * (a.in + a.out) + Count(kTinyLoraU) * r * r) * a.count * kBufferElement;
  }
}

// The trained entries a sparse method keeps of an in × out weight: PEFT's int(in · out · rate),
// computed in double as Python does (frod/model.py, supertuning/layer.py).
Count sparse_entries(Count elements, double rate) {
  return Count(static_cast<std::int64_t>(static_cast<double>(elements.value()) * rate));
}

// FRoD (frod/model.py, layer.py): per layer λ_l [in] and the sparse λ_s values [nnz] over in × in,
// nnz = int(in² · rate), at least 1, at most in(in − 1). Each layer keeps U [out, in], a frozen copy
// of its weight's factor in the weight's dtype; each role (target) one V [in, in] and int64 indices
// [2, nnz].
Count frod_entries(Count in) {
  return max(Count(1), min(sparse_entries(in * in, kFrodSparseRate), in * (in - 1)));
}

void frod(const std::vector<AdaptedLinear>& linears, const Finetune& f, Bytes weight, Builder& b) {
  for (const AdaptedLinear& a : linears) {
    const Count nnz = frod_entries(a.in);
    b.train(a.in + nnz, 0, a.count);
    // FrodLayer's own _move_adapter_to_device_of_base_layer moves only its ParameterDicts, "keeping
    // shared projection buffers on CPU" (U is made with .cpu(), the shared V on the CPU): on the
    // GPU only when the model is moved there after wrapping.
    if (f.loaded_before_wrapping) continue;
    b.out.buffer_bytes += a.out * a.in * a.count * weight + a.in * a.in * weight + nnz * 2 * kInt64Bytes;
  }
}

// PVeRA (pvera/layer.py, model.py): λ_b [out] and λ_d [2r] per layer; the shared random A [2r, max in]
// and B [max out, r] are fp32 buffers.
void pvera(const std::vector<AdaptedLinear>& linears, const Finetune& f, Bytes adapter, Builder& b) {
  Count max_in = 0, max_out = 0;
  for (const AdaptedLinear& a : linears) {
    b.train(a.out, 0, a.count);
    b.train(Count(f.lora_rank) * 2, 0, a.count);
    max_in = max(max_in, a.in);
    max_out = max(max_out, a.out);
  }
  b.out.buffer_bytes += Count(f.lora_rank) * (max_in * 2 + max_out) * adapter;
}

// Lily (Zhong et al. 2024; lily/layer.py, model.py _post_injection_hook): per layer A [r, in] and a
// router [num_B, r]; one bank of num_B experts B [num_B · r, out] shared by every layer a target name
// reaches (PEFT groups by the matched name; target_modules given as names).
void lily(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  const Count r = f.lora_rank;
  for (const AdaptedLinear& a : linears) {
    b.train(r, a.in, a.count);
    b.train(r * kLilyExperts, 0, a.count);
    b.train(r * kLilyExperts, a.out, 1);
  }
}

// OSF (osf/layer.py): the weight's SVD split at k = min(in, out) / 2; the lower q = min − k singular
// triplets are trained (U [out, q], S [q], V [q, in]); their initial values and the upper half's
// larger factor (U_high [out, k] if out > in, V_high [k, in] if in > out) are fp32 buffers.
void osf(const std::vector<AdaptedLinear>& linears, Bytes adapter, Builder& b) {
  for (const AdaptedLinear& a : linears) {
    const Count side = min(a.in, a.out), kept = side / 2, trained = side - kept;
    b.train(trained, a.in + a.out + 1, a.count);
    const Count high = a.out > a.in ? a.out * kept : a.in > a.out ? kept * a.in : Count(0);
    b.out.buffer_bytes += (trained * (a.in + a.out + 1) + high) * a.count * adapter;
  }
}

// AdaMSS (adamss/layer.py): the weight's top R = min(r, out, in + bias) singular directions split
// into K' = min(5, out) subspaces by k-means; with subspace_rank 1 each trains a rank-1 pair over R
// (K' · R) and the output coordinates (out) in all; the projected basis [R, in + bias] is an fp32
// buffer.
void adamss(const std::vector<AdaptedLinear>& linears, const Finetune& f, Bytes adapter, Builder& b) {
  for (const AdaptedLinear& a : linears) {
    const Count in = a.in + (a.bias ? 1 : 0);
    const Count rank = min(Count(f.lora_rank), min(a.out, in)), subspaces = min(Count(kAdamssSubspaces), a.out);
    b.train(subspaces, rank, a.count);
    b.train(a.out, 0, a.count);
    b.out.buffer_bytes += rank * in * a.count * adapter;
  }
}

// GLoRA (Chavan et al. 2023; glora/layer.py, defaults A_B lora, C lora, D_E constant): A and B as
// low-rank pairs (2r(in + out)); on a layer with a bias also C [in, r] · [r, 1] and the constants D
// and E. Without a bias, C, D and E are zero buffers [in] and 2 × [out] in the weight's dtype.
void glora(const std::vector<AdaptedLinear>& linears, const Finetune& f, Bytes weight, Builder& b) {
  const Count r = f.lora_rank;
  for (const AdaptedLinear& a : linears) {
    b.train(r, a.in + a.out, a.count * 2);
    if (a.bias) {
      b.train(a.in, r, a.count);
      b.train(r, 0, a.count);
      b.train(1, 0, a.count * 2);
    } else {
      b.out.buffer_bytes += (a.in + a.out * 2) * a.count * weight;
    }
  }
}

// PSOFT (psoft/layer.py, psoft_orth and both magnitudes): an r × r skew-symmetric generator stored
// as its r(r − 1)/2 entries and two magnitude vectors [r], whatever the layer's size; the layer's
// principal A [r, in] and B [out, r] are fp32 buffers, with two int64 index vectors of r(r − 1)/2.
void psoft(const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  const Count r = f.lora_rank, upper = r * (r - 1) / 2;
  for (const AdaptedLinear& a : linears) {
    b.train(upper + r * 2, 0, a.count);
    // A = Vh[:r, :] of torch.linalg.svd (psoft_svd "full", ab_svd_init "psoft_init": PEFT's defaults)
    // is a contiguous view, which .contiguous() returns as it is: the cached A keeps the whole fp32
    // basis Vh [min(in, out), in] alive where the SVD ran (_build_psoft_ab_cache_buffers). A model
    // moved to the GPU after wrapping copies only the view.
    const Count a_rows = f.loaded_before_wrapping ? min(a.in, a.out) : r;
    b.out.buffer_bytes += ((a_rows * a.in + r * a.out) * kBufferElement + upper * 2 * kInt64Bytes) * a.count;
  }
}

// X-LoRA (Buehler & Buehler 2024; xlora/model.py, classifier.py, xlora_depth 1): n LoRA adapters
// trained beforehand, loaded frozen (fp32) into every layer their targets reach, and one trained
// classifier Linear(d, n) with a bias that reads the last hidden state and sets each token's mix.
void xlora(const ModelSpec& m, const std::vector<AdaptedLinear>& linears, const Finetune& f, Builder& b) {
  const Count n = f.num_adapters;
  for (const AdaptedLinear& a : linears) b.freeze(n * f.lora_rank, a.in + a.out, a.count);
  b.train(n, Count(m.hidden_size) + 1, 1);
}

// ShadowPEFT (shadow/layer.py, model.py; r, update_hidden_size = r, a one-layer mirror): in every
// decoder block an injection down [r, d] and up [d, r] and two update MLPs d → u → d with biases, in
// fp32; and a shadow backbone, a one-block copy of the model's own (its embedding shared and
// removed) with its final norm, trained in the base's dtype.
Count shadow_backbone_count(const ParameterCount& params) {
  Count norm = 0;
  for (const TensorGroup& g : params.groups) {
    if (g.component == Component::kFinalNorm) norm += g.elements_each();
  }
  return params.per_dense_layer_count + norm;
}

void shadow(const ModelSpec& m, const ParameterCount& params, const Finetune& f, Builder& b) {
  const Count d = m.hidden_size, r = f.lora_rank, u = r, layers = m.num_hidden_layers;
  b.train(r, d, layers * 2);
  b.train(u, d, layers * 2);
  b.train(u, 0, layers * 2);
  b.train(d, u, layers * 2);
  b.train(d, 0, layers * 2);
  const Count backbone = shadow_backbone_count(params);
  b.train(backbone, 0, 1);
  b.out.saved_copies += backbone;
}

// Methods whose trained shapes follow from the layer's alone (the rest of per_linear's kind).
void per_linear_more(const std::vector<AdaptedLinear>& linears, const Finetune& f, Bytes adapter, Builder& b) {
  const Count r = f.lora_rank;
  for (const AdaptedLinear& a : linears) {
    switch (f.method) {
      case FinetuneMethod::kBeft: b.train(a.out, 0, a.count); break;  // BEFT (beft/layer.py): a bias [1, out]
      case FinetuneMethod::kPoly:  // Poly (poly/layer.py): n_skills LoRA pairs and the task's routing logits
        b.train(a.in, r, a.count, kPolySkills);
        b.train(r, a.out, a.count, kPolySkills);
        b.train(kPolySkills, 0, a.count);
        break;
      case FinetuneMethod::kPeanut:  // PEANuT (peanut/layer.py, depth 0): two [out, r] maps
        b.train(a.out, r, a.count * 2);
        break;
      case FinetuneMethod::kSupertuning: {  // Super-Tuning (supertuning/layer.py): k trained entries
        const Count k = sparse_entries(a.in * a.out, 1.0 - kSupertuningSparsity);
        b.train(k, 0, a.count);
        b.out.buffer_bytes += k * a.count * Bytes{4};  // their int32 flat indices
        break;
      }
      case FinetuneMethod::kDeft: {  // DEFT (deft/layer.py): P [out, r'] and R [r', in], r' = min(r, out)
        const Count rank = min(r, a.out);
        b.train(a.out, rank, a.count);
        b.train(rank, a.in, a.count);
        break;
      }
      case FinetuneMethod::kUnilora:  // Uni-LoRA (unilora/layer.py): int64 indices and fp32 scales, A and B
        b.out.buffer_bytes += r * (a.in + a.out) * a.count * (kInt64Bytes + adapter);
        break;
      default: break;
    }
  }
  if (f.method == FinetuneMethod::kUnilora) b.train(kUniLoraTheta, 0, 1);  // the one shared θ_d vector
}

// The token dimension PEFT gives prompt-learning methods (utils/other.py
// _prepare_prompt_learning_config): the hidden size; for prefix tuning the key/value width
// head_dim × num_key_value_heads (grouped-query attention, PEFT #1901).
Count kv_width(const ModelSpec& m) { return Count(m.kv_heads()) * m.head_size(); }

// Prompt tuning (Lester et al. 2021; prompt_tuning/model.py): an embedding [n, d].
// P-tuning (Liu et al. 2021; p_tuning/model.py PromptEncoder): the embedding and an MLP
// d → h → h → d, or a 2-layer bidirectional LSTM d → h and an MLP 2h → 2h → d.
// Multitask prompt tuning (Wang et al. 2023; multitask_prompt_tuning/model.py, num_ranks 1,
// num_tasks 1): the shared prompt [n, d] and the task's rank-one factors [n, 1] and [1, d].
// CPT (Context-aware Prompt Tuning; cpt/model.py): a trained delta [n, d] over a frozen fp32 copy of
// the context tokens' embeddings [n, d].
// An encoder-decoder language model gets a prompt for each stack (peft_model.py:
// num_transformer_submodules 2 under SEQ_2_SEQ_LM only): 2n rows.
void prompt_encoder(const ModelSpec& m, const Finetune& f, Builder& b) {
  const bool seq2seq_lm = m.is_encoder_decoder && m.output_head == OutputHead::kLm;
  const Count d = m.hidden_size, n = Count(f.num_virtual_tokens) * (seq2seq_lm ? 2 : 1);
  b.train(n, d, 1);
  if (f.method == FinetuneMethod::kMultitaskPromptTuning) {
    b.train(n, 1, 1);
    b.train(1, d, 1);
    return;
  }
  if (f.method == FinetuneMethod::kCpt) {
    b.freeze(n, d, 1);
    return;
  }
  if (f.method != FinetuneMethod::kPTuning) return;
  const Count h = f.encoder_hidden_size > 0 ? Count(f.encoder_hidden_size) : d;
  if (f.encoder_reparameterization_type == PromptEncoder::kMlp) {
    b.train(h, d, 1);
    b.train(h, h, 1);
    b.train(d, h, 1);
    b.train(h, 0, 2);
    b.train(d, 0, 1);
    return;
  }
  const Count gates = h * 4;  // torch.nn.LSTM: input, forget, cell and output gates
  b.train(gates, d, 2);       // layer 0, both directions: weight_ih
  b.train(gates, h * 2, 2);   // layer 1: weight_ih reads both directions
  b.train(gates, h, 4);       // weight_hh, both layers and directions
  b.train(gates, 0, 8);       // bias_ih and bias_hh
  b.train(h * 2, h * 2, 1);
  b.train(h * 2, 0, 1);
  b.train(d, h * 2, 1);
  b.train(d, 0, 1);
}

// Prefix tuning (Li & Liang 2021; prefix_tuning/model.py PrefixEncoder): an embedding
// [n, L · 2 · w] of every layer's keys and values, or with prefix_projection an embedding [n, w]
// through Linear(w, h), tanh, Linear(h, L · 2 · w).
// Cartridge (cartridge/model.py, num_frozen_tokens 1): the same [n, L · 2 · w] keys and values with
// the first token's row frozen.
void prefix_encoder(const ModelSpec& m, const Finetune& f, Builder& b) {
  const Count w = kv_width(m), n = f.num_virtual_tokens, kv = Count(m.num_hidden_layers) * 2 * w;
  if (f.method == FinetuneMethod::kCartridge) {
    b.train(n - 1, kv, 1);
    b.freeze(1, kv, 1);
    return;
  }
  if (!f.prefix_projection) {
    b.train(n, kv, 1);
    return;
  }
  const Count h = f.encoder_hidden_size > 0 ? Count(f.encoder_hidden_size) : w;
  b.train(n, w, 1);
  b.train(h, w, 1);
  b.train(h, 0, 1);
  b.train(kv, h, 1);
  b.train(kv, 0, 1);
}

// LLaMA-Adapter (Zhang et al. 2023). PEFT's adaption_prompt (adaption_prompt/layer.py): in each
// adapted layer a prompt [1, len, d] and a zero-initialised scalar gate [1]. LitGPT's v2
// (litgpt/adapter.py, adapter_v2.py): the prompt [len, d] and a gate per head [1, 1, h, 1], a bias
// and a scale [out] on every linear layer and the head, and the norms trained in place.
void llama_adapter(const ModelSpec& m, const ParameterCount& params, const Finetune& f, Builder& b) {
  const Count layers = Count(m.num_hidden_layers) - std::min(f.adapter_start_layer, m.num_hidden_layers);
  if (f.method == FinetuneMethod::kLlamaAdapter) {
    b.train(f.adapter_len, m.hidden_size, layers);
    b.train(1, 0, layers);
    return;
  }
  b.train(f.adapter_len, m.hidden_size, layers);
  b.train(m.num_attention_heads, 1, layers);
  for (const TensorGroup& g : params.groups) {
    if (g.linear || g.component == Component::kHead) b.train(g.rows, 0, g.count * 2);
    const bool norm = g.component == Component::kBlockNorms || g.component == Component::kFinalNorm;
    if (norm) {
      b.train(g.rows, 0, g.count);
      b.out.trained_in_base += g.elements();
    }
  }
  // A tied head is still its own AdapterV2Linear in LitGPT, with its bias and scale.
  if (m.output_head == OutputHead::kLm && m.tie_word_embeddings) b.train(m.vocab_size, 0, 2);
}

// LN tuning (Zhao et al. 2023; ln_tuning/layer.py): a trained copy of every hidden-size norm (the
// blocks', the final one, an embedding norm); the originals stay frozen.
void ln_tuning(const ParameterCount& params, Builder& b) {
  for (const TensorGroup& g : params.groups) {
    const bool norm = g.component == Component::kBlockNorms || g.component == Component::kFinalNorm ||
                      g.component == Component::kEmbeddingNorm;
    if (norm) b.train(g.rows, 0, g.count);
  }
}

}  // namespace

Count PeftParameters::trainable_count() const {
  Count n = 0;
  for (const Shape& s : trainable) n += s.elements();
  return n;
}

Count PeftParameters::added_count() const {
  Count n = trainable_count() - trained_in_base;
  for (const Shape& s : frozen_added) n += s.elements();
  return n;
}

Count expert_adapter_rank(const Finetune& f, const AdaptedLinear& a) {
  return Count(f.lora_rank) * (f.target_parameters ? 1 : a.rank_factor);
}

bool stacked_experts(const Config& c) {
  const MoeDispatch dispatch = resolve_implementation(c).moe_dispatch;
  return c.model.num_experts > 0 && (dispatch == MoeDispatch::kGrouped || dispatch == MoeDispatch::kDense);
}

ExpertTargeting expert_targeting(const Config& c) {
  if (!stacked_experts(c)) return ExpertTargeting::kModules;
  if (c.training.finetune.target_parameters) return ExpertTargeting::kMapped;
  // transformers' _MODEL_TO_CONVERSION_PATTERN (conversion_mapping.py) as PEFT extends it with
  // Mixtral: of memfit's families, Qwen2-MoE (a pattern, not a key), gpt-oss and Llama 4 are not in it. A
  // model without a family is taken as Mixtral is.
  const std::string& type = c.model.model_type;
  // Qwen3.5-MoE's language model (Qwen3_5MoeForCausalLM) too: PEFT 0.21's module names leave its
  // stacked experts alone (measured: tools/frameworks/families.py, qwen3_5_moe_text LoRA steps).
  // PEFT looks the pattern up by the loaded model's config.model_type: under a multimodal wrapper the
  // wrapper's, and Qwen3-VL-MoE's (qwen3_vl_moe) is not in it (measured: PEFT 0.21 on a small
  // Qwen3VLMoeForConditionalGeneration adapts q_proj alone for targets q, gate, up and down).
  // Mistral 4 is not in it either, alone or under Mistral 3's wrapper (whose pattern, llava's, maps
  // no expert names), nor Phi-3.5-MoE: measured, tools/frameworks/families.py mistral4 and phimoe LoRA steps.
  const bool unmapped = type == "qwen2_moe" || type == "gpt_oss" || type == "llama4_text" ||
                        type == "qwen3_5_moe_text" || type == "mistral4" || type == "phimoe" || c.model.multimodal_type == "qwen3_vl_moe";
  return unmapped ? ExpertTargeting::kUnmapped : ExpertTargeting::kMapped;
}

unsigned targets_reaching(unsigned targets, Component component, ExpertTargeting targeting) {
  constexpr unsigned kMlpNames = kLoraGate | kLoraUp | kLoraDown;
  switch (targeting) {
    case ExpertTargeting::kModules: return targets;
    case ExpertTargeting::kMapped:
      return component == Component::kMlp || component == Component::kSharedExperts ? targets & ~kMlpNames : targets;
    case ExpertTargeting::kUnmapped:
      return component == Component::kExperts || component == Component::kRouter ? targets & ~(kMlpNames | kLoraRouter)
                                                                                 : targets;
  }
  return targets;
}

AdapterLayout adapter_layout(const Config& c) {
  const Implementation impl = resolve_implementation(c);
  return {expert_targeting(c), fuses_gate_up(impl.projections) && c.model.mlp == MlpKind::kGated};
}

std::vector<AdaptedLinear> adapted_linears(const ParameterCount& params, unsigned all_targets, AdapterLayout layout) {
  const ExpertTargeting targeting = layout.experts;
  const bool stacked_experts = targeting != ExpertTargeting::kModules;
  std::vector<AdaptedLinear> out;
  std::vector<bool> joined(params.groups.size(), false);  // an up projection fused into the gate before it
  const std::vector<TensorGroup>& g = params.groups;
  // The MoE layers these groups hold: one router each (a GPU's share under pipeline parallelism).
  Count moe_layers = 0;
  for (const TensorGroup& group : g) {
    if (group.component == Component::kRouter && !group.cols.is_zero()) moe_layers = group.count;
  }
  const TensorGroup* stacked_gate = nullptr;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (g[i].cols.is_zero() || g[i].lora_target == 0) continue;
    const unsigned targets = targets_reaching(all_targets, g[i].component, targeting);
    if (stacked_experts && g[i].component == Component::kExperts && !moe_layers.is_zero()) {
      if (!(g[i].lora_target & targets)) continue;
      const Count stack = g[i].count / moe_layers;
      AdaptedLinear a{g[i].cols, g[i].rows, moe_layers, g[i].lora_target, g[i].component, stack, 1};
      if (g[i].lora_target == kLoraGate) {  // held until up joins it (parameters.cpp: gate, then up)
        stacked_gate = &g[i];
        continue;
      }
      if (g[i].lora_target == kLoraUp && stacked_gate) {  // gate_up_proj: [E, 2·ff, d]
        a.out += stacked_gate->rows;
        a.target = kLoraGate | kLoraUp;
        a.rank_factor = 2;
        stacked_gate = nullptr;
      }
      out.push_back(a);
      continue;
    }
    if (joined[i]) continue;
    // A fused gate_up (layout.fused_gate_up): this gate with the up of the same MLP after it.
    const bool gate_up = layout.fused_gate_up && g[i].lora_target == kLoraGate && (targets & kLoraGate) &&
                         (targets & kLoraUp);
    if (gate_up) {
      AdaptedLinear fused{g[i].cols, g[i].rows, g[i].count, kLoraGate | kLoraUp, g[i].component};
      for (std::size_t j = i + 1; j < g.size() && g[j].component == g[i].component; ++j) {
        if (g[j].lora_target == kLoraUp && g[j].count == g[i].count && g[j].cols == g[i].cols) {
          fused.out += g[j].rows;
          joined[j] = true;
          break;
        }
      }
      out.push_back(fused);
      continue;
    }
    // parameters.cpp puts a linear layer's bias right after its weight, under the same name.
    const bool bias = i + 1 < g.size() && g[i + 1].cols.is_zero() && g[i + 1].component == g[i].component &&
                      g[i + 1].count == g[i].count && std::strcmp(g[i + 1].name, g[i].name) == 0;
    if (g[i].lora_target & targets) {
      out.push_back({g[i].cols, g[i].rows, g[i].count, g[i].lora_target, g[i].component, 1, 1, bias});
    }
    // A fused q/k/v: this block's q with the k and v weights that follow it (parameters.cpp order).
    if ((targets & kLoraQkv) && g[i].lora_target == kLoraQ) {
      AdaptedLinear fused{g[i].cols, g[i].rows, g[i].count, kLoraQkv, g[i].component, 1, 1, bias};
      for (std::size_t j = i + 1; j < g.size() && g[j].component == g[i].component; ++j) {
        if (g[j].lora_target == kLoraQ) break;
        const bool kv = g[j].lora_target == kLoraK || g[j].lora_target == kLoraV;
        if (kv && !g[j].cols.is_zero() && g[j].count == g[i].count) fused.out += g[j].rows;
      }
      out.push_back(fused);
    }
  }
  // gate without up (validate_peft reports it: PEFT refuses to adapt half of gate_up_proj).
  if (stacked_gate) {
    out.push_back({stacked_gate->cols, stacked_gate->rows, moe_layers, kLoraGate, Component::kExperts,
                   stacked_gate->count / moe_layers, 1});
  }
  return out;
}

namespace {

// modules_to_save (peft/utils/other.py ModulesToSaveWrapper): the wrapped module stays as it was,
// frozen, and a deep copy of it is trained in its place, in the original's dtype (PEFT casts only
// tuner layers to fp32). A head tied to the embedding is copied as a module of its own (the copy's
// weight is no longer tied). Only the tensors this GPU holds are copied.
//
// On a classification model the head saved is what PEFT's SEQ_CLS and TOKEN_CLS task types name
// (peft/utils/constants.py: modules_to_save ["classifier", "score"], matched as the end of a
// module's name, peft/utils/other.py): a decoder's score, an encoder's classifier Linear (BERT's
// pooler and DeBERTa's ContextPooler stay frozen), DistilBERT's pre_classifier too (its name ends
// in "classifier"), RoBERTa's and XLM-R's whole RobertaClassificationHead (dense and out_proj),
// and nothing of BART's and T5's sequence classifiers (their classification_head matches neither).
bool saved_with_classifier(const ModelSpec& m, const TensorGroup& g) {
  if (g.component != Component::kClassifier) return false;
  const std::string& t = m.model_type;
  if (m.is_encoder_decoder && m.output_head == OutputHead::kSequenceClassification) return false;
  if (std::string_view(g.name) != "classifier.dense") return true;
  return t == "roberta" || t == "xlm-roberta" || t == "distilbert";
}

void modules_to_save(const ModelSpec& m, const ParameterCount& params, unsigned which, PeftParameters& out) {
  const TensorGroup* embedding = nullptr;
  const TensorGroup* head = nullptr;
  for (const TensorGroup& g : params.groups) {
    if (g.component == Component::kTokenEmbedding && !embedding) embedding = &g;
    if (g.component == Component::kHead && !g.cols.is_zero() && !head) head = &g;
  }
  const auto copy = [&](const TensorGroup* g) {
    if (!g) return;
    out.trainable.push_back({g->rows, g->cols, g->count});
    out.saved_copies += g->elements_each() * g->count;
  };
  if (which & kSaveEmbedding) copy(embedding);
  if (!(which & kSaveHead)) return;
  if (m.classifies()) {
    for (const TensorGroup& g : params.groups) {
      if (saved_with_classifier(m, g)) copy(&g);
    }
    return;
  }
  copy(head ? head : embedding);
}

}  // namespace

PeftParameters peft_parameters(const Config& c, const ParameterCount& params) {
  const ModelSpec& m = c.model;
  const Finetune& f = c.training.finetune;
  PeftParameters out;
  Builder b{out};
  const std::vector<AdaptedLinear> linears = adapted_linears(params, f.lora_targets, adapter_layout(c));
  // The frozen base weight's dtype (FRoD's copies, GLoRA's zeros), and the adapters' (the buffers
  // PEFT creates beside them: fp32 under its autocast_adapter_dtype, else the base's).
  const Implementation impl = resolve_implementation(c);
  const Bytes base = lora_base_bytes(recipe_of(c), impl);
  const Bytes adapter = impl.lora_adapter_dtype == LoraAdapterDtype::kFp32 ? kFp32Bytes : base;
  switch (f.method) {
    case FinetuneMethod::kFull: break;
    case FinetuneMethod::kLora:
    case FinetuneMethod::kDora:
    case FinetuneMethod::kLoraFa:
    case FinetuneMethod::kAdaLora:
    case FinetuneMethod::kHira:
    case FinetuneMethod::kDeLora: low_rank(linears, f, adapter, b); break;
    case FinetuneMethod::kVera: vera(linears, f, b); break;
    case FinetuneMethod::kIa3: ia3(linears, f, b); break;
    case FinetuneMethod::kOft: oft(linears, f, b); break;
    case FinetuneMethod::kBoft: boft(linears, f, b); break;
    case FinetuneMethod::kLokr: lokr(linears, f, b); break;
    case FinetuneMethod::kRandLora: randlora(linears, f, b); break;
    case FinetuneMethod::kVbLora: vblora(linears, f, b); break;
    case FinetuneMethod::kTinyLora: tinylora(linears, f, b); break;
    case FinetuneMethod::kLoha:
    case FinetuneMethod::kHra:
    case FinetuneMethod::kMiss:
    case FinetuneMethod::kFourierFt:
    case FinetuneMethod::kWaveFt:
    case FinetuneMethod::kC3a:
    case FinetuneMethod::kRoad:
    case FinetuneMethod::kGraLora:
    case FinetuneMethod::kShira: per_linear(linears, f, b); break;
    case FinetuneMethod::kPromptTuning:
    case FinetuneMethod::kPTuning:
    case FinetuneMethod::kMultitaskPromptTuning:
    case FinetuneMethod::kCpt: prompt_encoder(m, f, b); break;
    case FinetuneMethod::kPrefixTuning:
    case FinetuneMethod::kCartridge: prefix_encoder(m, f, b); break;
    case FinetuneMethod::kFrod: frod(linears, f, base, b); break;
    case FinetuneMethod::kPvera: pvera(linears, f, adapter, b); break;
    case FinetuneMethod::kLily: lily(linears, f, b); break;
    case FinetuneMethod::kOsf: osf(linears, adapter, b); break;
    case FinetuneMethod::kAdamss: adamss(linears, f, adapter, b); break;
    case FinetuneMethod::kGlora: glora(linears, f, base, b); break;
    case FinetuneMethod::kPsoft: psoft(linears, f, b); break;
    case FinetuneMethod::kXlora: xlora(m, linears, f, b); break;
    case FinetuneMethod::kShadow: shadow(m, params, f, b); break;
    case FinetuneMethod::kBeft:
    case FinetuneMethod::kPoly:
    case FinetuneMethod::kPeanut:
    case FinetuneMethod::kSupertuning:
    case FinetuneMethod::kDeft:
    case FinetuneMethod::kUnilora: per_linear_more(linears, f, adapter, b); break;
    case FinetuneMethod::kLlamaAdapter:
    case FinetuneMethod::kLlamaAdapterV2: llama_adapter(m, params, f, b); break;
    case FinetuneMethod::kLnTuning: ln_tuning(params, b); break;
    case FinetuneMethod::kTrainableTokens: b.train(f.num_trainable_tokens, m.hidden_size, 1); break;
  }
  if (f.method != FinetuneMethod::kFull) modules_to_save(m, params, f.modules_to_save, out);
  return out;
}

bool adapts_linears_method(FinetuneMethod m) {
  switch (m) {
    case FinetuneMethod::kFull:
    case FinetuneMethod::kPromptTuning:
    case FinetuneMethod::kPrefixTuning:
    case FinetuneMethod::kPTuning:
    case FinetuneMethod::kLlamaAdapter:
    case FinetuneMethod::kLlamaAdapterV2:
    case FinetuneMethod::kLnTuning:
    case FinetuneMethod::kTrainableTokens:
    case FinetuneMethod::kMultitaskPromptTuning:
    case FinetuneMethod::kCpt:
    case FinetuneMethod::kCartridge:
    case FinetuneMethod::kShadow: return false;  // it adapts whole blocks
    default: return true;
  }
}

bool uses_rank_method(FinetuneMethod m) {
  switch (m) {
    case FinetuneMethod::kShadow: return true;  // its bottlenecks' rank
    case FinetuneMethod::kIa3:
    case FinetuneMethod::kOft:
    case FinetuneMethod::kBoft:
    case FinetuneMethod::kFourierFt:
    case FinetuneMethod::kWaveFt:
    case FinetuneMethod::kC3a:
    case FinetuneMethod::kRoad:
    case FinetuneMethod::kBeft:
    case FinetuneMethod::kFrod:
    case FinetuneMethod::kOsf:
    case FinetuneMethod::kSupertuning: return false;
    default: return adapts_linears_method(m);
  }
}

bool prepends_virtual_tokens(FinetuneMethod m) {
  return m == FinetuneMethod::kPromptTuning || m == FinetuneMethod::kPTuning ||
         m == FinetuneMethod::kMultitaskPromptTuning || m == FinetuneMethod::kCpt;
}

bool prefixes_keys_values(FinetuneMethod m) { return m == FinetuneMethod::kPrefixTuning || m == FinetuneMethod::kCartridge; }

namespace {

bool is_lora_style(FinetuneMethod m) {
  switch (m) {
    case FinetuneMethod::kLora:
    case FinetuneMethod::kDora:
    case FinetuneMethod::kAdaLora:
    case FinetuneMethod::kGraLora:
    case FinetuneMethod::kVbLora: return true;
    default: return false;
  }
}

// A fused qkv target's output is q's, k's and v's at once.
unsigned expanded(unsigned targets) { return targets & kLoraQkv ? targets | kLoraQ | kLoraK | kLoraV : targets; }

constexpr unsigned kEveryLinear = kLoraQ | kLoraK | kLoraV | kLoraO | kLoraGate | kLoraUp | kLoraDown;

// One block's share of tensors over `count` instances of a layer across the model: an expert sees
// tokens · k / E of the tokens.
struct LayerShare {
  const ModelSpec& m;
  Count tokens;
  Count batch = 1;     // sequences (Poly mixes its skills per sequence)
  bool casts = false;  // adapters in fp32 beside a 16-bit stream: an input cast to them is a copy
  Bytes act{2};        // the compute dtype
  Bytes adapter{2};    // what the adapters' matmuls give: fp32 adapters' dtype, 16-bit under autocast
  Bytes stream{2};     // the layer's input x (fp32 over fp32 weights under autocast)
  // An input cast to fp32 adapters stays fp32 (no autocast): methods whose adapters are mixed or
  // rebuilt by matmuls first (Poly, PEANuT) then cast their input too; under autocast those matmuls
  // give bf16, and the cast leaves the input as it is.
  bool fp32_casts() const { return casts && adapter == kFp32Bytes && act != kFp32Bytes; }
  Bytes param{2};  // the adapters' own dtype (fp32 under PEFT's autocast_adapter_dtype)
  // The layers are Hugging Face PEFT's (a transformers model wrapped by get_peft_model), not a
  // framework's own adapter modules (torchtune's DoRALinear, LitGPT's LoRALinear).
  bool hf_peft = true;
  // DoRA's, IA3's and RoAd's layers return fp32 (peft_returns_fp32): what they keep of the 4-bit
  // layer's output (or IA3's feedforward input) is in the layer's input dtype (input_of).
  bool fp32_results = false;
  bool autocast = true;
  // The dtype of what they keep when the layers return fp32: under autocast the adapted layer's
  // input's (the norm's output for q, k, v, gate and up, the stream's; the attention's for o,
  // 16-bit; the MLP's activation for down, fp32); without it IA3's and RoAd's fp32 casts.
  Bytes input_of(const AdaptedLinear& a) const {
    if (!autocast) return kFp32Bytes;
    return a.target == kLoraDown ? kFp32Bytes : a.target == kLoraO ? act : stream;
  }
  Count per_layer(const AdaptedLinear& a, Count width) const {  // activation elements per layer
    const bool expert = a.component == Component::kExperts && m.num_experts > 0;
    const Count routed = expert ? tokens * m.num_experts_per_tok : tokens;
    return a.count * routed * width / (Count(m.num_hidden_layers) * (expert ? m.num_experts : 1));
  }
  Count weights_per_layer(const AdaptedLinear& a, Count elements) const {
    return a.count * elements / m.num_hidden_layers;
  }
};

// Which tensor a layer reads: adapters on the same input save it once (one storage).
int input_group(const AdaptedLinear& a) {
  const int base = static_cast<int>(a.component) * 8;
  if (a.target & (kLoraQ | kLoraK | kLoraV | kLoraQkv)) return base + 1;
  if (a.target & (kLoraGate | kLoraUp)) return base + 2;
  return base + 3 + static_cast<int>(a.target == kLoraDown);
}

// Dense tensors a method's layer makes for a moment: how many [out, in] weights in each dtype (the
// dtype of its act_elements, fp32, its adapters' matmuls', its adapters' own, the compute dtype)
// and [in, in] squares (in its adapters' matmul dtype, x's, fp32).
struct Dense {
  std::uint8_t element = 0, fp32 = 0, adapter = 0, param = 0, act = 0;
  std::uint8_t square_adapter = 0, square_stream = 0, square_fp32 = 0;
};

// The per-target tensors of the methods that are not LoRA-style (a table, one case per method:
// hence its length), in elements (those of the
// compute dtype) and fp32 bytes. Sources: each method's forward in peft/tuners/<m>/layer.py.
struct TargetSaved {
  Count act_elements = 0;  // in the compute dtype
  Bytes fp32_bytes{0};
  bool saves_input = false;  // the layer's input, shared with the adapters on the same input
  bool casts_input = false;  // ... cast to the adapters' dtype first (x.to(A.dtype)): a copy of its own
  bool input_fp32 = false;   // ... which stays fp32 under autocast (no matmul reads it first)
  // act_elements made from fp32 adapters (or a tensor cast to their dtype) on a 16-bit model without
  // autocast: fp32 too (peft_saved.py's bf16 cases); elsewhere in the compute dtype.
  bool in_adapter_dtype = false;
  // ... or made by an explicit cast to the fp32 adapters (x.to(dtype), not an autocast op): fp32
  // wherever the adapters are cast to, under autocast too.
  bool cast_fp32 = false;
  // What the forward makes beyond what it saves, alive at once at its high point (the factors of a
  // dense update before their product, an FFT's complex output); what its backward makes at once
  // beyond the gradients the block's own tensors get (the gradient of a dense update F.linear read
  // and what the method builds from it, past the update itself, which F.linear saved and frees as
  // its backward ends); and, where the forward saves nothing (checkpointing), what is alive at once
  // instead of the saved tensors, if less (a chain of products keeps only its last links). Freed as
  // the layer returns (peft_temporaries). Counted in whole [out, in] weights and [in, in] squares.
  Dense temporary, backward, dropped;
};

TargetSaved target_saved(const Finetune& f, const AdaptedLinear& a, const LayerShare& share) {
  const Count r = f.lora_rank, in = a.in, out = a.out, weight = a.in * a.out;
  TargetSaved t;
  switch (f.method) {
    case FinetuneMethod::kDora: {  // dora.py: (m/‖W′‖ − 1)·base_result + m/‖W′‖·lora_result·s, ‖W′‖ [out]
      // base_result in the compute dtype, lora_result in the adapters' (fp32 on a 16-bit model)
      const bool dropped = f.lora_dropout > 0.0 && share.hf_peft;
      t.act_elements = share.per_layer(a, out);
      t.fp32_bytes = share.weights_per_layer(a, out * 3) * kFp32Bytes;
      if (!(dropped && share.fp32_results)) {
        t.fp32_bytes += share.per_layer(a, out) * (share.fp32_results ? share.input_of(a)
                                                   : share.fp32_casts()  ? kFp32Bytes
                                                                         : share.act);
      }
      if (dropped) {
        // With dropout the layer's own output cannot serve (lora/variants.py passes base_result=None;
        // torchtune's DoRALinear drops out only the adapters' input and keeps its base output):
        // DoRA runs F.linear(dropout(x), W.to(x.dtype)) again, in the adapters' matmul dtype, and
        // that saves the weight it read for x's gradient: a copy of W [out, in] wherever W had to be
        // dequantised or cast (to the adapters' dtype, or by autocast to 16 bits). Over a
        // bitsandbytes base under autocast (fp32 results) the products keep that output and the LoRA
        // output, both 16-bit, not the 4-bit layer's.
        if (!share.fp32_results) t.act_elements = 0;
        t.fp32_bytes += share.per_layer(a, out) * share.adapter;
        if (f.base_bits < 16 || share.stream != share.param || share.adapter != share.param) {
          t.fp32_bytes += share.weights_per_layer(a, weight) * share.adapter;
        }
      }
      break;
    }
    case FinetuneMethod::kLoraFa:  // A frozen: only A x for B
      t.act_elements = share.per_layer(a, r);
      t.in_adapter_dtype = true;
      break;
    case FinetuneMethod::kAdaLora:  // adalora/layer.py: x @ (A ⊙ E)ᵀ saves A ⊙ E [r, in], and ranknum + ε
      t.fp32_bytes = share.weights_per_layer(a, r * in + 1) * kFp32Bytes;
      // On a 16-bit model autocast_adapter_dtype casts the adapters to fp32, which re-wraps ranknum
      // as a Parameter that requires grad: `(…) / ranknum` then saves its [t, out] numerator, in the
      // adapters' matmul dtype (bf16 under autocast).
      if (share.casts) t.fp32_bytes += share.per_layer(a, out) * share.adapter;
      break;
    case FinetuneMethod::kGraLora:  // gralora/layer.py: the k sub-blocks' r-wide outputs (k · t · r, not t · r)
      t.act_elements = share.per_layer(a, r * (kGraLoraBlocks - 1));
      t.in_adapter_dtype = true;
      break;
    case FinetuneMethod::kVbLora:  // vblora/layer.py: top-k of the logits, the gathered vectors, A and B built
      t.fp32_bytes = share.weights_per_layer(a, r * (in + out) * (1 + kVbLoraTopK)) * kFp32Bytes +
                     share.weights_per_layer(a, r * (in + out) / kVbLoraVectorLength * kVbLoraTopK) *
                         (kInt64Bytes + kFp32Bytes);
      break;
    case FinetuneMethod::kDeLora:  // delora/layer.py: its own copy of x, A x and its normalised copy, norms
      t.act_elements = share.per_layer(a, in + r * 2);
      t.fp32_bytes = share.weights_per_layer(a, r * 6 + 1) * kFp32Bytes;
      t.in_adapter_dtype = true;  // x · w_norm (an fp32 buffer) promotes: fp32 from there on
      break;
    case FinetuneMethod::kVera:  // λ_d ⊙ Ax, λ_b ⊙ B(·)
      t.act_elements = share.per_layer(a, r + out);
      t.in_adapter_dtype = true;
      break;
    case FinetuneMethod::kTinyLora:  // tinylora/layer.py: R = Σ v_i P_i [r, r] and R A x
      t.act_elements = share.per_layer(a, r);
      t.in_adapter_dtype = true;
      t.fp32_bytes = share.weights_per_layer(a, r * r) * kFp32Bytes;
      break;
    case FinetuneMethod::kIa3: {  // ia3/layer.py: the scaled tensor and the flattened scale
      const bool feedforward = (a.target & f.feedforward_modules) != 0;  // scales its input, not its output
      const Count width = feedforward ? in : out;
      t.act_elements = share.per_layer(a, width);
      t.fp32_bytes = share.weights_per_layer(a, width) * kFp32Bytes;
      t.cast_fp32 = feedforward;  // a feedforward layer scales its input cast to the scale's dtype
      if (share.fp32_results) {  // over a bitsandbytes base: under autocast no cast, else x.float() (ia3/bnb.py)
        t.act_elements = 0;
        t.cast_fp32 = false;
        t.fp32_bytes += share.per_layer(a, width) * share.input_of(a);
      }
      break;
    }
    case FinetuneMethod::kOft: {  // x cast and permuted for the block rotation; Cayley's four nb·b² pieces
      const Count b = oft_block_size(in.value(), f.block_size > 0 ? f.block_size : kOftBlockSize);
      t.act_elements = share.per_layer(a, in);
      t.fp32_bytes = share.weights_per_layer(a, in * b * 4) * kFp32Bytes;
      t.in_adapter_dtype = true;  // x = self._cast_input_dtype(x, oft_R.weight.dtype)
      break;
    }
    case FinetuneMethod::kRoad:  // road/layer.py: the base output twice (θ, α) and six [out] rotation vectors
      // The base output is cast to θ's dtype first and rotated elementwise, neither an autocast op:
      // fp32 whenever the adapters are (under autocast too).
      t.act_elements = share.per_layer(a, out * 2);
      t.fp32_bytes = share.weights_per_layer(a, out * 6) * kFp32Bytes;
      t.cast_fp32 = true;
      if (share.fp32_results) {  // over a bitsandbytes base: under autocast the base output as it is
        t.act_elements = 0;
        t.cast_fp32 = false;
        t.fp32_bytes += share.per_layer(a, out * 2) * share.input_of(a);
      }
      break;
    case FinetuneMethod::kMiss:  // x summed into r groups
      t.act_elements = share.per_layer(a, r);
      t.in_adapter_dtype = true;
      break;
    case FinetuneMethod::kC3a:  // c3a/layer.py: x in blocks, through the FFT (x.to(torch.float32) first)
      t.saves_input = true;
      t.casts_input = t.input_fp32 = share.casts;  // an explicit cast: fp32 under autocast too
      break;
    case FinetuneMethod::kRandLora: {  // randlora/layer.py: the [min, min] update and x through it
      const Count side = min(in, out);
      t.act_elements = share.per_layer(a, side) + share.weights_per_layer(a, side * side);
      t.in_adapter_dtype = true;
      // Under autocast F.linear(x, update_B) saves the 16-bit cast of the frozen random basis
      // [max(in, out), min(in, out)] it makes for x's gradient (the fp32 basis is a buffer).
      if (share.casts && !share.fp32_casts()) t.fp32_bytes += share.weights_per_layer(a, weight) * share.adapter;
      break;
    }
    case FinetuneMethod::kHra:  // hra/layer.py: the r Householder products (in × in, fp32) and the new weight
      t.act_elements = share.weights_per_layer(a, weight);
      // The Householder products are matmuls: 16-bit under autocast.
      t.fp32_bytes = share.weights_per_layer(a, in * in * (r + 1)) * share.adapter +
                     share.weights_per_layer(a, in * (r + 1) + r) * kFp32Bytes;
      t.saves_input = true;
      // On a 16-bit model the frozen weight is cast to the rotation's fp32 for W·R (a copy the
      // product saves), and x to it for F.linear.
      if (share.fp32_casts()) t.fp32_bytes += share.weights_per_layer(a, weight) * kFp32Bytes;
      t.casts_input = share.fp32_casts();
      // each step of the chain, weight − 2·(weight u) uᵀ, makes (weight u) uᵀ and its double [in, in]
      // beside the running product; unsaved, only the running product and the next one stay besides
      t.temporary.square_adapter = t.dropped.square_adapter = 2;
      break;
    case FinetuneMethod::kBoft: {  // boft/layer.py: Cayley blocks, the butterfly products [in, in], scaled output
      const Count b = f.block_size > 0 ? f.block_size : kBoftBlockSize;
      // What bmm and the rotation save takes x's dtype (boft_rotation.to(previous_dtype), and the
      // permutations' copy self.boft_P.to(x)): two [in, in] products, and the copy [m, in, in], which
      // is the buffer itself (no memory of its own) where the buffer already sits on x's device in
      // x's dtype (peft_saved.py: fp32 and bf16 models, measured by storage).
      const bool copied = f.loaded_before_wrapping || share.stream != kFp32Bytes;
      t.act_elements = share.per_layer(a, out);
      t.fp32_bytes = share.weights_per_layer(a, in * in * 2) * share.stream +
                     (copied ? share.weights_per_layer(a, in * in * max(Count(1), Count(f.boft_n_butterfly_factor))) *
                                   share.stream
                             : Bytes{0}) +
                     share.weights_per_layer(a, in * b * 3 + out * 2) * kFp32Bytes +
                     share.weights_per_layer(a, in) * Bytes{4};  // int32 block indices
      t.saves_input = true;
      // the block diagonal (fp32: the author's kernels give nothing else) beside its cast to x's
      // dtype (none where x is fp32); in backward the rotation's gradient and a product's
      t.temporary.square_fp32 = 1;
      if (share.stream != kFp32Bytes) t.temporary.square_stream = 1;
      t.backward.square_stream = 2;
      break;
    }
    case FinetuneMethod::kShira:  // shira/layer.py: the sparse delta's r(in + out) values and int64 indices
      t.fp32_bytes = share.weights_per_layer(a, min(r * (in + out), weight)) * (kFp32Bytes + kInt64Bytes * 2);
      t.act_elements = share.weights_per_layer(a, weight);
      t.saves_input = true;
      // new_weight += the sparse delta, made dense in the adapters' dtype for the add; in backward
      // the new weight's gradient in that dtype beside its own
      t.temporary.param = t.backward.param = 1;
      break;
    case FinetuneMethod::kWaveFt: {  // waveft/layer.py: the coefficient map [out, in], [2, n] indices, a mask
      const Count n = f.n_frequency > 0 ? f.n_frequency : kWaveFtFrequencies;
      // The map comes out of the inverse transform's convolutions: 16-bit under autocast.
      t.fp32_bytes = share.weights_per_layer(a, weight) * share.adapter +
                     share.weights_per_layer(a, n) * (kInt64Bytes * 2 + kByte);
      t.act_elements = share.weights_per_layer(a, weight);
      t.saves_input = true;
      t.casts_input = share.fp32_casts();  // x cast to the fp32 update for F.linear
      // the padded dense spectrum and waverec2d's column and row passes, [out, in] each, on the way
      // to the update (the spectrum and the first pass in the coefficients' fp32, the second out of a
      // convolution: 16-bit under autocast); in backward the update's gradient back through it
      t.temporary.param = 2;
      t.temporary.adapter = 1;
      t.backward.adapter = 5;
      break;
    }
    case FinetuneMethod::kFourierFt:  // fourierft/layer.py: + the [2, n] int64 spectrum indices
      t.fp32_bytes = share.weights_per_layer(a, Count(f.n_frequency > 0 ? f.n_frequency : kFourierFtFrequencies) * 2) *
                     kInt64Bytes;
      t.act_elements = share.weights_per_layer(a, weight);
      t.saves_input = true;
      // x cast to the fp32 update for F.linear; the update comes out of ifft2, no autocast op, so
      // under autocast too (F.linear then saves autocast's 16-bit copy of x, one per adapter).
      t.casts_input = share.casts;
      // the dense spectrum [out, in] (fp32) and ifft2's complex64 output with its working copy,
      // before .real * scaling makes the update
      t.temporary.fp32 = 4;
      // in backward: the update's gradient, its scaled copy, and ifft2's backward in complex64 (one
      // past the update)
      t.backward.fp32 = 3;
      break;
    case FinetuneMethod::kAdamss: {  // adamss/layer.py: x through the frozen basis [t, R], its subspace outputs
      // [t, K'], and the int64 scatter index [out] each forward copies
      const Count rank = min(r, min(out, in + (a.bias ? 1 : 0)));
      t.act_elements = share.per_layer(a, rank + min(Count(kAdamssSubspaces), out));
      t.fp32_bytes = share.weights_per_layer(a, out) * kInt64Bytes;
      break;
    }
    case FinetuneMethod::kLily:  // lily/layer.py: A x [t, r], the router's softmax [t, num_B], the mixed B [r, out]
      t.act_elements = share.per_layer(a, r + kLilyExperts);
      t.fp32_bytes = share.weights_per_layer(a, r * out + kLilyExperts) * kFp32Bytes;
      t.saves_input = t.casts_input = true;
      break;
    case FinetuneMethod::kPoly:  // poly/layer.py: x A_mix [t, r]; each sequence's mixed A [in, r] and B [r, out]
      t.act_elements = share.per_layer(a, r);
      t.fp32_bytes = share.weights_per_layer(a, r * (in + out) + kPolySkills * 6 + 1) * share.batch * kFp32Bytes;
      t.saves_input = true;
      t.casts_input = share.fp32_casts();
      break;
    case FinetuneMethod::kFrod: {  // frod/layer.py: x through V [t, in]; the sparse λ_s's values and int64 indices
      const Count nnz = frod_entries(in);
      t.act_elements = share.per_layer(a, in);
      t.fp32_bytes = share.weights_per_layer(a, nnz) * (kFp32Bytes + kInt64Bytes * 2);
      // In 16 bits the sparse λ_s is made dense first (S_sparse.to_dense()): [in, in] and its scale [in].
      if (share.act != kFp32Bytes) t.fp32_bytes += share.weights_per_layer(a, in * in + in) * share.act;
      // Projections left on the CPU (loaded_before_wrapping) come over in every forward
      // (_get_frod_tensors: U.to(device, dtype), V likewise), and F.linear(·, U) and matmul(·, V)
      // save those copies: U's [out, in], and V's [in, in] where no 16-bit term above stands for it.
      if (f.loaded_before_wrapping) {
        t.fp32_bytes += share.weights_per_layer(a, out * in + (share.act == kFp32Bytes ? in * in : Count(0))) *
                        share.stream;
      }
      break;
    }
    case FinetuneMethod::kPvera:  // pvera/layer.py: in training the sampled [t, 2r] code, its parts, λ_b's input (fp32)
      t.fp32_bytes = share.per_layer(a, r * 4 + out) * kFp32Bytes;
      break;
    case FinetuneMethod::kGlora:  // glora/layer.py: W + W ⊙ A + B built as a dense weight, then F.linear(x, ·)
      t.act_elements = share.weights_per_layer(a, weight);
      // Under autocast its fp32 factors are cast to the weight's dtype for the sum: A's and B's
      // pairs (without autocast the sum is fp32 and keeps the factors themselves).
      if (share.casts && !share.fp32_casts()) t.fp32_bytes = share.weights_per_layer(a, r * (in + out) * 2) * share.act;
      t.saves_input = true;
      // W ⊙ A in the adapters' dtype and the partial sum in the weight's, before W + W ⊙ A + B
      t.temporary.adapter = t.temporary.act = 1;
      // in backward: the dense weight's gradient, its product with W, and that in the adapters' dtype
      t.backward.act = t.backward.adapter = 1;
      break;
    case FinetuneMethod::kPeanut:  // peanut/layer.py: ΔWᵀ [in, out] rebuilt each forward, Wᵀ·A_inᵀ [in, r], and x;
      // over a 16-bit base also the weight's cast to its adapters
      t.fp32_bytes = share.weights_per_layer(a, weight * (share.casts ? 2 : 1) + in * r) * share.adapter;
      t.saves_input = true;
      t.casts_input = share.fp32_casts();
      t.temporary.adapter = 1;  // ΔWᵀ before W + ΔW
      t.backward.adapter = 1;   // in backward ΔW's gradient
      break;
    case FinetuneMethod::kUnilora:  // unilora/layer.py: A and B gathered from θ (fp32), A x [t, r]
      t.act_elements = share.per_layer(a, r);
      t.fp32_bytes = share.weights_per_layer(a, r * (in + out)) * share.adapter;
      t.saves_input = t.casts_input = true;
      break;
    case FinetuneMethod::kOsf: {  // osf/layer.py: the low-rank path's [t, q] twice and its rebuilt factors
      const Count trained = min(in, out) - min(in, out) / 2;
      t.act_elements = share.per_layer(a, trained * 2);
      t.fp32_bytes = share.weights_per_layer(a, trained * (in + out) * 2) * share.adapter;
      t.saves_input = t.casts_input = true;
      break;
    }
    case FinetuneMethod::kXlora:  // xlora/layer.py: each adapter reads x scaled by its mix; frozen, they keep
      // only x cast to their fp32 (x * scaling is no autocast op: fp32 under autocast too); the mixes
      // [t, N, n] are one tensor for the model (peft_outside_bytes)
      t.saves_input = t.casts_input = true;
      t.input_fp32 = true;
      break;
    case FinetuneMethod::kPsoft:  // psoft/layer.py: A x [t, r] (fp32) and the r × r rotation's pieces
      t.fp32_bytes = share.per_layer(a, r) * kFp32Bytes + share.weights_per_layer(a, r * r * 5 + r) * kFp32Bytes;
      break;
    case FinetuneMethod::kSupertuning:  // supertuning/layer.py: W with its k entries scattered in, their int64 indices
      t.act_elements = share.weights_per_layer(a, weight);
      t.fp32_bytes = share.weights_per_layer(a, sparse_entries(weight, 1.0 - kSupertuningSparsity)) * kInt64Bytes;
      t.saves_input = true;
      // the scattered entries' dense [out, in] in the adapters' dtype, before W takes them
      t.temporary.param = 1;
      break;
    case FinetuneMethod::kDeft: {  // deft/layer.py: the base output cast to fp32, two [t, r'], relu(P) and s R
      const Count rank = min(r, out);
      t.fp32_bytes = share.per_layer(a, out) * kFp32Bytes +
                     (share.per_layer(a, rank * 2) + share.weights_per_layer(a, rank * (out + in))) * share.adapter;
      t.saves_input = t.casts_input = true;
      break;
    }
    case FinetuneMethod::kLoha:  // loha/layer.py: HadaWeight recomputes its factors in backward; a 0-dim scale
      t.fp32_bytes = share.weights_per_layer(a, 1) * kFp32Bytes;
      // ((w1a @ w1b) * (w2a @ w2b)) * scale: the two products beside theirs, which the scale replaces
      t.temporary.element = 2;
      // HadaWeight.backward (no autocast there: the factors' products in their fp32): beside the
      // update's gradient, grad_out * scale, one factor product and temp, then the other product
      // and the next temp before the first goes (five, one past the update)
      t.backward.param = 4;
      [[fallthrough]];
    case FinetuneMethod::kLokr:
    case FinetuneMethod::kHira:  // a dense delta (or new) weight built in forward, then F.linear(x, ·)
      t.act_elements = share.weights_per_layer(a, weight);
      t.saves_input = true;
      // On a 16-bit model x is cast to the fp32 update (_cast_input_dtype). LoKr's update is a
      // Kronecker product, no autocast op, so it is fp32 under autocast too and x is cast there as
      // well; HiRA casts x to its fp32 A whatever the update's dtype. F.linear then saves
      // autocast's 16-bit copy of that cast, one per adapter. LoHa's update comes out of matmuls,
      // 16-bit under autocast, and x is read as it is.
      t.casts_input = f.method == FinetuneMethod::kLoha ? share.fp32_casts() : share.casts;
      // LoKr: torch.kron(w1, w2) before make_kron scales it; HiRA: B·A [out, in] and W ⊙ (B·A)
      // before the cast weight F.linear reads
      // (the Kronecker product is no autocast op: in the factors' fp32 under autocast too)
      if (f.method == FinetuneMethod::kLokr) t.temporary.param = 1;
      if (f.method == FinetuneMethod::kHira) t.temporary.element = 2;
      // in backward: the update's gradient and, LoKr, its scaled copy and the Kronecker backward's
      // reshaped sum; HiRA, the gradient of W ⊙ (B·A) for B·A and the cast weight's product with it
      // (three, one past the update)
      if (f.method == FinetuneMethod::kLokr) t.backward.param = 2;
      if (f.method == FinetuneMethod::kHira) t.backward.element = 2;
      break;
    default: break;
  }
  return t;
}

// The layers of a run: `input_copy` the element of an adapter's own cast of its input (zero where
// none is made), `stream` the layer's input. Without autocast, fp32 adapters over an fp32 stream (a
// 4-bit base after prepare_model_for_kbit_training) compute in fp32 without a cast.
LayerShare layer_share(const Config& c, Count tokens, Count batch, Bytes act, Bytes input_copy, Bytes stream) {
  const Implementation impl = resolve_implementation(c);
  const bool fp32_adapters = impl.lora_adapter_dtype == LoraAdapterDtype::kFp32;
  const PrecisionRecipe& r = recipe_of(c);
  const Bytes adapter = !input_copy.is_zero()                                  ? input_copy
                        : fp32_adapters && !r.autocast && stream == kFp32Bytes ? kFp32Bytes
                                                                               : act;
  LayerShare share{c.model, tokens, batch, !input_copy.is_zero(), act, adapter, stream};
  share.param = fp32_adapters ? kFp32Bytes : lora_base_bytes(r, impl);
  share.hf_peft = implementation_profile(impl.framework).transformers_attention;
  share.fp32_results = peft_returns_fp32(c);
  share.autocast = r.autocast;
  return share;
}

// The dtype of a method's act_elements: a method that casts its input to fp32 adapters computes in
// their dtype from there on.
Bytes element_of(const TargetSaved& t, const LayerShare& share, Bytes input_copy) {
  return t.casts_input && !input_copy.is_zero()                                         ? input_copy
         : (t.in_adapter_dtype && share.fp32_casts()) || (t.cast_fp32 && share.casts) ? kFp32Bytes
                                                                                      : share.act;
}

void adapter_terms(const Config& c, Count batch, Count tokens, Bytes act, Bytes input_copy, Bytes stream,
                   std::vector<NamedBytes>& terms) {
  const Finetune& f = c.training.finetune;
  const LayerShare share = layer_share(c, tokens, batch, act, input_copy, stream);
  Bytes saved{0}, inputs{0};
  std::vector<int> seen;
  // activations.cpp counts the input a quantised base keeps already (old bitsandbytes, ChatGLM's).
  const bool base_keeps_input = quantized_base_keeps_input(c);
  for (const AdaptedLinear& a : adapted_linears(count_parameters(c.model), f.lora_targets, adapter_layout(c))) {
    // Stacked experts' adapters fold into the weight; activations.cpp counts what that keeps.
    if (a.stack > Count(1)) continue;
    const TargetSaved t = target_saved(f, a, share);
    const Bytes element = element_of(t, share, input_copy);
    saved += t.act_elements * element + t.fp32_bytes;
    const int group = input_group(a);
    if (t.saves_input && t.casts_input && !input_copy.is_zero()) {
      // each adapter's own cast, as LoRA's (activations.cpp)
      inputs += share.per_layer(a, a.in) * (t.input_fp32 ? kFp32Bytes : input_copy);
    } else if (t.saves_input && !base_keeps_input && std::find(seen.begin(), seen.end(), group) == seen.end()) {
      seen.push_back(group);
      inputs += share.per_layer(a, a.in) * act;
    }
  }
  if (!saved.is_zero()) terms.push_back({"peft.adapters", saved});
  if (!inputs.is_zero()) terms.push_back({"peft.adapter_inputs", inputs});
}

// PEFT's adaption_prompt (adaption_prompt/layer.py forward) in each adapted layer: the prompt's
// keys and values through k_proj and v_proj, fp32 scores of every query against them (softmax
// output, and its cast for the value matmul), and the adapter output the gate scales. LitGPT's v2
// also scales every linear output (adapter_scale: saved for its gradient).
void llama_adapter_terms(const Config& c, Count batch, Count seq, Bytes act, std::vector<NamedBytes>& terms) {
  const ModelSpec& m = c.model;
  const Finetune& f = c.training.finetune;
  const Count heads = m.num_attention_heads, len = f.adapter_len, tokens = batch * seq;
  const Count scores = batch * heads * seq * len;
  // Queries recomputed, keys and values repeated to every head, fp32 softmax and its cast, and the
  // rotary tables the wrapped attention recomputes per layer.
  terms.push_back({"peft.adaption_attention", scores * (kFp32Bytes + act) + tokens * heads * m.head_size() * act +
                                                  batch * len * heads * m.head_size() * 2 * act +
                                                  seq * m.head_size() * 2 * act});
  if (f.method != FinetuneMethod::kLlamaAdapterV2) return;
  Count outputs = 0;
  const LayerShare share{m, tokens};
  for (const AdaptedLinear& a : adapted_linears(count_parameters(m), kEveryLinear, AdapterLayout{})) {
    outputs += share.per_layer(a, a.out);
  }
  terms.push_back({"peft.adapter_v2_scaled_outputs", outputs * act});
}

}  // namespace

PeftActivation peft_activation(const Config& c) {
  const Finetune& f = c.training.finetune;
  PeftActivation p;
  if (f.method == FinetuneMethod::kFull) return p;
  p.lora_style = is_lora_style(f.method);
  p.grad_targets = adapts_linears_method(f.method) ? expanded(f.lora_targets) : 0;
  if (prepends_virtual_tokens(f.method)) {
    p.extra_tokens = f.num_virtual_tokens;
    p.input_needs_grad = true;
  } else if (prefixes_keys_values(f.method)) {
    p.extra_keys = f.num_virtual_tokens;
    p.input_needs_grad = true;  // the first block's keys and values carry trained prefixes
  }
  switch (f.method) {
    case FinetuneMethod::kLlamaAdapter: p.frozen_bottom_layers = f.adapter_start_layer; break;
    case FinetuneMethod::kLlamaAdapterV2:
      p.grad_targets = kEveryLinear;
      p.input_needs_grad = p.norms_trained = true;
      break;
    case FinetuneMethod::kLnTuning: p.input_needs_grad = p.norms_trained = true; break;
    case FinetuneMethod::kShadow: p.input_needs_grad = true; break;  // every block's input carries the injection
    case FinetuneMethod::kTrainableTokens: p.input_needs_grad = true; break;
    default: break;
  }
  // A trained copy of the token embedding (modules_to_save embed): its output, the first block's
  // input, needs a gradient.
  if (f.modules_to_save & kSaveEmbedding) p.input_needs_grad = true;
  return p;
}

std::vector<NamedBytes> peft_layer_terms(const Config& c, Count batch, Count seq, Bytes act, Bytes input_copy,
                                         Bytes stream) {
  std::vector<NamedBytes> terms;
  const FinetuneMethod method = c.training.finetune.method;
  if (method == FinetuneMethod::kFull || method == FinetuneMethod::kLora) return terms;
  const ModelSpec& m = c.model;
  if (prefixes_keys_values(method)) {
    // The prefix's keys and values join every layer's (past_key_values): flash attention saves k
    // and v unrepeated, eager attention the copies repeated to every query head.
    // (The kernel the run resolves to: a profile whose default is flash keeps k and v unrepeated.)
    const bool flash = resolve_implementation(c).attention == AttentionImpl::kFlash;
    const Count kv_heads = flash ? Count(m.kv_heads()) : Count(m.num_attention_heads);
    // The rotary tables are recomputed for every layer when a cache carries the prefix.
    terms.push_back({"peft.prefix_keys_values",
                     batch * c.training.finetune.num_virtual_tokens * kv_heads * m.head_size() * 2 * act +
                         seq * m.head_size() * 2 * act});
  } else if (method == FinetuneMethod::kLlamaAdapter || method == FinetuneMethod::kLlamaAdapterV2) {
    llama_adapter_terms(c, batch, seq, act, terms);
  } else if (method == FinetuneMethod::kShadow) {
    // shadow/layer.py, in fp32: each block's injection keeps h − s (or its dropped-out copy and the
    // mask) and the rank-r bottleneck; every block but the last (whose update nothing reads)
    // keeps its output, the gate, the candidate, 1 − gate and the previous state, and the update
    // MLPs' hidden values before and after GELU.
    const Count tokens = batch * seq, d = m.hidden_size, r = c.training.finetune.lora_rank, layers = m.num_hidden_layers;
    const Bytes mask = c.training.finetune.lora_dropout > 0.0 ? tokens * d * kByte : Bytes{0};  // a bool mask
    terms.push_back({"peft.shadow_injection", tokens * (d + r) * kFp32Bytes + mask});
    terms.push_back({"peft.shadow_update", mul_div(tokens * (d * 5 + r * 4), layers - 1, layers) * kFp32Bytes});
  } else if (adapts_linears_method(method)) {
    adapter_terms(c, batch, batch * seq, act, input_copy, stream, terms);
  }
  return terms;
}

namespace {

// The bytes of `d` on one instance of layer `a`.
Bytes dense_bytes(const Dense& d, const AdaptedLinear& a, const LayerShare& share, Bytes element) {
  const Bytes weight = d.element * element + d.fp32 * kFp32Bytes + d.adapter * share.adapter + d.param * share.param +
                       d.act * share.act;
  const Bytes square = d.square_adapter * share.adapter + d.square_stream * share.stream + d.square_fp32 * kFp32Bytes;
  return a.in * a.out * weight + a.in * a.in * square;
}

// DoRA (lora/dora.py, DoraLinearLayer.forward, PEFT 0.21): every forward rebuilds the layer's dense
// update to norm the adapted weight, column by column. get_lora_weight runs lora_B(lora_A(x_eye))
// on an [in, in] identity in the adapters' dtype ("Don't use lora_B.weight @ lora_A.weight ...
// errors with FSDP"), giving ΔW [in, out], which the forward casts to x's dtype (the adapters',
// LoraLayer.forward casts x to it); the base weight is dequantised and cast the same way; and
// get_weight_norm makes s·ΔW and W + s·ΔW [out, in] before the norm [out]. The norm is detached,
// so none of it is saved: all of it goes when the layer returns. A trains, so autograd keeps the
// identity for A's gradient as long as ΔW's graph lives, unless checkpointing's forward drops
// what is saved; then the identity goes once ΔW exists.
std::vector<Bytes> dora_temporaries(const Config& c, const LayerShare& share, bool graph_saves) {
  const Bytes adapter = share.param, matmul = share.adapter;
  // Building ΔW: the identity, autocast's 16-bit copy of it for lora_A (where the matmuls run in
  // 16 bits: the copy is what autograd keeps, the identity goes), and ΔW as lora_B gives it. At the
  // norm: ΔW in x's dtype, s·ΔW, W + s·ΔW (and W's cast), beside the identity autograd keeps.
  // (With dropout and no autocast the cast W is what F.linear saves for the base output: counted
  // with the saved tensors where autograd keeps them.)
  const bool cast_saved = graph_saves && c.training.finetune.lora_dropout > 0.0 && share.hf_peft && matmul == adapter;
  const int at_norm = (c.training.finetune.base_bits < 16 || share.stream != adapter) && !cast_saved ? 4 : 3;
  const Bytes cast = matmul != adapter ? matmul : Bytes{0};
  const Bytes kept = graph_saves ? (cast.is_zero() ? adapter : cast) : Bytes{0};
  const auto tensors = [&](Count in, Count out) {
    const std::vector<Bytes> building = {in * in * adapter, in * in * cast, in * out * matmul};
    std::vector<Bytes> norm(static_cast<std::size_t>(at_norm), in * out * adapter);
    norm.push_back(in * in * kept);
    return total(building) > total(norm) ? building : norm;
  };
  std::vector<Bytes> largest;
  for (const AdaptedLinear& a :
       adapted_linears(count_parameters(c.model), c.training.finetune.lora_targets, adapter_layout(c))) {
    // (stacked experts: PEFT's DoRA adapts nn.Linear layers only)
    if (a.stack != Count(1)) continue;
    std::vector<Bytes> high = tensors(a.in, a.out);
    if (total(high) > total(largest)) largest = std::move(high);
  }
  return largest;
}

}  // namespace

// A layer's high point, in its largest adapted layer: in forward what the method makes beyond what
// it saves (TargetSaved::temporary), and, where checkpointing's forward drops what is saved, what
// it would have saved too (built, read, and freed as the layer returns); in backward what it makes
// beyond the block's gradients (TargetSaved::backward). Measured on PEFT's real layers:
// tools/frameworks/peft_transients.py.
std::vector<Bytes> peft_temporaries(const Config& c, Count batch, Count seq, Bytes act, Bytes input_copy, Bytes stream,
                                    PeftMoment moment) {
  const Finetune& f = c.training.finetune;
  if (!adapts_linears_method(f.method) || f.method == FinetuneMethod::kLora) return {};
  const LayerShare share = layer_share(c, batch * seq, batch, act, input_copy, stream);
  // Whether autograd keeps what the layer saves (nothing under no_grad or checkpointing's forward),
  // and whether those tensors are built beside the temporaries without being counted elsewhere.
  const bool graph_saves = moment == PeftMoment::kForwardKept || moment == PeftMoment::kBackward;
  const bool add_saved = moment == PeftMoment::kForwardDropped;
  if (f.method == FinetuneMethod::kDora) {
    return moment == PeftMoment::kBackward ? std::vector<Bytes>{} : dora_temporaries(c, share, graph_saves);
  }
  std::vector<Bytes> tensors;
  Bytes largest{0};
  for (AdaptedLinear a : adapted_linears(count_parameters(c.model), f.lora_targets, adapter_layout(c))) {
    if (a.stack > Count(1)) continue;  // folded into the weight (activations.cpp)
    a.count = Count(c.model.num_hidden_layers);  // one layer's instance: per_layer gives its own tensors
    const TargetSaved t = target_saved(f, a, share);
    const Bytes element = element_of(t, share, input_copy);
    Bytes saved = t.act_elements * element + t.fp32_bytes;
    if (t.saves_input && t.casts_input && !input_copy.is_zero()) {
      saved += share.per_layer(a, a.in) * (t.input_fp32 ? kFp32Bytes : input_copy);
    }
    const Bytes dropped = dense_bytes(t.dropped, a, share, element);
    if (!dropped.is_zero()) saved = min(saved, dropped);
    const Bytes temporary = dense_bytes(moment == PeftMoment::kBackward ? t.backward : t.temporary, a, share, element);
    if ((add_saved ? saved : Bytes{0}) + temporary > largest) {
      largest = (add_saved ? saved : Bytes{0}) + temporary;
      tensors = {temporary};
      if (add_saved) tensors.push_back(saved);
    }
  }
  return tensors;
}

Bytes peft_outside_bytes(const Config& c, Count tokens, Bytes act) {
  const Finetune& f = c.training.finetune;
  if (f.method == FinetuneMethod::kXlora) {
    // X-LoRA's scaling pass (xlora/model.py, under no_grad) leaves the last hidden state [t, d] for
    // the classifier, whose softmax [t, N, n] over the N adapted modules every layer slices.
    const Count modules = linear_count(adapted_linears(count_parameters(c.model), f.lora_targets, adapter_layout(c)));
    return tokens * (Count(c.model.hidden_size) + modules * f.num_adapters) * act;
  }
  // LitGPT adapter_v2: the head is an AdapterV2Linear too; its scale's gradient needs the logits.
  if (c.training.finetune.method != FinetuneMethod::kLlamaAdapterV2 || c.model.output_head != OutputHead::kLm) {
    return Bytes{0};
  }
  return tokens * c.model.vocab_size * act;
}

namespace {

// What each method's PEFT layer refuses (its update_layer raises ValueError), per adapted layer.
std::string shape_problem(const Finetune& f, const AdaptedLinear& a) {
  const std::int64_t in = a.in.value(), out = a.out.value();
  const auto sides = [&](std::int64_t k, bool both) {
    return in % k != 0 || (both && out % k != 0)
               ? "must divide every adapted layer's " + std::string(both ? "input and output" : "input") +
                     " features (" + detail::group_digits(in) + (both ? " and " + detail::group_digits(out) : "") + ")"
               : std::string();
  };
  switch (f.method) {
    case FinetuneMethod::kBoft: {
      const std::int64_t b = f.block_size > 0 ? f.block_size : kBoftBlockSize;
      const std::int64_t span = b << (f.boft_n_butterfly_factor - 1);  // boft/layer.py: b · 2^(m−1)
      if (in % span != 0) return "(× 2^(boft_n_butterfly_factor − 1)) " + sides(span, false);
      if (f.boft_n_butterfly_factor > 1 && (b % 2 != 0 || (in / b) % 2 != 0)) {
        return "and in_features / block_size must be even when boft_n_butterfly_factor > 1";
      }
      return "";
    }
    case FinetuneMethod::kC3a: return sides(f.block_size > 0 ? f.block_size : kC3aBlockSize, true);
    case FinetuneMethod::kPsoft:  // psoft/layer.py: the principal subspace is r of min(in, out) directions
      return f.lora_rank > std::min(in, out) ? "must be at most every adapted layer's smaller side (" +
                                                   detail::group_digits(std::min(in, out)) + ") for PSOFT"
                                             : "";
    case FinetuneMethod::kVbLora: return sides(kVbLoraVectorLength, true);
    case FinetuneMethod::kGraLora: return sides(kGraLoraBlocks, true);
    case FinetuneMethod::kRoad:
      return out % kRoadGroupSize != 0 ? "RoAd's group size (64) must divide every adapted layer's output features ("
                                             + detail::group_digits(out) + ")"
                                       : "";
    default: return "";
  }
}

void check_targets(const Config& c, std::vector<Issue>& errors) {
  const Finetune& f = c.training.finetune;
  if (f.lora_targets == 0) {
    errors.push_back({"training.finetune.lora_targets", f.method == FinetuneMethod::kLora
                                                            ? "must name at least one module for LoRA"
                                                            : "must name at least one module for this method"});
    return;
  }
  if ((f.lora_targets & kLoraQkv) && (f.lora_targets & (kLoraQ | kLoraK | kLoraV))) {
    errors.push_back({"training.finetune.lora_targets", "qkv (one fused q/k/v projection) cannot be combined "
                                                        "with q, k or v"});
  }
  if ((f.lora_targets & kLoraQkv) && c.model.attention_type == AttentionType::kMla) {
    errors.push_back({"training.finetune.lora_targets", "qkv (a fused q/k/v projection) needs standard attention"});
  }
  const AdapterLayout layout = adapter_layout(c);
  const ExpertTargeting targeting = layout.experts;
  const unsigned expert_targets = f.lora_targets & (kLoraGate | kLoraUp | kLoraDown);
  if (targeting == ExpertTargeting::kUnmapped && adapted_linears(count_parameters(c.model), f.lora_targets, layout).empty()) {
    errors.push_back({"training.finetune.lora_targets",
                      "reach no module of " + (c.model.multimodal_type.empty() ? c.model.model_type : c.model.multimodal_type) +
                          " under transformers 5 (PEFT: target modules not found): its stacked experts and router are "
                          "parameters, which PEFT does not map from module names for this model type; set "
                          "training.finetune.target_parameters, or training.moe_dispatch to loop for an nn.Linear per "
                          "expert"});
    return;
  }
  if ((f.lora_targets & kLoraRouter) && c.model.num_experts > 0 &&
      resolve_implementation(c).moe_dispatch == MoeDispatch::kDense &&
      runs_transformers_model(c.training.implementation.framework)) {
    // Llama 4's router is an nn.Linear whose forward returns (scores, logits): PEFT's LoRA layer
    // wraps it and fails on the tuple (peft/tuners/lora/layer.py Linear.forward, result.dtype).
    errors.push_back({"training.finetune.lora_targets",
                      "router cannot be adapted in Llama 4 (training.moe_dispatch dense): its router is an nn.Linear "
                      "that returns the routing scores and logits together, and PEFT's LoRA layer fails on that "
                      "output; leave router out (PEFT's all-linear includes it: name the modules instead)"});
    return;
  }
  if (targeting == ExpertTargeting::kMapped && expert_targets != 0) {
    // PEFT reaches transformers 5's stacked experts through target_parameters, which only LoRA
    // implements, without variants (ParamWrapper.update_layer: "does not work with LoRA variants
    // like DoRA"), and it fuses gate and up into one adapter on gate_up_proj
    // (transformers_weight_conversion.py: "Cannot convert PEFT target(s) ... without also targeting").
    const bool lora = f.method == FinetuneMethod::kLora || f.method == FinetuneMethod::kLoraFa;
    if (!lora) {
      errors.push_back({"training.finetune.lora_targets",
                        "gate, up and down reach a mixture of experts' stacked expert weights (training.moe_dispatch "
                        "grouped, transformers 5), which PEFT adapts with plain LoRA only; leave them out, or set "
                        "training.moe_dispatch to loop for an nn.Linear per expert"});
      return;
    }
    if (c.model.mlp == MlpKind::kGated && ((expert_targets & kLoraGate) != 0) != ((expert_targets & kLoraUp) != 0)) {
      errors.push_back({"training.finetune.lora_targets",
                        "must name gate and up together on stacked experts (training.moe_dispatch grouped): PEFT "
                        "adapts their fused gate_up_proj as one"});
      return;
    }
  }
  if ((f.lora_targets & kLoraRouter) && c.model.num_experts == 0) {
    errors.push_back({"training.finetune.lora_targets", "router needs a mixture-of-experts model (model.num_experts)"});
  }
  for (const AdaptedLinear& a : adapted_linears(count_parameters(c.model), f.lora_targets, layout)) {
    const std::string problem = shape_problem(f, a);
    if (!problem.empty()) {
      const char* field = f.method == FinetuneMethod::kRoad || f.method == FinetuneMethod::kVbLora ||
                                  f.method == FinetuneMethod::kGraLora
                              ? "training.finetune.lora_targets"
                          : f.method == FinetuneMethod::kPsoft ? "training.finetune.lora_rank"
                                                                : "training.finetune.block_size";
      errors.push_back({field, problem});
      return;
    }
  }
}

}  // namespace

// transformers' decoder classes whose blocks sit under `model.` with an `embed_tokens` embedding
// (X-LoRA's adapter loading and ShadowPEFT's mirror assume it); the families named here keep
// `transformer.h` / `gpt_neox.layers` and another embedding name. Remote code is taken as Llama's.
bool decoder_under_model(const std::string& model_type) {
  for (const char* other : {"gpt2", "gptj", "gpt_neox", "falcon", "bloom", "gpt_bigcode"}) {
    if (model_type == other) return false;
  }
  return true;
}

// The methods whose PEFT layers take transformers' Conv1D (GPT-2's projections) as well as nn.Linear
// (each method's model.py _create_new_module; the rest raise, or OSF adapts nothing).
bool takes_conv1d(FinetuneMethod m) {
  switch (m) {
    case FinetuneMethod::kLora:
    case FinetuneMethod::kDora:
    case FinetuneMethod::kLoraFa:
    case FinetuneMethod::kAdaLora:
    case FinetuneMethod::kVera:
    case FinetuneMethod::kIa3:
    case FinetuneMethod::kFourierFt:
    case FinetuneMethod::kVbLora:
    case FinetuneMethod::kRandLora:
    case FinetuneMethod::kWaveFt:
    case FinetuneMethod::kGraLora:
    case FinetuneMethod::kTinyLora:
    case FinetuneMethod::kDeft:
    case FinetuneMethod::kFrod:
    case FinetuneMethod::kPvera:
    case FinetuneMethod::kUnilora:
    case FinetuneMethod::kHira:
    case FinetuneMethod::kXlora: return true;  // refused on GPT-2 for its module tree instead (below)
    default: return false;
  }
}

void validate_peft(const Config& c, std::vector<Issue>& errors) {
  const Finetune& f = c.training.finetune;
  if (f.method == FinetuneMethod::kFull) return;
  if (adapts_linears_method(f.method) && !takes_conv1d(f.method) && c.model.model_type == "gpt2" &&
      runs_transformers_model(c.training.implementation.framework)) {
    errors.push_back({"training.finetune.method",
                      std::string(to_string(f.method)) + " adapts nn.Linear layers only, and transformers' GPT-2 "
                      "projections are Conv1D: lora, dora, lora_fa, adalora, vera, ia3, fourierft, vblora, randlora, "
                      "waveft, gralora, tinylora, hira, deft, frod, pvera or unilora"});
  }
  if (adapts_linears_method(f.method)) check_targets(c, errors);
  // PEFT's LoRA layer over a GPTQ base refuses DoRA (lora/gptq.py: "does not support DoRA").
  if (f.method == FinetuneMethod::kDora && f.base_bits < 16 && f.quant_method == QuantMethod::kGptq) {
    errors.push_back({"training.finetune.method", "dora is not available over a GPTQ base (PEFT's GPTQ LoRA layer "
                                                  "refuses it): lora, or a bitsandbytes base"});
  }
  // IA3Config refuses feedforward_modules outside target_modules (ia3/config.py); memfit's default
  // (down) is PEFT's for Llama-style models and simply unused where down is not a target.
  if (f.method == FinetuneMethod::kIa3 && f.feedforward_modules != kLoraDown &&
      (f.feedforward_modules & ~f.lora_targets) != 0) {
    errors.push_back({"training.finetune.feedforward_modules", "must be among training.finetune.lora_targets"});
  }
  // Methods that read or decompose the base weight itself (GLoRA sums it with its factors and takes
  // only nn.Linear; FRoD, OSF, PSOFT and AdaMSS decompose it at init; PEANuT, Super-Tuning and DEFT
  // use it in their forward): a packed int8 or 4-bit weight breaks them.
  const bool reads_weight = f.method == FinetuneMethod::kGlora || f.method == FinetuneMethod::kFrod ||
                            f.method == FinetuneMethod::kOsf || f.method == FinetuneMethod::kPsoft ||
                            f.method == FinetuneMethod::kAdamss || f.method == FinetuneMethod::kPeanut ||
                            f.method == FinetuneMethod::kSupertuning || f.method == FinetuneMethod::kDeft;
  if (reads_weight && f.base_bits != 16) {
    errors.push_back({"training.finetune.base_bits",
                      "must be 16 for " + std::string(to_string(f.method)) +
                          ": it reads the base weight as a dense matrix, which a quantised base does not hold"});
  }
  const bool decomposes = f.method == FinetuneMethod::kFrod || f.method == FinetuneMethod::kOsf ||
                          f.method == FinetuneMethod::kPsoft || f.method == FinetuneMethod::kAdamss;
  if (decomposes && c.parallel.tensor > 1) {
    errors.push_back({"parallel.tensor", "must be 1 for " + std::string(to_string(f.method)) +
                                             ": it decomposes each whole weight when PEFT wraps the model"});
  }
  // Poly's bmm takes [batch, tokens, in]; a mixture's experts see their tokens flattened.
  if (f.method == FinetuneMethod::kPoly && c.model.num_experts > 0 &&
      (f.lora_targets & (kLoraGate | kLoraUp | kLoraDown))) {
    errors.push_back({"training.finetune.lora_targets",
                      "gate, up and down reach a mixture's experts, whose inputs Poly's batched matmul cannot take "
                      "(tokens flattened); adapt the attention with poly"});
  }
  // Multitask prompt tuning asks for task ids, which PEFT's feature-extraction model does not pass.
  if (f.method == FinetuneMethod::kMultitaskPromptTuning && c.model.output_head == OutputHead::kNone) {
    errors.push_back({"training.finetune.method", "multitask_prompt_tuning needs a model with a head (a language "
                                                  "model or a classifier): PEFT's model without one passes no task ids"});
  }
  // ShadowPEFT mirrors one block of the model's own class: memfit models a dense decoder with rotary
  // positions (the mirror of GPT-2 or OPT keeps its position table, GPT-2's its token embedding
  // too), on one GPU's whole model (its side network is neither split nor staged).
  if (f.method == FinetuneMethod::kShadow) {
    const ModelSpec& m = c.model;
    if (m.output_head != OutputHead::kLm || m.is_encoder_decoder || m.num_experts > 0 || m.hybrid_attention() ||
        m.position_embedding != PositionKind::kRotary || !decoder_under_model(m.model_type)) {
      errors.push_back({"training.finetune.method", "shadow needs a dense rotary decoder with embed_tokens (Llama, "
                                                    "Mistral, Qwen, Gemma): its side network copies one block"});
    }
    if (c.parallel.tensor > 1 || c.parallel.pipeline > 1 || c.parallel.context > 1) {
      errors.push_back({"training.finetune.method", "shadow runs its side network whole: parallel.tensor, pipeline "
                                                    "and context must be 1"});
    }
  }
  // X-LoRA under gradient checkpointing: its scaling pass and the recomputation disagree on what is
  // saved (non-reentrant: CheckpointError), and reentrant leaves the classifier without a gradient.
  if (f.method == FinetuneMethod::kXlora && c.training.checkpointing != Checkpointing::kNone &&
      runs_transformers_model(c.training.implementation.framework)) {
    errors.push_back({"training.checkpointing", "must be none for xlora: checkpointed, its classifier gets no "
                                                "gradient or recomputation fails"});
  }
  // CPT's model and X-LoRA's are for causal language models (cpt/config.py: CAUSAL_LM only; X-LoRA
  // loads its adapters into a `<top>.model.` decoder, xlora/model.py, and GPT-2's or an encoder's
  // names fail).
  const bool causal = c.model.output_head == OutputHead::kLm && !c.model.is_encoder_decoder;
  if ((f.method == FinetuneMethod::kCpt || f.method == FinetuneMethod::kXlora) &&
      (!causal || (f.method == FinetuneMethod::kXlora && !decoder_under_model(c.model.model_type)))) {
    errors.push_back({"training.finetune.method",
                      std::string(to_string(f.method)) + " needs a decoder-only language model" +
                          (f.method == FinetuneMethod::kXlora ? " with its blocks under model. (Llama, Mistral, "
                                                                "Qwen, OPT)"
                                                              : "")});
  }
  if (f.base_bits != 4 && f.base_bits != 8 && f.base_bits != 16) {
    errors.push_back({"training.finetune.base_bits", "must be 16 (frozen 16-bit base), 8 (int8) or 4 (QLoRA NF4); got " +
                                                         detail::group_digits(f.base_bits)});
  }
  const std::int64_t block = f.quant_block_size;
  if (f.base_bits == 4 && (block < 32 || (block & (block - 1)) != 0)) {
    errors.push_back({"training.finetune.quant_block_size",
                      "must be a power of two from 32 to 4,096 (bitsandbytes' 4-bit block sizes); got " +
                          detail::group_digits(block)});
  }
  const bool adapter = f.method == FinetuneMethod::kLlamaAdapter || f.method == FinetuneMethod::kLlamaAdapterV2;
  if (adapter && f.adapter_start_layer >= c.model.num_hidden_layers) {
    errors.push_back({"training.finetune.adapter_start_layer", "must be below model.num_hidden_layers (" +
                                                                   detail::group_digits(c.model.num_hidden_layers) +
                                                                   ") so that at least one layer is adapted"});
  }
  const bool prompts = prepends_virtual_tokens(f.method);
  const ModelSpec& m = c.model;
  if (prompts && m.position_embedding == PositionKind::kLearned && f.num_virtual_tokens >= m.max_position_embeddings) {
    errors.push_back({"training.finetune.num_virtual_tokens",
                      "must be less than model.max_position_embeddings (" + detail::group_digits(m.max_position_embeddings) +
                          "): the virtual tokens go before every sequence in the learned positions, and would leave no "
                          "room for it"});
  } else if (prompts && m.position_embedding == PositionKind::kLearned &&
             c.training.seq_len + f.num_virtual_tokens > m.max_position_embeddings) {
    errors.push_back({"training.finetune.num_virtual_tokens",
                      "must fit the learned positions with every sequence: training.seq_len " +
                          detail::group_digits(c.training.seq_len) + " + " + detail::group_digits(f.num_virtual_tokens) +
                          " virtual tokens is more than model.max_position_embeddings (" +
                          detail::group_digits(m.max_position_embeddings) + "); " +
                          (m.max_position_embeddings > c.training.seq_len
                               ? "at most " + detail::group_digits(m.max_position_embeddings - c.training.seq_len) +
                                     " virtual tokens, or "
                               : std::string()) +
                          "training.seq_len at most " +
                          detail::group_digits(std::max<std::int64_t>(1, m.max_position_embeddings - f.num_virtual_tokens))});
  }
  // Cartridge keeps its first virtual token frozen (num_frozen_tokens 1). It and prefix tuning hand
  // every layer a key/value cache, which gradient checkpointing cannot recompute: PEFT refuses it
  // (peft_model.py, PeftModel._setup_prompt_encoder); under learned positions the sequence's
  // positions start after the cache's.
  if (f.method == FinetuneMethod::kCartridge && f.num_virtual_tokens < 2) {
    errors.push_back({"training.finetune.num_virtual_tokens",
                      "must be at least 2 for cartridge: its first token is frozen, so 1 would train nothing"});
  }
  // transformers 5's encoder classes (BERT, DistilBERT, RoBERTa, DeBERTa-v2) take no past keys and values:
  // PEFT's forward refuses ("Model does not support past key values which are required for prefix
  // tuning"; measured on tiny BERT and RoBERTa classifiers).
  const std::string& type = c.model.model_type;
  if (prefixes_keys_values(f.method) && runs_transformers_model(c.training.implementation.framework) &&
      (type == "bert" || type == "distilbert" || type == "roberta" || type == "xlm-roberta" ||
       type == "deberta-v2")) {
    errors.push_back({"training.finetune.method", std::string(to_string(f.method)) + " needs a model that takes past "
                                                  "keys and values (a decoder or an encoder-decoder); transformers' " +
                                                  type + " does not"});
  }
  if (prefixes_keys_values(f.method) && c.training.checkpointing != Checkpointing::kNone &&
      runs_transformers_model(c.training.implementation.framework)) {
    errors.push_back({"training.checkpointing", "must be none for " + std::string(to_string(f.method)) +
                                                    ": PEFT refuses gradient checkpointing with its key/value cache"});
  }
  // (An encoder-decoder shifts only its decoder's positions.)
  const std::int64_t shifted = c.model.is_encoder_decoder ? c.training.decoder_len() : c.training.seq_len;
  if (prefixes_keys_values(f.method) && c.model.position_embedding == PositionKind::kLearned &&
      shifted + f.num_virtual_tokens > c.model.max_position_embeddings) {
    errors.push_back({"training.finetune.num_virtual_tokens",
                      "must fit the learned positions with every sequence: the sequence's positions start after the " +
                          detail::group_digits(f.num_virtual_tokens) + " cached ones, and " +
                          (c.model.is_encoder_decoder ? "training.target_len " : "training.seq_len ") +
                          detail::group_digits(shifted) + " + " + detail::group_digits(f.num_virtual_tokens) +
                          " is more than model.max_position_embeddings (" +
                          detail::group_digits(c.model.max_position_embeddings) + ")"});
  }
  if (f.method == FinetuneMethod::kTrainableTokens && f.num_trainable_tokens > c.model.vocab_size) {
    errors.push_back({"training.finetune.num_trainable_tokens",
                      "must be at most model.vocab_size (" + detail::group_digits(c.model.vocab_size) + ")"});
  }
}

}  // namespace memfit

#if defined(__clang__)
#pragma clang attribute pop
#endif
