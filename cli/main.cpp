// memfit command line: configuration in (flags, --config JSON, --hf-config), table or JSON out.
//
// Exit codes: 0 success, 2 invalid input (one line per problem, each naming the field), 1 I/O.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "args.hpp"
#include "memfit/memfit.hpp"

namespace {

constexpr const char* kUsage = R"(usage: memfit [options]
       memfit solve max-micro-batch|max-seq-len|min-gpus|max-layers|max-width [options] [--family F]
       memfit plan [options] [--gpus-min N] [--gpus-max N] [--global-batch-tokens N] [--top N]
       memfit time [options] [--train-tokens N]
       memfit suggest [options]   (what to change when the run does not fit, best first)
       memfit export deepspeed|fsdp|torchtitan|megatron|torchtune [options]   (with the command that launches it)

Configuration (later options override earlier ones):
  --config FILE        memfit configuration JSON ('-' reads stdin)
  --hf-config FILE     a Hugging Face config.json as the model ('-' reads stdin)
  --preset ID          a model preset (see --list-presets)
  --set PATH=VALUE     any field, e.g. --set training.dropout=0.1
  --FIELD VALUE        any field by its last name, dashes or underscores:
                       --micro-batch-size 8 --seq-len 4096 --precision bf16_mixed
                       --optimizer adamw_8bit --checkpointing full --attention eager
                       --gpu a100-80gb --num-gpus 8 --zero-stage 3 --method lora

Planning (solve, plan, time):
  --family F           min-gpus layouts: zero3 (default), zero2, zero1, as_configured, tensor, pipeline
  --gpus N             plan on exactly N GPUs; --gpus-min / --gpus-max a range (powers of two, whole nodes)
  --global-batch-tokens N   tokens per optimizer step (default: the configuration's, or 4Mi / 1Mi tokens)
  --train-tokens N     tokens to train, for time and cost (default: 20 per parameter for
                       pre-training, 100M for fine-tuning)
  --top N              plans to show (default 10)    --rank-by step_time|cost
  --keep-precision     search only the configured precision recipe
  --tp-comm-overlap    tensor-parallel communication overlapped with GEMMs (Megatron, async TP)

Output:
  --json               the result as JSON (the fields of DESIGN.md "The result")
  --batch              one configuration JSON per line on stdin, one compact result per line out
                       (the same text the wasm module returns)
  --list-presets       model presets          --list-gpus   the GPU table
  --schema             every configuration field with its range and default
  --default-config     the default configuration as JSON
  -h, --help           this text
)";

std::string group(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string gib(std::int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%10.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

void print_row(const std::string& name, std::int64_t bytes) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "  %-32s %20s %s\n", name.c_str(), group(bytes).c_str(), gib(bytes).c_str());
  std::cout << buf;
}

// A verdict id ("does_not_fit") in words, as the page writes it.
std::string verdict_words(const memfit::Json& verdict) {
  std::string words = verdict.as_string();
  std::replace(words.begin(), words.end(), '_', ' ');
  return words;
}


void print_table(const memfit::Json& r) {
  const memfit::Json& config = *r.find("config");
  const memfit::Json& training = *config.find("training");
  const memfit::Json& model = *config.find("model");
  const std::string preset = model.find("preset")->as_string();
  // A model without a preset is named by its family when it has one (an imported config.json).
  const memfit::Json* type = model.find("model_type");
  const std::string family = type && type->is_string() ? type->as_string() : "";
  const std::string name = !preset.empty() ? preset : !family.empty() ? "custom " + family + " model" : "custom model";
  std::cout << "memfit: " << name << ", "
            << training.find("precision")->as_string() << ", " << training.find("optimizer")->as_string()
            << ", micro-batch " << training.find("micro_batch_size")->dump() << " x "
            << training.find("seq_len")->dump() << " tokens, checkpointing "
            << training.find("checkpointing")->as_string() << "\n";
  std::cout << "parameters: " << group(r.find("parameter_count")->as_exact_integer().value_or(0))
            << " (trainable " << group(r.find("trainable_parameter_count")->as_exact_integer().value_or(0)) << ")";
  if (const std::int64_t vision = r.find("vision_parameter_count")->as_exact_integer().value_or(0); vision > 0) {
    // train_vision trains the projector, the encoder or both: say which share.
    const memfit::Json* trained_json = r.find("vision_trained_parameter_count");
    const std::int64_t trained = trained_json ? trained_json->as_exact_integer().value_or(0) : 0;
    std::cout << "; vision tower " << group(vision)
              << (trained == 0 ? " (frozen)" : trained >= vision ? " (trained, in the trainable count)"
                                                                  : " (" + group(trained) + " trained, in the trainable count)");
  }
  std::cout << "\n\n";
  std::cout << "  per GPU                                         bytes\n";
  for (const auto& [name, value] : r.find("breakdown")->members()) {
    const std::int64_t v = value.as_exact_integer().value_or(0);
    if (v != 0 || name == "activations") print_row(name, v);
  }
  std::cout << "\n  step phases (allocated)\n";
  for (const memfit::Json& p : r.find("phases")->items()) {
    print_row(p.find("label")->as_string(), p.find("bytes")->as_exact_integer().value_or(0));
  }
  std::cout << "\n";
  print_row("peak allocated", r.find("peak_allocated_bytes")->as_exact_integer().value_or(0));
  print_row("peak reserved", r.find("peak_reserved_bytes")->as_exact_integer().value_or(0));
  print_row("device total (nvidia-smi)", r.find("device_total_bytes")->as_exact_integer().value_or(0));
  const memfit::Json& fit = *r.find("fits");
  std::cout << "\n  " << fit.find("name")->as_string() << ": " << verdict_words(*fit.find("verdict"))
            << " (headroom" << gib(fit.find("headroom_bytes")->as_exact_integer().value_or(0)) << ")\n";
  for (const memfit::Json& w : r.find("warnings")->items()) {
    std::cout << "  warning: " << w.find("field")->as_string() << " " << w.find("message")->as_string() << "\n";
  }
  for (const memfit::Json& n : r.find("notes")->items()) std::cout << "  note: " << n.as_string() << "\n";
  const memfit::Json* runs = fit.find("runs");
  if (fit.find("verdict")->as_string() != "fits" || (runs && runs->is_bool() && !runs->as_bool())) {
    std::cout << "  what to change: `memfit suggest` with the same options\n";
  }
}

// "model.hidden_size must be ...": a message that reads on from its field follows it; one that is
// a sentence of its own ("accelerate FSDP runs bf16_fsdp ...", from an export) comes after a colon.
int print_issues(const memfit::Json& issues) {
  for (const memfit::Json& i : issues.items()) {
    const std::string& message = i.find("message")->as_string();
    bool reads_on = false;
    for (const char* verb : {"must ", "is ", "are ", "needs ", "has ", "cannot ", "does ", "names ", "got "}) {
      reads_on = reads_on || message.rfind(verb, 0) == 0;
    }
    std::cerr << "memfit: " << i.find("field")->as_string() << (reads_on ? " " : ": ") << message << "\n";
  }
  return 2;
}

void list_presets() {
  const memfit::Json list = memfit::presets_json();
  for (const memfit::Json& p : list.items()) {
    // The count the estimate uses: the source's nominal one for the idealised models ("LLaMA-7B").
    const memfit::Json* nominal = p.find("model") ? p.find("model")->find("nominal_parameter_count") : nullptr;
    const std::int64_t stated = nominal ? nominal->as_exact_integer().value_or(0) : 0;
    std::printf("%-28s %-34s %20s\n", p.find("id")->as_string().c_str(), p.find("name")->as_string().c_str(),
                group(stated > 0 ? stated : p.find("parameter_count")->as_exact_integer().value_or(0)).c_str());
  }
}

void list_gpus() {
  const memfit::Json list = memfit::gpus_json();
  for (const memfit::Json& g : list.items()) {
    const double price = g.find("price_per_hour")->as_double();
    char price_text[32] = "";
    if (price > 0) std::snprintf(price_text, sizeof price_text, "$%.2f/h", price);  // rounded, as the page shows it
    // The memory a run can use (CUDA's total where a reading is published), as the estimate and the
    // page judge the fit by.
    std::printf("%-18s %-38s %s  bf16 %7.1f  fp8 %7.1f TFLOP/s  %s\n", g.find("id")->as_string().c_str(),
                g.find("name")->as_string().c_str(), gib(g.find("usable_bytes")->as_exact_integer().value_or(0)).c_str(),
                g.find("peak_bf16_tflops")->as_double(), g.find("peak_fp8_tflops")->as_double(), price_text);
  }
}

// One configuration per line (at most 16 MiB each), one result per line: memfit's JSON text, as
// the wasm module returns it, so scripts and the parity tests compare the two byte for byte.
int run_batch() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.size() > memfit::cli::kMaxInputBytes) line.clear();  // answered as invalid JSON
    std::cout << memfit::estimate_json(line).dump() << "\n";
  }
  return 0;
}

