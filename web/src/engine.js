// The core's functions as plain JavaScript over the wasm module: JSON text in and out of embind,
// plain objects on this side. It runs inside the Web Worker (worker.js) and, in node, as the
// tests' oracle; the page itself never imports it (it talks to the worker through core.js).
// A few requests are several core calls (a sweep over micro-batch or sequence length, the
// resolved defaults of a model): they are composed here, so every number still comes from the core.

import { setPath } from './paths.js';

// The wasm module (createMemfit from memfit.mjs), instantiated from `wasmModule` (a compiled
// WebAssembly.Module: the page compiled it while the worker's script loaded), from `wasmBinary`, or
// fetched from `wasmUrl` (streaming) or, with none of them, from beside memfit.mjs.
export async function loadModule(createMemfit, { wasmModule, wasmBinary, wasmUrl } = {}) {
  // locateFile always: without it the Emscripten loader resolves the wasm against its own
  // address, which a worker started from a blob does not have.
  const options = { locateFile: (name) => (name.endsWith('.wasm') && wasmUrl ? wasmUrl : name) };
  if (wasmModule) {
    // Emscripten's hook: instantiate it ourselves and hand the instance back (a failure rejects).
    let failed;
    const failure = new Promise((resolve, reject) => { failed = reject; });
    options.instantiateWasm = (imports, receive) => {
      WebAssembly.instantiate(wasmModule, imports).then((instance) => receive(instance, wasmModule), failed);
      return {};
    };
    return Promise.race([createMemfit(options), failure]);
  }
  if (wasmBinary) options.wasmBinary = wasmBinary;
  return createMemfit(options);
}

const call = (fn, ...args) => JSON.parse(fn(...args));
const text = (config) => JSON.stringify(config ?? {});

// Swept fields: the grid drawn (a power-of-two ladder), and the most points a sweep evaluates.
export const SWEEPS = {
  'training.micro_batch_size': [1, 2, 4, 8, 16, 32, 64, 128, 256],
  'training.seq_len': [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072],
};

// A sweep stops once the device total passes this many times the card's memory.
const CLIP_CARDS = 2;
const MIN_POINTS = 5;

// The engines a plan is exported to (export_plan), in the order the page shows them.
export const ENGINES = ['deepspeed', 'fsdp', 'torchtitan', 'megatron', 'torchtune'];

const clone = (x) => JSON.parse(JSON.stringify(x));

