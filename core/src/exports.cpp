// Exports of a plan to the engines that run it (exports.hpp). The keys and flags written are the
// engines' own; tests/core/exports_test.cpp lists them with the file and commit each was read from.
#include "memfit/exports.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "memfit/estimate.hpp"
#include "memfit/gpus.hpp"
#include "memfit/implementation.hpp"
#include "memfit/patch.hpp"
#include "phases.hpp"
#include "vision.hpp"

namespace memfit {

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// Text built piece by piece (iostreams would more than double the wasm module).
struct Text {
  std::string s;
  Text& operator<<(std::string_view v) {
    s += v;
    return *this;
  }
  Text& operator<<(const char* v) { return *this << std::string_view(v); }
  Text& operator<<(const std::string& v) { return *this << std::string_view(v); }
  Text& operator<<(std::int64_t v) { return *this << std::string_view(std::to_string(v)); }
  Text& operator<<(int v) { return *this << static_cast<std::int64_t>(v); }
  std::string str() const { return s; }
};

// The lines of a text.
std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    out.emplace_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

std::int64_t per_node(const Config& c) {
  return std::min(c.parallel.num_gpus, gpus_per_node(c.hardware.gpu, c.hardware.gpus_per_node));
}

std::int64_t data_parallel(const Config& c) {
  const Parallel& p = c.parallel;
  return p.num_gpus / (p.tensor * p.pipeline * p.context);
}

std::int64_t global_batch(const Config& c) {
  return c.training.micro_batch_size * c.training.grad_accum_steps * data_parallel(c);
}

// torchrun's own flags (torch.distributed.run): one process per GPU, nodes meeting at
// $MASTER_ADDR (c10d rendezvous), or --standalone on one node.
std::string torchrun(const Config& c, const std::string& program) {
  const std::int64_t k = per_node(c), nodes = (c.parallel.num_gpus + k - 1) / k;
  if (nodes == 1) return "torchrun --standalone --nproc_per_node=" + str(k) + " " + program;
  return "torchrun --nnodes=" + str(nodes) + " --nproc_per_node=" + str(k) +
         " --rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500 " + program;
}

void fail(Export& e, const char* field, std::string message) { e.errors.push_back({field, std::move(message)}); }

bool only_data_parallel(const Config& c, Export& e, const char* engine, const char* instead) {
  const Parallel& p = c.parallel;
  if (p.tensor == 1 && p.pipeline == 1 && p.context == 1 && p.expert == 1) return true;
  fail(e, "parallel", std::string(engine) + " here shards data-parallel ranks only; export tensor / pipeline / "
                                            "context / expert parallel layouts to " + instead);
  return false;
}

const char* lora_note =
    "LoRA adapters are created by your script (e.g. peft.LoraConfig with the rank and target modules of the plan)";

// ---- DeepSpeed (deepspeed/runtime/constants.py, deepspeed/runtime/zero/config.py) ----

Json deepspeed_precision(const Config& c, Export& e) {
  Json block = Json::object();
  switch (c.training.precision) {
    case Precision::kBf16Master:
    case Precision::kFp16Master:
      block.set("enabled", Json::boolean(true));
      return block;
    case Precision::kBf16Mixed:
    case Precision::kFp16Mixed:
      block.set("enabled", Json::boolean(true));
      block.set("dtype", Json::string(c.training.precision == Precision::kBf16Mixed ? "bfloat16" : "float16"));
      return block;
    case Precision::kFp32: return Json::null();
    default:
      fail(e, "training.precision", "DeepSpeed takes bf16_master, fp16_master, bf16_mixed, fp16_mixed or fp32; got " +
                                        std::string(to_string(c.training.precision)));
      return Json::null();
  }
}

const char* deepspeed_precision_key(Precision p) {
  switch (p) {
    case Precision::kBf16Master: return "bf16";
    case Precision::kFp16Master: return "fp16";
    default: return "torch_autocast";
  }
}

Json deepspeed_zero(const Config& c, Export& e) {
  const Parallel& p = c.parallel;
  Json zero = Json::object();
  zero.set("stage", Json::integer(p.zero_stage));
  // ZeRO-3 overlaps by default and ZeRO-1 never; for ZeRO-2 the configuration says (it doubles
  // the reduce buckets).
  zero.set("overlap_comm", Json::boolean(p.zero_stage == 3 || (p.zero_stage == 2 && p.overlap_comm)));
  if (p.reduce_bucket_elements >= 0 && (p.zero_stage == 2 || p.zero_stage == 3)) {
    zero.set("reduce_bucket_size", Json::integer(p.reduce_bucket_elements));
  }
  if (p.zero_stage == 3 && p.zero_sub_group_size != Parallel{}.zero_sub_group_size) {
    zero.set("sub_group_size", Json::integer(p.zero_sub_group_size));
  }
  if (p.zero_stage == 3 && p.zero3_max_reuse_distance != Parallel{}.zero3_max_reuse_distance) {
    zero.set("stage3_max_reuse_distance", Json::integer(p.zero3_max_reuse_distance));
  }
  zero.set("contiguous_gradients", Json::boolean(true));
  const auto cpu = [] {
    Json o = Json::object();
    o.set("device", Json::string("cpu"));
    o.set("pin_memory", Json::boolean(true));
    return o;
  };
  if (p.offload_optimizer) zero.set("offload_optimizer", cpu());
  if (p.offload_params) zero.set("offload_param", cpu());
  if (p.offload_params && p.zero_stage < 3) fail(e, "parallel.offload_params", "DeepSpeed offloads parameters with ZeRO-3 only");
  if (p.offload_optimizer && p.zero_stage < 1) fail(e, "parallel.offload_optimizer", "DeepSpeed offloads the optimizer with ZeRO-1 or above");
  if (p.zero_hpz_partition_size > 1) zero.set("zero_hpz_partition_size", Json::integer(p.zero_hpz_partition_size));
  if (p.zero_quantized_weights) zero.set("zero_quantized_weights", Json::boolean(true));
  if (p.zero_quantized_gradients) zero.set("zero_quantized_gradients", Json::boolean(true));
  if (p.shard_degree > 0) {
    if (p.zero_stage == 3) zero.set("mics_shard_size", Json::integer(p.shard_degree));  // MiCS: shard within groups
    else fail(e, "parallel.shard_degree", "DeepSpeed shards within groups (MiCS) with ZeRO-3 only");
  }
  return zero;
}

// Full checkpointing of only some blocks (training.checkpointed_layers).
bool partial_checkpointing(const Config& c) {
  return c.training.checkpointing == Checkpointing::kFull && !c.training.every_layer_recomputed(c.model.num_hidden_layers);
}

// k such that checkpointing every k-th block (torchtitan's and torchtune's layer-level selective
// checkpointing: blocks k, 2k, ...) recomputes training.checkpointed_layers of them; 0 when none does.
std::int64_t every_kth_block(const Config& c) {
  const std::int64_t layers = c.model.num_hidden_layers, n = c.training.recomputed_layers(layers);
  if (n <= 0) return 0;
  const std::int64_t k = layers / n;
  return layers / k == n ? k : 0;
}

Export deepspeed(const Config& c) {
  Export e;
  e.engine = Engine::kDeepSpeed;
  e.filename = "ds_config.json";
  only_data_parallel(c, e, "DeepSpeed's ZeRO config", "megatron or torchtitan");
  const Training& t = c.training;
  if (t.checkpointing != Checkpointing::kNone && t.checkpointing != Checkpointing::kFull) {
    fail(e, "training.checkpointing", "a Hugging Face script under DeepSpeed checkpoints whole layers (full) or none");
  }
  if (partial_checkpointing(c)) {
    fail(e, "training.checkpointed_layers", "transformers' gradient_checkpointing covers every layer: -1 (all)");
  }
  Json j = Json::object();
  j.set("train_batch_size", Json::integer(global_batch(c)));
  j.set("train_micro_batch_size_per_gpu", Json::integer(t.micro_batch_size));
  j.set("gradient_accumulation_steps", Json::integer(t.grad_accum_steps));
  const Json precision = deepspeed_precision(c, e);
  if (!precision.is_null()) j.set(deepspeed_precision_key(t.precision), precision);
  j.set("zero_optimization", deepspeed_zero(c, e));
  j.set("gradient_clipping", Json::number(1.0));
  j.set("steps_per_print", Json::integer(10));
  e.text = j.dump(2) + "\n";
  std::string args = "train.py --deepspeed ds_config.json --per_device_train_batch_size " + str(t.micro_batch_size) +
                     " --gradient_accumulation_steps " + str(t.grad_accum_steps);
  if (t.checkpointing == Checkpointing::kFull) args += " --gradient_checkpointing true";
  // transformers' DeepSpeed integration checks the config's bf16/fp16 "enabled" against
  // TrainingArguments (integrations/deepspeed.py, trainer_config_process: fill_match on bf16.enabled
  // and fp16.enabled) and refuses to start on a mismatch: the Trainer is told the same.
  if (t.precision == Precision::kBf16Master) args += " --bf16 true";
  if (t.precision == Precision::kFp16Master) args += " --fp16 true";
  e.command = torchrun(c, args);
  e.notes.push_back("train.py is your Hugging Face Trainer script (TrainingArguments flags)");
  if (t.finetune.method == FinetuneMethod::kLora) e.notes.push_back(lora_note);
  return e;
}

// ---- accelerate FSDP (accelerate/commands/config/cluster.py: fsdp_config and parallelism_config) ----

// FSDP's sharding: ZeRO-3 reshards after forward, ZeRO-2 keeps the weights gathered (FSDP2's
// reshard_after_forward = False, shard-grad-op); hybrid replicates across shard groups.
struct FsdpMesh {
  std::int64_t replicate = 1, shard = 1;
  bool reshard_after_forward = true;
};

FsdpMesh fsdp_mesh(const Config& c, Export& e, const char* engine) {
  const Parallel& p = c.parallel;
  FsdpMesh m;
  const std::int64_t data = data_parallel(c);
  if (p.zero_stage < 2) {
    fail(e, "parallel.zero_stage", std::string(engine) + " shards with FSDP: ZeRO-2 (shard-grad-op) or ZeRO-3; got " +
                                       str(p.zero_stage));
    return m;
  }
  m.reshard_after_forward = p.zero_stage == 3;
  if (p.zero_stage == 3 && p.reshard_after_forward == ReshardAfterForward::kNever) {
    fail(e, "parallel.reshard_after_forward",
         std::string(engine) + "'s reshard switch is written from parallel.zero_stage (3 reshards, 2 keeps the "
                               "weights gathered) and read back the same way: choose auto or always here");
  }
  // FSDP shards over data × context ranks (torchtitan's dp_shard_cp mesh); a hybrid group of
  // shard_degree of them holds shard_degree / context data ranks.
  const std::int64_t group = p.shard_degree > 0 ? p.shard_degree : data * p.context;
  if (group % p.context != 0) fail(e, "parallel.shard_degree", "must be a multiple of the context-parallel degree");
  m.shard = std::max<std::int64_t>(1, group / p.context);
  m.replicate = std::max<std::int64_t>(1, data / m.shard);
  return m;
}

// torchtitan's fsdp_reshard_after_forward: "default" keeps a pipeline stage gathered, as memfit's
// auto does under framework torchtitan; other frameworks' configurations reshard, so a pipeline
// gets "always". ZeRO-2 is "never".
const char* torchtitan_reshard_policy(const Config& c) {
  const Parallel& p = c.parallel;
  if (p.zero_stage == 2) return "never";
  if (keeps_units_gathered(c) || p.pipeline == 1) return "default";
  return "always";
}

bool fsdp_offload(const Config& c, Export& e, const char* engine) {
  const Parallel& p = c.parallel;
  if (p.offload_optimizer != p.offload_params) {
    fail(e, "parallel.offload_params", std::string(engine) + "'s CPU offload moves parameters, gradients and the "
                                                             "optimizer step together: set both offloads or neither");
  }
  return p.offload_params;
}

std::string yes(bool b) { return b ? "true" : "false"; }

// torchtitan and torchtune shard with FSDP2 only: an estimate made under FSDP1 (the Hugging Face
// stack's default, or parallel.fsdp_version 1) is of a slightly different run.
void note_fsdp2_only(const Config& c, Export& e, const char* engine) {
  if (c.parallel.zero_stage >= 2 && data_parallel(c) * c.parallel.context > 1 && !runs_fsdp2(c)) {
    e.notes.push_back(std::string(engine) + " shards with FSDP2 (fully_shard); this estimate modelled FSDP1: set "
                      "parallel.fsdp_version 2 to estimate the run this launches");
  }
}

Export accelerate_fsdp(const Config& c) {
  Export e;
  e.engine = Engine::kFsdp;
  e.filename = "fsdp.yaml";
  const Parallel& p = c.parallel;
  const Training& t = c.training;
  if (p.pipeline > 1 || p.expert > 1) fail(e, "parallel", "accelerate has no pipeline or expert parallelism; export to torchtitan or megatron");
  if (t.precision != Precision::kBf16Fsdp && t.precision != Precision::kFp32) {
    fail(e, "training.precision", "accelerate FSDP runs bf16_fsdp (mixed_precision: bf16) or fp32; got " +
                                      std::string(to_string(t.precision)));
  }
  if (t.checkpointing != Checkpointing::kNone && t.checkpointing != Checkpointing::kFull) {
    fail(e, "training.checkpointing", "accelerate's fsdp_activation_checkpointing checkpoints whole layers (full) or none");
  }
  if (partial_checkpointing(c)) {
    fail(e, "training.checkpointed_layers", "accelerate's fsdp_activation_checkpointing covers every layer: -1 (all)");
  }
  const FsdpMesh m = fsdp_mesh(c, e, "accelerate");
  const bool offload = fsdp_offload(c, e, "FSDP");
  const std::int64_t k = per_node(c);
  // The FSDP the estimate ran (parallel.fsdp_version): accelerate's fsdp_version 1 names a sharding
  // strategy in fsdp_reshard_after_forward and has no parallelism_config (ParallelismConfig wants
  // FSDP2: parallelism_config.py, _validate_accelerator); its hybrid strategies shard within a
  // node (FSDP1's intra-node process group).
  const bool fsdp2 = runs_fsdp2(c);
  std::string strategy;
  if (!fsdp2) {
    if (p.tensor > 1 || p.context > 1) {
      fail(e, "parallel.fsdp_version", "accelerate's tensor and context parallelism run over FSDP2 only: set "
                                       "parallel.fsdp_version 2");
    }
    if (m.replicate > 1 && m.shard != k) {
      fail(e, "parallel.shard_degree", "FSDP1's hybrid sharding shards within a node: " + str(k) +
                                           " GPUs (or set parallel.fsdp_version 2 for any degree)");
    }
    strategy = m.replicate > 1 ? (m.reshard_after_forward ? "HYBRID_SHARD" : "HYBRID_SHARD_ZERO2")
                               : (m.reshard_after_forward ? "FULL_SHARD" : "SHARD_GRAD_OP");
  }
  Text y;
  y << "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\n"
    << "mixed_precision: " << (t.precision == Precision::kBf16Fsdp ? "bf16" : "'no'") << "\n"
    << "num_machines: " << (p.num_gpus + k - 1) / k << "\nnum_processes: " << p.num_gpus << "\nmachine_rank: 0\n"
    << "main_process_port: 29500\nrdzv_backend: static\nsame_network: true\nuse_cpu: false\n"
    << "fsdp_config:\n  fsdp_version: " << (fsdp2 ? 2 : 1) << "\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
    << "  fsdp_reshard_after_forward: " << (fsdp2 ? yes(m.reshard_after_forward) : strategy) << "\n"
    << "  fsdp_offload_params: " << yes(offload) << "\n"
    << "  fsdp_activation_checkpointing: " << yes(t.checkpointing == Checkpointing::kFull) << "\n"
    << "  fsdp_cpu_ram_efficient_loading: true\n  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
  if (fsdp2) {
    y << "parallelism_config:\n  parallelism_config_dp_replicate_size: " << m.replicate
      << "\n  parallelism_config_dp_shard_size: " << m.shard << "\n  parallelism_config_tp_size: " << p.tensor
      << "\n  parallelism_config_cp_size: " << p.context << "\n";
  } else {
    // A vision tower's frozen outer pieces share the root unit with the trained embeddings: FSDP1
    // flattens them only with use_orig_params (validate.cpp advisories).
    const bool orig_params = p.fsdp_use_orig_params || (vision_root_frozen(c) && c.training.finetune.method == FinetuneMethod::kFull);
    if (orig_params && !p.fsdp_use_orig_params) {
      e.notes.push_back("fsdp_use_orig_params is written true (the configuration has it false): FSDP1 refuses a root "
                        "unit that mixes the vision tower's frozen pieces with the trained embeddings otherwise");
    }
    y << "  fsdp_sync_module_states: true\n  fsdp_use_orig_params: " << yes(orig_params) << "\n";
  }
  e.text = y.str();
  e.command = "accelerate launch --config_file fsdp.yaml" +
              std::string((p.num_gpus + k - 1) / k > 1 ? " --main_process_ip $MASTER_ADDR --machine_rank $NODE_RANK" : "") +
              " train.py --per_device_train_batch_size " + str(t.micro_batch_size) + " --gradient_accumulation_steps " +
              str(t.grad_accum_steps);
  e.notes.push_back("train.py is your Hugging Face Trainer script; on each node set --machine_rank");
  if (t.grad_accum_steps > 1 && p.gradient_sync == GradientSync::kEveryMicroBatch) {
    e.notes.push_back("parallel.gradient_sync every_micro_batch: build the Accelerator with "
                      "GradientAccumulationPlugin(num_steps=" + str(t.grad_accum_steps) +
                      ", sync_each_batch=True) in train.py; the config file cannot say it");
  }
  if (t.finetune.method == FinetuneMethod::kLora) e.notes.push_back(lora_note);
  return e;
}

// ---- torchtitan (torchtitan/config/job_config.py: [training], [parallelism], [activation_checkpoint]) ----

// torchtitan's model flavours for the presets that have one (torchtitan/models/llama3).
const char* torchtitan_flavor(const std::string& preset) {
  static const std::map<std::string, const char*> flavors = {
      {"llama-3-8b", "8B"}, {"llama-3.1-8b", "8B"}, {"llama-3-70b", "70B"}, {"llama-3.1-70b", "70B"}};
  const auto it = flavors.find(preset);
  return it == flavors.end() ? nullptr : it->second;
}

std::string torchtitan_checkpointing(const Config& c, Export& e) {
  switch (c.training.checkpointing) {
    case Checkpointing::kNone: return "mode = \"none\"\n";
    case Checkpointing::kFull:
      if (!partial_checkpointing(c)) return "mode = \"full\"\n";
      // Layer-level selective checkpointing: every k-th block (torchtitan's apply_ac, ac_freq).
      if (const std::int64_t k = every_kth_block(c)) return "mode = \"selective\"\nselective_ac_option = \"" + str(k) + "\"\n";
      fail(e, "training.checkpointed_layers", "torchtitan checkpoints every k-th block (layers / k of them) or all of them");
      return "mode = \"full\"\n";
    case Checkpointing::kSelectiveOp: return "mode = \"selective\"\nselective_ac_option = \"op\"\n";
    case Checkpointing::kSelective: break;
  }
  fail(e, "training.checkpointing", "torchtitan's selective checkpointing is op-level (selective_op), not Megatron's "
                                    "attention-core recomputation");
  return "mode = \"none\"\n";
}

// torchtitan's [parallelism]: FSDP2 (ZeRO-2/3, hybrid via replicate × shard) or DDP (replicate
// only, ZeRO-0, with autocast for bf16); TP, PP (1F1B, or interleaved with layers per stage), CP, EP.
std::string torchtitan_parallelism(const Config& c, Export& e) {
  const Parallel& p = c.parallel;
  FsdpMesh m;
  if (p.zero_stage == 0) {
    m.replicate = data_parallel(c);
  } else {
    m = fsdp_mesh(c, e, "torchtitan");
  }
  Text t;
  t << "[parallelism]\ndata_parallel_replicate_degree = " << m.replicate
    << "\ndata_parallel_shard_degree = " << m.shard
    << "\nfsdp_reshard_after_forward = \"" << torchtitan_reshard_policy(c) << "\""
    << "\ntensor_parallel_degree = " << p.tensor << "\ncontext_parallel_degree = " << p.context
    << "\nexpert_parallel_degree = " << p.expert << "\npipeline_parallel_degree = " << p.pipeline << "\n";
  if (p.async_tp && p.tensor > 1) t << "enable_async_tensor_parallel = true\n";
  if (p.pipeline > 1) {
    t << "pipeline_parallel_schedule = \"" << (p.virtual_stages > 1 ? "Interleaved1F1B" : "1F1B") << "\"\n"
      << "pipeline_parallel_microbatch_size = " << c.training.micro_batch_size << "\n";
    if (p.virtual_stages > 1) {
      t << "pipeline_parallel_layers_per_stage = " << c.model.num_hidden_layers / (p.pipeline * p.virtual_stages) << "\n";
    }
  }
  return t.str();
}

Export torchtitan(const Config& c) {
  Export e;
  e.engine = Engine::kTorchtitan;
  e.filename = "memfit.toml";
  const Parallel& p = c.parallel;
  const Training& t = c.training;
  const bool fsdp = p.zero_stage > 0;
  if (t.precision != Precision::kFp32 && t.precision != (fsdp ? Precision::kBf16Fsdp : Precision::kBf16Mixed)) {
    fail(e, "training.precision", fsdp ? "torchtitan with FSDP runs bf16_fsdp (mixed_precision_param bfloat16) or fp32"
                                       : "torchtitan with DDP runs bf16_mixed (autocast) or fp32");
  }
  if (t.finetune.method == FinetuneMethod::kLora) fail(e, "training.finetune.method", "torchtitan trains every weight (no LoRA); export LoRA runs to torchtune");
  if (p.offload_optimizer && !fsdp) fail(e, "parallel.offload_optimizer", "torchtitan offloads with FSDP only");
  const bool offload = fsdp_offload(c, e, "torchtitan");
  // With a pipeline, torchtitan splits each rank's local batch into micro-batches; without one it
  // accumulates local batches up to the global batch.
  const std::int64_t local = p.pipeline > 1 ? t.micro_batch_size * t.grad_accum_steps : t.micro_batch_size;
  Text toml;
  const char* flavor = torchtitan_flavor(c.model.preset);
  // torchtitan builds its own model definitions: Llama 3's flavours are named; any other
  // architecture (a mixture of experts above all) is left for the user to name.
  toml << "[job]\ndump_folder = \"./outputs\"\n\n[model]\nname = \"" << (flavor ? "llama3" : "set-me")
       << "\"\nflavor = \"" << (flavor ? flavor : "set-me") << "\"\n\n[training]\nlocal_batch_size = " << local
       << "\nglobal_batch_size = " << global_batch(c) << "\nseq_len = " << t.seq_len
       << "\nmixed_precision_param = \"" << (t.precision == Precision::kFp32 ? "float32" : "bfloat16") << "\""
       << "\nmixed_precision_reduce = \"float32\"\nenable_cpu_offload = " << yes(offload) << "\n\n"
       << torchtitan_parallelism(c, e) << "\n[activation_checkpoint]\n" << torchtitan_checkpointing(c, e);
  if (t.implementation.compile == Switch::kYes) toml << "\n[compile]\nenable = true\n";
  e.text = toml.str();
  e.command = torchrun(c, "-m torchtitan.train --job.config_file memfit.toml");
  if (!flavor) e.notes.push_back("set [model] name and flavor to torchtitan's model for this architecture");
  note_fsdp2_only(c, e, "torchtitan");
  e.notes.push_back("add [training] dataset and steps, and [model] hf_assets_path for the tokenizer");
  return e;
}

// ---- Megatron-LM (megatron/training/arguments.py) ----

std::string megatron_model_args(const ModelSpec& m) {
  std::string a = " --num-layers " + str(m.num_hidden_layers) + " --hidden-size " + str(m.hidden_size) +
                  " --ffn-hidden-size " + str(m.num_experts > 0 && m.first_k_dense_replace == 0 ? m.moe_intermediate_size
                                                                                                 : m.intermediate_size) +
                  " --num-attention-heads " + str(m.num_attention_heads) + " --kv-channels " + str(m.head_size());
  if (m.kv_heads() != m.num_attention_heads) a += " --group-query-attention --num-query-groups " + str(m.kv_heads());
  a += m.norm == NormKind::kRmsNorm ? " --normalization RMSNorm" : " --normalization LayerNorm";
  if (m.mlp == MlpKind::kGated) a += " --swiglu";
  else if (m.hidden_act == HiddenAct::kRelu2) a += " --squared-relu";  // Nemotron-4's MLP
  // Norm weights stored around zero and applied as 1 + w: Nemotron's LayerNorm1P, Gemma's
  // zero-centred RMSNorm (megatron/training/arguments.py --apply-layernorm-1p, the norms'
  // zero_centered_gamma; Megatron-LM's Nemotron recipes pass it). (Qwen3.5's, the same, is not
  // exported: Megatron has no Gated DeltaNet here.)
  static constexpr std::string_view kOnePlus[] = {"nemotron", "gemma", "gemma2", "gemma3_text"};
  for (std::string_view t : kOnePlus) {
    if (m.model_type == t) a += " --apply-layernorm-1p";
  }
  a += m.position_embedding == PositionKind::kRotary ? " --position-embedding-type rope"
                                                     : " --position-embedding-type learned_absolute";
  // GLM-4's and ERNIE 4.5's rotary pairs neighbouring dimensions (cos and sin repeat-interleaved);
  // GLM-4's and Nemotron's rotate part of each head, where rotary_dim says so.
  if (m.position_embedding == PositionKind::kRotary && m.rotary_per_layer) a += " --rotary-interleaved";
  if (m.position_embedding == PositionKind::kRotary && m.rotary_dim > 0 && m.rotary_dim < m.head_size()) {
    char percent[32];
    std::snprintf(percent, sizeof percent, "%g", static_cast<double>(m.rotary_dim) / static_cast<double>(m.head_size()));
    a += std::string(" --rotary-percent ") + percent;
  }
  a += " --max-position-embeddings " + str(m.max_position_embeddings);
  if (!m.tie_word_embeddings) a += " --untie-embeddings-and-output-weights";
  if (!m.attention_bias && !m.mlp_bias) a += " --disable-bias-linear";
  if (m.qkv_bias) a += " --add-qkv-bias";
  if (m.num_experts > 0) {
    // All-to-all token dispatch, as memfit's step time assumes (Megatron's default is allgather).
    a += " --num-experts " + str(m.num_experts) + " --moe-router-topk " + str(m.num_experts_per_tok) +
         " --moe-ffn-hidden-size " + str(m.moe_intermediate_size) + " --moe-token-dispatcher-type alltoall";
  }
  return a + " --vocab-size " + str(m.vocab_size) + " --make-vocab-size-divisible-by 1";
}

std::string megatron_precision(Precision p, Export& e) {
  switch (p) {
    case Precision::kBf16Master: return " --bf16";
    case Precision::kFp16Master: return " --fp16";
    case Precision::kFp8Mixed: return " --bf16 --fp8-format hybrid";
    default:
      fail(e, "training.precision", "Megatron-LM runs bf16_master (--bf16), fp16_master (--fp16) or fp8_mixed "
                                    "(--fp8-format hybrid); got " + std::string(to_string(p)));
      return "";
  }
}

// ZeRO in Megatron: the distributed optimizer (stage 1); Megatron FSDP's sharding strategies
// optim_grads (stage 2) and optim_grads_params (stage 3).
std::string megatron_sharding(const Parallel& p, Export& e) {
  std::string a;
  if (p.zero_stage == 1) a = " --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather";
  if (p.zero_stage >= 2) {
    // The Megatron-FSDP user guide's required flags; megatron/training/arguments.py asserts the
    // fsdp_dtensor checkpoint format under --use-megatron-fsdp (the default is torch_dist).
    a = std::string(" --use-megatron-fsdp --data-parallel-sharding-strategy ") +
        (p.zero_stage == 2 ? "optim_grads" : "optim_grads_params") +
        " --no-gradient-accumulation-fusion --use-distributed-optimizer --ckpt-format fsdp_dtensor";
  }
  if (p.shard_degree > 0) fail(e, "parallel.shard_degree", "memfit exports Megatron-LM's full sharding only");
  if (p.offload_params) fail(e, "parallel.offload_params", "Megatron-LM offloads optimizer states, not parameters");
  if (p.offload_optimizer) {
    if (p.zero_stage != 1) fail(e, "parallel.offload_optimizer", "Megatron-LM offloads the distributed optimizer (ZeRO-1)");
    a += " --optimizer-cpu-offload";
  }
  return a;
}

std::string megatron_recompute(const Config& config, Export& e) {
  const Checkpointing c = config.training.checkpointing;
  switch (c) {
    case Checkpointing::kNone: return "";
    case Checkpointing::kFull:
      if (partial_checkpointing(config)) {
        // --recompute-method block: the first N blocks of each pipeline stage.
        const std::int64_t n = config.training.recomputed_layers(config.model.num_hidden_layers);
        if (n % config.parallel.pipeline == 0) {
          return " --recompute-granularity full --recompute-method block --recompute-num-layers " + str(n / config.parallel.pipeline);
        }
        fail(e, "training.checkpointed_layers", "Megatron-LM's block method checkpoints the same number of blocks on "
                                                "every pipeline stage: a multiple of parallel.pipeline");
      }
      return " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
    case Checkpointing::kSelective: return " --recompute-granularity selective";
    case Checkpointing::kSelectiveOp: break;
  }
  fail(e, "training.checkpointing", "Megatron-LM recomputes full layers or the attention core (selective), not "
                                    "torchtitan's op-level policy");
  return "";
}

Export megatron(const Config& c) {
  Export e;
  e.engine = Engine::kMegatron;
  const Parallel& p = c.parallel;
  const Training& t = c.training;
  if (t.finetune.method == FinetuneMethod::kLora) fail(e, "training.finetune.method", "pretrain_gpt.py trains every weight; export LoRA runs to torchtune");
  std::string a = "pretrain_gpt.py" + megatron_model_args(c.model) + " --seq-length " + str(t.seq_len) +
                  " --tensor-model-parallel-size " + str(p.tensor) + " --pipeline-model-parallel-size " +
                  str(p.pipeline) + " --context-parallel-size " + str(p.context) + " --expert-model-parallel-size " +
                  str(p.expert);
  if (p.virtual_stages > 1) {
    a += " --num-layers-per-virtual-pipeline-stage " + str(c.model.num_hidden_layers / (p.pipeline * p.virtual_stages));
  }
  if (p.sequence_parallel) a += " --sequence-parallel";
  a += " --micro-batch-size " + str(t.micro_batch_size) + " --global-batch-size " + str(global_batch(c));
  a += megatron_precision(t.precision, e) + megatron_sharding(p, e) + megatron_recompute(c, e);
  // megatron/training/arguments.py (validate_args) asserts CUDA_DEVICE_MAX_CONNECTIONS=1 under
  // tensor or context parallelism on GPUs before Blackwell, except with Megatron-FSDP, which wants
  // it unset (the Megatron-FSDP user guide).
  const bool one_connection = (p.tensor > 1 || p.context > 1) && p.zero_stage < 2;
  e.command = (one_connection ? "CUDA_DEVICE_MAX_CONNECTIONS=1 " : "") + torchrun(c, a);
  e.notes.push_back("add the data and tokenizer flags (--data-path, --tokenizer-type ...); the padded vocabulary "
                    "must stay " + str(c.model.vocab_size));
  if (c.model.position_embedding == PositionKind::kRotary) {
    e.notes.push_back("add --rotary-base <the model's rope_theta> (the default is 10000)");
  }
  if (c.model.norms_per_block == 4) {
    e.notes.push_back("Megatron-LM's GPT layer has two norms a block: this model's norms after the attention and "
                      "after the MLP (Gemma 2, GLM-4-0414) are not in it");
  }
  if (c.model.hidden_act == HiddenAct::kXielu) {
    e.notes.push_back("Megatron-LM has no xIELU activation: the MLP runs as GELU, whose saved tensors are fewer");
  }
  if (!c.model.norm_weight) {
    e.notes.push_back("Megatron-LM's LayerNorm has a weight and a bias: OLMo-1's norms without them are not in it");
  }
  e.notes.push_back("to fine-tune: --load <the converted checkpoint> --finetune");
  if (p.zero_stage >= 2 && p.pipeline > 1) {
    e.notes.push_back("Megatron-FSDP's guide names TP, CP and EP as compatible, not pipeline stages");
  }
  return e;
}

// ---- torchtune (recipes/full_finetune_distributed.py, lora_finetune_distributed.py, configs) ----

std::string torchtune_lora(const Finetune& f, Export& e) {
  std::string modules;
  const std::pair<unsigned, const char*> attention[] = {{kLoraQ, "q_proj"}, {kLoraK, "k_proj"}, {kLoraV, "v_proj"},
                                                        {kLoraO, "output_proj"}};
  for (const auto& [bit, name] : attention) {
    if (f.lora_targets & bit) modules += std::string(modules.empty() ? "" : ",") + name;
  }
  const unsigned mlp = f.lora_targets & (kLoraGate | kLoraUp | kLoraDown);
  if (mlp != 0 && mlp != (kLoraGate | kLoraUp | kLoraDown)) {
    fail(e, "training.finetune.lora_targets", "torchtune adapts the whole MLP (gate, up and down) or none of it");
  }
  if (f.base_bits == 8) fail(e, "training.finetune.base_bits", "torchtune has no int8 base (QLoRA is 4-bit)");
  return " model.lora_rank=" + str(f.lora_rank) + " model.lora_attn_modules=[" + modules + "]" +
         " model.apply_lora_to_mlp=" + (mlp ? "True" : "False") +
         " model.apply_lora_to_output=" + ((f.lora_targets & kLoraHead) ? "True" : "False");
}

std::string torchtune_checkpointing(const Config& config, Export& e) {
  const Checkpointing c = config.training.checkpointing;
  if (partial_checkpointing(config)) {
    fail(e, "training.checkpointed_layers", "torchtune's recipes checkpoint every layer: -1 (all)");
  }
  switch (c) {
    case Checkpointing::kNone: return " enable_activation_checkpointing=False";
    case Checkpointing::kFull: return " enable_activation_checkpointing=True";
    case Checkpointing::kSelectiveOp: return " enable_activation_checkpointing=True ac_mode=selective ac_option=op";
    case Checkpointing::kSelective: break;
  }
  fail(e, "training.checkpointing", "torchtune checkpoints full layers or op-level (selective_op), not Megatron's "
                                    "attention core");
  return "";
}

Export torchtune(const Config& c) {
  Export e;
  e.engine = Engine::kTorchtune;
  const Parallel& p = c.parallel;
  const Training& t = c.training;
  if (p.pipeline > 1 || p.expert > 1) fail(e, "parallel", "torchtune's recipes have no pipeline or expert parallelism");
  if (t.precision != Precision::kBf16 && t.precision != Precision::kFp32) {
    fail(e, "training.precision", "torchtune trains in pure bf16 (dtype=bf16) or fp32");
  }
  const bool lora = t.finetune.method == FinetuneMethod::kLora;
  const bool qlora = lora && t.finetune.base_bits == 4;
  // One GPU without sharding: the single-device recipes and their configs (recipes/
  // lora_finetune_single_device.py, full_finetune_single_device.py; configs *_single_device.yaml),
  // which take no FSDP or parallel dimensions.
  const bool single = p.num_gpus == 1 && p.zero_stage == 0 && p.tensor == 1 && p.context == 1;
  const std::string recipe = std::string(lora ? "lora_finetune_" : "full_finetune_") + (single ? "single_device" : "distributed");
  const std::string config = std::string("<model>/<size>_") + (qlora ? "qlora" : lora ? "lora" : "full") + (single ? "_single_device" : "");
  const std::string common = " batch_size=" + str(t.micro_batch_size) + " gradient_accumulation_steps=" +
                             str(t.grad_accum_steps) + " tokenizer.max_seq_len=" + str(t.seq_len) +
                             " dtype=" + (t.precision == Precision::kFp32 ? "fp32" : "bf16");
  std::string a;
  if (single) {
    if (p.offload_optimizer || p.offload_params) {
      fail(e, p.offload_optimizer ? "parallel.offload_optimizer" : "parallel.offload_params",
           "torchtune offloads through FSDP (its distributed recipes): set parallel.zero_stage 3");
    }
    // Refusals of the single-device recipes are about the layout (one GPU, no sharding): the
    // distributed recipes take these settings.
    if (lora && t.optimizer_in_backward) fail(e, "parallel.num_gpus", "torchtune's single-device LoRA recipe has no optimizer_in_bwd: use its distributed recipe (ZeRO-2 or 3)");
    if (t.checkpointing == Checkpointing::kSelectiveOp) {
      fail(e, "training.checkpointing", "torchtune's single-device recipes checkpoint whole layers (enable_activation_checkpointing): full or none");
    }
    a = "tune run " + recipe + " --config " + config + common +
        (lora ? "" : std::string(" optimizer_in_bwd=") + (t.optimizer_in_backward ? "True" : "False")) + torchtune_checkpointing(c, e);
  } else {
    FsdpMesh m;
    if (p.num_gpus / (p.tensor * p.context) > 1 || p.zero_stage > 0) m = fsdp_mesh(c, e, "torchtune");
    const bool offload = fsdp_offload(c, e, "torchtune");
    const std::int64_t k = per_node(c), nodes = (p.num_gpus + k - 1) / k;
    a = "tune run --nnodes " + str(nodes) + " --nproc_per_node " + str(k) + " " + recipe + " --config " + config + common +
        " fsdp_cpu_offload=" + (offload ? "True" : "False") + " fsdp_reshard_after_forward=" +
        (m.reshard_after_forward ? "True" : "False") + " data_parallel_shard_dim=" + str(m.shard) +
        " data_parallel_replicate_dim=" + str(m.replicate) + " tensor_parallel_dim=" + str(p.tensor) +
        " context_parallel_dim=" + str(p.context) + " optimizer_in_bwd=" +
        (t.optimizer_in_backward ? "True" : "False") + torchtune_checkpointing(c, e);
  }
  if (lora) a += torchtune_lora(t.finetune, e);
  e.command = a;
  e.notes.push_back("replace <model>/<size> with torchtune's config for the model (tune ls)");
  note_fsdp2_only(c, e, "torchtune");
  return e;
}

// ---- Reading exports back ----

// The words of a command line ("\" line continuations dropped).
std::vector<std::string> words_of(std::string_view command) {
  std::vector<std::string> out;
  std::string w;
  for (char c : command) {
    if (c != ' ' && c != '\n' && c != '\t') {
      w += c;
    } else if (!w.empty()) {
      if (w != "\\") out.push_back(w);
      w.clear();
    }
  }
  if (!w.empty() && w != "\\") out.push_back(w);
  return out;
}

// "--flag value", "--flag=value" or "key=value" (torchtune overrides); "" when absent.
std::string value_of(const std::vector<std::string>& words, const std::string& key) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] == key && i + 1 < words.size()) return words[i + 1];
    if (words[i].rfind(key + "=", 0) == 0) return words[i].substr(key.size() + 1);
  }
  return "";
}