int run_estimate(const memfit::cli::Request& request) {
  const memfit::Json result = memfit::estimate_json(request.config.dump());
  if (!result.find("ok")->as_bool()) return print_issues(*result.find("errors"));
  if (request.json) std::cout << result.dump(2) << "\n";
  else print_table(result);
  return 0;
}

double gib_value(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }
std::int64_t integer(const memfit::Json& j, const char* key) {
  const memfit::Json* v = j.find(key);
  return v ? v->as_exact_integer().value_or(0) : 0;
}
double number(const memfit::Json& j, const char* key) {
  const memfit::Json* v = j.find(key);
  return v ? v->as_double() : 0.0;
}

int run_solve(const memfit::cli::Request& request) {
  const memfit::Json r = memfit::solve_json(request.config.dump(), request.target, request.family);
  if (!r.find("ok")->as_bool()) return print_issues(*r.find("errors"));
  if (request.json) {
    std::cout << r.dump(2) << "\n";
    return 0;
  }
  const memfit::Json& hw = *r.find("config")->find("hardware");
  std::cout << "memfit solve " << r.find("target")->as_string() << ": ";
  if (r.find("found")->as_bool()) std::cout << group(integer(r, "value")) << "\n";
  else std::cout << "nothing fits\n";
  std::printf("  on %s: needs %.2f GiB, %.2f GiB at the top of its measured band, of the %.2f GiB budget\n",
              hw.find("gpu")->as_string().c_str(), gib_value(integer(r, "device_total_bytes")),
              gib_value(integer(r, "need_high_bytes")), gib_value(integer(r, "budget_bytes")));
  if (const memfit::Json* next = r.find("next")) {
    std::printf("  %s would need %.2f GiB (band top %.2f GiB)\n", group(integer(*next, "value")).c_str(),
                gib_value(integer(*next, "device_total_bytes")), gib_value(integer(*next, "need_high_bytes")));
  }
  if (const memfit::Json* half = r.find("half")) {
    if (r.find("sharding_saturated")->as_bool()) {
      std::printf("  sharding barely helps: %s GPUs would need %.2f GiB, almost as much; what binds is kept whole on every GPU\n",
                  group(integer(*half, "value")).c_str(), gib_value(integer(*half, "device_total_bytes")));
    }
  }
  const std::string phase = r.find("binding_phase")->as_string();
  std::cout << "  binding: " << r.find("binding")->as_string() << (phase.empty() ? "" : " (peak in " + phase + ")")
            << "\n  searched with " << integer(r, "estimates") << " full estimates\n";
  return 0;
}

