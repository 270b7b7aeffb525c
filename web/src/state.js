// The application state: one factory, so each page (and each test) gets a fresh, independent
// state. Inputs are signals; everything derived (the configuration sent to the core, the result,
// field errors, the share link) is `computed`. The state never computes memory: it asks the core.

import { batch, computed, effect, signal } from '@preact/signals';

import { formSections, setPath, toConfigValue } from './fields.js';
import { fetchHubConfig } from './hub.js';
import { URL_VERSION, decode, encode, flatten, getPath, valueText } from './url.js';

const MODEL_PREFIX = 'model.';
const isModelPath = (path) => path.startsWith(MODEL_PREFIX);
const withoutModel = (edits) =>
  Object.fromEntries(Object.entries(edits).filter(([path]) => !isModelPath(path)));

// The configuration sent to the core: the preset plus only what the user set, each value typed
// where it is well formed and left as typed where it is not (the core then names the problem).
export function buildConfig(presetId, edits, fieldByPath) {
  const config = { model: { preset: presetId } };
  for (const [path, raw] of Object.entries(edits)) setPath(config, path, toConfigValue(fieldByPath.get(path), raw));
  return config;
}

// A value from the core (a suggestion's patch) as the form holds it: numbers as the text one
// would type, everything else as it is.
const formValue = (value) => (typeof value === 'number' ? String(value) : value);

