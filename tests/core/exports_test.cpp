// Exports: every key or flag written is one the engine documents (the lists below, each read from
// the engine's own code at the commit named), and an exported plan read back into memfit gives the
// same estimate, to the byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include <set>
#include <sstream>
#include <string>

#include "memfit/memfit.hpp"

namespace memfit {
namespace {

// deepspeedai/DeepSpeed @ edaa7221267243c7be7fb49c5d5f5c4fb97b4641: deepspeed/runtime/constants.py
// (train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps, bf16 / fp16 /
// torch_autocast with enabled and dtype, gradient_clipping, steps_per_print);
// deepspeed/runtime/zero/config.py (DeepSpeedZeroConfig: stage, overlap_comm,
// contiguous_gradients, reduce_bucket_size, offload_optimizer, offload_param, mics_shard_size,
// zero_hpz_partition_size, zero_quantized_weights, zero_quantized_gradients);
// deepspeed/runtime/zero/offload_config.py (device, pin_memory).
const std::set<std::string> kDeepSpeedKeys = {
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "bf16.enabled",
    "fp16.enabled", "torch_autocast.enabled", "torch_autocast.dtype", "gradient_clipping", "steps_per_print",
    "zero_optimization.stage", "zero_optimization.overlap_comm", "zero_optimization.contiguous_gradients",
    "zero_optimization.reduce_bucket_size",
    "zero_optimization.offload_optimizer.device", "zero_optimization.offload_optimizer.pin_memory",
    "zero_optimization.offload_param.device", "zero_optimization.offload_param.pin_memory",
    "zero_optimization.mics_shard_size", "zero_optimization.zero_hpz_partition_size",
    "zero_optimization.zero_quantized_weights", "zero_optimization.zero_quantized_gradients"};

// huggingface/accelerate @ 16cb6eb80dd9aa8b4df1a63ef57863e455d53b83:
// src/accelerate/commands/config/config_args.py (ClusterConfig fields) and
// src/accelerate/commands/config/cluster.py (fsdp_config keys; parallelism_config keys with the
// parallelism_config_ prefix; FSDP1's fsdp_sync_module_states and fsdp_use_orig_params).
const std::set<std::string> kAccelerateKeys = {
    "fsdp_config.fsdp_sync_module_states", "fsdp_config.fsdp_use_orig_params",
    "compute_environment", "distributed_type", "mixed_precision", "num_machines", "num_processes", "machine_rank",
    "main_process_port", "rdzv_backend", "same_network", "use_cpu", "fsdp_config.fsdp_version",
    "fsdp_config.fsdp_auto_wrap_policy", "fsdp_config.fsdp_reshard_after_forward", "fsdp_config.fsdp_offload_params",
    "fsdp_config.fsdp_activation_checkpointing", "fsdp_config.fsdp_cpu_ram_efficient_loading",
    "fsdp_config.fsdp_state_dict_type", "parallelism_config.parallelism_config_dp_replicate_size",
    "parallelism_config.parallelism_config_dp_shard_size", "parallelism_config.parallelism_config_tp_size",
    "parallelism_config.parallelism_config_cp_size"};

// pytorch/torchtitan @ 238fa9953e4aec2a62582121564273d7cbb1e9f1 (the last TOML-configured
// version): torchtitan/config/job_config.py, classes Job, Model, Training, Parallelism,
// ActivationCheckpoint.
const std::set<std::string> kTorchtitanKeys = {
    "job.dump_folder", "model.name", "model.flavor", "training.local_batch_size", "training.global_batch_size",
    "training.seq_len", "training.mixed_precision_param", "training.mixed_precision_reduce",
    "training.enable_cpu_offload", "parallelism.data_parallel_replicate_degree",
    "parallelism.data_parallel_shard_degree", "parallelism.fsdp_reshard_after_forward",
    "parallelism.tensor_parallel_degree", "parallelism.context_parallel_degree", "parallelism.expert_parallel_degree",
    "parallelism.pipeline_parallel_degree", "parallelism.pipeline_parallel_schedule",
    "parallelism.pipeline_parallel_microbatch_size", "parallelism.pipeline_parallel_layers_per_stage",
    "activation_checkpoint.mode", "activation_checkpoint.selective_ac_option",
    // class Parallelism's enable_async_tensor_parallel, class Compile's enable
    "parallelism.enable_async_tensor_parallel", "compile.enable"};

// NVIDIA/Megatron-LM @ 67f3515c8a0539d38c23f59dd8b85efdcbb3af3d: megatron/training/arguments.py
// (add_argument calls), and --micro-batch-size / --global-batch-size generated from
// megatron/training/training_config.py (TrainingConfig.micro_batch_size, global_batch_size).
const std::set<std::string> kMegatronFlags = {
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads", "--kv-channels",
    "--group-query-attention", "--num-query-groups", "--normalization", "--swiglu", "--position-embedding-type",
    "--max-position-embeddings", "--untie-embeddings-and-output-weights", "--disable-bias-linear", "--add-qkv-bias",
    "--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size", "--vocab-size", "--make-vocab-size-divisible-by",
    "--seq-length", "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
    "--expert-model-parallel-size", "--num-layers-per-virtual-pipeline-stage", "--sequence-parallel",
    "--micro-batch-size", "--global-batch-size", "--bf16", "--fp16", "--fp8-format", "--use-distributed-optimizer",
    "--overlap-grad-reduce", "--overlap-param-gather", "--use-megatron-fsdp", "--data-parallel-sharding-strategy",
    "--optimizer-cpu-offload", "--recompute-granularity", "--recompute-method", "--recompute-num-layers",
    // the Megatron-FSDP user guide's required flags, and the MoE token dispatcher
    // (megatron/training/arguments.py: --no-gradient-accumulation-fusion, --ckpt-format,
    // --moe-token-dispatcher-type)
    "--no-gradient-accumulation-fusion", "--ckpt-format", "--moe-token-dispatcher-type",
    // megatron/training/arguments.py _add_network_size_args: GLM-4's partial, interleaved rotary
    "--rotary-percent", "--rotary-interleaved",
    // _add_network_size_args: "Use squared relu activation instead of default gelu" (Nemotron-4);
    // "Adjust LayerNorm weights such that they are centered around zero" (1 + w norms)
    "--squared-relu", "--apply-layernorm-1p"};

// Environment variables a command may set before its launcher: Megatron-LM's validate_args
// asserts CUDA_DEVICE_MAX_CONNECTIONS=1 under tensor or context parallelism.
const std::set<std::string> kEnvironment = {"CUDA_DEVICE_MAX_CONNECTIONS"};

// pytorch/torchtune @ bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1: recipes/full_finetune_distributed.py
// and lora_finetune_distributed.py (cfg.batch_size, cfg.gradient_accumulation_steps, cfg.dtype,
// cfg.get("fsdp_cpu_offload" | "fsdp_reshard_after_forward" | "data_parallel_shard_dim" |
// "data_parallel_replicate_dim" | "tensor_parallel_dim" | "context_parallel_dim" |
// "optimizer_in_bwd" | "ac_mode" | "ac_option")), the configs' enable_activation_checkpointing,
// tokenizer.max_seq_len and the LoRA builders' lora_rank, lora_attn_modules, apply_lora_to_mlp,
// apply_lora_to_output (recipes/configs/llama3_1/70B_lora.yaml).
const std::set<std::string> kTorchtuneKeys = {
    "batch_size", "gradient_accumulation_steps", "tokenizer.max_seq_len", "dtype", "fsdp_cpu_offload",
    "fsdp_reshard_after_forward", "data_parallel_shard_dim", "data_parallel_replicate_dim", "tensor_parallel_dim",
    "context_parallel_dim", "optimizer_in_bwd", "enable_activation_checkpointing", "ac_mode", "ac_option",
    "model.lora_rank", "model.lora_attn_modules", "model.apply_lora_to_mlp", "model.apply_lora_to_output"};

// torch/distributed/run.py (torchrun), torchtune/_cli/run.py (tune run passes them on),
// accelerate/commands/launch.py, and transformers' TrainingArguments for the Trainer script.
const std::set<std::string> kLauncherFlags = {
    "--nnodes", "--nproc_per_node", "--rdzv_backend", "--rdzv_endpoint", "--standalone", "--config_file",
    "--main_process_ip", "--machine_rank", "--config", "--deepspeed", "--per_device_train_batch_size",
    "--gradient_accumulation_steps", "--gradient_checkpointing", "--bf16", "--fp16", "--job.config_file", "-m"};

void flatten(const Json& j, const std::string& prefix, std::set<std::string>& out) {
  for (const auto& [key, value] : j.members()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object()) flatten(value, path, out);
    else out.insert(path);
  }
}

// Keys of a YAML written as "key: value" lines nested by two spaces, or of a TOML of
// "[section]" and "key = value" lines (written independently of the exporter's reader).
std::set<std::string> keys_of(const std::string& text, bool toml) {
  std::set<std::string> out;
  std::istringstream in(text);
  std::string section;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (toml && line[0] == '[') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const std::size_t sep = line.find(toml ? " = " : ":");
    if (sep == std::string::npos) continue;
    const std::string key = line.substr(line.find_first_not_of(' '), sep - line.find_first_not_of(' '));
    if (toml) out.insert(section + "." + key);
    else if (line[0] == ' ') out.insert(section + "." + key);
    else if (line.size() == sep + 1) section = key;
    else out.insert(key);
  }
  return out;
}

