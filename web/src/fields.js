// The form's structure, built from the core's schema (config_schema()): which section a field
// sits in, its label, and how typed text becomes a configuration value. The schema stays the one
// source of truth for ranges, choices and help text; this file only arranges and names.
// Pure: no DOM, no wasm.

import { fieldWords } from './words.js';

// A field's label, in words (words.js).
export function fieldLabel(path) {
  return fieldWords(path).label;
}

// Sections and their groups, in page order. A field the core adds later and that is not listed
// here still appears, in the "More" group of its top-level section.
const LAYOUT = [
  { id: 'model', title: 'Architecture', groups: [
    { title: 'Shape', fields: ['vocab_size', 'hidden_size', 'num_hidden_layers', 'num_attention_heads',
      'num_key_value_heads', 'head_dim', 'intermediate_size', 'max_position_embeddings'] },
    { title: 'Structure', fields: ['mlp', 'norm', 'position_embedding', 'block', 'qk_norm', 'norms_per_block',
      'output_head', 'position_embedding_offset', 'tie_word_embeddings', 'final_norm', 'input_norm', 'norm_bias',
      'attention_bias', 'qkv_bias', 'mlp_bias', 'lm_head_bias'] },
    { title: 'Mixture of experts', fields: ['num_experts', 'num_experts_per_tok', 'num_shared_experts',
      'moe_intermediate_size', 'shared_expert_intermediate_size', 'first_k_dense_replace',
      'shared_expert_gate', 'router_bias'] },
    { title: 'Multi-head latent attention', fields: ['attention_type', 'q_lora_rank', 'kv_lora_rank',
      'qk_rope_head_dim', 'qk_nope_head_dim', 'v_head_dim'] },
    { title: 'Encoder (BERT)', fields: ['type_vocab_size', 'embedding_norm', 'pooler'] },
    { title: 'More', fields: ['model_type', 'multimodal_type', 'nominal_parameter_count'] },
  ] },
  { id: 'training', title: 'Training', groups: [
    { title: '', fields: ['micro_batch_size', 'seq_len', 'grad_accum_steps', 'precision', 'optimizer',
      'checkpointing', 'attention', 'dropout', 'chunked_loss', 'optimizer_in_backward', 'activation_offload'] },
    { title: 'Fine-tuning', fields: ['finetune.method', 'finetune.lora_rank', 'finetune.base_bits',
      'finetune.lora_targets', 'finetune.modules_to_save'] },
    { title: 'More', fields: [] },
  ] },
  { id: 'parallel', title: 'Parallelism', groups: [
    { title: '', fields: ['num_gpus', 'tensor', 'pipeline', 'context', 'expert', 'zero_stage',
      'sequence_parallel', 'offload_optimizer', 'offload_params'] },
    { title: 'More', fields: [] },
  ] },
  { id: 'hardware', title: 'Hardware', groups: [
    { title: '', fields: ['gpu', 'budget_fraction'] },
    { title: 'Allocator and overhead', fields: ['fragmentation', 'overhead_bytes'] },
    { title: 'More', fields: [] },
  ] },
];

// Fields the form does not draw as inputs (the preset picker owns model.preset).
const NOT_IN_FORM = new Set(['model.preset']);

// schema → [{ id, title, groups: [{ title, fields: [schema entry] }] }], empty groups dropped.
export function formSections(schema) {
  const byPath = new Map(schema.map((f) => [f.field, f]));
  const placed = new Set(NOT_IN_FORM);
  const sections = LAYOUT.map((section) => ({
    id: section.id,
    title: section.title,
    groups: section.groups.map((g) => {
      const fields = [];
      for (const key of g.fields) {
        const f = byPath.get(`${section.id}.${key}`);
        if (f && !placed.has(f.field)) {
          fields.push(f);
          placed.add(f.field);
        }
      }
      return { title: g.title, fields };
    }),
  }));
  for (const f of schema) {
    if (placed.has(f.field)) continue;
    const top = f.field.split('.')[0];
    const section = sections.find((s) => s.id === top);
    if (!section) continue;
    let more = section.groups.find((g) => g.title === 'More');
    if (!more) section.groups.push((more = { title: 'More', fields: [] }));
    more.fields.push(f);
    placed.add(f.field);
  }
  for (const s of sections) s.groups = s.groups.filter((g) => g.fields.length > 0);
  return sections;
}

// A number as typed: what the command line reads as a JSON number (integers in exponent form
// included: "1e3" is 1000), plus a leading "+" or dot (".5"). Anything else stays text.
const NUMBER_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

// Digits grouped in thousands, as the page itself writes them ("2,048", "1 000 000").
const GROUPED = /^-?\d{1,3}(?:([, \u00a0_])\d{3})(?:\1\d{3})*(?:\.\d+)?$/;

// Typed text → a number when it is one (any finite value: the core judges the range and whether
// it is integral, as it does for the command line's flags), else the text as typed.
function numberOrText(raw) {
  if (typeof raw === 'number') return raw;
  let text = String(raw).trim();
  if (GROUPED.test(text)) text = text.replace(/[, \u00a0_]/g, '');
  if (NUMBER_TEXT.test(text)) {
    const n = Number(text);
    if (Number.isFinite(n)) return n;
  }
  return String(raw);
}

