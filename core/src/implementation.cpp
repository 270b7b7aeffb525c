#include "memfit/implementation.hpp"

#include <array>
#include <cstddef>

#include "field_table.hpp"

namespace memfit {

namespace {

// One row per framework, in the Framework enum's order (checked below).
constexpr std::array<ImplementationProfile, 1> kProfiles = {{
    {.framework = Framework::kHf,
     .name = "hf",
     .description = "Hugging Face transformers with Trainer / accelerate: eager attention upcasts its softmax "
                    "to fp32 and receives an additive causal mask; the loss upcasts the logits to fp32",
     .source = "transformers/models/llama/modeling_llama.py eager_attention_forward (softmax dtype=float32); "
               "transformers/loss/loss_utils.py ForCausalLMLoss (logits.float())",
     .softmax_dtype = SoftmaxDtype::kFp32,
     .logits_dtype = LogitsDtype::kFp32,
     .attention_mask = AttentionMask::kAdditive},
}};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kProfiles.size(); ++i) {
    if (static_cast<std::size_t>(kProfiles[i].framework) != i) return false;
  }
  return true;
}
static_assert(rows_in_enum_order(), "kProfiles rows must follow the Framework enum");

const char* choice(const char* path, int value) {
  return detail::find_field(path)->choices[static_cast<std::size_t>(value)];
}

}  // namespace

const ImplementationProfile& implementation_profile(Framework framework) {
  return kProfiles[static_cast<std::size_t>(framework)];
}

Implementation resolve_implementation(const Implementation& requested) {
  const ImplementationProfile& profile = implementation_profile(requested.framework);
  Implementation out = requested;
  if (out.softmax_dtype == SoftmaxDtype::kAuto) out.softmax_dtype = profile.softmax_dtype;
  if (out.logits_dtype == LogitsDtype::kAuto) out.logits_dtype = profile.logits_dtype;
  if (out.attention_mask == AttentionMask::kAuto) out.attention_mask = profile.attention_mask;
  return out;
}

const char* to_string(Framework f) { return choice("training.framework", static_cast<int>(f)); }
const char* to_string(AttentionImpl a) { return choice("training.attention", static_cast<int>(a)); }
const char* to_string(SoftmaxDtype s) { return choice("training.softmax_dtype", static_cast<int>(s)); }
const char* to_string(LogitsDtype l) { return choice("training.logits_dtype", static_cast<int>(l)); }
const char* to_string(AttentionMask m) { return choice("training.attention_mask", static_cast<int>(m)); }

}  // namespace memfit
