// libFuzzer target: any bytes through the JSON reader and writer, as a configuration, and as a
// Hugging Face config.json read by every family the importer knows. Built with
// -fsanitize=fuzzer,address,undefined (MEMFIT_FUZZ=ON, clang); a crash, a sanitizer report, a
// non-finite number or a writer/reader disagreement fails.
//
// Seeds: tests/fuzz/corpus/ (the hostile reproducers and configurations) and one config.json
// per family (tests/fuzz/make_seeds.py picks them from tests/fixtures/hf/).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "memfit/memfit.hpp"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

void check_finite(const memfit::Json& j) {
  require(!j.is_number() || std::isfinite(j.as_double()));
  for (const memfit::Json& item : j.items()) check_finite(item);
  for (const auto& [key, value] : j.members()) check_finite(value);
}

// The writer's output always reads back (so it is UTF-8 and within the reader's limits when
// its input was), to the same document.
void check_json_round_trip(std::string_view text) {
  const memfit::JsonParseResult parsed = memfit::parse_json(text);
  if (parsed.value) {
    const std::string compact = parsed.value->dump();
    const memfit::JsonParseResult again = memfit::parse_json(compact);
    require(again.value.has_value());
    require(again.value->dump() == compact);
    const memfit::JsonParseResult pretty = memfit::parse_json(parsed.value->dump(2));
    require(pretty.value && pretty.value->dump() == compact);
  } else {
    require(!parsed.error.empty());
  }
  // Any bytes as a string and as a key: written as UTF-8 (bad bytes as U+FFFD), read back.
  memfit::Json object = memfit::Json::object();
  object.set(std::string(text), memfit::Json::string(std::string(text)));
  const std::string written = object.dump();
  const memfit::JsonParseResult back = memfit::parse_json(written);
  require(back.value && back.value->members().size() == 1);
  if (written.find("\\ufffd") == std::string::npos) require(back.value->members()[0].first == text);
}

// The families the importer knows, from its own list ("gpt2, gpt_neox, ...").
const std::vector<std::string>& families() {
  static const std::vector<std::string> list = [] {
    std::vector<std::string> out;
    const std::string_view all = memfit::supported_hf_model_types();
    for (std::size_t start = 0; start < all.size();) {
      std::size_t end = all.find(", ", start);
      if (end == std::string_view::npos) end = all.size();
      out.emplace_back(all.substr(start, end - start));
      start = end + 2;
    }
    return out;
  }();
  return list;
}

// An object is read by every family's reader, whatever model_type it names: each family's keys
// and limits see every mutation, not only those that keep the model_type spelled right.
void import_as_every_family(std::string_view text) {
  const memfit::JsonParseResult parsed = memfit::parse_json(text);
  if (!parsed.value || !parsed.value->is_object()) return;
  memfit::Json config = *parsed.value;
  for (const std::string& family : families()) {
    config.set("model_type", memfit::Json::string(family));
    const memfit::Json imported = memfit::import_hf_json(config.dump());
    check_finite(imported);
    require(imported.find("ok") && imported.find("errors"));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_json_round_trip(text);
  const memfit::Json result = memfit::estimate_json(text);
  check_finite(result);
  require(result.find("ok") && result.find("errors"));
  (void)result.dump();
  const memfit::Json imported = memfit::import_hf_json(text);
  check_finite(imported);
  import_as_every_family(text);
  (void)memfit::scaling_table_json(text).dump();
  return 0;
}