bool has_word(const std::vector<std::string>& words, const std::string& key) {
  return std::find(words.begin(), words.end(), key) != words.end();
}

std::int64_t integer_of(const std::string& text, std::int64_t fallback) {
  if (text.empty()) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  return end && *end == '\0' ? v : fallback;
}

// The processes a launcher starts: torchrun's / tune run's --nnodes × --nproc_per_node.
std::int64_t world_size(const std::vector<std::string>& words) {
  return integer_of(value_of(words, "--nnodes"), 1) * integer_of(value_of(words, "--nproc_per_node"), 1);
}

// "key: value" lines nested by two spaces (YAML as accelerate writes it), or "[section]" and
// "key = value" lines (TOML as torchtitan reads it): path → value, quotes removed.
std::map<std::string, std::string> read_settings(std::string_view text, bool toml) {
  std::map<std::string, std::string> out;
  std::string section;
  for (const std::string& line : lines_of(text)) {
    if (line.empty() || line[0] == '#') continue;
    if (toml && line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const std::size_t sep = line.find(toml ? '=' : ':');
    if (sep == std::string::npos) continue;
    const bool nested = !toml && line[0] == ' ';
    auto trim = [](std::string v) {
      v.erase(0, v.find_first_not_of(" \"'"));
      v.erase(v.find_last_not_of(" \"'") + 1);
      return v;
    };
    const std::string key = trim(line.substr(0, sep)), value = trim(line.substr(sep + 1));
    if (!toml && !nested) section = value.empty() ? key : "";
    out[(toml || nested) && !section.empty() ? section + "." + key : key] = value;
  }
  return out;
}

void read_deepspeed(const Json& ds, const std::vector<std::string>& cmd, Config& c) {
  const auto get = [&](const char* key) { return ds.find(key) ? ds.find(key)->as_exact_integer().value_or(0) : 0; };
  c.training.micro_batch_size = get("train_micro_batch_size_per_gpu");
  c.training.grad_accum_steps = get("gradient_accumulation_steps");
  const auto enabled = [&](const char* key) {
    const Json* b = ds.find(key);
    return b && b->find("enabled") && b->find("enabled")->as_bool();
  };
  if (enabled("bf16")) c.training.precision = Precision::kBf16Master;
  else if (enabled("fp16")) c.training.precision = Precision::kFp16Master;
  else if (enabled("torch_autocast")) {
    const Json* dtype = ds.find("torch_autocast")->find("dtype");
    c.training.precision = dtype && dtype->as_string() == "float16" ? Precision::kFp16Mixed : Precision::kBf16Mixed;
  } else {
    c.training.precision = Precision::kFp32;
  }
  const Json* zero = ds.find("zero_optimization");
  Parallel& p = c.parallel;
  p = Parallel{};
  p.num_gpus = world_size(cmd);
  if (zero) {
    p.zero_stage = zero->find("stage") ? zero->find("stage")->as_exact_integer().value_or(0) : 0;
    const auto on_cpu = [&](const char* key) {
      const Json* o = zero->find(key);
      return o && o->find("device") && o->find("device")->as_string() == "cpu";
    };
    p.offload_optimizer = on_cpu("offload_optimizer");
    p.offload_params = on_cpu("offload_param");
    if (const Json* mics = zero->find("mics_shard_size")) p.shard_degree = mics->as_exact_integer().value_or(0);
    // Sizes in elements: DeepSpeed reads 5e8 as well as 500000000. Hugging Face fills a
    // reduce_bucket_size of "auto" with the hidden size squared (integrations/deepspeed.py,
    // trainer_config_finalize).
    const auto elements = [&](const char* key, bool hidden_squared_auto = false) -> std::int64_t {
      const Json* v = zero->find(key);
      if (!v) return -1;
      if (v->is_string()) {
        return hidden_squared_auto && v->as_string() == "auto" && c.model.hidden_size > 0
                   ? c.model.hidden_size * c.model.hidden_size
                   : -1;
      }
      if (!v->is_number()) return -1;
      if (const auto exact = v->as_exact_integer()) return *exact >= 0 ? *exact : -1;
      const double d = v->as_double();
      return d >= 0.0 && d < 9.0e18 ? static_cast<std::int64_t>(d) : -1;
    };
    if (const std::int64_t n = elements("reduce_bucket_size", true); n >= 0) p.reduce_bucket_elements = n;
    if (const std::int64_t n = elements("sub_group_size"); n >= 1) p.zero_sub_group_size = n;
    if (const std::int64_t n = elements("stage3_max_reuse_distance"); n >= 0) p.zero3_max_reuse_distance = n;
    // overlap_comm doubles ZeRO-2's buckets; memfit's switch is ZeRO-2's (ZeRO-3 always overlaps).
    if (const Json* overlap = zero->find("overlap_comm"); overlap && p.zero_stage == 2) {
      p.overlap_comm = overlap->is_bool() && overlap->as_bool();
    }
    if (const Json* hpz = zero->find("zero_hpz_partition_size")) {
      p.zero_hpz_partition_size = std::max<std::int64_t>(1, hpz->as_exact_integer().value_or(1));
    }
    if (const Json* qwz = zero->find("zero_quantized_weights")) p.zero_quantized_weights = qwz->is_bool() && qwz->as_bool();
    if (const Json* qgz = zero->find("zero_quantized_gradients")) p.zero_quantized_gradients = qgz->is_bool() && qgz->as_bool();
    // ZeRO++ is the DeepSpeed engine's: a configuration that uses it runs under it.
    if (p.zero_hpz_partition_size > 1 || p.zero_quantized_weights || p.zero_quantized_gradients) {
      c.training.implementation.framework = Framework::kDeepspeed;
    }
  }
  c.training.checkpointing = value_of(cmd, "--gradient_checkpointing") == "true" ? Checkpointing::kFull : Checkpointing::kNone;
  c.training.checkpointed_layers = -1;  // every layer
}

// An FSDP mesh read back: replicate × shard data ranks (× context), resharding or not.
void set_fsdp(Config& c, std::int64_t replicate, std::int64_t shard, bool reshard, bool offload) {
  Parallel& p = c.parallel;
  p.zero_stage = reshard ? 3 : 2;
  p.shard_degree = replicate > 1 ? shard * p.context : 0;
  p.offload_optimizer = p.offload_params = offload;
}

void read_accelerate(const std::map<std::string, std::string>& y, const std::vector<std::string>& cmd, Config& c) {
  const auto get = [&](const std::string& key) {
    const auto it = y.find(key);
    return it == y.end() ? std::string() : it->second;
  };
  Parallel& p = c.parallel;
  p = Parallel{};
  p.num_gpus = integer_of(get("num_processes"), 1);
  const bool offload = get("fsdp_config.fsdp_offload_params") == "true";
  // accelerate's default is FSDP1 (FullyShardedDataParallelPlugin.fsdp_version, FSDP_VERSION "1").
  const bool fsdp2 = integer_of(get("fsdp_config.fsdp_version"), 1) == 2;
  if (fsdp2) {
    p.tensor = integer_of(get("parallelism_config.parallelism_config_tp_size"), 1);
    p.context = integer_of(get("parallelism_config.parallelism_config_cp_size"), 1);
    p.sequence_parallel = p.tensor > 1;
    set_fsdp(c, integer_of(get("parallelism_config.parallelism_config_dp_replicate_size"), 1),
             integer_of(get("parallelism_config.parallelism_config_dp_shard_size"), 1),
             get("fsdp_config.fsdp_reshard_after_forward") == "true", offload);
  } else {
    // FSDP1's strategy (fsdp_sharding_strategy in configs written before accelerate 1.x, by name or
    // by ShardingStrategy's number); the hybrid ones shard within a node.
    std::string strategy = get("fsdp_config.fsdp_reshard_after_forward");
    if (strategy.empty()) strategy = get("fsdp_config.fsdp_sharding_strategy");
    static const char* const kStrategies[] = {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                                              "HYBRID_SHARD_ZERO2"};
    if (strategy.size() == 1 && strategy[0] >= '1' && strategy[0] <= '5') strategy = kStrategies[strategy[0] - '1'];
    const bool hybrid = strategy.rfind("HYBRID_SHARD", 0) == 0;
    const std::int64_t k = per_node(c);
    set_fsdp(c, hybrid ? std::max<std::int64_t>(1, p.num_gpus / k) : 1, hybrid ? k : p.num_gpus,
             strategy == "FULL_SHARD" || strategy == "HYBRID_SHARD" || strategy.empty(), offload);
    if (strategy == "NO_SHARD") p.zero_stage = 0;
    p.fsdp_use_orig_params = p.zero_stage >= 2 && get("fsdp_config.fsdp_use_orig_params") == "true";
  }
  // Written as auto where that is the framework's own FSDP.
  if (fsdp2 != runs_fsdp2(c)) p.fsdp_version = fsdp2 ? FsdpVersion::kTwo : FsdpVersion::kOne;
  c.training.precision = get("mixed_precision") == "bf16" ? Precision::kBf16Fsdp : Precision::kFp32;
  c.training.checkpointing =
      get("fsdp_config.fsdp_activation_checkpointing") == "true" ? Checkpointing::kFull : Checkpointing::kNone;
  c.training.checkpointed_layers = -1;  // every layer
  c.training.micro_batch_size = integer_of(value_of(cmd, "--per_device_train_batch_size"), 1);
  c.training.grad_accum_steps = integer_of(value_of(cmd, "--gradient_accumulation_steps"), 1);
}

void read_torchtitan(const std::map<std::string, std::string>& t, const std::vector<std::string>& cmd, Config& c) {
  const auto get = [&](const std::string& key) {
    const auto it = t.find(key);
    return it == t.end() ? std::string() : it->second;
  };
  Parallel& p = c.parallel;
  p = Parallel{};
  p.num_gpus = world_size(cmd);
  p.tensor = integer_of(get("parallelism.tensor_parallel_degree"), 1);
  p.context = integer_of(get("parallelism.context_parallel_degree"), 1);
  p.expert = integer_of(get("parallelism.expert_parallel_degree"), 1);
  p.pipeline = integer_of(get("parallelism.pipeline_parallel_degree"), 1);
  p.sequence_parallel = p.tensor > 1;
  p.async_tp = p.tensor > 1 && get("parallelism.enable_async_tensor_parallel") == "true";
  if (get("compile.enable") == "true") c.training.implementation.compile = Switch::kYes;
  const std::int64_t replicate = integer_of(get("parallelism.data_parallel_replicate_degree"), 1);
  const std::int64_t shard = integer_of(get("parallelism.data_parallel_shard_degree"), 1);
  const bool bf16 = get("training.mixed_precision_param") == "bfloat16";
  // torchtitan applies FSDP whenever the data-shard × context mesh has more than one rank.
  if (shard * p.context > 1) {
    set_fsdp(c, replicate, shard, get("parallelism.fsdp_reshard_after_forward") != "never",
             get("training.enable_cpu_offload") == "true");
    // "always" differs from auto only where auto keeps the units gathered.
    if (get("parallelism.fsdp_reshard_after_forward") == "always" && keeps_units_gathered(c)) {
      p.reshard_after_forward = ReshardAfterForward::kAlways;
    }
    c.training.precision = bf16 ? Precision::kBf16Fsdp : Precision::kFp32;
  } else {
    c.training.precision = bf16 ? Precision::kBf16Mixed : Precision::kFp32;
  }
  const std::int64_t local = integer_of(get("training.local_batch_size"), 1);
  if (p.pipeline > 1) {
    c.training.micro_batch_size = integer_of(get("parallelism.pipeline_parallel_microbatch_size"), 1);
    c.training.grad_accum_steps = local / std::max<std::int64_t>(1, c.training.micro_batch_size);
    const std::int64_t per_stage = integer_of(get("parallelism.pipeline_parallel_layers_per_stage"), 0);
    if (per_stage > 0) p.virtual_stages = c.model.num_hidden_layers / (p.pipeline * per_stage);
  } else {
    c.training.micro_batch_size = local;
    c.training.grad_accum_steps = integer_of(get("training.global_batch_size"), local) / std::max<std::int64_t>(1, local * data_parallel(c));
  }
  c.training.seq_len = integer_of(get("training.seq_len"), c.training.seq_len);
  const std::string mode = get("activation_checkpoint.mode");
  const std::int64_t every = integer_of(get("activation_checkpoint.selective_ac_option"), 0);
  c.training.checkpointing = mode == "full"        ? Checkpointing::kFull
                             : mode == "selective" ? (every > 0 ? Checkpointing::kFull : Checkpointing::kSelectiveOp)
                                                   : Checkpointing::kNone;
  c.training.checkpointed_layers = mode == "selective" && every > 0 ? c.model.num_hidden_layers / every : -1;
}

void read_megatron(const std::vector<std::string>& a, Config& c) {
  Parallel& p = c.parallel;
  p = Parallel{};
  p.num_gpus = world_size(a);
  p.tensor = integer_of(value_of(a, "--tensor-model-parallel-size"), 1);
  p.pipeline = integer_of(value_of(a, "--pipeline-model-parallel-size"), 1);
  p.context = integer_of(value_of(a, "--context-parallel-size"), 1);
  p.expert = integer_of(value_of(a, "--expert-model-parallel-size"), 1);
  p.sequence_parallel = has_word(a, "--sequence-parallel");
  const std::int64_t per_stage = integer_of(value_of(a, "--num-layers-per-virtual-pipeline-stage"), 0);
  if (per_stage > 0) p.virtual_stages = integer_of(value_of(a, "--num-layers"), 0) / (p.pipeline * per_stage);
  if (has_word(a, "--use-distributed-optimizer")) p.zero_stage = 1;
  const std::string strategy = value_of(a, "--data-parallel-sharding-strategy");
  if (strategy == "optim_grads") p.zero_stage = 2;
  if (strategy == "optim_grads_params") p.zero_stage = 3;
  p.offload_optimizer = has_word(a, "--optimizer-cpu-offload");
  Training& t = c.training;
  t.seq_len = integer_of(value_of(a, "--seq-length"), t.seq_len);
  t.micro_batch_size = integer_of(value_of(a, "--micro-batch-size"), 1);
  t.grad_accum_steps = integer_of(value_of(a, "--global-batch-size"), 1) / (t.micro_batch_size * data_parallel(c));
  t.precision = has_word(a, "--fp8-format") ? Precision::kFp8Mixed
                : has_word(a, "--fp16")     ? Precision::kFp16Master
                                            : Precision::kBf16Master;
  const std::string recompute = value_of(a, "--recompute-granularity");
  t.checkpointing = recompute == "full"        ? Checkpointing::kFull
                    : recompute == "selective" ? Checkpointing::kSelective
                                               : Checkpointing::kNone;
  t.checkpointed_layers = recompute == "full" && value_of(a, "--recompute-method") == "block"
                              ? integer_of(value_of(a, "--recompute-num-layers"), 1) * p.pipeline
                              : -1;
}

void read_torchtune_lora(const std::vector<std::string>& a, Config& c) {
  Finetune& f = c.training.finetune;
  f.method = FinetuneMethod::kLora;
  f.lora_rank = integer_of(value_of(a, "model.lora_rank"), f.lora_rank);
  const std::string modules = value_of(a, "model.lora_attn_modules");
  unsigned targets = 0;
  const std::pair<unsigned, const char*> names[] = {{kLoraQ, "q_proj"}, {kLoraK, "k_proj"}, {kLoraV, "v_proj"},
                                                    {kLoraO, "output_proj"}};
  for (const auto& [bit, name] : names) {
    if (modules.find(name) != std::string::npos) targets |= bit;
  }
  if (value_of(a, "model.apply_lora_to_mlp") == "True") targets |= kLoraGate | kLoraUp | kLoraDown;
  if (value_of(a, "model.apply_lora_to_output") == "True") targets |= kLoraHead;
  f.lora_targets = targets;
}

void read_torchtune(const std::vector<std::string>& a, Config& c) {
  Parallel& p = c.parallel;
  p = Parallel{};
  p.num_gpus = world_size(a);
  p.tensor = integer_of(value_of(a, "tensor_parallel_dim"), 1);
  p.context = integer_of(value_of(a, "context_parallel_dim"), 1);
  p.sequence_parallel = p.tensor > 1;
  set_fsdp(c, integer_of(value_of(a, "data_parallel_replicate_dim"), 1), integer_of(value_of(a, "data_parallel_shard_dim"), 1),
           value_of(a, "fsdp_reshard_after_forward") == "True", value_of(a, "fsdp_cpu_offload") == "True");
  Training& t = c.training;
  t.micro_batch_size = integer_of(value_of(a, "batch_size"), 1);
  t.grad_accum_steps = integer_of(value_of(a, "gradient_accumulation_steps"), 1);
  t.seq_len = integer_of(value_of(a, "tokenizer.max_seq_len"), t.seq_len);
  t.precision = value_of(a, "dtype") == "fp32" ? Precision::kFp32 : Precision::kBf16;
  t.optimizer_in_backward = value_of(a, "optimizer_in_bwd") == "True";
  t.checkpointing = value_of(a, "enable_activation_checkpointing") != "True" ? Checkpointing::kNone
                    : value_of(a, "ac_option") == "op"                        ? Checkpointing::kSelectiveOp
                                                                               : Checkpointing::kFull;
  t.checkpointed_layers = -1;  // every layer
  // The single-device recipes take no FSDP settings: no sharding.
  if (has_word(a, "lora_finetune_single_device") || has_word(a, "full_finetune_single_device")) p.zero_stage = 0;
  if (has_word(a, "lora_finetune_distributed") || has_word(a, "lora_finetune_single_device")) read_torchtune_lora(a, c);
  else c.training.finetune.method = FinetuneMethod::kFull;
}

// Exports must say exactly what the plan is: TP here always shards the sequence too.
void require_sequence_parallel(const Config& c, Export& e, const char* engine) {
  if (c.parallel.tensor > 1 && !c.parallel.sequence_parallel) {
    fail(e, "parallel.sequence_parallel", std::string(engine) + "'s tensor parallelism also shards the sequence: set "
                                                                "parallel.sequence_parallel to true");
  }
}

}  // namespace

