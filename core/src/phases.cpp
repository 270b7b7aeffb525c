#include "phases.hpp"

#include "finetune.hpp"
#include "optimizer_states.hpp"

namespace memfit {

namespace {

// What every phase holds besides its own high point: the weights, master copy and states,
// gradients kept across micro-batches, autocast's copies, the saved activations and, under
// ZeRO-3 / FSDP, the one unit (a block) gathered at a time in the compute dtype.
Bytes alive_through_step(const Config& c, const ParameterCount& params, const StaticBytes& st,
                         const ActivationModel& act, Bytes weight_copies, const PrecisionRecipe& r) {
  const Training& t = c.training;
  const Bytes grads_in_forward = t.grad_accum_steps > 1 && !t.optimizer_in_backward ? st.gradients : Bytes{0};
  const Bytes gathered_layer = c.parallel.zero_stage >= 3
                                   ? max(params.per_dense_layer_count, params.per_moe_layer_count) * r.gathered /
                                         c.parallel.tensor
                                   : Bytes{0};
  return st.weights + st.master + st.states + grads_in_forward + weight_copies + act.saved_bytes + gathered_layer;
}

// The gradient of the output head's weight (or of the tied embedding it shares).
Bytes head_gradient_bytes(const Config& c, const ParameterCount& params, const PrecisionRecipe& r) {
  if (is_lora(c) || c.model.output_head != OutputHead::kLm) return Bytes{0};
  const Count head_elements = c.model.tie_word_embeddings ? params.component_count(Component::kTokenEmbedding)
                                                           : params.component_count(Component::kHead);
  return head_elements * r.gradients / c.parallel.tensor;
}

// Backward passes three high points: the loss and head (every saved tensor alive, the loss's
// V-wide gradients, then the head weight's gradient beside the logits' gradient); the top block
// (its working memory, and its recomputation under checkpointing); and the end (every
// gradient, plus a tied embedding's gradient before it is added to the head's).
Bytes backward_high_point(const Config& c, const ParameterCount& params, const StaticBytes& st,
                          const ActivationModel& act, const LossModel& loss, Bytes alive, const PrecisionRecipe& r) {
  const Bytes head_grad = head_gradient_bytes(c, params, r);
  const Bytes loss_and_head = alive + max(loss.backward_bytes, loss.grad_bytes + head_grad + loss.head_input_bytes * 2);
  const Bytes top_block = alive + head_grad + loss.head_input_bytes + act.layer_backward_working_bytes;
  // An untied embedding's gradient becomes its .grad as it is; a tied one is added to the head's
  // gradient already there, so for a moment both exist.
  const Bytes embedding_grad = !is_lora(c) && c.model.tie_word_embeddings
                                   ? params.component_count(Component::kTokenEmbedding) * r.gradients /
                                         c.parallel.tensor
                                   : Bytes{0};
  const Bytes grads_at_end = c.training.optimizer_in_backward ? Bytes{0} : st.gradients;
  const Bytes end = st.weights + st.master + st.states + grads_at_end + act.embedding_saved_bytes + embedding_grad;
  return max(max(loss_and_head, top_block), end);
}

}  // namespace

// The step in its steady state (optimizer states already exist).
std::vector<Phase> step_phases(const Config& c, const ParameterCount& params, const Placement& p,
                               const StaticBytes& st, const ActivationModel& act, const LossModel& loss,
                               Bytes weight_copies, const PrecisionRecipe& r) {
  const Training& t = c.training;
  const Bytes alive = alive_through_step(c, params, st, act, weight_copies, r);
  std::vector<Phase> phases = {
      {"forward", "End of forward (loss computed)", alive + loss.forward_bytes},
      {"backward", "Backward (high point)", backward_high_point(c, params, st, act, loss, alive, r)}};
  if (!t.optimizer_in_backward) {
    const bool zero = c.parallel.zero_stage >= 1;
    const Count sharded_trainable = zero ? p.local_trainable / p.zero_shards : p.local_trainable;
    const Count largest = zero ? Count(0) : largest_trainable_tensor(params, is_lora(c), t.finetune);
    // An offloaded optimizer steps on the CPU (DeepSpeed's CPU Adam): no temporaries on the GPU.
    const Bytes temporaries = c.parallel.offload_optimizer
                                  ? Bytes{0}
                                  : optimizer_step_temporary_bytes(t, sharded_trainable, largest, r);
    phases.push_back({"optimizer_step", "Optimizer step",
                      st.weights + st.master + st.states + st.gradients + temporaries});
  }
  return phases;
}

}  // namespace memfit
