// The command line's arguments → what to do and the configuration to do it with. No I/O here
// (files are read through the given reader), so the parser can be tested and fuzzed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "input.hpp"
#include "memfit/json.hpp"

namespace memfit::cli {

enum class Action { kEstimate, kBatch, kHelp, kListPresets, kListGpus, kSchema, kDefaultConfig, kSolve, kPlan, kTime, kExport, kSuggest };

struct Request {
  Action action = Action::kEstimate;
  bool json = false;
  Json config = Json::object();     // a partial configuration: what the flags and files said
  std::string target;               // solve: max-micro-batch ...; export: deepspeed, fsdp, ...
  std::string family;               // solve min-gpus: zero3 (default), zero2, zero1, as_configured, tensor, pipeline
  Json options = Json::object();    // planner / step-time options (--gpus-max 1024 → {"gpus_max": 1024})
  std::vector<std::string> notes;   // for stderr (e.g. an imported config.json's warnings)
};

struct ParsedArgs {
  Request request;
  std::vector<std::string> errors;  // one line each; non-empty: exit status `status`
  int status = 0;                   // 2: invalid input, 1: a file could not be read
};

using Reader = std::function<Input(const std::string& path)>;

ParsedArgs parse_args(const std::vector<std::string>& args, const Reader& read);

}  // namespace memfit::cli