// "--flag" words and "key=value" keys of a command line.
void words_of(const std::string& command, std::set<std::string>& flags, std::set<std::string>& overrides) {
  std::istringstream in(command);
  bool first = true;
  for (std::string w; in >> w; first = false) {
    // An environment assignment before the launcher.
    if (first && w.find('=') != std::string::npos && std::isupper(static_cast<unsigned char>(w[0]))) {
      EXPECT_TRUE(kEnvironment.count(w.substr(0, w.find('=')))) << "environment " << w;
      first = false;
      in >> w;
    }
    if (w.rfind("--", 0) == 0 || w == "-m") flags.insert(w.substr(0, w.find('=')));
    else if (w.find('=') != std::string::npos && w[0] != '$') overrides.insert(w.substr(0, w.find('=')));
  }
}

Config config(const std::string& json) {
  const ConfigParse p = parse_config_text(json);
  EXPECT_TRUE(p.ok()) << json << " " << (p.errors.empty() ? "" : p.errors[0].field + " " + p.errors[0].message);
  return p.config;
}

void expect_documented(const Export& e) {
  std::set<std::string> keys, flags, overrides;
  switch (e.engine) {
    case Engine::kDeepSpeed: flatten(*parse_json(e.text).value, "", keys); break;
    case Engine::kFsdp: keys = keys_of(e.text, false); break;
    case Engine::kTorchtitan: keys = keys_of(e.text, true); break;
    default: break;
  }
  const std::set<std::string>& documented = e.engine == Engine::kDeepSpeed    ? kDeepSpeedKeys
                                            : e.engine == Engine::kFsdp       ? kAccelerateKeys
                                            : e.engine == Engine::kTorchtitan ? kTorchtitanKeys
                                                                              : kTorchtuneKeys;
  for (const std::string& k : keys) EXPECT_TRUE(documented.count(k)) << to_string(e.engine) << " key " << k;
  words_of(e.command, flags, overrides);
  for (const std::string& f : flags) {
    const bool known = kLauncherFlags.count(f) || (e.engine == Engine::kMegatron && kMegatronFlags.count(f));
    EXPECT_TRUE(known) << to_string(e.engine) << " flag " << f;
  }
  for (const std::string& o : overrides) {
    EXPECT_TRUE(e.engine == Engine::kTorchtune && kTorchtuneKeys.count(o)) << to_string(e.engine) << " override " << o;
  }
}

