// The GPU table: memory as the driver reports it (nvidia-smi's "total"), and the CUDA context
// that the driver takes before PyTorch allocates anything.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "memfit/units.hpp"

namespace memfit {

struct Gpu {
  const char* id;              // "h100-sxm-80gb"
  const char* name;            // "NVIDIA H100 SXM 80GB"
  const char* architecture;    // "Hopper"
  Bytes memory_bytes;          // total device memory as nvidia-smi reports it (MiB × 2^20)
  Bytes context_bytes;         // CUDA context + PyTorch's library handles, measured or typical
  const char* source;          // where the numbers come from
};

const std::vector<Gpu>& gpu_table();
const Gpu* find_gpu(std::string_view id);

}  // namespace memfit
