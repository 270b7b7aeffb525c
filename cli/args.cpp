#include <algorithm>
#include "args.hpp"

#include <sstream>

#include "memfit/memfit.hpp"

namespace memfit::cli {

namespace {

// A flag's value: JSON where it reads as JSON (numbers, booleans, lists), else a string.
Json flag_value(const std::string& text) {
  const JsonParseResult parsed = parse_json(text);
  if (parsed.value && !parsed.value->is_object()) return *parsed.value;
  return Json::string(text);
}

// "--seq-len" → "training.seq_len", by the unique last name in the schema ("" if none or ambiguous).
std::string field_for_flag(std::string name) {
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  std::string found;
  const Json schema = config_schema();
  for (const Json& f : schema.items()) {
    const std::string& path = f.find("field")->as_string();
    if (path.substr(path.rfind('.') + 1) == name || path == name) {
      if (!found.empty()) return "";  // ambiguous: use --set with the full path
      found = path;
    }
  }
  return found;
}

// The schema's kind of a field ("" when the path is not a field).
std::string field_kind(const std::string& path) {
  const Json schema = config_schema();
  for (const Json& f : schema.items()) {
    if (f.find("field")->as_string() == path) return f.find("kind")->as_string();
  }
  return "";
}

// "q,k,v,o" → ["q","k","v","o"] for the one list-valued field; a text field takes the text as typed
// (`--gpu 4090` names the card, not the number 4090).
Json field_value(const std::string& path, const std::string& text) {
  if (field_kind(path) == "string") return Json::string(text);
  Json value = flag_value(text);
  if (path != "training.finetune.lora_targets" || !value.is_string()) return value;
  Json list = Json::array();
  std::stringstream s(value.as_string());
  for (std::string item; std::getline(s, item, ',');) list.push(Json::string(item));
  return list;
}

// A Hugging Face config.json's problems, named by the path given ("config.json" says nothing
// when the file is called something else).
std::string import_issue(const std::string& path, const Json& issue) {
  const std::string& field = issue.find("field")->as_string();
  const std::string where = field == "config.json" ? path : path + ": " + field;
  return where + " " + issue.find("message")->as_string();
}

class Parser {
 public:
  Parser(const std::vector<std::string>& args, const Reader& read) : args_(args), read_(read) {}

  ParsedArgs run() {
    for (i_ = 0; i_ < args_.size() && out_.errors.empty(); ++i_) one(args_[i_]);
    if (out_.errors.empty()) keep_default_preset();
    return std::move(out_);
  }

 private:
  bool has_value() const { return i_ + 1 < args_.size(); }
  const std::string& next() { return args_[++i_]; }
  void fail(int status, std::string message) {
    out_.status = status;
    out_.errors.push_back(std::move(message));
  }

  // A subcommand comes first: solve TARGET, plan, time, suggest, export ENGINE.
  bool subcommand(const std::string& a) {
    Request& r = out_.request;
    if (i_ != 0) return false;
    if (a == "plan") r.action = Action::kPlan;
    else if (a == "time") r.action = Action::kTime;
    else if (a == "suggest") r.action = Action::kSuggest;
    else if (a == "solve" || a == "export") {
      r.action = a == "solve" ? Action::kSolve : Action::kExport;
      if (has_value() && args_[i_ + 1].rfind("--", 0) != 0) r.target = next();
      else fail(2, a + " needs a target (see --help)");
    } else {
      return false;
    }
    return true;
  }

  // Options of the planner and the step-time model (not configuration fields).
  bool plan_option(const std::string& a) {
    Request& r = out_.request;
    static const char* const kIntegers[][2] = {{"--gpus-min", "gpus_min"},
                                               {"--gpus-max", "gpus_max"},
                                               {"--global-batch-tokens", "global_batch_tokens"},
                                               {"--top", "top"}};
    for (const auto& [flag, key] : kIntegers) {
      if (a == flag && has_value()) {
        r.options.set(key, flag_value(next()));
        return true;
      }
    }
    if (a == "--gpus" && has_value()) {
      const Json n = flag_value(next());
      r.options.set("gpus_min", n);
      r.options.set("gpus_max", n);
    } else if (a == "--train-tokens" && has_value()) r.options.set("train_tokens", flag_value(next()));
    else if (a == "--rank-by" && has_value()) r.options.set("rank_by", Json::string(next()));
    else if (a == "--family" && has_value()) r.family = next();
    else if (a == "--keep-precision") r.options.set("keep_precision", Json::boolean(true));
    else if (a == "--tp-comm-overlap") r.options.set("tp_comm_overlap", Json::boolean(true));
    else return false;
    return true;
  }

