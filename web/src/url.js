// The share link: the whole configuration as readable query parameters.
//
//   ?v=2&preset=seed-toy-70m&micro_batch_size=4&seq_len=512&precision=seed_14p
//
// `v` is the link format's version. Every other parameter is a configuration field named by the
// last segment of its path (`training.seq_len` → `seq_len`); if two fields ever share a last
// segment, both use their full dotted path. Only fields that differ from the defaults are written:
// model fields are compared with the chosen preset's model, everything else with `defaults`. Lists
// are comma-separated. Values are written and read back as text, exactly as the user typed them,
// so a bad value survives the trip and the core names the problem.
//
// Pure: no DOM, no wasm. Tested by tests/browser/url.test.mjs.

export const URL_VERSION = 2;

// Fields whose default changed after links of a version were made: such a link that does not name
// the field meant the default of its time, which decode() writes in. Each entry holds every change
// since its version (a version 3 adds its own changes to the entries of 1 and 2 too). Version 2
// (Dec 2026): the optimizer step's default became `auto` (the framework's own: fused for the
// Trainer, DeepSpeed, torchtune, torchtitan), where version 1 meant PyTorch's foreach step. What
// carries no version (a link without `v`, a <memfit-estimate> given attributes only, a JSON
// configuration) takes the current defaults.
const EARLIER_DEFAULTS = { 1: { 'training.optimizer_impl': 'foreach' } };

// The versions a link may carry: this one and those whose defaults are known above.
export const KNOWN_VERSIONS = new Set([URL_VERSION, ...Object.keys(EARLIER_DEFAULTS).map(Number)]);

const PRESET_PATH = 'model.preset';

export { flatten, getPath } from './paths.js';
import { flatten, getPath } from './paths.js';

// Field path → parameter name: the last segment, or the full path where last segments collide.
export function paramNames(paths) {
  const count = new Map();
  for (const p of paths) {
    const last = p.slice(p.lastIndexOf('.') + 1);
    count.set(last, (count.get(last) ?? 0) + 1);
  }
  const names = new Map();
  for (const p of paths) {
    const last = p.slice(p.lastIndexOf('.') + 1);
    names.set(p, count.get(last) === 1 ? last : p);
  }
  return names;
}

// A value as link text: lists comma-separated, everything else as its string.
export function valueText(value) {
  if (Array.isArray(value)) return value.map(String).join(',');
  return String(value);
}

// encodeURIComponent, but keeping the characters that are safe in a query value and make the link
// readable (commas between list items, dots in numbers and ids, slashes in model names).
function encodeText(text) {
  return encodeURIComponent(text).replace(/%2C/gi, ',').replace(/%2F/gi, '/').replace(/%3A/gi, ':');
}

// The link's fields (path, default value) and their parameter names, worked out once per defaults
// object (the page encodes the link at every keystroke).
const fieldsByDefaults = new WeakMap();
function linkFields(defaults) {
  let entry = fieldsByDefaults.get(defaults);
  if (!entry) {
    const fields = flatten(defaults);
    entry = { fields, names: paramNames(fields.map(([p]) => p)) };
    fieldsByDefaults.set(defaults, entry);
  }
  return entry;
}

// config: the configuration (full or sparse; values typed or as typed by the user).
// defaults: the full default configuration (its fields and their order define the link).
// presetModel: the chosen preset's model fields (undefined: compare with defaults.model; null: a
// custom model, whose fields are all written).
// resolved (optional): the defaults as the core resolves them for this model (a learned-position
// model's sequence length defaults to its longest); a field equal to `defaults` but not to
// `resolved` is written too, so the link reopens exactly what was shown.
// Returns the query string without the leading "?".
export function encode(config, defaults, presetModel, resolved) {
  const { fields, names } = linkFields(defaults);
  const parts = [`v=${URL_VERSION}`];
  for (const [path, defaultValue] of fields) {
    const value = getPath(config, path);
    if (value === undefined) continue;
    const model = path.startsWith('model.');
    // A custom model (presetModel null) is every field it holds: the core fills the rest from its
    // own plain model, not from `defaults` (the path, as the base, equals no value).
    let base = model && presetModel === null ? path : defaultValue;
    if (model && presetModel && path !== PRESET_PATH) base = getPath(presetModel, path.slice(6)) ?? base;
    const text = valueText(value);
    const resolvedValue = resolved && !model ? getPath(resolved, path) : undefined;
    if (text === valueText(base) && (resolvedValue === undefined || text === valueText(resolvedValue))) continue;
    parts.push(`${encodeText(names.get(path))}=${encodeText(text)}`);
  }
  return parts.join('&');
}

// search: "?v=2&seq_len=512" (the leading "?" is optional).
// defaults: the full default configuration (which fields exist, which are lists).
// Returns { version, values: { path: text | [text] }, unknown: [parameter names] }.
// `version` is null when the link has none. Values stay as typed; unknown names are reported. A
// link of an earlier version gets the defaults of its time for the fields it leaves out.
export function decode(search, defaults) {
  const { fields, names } = linkFields(defaults);
  const byName = new Map();
  for (const [path, defaultValue] of fields) {
    const entry = { path, list: Array.isArray(defaultValue) };
    byName.set(names.get(path), entry);
    byName.set(path, entry);  // the full dotted path is always accepted too
  }
  const params = new URLSearchParams(search.startsWith('?') ? search.slice(1) : search);
  let version = null;
  const values = {};
  const unknown = [];
  for (const [name, text] of params) {
    if (name === 'v') {
      version = /^\d+$/.test(text) ? Number(text) : text;
      continue;
    }
    const entry = byName.get(name);
    if (!entry) {
      unknown.push(name);
      continue;
    }
    values[entry.path] = entry.list ? (text === '' ? [] : text.split(',')) : text;
  }
  for (const [path, value] of Object.entries(EARLIER_DEFAULTS[version] ?? {})) {
    if (byName.has(path) && !(path in values)) values[path] = value;
  }
  return { version, values, unknown };
}
