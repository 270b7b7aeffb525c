// The live page: once the core has answered for the address's configuration, it takes the
// prerendered page's place, keeping anything typed into it and the focus; the address bar then
// follows the configuration. Loaded by main.jsx after the prerendered page's first paint (its
// modules, the whole app, took tens of milliseconds to evaluate and held that paint back).
import { render } from 'preact';
import { effect, signal } from '@preact/signals';

import { App } from './components/App.jsx';
import { afterPaint } from './afterPaint.js';
import { startPageCore } from './core.js';
import { createAppState } from './state.js';

const URL_DELAY_MS = 150;
const FIRST_ANSWERS_MS = 600;

// What was typed into the prerendered form before the page came alive: [path, value].
function typedBefore(container) {
  const typed = [];
  for (const el of container.querySelectorAll('.field [id^="field-"]')) {
    const path = el.closest('.field')?.dataset.field;
    if (!path) continue;
    if (el.type === 'checkbox' && el.checked !== el.defaultChecked) typed.push([path, el.checked]);
    else if (el.tagName === 'SELECT' && !el.options[el.selectedIndex]?.defaultSelected) typed.push([path, el.value]);
    else if (el.tagName === 'INPUT' && el.type !== 'checkbox' && el.value !== el.defaultValue) typed.push([path, el.value]);
  }
  return typed;
}

// Resolves once the core's first answers are in (the estimate, the headline's solver, then the
// sweep and, when the run does not fit, the suggestions), or after FIRST_ANSWERS_MS: the live page
// then replaces the prerendered one whole, without a flash of placeholders. A share link for
// another configuration has nothing prerendered to keep on screen, so its numbers go up with the
// estimate (`estimateOnly`), and the rest fills in as the core answers.
function firstAnswers(state, { estimateOnly = false } = {}) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(), FIRST_ANSWERS_MS);
    let stop = () => {};
    const done = () => {
      clearTimeout(timer);
      queueMicrotask(() => stop());
      resolve();
    };
    stop = effect(() => {
      const result = state.result.value;
      if (!result) return;
      if (!result.ok || estimateOnly) return done();
      if (state.sweep.value === null || state.solved.value === null) return;
      if (result.fits.verdict !== 'fits' && state.suggestions.value === null) return;
      done();
    });
  });
}

// Replaces the prerendered page in `root` with the live one for the core's first answers; calls
// `ready` once the core's first answer and the whole page are on screen.
export async function goLive(root, core, data, late, ready) {
  const state = createAppState(core, data, { search: location.search, startPlanner: () => startPageCore({ planner: true }), afterPaint });
  const typed = new Map(typedBefore(root));
  for (const [path, value] of typed) state.setField(path, value);
  const fromLink = document.documentElement.classList.contains('from-link');
  await firstAnswers(state, { estimateOnly: fromLink });
  // What was typed while the first answers came in goes in too, just before the swap.
  for (const [path, value] of typedBefore(root)) {
    if (typed.get(path) !== value) state.setField(path, value);
  }
  const focused = root.contains(document.activeElement) ? document.activeElement : null;
  const focus = focused?.id ? { id: focused.id, start: focused.selectionStart, end: focused.selectionEnd } : null;
  root.textContent = '';
  const drawn = signal(false);
  render(<App state={state} late={late} staged={fromLink} onDrawn={() => (drawn.value = true)} />, root);
  document.documentElement.classList.remove('from-link');
  if (focus) {
    const el = document.getElementById(focus.id);
    el?.focus();
    if (el && typeof focus.start === 'number') el.setSelectionRange?.(focus.start, focus.end);
  }
  // The address bar follows the configuration. replaceState is slow and rate-limited by
  // browsers, so typing updates it once the keystrokes pause (the Copy link button is exact).
  let timer = 0;
  effect(() => {
    const url = `${location.pathname}?${state.query.value}${location.hash}`;
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (url !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(history.state, '', url);
    }, URL_DELAY_MS);
  });
  // Ready once the core's first answer (numbers, or the input's problems) and the whole page are
  // on screen.
  effect(() => {
    if (!state.result.value || !drawn.value) return;
    document.documentElement.dataset.ready = 'true';
    ready();
  });
}