// The configuration with everything an export states set to something else, so that reading the
// export back has to restore it.
Config scrambled(Config c, Engine engine) {
  c.parallel = Parallel{};
  c.training.micro_batch_size = 3;
  c.training.grad_accum_steps = 5;
  c.training.precision = Precision::kBf16Mixed;
  c.training.checkpointing = Checkpointing::kNone;
  c.training.checkpointed_layers = 3;
  c.training.optimizer_in_backward = false;
  if (engine != Engine::kDeepSpeed && engine != Engine::kFsdp) c.training.seq_len = 7;
  if (engine == Engine::kTorchtune) c.training.finetune = Finetune{};
  return c;
}

// The fields a plan chooses, as text.
std::string layout_text(const Config& c) {
  const Json j = config_to_json(c);
  std::string text = j.find("parallel")->dump();
  for (const char* key : {"precision", "checkpointing", "checkpointed_layers", "micro_batch_size", "grad_accum_steps", "seq_len"}) {
    text += std::string(" ") + key + "=" + j.find("training")->find(key)->dump();
  }
  return text;
}

void expect_round_trip(const Config& c, Engine engine) {
  const Export e = export_plan(c, engine);
  ASSERT_TRUE(e.ok()) << to_string(engine) << ": " << (e.errors.empty() ? "" : e.errors[0].field + " " + e.errors[0].message);
  expect_documented(e);
  const ConfigParse back = read_export(scrambled(c, engine), engine, e.text, e.command);
  ASSERT_TRUE(back.ok()) << to_string(engine) << ": " << back.errors[0].field << " " << back.errors[0].message;
  const Estimate a = estimate(c), b = estimate(back.config);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.device_total_bytes, b.device_total_bytes) << to_string(engine) << "\n" << e.text << e.command;
  EXPECT_EQ(a.peak_allocated_bytes, b.peak_allocated_bytes);
  EXPECT_EQ(layout_text(a.config), layout_text(b.config));
}

TEST(Exports, DeepSpeedRoundTrips) {
  const char* cases[] = {
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_master","checkpointing":"full","micro_batch_size":2,"grad_accum_steps":4},"parallel":{"num_gpus":16,"zero_stage":3,"offload_optimizer":true}})",
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_mixed","micro_batch_size":1,"grad_accum_steps":8},"parallel":{"num_gpus":8,"zero_stage":2}})",
      R"({"model":{"preset":"llama-2-70b"},"training":{"precision":"fp16_master","checkpointing":"full"},"parallel":{"num_gpus":64,"zero_stage":3,"shard_degree":8,"offload_optimizer":true,"offload_params":true}})",
      R"({"model":{"preset":"gpt2"},"training":{"precision":"fp32","micro_batch_size":8}})",
      R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"deepspeed","precision":"bf16_master","checkpointing":"full"},"parallel":{"num_gpus":32,"zero_stage":3,"zero_hpz_partition_size":8,"zero_quantized_weights":true,"zero_quantized_gradients":true}})",
  };
  for (const char* c : cases) expect_round_trip(config(c), Engine::kDeepSpeed);
}

