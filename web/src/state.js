// The application state: one factory, so each page (and each test) gets a fresh, independent
// state. Inputs are signals; what derives from them alone (the configuration, the share link) is
// `computed`; what the core answers arrives from its Web Worker (core.js) and is set into signals
// when it comes, the newest request only. The state never computes memory: it asks the core.

import { batch, computed, effect, signal } from '@preact/signals';

import { STALE } from './core.js';
import { formSections, setPath, toConfigValue } from './fields.js';
import { URL_VERSION, decode, encode, flatten, getPath, valueText } from './url.js';
import { SWEEP_FIELDS, decodeView, encodeView, unusedLinkParts } from './view.js';
import { knowGpuNames } from './words.js';

const MODEL_PREFIX = 'model.';
const isModelPath = (path) => path.startsWith(MODEL_PREFIX);
const withoutModel = (edits) =>
  Object.fromEntries(Object.entries(edits).filter(([path]) => !isModelPath(path)));

// The configuration sent to the core: the preset plus only what the user set, each value typed
// where it is well formed and left as typed where it is not (the core then names the problem).
// An imported config.json is its model fields, model_type among them: the core runs the model as
// that type's transformers class does, so a link reopens the same numbers.
export function buildConfig(presetId, edits, fieldByPath) {
  const config = { model: { preset: presetId } };
  for (const [path, raw] of Object.entries(edits)) setPath(config, path, toConfigValue(fieldByPath.get(path), raw));
  return config;
}

// A value from the core (a suggestion's patch) as the form holds it: numbers as the text one
// would type, everything else as it is.
const formValue = (value) => (typeof value === 'number' ? String(value) : value);

const keyOf = (config) => JSON.stringify(config);