void print_time_parts(const memfit::Json& t) {
  const memfit::Json& p = *t.find("parts");
  std::printf("  compute %.3f s (recompute %.3f)", number(p, "compute_s"), number(p, "recompute_s"));
  for (const char* key : {"tensor_parallel_s", "context_parallel_s", "expert_parallel_s", "data_parallel_s",
                          "pipeline_bubble_s", "pipeline_p2p_s", "optimizer_s"}) {
    if (number(p, key) > 0) std::printf(", %s %.3f", std::string(key).substr(0, std::string(key).size() - 2).c_str(), number(p, key));
  }
  std::printf("\n");
}

// A training time in the unit that reads best: minutes, hours, days or years.
std::string duration_text(double seconds) {
  char buf[32];
  if (seconds < 3600) std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  else if (seconds < 2 * 86400) std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  else if (seconds < 2 * 365.25 * 86400) std::snprintf(buf, sizeof buf, "%.1f d", seconds / 86400);
  else std::snprintf(buf, sizeof buf, "%.1f y", seconds / (365.25 * 86400));
  return buf;
}

int run_time(const memfit::cli::Request& request) {
  const memfit::Json t = memfit::step_time_json(request.config.dump(), request.options.dump());
  if (!t.find("ok")->as_bool()) return print_issues(*t.find("errors"));
  if (request.json) {
    std::cout << t.dump(2) << "\n";
    return 0;
  }
  std::printf("memfit time: step %.3f s, %s tokens/s (%s per GPU), MFU %.1f %%\n", number(t, "step_time_s"),
              group(static_cast<std::int64_t>(number(t, "tokens_per_s"))).c_str(),
              group(static_cast<std::int64_t>(number(t, "tokens_per_s_per_gpu"))).c_str(), 100 * number(t, "mfu"));
  print_time_parts(t);
  const memfit::Json e = memfit::estimate_json(request.config.dump());
  if (e.find("ok")->as_bool() && e.find("fits")->find("verdict")->as_string() != "fits") {
    const bool tight = e.find("fits")->find("verdict")->as_string() == "tight";
    std::printf("  note: this configuration %s the %s; `memfit` with the same options shows why\n",
                tight ? "may not fit (its likely high end is over the memory budget of)" : "does not fit",
                e.find("fits")->find("name")->as_string().c_str());
  }
  // Small amounts keep their fraction (2.8 GPU-hours, $10.51), large ones are rounded and grouped.
  const auto amount = [](double v, const char* small_format) {
    char buf[32];
    if (v < 100) std::snprintf(buf, sizeof buf, small_format, v);
    return v < 100 ? std::string(buf) : group(std::llround(v));
  };
  std::printf("  %s tokens: %s, %s GPU-hours", group(static_cast<std::int64_t>(number(t, "train_tokens"))).c_str(),
              duration_text(number(t, "train_time_s")).c_str(), amount(number(t, "gpu_hours"), "%.1f").c_str());
  if (number(t, "price_per_gpu_hour") > 0) {
    std::printf(", $%s at $%.2f per GPU-hour", amount(number(t, "cost_usd"), "%.2f").c_str(),
                number(t, "price_per_gpu_hour"));
  }
  std::printf("\n");
  return 0;
}

