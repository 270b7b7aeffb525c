// The subcommands: solve, plan, time, export — their arguments (no program run) and, end to end
// through the built binary, the JSON shapes issue 9 specifies.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "args.hpp"
#include "memfit/memfit.hpp"

namespace memfit::cli {
namespace {

ParsedArgs parse(std::vector<std::string> args) {
  return parse_args(args, [](const std::string&) { return Input{"", "No such file or directory"}; });
}

TEST(CliSubcommands, ReadTheirTargetsAndOptions) {
  const ParsedArgs s = parse({"solve", "max-micro-batch", "--preset", "llama-3-8b", "--json"});
  ASSERT_TRUE(s.errors.empty());
  EXPECT_EQ(s.request.action, Action::kSolve);
  EXPECT_EQ(s.request.target, "max-micro-batch");
  EXPECT_TRUE(s.request.json);
  const ParsedArgs m = parse({"solve", "min-gpus", "--family", "tensor"});
  EXPECT_EQ(m.request.family, "tensor");
  const ParsedArgs p = parse({"plan", "--gpus-min", "1", "--gpus-max", "1024", "--global-batch-tokens", "4194304",
                              "--top", "5", "--rank-by", "cost", "--tp-comm-overlap", "--seq-len", "8192"});
  ASSERT_TRUE(p.errors.empty());
  EXPECT_EQ(p.request.action, Action::kPlan);
  EXPECT_EQ(p.request.options.dump(),
            R"({"gpus_min":1,"gpus_max":1024,"global_batch_tokens":4194304,"top":5,"rank_by":"cost","tp_comm_overlap":true})");
  EXPECT_EQ(p.request.config.dump(), R"({"training":{"seq_len":8192}})");
  const ParsedArgs g = parse({"plan", "--gpus", "64"});
  EXPECT_EQ(g.request.options.dump(), R"({"gpus_min":64,"gpus_max":64})");
  const ParsedArgs e = parse({"export", "megatron", "--num-gpus", "8"});
  EXPECT_EQ(e.request.action, Action::kExport);
  EXPECT_EQ(e.request.target, "megatron");
  EXPECT_EQ(parse({"solve", "--json"}).errors.at(0), "solve needs a target (see --help)");
  EXPECT_EQ(parse({"time"}).request.action, Action::kTime);
  EXPECT_EQ(parse({"suggest", "--preset", "llama-3-8b"}).request.action, Action::kSuggest);
}

// Runs the built command line and parses its JSON.
Json run(const std::string& args) {
  std::array<char, 4096> buffer;
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((std::string(MEMFIT_CLI) + " " + args).c_str(), "r"), pclose);
  if (!pipe) return Json();
  while (fgets(buffer.data(), buffer.size(), pipe.get())) out += buffer.data();
  const JsonParseResult parsed = parse_json(out);
  return parsed.value ? *parsed.value : Json();
}

TEST(CliSubcommands, JsonShapesEndToEnd) {
  const Json s = run("solve max-micro-batch --preset llama-3-8b --seq-len 4096 --checkpointing full --num-gpus 8 "
                     "--zero-stage 3 --json");
  ASSERT_TRUE(s.is_object());
  EXPECT_TRUE(s.find("value")->as_exact_integer().has_value());
  EXPECT_TRUE(s.find("config")->is_object());
  EXPECT_FALSE(s.find("binding")->as_string().empty());
  const Json p = run("plan --preset llama-3-8b --seq-len 4096 --gpus 16 --top 3 --json");
  ASSERT_TRUE(p.is_object());
  const Json& plans = *p.find("plans");
  ASSERT_EQ(plans.items().size(), 3u);
  for (const char* key : {"config", "peak_allocated_bytes", "step_time_s", "tokens_per_s", "mfu"}) {
    EXPECT_NE(plans.items()[0].find(key), nullptr) << key;
  }
  const Json t = run("time --preset llama-3-8b --num-gpus 8 --zero-stage 1 --train-tokens 1e9 --json");
  EXPECT_GT(t.find("tokens_per_s")->as_double(), 0);
  EXPECT_DOUBLE_EQ(t.find("train_tokens")->as_double(), 1e9);
  const Json e = run("export torchtitan --preset llama-3-8b --num-gpus 8 --zero-stage 3 --precision bf16_fsdp --json");
  EXPECT_EQ(e.find("filename")->as_string(), "memfit.toml");
  EXPECT_NE(e.find("command")->as_string().find("torchrun --standalone --nproc_per_node=8"), std::string::npos);
  const Json g = run("--list-gpus --json");  // the GPU table as JSON (it printed the text table)
  ASSERT_TRUE(g.is_array());
  EXPECT_FALSE(g.items().empty());
}

// The human-readable tables of every subcommand print and exit 0 (a GPU range prints the
// per-count table too).
TEST(CliSubcommands, TablesPrint) {
  for (const char* args : {"solve min-gpus --preset llama-3-70b --checkpointing full", "solve max-seq-len",
                           "plan --preset llama-3-8b --gpus-min 1 --gpus-max 16 --top 3", "time --num-gpus 8",
                           "export megatron --precision bf16_master --num-gpus 8 --zero-stage 1",
                           // nothing fits the configuration's one GPU: the notes and a range to try
                           "plan --preset llama-3-70b", "plan --preset llama-3-70b --num-gpus 4"}) {
    FILE* pipe = popen((std::string(MEMFIT_CLI) + " " + args + " > /dev/null 2>&1").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    EXPECT_EQ(pclose(pipe), 0) << args;
  }
}

// A plan with nothing on the configuration's own GPU count suggests a range of counts.
TEST(CliSubcommands, PlanWithNothingSuggestsARange) {
  FILE* pipe = popen((std::string(MEMFIT_CLI) + " plan --preset llama-3-70b 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_NE(out.find("no layout that an engine runs fits NVIDIA H100 SXM 80GB within the budget on 1 GPU"), std::string::npos) << out;
  EXPECT_NE(out.find("try a range of GPU counts: --gpus-min 1 --gpus-max 64"), std::string::npos) << out;
}

// Everything a command prints (stdout and stderr), and its exit status.
std::string output(const std::string& args, int* status = nullptr) {
  FILE* pipe = popen((std::string(MEMFIT_CLI) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  if (!pipe) return out;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int s = pclose(pipe);
  if (status) *status = s;
  return out;
}

// QA pass, Dec 4: an export's refusal is a sentence of its own, printed after its field and a colon,
// with the value it refused; a configuration error reads on from its field.
TEST(CliSubcommands, ErrorsReadAsSentences) {
  int status = 0;
  const std::string fsdp = output("export fsdp --preset llama-3-8b", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(fsdp.find("memfit: training.precision: accelerate FSDP runs bf16_fsdp (mixed_precision: bf16) or fp32; "
                      "got bf16_mixed\n"),
            std::string::npos)
      << fsdp;
  const std::string bad = output("--preset llama-3-8b --seq-len 0", &status);
  EXPECT_NE(bad.find("memfit: training.seq_len must be"), std::string::npos) << bad;
}

// QA pass, Dec 4: words, not ids, for a verdict; a small cost keeps its cents (it printed $10 for
// $10.44), as the core's cost_usd has them.
TEST(CliSubcommands, VerdictsInWordsAndCostsWithTheirCents) {
  EXPECT_NE(output("--preset llama-3-8b").find(": does not fit (headroom"), std::string::npos);
  const Json t = run("time --preset llama-3-8b --num-gpus 8 --zero-stage 3 --json");
  char cost[64];
  std::snprintf(cost, sizeof cost, ", $%.2f at $", t.find("cost_usd")->as_double());
  const std::string text = output("time --preset llama-3-8b --num-gpus 8 --zero-stage 3");
  EXPECT_NE(text.find(cost), std::string::npos) << text;
}

// `memfit suggest` lists the core's suggestions, each with the flags that apply it; run with those
// flags added, memfit gives exactly the device total the suggestion promised. The table of a run
// that does not fit points to it.
TEST(CliSubcommands, SuggestPrintsFlagsThatGiveWhatItPromises) {
  const std::string base = "--preset llama-3.1-8b --method lora --gpu rtx-4090-24gb --seq-len 4096 "
                           "--lora-targets q,v --micro-batch-size 2";
  const Json listed = run("suggest " + base + " --json");
  ASSERT_TRUE(listed.is_object());
  const auto& suggestions = listed.find("suggestions")->items();
  ASSERT_GE(suggestions.size(), 3u);
  int status = -1;
  const std::string text = output("suggest " + base, &status);
  EXPECT_EQ(status, 0);
  std::size_t at = 0;
  for (const Json& s : suggestions) {
    at = text.find("flags:", at);
    ASSERT_NE(at, std::string::npos) << text;
    const std::size_t end = text.find('\n', at);
    const std::string flags = text.substr(at + 6, end - at - 6);
    at = end;
    const Json after = run(base + " " + flags + " --json");
    ASSERT_TRUE(after.is_object()) << flags;
    EXPECT_EQ(after.find("device_total_bytes")->as_exact_integer(), s.find("device_total_bytes")->as_exact_integer())
        << s.find("title")->as_string() << ":" << flags;
  }
  EXPECT_NE(output(base).find("what to change: `memfit suggest` with the same options"), std::string::npos);
  EXPECT_EQ(output("--preset gpt2").find("what to change"), std::string::npos);
  EXPECT_NE(output("suggest --preset gpt2").find("on the NVIDIA H100 SXM 80GB (fits)"), std::string::npos);
  // min-gpus says when sharding only creeps under the budget (at 4096 tokens nothing fits any
  // more: each GPU also holds NCCL's buffers).
  const std::string creeping = "--preset llama-3.1-8b --method lora --gpu rtx-4090-24gb --seq-len 3712 "
                               "--lora-targets q,v --micro-batch-size 2 --checkpointing full";
  const std::string crept = output("solve min-gpus " + creeping);
  EXPECT_NE(crept.find("sharding barely helps: "), std::string::npos) << crept;
  EXPECT_NE(crept.find(" GPUs would need "), std::string::npos) << crept;
  EXPECT_NE(output("solve min-gpus " + base + " --checkpointing full").find("nothing fits"), std::string::npos);
}

}  // namespace
}  // namespace memfit::cli