// Fields whose value "automatic" is a number in the schema (-1 or 0): the form shows and accepts
// the word "auto" for it.
export const AUTO_VALUE = {
  'hardware.overhead_bytes': -1,
  'hardware.fragmentation': -1,
  'hardware.gpus_per_node': 0,
  'hardware.price_per_gpu_hour': -1,
  'parallel.reduce_bucket_elements': -1,
  'training.checkpointed_layers': -1,
  'training.finetune.trainable_layers': -1,
  'training.finetune.lowest_trainable_layer': -1,
  'model.max_relative_positions': -1,
};
export const AUTO_TEXT = 'auto';
// A field (its schema entry) whose automatic value means "all of them" (the core's help says
// "-1 = all" or "-1 = every block", as its range message does): the form shows and accepts "all"
// there ("auto" is still accepted).
export const autoText = (field) => (/-1 = (all|every)\b/.test(field?.help ?? '') ? 'all' : AUTO_TEXT);

// What the form holds (text typed, a checkbox's boolean, a list) → what the core is sent.
// Text that is a well-formed number is sent as a number; anything else is sent exactly as typed
// so that the core can name the problem ("must be an integer from 1 to 1,000,000; got \"abc\"").
export function toConfigValue(field, raw) {
  if (raw === undefined || raw === null) return raw;
  const auto = AUTO_VALUE[field?.field];
  if (auto !== undefined && [AUTO_TEXT, autoText(field)].includes(String(raw).trim().toLowerCase())) return auto;
  switch (field?.kind) {
    case 'integer':
    case 'number':
      return numberOrText(raw);
    case 'boolean':
      if (raw === 'true') return true;
      if (raw === 'false') return false;
      return raw;
    case 'list':
      return Array.isArray(raw) ? raw : String(raw).split(',').filter((s) => s !== '');
    default:
      return raw;
  }
}

export { setPath } from './paths.js';

// Whether one of the schema's conditions holds: a value in `in`, at least `min`, or, for
// {any_of: [...]}, one of its conditions. `valueOf(path)` gives a field's value.
function holds(c, valueOf) {
  if (c.any_of) return c.any_of.some((alt) => holds(alt, valueOf));
  const value = valueOf(c.field);
  if (c.in && !c.in.some((allowed) => String(allowed) === String(value))) return false;
  if (c.min !== undefined && !(Number(value) >= c.min)) return false;
  return true;
}

// The first of the schema's applies_when conditions that the current settings fail; undefined
// when the core reads the field.
function unmetCondition(field, valueOf) {
  return (field.applies_when ?? []).find((c) => !holds(c, valueOf));
}

// Whether the core reads a field under the current settings.
export function fieldApplies(field, valueOf) {
  return unmetCondition(field, valueOf) === undefined;
}

// A field's label lower-cased mid-sentence, unless it starts with an acronym ("ZeRO stage", "GPU").
function labelInSentence(path) {
  const name = fieldLabel(path);
  return /^[A-Z][a-z]/.test(name) ? name[0].toLowerCase() + name.slice(1) : name;
}

// The condition that fails, in words: "applies when optimizer is galore_adamw or
// galore_adamw_8bit"; '' when the field applies. An any_of names the values that rule it out
// ("does not apply when FSDP version is auto and framework is torchtitan").
export function whenItApplies(field, valueOf) {
  const c = unmetCondition(field, valueOf);
  if (!c) return '';
  if (c.any_of) {
    const leaves = (list) => list.flatMap((alt) => (alt.any_of ? leaves(alt.any_of) : alt.field ? [alt] : []));
    const paths = [...new Set(leaves(c.any_of).map((alt) => alt.field))];
    if (paths.length === 0) return 'does not apply under these settings';
    return `does not apply when ${paths.map((p) => `${labelInSentence(p)} is ${valueOf(p)}`).join(' and ')}`;
  }
  const label = labelInSentence(c.field);
  if (!c.in) return `applies when ${label} is at least ${c.min}`;
  const names = c.in.map(String);
  if (names.length > 4) return `does not apply when ${label} is ${valueOf(c.field)}`;
  const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names[0];
  return `applies when ${label} is ${list}`;
}

// For a list field whose choices name parts of the model (the schema's choices_apply_when: a MoE
// router, Gated DeltaNet layers), why each such choice does not apply to the current model:
// { choice: 'applies when experts is at least 1' }; choices that apply are left out.
export function choicesNotApplying(field, valueOf) {
  const out = {};
  for (const [choice, conditions] of Object.entries(field.choices_apply_when ?? {})) {
    const why = whenItApplies({ applies_when: conditions }, valueOf);
    if (why) out[choice] = why;
  }
  return out;
}

// Whether a value is the schema's default (a field left alone).
export function isDefaultValue(field, value) {
  return JSON.stringify(value) === JSON.stringify(field.default) || String(value) === String(field.default);
}