void print_plan_row(const memfit::Json& p, int rank) {
  // A full plan carries its configuration; a per-count summary the patch that makes it.
  const memfit::Json& c = p.find("config") ? *p.find("config") : *p.find("patch");
  const memfit::Json& par = *c.find("parallel");
  const memfit::Json& tr = *c.find("training");
  const std::int64_t zero = integer(par, "zero_stage"), shard = integer(par, "shard_degree");
  std::string zero_text = zero == 0 ? "-" : "z" + std::to_string(zero) + (shard > 0 ? "/h" + std::to_string(shard) : "");
  if (par.find("offload_params")->as_bool()) zero_text += "+op";
  else if (par.find("offload_optimizer")->as_bool()) zero_text += "+oo";
  std::printf("  %3d %5lld %3lld %3lld %3lld %3lld %3lld %-8s %-11s %-12s %4lld %5lld %8.1f %9.2f %9s %5.1f %9s\n",
              rank, static_cast<long long>(integer(par, "num_gpus")), static_cast<long long>(integer(par, "tensor")),
              static_cast<long long>(integer(par, "pipeline")), static_cast<long long>(integer(par, "virtual_stages")),
              static_cast<long long>(integer(par, "context")), static_cast<long long>(integer(par, "expert")),
              zero_text.c_str(), tr.find("precision")->as_string().c_str(), tr.find("checkpointing")->as_string().c_str(),
              static_cast<long long>(integer(tr, "micro_batch_size")), static_cast<long long>(integer(tr, "grad_accum_steps")),
              gib_value(integer(p, "device_total_bytes")), number(p, "step_time_s"),
              group(static_cast<std::int64_t>(number(p, "tokens_per_s_per_gpu"))).c_str(), 100 * number(p, "mfu"),
              duration_text(number(p, "train_time_s")).c_str());
}

