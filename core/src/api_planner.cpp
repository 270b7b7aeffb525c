// The JSON-text API of the solvers, the step-time model and the planner (memfit.hpp): what the
// command line's subcommands and the wasm module call.
#include "api_common.hpp"
#include "memfit/memfit.hpp"

namespace memfit {

namespace {

// Options text: "" or "{}" for none.
std::vector<Issue> read_options(std::string_view text, Json& out) {
  if (text.empty()) {
    out = Json::object();
    return {};
  }
  JsonParseResult parsed = parse_json(text);
  if (!parsed.value || !parsed.value->is_object()) {
    return {{"(options)", parsed.value ? "must be a JSON object" : json_parse_problem(parsed)}};
  }
  out = std::move(*parsed.value);
  return {};
}

}  // namespace

Json solve_json(std::string_view config_text, std::string_view target, std::string_view family) {
  ConfigParse parsed = parse_config_text(config_text);
  if (!parsed.ok()) return failure_json(parsed.errors, parsed.warnings);
  SolveTarget t;
  GpuFamily f = GpuFamily::kZero3;
  std::vector<Issue> errors;
  if (!parse_solve_target(target, t)) {
    errors.push_back({"(target)", "must be max-micro-batch, max-seq-len, min-gpus, max-layers or max-width; got \"" +
                                      std::string(target) + "\""});
  }
  if (!family.empty() && !parse_gpu_family(family, f)) {
    errors.push_back({"family", "must be zero3, zero2, zero1, as_configured, tensor or pipeline; got \"" +
                                    std::string(family) + "\""});
  }
  if (!errors.empty()) return failure_json(errors, parsed.warnings);
  Json j = solution_to_json(solve(parsed.config, t, f), t);
  j.set("warnings", issues_to_json(parsed.warnings));
  return j;
}

namespace {

// A configuration and the planner's options, both read; `answer` turns them into the result's JSON.
template <class Answer>
Json with_plan_options(std::string_view config_text, std::string_view options_text, Answer answer) {
  ConfigParse parsed = parse_config_text(config_text);
  if (!parsed.ok()) return failure_json(parsed.errors, parsed.warnings);
  Json options;
  std::vector<Issue> errors = read_options(options_text, options);
  PlanOptions o;
  if (errors.empty()) errors = read_plan_options(options, o);
  if (!errors.empty()) return failure_json(errors, parsed.warnings);
  Json j = answer(parsed.config, o);
  j.set("warnings", issues_to_json(parsed.warnings));
  return j;
}

}  // namespace

Json step_time_json(std::string_view config_text, std::string_view options_text) {
  return with_plan_options(config_text, options_text, [](const Config& c, const PlanOptions& o) {
    return step_time_to_json(step_time(c, o.step_time));
  });
}

Json plan_json(std::string_view config_text, std::string_view options_text) {
  return with_plan_options(config_text, options_text,
                           [](const Config& c, const PlanOptions& o) { return plan_result_to_json(plan(c, o)); });
}

Json export_json(std::string_view config_text, std::string_view engine) {
  ConfigParse parsed = parse_config_text(config_text);
  if (!parsed.ok()) return failure_json(parsed.errors, parsed.warnings);
  Engine e;
  if (!parse_engine(engine, e)) {
    return failure_json({{"(engine)", "must be deepspeed, fsdp, torchtitan, megatron or torchtune; got \"" +
                                          std::string(engine) + "\""}},
                        parsed.warnings);
  }
  return export_to_json(export_plan(parsed.config, e));
}

}  // namespace memfit
