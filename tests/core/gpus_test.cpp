// The GPU table: every common spelling of a card resolves to it, unknown names get the nearest
// entries, and the figures the step-time model reads are present and consistent.
#include <gtest/gtest.h>

#include <string>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

std::string id_of(const char* name) {
  const Gpu* gpu = find_gpu(name);
  return gpu ? gpu->id : "(none)";
}

TEST(Gpus, CommonSpellingsResolve) {
  EXPECT_EQ(id_of("a100-sxm4-40gb"), "a100-40gb");
  EXPECT_EQ(id_of("A100 80GB PCIe"), "a100-pcie-80gb");
  EXPECT_EQ(id_of("A100-SXM4-80GB"), "a100-80gb");
  EXPECT_EQ(id_of("H100 SXM5"), "h100-sxm-80gb");
  EXPECT_EQ(id_of("NVIDIA H100 80GB HBM3"), "h100-sxm-80gb");  // what nvidia-smi prints
  EXPECT_EQ(id_of("h100"), "h100-sxm-80gb");                   // an alias spelled in full wins
  EXPECT_EQ(id_of("H100 PCIe"), "h100-pcie-80gb");
  EXPECT_EQ(id_of("rtx4090"), "rtx-4090-24gb");
  EXPECT_EQ(id_of("NVIDIA GeForce RTX 4090"), "rtx-4090-24gb");
  EXPECT_EQ(id_of("L40S"), "l40s-48gb");
  EXPECT_EQ(id_of("L4"), "l4-24gb");
  EXPECT_EQ(id_of("Tesla T4"), "t4-16gb");
  EXPECT_EQ(id_of("MI300X"), "mi300x-192gb");
  EXPECT_EQ(id_of("AMD Instinct MI325X"), "mi325x-256gb");
  EXPECT_EQ(id_of("mi250"), "mi250-64gb");
  EXPECT_EQ(id_of("h100-sxm-80gb"), "h100-sxm-80gb");
  EXPECT_EQ(id_of("RTX 5090"), "rtx-5090-32gb");
  EXPECT_EQ(id_of("NVIDIA GeForce RTX 5090"), "rtx-5090-32gb");
  EXPECT_EQ(id_of("A10"), "a10-24gb");  // the PCIe card; AWS's is the A10G
  EXPECT_EQ(id_of("A10G"), "a10g-24gb");
  EXPECT_EQ(id_of("NVIDIA RTX 6000 Ada Generation"), "rtx-6000-ada-48gb");
  EXPECT_EQ(id_of("A40"), "a40-48gb");
  EXPECT_EQ(id_of("RTX 3060"), "rtx-3060-12gb");
  EXPECT_EQ(id_of("4060 Ti"), "rtx-4060ti-16gb");
  EXPECT_EQ(id_of("NVIDIA RTX PRO 6000 Blackwell Workstation Edition"), "rtx-pro-6000-96gb");
  // "RTX 6000" alone is three cards (Ada, Ampere's A6000, Blackwell's PRO 6000): not guessed.
  EXPECT_EQ(id_of("RTX 6000"), "(none)");
}

TEST(Gpus, AmbiguousOrUnknownNamesGetTheNearestEntries) {
  const GpuLookup a100 = lookup_gpu("A100");
  EXPECT_EQ(a100.gpu, nullptr);
  ASSERT_EQ(a100.nearest.size(), 3u);
  EXPECT_EQ(std::string(a100.nearest[0]->id), "a100-40gb");
  EXPECT_EQ(gpu_suggestion_text("h100-pcie-96gb"), "; did you mean h100-pcie-80gb or h100-96gb?");
  EXPECT_EQ(std::string(lookup_gpu("H100 NVL").gpu->id), "h100-nvl-94gb");
  EXPECT_EQ(std::string(lookup_gpu("h800").gpu->id), "h800-80gb");
  EXPECT_EQ(gpu_suggestion_text("h100-sxm-80gbb"), "; did you mean h100-sxm-80gb?");
  EXPECT_EQ(gpu_suggestion_text("nope"), "");  // nothing close: no guess
}

