#include "memfit/gpus.hpp"

namespace memfit {

namespace {

constexpr Bytes mib(std::int64_t n) { return Bytes(n << 20); }

// Context sizes: the CUDA context plus cuBLAS/cuDNN handles that PyTorch creates on first use.
// The seeds put the runtime at 300–500 MB; lazy module loading (CUDA ≥ 11.7, the default in
// PyTorch ≥ 2.0) keeps it near the low end on every generation. Newer architectures carry larger
// kernel images, hence the small rise by generation.
constexpr Bytes kContextTuringBytes = mib(350);
constexpr Bytes kContextAmpereBytes = mib(420);
constexpr Bytes kContextHopperBytes = mib(500);
constexpr Bytes kContextBlackwellBytes = mib(550);

}  // namespace

const std::vector<Gpu>& gpu_table() {
  static const std::vector<Gpu> table = {
      {"t4-16gb", "NVIDIA T4 16GB", "Turing", mib(15360), kContextTuringBytes, "nvidia-smi total 15360 MiB"},
      {"v100-16gb", "NVIDIA V100 16GB", "Volta", mib(16384), kContextTuringBytes, "nvidia-smi total 16384 MiB"},
      {"rtx-4080-16gb", "NVIDIA GeForce RTX 4080 16GB", "Ada", mib(16376), kContextAmpereBytes, "nvidia-smi total 16376 MiB"},
      {"a10g-24gb", "NVIDIA A10G 24GB", "Ampere", mib(23028), kContextAmpereBytes, "nvidia-smi total 23028 MiB"},
      {"l4-24gb", "NVIDIA L4 24GB", "Ada", mib(23034), kContextAmpereBytes, "nvidia-smi total 23034 MiB"},
      {"rtx-3090-24gb", "NVIDIA GeForce RTX 3090 24GB", "Ampere", mib(24576), kContextAmpereBytes, "nvidia-smi total 24576 MiB"},
      {"rtx-4090-24gb", "NVIDIA GeForce RTX 4090 24GB", "Ada", mib(24564), kContextAmpereBytes, "nvidia-smi total 24564 MiB"},
      {"v100-32gb", "NVIDIA V100 32GB", "Volta", mib(32768), kContextTuringBytes, "nvidia-smi total 32768 MiB"},
      {"a100-40gb", "NVIDIA A100 40GB", "Ampere", mib(40960), kContextAmpereBytes, "nvidia-smi total 40960 MiB"},
      {"l40s-48gb", "NVIDIA L40S 48GB", "Ada", mib(46068), kContextAmpereBytes, "nvidia-smi total 46068 MiB"},
      {"rtx-a6000-48gb", "NVIDIA RTX A6000 48GB", "Ampere", mib(49140), kContextAmpereBytes, "nvidia-smi total 49140 MiB"},
      {"a100-80gb", "NVIDIA A100 80GB", "Ampere", mib(81920), kContextAmpereBytes, "nvidia-smi total 81920 MiB"},
      {"h100-sxm-80gb", "NVIDIA H100 SXM 80GB", "Hopper", mib(81559), kContextHopperBytes, "nvidia-smi total 81559 MiB"},
      {"h100-pcie-80gb", "NVIDIA H100 PCIe 80GB", "Hopper", mib(81559), kContextHopperBytes, "nvidia-smi total 81559 MiB"},
      {"h200-141gb", "NVIDIA H200 141GB", "Hopper", mib(143771), kContextHopperBytes, "nvidia-smi total 143771 MiB"},
      {"b200-180gb", "NVIDIA B200 180GB", "Blackwell", mib(183359), kContextBlackwellBytes, "nvidia-smi total 183359 MiB"},
  };
  return table;
}

const Gpu* find_gpu(std::string_view id) {
  for (const Gpu& gpu : gpu_table()) {
    if (id == gpu.id) return &gpu;
  }
  return nullptr;
}

}  // namespace memfit
