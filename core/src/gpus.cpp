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
// × 64 GB/s = 448 (AMD: 896 GB/s bidirectional peer-to-peer); MI250 GCDs reach other packages
// over 50 GB/s links.
constexpr double kPcie3 = 15.75, kPcie4 = 31.5, kPcie5 = 63.0;
constexpr double kNvlink2 = 150.0, kNvlink3 = 300.0, kNvlink4 = 450.0, kNvlink5 = 900.0;
constexpr double kInfinityFabricMi300 = 448.0, kInfinityFabricMi250 = 50.0;
// Typical networks, per GPU, one direction: DGX / HGX H100, H200, B200 and MI300X platforms put
// one 400 Gb/s NIC per GPU (50 GB/s); DGX A100 one 200 Gb/s NIC per GPU (25 GB/s); DGX-1 V100
// four 100 Gb/s NICs for 8 GPUs (6.25 GB/s); PCIe servers and cloud VMs far less (assumed
// 100 Gb/s per GPU for data-centre PCIe cards, 25 Gb/s for T4 / L4 VMs, 10 GbE for desktops).
constexpr double kNet400G = 50.0, kNet200G = 25.0, kNet100G = 12.5, kNetDgx1 = 6.25, kNet25G = 3.125,
                 kNet10G = 1.25;

// Prices, USD per GPU-hour on demand, from two public price lists as summarised on 2026-05-07
// (https://techbytes.app/posts/serverless-gpu-pricing-matrix-modal-replicate-lambda-2026/):
// Lambda 1x H100 SXM 3.78, 1x H100 PCIe 2.86, A100 40GB 1.48; Modal A100 80GB 2.4984, L40S
// 1.9512, L4 0.7992, T4 0.5904. Other cards: no price sourced (0: set hardware.price_per_gpu_hour).
constexpr const char* kPriceSource =
    "prices: Lambda / Modal public price lists, summarised at techbytes.app on 2026-05-07";

