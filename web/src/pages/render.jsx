// Build-time only (web/build.mjs bundles this for node): the core loaded from the wasm file, the
// accuracy page's data from the published measurements and the core's estimates, and pages
// rendered to HTML with the same components as the calculator.
import { readFileSync } from 'node:fs';

import { renderToString } from 'preact-render-to-string';
import createMemfit from 'memfit-wasm-module';

import { createEngine, loadModule } from '../engine.js';
import { AccuracyPage } from './AccuracyPage.jsx';
import { App } from '../components/App.jsx';
import { SolveAnswer } from '../components/results/SolveAnswer.jsx';
import { buildConfig, createAppState } from '../state.js';
import { DEFAULT_VIEW, SWEEP_FIELDS } from '../view.js';

export async function loadEngine(wasmPath) {
  return createEngine(await loadModule(createMemfit, { wasmBinary: readFileSync(wasmPath) }));
}

// Flags that keep a published run out of "the cases memfit can express" (tools/accuracy).
export function renderAccuracy({ summary, points }) {
  const counts = new Map();
  for (const p of points) counts.set(p.source, (counts.get(p.source) ?? 0) + 1);
  const sources = [...counts.entries()].sort((a, b) => b[1] - a[1]);
  return renderToString(<AccuracyPage summary={summary} points={points} sources={sources} />);
}

// The calculator as it first appears, for the prerendered index.html: the App rendered with the
// core's answers for the default configuration (`initial`), exactly as the page's first render
// makes it (so the page hydrates it in place).
export function renderCalculator(data, initial) {
  const never = () => new Promise(() => {});
  const stub = { latest: never, call: never };
  const state = createAppState(stub, data, { search: '', initial, settleMs: 0, warn: () => {} });
  const html = renderToString(<App state={state} late={{ SolveAnswer }} />);
  state.dispose();
  return html;
}

// The default configuration as the page builds it, and the core's answers for it.
export function initialAnswers(core, data, nativeEstimate) {
  const fieldByPath = new Map(data.schema.map((f) => [f.field, f]));
  const config = buildConfig(data.defaults.model.preset, {}, fieldByPath);
  const view = core.view(config);
  const result = nativeEstimate ? nativeEstimate(config) : view.result;
  if (JSON.stringify(result) !== JSON.stringify(view.result)) {
    throw new Error('the native command line and the wasm core disagree on the default configuration');
  }
  const field = SWEEP_FIELDS[DEFAULT_VIEW.sweep];
  return {
    config,
    result,
    base: view.base,
    scaling: view.scaling,
    sweep: { field, answer: core.sweep(config, field) },
    suggestions: core.suggestions(config),
    solve: core.solve(config, result.fits.verdict === 'fits' ? 'max-micro-batch' : 'min-gpus'),
  };
}