// core: the API of core.js. search: the page's location.search (the share link).
export function createAppState(core, { search = '', warn = (...args) => console.warn(...args), fetchImpl } = {}) {
  const schema = core.schema();
  const fieldByPath = new Map(schema.map((f) => [f.field, f]));
  const sections = formSections(schema);
  const defaults = core.defaultConfig();
  const presets = core.presets();
  const presetById = new Map(presets.map((p) => [p.id, p]));
  const gpus = core.gpus();

  // --- inputs -------------------------------------------------------------------------------
  const link = decode(search, defaults);
  for (const name of link.unknown) warn(`memfit: ignoring unknown link parameter "${name}"`);
  if (link.version !== null && link.version !== URL_VERSION) {
    warn(`memfit: link version ${link.version} is not ${URL_VERSION}; reading it as version ${URL_VERSION}`);
  }
  const { [`${MODEL_PREFIX}preset`]: linkPreset, ...linkEdits } = link.values;

  const presetId = signal(linkPreset ?? defaults.model.preset);  // '' when the model is custom
  const edits = signal(linkEdits);            // field path → value as the user typed it
  const units = signal('GiB');                // 'GiB' (2^30) or 'GB' (10^9): display only
  const pasteText = signal('');
  const imported = signal(null);              // the last import_hf_config answer
  const hub = signal({ status: 'idle', message: '' });

  // --- derived ------------------------------------------------------------------------------
  const preset = computed(() => presetById.get(presetId.value) ?? null);
  // The model the preset supplies (custom models start from the default model, as the core does).
  const presetModel = computed(() => preset.value?.model ?? defaults.model);
  const config = computed(() => buildConfig(presetId.value, edits.value, fieldByPath));
  const result = computed(() => core.estimate(config.value));

  // The defaults after applying the preset and the model edits, as the core resolves them
  // (e.g. the sequence length defaults to a learned-position model's longest). Keyed by the model
  // part's text, so typing in a training field does not ask the core again.
  const modelKey = computed(() => JSON.stringify(config.value.model));
  const base = computed(() => {
    const resolved = core.estimate({ model: JSON.parse(modelKey.value) });
    if (resolved.ok) return resolved.config;
    return { ...defaults, model: { ...presetModel.value, preset: presetId.value } };
  });

  const modelEdited = computed(() => {
    const model = presetModel.value;
    return Object.entries(edits.value).some(
      ([path, v]) => isModelPath(path) && valueText(v) !== valueText(getPath(model, path.slice(MODEL_PREFIX.length))));
  });

  const presetLabel = computed(() => {
    if (presetId.value === '') {
      const type = edits.value[`${MODEL_PREFIX}model_type`];
      return `custom (${type ? `${type}, ` : ''}from config.json)`;
    }
    if (!preset.value) return `${presetId.value} (unknown preset)`;
    return modelEdited.value ? `custom (from ${preset.value.name})` : preset.value.name;
  });

  // Errors and warnings by field path; the rest (no form field) go to the banner.
  const issues = computed(() => {
    const byField = new Map();
    const general = [];
    const add = (issue, kind) => {
      if (!fieldByPath.has(issue.field)) {
        if (kind === 'errors') general.push(issue);
        return;
      }
      if (!byField.has(issue.field)) byField.set(issue.field, { errors: [], warnings: [] });
      byField.get(issue.field)[kind].push(issue.message);
    };
    for (const e of result.value.errors ?? []) add(e, 'errors');
    for (const w of result.value.warnings ?? []) add(w, 'warnings');
    return { byField, general };
  });

  // The seeds' scaling table depends on the training settings only (the core swaps the model).
  const scalingKey = computed(() => JSON.stringify({ ...config.value, model: undefined }));
  const scaling = computed(() => core.scalingTable(JSON.parse(scalingKey.value)));

  // The last valid answer stays on screen (greyed) while the input is invalid.
  const shown = signal(null);
  const dispose = effect(() => {
    const r = result.value;
    if (r.ok) shown.value = { result: r, scaling: scaling.value, config: config.value };
  });

  // What to change (the core's suggestions) for the configuration on screen. Computed only when
  // read: the page reads it when the run does not fit, or when the user opens the list.
  const suggestions = computed(() => (shown.value ? core.suggestions(shown.value.config) : null));
  // The last suggestion applied: { title, before: the form's state before, after: the edits it
  // made }. Undo is offered while the form is still exactly what the suggestion made it.
  const applied = signal(null);
  const canUndo = computed(() => applied.value !== null && applied.value.after === edits.value);

  // The share link: fields that differ from the defaults after applying the preset.
  const query = computed(() =>
    encode(config.value, defaults, presetId.value === '' ? null : presetModel.value, base.value));

  // --- reading fields -----------------------------------------------------------------------
  // What a field shows: what the user typed, else the resolved default.
  const fieldValue = (path) => (path in edits.value ? edits.value[path] : getPath(base.value, path));
  const isEdited = (path) => path in edits.value;

  // --- actions ------------------------------------------------------------------------------
  function setField(path, raw) {
    const next = { ...edits.value };
    const fromPreset = isModelPath(path) && presetId.value !== ''
      ? getPath(presetModel.value, path.slice(MODEL_PREFIX.length)) : undefined;
    // Typing a preset's own value back makes the model that preset again.
    if (fromPreset !== undefined && valueText(raw) === valueText(fromPreset)) delete next[path];
    else next[path] = raw;
    edits.value = next;
  }

  function selectPreset(id) {
    batch(() => {
      presetId.value = id;
      edits.value = withoutModel(edits.value);
      imported.value = null;
    });
  }

  function resetAll() {
    batch(() => {
      presetId.value = defaults.model.preset;
      edits.value = {};
      imported.value = null;
    });
  }

  // A suggestion's patch (a partial configuration: training / parallel / hardware, never the
  // model) merged into the form, field by field, as if typed.
  function applySuggestion(suggestion) {
    const before = { presetId: presetId.value, edits: edits.value };
    const next = { ...edits.value };
    for (const [path, value] of flatten(suggestion.patch)) {
      if (!isModelPath(path)) next[path] = fieldByPath.has(path) ? formValue(value) : value;
    }
    batch(() => {
      edits.value = next;
      applied.value = { title: suggestion.title, before, after: next };
    });
  }

  function undoSuggestion() {
    if (!canUndo.value) return;
    const { before } = applied.value;
    batch(() => {
      presetId.value = before.presetId;
      edits.value = before.edits;
      applied.value = null;
    });
  }

  // A Hugging Face config.json → the model fields (the preset becomes custom).
  function importConfig(text = pasteText.value) {
    const answer = core.importHfConfig(text);
    batch(() => {
      imported.value = answer;
      if (!answer.ok) return;
      const model = {};
      for (const [key, value] of Object.entries(answer.model)) {
        if (key !== 'preset') model[`${MODEL_PREFIX}${key}`] = value;
      }
      presetId.value = '';
      edits.value = { ...withoutModel(edits.value), ...model };
    });
    return answer;
  }

  async function fetchFromHub(modelId) {
    hub.value = { status: 'loading', message: `Fetching config.json for ${String(modelId).trim()}…` };
    const answer = await fetchHubConfig(modelId, fetchImpl ? { fetchImpl } : undefined);
    if (!answer.ok) {
      hub.value = { status: 'error', message: answer.message };
      return answer;
    }
    pasteText.value = answer.text;
    const imported = importConfig(answer.text);
    hub.value = imported.ok
      ? { status: 'done', message: `Loaded ${answer.url}` }
      : { status: 'error', message: 'The Hub sent a config.json that memfit cannot read (see below).' };
    return answer;
  }

  return {
    // static data from the core
    schema, fieldByPath, sections, defaults, presets, gpus,
    // inputs
    presetId, edits, units, pasteText, imported, hub,
    // derived
    preset, presetModel, config, result, base, presetLabel, issues, shown, query, suggestions,
    applied, canUndo, fieldValue, isEdited,
    // actions
    setField, selectPreset, resetAll, importConfig, fetchFromHub, applySuggestion, undoSuggestion,
    dispose,
  };
}
