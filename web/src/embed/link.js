// The embed forms read the same link format as the page (url.js): a configuration, the unit
// system, and for the embeds a view (card, breakdown, fit, full) and a theme. Pure.
import { fieldLabel } from '../fields.js';
import { buildConfig } from '../state.js';
import { URL_VERSION, decode } from '../url.js';
import { decodeView, unusedLinkParts } from '../view.js';
import { plainMessage, plainText } from '../words.js';

export const VIEWS = ['card', 'breakdown', 'fit', 'full'];
export const THEMES = ['auto', 'light', 'dark'];

// data: the core's static data. search: "?v=2&preset=…" (or a whole address).
// → { config, presetId, modelName, units, view, theme, query, problems: [text] }
export function readLink(data, search) {
  let text = String(search ?? '');
  if (/^[a-z]+:\/\//i.test(text)) text = new URL(text).search;
  const params = new URLSearchParams(text.replace(/^\?/, ''));
  const link = decode(text, data.defaults);
  const { values } = link;
  const linkView = decodeView(text);
  // What the link held that the card cannot use, for the console (as the page warns).
  const unused = unusedLinkParts(link, linkView);
  const problems = [
    ...unused.unknown.map((n) => `ignoring unknown link parameter "${n}"`),
    ...(unused.version !== null ? [`link version ${unused.version} read as version ${URL_VERSION}`] : []),
    ...unused.view,
  ];
  const { 'model.preset': preset, ...edits } = values;
  const presetId = preset ?? data.defaults.model.preset;
  const fieldByPath = new Map(data.schema.map((f) => [f.field, f]));
  const config = buildConfig(presetId, edits, fieldByPath);
  const found = data.presets.find((p) => p.id === presetId);
  const modelEdited = Object.keys(edits).some((p) => p.startsWith('model.'));
  const modelName = presetId === '' ? 'a custom model' : found ? `${plainText(found.name)}${modelEdited ? ' (edited)' : ''}` : presetId;
  const view = VIEWS.includes(params.get('view')) ? params.get('view') : 'card';
  const theme = THEMES.includes(params.get('theme')) ? params.get('theme') : 'auto';
  if (params.has('view') && view !== params.get('view')) problems.push(`view must be ${VIEWS.join(', ')}; got "${params.get('view').slice(0, 40)}"`);
  if (params.has('theme') && theme !== params.get('theme')) problems.push(`theme must be ${THEMES.join(', ')}; got "${params.get('theme').slice(0, 40)}"`);
  // The link without the embed-only parameters: what "Open in memfit" opens.
  for (const name of ['view', 'theme']) params.delete(name);
  return { config, presetId, modelName, units: linkView.view.units, view, theme, query: params.toString(), problems };
}

// The core's errors as one line each, in words.
export const errorLines = (result) => (result?.errors ?? []).map((e) => `${fieldLabel(e.field)}: ${plainMessage(e.message)}`);
