// The command line's arguments, read without running the program.
#include <gtest/gtest.h>

#include <map>

#include "args.hpp"
#include "memfit/memfit.hpp"

namespace memfit::cli {
namespace {

// Files by name; anything else "does not exist".
Reader files(std::map<std::string, std::string> contents) {
  return [contents](const std::string& path) -> Input {
    const auto it = contents.find(path);
    if (it == contents.end()) return {"", "No such file or directory"};
    return {it->second, ""};
  };
}

ParsedArgs parse(std::vector<std::string> args, std::map<std::string, std::string> contents = {}) {
  return parse_args(args, files(std::move(contents)));
}

TEST(CliArgs, FlagsByLastNameOrPath) {
  const ParsedArgs p = parse({"--seq-len", "4096", "--set", "training.dropout=0.1", "--lora-targets", "q,v", "--json"});
  ASSERT_TRUE(p.errors.empty());
  EXPECT_TRUE(p.request.json);
  EXPECT_EQ(p.request.config.dump(),
            R"({"training":{"seq_len":4096,"dropout":0.1,"finetune":{"lora_targets":["q","v"]}}})");
}

// A text field takes its value as typed: `--gpu 4090` names a card (a JSON number would be refused).
TEST(CliArgs, ATextFieldKeepsANumberAsText) {
  const ParsedArgs p = parse({"--gpu", "4090", "--set", "model.preset=phi-2"});
  ASSERT_TRUE(p.errors.empty());
  EXPECT_EQ(p.request.config.dump(), R"({"hardware":{"gpu":"4090"},"model":{"preset":"phi-2"}})");
  const Json r = estimate_json(p.request.config.dump());
  ASSERT_TRUE(r.find("ok")->as_bool());
  EXPECT_EQ(r.find("config")->find("hardware")->find("gpu")->as_string(), "rtx-4090-24gb");
}

TEST(CliArgs, AModelFieldEditsTheDefaultPresetAsOnThePage) {
  // --num-hidden-layers alone keeps Llama 3 8B's other fields (vocabulary 128,256), as the page does.
  const ParsedArgs p = parse({"--num-hidden-layers", "16"});
  ASSERT_TRUE(p.errors.empty());
  const Json r = estimate_json(p.request.config.dump());
  ASSERT_TRUE(r.find("ok")->as_bool());
  const Json& model = *r.find("config")->find("model");
  EXPECT_EQ(model.find("preset")->as_string(), "llama-3-8b");
  EXPECT_EQ(*model.find("vocab_size")->as_exact_integer(), 128256);
  EXPECT_EQ(*model.find("num_hidden_layers")->as_exact_integer(), 16);
  // A configuration file's model without a preset is a model described from scratch.
  const ParsedArgs f = parse({"--config", "run.json", "--hidden-size", "1024"},
                             {{"run.json", R"({"model":{"num_hidden_layers":4}})"}});
  EXPECT_EQ(f.request.config.find("model")->find("preset"), nullptr);
}

TEST(CliArgs, UnreadableFilesAreNamed) {
  const ParsedArgs missing = parse({"--config", "nope.json"});
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.errors.at(0), "cannot read nope.json: No such file or directory");
  const ParsedArgs bad = parse({"--config", "x.json"}, {{"x.json", "[1,2]"}});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.errors.at(0), "x.json is not a JSON object");
}

TEST(CliArgs, HfConfigProblemsNameThePathGiven) {
  const ParsedArgs p = parse({"--hf-config", "models/tiny.json"}, {{"models/tiny.json", "{"}});
  EXPECT_EQ(p.status, 2);
  ASSERT_FALSE(p.errors.empty());
  EXPECT_EQ(p.errors[0].rfind("models/tiny.json is not valid JSON", 0), 0u) << p.errors[0];
  const ParsedArgs q = parse({"--hf-config", "m.json"}, {{"m.json", R"({"model_type":"llama","hidden_size":64})"}});
  ASSERT_FALSE(q.errors.empty());
  EXPECT_EQ(q.errors[0].rfind("m.json: vocab_size is missing", 0), 0u) << q.errors[0];
}

TEST(CliArgs, AnImportedModelIsTheModelOnly) {
  // The model's class follows from its model_type in the core (class_reference): the import
  // writes the model, and the training section holds only what the user gave.
  const std::string gpt2 = R"({"model_type":"gpt2","n_embd":64,"n_head":4,"n_layer":2,"n_positions":128,)"
                           R"("vocab_size":1000})";
  const ParsedArgs p = parse({"--hf-config", "g.json"}, {{"g.json", gpt2}});
  ASSERT_TRUE(p.errors.empty());
  EXPECT_EQ(p.request.config.find("model")->find("model_type")->as_string(), "gpt2");
  EXPECT_EQ(p.request.config.find("training"), nullptr);
  const ParsedArgs q = parse({"--softmax-dtype", "fp32", "--hf-config", "g.json"}, {{"g.json", gpt2}});
  EXPECT_EQ(q.request.config.find("training")->find("softmax_dtype")->as_string(), "fp32");
}

TEST(CliArgs, UnknownAndIncompleteOptions) {
  EXPECT_EQ(parse({"--no-such-field", "1"}).errors.at(0), "unknown option --no-such-field (see --help and --schema)");
  EXPECT_EQ(parse({"--seq-len"}).errors.at(0), "unknown or incomplete option --seq-len (see --help)");
  EXPECT_EQ(parse({"--set", "=3"}).errors.at(0), "--set expects PATH=VALUE, got =3");
  // A typed path that names no field is refused, not ignored (QA pass, Dec 4).
  EXPECT_EQ(parse({"--set", "training.micro_batch_sz=4"}).errors.at(0), "--set training.micro_batch_sz: not a memfit field (see --schema)");
}

TEST(CliInput, EndlessAndDirectoryInputsEnd) {
  const Input zero = read_input("/dev/zero");  // never ends by itself: cut at 16 MiB
  EXPECT_EQ(zero.error, "is larger than 16 MiB");
  EXPECT_TRUE(zero.text.empty());
  EXPECT_EQ(read_input(MEMFIT_SOURCE_DIR).error, "is a directory");
  const Input fixture = read_input(std::string(MEMFIT_SOURCE_DIR) + "/tests/fixtures/hf/gpt2.json");
  EXPECT_TRUE(fixture.error.empty());
  EXPECT_NE(fixture.text.find("gpt2"), std::string::npos);
}

}  // namespace
}  // namespace memfit::cli