// The wasm module → the engine: every function synchronous, plain objects in and out.
export function createEngine(module) {
  const api = {
    estimate: (config) => call(module.estimate, text(config)),
    validate: (config) => call(module.validate, text(config)),
    scalingTable: (config) => call(module.scaling_table, text(config)),
    suggestions: (config) => call(module.suggestions, text(config)),
    importHfConfig: (configText) => call(module.import_hf_config, String(configText ?? '')),
    defaultConfig: () => call(module.default_config),
    schema: () => call(module.config_schema),
    presets: () => call(module.presets),
    gpus: () => call(module.gpus),
    // target: max-micro-batch | max-seq-len | min-gpus | max-layers | max-width; family: min-gpus's
    // layouts ('' = ZeRO-3 / FSDP full shard).
    solve: (config, target, family = '') => call(module.solve, text(config), String(target), String(family ?? '')),
    stepTime: (config, options) => call(module.step_time, text(config), text(options)),
  };

  // The planner's module (memfit-planner.mjs) has two functions more: the layout search and the
  // exports of a plan to the engines that run it.
  if (typeof module.plan === 'function') {
    api.plan = (config, options) => call(module.plan, text(config), text(options));
    api.exportPlan = (config, engine) => call(module.export_plan, text(config), String(engine));
    // A plan's files and launch command for every engine, in one answer: { engine: export answer }.
    api.exports = (config) => Object.fromEntries(ENGINES.map((e) => [e, api.exportPlan(config, e)]));
  }

  // What the page needs once: the schema, the defaults, the presets and the GPU table.
  api.staticData = () => ({ schema: api.schema(), defaults: api.defaultConfig(), presets: api.presets(), gpus: api.gpus() });

  // The defaults as the core resolves them for one model (a learned-position model's sequence
  // length defaults to its longest); the last few are kept, keyed by the model's text.
  const resolvedByModel = new Map();
  api.resolvedDefaults = (model) => {
    const key = JSON.stringify(model ?? {});
    if (!resolvedByModel.has(key)) {
      const answer = api.estimate({ model });
      resolvedByModel.set(key, answer.ok ? answer.config : null);
      if (resolvedByModel.size > 16) resolvedByModel.delete(resolvedByModel.keys().next().value);
    }
    return resolvedByModel.get(key);
  };

  // The seeds' scaling table depends on the training settings only (the core swaps the model).
  let scalingKey = '';
  let scalingAnswer = null;
  api.scalingFor = (config) => {
    const key = JSON.stringify({ ...config, model: undefined });
    if (key !== scalingKey) {
      scalingKey = key;
      scalingAnswer = api.scalingTable(JSON.parse(key));
    }
    return scalingAnswer;
  };

  // Everything the page shows for one configuration, in one answer: the estimate, the defaults
  // resolved for its model and the scaling table.
  api.view = (config) => ({
    result: api.estimate(config),
    base: api.resolvedDefaults(config?.model),
    scaling: api.scalingFor(config),
  });

  // Memory against one field (training.micro_batch_size or training.seq_len): the core's estimate
  // at each value of a power-of-two ladder (and the configuration's own value), then the largest
  // value that fits on the chosen GPU, found by bisection between the last value that fits and
  // the first that does not (memory grows with both fields). Returns
  // { ok, field, current, points: [{ value, peak_allocated_bytes, device_total_bytes, verdict }],
  //   stop: { value, message } | null (the first value the core refuses), largest_fit: number | null,
  //   largest_fit_at_least: bool (every value tried fits), memory_bytes, budget_bytes, gpu_name }.
  api.sweep = (config, field) => {
    const grid = SWEEPS[field];
    if (!grid) return { ok: false, errors: [{ field, message: 'cannot be swept' }] };
    const here = api.estimate(config);
    if (!here.ok) return { ok: false, errors: here.errors };
    const current = field.split('.').reduce((o, k) => o?.[k], here.config);
    const at = (value) => api.estimate(setPath(clone(config), field, value));
    const values = [...new Set([...grid, current])].filter((v) => Number.isInteger(v) && v > 0).sort((a, b) => a - b);
    const points = [];
    let stop = null;
    const fits = (r) => r.ok && r.fits.verdict === 'fits';
    let lastFit = null;
    let firstMiss = null;
    for (const value of values) {
      const r = value === current ? here : at(value);
      if (!r.ok) {
        stop = { value, message: r.errors[0]?.message ?? 'not accepted' };
        firstMiss ??= value;
        break;
      }
      points.push({
        value,
        peak_allocated_bytes: r.peak_allocated_bytes,
        device_total_bytes: r.device_total_bytes,
        verdict: r.fits.verdict,
      });
      if (fits(r)) {
        if (firstMiss === null) lastFit = value;
      } else {
        firstMiss ??= value;
      }
      // Far past the card and the configuration's own value (twice the larger) the curve says
      // nothing more: stop there, once that value and a few others are drawn.
      const far = CLIP_CARDS * Math.max(here.fits.memory_bytes, here.device_total_bytes);
      if (r.device_total_bytes > far && value >= current && points.length >= MIN_POINTS) break;
    }
    // Bisection: lo fits, hi does not (or is refused).
    let largest = lastFit;
    if (lastFit !== null && firstMiss !== null) {
      let lo = lastFit;
      let hi = firstMiss;
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (fits(at(mid))) lo = mid;
        else hi = mid;
      }
      largest = lo;
    }
    return {
      ok: true,
      field,
      current,
      points,
      stop,
      largest_fit: largest,
      largest_fit_at_least: lastFit !== null && firstMiss === null,
      memory_bytes: here.fits.memory_bytes,
      budget_bytes: here.fits.budget_bytes,
      gpu_name: here.fits.name,
    };
  };

  return api;
}
