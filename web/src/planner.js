// The planner's words (loaded with the planner, not with the first view): its inputs → the core's
// plan options, a plan in words, durations and money, and a plan as the form's fields. Every number
// is the core's; this only words and formats. Pure: no DOM, no wasm.
import { toConfigValue } from './fields.js';
import { formatCount, formatCountShort } from './format.js';
import { flatten, valueText } from './url.js';
import { DEFAULT_PLANNER } from './view.js';
import { choiceWords, plainMessage } from './words.js';

// The plans the planner shows.
export const TOP_PLANS = 10;

// The planner's inputs (the core's plan option names) in words: [label, explanation].
export const OPTION_WORDS = {
  gpus_min: ['From', 'the fewest GPUs to consider'],
  gpus_max: ['To', 'the most GPUs to consider'],
  global_batch_tokens: ['Global batch (tokens)', 'tokens per optimizer step; auto = the form\'s when it gives each of the most GPUs a sequence, else 4M for pre-training, 1M for fine-tuning'],
  train_tokens: ['Tokens to train', 'for the training time and its cost, e.g. 2e9; auto = 20 per parameter for pre-training, 100M for fine-tuning'],
  rank_by: ['Rank by', ''],
  keep_precision: ['Keep the form\'s precision', 'search only the precision chosen in the form'],
};
export const RANKS = [['step_time', 'Fastest step'], ['cost', 'Lowest cost']];

// The engines a plan is exported to (engine.js ENGINES): [id, name, what the file is].
export const ENGINE_WORDS = [
  ['deepspeed', 'DeepSpeed', 'a DeepSpeed config (JSON)'],
  ['fsdp', 'accelerate FSDP', 'an accelerate FSDP config (YAML)'],
  ['torchtitan', 'torchtitan', 'a torchtitan job config (TOML)'],
  ['megatron', 'Megatron-LM', 'Megatron-LM arguments'],
  ['torchtune', 'torchtune', 'torchtune overrides'],
];

// The options as the core's messages name them ("set global_batch_tokens"), in words.
const OPTION_NAMES = {
  gpus_min: 'the “From” count of GPUs', gpus_max: 'the “To” count of GPUs', global_batch_tokens: 'the global batch', train_tokens: 'tokens to train',
  rank_by: 'rank by', keep_precision: 'keep the form\'s precision', top: 'plans shown',
};

// The core's words about the planner in the page's: option ids become their names, then as every
// message (field paths and choice ids in words).
export function plannerMessage(text) {
  return plainMessage(String(text ?? '').replace(/\b(gpus_min|gpus_max|global_batch_tokens|train_tokens|rank_by|keep_precision|top)\b/g,
    (id) => OPTION_NAMES[id]));
}

// The parts of a step's time (the core's step_time parts), in words.
export const STEP_PARTS = {
  compute_s: 'compute', recompute_s: 'recomputation', tensor_parallel_s: 'tensor-parallel communication',
  context_parallel_s: 'context-parallel ring', expert_parallel_s: 'expert all-to-all', data_parallel_s: 'data-parallel communication',
  pipeline_bubble_s: 'pipeline bubble', pipeline_p2p_s: 'pipeline sends', optimizer_s: 'optimizer step',
};

// What the planner's inputs hold (view.js DEFAULT_PLANNER) → the core's plan options: text that
// is a number (as the command line reads one: 1e12) is sent as one, anything else as typed (the
// core names the problem); empty text or "auto" is left to the core's default.
export function planOptions(inputs) {
  const options = { top: TOP_PLANS };
  for (const key of ['gpus_min', 'gpus_max', 'global_batch_tokens', 'train_tokens']) {
    const text = String(inputs[key] ?? '').trim();
    if (text !== '' && text.toLowerCase() !== 'auto') options[key] = toConfigValue({ kind: 'number' }, text);
  }
  if (inputs.rank_by !== DEFAULT_PLANNER.rank_by) options.rank_by = inputs.rank_by;
  if (inputs.keep_precision) options.keep_precision = true;
  return options;
}

// --- formatting (display only) -----------------------------------------------------------------
const isNumber = (x) => typeof x === 'number' && Number.isFinite(x);
const fixed = (v, digits) => v.toFixed(v >= 100 ? 0 : v >= 10 ? Math.min(1, digits) : digits);

// Seconds as a duration: "0.115 s", "42.0 s", "3.5 min", "7.2 h", "12.4 days", "3.1 years".
export function formatDuration(seconds) {
  if (!isNumber(seconds) || seconds < 0) return '\u2014';
  if (seconds < 1) return `${seconds.toFixed(3)} s`;
  if (seconds < 60) return `${fixed(seconds, 2)} s`;
  if (seconds < 3600) return `${fixed(seconds / 60, 1)} min`;
  if (seconds < 86400 * 2) return `${fixed(seconds / 3600, 1)} h`;
  if (seconds < 86400 * 365 * 2) return `${fixed(seconds / 86400, 1)} days`;
  return `${fixed(seconds / (86400 * 365), 1)} years`;
}

