#include "seed_convention.hpp"

#include <algorithm>

#include "activations.hpp"
#include "fit.hpp"
#include "optimizer_states.hpp"

namespace memfit {

namespace {

// The seeds' framework overhead (seeds/001 estimate_memory: "512 MB baseline", MiB in fact).
constexpr Bytes kSeedOverheadBytes{512LL << 20};
// seeds/000: "actual usage often runs 10-20% higher"; the range runs from the floor to +20 %.
constexpr double kSeedFragmentationHigh = 0.20;

}  // namespace

void estimate_seed_convention(const Config& c, Estimate& e) {
  const PrecisionRecipe& r = recipe_for(Precision::kSeed14p);
  // seeds/002: "In LoRA fine-tuning, only the adapter parameters receive gradients and optimizer
  // states, while the base model parameters are frozen ... (2P bytes for FP16)". The model holds
  // base and adapters; gradients and states are the adapters' only.
  const Count trainable = e.trainable_parameter_count;
  e.breakdown.parameters = e.parameter_count * r.weights;
  e.breakdown.gradients = trainable * r.gradients;
  e.breakdown.optimizer_states = seed_optimizer_state_bytes(c.training.optimizer, trainable);
  // The seeds' L counts every block: an encoder-decoder's encoder and decoder blocks both.
  Config blocks = c;
  if (c.model.is_encoder_decoder) blocks.model.num_hidden_layers += c.model.decoder_layers();
  e.breakdown.activations = seed_activation_bytes(blocks);
  e.breakdown.overhead = c.hardware.overhead_bytes >= 0 ? Bytes(c.hardware.overhead_bytes) : kSeedOverheadBytes;
  const Bytes allocated =
      e.breakdown.parameters + e.breakdown.gradients + e.breakdown.optimizer_states + e.breakdown.activations;
  e.phases = {{"total", "Parameters + gradients + optimizer states + activations", allocated}};
  e.peak_allocated_bytes = allocated;
  // The seeds have no step timeline; between steps their model holds the weights and the states.
  e.between_steps_bytes = e.breakdown.parameters + e.breakdown.optimizer_states;
  // The seeds' M (this plus the overhead) is a floor; the point estimate is the floor.
  e.fragmentation = c.hardware.fragmentation >= 0 ? c.hardware.fragmentation : 0.0;
  e.peak_reserved_bytes = scale(allocated, 1.0 + e.fragmentation);
  e.peak_reserved_low_bytes = e.peak_reserved_bytes;
  e.peak_reserved_high_bytes = scale(allocated, 1.0 + std::max(e.fragmentation, kSeedFragmentationHigh));
  e.notes.push_back("seed_14p: 2-byte parameters, 4-byte gradients, 8-byte Adam states, no master copy (the 14P rule); "
                    "activations L·B·T·(34d + 5hT) bytes; overhead 512 MiB; the total is a sum (seeds/000, seeds/001).");
  if (c.training.optimizer == Optimizer::kAdafactor) {
    e.notes.push_back("adafactor under seed_14p uses the seeds' 0.1 states-per-parameter approximation.");
  }
}

}  // namespace memfit