// core: the client of core.js ({ latest, call }). data: the core's static data ({ schema,
// defaults, presets, gpus }). search: the page's location.search (the share link).
// initial: the core's answers for the link's configuration, when at hand (the prerendered page's):
// { config, result, base, scaling, sweep: { field, answer }, suggestions, solve }, so the first render
// needs no round trip and matches the prerendered page.
// startPlanner: starts the planner's core (core.js startPageCore({ planner: true })), when it opens.
// afterPaint: runs a function once the browser has painted what changed (see `settled`); without
// one (node, the prerender) the details follow at once.
export function createAppState(core, data, { search = '', warn = (...args) => console.warn(...args), fetchImpl, loadHub = () => import('./hub.js'), initial = null, settleMs = 250, startPlanner, afterPaint = null } = {}) {
  const { schema, defaults, presets, gpus } = data;
  knowGpuNames(gpus);
  const fieldByPath = new Map(schema.map((f) => [f.field, f]));
  const sections = formSections(schema);
  const presetById = new Map(presets.map((p) => [p.id, p]));

  // --- inputs -------------------------------------------------------------------------------
  const link = decode(search, defaults);
  const linkView = decodeView(search);
  // What the link held that the page could not use, said on the page as well (linkNotes).
  const unused = unusedLinkParts(link, linkView);
  const notes = [];
  for (const name of unused.unknown) warn(`memfit: ignoring unknown link parameter "${name}"`);
  if (unused.unknown.length) {
    const shown = unused.unknown.slice(0, 5).map((n) => `"${n.slice(0, 40)}"`).join(', ');
    const more = unused.unknown.length > 5 ? ` and ${unused.unknown.length - 5} more` : '';
    notes.push(`${unused.unknown.length === 1 ? 'a setting' : 'settings'} memfit does not know, left out: ${shown}${more}`);
  }
  if (unused.version !== null) {
    warn(`memfit: link version ${unused.version} is not ${URL_VERSION}; reading it as version ${URL_VERSION}`);
    notes.push(`its version ${String(unused.version).slice(0, 20)} is not known: it was read as version ${URL_VERSION}`);
  }
  for (const problem of unused.view) {
    warn(`memfit: link: ${problem}`);
    notes.push(problem);
  }
  const linkNotes = signal(notes);  // cleared when the reader dismisses them
  const { [`${MODEL_PREFIX}preset`]: linkPreset, ...linkEdits } = link.values;

  const linkPresetValue = linkPreset ?? defaults.model.preset;
  const linkEditsValue = linkEdits;
  const presetId = signal(linkPresetValue);  // '' when the model is custom
  const edits = signal(linkEditsValue);       // field path → value as the user typed it
  const units = signal(linkView.view.units);  // 'GiB' (2^30) or 'GB' (10^9): display only
  const tables = signal(linkView.view.tables);  // charts shown as tables
  const sweepName = signal(linkView.view.sweep);  // the swept field's short name
  const planner = signal(linkView.view.planner);  // the planner: open, its inputs, the chosen plan (view.js)
  const pasteText = signal('');
  const imported = signal(null);              // the last import_hf_config answer
  const hub = signal({ status: 'idle', message: '' });

  // --- derived from the inputs alone -------------------------------------------------------
  const preset = computed(() => presetById.get(presetId.value) ?? null);
  // The model the preset supplies (custom models start from the default model, as the core does).
  const presetModel = computed(() => preset.value?.model ?? defaults.model);
  const config = computed(() => buildConfig(presetId.value, edits.value, fieldByPath));
  const configKey = computed(() => keyOf(config.value));
  const modelKey = computed(() => keyOf(config.value.model));

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

  // --- the core's answers --------------------------------------------------------------------
  // answer: the newest `view` answer: { key, modelKey, result, base, scaling } (null until the
  // first arrives). pending: the form holds something the core has not answered yet.
  const answer = signal(initial ? { key: keyOf(initial.config), modelKey: keyOf(initial.config.model), ...initial } : null);
  const pending = computed(() => answer.value?.key !== configKey.value);
  const result = computed(() => answer.value?.result ?? null);
  const coreError = signal('');  // the worker failed: said in words, with what to do

  const failed = (error) => {
    coreError.value = String(error?.message ?? error);
  };

  const disposers = [];
  // The first answers (for the address's configuration) are asked for at once; the wait below
  // applies once the user edits.
  let edited = false;
  // The slower answers (suggestions, sweeps: tens of estimates) are asked for once the form has
  // been still for a moment, so the core's worker does not compete with typing for the CPU.
  // Returns the effect's cleanup (a newer answer cancels the wait).
  const later = (ask) => {
    if (!settleMs || !edited) {
      ask();
      return undefined;
    }
    const timer = setTimeout(ask, settleMs);
    return () => clearTimeout(timer);
  };
  disposers.push(effect(() => {
    const c = config.value;
    const key = configKey.value;
    const mKey = modelKey.value;
    if (answer.peek()?.key === key) return;
    // The model's name as the form called it when it asked (the run line under a greyed answer
    // names that answer's model, not the one typed since).
    const label = presetLabel.peek();
    core.latest('view', 'view', [c]).then((a) => {
      if (a === STALE) return;
      answer.value = { key, modelKey: mKey, config: c, label, ...a };
    }, failed);
  }));

  // The defaults after applying the preset and the model edits, as the core resolves them (e.g.
  // the sequence length defaults to a learned-position model's longest). Until the core has
  // answered for this model: the preset's model and the plain defaults.
  const base = computed(() => {
    const a = answer.value;
    if (a && a.modelKey === modelKey.value && a.base) return a.base;
    return { ...defaults, model: { ...presetModel.value, preset: presetId.value } };
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
    const r = result.value;
    for (const e of r?.errors ?? []) add(e, 'errors');
    for (const w of r?.warnings ?? []) add(w, 'warnings');
    return { byField, general };
  });

  // The last valid answer stays on screen (greyed) while the input is invalid.
  let lastShown = null;
  const shown = computed(() => {
    const a = answer.value;
    if (a?.result?.ok && a.key !== lastShown?.key) {
      lastShown = { result: a.result, scaling: a.scaling, config: a.config, key: a.key, label: a.label ?? presetLabel.peek() };
    }
    return lastShown;
  });

  // What the details show (the charts, the GPU table, the scaling table, notes): `shown`, once the
  // browser has painted the new numbers. An answer arriving re-renders the headline and the
  // breakdown in the task that receives it, and the rest in a later one, so the numbers a reader
  // is watching appear a frame sooner; a burst of answers draws the details once. The first answer
  // is drawn whole.
  const settled = signal(shown.peek());
  disposers.push(effect(() => {
    const s = shown.value;
    if (s === settled.peek()) return undefined;
    if (!afterPaint || settled.peek() === null) {
      settled.value = s;
      return undefined;
    }
    return afterPaint(() => {
      settled.value = s;
    });
  }));

  // What to change (the core's suggestions) for the configuration on screen: asked for when the
  // run does not fit, or when the user opens the list. { key, answer } of the shown configuration.
  const suggestionsWanted = signal(false);
  const suggestionsAnswer = signal(initial?.suggestions ? { key: keyOf(initial.config), answer: initial.suggestions } : null);
  disposers.push(effect(() => {
    const s = shown.value;
    if (!s) return undefined;
    const want = s.result.fits.verdict !== 'fits' || suggestionsWanted.value;
    if (!want || suggestionsAnswer.peek()?.key === s.key) return undefined;
    return later(() => core.latest('suggestions', 'suggestions', [s.config], { priority: 2 }).then((a) => {
      if (a !== STALE) suggestionsAnswer.value = { key: s.key, answer: a };
    }, failed));
  }));
  // The last suggestions the core gave, for whatever configuration: shown greyed while it works on
  // the one on screen, so the list does not fold up and reopen (moving the page) at every keystroke.
  const previousSuggestions = computed(() => suggestionsAnswer.value?.answer ?? null);
  // The suggestions for what is on screen, or null while the core works on them.
  const suggestions = computed(() => {
    const a = suggestionsAnswer.value;
    return a && a.key === shown.value?.key ? a.answer : null;
  });
  // The last suggestion applied: { title, before: the form's state before, after: the edits it
  // made }. Undo is offered while the form is still exactly what the suggestion made it.
  const applied = signal(null);
  const canUndo = computed(() => applied.value !== null && applied.value.after === edits.value);

  // Memory against micro-batch or sequence length (the core's sweep, in the worker), for the
  // configuration on screen. { key, field, answer }.
  const sweepField = computed(() => SWEEP_FIELDS[sweepName.value]);
  const sweepAnswer = signal(initial?.sweep ? { key: keyOf(initial.config), ...initial.sweep } : null);
  disposers.push(effect(() => {
    const s = shown.value;
    const field = sweepField.value;
    if (!s) return undefined;
    const current = sweepAnswer.peek();
    if (current?.key === s.key && current.field === field) return undefined;
    return later(() => core.latest('sweep', 'sweep', [s.config, field], { priority: 3 }).then((a) => {
      if (a !== STALE) sweepAnswer.value = { key: s.key, field, answer: a };
    }, failed));
  }));
  const sweep = computed(() => {
    const a = sweepAnswer.value;
    return a && a.key === shown.value?.key && a.field === sweepField.value ? a.answer : null;
  });
  // The last sweep over the same field, shown greyed while the core works on the current one.
  const previousSweep = computed(() => {
    const a = sweepAnswer.value;
    return a && a.field === sweepField.value ? a.answer : null;
  });

  // The headline's answer, the core's solver for the configuration on screen: the fewest GPUs when
  // the run does not fit (or is tight), the largest micro-batch when it fits. { key, answer }.
  const solveAnswer = signal(initial?.solve ? { key: keyOf(initial.config), answer: initial.solve } : null);
  disposers.push(effect(() => {
    const s = shown.value;
    if (!s || solveAnswer.peek()?.key === s.key) return undefined;
    const target = s.result.fits.verdict === 'fits' ? 'max-micro-batch' : 'min-gpus';
    return later(() => core.latest('solve', 'solve', [s.config, target], { priority: 1 }).then((a) => {
      if (a !== STALE) solveAnswer.value = { key: s.key, answer: a };
    }, failed));
  }));
  const solved = computed(() => {
    const a = solveAnswer.value;
    return a && a.key === shown.value?.key ? a.answer : null;
  });

  // The planner's core, a Web Worker of its own started when the planner first asks: the newest
  // answer on `channel`, or null for one superseded by a newer request.
  let plannerCore = null;
  const askPlanner = (channel, fn, args) =>
    (plannerCore ??= startPlanner()).latest(channel, fn, args).then((a) => (a === STALE ? null : a));

  // The share link: fields that differ from the defaults after applying the preset, then the view.
  const query = computed(() =>
    encode(config.value, defaults, presetId.value === '' ? null : presetModel.value, base.value) +
    encodeView({ units: units.value, tables: tables.value, sweep: sweepName.value, planner: planner.value }));

  // --- reading fields -----------------------------------------------------------------------
  // What a field shows: what the user typed, else the resolved default; and whether it was typed.
  // One computed per path, so what reads a field (its input, the conditions of the fields that
  // depend on it) runs again only when that field changes, not at every keystroke in another.
  const perPath = (read) => {
    const byPath = new Map();
    return (path) => {
      if (!byPath.has(path)) byPath.set(path, computed(() => read(path)));
      return byPath.get(path).value;
    };
  };
  const fieldValue = perPath((path) => (path in edits.value ? edits.value[path] : getPath(base.value, path)));
  const isEdited = perPath((path) => path in edits.value);

  // --- actions ------------------------------------------------------------------------------
  disposers.push(effect(() => {
    if (edits.value !== linkEditsValue || presetId.value !== linkPresetValue) edited = true;
  }));

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

  // Back to the defaults; undone like a suggestion (the Applied line's Undo), since one click
  // loses everything typed.
  function resetAll() {
    const before = { presetId: presetId.value, edits: edits.value };
    const after = {};
    const changed = before.presetId !== defaults.model.preset || Object.keys(before.edits).length > 0;
    batch(() => {
      presetId.value = defaults.model.preset;
      edits.value = after;
      imported.value = null;
      applied.value = changed ? { title: 'reset to the defaults', before, after } : null;
    });
  }

  function showAsTable(chart, on) {
    const set = new Set(tables.value);
    if (on) set.add(chart);
    else set.delete(chart);
    tables.value = [...set];
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

  // A Hugging Face config.json → the model fields (the preset becomes custom). The core reads it
  // in its worker; the answer arrives later (a promise of it is returned).
  async function importConfig(text = pasteText.value) {
    imported.value = { pending: true };
    let answer;
    try {
      answer = await core.latest('import', 'importHfConfig', [text], { priority: 1 });
    } catch (error) {
      answer = { ok: false, errors: [{ field: 'config.json', message: String(error?.message ?? error) }] };
    }
    if (answer === STALE) return answer;
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
    // The Hub's client is a chunk of its own: most visits never fetch, and the first view has no bytes to spare.
    let fetchHubConfig;
    try {
      ({ fetchHubConfig } = await loadHub());
    } catch {
      const fetched = { ok: false, message: 'The page could not load its Hugging Face client (offline, or the site was updated): reload the page, or paste the config.json.' };
      hub.value = { status: 'error', message: fetched.message };
      return fetched;
    }
    const fetched = await fetchHubConfig(modelId, fetchImpl ? { fetchImpl } : undefined);
    if (!fetched.ok) {
      hub.value = { status: 'error', message: fetched.message };
      return fetched;
    }
    pasteText.value = fetched.text;
    const answer = await importConfig(fetched.text);
    hub.value = answer?.ok
      ? { status: 'done', message: `Loaded ${fetched.url}` }
      : { status: 'error', message: 'The Hub sent a config.json that memfit cannot read (see below).' };
    return fetched;
  }

  return {
    // static data from the core
    schema, fieldByPath, sections, defaults, presets, gpus,
    // inputs
    presetId, edits, units, tables, sweepName, planner, pasteText, imported, hub, suggestionsWanted,
    // derived and answered
    preset, presetModel, config, result, pending, base, presetLabel, issues, shown, settled, query, suggestions,
    previousSuggestions, solved, sweep, previousSweep, sweepField, applied, canUndo, coreError, linkNotes, fieldValue, isEdited,
    // actions
    setField, selectPreset, resetAll, importConfig, fetchFromHub, applySuggestion, undoSuggestion, showAsTable, askPlanner,
    dispose: () => {
      disposers.forEach((d) => d());
      plannerCore?.close();
    },
  };
}
