// Implementation profiles: how the code that runs the model behaves, one row per framework
// (implementation.cpp). A configuration names a framework (training.framework); each knob of
// the profile can be overridden on its own (training.softmax_dtype, ...); `auto` takes the
// profile's value. The result echoes the resolved values.
#pragma once

#include "memfit/config.hpp"

namespace memfit {

struct ImplementationProfile {
  Framework framework;
  const char* name;         // "hf"
  const char* description;  // in words
  const char* source;       // where the behaviour is in the framework's code
  SoftmaxDtype softmax_dtype;
  LogitsDtype logits_dtype;
  AttentionMask attention_mask;
};

const ImplementationProfile& implementation_profile(Framework framework);

// The implementation with every `auto` resolved (never kAuto).
Implementation resolve_implementation(const Implementation& requested);

const char* to_string(Framework f);
const char* to_string(AttentionImpl a);
const char* to_string(SoftmaxDtype s);
const char* to_string(LogitsDtype l);
const char* to_string(AttentionMask m);

}  // namespace memfit
