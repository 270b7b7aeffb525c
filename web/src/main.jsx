// Entry point. index.html arrives with the default configuration's numbers already in it
// (prerendered at build time), so they are on screen at first paint. Meanwhile this starts the
// core's worker and loads the details (charts and tables); once the core has answered for the
// address's configuration, the live page takes the prerendered one's place, keeping anything typed
// into it and the focus. The address bar then follows the configuration.
import { render } from 'preact';
import { effect, signal } from '@preact/signals';

import { App } from './components/App.jsx';
import { startPageCore } from './core.js';
import { afterPaint } from './afterPaint.js';
import { createAppState } from './state.js';

const root = document.getElementById('app');
const URL_DELAY_MS = 150;
const FIRST_ANSWERS_MS = 600;

// A chunk of the page that does not arrive (the network, or a site updated since this page loaded)
// is the page's code missing, not the core: LoadError says which.
const pageCode = (error) => { throw Object.assign(new Error(String(error?.message ?? error)), { pageCode: true }); };
const details = import('./components/results/Details.jsx').catch(pageCode);
const core = startPageCore();

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

Promise.all([core.ready, details])
  .then(async ([data, late]) => {
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
      startOffline();
    });
  })
  .catch((error) => {
    console.error(error);
    startOffline();
    // The prerendered numbers stay (they are right for the default configuration); the reason the
    // page cannot compute others goes above them.
    const prerendered = root.querySelector('.page') && !document.documentElement.classList.contains('from-link');
    document.documentElement.classList.remove('from-link');
    if (!prerendered) root.textContent = '';
    const box = document.createElement('div');
    root.prepend(box);
    render(<LoadError error={error} />, box);
  });

// Offline: a service worker caches the site (not for a page opened from a file). Its install
// fetches every file of the site (a few MB), so it starts once the page is up and the main thread
// idle, not while the core is still loading: on a first visit it would compete with it.
let offlineAsked = false;
function startOffline() {
  if (offlineAsked || !('serviceWorker' in navigator) || !location.protocol.startsWith('http') ||
      document.getElementById('memfit-worker')) return;
  offlineAsked = true;
  const register = () => navigator.serviceWorker.register('sw.js').catch(() => {});
  if ('requestIdleCallback' in window) requestIdleCallback(register, { timeout: 2000 });
  else setTimeout(register, 500);
}

// The core could not start, or a part of the page's code did not load: say so in words, and what
// to do.
function LoadError({ error }) {
  const local = location.protocol === 'file:';
  if (error?.pageCode) {
    return (
      <div class="load-error" role="alert">
        <h2>memfit could not load all of this page</h2>
        <p>A part of the page's code did not arrive: {error.message}. The numbers below are for the default
          configuration; to change them, reload the page (if memfit was updated since this page was opened, the
          reload fetches the new files).</p>
      </div>
    );
  }
  return (
    <div class="load-error" role="alert">
      <h2>memfit could not start its core</h2>
      <p>The memfit core (WebAssembly, run in a Web Worker) did not load: {String(error?.message ?? error)}.</p>
      {local ? (
        <p>This page was opened from a file. Browsers do not run Web Workers and WebAssembly from files: open
          <strong> memfit.html</strong> (the single-file build) instead, or serve this folder, e.g.
          <code> python3 -m http.server</code>, and open http://localhost:8000/.</p>
      ) : (
        <p>Reload the page. If it persists, your browser or an extension may block WebAssembly or Web Workers:
          memfit needs both (any current Chrome, Edge, Firefox or Safari has them).</p>
      )}
    </div>
  );
}
