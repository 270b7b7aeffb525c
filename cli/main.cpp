// memfit command line: configuration in (flags, --config JSON, --hf-config), table or JSON out.
//
// Exit codes: 0 success, 2 invalid input (one line per problem, each naming the field), 1 I/O.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

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
  --list-presets       model presets          --list-gpus   the GPU table
  --schema             every configuration field with its range and default
  --default-config     the default configuration as JSON
  -h, --help           this text
)";

std::string read_file(const std::string& path, bool& ok) {
  ok = true;
  if (path == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    return s.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ok = false;
    return {};
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A flag's value: JSON where it reads as JSON (numbers, booleans, lists), else a string.
memfit::Json flag_value(const std::string& text) {
  const memfit::JsonParseResult parsed = memfit::parse_json(text);
  if (parsed.value && !parsed.value->is_object()) return *parsed.value;
  return memfit::Json::string(text);
}

// "--seq-len" → "training.seq_len", by the unique last name in the schema.
std::string field_for_flag(std::string name, const memfit::Json& schema) {
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  std::string found;
  for (const memfit::Json& f : schema.items()) {
    const std::string& path = f.find("field")->as_string();
    const std::size_t dot = path.rfind('.');
    if (path.substr(dot + 1) == name || path == name) {
      if (!found.empty()) return "";  // ambiguous: use --set with the full path
      found = path;
    }
  }
  return found;
}

void set_path(memfit::Json& root, const std::string& path, memfit::Json value) {
  memfit::Json* node = &root;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) {
      node->set(key, std::move(value));
      return;
    }
    const memfit::Json* child = node->find(key);
    if (!child || !child->is_object()) node->set(key, memfit::Json::object());
    node = const_cast<memfit::Json*>(node->find(key));
    start = dot + 1;
  }
}

// Overlays `patch` onto `base`, object by object.
void merge(memfit::Json& base, const memfit::Json& patch) {
  for (const auto& [key, value] : patch.members()) {
    const memfit::Json* existing = base.find(key);
    if (value.is_object() && existing && existing->is_object()) {
      merge(*const_cast<memfit::Json*>(existing), value);
    } else {
      base.set(key, value);
    }
  }
}

int print_issues(const memfit::Json& issues) {
  for (const memfit::Json& i : issues.items()) {
    std::cerr << "memfit: " << i.find("field")->as_string() << " " << i.find("message")->as_string() << "\n";
  }
  return 2;
}

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

}  // namespace

int main(int argc, char** argv) {
  const memfit::Json schema = memfit::config_schema();
  memfit::Json config = memfit::Json::object();
  bool json_out = false;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--json") {
      json_out = true;
    } else if (a == "--list-presets") {
      const memfit::Json list = memfit::presets_json();
      for (const memfit::Json& p : list.items()) {
        std::printf("%-28s %-34s %20s\n", p.find("id")->as_string().c_str(), p.find("name")->as_string().c_str(),
                    group(p.find("parameter_count")->as_exact_integer().value_or(0)).c_str());
      }
      return 0;
    } else if (a == "--list-gpus") {
      const memfit::Json list = memfit::gpus_json();
      for (const memfit::Json& g : list.items()) {
        std::printf("%-18s %-34s %s\n", g.find("id")->as_string().c_str(), g.find("name")->as_string().c_str(),
                    gib(g.find("memory_bytes")->as_exact_integer().value_or(0)).c_str());
      }
      return 0;
    } else if (a == "--schema") {
      std::cout << schema.dump(2) << "\n";
      return 0;
    } else if (a == "--default-config") {
      std::cout << memfit::default_config_json().dump(2) << "\n";
      return 0;
    } else if ((a == "--config" || a == "--hf-config") && has_value) {
      bool ok = false;
      const std::string text = read_file(args[++i], ok);
      if (!ok) {
        std::cerr << "memfit: cannot read " << args[i] << "\n";
        return 1;
      }
      if (a == "--config") {
        const memfit::JsonParseResult parsed = memfit::parse_json(text);
        if (!parsed.value || !parsed.value->is_object()) {
          std::cerr << "memfit: " << args[i] << " is not a JSON object" << (parsed.value ? "" : ": " + parsed.error)
                    << "\n";
          return 2;
        }
        merge(config, *parsed.value);
      } else {
        const memfit::Json imported = memfit::import_hf_json(text);
        if (!imported.find("ok")->as_bool()) return print_issues(*imported.find("errors"));
        set_path(config, "model", *imported.find("model"));
        set_path(config, "model.preset", memfit::Json::string(""));
        for (const memfit::Json& w : imported.find("warnings")->items()) {
          std::cerr << "memfit: note: " << w.find("field")->as_string() << " " << w.find("message")->as_string()
                    << "\n";
        }
      }
    } else if (a == "--set" && has_value) {
      const std::string& kv = args[++i];
      const std::size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::cerr << "memfit: --set expects PATH=VALUE, got " << kv << "\n";
        return 2;
      }
      set_path(config, kv.substr(0, eq), flag_value(kv.substr(eq + 1)));
    } else if (a.rfind("--", 0) == 0 && has_value) {
      const std::string path = field_for_flag(a.substr(2), schema);
      if (path.empty()) {
        std::cerr << "memfit: unknown option " << a << " (see --help and --schema)\n";
        return 2;
      }
      memfit::Json value = flag_value(args[++i]);
      if (path == "training.finetune.lora_targets" && value.is_string()) {
        memfit::Json list = memfit::Json::array();  // "q,k,v,o" → ["q","k","v","o"]
        std::stringstream s(value.as_string());
        for (std::string item; std::getline(s, item, ',');) list.push(memfit::Json::string(item));
        value = list;
      }
      set_path(config, path, std::move(value));
    } else {
      std::cerr << "memfit: unknown or incomplete option " << a << " (see --help)\n";
      return 2;
    }
  }

  const memfit::Json result = memfit::estimate_json(config.dump());
  if (!result.find("ok")->as_bool()) return print_issues(*result.find("errors"));
  if (json_out) {
    std::cout << result.dump(2) << "\n";
  } else {
    print_table(result);
  }
  return 0;
}
