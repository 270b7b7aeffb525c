// The view's dictionary: every option, field and term the page shows, in words a user knows, with
// a one-line explanation. The core's ids (bf16_mixed, selective_op, attention.flash_qkv) never
// reach a user page; an id missing here is shown humanised ("flash qkv"), never raw.
// Pure: no DOM, no wasm.

// Choices of a field: id → [label, one-line explanation].
export const CHOICES = {
  'training.precision': {
    fp32: ['FP32, full precision', 'weights, gradients and optimizer states in 32-bit floats'],
    fp16_mixed: ['FP16 mixed precision (PyTorch AMP)', 'fp32 weights and states; fp16 copies of the weights for compute'],
    bf16_mixed: ['BF16 mixed precision (PyTorch AMP)', 'fp32 weights and states; bf16 copies of the weights for compute'],
    fp16_master: ['FP16 weights, fp32 master copy (Megatron, DeepSpeed)', '16-bit weights; fp32 master weights and gradients for the optimizer'],
    bf16_master: ['BF16 weights, fp32 master copy (Megatron, DeepSpeed)', '16-bit weights; fp32 master weights and gradients for the optimizer'],
    bf16: ['Pure BF16 (torchtune, LitGPT bf16-true)', 'weights, gradients and optimizer states all in bf16, no fp32 copy'],
    bf16_autocast: ['BF16 weights under autocast (transformers 5)', 'bf16 weights, gradients and states, computed under torch.autocast (what trains is fp32 under accelerate\'s FSDP)'],
    fp8_mixed: ['FP8 (Transformer Engine)', 'bf16 weights with FP8 copies for the matrix multiplies; fp32 master weights'],
    seed_14p: ['Textbook: 14 bytes per parameter', '2-byte weights, 4-byte gradients, 8-byte Adam states, activations by the closed formula (the source documents\' convention)'],
    bf16_fsdp: ['BF16 with FSDP mixed precision (accelerate, torchtitan)', 'fp32 weights sharded; each unit gathered in bf16 while it computes'],
  },
  'training.optimizer': {
    adamw: ['AdamW', 'two fp32 moments per trainable weight (8 bytes)'],
    adamw_8bit: ['8-bit AdamW (bitsandbytes)', 'two 8-bit moments per trainable weight (2 bytes)'],
    paged_adamw: ['Paged AdamW (bitsandbytes)', 'AdamW whose states can page out to CPU memory under pressure'],
    paged_adamw_8bit: ['Paged 8-bit AdamW (bitsandbytes)', '8-bit moments that can page out to CPU memory'],
    adafactor: ['Adafactor', 'factored second moments: a row and a column per matrix'],
    sgd: ['SGD', 'no optimizer state'],
    sgd_momentum: ['SGD with momentum', 'one momentum buffer per trainable weight'],
    lion: ['Lion', 'one momentum buffer per trainable weight'],
    lion_8bit: ['8-bit Lion (bitsandbytes)', 'one 8-bit momentum per trainable weight'],
    sgd_momentum_8bit: ['8-bit SGD with momentum (bitsandbytes)', 'one 8-bit momentum per trainable weight'],
    adamw_4bit: ['4-bit AdamW (torchao)', 'two 4-bit moments per trainable weight'],
    galore_adamw: ['GaLore AdamW', 'AdamW moments in a low-rank projection of each matrix\'s gradient'],
    galore_adamw_8bit: ['GaLore 8-bit AdamW', 'GaLore with 8-bit moments'],
    apollo: ['APOLLO', 'AdamW moments in a random low-rank projection; the raw gradient is scaled'],
    adam_mini: ['Adam-mini', 'one second moment per block instead of per weight'],
    muon: ['Muon', 'one momentum per matrix weight; AdamW for embeddings and the head'],
    lomo: ['LOMO', 'the update fused into backward: no stored gradients, no state'],
    adalomo: ['AdaLomo'],
    mezo: ['MeZO (zeroth-order)', 'two forward passes per step: no backward, no gradients, no state'],
    shampoo: ['Shampoo', 'two preconditioner matrices per weight matrix'],
    soap: ['SOAP', 'Shampoo\'s preconditioners with Adam moments in their basis'],
    came: ['CAME'],
    sophia: ['Sophia'],
    schedule_free_adamw: ['Schedule-free AdamW', 'AdamW without a learning-rate schedule: an extra weight copy'],
  },
  'training.optimizer_impl': {
    auto: ['The framework\'s own', 'fused for the Trainer (PyTorch ≥ 2.8), DeepSpeed, torchtune, torchtitan; multi-tensor for LitGPT'],
    foreach: ['Multi-tensor (PyTorch default)', 'the step makes one temporary the size of a state'],
    fused: ['Fused kernels', 'in-place step, no temporary (fused=True, DeepSpeed FusedAdam, 8-bit optimizers)'],
    for_loop: ['One tensor at a time', 'the step works through the parameters one by one'],
    foreach_legacy: ['Multi-tensor (PyTorch 2.0 and older)', 'the step makes two temporaries the size of a state'],
  },
  'training.finetune.quant_method': {
    bitsandbytes: ['bitsandbytes', 'QLoRA NF4 or LLM.int8(), at load'],
    gptq: ['GPTQ (auto-gptq)', 'a pre-quantised GPTQ checkpoint'],
    chatglm: ['ChatGLM model.quantize', 'int8 / int4 with a scale per row'],
  },
  'training.finetune.gptq_kernel': {
    dequantize: ['CUDA (dequantise)', 'keeps each fp16 weight for backward'],
    fused: ['Fused (triton)', 'keeps nothing extra'],
  },
  'parallel.pipeline_schedule': {
    '1f1b': ['1F1B', 'stages overlap micro-batches'],
    sequential: ['One at a time (device_map)', 'one micro-batch passes every GPU in turn'],
  },
  'training.sequence_lengths': {
    fixed: ['All full length', 'packed, or padded to the cap'],
    varying: ['Padded per batch', 'many lengths: the allocator caches blocks for each'],
  },
  'training.checkpointing': {
    none: ['None', 'every activation is kept for backward'],
    selective: ['Selective (Megatron)', 'the attention core is recomputed in backward; the rest is kept'],
    full: ['Full', 'only each block\'s input is kept; blocks are recomputed in backward'],
    selective_op: ['Op-level selective (torchtitan)', 'every second matrix-multiply output and the attention output are kept'],
  },
  'training.checkpoint_impl': {
    auto: ['The framework\'s', 'non-reentrant; reentrant under unsloth and old bitsandbytes (transformers 4)'],
    reentrant: ['Reentrant (use_reentrant=True)', 'transformers 4\'s default; under FSDP1 with adapters every block\'s input and its gradient stay until backward ends'],
    non_reentrant: ['Non-reentrant', 'transformers 5, torch\'s checkpoint_wrapper; bitsandbytes before 0.43.2 then keeps every block\'s 4-bit inputs'],
  },
  'training.attention': {
    auto: ['Automatic', 'what the implementation uses for this model and precision'],
    flash: ['FlashAttention / SDPA', 'no T × T attention matrix is stored'],
    sdpa: ['SDPA memory-efficient kernel', 'PyTorch\'s scaled_dot_product_attention where flash does not apply (fp32, masks)'],
    eager: ['Eager (plain PyTorch)', 'the T × T attention scores and probabilities are stored'],
  },
  'training.finetune.method': {
    full: ['Full fine-tune', 'every weight is trained'],
    lora: ['LoRA adapters', 'the base weights are frozen; small adapters are trained'],
    dora: ['DoRA', 'LoRA plus a trained magnitude per output'],
    lora_fa: ['LoRA-FA', 'LoRA with the down-projection frozen'],
    ia3: ['IA³', 'trained scaling vectors on keys, values and the MLP'],
    prompt_tuning: ['Prompt tuning', 'trained virtual tokens at the input'],
    prefix_tuning: ['Prefix tuning', 'trained key/value prefixes in every layer'],
    p_tuning: ['P-tuning'],
    llama_adapter: ['LLaMA-Adapter'],
    llama_adapter_v2: ['LLaMA-Adapter v2'],
    ln_tuning: ['LayerNorm tuning'],
    trainable_tokens: ['Trainable tokens'],
    multitask_prompt_tuning: ['Multitask prompt tuning'],
  },
  'training.framework': {
    hf: ['Hugging Face transformers'],
    torchtune: ['torchtune'],
    torchtitan: ['torchtitan'],
    litgpt: ['LitGPT'],
    megatron: ['Megatron-LM (local layers)'],
    megatron_te: ['Megatron-LM with Transformer Engine'],
    deepspeed: ['DeepSpeed (transformers model in its engine)'],
    nanogpt: ['nanoGPT'],
    llm_c: ['llm.c'],
    unsloth: ['Unsloth'],
    liger: ['Liger kernels (transformers)'],
    trl: ['TRL SFTTrainer (transformers)'],
  },
  'training.loss': {
    auto: ['Automatic', 'what the implementation does'],
    eager: ['Full logits', 'the whole vocabulary projection is kept for the loss'],
    chunked: ['Chunked cross-entropy', 'the logits exist a chunk of tokens at a time'],
    fused_ce: ['Fused cross-entropy', 'one kernel for softmax and loss over the full logits'],
    fused_linear_ce: ['Fused linear + cross-entropy (Liger, unsloth)', 'the logits are never stored whole'],
    compiled_ce: ['Compiled cross-entropy (torch.compile)', 'keeps the 16-bit logits and two values per row'],
    loss_parallel: ['Loss parallel (DTensor, tensor parallelism)', 'an fp32 log-softmax per vocabulary shard; four vocabulary-wide copies in backward'],
    chunked_recompute: ['Chunked, recomputed (TRL)', 'the head and the loss 256 tokens at a time, again in backward; no logits kept'],
  },
  'training.activation_kernel': {
    auto: ['Automatic', 'what the implementation does'],
    eager: ['Python arithmetic', 'each step of the activation keeps its own tensor (gelu_new keeps four)'],
    fused: ['One kernel', 'keeps the activation\'s inputs and recomputes the rest'],
    fused_inplace: ['One kernel, gradients in place (Liger, unsloth)', 'backward writes the gradients over the inputs it kept'],
  },
  'training.weight_quant': {
    none: ['Off', 'the trained weights in the precision\'s dtype'],
    int8: ['INT8 trained weights (Q-GaLore)', 'codes with a scale and zero per group, dequantized for each matmul'],
  },
  'training.float8': {
    none: ['Off'],
    tensorwise: ['Float8, tensor-wise scales (torchao)'],
    rowwise: ['Float8, row-wise scales (torchao)'],
    mxfp8: ['MXFP8 (torchao, Blackwell)'],
  },
  'training.finetune.quant_type': {
    nf4: ['NF4', '4-bit NormalFloat (QLoRA)'],
    fp4: ['FP4', '4-bit float'],
  },
  'training.finetune.quant_storage': {
    auto: ['Automatic', 'bf16 where the run shards, as FSDP-QLoRA recipes set it'],
    uint8: ['uint8 (bitsandbytes default)', 'accelerate\'s FSDP2 keeps these weights whole on every GPU'],
    bf16: ['bf16 (floating)', 'sharded and gathered like the other weights'],
  },
  'training.finetune.base_bits': {
    16: ['16-bit (bf16 / fp16)', 'the frozen base weights in 16 bits'],
    8: ['8-bit (int8)', 'the frozen base weights quantised to 8 bits'],
    4: ['4-bit NF4 (QLoRA)', 'the frozen base quantised to 4 bits; each matmul dequantises its weight first; bitsandbytes before 0.43.2 also kept every layer\'s input for backward'],
  },
  'training.finetune.lora_targets': {
    q: ['Query'], k: ['Key'], v: ['Value'], o: ['Attention output'],
    gate: ['MLP gate'], up: ['MLP up'], down: ['MLP down'], head: ['Output head'], qkv: ['Fused q/k/v'], router: ['MoE router'],
    linear_attn: ['Gated DeltaNet'],
  },
  'training.linear_attention_kernel': {
    auto: ['Automatic', 'flash-linear-attention, as the model card installs it'],
    fla: ['flash-linear-attention', 'its chunked delta rule and causal-conv1d\'s convolution'],
    torch: ['transformers\' torch fallback', 'without those packages: fp32 chunk tensors, far more memory'],
  },
  'training.finetune.modules_to_save': {
    embed: ['Token embedding', 'a trainable full copy'], head: ['Output head', 'a trainable full copy'],
  },
  'training.goal': {
    auto: ['Automatic', 'parameter-efficient fine-tuning for LoRA and the like, else full fine-tuning'],
    pretrain: ['Pre-training'],
    full_finetune: ['Full fine-tuning'],
    peft: ['Parameter-efficient fine-tuning', 'LoRA, QLoRA and the like'],
  },
  'parallel.zero_stage': {
    0: ['Off', 'every GPU holds everything'],
    1: ['1: shard optimizer states', 'ZeRO-1'],
    2: ['2: shard states and gradients', 'ZeRO-2'],
    3: ['3: shard states, gradients and weights', 'ZeRO-3 / FSDP full shard'],
  },
  'model.mlp': {
    plain: ['Plain', 'up, activation, down'],
    gated: ['Gated (SwiGLU / GeGLU)', 'gate, up, down'],
  },
  'model.norm': { layernorm: ['LayerNorm'], rmsnorm: ['RMSNorm'] },
  'model.position_embedding': {
    learned: ['Learned table', 'a trained position table: sequences up to its length'],
    rotary: ['Rotary (RoPE)', 'no position parameters'],
    none: ['None'],
  },
  'model.output_head': { lm: ['Language-model head'], none: ['None (encoder body)'] },
  'model.block': {
    sequential: ['Sequential', 'attention, then the MLP'],
    parallel: ['Parallel', 'attention and MLP both read the block input (GPT-NeoX, Falcon, Phi)'],
  },
  'model.qk_norm': {
    none: ['None'],
    per_head: ['Per head (Qwen3)'],
    full_width: ['Full width (OLMo 2)'],
    l2: ['L2, in fp32 (Llama 4)', 'no weights; keeps an fp32 copy of each head'],
  },
  'model.vision_type': { qwen2_vl: ['Qwen2-VL'], qwen2_5_vl: ['Qwen2.5-VL'], qwen3_vl: ['Qwen3-VL'], gemma3: ['Gemma 3 (SigLIP)'], llava: ['LLaVA (CLIP)'], mistral3: ['Mistral 3 (Pixtral)'], paligemma: ['PaliGemma (SigLIP)'] },
  'model.attention_type': {
    standard: ['Standard', 'multi-head or grouped-query attention'],
    mla: ['Multi-head latent attention (DeepSeek)'],
  },
};

