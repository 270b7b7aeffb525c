// Entry point: start the core's worker, build the state from the address bar once the core has
// sent its static data, and keep the address bar in step.
import { render } from 'preact';
import { effect } from '@preact/signals';

import { App } from './components/App.jsx';
import { startPageCore } from './core.js';
import { createAppState } from './state.js';

const root = document.getElementById('app');
const URL_DELAY_MS = 150;

const core = startPageCore();
core.ready
  .then((data) => {
    const state = createAppState(core, data, { search: location.search });
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
    root.textContent = '';
    render(<App state={state} />, root);
    // Ready once the core's first answer (numbers, or the input's problems) is on screen.
    effect(() => {
      if (state.result.value) document.documentElement.dataset.ready = 'true';
    });
  })
  .catch((error) => {
    console.error(error);
    root.textContent = '';
    render(<LoadError error={error} />, root);
  });

// The core could not start: say so in words, and what to do.
function LoadError({ error }) {
  const local = location.protocol === 'file:';
  return (
    <div class="load-error" role="alert">
      <h1>memfit could not start</h1>
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