Export export_plan(const Config& c, Engine engine) {
  Export e;
  e.errors = validate(c);
  if (!e.errors.empty()) {
    e.engine = engine;
    return e;
  }
  switch (engine) {
    case Engine::kDeepSpeed: e = deepspeed(c); break;
    case Engine::kFsdp: e = accelerate_fsdp(c); require_sequence_parallel(c, e, "accelerate"); break;
    case Engine::kTorchtitan: e = torchtitan(c); require_sequence_parallel(c, e, "torchtitan"); break;
    case Engine::kMegatron: e = megatron(c); break;
    case Engine::kTorchtune: e = torchtune(c); require_sequence_parallel(c, e, "torchtune"); break;
  }
  // A hybrid model (Qwen3.5, Qwen3-Next) runs as transformers' class: under DeepSpeed or
  // accelerate's FSDP; the other engines build their own models, which have no Gated DeltaNet.
  if (c.model.hybrid_attention() && engine != Engine::kDeepSpeed && engine != Engine::kFsdp) {
    fail(e, "model.linear_attention_layers",
         "Gated DeltaNet layers run as transformers' model class: export deepspeed or fsdp (accelerate); this "
         "engine builds its own model, which has none");
  }
  // So does a vision-language model: the other engines build a text-only model, with no tower.
  if (c.model.vision_type != VisionTower::kNone && engine != Engine::kDeepSpeed && engine != Engine::kFsdp) {
    fail(e, "model.vision_type",
         "a vision tower is built by the multimodal transformers class: export deepspeed or fsdp (accelerate); this "
         "engine builds a text-only model");
  }
  if (c.training.finetune.trainable_layers >= 0) {
    fail(e, "training.finetune.trainable_layers",
         "which blocks train is set in the training script (requires_grad), which these configurations do not carry: "
         "export with -1 (every block) and freeze the blocks in the script");
  }
  if (c.training.weight_quant != WeightQuant::kNone) {
    fail(e, "training.weight_quant", "Q-GaLore's INT8 weights are its own training script's (--weight_quant), not an "
                                     "option of these engines: export with none");
  }
  if (c.training.float8 != Float8::kNone && e.errors.empty()) {
    e.notes.push_back("training.float8 is torchao's conversion of the linears (Float8 or MX training), made in the "
                      "training script or torchtitan's model converters: this file does not carry it");
  }
  if (c.parallel.pipeline > 1 && c.parallel.pipeline_schedule == PipelineSchedule::kSequential) {
    fail(e, "parallel.pipeline_schedule",
         "sequential stages are transformers' device_map=\"auto\" (set in from_pretrained, not by a launcher); these "
         "engines run 1F1B pipelines: choose parallel.pipeline_schedule 1f1b");
  }
  return e;
}