// A ds_config with ZeRO++ runs under the DeepSpeed engine whatever the configuration it is read
// into; the switches memfit does not model are named.
TEST(Exports, DeepSpeedZeroPlusPlusIsReadAsTheEngines) {
  const char* ds = R"({"train_micro_batch_size_per_gpu":1,"gradient_accumulation_steps":1,"bf16":{"enabled":true},)"
                   R"("zero_optimization":{"stage":3,"zero_hpz_partition_size":8,"zero_quantized_weights":true,)"
                   R"("zero_quantized_gradients":true,"zero_quantized_nontrainable_weights":true}})";
  const ConfigParse back = read_export(config(R"({"model":{"preset":"llama-3-8b"}})"), Engine::kDeepSpeed, ds,
                                       "deepspeed --num_gpus 16 train.py --deepspeed ds_config.json");
  ASSERT_TRUE(back.ok()) << back.errors[0].field << " " << back.errors[0].message;
  EXPECT_EQ(back.config.training.implementation.framework, Framework::kDeepspeed);
  EXPECT_EQ(back.config.parallel.zero_hpz_partition_size, 8);
  EXPECT_TRUE(back.config.parallel.zero_quantized_weights);
  EXPECT_TRUE(back.config.parallel.zero_quantized_gradients);
  bool named = false;
  for (const Issue& w : back.warnings) named |= w.field == "zero_optimization.zero_quantized_nontrainable_weights";
  EXPECT_TRUE(named);
}