int run_plan(const memfit::cli::Request& request) {
  const memfit::Json r = memfit::plan_json(request.config.dump(), request.options.dump());
  if (!r.find("ok")->as_bool()) return print_issues(*r.find("errors"));
  if (request.json) {
    std::cout << r.dump(2) << "\n";
    return 0;
  }
  const char* header =
      "    #  GPUs  TP  PP  VP  CP  EP ZeRO     precision   checkpoint     MB    GA  GiB/GPU    step s tok/s/GPU   MFU     train\n";
  std::cout << "memfit plan: global batch " << group(integer(r, "global_batch_tokens")) << " tokens\n" << header;
  int rank = 0;
  for (const memfit::Json& p : r.find("plans")->items()) print_plan_row(p, ++rank);
  if (r.find("best_per_gpu_count")->items().size() > 1) {
    std::cout << "\n  fastest per GPU count:\n" << header;
    rank = 0;
    for (const memfit::Json& p : r.find("best_per_gpu_count")->items()) print_plan_row(p, ++rank);
  }
  const memfit::Json& s = *r.find("search");
  std::cout << "\n  searched " << group(integer(s, "layouts")) << " layouts: " << group(integer(s, "timed"))
            << " timed, " << group(integer(s, "pruned_by_time")) << " bounded by time, "
            << group(integer(s, "pruned_by_memory")) << " by memory, " << group(integer(s, "not_runnable"))
            << " that no engine runs, " << group(integer(s, "estimates")) << " full estimates\n";
  for (const memfit::Json& n : r.find("notes")->items()) std::cout << "  note: " << n.as_string() << "\n";
  // Nothing fits on the configuration's own count: a range is the next thing to try (unless
  // no layout was tried at all, which the note explains).
  if (r.find("plans")->items().empty() && !request.options.find("gpus_max") && integer(s, "layouts") > 0) {
    const memfit::Json* parallel = request.config.find("parallel");
    const memfit::Json* count = parallel ? parallel->find("num_gpus") : nullptr;
    const std::int64_t gpus = count && count->as_exact_integer() ? *count->as_exact_integer() : 1;
    std::cout << "  try a range of GPU counts: --gpus-min " << gpus << " --gpus-max " << std::max<std::int64_t>(64, gpus * 8) << "\n";
  }
  return 0;
}

// A patch as the flags that apply it: {"training":{"checkpointing":"full"}} -> --set
// training.checkpointing=full (lists as their JSON text, which --set reads back).
void patch_flags(const memfit::Json& patch, const std::string& prefix, std::string& out) {
  for (const auto& [key, value] : patch.members()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object()) {
      patch_flags(value, path, out);
      continue;
    }
    const std::string flag = path + "=" + (value.is_string() ? value.as_string() : value.dump());
    // Quoted for the shell where it holds more than names and numbers (a list's brackets).
    const bool plain = flag.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-=") ==
                       std::string::npos;
    std::string quoted = "'";
    for (char ch : flag) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    out += " --set " + (plain ? flag : quoted + "'");
  }
}