// PEFT methods known by their papers' names alone: each id is its name in lower case, letters and
// digits only.
for (const name of 'AdaLoRA VeRA OFT BOFT LoHa LoKr FourierFT HRA VB-LoRA RandLoRA MiSS C3A RoAd WaveFT DeLoRA GraLoRA TinyLoRA SHiRA HiRA CPT Cartridge AdaMSS BEFT Lily Poly FRoD PVeRA GLoRA Uni-LoRA OSF PSOFT PEANuT Super-Tuning DEFT X-LoRA Shadow'.split(' ')) {
  CHOICES['training.finetune.method'][name.toLowerCase().replace(/\W/g, '')] = [name];
}

// Integer fields shown as a list of choices (the choices above).
export const CHOICE_INTEGERS = new Set(['training.finetune.base_bits', 'parallel.zero_stage']);

// The words for one choice: { label, explain }.
export function choiceWords(path, value) {
  const entry = CHOICES[path]?.[String(value)];
  if (entry) return { label: entry[0], explain: entry[1] ?? '' };
  return { label: humanize(String(value)), explain: '' };
}

// A value of any field as words: choices by their label, booleans as yes/no, lists joined.
// The GPU table's names by id (the core's static data; state.js tells them once it has them), so a
// change that sets hardware.gpu reads "AMD Instinct MI325X 256GB", not "mi325x-256gb".
const GPU_NAMES = new Map();
export function knowGpuNames(gpus) {
  for (const g of gpus ?? []) if (g?.id && g?.name) GPU_NAMES.set(g.id, g.name);
}