// US dollars: "$117,491", "$1.2M" above a million, "$0.42" below ten.
export function formatMoney(usd) {
  if (!isNumber(usd) || usd < 0) return '\u2014';
  if (usd >= 1e6) return `$${formatCountShort(usd)}`;
  if (usd < 10) return `$${usd.toFixed(2)}`;
  return `$${formatCount(usd)}`;
}

// A number of tokens, short: 1e12 → "1T", 2.5e9 → "2.5B".
export function formatTokens(n) {
  if (!isNumber(n) || n < 0) return '\u2014';
  for (const [scale, unit] of [[1e12, 'T'], [1e9, 'B'], [1e6, 'M'], [1e3, 'K']]) {
    if (n >= scale) return `${+(n / scale).toFixed(2)}${unit}`;
  }
  return formatCount(n);
}

// Tokens per second, short: "9.15M".
export const formatRate = (perSecond) => (isNumber(perSecond) && perSecond >= 0 ? formatCountShort(perSecond) : '\u2014');

// --- a plan in words ------------------------------------------------------------------------------
const SHARDING = {
  0: 'no sharding',
  1: 'ZeRO-1 (optimizer states sharded)',
  2: 'ZeRO-2 (states and gradients sharded)',
  3: 'ZeRO-3 / FSDP (everything sharded)',
};

// The layout: "64 GPUs: data 8 × tensor 2 × pipeline 4", then the sharding and the offloads.
export function layoutWords(config) {
  const p = config?.parallel ?? {};
  const n = p.num_gpus;
  const degrees = [['tensor', p.tensor], ['pipeline', p.pipeline], ['context', p.context]].filter(([, d]) => d > 1);
  const model = degrees.reduce((t, [, d]) => t * d, 1);
  const data = Number.isInteger(n / model) ? n / model : null;
  const parts = [...(data > 1 || degrees.length === 0 ? [['data', data]] : []), ...degrees]
    .map(([name, d]) => `${name} ${formatCount(d)}${name === 'pipeline' && p.virtual_stages > 1 ? ` (${p.virtual_stages} virtual stages)` : ''}`);
  if (p.expert > 1) parts.push(`expert ${formatCount(p.expert)}`);
  const sharding = [SHARDING[p.zero_stage] ?? `ZeRO-${p.zero_stage}`];
  if (p.zero_stage > 0 && p.shard_degree > 0 && data && p.shard_degree < data) sharding.push(`hybrid: shards of ${formatCount(p.shard_degree)}`);
  if (p.sequence_parallel) sharding.push('sequence parallel');
  if (p.offload_optimizer) sharding.push('optimizer offloaded to CPU');
  if (p.offload_params) sharding.push('weights offloaded to CPU');
  return { gpus: `${formatCount(n)} GPU${n === 1 ? '' : 's'}`, parallel: parts.join(' × '), sharding: sharding.join(' · ') };
}

// The training settings the planner chose: "micro-batch 2 × 8 accumulation · BF16 … · full checkpointing".
export function trainingWords(config) {
  const t = config?.training ?? {};
  return [
    `micro-batch ${formatCount(t.micro_batch_size)}${t.grad_accum_steps > 1 ? ` × ${formatCount(t.grad_accum_steps)} accumulation steps` : ''}`,
    choiceWords('training.precision', t.precision).label,
    t.checkpointing && t.checkpointing !== 'none' ? `${choiceWords('training.checkpointing', t.checkpointing).label.toLowerCase()} checkpointing` : 'no checkpointing',
  ].join(' · ');
}

// The form fields a plan changes: its training, layout and hardware fields that differ from what
// the form shows (fieldValue(path)), as a patch for the page's Apply.
export function planPatch(config, fieldValue, fieldByPath) {
  const patch = {};
  for (const [path, value] of flatten({ training: config?.training, parallel: config?.parallel, hardware: config?.hardware })) {
    if (!fieldByPath.has(path) || valueText(value) === valueText(fieldValue(path))) continue;
    const keys = path.split('.');
    let node = patch;
    for (const k of keys.slice(0, -1)) node = node[k] ??= {};
    node[keys.at(-1)] = value;
  }
  return patch;
}

// A plan's training, layout and card: what tells two plans apart (and a plan from the form).
export const layoutKey = (config) => JSON.stringify([config?.training, config?.parallel, config?.hardware]);