int run_suggest(const memfit::cli::Request& request) {
  const memfit::Json r = memfit::suggestions_json(request.config.dump());
  if (!r.find("ok")->as_bool()) return print_issues(*r.find("errors"));
  if (request.json) {
    std::cout << r.dump(2) << "\n";
    return 0;
  }
  const memfit::Json e = memfit::estimate_json(request.config.dump());
  const memfit::Json& fit = *e.find("fits");
  const memfit::Json* lacks = fit.find("lacks");
  const std::string lacking = lacks && lacks->is_string() && !lacks->as_string().empty()
                                  ? ", no " + lacks->as_string() + " tensor cores: emulated, far slower"
                                  : "";
  std::printf("memfit suggest: now %.2f GiB on the %s (%s%s)\n", gib_value(integer(e, "device_total_bytes")),
              fit.find("name")->as_string().c_str(), verdict_words(*fit.find("verdict")).c_str(), lacking.c_str());
  const auto& list = r.find("suggestions")->items();
  if (list.empty()) {
    std::cout << (fit.find("verdict")->as_string() == "fits" ? "  it fits; nothing to change\n"
                                                             : "  no change or plan of changes memfit knows makes it fit\n");
    return 0;
  }
  int rank = 0;
  for (const memfit::Json& s : list) {
    std::string flags;
    patch_flags(*s.find("patch"), "", flags);
    std::printf("  %d. %s: %.2f GiB, %s\n     %s\n     flags:%s\n", ++rank, s.find("title")->as_string().c_str(),
                gib_value(integer(s, "device_total_bytes")), verdict_words(*s.find("verdict")).c_str(),
                s.find("detail")->as_string().c_str(), flags.c_str());
  }
  return 0;
}

int run_export(const memfit::cli::Request& request) {
  const memfit::Json r = memfit::export_json(request.config.dump(), request.target);
  if (!r.find("ok")->as_bool()) return print_issues(*r.find("errors"));
  if (request.json) {
    std::cout << r.dump(2) << "\n";
    return 0;
  }
  const std::string& file = r.find("filename")->as_string();
  if (!file.empty()) std::cout << "# " << file << "\n" << r.find("text")->as_string() << "\n";
  std::cout << "# launch" << (file.empty() ? "" : " (with " + file + " beside it)") << "\n"
            << r.find("command")->as_string() << "\n";
  for (const memfit::Json& n : r.find("notes")->items()) std::cout << "# note: " << n.as_string() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const memfit::cli::ParsedArgs parsed =
      memfit::cli::parse_args(std::vector<std::string>(argv + 1, argv + argc), memfit::cli::read_input);
  for (const std::string& e : parsed.errors) std::cerr << "memfit: " << e << "\n";
  if (!parsed.errors.empty()) return parsed.status;
  for (const std::string& n : parsed.request.notes) std::cerr << "memfit: " << n << "\n";
  switch (parsed.request.action) {
    case memfit::cli::Action::kHelp: std::cout << kUsage; return 0;
    case memfit::cli::Action::kListPresets: list_presets(); return 0;
    case memfit::cli::Action::kListGpus:
      if (parsed.request.json) std::cout << memfit::gpus_json().dump(2) << "\n";
      else list_gpus();
      return 0;
    case memfit::cli::Action::kSchema: std::cout << memfit::config_schema().dump(2) << "\n"; return 0;
    case memfit::cli::Action::kDefaultConfig: std::cout << memfit::default_config_json().dump(2) << "\n"; return 0;
    case memfit::cli::Action::kEstimate: return run_estimate(parsed.request);
    case memfit::cli::Action::kSolve: return run_solve(parsed.request);
    case memfit::cli::Action::kPlan: return run_plan(parsed.request);
    case memfit::cli::Action::kTime: return run_time(parsed.request);
    case memfit::cli::Action::kExport: return run_export(parsed.request);
    case memfit::cli::Action::kSuggest: return run_suggest(parsed.request);
    case memfit::cli::Action::kBatch: return run_batch();
  }
  return 0;
}