TEST(Gpus, ConfigurationReadsASpellingAsTheId) {
  const ConfigParse parsed = parse_config_text(R"({"hardware":{"gpu":"A100 80GB PCIe"}})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.config.hardware.gpu, "a100-pcie-80gb");
  const ConfigParse unknown = parse_config_text(R"({"hardware":{"gpu":"V100"}})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.errors[0].message.find("did you mean v100-16gb or v100-32gb?"), std::string::npos);
}

TEST(Gpus, EveryCardHasWhatTheStepTimeModelNeeds) {
  for (const Gpu& g : gpu_table()) {
    SCOPED_TRACE(g.id);
    EXPECT_GT(g.peak_fp16_tflops, 0);
    EXPECT_GT(g.memory_bandwidth_gb_per_s, 0);
    EXPECT_GT(g.intra_node_gb_per_s, 0);
    EXPECT_GT(g.inter_node_gb_per_s, 0);
    EXPECT_GE(g.gpus_per_node, 1);
    EXPECT_GE(g.price_per_hour, 0);
    // FP8 tensor cores run at twice the 16-bit rate wherever they exist.
    if (g.has_fp8()) EXPECT_NEAR(g.peak_fp8_tflops / g.peak_bf16_tflops, 2.0, 0.05);
    EXPECT_EQ(find_gpu(g.id), &g);
    for (const char* alias : g.aliases) EXPECT_EQ(find_gpu(alias), &g) << alias;
  }
  // Cards before Ampere have no bf16; FP8 starts with Ada, Hopper and CDNA 3.
  EXPECT_FALSE(find_gpu("v100-32gb")->has_bf16());
  EXPECT_FALSE(find_gpu("t4-16gb")->has_bf16());
  EXPECT_FALSE(find_gpu("a100-80gb")->has_fp8());
  EXPECT_TRUE(find_gpu("h100-sxm-80gb")->has_fp8());
  EXPECT_TRUE(find_gpu("mi300x-192gb")->has_fp8());
}

// The names nvidia-smi and rocm-smi print for the newer data-centre cards resolve to their rows, and
// each row's memory is the total those tools report (gpus.cpp cites each reading).
TEST(Gpus, NewerDataCentreCardsResolveFromTheirToolNames) {
  const struct {
    const char* name;
    const char* id;
    std::int64_t mib;
  } cards[] = {
      {"NVIDIA H20", "h20-96gb", 97871},           {"NVIDIA GH200 480GB", "gh200-96gb", 97871},
      {"NVIDIA GH200 144G HBM3e", "gh200-144gb", 146831}, {"NVIDIA H200 NVL", "h200-nvl-141gb", 143771},
      {"NVIDIA B300 SXM6 AC", "b300-288gb", 275040}, {"AMD Instinct MI355X", "mi355x-288gb", 294896},
      {"NVIDIA L20", "l20-48gb", 46068},           {"NVIDIA GB200", "gb200-186gb", 189471},
  };
  for (const auto& c : cards) {
    SCOPED_TRACE(c.name);
    const GpuLookup found = lookup_gpu(c.name);
    ASSERT_NE(found.gpu, nullptr);
    EXPECT_STREQ(found.gpu->id, c.id);
    EXPECT_EQ(found.gpu->memory_bytes.value(), c.mib << 20);
  }
  // MX block scaling is in Blackwell's and CDNA 4's tensor cores, not in Hopper's or CDNA 3's.
  EXPECT_TRUE(find_gpu("b300-288gb")->has_mx());
  EXPECT_TRUE(find_gpu("mi355x-288gb")->has_mx());
  EXPECT_FALSE(find_gpu("gh200-144gb")->has_mx());
  EXPECT_FALSE(find_gpu("mi325x-256gb")->has_mx());
}

// A card without the recipe's tensor cores is listed with its memory but marked as lacking them;
// bf16 on such a card is a warning (PyTorch emulates it), Transformer Engine's FP8 an error.
TEST(Gpus, CardsWithoutTheRecipesTensorCoresAreMarked) {
  const auto gpus = [](const char* text) {
    const Json r = estimate_json(text);
    std::string out;
    for (const Json& g : r.find("gpus")->items()) {
      const Json* lacks = g.find("lacks");
      const std::string id = g.find("gpu")->as_string();
      if (id == "v100-32gb" || id == "a100-80gb" || id == "h100-sxm-80gb") {
        out += id + "=" + (g.find("runs")->as_bool() ? "runs" : lacks->as_string()) + " ";
      }
    }
    return out;
  };
  EXPECT_EQ(gpus(R"({"model":{"preset":"llama-3.2-1b"},"training":{"precision":"bf16_mixed"}})"),
            "v100-32gb=bf16 a100-80gb=runs h100-sxm-80gb=runs ");
  EXPECT_EQ(gpus(R"({"model":{"preset":"llama-3.2-1b"},"training":{"precision":"fp16_mixed"}})"),
            "v100-32gb=runs a100-80gb=runs h100-sxm-80gb=runs ");
  EXPECT_EQ(gpus(R"({"model":{"preset":"llama-3.2-1b"},"training":{"precision":"bf16_fsdp","float8":"rowwise"}})"),
            "v100-32gb=FP8 a100-80gb=FP8 h100-sxm-80gb=runs ");
  EXPECT_EQ(gpus(R"({"model":{"preset":"llama-3.2-1b"},"training":{"precision":"bf16_fsdp","float8":"mxfp8"},"hardware":{"gpu":"b200-180gb"}})"),
            "v100-32gb=MXFP8 a100-80gb=MXFP8 h100-sxm-80gb=MXFP8 ");
  const Json on_v100 =
      estimate_json(R"({"model":{"preset":"llama-3.2-1b"},"training":{"precision":"bf16_autocast"},"hardware":{"gpu":"v100-32gb"}})");
  ASSERT_TRUE(on_v100.find("ok")->as_bool());
  ASSERT_EQ(on_v100.find("warnings")->items().size(), 1u);
  EXPECT_EQ(on_v100.find("warnings")->items()[0].find("field")->as_string(), "training.precision");
  const Json fp8 =
      estimate_json(R"({"model":{"preset":"llama-3.2-1b"},"training":{"precision":"fp8_mixed"},"hardware":{"gpu":"a100-80gb"}})");
  EXPECT_FALSE(fp8.find("ok")->as_bool());
  EXPECT_EQ(fp8.find("errors")->items()[0].find("field")->as_string(), "training.precision");
}

}  // namespace
}  // namespace memfit
