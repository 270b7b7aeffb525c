// memfit command line: configuration in (flags, --config JSON, --hf-config), table or JSON out.
//
// Exit codes: 0 success, 2 invalid input (one line per problem, each naming the field), 1 I/O.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "args.hpp"
#include "memfit/memfit.hpp"

namespace {

constexpr const char* kUsage = R"(usage: memfit [options]

Configuration (later options override earlier ones):
  --config FILE        memfit configuration JSON ('-' reads stdin)
  --hf-config FILE     a Hugging Face config.json as the model ('-' reads stdin)
  --preset ID          a model preset (see --list-presets)
  --set PATH=VALUE     any field, e.g. --set training.dropout=0.1
  --FIELD VALUE        any field by its last name, dashes or underscores:
                       --micro-batch-size 8 --seq-len 4096 --precision bf16_mixed
                       --optimizer adamw_8bit --checkpointing full --attention eager
                       --gpu a100-80gb --num-gpus 8 --zero-stage 3 --method lora

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
  std::snprintf(buf, sizeof buf, "  %-26s %24s %s\n", name.c_str(), group(bytes).c_str(), gib(bytes).c_str());
  std::cout << buf;
}

void print_table(const memfit::Json& r) {
  const memfit::Json& config = *r.find("config");
  const memfit::Json& training = *config.find("training");
  const memfit::Json& model = *config.find("model");
  const std::string preset = model.find("preset")->as_string();
  std::cout << "memfit: " << (preset.empty() ? "custom model" : preset) << ", "
            << training.find("precision")->as_string() << ", " << training.find("optimizer")->as_string()
            << ", micro-batch " << training.find("micro_batch_size")->dump() << " x "
            << training.find("seq_len")->dump() << " tokens, checkpointing "
            << training.find("checkpointing")->as_string() << "\n";
  std::cout << "parameters: " << group(r.find("parameter_count")->as_exact_integer().value_or(0))
            << " (trainable " << group(r.find("trainable_parameter_count")->as_exact_integer().value_or(0)) << ")\n\n";
  std::cout << "  per GPU                                       bytes\n";
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
  std::cout << "\n  " << fit.find("name")->as_string() << ": " << fit.find("verdict")->as_string()
            << " (headroom" << gib(fit.find("headroom_bytes")->as_exact_integer().value_or(0)) << ")\n";
  for (const memfit::Json& w : r.find("warnings")->items()) {
    std::cout << "  warning: " << w.find("field")->as_string() << " " << w.find("message")->as_string() << "\n";
  }
  for (const memfit::Json& n : r.find("notes")->items()) std::cout << "  note: " << n.as_string() << "\n";
}

int print_issues(const memfit::Json& issues) {
  for (const memfit::Json& i : issues.items()) {
    std::cerr << "memfit: " << i.find("field")->as_string() << " " << i.find("message")->as_string() << "\n";
  }
  return 2;
}

void list_presets() {
  const memfit::Json list = memfit::presets_json();
  for (const memfit::Json& p : list.items()) {
    std::printf("%-28s %-34s %20s\n", p.find("id")->as_string().c_str(), p.find("name")->as_string().c_str(),
                group(p.find("parameter_count")->as_exact_integer().value_or(0)).c_str());
  }
}

void list_gpus() {
  const memfit::Json list = memfit::gpus_json();
  for (const memfit::Json& g : list.items()) {
    std::printf("%-18s %-34s %s\n", g.find("id")->as_string().c_str(), g.find("name")->as_string().c_str(),
                gib(g.find("memory_bytes")->as_exact_integer().value_or(0)).c_str());
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
    case memfit::cli::Action::kListGpus: list_gpus(); return 0;
    case memfit::cli::Action::kSchema: std::cout << memfit::config_schema().dump(2) << "\n"; return 0;
    case memfit::cli::Action::kDefaultConfig: std::cout << memfit::default_config_json().dump(2) << "\n"; return 0;
    case memfit::cli::Action::kEstimate: return run_estimate(parsed.request);
    case memfit::cli::Action::kBatch: return run_batch();
  }
  return 0;
}
