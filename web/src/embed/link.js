// The embed forms read the same link format as the page (url.js): a configuration, the unit
// system, and for the embeds a view (card, breakdown, fit, full) and a theme. Pure.
import { fieldLabel } from '../fields.js';
import { buildConfig } from '../state.js';
import { decode } from '../url.js';
import { decodeView } from '../view.js';
import { plainMessage, plainText } from '../words.js';

export const VIEWS = ['card', 'breakdown', 'fit', 'full'];
export const THEMES = ['auto', 'light', 'dark'];

// data: the core's static data. search: "?v=1&preset=…" (or a whole address).
// → { config, presetId, modelName, units, view, theme, query }
export function readLink(data, search) {
  let text = String(search ?? '');
  if (/^[a-z]+:\/\//i.test(text)) text = new URL(text).search;
  const params = new URLSearchParams(text.replace(/^\?/, ''));
  const { values } = decode(text, data.defaults);
  const { 'model.preset': preset, ...edits } = values;
  const presetId = preset ?? data.defaults.model.preset;
  const fieldByPath = new Map(data.schema.map((f) => [f.field, f]));
  const config = buildConfig(presetId, edits, fieldByPath);
  const found = data.presets.find((p) => p.id === presetId);
  const modelEdited = Object.keys(edits).some((p) => p.startsWith('model.'));
  const modelName = presetId === '' ? 'a custom model' : found ? `${plainText(found.name)}${modelEdited ? ' (edited)' : ''}` : presetId;
  const view = VIEWS.includes(params.get('view')) ? params.get('view') : 'card';
  const theme = THEMES.includes(params.get('theme')) ? params.get('theme') : 'auto';
  // The link without the embed-only parameters: what "Open in memfit" opens.
  for (const name of ['view', 'theme']) params.delete(name);
  return { config, presetId, modelName, units: decodeView(text).view.units, view, theme, query: params.toString() };
}

// The core's errors as one line each, in words.
export const errorLines = (result) => (result?.errors ?? []).map((e) => `${fieldLabel(e.field)}: ${plainMessage(e.message)}`);