// One row per card. Compute peaks are the dense (no sparsity) tensor-core figures of each
// vendor datasheet or architecture whitepaper, with fp32 accumulation: GeForce cards run that at
// half their fp16-accumulate rate (Ada whitepaper appendix; Ampere GA102 whitepaper).
std::vector<Gpu> build_table() {
  return {
      {"t4-16gb", "NVIDIA T4 16GB", "Turing", mib(15360), kContextTuringBytes, "nvidia-smi total 15360 MiB",
       65.0, 0.0, 0.0, 320.0, kPcie3, kNet25G, 4, 0.5904,
       "NVIDIA T4 datasheet (65 TFLOPS fp16 mixed precision, 320 GB/s); Modal price", {"tesla t4", "t4"}},
      {"v100-16gb", "NVIDIA V100 16GB", "Volta", mib(16384), kContextTuringBytes, "nvidia-smi total 16384 MiB",
       125.0, 0.0, 0.0, 900.0, kNvlink2, kNetDgx1, 8, 0.0,
       "NVIDIA V100 SXM2 datasheet (125 TFLOPS tensor, 900 GB/s, NVLink 300 GB/s)", {"v100-sxm2-16gb", "tesla v100 16gb"}},
      {"rtx-4080-16gb", "NVIDIA GeForce RTX 4080 16GB", "Ada", mib(16376), kContextAmpereBytes,
       "nvidia-smi total 16376 MiB", 97.5, 97.5, 194.9, 716.8, kPcie4, kNet10G, 4, 0.0,
       "NVIDIA Ada whitepaper appendix (fp32-accumulate tensor rates)", {"rtx4080", "geforce rtx 4080"}},
      {"a10g-24gb", "NVIDIA A10G 24GB", "Ampere", mib(23028), kContextAmpereBytes, "nvidia-smi total 23028 MiB",
       70.0, 70.0, 0.0, 600.0, kPcie4, kNet25G, 8, 0.0,
       "AWS EC2 G5 (A10G: 70 TFLOPS fp16/bf16 tensor as commonly cited, 600 GB/s)", {"a10g"}},
      {"l4-24gb", "NVIDIA L4 24GB", "Ada", mib(23034), kContextAmpereBytes, "nvidia-smi total 23034 MiB",
       121.0, 121.0, 242.5, 300.0, kPcie4, kNet25G, 8, 0.7992,
       "NVIDIA L4 datasheet (121 / 242.5 TFLOPS dense bf16 / fp8, 300 GB/s); Modal price", {"nvidia l4", "l4"}},
      {"rtx-3090-24gb", "NVIDIA GeForce RTX 3090 24GB", "Ampere", mib(24576), kContextAmpereBytes,
       "nvidia-smi total 24576 MiB", 71.0, 71.0, 0.0, 936.0, kPcie4, kNet10G, 4, 0.0,
       "NVIDIA Ampere GA102 whitepaper (71 TFLOPS fp16/bf16 with fp32 accumulate, 936 GB/s)", {"rtx3090", "3090"}},
      {"rtx-4090-24gb", "NVIDIA GeForce RTX 4090 24GB", "Ada", mib(24564), kContextAmpereBytes,
       "nvidia-smi total 24564 MiB", 165.2, 165.2, 330.3, 1008.0, kPcie4, kNet10G, 4, 0.0,
       "NVIDIA Ada whitepaper appendix (fp32-accumulate tensor rates, 1008 GB/s)", {"rtx4090", "4090"}},
      {"v100-32gb", "NVIDIA V100 32GB", "Volta", mib(32768), kContextTuringBytes, "nvidia-smi total 32768 MiB",
       125.0, 0.0, 0.0, 900.0, kNvlink2, kNetDgx1, 8, 0.0,
       "NVIDIA V100 SXM2 datasheet (125 TFLOPS tensor, 900 GB/s, NVLink 300 GB/s)", {"v100-sxm2-32gb", "tesla v100 32gb"}},
      {"a100-40gb", "NVIDIA A100 40GB", "Ampere", mib(40960), kContextAmpereBytes, "nvidia-smi total 40960 MiB",
       312.0, 312.0, 0.0, 1555.0, kNvlink3, kNet200G, 8, 1.48,
       "NVIDIA A100 datasheet (312 TFLOPS bf16 dense, 1555 GB/s, NVLink 600 GB/s); Lambda price",
       {"a100-sxm4-40gb", "a100 40gb sxm"}},
      {"l40s-48gb", "NVIDIA L40S 48GB", "Ada", mib(46068), kContextAmpereBytes, "nvidia-smi total 46068 MiB",
       362.05, 362.05, 733.0, 864.0, kPcie4, kNet100G, 8, 1.9512,
       "NVIDIA L40S datasheet (362 / 733 TFLOPS dense bf16 / fp8, 864 GB/s); Modal price", {"l40s"}},
      {"rtx-a6000-48gb", "NVIDIA RTX A6000 48GB", "Ampere", mib(49140), kContextAmpereBytes,
       "nvidia-smi total 49140 MiB", 154.8, 154.8, 0.0, 768.0, kPcie4, kNet10G, 4, 0.0,
       "NVIDIA RTX A6000 datasheet (154.8 TFLOPS dense tensor, 768 GB/s)", {"a6000", "rtx a6000"}},
      {"a100-80gb", "NVIDIA A100 80GB", "Ampere", mib(81920), kContextAmpereBytes, "nvidia-smi total 81920 MiB",
       312.0, 312.0, 0.0, 2039.0, kNvlink3, kNet200G, 8, 2.4984,
       "NVIDIA A100 datasheet (312 TFLOPS bf16 dense, 2039 GB/s, NVLink 600 GB/s); Modal price",
       {"a100-sxm4-80gb", "a100-sxm-80gb", "a100 80gb sxm"}},
      {"a100-pcie-80gb", "NVIDIA A100 80GB PCIe", "Ampere", mib(81920), kContextAmpereBytes,
       "nvidia-smi total 81920 MiB", 312.0, 312.0, 0.0, 1935.0, kPcie4, kNet100G, 8, 0.0,
       "NVIDIA A100 datasheet (PCIe: 312 TFLOPS bf16 dense, 1935 GB/s)", {"a100 80gb pcie"}},
      {"h100-sxm-80gb", "NVIDIA H100 SXM 80GB", "Hopper", mib(81559), kContextHopperBytes, "nvidia-smi total 81559 MiB",
       989.4, 989.4, 1978.9, 3350.0, kNvlink4, kNet400G, 8, 3.78,
       "NVIDIA H100 datasheet (SXM: 989 / 1979 TFLOPS dense bf16 / fp8, 3.35 TB/s, NVLink 900 GB/s); Lambda price",
       {"h100", "h100-80gb", "h100-sxm5-80gb", "h100 sxm5", "h100 80gb hbm3"}},
      {"h100-pcie-80gb", "NVIDIA H100 PCIe 80GB", "Hopper", mib(81559), kContextHopperBytes, "nvidia-smi total 81559 MiB",
       756.0, 756.0, 1513.0, 2000.0, kPcie5, kNet200G, 8, 2.86,
       "NVIDIA H100 datasheet (PCIe: 756 / 1513 TFLOPS dense bf16 / fp8, 2 TB/s); Lambda price", {"h100 pcie"}},
      {"h200-141gb", "NVIDIA H200 141GB", "Hopper", mib(143771), kContextHopperBytes, "nvidia-smi total 143771 MiB",
       989.4, 989.4, 1978.9, 4800.0, kNvlink4, kNet400G, 8, 0.0,
       "NVIDIA H200 datasheet (989 / 1979 TFLOPS dense bf16 / fp8, 4.8 TB/s, NVLink 900 GB/s)",
       {"h200", "h200 sxm", "h200-sxm-141gb"}},
      {"b200-180gb", "NVIDIA B200 180GB", "Blackwell", mib(183359), kContextBlackwellBytes, "nvidia-smi total 183359 MiB",
       2250.0, 2250.0, 4500.0, 8000.0, kNvlink5, kNet400G, 8, 0.0,
       "NVIDIA HGX B200 datasheet (4.5 / 9 PFLOPS sparse bf16 / fp8 → dense halves, 8 TB/s, NVLink 1.8 TB/s)",
       {"b200", "hgx b200"}},
      {"mi250-64gb", "AMD Instinct MI250 (one 64 GB GCD)", "CDNA 2", mib(65520), kContextRocmBytes,
       "rocm total 68702699520 bytes per GCD; ROCm shows each MI250 module as two 64 GB GPUs", 181.05, 181.05, 0.0,
       1638.0, kInfinityFabricMi250, kNet100G, 8, 0.0,
       "AMD Instinct MI250 datasheet (module: 362.1 TFLOPS bf16, 3.2 TB/s; halved per GCD)", {"mi250", "instinct mi250"}},
      {"mi300x-192gb", "AMD Instinct MI300X 192GB", "CDNA 3", mib(196288), kContextRocmBytes,
       "rocm-smi VRAM total 205822885888 bytes", 1307.4, 1307.4, 2614.9, 5300.0, kInfinityFabricMi300, kNet400G, 8,
       0.0, "AMD Instinct MI300X datasheet (1307.4 / 2614.9 TFLOPS dense bf16 / fp8, 5.3 TB/s)",
       {"mi300x", "instinct mi300x"}},
      {"mi325x-256gb", "AMD Instinct MI325X 256GB", "CDNA 3", mib(262144), kContextRocmBytes,
       "256 GiB HBM3E (AMD datasheet; the exact figure rocm-smi reports is not sourced)", 1307.4, 1307.4, 2614.9,
       6000.0, kInfinityFabricMi300, kNet400G, 8, 0.0,
       "AMD Instinct MI325X datasheet (1307.4 / 2614.9 TFLOPS dense bf16 / fp8, 6 TB/s)", {"mi325x", "instinct mi325x"}},
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

const std::vector<Gpu>& gpu_table() {
  static const std::vector<Gpu> table = build_table();  // immutable after first use
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
