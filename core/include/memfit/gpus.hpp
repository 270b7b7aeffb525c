// The GPU table: memory as the driver reports it (nvidia-smi's / rocm-smi's "total"), the CUDA
// context that the driver takes before PyTorch allocates anything, and what the step-time model
// needs: dense tensor-core peaks, memory bandwidth, the links between GPUs, and a default price.
//
// A card is named by its id ("h100-sxm-80gb") or any common spelling of it ("H100 SXM5",
// "A100 80GB PCIe", "rtx4090", "MI300X"): `lookup_gpu` resolves the spelling, or says which
// entries come nearest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memfit/units.hpp"

namespace memfit {

// A card's other spellings: up to six, unused slots null. A fixed array rather than a vector keeps
// the table plain constant data (no code per row to build it, which the wasm would carry).
struct GpuAliases {
  static constexpr int kMax = 6;
  const char* names[kMax]{};
  const char* const* begin() const { return names; }
  const char* const* end() const {
    const char* const* e = names;
    while (e != names + kMax && *e != nullptr) ++e;
    return e;
  }
};

struct Gpu {
  const char* id;              // "h100-sxm-80gb"
  const char* name;            // "NVIDIA H100 SXM 80GB"
  const char* architecture;    // "Hopper"
  Bytes memory_bytes;          // total device memory as nvidia-smi reports it (MiB × 2^20)
  Bytes context_bytes;         // CUDA context + PyTorch's library handles, measured or typical
  const char* source;          // where the memory numbers come from
  // Dense tensor-core peaks in TFLOP/s (10^12 FLOP/s), without structured sparsity, with fp32
  // accumulation (what training uses). 0: the card has no such mode (no bf16 before Ampere, no
  // FP8 before Ada / Hopper / CDNA 3).
  double peak_fp16_tflops;
  double peak_bf16_tflops;
  double peak_fp8_tflops;
  double peak_fp32_tflops;           // plain fp32 (no TF32): what an fp32 recipe's matmuls run at
  // The step-time model's ceiling: the share of the 16-bit (and of the FP8) peak that well-tuned
  // training reaches on this card in published runs, matmuls and attention together (see
  // gpus.cpp for the runs; "assumed" where none was found).
  double ceiling_16bit;
  double ceiling_fp8;
  double memory_bandwidth_gb_per_s;  // HBM / GDDR, 10^9 bytes per second
  // One direction, per GPU, 10^9 bytes per second: to the GPUs of the same node (NVLink,
  // Infinity Fabric, or PCIe where there is no GPU link), and to other nodes (the typical
  // network of a cluster built from this card: one NIC per GPU on SXM / OAM systems).
  double intra_node_gb_per_s;
  double inter_node_gb_per_s;
  double host_link_gb_per_s;   // to the CPU's memory (PCIe x16 generation): offloaded states cross it
  std::int64_t gpus_per_node;  // the usual server: 8 for SXM / OAM baseboards
  double price_per_hour;       // USD per GPU-hour, on demand; 0: no price sourced (set your own)
  const char* spec_source;     // where the compute, bandwidth and price figures come from
  GpuAliases aliases;          // other spellings that name exactly this card
  // GPUs that reach each other over the GPU link beyond one server: an NVLink Switch rack joins its
  // trays' GPUs (GB200 NVL72: 72, four to a server). 0: the server is the domain.
  std::int64_t nvlink_domain = 0;
  // What CUDA reports as the device's total (cudaMemGetInfo; PyTorch's "total capacity" in its
  // out-of-memory message): nvidia-smi's total less what the driver keeps for itself. Zero where no
  // published reading names the card. Everything the process holds, its context included, must fit
  // in it. gpus.cpp cites the thread of each reading.
  Bytes cuda_total_bytes{};

  // The memory a run can use: CUDA's total where a reading is published, else nvidia-smi's.
  Bytes usable_bytes() const { return cuda_total_bytes.value() > 0 ? cuda_total_bytes : memory_bytes; }

  bool has_bf16() const { return peak_bf16_tflops > 0; }
  bool has_fp8() const { return peak_fp8_tflops > 0; }
  // Block-scaled MX matmuls in the tensor cores: Blackwell (cuBLAS / CUTLASS mxfp8 on compute
  // capability 10.x) and CDNA 4 (the OCP MX FP8 / FP6 / FP4 formats).
  bool has_mx() const {
    const std::string_view a(architecture);
    return a == "Blackwell" || a == "CDNA 4";
  }
};

const std::vector<Gpu>& gpu_table();

// The card a name means: the id, an alias, or a spelling whose words (ignoring case, spaces,
// dashes and vendor words) name exactly one card. nullptr when none or several match.
const Gpu* find_gpu(std::string_view name);

// GPUs per server: `configured` (hardware.gpus_per_node) when above 0, else the card's usual
// server, 8 for a card not in the table.
std::int64_t gpus_per_node(std::string_view gpu, std::int64_t configured);
// GPUs whose collectives run at the card's GPU-link rate (intra_node_gb_per_s): the card's NVLink
// domain where it spans servers (GB200 NVL72), else the server (gpus_per_node).
std::int64_t gpu_link_domain(std::string_view gpu, std::int64_t configured);

struct GpuLookup {
  const Gpu* gpu = nullptr;          // the card, when the name resolves
  std::vector<const Gpu*> nearest;   // otherwise the closest entries, best first (at most 3)
};
GpuLookup lookup_gpu(std::string_view name);

// "; did you mean h100-sxm-80gb or h100-pcie-80gb?" for an unknown name ("" when nothing is close).
std::string gpu_suggestion_text(std::string_view name);

}  // namespace memfit