  void one(const std::string& a) {
    Request& r = out_.request;
    if (subcommand(a) || plan_option(a)) return;
    if (a == "-h" || a == "--help") r.action = Action::kHelp;
    else if (a == "--json") r.json = true;
    else if (a == "--batch") r.action = Action::kBatch;
    else if (a == "--list-presets") r.action = Action::kListPresets;
    else if (a == "--list-gpus") r.action = Action::kListGpus;
    else if (a == "--schema") r.action = Action::kSchema;
    else if (a == "--default-config") r.action = Action::kDefaultConfig;
    else if (a == "--config" && has_value()) config_file(next());
    else if (a == "--hf-config" && has_value()) hf_config_file(next());
    else if (a == "--set" && has_value()) set(next());
    else if (a.rfind("--", 0) == 0 && a.size() > 2 && has_value()) field_flag(a);
    else fail(2, "unknown or incomplete option " + a + " (see --help)");
  }

  void config_file(const std::string& path) {
    const Input in = read_(path);
    if (!in.error.empty()) return fail(in.invalid ? 2 : 1, "cannot read " + path + ": " + in.error);
    const JsonParseResult parsed = parse_json(in.text);
    if (!parsed.value || !parsed.value->is_object()) {
      return fail(2, path + " is not a JSON object" + (parsed.value ? "" : ": " + parsed.error));
    }
    if (parsed.value->find("model")) model_described_ = true;
    merge_patch(out_.request.config, *parsed.value);
  }

  void hf_config_file(const std::string& path) {
    const Input in = read_(path);
    if (!in.error.empty()) return fail(in.invalid ? 2 : 1, "cannot read " + path + ": " + in.error);
    const Json imported = import_hf_json(in.text);
    if (!imported.find("ok")->as_bool()) {
      out_.status = 2;
      for (const Json& issue : imported.find("errors")->items()) out_.errors.push_back(import_issue(path, issue));
      return;
    }
    Json& config = out_.request.config;
    set_path(config, "model", *imported.find("model"));
    set_path(config, "model.preset", Json::string(""));
    model_described_ = true;
    for (const Json& w : imported.find("warnings")->items()) out_.request.notes.push_back("note: " + import_issue(path, w));
  }

  void set(const std::string& kv) {
    const std::size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return fail(2, "--set expects PATH=VALUE, got " + kv);
    const std::string path = kv.substr(0, eq);
    // A path typed on the command line is meant: a typo is an error, not a field ignored with a
    // warning (which is what a configuration file's unknown key gets, for files from newer versions).
    if (field_kind(path).empty()) return fail(2, "--set " + path + ": not a memfit field (see --schema)");
    if (path.rfind("model.", 0) == 0) model_fields_ = true;
    set_path(out_.request.config, path, field_value(path, kv.substr(eq + 1)));
  }

  void field_flag(const std::string& flag) {
    const std::string path = field_for_flag(flag.substr(2));
    if (path.empty()) return fail(2, "unknown option " + flag + " (see --help and --schema)");
    if (path.rfind("model.", 0) == 0) model_fields_ = true;
    set_path(out_.request.config, path, field_value(path, next()));
  }

  // A model field given on its own changes the default model, as on the page: a configuration
  // file's "model" without a preset is a model described from scratch, a flag is an edit.
  void keep_default_preset() {
    const Json* model = out_.request.config.find("model");
    if (!model_fields_ || model_described_ || !model || model->find("preset")) return;
    set_path(out_.request.config, "model.preset", Json::string(default_config().model.preset));
  }

  const std::vector<std::string>& args_;
  const Reader& read_;
  std::size_t i_ = 0;
  ParsedArgs out_;
  bool model_fields_ = false;     // a flag set a model.* field
  bool model_described_ = false;  // a file gave the model
};

}  // namespace

ParsedArgs parse_args(const std::vector<std::string>& args, const Reader& read) { return Parser(args, read).run(); }

}  // namespace memfit::cli