// DeepSpeed's bucket and sub-group sizes are read back, 1e8 as written in JSON as well as integers,
// and a reduce_bucket_size of "auto" as Hugging Face fills it: the hidden size squared.
TEST(Exports, DeepSpeedBucketSizesAreRead) {
  const char* ds = R"({"train_micro_batch_size_per_gpu":1,"gradient_accumulation_steps":1,"bf16":{"enabled":true},)"
                   R"("zero_optimization":{"stage":3,"reduce_bucket_size":"auto","sub_group_size":1e8,)"
                   R"("stage3_max_reuse_distance":100000000}})";
  const ConfigParse back = read_export(config(R"({"model":{"preset":"llama-3-8b"}})"), Engine::kDeepSpeed, ds,
                                       "deepspeed --num_gpus 8 train.py --deepspeed ds_config.json");
  ASSERT_TRUE(back.ok()) << back.errors[0].field << " " << back.errors[0].message;
  EXPECT_EQ(back.config.parallel.reduce_bucket_elements, std::int64_t{4096} * 4096);
  EXPECT_EQ(back.config.parallel.zero_sub_group_size, 100'000'000);
  EXPECT_EQ(back.config.parallel.zero3_max_reuse_distance, 100'000'000);
  // And written: a configuration that sets them exports them.
  Config c = config(R"({"model":{"preset":"llama-3-8b"},"training":{"framework":"deepspeed","precision":"bf16_master"},)"
                    R"("parallel":{"num_gpus":8,"zero_stage":3,"reduce_bucket_elements":16777216,)"
                    R"("zero_sub_group_size":100000000}})");
  const Export e = export_plan(c, Engine::kDeepSpeed);
  EXPECT_NE(e.text.find("\"reduce_bucket_size\": 16777216"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("\"sub_group_size\": 100000000"), std::string::npos) << e.text;
}

TEST(Exports, AccelerateFsdpRoundTrips) {
  const char* cases[] = {
      // FSDP1, accelerate's default (fsdp_version 1): FULL_SHARD, SHARD_GRAD_OP, a LoRA with
      // use_orig_params, HYBRID_SHARD within 8-GPU nodes
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp","checkpointing":"full","micro_batch_size":2,"grad_accum_steps":4},"parallel":{"num_gpus":16,"zero_stage":3}})",
      R"({"model":{"preset":"mistral-7b-v0.1"},"training":{"precision":"bf16_fsdp"},"parallel":{"num_gpus":8,"zero_stage":2}})",
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp","checkpointing":"full","finetune":{"method":"lora"}},"parallel":{"num_gpus":4,"zero_stage":3,"fsdp_use_orig_params":true}})",
      R"({"model":{"preset":"llama-3-70b"},"training":{"precision":"bf16_fsdp","checkpointing":"full"},"parallel":{"num_gpus":32,"zero_stage":3,"shard_degree":8}})",
      // FSDP2 (fsdp_version 2), with accelerate's parallelism_config
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp","checkpointing":"full","micro_batch_size":2,"grad_accum_steps":4},"parallel":{"num_gpus":16,"zero_stage":3,"fsdp_version":"2"}})",
      R"({"model":{"preset":"llama-3-70b"},"training":{"precision":"bf16_fsdp","checkpointing":"full"},"parallel":{"num_gpus":32,"tensor":2,"sequence_parallel":true,"zero_stage":3,"shard_degree":4,"fsdp_version":"2"}})",
      R"({"model":{"preset":"mistral-7b-v0.1"},"training":{"precision":"fp32"},"parallel":{"num_gpus":8,"zero_stage":3,"context":2,"offload_optimizer":true,"offload_params":true,"fsdp_version":"2"}})",
      R"({"model":{"preset":"mistral-7b-v0.1"},"training":{"precision":"bf16_fsdp"},"parallel":{"num_gpus":8,"zero_stage":2,"context":2,"fsdp_version":"2"}})",
  };
  for (const char* c : cases) expect_round_trip(config(c), Engine::kFsdp);
}

// The accelerate config runs the FSDP the estimate modelled: fsdp_version 1 (accelerate's default,
// memfit's for the Hugging Face stack) or 2; what only FSDP2 can run is refused by name under 1.
TEST(Exports, AccelerateWritesTheFsdpVersionEstimated) {
  const Config fsdp1 = config(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp"},"parallel":{"num_gpus":8,"zero_stage":3}})");
  const Export one = export_plan(fsdp1, Engine::kFsdp);
  ASSERT_TRUE(one.ok());
  EXPECT_NE(one.text.find("fsdp_version: 1\n"), std::string::npos) << one.text;
  EXPECT_NE(one.text.find("fsdp_reshard_after_forward: FULL_SHARD\n"), std::string::npos) << one.text;
  EXPECT_EQ(one.text.find("parallelism_config"), std::string::npos) << one.text;
  Config fsdp2 = fsdp1;
  fsdp2.parallel.fsdp_version = FsdpVersion::kTwo;
  const Export two = export_plan(fsdp2, Engine::kFsdp);
  ASSERT_TRUE(two.ok());
  EXPECT_NE(two.text.find("fsdp_version: 2\n"), std::string::npos) << two.text;
  EXPECT_NE(two.text.find("fsdp_reshard_after_forward: true\n"), std::string::npos) << two.text;
  Config tensor = fsdp1;
  tensor.parallel.tensor = 2;
  const Export refused = export_plan(tensor, Engine::kFsdp);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.errors.at(0).field, "parallel.fsdp_version");
  // torchtitan runs FSDP2 whatever the estimate modelled: said in a note where it was FSDP1.
  const auto noted = [](const Export& x) {
    return std::any_of(x.notes.begin(), x.notes.end(),
                       [](const std::string& n) { return n.find("FSDP1") != std::string::npos; });
  };
  EXPECT_TRUE(noted(export_plan(fsdp1, Engine::kTorchtitan)));
  EXPECT_FALSE(noted(export_plan(fsdp2, Engine::kTorchtitan)));
  Config hybrid = fsdp1;
  hybrid.parallel.num_gpus = 32;
  hybrid.parallel.shard_degree = 4;
  const Export hybrid_refused = export_plan(hybrid, Engine::kFsdp);
  ASSERT_FALSE(hybrid_refused.ok());
  EXPECT_EQ(hybrid_refused.errors.at(0).field, "parallel.shard_degree");
}

