// libFuzzer target: any bytes, as a configuration and as a Hugging Face config.json, through
// parsing, validation, the estimate and the result JSON. Built with -fsanitize=fuzzer,address,
// undefined (MEMFIT_FUZZ=ON, clang); a crash, a sanitizer report or a non-finite number fails.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "memfit/memfit.hpp"

namespace {

void check_finite(const memfit::Json& j) {
  if (j.is_number() && !std::isfinite(j.as_double())) std::abort();
  for (const memfit::Json& item : j.items()) check_finite(item);
  for (const auto& [key, value] : j.members()) check_finite(value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const memfit::Json result = memfit::estimate_json(text);
  check_finite(result);
  if (!result.find("ok") || !result.find("errors")) std::abort();
  (void)result.dump();
  const memfit::Json imported = memfit::import_hf_json(text);
  check_finite(imported);
  (void)memfit::scaling_table_json(text).dump();
  return 0;
}
