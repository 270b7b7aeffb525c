// The preset list as the picker shows it: real models first, grouped by family with their size;
// the source documents' idealised configurations in a group of their own, last. Typed queries are
// ranked by name, family and size ("llama 70b" → Llama 3 70B). Pure: no DOM, no wasm.

// The source documents' configurations (the core names them seed-*).
export const isTextbook = (p) => p.id.startsWith('seed-');
export const TEXTBOOK_GROUP = 'From the source documents (idealised)';

// Ties between equally good matches go to the version people use most (then the shorter name):
// "llama 70b" is Llama 3 70B rather than Llama 2 70B or Llama 3.1 70B.
const COMMON = ['llama-3-8b', 'llama-3-70b', 'mistral-7b-v0.3', 'qwen2.5-7b', 'qwen3-8b', 'gemma-2-9b', 'mixtral-8x7b',
  'gpt2', 'llama-2-7b', 'llama-2-13b', 'phi-3-mini-4k', 'bert-base-uncased', 'deepseek-v3'];

const norm = (s) => String(s ?? '').toLowerCase();

// Text → words: split at spaces, dashes, underscores, slashes, brackets; each pair of neighbours
// is a word too, so "GPT-2" is "gpt", "2" and "gpt2".
export function words(text) {
  const parts = norm(text).split(/[\s\-_/()[\],:;]+/).filter(Boolean);
  const out = new Set(parts);
  for (let i = 0; i + 1 < parts.length; i++) out.add(parts[i] + parts[i + 1]);
  // "qwen2.5" → also "qwen" and "2.5"; "8x7b" stays whole.
  for (const p of parts) {
    const m = p.match(/^([a-z]+)(\d[\d.]*)$/);
    if (m) {
      out.add(m[1]);
      out.add(m[2]);
    }
  }
  return [...out];
}

// "70b" → 70e9, "124m" → 124e6, "1.5b" → 1.5e9; null when the word is not a size.
export function sizeOf(word) {
  const m = /^(\d+(?:\.\d+)?)([kmbt])$/.exec(word);
  if (!m) return null;
  return Number(m[1]) * { k: 1e3, m: 1e6, b: 1e9, t: 1e12 }[m[2]];
}

function haystack(p) {
  const name = words(p.name);
  const family = words(p.family);
  const id = words(p.id);
  const extra = [];
  if ((p.model?.num_experts ?? 0) > 0) extra.push('moe', 'experts');
  if (isTextbook(p)) extra.push('textbook', 'source', 'documents');
  return { name, family, id, extra };
}

// How well one query word matches a preset (0: not at all).
function wordScore(q, h, p) {
  let best = 0;
  const take = (s) => {
    if (s > best) best = s;
  };
  if (h.name.includes(q)) take(10);
  if (h.family.includes(q)) take(8);
  if (h.id.includes(q)) take(7);
  if (h.extra.includes(q)) take(5);
  if (h.name.some((w) => w.startsWith(q))) take(6);
  if (h.family.some((w) => w.startsWith(q))) take(5);
  if (h.id.some((w) => w.startsWith(q))) take(4);
  const size = sizeOf(q);
  // The count the estimate uses: the source's nominal one for the idealised models ("LLaMA-7B").
  const count = p.model?.nominal_parameter_count > 0 ? p.model.nominal_parameter_count : p.parameter_count;
  if (size && count) {
    // A size close to the counted parameters (within 15 %) matches too (Mistral "7b" is 7.2B).
    const ratio = count / size;
    if (ratio > 0.85 && ratio < 1.18) take(6);
  }
  if (best === 0 && q.length >= 3 && norm(p.name).includes(q)) take(2);
  return best;
}

// presets, query → [{ preset, score }], best first; every preset when the query is empty (in the
// list's order). A preset must match every query word; when none does, the partial matches come.
export function rankPresets(presets, query) {
  const qs = words(query).filter((w) => !/^(model|preset)$/.test(w));
  const rawWords = norm(query).split(/[\s\-_/()]+/).filter(Boolean);
  const queryWords = rawWords.length ? rawWords : qs;
  if (queryWords.length === 0) return ordered(presets).map((preset) => ({ preset, score: 0 }));
  const scored = presets.map((p) => {
    const h = haystack(p);
    const perWord = queryWords.map((q) => wordScore(q, h, p));
    // A query's neighbouring words may form one word of the name ("gpt 2" → "gpt2").
    const all = perWord.every((s) => s > 0);
    let score = perWord.reduce((a, b) => a + b, 0);
    if (isTextbook(p)) score -= 3;
    return { preset: p, score, all };
  });
  const full = scored.filter((s) => s.all);
  const pool = full.length > 0 ? full : scored.filter((s) => s.score > 0);
  const common = (p) => {
    const i = COMMON.indexOf(p.id);
    return i < 0 ? COMMON.length : i;
  };
  return pool
    .sort((a, b) => b.score - a.score || common(a.preset) - common(b.preset) ||
      a.preset.name.length - b.preset.name.length || presets.indexOf(a.preset) - presets.indexOf(b.preset))
    .map(({ preset, score }) => ({ preset, score }));
}

// Real models first in the core's order, the source documents' last.
export function ordered(presets) {
  return [...presets.filter((p) => !isTextbook(p)), ...presets.filter(isTextbook)];
}

// [[group title, [preset]]]: families of real models in order, then the source documents' group.
export function groupPresets(list) {
  const groups = new Map();
  for (const p of ordered(list)) {
    const title = isTextbook(p) ? TEXTBOOK_GROUP : p.family || 'Other';
    if (!groups.has(title)) groups.set(title, []);
    groups.get(title).push(p);
  }
  return [...groups.entries()];
}

// A typed query's answers as the picker shows them: the real models that match, best first, then
// the source documents' idealised configurations that match, in their own group (never mixed in
// among real checkpoints). [[group title, [preset]]], empty groups left out.
export function searchGroups(list, query) {
  const found = rankPresets(list, query).map((r) => r.preset);
  return [['Best matches', found.filter((p) => !isTextbook(p))], [TEXTBOOK_GROUP, found.filter(isTextbook)]]
    .filter(([, items]) => items.length > 0);
}

// The limits a preset brings that a user may hit: a learned position table caps the sequence.
// → [{ kind: 'positions', max, text }] (empty when none).
export function presetLimits(model) {
  const out = [];
  if (model?.position_embedding === 'learned' && Number.isInteger(model.max_position_embeddings)) {
    out.push({ kind: 'positions', field: 'training.seq_len', max: model.max_position_embeddings });
  }
  return out;
}
