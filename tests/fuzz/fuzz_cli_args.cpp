// libFuzzer target: the command line's argument parser. The input is split at newlines into
// arguments; "--config"/"--hf-config" files are served from the input's last argument, so the
// fuzzer reaches flags, --set paths, file contents and the estimate of whatever they build.
// A crash, a sanitizer report, or a parse that neither errs nor yields a JSON object fails.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "args.hpp"
#include "memfit/memfit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 1 << 16) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  std::size_t start = 0;
  while (start <= text.size() && args.size() < 64) {
    const std::size_t end = text.find('\n', start);
    args.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  const std::string file = args.empty() ? std::string() : args.back();
  const memfit::cli::Reader read = [&](const std::string&) { return memfit::cli::Input{file, "", false}; };
  const memfit::cli::ParsedArgs parsed = memfit::cli::parse_args(args, read);
  if (!parsed.errors.empty()) {
    if (parsed.status != 1 && parsed.status != 2) std::abort();
    return 0;
  }
  if (!parsed.request.config.is_object()) std::abort();
  const memfit::Json result = memfit::estimate_json(parsed.request.config.dump());
  if (!result.find("ok")) std::abort();
  return 0;
}
