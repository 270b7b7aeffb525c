#include "memfit/gpus.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace memfit {

namespace {

constexpr Bytes mib(std::int64_t n) { return Bytes(n << 20); }

// Context sizes: the CUDA context plus cuBLAS/cuDNN handles that PyTorch creates on first use.
// The seeds put the runtime at 300–500 MB; lazy module loading (CUDA ≥ 11.7, the default in
// PyTorch ≥ 2.0) keeps it near the low end on every generation. Newer architectures carry larger
// kernel images, hence the small rise by generation. ROCm's context is taken to be Hopper's
// (an assumption: no measurement sourced).
constexpr Bytes kContextTuringBytes = mib(350);
constexpr Bytes kContextAmpereBytes = mib(420);
constexpr Bytes kContextHopperBytes = mib(500);
constexpr Bytes kContextBlackwellBytes = mib(550);
constexpr Bytes kContextRocmBytes = mib(500);

// Links, 10^9 bytes per second, one direction. PCIe x16: Gen3 15.75, Gen4 31.5, Gen5 63
// (PCI-SIG). NVLink per GPU, half the bidirectional figure of the datasheets: V100 300 → 150,
// A100 600 → 300, H100/H200 900 → 450, B200 1800 → 900. Infinity Fabric: MI300X/MI325X 7 links
// × 64 GB/s = 448 (AMD: 896 GB/s bidirectional peer-to-peer); MI355X 7 links × 76.8 = 537.6
// (AMD: 153.6 GB/s per link, 1075 GB/s in all, both directions); MI250 GCDs reach other packages
// over 50 GB/s links.
constexpr double kPcie3 = 15.75, kPcie4 = 31.5, kPcie5 = 63.0;
constexpr double kNvlink2 = 150.0, kNvlink3 = 300.0, kNvlink4 = 450.0, kNvlink5 = 900.0;
constexpr double kInfinityFabricMi355 = 537.6, kInfinityFabricMi300 = 448.0, kInfinityFabricMi250 = 50.0;
// Typical networks, per GPU, one direction: HGX B300 puts one 800 Gb/s ConnectX-8 per GPU
// (100 GB/s); DGX / HGX H100, H200, B200 and MI300X platforms one 400 Gb/s NIC per GPU (50 GB/s);
// DGX A100 one 200 Gb/s NIC per GPU (25 GB/s); DGX-1 V100 four 100 Gb/s NICs for 8 GPUs
// (6.25 GB/s); PCIe servers and cloud VMs far less (assumed 100 Gb/s per GPU for data-centre PCIe
// cards, 25 Gb/s for T4 / L4 VMs, 10 GbE for desktops).
constexpr double kNet800G = 100.0, kNet400G = 50.0, kNet200G = 25.0, kNet100G = 12.5, kNetDgx1 = 6.25,
                 kNet25G = 3.125, kNet10G = 1.25;

// Prices, USD per GPU-hour on demand, from two public price lists as summarised on 2026-05-07
// (https://techbytes.app/posts/serverless-gpu-pricing-matrix-modal-replicate-lambda-2026/):
// Lambda 1x H100 SXM 3.78, 1x H100 PCIe 2.86, A100 40GB 1.48; Modal A100 80GB 2.4984, L40S
// 1.9512, L4 0.7992, T4 0.5904. Other cards: no price sourced (0: set hardware.price_per_gpu_hour).

// Ceilings: the share of the peak that tuned training reaches, matmuls and attention together.
// Volta: Megatron-LM v1.0 sustained 62.4 TFLOP/s end to end, 48 % of a DGX-2H V100's peak
// (nv-adlr.github.io/MegatronLMV1, 2020). Ampere: torchtitan on 64 A100 (docs/performance.md:
// Llama 3 8B 2973 tok/s with op-level checkpointing, Llama 3 70B 331 tok/s fully checkpointed,
// Llama 2 13B 2162 tok/s) runs at 56–63 % of the bf16 peak counting recomputation; 0.57 fits
// those runs and Megatron-LM's 2021 GPT-3 175B run (44 % of peak) best (docs/step_time.md). Hopper 16-bit:
// Megatron-LM reaches 41–47 % MFU on H100 in its bf16 weak-scaling table (README, 2025), before
// the time its communication and bubble take. Hopper FP8: NeMo 24.12 on DGX-H100 reaches
// 643–888 model TFLOP/s per GPU, 32–45 % of the FP8 peak. Turing, Ada, Blackwell and CDNA: no
// published run with a full configuration was found; the values are assumptions (Turing as
// Volta, Ada and Blackwell as Hopper, CDNA lower, as MI250/MI300X training reports run well
// below NVIDIA's share of peak).
constexpr double kCeilingVolta = 0.48, kCeilingAmpere = 0.57, kCeilingHopper = 0.50, kCeilingHopperFp8 = 0.40;
constexpr double kCeilingTuringAssumed = 0.45, kCeilingAdaAssumed = 0.50, kCeilingAdaFp8Assumed = 0.40,
                 kCeilingBlackwellAssumed = 0.50, kCeilingBlackwellFp8Assumed = 0.40, kCeilingCdnaAssumed = 0.35,
                 kCeilingCdnaFp8Assumed = 0.30;

// One row per card. Compute peaks are the dense (no sparsity) tensor-core figures of each
// vendor datasheet or architecture whitepaper, with fp32 accumulation: GeForce cards run that at
// half their fp16-accumulate rate (Ada whitepaper appendix; Ampere GA102 whitepaper). The table
// is data, one row per card, read top to bottom (hence its length).
std::vector<Gpu> build_table() {
  return {
      // GA106: 28 SMs x 1024 dense fp16 FLOP/clk (the GA10x whitepaper's rate, halved with fp32 accumulate on
      // GeForce) x 1.777 GHz boost = 25.5 TFLOPS; 15 Gbps x 192 bit = 360 GB/s.
      {.id = "rtx-3060-12gb", .name = "NVIDIA GeForce RTX 3060 12GB", .architecture = "Ampere",
       .memory_bytes = mib(12288), .context_bytes = kContextAmpereBytes,
       .source = "nvidia-smi total 12288 MiB (geerlingguy/raspberry-pi-pcie-devices#790)", .peak_fp16_tflops = 25.5,
       .peak_bf16_tflops = 25.5, .peak_fp8_tflops = 0, .peak_fp32_tflops = 12.74, .ceiling_16bit = kCeilingAmpere,
       .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 360, .intra_node_gb_per_s = kPcie4,
       .inter_node_gb_per_s = kNet10G, .host_link_gb_per_s = kPcie4, .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "GA106 SMs x clock (derived in memfit's gpus.cpp); 360 GB/s",
       .aliases = {"rtx3060", "3060", "geforce rtx 3060"}},
      {.id = "t4-16gb", .name = "NVIDIA T4 16GB", .architecture = "Turing", .memory_bytes = mib(15360),
       .context_bytes = kContextTuringBytes, .source = "nvidia-smi total 15360 MiB", .peak_fp16_tflops = 65.0,
       .peak_bf16_tflops = 0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 8.1, .ceiling_16bit = kCeilingTuringAssumed,
       .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 320, .intra_node_gb_per_s = kPcie3,
       .inter_node_gb_per_s = kNet25G, .host_link_gb_per_s = kPcie3, .gpus_per_node = 4, .price_per_hour = 0.5904,
       .spec_source = "NVIDIA T4 datasheet (65 TFLOPS fp16 mixed precision, 8.1 fp32, 320 GB/s); Modal price",
       .aliases = {"tesla t4", "t4"}},
      {.id = "v100-16gb", .name = "NVIDIA V100 16GB", .architecture = "Volta", .memory_bytes = mib(16384),
       .context_bytes = kContextTuringBytes, .source = "nvidia-smi total 16384 MiB", .peak_fp16_tflops = 125.0,
       .peak_bf16_tflops = 0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 15.7, .ceiling_16bit = kCeilingVolta,
       .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 900, .intra_node_gb_per_s = kNvlink2,
       .inter_node_gb_per_s = kNetDgx1, .host_link_gb_per_s = kPcie3, .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA V100 SXM2 datasheet (125 TFLOPS tensor, 15.7 fp32, 900 GB/s, NVLink 300 GB/s)",
       .aliases = {"v100-sxm2-16gb", "tesla v100 16gb"}},
      {.id = "rtx-4080-16gb", .name = "NVIDIA GeForce RTX 4080 16GB", .architecture = "Ada",
       .memory_bytes = mib(16376), .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 16376 MiB",
       .peak_fp16_tflops = 97.5, .peak_bf16_tflops = 97.5, .peak_fp8_tflops = 194.9, .peak_fp32_tflops = 48.7,
       .ceiling_16bit = kCeilingAdaAssumed, .ceiling_fp8 = kCeilingAdaFp8Assumed, .memory_bandwidth_gb_per_s = 716.8,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet10G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "NVIDIA Ada whitepaper appendix (fp32-accumulate tensor rates, 716.8 GB/s)",
       .aliases = {"rtx4080", "geforce rtx 4080"}},
      // AD106: 34 SMs x 1024 dense fp16 FLOP/clk (the 4090's 330.3 fp16-accumulate TFLOPS over its 128 SMs at
      // 2.52 GHz; halved with fp32 accumulate on GeForce) x 2.535 GHz = 44.1; PCIe 4.0 x8 (15.75 GB/s, as Gen3 x16).
      {.id = "rtx-4060ti-16gb", .name = "NVIDIA GeForce RTX 4060 Ti 16GB", .architecture = "Ada",
       .memory_bytes = mib(16380), .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 16380 MiB",
       .peak_fp16_tflops = 44.1, .peak_bf16_tflops = 44.1, .peak_fp8_tflops = 88.3, .peak_fp32_tflops = 22.06,
       .ceiling_16bit = kCeilingAdaAssumed, .ceiling_fp8 = kCeilingAdaFp8Assumed, .memory_bandwidth_gb_per_s = 288,
       .intra_node_gb_per_s = kPcie3, .inter_node_gb_per_s = kNet10G, .host_link_gb_per_s = kPcie3,
       .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "AD106 SMs x clock (derived in memfit's gpus.cpp); 288 GB/s; PCIe 4.0 x8",
       .aliases = {"rtx4060ti", "4060 ti", "4060ti", "rtx 4060 ti 16gb"}},
      // GB203: 84 SMs x 1024 dense fp16 FLOP/clk (halved with fp32 accumulate on GeForce) x 2.617 GHz = 112.6;
      // 56.28 fp32 as huggingface.co/hardware/rtx-5080 gives it; 30 Gbps x 256 bit = 960 GB/s.
      {.id = "rtx-5080-16gb", .name = "NVIDIA GeForce RTX 5080 16GB", .architecture = "Blackwell",
       .memory_bytes = mib(16303), .context_bytes = kContextBlackwellBytes, .source = "nvidia-smi total 16303 MiB",
       .peak_fp16_tflops = 112.6, .peak_bf16_tflops = 112.6, .peak_fp8_tflops = 225.1, .peak_fp32_tflops = 56.28,
       .ceiling_16bit = kCeilingBlackwellAssumed, .ceiling_fp8 = kCeilingBlackwellFp8Assumed,
       .memory_bandwidth_gb_per_s = 960, .intra_node_gb_per_s = kPcie5, .inter_node_gb_per_s = kNet10G,
       .host_link_gb_per_s = kPcie5, .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "GB203 SMs x clock (derived in memfit's gpus.cpp); 960 GB/s",
       .aliases = {"rtx5080", "5080", "geforce rtx 5080"}},
      {.id = "a10g-24gb", .name = "NVIDIA A10G 24GB", .architecture = "Ampere", .memory_bytes = mib(23028),
       .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 23028 MiB", .peak_fp16_tflops = 70.0,
       .peak_bf16_tflops = 70.0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 31.2, .ceiling_16bit = kCeilingAmpere,
       .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 600, .intra_node_gb_per_s = kPcie4,
       .inter_node_gb_per_s = kNet25G, .host_link_gb_per_s = kPcie4, .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "AWS EC2 G5 (A10G: 70 TFLOPS fp16/bf16 tensor as commonly cited, 31.2 fp32, 600 GB/s)",
       .aliases = {"a10g"}},
      // 125 TFLOPS dense bf16/fp16 tensor = GA102's 72 SMs x 1024 FLOP/clk x 1.695 GHz.
      {.id = "a10-24gb", .name = "NVIDIA A10 24GB", .architecture = "Ampere", .memory_bytes = mib(23028),
       .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 23028 MiB (QwenLM/Qwen3#678)",
       .peak_fp16_tflops = 125.0, .peak_bf16_tflops = 125.0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 31.2,
       .ceiling_16bit = kCeilingAmpere, .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 600,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet25G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "NVIDIA A10 datasheet (125 dense bf16, 31.2 fp32, 600 GB/s)",
       .aliases = {"nvidia a10", "a10"}},
      {.id = "l4-24gb", .name = "NVIDIA L4 24GB", .architecture = "Ada", .memory_bytes = mib(23034),
       .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 23034 MiB", .peak_fp16_tflops = 121.0,
       .peak_bf16_tflops = 121.0, .peak_fp8_tflops = 242.5, .peak_fp32_tflops = 30.3,
       .ceiling_16bit = kCeilingAdaAssumed, .ceiling_fp8 = kCeilingAdaFp8Assumed, .memory_bandwidth_gb_per_s = 300,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet25G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 8, .price_per_hour = 0.7992,
       .spec_source = "NVIDIA L4 datasheet (121 / 242.5 TFLOPS dense bf16 / fp8, 30.3 fp32, 300 GB/s); Modal price",
       .aliases = {"nvidia l4", "l4"}},
      {.id = "rtx-3090-24gb", .name = "NVIDIA GeForce RTX 3090 24GB", .architecture = "Ampere",
       .memory_bytes = mib(24576), .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 24576 MiB",
       .peak_fp16_tflops = 71.0, .peak_bf16_tflops = 71.0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 35.6,
       .ceiling_16bit = kCeilingAmpere, .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 936,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet10G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "NVIDIA Ampere GA102 whitepaper (71 TFLOPS fp16/bf16 with fp32 accumulate, 35.6 fp32, 936 GB/s)",
       .aliases = {"rtx3090", "3090"}},
      {.id = "rtx-4090-24gb", .name = "NVIDIA GeForce RTX 4090 24GB", .architecture = "Ada",
       .memory_bytes = mib(24564), .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 24564 MiB",
       .peak_fp16_tflops = 165.2, .peak_bf16_tflops = 165.2, .peak_fp8_tflops = 330.3, .peak_fp32_tflops = 82.6,
       .ceiling_16bit = kCeilingAdaAssumed, .ceiling_fp8 = kCeilingAdaFp8Assumed, .memory_bandwidth_gb_per_s = 1008,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet10G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "NVIDIA Ada whitepaper appendix (fp32-accumulate tensor rates, 82.6 fp32, 1008 GB/s)",
       .aliases = {"rtx4090", "4090"}},
      {.id = "titan-rtx-24gb", .name = "NVIDIA TITAN RTX 24GB", .architecture = "Turing",
       .memory_bytes = mib(24220), .context_bytes = kContextTuringBytes, .source = "nvidia-smi total 24220 MiB",
       .peak_fp16_tflops = 130.5, .peak_bf16_tflops = 0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 16.3,
       .ceiling_16bit = kCeilingTuringAssumed, .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 672,
       .intra_node_gb_per_s = kPcie3, .inter_node_gb_per_s = kNet10G, .host_link_gb_per_s = kPcie3,
       .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "NVIDIA Turing TU102 whitepaper, TITAN RTX (130.5 TFLOPS fp16 with fp32 accumulate, 16.3 fp32, "
                      "672 GB/s)",
       .aliases = {"titan rtx", "titanrtx"}},
      {.id = "v100-32gb", .name = "NVIDIA V100 32GB", .architecture = "Volta", .memory_bytes = mib(32768),
       .context_bytes = kContextTuringBytes, .source = "nvidia-smi total 32768 MiB", .peak_fp16_tflops = 125.0,
       .peak_bf16_tflops = 0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 15.7, .ceiling_16bit = kCeilingVolta,
       .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 900, .intra_node_gb_per_s = kNvlink2,
       .inter_node_gb_per_s = kNetDgx1, .host_link_gb_per_s = kPcie3, .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA V100 SXM2 datasheet (125 TFLOPS tensor, 15.7 fp32, 900 GB/s, NVLink 300 GB/s)",
       .aliases = {"v100-sxm2-32gb", "tesla v100 32gb"}},
      // 209.5 / 419 dense fp16 / fp8 with fp32 accumulate = GB202's 170 SMs x 1024 FLOP/clk x 2.407 GHz, halved;
      // 28 Gbps x 512 bit = 1792 GB/s; PCIe 5.0, no NVLink.
      {.id = "rtx-5090-32gb", .name = "NVIDIA GeForce RTX 5090 32GB", .architecture = "Blackwell",
       .memory_bytes = mib(32607), .context_bytes = kContextBlackwellBytes,
       .source = "nvidia-smi total 32607 MiB (noonghunna/club-3090#617)", .peak_fp16_tflops = 209.5,
       .peak_bf16_tflops = 209.5, .peak_fp8_tflops = 419.0, .peak_fp32_tflops = 104.8,
       .ceiling_16bit = kCeilingBlackwellAssumed, .ceiling_fp8 = kCeilingBlackwellFp8Assumed,
       .memory_bandwidth_gb_per_s = 1792, .intra_node_gb_per_s = kPcie5, .inter_node_gb_per_s = kNet10G,
       .host_link_gb_per_s = kPcie5, .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "NVIDIA RTX Blackwell whitepaper as quoted (209.5 / 419 dense fp16 / fp8); 1792 GB/s",
       .aliases = {"rtx5090", "5090", "geforce rtx 5090"}},
      {.id = "a100-40gb", .name = "NVIDIA A100 40GB", .architecture = "Ampere", .memory_bytes = mib(40960),
       .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 40960 MiB", .peak_fp16_tflops = 312.0,
       .peak_bf16_tflops = 312.0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 19.5, .ceiling_16bit = kCeilingAmpere,
       .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 1555, .intra_node_gb_per_s = kNvlink3,
       .inter_node_gb_per_s = kNet200G, .host_link_gb_per_s = kPcie4, .gpus_per_node = 8, .price_per_hour = 1.48,
       .spec_source = "NVIDIA A100 datasheet (312 TFLOPS bf16 dense, 19.5 fp32, 1555 GB/s, NVLink 600 GB/s); "
                      "Lambda price",
       .aliases = {"a100-sxm4-40gb", "a100 40gb sxm"}},
      {.id = "l40s-48gb", .name = "NVIDIA L40S 48GB", .architecture = "Ada", .memory_bytes = mib(46068),
       .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 46068 MiB", .peak_fp16_tflops = 362.05,
       .peak_bf16_tflops = 362.05, .peak_fp8_tflops = 733.0, .peak_fp32_tflops = 91.6,
       .ceiling_16bit = kCeilingAdaAssumed, .ceiling_fp8 = kCeilingAdaFp8Assumed, .memory_bandwidth_gb_per_s = 864,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet100G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 8, .price_per_hour = 1.9512,
       .spec_source = "NVIDIA L40S datasheet (362 / 733 TFLOPS dense bf16 / fp8, 91.6 fp32, 864 GB/s); Modal price",
       .aliases = {"l40s"}},
      // AD102 cut to 92 SMs: NVIDIA's L20 sheet as resellers reproduce it (NVIDIA publishes no L20 datasheet
      // outside China): 119.5 / 239 TFLOPS dense fp16 / fp8, 59.8 fp32, 864 GB/s, PCIe 4.0, no NVLink.
      {.id = "l20-48gb", .name = "NVIDIA L20 48GB", .architecture = "Ada", .memory_bytes = mib(46068),
       .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 46068 MiB with ECC on (49140 MiB with ECC off)",
       .peak_fp16_tflops = 119.5, .peak_bf16_tflops = 119.5, .peak_fp8_tflops = 239.0, .peak_fp32_tflops = 59.8,
       .ceiling_16bit = kCeilingAdaAssumed, .ceiling_fp8 = kCeilingAdaFp8Assumed, .memory_bandwidth_gb_per_s = 864,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet100G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA L20 product sheet as quoted by resellers (119.5 / 239 TFLOPS dense fp16 / fp8, 59.8 fp32, "
                      "864 GB/s)",
       .aliases = {"l20", "nvidia l20"}},
      // AD102: 142 SMs x 1024 dense fp16 FLOP/clk with fp32 accumulate (full rate on RTX professional cards) x
      // 2.505 GHz = 364.2 (728.5 fp8); PCIe 4.0, no NVLink.
      {.id = "rtx-6000-ada-48gb", .name = "NVIDIA RTX 6000 Ada 48GB", .architecture = "Ada",
       .memory_bytes = mib(46068), .context_bytes = kContextAmpereBytes,
       .source = "nvidia-smi total 46068 MiB, ECC on (DINGYANB/MTVCrafter#21; 49140 MiB with ECC off)",
       .peak_fp16_tflops = 364.2, .peak_bf16_tflops = 364.2, .peak_fp8_tflops = 728.5, .peak_fp32_tflops = 91.1,
       .ceiling_16bit = kCeilingAdaAssumed, .ceiling_fp8 = kCeilingAdaFp8Assumed, .memory_bandwidth_gb_per_s = 960,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet10G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "AD102 SMs x clock (derived in memfit's gpus.cpp); 960 GB/s",
       .aliases = {"rtx 6000 ada", "rtx6000 ada", "rtx 6000 ada generation", "rtx6000ada"}},
      // Its NVLink bridge joins two cards only: PCIe between the rest.
      {.id = "a40-48gb", .name = "NVIDIA A40 48GB", .architecture = "Ampere", .memory_bytes = mib(46068),
       .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 46068 MiB (chatdoc-com/OCRFlux#64)",
       .peak_fp16_tflops = 149.7, .peak_bf16_tflops = 149.7, .peak_fp8_tflops = 0, .peak_fp32_tflops = 37.4,
       .ceiling_16bit = kCeilingAmpere, .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 696,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet100G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA A40 datasheet (149.7 dense bf16, 37.4 fp32, 696 GB/s)",
       .aliases = {"nvidia a40", "a40"}},
      {.id = "rtx-a6000-48gb", .name = "NVIDIA RTX A6000 48GB", .architecture = "Ampere",
       .memory_bytes = mib(49140), .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 49140 MiB",
       .peak_fp16_tflops = 154.8, .peak_bf16_tflops = 154.8, .peak_fp8_tflops = 0, .peak_fp32_tflops = 38.7,
       .ceiling_16bit = kCeilingAmpere, .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 768,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet10G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "NVIDIA RTX A6000 datasheet (154.8 TFLOPS dense tensor, 38.7 fp32, 768 GB/s)",
       .aliases = {"a6000", "rtx a6000"}},
      {.id = "mi250-64gb", .name = "AMD Instinct MI250 (one 64 GB GCD)", .architecture = "CDNA 2",
       .memory_bytes = mib(65520), .context_bytes = kContextRocmBytes,
       .source = "rocm total 68702699520 bytes per GCD; ROCm shows each MI250 module as two 64 GB GPUs",
       .peak_fp16_tflops = 181.05, .peak_bf16_tflops = 181.05, .peak_fp8_tflops = 0, .peak_fp32_tflops = 45.25,
       .ceiling_16bit = kCeilingCdnaAssumed, .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 1638,
       .intra_node_gb_per_s = kInfinityFabricMi250, .inter_node_gb_per_s = kNet100G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "AMD Instinct MI250 datasheet (module: 362.1 TFLOPS bf16, 90.5 fp32 matrix, 3.2 TB/s; halved per "
                      "GCD)",
       .aliases = {"mi250", "instinct mi250"}},
      {.id = "a100-80gb", .name = "NVIDIA A100 80GB", .architecture = "Ampere", .memory_bytes = mib(81920),
       .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 81920 MiB", .peak_fp16_tflops = 312.0,
       .peak_bf16_tflops = 312.0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 19.5, .ceiling_16bit = kCeilingAmpere,
       .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 2039, .intra_node_gb_per_s = kNvlink3,
       .inter_node_gb_per_s = kNet200G, .host_link_gb_per_s = kPcie4, .gpus_per_node = 8, .price_per_hour = 2.4984,
       .spec_source = "NVIDIA A100 datasheet (312 TFLOPS bf16 dense, 19.5 fp32, 2039 GB/s, NVLink 600 GB/s); "
                      "Modal price",
       .aliases = {"a100-sxm4-80gb", "a100-sxm-80gb", "a100 80gb sxm"}},
      {.id = "a100-pcie-80gb", .name = "NVIDIA A100 80GB PCIe", .architecture = "Ampere",
       .memory_bytes = mib(81920), .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 81920 MiB",
       .peak_fp16_tflops = 312.0, .peak_bf16_tflops = 312.0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 19.5,
       .ceiling_16bit = kCeilingAmpere, .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 1935,
       .intra_node_gb_per_s = kPcie4, .inter_node_gb_per_s = kNet100G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA A100 datasheet (PCIe: 312 TFLOPS bf16 dense, 19.5 fp32, 1935 GB/s)",
       .aliases = {"a100 80gb pcie"}},
      {.id = "a800-80gb", .name = "NVIDIA A800 80GB", .architecture = "Ampere", .memory_bytes = mib(81920),
       .context_bytes = kContextAmpereBytes, .source = "nvidia-smi total 81920 MiB (the A100 80GB's memory)",
       .peak_fp16_tflops = 312.0, .peak_bf16_tflops = 312.0, .peak_fp8_tflops = 0, .peak_fp32_tflops = 19.5,
       .ceiling_16bit = kCeilingAmpere, .ceiling_fp8 = 0, .memory_bandwidth_gb_per_s = 2039,
       .intra_node_gb_per_s = kNvlink3 * 2 / 3, .inter_node_gb_per_s = kNet200G, .host_link_gb_per_s = kPcie4,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA A800 datasheet (the A100 80GB SXM with NVLink at 400 GB/s instead of 600)",
       .aliases = {"a800", "a800-sxm4-80gb", "a800 80gb sxm"}},
      {.id = "h100-sxm-80gb", .name = "NVIDIA H100 SXM 80GB", .architecture = "Hopper", .memory_bytes = mib(81559),
       .context_bytes = kContextHopperBytes, .source = "nvidia-smi total 81559 MiB", .peak_fp16_tflops = 989.4,
       .peak_bf16_tflops = 989.4, .peak_fp8_tflops = 1978.9, .peak_fp32_tflops = 67.0,
       .ceiling_16bit = kCeilingHopper, .ceiling_fp8 = kCeilingHopperFp8, .memory_bandwidth_gb_per_s = 3350,
       .intra_node_gb_per_s = kNvlink4, .inter_node_gb_per_s = kNet400G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 3.78,
       .spec_source = "NVIDIA H100 datasheet (SXM: 989 / 1979 TFLOPS dense bf16 / fp8, 67 fp32, 3.35 TB/s, NVLink "
                      "900 GB/s); Lambda price",
       .aliases = {"h100", "h100-80gb", "h100-sxm5-80gb", "h100 sxm5", "h100 80gb hbm3"}},
      {.id = "h100-pcie-80gb", .name = "NVIDIA H100 PCIe 80GB", .architecture = "Hopper",
       .memory_bytes = mib(81559), .context_bytes = kContextHopperBytes, .source = "nvidia-smi total 81559 MiB",
       .peak_fp16_tflops = 756.0, .peak_bf16_tflops = 756.0, .peak_fp8_tflops = 1513.0, .peak_fp32_tflops = 51.0,
       .ceiling_16bit = kCeilingHopper, .ceiling_fp8 = kCeilingHopperFp8, .memory_bandwidth_gb_per_s = 2000,
       .intra_node_gb_per_s = kPcie5, .inter_node_gb_per_s = kNet200G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 2.86,
       .spec_source = "NVIDIA H100 datasheet (PCIe: 756 / 1513 TFLOPS dense bf16 / fp8, 51 fp32, 2 TB/s); Lambda price",
       .aliases = {"h100 pcie"}},
      {.id = "h800-80gb", .name = "NVIDIA H800 SXM 80GB", .architecture = "Hopper", .memory_bytes = mib(81559),
       .context_bytes = kContextHopperBytes, .source = "nvidia-smi total 81559 MiB (the H100 SXM's memory)",
       .peak_fp16_tflops = 989.4, .peak_bf16_tflops = 989.4, .peak_fp8_tflops = 1978.9, .peak_fp32_tflops = 67.0,
       .ceiling_16bit = kCeilingHopper, .ceiling_fp8 = kCeilingHopperFp8, .memory_bandwidth_gb_per_s = 3350,
       .intra_node_gb_per_s = kNvlink4 * 4 / 9, .inter_node_gb_per_s = kNet400G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA H800 SXM (the H100 SXM's tensor cores and HBM3 with NVLink at 400 GB/s instead of 900)",
       .aliases = {"h800", "h800-sxm-80gb", "h800 sxm5"}},
      {.id = "h100-nvl-94gb", .name = "NVIDIA H100 NVL 94GB", .architecture = "Hopper", .memory_bytes = mib(95330),
       .context_bytes = kContextHopperBytes,
       .source = "total 99,961,274,368 bytes = 95330 MiB as the driver reports it (fastfetch-cli/fastfetch#1658)",
       .peak_fp16_tflops = 835.5, .peak_bf16_tflops = 835.5, .peak_fp8_tflops = 1670.5, .peak_fp32_tflops = 60.0,
       .ceiling_16bit = kCeilingHopper, .ceiling_fp8 = kCeilingHopperFp8, .memory_bandwidth_gb_per_s = 3900,
       .intra_node_gb_per_s = kNvlink3, .inter_node_gb_per_s = kNet200G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA H100 NVL datasheet (1671 / 3341 TFLOPS bf16 / fp8 with sparsity, half that dense; 60 "
                      "fp32; 3.9 TB/s; NVLink bridge 600 GB/s between a pair)",
       .aliases = {"h100 nvl", "h100-nvl"}},
      {.id = "h100-96gb", .name = "NVIDIA H100 SXM 96GB", .architecture = "Hopper", .memory_bytes = mib(97871),
       .context_bytes = kContextHopperBytes,
       .source = "derived: 96 GiB of HBM3 less the 80 GB part's reserve (81559 of 81920 MiB); torchtitan's runs "
                 "report about 95 GiB",
       .peak_fp16_tflops = 989.4, .peak_bf16_tflops = 989.4, .peak_fp8_tflops = 1978.9, .peak_fp32_tflops = 67.0,
       .ceiling_16bit = kCeilingHopper, .ceiling_fp8 = kCeilingHopperFp8, .memory_bandwidth_gb_per_s = 3350,
       .intra_node_gb_per_s = kNvlink4, .inter_node_gb_per_s = kNet400G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "assumed the H100 SXM's tensor cores, bandwidth and links with six 16 GB HBM3 stacks",
       .aliases = {"h100-sxm-96gb", "h100 96gb hbm3"}},
      // Workstation Edition: GB202's 188 SMs x 1024 dense fp16 FLOP/clk with fp32 accumulate (full rate on RTX
      // PRO cards) x 2.617 GHz = 503.8 (1007.6 fp8); PCIe 5.0, no NVLink; the Server Edition has 1597 GB/s.
      // Hopper cut for export: no public NVIDIA datasheet; the figures resellers publish from NVIDIA's sheet:
      // 148 / 296 TFLOPS dense fp16 / fp8 (the int8 figure; Hopper runs fp8 at the int8 rate), 44 fp32,
      // 4.0 TB/s, NVLink 900 GB/s.
      {.id = "h20-96gb", .name = "NVIDIA H20 96GB", .architecture = "Hopper", .memory_bytes = mib(97871),
       .context_bytes = kContextHopperBytes, .source = "nvidia-smi total 97871 MiB (NVIDIA/nvtrust#128)",
       .peak_fp16_tflops = 148.0, .peak_bf16_tflops = 148.0, .peak_fp8_tflops = 296.0, .peak_fp32_tflops = 44.0,
       .ceiling_16bit = kCeilingHopper, .ceiling_fp8 = kCeilingHopperFp8, .memory_bandwidth_gb_per_s = 4000,
       .intra_node_gb_per_s = kNvlink4, .inter_node_gb_per_s = kNet400G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA H20 figures as resellers publish them (148 dense bf16, 296 fp8/int8, 44 fp32, 4.0 TB/s, "
                      "NVLink 900 GB/s); no public NVIDIA datasheet",
       .aliases = {"h20", "nvidia h20"}},
      // The Hopper GPU of a Grace Hopper superchip: H100 SXM's tensor rates; 4.0 TB/s with 96 GB HBM3. Quad-GH200
      // nodes (CSCS Alps, JUPITER) join their four GPUs by NVLink; one 200 Gb/s NIC per superchip.
      {.id = "gh200-96gb", .name = "NVIDIA GH200 96GB (Hopper GPU)", .architecture = "Hopper",
       .memory_bytes = mib(97871), .context_bytes = kContextHopperBytes,
       .source = "nvidia-smi total 97871 MiB ('NVIDIA GH200 480GB', driver 570)", .peak_fp16_tflops = 989.4,
       .peak_bf16_tflops = 989.4, .peak_fp8_tflops = 1978.9, .peak_fp32_tflops = 67.0, .ceiling_16bit = kCeilingHopper,
       .ceiling_fp8 = kCeilingHopperFp8, .memory_bandwidth_gb_per_s = 4000, .intra_node_gb_per_s = kNvlink4,
       .inter_node_gb_per_s = kNet200G, .host_link_gb_per_s = 450.0, .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "NVIDIA GH200 Grace Hopper Superchip datasheet (H100's 989 / 1979 TFLOPS dense bf16 / fp8, 67 "
                      "fp32; 4 TB/s HBM3; NVLink-C2C 900 GB/s to Grace, 450 each way)",
       .aliases = {"gh200", "gh200 480gb", "gh200-480gb", "grace hopper"}},
      {.id = "rtx-pro-6000-96gb", .name = "NVIDIA RTX PRO 6000 Blackwell 96GB", .architecture = "Blackwell",
       .memory_bytes = mib(97887), .context_bytes = kContextBlackwellBytes, .source = "nvidia-smi total 97887 MiB",
       .peak_fp16_tflops = 503.8, .peak_bf16_tflops = 503.8, .peak_fp8_tflops = 1007.6, .peak_fp32_tflops = 125.0,
       .ceiling_16bit = kCeilingBlackwellAssumed, .ceiling_fp8 = kCeilingBlackwellFp8Assumed,
       .memory_bandwidth_gb_per_s = 1792, .intra_node_gb_per_s = kPcie5, .inter_node_gb_per_s = kNet100G,
       .host_link_gb_per_s = kPcie5, .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "GB202 SMs x clock (derived in memfit's gpus.cpp); 1792 GB/s",
       .aliases = {"rtx pro 6000", "rtx pro 6000 blackwell", "rtxpro6000",
                   "nvidia rtx pro 6000 blackwell workstation edition",
                   "nvidia rtx pro 6000 blackwell server edition"}},
      {.id = "h200-141gb", .name = "NVIDIA H200 141GB", .architecture = "Hopper", .memory_bytes = mib(143771),
       .context_bytes = kContextHopperBytes, .source = "nvidia-smi total 143771 MiB", .peak_fp16_tflops = 989.4,
       .peak_bf16_tflops = 989.4, .peak_fp8_tflops = 1978.9, .peak_fp32_tflops = 67.0,
       .ceiling_16bit = kCeilingHopper, .ceiling_fp8 = kCeilingHopperFp8, .memory_bandwidth_gb_per_s = 4800,
       .intra_node_gb_per_s = kNvlink4, .inter_node_gb_per_s = kNet400G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA H200 datasheet (989 / 1979 TFLOPS dense bf16 / fp8, 67 fp32, 4.8 TB/s, NVLink 900 GB/s)",
       .aliases = {"h200", "h200 sxm", "h200-sxm-141gb"}},
      {.id = "h200-nvl-141gb", .name = "NVIDIA H200 NVL 141GB", .architecture = "Hopper", .memory_bytes = mib(143771),
       .context_bytes = kContextHopperBytes, .source = "nvidia-smi total 143771 MiB ('NVIDIA H200 NVL')",
       .peak_fp16_tflops = 835.5, .peak_bf16_tflops = 835.5, .peak_fp8_tflops = 1670.5, .peak_fp32_tflops = 60.0,
       .ceiling_16bit = kCeilingHopper, .ceiling_fp8 = kCeilingHopperFp8, .memory_bandwidth_gb_per_s = 4800,
       .intra_node_gb_per_s = kNvlink4, .inter_node_gb_per_s = kNet200G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA H200 datasheet, NVL column (1671 / 3341 TFLOPS bf16 / fp8 with sparsity, half that dense; "
                      "60 fp32; 4.8 TB/s; NVLink bridge 900 GB/s among two or four cards)",
       .aliases = {"h200 nvl", "h200-nvl"}},
      {.id = "gh200-144gb", .name = "NVIDIA GH200 144GB (Hopper GPU)", .architecture = "Hopper",
       .memory_bytes = mib(146831), .context_bytes = kContextHopperBytes,
       .source = "nvidia-smi memory.total 146831 MiB ('NVIDIA GH200 144G HBM3e', driver 580)",
       .peak_fp16_tflops = 989.4, .peak_bf16_tflops = 989.4, .peak_fp8_tflops = 1978.9, .peak_fp32_tflops = 67.0,
       .ceiling_16bit = kCeilingHopper, .ceiling_fp8 = kCeilingHopperFp8, .memory_bandwidth_gb_per_s = 4900,
       .intra_node_gb_per_s = kNvlink4, .inter_node_gb_per_s = kNet200G, .host_link_gb_per_s = 450.0,
       .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "NVIDIA GH200 Grace Hopper Superchip datasheet (H100's tensor rates; 4.9 TB/s HBM3e; NVLink-C2C "
                      "900 GB/s to Grace)",
       .aliases = {"gh200 144gb", "gh200 144g", "gh200-144g"}},
      {.id = "b200-180gb", .name = "NVIDIA B200 180GB", .architecture = "Blackwell", .memory_bytes = mib(183359),
       .context_bytes = kContextBlackwellBytes, .source = "nvidia-smi total 183359 MiB", .peak_fp16_tflops = 2250.0,
       .peak_bf16_tflops = 2250.0, .peak_fp8_tflops = 4500.0, .peak_fp32_tflops = 80.0,
       .ceiling_16bit = kCeilingBlackwellAssumed, .ceiling_fp8 = kCeilingBlackwellFp8Assumed,
       .memory_bandwidth_gb_per_s = 8000, .intra_node_gb_per_s = kNvlink5, .inter_node_gb_per_s = kNet400G,
       .host_link_gb_per_s = kPcie5, .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA HGX B200 datasheet (4.5 / 9 PFLOPS sparse bf16 / fp8 → dense halves, 8 TB/s, NVLink "
                      "1.8 TB/s)",
       .aliases = {"b200", "hgx b200"}},
      // The Blackwell GPU of a GB200 NVL72 rack (NVIDIA's "individual Blackwell GPU" column: 2.5 / 5 PFLOPS
      // dense bf16 / fp8, 80 fp32, 8 TB/s, NVLink 1.8 TB/s). Four GPUs (and two Grace CPUs) to a compute
      // tray, the rack's 72 joined by its NVLink Switch; one 400 Gb/s ConnectX-7 per GPU between racks;
      // NVLink-C2C to Grace, 900 GB/s both ways.
      {.id = "gb200-186gb", .name = "NVIDIA GB200 186GB (Blackwell GPU)", .architecture = "Blackwell",
       .memory_bytes = mib(189471), .context_bytes = kContextBlackwellBytes,
       .source = "nvidia-smi total 189471 MiB ('NVIDIA GB200')", .peak_fp16_tflops = 2500.0,
       .peak_bf16_tflops = 2500.0, .peak_fp8_tflops = 5000.0, .peak_fp32_tflops = 80.0,
       .ceiling_16bit = kCeilingBlackwellAssumed, .ceiling_fp8 = kCeilingBlackwellFp8Assumed,
       .memory_bandwidth_gb_per_s = 8000, .intra_node_gb_per_s = kNvlink5, .inter_node_gb_per_s = kNet400G,
       .host_link_gb_per_s = 450.0, .gpus_per_node = 4, .price_per_hour = 0,
       .spec_source = "NVIDIA GB200 NVL72 specifications (360 / 720 PFLOPS bf16 / fp8 with sparsity, 5,760 TFLOPS "
                      "fp32, 576 TB/s, NVLink 130 TB/s for 72 GPUs)",
       .aliases = {"gb200", "gb200 nvl72", "gb200-nvl72"}, .nvlink_domain = 72},
      {.id = "mi300x-192gb", .name = "AMD Instinct MI300X 192GB", .architecture = "CDNA 3",
       .memory_bytes = mib(196288), .context_bytes = kContextRocmBytes,
       .source = "rocm-smi VRAM total 205822885888 bytes", .peak_fp16_tflops = 1307.4, .peak_bf16_tflops = 1307.4,
       .peak_fp8_tflops = 2614.9, .peak_fp32_tflops = 163.4, .ceiling_16bit = kCeilingCdnaAssumed,
       .ceiling_fp8 = kCeilingCdnaFp8Assumed, .memory_bandwidth_gb_per_s = 5300,
       .intra_node_gb_per_s = kInfinityFabricMi300, .inter_node_gb_per_s = kNet400G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "AMD Instinct MI300X datasheet (1307.4 / 2614.9 TFLOPS dense bf16 / fp8, 163.4 fp32 matrix, "
                      "5.3 TB/s)",
       .aliases = {"mi300x", "instinct mi300x"}},
      {.id = "mi325x-256gb", .name = "AMD Instinct MI325X 256GB", .architecture = "CDNA 3",
       .memory_bytes = mib(262144), .context_bytes = kContextRocmBytes,
       .source = "256 GiB HBM3E (AMD datasheet; the exact figure rocm-smi reports is not sourced)",
       .peak_fp16_tflops = 1307.4, .peak_bf16_tflops = 1307.4, .peak_fp8_tflops = 2614.9, .peak_fp32_tflops = 163.4,
       .ceiling_16bit = kCeilingCdnaAssumed, .ceiling_fp8 = kCeilingCdnaFp8Assumed, .memory_bandwidth_gb_per_s = 6000,
       .intra_node_gb_per_s = kInfinityFabricMi300, .inter_node_gb_per_s = kNet400G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "AMD Instinct MI325X datasheet (1307.4 / 2614.9 TFLOPS dense bf16 / fp8, 163.4 fp32 matrix, "
                      "6 TB/s)",
       .aliases = {"mi325x", "instinct mi325x"}},
      {.id = "b300-288gb", .name = "NVIDIA B300 288GB", .architecture = "Blackwell", .memory_bytes = mib(275040),
       .context_bytes = kContextBlackwellBytes, .source = "nvidia-smi total 275040 MiB ('NVIDIA B300 SXM6 AC')",
       .peak_fp16_tflops = 2250.0, .peak_bf16_tflops = 2250.0, .peak_fp8_tflops = 4500.0, .peak_fp32_tflops = 75.0,
       .ceiling_16bit = kCeilingBlackwellAssumed, .ceiling_fp8 = kCeilingBlackwellFp8Assumed,
       .memory_bandwidth_gb_per_s = 8000, .intra_node_gb_per_s = kNvlink5, .inter_node_gb_per_s = kNet800G,
       .host_link_gb_per_s = kPcie5, .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "NVIDIA HGX B300 datasheet (36 / 72 PFLOPS bf16 / fp8 with sparsity for eight GPUs: 2.25 / 4.5 "
                      "dense each; 600 TFLOPS fp32 for eight; 8 TB/s; NVLink 1.8 TB/s; ConnectX-8 800 Gb/s)",
       .aliases = {"b300", "hgx b300", "b300 sxm6", "b300 sxm6 ac", "blackwell ultra"}},
      // CDNA 4: 256 CUs x 8192 dense fp8 FLOP/clk x 2.4 GHz = 5.03 PFLOPS (AMD at ISSCC 2026), 16-bit at half.
      {.id = "mi355x-288gb", .name = "AMD Instinct MI355X 288GB", .architecture = "CDNA 4",
       .memory_bytes = mib(294896), .context_bytes = kContextRocmBytes,
       .source = "rocm-smi VRAM total 309220868096 bytes (PyTorch's total_memory the same)",
       .peak_fp16_tflops = 2516.6, .peak_bf16_tflops = 2516.6, .peak_fp8_tflops = 5033.2, .peak_fp32_tflops = 157.3,
       .ceiling_16bit = kCeilingCdnaAssumed, .ceiling_fp8 = kCeilingCdnaFp8Assumed, .memory_bandwidth_gb_per_s = 8000,
       .intra_node_gb_per_s = kInfinityFabricMi355, .inter_node_gb_per_s = kNet400G, .host_link_gb_per_s = kPcie5,
       .gpus_per_node = 8, .price_per_hour = 0,
       .spec_source = "AMD Instinct MI355X (2.5 / 5.0 PFLOPS dense bf16 / fp8, 157.3 fp32 matrix, 8 TB/s, Infinity "
                      "Fabric 153.6 GB/s per link)",
       .aliases = {"mi355x", "instinct mi355x"}},
  };
}

// A name's words: lower case, split at anything not a letter or digit and between letters and
// digits ("H100 SXM5" → h 100 sxm), without vendor and product-line words or memory types
// (nvidia, geforce, tesla, hbm3, gddr6x ...), "sxm4"/"sxm5" read as "sxm" and "g" as "gb".
std::vector<std::string> words(std::string_view name) {
  std::vector<std::string> raw;
  std::string word;
  for (char ch : name) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c)) word += static_cast<char>(std::tolower(c));
    else if (!word.empty()) raw.push_back(std::move(word)), word.clear();
  }
  if (!word.empty()) raw.push_back(std::move(word));
  static constexpr const char* kNoise[] = {"nvidia", "geforce", "tesla", "amd", "instinct", "hgx", "dgx", "gpu"};
  std::vector<std::string> out;
  for (const std::string& w : raw) {
    if (std::find(std::begin(kNoise), std::end(kNoise), w) != std::end(kNoise)) continue;
    if (w.rfind("hbm", 0) == 0 || w.rfind("gddr", 0) == 0) continue;
    std::string part;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const bool digit = std::isdigit(static_cast<unsigned char>(w[i])) != 0;
      if (i > 0 && digit != (std::isdigit(static_cast<unsigned char>(w[i - 1])) != 0)) {
        out.push_back(std::move(part)), part.clear();
      }
      part += w[i];
    }
    out.push_back(std::move(part));
  }
  // "sxm5" splits into sxm 5: drop the generation digit after sxm; a lone "g" is "gb".
  std::vector<std::string> cleaned;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i > 0 && out[i - 1] == "sxm" && out[i].size() == 1 && std::isdigit(static_cast<unsigned char>(out[i][0]))) continue;
    cleaned.push_back(out[i] == "g" ? "gb" : out[i]);
  }
  std::sort(cleaned.begin(), cleaned.end());
  cleaned.erase(std::unique(cleaned.begin(), cleaned.end()), cleaned.end());
  return cleaned;
}

bool subset(const std::vector<std::string>& small, const std::vector<std::string>& large) {
  return std::includes(large.begin(), large.end(), small.begin(), small.end());
}

// Whether every word of `name` is a word of the card's id or of one of its aliases.
bool names_card(const std::vector<std::string>& name, const Gpu& gpu) {
  if (subset(name, words(gpu.id))) return true;
  for (const char* alias : gpu.aliases) {
    if (subset(name, words(alias))) return true;
  }
  return false;
}

std::string letters_and_digits(std::string_view name) {
  std::string out;
  for (const std::string& w : words(name)) out += w;
  return out;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Cards that share the name's model number ("h100 nvl" → the H100s) and as many of its other
// words as any card does.
std::vector<const Gpu*> nearest_by_model_number(const std::vector<std::string>& asked) {
  std::vector<std::pair<int, const Gpu*>> scored;
  for (const Gpu& gpu : gpu_table()) {
    std::vector<std::string> card = words(gpu.id);
    for (const char* alias : gpu.aliases) {
      for (std::string& w : words(alias)) card.push_back(std::move(w));
    }
    int shared = 0;
    bool number = false;
    for (const std::string& w : asked) {
      if (std::find(card.begin(), card.end(), w) == card.end()) continue;
      ++shared;
      number = number || (w.size() > 1 && std::isdigit(static_cast<unsigned char>(w[0])) && w != "16" && w != "24" &&
                          w != "32" && w != "40" && w != "48" && w != "80");  // a model number, not a memory size
    }
    if (number) scored.push_back({shared, &gpu});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<const Gpu*> out;
  for (const auto& [shared, gpu] : scored) {
    if (shared == scored.front().first) out.push_back(gpu);
  }
  return out;
}

// The closest spelling of each card to `name`, for suggestions: cards within a third of the
// name's length in edits, best first.
std::vector<const Gpu*> nearest_by_spelling(std::string_view name) {
  const std::string target = letters_and_digits(name);
  std::vector<std::pair<std::size_t, const Gpu*>> scored;
  for (const Gpu& gpu : gpu_table()) {
    std::size_t best = edit_distance(target, letters_and_digits(gpu.id));
    for (const char* alias : gpu.aliases) best = std::min(best, edit_distance(target, letters_and_digits(alias)));
    if (best <= std::max<std::size_t>(1, target.size() / 3)) scored.push_back({best, &gpu});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const Gpu*> out;
  for (const auto& [distance, gpu] : scored) out.push_back(gpu);
  return out;
}

}  // namespace

namespace {

// CUDA's total per card, as PyTorch prints it in out-of-memory messages ("GPU 0; 23.70 GiB total
// capacity", "GPU 0 has a total capacity of 79.25 GiB") in public issue threads that name the card,
// or as torch.cuda.get_device_properties / deviceQuery print it in bytes. Readings differ by about
// 0.1 GiB with the driver and ECC; the most common recent one is kept. Windows reports the whole card
// (its driver model keeps no such reserve), so Windows readings are left out. A card shares the
// reading of the same memory under another name where no thread tells them apart (the A100 80GB's
// threads do not say SXM or PCIe; the H800 is the H100 SXM's board and HBM3 with slower NVLink).
struct CudaTotal {
  const char* id;
  Bytes bytes;
};
constexpr Bytes gib_hundredths(std::int64_t hundredths) { return Bytes{hundredths * (std::int64_t{1} << 30) / 100}; }
// Each reading below, with the threads it comes from (readings of one card differ by 0.01-0.2 GiB):
//   t4-16gb 14.75 GiB: hpcaitech/Open-Sora#697 (Colab T4); 14.76 xinge008/Cylinder3D#109, 14.74 zai-org/CogVideo#741
//   v100-16gb 15.77: meta-llama/llama#918 (8x V100 16GB); 15.78 kchengiva/Shift-GCN#34
//   a10g-24gb 22.20: XavierXiao/Dreambooth-Stable-Diffusion#18 (AWS g5.12xlarge); the A10 (not G) reads 21.99
//   l4-24gb 22.03: ArcInstitute/evo2#190
//   rtx-3090-24gb 23.70: GaoLii/DSP#10 (two 3090s), xiaoxiangAQ/GAS-Net#7; 23.69 JiaweiLian/AP-PA#3
//   rtx-4090-24gb 23.64: Tencent-Hunyuan/HunyuanVideo-Avatar#25, ali-vilab/VGen#104, 3DTopia/Phidias-Diffusion#8;
//     23.65 MotrixLab/AiOS#29
//   titan-rtx-24gb 23.65: JIA-Lab-research/UVTR#4
//   v100-32gb 31.74: liucongg/ChatGLM-Finetuning#73, haotian-liu/LLaVA#812
//   a100-40gb 39.50: TianheWu/CoSeR#10 (a 2025 driver); older messages read 39.59 (raoyongming/DenseCLIP#52)
//   l40s-48gb 44.42: stepfun-ai/Step-Video-T2V#8 (8x L40S); the L20 (the same 46068 MiB) shares it
//   rtx-a6000-48gb 47.54: google-research/semivl#18
//   a100-80gb and a100-pcie-80gb 79.25: levihsu/OOTDiffusion#235, HiDream-ai/VAREdit#6; 79.14-79.35 in
//     lianqi1008/Control-GIC#6, JIA-Lab-research/UVTR#4 (none says SXM or PCIe)
//   a800-80gb 79.33: hahnyuan/PB-LLM#3, MoonshotAI/Kimi-VL#51
//   h100-sxm-80gb and h800-80gb 85,045,477,376 B (79.20 GiB): deviceQuery of an "NVIDIA H100 80GB HBM3"
//     (thamada/nvidia-smi, nvsim/H100SXMx8_deviceQuery.py); 79.11 GiB with driver 535 in vllm-project/vllm#27508
//   h100-pcie-80gb 85,045,477,376 B: nvaccelinfo's "Global Memory Size" of an "NVIDIA H100 PCIe" (driver
//     565.57, a public capture beside its nvidia-smi table: 81559 MiB)
//   h100-nvl-94gb 93.00: ali-vilab/VACE#56
//   h200-141gb 143,156 MiB (139.80 GiB): torch's device properties on Modal (ai-bot-pro/achatbot,
//     deploy/modal/src/llm/vllm/vlm/skywork_r1v.py); the H200 NVL (the same 143771 MiB) shares it
//   b200-180gb 191,503,007,744 B (178.35 GiB): vllm-project/vllm#51071 (4x B200)
//   rtx-3060-12gb 11.76: TencentARC/PhotoMaker#47; 11.75 Kunhao-Liu/StyleGaussian#12
//   rtx-4060ti-16gb 15.55: boson-ai/higgs-audio#48 (the reporter names the card)
//   rtx-5090-32gb 31.37: Wan-Video/Wan2.1#465 (the reporter names the card); 31.36 TrajectoryCrafter/TrajectoryCrafter#20
//   rtx-6000-ada-48gb 44.43: DINGYANB/MTVCrafter#21 (beside its 46068 MiB nvidia-smi table)
constexpr CudaTotal kCudaTotals[] = {
    {"t4-16gb", gib_hundredths(1475)},
    {"v100-16gb", gib_hundredths(1577)},
    {"a10g-24gb", gib_hundredths(2220)},
    {"l4-24gb", gib_hundredths(2203)},
    {"rtx-3090-24gb", gib_hundredths(2370)},
    {"rtx-4090-24gb", gib_hundredths(2364)},
    {"titan-rtx-24gb", gib_hundredths(2365)},
    {"v100-32gb", gib_hundredths(3174)},
    {"a100-40gb", gib_hundredths(3950)},
    {"l40s-48gb", gib_hundredths(4442)},
    {"l20-48gb", gib_hundredths(4442)},
    {"rtx-a6000-48gb", gib_hundredths(4754)},
    {"a100-80gb", gib_hundredths(7925)},
    {"a100-pcie-80gb", gib_hundredths(7925)},
    {"a800-80gb", gib_hundredths(7933)},
    {"h100-sxm-80gb", Bytes{85045477376}},
    {"h100-pcie-80gb", Bytes{85045477376}},
    {"h800-80gb", Bytes{85045477376}},
    {"h100-nvl-94gb", gib_hundredths(9300)},
    {"h200-141gb", mib(143156)},
    {"h200-nvl-141gb", mib(143156)},
    {"b200-180gb", Bytes{191503007744}},
    {"rtx-3060-12gb", gib_hundredths(1176)},
    {"rtx-4060ti-16gb", gib_hundredths(1555)},
    {"rtx-5090-32gb", gib_hundredths(3137)},
    {"rtx-6000-ada-48gb", gib_hundredths(4443)},
};

std::vector<Gpu> build_table_with_cuda_totals() {
  std::vector<Gpu> table = build_table();
  for (const CudaTotal& t : kCudaTotals) {
    for (Gpu& g : table) {
      if (std::string_view(g.id) == t.id) {
        g.cuda_total_bytes = t.bytes;
      }
    }
  }
  return table;
}

}  // namespace

const std::vector<Gpu>& gpu_table() {
  static const std::vector<Gpu> table = build_table_with_cuda_totals();  // immutable after first use
  return table;
}

GpuLookup lookup_gpu(std::string_view name) {
  GpuLookup out;
  for (const Gpu& gpu : gpu_table()) {
    if (name == gpu.id) {
      out.gpu = &gpu;
      return out;
    }
  }
  const std::vector<std::string> asked = words(name);
  std::vector<const Gpu*> matches;
  if (!asked.empty()) {
    // An alias spelled out in full wins over a partial match ("h100" is the SXM card).
    for (const Gpu& gpu : gpu_table()) {
      for (const char* alias : gpu.aliases) {
        if (words(alias) == asked) {
          out.gpu = &gpu;
          return out;
        }
      }
    }
    for (const Gpu& gpu : gpu_table()) {
      if (names_card(asked, gpu)) matches.push_back(&gpu);
    }
  }
  if (matches.size() == 1) {
    out.gpu = matches[0];
    return out;
  }
  if (matches.empty()) matches = nearest_by_model_number(asked);
  out.nearest = matches.empty() ? nearest_by_spelling(name) : matches;
  if (out.nearest.size() > 3) out.nearest.resize(3);
  return out;
}

const Gpu* find_gpu(std::string_view name) { return lookup_gpu(name).gpu; }

std::int64_t gpus_per_node(std::string_view gpu, std::int64_t configured) {
  if (configured > 0) return configured;
  const Gpu* g = find_gpu(gpu);
  return g ? g->gpus_per_node : 8;
}

std::int64_t gpu_link_domain(std::string_view gpu, std::int64_t configured) {
  const Gpu* g = find_gpu(gpu);
  const std::int64_t server = gpus_per_node(gpu, configured);
  return g && g->nvlink_domain > server ? g->nvlink_domain : server;
}

std::string gpu_suggestion_text(std::string_view name) {
  const GpuLookup found = lookup_gpu(name);
  if (found.gpu || found.nearest.empty()) return "";
  std::string text = "; did you mean ";
  for (std::size_t i = 0; i < found.nearest.size(); ++i) {
    if (i) text += i + 1 == found.nearest.size() ? " or " : ", ";
    text += found.nearest[i]->id;
  }
  return text + "?";
}

}  // namespace memfit