ConfigParse read_export(const Config& base, Engine engine, std::string_view file_text, std::string_view command) {
  Config c = base;
  const std::vector<std::string> words = words_of(command);
  std::vector<Issue> unread;
  switch (engine) {
    case Engine::kDeepSpeed: {
      const JsonParseResult ds = parse_json(file_text);
      if (!ds.value || !ds.value->is_object()) {
        ConfigParse bad;
        bad.errors.push_back({"ds_config.json", "is not a JSON object"});
        return bad;
      }
      read_deepspeed(*ds.value, words, c);
      const Json* zero = ds.value->find("zero_optimization");
      const Json* frozen = zero ? zero->find("zero_quantized_nontrainable_weights") : nullptr;
      if (frozen && frozen->is_bool() && frozen->as_bool()) {
        unread.push_back({"zero_optimization.zero_quantized_nontrainable_weights",
                          "ZeRO++'s int8 frozen weights are not modelled: the estimate counts them at 16 bits"});
      }
      break;
    }
    case Engine::kFsdp: read_accelerate(read_settings(file_text, false), words, c); break;
    case Engine::kTorchtitan: read_torchtitan(read_settings(file_text, true), words, c); break;
    case Engine::kMegatron: read_megatron(words, c); break;
    case Engine::kTorchtune: read_torchtune(words, c); break;
  }
  ConfigParse out = parse_config(config_to_json(c));
  out.warnings.insert(out.warnings.end(), unread.begin(), unread.end());
  return out;
}

