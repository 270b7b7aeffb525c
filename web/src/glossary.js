// The glossary of the results: the breakdown's terms (what each is, how it is counted, where
// from) and the activation terms the core itemises per layer, in words. Loaded with the details
// (charts and tables), not with the first view. Pure.
import { humanize } from './words.js';

// The breakdown's terms: label, what it is, how it is counted, and where from.
export const TERMS = {
  parameters: {
    label: 'Weights',
    short: 'the weights the model computes with',
    formula: 'parameters × bytes per weight (4 in fp32, 2 in bf16), split by tensor and pipeline parallelism, and across GPUs under ZeRO-3',
    source: 'what PyTorch allocates for the module\'s parameters',
  },
  master_weights: {
    label: 'Master weights',
    short: 'fp32 copy the optimizer updates',
    formula: '4 bytes × trainable parameters, when the model computes in 16 bits',
    source: 'Megatron-LM and DeepSpeed mixed precision (Micikevicius et al. 2018)',
  },
  weight_copies: {
    label: 'Weight copies',
    short: '16-bit or FP8 copies made for compute',
    formula: '2 bytes × parameters (autocast) or 1 byte (FP8), alive from forward to backward',
    source: 'PyTorch autocast\'s weight cache; Transformer Engine',
  },
  gradients: {
    label: 'Gradients',
    short: 'one per trainable weight',
    formula: 'bytes per gradient × trainable parameters (4 in fp32, 2 in bf16), split across GPUs under ZeRO-2 and 3',
    source: 'PyTorch .grad tensors; Megatron\'s fp32 main gradients',
  },
  optimizer_states: {
    label: 'Optimizer states',
    short: 'what the optimizer keeps between steps',
    formula: 'AdamW: 8 bytes × trainable parameters (two fp32 moments); 8-bit AdamW: 2; SGD with momentum: 4; split across GPUs under ZeRO-1 and up',
    source: 'torch.optim and bitsandbytes state tensors (Kingma & Ba 2015)',
  },
  activations: {
    label: 'Activations',
    short: 'tensors saved for backward at the end of forward',
    formula: 'layers × micro-batch × sequence × the bytes each block saves per token (the terms below); the textbook form is L·B·T·(34d + 5hT) bytes',
    source: 'each tensor the Hugging Face implementations save, checked with PyTorch\'s saved-tensor hooks (Korthikanti et al. 2022)',
  },
  logits_and_loss: {
    label: 'Logits and loss',
    short: 'the output head and the loss at their largest',
    formula: 'micro-batch × sequence × vocabulary × (logits in 16 bits + their fp32 upcast + the loss\'s saved values and gradient)',
    source: 'PyTorch cross-entropy on the Hugging Face causal-LM head',
  },
  overhead: {
    label: 'CUDA context and workspaces',
    short: 'outside PyTorch\'s allocator, seen by nvidia-smi',
    formula: 'the GPU\'s CUDA context, and what NCCL holds: 544 MiB per communicator of two GPUs, 688 MiB for more, 484 MiB for DeepSpeed on one GPU',
    source: 'measured CUDA contexts of recent drivers; NVIDIA/nccl#964 (A100 NVLink), #2366',
  },
  offloaded: {
    label: 'Offloaded to CPU memory',
    short: 'not on the GPU',
    formula: 'optimizer states or weights moved to host memory',
    source: 'ZeRO-Offload (Ren et al. 2021)',
  },
};

export function termWords(key) {
  return TERMS[key] ?? { label: humanize(key), short: '', formula: '', source: '' };
}

// The activation terms the core itemises per layer.
export const ACTIVATION_TERMS = {
  norms: 'Norm inputs',
  'attention.qkv_input': 'Input of the query, key and value projections',
  'attention.flash_qkv': 'Queries, keys and values (kept by FlashAttention)',
  'attention.flash_output': 'Attention output (FlashAttention)',
  'attention.flash_logsumexp': 'Softmax statistics (FlashAttention)',
  'attention.o_input': 'Input of the attention output projection',
  'attention.q_k_copies': 'Query and key copies (eager attention)',
  'attention.scale_divisor': 'Scaled scores',
  'attention.softmax_output': 'Attention scores (T × T)',
  'attention.probabilities': 'Attention probabilities (T × T)',
  'attention.v_copy': 'Value copy',
  'attention.dropout_mask': 'Attention dropout mask',
  'attention.dropped_probabilities': 'Probabilities after dropout',
  'attention.residual_dropout_mask': 'Dropout mask after attention',
  'attention.mla_latents': 'Compressed query and key/value latents (latent attention)',
  'mlp.input': 'MLP input',
  'mlp.inner': 'MLP inner activations',
  'mlp.down_input': 'Input of the MLP down projection',
  'mlp.residual_dropout_mask': 'Dropout mask after the MLP',
  'selective_op.block_input': 'Block input (kept by op-level checkpointing)',
  'selective_op.attention_matmul_outputs': 'Attention matrix-multiply outputs kept',
  'selective_op.attention_output': 'Attention output kept',
  'selective_op.mlp_matmul_outputs': 'MLP matrix-multiply outputs kept',
  'moe.router_input': 'Router input',
  'moe.router_softmax': 'Router probabilities',
  'moe.topk': 'Chosen experts per token',
  'moe.dispatch_indices': 'Token-to-expert indices',
  'moe.expert_inputs': 'Expert inputs',
  'moe.experts_inner': 'Expert inner activations',
  'moe.combine': 'Combined expert outputs',
  'moe.merged_expert_weights': 'Expert weights merged with their LoRA adapter (a copy per layer)',
  'moe.router_adapter': 'Router adapter tensors',
  'moe.shared_expert': 'Shared expert activations',
};

export const activationTermLabel = (name) => ACTIVATION_TERMS[name] ?? humanize(name).replace(/^./, (c) => c.toUpperCase());