export function valueWords(path, value) {
  if (path === 'hardware.gpu' && GPU_NAMES.has(value)) return GPU_NAMES.get(value);
  if (Array.isArray(value)) return value.map((v) => choiceWords(path, v).label).join(', ') || 'none';
  if (value === true) return 'on';
  if (value === false) return 'off';
  if (CHOICES[path]) return choiceWords(path, value).label;
  return String(value);
}

// "flash_qkv" → "flash qkv"; "attention.o_input" → "attention o input".
export function humanize(id) {
  return String(id).replace(/[._]+/g, ' ').trim();
}

// Labels and one-line explanations of the fields. The schema's own help is the fallback.
export const FIELDS = {
  'model.preset': ['Model', 'a preset: a real model or a source document\'s configuration'],
  'model.model_type': ['Model family', 'the Hugging Face model type: the transformers class that runs it'],
  'model.multimodal_type': ['Multimodal model', 'the multimodal model its language model was read from; empty for a text model'],
  'model.vocab_size': ['Vocabulary size', 'tokens in the vocabulary (V)'],
  'model.hidden_size': ['Hidden size', 'width of the residual stream (d)'],
  'model.num_hidden_layers': ['Layers', 'transformer blocks (L)'],
  'model.num_attention_heads': ['Attention heads', 'query heads per layer (h)'],
  'model.num_key_value_heads': ['Key/value heads', 'fewer than the heads for grouped-query attention; 0 = as many as the heads'],
  'model.head_dim': ['Head size', 'width of one head; 0 = hidden size ÷ heads'],
  'model.intermediate_size': ['MLP inner size', 'width inside the MLP (d_ff)'],
  'model.mlp': ['MLP', 'the block\'s feed-forward layer'],
  'model.norm': ['Norm', 'normalisation layer'],
  'model.norm_bias': ['Norm bias', 'the LayerNorm has a bias'],
  'model.position_embedding': ['Positions', 'how positions are encoded'],
  'model.max_position_embeddings': ['Max positions', 'rows of a learned position table: the longest sequence'],
  'model.position_embedding_offset': ['Extra position rows', 'OPT keeps 2'],
  'model.tie_word_embeddings': ['Tied head', 'the output head shares the token embedding'],
  'model.output_head': ['Output head', ''],
  'model.lm_head_bias': ['Head bias', 'the output head has a bias'],
  'model.attention_bias': ['Attention bias', 'biases on the query, key, value and output projections'],
  'model.qkv_bias': ['QKV bias', 'biases on query, key and value only (Qwen2)'],
  'model.mlp_bias': ['MLP bias', 'biases on the MLP projections'],
  'model.block': ['Block layout', ''],
  'model.norms_per_block': ['Norms per block', 'hidden-size norms in each block'],
  'model.final_norm': ['Final norm', 'a norm after the last block'],
  'model.qk_norm': ['Q/K norm', 'norms on queries and keys'],
  'model.type_vocab_size': ['Token types', 'token-type embedding rows (BERT)'],
  'model.embedding_norm': ['Embedding norm', 'a norm right after the embeddings (BERT)'],
  'model.pooler': ['Pooler', 'BERT\'s pooler layer'],
  'model.num_experts': ['Experts', 'routed experts per mixture-of-experts layer; 0 = dense'],
  'model.num_experts_per_tok': ['Experts per token', 'experts each token is sent to'],
  'model.num_shared_experts': ['Shared experts', 'experts every token uses'],
  'model.moe_intermediate_size': ['Expert inner size', 'width inside one expert'],
  'model.shared_expert_intermediate_size': ['Shared expert size', 'width of the shared expert; 0 = shared experts × expert size'],
  'model.shared_expert_gate': ['Shared expert gate', 'a sigmoid gate on the shared expert (Qwen2-MoE)'],
  'model.router_bias': ['Router bias', 'a per-expert router bias (DeepSeek-V3)'],
  'model.first_k_dense_replace': ['Leading dense layers', 'dense layers before the expert layers'],
  'model.attention_type': ['Attention type', ''],
  'model.q_lora_rank': ['Q compression rank', 'latent attention: query compression; 0 = none'],
  'model.kv_lora_rank': ['KV compression rank', 'latent attention: key/value compression'],
  'model.qk_rope_head_dim': ['Q/K rotary head size', 'latent attention: rotary part of a head'],
  'model.qk_nope_head_dim': ['Q/K plain head size', 'latent attention: non-rotary part of a head'],
  'model.v_head_dim': ['Value head size', 'latent attention'],
  'model.nominal_parameter_count': ['Nominal parameters', 'use this count instead of the counted one; 0 = count'],
  'training.micro_batch_size': ['Micro-batch size', 'sequences per GPU per step (B)'],
  'training.seq_len': ['Sequence length', 'tokens per sequence (T)'],
  'training.grad_accum_steps': ['Gradient accumulation', 'micro-batches per optimizer step'],
  'training.finetune.quant_method': ['Quantised by', ''],
  'training.finetune.gptq_kernel': ['GPTQ kernel', ''],
  'training.finetune.gptq_group_size': ['GPTQ group size', '0 = one group'],
  'parallel.pipeline_schedule': ['Pipeline schedule', ''],
  'training.sequence_lengths': ['Sequence lengths', ''],
  'training.precision': ['Precision', 'how many bytes each weight, gradient and state takes'],
  'training.optimizer': ['Optimizer', ''],
  'training.optimizer_impl': ['Optimizer step', 'how the optimizer runs its update'],
  'training.checkpointing': ['Activation checkpointing', 'recompute activations in backward instead of keeping them'],
  'training.checkpointed_layers': ['Checkpointed blocks', 'how many blocks full checkpointing recomputes; "all": every block'],
  'training.attention': ['Attention kernel', ''],
  'training.dropout': ['Dropout', 'probability; masks are kept for backward when above 0'],
  'training.chunked_loss': ['Chunked loss', 'cross-entropy in chunks: no full fp32 logits'],
  'training.optimizer_in_backward': ['Optimizer in backward', 'each gradient is applied and freed as soon as it is computed'],
  'training.zero_grad_set_to_none': ['zero_grad frees gradients', null],
  'training.activation_offload': ['Activation offload', 'saved activations moved to CPU memory'],
  'training.finetune.trainable_layers': ['Trained blocks', null],
  'training.finetune.lowest_trainable_layer': ['Lowest trained block', null],
  'training.finetune.train_embeddings': ['Train the embedding', null],
  'training.finetune.train_head': ['Train the output head', null],
  'training.weight_quant': ['Trained weights', null],
  'training.weight_quant_group_size': ['INT8 group size', null],
  'training.galore_proj_quant': ['One-byte GaLore projections', null],
  'training.finetune.nf4_whole_tensor': ['NF4 in one piece', null],
  'parallel.gradient_sync': ['Gradient sync', null],
  'parallel.ddp_bucket_view': ['DDP bucket views', null],
  'training.moe_dispatch': ['Experts run as', null],
  'training.linear_attention_kernel': ['Gated DeltaNet kernels', null],
  'model.linear_attention_layers': ['Gated DeltaNet layers', null],
  'model.attention_output_gate': ['Attention output gate', null],
  'training.checkpoint_impl': ['Recomputation', null],
  'model.hidden_act': ['Activation function', null],
  'model.num_labels': ['Classes (classification head)', null],
  'model.lm_head_transform': ['LM head transform', null],
  'model.is_encoder_decoder': ['Encoder-decoder', null],
  'model.decoder_ffn_dim': ['Decoder MLP size', null],
  'model.pos_att_type': ['Relative attention terms', null],
  'model.norm_rel_ebd': ['Normalised relative embeddings', null],
  'training.finetune.use_rslora': ['rsLoRA scaling', null],
  'training.finetune.quant_type': ['4-bit data type', null],
  'training.finetune.quant_storage': ['4-bit storage dtype', null],
  'training.finetune.bnb_keeps_input': ['bitsandbytes keeps linear inputs', null],
  'training.finetune.prepare_kbit': ['Prepare for k-bit training', null],
  'training.kv_saved': ['Keys and values saved as', null],
  'training.lora_base_dtype': ['LoRA base dtype', null],
  'training.lora_adapter_dtype': ['Adapter dtype', null],
  'parallel.fsdp_use_orig_params': ['FSDP use_orig_params', null],
  'parallel.fsdp_version': ['FSDP version', null],
  'training.framework': ['Framework', null],
  'parallel.async_tp': ['Async tensor parallel', null],
  'parallel.zero_hpz_partition_size': ['ZeRO++ hpZ group', null],
  'parallel.zero_quantized_weights': ['ZeRO++ int8 gathers', null],
  'parallel.zero_quantized_gradients': ['ZeRO++ int4 gradients', null],
  'parallel.reshard_after_forward': ['Reshard after forward', null],
  'parallel.fsdp_limit_all_gathers': ['FSDP rate limiter', null],
  'training.goal': ['Goal', 'what the run is for: decides the changes suggested and the planner\'s search'],
  'training.finetune.method': ['Method', ''],
  'training.finetune.lora_rank': ['LoRA rank', 'width of the adapters (r)'],
  'training.finetune.lora_targets': ['LoRA targets', 'layers that get adapters'],
  'training.finetune.modules_to_save': ['Fully trained modules', 'PEFT modules_to_save: trainable copies beside the frozen originals'],
  'training.finetune.lora_dropout': ['LoRA dropout', 'dropout on the adapters\' input'],
  'training.finetune.base_bits': ['Base weights', 'precision of the frozen base weights'],
  'parallel.num_gpus': ['GPUs', 'GPUs in the job'],
  'parallel.tensor': ['Tensor parallel', 'GPUs that split each layer\'s matrices'],
  'parallel.pipeline': ['Pipeline stages', 'GPUs that split the layers'],
  'parallel.context': ['Context parallel', 'GPUs that split each sequence'],
  'parallel.expert': ['Expert parallel', 'GPUs that split the experts'],
  'parallel.zero_stage': ['ZeRO / FSDP sharding', 'what data-parallel GPUs split among themselves'],
  'parallel.sequence_parallel': ['Sequence parallel', 'Megatron: norms and dropout split across tensor-parallel GPUs'],
  'parallel.offload_optimizer': ['Offload optimizer', 'optimizer states in CPU memory'],
  'parallel.offload_params': ['Offload weights', 'weights in CPU memory (needs ZeRO-3)'],
  'hardware.gpu': ['GPU', ''],
  'hardware.budget_fraction': ['Budget', 'plan to this share of the card (0.85 = 85 %)'],
  'hardware.gpus_per_node': ['GPUs per node', 'links inside a server (and across an NVLink rack: GB200 NVL72) are fast; auto = the card\'s usual server'],
  'hardware.price_per_gpu_hour': ['Price per GPU-hour (USD)', 'for the cost; auto = the GPU table\'s price'],
  'hardware.overhead_bytes': ['Overhead bytes', 'CUDA context and workspaces; auto = by convention and GPU'],
  'hardware.fragmentation': ['Fragmentation', 'allocator overhead as a share of allocated memory; auto = by convention'],
};