TEST(Exports, TorchtitanRoundTrips) {
  const char* cases[] = {
      R"({"model":{"preset":"llama-3-70b"},"training":{"precision":"bf16_fsdp","checkpointing":"selective_op","seq_len":8192},"parallel":{"num_gpus":256,"tensor":8,"sequence_parallel":true,"zero_stage":3}})",
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_mixed","micro_batch_size":2,"grad_accum_steps":2},"parallel":{"num_gpus":8}})",
      R"({"model":{"preset":"llama-3-70b"},"training":{"precision":"bf16_fsdp","checkpointing":"full","grad_accum_steps":8},"parallel":{"num_gpus":64,"tensor":4,"sequence_parallel":true,"pipeline":4,"virtual_stages":5,"zero_stage":3}})",
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp","checkpointing":"full","seq_len":32768},"parallel":{"num_gpus":16,"context":2,"zero_stage":2,"shard_degree":4}})",
      // layer-level selective checkpointing, every second block: 16 of Llama 3 8B's 32
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp","checkpointing":"full","checkpointed_layers":16},"parallel":{"num_gpus":8,"zero_stage":3}})",
      // async TP, which torchtitan runs compiled
      R"({"model":{"preset":"llama-3-70b"},"training":{"framework":"torchtitan","compile":"yes","precision":"bf16_fsdp","checkpointing":"full"},"parallel":{"num_gpus":64,"tensor":8,"sequence_parallel":true,"zero_stage":3,"async_tp":true}})",
      // a pipeline that reshards after forward all the same (fsdp_reshard_after_forward = "always")
      R"({"model":{"preset":"llama-3-70b"},"training":{"framework":"torchtitan","precision":"bf16_fsdp","checkpointing":"full","grad_accum_steps":8},"parallel":{"num_gpus":64,"tensor":4,"sequence_parallel":true,"pipeline":4,"zero_stage":3,"reshard_after_forward":"always"}})",
  };
  for (const char* c : cases) expect_round_trip(config(c), Engine::kTorchtitan);
  const Export pipelined = export_plan(config(R"({"model":{"preset":"llama-3-70b"},"training":{"precision":"bf16_fsdp"},"parallel":{"num_gpus":64,"tensor":4,"pipeline":4,"zero_stage":3,"reshard_after_forward":"always"}})"), Engine::kTorchtitan);
  EXPECT_NE(pipelined.text.find("fsdp_reshard_after_forward = \"always\""), std::string::npos) << pipelined.text;
  // An explicit never is refused by name: the engines' switch is read back as ZeRO-2.
  const Config never = config(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_fsdp"},"parallel":{"num_gpus":8,"zero_stage":3,"reshard_after_forward":"never"}})");
  for (Engine engine : {Engine::kFsdp, Engine::kTorchtitan}) {
    const Export refused = export_plan(never, engine);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.errors.at(0).field, "parallel.reshard_after_forward");
  }
}

TEST(Exports, MegatronRoundTrips) {
  const char* cases[] = {
      R"({"model":{"preset":"llama-3-70b"},"training":{"precision":"bf16_master","checkpointing":"selective","seq_len":8192,"grad_accum_steps":16},"parallel":{"num_gpus":64,"tensor":8,"pipeline":4,"virtual_stages":5,"sequence_parallel":true,"zero_stage":1}})",
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"fp8_mixed","checkpointing":"full","micro_batch_size":2},"parallel":{"num_gpus":16,"zero_stage":1,"offload_optimizer":true,"context":2}})",
      R"({"model":{"preset":"llama-2-13b"},"training":{"precision":"fp16_master"},"parallel":{"num_gpus":32,"zero_stage":3}})",
      R"({"model":{"preset":"mixtral-8x7b"},"training":{"precision":"bf16_master","checkpointing":"full","grad_accum_steps":8},"parallel":{"num_gpus":64,"expert":8,"pipeline":4,"zero_stage":1}})",
      // --recompute-method block: the first 2 blocks of each of the 4 stages
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_master","checkpointing":"full","checkpointed_layers":8,"grad_accum_steps":8},"parallel":{"num_gpus":16,"pipeline":4,"zero_stage":1}})",
      // GLM-4: rotary on half of each head, neighbouring dimensions paired; four norms a block (a note)
      R"({"model":{"preset":"glm-4-9b-0414"},"training":{"precision":"bf16_master","checkpointing":"full"},"parallel":{"num_gpus":8,"zero_stage":1}})",
      // a plain MLP with squared ReLU (Nemotron-4's, Arcee's)
      R"({"model":{"preset":"llama-2-7b","mlp":"plain","hidden_act":"relu2"},"training":{"precision":"bf16_master"},"parallel":{"num_gpus":8,"zero_stage":1}})",
      // Gemma's norms apply 1 + w
      R"({"model":{"preset":"gemma-2b"},"training":{"precision":"bf16_master"},"parallel":{"num_gpus":8,"zero_stage":1}})",
  };
  for (const char* c : cases) expect_round_trip(config(c), Engine::kMegatron);
  const Export glm = export_plan(config(cases[5]), Engine::kMegatron);
  EXPECT_NE(glm.command.find("--rotary-interleaved --rotary-percent 0.5"), std::string::npos) << glm.command;
  const Export relu2 = export_plan(config(cases[6]), Engine::kMegatron);
  EXPECT_NE(relu2.command.find("--squared-relu"), std::string::npos) << relu2.command;
  EXPECT_EQ(relu2.command.find("--swiglu"), std::string::npos) << relu2.command;
  // Nemotron-4's LayerNorm1P: the same shape with its model_type.
  const Export nemotron = export_plan(
      config(R"({"model":{"preset":"llama-2-7b","model_type":"nemotron","mlp":"plain","hidden_act":"relu2","norm":"layernorm",)"
             R"("norm_bias":true},"training":{"precision":"bf16_master"},"parallel":{"num_gpus":8,"zero_stage":1}})"),
      Engine::kMegatron);
  EXPECT_NE(nemotron.command.find("--apply-layernorm-1p"), std::string::npos) << nemotron.command;
  const Export gemma = export_plan(config(cases[7]), Engine::kMegatron);
  EXPECT_NE(gemma.command.find("--apply-layernorm-1p"), std::string::npos) << gemma.command;
  EXPECT_TRUE(std::any_of(glm.notes.begin(), glm.notes.end(),
                          [](const std::string& n) { return n.find("two norms a block") != std::string::npos; }));
}

