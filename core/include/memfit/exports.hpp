// Exports: a plan (a configuration) as the files and the command line of the engine that runs it —
// a DeepSpeed config JSON, an accelerate FSDP YAML, a torchtitan TOML, a Megatron-LM argument
// line, torchtune overrides — each with the torchrun (or launcher) command. A layout the engine
// cannot express is an error that says why (and which engine can).
//
// Each export can be read back (`read_export`): the configuration it describes, on top of a base
// that supplies what the engine leaves to the training script (the model, the optimizer). The
// tests check that an exported plan read back gives the same estimate, and that every key
// written is one the engine documents (tests/core/exports_test.cpp lists them with sources).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "memfit/config.hpp"
#include "memfit/json.hpp"

namespace memfit {

enum class Engine { kDeepSpeed, kFsdp, kTorchtitan, kMegatron, kTorchtune };

struct Export {
  std::vector<Issue> errors;       // what the engine cannot express
  Engine engine = Engine::kDeepSpeed;
  std::string filename;            // "ds_config.json", "fsdp.yaml", "memfit.toml"; "" for an argument line
  std::string text;                // the file (empty for Megatron-LM and torchtune: all in the command)
  std::string command;             // the launch command
  std::vector<std::string> notes;  // what the user fills in (data, tokenizer, the script's own flags)
  bool ok() const { return errors.empty(); }
};

Export export_plan(const Config& config, Engine engine);

// The configuration an export describes: `base` with every field the export states overwritten.
ConfigParse read_export(const Config& base, Engine engine, std::string_view file_text, std::string_view command);

const char* to_string(Engine engine);
bool parse_engine(std::string_view text, Engine& out);  // deepspeed, fsdp (accelerate), torchtitan, megatron, torchtune

// {"ok", "errors", "engine", "filename", "text", "command", "notes"}.
Json export_to_json(const Export& e);

}  // namespace memfit