export function fieldWords(path, schemaHelp = '') {
  const entry = FIELDS[path];
  // An entry whose explanation is null shows the core's help text.
  if (entry) return { label: entry[0], explain: entry[1] ?? plainText(schemaHelp) };
  const key = path.slice(path.lastIndexOf('.') + 1);
  const label = humanize(key);
  return { label: label.charAt(0).toUpperCase() + label.slice(1), explain: plainText(schemaHelp) };
}

// Prose from the core (notes, rules, suggestions) in the page's words: a leading recipe id
// ("bf16_mixed: …") becomes its name, and the source documents are called that.
export function plainText(text) {
  let out = String(text ?? '');
  out = out.replace(/^([a-z0-9]+(?:_[a-z0-9]+)+|fp32|bf16):\s*(?:([^:]{1,40}):\s*)?/, (whole, id, lead) => {
    const words = CHOICES['training.precision'][id];
    if (!words) return whole;
    // "bf16_mixed: PyTorch AMP: fp32 weights…": the name already says "(PyTorch AMP)".
    const squash = (x) => x.toLowerCase().replace(/[^a-z0-9]+/g, '');
    const repeated = lead && squash(words[0]).includes(squash(lead));
    return `${words[0]}: ${lead && !repeated ? `${lead}: ` : ''}`;
  });
  return out
    .replace(/\s*\(see `memfit [^`]*`\)/g, '')
    .replace(/\s*\(seeds\/\d+(?:\s+seeds\/\d+)*\)/g, '')
    .replace(/seeds\/(\d+)/g, 'source document $1')
    .replace(/\bthe seeds'/gi, 'the source documents\'')
    .replace(/\bthe seeds\b/gi, 'the source documents')
    .replace(/\bSeeds' /g, 'Textbook ')
    .replace(/\bseeds\b/gi, 'source documents')
    // Code spans of the core's text (`config`) are shown as plain words, not with their backticks.
    .replace(/`([^`\n]+)`/g, '$1');
}

// A message from the core in the page's words: field paths ("model.max_position_embeddings")
// become their labels ("Max positions"), choice ids in quotes their names.
export function plainMessage(text) {
  return plainText(text)
    // The form shows and takes "auto" where the core's -1 means automatic, "all" where it means all
    // of them (fields.js AUTO_VALUE, autoText).
    .replace(/(^|[^\w-])-1 \(automatic\)/g, '$1"auto"')
    .replace(/(^|[^\w-])-1 \(all\)/g, '$1"all"')
    .replace(/\b(model|training|parallel|hardware)\.[a-z_]+(?:\.[a-z_]+)?\b/g, (path) => (FIELDS[path] ? FIELDS[path][0] : path))
    .replace(/\b(bf16_mixed|fp16_mixed|bf16_master|fp16_master|fp8_mixed|seed_14p|bf16_fsdp|selective_op|adamw_8bit|paged_adamw_8bit|paged_adamw|sgd_momentum|optimizer_in_backward)\b/g,
      (id) => {
        for (const choices of Object.values(CHOICES)) if (choices[id]) return choices[id][0];
        return humanize(id);
      });
}