TEST(Exports, TorchtuneRoundTrips) {
  const char* cases[] = {
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16","finetune":{"method":"lora","lora_rank":32,"lora_targets":["q","k","v","o","gate","up","down"]}},"parallel":{"num_gpus":8,"zero_stage":3}})",
      R"({"model":{"preset":"llama-3-70b"},"training":{"precision":"bf16","checkpointing":"selective_op","grad_accum_steps":4},"parallel":{"num_gpus":16,"zero_stage":2,"shard_degree":8}})",
      R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16","optimizer_in_backward":true,"checkpointing":"full"},"parallel":{"num_gpus":8,"tensor":2,"sequence_parallel":true,"zero_stage":3,"offload_optimizer":true,"offload_params":true}})",
  };
  for (const char* c : cases) expect_round_trip(config(c), Engine::kTorchtune);
}

// One GPU without sharding runs torchtune's single-device recipes and configs; QLoRA its qlora configs.
TEST(Exports, TorchtuneOnOneGpuUsesTheSingleDeviceRecipes) {
  const Config lora = config(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16","finetune":{"method":"lora","lora_rank":8,"lora_targets":["q","v"]}},"parallel":{"num_gpus":1}})");
  const Export e = export_plan(lora, Engine::kTorchtune);
  ASSERT_TRUE(e.ok()) << e.errors.at(0).message;
  EXPECT_EQ(e.command.rfind("tune run lora_finetune_single_device --config <model>/<size>_lora_single_device ", 0), 0u) << e.command;
  EXPECT_EQ(e.command.find("fsdp_"), std::string::npos) << e.command;
  expect_round_trip(lora, Engine::kTorchtune);
  Config qlora = lora;
  qlora.training.finetune.base_bits = 4;
  EXPECT_NE(export_plan(qlora, Engine::kTorchtune).command.find("--config <model>/<size>_qlora_single_device "), std::string::npos);
  qlora.parallel.num_gpus = 4;
  qlora.parallel.zero_stage = 3;
  EXPECT_NE(export_plan(qlora, Engine::kTorchtune).command.find("lora_finetune_distributed --config <model>/<size>_qlora "), std::string::npos);
  // What only the distributed recipes take is a refusal about the layout (so the planner keeps
  // torchtune for the same run on more GPUs): op-level checkpointing, LoRA's optimizer_in_bwd.
  Config op = lora;
  op.training.checkpointing = Checkpointing::kSelectiveOp;
  EXPECT_EQ(export_plan(op, Engine::kTorchtune).errors.at(0).field, "training.checkpointing");
  Config in_backward = lora;
  in_backward.training.optimizer_in_backward = true;
  EXPECT_EQ(export_plan(in_backward, Engine::kTorchtune).errors.at(0).field, "parallel.num_gpus");
  const Config full = config(R"({"model":{"preset":"llama-3.2-1b"},"training":{"precision":"bf16","optimizer_in_backward":true,"checkpointing":"full"},"parallel":{"num_gpus":1}})");
  EXPECT_EQ(export_plan(full, Engine::kTorchtune).command.rfind("tune run full_finetune_single_device --config <model>/<size>_full_single_device ", 0), 0u);
  expect_round_trip(full, Engine::kTorchtune);
}