const char* to_string(Engine e) {
  switch (e) {
    case Engine::kDeepSpeed: return "deepspeed";
    case Engine::kFsdp: return "fsdp";
    case Engine::kTorchtitan: return "torchtitan";
    case Engine::kMegatron: return "megatron";
    case Engine::kTorchtune: return "torchtune";
  }
  return "";
}

bool parse_engine(std::string_view text, Engine& out) {
  for (Engine e : {Engine::kDeepSpeed, Engine::kFsdp, Engine::kTorchtitan, Engine::kMegatron, Engine::kTorchtune}) {
    if (text == to_string(e) || (e == Engine::kFsdp && text == "accelerate")) {
      out = e;
      return true;
    }
  }
  return false;
}

Json export_to_json(const Export& e) {
  Json j = Json::object();
  j.set("ok", Json::boolean(e.ok()));
  j.set("errors", issues_to_json(e.errors));
  j.set("engine", Json::string(to_string(e.engine)));
  if (!e.ok()) return j;
  j.set("filename", Json::string(e.filename));
  j.set("text", Json::string(e.text));
  j.set("command", Json::string(e.command));
  Json notes = Json::array();
  for (const std::string& n : e.notes) notes.push(Json::string(n));
  j.set("notes", std::move(notes));
  return j;
}

}  // namespace memfit