// The launch lines start as the engines require: the Trainer told the DeepSpeed config's precision,
// Megatron-LM's CUDA_DEVICE_MAX_CONNECTIONS under tensor parallelism, Megatron-FSDP's required flags.
TEST(Exports, LaunchLinesCarryWhatTheEnginesCheck) {
  const Config bf16 = config(R"({"training":{"precision":"bf16_master"},"parallel":{"num_gpus":8,"zero_stage":2}})");
  EXPECT_NE(export_plan(bf16, Engine::kDeepSpeed).command.find(" --bf16 true"), std::string::npos);
  Config fp16 = bf16;
  fp16.training.precision = Precision::kFp16Master;
  EXPECT_NE(export_plan(fp16, Engine::kDeepSpeed).command.find(" --fp16 true"), std::string::npos);
  Config amp = bf16;
  amp.training.precision = Precision::kBf16Mixed;
  const std::string amp_command = export_plan(amp, Engine::kDeepSpeed).command;
  EXPECT_EQ(amp_command.find(" --bf16"), std::string::npos) << amp_command;

  const Config tp = config(R"({"training":{"precision":"bf16_master"},"parallel":{"num_gpus":16,"tensor":4,"sequence_parallel":true,"zero_stage":1}})");
  EXPECT_EQ(export_plan(tp, Engine::kMegatron).command.rfind("CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun ", 0), 0u);
  const Config dp = config(R"({"training":{"precision":"bf16_master"},"parallel":{"num_gpus":16,"zero_stage":1}})");
  EXPECT_EQ(export_plan(dp, Engine::kMegatron).command.rfind("torchrun ", 0), 0u);
  Config fsdp = tp;
  fsdp.parallel.zero_stage = 3;
  const Export m = export_plan(fsdp, Engine::kMegatron);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.command.rfind("torchrun ", 0), 0u) << "Megatron-FSDP wants CUDA_DEVICE_MAX_CONNECTIONS unset";
  for (const char* flag : {"--use-megatron-fsdp", "--no-gradient-accumulation-fusion", "--use-distributed-optimizer",
                           "--ckpt-format fsdp_dtensor"}) {
    EXPECT_NE(m.command.find(flag), std::string::npos) << flag;
  }
  expect_round_trip(fsdp, Engine::kMegatron);
  const Config moe = config(R"({"model":{"preset":"mixtral-8x7b"},"training":{"precision":"bf16_master"},"parallel":{"num_gpus":16,"expert":8,"zero_stage":1}})");
  EXPECT_NE(export_plan(moe, Engine::kMegatron).command.find("--moe-token-dispatcher-type alltoall"), std::string::npos);
}

// What an engine cannot express is an error that says so, never a silently different plan.
TEST(Exports, LayoutsAnEngineCannotRunAreErrors) {
  const Config tp = config(R"({"training":{"precision":"bf16_master"},"parallel":{"num_gpus":8,"tensor":2,"zero_stage":1}})");
  EXPECT_EQ(export_plan(tp, Engine::kDeepSpeed).errors.at(0).field, "parallel");
  const Config amp = config(R"({"training":{"precision":"bf16_mixed"},"parallel":{"num_gpus":8,"zero_stage":3}})");
  EXPECT_EQ(export_plan(amp, Engine::kMegatron).errors.at(0).field, "training.precision");
  EXPECT_EQ(export_plan(amp, Engine::kTorchtune).errors.at(0).field, "training.precision");
  const Config op = config(R"({"training":{"precision":"bf16_master","checkpointing":"selective_op"},"parallel":{"num_gpus":8,"zero_stage":1}})");
  EXPECT_EQ(export_plan(op, Engine::kMegatron).errors.at(0).field, "training.checkpointing");
  EXPECT_EQ(export_plan(op, Engine::kDeepSpeed).errors.at(0).field, "training.checkpointing");
  const Config part = config(R"({"model":{"preset":"llama-3-8b"},"training":{"precision":"bf16_master","checkpointing":"full","checkpointed_layers":7},"parallel":{"num_gpus":8,"pipeline":2,"zero_stage":1}})");
  EXPECT_EQ(export_plan(part, Engine::kDeepSpeed).errors.at(0).field, "parallel");  // pipeline first
  EXPECT_EQ(export_plan(part, Engine::kMegatron).errors.at(0).field, "training.checkpointed_layers");  // 7 on 2 stages
  // Frozen blocks and Q-GaLore's INT8 weights are the training script's, not the engine's.
  const Config frozen = config(R"({"training":{"precision":"bf16_master","finetune":{"trainable_layers":4}},"parallel":{"num_gpus":8,"zero_stage":1}})");
  EXPECT_EQ(export_plan(frozen, Engine::kDeepSpeed).errors.at(0).field, "training.finetune.trainable_layers");
  const Config int8 = config(R"({"training":{"precision":"bf16","weight_quant":"int8"},"parallel":{"num_gpus":8,"zero_stage":3}})");
  EXPECT_EQ(export_plan(int8, Engine::kTorchtune).errors.back().field, "training.weight_quant");
}

// The planner's own plans export and read back unchanged wherever the engine can run them.
TEST(Exports, PlannedLayoutsRoundTrip) {
  PlanOptions o;
  o.gpus_min = 8;
  o.gpus_max = 64;
  o.top = 6;
  const PlanResult r = plan(config(R"({"model":{"preset":"llama-3-8b"},"training":{"seq_len":4096,"goal":"pretrain"}})"), o);
  ASSERT_FALSE(r.plans.empty());
  int exported = 0;
  for (const Plan& p : r.plans) {
    for (Engine e : {Engine::kDeepSpeed, Engine::kFsdp, Engine::kTorchtitan, Engine::kMegatron, Engine::kTorchtune}) {
      if (!export_plan(p.config, e).ok()) continue;
      expect_round_trip(p.config, e);
      ++exported;
    }
  }
  EXPECT_GT(exported, 0);
}

}  // namespace
}  // namespace memfit
